//! PHPUnit's default (progress) and `--testdox` console output.
//!
//! Default layout: a progress line of `.FESIR` marks, then sections `There was 1
//! error:` / `There were 2 failures:` / `... risky test(s):` / `... skipped
//! test(s):` / `... incomplete test(s):` / `... warning(s):` with numbered entries
//! `n) Class::method[ with data set "name" (args)]`, and a final `OK (N tests, ...)`
//! or `Tests: N, Assertions: A, Errors: ...` line.
//! Testdox layout: a class heading, then ` ✔ name` (pass), ` ✘ name` (failure or
//! error), ` ↩ name` (skipped), ` ∅ name` (incomplete), ` ☢ name` (risky), failure
//! details prefixed with `│`; `Summary of non-successful tests:` repeats them
//! (ignored).
//!
//! Outcomes follow PHPUnit's own counting: errors are errored, failures failed,
//! skipped and incomplete skipped, risky and warnings passed (PHPUnit counts them
//! apart from errors and failures). Ids: `Class::method with data set "name"` (the
//! data set's argument list is dropped); testdox `Class::Name`. Complete = the final
//! count line was printed.

use super::util::{feed_lines, strip_ansi, tally, Collector, Group};
use super::TextInput;
use crate::check::model::{Counts, Format, Outcome, ParsedRun};

fn section_outcome(line: &str) -> Option<Outcome> {
    let l = line.strip_prefix("There w")?;
    Some(if l.contains(" error") {
        Outcome::Errored
    } else if l.contains(" failure") {
        Outcome::Failed
    } else if l.contains(" skipped") || l.contains(" incomplete") {
        Outcome::Skipped
    } else {
        Outcome::Passed
    })
}

/// Drops the argument list after a data set name: `m with data set "x" (1, 2)`.
fn clean_id(s: &str) -> &str {
    let s = s.trim();
    if s.contains(" with data set ") && s.ends_with(')') {
        if let Some(i) = s.rfind(" (") {
            return &s[..i];
        }
    }
    s
}

/// Parses PHPUnit output from stdout.
#[must_use]
pub fn parse(t: &TextInput) -> ParsedRun {
    let mut diagnostics = Vec::new();
    let mut c = Collector::with_listing(t.listing);
    let mut section: Option<Outcome> = None;
    let mut class: Option<String> = None;
    let mut entry: Option<(String, String)> = None;
    let mut done = false;
    let mut summary_part = false;
    feed_lines(t.stdout, &mut diagnostics, |raw| {
        let line = strip_ansi(raw);
        let line = line.trim_end();
        let body = line.trim_start();
        if body.is_empty() || done {
            return;
        }
        if body.starts_with("Tests: ") && body.contains("Assertions:") || body.starts_with("OK (") {
            done = true;
            c.set_summary(phpunit_tally(body));
            return;
        }
        if body.starts_with("Summary of non-successful tests") {
            summary_part = true;
            return;
        }
        if summary_part {
            return;
        }
        if let Some(o) = section_outcome(body) {
            if let Some((id, msg)) = entry.take() {
                c.set_message(&id, &msg);
            }
            section = Some(o);
            return;
        }
        if let Some(o) = section {
            if let Some((n, name)) = body.split_once(") ") {
                if !n.is_empty()
                    && n.chars().all(|ch| ch.is_ascii_digit())
                    && line.len() == body.len()
                {
                    if let Some((id, msg)) = entry.take() {
                        c.set_message(&id, &msg);
                    }
                    let id = clean_id(name).to_string();
                    c.record(&id, o, None);
                    entry = Some((id, String::new()));
                    return;
                }
            }
            if body == "--" {
                return;
            }
            if let Some((_, msg)) = entry.as_mut() {
                if msg.len() < 1024 && !body.starts_with('/') {
                    msg.push_str(body);
                    msg.push('\n');
                }
            }
            return;
        }
        // testdox
        let marks = [
            ("✔ ", Outcome::Passed),
            ("✘ ", Outcome::Failed),
            ("↩ ", Outcome::Skipped),
            ("∅ ", Outcome::Skipped),
            ("☢ ", Outcome::Passed),
        ];
        if line.starts_with(' ') {
            if let Some((o, name)) = marks
                .iter()
                .find_map(|(m, o)| body.strip_prefix(m).map(|n| (*o, n)))
            {
                if let Some((id, msg)) = entry.take() {
                    c.set_message(&id, &msg);
                }
                let id = match &class {
                    Some(k) => format!("{k}::{}", clean_id(name)),
                    None => clean_id(name).to_string(),
                };
                c.record(&id, o, None);
                entry = o.is_failing().then(|| (id, String::new()));
            } else if let Some(rest) = body.strip_prefix('│') {
                if let Some((_, msg)) = entry.as_mut() {
                    let r = rest.trim();
                    if !r.is_empty() && !r.starts_with('/') && msg.len() < 1024 {
                        msg.push_str(r);
                        msg.push('\n');
                    }
                }
            }
        } else if !body.starts_with("PHPUnit ") && !body.starts_with("Time:") && !body.contains('/')
        {
            class = Some(body.to_string());
        }
    });
    if let Some((id, msg)) = entry.take() {
        c.set_message(&id, &msg);
    }
    c.finish_text(
        Format::Phpunit,
        "phpunit",
        done,
        None,
        t.exit_code,
        diagnostics,
    )
}

