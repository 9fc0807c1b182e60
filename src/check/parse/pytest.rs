//! pytest terminal output: plain progress, `-v`/`-vv` (`nodeid STATUS [ pct%]`),
//! `-q`, `-rA`, `--color`, pytest-xdist (`[gwN] [ pct%] STATUS nodeid`),
//! pytest-rerunfailures (`RERUN`), `--collect-only`, collection errors and runs that
//! select nothing.
//!
//! Layout (pytest's terminal reporter): a `test session starts` banner, the
//! progress area, `=== NAME ===` sections (ERRORS, FAILURES, PASSES, ...), the
//! `short test summary info` section with `STATUS nodeid[ - message]` lines, and a
//! final `N failed, M passed, ... in Xs` line (with `=` padding unless `-q`).
//!
//! Rules: ids are node ids as printed (escapes kept literally). Progress-area status
//! lines are only read before the first section banner and summary lines only inside
//! the summary section, so captured output cannot add tests. Within one attempt a
//! failing report dominates (`PASSED` at call then `ERROR` at teardown is an error);
//! `RERUN` ends an attempt, and a test whose final attempt passed after a rerun is
//! `flaky_passed`. `XPASS` counts as passed, `XFAIL` as skipped. Summary lines naming
//! a file without `::` (collection errors) are not tests: they make the run
//! unattributed. Complete = the final count line was printed and the session was
//! not interrupted. Exit code 5 (nothing collected/selected) is not a failure.

use super::util::{feed_lines, strip_ansi, Collector, RunEnd};
use super::TextInput;
use crate::check::model::{Format, Outcome, ParsedRun};
use regex::Regex;
use std::collections::HashMap;
use std::sync::OnceLock;

struct Res {
    verbose: Regex,
    xdist: Regex,
    summary: Regex,
    bare_status: Regex,
    banner: Regex,
    final_line: Regex,
}

fn res() -> Option<&'static Res> {
    static R: OnceLock<Option<Res>> = OnceLock::new();
    R.get_or_init(|| {
        Some(Res {
            // any upper-case result word: plugins add their own (SUBFAIL, SUBPASS)
            verbose: Regex::new(
                r"^(\S.*?) ([A-Z][A-Z_]{2,})(?: \(.*\))?\s*(?:\[\s*\d+%\])?\s*$",
            )
            .ok()?,
            xdist: Regex::new(
                r"^\[gw\d+\] \[\s*\d+%\] ([A-Z][A-Z_]{2,}) (.+?)(?: \(.*\))?\s*$",
            )
            .ok()?,
            summary: Regex::new(
                r"^(?:\[[^\]]*\] |\([^)]*\) )?(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED|SUBFAIL|SUBPASS|SUBSKIP) (.+)$",
            )
            .ok()?,
            bare_status: Regex::new(
                r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS|RERUN|SUBFAIL|SUBPASS|SUBSKIP)(?: \(.*\))?\s*(?:\[\s*\d+%\])?$",
            )
            .ok()?,
            banner: Regex::new(r"^=+ (.*?) =+$").ok()?,
            // clauses are `N words`: pytest and its plugins add their own (pytest 9's
            // `24 subtests passed`, xdist, rerunfailures), so none is required by name
            final_line: Regex::new(
                r"^(?:=+ )?(?:(?:\d+ [a-z][a-z ]*?(?:, )?)+|no tests ran|\d+ tests? collected(?: \(\d+ deselected\))?) in [\d.]+s",
            )
            .ok()?,
        })
    })
    .as_ref()
}

/// How a result word is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Word {
    /// The test's own outcome.
    Own(Outcome),
    /// `RERUN`: the attempt ended and another follows.
    Rerun,
    /// A subtest failed (pytest-subtests `SUBFAIL`, pytest 9 built-in subtests): the
    /// failure belongs to the parent test, whatever the parent's own line says.
    SubFail,
    /// A subtest passed or was skipped: says nothing about the parent.
    SubOther,
    /// A word pytest and its known plugins do not print: never read as a pass.
    Unknown,
}

