//! Python `unittest` text output (`python -m unittest [-v]`, `unittest discover`, and
//! runners built on its `TextTestRunner`, such as Django's `manage.py test`).
//!
//! Layout (CPython's `unittest.runner.TextTestResult`, written to stderr):
//!
//! * with `-v`, one line per test: `test_add (test_calc.TestCalc.test_add) ... ok`
//!   (Python ≤ 3.10 prints the class only, `(test_calc.TestCalc)`); the verdict is
//!   `ok`, `FAIL`, `ERROR`, `skipped 'reason'`, `expected failure` or `unexpected
//!   success`, and lands on a later line when the test printed, or when a docstring's
//!   first line is shown under the name;
//! * one block per failure, at any verbosity: a line of `=`, `FAIL: name (id)` or
//!   `ERROR: name (id)` (a subtest adds ` (i=1)` or ` [msg]`; a module that failed to
//!   import is `unittest.loader._FailedTest`; an error in `setUpModule`/`setUpClass` is
//!   named after that fixture), a line of `-`, the traceback;
//! * the end: a line of `-`, `Ran N tests in 0.001s`, then `OK`, `OK (skipped=1, …)`,
//!   `FAILED (failures=1, errors=2, skipped=1, expected failures=1, unexpected
//!   successes=1)` or (3.12) `NO TESTS RAN`.
//!
//! Ids are the dotted test id (`test_calc.TestCalc.test_add`), from either naming. A
//! failing subtest fails its test. Counts come from the end lines: executed = `Ran N`
//! minus skips and expected failures; failed = failures + errors + unexpected
//! successes (Python 3.11's `wasSuccessful`); an error outside any test (a fixture)
//! still counts as failed. Complete = `Ran N tests` was followed by its verdict line.
//! A quiet run (no `-v`) names only its failures and is judged by its counts.

use super::util::{feed_lines, strip_ansi, Collector};
use super::TextInput;
use crate::check::model::{Counts, Format, Outcome, ParsedRun};
use regex::Regex;
use std::sync::OnceLock;

struct Res {
    /// `name (dotted)` at the start of a verbose line, with the rest after ` ... `.
    verbose: Regex,
    /// `FAIL: name (dotted)` / `ERROR: …`, with a subtest's suffix.
    header: Regex,
    ran: Regex,
    /// `OK`, `OK (…)`, `FAILED (…)`, `NO TESTS RAN`.
    verdict: Regex,
    tally: Regex,
}

fn res() -> Option<&'static Res> {
    static R: OnceLock<Option<Res>> = OnceLock::new();
    R.get_or_init(|| {
        Some(Res {
            verbose: Regex::new(r"^(\w+) \(([\w.]+)\)(?: \.\.\. (.*))?$").ok()?,
            header: Regex::new(r"^(FAIL|ERROR|UNEXPECTED SUCCESS): (\w+) \(([\w.]+)\)").ok()?,
            ran: Regex::new(r"^Ran (\d+) tests? in [\d.]+s$").ok()?,
            verdict: Regex::new(r"^(OK|FAILED)(?: \((.*)\))?$|^NO TESTS RAN$").ok()?,
            tally: Regex::new(
                r"(failures|errors|skipped|expected failures|unexpected successes)=(\d+)",
            )
            .ok()?,
        })
    })
    .as_ref()
}

/// The dotted id of `name (dotted)`: Python 3.11 prints the whole id in the
/// parentheses, earlier versions the class only.
fn test_id(name: &str, dotted: &str) -> String {
    if dotted == name || dotted.ends_with(&format!(".{name}")) {
        dotted.to_string()
    } else {
        format!("{dotted}.{name}")
    }
}

/// The outcome of a verbose verdict (`ok`, `FAIL`, `skipped 'x'`, …), if it is one.
fn verdict(text: &str) -> Option<Outcome> {
    let t = text.trim_end();
    Some(match t {
        "ok" => Outcome::Passed,
        "FAIL" | "ERROR" | "unexpected success" => Outcome::Failed,
        "expected failure" => Outcome::Skipped,
        _ if t.starts_with("skipped") => Outcome::Skipped,
        _ => return None,
    })
}

/// What the end lines say: tests run, and the tally in the verdict's parentheses.
#[derive(Default)]
struct End {
    ran: Option<u64>,
    verdict_seen: bool,
    tally: Tally,
}

/// unittest's own tally of one run, as its verdict line and its result object give
/// it: failures, errors, skipped, expected failures, unexpected successes. Shared by
/// the transcript's end lines and the witness ([`crate::check::witness::unittest`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
pub struct Tally {
    pub failures: u64,
    pub errors: u64,
    pub skipped: u64,
    pub expected_failures: u64,
    pub unexpected_successes: u64,
}

