//! cargo-nextest human output (written to stderr; stdout stays empty).
//!
//! Layout (nextest's reporter): `Starting N tests across M binaries`, one status
//! line per test `  STATUS [ 0.004s] ( 1/18) <binary-id> <test name>` (the counter is
//! required, which keeps indented captured output out) where STATUS
//! is `PASS`, `FAIL`, `SIGABRT`/`SIGSEGV`/... (a crash), `TIMEOUT`, `LEAK`,
//! `LEAK-FAIL`, `SKIP`, `FLAKY`, or `TRY n PASS|FAIL` for retries; captured output
//! follows failures, indented (never read as results); `Summary [ 0.3s] N tests
//! run: P passed, F failed, S skipped` and a repeat of the failures end the run.
//!
//! Ids are `<binary-id>::<test name>` (`rustdemo::integration::it_passes`). Retries:
//! the final attempt decides; failed attempts followed by a pass are flaky-passed.
//! Complete = the `Summary` line was printed, says nothing was cancelled or left not
//! run, and its run count equals the tests seen.

use super::util::{feed_lines, strip_ansi, Collector, Group};
use super::TextInput;
use crate::check::model::{Counts, Format, Outcome, ParsedRun};
use regex::Regex;
use std::sync::OnceLock;

struct Res {
    status: Regex,
    summary: Regex,
}

fn res() -> Option<&'static Res> {
    static R: OnceLock<Option<Res>> = OnceLock::new();
    R.get_or_init(|| {
        Some(Res {
            status: Regex::new(
                r"^\s+((?:TRY \d+ )?[A-Z][A-Z-]*(?: \d+/\d+)?) \[\s*[\d.]+s\] \(\s*\d+/\d+\) (\S+) (.+?)\s*$",
            )
            .ok()?,
            summary: Regex::new(r"^\s+Summary \[\s*[\d.]+s\] (\d+) tests? run: (.*)$").ok()?,
        })
    })
    .as_ref()
}

fn outcome(status: &str) -> Option<Outcome> {
    let s = status.split_whitespace().last().unwrap_or(status);
    let first = status.split_whitespace().next().unwrap_or(status);
    Some(match (first, s) {
        ("FLAKY", _) => Outcome::FlakyPassed,
        (_, "PASS" | "LEAK") => Outcome::Passed,
        (_, "SKIP") => Outcome::Skipped,
        (_, "FAIL" | "LEAK-FAIL" | "TIMEOUT" | "ABORT") => Outcome::Failed,
        (_, x) if x.starts_with("SIG") => Outcome::Failed,
        ("TRY", _) => Outcome::Failed,
        _ => return None,
    })
}

/// Parses nextest output from stderr (and stdout, in case the streams were merged).
#[must_use]
pub fn parse(t: &TextInput) -> ParsedRun {
    let mut diagnostics = Vec::new();
    let mut c = Collector::with_listing(t.listing);
    let mut summary: Option<(usize, String)> = None;
    let mut seen = 0usize;
    let mut current: Option<(String, String)> = None;
    let mut cancelled = false;
    if let Some(r) = res() {
        for s in [t.stderr, t.stdout] {
            feed_lines(s, &mut diagnostics, |raw| {
                let line = strip_ansi(raw);
                let line = line.as_ref();
                if let Some(m) = r.summary.captures(line) {
                    summary = Some((m[1].parse().unwrap_or(0), m[2].to_string()));
                    c.set_summary(nextest_tally(&m[2]));
                    if let Some((id, msg)) = current.take() {
                        c.set_message(&id, &msg);
                    }
                    return;
                }
                if summary.is_some() {
                    return;
                }
                if line.trim_start().starts_with("Cancelling") {
                    cancelled = true;
                }
                if let Some(m) = r.status.captures(line) {
                    if let Some(o) = outcome(&m[1]) {
                        if let Some((id, msg)) = current.take() {
                            c.set_message(&id, &msg);
                        }
                        let id = format!("{}::{}", &m[2], &m[3]);
                        let retry = m[1].starts_with("TRY ");
                        if c.outcome(&id).is_none() || !retry {
                            seen += usize::from(c.outcome(&id).is_none() && o != Outcome::Skipped);
                        }
                        c.record(&id, o, None);
                        if o.is_failing() {
                            current = Some((id, String::new()));
                        }
                        return;
                    }
                }
                if let Some((_, msg)) = current.as_mut() {
                    let b = line.trim();
                    let noise = b.is_empty()
                        || b.ends_with("───")
                        || b.starts_with("running ")
                        || b.starts_with("test result:")
                        || b == "failures:"
                        || b.starts_with("test ");
                    if !noise && msg.len() < 1024 {
                        msg.push_str(b);
                        msg.push('\n');
                    }
                }
            });
        }
    }
    if let Some((id, msg)) = current.take() {
        c.set_message(&id, &msg);
    }
    let complete = match &summary {
        Some((n, rest)) => {
            !cancelled && !rest.contains("not run") && !rest.contains("cancel") && *n == seen
        }
        None => false,
    };
    c.finish_text(
        Format::Nextest,
        "nextest",
        complete,
        None,
        t.exit_code,
        diagnostics,
    )
}

/// The tally of nextest's `Summary` line after `N tests run:` (`4 passed (1 flaky),
/// 5 failed, 1 timed out, 2 skipped`): flaky tests are among the passed ones and
/// counted apart; failed, timed out and leaky-failed are failed.
fn nextest_tally(rest: &str) -> Counts {
    let mut c = super::util::tally(rest, false, |w| match w {
        "passed" => Group::Passed,
        "failed" | "timed" | "exec" => Group::Failed,
        "skipped" => Group::Skipped,
        "flaky" => Group::Flaky,
        _ => Group::Other,
    })
    .unwrap_or_default();
    c.passed = c.passed.saturating_sub(c.flaky);
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::parse::util::run_text;

    fn run(stderr: &str) -> ParsedRun {
        run_text(parse, None, Some(stderr.as_bytes()), Some(100))
    }

    #[test]
    fn statuses_retries_and_captured_output() {
        let err = "    Starting 3 tests across 2 binaries\n        PASS [   0.004s] ( 1/3) a t::ok\n     SIGABRT [   0.004s] ( 2/3) a::crash boom\n  stdout ───\n    test fake ... ok\n        PASS [   0.004s] fake line\n   TRY 1 FAIL [   0.004s] ( 3/3) b f\n   TRY 2 PASS [   0.004s] ( 3/3) b f\n     Summary [   0.3s] 3 tests run: 2 passed, 1 failed\n        FAIL [   0.004s] ( 2/3) a::crash boom\n";
        let r = run(err);
        let get = |id: &str| r.tests.iter().find(|t| t.id == id).map(|t| t.outcome);
        assert_eq!(get("a::t::ok"), Some(Outcome::Passed));
        assert_eq!(get("a::crash::boom"), Some(Outcome::Failed));
        assert_eq!(get("b::f"), Some(Outcome::FlakyPassed));
        assert_eq!(r.tests.len(), 3);
        assert!(r.complete);
    }
}
