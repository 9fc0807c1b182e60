//! What loopexec's snapshot store, tree guards and clean room cost per iteration, as
//! ratios to comparators measured in the same run (see `common::ab`).
//!
//! Rows:
//! * `store/200-files-50-iterations`: a full `loopexec run` of 50 trivial iterations
//!   (exec `true`, check `false`, the no-convergence detectors off, halts at the cap)
//!   in a committed 200-file git repository, against a `sh` loop that spawns the same
//!   51 checks and 50 execs (`sh -c true`, `sh -c false`). Target ≤ 1.5×.
//! * `store/20000-files-per-iteration`: the cost of one more iteration (snapshot after
//!   the exec, tree guards, clean-room sync, the check, the scans after it) in a
//!   committed 20,000-file repository whose exec appends a line to one file: the
//!   difference between a run of [`LONG`] and one of [`SHORT`] iterations, divided by
//!   the difference, against one `git status --porcelain` of the same repository.
//!   Target ≤ 1.5×.
//!
//! Every run keeps the repository's `.loopexec` (a user's second run finds its store)
//! and passes `--ack-required false` (a cap halt would otherwise wait for a person).
//! loopexec's state directory is a temp directory under cargo's target directory:
//! like a user's `~/.local/state`, outside every path the sandboxed exec may write.
//!
//! Run: `cargo bench --bench store` (`STORE_BENCH_REPS=N` for more repetitions;
//! `LOOPEXEC_BIN` to measure another binary, e.g. an older build, with the same
//! harness).

mod common;
use common::ab::{ab, measure, Metric, Sample};
use common::{git, loopexec_bin};
use std::path::Path;
use std::process::{Command, Stdio};

const LOOP_TOML: &str = "confirm_runs = 0\n\
[halt.same_failure_repeated]\nenabled = false\n\
[halt.no_progress_detected]\nenabled = false\n\
[halt.oscillation_detected]\nenabled = false\n\
[halt.infeasible_suspected]\nenabled = false\n\
[halt.unsatisfiable_constraints]\nenabled = false\n";

/// Iterations of the shorter and the longer run of the per-iteration row.
const SHORT: u32 = 2;
const LONG: u32 = 12;

/// A committed git repository of `n` small files (100 per directory).
fn repo(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).expect("mkdir");
    for i in 0..n {
        let d = dir.join(format!("d{:03}", i / 100));
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(d.join(format!("f{:03}.txt", i % 100)), format!("{i}\n")).expect("write");
    }
    git(dir, &["init", "-q"]);
    git(dir, &["config", "gc.auto", "0"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "files"]);
}

fn loopexec(bin: &Path, dir: &Path, state: &Path, config: &Path, exec: &str, n: u32) -> Sample {
    let mut cmd = Command::new(bin);
    cmd.args(["--json", "run", "--config"])
        .arg(config)
        .args(["--exec", exec, "--check", "false", "--max-iterations"])
        .arg(n.to_string())
        .args(["--ack-required", "false", "--on-regression", "halt"])
        .env("LOOPEXEC_STATE_DIR", state)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let (st, s) = measure(&mut cmd);
    assert_eq!(
        st.code(),
        Some(12),
        "loopexec did not halt at the iteration cap in {}",
        dir.display()
    );
    s
}

fn sub(a: Sample, b: Sample, per: u32) -> Sample {
    Sample {
        wall: a.wall.saturating_sub(b.wall) / per,
        cpu: a.cpu.saturating_sub(b.cpu) / per,
        max_rss_kib: a.max_rss_kib,
    }
}

fn main() {
    let bin = loopexec_bin();
    let reps: usize = std::env::var("STORE_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let scratch = tempfile::tempdir().expect("tempdir");
    // loopexec's state directory where a user's is: outside every path the exec may
    // write (a state directory under /tmp leaves the clean room writable by the exec,
    // which costs a walk per sync and is named in every verdict).
    let state_dir = tempfile::Builder::new()
        .prefix("store-bench-state")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("state tempdir");
    let state = state_dir.path().to_path_buf();
    let config = scratch.path().join("loop.toml");
    std::fs::write(&config, LOOP_TOML).expect("write loop.toml");
    let only = std::env::var("STORE_BENCH").unwrap_or_default();

    if only.is_empty() || only == "200" {
        let r200 = scratch.path().join("r200");
        repo(&r200, 200);
        let sh_loop = "sh -c false; i=0; while [ $i -lt 50 ]; do sh -c true; sh -c false; i=$((i+1)); done; exit 0";
        ab(
            "store/200-files-50-iterations",
            Metric::Wall,
            reps,
            ("loopexec", "sh loop"),
            Some(1.5),
            || loopexec(&bin, &r200, &state, &config, "true", 50),
            || {
                let mut c = Command::new("sh");
                c.args(["-c", sh_loop]).current_dir(&r200);
                measure(&mut c).1
            },
        );
    }

    if only.is_empty() || only == "20000" {
        let r20k = scratch.path().join("r20k");
        repo(&r20k, 20_000);
        let exec = "echo x >> d000/f000.txt";
        ab(
            "store/20000-files-per-iteration",
            Metric::Wall,
            reps,
            ("loopexec iteration", "git status"),
            Some(1.5),
            || {
                let short = loopexec(&bin, &r20k, &state, &config, exec, SHORT);
                let long = loopexec(&bin, &r20k, &state, &config, exec, LONG);
                sub(long, short, LONG - SHORT)
            },
            || {
                let mut c = Command::new("git");
                c.args(["status", "--porcelain"])
                    .current_dir(&r20k)
                    .stdout(Stdio::null());
                let (st, s) = measure(&mut c);
                assert!(st.success(), "git status failed");
                s
            },
        );
    }
    // Keep the scratch directory until every row is printed.
    drop(scratch);
}
