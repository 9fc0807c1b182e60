//! `go test` text output (plain and `-v`, `-list`) and gotestsum's human formats
//! (`--format testname`, and the standard-verbose output followed by its
//! `=== Skipped` / `=== Failed` / `DONE N tests` summary).
//!
//! Layout (cmd/go and the testing package): `=== RUN name`, `--- PASS|FAIL|SKIP:
//! name (0.00s)` (indented for subtests), then one line per package:
//! `ok  \t<pkg>\t<time>`, `FAIL\t<pkg>\t<time>`, `?   \t<pkg>\t[no test files]` or
//! `FAIL\t<pkg> [build failed]`. Results are buffered per package until its line
//! arrives; the id is `<import path>::<test path>` (e.g.
//! `example.com/godemo/calc::TestTable/wrong_answer`). gotestsum's testname lines
//! are `PASS|FAIL|SKIP <pkg>.<test> (0.00s)` with a short package name; when present
//! they are the source (the raw go lines interleaved with them are ignored) and
//! the id is `<pkg>::<test>`.
//!
//! Rules: parents failed only through a subtest are failing, as go reports them. A
//! `panic:` kills the package's test binary: the run is incomplete, and
//! unattributed when no test of that package failed. A package that failed to build
//! or set up is an unattributed failure and makes the run incomplete. Results left
//! without a package line at the end (cut short) are kept without a package prefix
//! and make the run incomplete.

use super::util::{feed_lines, strip_ansi, Collector};
use super::TextInput;
use crate::check::model::{Format, Outcome, ParsedRun};
use regex::Regex;
use std::collections::HashMap;
use std::sync::OnceLock;

struct Res {
    result: Regex,
    pkg: Regex,
    run: Regex,
    sum_line: Regex,
    sum_skip: Regex,
}

fn res() -> Option<&'static Res> {
    static R: OnceLock<Option<Res>> = OnceLock::new();
    R.get_or_init(|| {
        Some(Res {
            result: Regex::new(r"^\s*--- (PASS|FAIL|SKIP): (\S+) \([\d.]+s\)").ok()?,
            pkg: Regex::new(r"^(ok|FAIL|\?)\s*\t(\S+)(?:\t| )?(.*)$").ok()?,
            run: Regex::new(r"^=== (?:RUN|CONT|PAUSE|NAME)\s+(\S+)").ok()?,
            sum_line: Regex::new(r"^(PASS|FAIL|SKIP) (\S+?)\.(\S+) \([\d.]+s\)$").ok()?,
            sum_skip: Regex::new(r"^=== (SKIP|FAIL): (\S+) (\S+) \([\d.]+s\)").ok()?,
        })
    })
    .as_ref()
}

fn outcome(word: &str) -> Outcome {
    match word {
        "PASS" => Outcome::Passed,
        "SKIP" => Outcome::Skipped,
        _ => Outcome::Failed,
    }
}

#[derive(Default)]
struct Pkg {
    tests: Vec<(String, Outcome)>,
    messages: HashMap<String, String>,
    panicked: bool,
}

