//! `go test -json` (test2json) event streams.
//!
//! One JSON object per line with `Action` (`start`, `run`, `pause`, `cont`, `output`,
//! `pass`, `fail`, `skip`, `bench`, and since Go 1.24 `build-output`/`build-fail`),
//! `Package`, `Test` (absent on package-level events) and `Output`. Plain-text lines
//! are mixed in when a package fails to build (`FAIL\tpkg [build failed]`).
//!
//! Ids: `<package>::<Test>` with the test's full name, subtests included
//! (`example.com/godemo/calc::TestTable/wrong_answer`). Parent tests that go reports as
//! failed because a subtest failed are failing too, as go reports them.
//!
//! Unattributed failures: a build or setup failure (plain line, package `fail` with
//! `FailedBuild`, `build-fail`), and a package-level `fail` in a package where no test
//! failed (e.g. `TestMain` exiting non-zero).
//!
//! Completeness: every package that sent an event sent its package-level final
//! `pass`/`fail`/`skip`; every test `run` got a result; no test binary panicked (a
//! `panic: ` line in the output kills the binary, so its later tests never ran).

use crate::check::model::{Format, Outcome, ParsedRun};
use crate::check::parse::json::for_each_line;
use crate::check::parse::structured::{RunBuilder, StructuredError};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;

/// Most bytes of output kept per running test (for its failure message).
const MAX_OUTPUT: usize = 4096;

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct GoEvent {
    action: String,
    package: Option<String>,
    import_path: Option<String>,
    test: Option<String>,
    output: Option<String>,
    failed_build: Option<String>,
}

#[derive(Default)]
struct PackageState {
    finished: bool,
    panicked: bool,
    failed_tests: u64,
}

/// Parses `go test -json` output. Non-JSON lines are checked for build failures and
/// otherwise skipped.
///
/// # Errors
/// [`StructuredError::NotRecognised`] when no test2json event is found;
/// [`StructuredError::Io`] when reading fails.
pub fn parse_gotest_json<R: BufRead>(r: R) -> Result<ParsedRun, StructuredError> {
    let mut b = RunBuilder::new(Format::GotestJson, "gotest");
    let mut events = 0u64;
    let mut packages: BTreeMap<String, PackageState> = BTreeMap::new();
    // Output of tests that are running, by id.
    let mut running: HashMap<String, String> = HashMap::new();
    let mut build_failures: Vec<String> = Vec::new();
    let mut package_failures: Vec<String> = Vec::new();
    let mut text_failures: Vec<String> = Vec::new();

    for_each_line(
        r,
        |_, line| {
            let Ok(ev) = serde_json::from_str::<GoEvent>(line) else {
                return;
            };
            events += 1;
            if ev.action == "build-output" || ev.action == "build-fail" {
                if ev.action == "build-fail" {
                    let what = ev.import_path.as_deref().unwrap_or("?");
                    build_failures.push(format!("build failed: {what}"));
                }
                return;
            }
            let Some(pkg) = ev.package else {
                return;
            };
            let state = packages.entry(pkg.clone()).or_default();
            let Some(test) = ev.test else {
                // Package-level event.
                match ev.action.as_str() {
                    "pass" | "skip" => state.finished = true,
                    "fail" => {
                        state.finished = true;
                        if let Some(fb) = ev.failed_build {
                            build_failures.push(format!("build failed: {fb}"));
                        } else if state.failed_tests == 0 && !state.panicked {
                            package_failures.push(pkg);
                        }
                    }
                    "output" => {
                        let out = ev.output.unwrap_or_default();
                        if out.starts_with("panic: ") {
                            state.panicked = true;
                        }
                        if out.contains("[build failed]") || out.contains("[setup failed]") {
                            build_failures.push(out.trim().to_string());
                        }
                    }
                    _ => {}
                }
                return;
            };
            let id = format!("{pkg}::{test}");
            let outcome = match ev.action.as_str() {
                "run" => {
                    running.insert(id, String::new());
                    return;
                }
                "output" => {
                    let out = ev.output.unwrap_or_default();
                    if out.starts_with("panic: ") {
                        state.panicked = true;
                    }
                    if let Some(buf) = running.get_mut(&id) {
                        if buf.len() < MAX_OUTPUT && is_message_line(&out) {
                            buf.push_str(&out);
                        }
                    }
                    return;
                }
                "pass" => Outcome::Passed,
                "fail" => Outcome::Failed,
                "skip" => Outcome::Skipped,
                _ => return,
            };
            if outcome.is_failing() {
                state.failed_tests += 1;
            }
            let output = running.remove(&id);
            b.attempt(&id, outcome, output.as_deref());
        },
        |line| {
            if line.starts_with("FAIL")
                && (line.contains("[build failed]") || line.contains("[setup failed]"))
            {
                text_failures.push(line.to_string());
            }
        },
    )?;
    build_failures.extend(text_failures);

    if events == 0 {
        return Err(StructuredError::NotRecognised);
    }
    let mut complete = true;
    for failure in &build_failures {
        b.unattributed(Some(failure));
    }
    for pkg in &package_failures {
        let panicked = packages.get(pkg).is_some_and(|p| p.panicked);
        if !panicked {
            b.unattributed(Some(&format!("FAIL {pkg} (no failing test named)")));
        }
    }
    for (pkg, state) in &packages {
        if state.panicked {
            complete = false;
            b.diagnostic(format!(
                "go test: the test binary of {pkg} panicked; later tests did not run"
            ));
            if state.failed_tests == 0 {
                b.unattributed(Some(&format!("panic in {pkg}")));
            }
        }
        if !state.finished {
            complete = false;
            b.unattributed(Some(&format!("{pkg}: no final package result")));
            b.diagnostic(format!(
                "go test: package {pkg} has no final pass/fail event"
            ));
        }
    }
    if !running.is_empty() {
        complete = false;
        let mut ids: Vec<&str> = running.keys().map(String::as_str).collect();
        ids.sort_unstable();
        let text = format!("test(s) started without a result: {}", ids.join(", "));
        b.unattributed_with_diagnostic(text);
    }
    Ok(b.finish(complete))
}

