//! Test-output parse throughput (MB/s) and peak memory.
//!
//! Inputs, generated into a temp directory before measuring:
//! * `junit-100k`: a 100,000-case JUnit XML report
//!   (`loopexec::check::parse::junit::synthetic_junit`), handed over as a report file;
//! * `libtest-1M`: 1,000,000 lines of `cargo test` human output on stdout (one test
//!   binary: `running N tests`, `test mod_i::case_j ... ok|FAILED|ignored[, reason]`,
//!   the failures section with one `---- NAME stdout ----` block per failure, the name
//!   list, `test result: FAILED. ...`), plus cargo's `Running` line on stderr.
//!
//! Both go through the public dispatcher `loopexec::check::parse::parse` with
//! `FormatChoice::Auto`, so format detection is part of the measured time. Before
//! measuring, the result is checked against the generated counts (a broken parser
//! cannot produce a fast number); every timed parse also checks the test count.
//!
//! Peak memory: the release binary runs `loopexec parse --json` on the same files in a
//! child process under `/usr/bin/time -f %M` (else VmHWM polled from /proc). That
//! figure is the whole command: parse plus rendering every test as JSON.
//!
//! Run: `cargo bench --bench parse_throughput`. Prints
//! `parse_throughput: junit-100k X MB/s, libtest-1M Y MB/s` and
//! `parse_memory: junit-100k <N> KiB, libtest-1M <N> KiB, files <size> MB`.
//! Under `cargo test --benches` (criterion's test mode) the inputs are 100x smaller.

mod common;
use common::loopexec_bin;
use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use loopexec::check::model::{Format, Outcome, ParsedRun};
use loopexec::check::parse::{parse, CheckInput, FormatChoice};
use std::cell::RefCell;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// True under `cargo bench` (criterion's benchmark mode), false under `cargo test`.
fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// Expected per-outcome counts of a generated input.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    passed: usize,
    failed: usize,
    errored: usize,
    skipped: usize,
}

impl Counts {
    fn total(self) -> usize {
        self.passed + self.failed + self.errored + self.skipped
    }
    fn of(run: &ParsedRun) -> Counts {
        let mut c = Counts::default();
        for t in &run.tests {
            match t.outcome {
                Outcome::Passed => c.passed += 1,
                Outcome::Failed => c.failed += 1,
                Outcome::Errored => c.errored += 1,
                Outcome::Skipped => c.skipped += 1,
                Outcome::FlakyPassed => panic!("no flaky test was generated: {}", t.id),
            }
        }
        c
    }
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
            (3, _) => c.failed += 1,
            (7, _) => c.errored += 1,
            (_, 9) => c.skipped += 1,
            _ => c.passed += 1,
        }
    }
    c
}

