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
//! Runs of the two modes are interleaved (A B A B …), [`REPEATS`] of each; the report
//! gives median and min per mode, the added cost per iteration (median difference /
//! iterations) and the ratio of medians.
//!
//! Run: `cargo bench --bench clean_room`. Set `CLEAN_ROOM_BENCH=files` or `crate` to
//! run one workload.

mod common;
use common::{git, loopexec_bin};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ITERATIONS: u32 = 3;
const REPEATS: usize = 5;

fn run(bin: &Path, dir: &Path, state: &Path, check: &str, in_place: bool) -> Duration {
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
    let t = Instant::now();
    let st = cmd.status().expect("run loopexec");
    let d = t.elapsed();
    assert!(st.code().is_some(), "loopexec was killed");
    d
}

fn stats(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[0])
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
    let mut clean = Vec::new();
    let mut inplace = Vec::new();
    for i in 0..REPEATS {
        for in_place in [false, true] {
            let dir = scratch.path().join(format!("w{i}-{in_place}"));
            fresh_copy(template, &dir);
            // Both modes are timed warm: an untimed first run builds what a user's
            // second run would find (the clean room and its target directory, or the
            // workdir's `target/`), then the tree and `.loopexec` are reset.
            run(&bin, &dir, &state, check, in_place);
            std::fs::remove_dir_all(dir.join(".loopexec")).expect("reset");
            git(&dir, &["checkout", "-q", "--", "."]);
            let d = run(&bin, &dir, &state, check, in_place);
            if in_place {
                inplace.push(d);
            } else {
                clean.push(d);
            }
        }
    }
    let (cm, cmin) = stats(clean);
    let (im, imin) = stats(inplace);
    let added = cm.saturating_sub(im).as_secs_f64() * 1000.0 / f64::from(ITERATIONS + 1);
    println!(
        "clean_room/{name}: clean room median {:.0} ms (min {:.0}), in place median {:.0} ms (min {:.0}); +{added:.1} ms per check; ratio {:.2}",
        cm.as_secs_f64() * 1000.0,
        cmin.as_secs_f64() * 1000.0,
        im.as_secs_f64() * 1000.0,
        imin.as_secs_f64() * 1000.0,
        cm.as_secs_f64() / im.as_secs_f64()
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