/// Output lines worth keeping for a failure message (go's own framing dropped).
fn is_message_line(out: &str) -> bool {
    let t = out.trim_start();
    !(t.starts_with("=== RUN")
        || t.starts_with("=== PAUSE")
        || t.starts_with("=== CONT")
        || t.starts_with("=== NAME")
        || t.starts_with("--- FAIL")
        || t.starts_with("--- PASS")
        || t.starts_with("--- SKIP"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::parse::util::outcomes;

    fn ev(action: &str, pkg: &str, test: Option<&str>, output: Option<&str>) -> String {
        let mut v =
            serde_json::json!({"Time": "2026-01-01T00:00:00Z", "Action": action, "Package": pkg});
        if let Some(t) = test {
            v["Test"] = t.into();
        }
        if let Some(o) = output {
            v["Output"] = o.into();
        }
        v.to_string() + "\n"
    }

    #[test]
    fn results_subtests_and_messages() {
        let mut s = String::new();
        s += &ev("run", "p", Some("TestA"), None);
        s += &ev("run", "p", Some("TestA/sub_one"), None);
        s += &ev(
            "output",
            "p",
            Some("TestA/sub_one"),
            Some("=== RUN   TestA/sub_one\n"),
        );
        s += &ev(
            "output",
            "p",
            Some("TestA/sub_one"),
            Some("    a_test.go:9: got 4 want 5\n"),
        );
        s += &ev("fail", "p", Some("TestA/sub_one"), None);
        s += &ev("fail", "p", Some("TestA"), None);
        s += &ev("run", "p", Some("TestB"), None);
        s += &ev("skip", "p", Some("TestB"), None);
        s += &ev("run", "p", Some("TestC"), None);
        s += &ev("pass", "p", Some("TestC"), None);
        s += &ev("fail", "p", None, None);
        s += &ev("skip", "q", None, Some("?   \tq\t[no test files]\n"));
        let run = parse_gotest_json(s.as_bytes()).expect("parses");
        assert!(run.complete);
        assert!(!run.unattributed_failure);
        let got = outcomes(&run);
        assert_eq!(
            got,
            [
                ("p::TestA/sub_one", Outcome::Failed),
                ("p::TestA", Outcome::Failed),
                ("p::TestB", Outcome::Skipped),
                ("p::TestC", Outcome::Passed)
            ]
        );
        assert_eq!(
            run.tests[0].message.as_deref(),
            Some("    a_test.go:9: got 4 want 5")
        );
    }

    #[test]
    fn build_failure_line_is_unattributed() {
        let mut s = String::from("FAIL\texample.com/broken [build failed]\n");
        s += &ev("run", "p", Some("TestOk"), None);
        s += &ev("pass", "p", Some("TestOk"), None);
        s += &ev("pass", "p", None, None);
        let run = parse_gotest_json(s.as_bytes()).expect("parses");
        assert!(run.unattributed_failure);
        assert_eq!(run.failing().len(), 1);
        assert!(run.tests[1]
            .message
            .as_deref()
            .unwrap_or("")
            .contains("example.com/broken"));
    }

    #[test]
    fn panic_and_missing_package_end_are_incomplete() {
        let mut s = String::new();
        s += &ev("run", "p", Some("TestPanics"), None);
        s += &ev(
            "output",
            "p",
            Some("TestPanics"),
            Some("panic: nil map [recovered]\n"),
        );
        s += &ev("fail", "p", Some("TestPanics"), None);
        s += &ev("fail", "p", None, None);
        let run = parse_gotest_json(s.as_bytes()).expect("parses");
        assert!(!run.complete);
        assert!(
            !run.unattributed_failure,
            "the panic is pinned on TestPanics"
        );
        assert_eq!(
            run.tests[0].message.as_deref(),
            Some("panic: nil map [recovered]")
        );

        let mut s = String::new();
        s += &ev("run", "p", Some("TestA"), None);
        s += &ev("pass", "p", Some("TestA"), None);
        s += &ev("run", "p", Some("TestB"), None);
        let run = parse_gotest_json(s.as_bytes()).expect("parses");
        assert!(!run.complete);
        assert!(run.unattributed_failure);
    }

    #[test]
    fn package_failure_without_failing_test_is_unattributed() {
        let mut s = String::new();
        s += &ev("run", "p", Some("TestA"), None);
        s += &ev("pass", "p", Some("TestA"), None);
        s += &ev("output", "p", None, Some("TestMain: setup failed\n"));
        s += &ev("fail", "p", None, None);
        let run = parse_gotest_json(s.as_bytes()).expect("parses");
        assert!(run.complete);
        assert!(run.unattributed_failure);
        assert_eq!(run.failing().len(), 1);
    }

    #[test]
    fn plain_text_is_not_recognised() {
        assert!(matches!(
            parse_gotest_json(&b"ok  \tp\t0.01s\n"[..]),
            Err(StructuredError::NotRecognised)
        ));
    }
}
