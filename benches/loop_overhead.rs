//! loopexec's own cost per iteration, as a ratio to a plain `sh` loop that spawns the
//! same steps, measured interleaved in the same run (`common::ab`).
//!
//! Workload: 50 trivial iterations that reach the cap. The exec is `true`, the check
//! `false` (red every time, so the run halts `max_iterations_reached` after the
//! baseline check and 50 exec + check pairs: 101 steps). Every no-convergence
//! detector is off (a loop.toml kept outside the work tree), `--confirm-runs 0`,
//! `--check-in-place` and `--sandbox off`, `-q`: what is left is the loop itself —
//! spawning and supervising each step, capturing its (empty) output, the receipt and
//! ledger writes, `decide`, and the tree observer.
//!
//! The comparator runs the same 101 steps as `sh -c CMD` children of one `sh`
//! process (`sh -c true; sh -c false` 50 times after one `sh -c false`), so both sides
//! pay the same fork/exec floor.
//!
//! Rows:
//! * `loop/plain-50`: a plain directory (not a git repository); target ≤ 1.05×;
//! * `loop/git200-50`: a git repository of 200 committed files; target ≤ 1.5× (the
//!   snapshot store's share of it is measured by the store benches);
//! * `loop/plain-50-clean-room`: as `plain-50` with the default check placement (the
//!   clean room) and sandbox; reported without a target;
//! * `loop/suite3000-150`: 150 iterations in place whose check prints a libtest run
//!   of 3,000 tests (one failing, 73 KB) and whose exec appends a line to a file, so
//!   every check is parsed, recorded and judged in full; the comparator runs the same
//!   two commands 150 times. Reported without a target: it shows what a run costs as
//!   it grows (an iteration's share of `decide` must not grow with the iterations
//!   before it).
//!
//! The binary: `$LOOPEXEC_BIN` when set (to measure another build, e.g. main's), else
//! `common::loopexec_bin`.
//!
//! Run: `cargo bench --bench loop_overhead` (`LOOP_BENCH_REPS=N` for more repetitions,
//! `LOOP_BENCH=plain|git|room|suite` for one row).

mod common;
use common::ab::{ab, measure, Metric, Sample};
use common::git;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const ITERATIONS: u32 = 50;
const LOOP_TOML: &str = "confirm_runs = 0\n\
[halt.same_failure_repeated]\nenabled = false\n\
[halt.no_progress_detected]\nenabled = false\n\
[halt.oscillation_detected]\nenabled = false\n\
[halt.same_test_regressed]\nenabled = false\n\
[halt.infeasible_suspected]\nenabled = false\n\
[halt.unsatisfiable_constraints]\nenabled = false\n";

fn bin() -> PathBuf {
    std::env::var_os("LOOPEXEC_BIN").map_or_else(common::loopexec_bin, PathBuf::from)
}

fn shell_loop() -> String {
    format!(
        "sh -c false; i=0; while [ $i -lt {ITERATIONS} ]; do sh -c true; sh -c false; i=$((i+1)); done; exit 0"
    )
}

/// Iterations of the `suite3000` row.
const SUITE_ITERATIONS: u32 = 150;
/// Tests in the `suite3000` row's check output.
const SUITE_TESTS: usize = 3000;
/// The `suite3000` row's exec and check.
const SUITE_EXEC: &str = "echo x >> n.txt";
const SUITE_CHECK: &str = "sh check.sh";

/// A libtest run of `SUITE_TESTS` tests, one failing, with its summary.
fn libtest_output() -> String {
    let mut out = format!("\nrunning {SUITE_TESTS} tests\n");
    for i in 0..SUITE_TESTS {
        let verdict = if i == 7 { "FAILED" } else { "ok" };
        out.push_str(&format!("test mod{}::t{i} ... {verdict}\n", i % 50));
    }
    out.push_str(
        "\nfailures:\n\n---- mod7::t7 stdout ----\nthread 'mod7::t7' panicked at src/lib.rs:1:1:\nassertion failed\n\nfailures:\n    mod7::t7\n\n",
    );
    out.push_str(&format!(
        "test result: FAILED. {} passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n",
        SUITE_TESTS - 1
    ));
    out
}

/// One loopexec run in `dir`; asserts it reached the cap.
fn run_loopexec(bin: &Path, config: &Path, dir: &Path, in_place: bool) -> Sample {
    run_loopexec_with(bin, config, dir, in_place, ("true", "false", ITERATIONS))
}

/// One loopexec run of `(exec, check, iterations)` in `dir`; asserts it reached the cap.
fn run_loopexec_with(
    bin: &Path,
    config: &Path,
    dir: &Path,
    in_place: bool,
    (exec, check, iterations): (&str, &str, u32),
) -> Sample {
    let mut cmd = Command::new(bin);
    cmd.args(["--json", "run", "-q", "--config"])
        .arg(config)
        .args(["--exec", exec, "--check", check, "--max-iterations"])
        .arg(iterations.to_string())
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if in_place {
        cmd.args(["--check-in-place", "--sandbox", "off"]);
    }
    let (st, s) = measure(&mut cmd);
    assert_eq!(
        st.code(),
        Some(12),
        "loopexec did not halt max_iterations_reached in {}",
        dir.display()
    );
    s
}

fn run_shell(dir: &Path) -> Sample {
    run_shell_script(dir, &shell_loop())
}

