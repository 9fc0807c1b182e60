//! Interleaved A/B measurement: every row of loopexec's performance table is a ratio
//! of two commands measured in the same run, A then B then A …, so machine load and
//! cache state affect both sides alike. No bench asserts a time; each prints its row:
//!
//! ```text
//! ROW <name>: <a> median 12.3 ms (min 11.9) · <b> median 10.1 ms (min 9.8) · ratio 1.22 (min-ratio 1.21) · target ≤ 1.50: met
//! ```
//!
//! The ratio is median(A) / median(B); `min-ratio` is min(A) / min(B). Peak memory
//! rows use [`Sample::max_rss_kib`] of the child (from `wait4`), CPU rows
//! [`Sample::cpu`] (user + system time of the child and everything it waited for).
#![allow(dead_code)]

use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

/// One measured run of a child process.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Wall-clock time from spawn to reap.
    pub wall: Duration,
    /// User + system CPU time of the child and its waited-for descendants.
    pub cpu: Duration,
    /// Peak resident set size of the child (or its largest waited-for descendant), KiB.
    pub max_rss_kib: u64,
}

/// Runs `cmd` to completion and measures it with `wait4`; returns its exit status.
///
/// # Panics
/// When the command cannot be spawned or waited for.
pub fn measure(cmd: &mut Command) -> (ExitStatus, Sample) {
    use std::os::unix::process::ExitStatusExt;
    let start = Instant::now();
    let child = cmd.spawn().expect("spawn the measured command");
    let pid = i32::try_from(child.id()).expect("pid fits i32");
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child `pid`.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `status` and `ru` are valid for writes; `pid` is a child of this process
    // that has not been reaped (the `Child` is leaked below, never waited on).
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    let wall = start.elapsed();
    assert!(
        r == pid,
        "wait4 failed: {}",
        std::io::Error::last_os_error()
    );
    std::mem::forget(child);
    let tv = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    (
        ExitStatus::from_raw(status),
        Sample {
            wall,
            cpu: tv(ru.ru_utime) + tv(ru.ru_stime),
            max_rss_kib: u64::try_from(ru.ru_maxrss).unwrap_or(0),
        },
    )
}

/// What a row compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Wall-clock time.
    Wall,
    /// CPU time.
    Cpu,
    /// Peak RSS.
    MaxRss,
}

impl Metric {
    fn of(self, s: &Sample) -> f64 {
        match self {
            Metric::Wall => s.wall.as_secs_f64() * 1000.0,
            Metric::Cpu => s.cpu.as_secs_f64() * 1000.0,
            Metric::MaxRss => s.max_rss_kib as f64 / 1024.0,
        }
    }
    fn unit(self) -> &'static str {
        match self {
            Metric::Wall | Metric::Cpu => "ms",
            Metric::MaxRss => "MiB",
        }
    }
}

/// The outcome of one row.
#[derive(Debug, Clone)]
pub struct Row {
    /// median(A), min(A), median(B), min(B), in the metric's unit.
    pub a_median: f64,
    pub a_min: f64,
    pub b_median: f64,
    pub b_min: f64,
    /// median(A) / median(B).
    pub ratio: f64,
    /// min(A) / min(B).
    pub min_ratio: f64,
}

fn median_min(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let med = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    (med, v[0])
}

/// Measures `a` and `b` interleaved `reps` times (at least 5) after one untimed warm-up
/// of each, and prints the row. `target` is the ratio the row must stay at or under
/// (`None` for rows that only report). Each closure runs one repetition and returns
/// its sample (closures do their own untimed setup).
pub fn ab(
    name: &str,
    metric: Metric,
    reps: usize,
    labels: (&str, &str),
    target: Option<f64>,
    mut a: impl FnMut() -> Sample,
    mut b: impl FnMut() -> Sample,
) -> Row {
    let reps = reps.max(5);
    a();
    b();
    let (mut va, mut vb) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for _ in 0..reps {
        va.push(metric.of(&a()));
        vb.push(metric.of(&b()));
    }
    let (a_median, a_min) = median_min(va);
    let (b_median, b_min) = median_min(vb);
    let row = Row {
        a_median,
        a_min,
        b_median,
        b_min,
        ratio: a_median / b_median.max(f64::MIN_POSITIVE),
        min_ratio: a_min / b_min.max(f64::MIN_POSITIVE),
    };
    print_row(name, metric, labels, target, &row);
    row
}

/// Prints a row in the common format (also for rows measured some other way).
pub fn print_row(name: &str, metric: Metric, labels: (&str, &str), target: Option<f64>, r: &Row) {
    let u = metric.unit();
    let verdict = match target {
        Some(t) if r.ratio <= t => format!(" · target ≤ {t:.2}: met"),
        Some(t) => format!(" · target ≤ {t:.2}: NOT MET"),
        None => String::new(),
    };
    println!(
        "ROW {name}: {} median {:.1} {u} (min {:.1}) · {} median {:.1} {u} (min {:.1}) · ratio {:.2} (min-ratio {:.2}){verdict}",
        labels.0, r.a_median, r.a_min, labels.1, r.b_median, r.b_min, r.ratio, r.min_ratio
    );
}
