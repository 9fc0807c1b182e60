//! TAP 12/13 (Test Anything Protocol, testanything.org), as written by raw TAP
//! producers, `node --test` (tap reporter and its default on a non-TTY), mocha's
//! and vitest's tap reporters, and perl's `prove` (plain and `-v`).
//!
//! Test points: `ok|not ok [N] [-] description [# SKIP|TODO reason]`; `\#` is an
//! escaped `#`. A `# SKIP` point and any `# TODO` point are skipped. Nesting: node
//! announces subtests with `# Subtest: name` and indents them by four spaces, the
//! parent's own point following its children; vitest opens a group with a point
//! ending in `{` and closes it with `}`. Group points are not tests: vitest groups,
//! and node points whose YAML says `type: 'suite'`; a node parent test (a test
//! with subtests) stays a test. YAML diagnostics (`---` ... `...`) give the message
//! (`message:` when present) and are never read as test points.
//!
//! Ids: nested names joined with ` > `; a point without description is `#N`. Under
//! prove each file's section (`t/x.t ..... `) prefixes its ids (`t/x.t::name`,
//! `t/x.t#6`), and the summary report's `Failed tests: 2, 7` names the failing
//! points by number when the verbose lines are absent.
//!
//! Complete = every plan seen matches the number of top-level points, and nothing
//! bailed out; `Bail out!`, prove's `Bailout called` and `Parse errors` (bad plan)
//! make the run incomplete and unattributed (planned tests never reported).

use super::util::{feed_lines, indent_and_body, is_red, strip_ansi, Collector, RunEnd};
use super::TextInput;
use crate::check::model::{Format, Outcome, ParsedRun};
use regex::Regex;
use std::collections::HashMap;
use std::sync::OnceLock;

struct Res {
    point: Regex,
    plan: Regex,
    prove_file: Regex,
    prove_report: Regex,
    failed_list: Regex,
}

fn res() -> Option<&'static Res> {
    static R: OnceLock<Option<Res>> = OnceLock::new();
    R.get_or_init(|| {
        Some(Res {
            point: Regex::new(r"^( *)(not ok|ok)\b(?: (\d+))?(?: -)?(?: (.*))?$").ok()?,
            plan: Regex::new(r"^( *)1\.\.(\d+)(\s*#.*)?$").ok()?,
            prove_file: Regex::new(r"^(\S+) \.{2,} ?(.*)$").ok()?,
            prove_report: Regex::new(r"^(\S+)\s+\(Wstat: \d+").ok()?,
            failed_list: Regex::new(r"^\s+Failed tests?:\s+([\d, \-]+)$").ok()?,
        })
    })
    .as_ref()
}

/// Splits a point's text into (description, directive) at the first unescaped ` # `
/// (or a leading `# `); `\#` is unescaped in the description.
fn split_directive(text: &str) -> (String, Option<String>) {
    let mut desc = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\\' && chars.peek().map(|p| p.1) == Some('#') {
            desc.push('#');
            chars.next();
            continue;
        }
        if c == '#' && (i == 0 || text[..i].ends_with(' ')) {
            return (
                desc.trim().to_string(),
                Some(text[i + 1..].trim().to_string()),
            );
        }
        desc.push(c);
    }
    (desc.trim().to_string(), None)
}

struct Header {
    indent: usize,
    name: String,
    has_children: bool,
}

#[derive(Default)]
struct State {
    c: Collector,
    headers: Vec<Header>,
    braces: Vec<(usize, String)>,
    file: Option<String>,
    numbers: HashMap<(String, u64), String>,
    top_points: usize,
    plans: Vec<usize>,
    file_plan_bad: bool,
    bail: Option<String>,
    in_yaml: Option<usize>,
    yaml_for: Option<String>,
    yaml_msg: String,
    yaml_message_key: Option<String>,
    last_parent: Option<String>,
    saw_point: bool,
    prove_summary: bool,
    report_file: Option<String>,
    /// Ids of node's file-level points (see [`is_script_path`]).
    file_entries: Vec<String>,
    /// A test file reported no test of its own (see [`is_script_path`]).
    ended_early: bool,
    /// prove's verdict lines of files whose points were not printed (plain `prove`:
    /// `t/add.t .. ok`), each recorded as a test named by the file.
    file_verdicts: usize,
    /// prove's closing tally (`Files=1, Tests=2, …`) was seen: the run reached its end.
    prove_ended: bool,
}

