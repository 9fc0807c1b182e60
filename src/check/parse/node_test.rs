//! `node --test` spec and dot reporters (node's TAP output goes to [`super::tap`]).
//!
//! Spec layout: `✔ name (1.2ms)`, `✖ name (1.2ms)`, `﹣ name (1.2ms) # reason`
//! (skipped), `✔ name (1.2ms) # TODO` (todo, counted as skipped); a suite or a test
//! with subtests opens with `▶ name` and closes with its own result line at the same
//! indent, children indented by two spaces; `ℹ tests N` / `ℹ suites S` counters end
//! the run and are followed by a `✖ failing tests:` recap (ignored).
//! Dot layout: a line of `.`/`X` marks, then `Failed tests:` and one `✖ name (ms)`
//! entry per failure (no nesting is shown).
//!
//! Ids are names joined with ` > ` along the `▶` nesting (as in the TAP reporter).
//! A `▶` group is either a `describe` suite (not a test) or a test with subtests
//! (a test). The output does not say which; node's `ℹ suites S` counter does say
//! how many are suites, and the first `S` groups opened are taken as the suites (a
//! heuristic: describe blocks usually enclose the file's other groups). The dot
//! reporter shows no counters, so every entry of its failure list is kept.
//! Complete = the `ℹ tests` counter was printed (spec) or the marks line and the
//! failure list were (dot).

use super::util::{feed_lines, indent_and_body, is_red, strip_ansi, Collector, RunEnd};
use super::TextInput;
use crate::check::model::{Format, Outcome, ParsedRun};
use regex::Regex;
use std::sync::OnceLock;

fn result_re() -> Option<&'static Regex> {
    static R: OnceLock<Option<Regex>> = OnceLock::new();
    R.get_or_init(|| Regex::new(r"^(✔|✖|﹣) (.+?) \([\d.]+m?s\)(?: # (.*))?$").ok())
        .as_ref()
}

/// One entry of the dot reporter's `Failed tests:` list.
struct DotEntry {
    id: String,
    /// `N` of a `'N subtest(s) failed'` message: the entry is a parent.
    subtests: Option<usize>,
    /// What ran this entry, from its stack: `Some(true)` a `describe` suite,
    /// `Some(false)` a test (or the file's root), `None` unknown.
    run_by_suite: Option<bool>,
}

/// Which kind of node test-runner object ran the test a stack frame belongs to, from
/// node's own frame names (`at Suite.processPendingSubtests (node:internal/...)`).
fn runner_frame(frame: &str) -> Option<bool> {
    if !frame.contains("(node:internal/test_runner/") {
        return None;
    }
    if frame.contains("Suite.processPendingSubtests (") || frame.contains("Suite.run (") {
        Some(true)
    } else if frame.contains("Test.processPendingSubtests (")
        || frame.contains("TestContext.test (")
    {
        Some(false)
    } else {
        None
    }
}

/// `N` of node's `'N subtest failed'` / `'N subtests failed'` parent message.
fn subtests_failed(body: &str) -> Option<usize> {
    let t = body.trim_matches('\'');
    let n = t
        .strip_suffix(" subtests failed")
        .or_else(|| t.strip_suffix(" subtest failed"))?;
    n.parse().ok()
}

/// The ids of the dot list's entries that are `describe` suites (see the module doc).
fn dot_suites(entries: &[DotEntry]) -> Vec<String> {
    let mut stack: Vec<usize> = Vec::new();
    let mut suites = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if let Some(n) = e.subtests.filter(|&n| n > 0 && n <= stack.len()) {
            let children = stack.split_off(stack.len() - n);
            let kinds: Vec<bool> = children
                .iter()
                .filter_map(|&c| entries[c].run_by_suite)
                .collect();
            if !kinds.is_empty() && kinds.iter().all(|&k| k) {
                suites.push(e.id.clone());
            }
        }
        stack.push(i);
    }
    suites
}

struct Group {
    indent: usize,
    name: String,
    path: String,
    order: usize,
}

