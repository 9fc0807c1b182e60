//! What the two sample comparisons share ([`super::sample_tests`]: the structured
//! parsers on their report files; [`super::samples_test`]: the dispatcher on every
//! sample): where the samples are, how they are found and loaded, and how a parsed run
//! is compared with a `NAME.expected.json` the way `check-parse` does.
//!
//! The comparison: `complete` and `unattributed_failure` match when the expectation
//! states them; for each of failing / flaky / passed / skipped that is not null, every
//! expected name is contained in one reported id of that group and the counts agree.
//! [`Check`] relaxes parts of it for samples whose source cannot tell them.

use crate::check::model::{Outcome, ParsedRun};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The sample folder: `$LOOPEXEC_SAMPLES`, else `fixtures/test-output` in the crate
/// (committed, so the comparison always runs).
pub(super) fn fixtures_dir() -> PathBuf {
    std::env::var_os("LOOPEXEC_SAMPLES").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/test-output"),
        PathBuf::from,
    )
}

/// Every `*.expected.json` below `dir`, in sorted path order.
pub(super) fn expected_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk(dir, &mut out);
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if p.to_string_lossy().ends_with(".expected.json") {
            out.push(p);
        }
    }
}

/// Why an expectation could not be loaded.
pub(super) enum LoadError {
    /// The file could not be read (e.g. it is missing).
    Missing,
    /// The file is not valid JSON.
    Unreadable(serde_json::Error),
}

/// Reads and decodes one `NAME.expected.json`.
pub(super) fn load_expected(path: &Path) -> Result<Value, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|_| LoadError::Missing)?;
    serde_json::from_str(&text).map_err(LoadError::Unreadable)
}

/// How much of the expectation a sample's source can know.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Check {
    All,
    /// Everything but `counts`: the report lacks a tally only the console prints
    /// (nextest's JUnit omits the skipped tests its summary counts).
    AllButCounts,
    /// Compare only failing and flaky (plus names, not counts, of passed/skipped).
    NoCompletenessNoSkippedCounts,
    /// Compare failing, complete and unattributed only.
    FailingOnly,
}

fn group_of(o: Outcome) -> &'static str {
    match o {
        Outcome::Failed | Outcome::Errored => "failing",
        Outcome::FlakyPassed => "flaky",
        Outcome::Passed => "passed",
        Outcome::Skipped => "skipped",
    }
}

/// The mismatches between a parsed run and an expectation, as check-parse words them.
pub(super) fn compare(exp: &Value, run: &ParsedRun, check: Check) -> Vec<String> {
    let mut problems = Vec::new();
    if check != Check::NoCompletenessNoSkippedCounts {
        for (key, got) in [
            ("complete", run.complete),
            ("unattributed_failure", run.unattributed_failure),
        ] {
            if let Some(want) = exp.get(key).and_then(Value::as_bool) {
                if want != got {
                    problems.push(format!("{key}={got} expected {want}"));
                }
            }
        }
    }
    for group in ["failing", "flaky", "passed", "skipped"] {
        let Some(want) = exp.get(group).and_then(Value::as_array) else {
            continue;
        };
        let names_only = match check {
            Check::All | Check::AllButCounts => false,
            Check::NoCompletenessNoSkippedCounts => matches!(group, "passed" | "skipped"),
            Check::FailingOnly => {
                if group != "failing" {
                    continue;
                }
                false
            }
        };
        let ids: Vec<&str> = run
            .tests
            .iter()
            .filter(|t| group_of(t.outcome) == group)
            .map(|t| t.id.as_str())
            .collect();
        // Relaxed samples name tests by another format's ids (pytest node ids): the
        // part after the last `::` is what a report can match.
        let relaxed = check == Check::FailingOnly;
        let missing: Vec<&str> = want
            .iter()
            .filter_map(Value::as_str)
            .filter(|n| !ids.iter().any(|i| i.contains(bare(n, relaxed))))
            .collect();
        // A names-only group may miss names the source cannot know (jest-junit todo).
        if !missing.is_empty() && (!names_only || group != "skipped") {
            problems.push(format!("{group}: missing {missing:?}"));
        }
        if !names_only && ids.len() != want.len() {
            problems.push(format!(
                "{group}: {} reported, {} expected ({ids:?})",
                ids.len(),
                want.len()
            ));
        }
    }
    if check == Check::All {
        problems.extend(compare_counts_and_messages(exp, run));
    }
    problems
}

/// The `counts` (each non-null one equals [`ParsedRun::counts`]) and `messages` (the
/// one test whose id contains the name carries a message containing the text) parts
/// of an expectation, as check-parse compares them.
fn compare_counts_and_messages(exp: &Value, run: &ParsedRun) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(want) = exp.get("counts").and_then(Value::as_object) {
        let have = run.counts();
        for (key, got) in [
            ("passed", have.passed),
            ("failed", have.failed),
            ("skipped", have.skipped),
            ("flaky", have.flaky),
        ] {
            if let Some(w) = want.get(key).and_then(Value::as_u64) {
                if w != got {
                    problems.push(format!("counts.{key}={got} expected {w}"));
                }
            }
        }
    }
    if let Some(msgs) = exp.get("messages").and_then(Value::as_object) {
        for (name, text) in msgs {
            let text = text.as_str().unwrap_or_default();
            let hits: Vec<_> = run
                .tests
                .iter()
                .filter(|t| t.id.contains(name.as_str()))
                .collect();
            let ok =
                matches!(hits.as_slice(), [t] if t.message.as_deref().unwrap_or("").contains(text));
            if !ok {
                let got = hits.first().and_then(|t| t.message.clone());
                problems.push(format!(
                    "message of {name}: {got:?}, expected it to contain {text:?}"
                ));
            }
        }
    }
    problems
}

fn bare(name: &str, relaxed: bool) -> &str {
    if relaxed {
        name.rsplit("::").next().unwrap_or(name)
    } else {
        name
    }
}
