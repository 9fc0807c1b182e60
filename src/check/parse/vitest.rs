//! vitest's default and verbose reporters (with or without ANSI colour).
//!
//! Layout: stdout holds ` RUN  vX`, per file either a header ` ❯ file (N tests |
//! ...)` followed by an indented tree of `✓`/`×`/`↓`/`□` lines (default reporter;
//! describe names are not printed, only indentation) or ` ✓ file (N tests)` alone
//! for a passing file; the verbose reporter prints one ` ✓ file > describe > title
//! 1ms` line per test with `→ message` under failures. The summary is ` Test Files
//! ...` and `      Tests  4 failed | 8 passed (14)`. stderr holds failure details
//! under ` FAIL  file > describe > title` headings.
//!
//! Ids: verbose `file > describe > title` as printed; default `file > title`.
//! vitest may print the same name for different tests (`test.each` with `%p`), so
//! a repeated id gets a ` #n` suffix by position. `↓` (skipped) and `□` (todo) are
//! skipped. A failed file or unhandled error without a test (` FAIL  file [...]`,
//! `Unhandled Errors`, `Failed Suites`) is an unattributed failure. Complete = the
//! `Tests` summary line was printed.

use super::util::{feed_lines, indent_and_body, strip_ansi, trim_duration, Collector, Group};
use super::TextInput;
use crate::check::model::{Format, Outcome, ParsedRun};

fn mark(body: &str) -> Option<(Outcome, &str)> {
    let pairs = [
        ("✓ ", Outcome::Passed),
        ("√ ", Outcome::Passed),
        ("× ", Outcome::Failed),
        ("✗ ", Outcome::Failed),
        ("↓ ", Outcome::Skipped),
        ("□ ", Outcome::Skipped),
    ];
    pairs
        .iter()
        .find_map(|(p, o)| body.strip_prefix(p).map(|rest| (*o, rest)))
}

fn is_file_header(rest: &str) -> Option<&str> {
    // `file (13 tests | 4 failed) 12ms` or `file (1 test) 2ms`
    let i = rest.find(" (")?;
    let after = &rest[i + 2..];
    let n: String = after.chars().take_while(char::is_ascii_digit).collect();
    if n.is_empty() {
        return None;
    }
    let tail = &after[n.len()..];
    (tail.starts_with(" test)")
        || tail.starts_with(" tests)")
        || tail.starts_with(" test |")
        || tail.starts_with(" tests |"))
    .then(|| &rest[..i])
}

/// Parses vitest reporter output (stdout for results, stderr for details).
#[must_use]
pub fn parse(t: &TextInput) -> ParsedRun {
    let mut diagnostics = Vec::new();
    let mut c = Collector::with_listing(t.listing);
    let mut file: Option<String> = None;
    let mut summary = false;
    let mut suite_error: Option<String> = None;
    feed_lines(t.stdout, &mut diagnostics, |raw| {
        let line = strip_ansi(raw);
        let (indent, body) = indent_and_body(&line);
        if body.starts_with("Tests ") && body.ends_with(')') {
            summary = true;
            // `Tests  4 failed | 8 passed | 1 skipped | 1 todo (14)`
            let clauses = body.rsplit_once('(').map_or(body, |(c, _)| c);
            if let Some(s) = super::util::tally(clauses, false, |w| match w {
                "passed" => Group::Passed,
                "failed" => Group::Failed,
                "skipped" | "todo" => Group::Skipped,
                _ => Group::Other,
            }) {
                c.set_summary(s);
            }
            file = None;
            return;
        }
        if body.starts_with("Test Files ") {
            file = None;
            return;
        }
        if body.starts_with("stdout |") || body.starts_with("stderr |") {
            return;
        }
        if let Some(rest) = body.strip_prefix("❯ ") {
            if let Some(f) = is_file_header(rest) {
                file = Some(f.to_string());
            }
            return;
        }
        let Some((o, rest)) = mark(body) else { return };
        if indent <= 1 {
            if let Some(f) = is_file_header(rest) {
                file = Some(f.to_string());
                return;
            }
            if rest.contains(" > ") {
                c.record_distinct(trim_duration(rest), o, None);
            }
            return;
        }
        if let Some(f) = &file {
            let id = format!("{f} > {}", trim_duration(rest));
            c.record_distinct(&id, o, None);
        }
    });
    let mut current: Option<(String, String)> = None;
    let flush = |cur: &mut Option<(String, String)>, c: &mut Collector| {
        if let Some((id, msg)) = cur.take() {
            c.set_message(&id, &msg);
        }
    };
    feed_lines(t.stderr, &mut diagnostics, |raw| {
        let line = strip_ansi(raw);
        let line = line.trim_end();
        if let Some(rest) = line.trim_start().strip_prefix("FAIL ") {
            flush(&mut current, &mut c);
            let rest = rest.trim();
            if rest.contains(" > ") {
                current = Some((rest.to_string(), String::new()));
            } else {
                suite_error.get_or_insert_with(|| format!("{rest}: suite failed"));
            }
            return;
        }
        if line.contains("Unhandled Error") || line.contains("Failed Suites") {
            suite_error.get_or_insert_with(|| {
                line.trim_matches(|ch: char| ch == '⎯' || ch == ' ')
                    .to_string()
            });
        }
        if line.starts_with('⎯') {
            flush(&mut current, &mut c);
            return;
        }
        if let Some((_, msg)) = current.as_mut() {
            let tl = line.trim();
            if !tl.is_empty() && msg.len() < 1024 && !tl.contains("| ") && !tl.starts_with('|') {
                msg.push_str(tl);
                msg.push('\n');
            }
        }
    });
    flush(&mut current, &mut c);
    c.finish_text(
        Format::Vitest,
        "vitest",
        summary,
        suite_error,
        t.exit_code,
        diagnostics,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::parse::util::run_text;

    fn run(stdout: &str) -> ParsedRun {
        run_text(parse, Some(stdout.as_bytes()), None, Some(1))
    }

    #[test]
    fn default_tree_with_repeated_names_and_ansi() {
        let out = " \u{1b}[31m❯\u{1b}[39m a.test.js (3 tests | 1 failed) 5ms\n   ✓ p %p 1ms\n   × p %p 0ms\n   ↓ s\n ✓ b.test.js (1 test) 2ms\n\n      Tests  1 failed | 1 passed | 1 skipped (3)\n";
        let r = run(out);
        let ids: Vec<_> = r.tests.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(
            ids,
            vec!["a.test.js > p %p", "a.test.js > p %p #2", "a.test.js > s"]
        );
        assert_eq!(r.failing().len(), 1);
        assert!(r.complete);
    }

    #[test]
    fn verbose_lines_keep_full_path() {
        let out = " ✓ a.test.js > outer > x › y 1ms\n × a.test.js > z 0ms\n   → boom\n";
        let r = run(out);
        assert_eq!(r.tests[0].id, "a.test.js > outer > x › y");
        assert!(!r.complete);
    }
}
