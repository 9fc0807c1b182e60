//! RSpec's progress and documentation formatters.
//!
//! Layout: the documentation formatter prints example groups and examples as an
//! indented tree (two spaces per level) with `(FAILED - n)` / `(PENDING: reason)`
//! suffixes; the progress formatter prints `.`, `F`, `*` marks. Both then print a
//! `Pending:` section and a `Failures:` section of numbered entries `  n) <full
//! description>`, `Finished in ...`, `N examples, F failures[, P pending]` and
//! `Failed examples:` with `rspec ./spec/x_spec.rb:5 # <full description>` lines.
//!
//! Ids are full descriptions (group and example texts joined with spaces, as RSpec
//! builds them). In the tree a line is a group when the next non-empty line is
//! indented deeper, otherwise an example (passed unless suffixed). Pending examples
//! are skipped, even when their body failed as expected. Only an indented tree line
//! can be an example (every example sits in a group); RSpec's own notices (`Run
//! options:`, `Randomized with seed`, `No examples found.`) are not tree lines, and an
//! `An error occurred ...` block (a spec file that fails to load, a failing
//! `before(:suite)` hook) up to the next notice or `Finished in` holds no example:
//! such an error, and `errors occurred outside of examples`, is an unattributed
//! failure. Complete = the `N examples` line was printed (the runner reached its end).
//! The tally is that line: failures, pending, and the rest of the examples passed.

use super::util::{feed_lines, indent_and_body, strip_ansi, Collector};
use super::TextInput;
use crate::check::model::{Format, Outcome, ParsedRun};

#[derive(PartialEq, Eq, Clone, Copy)]
enum Section {
    Tree,
    Pending,
    Failures,
    FailedList,
    /// An `An error occurred ...` block: error text, never examples.
    OutsideError,
    Done,
}

/// RSpec's notices at the left margin, which are never groups or examples.
fn is_notice(body: &str) -> bool {
    [
        "Run options:",
        "Randomized with seed",
        "No examples found",
        "All examples were filtered out",
    ]
    .iter()
    .any(|p| body.starts_with(p))
}

/// The tally in `N examples, F failures[, P pending][, E errors occurred outside of
/// examples]`: failures, pending, and the other examples passed.
fn tally(body: &str) -> Option<crate::check::model::Counts> {
    let mut examples = None;
    let mut failures = 0u64;
    let mut pending = 0u64;
    for clause in body.split(", ") {
        let Some((n, word)) = clause.split_once(' ') else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        if word.starts_with("example") {
            examples = Some(n);
        } else if word.starts_with("failure") {
            failures = n;
        } else if word.starts_with("pending") {
            pending = n;
        }
    }
    let examples = examples?;
    Some(crate::check::model::Counts {
        passed: examples.saturating_sub(failures + pending),
        failed: failures,
        skipped: pending,
        flaky: 0,
    })
}

struct State {
    c: Collector,
    section: Section,
    stack: Vec<(usize, String)>,
    pending_line: Option<(usize, String)>,
    entry: Option<(String, String)>,
    summary: bool,
    outside: Option<String>,
}

impl State {
    fn path(&self, indent: usize, text: &str) -> String {
        let mut parts: Vec<&str> = self
            .stack
            .iter()
            .filter(|(i, _)| *i < indent)
            .map(|(_, s)| s.as_str())
            .collect();
        parts.push(text);
        parts.join(" ")
    }

    /// Resolves the held tree line now that the next line's indent is known.
    fn resolve(&mut self, next_indent: Option<usize>) {
        if let Some((indent, text)) = self.pending_line.take() {
            if next_indent.is_some_and(|n| n > indent) {
                self.stack.retain(|(i, _)| *i < indent);
                self.stack.push((indent, text));
            } else if indent > 0 {
                let id = self.path(indent, &text);
                self.c.record(&id, Outcome::Passed, None);
            }
        }
    }

    fn flush_entry(&mut self) {
        if let Some((id, msg)) = self.entry.take() {
            self.c.set_message(&id, &msg);
        }
    }

