//! RSpec `--format json` reports: one document with `examples[]` (`status` passed /
//! failed / pending, `full_description`, `file_path`, `exception`) and `summary`.
//!
//! Ids: `<file_path> > <full_description>` with a leading `./` removed from the path
//! (`spec/demo_spec.rb > Calculator fails with message`); the same description twice in
//! a file gives `#2`, `#3`, ... in report order. RSpec's positional `id`
//! (`./spec/demo_spec.rb[1:2]`) is not used: it changes when examples are inserted.
//!
//! Outcomes: `passed`, `failed`, and `pending` (xit, `pending` whose body failed as
//! expected) as skipped.
//!
//! Completeness: `summary.example_count` equals the number of examples and
//! `errors_outside_of_examples_count` is 0; errors outside examples (a spec file that
//! fails to load) are an unattributed failure.

use crate::check::model::{Format, Outcome, ParsedRun};
use crate::check::parse::json::read_document;
use crate::check::parse::structured::{RunBuilder, StructuredError};
use serde::Deserialize;
use std::io::BufRead;

#[derive(Deserialize)]
struct Report {
    examples: Option<Vec<Example>>,
    summary: Option<Summary>,
    #[serde(default)]
    messages: Vec<String>,
}

#[derive(Deserialize)]
struct Summary {
    example_count: Option<u64>,
    errors_outside_of_examples_count: Option<u64>,
}

#[derive(Deserialize)]
struct Example {
    #[serde(default)]
    full_description: String,
    #[serde(default)]
    status: String,
    file_path: Option<String>,
    exception: Option<Exception>,
}

#[derive(Deserialize)]
struct Exception {
    class: Option<String>,
    message: Option<String>,
}

/// Parses an RSpec JSON report (text before the first line starting with `{` is
/// skipped).
///
/// # Errors
/// [`StructuredError::NotRecognised`] when the document has no `examples`;
/// [`StructuredError::Json`] when it does not decode.
pub fn parse_rspec_json<R: BufRead>(r: R) -> Result<ParsedRun, StructuredError> {
    let report: Report = read_document(r)?;
    let Some(examples) = report.examples else {
        return Err(StructuredError::NotRecognised);
    };
    let mut b = RunBuilder::new(Format::RspecJson, "rspec");
    for ex in &examples {
        let file = ex.file_path.as_deref().unwrap_or("");
        let file = file.strip_prefix("./").unwrap_or(file);
        let id = if file.is_empty() {
            ex.full_description.clone()
        } else {
            format!("{file} > {}", ex.full_description)
        };
        let outcome = match ex.status.as_str() {
            "passed" => Outcome::Passed,
            "failed" => Outcome::Failed,
            "pending" => Outcome::Skipped,
            other => {
                b.diagnostic(format!("rspec json: unknown example status {other:?}"));
                Outcome::Skipped
            }
        };
        let message = ex.exception.as_ref().map(|e| {
            format!(
                "{}: {}",
                e.class.as_deref().unwrap_or("error"),
                e.message.as_deref().unwrap_or("").trim()
            )
        });
        b.distinct(&id, outcome, message.as_deref());
    }
    let mut complete = report.summary.is_some();
    if let Some(summary) = &report.summary {
        if summary
            .example_count
            .is_some_and(|n| n != examples.len() as u64)
        {
            complete = false;
            b.diagnostic("rspec json: summary.example_count disagrees with the examples listed");
        }
        if summary.errors_outside_of_examples_count.unwrap_or(0) > 0 {
            complete = false;
            let text = report
                .messages
                .first()
                .cloned()
                .unwrap_or_else(|| "errors occurred outside of examples".to_string());
            b.unattributed(Some(&text));
        }
    }
    Ok(b.finish(complete))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::parse::util::outcomes;

    #[test]
    fn examples_outcomes_and_ids() {
        let doc = r#"{"version":"3.12.0","examples":[
          {"id":"./spec/a_spec.rb[1:1]","full_description":"Calc adds","status":"passed","file_path":"./spec/a_spec.rb"},
          {"id":"./spec/a_spec.rb[1:2]","full_description":"Calc fails","status":"failed","file_path":"./spec/a_spec.rb","exception":{"class":"ArgumentError","message":"kaboom"}},
          {"id":"./spec/a_spec.rb[1:3]","full_description":"Calc later","status":"pending","file_path":"./spec/a_spec.rb"}],
          "summary":{"example_count":3,"failure_count":1,"pending_count":1,"errors_outside_of_examples_count":0}}"#;
        let run = parse_rspec_json(doc.as_bytes()).expect("parses");
        assert!(run.complete);
        assert!(!run.unattributed_failure);
        let got = outcomes(&run);
        assert_eq!(
            got,
            [
                ("spec/a_spec.rb > Calc adds", Outcome::Passed),
                ("spec/a_spec.rb > Calc fails", Outcome::Failed),
                ("spec/a_spec.rb > Calc later", Outcome::Skipped),
            ]
        );
        assert_eq!(
            run.tests[1].message.as_deref(),
            Some("ArgumentError: kaboom")
        );
    }

    #[test]
    fn load_error_outside_examples_is_unattributed() {
        let doc = r#"{"messages":["An error occurred while loading ./spec/b_spec.rb."],"examples":[],
          "summary":{"example_count":0,"errors_outside_of_examples_count":1}}"#;
        let run = parse_rspec_json(doc.as_bytes()).expect("parses");
        assert!(!run.complete);
        assert!(run.unattributed_failure);
        assert_eq!(run.failing().len(), 1);
        assert!(run.tests[0]
            .message
            .as_deref()
            .unwrap_or("")
            .contains("b_spec.rb"));
    }
}