impl Tally {
    /// The counts of a run of `ran` tests: executed = run minus skips and expected
    /// failures; failed = failures + errors + unexpected successes (an error in a
    /// fixture counts although no test ran).
    #[must_use]
    pub fn counts(&self, ran: u64) -> Counts {
        let failed = self.failures + self.errors + self.unexpected_successes;
        let skipped = self.skipped + self.expected_failures;
        Counts {
            passed: ran
                .saturating_sub(self.failures + self.unexpected_successes)
                .saturating_sub(self.errors.min(ran))
                .saturating_sub(skipped),
            failed,
            skipped,
            flaky: 0,
        }
    }
}

/// Parses unittest output from stdout (the dispatcher hands stderr here when that is
/// where the run was printed).
#[must_use]
pub fn parse(t: &TextInput) -> ParsedRun {
    let mut diagnostics = Vec::new();
    let mut c = Collector::with_listing(t.listing);
    let mut end = End::default();
    let Some(r) = res() else {
        return c.finish_text(
            Format::Unittest,
            "unittest",
            false,
            None,
            t.exit_code,
            diagnostics,
        );
    };
    // a verbose line whose verdict has not been printed yet
    let mut pending: Option<String> = None;
    // the failure block being read: its id and its traceback's headline
    let mut block: Option<(String, super::headline::Headline)> = None;
    let mut after_rule = false;
    feed_lines(t.stdout, &mut diagnostics, |raw| {
        let line = strip_ansi(raw);
        let line = line.trim_end();
        if line.len() >= 20 && line.bytes().all(|b| b == b'=') {
            close(&mut c, &mut block);
            pending = None;
            after_rule = true;
            return;
        }
        if let Some(m) = r.header.captures(line).filter(|_| after_rule) {
            after_rule = false;
            close(&mut c, &mut block);
            let id = test_id(&m[2], &m[3]);
            c.record(&id, Outcome::Failed, None);
            block = Some((id, super::headline::Headline::new()));
            return;
        }
        after_rule = false;
        if let Some(m) = r.ran.captures(line) {
            close(&mut c, &mut block);
            pending = None;
            end.ran = m[1].parse().ok();
            return;
        }
        if end.ran.is_some() && !end.verdict_seen {
            if let Some(m) = r.verdict.captures(line) {
                end.verdict_seen = true;
                if let Some(tally) = m.get(2) {
                    for t in r.tally.captures_iter(tally.as_str()) {
                        let n: u64 = t[2].parse().unwrap_or(0);
                        match &t[1] {
                            "failures" => end.tally.failures = n,
                            "errors" => end.tally.errors = n,
                            "skipped" => end.tally.skipped = n,
                            "expected failures" => end.tally.expected_failures = n,
                            _ => end.tally.unexpected_successes = n,
                        }
                    }
                }
                return;
            }
        }
        if let Some((_, h)) = block.as_mut() {
            if !(line.len() >= 20 && line.bytes().all(|b| b == b'-')) {
                h.line(line);
            }
            return;
        }
        if let Some(m) = r.verbose.captures(line) {
            let id = test_id(&m[1], &m[2]);
            match m.get(3).and_then(|v| verdict(v.as_str())) {
                Some(o) => {
                    c.record(&id, o, None);
                    pending = None;
                }
                None => pending = Some(id),
            }
            return;
        }
        // a verdict printed after the test's own output, or after its docstring
        if let Some(id) = pending.as_ref() {
            let tail = line.rsplit(" ... ").next().unwrap_or(line);
            if let Some(o) = verdict(tail) {
                c.record(id, o, None);
                pending = None;
            }
        }
    });
    close(&mut c, &mut block);
    let complete = end.ran.is_some() && end.verdict_seen;
    if let Some(ran) = end.ran.filter(|_| end.verdict_seen) {
        c.set_summary(end.tally.counts(ran));
    }
    c.finish_text(
        Format::Unittest,
        "unittest",
        complete,
        None,
        t.exit_code,
        diagnostics,
    )
}

