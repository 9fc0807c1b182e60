//! Snapshot + guard cost of one loop iteration on a 20,000-file repository.
//!
//! Setup (not timed): a temp git repository with 20,000 committed files — 500
//! `tests/test_*.py` files with asserts, 20 protected runner/package configs
//! (`pyproject.toml`, `setup.cfg`, `tox.ini`, `conftest.py`, `package.json`,
//! `jest.config.js`), and the rest spread over `src/<a>/<b>/` as Python, Rust (a
//! quarter of which hold `#[test]` functions), JavaScript and Markdown files.
//!
//! Timed, per iteration, exactly what the run loop does with
//! `loopexec::observe::tree::TreeObserver` after the exec and around the check:
//! `observe(it)` (snapshot through a temporary index, diff against t0, assertion
//! counts and the protected manifest), `after_check(it, 0)` (a second snapshot) and
//! `check_writes(before, after)`. Before each timed iteration (untimed) 3 files
//! change: a source file, a test file (one assert more) and a Rust file.
//!
//! Run: `cargo bench --bench guards`. Prints
//! `guards: 20000 files, <ms> ms per iteration (snapshot + measures)`, with the
//! split between the three calls and the one-off t0 baseline.
//! Under `cargo test --benches` (criterion's test mode) the repository has 500 files.

mod common;
use common::git;
use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use loopexec::config::RunConfig;
use loopexec::observe::tree::TreeObserver;
use std::cell::RefCell;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const TEST_FILES: usize = 500;
const PROTECTED: &[&str] = &[
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
    "conftest.py",
    "tests/conftest.py",
    "package.json",
    "jest.config.js",
    "packages/web/package.json",
    "packages/web/jest.config.js",
    "packages/api/package.json",
    "packages/api/jest.config.js",
    "packages/cli/package.json",
    "packages/ui/package.json",
    "packages/core/package.json",
    "services/a/pyproject.toml",
    "services/b/pyproject.toml",
    "services/c/pyproject.toml",
    "services/a/setup.cfg",
    "services/b/tox.ini",
    "services/c/conftest.py",
];

/// True under `cargo bench` (criterion's benchmark mode), false under `cargo test`.
fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}

fn write(root: &Path, rel: &str, body: &str) {
    let p = root.join(rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(p, body).expect("write file");
}

fn test_py(i: usize, asserts: usize) -> String {
    let mut s = format!("import pytest\nfrom src.a{} import m\n\n", i % 10);
    for k in 0..asserts {
        let _ = write!(
            s,
            "def test_case_{k}():\n    value = m.compute({i}, {k})\n    assert value == {k} + {i}\n    assert isinstance(value, int)\n\n"
        );
    }
    s
}

fn source(i: usize) -> (String, String) {
    let dir = format!("src/a{}/b{}", i % 10, (i / 10) % 20);
    match i % 4 {
        0 => (
            format!("{dir}/mod_{i}.py"),
            format!(
                "\"\"\"Module {i}.\"\"\"\n\nimport os\n\n\ndef compute(a, b):\n    # assert is not counted outside test files\n    return a + b + {i}\n\n\nclass Thing{i}:\n    def __init__(self):\n        self.n = {i}\n\n    def run(self):\n        return [x * 2 for x in range(self.n % 17)]\n"
            ),
        ),
        1 => {
            let tests = if i % 16 == 1 {
                format!(
                    "\n#[cfg(test)]\nmod tests {{\n    #[test]\n    fn adds() {{\n        assert_eq!(super::f{i}(1), {});\n        assert!(super::f{i}(0) > 0);\n    }}\n}}\n",
                    i + 1
                )
            } else {
                String::new()
            };
            (
                format!("{dir}/m{i}.rs"),
                format!(
                    "//! Module {i}.\n\npub fn f{i}(x: u64) -> u64 {{\n    x + {i}\n}}\n\npub struct S{i} {{\n    pub v: Vec<u64>,\n}}\n{tests}"
                ),
            )
        }
        2 => (
            format!("{dir}/c{i}.js"),
            format!(
                "'use strict';\n\nfunction c{i}(a, b) {{\n  return a * b + {i};\n}}\n\nmodule.exports = {{ c{i} }};\n"
            ),
        ),
        _ => (
            format!("{dir}/notes_{i}.md"),
            format!("# Notes {i}\n\nSome text about component {i}.\n\n- item one\n- item two\n"),
        ),
    }
}

/// Writes and commits the repository; returns (source paths, test paths).
fn build_repo(root: &Path, total: usize) -> (Vec<String>, Vec<String>) {
    let tests = TEST_FILES.min(total / 4);
    let mut test_paths = Vec::new();
    for i in 0..tests {
        let rel = format!("tests/test_{i}.py");
        write(root, &rel, &test_py(i, 3 + i % 5));
        test_paths.push(rel);
    }
    for (k, p) in PROTECTED.iter().enumerate() {
        let body = if p.ends_with(".json") {
            format!("{{\"name\": \"pkg{k}\", \"scripts\": {{\"test\": \"jest\"}}}}\n")
        } else if p.ends_with(".js") {
            "module.exports = { testEnvironment: 'node' };\n".to_string()
        } else if p.ends_with(".py") {
            "import pytest\n\n@pytest.fixture\ndef db():\n    return {}\n".to_string()
        } else {
            format!("[tool.pytest.ini_options]\naddopts = \"-q\"\n# {k}\n")
        };
        write(root, p, &body);
    }
    let mut sources = Vec::new();
    for i in 0..total - tests - PROTECTED.len() {
        let (rel, body) = source(i);
        write(root, &rel, &body);
        sources.push(rel);
    }
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "init"]);
    (sources, test_paths)
}

