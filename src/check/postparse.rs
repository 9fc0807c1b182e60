//! The fixes applied to every parse before it is recorded: facts of the step that the
//! runner's output cannot show.
//!
//! [`settle`] is pure: the same parse and step facts always give the same result, so a
//! receipt re-parsed later (`replay --reparse`) is settled the same way.

use super::model::ParsedRun;
use super::parse::util::unattributed;

/// What the step, not the output, says about a check run.
#[derive(Debug, Clone)]
pub struct StepFacts<'a> {
    /// The exit code, `None` when ended by a signal or never started.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// The step ended on its own with the success exit code (no timeout, no stop).
    pub exited_ok: bool,
    /// The output was longer than the capture spool: the parser saw only a prefix.
    pub output_truncated: bool,
    /// Report files (`--report`) the check was told to write and did not.
    pub missing_reports: &'a [String],
}

/// Settles `parsed` against the step:
/// * a red run (exit code other than the success code, or no exit code) whose output
///   names no failing test gets the synthetic `check::<unattributed>` member, so the
///   failing set is never empty while the check is red;
/// * output past the capture limit, or a missing report file, makes the run
///   incomplete (a hole in the evidence is never "0 failures").
pub fn settle(parsed: &mut ParsedRun, f: &StepFacts<'_>) {
    if !f.exited_ok && parsed.failing().is_empty() {
        let what = match (f.exit_code, f.signal) {
            (Some(c), _) => format!("the check exited {c} and named no failing test"),
            (None, Some(s)) => format!("the check ended by signal {s} and named no failing test"),
            _ => "the check ended without an exit status".to_string(),
        };
        parsed.tests.push(unattributed("check", Some(what)));
        parsed.unattributed_failure = true;
    }
    if f.output_truncated {
        parsed.complete = false;
        parsed.diagnostics.push(
            "check output exceeded the capture limit; the parse saw only its beginning".into(),
        );
    }
    for r in f.missing_reports {
        parsed
            .diagnostics
            .push(format!("report file {r} was not written by this check run"));
    }
    if !f.missing_reports.is_empty() {
        parsed.complete = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::model::Outcome;
    use crate::detect::testkit::parsed as run;

    /// (tests, exit, signal, truncated, missing reports, failing, complete, unattributed)
    type Row = (
        &'static [(&'static str, Outcome)],
        Option<i32>,
        Option<i32>,
        bool,
        &'static [&'static str],
        &'static [&'static str],
        bool,
        bool,
    );

    #[test]
    fn settle_table() {
        use Outcome::{Failed, Passed};
        // (tests, exit, signal, truncated, missing reports) -> (failing, complete, unattributed)
        let table: &[Row] = &[
            (
                &[("a", Passed)],
                Some(0),
                None,
                false,
                &[],
                &[],
                true,
                false,
            ),
            (
                &[("a", Passed)],
                Some(1),
                None,
                false,
                &[],
                &["check::<unattributed>"],
                true,
                true,
            ),
            (
                &[("a", Failed)],
                Some(1),
                None,
                false,
                &[],
                &["a"],
                true,
                false,
            ),
            (
                &[],
                None,
                Some(9),
                false,
                &[],
                &["check::<unattributed>"],
                true,
                true,
            ),
            (
                &[("a", Passed)],
                Some(0),
                None,
                true,
                &[],
                &[],
                false,
                false,
            ),
            (
                &[("a", Passed)],
                Some(0),
                None,
                false,
                &["junit.xml"],
                &[],
                false,
                false,
            ),
        ];
        for (tests, exit, sig, trunc, missing, failing, complete, unattr) in table {
            let mut p = run(tests);
            let missing: Vec<String> = missing.iter().map(|s| (*s).to_string()).collect();
            settle(
                &mut p,
                &StepFacts {
                    exit_code: *exit,
                    signal: *sig,
                    exited_ok: *exit == Some(0),
                    output_truncated: *trunc,
                    missing_reports: &missing,
                },
            );
            let f: Vec<String> = p.failing().into_iter().collect();
            assert_eq!(f, *failing, "{tests:?} {exit:?}");
            assert_eq!(p.complete, *complete, "{tests:?} {exit:?}");
            assert_eq!(p.unattributed_failure, *unattr, "{tests:?} {exit:?}");
        }
    }
}
