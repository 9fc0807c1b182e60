//! `loopexec parse` at read speed: every row is a ratio against `wc -l` on the same
//! file, measured interleaved in the same run ([`common::ab`]), plus peak-RSS rows.
//!
//! Inputs, generated into a temp directory before measuring:
//! * `junit-100k`: a 100,000-case JUnit XML report (~9.9 MB, a little larger than the
//!   issue's 7.6 MB; `loopexec::check::parse::junit::synthetic_junit`), handed over as
//!   `--report`;
//! * `libtest-1M`: 1,000,000 lines of `cargo test` human output on stdout (~52 MB, the
//!   issue's was 42.5 MB: `running N tests`, `test mod_i::case_j ... ok|FAILED|ignored[, reason]`, one
//!   `---- NAME stdout ----` block per failure, the name list, `test result: FAILED.
//!   ...`), plus cargo's `Running` line on stderr;
//! * `libtest-1M-stdout-only`: the same stdout without stderr (no binary label).
//!
//! Each input is parsed by the release binary in both output shapes: the default
//! (every test listed) and `--summary` (counts and failing names only; skipped when
//! the binary has no such flag, e.g. an older build measured with `LOOPEXEC_BIN`).
//! Before measuring, one run's `counts` are checked against the generated ones (a
//! broken parser cannot produce a fast number).
//!
//! Rows (issue 14's targets): wall time ≤ 4× `wc -l` (≥ 25% of its speed); peak RSS
//! ≤ 16 MiB for the JUnit report, ≤ 64 MiB for the libtest output. CPU rows report
//! only. The JUnit report is also read by `junitparser` (a Python library CI tools
//! use to read such reports, counting outcomes and listing the failing cases): the
//! target is ≤ 0.10× its wall time (10× faster). That row is skipped, with a note,
//! when `python3 -c 'import junitparser'` fails (`python3 -m pip install junitparser`).
//!
//! Run: `cargo bench --bench parse_throughput` (measures `target/release/loopexec`;
//! set `LOOPEXEC_BIN=/path/to/loopexec` to measure another build, e.g. main's for a
//! before/after table; `PARSE_BENCH_REPS=N` sets the repetitions, default 9). Under
//! `cargo test --benches` the inputs are 100× smaller and each row runs 5 times.
//! `PARSE_BENCH=junit` (or `libtest`) measures only the inputs whose name starts so.

mod common;
use common::ab::{ab, measure, Metric, Sample};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// True under `cargo bench`, false under `cargo test --benches`.
fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// The binary to measure: `$LOOPEXEC_BIN` when set, else the release build.
fn binary() -> PathBuf {
    std::env::var_os("LOOPEXEC_BIN").map_or_else(common::loopexec_bin, PathBuf::from)
}

/// Expected counts of a generated input (errors count as failed, as in `counts`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    passed: u64,
    failed: u64,
    skipped: u64,
}

/// Writes the JUnit report; returns its expected counts (the generator's pattern:
/// i % 10 == 3 failed, i % 10 == 7 errored, i % 20 == 9 skipped).
fn write_junit(path: &Path, cases: usize) -> Counts {
    let mut w = BufWriter::new(File::create(path).expect("create junit"));
    loopexec::check::parse::junit::synthetic_junit(cases, &mut w).expect("write junit");
    w.flush().expect("flush junit");
    let mut c = Counts::default();
    for i in 0..cases {
        match (i % 10, i % 20) {
            (3 | 7, _) => c.failed += 1,
            (_, 9) => c.skipped += 1,
            _ => c.passed += 1,
        }
    }
    c
}

/// Test names of the libtest input, ~48 bytes per result line (1M lines with the
/// failure blocks are ~52 MB).
fn libtest_name(i: usize) -> String {
    format!(
        "integration::module_{:04}::case_{:04}_holds",
        i / 1000,
        i % 1000
    )
}

/// Lines of libtest output for `tests` tests (one binary), as written by
/// [`write_libtest`] before padding.
fn libtest_lines(tests: usize) -> usize {
    let failed = (0..tests).filter(|i| i % 50 == 7).count();
    // blank, running, tests, blank, failures:, blank, 7 per failure block,
    // failures:, one per name, blank, test result, blank
    2 + tests + 3 + 7 * failed + 1 + failed + 3
}

