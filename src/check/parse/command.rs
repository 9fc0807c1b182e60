//! Judgments that need the check command, not only its output.
//!
//! Plain `cargo test` is fail-fast across targets: when one test binary fails, cargo
//! prints `error: test failed, to rerun pass `--lib`` and stops, so the targets after
//! it (more unit-test binaries, integration tests, doctests) never run. The captured
//! output is then byte for byte that of `cargo test --lib`, a complete run of one
//! target: only the command tells the two apart (cargo's `--no-fail-fast` and its
//! target-selection flags are documented in `cargo help test`).
//!
//! [`judge`] marks such a run incomplete and names the target cargo stopped at and
//! the ones that never ran. Commands it does not know are left alone.

use super::util::Source;
use crate::check::model::{Format, ParsedRun};

/// Cargo flags that select which test targets run. With one of them the run covers
/// what was asked for, and a stop after a failing target is not a hole.
const TARGET_FLAGS: &[&str] = &[
    "--lib",
    "--bin",
    "--bins",
    "--test",
    "--tests",
    "--example",
    "--examples",
    "--bench",
    "--benches",
    "--doc",
    "--all-targets",
];

/// The text format the runner a check command names writes, when it names one
/// loopexec reads by text: `cargo test` (libtest), `pytest` (also `python -m
/// pytest`), `go test` without `-json`. Detection then reads the output as that
/// runner's when it finds that runner's signatures in it at all, whatever else the
/// output holds (a fresh review's code under test printed TAP lines and TeamCity
/// messages, enough to be preferred, over `cargo test`'s own).
#[must_use]
pub fn runner_format(cmd: &str) -> Option<Format> {
    if cargo_test(cmd).is_some() {
        return Some(Format::Libtest);
    }
    let mut found = None;
    for segment in cmd.split(['&', '|', ';']) {
        let words: Vec<&str> = segment.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            let base = w.rsplit('/').next().unwrap_or(w);
            if base == "pytest" || base == "py.test" {
                found = Some(Format::Pytest);
            }
            if base == "go"
                && words.get(i + 1) == Some(&"test")
                && !words[i + 2..].iter().any(|a| a.starts_with("-json"))
            {
                found = Some(Format::Gotest);
            }
        }
    }
    found
}

/// What a `cargo test` invocation asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CargoTest {
    /// `--no-fail-fast` was given.
    no_fail_fast: bool,
    /// A target-selection flag was given.
    selects_targets: bool,
}

/// Reads `cmd` (a shell command line) for its last `cargo test` (or `cargo t`)
/// invocation: words are split on white space and the shell operators `&&`, `||`,
/// `;` and `|`; a `+toolchain` word after `cargo` is skipped. Everything after a
/// bare `--` goes to the test binaries and is ignored.
fn cargo_test(cmd: &str) -> Option<CargoTest> {
    let mut found = None;
    for segment in cmd.split(['&', '|', ';']) {
        let words: Vec<&str> = segment.split_whitespace().collect();
        let Some(at) = words
            .iter()
            .position(|w| *w == "cargo" || w.ends_with("/cargo"))
        else {
            continue;
        };
        let mut rest = words[at + 1..].iter().skip_while(|w| w.starts_with('+'));
        if !matches!(rest.next(), Some(&"test" | &"t")) {
            continue;
        }
        let args: Vec<&str> = rest.take_while(|w| **w != "--").copied().collect();
        found = Some(CargoTest {
            no_fail_fast: args.contains(&"--no-fail-fast"),
            selects_targets: args.iter().any(|a| {
                TARGET_FLAGS
                    .iter()
                    .any(|f| a == f || a.strip_prefix(f).is_some_and(|r| r.starts_with('=')))
            }),
        });
    }
    found
}

/// The target cargo stopped at: the text between the backticks of its last
/// `error: test failed, to rerun pass `…`` line on stderr (`--lib`, `--test x`).
fn stopped_target(stderr: Option<Source<'_>>) -> Option<String> {
    let mut target = None;
    let mut ignore = Vec::new();
    super::util::feed_lines(stderr, &mut ignore, |l| {
        let l = super::util::strip_ansi(l);
        if let Some(rest) = l.trim().strip_prefix("error: test failed, to rerun pass `") {
            if let Some(t) = rest.split('`').next() {
                target = Some(t.to_string());
            }
        }
    });
    target
}