fn libtest_name(i: usize) -> String {
    format!("mod_{}::case_{}", i / 1000, i % 1000)
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

struct Input {
    name: &'static str,
    stdout: Option<PathBuf>,
    stderr: Option<PathBuf>,
    reports: Vec<PathBuf>,
    exit_code: i32,
    format: Format,
    expected: Counts,
    bytes: u64,
}

impl Input {
    fn parse(&self) -> ParsedRun {
        parse(
            &CheckInput {
                stdout: self.stdout.as_deref(),
                stderr: self.stderr.as_deref(),
                exit_code: Some(self.exit_code),
                reports: &self.reports,
            },
            FormatChoice::Auto,
        )
    }

    /// Full check of one parse against the generated counts.
    fn verify(&self, run: &ParsedRun) {
        assert_eq!(run.format, self.format, "{}: wrong format", self.name);
        assert!(
            run.complete,
            "{}: incomplete: {:?}",
            self.name, run.diagnostics
        );
        assert!(
            !run.unattributed_failure,
            "{}: unattributed failure: {:?}",
            self.name, run.diagnostics
        );
        assert_eq!(Counts::of(run), self.expected, "{}: counts", self.name);
        assert_eq!(run.tests.len(), self.expected.total());
        assert_eq!(
            run.collected().len(),
            self.expected.total(),
            "ids not unique"
        );
    }

    /// The same parse through the release binary; returns its peak RSS in KiB.
    fn peak_rss_kib(&self, bin: &Path, dir: &Path) -> u64 {
        let out_path = dir.join(format!("{}.out.json", self.name));
        let mut args: Vec<String> = vec!["parse".into(), "--json".into()];
        for (flag, p) in [("--stdout", &self.stdout), ("--stderr", &self.stderr)] {
            if let Some(p) = p {
                args.push(flag.into());
                args.push(p.display().to_string());
            }
        }
        for r in &self.reports {
            args.push("--report".into());
            args.push(r.display().to_string());
        }
        args.push("--exit-code".into());
        args.push(self.exit_code.to_string());
        let out = File::create(&out_path).expect("create output");
        let time = Path::new("/usr/bin/time");
        let kib = if time.exists() {
            let tfile = dir.join("time.out");
            let st = Command::new(time)
                .args(["-f", "%M", "-o"])
                .arg(&tfile)
                .arg(bin)
                .args(&args)
                .stdout(out)
                .stderr(Stdio::inherit())
                .status()
                .expect("run /usr/bin/time");
            assert!(st.success(), "{}: loopexec parse failed: {st}", self.name);
            let t = std::fs::read_to_string(&tfile).expect("read time output");
            t.lines()
                .rev()
                .find_map(|l| l.trim().parse::<u64>().ok())
                .unwrap_or_else(|| panic!("no %M figure in {t:?}"))
        } else {
            let mut child = Command::new(bin)
                .args(&args)
                .stdout(out)
                .spawn()
                .expect("run loopexec");
            let status = format!("/proc/{}/status", child.id());
            let mut hwm = 0;
            loop {
                if let Ok(s) = std::fs::read_to_string(&status) {
                    if let Some(v) = s
                        .lines()
                        .find_map(|l| l.strip_prefix("VmHWM:"))
                        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                    {
                        hwm = hwm.max(v);
                    }
                }
                if let Some(st) = child.try_wait().expect("wait") {
                    assert!(st.success(), "{}: loopexec parse failed: {st}", self.name);
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            hwm
        };
        // the child must have read the same tests
        let v: serde_json::Value =
            serde_json::from_reader(std::io::BufReader::new(File::open(&out_path).unwrap()))
                .expect("loopexec parse --json prints JSON");
        let tests = v
            .pointer("/tests")
            .or_else(|| v.pointer("/detail/tests"))
            .and_then(|t| t.as_array())
            .map(Vec::len);
        assert_eq!(
            tests,
            Some(self.expected.total()),
            "{}: the binary read another test count",
            self.name
        );
        let _ = std::fs::remove_file(&out_path);
        kib
    }
}

thread_local! {
    static TIMES: RefCell<Vec<(&'static str, u64, Vec<Duration>)>> = const { RefCell::new(Vec::new()) };
}

fn median(v: &[Duration]) -> Option<Duration> {
    let mut v = v.to_vec();
    v.sort();
    v.get(v.len() / 2).copied()
}

fn bench_parse(c: &mut Criterion) {
    let full = bench_mode();
    let (cases, lines) = if full {
        (100_000, 1_000_000)
    } else {
        (1_000, 10_000)
    };
    let dir = tempfile::Builder::new()
        .prefix("loopexec-parse-bench")
        .tempdir()
        .expect("tempdir");
    let d = dir.path();

    let junit = d.join("junit.xml");
    let junit_counts = write_junit(&junit, cases);
    let (lt_out, lt_err) = (d.join("libtest.stdout"), d.join("libtest.stderr"));
    let lt_counts = write_libtest(&lt_out, &lt_err, lines);
    let size = |p: &Path| std::fs::metadata(p).expect("stat").len();
    let inputs = [
        Input {
            name: if full { "junit-100k" } else { "junit-1k" },
            stdout: None,
            stderr: None,
            reports: vec![junit.clone()],
            exit_code: 1,
            format: Format::Junit,
            expected: junit_counts,
            bytes: size(&junit),
        },
        Input {
            name: if full { "libtest-1M" } else { "libtest-10k" },
            stdout: Some(lt_out.clone()),
            stderr: Some(lt_err.clone()),
            reports: Vec::new(),
            exit_code: 101,
            format: Format::Libtest,
            expected: lt_counts,
            bytes: size(&lt_out) + size(&lt_err),
        },
    ];
    for i in &inputs {
        let run = i.parse();
        i.verify(&run);
    }
    // the binary prefixes libtest ids with the test binary named on stderr
    let lt = inputs[1].parse();
    assert_eq!(lt.tests[0].id, "bench::mod_0::case_0", "libtest id scheme");

    let mut g = c.benchmark_group("parse_throughput");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5))
        .sampling_mode(SamplingMode::Flat);
    for input in &inputs {
        g.throughput(Throughput::Bytes(input.bytes));
        let mut times = Vec::new();
        g.bench_function(input.name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    let run = input.parse();
                    let took = start.elapsed();
                    assert_eq!(run.tests.len(), input.expected.total());
                    drop(run);
                    times.push(took);
                    total += took;
                }
                total
            });
        });
        TIMES.with(|t| t.borrow_mut().push((input.name, input.bytes, times)));
    }
    g.finish();

    let bin = loopexec_bin();
    let rss: Vec<(String, u64)> = inputs
        .iter()
        .map(|i| (i.name.to_string(), i.peak_rss_kib(&bin, d)))
        .collect();

    TIMES.with(|t| {
        let t = t.borrow();
        let parts: Vec<String> = t
            .iter()
            .filter_map(|(name, bytes, v)| {
                let m = median(v)?;
                #[allow(clippy::cast_precision_loss)]
                let mbs = *bytes as f64 / 1e6 / m.as_secs_f64();
                Some(format!(
                    "{name} {mbs:.1} MB/s ({:.0} ms per parse)",
                    m.as_secs_f64() * 1000.0
                ))
            })
            .collect();
        println!("parse_throughput: {}", parts.join(", "));
    });
    let mem: Vec<String> = rss.iter().map(|(n, k)| format!("{n} {k} KiB")).collect();
    #[allow(clippy::cast_precision_loss)]
    let files: Vec<String> = inputs
        .iter()
        .map(|i| format!("{:.1}", i.bytes as f64 / 1e6))
        .collect();
    println!(
        "parse_memory: {}, files {} MB (libtest {} lines, {} tests; junit {} cases)",
        mem.join(", "),
        files.join(" / "),
        lines,
        inputs[1].expected.total(),
        inputs[0].expected.total()
    );
}

criterion_group!(benches, bench_parse);
criterion_main!(benches);
