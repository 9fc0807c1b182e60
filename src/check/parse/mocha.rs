//! mocha's spec and dot reporters.
//!
//! Layout (mocha's Base reporter): the spec reporter prints describe titles as
//! unmarked lines and tests as `✔ title`, `N) title` (failed) or `- title`
//! (pending), two spaces of indent per level; the dot reporter prints `.`, `!`, `,`
//! marks. Both end with `N passing (Tms)`, `N pending`, `N failing` and numbered
//! failure blocks `N) describe` / `     title:` (the describe path on separate,
//! deeper-indented lines, the title ending with `:`) followed by the error.
//!
//! Ids are mocha's full titles: describe path and title joined with single spaces
//! (`outer suite fails with message`). A failing hook is reported under its own
//! title (`"before all" hook for "x"`) and counts as a failing test, as mocha counts
//! it. Complete = the `N passing` line was printed.

use super::util::{feed_lines, indent_and_body, strip_ansi, trim_duration, Collector};
use super::TextInput;
use crate::check::model::{Counts, Format, Outcome, ParsedRun};

/// Ends a failure block's message once its stack trace began (no line is added after).
const STACK_MARK: &str = "\u{0}";

#[derive(Default)]
struct State {
    c: Collector,
    stack: Vec<String>,
    summary: bool,
    in_failures: bool,
    block: Option<(Vec<String>, bool, String)>,
    /// `N passing`, `N pending`, `N failing` (a failing hook counts, as mocha counts it).
    tally: Counts,
}

impl State {
    fn flush(&mut self) {
        if let Some((parts, titled, mut msg)) = self.block.take() {
            if let Some(m) = msg.strip_suffix(STACK_MARK) {
                msg = m.to_string();
            }
            if titled || !parts.is_empty() {
                let id = parts.join(" ");
                if !self.c.is_failing(&id) {
                    self.c.record(&id, Outcome::Failed, None);
                }
                self.c.set_message(&id, &msg);
            }
        }
    }

    fn line(&mut self, raw: &str) {
        let line = strip_ansi(raw);
        let (indent, body) = indent_and_body(&line);
        if body.is_empty() {
            return;
        }
        if let Some(rest) = body.split_once(' ') {
            if rest.0.chars().all(|c| c.is_ascii_digit()) {
                let n: u64 = rest.0.parse().unwrap_or(0);
                match rest.1 {
                    r if r.starts_with("passing (") => {
                        self.summary = true;
                        self.tally.passed = n;
                        self.c.set_summary(self.tally);
                        return;
                    }
                    "pending" => {
                        self.tally.skipped = n;
                        self.c.set_summary(self.tally);
                        return;
                    }
                    "failing" => {
                        self.in_failures = true;
                        self.tally.failed = n;
                        self.c.set_summary(self.tally);
                        return;
                    }
                    _ => {}
                }
            }
        }
        if self.in_failures {
            if indent == 2 {
                if let Some((num, rest)) = body.split_once(") ") {
                    if !num.is_empty() && num.chars().all(|c| c.is_ascii_digit()) {
                        self.flush();
                        let (t, done) = match rest.strip_suffix(':') {
                            Some(t) => (t, true),
                            None => (rest, false),
                        };
                        self.block = Some((vec![t.to_string()], done, String::new()));
                        return;
                    }
                }
            }
            if let Some((parts, titled, msg)) = self.block.as_mut() {
                if !*titled {
                    match body.strip_suffix(':') {
                        Some(t) => {
                            parts.push(t.to_string());
                            *titled = true;
                        }
                        None => parts.push(body.to_string()),
                    }
                } else if body.starts_with("at ") || msg.ends_with(STACK_MARK) {
                    // the stack: locations move with every edit; the message (the
                    // assertion and its diff) is above it
                    if !msg.ends_with(STACK_MARK) {
                        msg.push_str(STACK_MARK);
                    }
                } else if msg.len() < 1024 {
                    msg.push_str(body);
                    msg.push('\n');
                }
            }
            return;
        }
        if indent < 2 {
            return;
        }
        let level = (indent - 2) / 2;
        self.stack.truncate(level);
        let (outcome, title) =
            if let Some(t) = body.strip_prefix("✔ ").or_else(|| body.strip_prefix("✓ ")) {
                (Some(Outcome::Passed), trim_duration(t))
            } else if let Some(t) = body.strip_prefix("- ") {
                (Some(Outcome::Skipped), t)
            } else if let Some((num, t)) = body.split_once(") ") {
                if !num.is_empty() && num.chars().all(|c| c.is_ascii_digit()) {
                    (Some(Outcome::Failed), t)
                } else {
                    (None, body)
                }
            } else {
                (None, body)
            };
        match outcome {
            Some(o) => {
                let mut parts = self.stack.clone();
                parts.push(title.to_string());
                self.c.record(&parts.join(" "), o, None);
            }
            None => {
                // dot-reporter mark lines are not describe titles
                if !body.chars().all(|c| ".!,".contains(c)) {
                    self.stack.push(body.to_string());
                }
            }
        }
    }
}

/// Parses mocha spec/dot output from stdout.
#[must_use]
pub fn parse(t: &TextInput) -> ParsedRun {
    let mut diagnostics = Vec::new();
    let mut st = State::default();
    feed_lines(t.stdout, &mut diagnostics, |l| st.line(l));
    st.flush();
    st.c.finish_text(
        Format::Mocha,
        "mocha",
        st.summary,
        None,
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
    fn spec_and_failure_blocks_share_ids() {
        let out = "\n  outer\n    ✔ a ... b (5ms)\n    1) bad\n    - later\n\n  1 passing (5ms)\n  1 pending\n  1 failing\n\n  1) outer\n       bad:\n     Error: x\n";
        let r = run(out);
        assert_eq!(r.tests.len(), 3);
        assert_eq!(
            r.failing().into_iter().collect::<Vec<_>>(),
            vec!["outer bad"]
        );
        assert_eq!(r.tests[1].message.as_deref(), Some("Error: x"));
        assert!(r.tests.iter().any(|t| t.id == "outer a ... b"));
        assert!(r.complete);
    }

    #[test]
    fn dot_reporter_names_failures_only() {
        let out = "\n  ..!\n\n  2 passing (1ms)\n  1 failing\n\n  1) suite\n       nested\n         deep:\n     TypeError: k\n";
        let r = run(out);
        assert_eq!(r.tests.len(), 1);
        assert_eq!(r.tests[0].id, "suite nested deep");
    }

    #[test]
    fn missing_summary_is_incomplete() {
        let r = run("\n  suite\n    ✔ a\n");
        assert!(!r.complete);
        assert_eq!(r.tests[0].id, "suite a");
    }

    /// mocha 12 on node 20: `assert.strictEqual` prints "Expected values to be strictly
    /// equal:" and the values on the lines after it; the message is those lines, not
    /// the stack below them.
    #[test]
    fn message_is_the_assertion_and_its_diff() {
        let out = "\n  1 passing (5ms)\n  1 failing\n\n  1) fails with message:\n\n      AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n2 !== 3\n\n      + expected - actual\n\n      -2\n      +3\n      \n      at Context.<anonymous> (mocha/demo.spec.js:4:49)\n      at process.processImmediate (node:internal/timers:483:21)\n\n";
        let r = run(out);
        assert_eq!(
            r.tests[0].message.as_deref(),
            Some("AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n2 !== 3\n+ expected - actual\n-2\n+3")
        );
    }
}