/// Parses go test / gotestsum output from stdout (stderr adds build errors).
#[must_use]
pub fn parse(t: &TextInput) -> ParsedRun {
    let mut diagnostics = Vec::new();
    let mut raw = Collector::new();
    let mut sum = Collector::new();
    let mut sum_skips: Vec<String> = Vec::new();
    let mut pkg = Pkg::default();
    let mut owner: Option<String> = None;
    let mut incomplete = false;
    let mut unattributed: Option<String> = None;
    let mut in_summary = false;
    let mut saw_end = false;
    let mut saw_any = false;
    if let Some(r) = res() {
        feed_lines(t.stdout, &mut diagnostics, |l| {
            let line = strip_ansi(l);
            let line = line.as_ref();
            if line.starts_with("DONE ") {
                saw_end = true;
                in_summary = true;
                return;
            }
            if matches!(line, "=== Skipped" | "=== Failed" | "=== Errors") {
                in_summary = true;
                if line == "=== Errors" {
                    unattributed.get_or_insert_with(|| "gotestsum reported errors".to_string());
                }
                return;
            }
            if let Some(m) = r.sum_line.captures(line) {
                saw_any = true;
                sum.record(&format!("{}::{}", &m[2], &m[3]), outcome(&m[1]), None);
                return;
            }
            if in_summary {
                if let Some(m) = r.sum_skip.captures(line) {
                    if &m[1] == "SKIP" {
                        sum_skips.push(format!("{}::{}", &m[2], &m[3]));
                    }
                }
                return;
            }
            if let Some(m) = r.result.captures(line) {
                saw_any = true;
                let name = m[2].to_string();
                pkg.tests.push((name.clone(), outcome(&m[1])));
                owner = Some(name);
                return;
            }
            if let Some(m) = r.run.captures(line) {
                owner = Some(m[1].to_string());
                return;
            }
            if let Some(m) = r.pkg.captures(line) {
                saw_any = true;
                saw_end = true;
                let path = m[2].to_string();
                let extra = m[3].to_string();
                if extra.contains("[build failed]") || extra.contains("[setup failed]") {
                    unattributed.get_or_insert_with(|| format!("{path} {}", extra.trim()));
                    incomplete = true;
                }
                let p = std::mem::take(&mut pkg);
                let mut failed = false;
                for (name, o) in p.tests {
                    failed |= o.is_failing();
                    let msg = p.messages.get(&name).cloned();
                    raw.record(&format!("{path}::{name}"), o, msg);
                }
                if p.panicked {
                    incomplete = true;
                    if !failed {
                        unattributed.get_or_insert_with(|| format!("{path}: test binary panicked"));
                    }
                }
                owner = None;
                return;
            }
            if line.starts_with("panic: ") {
                pkg.panicked = true;
            }
            if let Some(o) = owner.as_ref() {
                let buf = pkg.messages.entry(o.clone()).or_default();
                if buf.len() < 2048 {
                    buf.push_str(line);
                    buf.push('\n');
                }
            }
        });
    }
    let mut build_error: Option<String> = None;
    feed_lines(t.stderr, &mut diagnostics, |l| {
        if l.starts_with("# ") && build_error.is_none() {
            build_error = Some(l.trim_start_matches("# ").to_string());
        }
    });
    let gotestsum = !sum.is_empty();
    for id in sum_skips {
        if gotestsum && sum.outcome(&id).is_none() {
            sum.record(&id, Outcome::Skipped, None);
        }
    }
    let mut c = if gotestsum { sum } else { raw };
    if !gotestsum && !pkg.tests.is_empty() {
        // cut short before the package line
        incomplete = true;
        let p = std::mem::take(&mut pkg);
        for (name, o) in p.tests {
            let msg = p.messages.get(&name).cloned();
            c.record(&name, o, msg);
        }
    }
    if pkg.panicked {
        incomplete = true;
    }
    if unattributed.is_none() && build_error.is_some() {
        unattributed = build_error;
    }
    c.finish_text(
        Format::Gotest,
        "go",
        saw_any && saw_end && !incomplete,
        unattributed,
        t.exit_code,
        diagnostics,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::parse::util::run_text;

    fn run(stdout: &str, exit: i32) -> ParsedRun {
        run_text(parse, Some(stdout.as_bytes()), None, Some(exit))
    }

    #[test]
    fn verbose_with_subtests_and_package_ids() {
        let out = "=== RUN   TestA\n=== RUN   TestA/x_..._y\n    a_test.go:3: bad\n--- FAIL: TestA (0.00s)\n    --- FAIL: TestA/x_..._y (0.00s)\nFAIL\nFAIL\tex.com/m/a\t0.01s\n?   \tex.com/m/b\t[no test files]\n";
        let r = run(out, 1);
        let ids: Vec<_> = r.failing().into_iter().collect();
        assert_eq!(ids, vec!["ex.com/m/a::TestA", "ex.com/m/a::TestA/x_..._y"]);
        assert!(r.complete && !r.unattributed_failure);
    }

    #[test]
    fn build_failure_and_panic() {
        let out = "FAIL\tex.com/m/broken [build failed]\n=== RUN   TestP\npanic: boom\nFAIL\tex.com/m/p\t0.01s\n";
        let r = run(out, 2);
        assert!(r.unattributed_failure && !r.complete);
    }

    #[test]
    fn gotestsum_testname_lines() {
        let out = "PASS calc.TestA (0.00s)\n--- FAIL: TestB (0.00s)\nFAIL calc.TestB (0.00s)\nFAIL calc\n\n=== Skipped\n=== SKIP: calc TestC (0.00s)\n\nDONE 3 tests, 1 skipped, 1 failure in 0.1s\n";
        let r = run(out, 1);
        assert_eq!(r.tests.len(), 3);
        assert_eq!(
            r.failing().into_iter().collect::<Vec<_>>(),
            vec!["calc::TestB"]
        );
        assert!(r.complete);
    }

    #[test]
    fn cut_before_package_line_is_incomplete_but_keeps_results() {
        let r = run(
            "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n",
            1,
        );
        assert!(!r.complete);
        assert_eq!(r.tests[0].id, "TestA");
    }
}
