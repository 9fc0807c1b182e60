//! jest's default and `--verbose` reporters (written to stderr), `--listTests`.
//!
//! Layout (jest's DefaultReporter/VerboseReporter): per test file a `PASS|FAIL
//! <path>` header; with `--verbose` a tree of `✓ title (N ms)` / `✕ title` /
//! `○ skipped title` / `✎ todo title` lines, describe blocks as unmarked lines, two
//! spaces of indent per level; then `● describe › title` failure blocks; finally
//! `Test Suites: ...` and `Tests: ...` summary lines.
//!
//! Ids are `<file> › <describe> › ... › <title>`, the same in both reporters, so a
//! test named in the verbose tree and in a `●` block is one entry. `● Console` blocks
//! are console output, not tests. `● Test suite failed to run` is a file that did not
//! load: an unattributed failure that also makes the run incomplete (its tests never
//! ran). Complete = the `Tests:` summary line was printed and every file loaded.

use super::util::{feed_lines, strip_ansi, trim_duration, Collector, Group};
use super::TextInput;
use crate::check::model::{Format, Outcome, ParsedRun};

#[derive(Default)]
struct State {
    c: Collector,
    file: Option<String>,
    stack: Vec<String>,
    in_failures: bool,
    failure: Option<(String, String)>,
    summary: bool,
    suite_failed: Option<String>,
}

impl State {
    fn id(&self, path: &str) -> String {
        match &self.file {
            Some(f) => format!("{f} › {path}"),
            None => path.to_string(),
        }
    }

    fn flush_failure(&mut self) {
        if let Some((id, msg)) = self.failure.take() {
            self.c.set_message(&id, &msg);
        }
    }

    fn line(&mut self, raw: &str) {
        let line = strip_ansi(raw);
        let line = line.trim_end();
        if let Some(rest) = line
            .strip_prefix("PASS ")
            .or_else(|| line.strip_prefix("FAIL "))
        {
            self.flush_failure();
            let file = rest.split_whitespace().next().unwrap_or(rest);
            self.file = Some(file.to_string());
            self.stack.clear();
            self.in_failures = false;
            return;
        }
        if line.starts_with("Tests:") {
            self.flush_failure();
            self.summary = true;
            // `Tests: 4 failed, 1 skipped, 1 todo, 8 passed, 14 total`
            if let Some(c) = super::util::tally(line, false, |w| match w {
                "passed" => Group::Passed,
                "failed" => Group::Failed,
                "skipped" | "todo" | "pending" => Group::Skipped,
                "flaky" => Group::Flaky,
                _ => Group::Other,
            }) {
                self.c.set_summary(c);
            }
            self.file = None;
            return;
        }
        if line.starts_with("Test Suites:") || line.starts_with("Snapshots:") {
            self.flush_failure();
            self.file = None;
            return;
        }
        if self.file.is_none() {
            return;
        }
        if let Some(title) = line.strip_prefix("  ● ") {
            self.flush_failure();
            self.in_failures = true;
            let title = title.trim();
            if title == "Console" {
                return;
            }
            if title == "Test suite failed to run" {
                let f = self.file.clone().unwrap_or_default();
                self.suite_failed
                    .get_or_insert(format!("{f}: test suite failed to run"));
                return;
            }
            let id = self.id(title);
            if !self.c.is_failing(&id) {
                self.c.record(&id, Outcome::Failed, None);
            }
            self.failure = Some((id, String::new()));
            return;
        }
        if self.in_failures {
            if let Some((_, msg)) = self.failure.as_mut() {
                let t = line.trim();
                if !t.is_empty()
                    && msg.len() < 1024
                    && !t.starts_with('>')
                    && !t.starts_with('|')
                    && !t.chars().next().is_some_and(|c| c.is_ascii_digit())
                {
                    msg.push_str(t);
                    msg.push('\n');
                }
            }
            return;
        }
        // verbose tree
        let indent = line.len() - line.trim_start().len();
        let body = line.trim_start();
        if indent < 2 || body.is_empty() {
            return;
        }
        let level = (indent - 2) / 2;
        let (outcome, title) =
            if let Some(t) = body.strip_prefix("✓ ").or_else(|| body.strip_prefix("√ ")) {
                (Some(Outcome::Passed), t)
            } else if let Some(t) = body.strip_prefix("✕ ").or_else(|| body.strip_prefix("× ")) {
                (Some(Outcome::Failed), t)
            } else if let Some(t) = body.strip_prefix("○ ") {
                (
                    Some(Outcome::Skipped),
                    t.strip_prefix("skipped ").unwrap_or(t),
                )
            } else if let Some(t) = body.strip_prefix("✎ ") {
                (Some(Outcome::Skipped), t.strip_prefix("todo ").unwrap_or(t))
            } else {
                (None, body)
            };
        self.stack.truncate(level);
        match outcome {
            Some(o) => {
                let title = trim_duration(title);
                let mut path = self.stack.clone();
                path.push(title.to_string());
                let id = self.id(&path.join(" › "));
                self.c.record(&id, o, None);
            }
            None => self.stack.push(title.to_string()),
        }
    }
}

/// Parses jest reporter output (stderr, then stdout).
#[must_use]
pub fn parse(t: &TextInput) -> ParsedRun {
    let mut diagnostics = Vec::new();
    let mut st = State::default();
    for s in [t.stderr, t.stdout] {
        feed_lines(s, &mut diagnostics, |l| st.line(l));
        st.flush_failure();
        st.file = None;
    }
    let complete = st.summary && st.suite_failed.is_none();
    st.c.finish_text(
        Format::Jest,
        "jest",
        complete,
        st.suite_failed,
        t.exit_code,
        diagnostics,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::parse::util::run_text;

    fn run(stderr: &str, exit: i32) -> ParsedRun {
        run_text(parse, None, Some(stderr.as_bytes()), Some(exit))
    }

    #[test]
    fn verbose_tree_and_failure_blocks_agree() {
        let err = "FAIL a.test.js\n  ✓ x › y and ... z (3 ms)\n  outer\n    ✕ inner (1 ms)\n  ○ skipped s\n\n  ● outer › inner\n\n    expect(received).toBe(expected)\n\n  ● Console\n\nTests: 1 failed, 1 skipped, 1 passed, 3 total\n";
        let r = run(err, 1);
        assert_eq!(r.tests.len(), 3, "{:?}", r.tests);
        assert_eq!(
            r.failing().into_iter().collect::<Vec<_>>(),
            vec!["a.test.js › outer › inner"]
        );
        assert!(r
            .tests
            .iter()
            .any(|t| t.id == "a.test.js › x › y and ... z"));
        assert!(r.complete);
        assert!(r.tests[1].message.as_deref().unwrap_or("").contains("toBe"));
    }

    #[test]
    fn suite_failed_to_run_is_unattributed() {
        let err =
            "FAIL b.test.js\n  ● Test suite failed to run\n\n    SyntaxError\n\nTests: 0 total\n";
        let r = run(err, 1);
        assert!(r.unattributed_failure && !r.complete);
    }

    #[test]
    fn missing_summary_is_incomplete() {
        let r = run("PASS a.test.js\n  ✓ x (1 ms)\n", 0);
        assert!(!r.complete && !r.unattributed_failure);
        assert_eq!(r.tests.len(), 1);
    }
}
