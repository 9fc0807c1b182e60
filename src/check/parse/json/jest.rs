//! Jest `--json` and Vitest `--reporter=json` reports (one JSON document, the same
//! top-level shape: `numTotalTests`, `success`, `testResults[]` per test file, each with
//! `assertionResults[]`).
//!
//! Format: [`Format::JestJson`] when the document has Jest's `numRuntimeErrorTestSuites`
//! and no assertion carries Vitest's `meta`; otherwise [`Format::VitestJson`].
//!
//! Ids: `<file> > <describe> > ... > <title>`, with the file path as the report gives it
//! (absolute). The same title twice in one file (`test.each` without interpolation)
//! gives `#2`, `#3`, ... in report order.
//!
//! Outcomes: `passed` (flaky-passed when `invocations` > 1, i.e. passed on a retry),
//! `failed`, and `pending`/`skipped`/`todo`/`disabled` as skipped.
//!
//! A test file with status `failed` and no failing assertion ("Test suite failed to
//! run": syntax or import error) is an unattributed failure, and incomplete when it ran
//! no test. Also incomplete: `numRuntimeErrorTestSuites` > 0, `wasInterrupted`, or fewer
//! assertion results than `numTotalTests`. `success: false` with no failing test is an
//! unattributed failure.

use crate::check::model::{Format, Outcome, ParsedRun};
use crate::check::parse::json::read_document;
use crate::check::parse::structured::{RunBuilder, StructuredError};
use serde::de::IgnoredAny;
use serde::Deserialize;
use std::io::BufRead;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    num_total_tests: Option<u64>,
    num_runtime_error_test_suites: Option<u64>,
    success: Option<bool>,
    was_interrupted: Option<bool>,
    #[serde(default)]
    test_results: Vec<FileResult>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileResult {
    #[serde(default)]
    name: String,
    #[serde(default)]
    status: String,
    message: Option<String>,
    #[serde(default)]
    assertion_results: Vec<Assertion>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Assertion {
    #[serde(default)]
    ancestor_titles: Vec<String>,
    #[serde(default)]
    title: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    failure_messages: Vec<String>,
    invocations: Option<u64>,
    meta: Option<IgnoredAny>,
}

/// Parses a Jest or Vitest JSON report (text before the first line starting with `{`
/// is skipped).
///
/// # Errors
/// [`StructuredError::NotRecognised`] when there is no JSON document or it has no
/// `testResults`; [`StructuredError::Json`] when it does not decode (e.g. truncated).
pub fn parse_jest_json<R: BufRead>(r: R) -> Result<ParsedRun, StructuredError> {
    let report: Report = read_document(r)?;
    if report.num_total_tests.is_none() && report.test_results.is_empty() {
        return Err(StructuredError::NotRecognised);
    }
    let vitest = report.num_runtime_error_test_suites.is_none()
        || report
            .test_results
            .iter()
            .any(|f| f.assertion_results.iter().any(|a| a.meta.is_some()));
    let (format, runner) = if vitest {
        (Format::VitestJson, "vitest")
    } else {
        (Format::JestJson, "jest")
    };
    let mut b = RunBuilder::new(format, runner);
    let mut complete = true;
    let mut assertions = 0u64;
    let mut any_failing = false;
    for file in &report.test_results {
        let mut file_failing = false;
        for a in &file.assertion_results {
            assertions += 1;
            let outcome = match a.status.as_str() {
                "passed" if a.invocations.unwrap_or(1) > 1 => Outcome::FlakyPassed,
                "passed" => Outcome::Passed,
                "failed" => Outcome::Failed,
                "pending" | "skipped" | "todo" | "disabled" => Outcome::Skipped,
                other => {
                    b.diagnostic(format!("{runner} json: unknown test status {other:?}"));
                    Outcome::Skipped
                }
            };
            file_failing |= outcome.is_failing();
            let mut id = file.name.clone();
            for part in a.ancestor_titles.iter().chain(std::iter::once(&a.title)) {
                id.push_str(" > ");
                id.push_str(part);
            }
            let message = a.failure_messages.first().map(String::as_str);
            b.distinct(&id, outcome, message);
        }
        any_failing |= file_failing;
        if file.status == "failed" && !file_failing {
            let text = file.message.as_deref().filter(|m| !m.trim().is_empty());
            let fallback = format!("{}: test file failed with no failing test", file.name);
            b.unattributed(Some(text.unwrap_or(&fallback)));
            if file.assertion_results.is_empty() {
                complete = false;
                b.diagnostic(format!("{runner} json: {} failed to run", file.name));
            }
        }
    }
    if report.num_runtime_error_test_suites.unwrap_or(0) > 0 {
        complete = false;
        b.unattributed(Some("test suite(s) failed to run"));
    }
    if report.was_interrupted == Some(true) {
        complete = false;
        b.diagnostic(format!("{runner} json: the run was interrupted"));
    }
    if let Some(total) = report.num_total_tests {
        if assertions < total {
            complete = false;
            b.diagnostic(format!(
                "{runner} json: numTotalTests is {total} but {assertions} results are listed"
            ));
        }
    }
    if report.success == Some(false) && !any_failing {
        b.unattributed(Some("the run failed with no failing test"));
    }
    Ok(b.finish(complete))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::parse::util::outcomes;

    const JEST: &str = r#"{"numFailedTestSuites":2,"numRuntimeErrorTestSuites":1,"numTotalTests":4,"success":false,"wasInterrupted":false,
      "testResults":[
        {"name":"/p/a.test.js","status":"failed","message":"x","assertionResults":[
          {"ancestorTitles":[],"title":"ok","status":"passed","failureMessages":[],"invocations":1},
          {"ancestorTitles":["outer","inner"],"title":"bad","status":"failed","failureMessages":["Error: \u001b[31mboom\u001b[39m\n    at x"]},
          {"ancestorTitles":[],"title":"later","status":"todo","failureMessages":[]},
          {"ancestorTitles":[],"title":"retried","status":"passed","failureMessages":[],"invocations":2}]},
        {"name":"/p/broken.test.js","status":"failed","message":"  ● Test suite failed to run\n\n    SyntaxError","assertionResults":[]}
      ]}"#;

    #[test]
    fn jest_results_and_suite_that_failed_to_run() {
        let run = parse_jest_json(JEST.as_bytes()).expect("parses");
        assert_eq!(run.format, Format::JestJson);
        assert!(!run.complete);
        assert!(run.unattributed_failure);
        let got = outcomes(&run);
        assert_eq!(
            got,
            [
                ("/p/a.test.js > ok", Outcome::Passed),
                ("/p/a.test.js > outer > inner > bad", Outcome::Failed),
                ("/p/a.test.js > later", Outcome::Skipped),
                ("/p/a.test.js > retried", Outcome::FlakyPassed),
            ]
        );
        assert_eq!(
            run.tests[1].message.as_deref(),
            Some("Error: boom\n    at x")
        );
    }

    #[test]
    fn vitest_shape_and_repeated_titles() {
        let doc = r#"{"numTotalTests":3,"success":false,"testResults":[{"name":"/v/x.test.js","status":"failed","message":"","assertionResults":[
          {"ancestorTitles":[],"title":"p %p","status":"passed","meta":{}},
          {"ancestorTitles":[],"title":"p %p","status":"failed","meta":{},"failureMessages":["no"]},
          {"ancestorTitles":[],"title":"p %p","status":"skipped","meta":{}}]}]}"#;
        let run = parse_jest_json(format!("JSON follows\n{doc}\n").as_bytes()).expect("parses");
        assert_eq!(run.format, Format::VitestJson);
        assert!(run.complete);
        assert!(!run.unattributed_failure);
        let ids: Vec<_> = run.tests.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "/v/x.test.js > p %p",
                "/v/x.test.js > p %p#2",
                "/v/x.test.js > p %p#3"
            ]
        );
        assert_eq!(run.failing().len(), 1);
    }

    #[test]
    fn truncated_or_foreign_documents_are_errors() {
        assert!(matches!(
            parse_jest_json(&JEST.as_bytes()[..200]),
            Err(StructuredError::Json { .. })
        ));
        assert!(matches!(
            parse_jest_json(&b"{\"stats\":{}}"[..]),
            Err(StructuredError::NotRecognised)
        ));
    }
}
