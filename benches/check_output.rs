//! What a check that prints a lot costs loopexec: peak memory and CPU per GiB of
//! output, against `cat` reading the same bytes from the same producer, interleaved in
//! the same run (`common::ab`).
//!
//! Workload: the check is `PRODUCER` (1 GiB of short text lines that no parser
//! recognises, exit 0), run once: `loopexec run --max-iterations 1 --confirm-runs 0`
//! halts after the green baseline. The comparator is `PRODUCER | cat > /dev/null`.
//! Both sides include the producer's CPU (`wait4` counts every waited-for
//! descendant); the `CPU/GiB` line subtracts the comparator's total, which leaves
//! loopexec's own share minus `cat`'s (a copy per byte).
//!
//! Limits (issue 14): peak RSS ≤ 16 MiB and ≤ 1 s of CPU per GiB of output. They are
//! printed as `LIMIT` lines; no bench fails on a time.
//!
//! The binary: `$LOOPEXEC_BIN` when set, else `common::loopexec_bin`.
//! Run: `cargo bench --bench check_output` (`CHECK_OUTPUT_REPS=N`, `CHECK_OUTPUT_MIB=N`).

mod common;
use common::ab::{ab, measure, Metric, Sample};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn bin() -> PathBuf {
    std::env::var_os("LOOPEXEC_BIN").map_or_else(common::loopexec_bin, PathBuf::from)
}

fn producer(mib: u64) -> String {
    format!(
        "yes 'some check output: compiling module 42 of 97, nothing to see' | head -c {}",
        mib << 20
    )
}

fn run_loopexec(bin: &Path, dir: &Path, check: &str) -> Sample {
    let _ = std::fs::remove_dir_all(dir.join(".loopexec"));
    let (st, s) = measure(
        Command::new(bin)
            .args(["--json", "run", "-q", "--check", check])
            .args(["--max-iterations", "1", "--confirm-runs", "0"])
            .args(["--check-in-place", "--sandbox", "off"])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    assert!(st.code().is_some(), "loopexec was killed");
    s
}

fn run_cat(dir: &Path, check: &str) -> Sample {
    let (st, s) = measure(
        Command::new("sh")
            .args(["-c", &format!("{check} | cat > /dev/null")])
            .current_dir(dir)
            .stdin(Stdio::null()),
    );
    assert!(st.success());
    s
}

fn main() {
    let bin = bin();
    let reps: usize = std::env::var("CHECK_OUTPUT_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let mib: u64 = std::env::var("CHECK_OUTPUT_MIB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1024);
    let gib = mib as f64 / 1024.0;
    let scratch = tempfile::tempdir().expect("tempdir");
    let dir = scratch.path();
    let check = producer(mib);
    println!(
        "check_output: binary {}, {mib} MiB of output",
        bin.display()
    );
    let rss = ab(
        "check-output/peak-rss",
        Metric::MaxRss,
        reps,
        ("loopexec", "cat"),
        None,
        || run_loopexec(&bin, dir, &check),
        || run_cat(dir, &check),
    );
    let rss_ok = if rss.a_median <= 16.0 {
        "met"
    } else {
        "NOT MET"
    };
    println!(
        "LIMIT check-output/peak-rss: loopexec median {:.1} MiB · limit ≤ 16 MiB: {rss_ok}",
        rss.a_median
    );
    let cpu = ab(
        "check-output/cpu",
        Metric::Cpu,
        reps,
        ("loopexec", "cat"),
        None,
        || run_loopexec(&bin, dir, &check),
        || run_cat(dir, &check),
    );
    let own = (cpu.a_median - cpu.b_median).max(0.0) / 1000.0 / gib;
    let cpu_ok = if own <= 1.0 { "met" } else { "NOT MET" };
    println!(
        "LIMIT check-output/cpu-per-GiB: loopexec {own:.2} s of CPU per GiB beyond `cat` (medians) · limit ≤ 1 s: {cpu_ok}"
    );
}
