//! TeamCity service messages (`##teamcity[testStarted name='...']`), which many runners
//! and reporters can print on stdout.
//!
//! Grammar (TeamCity's "Service Messages" documentation): a message is
//! `##teamcity[<name> <key>='<value>' ...]` on one line (anything before `##teamcity[` on
//! the line is ignored) or the single-value form `##teamcity[<name> '<value>']`. Values
//! escape with `|`: `|'` `'`, `||` `|`, `|n` newline, `|r` carriage return, `|[` `[`,
//! `|]` `]`, `|0xNNNN` the Unicode character U+NNNN, and the older `|x` (U+0085),
//! `|l` (U+2028), `|p` (U+2029).
//!
//! Messages used: `testSuiteStarted`/`testSuiteFinished`, `testStarted`, `testFailed`
//! (`message`, `details`), `testIgnored` (`message`), `testFinished`, and
//! `buildProblem` (`description`, an unattributed failure). Every message may carry a
//! `flowId`; suites and running tests are tracked per flow, so interleaved parallel
//! output is read correctly. Other lines and messages are skipped.
//!
//! Ids: `<suite>::...::<suite>::<test name>` from the flow's open suites, or the test
//! name alone when it already starts with the innermost suite's name (qualified names)
//! or no suite is open. A test reported again after failing (a runner retry) keeps one
//! entry: the final attempt decides, a pass after a failure is flaky-passed.
//!
//! Completeness: every started test finished and every started suite finished. A test
//! left running means the process died: incomplete and an unattributed failure.

use crate::check::model::{Format, Outcome, ParsedRun};
use crate::check::parse::structured::{RunBuilder, StructuredError};
use std::collections::HashMap;
use std::io::BufRead;

const PREFIX: &str = "##teamcity[";

/// One parsed service message: its name and attributes (single-value messages have the
/// value under the empty key).
#[derive(Debug, PartialEq, Eq)]
struct Message {
    name: String,
    attrs: Vec<(String, String)>,
}

