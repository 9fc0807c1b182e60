//! CTest console output (`ctest`, `--output-on-failure`, `-j N`).
//!
//! Layout (CTest's console handler): `Test project <dir>`, per test `Start N: name`
//! and a result line `i/n Test #N: name ....   Passed   0.00 sec` (non-pass states
//! prefixed with `***`: `Failed`, `Not Run`, `Not Run (Disabled)`, `Skipped`,
//! `Timeout`, `Exception: SegFault`, `Failed  Error regular expression found ...`),
//! then `P% tests passed, F tests failed out of T` and the lists of tests that did
//! not run / FAILED.
//!
//! Outcomes follow CTest's own verdicts: `Passed` passes; `Skipped` (skip return
//! code) and `Not Run (Disabled)` are skipped; `Not Run` (executable missing),
//! timeouts, exceptions and regex failures are failures. Ids are the test names.
//! Complete = the `tests passed, ... out of T` line was printed and T equals the
//! non-disabled tests seen.

use super::util::{feed_lines, strip_ansi, Collector};
use super::TextInput;
use crate::check::model::{Format, Outcome, ParsedRun};
use regex::Regex;
use std::sync::OnceLock;

struct Res {
    result: Regex,
    total: Regex,
}

fn res() -> Option<&'static Res> {
    static R: OnceLock<Option<Res>> = OnceLock::new();
    R.get_or_init(|| {
        Some(Res {
            result: Regex::new(
                r"^\s*\d+/\d+ Test\s+#\d+: (.+?) \.+\s*(?:\*\*\*)?(.+?)\s+[\d.]+ sec\s*$",
            )
            .ok()?,
            total: Regex::new(r"^\d+% tests passed, \d+ tests? failed out of (\d+)").ok()?,
        })
    })
    .as_ref()
}

fn outcome(status: &str) -> Outcome {
    let s = status.trim();
    if s == "Passed" {
        Outcome::Passed
    } else if s == "Skipped" || s.starts_with("Not Run (Disabled)") {
        Outcome::Skipped
    } else {
        Outcome::Failed
    }
}

/// Parses ctest output from stdout.
#[must_use]
pub fn parse(t: &TextInput) -> ParsedRun {
    let mut diagnostics = Vec::new();
    let mut c = Collector::with_listing(t.listing);
    let mut total: Option<usize> = None;
    let mut counted = 0usize;
    if let Some(r) = res() {
        feed_lines(t.stdout, &mut diagnostics, |raw| {
            let line = strip_ansi(raw);
            if let Some(m) = r.result.captures(&line) {
                let status = m[2].to_string();
                let o = outcome(&status);
                if !status.contains("(Disabled)") && c.outcome(&m[1]).is_none() {
                    counted += 1;
                }
                let msg = o.is_failing().then(|| status.clone());
                c.record(&m[1], o, msg);
            } else if let Some(m) = r.total.captures(&line) {
                total = m[1].parse().ok();
            }
        });
    }
    let complete = total.is_some_and(|n| n == counted);
    c.finish_text(
        Format::Ctest,
        "ctest",
        complete,
        None,
        t.exit_code,
        diagnostics,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::parse::util::{outcomes, run_text};

    #[test]
    fn ctest_verdicts() {
        let out = "Test project /x\n1/4 Test #1: a b [c] ........   Passed    0.00 sec\n2/4 Test #2: d ...***Not Run   0.00 sec\n3/4 Test #3: e ...***Not Run (Disabled)   0.00 sec\n4/4 Test #4: f ...***Exception: SegFault  0.00 sec\n\n33% tests passed, 2 tests failed out of 3\n";
        let r = run_text(parse, Some(out.as_bytes()), None, Some(8));
        let o = outcomes(&r);
        assert_eq!(
            o,
            vec![
                ("a b [c]", Outcome::Passed),
                ("d", Outcome::Failed),
                ("e", Outcome::Skipped),
                ("f", Outcome::Failed)
            ]
        );
        assert!(r.complete);
    }
}