impl State {
    fn end_file(&mut self) {
        self.check_plan();
        self.top_points = 0;
        self.plans.clear();
        self.headers.clear();
        self.braces.clear();
    }

    /// prove's verdict on the current file (`ok`, `skipped: reason`): after verbose
    /// output it only repeats what the points said; without points (plain `prove`)
    /// it is the file's one result, recorded under the file's name.
    fn file_verdict(&mut self, verdict: &str) {
        let Some(file) = self.file.clone() else {
            return;
        };
        if self.top_points == 0 && self.plans.is_empty() {
            let o = if verdict == "ok" {
                Outcome::Passed
            } else {
                Outcome::Skipped
            };
            self.c.record(&file, o, None);
            self.file_verdicts += 1;
        }
    }

    fn check_plan(&mut self) {
        match self.plans.as_slice() {
            [] => {
                if self.top_points > 0 {
                    self.file_plan_bad = true;
                }
            }
            [n] => {
                if *n != self.top_points {
                    self.file_plan_bad = true;
                }
            }
            _ => self.file_plan_bad = true,
        }
    }

    fn close_yaml(&mut self) {
        if let Some(id) = self.yaml_for.take() {
            let msg = self
                .yaml_message_key
                .take()
                .unwrap_or_else(|| std::mem::take(&mut self.yaml_msg));
            self.c.set_message(&id, &msg);
        }
        self.yaml_msg.clear();
        self.yaml_message_key = None;
        self.in_yaml = None;
    }

