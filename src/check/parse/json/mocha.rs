//! mocha `--reporter json` reports: one document with `stats` and the arrays `tests`
//! (every test that ended), `passes`, `failures` and `pending`.
//!
//! Ids: `<file> > <fullTitle>` (`fullTitle` joins the describe titles and the test title
//! with spaces); the file is left out when the report has none.
//!
//! Outcomes: a test in `failures` failed, in `pending` is skipped, in `passes` passed
//! (flaky-passed when `currentRetry` > 0: it passed on a retry). A failing hook
//! (`"before all" hook for "..."`) is in `failures` but not in `tests`: it is reported as
//! a failing test of its own title, standing in for the tests it prevented.
//!
//! Completeness: `stats.tests` equals the number of `tests`. More failures in `stats`
//! than listed is an unattributed failure.

use crate::check::model::{Format, Outcome, ParsedRun};
use crate::check::parse::json::read_document;
use crate::check::parse::structured::{RunBuilder, StructuredError};
use serde::Deserialize;
use std::collections::HashSet;
use std::io::BufRead;

#[derive(Deserialize)]
struct Report {
    stats: Option<Stats>,
    #[serde(default)]
    tests: Vec<MochaTest>,
    #[serde(default)]
    passes: Vec<MochaTest>,
    #[serde(default)]
    failures: Vec<MochaTest>,
    #[serde(default)]
    pending: Vec<MochaTest>,
}

#[derive(Deserialize)]
struct Stats {
    tests: Option<u64>,
    failures: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MochaTest {
    #[serde(default)]
    full_title: String,
    file: Option<String>,
    current_retry: Option<u64>,
    err: Option<MochaErr>,
}

#[derive(Deserialize)]
struct MochaErr {
    message: Option<String>,
    stack: Option<String>,
}

impl MochaTest {
    fn id(&self) -> String {
        match self.file.as_deref().filter(|f| !f.is_empty()) {
            Some(f) => format!("{f} > {}", self.full_title),
            None => self.full_title.clone(),
        }
    }
    fn message(&self) -> Option<&str> {
        let err = self.err.as_ref()?;
        err.message
            .as_deref()
            .filter(|m| !m.trim().is_empty())
            .or(err.stack.as_deref())
    }
}

/// Parses a mocha JSON report (text before the first line starting with `{` is
/// skipped).
///
/// # Errors
/// [`StructuredError::NotRecognised`] when the document has neither `stats` nor
/// `tests`; [`StructuredError::Json`] when it does not decode.
pub fn parse_mocha_json<R: BufRead>(r: R) -> Result<ParsedRun, StructuredError> {
    let report: Report = read_document(r)?;
    if report.stats.is_none() && report.tests.is_empty() {
        return Err(StructuredError::NotRecognised);
    }
    let mut b = RunBuilder::new(Format::MochaJson, "mocha");
    let failed: HashSet<String> = report.failures.iter().map(MochaTest::id).collect();
    let pending: HashSet<String> = report.pending.iter().map(MochaTest::id).collect();
    let passed: HashSet<String> = report.passes.iter().map(MochaTest::id).collect();
    let mut seen = HashSet::new();
    for t in &report.tests {
        let id = t.id();
        let outcome = if failed.contains(&id) {
            Outcome::Failed
        } else if pending.contains(&id) {
            Outcome::Skipped
        } else if passed.contains(&id) {
            if t.current_retry.unwrap_or(0) > 0 {
                Outcome::FlakyPassed
            } else {
                Outcome::Passed
            }
        } else if t.message().is_some() {
            Outcome::Failed
        } else {
            Outcome::Skipped
        };
        let message = report
            .failures
            .iter()
            .find(|f| outcome.is_failing() && f.id() == id)
            .and_then(MochaTest::message)
            .or_else(|| t.message());
        b.distinct(&id, outcome, message);
        seen.insert(id);
    }
    for f in &report.failures {
        let id = f.id();
        if !seen.contains(&id) {
            b.distinct(&id, Outcome::Failed, f.message());
            seen.insert(id);
        }
    }
    let mut complete = true;
    if let Some(stats) = &report.stats {
        if let Some(n) = stats.tests {
            if n != report.tests.len() as u64 {
                complete = false;
                b.diagnostic(format!(
                    "mocha json: stats.tests is {n} but {} tests are listed",
                    report.tests.len()
                ));
            }
        }
        if stats.failures.unwrap_or(0) > report.failures.len() as u64 {
            b.unattributed(Some("mocha counted failures that are not listed"));
        }
    }
    Ok(b.finish(complete))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::parse::util::outcomes;

    #[test]
    fn hook_failure_stands_for_its_tests() {
        let doc = r#"{"stats":{"tests":3,"passes":1,"pending":1,"failures":2},
          "tests":[{"title":"a","fullTitle":"s a","file":"/t.js","err":{}},
                   {"title":"b","fullTitle":"s b","file":"/t.js","err":{"message":"boom"}},
                   {"title":"c","fullTitle":"s c","file":"/t.js","err":{}}],
          "passes":[{"title":"a","fullTitle":"s a","file":"/t.js","err":{}}],
          "failures":[{"title":"b","fullTitle":"s b","file":"/t.js","err":{"message":"boom"}},
                      {"title":"\"before all\" hook for \"d\"","fullTitle":"s h \"before all\" hook for \"d\"","file":"/t.js","err":{"message":"hook broke"}}],
          "pending":[{"title":"c","fullTitle":"s c","file":"/t.js","err":{}}]}"#;
        let run = parse_mocha_json(doc.as_bytes()).expect("parses");
        assert!(run.complete);
        assert!(!run.unattributed_failure);
        let got = outcomes(&run);
        assert_eq!(
            got,
            [
                ("/t.js > s a", Outcome::Passed),
                ("/t.js > s b", Outcome::Failed),
                ("/t.js > s c", Outcome::Skipped),
                ("/t.js > s h \"before all\" hook for \"d\"", Outcome::Failed),
            ]
        );
        assert_eq!(run.tests[3].message.as_deref(), Some("hook broke"));
    }

    #[test]
    fn retried_pass_is_flaky_and_counts_are_checked() {
        let doc = r#"{"stats":{"tests":2,"failures":1},"tests":[{"fullTitle":"x","currentRetry":2,"err":{}}],"passes":[{"fullTitle":"x","currentRetry":2}],"failures":[],"pending":[]}"#;
        let run = parse_mocha_json(doc.as_bytes()).expect("parses");
        assert_eq!(run.tests[0].outcome, Outcome::FlakyPassed);
        assert!(!run.complete);
        assert!(run.unattributed_failure);
    }
}