/// Parses node spec/dot reporter output from stdout.
#[must_use]
pub fn parse(t: &TextInput) -> ParsedRun {
    let mut diagnostics = Vec::new();
    let mut c = Collector::with_listing(t.listing);
    let mut groups: Vec<Group> = Vec::new();
    let mut opened = 0usize;
    // (order, path) of closed groups: candidates to be suites
    let mut closed: Vec<(usize, String)> = Vec::new();
    let mut suites: Option<usize> = None;
    let mut summary = false;
    let mut dot_marks = false;
    let mut dot_list = false;
    let mut current: Option<(String, String)> = None;
    let mut dot_entries: Vec<DotEntry> = Vec::new();
    let mut file_entries: Vec<String> = Vec::new();
    let Some(re) = result_re() else {
        return c.finish(RunEnd {
            format: Format::Tap,
            runner: "node",
            complete: false,
            unattributed: true,
            red: true,
            message: Some("internal: node patterns failed to compile".into()),
            diagnostics,
        });
    };
    feed_lines(t.stdout, &mut diagnostics, |raw| {
        let line = strip_ansi(raw);
        let (indent, body) = indent_and_body(&line);
        if let Some(rest) = body.strip_prefix("ℹ ") {
            summary = true;
            if let Some(n) = rest.strip_prefix("suites ") {
                suites = n.trim().parse().ok();
            }
            return;
        }
        if summary {
            return;
        }
        if !body.is_empty() && body.chars().all(|ch| ch == '.' || ch == 'X') {
            dot_marks = true;
            return;
        }
        if body == "Failed tests:" {
            dot_list = true;
            return;
        }
        if let Some(name) = body.strip_prefix("▶ ") {
            groups.retain(|g| g.indent < indent);
            let parent = groups.last().map(|g| g.path.clone());
            let path = match parent {
                Some(p) => format!("{p} > {name}"),
                None => name.to_string(),
            };
            groups.push(Group {
                indent,
                name: name.to_string(),
                path,
                order: opened,
            });
            opened += 1;
            return;
        }
        if let Some(m) = re.captures(body) {
            if let Some((id, msg)) = current.take() {
                c.set_message(&id, &msg);
            }
            let name = &m[2];
            let directive = m.get(3).map_or("", |d| d.as_str()).to_ascii_uppercase();
            let o = match &m[1] {
                "﹣" => Outcome::Skipped,
                _ if directive.starts_with("TODO") || directive.starts_with("SKIP") => {
                    Outcome::Skipped
                }
                "✔" => Outcome::Passed,
                _ => Outcome::Failed,
            };
            if dot_list && indent == 0 {
                c.record(name, o, None);
                if super::tap::is_script_path(name) {
                    file_entries.push(name.to_string());
                }
                dot_entries.push(DotEntry {
                    id: name.to_string(),
                    subtests: None,
                    run_by_suite: None,
                });
                current = Some((name.to_string(), String::new()));
                return;
            }
            if indent == 0 && groups.is_empty() && super::tap::is_script_path(name) {
                file_entries.push(name.to_string());
            }
            groups.retain(|g| g.indent <= indent);
            let closes = groups
                .last()
                .is_some_and(|g| g.indent == indent && g.name == name);
            let id = if closes {
                let g = groups.pop();
                let (order, path) = g.map_or((0, name.to_string()), |g| (g.order, g.path));
                closed.push((order, path.clone()));
                path
            } else {
                match groups.last() {
                    Some(g) => format!("{} > {name}", g.path),
                    None => name.to_string(),
                }
            };
            c.record(&id, o, None);
            current = Some((id, String::new()));
            return;
        }
        if dot_list {
            if let Some(e) = dot_entries.last_mut() {
                if e.subtests.is_none() {
                    e.subtests = subtests_failed(body);
                }
                if e.run_by_suite.is_none() && body.starts_with("at ") {
                    e.run_by_suite = runner_frame(body);
                }
            }
        }
        if let Some((_, msg)) = current.as_mut() {
            if msg.len() < 1024 && !body.is_empty() && !body.starts_with("at ") {
                msg.push_str(body);
                msg.push('\n');
            }
        }
    });
    if let Some((id, msg)) = current.take() {
        c.set_message(&id, &msg);
    }
    if let Some(s) = suites {
        closed.sort();
        for (_, path) in closed.iter().take(s) {
            c.remove(path);
        }
    }
    for id in dot_suites(&dot_entries) {
        c.remove(&id);
    }
    let mut file_failure: Option<String> = None;
    for id in &file_entries {
        if let Some(r) = c.take(id) {
            let failed = r.outcome.is_failing();
            diagnostics.push(super::tap::file_entry_note(id, failed));
            if failed && file_failure.is_none() {
                file_failure = Some(r.message.unwrap_or_else(|| format!("{id} failed")));
            }
        }
    }
    let complete =
        file_entries.is_empty() && (summary || (dot_marks && (dot_list || !is_red(t.exit_code))));
    c.finish_text(
        Format::Tap,
        "node",
        complete,
        file_failure,
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
    fn spec_groups_suites_and_directives() {
        let out = "✔ a # b (1.0ms)\n﹣ s (0.1ms) # later\n✔ t (0.1ms) # TODO\n▶ suite\n  ✖ x (0.2ms)\n    Error: boom\n✖ suite (0.3ms)\n▶ parent\n  ✔ y (0.1ms)\n✔ parent (0.2ms)\nℹ tests 5\nℹ suites 1\n✖ failing tests:\n✖ x (0.2ms)\n";
        let r = run(out);
        let ids: Vec<_> = r.tests.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(
            ids,
            vec!["a # b", "s", "t", "suite > x", "parent > y", "parent"]
        );
        assert_eq!(
            r.failing().into_iter().collect::<Vec<_>>(),
            vec!["suite > x"]
        );
        assert_eq!(r.tests[3].message.as_deref(), Some("Error: boom"));
        assert!(r.complete);
    }

    /// The dot reporter's failure list: a `describe` suite and a parent test both fail
    /// with `'1 subtest failed'`; the suite's child was run by node's `Suite` frames.
    #[test]
    fn dot_list_drops_suites_keeps_parent_tests() {
        let out = ".XX.XX\n\nFailed tests:\n\n✖ inner fail (0.2ms)\n  AssertionError [ERR_ASSERTION]: inner broke\n      at TestContext.<anonymous> (file:///w/d.test.mjs:13:35)\n      at Test.run (node:internal/test_runner/test:796:25)\n      at Suite.processPendingSubtests (node:internal/test_runner/test:526:18)\n✖ outer suite (1.2ms)\n  '1 subtest failed'\n✖ sub fail (1.2ms)\n  AssertionError [ERR_ASSERTION]: no\n      at Test.run (node:internal/test_runner/test:796:25)\n      at Test.start (node:internal/test_runner/test:702:17)\n      at TestContext.test (node:internal/test_runner/test:292:20)\n      at async Suite.run (node:internal/test_runner/test:1135:7)\n✖ parent (1.9ms)\n  '1 subtest failed'\n✖ mystery (1.9ms)\n  '1 subtest failed'\n";
        let r = run(out);
        let failing: Vec<_> = r.failing().into_iter().collect();
        assert_eq!(failing, vec!["inner fail", "mystery", "parent", "sub fail"]);
        assert!(r.complete);
    }

    /// `node --test --test-reporter=spec` with `process.exit(0)` in a test file: the
    /// file is the only result line (node 20.20).
    #[test]
    fn spec_file_result_means_the_run_ended_early() {
        let out = "✔ /w/exit.test.mjs (835.9ms)\nℹ tests 1\nℹ suites 0\nℹ pass 1\nℹ fail 0\n";
        let r = run_text(parse, Some(out.as_bytes()), None, Some(0));
        assert!(r.tests.is_empty() && !r.complete && !r.unattributed_failure);
        let out = "✖ /w/bad.test.mjs (5.1ms)\n  Error: Cannot find module 'x'\n✔ fine (0.1ms)\nℹ tests 2\n";
        let r = run(out);
        assert!(!r.complete && r.unattributed_failure);
        assert_eq!(r.passing().into_iter().collect::<Vec<_>>(), vec!["fine"]);
    }
}