    fn line(&mut self, r: &Res, raw: &str) {
        let line = strip_ansi(raw);
        let line = line.trim_end();
        let (indent, body) = indent_and_body(line);
        if let Some(yi) = self.in_yaml {
            if body == "..." && indent <= yi + 2 {
                self.close_yaml();
            } else {
                if body == "type: 'suite'" || body == "type: suite" {
                    if let Some(p) = self.last_parent.take() {
                        self.c.remove(&p);
                        self.yaml_for = None;
                    }
                }
                if let Some(m) = body.strip_prefix("message:") {
                    let m = m.trim().trim_matches(['\'', '"']);
                    if !m.is_empty() && self.yaml_message_key.is_none() {
                        self.yaml_message_key = Some(m.to_string());
                    }
                } else if self.yaml_msg.len() < 1024 && !body.is_empty() {
                    self.yaml_msg.push_str(body);
                    self.yaml_msg.push('\n');
                }
            }
            return;
        }
        if body == "---" && self.saw_point {
            self.in_yaml = Some(indent);
            return;
        }
        if self.prove_summary {
            if let Some(m) = r.prove_report.captures(line) {
                self.report_file = Some(m[1].to_string());
            } else if let Some(m) = r.failed_list.captures(line) {
                let file = self.report_file.clone().unwrap_or_default();
                for n in expand_numbers(&m[1]) {
                    let id = self
                        .numbers
                        .get(&(file.clone(), n))
                        .cloned()
                        .unwrap_or_else(|| format!("{file}#{n}"));
                    if !self.c.is_failing(&id) {
                        self.c.record(&id, Outcome::Failed, None);
                    }
                }
            } else if line.contains("Parse errors:") {
                self.bail.get_or_insert_with(|| line.trim().to_string());
            }
            return;
        }
        if line.starts_with("Files=") && line.contains(", Tests=") {
            self.prove_ended = true;
            return;
        }
        if line == "Test Summary Report" {
            self.end_file();
            self.prove_summary = true;
            return;
        }
        if let Some(rest) = body.strip_prefix("Bail out!") {
            self.bail
                .get_or_insert_with(|| format!("Bail out! {}", rest.trim()));
            return;
        }
        if body.starts_with("Bailout called.") {
            self.bail.get_or_insert_with(|| body.to_string());
            return;
        }
        if indent == 0 && self.file.is_some() && (line == "ok" || line.starts_with("skipped:")) {
            self.file_verdict(line);
            return;
        }
        if indent == 0 {
            if let Some(m) = r.prove_file.captures(line) {
                if !line.starts_with("ok")
                    && !line.starts_with("not ok")
                    && m[1].contains(['/', '.'])
                {
                    self.end_file();
                    self.file = Some(m[1].to_string());
                    let verdict = m[2].trim();
                    if verdict == "ok" || verdict.starts_with("skipped:") {
                        self.file_verdict(verdict);
                    }
                    return;
                }
            }
        }
        if let Some(name) = body.strip_prefix("# Subtest: ") {
            self.headers.retain(|h| h.indent < indent);
            self.headers.push(Header {
                indent,
                name: name.trim().to_string(),
                has_children: false,
            });
            return;
        }
        if body == "}" {
            self.braces.retain(|(i, _)| *i < indent);
            return;
        }
        if let Some(m) = r.plan.captures(line) {
            if m[1].is_empty() && self.braces.is_empty() {
                self.plans.push(m[2].parse().unwrap_or(0));
            }
            return;
        }
        let Some(m) = r.point.captures(line) else {
            return;
        };
        self.saw_point = true;
        let ok = &m[2] == "ok";
        let num: Option<u64> = m.get(3).and_then(|n| n.as_str().parse().ok());
        let text = m.get(4).map_or("", |t| t.as_str());
        let (group, text) = match text.strip_suffix('{') {
            Some(t) => (true, t.trim_end()),
            None => (false, text),
        };
        let (desc, directive) = split_directive(text);
        let dir = directive.unwrap_or_default();
        let dir_up = dir.to_ascii_uppercase();
        let outcome = if dir_up.starts_with("SKIP") || dir_up.starts_with("TODO") {
            Outcome::Skipped
        } else if ok {
            Outcome::Passed
        } else {
            Outcome::Failed
        };
        if indent == 0 {
            self.top_points += 1;
        }
        let own = if desc.is_empty() {
            format!("#{}", num.unwrap_or(0))
        } else {
            desc.clone()
        };
        if group {
            self.braces.retain(|(i, _)| *i < indent);
            self.braces.push((indent, own));
            return;
        }
        // node: children were announced under headers deeper than this point
        self.headers.retain(|h| h.indent <= indent);
        let mut had_children = false;
        let mut announced = false;
        if self.headers.last().is_some_and(|h| h.indent == indent) {
            let h = self.headers.pop();
            had_children = h.as_ref().is_some_and(|h| h.has_children);
            announced = h.is_some_and(|h| h.name == desc);
        }
        let file_entry = indent == 0
            && announced
            && !had_children
            && self.file.is_none()
            && self.braces.is_empty()
            && is_script_path(&desc);
        for h in &mut self.headers {
            h.has_children = true;
        }
        let mut parts: Vec<String> = self.braces.iter().map(|(_, n)| n.clone()).collect();
        parts.extend(self.headers.iter().map(|h| h.name.clone()));
        parts.push(own);
        let path = parts.join(" > ");
        let id = match (&self.file, desc.is_empty()) {
            (Some(f), true) => format!("{f}{path}"),
            (Some(f), false) => format!("{f}::{path}"),
            (None, _) => path,
        };
        let id = self.c.record_distinct(&id, outcome, None);
        if let (Some(f), Some(n)) = (&self.file, num) {
            self.numbers.insert((f.clone(), n), id.clone());
        }
        if file_entry {
            self.file_entries.push(id.clone());
        }
        self.last_parent = had_children.then(|| id.clone());
        self.yaml_for = Some(id);
    }
}

/// True for a point named by a JavaScript/TypeScript file path. `node --test` runs
/// each file in its own process and lists that file's tests at the top level; it
/// reports the file itself as a point only when the process gave it no test results
/// (a `process.exit()` inside a test file, a file that fails to load, a file that
/// defines no test). Such a point is not a test: the file's tests never reported, so
/// the run ended early (incomplete), and a failing one is an unattributed failure.
pub(crate) fn is_script_path(name: &str) -> bool {
    const EXT: [&str; 8] = [".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx"];
    name.contains(['/', '\\']) && !name.contains(' ') && EXT.iter().any(|e| name.ends_with(e))
}