/// Writes `lines` lines of libtest output to `stdout` and cargo's stderr to `stderr`;
/// returns the expected counts (i % 50 == 7 FAILED, i % 20 == 11 ignored).
fn write_libtest(stdout: &Path, stderr: &Path, lines: usize) -> Counts {
    // the largest test count whose output fits, padded with blank lines at the end
    let mut tests = lines * 100 / 116;
    while libtest_lines(tests + 1) <= lines {
        tests += 1;
    }
    while libtest_lines(tests) > lines {
        tests -= 1;
    }
    let mut c = Counts::default();
    let mut w = BufWriter::with_capacity(1 << 20, File::create(stdout).expect("create stdout"));
    let mut failed = Vec::new();
    writeln!(w).unwrap();
    writeln!(w, "running {tests} tests").unwrap();
    for i in 0..tests {
        let name = libtest_name(i);
        if i % 50 == 7 {
            writeln!(w, "test {name} ... FAILED").unwrap();
            failed.push(i);
            c.failed += 1;
        } else if i % 40 == 31 {
            writeln!(w, "test {name} ... ignored, needs network").unwrap();
            c.skipped += 1;
        } else if i % 20 == 11 {
            writeln!(w, "test {name} ... ignored").unwrap();
            c.skipped += 1;
        } else {
            writeln!(w, "test {name} ... ok").unwrap();
            c.passed += 1;
        }
    }
    writeln!(w, "\nfailures:\n").unwrap();
    for (k, &i) in failed.iter().enumerate() {
        let name = libtest_name(i);
        writeln!(w, "---- {name} stdout ----\n").unwrap();
        writeln!(
            w,
            "thread '{name}' ({}) panicked at src/mod_{}.rs:{}:9:",
            5000 + k % 1000,
            i / 1000,
            10 + i % 1000
        )
        .unwrap();
        writeln!(w, "assertion `left == right` failed: value mismatch").unwrap();
        writeln!(w, "  left: {i}\n right: {}\n", i + 1).unwrap();
    }
    writeln!(w, "failures:").unwrap();
    for &i in &failed {
        writeln!(w, "    {}", libtest_name(i)).unwrap();
    }
    writeln!(w).unwrap();
    writeln!(
        w,
        "test result: FAILED. {} passed; {} failed; {} ignored; 0 measured; 0 filtered out; finished in 812.34s\n",
        c.passed, c.failed, c.skipped
    )
    .unwrap();
    for _ in libtest_lines(tests)..lines {
        writeln!(w).unwrap();
    }
    w.flush().unwrap();
    std::fs::write(
        stderr,
        "   Compiling bench v0.1.0 (/src/bench)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 9.87s\n     Running unittests src/lib.rs (target/debug/deps/bench-0123456789abcdef)\nerror: test failed, to rerun pass `--lib`\n",
    )
    .unwrap();
    c
}

/// One generated input and how to hand it to `loopexec parse`.
struct Input {
    name: String,
    /// The file `wc -l` reads (the bulk of the input).
    main_file: PathBuf,
    args: Vec<String>,
    expected: Counts,
    rss_target_mib: f64,
}

impl Input {
    fn command(&self, bin: &Path, summary: bool) -> Command {
        let mut c = Command::new(bin);
        c.args(["--json", "parse"]).args(&self.args);
        if summary {
            c.arg("--summary");
        }
        c.stdin(Stdio::null()).stderr(Stdio::inherit());
        c
    }