/// PHPUnit's final line: `OK (N tests, M assertions)` is N passed; `Tests: N,
/// Assertions: A, Errors: E, Failures: F, Skipped: S, Incomplete: I, Risky: R.`
/// counts errors and failures as failed, skipped and incomplete as skipped, and the
/// rest (risky included: it ran and did not fail) as passed.
fn phpunit_tally(body: &str) -> Counts {
    if let Some(rest) = body.strip_prefix("OK (") {
        let n = rest
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        return Counts {
            passed: n,
            ..Counts::default()
        };
    }
    let mut tests = 0u64;
    let c = tally(body, true, |w| match w {
        "errors" | "failures" => Group::Failed,
        "skipped" | "incomplete" => Group::Skipped,
        _ => Group::Other,
    })
    .unwrap_or_default();
    if let Some(m) = tally(body, true, |w| {
        if w == "tests" {
            Group::Passed
        } else {
            Group::Other
        }
    }) {
        tests = m.passed;
    }
    Counts {
        passed: tests.saturating_sub(c.failed + c.skipped),
        ..c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::parse::util::{outcomes, run_text};

    fn run(out: &str) -> ParsedRun {
        run_text(parse, Some(out.as_bytes()), None, Some(2))
    }

    #[test]
    fn default_sections() {
        let r = run("PHPUnit 9.6.7\n\n.FER\n\nThere was 1 error:\n\n1) T::testE\nRuntimeException: k\n\n/x/T.php:8\n\n--\n\nThere were 1 failures:\n\n1) T::testA with data set \"x [y]\" (1, 2)\nFailed asserting\n\nThere was 1 risky test:\n\n1) T::testR\nno assertions\n\nERRORS!\nTests: 4, Assertions: 3, Errors: 1, Failures: 1, Risky: 1.\n");
        let o = outcomes(&r);
        assert_eq!(
            o,
            vec![
                ("T::testE", Outcome::Errored),
                ("T::testA with data set \"x [y]\"", Outcome::Failed),
                ("T::testR", Outcome::Passed)
            ]
        );
        assert_eq!(r.tests[0].message.as_deref(), Some("RuntimeException: k"));
        assert!(r.complete);
    }

    #[test]
    fn testdox_marks() {
        let r = run("PHPUnit 9.6.7\n\nDemo\n ✔ Passes\n ✘ Fails\n   │\n   │ broken\n   │\n ☢ Risky\n\nSummary of non-successful tests:\n\nDemo\n ✘ Fails\n\nTests: 3, Assertions: 2, Failures: 1.\n");
        assert_eq!(r.tests.len(), 3);
        assert_eq!(
            r.failing().into_iter().collect::<Vec<_>>(),
            vec!["Demo::Fails"]
        );
        assert_eq!(r.tests[1].message.as_deref(), Some("broken"));
    }
}