    fn line(&mut self, raw: &str) {
        let line = strip_ansi(raw);
        let (indent, body) = indent_and_body(&line);
        if body.is_empty() {
            return;
        }
        if indent == 0 {
            let next = match body {
                "Failures:" => Some(Section::Failures),
                "Failed examples:" => Some(Section::FailedList),
                b if b.starts_with("Pending:") => Some(Section::Pending),
                b if b.starts_with("Finished in ") => Some(Section::Done),
                b if b.starts_with("An error occurred ") => Some(Section::OutsideError),
                b if is_notice(b) && self.section == Section::OutsideError => Some(Section::Tree),
                _ => None,
            };
            if next == Some(Section::OutsideError) {
                self.outside.get_or_insert_with(|| body.to_string());
            }
            if let Some(s) = next {
                self.resolve(None);
                self.flush_entry();
                self.section = s;
                return;
            }
            if body.contains(" example") && body.contains(" failure") {
                self.summary = true;
                if let Some(c) = tally(body) {
                    self.c.set_summary(c);
                }
                if body.contains("outside of examples") {
                    self.outside.get_or_insert_with(|| body.to_string());
                }
                return;
            }
        }
        match self.section {
            Section::Tree => {
                if indent == 0 && (body.chars().all(|c| ".F*E".contains(c)) || is_notice(body)) {
                    return;
                }
                self.resolve(Some(indent));
                self.stack.retain(|(i, _)| *i < indent);
                if let Some(rest) = body.strip_suffix(')') {
                    if let Some(i) = rest.rfind(" (FAILED - ") {
                        let id = self.path(indent, &rest[..i]);
                        self.c.record(&id, Outcome::Failed, None);
                        return;
                    }
                    if let Some(i) = rest.rfind(" (PENDING: ") {
                        let id = self.path(indent, &rest[..i]);
                        self.c.record(&id, Outcome::Skipped, None);
                        return;
                    }
                }
                self.pending_line = Some((indent, body.to_string()));
            }
            Section::Pending | Section::Failures => {
                if indent == 2 {
                    if let Some((n, desc)) = body.split_once(") ") {
                        if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) {
                            self.flush_entry();
                            let o = if self.section == Section::Failures {
                                Outcome::Failed
                            } else {
                                Outcome::Skipped
                            };
                            if self.c.outcome(desc) != Some(o) {
                                self.c.record(desc, o, None);
                            }
                            self.entry = Some((desc.to_string(), String::new()));
                            return;
                        }
                    }
                }
                if let Some((_, msg)) = self.entry.as_mut() {
                    if msg.len() < 1024 && !body.starts_with("# ./") {
                        msg.push_str(body);
                        msg.push('\n');
                    }
                }
            }
            Section::FailedList => {
                if let Some(rest) = body.strip_prefix("rspec ") {
                    if let Some((_, desc)) = rest.split_once(" # ") {
                        if !self.c.is_failing(desc) {
                            self.c.record(desc, Outcome::Failed, None);
                        }
                    }
                }
            }
            Section::OutsideError => {
                if let Some(m) = self.outside.as_mut() {
                    if m.len() < 1024 && !body.starts_with("# ") {
                        m.push('\n');
                        m.push_str(body);
                    }
                }
            }
            Section::Done => {}
        }
    }
}

/// Parses rspec progress/documentation output from stdout.
#[must_use]
pub fn parse(t: &TextInput) -> ParsedRun {
    let mut diagnostics = Vec::new();
    let mut st = State {
        c: Collector::with_listing(t.listing),
        section: Section::Tree,
        stack: Vec::new(),
        pending_line: None,
        entry: None,
        summary: false,
        outside: None,
    };
    feed_lines(t.stdout, &mut diagnostics, |l| st.line(l));
    st.resolve(None);
    st.flush_entry();
    st.c.finish_text(
        Format::Rspec,
        "rspec",
        st.summary,
        st.outside,
        t.exit_code,
        diagnostics,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::parse::util::{outcomes, run_text};

    #[test]
    fn documentation_tree_and_sections() {
        let out = "\nCalc\n  passes\n  fails (FAILED - 1)\n  ctx [x]\n    deep\n  later (PENDING: no)\n\nFailures:\n\n  1) Calc fails\n     Failure/Error: boom\n\nFinished in 0.1 seconds\n4 examples, 1 failure, 1 pending\n\nFailed examples:\n\nrspec ./spec/a_spec.rb:3 # Calc fails\n";
        let r = run_text(parse, Some(out.as_bytes()), None, Some(1));
        let o = outcomes(&r);
        assert_eq!(
            o,
            vec![
                ("Calc passes", Outcome::Passed),
                ("Calc fails", Outcome::Failed),
                ("Calc ctx [x] deep", Outcome::Passed),
                ("Calc later", Outcome::Skipped)
            ]
        );
        assert_eq!(r.tests[1].message.as_deref(), Some("Failure/Error: boom"));
        assert!(r.complete);
    }
}
