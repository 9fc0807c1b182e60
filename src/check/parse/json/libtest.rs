//! libtest's JSON event stream (`cargo +nightly test -- -Z unstable-options --format
//! json`) and cargo-nextest's `--message-format libtest-json-plus`.
//!
//! One JSON object per line: `{"type":"suite","event":"started"|"ok"|"failed",..}` and
//! `{"type":"test","event":"started"|"ok"|"failed"|"ignored","name":..,"stdout":..,
//! "message":..}`. Per-test events are the truth: nextest may send a suite's `started`
//! twice and its `failed` before the suite's last results.
//!
//! Ids: the test path (`tests::fails_assert`, `src/lib.rs - add_one (line 7)`). libtest
//! does not name the binary, so a name already reported by an earlier suite gets `#2`,
//! `#3`, ... (two integration binaries may both define `it_passes`). nextest names are
//! `crate::binary$path`; the `$` becomes `::` (`rustdemo::crash::b_aborts`), which is
//! also the id its JUnit report gives.
//!
//! Completeness: every started test reported a result and (plain libtest) every started
//! suite reported its end. A test started but never finished means its binary died
//! (abort, `exit`): incomplete and an unattributed failure.

use crate::check::model::{Format, Outcome, ParsedRun};
use crate::check::parse::json::for_each_line;
use crate::check::parse::structured::{RunBuilder, StructuredError};
use serde::de::IgnoredAny;
use serde::Deserialize;
use std::collections::{HashMap, HashSet};
use std::io::BufRead;

#[derive(Deserialize)]
struct LibtestEvent {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    event: String,
    name: Option<String>,
    stdout: Option<String>,
    message: Option<String>,
    nextest: Option<IgnoredAny>,
}