impl Message {
    fn get(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct Flow {
    suites: Vec<String>,
    /// Running tests by name: (id, failure message if it failed, ignored).
    running: HashMap<String, Running>,
}

struct Running {
    id: String,
    failure: Option<String>,
    ignored: bool,
}

/// Parses TeamCity service messages from test output.
///
/// # Errors
/// [`StructuredError::NotRecognised`] when the input holds no service message;
/// [`StructuredError::Io`] when reading fails.
pub fn parse_teamcity<R: BufRead>(mut r: R) -> Result<ParsedRun, StructuredError> {
    let mut b = RunBuilder::new(Format::Teamcity, "teamcity");
    let mut flows: HashMap<String, Flow> = HashMap::new();
    let mut messages = 0u64;
    let mut malformed = 0u64;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if r.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        let line = String::from_utf8_lossy(&buf);
        let Some(start) = line.find(PREFIX) else {
            continue;
        };
        let Some(msg) = parse_message(&line[start + PREFIX.len()..]) else {
            malformed += 1;
            continue;
        };
        messages += 1;
        let flow = flows
            .entry(msg.get("flowId").unwrap_or("").to_string())
            .or_default();
        let name = msg.get("name").unwrap_or("").to_string();
        match msg.name.as_str() {
            "testSuiteStarted" => flow.suites.push(name),
            "testSuiteFinished" => {
                if let Some(pos) = flow.suites.iter().rposition(|s| *s == name) {
                    flow.suites.truncate(pos);
                } else {
                    flow.suites.pop();
                }
            }
            "testStarted" => {
                let id = test_id(&flow.suites, &name);
                flow.running.insert(
                    name,
                    Running {
                        id,
                        failure: None,
                        ignored: false,
                    },
                );
            }
            "testFailed" => {
                let text = failure_text(&msg);
                match flow.running.get_mut(&name) {
                    Some(t) => t.failure = Some(text),
                    None => b.attempt(&test_id(&flow.suites, &name), Outcome::Failed, Some(&text)),
                }
            }
            "testIgnored" => match flow.running.get_mut(&name) {
                Some(t) => t.ignored = true,
                None => b.attempt(&test_id(&flow.suites, &name), Outcome::Skipped, None),
            },
            "testFinished" => {
                if let Some(t) = flow.running.remove(&name) {
                    let outcome = if t.failure.is_some() {
                        Outcome::Failed
                    } else if t.ignored {
                        Outcome::Skipped
                    } else {
                        Outcome::Passed
                    };
                    b.attempt(&t.id, outcome, t.failure.as_deref());
                }
            }
            "buildProblem" => {
                let d = msg.get("description").unwrap_or("build problem");
                b.unattributed(Some(d));
            }
            _ => {}
        }
    }
    if messages == 0 {
        return Err(StructuredError::NotRecognised);
    }
    if malformed > 0 {
        b.diagnostic(format!(
            "teamcity: {malformed} malformed service message(s) skipped"
        ));
    }
    let mut complete = true;
    let mut left: Vec<&str> = flows
        .values()
        .flat_map(|f| f.running.values().map(|t| t.id.as_str()))
        .collect();
    if !left.is_empty() {
        complete = false;
        left.sort_unstable();
        let text = format!("test(s) started but never finished: {}", left.join(", "));
        b.unattributed_with_diagnostic(text);
    }
    if flows.values().any(|f| !f.suites.is_empty()) {
        complete = false;
        b.diagnostic("teamcity: test suite(s) started but never finished");
    }
    Ok(b.finish(complete))
}

fn test_id(suites: &[String], name: &str) -> String {
    match suites.last() {
        Some(inner) if !name.starts_with(inner.as_str()) => {
            let mut id = suites.join("::");
            id.push_str("::");
            id.push_str(name);
            id
        }
        _ => name.to_string(),
    }
}

fn failure_text(msg: &Message) -> String {
    let m = msg.get("message").unwrap_or("").trim();
    let d = msg.get("details").unwrap_or("").trim();
    match (m.is_empty(), d.is_empty()) {
        (false, false) => format!("{m}\n{d}"),
        (false, true) => m.to_string(),
        (true, false) => d.to_string(),
        (true, true) => "failed".to_string(),
    }
}

/// Parses the text after `##teamcity[` up to the closing `]`. `None` when malformed.
fn parse_message(s: &str) -> Option<Message> {
    let mut chars = s.chars().peekable();
    let mut name = String::new();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() || c == ']' {
            break;
        }
        name.push(c);
        chars.next();
    }
    if name.is_empty() {
        return None;
    }
    let mut attrs = Vec::new();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.next()? {
            ']' => return Some(Message { name, attrs }),
            '\'' => attrs.push((String::new(), escaped_value(&mut chars)?)),
            c => {
                let mut key = String::from(c);
                while let Some(&k) = chars.peek() {
                    if k == '=' || k.is_whitespace() {
                        break;
                    }
                    key.push(k);
                    chars.next();
                }
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                if chars.next()? != '=' {
                    return None;
                }
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                if chars.next()? != '\'' {
                    return None;
                }
                attrs.push((key, escaped_value(&mut chars)?));
            }
        }
    }
}