/// Applies what the check command tells about the run `run` read from its output
/// (see the module doc). `stderr` is the check's captured stderr.
pub fn judge(run: &mut ParsedRun, command: &str, stderr: Option<Source<'_>>) {
    if !matches!(run.format, Format::Libtest | Format::LibtestJson) {
        return;
    }
    let Some(ct) = cargo_test(command) else {
        return;
    };
    if ct.no_fail_fast || ct.selects_targets {
        return;
    }
    // Cargo's order is unit tests, integration tests, doctests: a stop at the
    // doctests left nothing behind.
    let Some(target) = stopped_target(stderr).filter(|t| t != "--doc") else {
        return;
    };
    run.complete = false;
    run.diagnostics.push(format!(
        "`{command}` is fail-fast across targets: cargo stopped after the failing target `{target}`, \
         so the targets after it (further test binaries, integration tests, doctests) never ran; \
         pass --no-fail-fast to run them all"
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runner_format_names_the_runner_of_a_command() {
        for (cmd, want) in [
            ("cargo test", Some(Format::Libtest)),
            (
                "cargo test --no-fail-fast 2>&1 | tee test.log",
                Some(Format::Libtest),
            ),
            ("python3 -m pytest -q", Some(Format::Pytest)),
            ("cd app && .venv/bin/pytest tests/", Some(Format::Pytest)),
            ("go test -v ./...", Some(Format::Gotest)),
            ("go test -json ./...", None),
            ("go vet ./...", None),
            ("./check.sh", None),
            ("npx jest", None),
        ] {
            assert_eq!(runner_format(cmd), want, "{cmd}");
        }
    }

    #[test]
    fn cargo_test_invocations_are_read() {
        let cases: &[(&str, Option<(bool, bool)>)] = &[
            ("cargo test", Some((false, false))),
            ("cargo +nightly t -q", Some((false, false))),
            ("cargo test --no-fail-fast", Some((true, false))),
            ("cargo test --lib -- --nocapture", Some((false, true))),
            ("cargo test --test=integration", Some((false, true))),
            ("cargo test -- --test-threads 1", Some((false, false))),
            ("cd app && cargo test --offline", Some((false, false))),
            ("cargo build && ./run-tests", None),
            ("pytest -q", None),
            ("cargo testx", None),
        ];
        for (cmd, want) in cases {
            let got = cargo_test(cmd).map(|c| (c.no_fail_fast, c.selects_targets));
            assert_eq!(got, *want, "{cmd}");
        }
    }

    fn libtest_run() -> ParsedRun {
        ParsedRun {
            format: Format::Libtest,
            complete: true,
            unattributed_failure: false,
            tests: Vec::new(),
            diagnostics: Vec::new(),
            summary: None,
            not_run: None,
            unlisted: crate::check::model::Counts::default(),
            listed: None,
        }
    }

    #[test]
    fn a_fail_fast_stop_is_incomplete_and_names_the_target() {
        let dir = tempfile::tempdir().expect("temp dir");
        let err = dir.path().join("stderr");
        let table: &[(&str, &str, bool)] = &[
            (
                "cargo test",
                "error: test failed, to rerun pass `--lib`\n",
                false,
            ),
            (
                "cargo test",
                "error: test failed, to rerun pass `--test integration`\n",
                false,
            ),
            (
                "cargo test",
                "error: doctest failed, to rerun pass `--doc`\n",
                true,
            ),
            ("cargo test", "test result: ok\n", true),
            (
                "cargo test --lib",
                "error: test failed, to rerun pass `--lib`\n",
                true,
            ),
            (
                "cargo test --no-fail-fast",
                "error: test failed, to rerun pass `--lib`\n",
                true,
            ),
        ];
        for (cmd, stderr, complete) in table {
            std::fs::write(&err, stderr).expect("write");
            let mut run = libtest_run();
            judge(&mut run, cmd, Some(Source::File(&err)));
            assert_eq!(run.complete, *complete, "{cmd} / {stderr}");
            if !complete {
                assert!(run.diagnostics[0].contains("never ran"));
            }
        }
    }
}