fn status(word: &str) -> Word {
    match word {
        "PASSED" | "XPASS" => Word::Own(Outcome::Passed),
        "FAILED" => Word::Own(Outcome::Failed),
        "ERROR" => Word::Own(Outcome::Errored),
        "SKIPPED" | "XFAIL" => Word::Own(Outcome::Skipped),
        "RERUN" => Word::Rerun,
        "SUBFAIL" => Word::SubFail,
        "SUBPASS" | "SUBSKIP" | "SUBXFAIL" | "SUBXPASS" => Word::SubOther,
        _ => Word::Unknown,
    }
}

/// The parent test of a subtest id: the node id before the subtest's description
/// (`t.py::C::test_x [impl: cxx]` -> `t.py::C::test_x`), cut at the first space
/// outside brackets. Parametrized ids keep their brackets (`test_x[1 2]`).
fn parent_of(id: &str) -> &str {
    let mut depth = 0i32;
    for (i, b) in id.bytes().enumerate() {
        match b {
            b'[' | b'(' => depth += 1,
            b']' | b')' => depth -= 1,
            b' ' if depth <= 0 => return &id[..i],
            _ => {}
        }
    }
    id
}

/// The runner's tallies from its final line (`1 failed, 9 passed, 24 subtests passed
/// in 0.91s`): errors count as failed, xfailed as skipped; xpassed, deselected,
/// warnings, reruns and subtest clauses are not tests of their own.
fn tally(line: &str) -> Option<crate::check::model::Counts> {
    let body = line.trim_start_matches(['=', ' ']);
    let body = &body[..body.rfind(" in ")?];
    let mut c = crate::check::model::Counts::default();
    let mut any = false;
    for clause in body.split(", ") {
        let Some((n, word)) = clause.trim().split_once(' ') else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        any = true;
        match word {
            "passed" => c.passed += n,
            "failed" | "error" | "errors" => c.failed += n,
            "skipped" | "xfailed" => c.skipped += n,
            _ => {}
        }
    }
    any.then_some(c)
}

/// Splits `nodeid - message` at the first ` - ` outside brackets.
fn split_summary(rest: &str) -> (&str, Option<&str>) {
    let mut depth = 0i32;
    let bytes = rest.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'[' => depth += 1,
            b']' => depth -= 1,
            b' ' if depth <= 0 && rest[i..].starts_with(" - ") => {
                return (&rest[..i], Some(&rest[i + 3..]));
            }
            _ => {}
        }
    }
    (rest, None)
}

/// The node id at the start of a `-v` line whose status word was pushed to a later
/// line: text up to the first space outside brackets, when it holds `::`.
fn leading_nodeid(line: &str) -> Option<&str> {
    let mut depth = 0i32;
    for (i, b) in line.bytes().enumerate() {
        match b {
            b'[' => depth += 1,
            b']' => depth -= 1,
            b' ' if depth <= 0 => {
                let id = &line[..i];
                return (id.contains("::") && !id.starts_with('[')).then_some(id);
            }
            _ => {}
        }
    }
    None
}

/// The test a `____ title ____` section header is about, as a node-id suffix:
/// `TestClass.test_x` -> `TestClass::test_x`; `ERROR at setup of t` -> `t`.
fn section_key(line: &str) -> Option<String> {
    let t = line.strip_prefix("___")?.trim_start_matches('_');
    let t = t.strip_suffix("___")?.trim_end_matches('_').trim();
    let t = [
        "ERROR at setup of ",
        "ERROR at teardown of ",
        "ERROR at call of ",
    ]
    .iter()
    .find_map(|p| t.strip_prefix(p))
    .unwrap_or(t);
    if t.is_empty() || t.starts_with("ERROR collecting") || t.starts_with("Captured ") {
        return None;
    }
    let mut depth = 0i32;
    let mut key = String::with_capacity(t.len());
    for c in t.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ => {}
        }
        if c == '.' && depth <= 0 {
            key.push_str("::");
        } else {
            key.push(c);
        }
    }
    Some(key)
}

