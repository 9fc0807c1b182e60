//! The unittest witness: Python's unittest says itself that its runner reached its end.
//!
//! unittest has no plugin mechanism, so loopexec's witness directory (first on every
//! check's `PYTHONPATH`) holds a `sitecustomize.py` ([`super::UNITTEST_SITE`]), which
//! Python imports at start-up, before the main module and before the current directory
//! is on `sys.path`. It takes its output path out of the environment, runs the
//! `sitecustomize` it stands in front of, and wraps `unittest.TextTestRunner.run` when
//! `unittest.runner` is imported: every run that returns appends one line of unittest's
//! own counts. A transcript that parses as unittest with tests but left no line was
//! printed by something other than unittest's runner (code under test that printed a
//! green `Ran 3 tests … OK` and exited); counts that disagree with the transcript's
//! were edited on the way out. Either makes the parse incomplete
//! (`metric_integrity_violation`, layer completeness).
//!
//! Expected only when t0's check wrote one (`check_finished.unittest_witness`): a
//! check that starts Python isolated (`-I`, `-E`, `-S`), filters the environment (tox,
//! a container) or has no Python at all is judged by its transcript, as before.

use crate::check::model::{Counts, Format, ParsedRun};
use std::path::Path;

/// One `TextTestRunner.run` as unittest counted it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct UnittestRun {
    pub tests_run: u64,
    #[serde(flatten)]
    pub tally: crate::check::parse::unittest::Tally,
    /// How many files the witness was given to skip in discovery
    /// ([`super::Witness::skip`]); 0 when it could not wrap
    /// `TestLoader._find_test_path`. `None` from a witness that did not say.
    #[serde(default)]
    pub deselect_given: Option<u64>,
    /// The skipped test files a module was loaded from anyway (real paths).
    #[serde(default)]
    pub deselected_imported: Vec<String>,
}

impl UnittestRun {
    fn counts(&self) -> Counts {
        self.tally.counts(self.tests_run)
    }
}

/// The runs the witness file recorded; `None` when no run was written (no file, an
/// empty one, or a line that is not a run: a file edited on the way out names nothing).
#[must_use]
pub fn read(path: &Path) -> Option<Vec<UnittestRun>> {
    let text = std::fs::read_to_string(path).ok()?;
    let runs: Option<Vec<UnittestRun>> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with(EARLY))
        .map(|l| serde_json::from_str(l).ok())
        .collect();
    runs.filter(|r| !r.is_empty())
}

/// How a line of the witness file naming a new file whose code ran early starts.
const EARLY: &str = "{\"early_new\":";

/// The files the agent added since t0 whose code ran before any file of the check's
/// tree (real paths, in order), as the witness's `sitecustomize.py` wrote them down
/// the moment each ran (`{"early_new": PATH}` lines): the interpreter or the runner
/// imported them on its own — pytest's start imports `copy`, which tries
/// `org.python.core`, and a review's new `org/` package patched the code under test
/// from there (exit 10). Empty when there is no file or no such line.
#[must_use]
pub fn early_new(path: &Path) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Early {
        early_new: String,
    }
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter(|l| l.starts_with(EARLY))
        .filter_map(|l| serde_json::from_str::<Early>(l).ok())
        .map(|e| e.early_new)
        .collect()
}

/// Judges a unittest parse against the witness (`runs`), when one was `expected`
/// (t0's check wrote one). A parse in another format, or one that counted no test, is
/// left alone (the evidence rules judge a run that shows no tests).
pub fn judge(parsed: &mut ParsedRun, runs: Option<&[UnittestRun]>, expected: bool) {
    if parsed.format != Format::Unittest || !parsed.summary.is_some_and(|c| c.total() > 0) {
        return;
    }
    match runs {
        None if expected => {
            parsed.complete = false;
            parsed.diagnostics.push(
                "unittest's own witness was never written: no TextTestRunner run returned (an early exit, or a transcript printed by the code under test)".into(),
            );
        }
        None => {}
        Some(runs) => {
            let seen = runs.iter().fold(Counts::default(), |a, r| {
                let c = r.counts();
                Counts {
                    passed: a.passed + c.passed,
                    failed: a.failed + c.failed,
                    skipped: a.skipped + c.skipped,
                    flaky: 0,
                }
            });
            if parsed.summary != Some(seen) {
                parsed.complete = false;
                parsed.diagnostics.push(format!(
                    "the transcript's counts ({:?}) disagree with unittest's own witness ({seen:?})",
                    parsed.summary.unwrap_or_default()
                ));
            }
        }
    }
}

