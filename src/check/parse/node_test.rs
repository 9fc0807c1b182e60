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
    let mut c = Collector::new();
    let mut groups: Vec<Group> = Vec::new();
    let mut opened = 0usize;
    // (order, path) of closed groups: candidates to be suites
    let mut closed: Vec<(usize, String)> = Vec::new();
    let mut suites: Option<usize> = None;
    let mut summary = false;
    let mut dot_marks = false;
    let mut dot_list = false;
    let mut current: Option<(String, String)> = None;
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
                current = Some((name.to_string(), String::new()));
                return;
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
    let complete = summary || (dot_marks && (dot_list || !is_red(t.exit_code)));
    c.finish_text(
        Format::Tap,
        "node",
        complete,
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
}