fn append(root: &Path, rel: &str, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(root.join(rel))
        .expect("open for append");
    f.write_all(text.as_bytes()).expect("append");
}

#[derive(Default)]
struct Split {
    observe: Vec<Duration>,
    after_check: Vec<Duration>,
    check_writes: Vec<Duration>,
    total: Vec<Duration>,
}

fn median_ms(v: &[Duration]) -> f64 {
    let mut v = v.to_vec();
    v.sort();
    v.get(v.len() / 2)
        .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
}

fn bench_guards(c: &mut Criterion) {
    let total = if bench_mode() { 20_000 } else { 500 };
    let dir = tempfile::Builder::new()
        .prefix("loopexec-guards-bench")
        .tempdir()
        .expect("tempdir");
    let root = dir.path();
    let setup = Instant::now();
    let (sources, tests) = build_repo(root, total);
    let listed = Command::new("git")
        .args(["ls-files"])
        .current_dir(root)
        .output()
        .expect("git ls-files");
    let files = listed.stdout.iter().filter(|&&b| b == b'\n').count();
    assert_eq!(files, total, "the repository holds {files} files");
    let setup = setup.elapsed();

    let cfg = RunConfig::defaults();
    let mut obs = TreeObserver::new(root, "bench", &cfg);
    let t0 = Instant::now();
    let (git_state, measures, unavailable) = obs.baseline();
    let baseline = t0.elapsed();
    assert!(git_state.available, "git unavailable: {unavailable:?}");
    let asserted = measures.assertions.len();
    let rust_tests = sources
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 16 == 1)
        .count();
    assert_eq!(
        asserted,
        tests.len() + rust_tests,
        "assertion counts per test file at t0"
    );
    let manifest = measures.manifest.len();
    assert_eq!(manifest, PROTECTED.len(), "protected manifest at t0");

    let split = RefCell::new(Split::default());
    let mut it: u32 = 0;
    let mut g = c.benchmark_group("guards");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5))
        .sampling_mode(SamplingMode::Flat);
    g.bench_function(format!("iteration-{total}-files"), |b| {
        b.iter_custom(|iters| {
            let mut sum = Duration::ZERO;
            for _ in 0..iters {
                it += 1;
                let n = it as usize;
                // the "agent": 3 files change (untimed)
                let py = &sources[(n * 4) % sources.len() / 4 * 4];
                append(root, py, &format!("\n# edit {n}\n"));
                let test = &tests[n % tests.len()];
                append(
                    root,
                    test,
                    &format!("\ndef test_edit_{n}():\n    assert {n} == {n}\n"),
                );
                let rs = &sources[((n * 4) % sources.len() / 4 * 4 + 1) % sources.len()];
                append(root, rs, &format!("\n// edit {n}\n"));

                let start = Instant::now();
                let o = obs.observe(it);
                let observed = start.elapsed();
                let before = o.tree.clone().expect("snapshot tree");
                // the check-in-place walk (no watch may stand for it)
                let after = obs.after_check(it, 0, false).expect("check snapshot");
                let checked = start.elapsed();
                let w = obs.check_writes(&before, &after);
                let took = start.elapsed();

                // the measurements saw the edits
                let changed = &o.measures.changed_since_t0;
                assert!(changed.iter().any(|p| p == test), "{test} unseen");
                assert!(w.changed.is_empty() && w.created.is_empty());
                let mut s = split.borrow_mut();
                s.observe.push(observed);
                s.after_check.push(checked - observed);
                s.check_writes.push(took - checked);
                s.total.push(took);
                sum += took;
            }
            sum
        });
    });
    g.finish();

    let s = split.borrow();
    println!(
        "guards: {total} files, {:.1} ms per iteration (snapshot + measures)",
        median_ms(&s.total)
    );
    println!(
        "guards: split observe {:.1} ms (snapshot + diff vs t0 + assertions + manifest), after_check {:.1} ms (snapshot), check_writes {:.1} ms; t0 baseline {:.0} ms (cold assertion cache); repo setup {:.1} s; {} iterations measured",
        median_ms(&s.observe),
        median_ms(&s.after_check),
        median_ms(&s.check_writes),
        baseline.as_secs_f64() * 1000.0,
        setup.as_secs_f64(),
        s.total.len()
    );
}

criterion_group!(benches, bench_guards);
criterion_main!(benches);