/// Parses a libtest / nextest libtest-json event stream. Lines that are not JSON
/// objects (or not libtest events) are skipped.
///
/// # Errors
/// [`StructuredError::NotRecognised`] when no libtest event is found;
/// [`StructuredError::Io`] when reading fails.
pub fn parse_libtest_json<R: BufRead>(r: R) -> Result<ParsedRun, StructuredError> {
    let mut b = RunBuilder::new(Format::LibtestJson, "libtest");
    let mut events = 0u64;
    let mut skipped_lines = 0u64;
    let mut nextest = false;
    let mut suite = 0u64;
    let mut suites_started = 0u64;
    let mut suites_ended = 0u64;
    // (suite, name) -> id used; names -> suite that first reported them.
    let mut ids: HashMap<(u64, String), String> = HashMap::new();
    let mut owner: HashMap<String, u64> = HashMap::new();
    // Tests started and not finished, by (suite, name) for libtest or name for nextest.
    let mut running: HashSet<(u64, String)> = HashSet::new();

    for_each_line(
        r,
        |_, line| {
            let Ok(ev) = serde_json::from_str::<LibtestEvent>(line) else {
                skipped_lines += 1;
                return;
            };
            if ev.kind != "suite" && ev.kind != "test" {
                return;
            }
            events += 1;
            if ev.nextest.is_some() {
                nextest = true;
            }
            if ev.kind == "suite" {
                match ev.event.as_str() {
                    "started" => {
                        suites_started += 1;
                        suite += 1;
                    }
                    "ok" | "failed" => suites_ended += 1,
                    _ => {}
                }
                return;
            }
            let Some(name) = ev.name else {
                return;
            };
            let is_nextest_name = name.contains('$');
            nextest |= is_nextest_name;
            let key_suite = if is_nextest_name { 0 } else { suite };
            let key = (key_suite, name);
            let outcome = match ev.event.as_str() {
                "started" => {
                    running.insert(key);
                    return;
                }
                "ok" => Outcome::Passed,
                "failed" => Outcome::Failed,
                "ignored" => Outcome::Skipped,
                // "timeout" is libtest's "running for over 60 s" warning, not a result.
                _ => return,
            };
            running.remove(&key);
            let message = ev
                .message
                .as_deref()
                .filter(|m| !m.trim().is_empty())
                .or(ev.stdout.as_deref());
            if let Some(id) = ids.get(&key) {
                b.attempt(id, outcome, message);
                return;
            }
            let base = if is_nextest_name {
                key.1.replacen('$', "::", 1)
            } else {
                key.1.clone()
            };
            let id = match owner.get(&base) {
                Some(&s) if s != key_suite => b.distinct(&base, outcome, message),
                _ => {
                    owner.insert(base.clone(), key_suite);
                    b.attempt(&base, outcome, message);
                    base
                }
            };
            ids.insert(key, id);
        },
        |_| {},
    )?;

    if events == 0 {
        return Err(StructuredError::NotRecognised);
    }
    b.set_format(Format::LibtestJson);
    if skipped_lines > 0 {
        b.diagnostic(format!(
            "libtest json: {skipped_lines} line(s) starting with '{{' were not valid events"
        ));
    }
    let mut complete = true;
    if !running.is_empty() {
        complete = false;
        let mut names: Vec<&str> = running.iter().map(|(_, n)| n.as_str()).collect();
        names.sort_unstable();
        let text = format!(
            "{} test(s) started but never reported a result (test binary died?): {}",
            names.len(),
            names.join(", ")
        );
        b.unattributed_with_diagnostic(text);
    }
    if !nextest && suites_ended < suites_started {
        complete = false;
        let text = format!(
            "{} test suite(s) started but never finished",
            suites_started - suites_ended
        );
        b.unattributed_with_diagnostic(text);
    }
    Ok(b.finish(complete))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::parse::util::outcomes;

    fn parse(s: &str) -> ParsedRun {
        parse_libtest_json(s.as_bytes()).expect("parses")
    }

    #[test]
    fn results_ids_and_messages() {
        let run = parse(concat!(
            "   Compiling demo\n",
            "{ \"type\": \"suite\", \"event\": \"started\", \"test_count\": 3 }\n",
            "{ \"type\": \"test\", \"event\": \"started\", \"name\": \"a::ok\" }\n",
            "{ \"type\": \"test\", \"name\": \"a::ok\", \"event\": \"ok\" }\n",
            "{ \"type\": \"test\", \"name\": \"a::bad\", \"event\": \"failed\", \"stdout\": \"panicked: \\u001b[31mboom\\u001b[0m\" }\n",
            "{ \"type\": \"test\", \"name\": \"a::ign\", \"event\": \"ignored\", \"message\": \"net\" }\n",
            "{ \"type\": \"suite\", \"event\": \"failed\", \"passed\": 1, \"failed\": 1 }\n",
        ));
        assert!(run.complete);
        assert!(!run.unattributed_failure);
        let got = outcomes(&run);
        assert_eq!(
            got,
            [
                ("a::ok", Outcome::Passed),
                ("a::bad", Outcome::Failed),
                ("a::ign", Outcome::Skipped)
            ]
        );
        assert_eq!(run.tests[1].message.as_deref(), Some("panicked: boom"));
    }

    #[test]
    fn same_name_in_two_suites_is_two_tests() {
        let run = parse(concat!(
            "{\"type\":\"suite\",\"event\":\"started\"}\n",
            "{\"type\":\"test\",\"name\":\"it\",\"event\":\"failed\"}\n",
            "{\"type\":\"suite\",\"event\":\"failed\"}\n",
            "{\"type\":\"suite\",\"event\":\"started\"}\n",
            "{\"type\":\"test\",\"name\":\"it\",\"event\":\"ok\"}\n",
            "{\"type\":\"suite\",\"event\":\"ok\"}\n",
        ));
        let got = outcomes(&run);
        assert_eq!(got, [("it", Outcome::Failed), ("it#2", Outcome::Passed)]);
    }

    #[test]
    fn started_without_result_is_incomplete_and_unattributed() {
        let run = parse(concat!(
            "{\"type\":\"suite\",\"event\":\"started\"}\n",
            "{\"type\":\"test\",\"event\":\"started\",\"name\":\"a\"}\n",
            "{\"type\":\"test\",\"event\":\"started\",\"name\":\"b\"}\n",
            "{\"type\":\"test\",\"name\":\"a\",\"event\":\"ok\"}\n",
        ));
        assert!(!run.complete);
        assert!(run.unattributed_failure);
        assert_eq!(run.failing().len(), 1, "synthetic member keeps it red");
        assert!(run.passing().contains("a"));
    }

    #[test]
    fn nextest_names_and_premature_suite_events() {
        let run = parse(concat!(
            "{\"type\":\"suite\",\"event\":\"started\",\"nextest\":{\"crate\":\"c\"}}\n",
            "{\"type\":\"test\",\"event\":\"started\",\"name\":\"c::bin$t::one\"}\n",
            "{\"type\":\"test\",\"event\":\"failed\",\"name\":\"c::bin$t::one\",\"stdout\":\"x\"}\n",
            "{\"type\":\"suite\",\"event\":\"failed\",\"nextest\":{}}\n",
            "{\"type\":\"test\",\"event\":\"started\",\"name\":\"c::bin$t::one\"}\n",
            "{\"type\":\"test\",\"event\":\"ok\",\"name\":\"c::bin$t::one\"}\n",
            "{\"type\":\"test\",\"event\":\"ok\",\"name\":\"c::bin$t::two\"}\n",
        ));
        assert!(run.complete);
        let got = outcomes(&run);
        assert_eq!(
            got,
            [
                ("c::bin::t::one", Outcome::FlakyPassed),
                ("c::bin::t::two", Outcome::Passed)
            ]
        );
    }

    #[test]
    fn no_events_is_not_recognised() {
        assert!(matches!(
            parse_libtest_json(&b"running 2 tests\ntest a ... ok\n"[..]),
            Err(StructuredError::NotRecognised)
        ));
    }
}