#[derive(Default)]
struct TestState {
    outcome: Option<Outcome>,
    rerun: bool,
    message: Option<String>,
    /// A subtest failed; the test's own line then counts it passed in the tally.
    sub_failed: bool,
    /// The test's own line said PASSED (kept apart from the folded outcome).
    own_passed: bool,
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Phase {
    Progress,
    Sections,
    Summary,
}

/// Parses pytest output (stdout; stderr is only read for nothing).
#[must_use]
pub fn parse(t: &TextInput) -> ParsedRun {
    let mut diagnostics = Vec::new();
    let mut order: Vec<String> = Vec::new();
    let mut states: HashMap<String, TestState> = HashMap::new();
    let mut phase = Phase::Progress;
    let mut finished = false;
    let mut interrupted: Option<String> = None;
    let mut pending: Option<String> = None;
    let mut section_msgs: Vec<(String, String)> = Vec::new();
    let mut collection_error: Option<String> = None;
    let mut summary = None;
    let mut collection_errors = 0u64;
    if let Some(r) = res() {
        let mut report = |id: &str, word: &str, msg: Option<&str>| {
            let w = status(word);
            let id = match w {
                Word::SubFail | Word::SubOther => parent_of(id),
                _ => id,
            };
            let st = states.entry(id.to_string()).or_insert_with(|| {
                order.push(id.to_string());
                TestState::default()
            });
            let unknown;
            let (o, msg) = match w {
                Word::Rerun => {
                    st.rerun = true;
                    st.outcome = None;
                    return;
                }
                Word::SubOther => return,
                Word::SubFail => {
                    st.sub_failed = true;
                    (Outcome::Failed, msg)
                }
                Word::Own(o) => {
                    st.own_passed |= o == Outcome::Passed;
                    (o, msg)
                }
                Word::Unknown => {
                    unknown =
                        format!("pytest reported `{word}`, a result word loopexec does not know");
                    (Outcome::Errored, Some(unknown.as_str()))
                }
            };
            let keep_failing = st.outcome.is_some_and(Outcome::is_failing) && !o.is_failing();
            if !keep_failing {
                st.outcome = Some(o);
            }
            if let Some(m) = msg {
                if o.is_failing() && (st.message.is_none() || w != Word::Unknown) {
                    st.message = Some(m.to_string());
                }
            }
        };
        feed_lines(t.stdout, &mut diagnostics, |raw| {
            let line = strip_ansi(raw);
            let line = line.trim_end();
            if r.final_line.is_match(line) {
                finished = true;
                summary = tally(line);
                return;
            }
            if let Some(m) = r.banner.captures(line) {
                let title = &m[1];
                if title.contains("test session starts") {
                    phase = Phase::Progress;
                } else if title.contains("short test summary info") {
                    phase = Phase::Summary;
                } else {
                    phase = Phase::Sections;
                }
                if title.starts_with("ERROR collecting") {
                    collection_error.get_or_insert_with(|| title.to_string());
                }
                return;
            }
            if line.starts_with("!!!") && line.contains("Interrupted") {
                interrupted = Some(line.trim_matches(|c| c == '!' || c == ' ').to_string());
                return;
            }
            if let Some(rest) = line.strip_prefix("_") {
                if rest.contains("ERROR collecting") {
                    collection_error
                        .get_or_insert_with(|| line.trim_matches('_').trim().to_string());
                }
            }
            match phase {
                Phase::Progress => {
                    if let Some(m) = r.xdist.captures(line) {
                        let id = m[2].trim();
                        if id.contains("::") {
                            report(id, &m[1], None);
                        }
                    } else if let Some(m) = r
                        .verbose
                        .captures(line)
                        .filter(|m| m[1].trim().contains("::"))
                    {
                        report(m[1].trim(), &m[2], None);
                        pending = None;
                    } else if let Some(m) = r.bare_status.captures(line) {
                        // `-s -v`: the test's own output pushed the status word down
                        if let Some(id) = pending.take() {
                            report(&id, &m[1], None);
                        }
                    } else if let Some(id) = leading_nodeid(line) {
                        pending = Some(id.to_string());
                    }
                }
                Phase::Summary => {
                    if let Some(m) = r.summary.captures(line) {
                        let (id, msg) = split_summary(&m[2]);
                        if id.contains("::") && !id.starts_with('[') {
                            report(id.trim(), &m[1], msg);
                        } else if &m[1] == "ERROR" {
                            collection_errors += 1;
                            collection_error.get_or_insert_with(|| line.to_string());
                        }
                    }
                }
                Phase::Sections => {
                    if let Some(key) = section_key(line).map(|k| parent_of(&k).to_string()) {
                        if section_msgs.len() < 10_000 {
                            section_msgs.push((key, String::new()));
                        }
                    } else if let Some(e) = line.strip_prefix("E ") {
                        if let Some((_, msg)) = section_msgs.last_mut() {
                            if msg.len() < 1024 {
                                msg.push_str(e.trim());
                                msg.push('\n');
                            }
                        }
                    }
                }
            }
        });
    }
    // the sections' `E ` lines beat the summary's message, which pytest cuts to
    // the terminal width
    for (key, msg) in section_msgs.iter().filter(|(_, m)| !m.is_empty()) {
        let suffix = format!("::{key}");
        let hits: Vec<&String> = order.iter().filter(|id| id.ends_with(&suffix)).collect();
        if let [id] = hits[..] {
            if let Some(st) = states.get_mut(id.as_str()) {
                st.message = Some(msg.clone());
            }
        }
    }
    let mut c = Collector::with_listing(t.listing);
    if let Some(mut s) = summary {
        // a test whose subtest failed is read as failed; pytest's tally counted the
        // subtest's failure and the test's own pass
        let folded = states
            .values()
            .filter(|s| s.sub_failed && s.own_passed)
            .count();
        s.passed = s.passed.saturating_sub(folded as u64);
        // a file that failed to collect is in the errors clause, but is no test
        s.failed = s.failed.saturating_sub(collection_errors);
        c.set_summary(s);
    }
    for id in &order {
        let Some(st) = states.get(id) else { continue };
        let Some(o) = st.outcome else { continue };
        let o = if st.rerun && o == Outcome::Passed {
            Outcome::FlakyPassed
        } else {
            o
        };
        c.record(id, o, st.message.clone());
    }
    // exit 0 without pytest's final line: the process was ended from inside
    // (`os._exit(0)`, a plugin calling exit) before pytest could report; what did not
    // print is unknown, so the run is not green
    let cut_short = (!finished && t.exit_code == Some(0)).then(|| {
        "pytest exited 0 before printing its final count line: the run was cut short".to_string()
    });
    let unattributed = collection_error.is_some() || interrupted.is_some() || cut_short.is_some();
    let message = collection_error.or(interrupted.clone()).or(cut_short);
    c.finish(RunEnd {
        format: Format::Pytest,
        runner: "pytest",
        complete: finished && interrupted.is_none(),
        unattributed,
        red: matches!(t.exit_code, Some(c) if c != 0 && c != 5),
        message,
        diagnostics,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::parse::util::run_text;

    fn run(stdout: &str, exit: i32) -> ParsedRun {
        run_text(parse, Some(stdout.as_bytes()), None, Some(exit))
    }

    #[test]
    fn verbose_teardown_error_rerun_and_odd_names() {
        let out = "=== test session starts ===\ncollected 3 items\n\n\
t.py::a PASSED [ 33%]\nt.py::a ERROR [ 33%]\nt.py::f RERUN [ 66%]\nt.py::f PASSED [ 66%]\n\
t.py::p[dots ... here] PASSED [100%]\n\
=== FAILURES ===\nt.py::fake PASSED\n=== short test summary info ===\n\
ERROR t.py::a - RuntimeError: teardown\n=== 1 passed, 1 error, 1 rerun in 0.01s ===\n";
        let r = run(out, 1);
        let get = |id: &str| r.tests.iter().find(|t| t.id == id).map(|t| t.outcome);
        assert_eq!(get("t.py::a"), Some(Outcome::Errored));
        assert_eq!(get("t.py::f"), Some(Outcome::FlakyPassed));
        assert_eq!(get("t.py::p[dots ... here]"), Some(Outcome::Passed));
        assert_eq!(get("t.py::fake"), None);
        assert!(r.complete && !r.unattributed_failure);
    }

    #[test]
    fn collection_error_is_unattributed_and_incomplete() {
        let out = "=== test session starts ===\ncollected 1 item / 1 error\n=== ERRORS ===\n___ ERROR collecting x.py ___\n=== short test summary info ===\nERROR x.py\n!!!! Interrupted: 1 error during collection !!!!\n=== 1 error in 0.09s ===\n";
        let r = run(out, 2);
        assert!(r.unattributed_failure && !r.complete);
        assert_eq!(r.failing().len(), 1);
    }

    #[test]
    fn status_pushed_to_next_line_by_test_output() {
        let out = "=== test session starts ===\ncollected 1 item\n\nt.py::a[x y] printed PASSED here\nFAILED\n=== 1 failed in 0.01s ===\n";
        let r = run(out, 1);
        assert_eq!(r.tests.len(), 1, "{:?}", r.tests);
        assert_eq!(r.tests[0].id, "t.py::a[x y]");
        assert_eq!(r.tests[0].outcome, Outcome::Failed);
    }

    #[test]
    fn section_messages_replace_cut_summary_messages() {
        let out = "=== test session starts ===\ncollected 1 item\n\nt.py::C::t[1.5] FAILED [100%]\n\n=== FAILURES ===\n___ C.t[1.5] ___\n\n>   assert x\nE   AssertionError: the whole message\n=== short test summary info ===\nFAILED t.py::C::t[1.5] - AssertionError: the wh...\n=== 1 failed in 0.01s ===\n";
        let r = run(out, 1);
        assert_eq!(
            r.tests[0].message.as_deref(),
            Some("AssertionError: the whole message")
        );
        assert_eq!(
            section_key("___ ERROR at setup of t_x ___").as_deref(),
            Some("t_x")
        );
    }

    #[test]
    fn summary_split_respects_brackets() {
        assert_eq!(
            split_summary("a::t[x - y] - boom"),
            ("a::t[x - y]", Some("boom"))
        );
        assert_eq!(split_summary("a::t"), ("a::t", None));
    }

    #[test]
    fn truncated_run_is_incomplete_and_no_tests_is_not_a_failure() {
        let r = run(
            "=== test session starts ===\ncollected 2 items\n\nt.py::a PASSED [ 50%]\n",
            1,
        );
        assert!(!r.complete);
        assert!(r.unattributed_failure, "red with nothing failing");
        let r = run("=== test session starts ===\ncollected 2 items / 2 deselected / 0 selected\n\n=== 2 deselected in 0.01s ===\n", 5);
        assert!(r.complete && !r.unattributed_failure && r.tests.is_empty());
    }

    #[test]
    fn result_words_subtests_and_endings() {
        // (stdout, exit, failing ids, passed ids, complete, unattributed)
        type Row<'a> = (&'a str, i32, &'a [&'a str], &'a [&'a str], bool, bool);
        let table: &[Row] = &[
            // pytest-subtests: SUBFAIL then the parent's PASSED is one failing test
            (
                "t.py::T::a [x: 1] SUBFAIL [ 50%]\nt.py::T::a PASSED [ 50%]\nt.py::T::b PASSED [100%]\n=== 1 failed, 2 passed in 0.1s ===\n",
                1,
                &["t.py::T::a"],
                &["t.py::T::b"],
                true,
                false,
            ),
            // a word pytest does not print is never a pass
            (
                "t.py::a WEIRDO [100%]\n=== 1 passed in 0.1s ===\n",
                1,
                &["t.py::a"],
                &[],
                true,
                false,
            ),
            // pytest 9's extra clause still ends the run
            (
                "t.py::a PASSED [100%]\n=== 1 passed, 3 subtests passed in 0.1s ===\n",
                0,
                &[],
                &["t.py::a"],
                true,
                false,
            ),
            // os._exit(0) mid-line: exit 0 without the final line is not green
            ("t.py::a PASSED [ 50%]\nt.py::b ", 0, &["pytest::<unattributed>"], &["t.py::a"], false, true),
        ];
        for (out, exit, failing, passed, complete, unattr) in table {
            let r = run(out, *exit);
            let f: Vec<String> = r.failing().into_iter().collect();
            let p: Vec<String> = r.passing().into_iter().collect();
            assert_eq!(f, failing.to_vec(), "{out}");
            assert_eq!(p, passed.to_vec(), "{out}");
            assert_eq!(
                (r.complete, r.unattributed_failure),
                (*complete, *unattr),
                "{out}"
            );
        }
        // the subtest fold keeps the tally consistent with the named tests
        let r = run(table[0].0, 1);
        let c = r.counts();
        assert_eq!((c.passed, c.failed), (1, 1));
    }
}