/// Reads an escaped value up to its closing `'` (consumed). `None` when the line ends.
fn escaped_value(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<String> {
    let mut out = String::new();
    loop {
        match chars.next()? {
            '\'' => return Some(out),
            '|' => match chars.next()? {
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                'x' => out.push('\u{85}'),
                'l' => out.push('\u{2028}'),
                'p' => out.push('\u{2029}'),
                '0' if chars.peek() == Some(&'x') => {
                    chars.next();
                    let hex: String = (0..4).filter_map(|_| chars.next()).collect();
                    match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                        Some(c) => out.push(c),
                        None => {
                            out.push_str("|0x");
                            out.push_str(&hex);
                        }
                    }
                }
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::parse::util::outcomes;

    fn parse(s: &str) -> ParsedRun {
        parse_teamcity(s.as_bytes()).expect("parses")
    }

    #[test]
    fn escapes_are_decoded() {
        let m = parse_message(
            "testFailed name='it|'s |[x|] a||b' message='l1|nl2|r|x|l|p' details='|0x00e9|0x263A'] tail",
        )
        .expect("parses");
        assert_eq!(m.name, "testFailed");
        assert_eq!(m.get("name"), Some("it's [x] a|b"));
        assert_eq!(m.get("message"), Some("l1\nl2\r\u{85}\u{2028}\u{2029}"));
        assert_eq!(m.get("details"), Some("é☺"));
        let single = parse_message("progressMessage 'hello |'you|'']").expect("parses");
        assert_eq!(single.get(""), Some("hello 'you'"));
        assert_eq!(parse_message("testStarted name='unterminated"), None);
        assert_eq!(parse_message("testStarted name]"), None);
    }

    #[test]
    fn suites_tests_and_outcomes() {
        let run = parse(concat!(
            "some build output\n",
            "##teamcity[testSuiteStarted name='math']\n",
            "##teamcity[testStarted name='adds']\n",
            "##teamcity[testFinished name='adds' duration='3']\n",
            "##teamcity[testStarted name='divides']\n",
            "##teamcity[testFailed name='divides' message='expected 2' details='at math.js:3']\n",
            "##teamcity[testFinished name='divides']\n",
            "##teamcity[testIgnored name='later' message='todo']\n",
            "##teamcity[testStarted name='math.qualified']\n",
            "##teamcity[testFinished name='math.qualified']\n",
            "##teamcity[testSuiteFinished name='math']\n",
        ));
        assert!(run.complete);
        assert!(!run.unattributed_failure);
        assert_eq!(
            outcomes(&run),
            [
                ("math::adds", Outcome::Passed),
                ("math::divides", Outcome::Failed),
                ("math::later", Outcome::Skipped),
                ("math.qualified", Outcome::Passed),
            ]
        );
        assert_eq!(
            run.tests[1].message.as_deref(),
            Some("expected 2\nat math.js:3")
        );
    }

    #[test]
    fn interleaved_flows_are_kept_apart() {
        let run = parse(concat!(
            "##teamcity[testSuiteStarted name='A' flowId='1']\n",
            "##teamcity[testSuiteStarted name='B' flowId='2']\n",
            "##teamcity[testStarted name='t' flowId='1']\n",
            "##teamcity[testStarted name='t' flowId='2']\n",
            "##teamcity[testFailed name='t' flowId='2' message='no']\n",
            "##teamcity[testFinished name='t' flowId='1']\n",
            "##teamcity[testFinished name='t' flowId='2']\n",
            "##teamcity[testSuiteFinished name='A' flowId='1']\n",
            "##teamcity[testSuiteFinished name='B' flowId='2']\n",
        ));
        assert!(run.complete);
        assert_eq!(
            outcomes(&run),
            [("A::t", Outcome::Passed), ("B::t", Outcome::Failed)]
        );
    }

    #[test]
    fn retry_after_failure_is_flaky() {
        let run = parse(concat!(
            "##teamcity[testStarted name='r']\n",
            "##teamcity[testFailed name='r' message='first']\n",
            "##teamcity[testFinished name='r']\n",
            "##teamcity[testStarted name='r']\n",
            "##teamcity[testFinished name='r']\n",
        ));
        assert_eq!(outcomes(&run), [("r", Outcome::FlakyPassed)]);
    }

    #[test]
    fn unfinished_test_and_build_problem_are_unattributed() {
        let run = parse(concat!(
            "##teamcity[testStarted name='ok']\n",
            "##teamcity[testFinished name='ok']\n",
            "##teamcity[testStarted name='dies']\n",
        ));
        assert!(!run.complete);
        assert!(run.unattributed_failure);
        assert_eq!(run.failing().len(), 1);
        let run = parse("##teamcity[buildProblem description='compilation failed']\n");
        assert!(run.unattributed_failure);
        assert_eq!(run.tests[0].message.as_deref(), Some("compilation failed"));
    }

    #[test]
    fn no_service_message_is_not_recognised() {
        assert!(matches!(
            parse_teamcity(&b"test a ... ok\n"[..]),
            Err(StructuredError::NotRecognised)
        ));
    }
}