/// The diagnostic for a file-level point of `node --test` (see [`is_script_path`]).
pub(crate) fn file_entry_note(file: &str, failed: bool) -> String {
    if failed {
        format!("test file {file} failed before reporting any test (it did not load?); its tests never ran")
    } else {
        format!("test file {file} reported no test results (process.exit() inside a test, or no tests defined); the run ended early")
    }
}

/// Expands `2, 7` and `3-5` number lists from prove's summary report.
fn expand_numbers(list: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for part in list.split(',') {
        let part = part.trim();
        if let Some((a, b)) = part.split_once('-') {
            if let (Ok(a), Ok(b)) = (a.trim().parse::<u64>(), b.trim().parse::<u64>()) {
                out.extend((a..=b).take(10_000));
            }
        } else if let Ok(n) = part.parse() {
            out.push(n);
        }
    }
    out
}

/// Parses TAP from stdout (prove's bail-out notice on stderr is also read).
#[must_use]
pub fn parse(t: &TextInput) -> ParsedRun {
    let mut diagnostics = Vec::new();
    let mut st = State::default();
    if let Some(r) = res() {
        feed_lines(t.stdout, &mut diagnostics, |l| st.line(r, l));
    }
    if st.in_yaml.is_some() {
        st.close_yaml();
    }
    if !st.prove_summary {
        st.end_file();
    }
    feed_lines(t.stderr, &mut diagnostics, |l| {
        if l.contains("Further testing stopped") {
            st.bail.get_or_insert_with(|| l.trim().to_string());
        }
    });
    // node's file-level points: the file reported no test of its own
    let mut file_failure: Option<String> = None;
    for id in std::mem::take(&mut st.file_entries) {
        if let Some(t) = st.c.take(&id) {
            diagnostics.push(file_entry_note(&id, t.outcome.is_failing()));
            if t.outcome.is_failing() && file_failure.is_none() {
                file_failure = Some(t.message.unwrap_or_else(|| format!("{id} failed")));
            }
            st.ended_early = true;
        }
    }
    let complete = st.bail.is_none()
        && !st.file_plan_bad
        && !st.ended_early
        && (st.saw_point || st.prove_summary || (st.file_verdicts > 0 && st.prove_ended));
    let unattributed = st.bail.is_some()
        || file_failure.is_some()
        || (st.file_plan_bad && st.saw_point && is_red(t.exit_code) && !st.c.any_failing());
    st.c.finish(RunEnd {
        format: Format::Tap,
        runner: "tap",
        complete,
        unattributed,
        red: is_red(t.exit_code),
        message: st.bail.or(file_failure),
        diagnostics,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::parse::util::{outcome_of, run_text};

    fn run(stdout: &str, exit: i32) -> ParsedRun {
        run_text(parse, Some(stdout.as_bytes()), None, Some(exit))
    }

    /// A green `prove -v` ends each file with prove's own `ok`, and a green plain
    /// `prove` prints only `t/add.t .. ok`: neither is a test point, and both runs are
    /// complete (a fresh review's honest fix was halted as incomplete).
    #[test]
    fn green_prove_runs_verbose_and_plain() {
        let tail = "All tests successful.\nFiles=2, Tests=3,  0 wallclock secs ( 0.02 usr  0.02 sys +  0.02 cusr  0.04 csys =  0.10 CPU)\nResult: PASS\n";
        let verbose = format!("t/add.t .. \n1..2\nok 1 - adds positives\nok 2 - adds negatives\nok\nt/sub.t .. \n1..1\nok 1 - subtracts\nok\n{tail}");
        let p = run(&verbose, 0);
        assert!(p.complete, "{p:?}");
        let ids: Vec<&str> = p.tests.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "t/add.t::adds positives",
                "t/add.t::adds negatives",
                "t/sub.t::subtracts"
            ]
        );
        let plain =
            format!("t/add.t .. ok\nt/skip.t .. skipped: no database\nt/sub.t .. \nok\n{tail}");
        let p = run(&plain, 0);
        assert!(p.complete, "{p:?}");
        assert_eq!(outcome_of(&p, "t/add.t"), Some(Outcome::Passed));
        assert_eq!(outcome_of(&p, "t/skip.t"), Some(Outcome::Skipped));
        assert_eq!(outcome_of(&p, "t/sub.t"), Some(Outcome::Passed));
        // cut short before prove's tally: not complete
        assert!(!run("t/add.t .. ok\n", 0).complete);
    }

    #[test]
    fn raw_tap_directives_escapes_and_yaml() {
        let out = "TAP version 13\n1..5\nok 1 - a\nnot ok 2 - b\n  ---\n  message: 'want 3'\n  found: ok 9 - fake\n  ...\nnot ok 3 - c # TODO later\nok 4 x \\# y\nok 5\n";
        let r = run(out, 0);
        assert_eq!(outcome_of(&r, "b"), Some(Outcome::Failed));
        assert_eq!(outcome_of(&r, "c"), Some(Outcome::Skipped));
        assert_eq!(outcome_of(&r, "x # y"), Some(Outcome::Passed));
        assert_eq!(outcome_of(&r, "#5"), Some(Outcome::Passed));
        assert_eq!(r.tests.len(), 5);
        assert_eq!(r.tests[1].message.as_deref(), Some("want 3"));
        assert!(r.complete);
    }

    #[test]
    fn short_plan_and_bail_out_are_incomplete() {
        let r = run("1..3\nok 1 - a\n", 1);
        assert!(!r.complete && r.unattributed_failure);
        let r = run("1..3\nok 1 - a\nBail out! db down\n", 1);
        assert!(!r.complete && r.unattributed_failure);
    }

    #[test]
    fn node_suites_are_dropped_parent_tests_kept() {
        let out = "TAP version 13\n# Subtest: s\n    # Subtest: a\n    ok 1 - a\n      ---\n      ...\n    1..1\nok 1 - s\n  ---\n  type: 'suite'\n  ...\n# Subtest: p\n    # Subtest: c\n    not ok 1 - c\n    1..1\nnot ok 2 - p\n  ---\n  ...\n1..2\n";
        let r = run(out, 1);
        let ids: Vec<_> = r.tests.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, vec!["s > a", "p > c", "p"]);
        assert!(r.complete);
    }

    #[test]
    fn vitest_groups_are_not_tests() {
        let out = "TAP version 13\n1..1\nnot ok 1 - f.js # time=1ms {\n    1..1\n    not ok 1 - t # time=1ms\n}\n";
        let r = run(out, 1);
        assert_eq!(r.tests.len(), 1);
        assert_eq!(r.tests[0].id, "f.js > t");
    }

    /// `node --test` with `process.exit(0)` inside a test file: node reports the file
    /// as one passing point and none of its tests (node 20.20, default TAP reporter).
    #[test]
    fn node_file_point_means_the_run_ended_early() {
        let out = "TAP version 13\n# Subtest: /w/exit.test.mjs\nok 1 - /w/exit.test.mjs\n  ---\n  duration_ms: 821.77\n  ...\n1..1\n# tests 1\n# suites 0\n# pass 1\n# fail 0\n";
        let r = run(out, 0);
        assert!(r.tests.is_empty(), "{:?}", r.tests);
        assert!(!r.complete && !r.unattributed_failure);
        assert!(r.diagnostics.iter().any(|d| d.contains("/w/exit.test.mjs")));
        // a file that fails to load: its error is an unattributed failure
        let out = "TAP version 13\n# Subtest: /w/bad.test.mjs\nnot ok 1 - /w/bad.test.mjs\n  ---\n  error: 'Cannot find module x'\n  ...\n# Subtest: ok one\nok 2 - ok one\n1..2\n";
        let r = run(out, 1);
        assert!(!r.complete && r.unattributed_failure);
        assert_eq!(
            r.failing().into_iter().collect::<Vec<_>>(),
            vec!["tap::<unattributed>"]
        );
        assert_eq!(r.passing().into_iter().collect::<Vec<_>>(), vec!["ok one"]);
        // a test whose name merely mentions a file is a test
        let r = run(
            "TAP version 13\n# Subtest: reads a/b.js\nok 1 - reads a/b.js\n1..1\n",
            0,
        );
        assert_eq!(r.tests.len(), 1);
        assert!(r.complete);
    }
}