/// The `suite3000` row's comparator: its exec and check, `sh -c` each, 150 times
/// after one check.
fn suite_shell_loop() -> String {
    format!(
        "sh -c '{SUITE_CHECK}' >/dev/null; i=0; while [ $i -lt {SUITE_ITERATIONS} ]; do sh -c '{SUITE_EXEC}'; sh -c '{SUITE_CHECK}' >/dev/null; i=$((i+1)); done; exit 0"
    )
}

fn run_shell_script(dir: &Path, script: &str) -> Sample {
    let (st, s) = measure(
        Command::new("sh")
            .args(["-c", script])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    assert!(st.success());
    s
}

/// A directory of 200 small files (a git repository with them committed when `git`).
fn template(root: &Path, name: &str, files: usize, with_git: bool) -> PathBuf {
    let t = root.join(name);
    std::fs::create_dir_all(t.join("src")).expect("mkdir");
    for i in 0..files {
        std::fs::write(
            t.join("src").join(format!("f{i:03}.txt")),
            format!("file {i}\n"),
        )
        .expect("write");
    }
    if with_git {
        git(&t, &["init", "-q"]);
        git(&t, &["config", "gc.auto", "0"]);
        git(&t, &["add", "-A"]);
        git(&t, &["commit", "-q", "-m", "files"]);
    }
    t
}

/// A fresh copy of `template` for one repetition (untimed).
fn fresh(template: &Path, scratch: &Path, n: &mut u32) -> PathBuf {
    *n += 1;
    let d = scratch.join(format!("w{n}"));
    let st = Command::new("cp")
        .arg("-a")
        .arg(template)
        .arg(&d)
        .status()
        .expect("cp");
    assert!(st.success());
    d
}

fn main() {
    let bin = bin();
    let reps: usize = std::env::var("LOOP_BENCH_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let only = std::env::var("LOOP_BENCH").unwrap_or_default();
    let scratch = tempfile::Builder::new()
        .prefix("loopexec-bench")
        .tempdir()
        .expect("tempdir");
    let config = scratch.path().join("loop.toml");
    std::fs::write(&config, LOOP_TOML).expect("write loop.toml");
    println!("loop_overhead: binary {}", bin.display());
    let mut n = 0;
    let rows: [(&str, &str, bool, bool, Option<f64>); 3] = [
        ("plain", "loop/plain-50", false, true, Some(1.05)),
        ("git", "loop/git200-50", true, true, Some(1.5)),
        ("room", "loop/plain-50-clean-room", false, false, None),
    ];
    for (key, name, with_git, in_place, target) in rows {
        if !only.is_empty() && only != key {
            continue;
        }
        let t = template(
            scratch.path(),
            key,
            if with_git { 200 } else { 0 },
            with_git,
        );
        let fresh_a = std::cell::RefCell::new(Vec::new());
        let row = ab(
            name,
            Metric::Wall,
            reps,
            ("loopexec", "sh loop"),
            target,
            || {
                let d = fresh(&t, scratch.path(), &mut n);
                let s = run_loopexec(&bin, &config, &d, in_place);
                fresh_a.borrow_mut().push(s);
                let _ = std::fs::remove_dir_all(&d);
                s
            },
            || {
                let d = fresh(&t, scratch.path(), &mut 1000);
                let s = run_shell(&d);
                let _ = std::fs::remove_dir_all(&d);
                s
            },
        );
        let per = |ms: f64| ms / f64::from(ITERATIONS);
        let cpu: Vec<f64> = fresh_a
            .borrow()
            .iter()
            .map(|s| s.cpu.as_secs_f64() * 1000.0)
            .collect();
        let mut cpu_sorted = cpu.clone();
        cpu_sorted.sort_by(f64::total_cmp);
        println!(
            "     {name}: loopexec {:.2} ms/iteration, sh loop {:.2} ms/iteration (wall, medians); loopexec CPU median {:.0} ms incl. children",
            per(row.a_median),
            per(row.b_median),
            cpu_sorted[cpu_sorted.len() / 2]
        );
    }
    if only.is_empty() || only == "suite" {
        let t = template(scratch.path(), "suite", 0, false);
        std::fs::write(t.join("out.txt"), libtest_output()).expect("write out.txt");
        std::fs::write(t.join("check.sh"), "cat out.txt; exit 101\n").expect("write check.sh");
        let name = "loop/suite3000-150";
        let row = ab(
            name,
            Metric::Wall,
            reps,
            ("loopexec", "sh loop"),
            None,
            || {
                let d = fresh(&t, scratch.path(), &mut n);
                let s = run_loopexec_with(
                    &bin,
                    &config,
                    &d,
                    true,
                    (SUITE_EXEC, SUITE_CHECK, SUITE_ITERATIONS),
                );
                let _ = std::fs::remove_dir_all(&d);
                s
            },
            || {
                let d = fresh(&t, scratch.path(), &mut 1000);
                let s = run_shell_script(&d, &suite_shell_loop());
                let _ = std::fs::remove_dir_all(&d);
                s
            },
        );
        let per = |ms: f64| ms / f64::from(SUITE_ITERATIONS);
        println!(
            "     {name}: loopexec {:.2} ms/iteration, sh loop {:.2} ms/iteration (wall, medians)",
            per(row.a_median),
            per(row.b_median),
        );
    }
}