    /// One run with its output read back: the counts must be the generated ones.
    /// The output is streamed from the pipe into counts and a test count only
    /// (`IgnoredAny` per test), so this process stays small: the peak RSS `wait4`
    /// reports for a child is at least this process's own peak (the child starts as a
    /// copy of it before `exec`), which the `wc -l` row shows.
    fn verify(&self, bin: &Path, summary: bool) {
        #[derive(serde::Deserialize)]
        struct Got {
            counts: GotCounts,
            tests: Option<Vec<serde::de::IgnoredAny>>,
        }
        #[derive(serde::Deserialize)]
        struct GotCounts {
            passed: u64,
            failed: u64,
            skipped: u64,
        }
        let mut child = self
            .command(bin, summary)
            .stdout(Stdio::piped())
            .spawn()
            .expect("run loopexec parse");
        let stdout = child.stdout.take().expect("piped stdout");
        let got: Got = serde_json::from_reader(std::io::BufReader::new(stdout))
            .expect("loopexec --json parse prints its JSON");
        let st = child.wait().expect("wait for loopexec parse");
        assert!(st.success(), "{}: loopexec parse failed: {st}", self.name);
        let e = self.expected;
        assert_eq!(
            (got.counts.passed, got.counts.failed, got.counts.skipped),
            (e.passed, e.failed, e.skipped),
            "{} (summary: {summary}): the binary read other counts",
            self.name
        );
        let listed = got.tests.map(|t| t.len() as u64);
        let want = (!summary).then_some(e.passed + e.failed + e.skipped);
        if summary {
            assert_eq!(listed, None, "{}: --summary listed the tests", self.name);
        } else {
            assert_eq!(
                listed, want,
                "{}: the binary listed another number of tests",
                self.name
            );
        }
    }

    fn run(&self, bin: &Path, summary: bool) -> Sample {
        let mut c = self.command(bin, summary);
        c.stdout(Stdio::null());
        let (st, s) = measure(&mut c);
        assert!(st.success(), "{}: loopexec parse failed: {st}", self.name);
        s
    }

    fn wc(&self) -> Sample {
        let mut c = Command::new("wc");
        c.arg("-l")
            .arg(&self.main_file)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        let (st, s) = measure(&mut c);
        assert!(st.success(), "wc -l failed: {st}");
        s
    }
}

/// What the `junitparser` comparator runs: it reads the whole report into
/// junitparser's tree, as a CI step that reads such a report does, and prints
/// `passed failed skipped` (an error counts as failed, as in `counts`) and the number
/// of failing cases it listed.
const JUNITPARSER_SCRIPT: &str = r#"import sys
from junitparser import JUnitXml, Failure, Error, Skipped
passed = failed = skipped = 0
failing = []
for suite in JUnitXml.fromfile(sys.argv[1]):
    for case in suite:
        result = case.result
        if any(isinstance(r, (Failure, Error)) for r in result):
            failed += 1
            failing.append(case.classname + "::" + case.name)
        elif any(isinstance(r, Skipped) for r in result):
            skipped += 1
        else:
            passed += 1
print(passed, failed, skipped, len(failing))
"#;

/// `python3 SCRIPT REPORT` when `junitparser` can be imported, checked once against
/// the generated counts; `None` (with the reason printed) otherwise.
fn junitparser(dir: &Path, report: &Path, expected: Counts) -> Option<Command> {
    let script = dir.join("junitparser_count.py");
    std::fs::write(&script, JUNITPARSER_SCRIPT).expect("write the junitparser script");
    let mut c = Command::new("python3");
    c.arg(&script).arg(report).stdin(Stdio::null());
    let out = match c.output() {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            println!(
                "note: junitparser rows skipped: {} (python3 -m pip install junitparser)",
                err.lines().last().unwrap_or("python3 failed")
            );
            return None;
        }
        Err(e) => {
            println!("note: junitparser rows skipped: python3 cannot be run ({e})");
            return None;
        }
    };
    let got = String::from_utf8_lossy(&out.stdout);
    let e = expected;
    assert_eq!(
        got.trim(),
        format!("{} {} {} {}", e.passed, e.failed, e.skipped, e.failed),
        "junitparser read other counts than the generator wrote"
    );
    c.stdout(Stdio::null()).stderr(Stdio::inherit());
    Some(c)
}

