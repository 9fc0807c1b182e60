//! loopexec's own cost per iteration, against a plain shell loop running the same
//! commands.
//!
//! Workload: a counter file `c` (starting at 0); the exec increments it, the check
//! turns green once it reaches 20. loopexec runs the baseline check, 20 iterations of
//! exec + check and halts `success_condition_met`; the shell loop runs the same 20
//! exec + check pairs. Per-iteration figures are the whole run divided by 20.
//!
//! Variants: `loopexec-git` (temp git repository: snapshots and tree guards every
//! iteration), `loopexec-nogit` (plain temp directory: the same loop without the git
//! observer) and `shell`.
//!
//! The no-convergence detectors are switched off in a loop.toml kept outside the
//! work tree (the exit-code-only check fails the same way 19 times in a row, which
//! would otherwise halt `same_failure_repeated` at iteration 3) and `confirm_runs =
//! 0`, so loopexec runs exactly one check per iteration like the shell loop.
//!
//! Each git work directory is created (untimed) at least a second before its run:
//! see the comment in `bench_loop` (a same-second, same-size write is lost by
//! snapshots taken in a later second).
//!
//! The binary: `CARGO_BIN_EXE_loopexec` (cargo builds the package's binaries for
//! benches and sets it at compile time), else `$LOOPEXEC_BIN`, else
//! `$CARGO_TARGET_DIR/release/loopexec`, else `<manifest>/target/release/loopexec`.
//!
//! Run: `cargo bench --bench loop_overhead`. Prints
//! `loop_overhead: loopexec X ms/iteration, shell Y ms/iteration, ratio Z`.

mod common;
use common::{git, loopexec_bin};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode, Throughput};
use std::cell::RefCell;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ITERATIONS: u32 = 20;
const EXEC: &str = "n=$(cat c); echo $((n+1)) > c";
const CHECK: &str = "test $(cat c) -ge 20";
const SHELL_LOOP: &str =
    "i=0; while [ $i -lt 20 ]; do n=$(cat c); echo $((n+1)) > c; test $(cat c) -ge 20; i=$((i+1)); done";
const LOOP_TOML: &str = "confirm_runs = 0\n\
[halt.same_failure_repeated]\nenabled = false\n\
[halt.no_progress_detected]\nenabled = false\n\
[halt.oscillation_detected]\nenabled = false\n\
[halt.infeasible_suspected]\nenabled = false\n\
[halt.unsatisfiable_constraints]\nenabled = false\n";

/// A fresh work directory holding `c` = 0 (committed when `with_git`).
fn workdir(with_git: bool) -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix("loopexec-bench")
        .tempdir()
        .expect("tempdir");
    std::fs::write(d.path().join("c"), "0\n").expect("write c");
    if with_git {
        git(d.path(), &["init", "-q"]);
        git(d.path(), &["add", "c"]);
        git(d.path(), &["commit", "-q", "-m", "init"]);
    }
    d
}

fn counter(dir: &Path) -> u32 {
    std::fs::read_to_string(dir.join("c"))
        .expect("read c")
        .trim()
        .parse()
        .expect("c holds a number")
}

/// One full loopexec run; asserts it converged after exactly 20 iterations.
fn run_loopexec(bin: &Path, config: &Path, dir: &Path) -> Duration {
    let start = Instant::now();
    let out = Command::new(bin)
        .args(["--json", "run", "--config"])
        .arg(config)
        .args(["--exec", EXEC, "--check", CHECK, "--max-iterations", "30"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("loopexec runs");
    let took = start.elapsed();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "loopexec printed no JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(
        v["halt_reason"], "success_condition_met",
        "unexpected halt: {v}"
    );
    assert_eq!(
        v["iteration"], ITERATIONS,
        "unexpected iteration count: {v}"
    );
    assert_eq!(out.status.code(), Some(10));
    assert_eq!(counter(dir), ITERATIONS);
    took
}

fn run_shell(dir: &Path) -> Duration {
    let start = Instant::now();
    let st = Command::new("sh")
        .args(["-c", SHELL_LOOP])
        .current_dir(dir)
        .stdin(Stdio::null())
        .status()
        .expect("sh runs");
    let took = start.elapsed();
    assert!(st.success());
    assert_eq!(counter(dir), ITERATIONS);
    took
}

/// Median of the recorded runs, per iteration (NaN when the variant was filtered out).
fn median_ms_per_iteration(samples: &[Duration]) -> f64 {
    let mut v: Vec<f64> = samples
        .iter()
        .map(|d| d.as_secs_f64() * 1000.0 / f64::from(ITERATIONS))
        .collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

struct Recorded {
    git: Vec<Duration>,
    nogit: Vec<Duration>,
    shell: Vec<Duration>,
}

thread_local! {
    static RECORDED: RefCell<Recorded> = const {
        RefCell::new(Recorded { git: Vec::new(), nogit: Vec::new(), shell: Vec::new() })
    };
}

fn bench_loop(c: &mut Criterion) {
    let bin = loopexec_bin();
    let cfg_dir = tempfile::tempdir().expect("tempdir");
    let config = cfg_dir.path().join("loop.toml");
    std::fs::write(&config, LOOP_TOML).expect("write loop.toml");

    let mut g = c.benchmark_group("loop_overhead");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(5))
        .sampling_mode(SamplingMode::Flat)
        .throughput(Throughput::Elements(u64::from(ITERATIONS)));

    for (name, with_git) in [("loopexec-git", true), ("loopexec-nogit", false)] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let dirs: Vec<tempfile::TempDir> = (0..iters).map(|_| workdir(with_git)).collect();
                if with_git {
                    // Untimed: let the clock leave the second the index was written in.
                    // A same-size write in that second is invisible to a later
                    // snapshot (the temporary index is a copy with a fresh mtime, which
                    // defeats git's racy-entry check), and the loop then halts
                    // `hermeticity_violation` ("the check changed the working tree: c").
                    std::thread::sleep(Duration::from_millis(1100));
                }
                let mut total = Duration::ZERO;
                for d in dirs {
                    let took = run_loopexec(&bin, &config, d.path());
                    RECORDED.with(|r| {
                        let mut r = r.borrow_mut();
                        if with_git {
                            r.git.push(took);
                        } else {
                            r.nogit.push(took);
                        }
                    });
                    total += took;
                }
                total
            });
        });
    }
    g.bench_function("shell", |b| {
        b.iter_batched(
            || workdir(false),
            |d| {
                let took = run_shell(d.path());
                RECORDED.with(|r| r.borrow_mut().shell.push(took));
                d
            },
            BatchSize::PerIteration,
        );
    });
    g.finish();

    RECORDED.with(|r| {
        let r = r.borrow();
        let git = median_ms_per_iteration(&r.git);
        let nogit = median_ms_per_iteration(&r.nogit);
        let shell = median_ms_per_iteration(&r.shell);
        println!(
            "loop_overhead: loopexec {git:.1} ms/iteration, shell {shell:.1} ms/iteration, ratio {:.1}",
            git / shell
        );
        println!(
            "loop_overhead: loopexec without git {nogit:.1} ms/iteration (ratio {:.1}); git snapshots + guards {:.1} ms/iteration",
            nogit / shell,
            git - nogit
        );
        println!(
            "loop_overhead: medians of {} / {} / {} runs of 20 iterations (binary {})",
            r.git.len(),
            r.nogit.len(),
            r.shell.len(),
            bin.display()
        );
    });
}

criterion_group!(benches, bench_loop);
criterion_main!(benches);