/// [`super::judge_deselection`] for unittest: every run the witness recorded must have
/// been given all `given` entries to skip in discovery and must have imported none of
/// the skipped test files (`skipped`, relative, for the message); else the parse is
/// marked incomplete. `unittest discover` imports every module it finds into one
/// process, so a new `tests/test_0.py` found first could patch the code under test (a
/// review's exit 10 in place). No runs recorded: nothing is judged here ([`judge`]
/// judges a missing witness).
pub fn judge_deselection(
    parsed: &mut ParsedRun,
    runs: Option<&[UnittestRun]>,
    skipped: &[String],
    given: usize,
) {
    let Some(runs) = runs else { return };
    if given == 0 {
        return;
    }
    let given = u64::try_from(given).unwrap_or(u64::MAX);
    let why = runs.iter().find_map(|r| {
        if r.deselect_given != Some(given) {
            Some(format!(
                "unittest's witness was given {} of the {given} new file(s) to skip",
                r.deselect_given.unwrap_or(0)
            ))
        } else if !r.deselected_imported.is_empty() {
            Some(format!(
                "{} was imported during the run anyway",
                r.deselected_imported.join(", ")
            ))
        } else {
            None
        }
    });
    if let Some(why) = why {
        super::skip_did_not_hold(parsed, given, skipped, &why);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ran: u64, failures: u64, skipped: u64) -> UnittestRun {
        UnittestRun {
            tests_run: ran,
            tally: crate::check::parse::unittest::Tally {
                failures,
                skipped,
                ..Default::default()
            },
            deselect_given: None,
            deselected_imported: Vec::new(),
        }
    }

    /// Whether a skip held, run by run: each row is the witness's runs and whether
    /// the parse stays complete with two entries to skip, one a test file.
    #[test]
    fn judge_deselection_table() {
        let given = |n: Option<u64>, imported: &[&str]| UnittestRun {
            deselect_given: n,
            deselected_imported: imported.iter().map(|s| (*s).to_string()).collect(),
            ..run(1, 0, 0)
        };
        let rows: Vec<(&str, Option<Vec<UnittestRun>>, bool)> = vec![
            ("held", Some(vec![given(Some(2), &[])]), true),
            ("no runs: judge's", None, true),
            (
                "one run given fewer",
                Some(vec![given(Some(2), &[]), given(Some(0), &[])]),
                false,
            ),
            (
                "a witness that does not say",
                Some(vec![given(None, &[])]),
                false,
            ),
            (
                "imported anyway",
                Some(vec![given(Some(2), &["/w/tests/test_0.py"])]),
                false,
            ),
        ];
        let skipped = vec!["tests/test_0.py".to_string()];
        for (name, runs, complete) in rows {
            let mut p = parsed(Counts {
                passed: 1,
                ..Counts::default()
            });
            judge_deselection(&mut p, runs.as_deref(), &skipped, 2);
            assert_eq!(p.complete, complete, "{name}: {:?}", p.diagnostics);
        }
        let mut p = parsed(Counts {
            passed: 1,
            ..Counts::default()
        });
        judge_deselection(&mut p, Some(&[given(None, &[])]), &[], 0);
        assert!(p.complete, "nothing to skip judges nothing");
    }

    /// The lines naming a new file whose code ran early are read apart from the runs
    /// (and never make the runs unreadable).
    #[test]
    fn early_lines_are_read_apart_from_the_runs() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("w.jsonl");
        std::fs::write(
            &f,
            "{\"early_new\": \"/room/org/__init__.py\"}\n{\"tests_run\": 1, \"failures\": 0, \"errors\": 0, \"skipped\": 0, \"expected_failures\": 0, \"unexpected_successes\": 0}\n",
        )
        .unwrap();
        assert_eq!(early_new(&f), vec!["/room/org/__init__.py"]);
        assert_eq!(read(&f).map(|r| r.len()), Some(1));
        assert!(early_new(&dir.path().join("none")).is_empty());
    }

    fn parsed(c: Counts) -> ParsedRun {
        ParsedRun {
            format: Format::Unittest,
            complete: true,
            unattributed_failure: false,
            tests: Vec::new(),
            diagnostics: Vec::new(),
            summary: Some(c),
            not_run: None,
            unlisted: Counts::default(),
            listed: None,
        }
    }

    /// (transcript counts, witness runs, expected, complete after)
    #[test]
    fn the_transcript_must_match_what_unittest_counted() {
        let green3 = Counts {
            passed: 3,
            failed: 0,
            skipped: 0,
            flaky: 0,
        };
        let runs_3 = [run(3, 0, 0)];
        let runs_red = [run(3, 2, 0)];
        let runs_split = [run(2, 0, 0), run(1, 0, 0)];
        type Row<'a> = (Counts, Option<&'a [UnittestRun]>, bool, bool);
        let table: &[Row] = &[
            (green3, Some(&runs_3), true, true),
            (green3, Some(&runs_split), true, true),
            // a forged green transcript over a red run
            (green3, Some(&runs_red), true, false),
            // no run returned where t0's check wrote one
            (green3, None, true, false),
            // none expected (t0 wrote none): judged by the transcript
            (green3, None, false, true),
        ];
        for (c, runs, expected, complete) in table {
            let mut p = parsed(*c);
            judge(&mut p, *runs, *expected);
            assert_eq!(p.complete, *complete, "{c:?} {runs:?} {expected}");
        }
    }

    #[test]
    fn a_file_with_a_line_that_is_not_a_run_names_nothing() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("w.jsonl");
        std::fs::write(&f, "{\"tests_run\": 3, \"failures\": 0, \"errors\": 0, \"skipped\": 0, \"expected_failures\": 0, \"unexpected_successes\": 0}\n").unwrap();
        assert_eq!(read(&f), Some(vec![run(3, 0, 0)]));
        std::fs::write(&f, "{\"tests_run\": 3}\n").unwrap();
        assert_eq!(read(&f), None);
        std::fs::write(&f, "").unwrap();
        assert_eq!(read(&f), None);
    }
}