fn main() {
    let full = bench_mode();
    let (cases, lines, mut reps) = if full {
        (100_000, 1_000_000, 9)
    } else {
        (1_000, 10_000, 5)
    };
    // fewer repetitions for a slow build (at least 5, see `ab`)
    if let Some(n) = std::env::var("PARSE_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        reps = n;
    }
    let bin = binary();
    let dir = tempfile::Builder::new()
        .prefix("loopexec-parse-bench")
        .tempdir()
        .expect("tempdir");
    let d = dir.path();
    let junit = d.join("junit.xml");
    let junit_counts = write_junit(&junit, cases);
    let (lt_out, lt_err) = (d.join("libtest.stdout"), d.join("libtest.stderr"));
    let lt_counts = write_libtest(&lt_out, &lt_err, lines);
    let mb = |p: &Path| std::fs::metadata(p).map_or(0.0, |m| m.len() as f64 / 1e6);
    println!(
        "inputs: {} ({:.1} MB, {cases} cases), {} ({:.1} MB, {lines} lines); binary {}",
        junit.display(),
        mb(&junit),
        lt_out.display(),
        mb(&lt_out),
        bin.display()
    );
    let s = |p: &Path| p.display().to_string();
    // the libtest input, with its stderr (cargo's `Running` label) unless `suffix` is
    // given
    let libtest_input = |suffix: &str| {
        let mut args = vec!["--stdout".to_string(), s(&lt_out)];
        if suffix.is_empty() {
            args.extend(["--stderr".to_string(), s(&lt_err)]);
        }
        args.extend(["--exit-code".to_string(), "101".to_string()]);
        Input {
            name: if full {
                format!("libtest-1M{suffix}")
            } else {
                format!("libtest-{}k{suffix}", lines / 1000)
            },
            main_file: lt_out.clone(),
            args,
            expected: lt_counts,
            rss_target_mib: 64.0,
        }
    };
    let inputs = [
        Input {
            name: format!("junit-{}k", cases / 1000),
            main_file: junit.clone(),
            args: vec![
                "--report".into(),
                s(&junit),
                "--exit-code".into(),
                "1".into(),
            ],
            expected: junit_counts,
            rss_target_mib: 16.0,
        },
        libtest_input(""),
        // the same stdout without stderr (no binary label: a check that captured
        // only stdout, or `parse --stdout` alone); ids must still tell repeated names
        // across binaries apart, without copying each name
        libtest_input("-stdout-only"),
    ];
    let help = Command::new(&bin)
        .args(["parse", "--help"])
        .output()
        .expect("run loopexec parse --help");
    let has_summary = String::from_utf8_lossy(&help.stdout).contains("--summary");
    let shapes: &[bool] = if has_summary {
        &[false, true]
    } else {
        &[false]
    };
    if !has_summary {
        println!(
            "note: {} has no --summary; measuring the default shape only",
            bin.display()
        );
    }
    let only = std::env::var("PARSE_BENCH").unwrap_or_default();
    let mut jp = junitparser(d, &junit, junit_counts);
    for input in inputs.iter().filter(|i| i.name.starts_with(&only)) {
        for &summary in shapes {
            input.verify(&bin, summary);
            let shape = if summary { "--summary" } else { "default" };
            let name = format!("parse {} ({shape})", input.name);
            ab(
                &format!("{name} wall vs wc -l"),
                Metric::Wall,
                reps,
                ("loopexec parse", "wc -l"),
                Some(4.0),
                || input.run(&bin, summary),
                || input.wc(),
            );
            ab(
                &format!("{name} CPU vs wc -l"),
                Metric::Cpu,
                reps,
                ("loopexec parse", "wc -l"),
                None,
                || input.run(&bin, summary),
                || input.wc(),
            );
            let row = ab(
                &format!("{name} peak RSS vs wc -l"),
                Metric::MaxRss,
                reps,
                ("loopexec parse", "wc -l"),
                None,
                || input.run(&bin, summary),
                || input.wc(),
            );
            let t = input.rss_target_mib;
            let verdict = if row.a_median <= t { "met" } else { "NOT MET" };
            println!(
                "ROW {name} peak RSS: median {:.1} MiB (min {:.1}) · target ≤ {t:.0} MiB: {verdict}",
                row.a_median, row.a_min
            );
            if let (Some(jp), true) = (jp.as_mut(), input.main_file == junit) {
                ab(
                    &format!("{name} wall vs junitparser"),
                    Metric::Wall,
                    reps,
                    ("loopexec parse", "junitparser"),
                    Some(0.10),
                    || input.run(&bin, summary),
                    || {
                        let (st, s) = measure(jp);
                        assert!(st.success(), "junitparser failed: {st}");
                        s
                    },
                );
            }
        }
    }
}
