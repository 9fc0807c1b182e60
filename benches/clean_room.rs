//! What the clean room costs per iteration, as a ratio to the in-place mode
//! (`--check-in-place`), in the same run.
//!
//! Workloads (each a full `loopexec run` of [`ITERATIONS`] iterations that halts at the
//! cap; the exec appends a line to one source file, the check fails until the cap):
//! * `files-20000`: a git repository of 20,000 small files; check `sh check.sh` (an
//!   exit-code check that reads one file);
//! * `crate`: the rust-calc example crate (`examples/rust-calc/template`) with its bug;
//!   check `cargo test --offline` (the clean room has its own target directory, warmed
//!   by an untimed run first, as a user's second run would find it).
//!
//! Runs of the two modes are interleaved by the shared harness (`common::ab`, A B A B
//! …, [`REPEATS`] of each after a warm-up); each prints its row
//! `ROW clean_room/<workload>: clean room … · in place … · ratio …` (no target: the
//! row reports what the clean room adds).
//!
//! Run: `cargo bench --bench clean_room`. Set `CLEAN_ROOM_BENCH=files` or `crate` to
//! run one workload.

mod common;
use common::ab::{ab, measure, Metric, Sample};
use common::{git, loopexec_bin};
use std::path::Path;
use std::process::{Command, Stdio};

const ITERATIONS: u32 = 3;
const REPEATS: usize = 5;

fn run(bin: &Path, dir: &Path, state: &Path, check: &str, in_place: bool) -> Sample {
    let mut cmd = Command::new(bin);
    cmd.args(["--json", "run", "--exec", "echo '// touched' >> src/lib.rs"])
        .args(["--check", check, "--max-iterations"])
        .arg(ITERATIONS.to_string())
        .args(["--confirm-runs", "0", "--on-regression", "halt"])
        .env("LOOPEXEC_STATE_DIR", state)
        .env_remove("CARGO_TARGET_DIR")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if in_place {
        cmd.arg("--check-in-place");
    }
    let (st, s) = measure(&mut cmd);
    assert!(st.code().is_some(), "loopexec was killed");
    s
}

fn fresh_copy(src: &Path, dst: &Path) {
    let st = Command::new("cp")
        .arg("-a")
        .arg(src)
        .arg(dst)
        .status()
        .expect("cp");
    assert!(st.success());
}

fn bench(name: &str, template: &Path, check: &str) {
    let bin = loopexec_bin();
    let scratch = tempfile::tempdir().expect("tempdir");
    let state = scratch.path().join("state");
    let mut n = 0;
    // One repetition: a fresh copy, an untimed first run that builds what a user's
    // second run would find (the clean room and its target directory, or the
    // workdir's `target/`), the tree and `.loopexec` reset, then the timed run.
    let mut one = |in_place: bool| {
        n += 1;
        let dir = scratch.path().join(format!("w{n}"));
        fresh_copy(template, &dir);
        run(&bin, &dir, &state, check, in_place);
        std::fs::remove_dir_all(dir.join(".loopexec")).expect("reset");
        git(&dir, &["checkout", "-q", "--", "."]);
        let s = run(&bin, &dir, &state, check, in_place);
        std::fs::remove_dir_all(&dir).expect("clean up");
        s
    };
    let one = std::cell::RefCell::new(&mut one);
    let row = ab(
        &format!("clean_room/{name}"),
        Metric::Wall,
        REPEATS,
        ("clean room", "in place"),
        None,
        || (one.borrow_mut())(false),
        || (one.borrow_mut())(true),
    );
    println!(
        "clean_room/{name}: +{:.1} ms per check",
        (row.a_median - row.b_median) / f64::from(ITERATIONS + 1)
    );
}

fn main() {
    let only = std::env::var("CLEAN_ROOM_BENCH").unwrap_or_default();
    let scratch = tempfile::tempdir().expect("tempdir");
    if only.is_empty() || only == "files" {
        let t = scratch.path().join("files");
        std::fs::create_dir_all(t.join("src")).expect("mkdir");
        for d in 0..200 {
            let dir = t.join(format!("d{d:03}"));
            std::fs::create_dir_all(&dir).expect("mkdir");
            for f in 0..100 {
                std::fs::write(dir.join(format!("f{f:03}.txt")), format!("{d} {f}\n"))
                    .expect("write");
            }
        }
        std::fs::write(t.join("src/lib.rs"), "// lib\n").expect("write");
        std::fs::write(t.join("check.sh"), "test -f d000/f000.txt && exit 1\n").expect("write");
        git(&t, &["init", "-q"]);
        // No background `gc --auto` while the template is being copied.
        git(&t, &["config", "gc.auto", "0"]);
        git(&t, &["add", "-A"]);
        git(&t, &["commit", "-q", "-m", "files"]);
        bench("files-20000", &t, "sh check.sh");
    }
    if only.is_empty() || only == "crate" {
        let t = scratch.path().join("crate");
        fresh_copy(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rust-calc/template"),
            &t,
        );
        git(&t, &["init", "-q"]);
        git(&t, &["config", "gc.auto", "0"]);
        git(&t, &["add", "-A"]);
        git(&t, &["commit", "-q", "-m", "crate"]);
        bench("crate", &t, "cargo test --offline");
    }
}