/// Ends the failure block being read: its traceback's headline is the test's message.
fn close(c: &mut Collector, block: &mut Option<(String, super::headline::Headline)>) {
    if let Some((id, h)) = block.take() {
        if let Some(msg) = h.finish() {
            c.set_message(&id, &msg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::parse::util::{outcomes, run_text};

    const VERBOSE: &str = "test_add (test_calc.TestCalc.test_add) ... ok
test_doc (test_calc.TestCalc.test_doc)
Adds two numbers. ... ok
test_loud (test_calc.TestCalc.test_loud) ... printed by the test
FAIL
test_skip (test_calc.TestCalc.test_skip) ... skipped 'not today'
test_sub (test_calc.TestCalc.test_sub) ... ERROR
test_xf (test_calc.TestCalc.test_xf) ... expected failure

======================================================================
ERROR: test_sub (test_calc.TestCalc.test_sub)
----------------------------------------------------------------------
Traceback (most recent call last):
  File \"/p/test_calc.py\", line 9, in test_sub
    self.assertEqual(sub(3, 1), 2)
NameError: name 'sub' is not defined

======================================================================
FAIL: test_loud (test_calc.TestCalc.test_loud)
----------------------------------------------------------------------
Traceback (most recent call last):
  File \"/p/test_calc.py\", line 12, in test_loud
    self.assertEqual(add(2, 3), 5)
AssertionError: -1 != 5

----------------------------------------------------------------------
Ran 6 tests in 0.001s

FAILED (failures=1, errors=1, skipped=1, expected failures=1)
";

    #[test]
    fn a_verbose_run_names_every_test_with_its_verdict_and_counts() {
        let r = run_text(parse, Some(VERBOSE.as_bytes()), None, Some(1));
        assert_eq!(r.format, Format::Unittest);
        assert_eq!(
            outcomes(&r),
            vec![
                ("test_calc.TestCalc.test_add", Outcome::Passed),
                ("test_calc.TestCalc.test_doc", Outcome::Passed),
                ("test_calc.TestCalc.test_loud", Outcome::Failed),
                ("test_calc.TestCalc.test_skip", Outcome::Skipped),
                ("test_calc.TestCalc.test_sub", Outcome::Failed),
                ("test_calc.TestCalc.test_xf", Outcome::Skipped),
            ]
        );
        assert!(r.complete);
        assert_eq!(
            r.summary,
            Some(Counts {
                passed: 2,
                failed: 2,
                skipped: 2,
                flaky: 0
            })
        );
        let msg = |id: &str| {
            r.tests
                .iter()
                .find(|t| t.id == id)
                .and_then(|t| t.message.clone())
                .unwrap_or_default()
        };
        assert!(
            msg("test_calc.TestCalc.test_loud").contains("-1 != 5"),
            "{r:?}"
        );
        assert!(
            msg("test_calc.TestCalc.test_sub").contains("NameError"),
            "{r:?}"
        );
    }

    /// (output, exit, failing ids, executed count, complete)
    #[test]
    fn quiet_runs_old_names_subtests_and_cut_runs() {
        type Row<'a> = (&'a str, i32, &'a [&'a str], Option<u64>, bool);
        let rule = "=".repeat(70);
        let dash = "-".repeat(70);
        let quiet_fail = format!("F.\n{rule}\nFAIL: test_add (test_calc.TestCalc)\n{dash}\nTraceback (most recent call last):\nAssertionError: -1 != 5\n\n{dash}\nRan 2 tests in 0.000s\n\nFAILED (failures=1)\n");
        let subtest = format!("{rule}\nFAIL: test_many (t.T.test_many) (i=2)\n{dash}\nAssertionError: 1 != 2\n\n{dash}\nRan 1 test in 0.000s\n\nFAILED (failures=1)\n");
        let import_error = format!("E\n{rule}\nERROR: test_calc (unittest.loader._FailedTest.test_calc)\n{dash}\nImportError: Failed to import test module: test_calc\n\n{dash}\nRan 1 test in 0.000s\n\nFAILED (errors=1)\n");
        let fixture = format!("E\n{rule}\nERROR: setUpClass (t.T)\n{dash}\nRuntimeError: no db\n\n{dash}\nRan 0 tests in 0.000s\n\nFAILED (errors=1)\n");
        let table: &[Row] = &[
            ("...\n----------------------------------------------------------------------\nRan 3 tests in 0.000s\n\nOK\n", 0, &[], Some(3), true),
            ("s.\n----------------------------------------------------------------------\nRan 2 tests in 0.000s\n\nOK (skipped=1)\n", 0, &[], Some(1), true),
            (&quiet_fail, 1, &["test_calc.TestCalc.test_add"], Some(2), true),
            (&subtest, 1, &["t.T.test_many"], Some(1), true),
            (&import_error, 1, &["unittest.loader._FailedTest.test_calc"], Some(1), true),
            // an error in a fixture is named after it and counts as failed
            (&fixture, 1, &["t.T.setUpClass"], Some(1), true),
            ("\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nNO TESTS RAN\n", 5, &[], Some(0), true),
            // a run cut short before its end lines: no counts, incomplete
            ("test_a (t.T.test_a) ... ok\ntest_b (t.T.test_b) ... ", 0, &[], None, false),
        ];
        for (out, exit, failing, executed, complete) in table {
            let r = run_text(parse, Some(out.as_bytes()), None, Some(*exit));
            let mut named: Vec<String> = r
                .tests
                .iter()
                .filter(|t| {
                    t.outcome.is_failing()
                        && !t.id.ends_with(crate::check::model::UNATTRIBUTED_SUFFIX)
                })
                .map(|t| t.id.clone())
                .collect();
            named.sort();
            assert_eq!(named, *failing, "{out}");
            assert_eq!(
                crate::check::model::counted_executed(&r),
                *executed,
                "{out}"
            );
            assert_eq!(r.complete, *complete, "{out}");
        }
    }
}
