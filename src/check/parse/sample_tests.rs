//! Runs the structured parsers on the real samples (`fixtures/test-output`, or
//! `$LOOPEXEC_SAMPLES`) and compares with each `NAME.expected.json` the
//! way `check-parse` does: for each of failing / flaky / passed / skipped that is not
//! null, every expected name is contained in one reported id of that group and the
//! counts agree; `complete` and `unattributed_failure` match.
//!
//! Some expectations need more than the structured source can tell; those parts are
//! relaxed per sample (see [`SAMPLES`]) and must come from the dispatcher, which also
//! reads stdout/stderr (set `LOOPEXEC_PARSE_DUMP=1` to print every parsed run):
//! * `jest_junit`, `jest_junit_templated`: jest-junit omits the suite that failed to
//!   load (complete / unattributed_failure come from stderr or are unknowable) and
//!   writes `todo` tests as bare passes (passed / skipped counts);
//! * `pytest_reruns_v`: the XML holds rerun attempts as bare passes, so the flaky test
//!   reads as passed; flakiness is only in stdout (`RERUN` lines).

use super::json::{
    parse_gotest_json, parse_jest_json, parse_libtest_json, parse_mocha_json, parse_rspec_json,
};
use super::junit::parse_junit;
use super::samples::{compare, fixtures_dir, load_expected, Check, LoadError};
use super::structured::StructuredError;
use crate::check::model::ParsedRun;
use std::io::BufReader;

type Parser = fn(BufReader<std::fs::File>) -> Result<ParsedRun, StructuredError>;

/// (expected file without `.expected.json`, structured source, parser, what to check)
const SAMPLES: &[(&str, &str, Parser, Check)] = &[
    (
        "junit-edge-synthetic/bom_comma_time",
        "junit-edge-synthetic/bom_comma_time.xml",
        parse_junit,
        Check::All,
    ),
    (
        "junit-edge-synthetic/cdata_and_escapes",
        "junit-edge-synthetic/cdata_and_escapes.xml",
        parse_junit,
        Check::All,
    ),
    (
        "junit-edge-synthetic/nested_multi_failure_no_classname",
        "junit-edge-synthetic/nested_multi_failure_no_classname.xml",
        parse_junit,
        Check::All,
    ),
    (
        "junit-edge-synthetic/skipped_and_failure_same_case",
        "junit-edge-synthetic/skipped_and_failure_same_case.xml",
        parse_junit,
        Check::All,
    ),
    (
        "junit-edge-synthetic/surefire_flaky_rerun",
        "junit-edge-synthetic/surefire_flaky_rerun.xml",
        parse_junit,
        Check::All,
    ),
    (
        "junit-edge-synthetic/truncated_between_elements",
        "junit-edge-synthetic/truncated_between_elements.xml",
        parse_junit,
        Check::All,
    ),
    (
        "ctest/ctest_junit",
        "ctest/ctest_junit.xml",
        parse_junit,
        Check::All,
    ),
    (
        "gotest/gotestsum_junit",
        "gotest/gotestsum_junit.xml",
        parse_junit,
        Check::All,
    ),
    (
        "jest/jest_junit",
        "jest/jest_junit.xml",
        parse_junit,
        Check::NoCompletenessNoSkippedCounts,
    ),
    (
        "jest/jest_junit_templated",
        "jest/jest_junit_templated.xml",
        parse_junit,
        Check::NoCompletenessNoSkippedCounts,
    ),
    (
        "nextest/nextest_run",
        "nextest/nextest_run.junit.xml",
        parse_junit,
        Check::AllButCounts,
    ),
    (
        "pytest/pytest_junit",
        "pytest/pytest_junit.xml",
        parse_junit,
        Check::All,
    ),
    (
        "pytest/pytest_reruns_v",
        "pytest/pytest_reruns.xml",
        parse_junit,
        Check::FailingOnly,
    ),
    (
        "phpunit/phpunit_junit",
        "phpunit/phpunit_junit.xml",
        parse_junit,
        Check::All,
    ),
    (
        "vitest/vitest_junit",
        "vitest/vitest_junit.xml",
        parse_junit,
        Check::All,
    ),
    (
        "node-test/node_test_junit",
        "node-test/node_test_junit.stdout",
        parse_junit,
        Check::All,
    ),
    (
        "rust-libtest/cargo_test_junit_nightly",
        "rust-libtest/cargo_test_junit_nightly.stdout",
        parse_junit,
        Check::All,
    ),
    (
        "gotest/go_test_json",
        "gotest/go_test_json.stdout",
        parse_gotest_json,
        Check::All,
    ),
    (
        "gotest/go_test_json_calc_only",
        "gotest/go_test_json_calc_only.stdout",
        parse_gotest_json,
        Check::All,
    ),
    (
        "jest/jest_json",
        "jest/jest_json.report.json",
        parse_jest_json,
        Check::All,
    ),
    (
        "jest/jest_json_stdout",
        "jest/jest_json_stdout.stdout",
        parse_jest_json,
        Check::All,
    ),
    (
        "vitest/vitest_json",
        "vitest/vitest_json.report.json",
        parse_jest_json,
        Check::All,
    ),
    (
        "mocha/mocha_json",
        "mocha/mocha_json.stdout",
        parse_mocha_json,
        Check::All,
    ),
    (
        "rspec/rspec_json",
        "rspec/rspec_json.stdout",
        parse_rspec_json,
        Check::All,
    ),
    (
        "rust-libtest/cargo_test_lib_json_nightly",
        "rust-libtest/cargo_test_lib_json_nightly.stdout",
        parse_libtest_json,
        Check::All,
    ),
    (
        "rust-libtest/cargo_test_all_json_nightly",
        "rust-libtest/cargo_test_all_json_nightly.stdout",
        parse_libtest_json,
        Check::All,
    ),
    (
        "nextest/nextest_libtest_json",
        "nextest/nextest_libtest_json.stdout",
        parse_libtest_json,
        Check::All,
    ),
];

#[test]
fn structured_samples_match_their_expected_answers() {
    let dir = fixtures_dir();
    let mut failures = Vec::new();
    for &(name, source, parser, check) in SAMPLES {
        let exp_path = dir.join(format!("{name}.expected.json"));
        let exp = match load_expected(&exp_path) {
            Ok(v) => v,
            Err(LoadError::Missing) => {
                eprintln!("note: {} missing, skipped", exp_path.display());
                continue;
            }
            Err(LoadError::Unreadable(e)) => {
                failures.push(format!("{name}: expected.json unreadable: {e}"));
                continue;
            }
        };
        let file = match std::fs::File::open(dir.join(source)) {
            Ok(f) => f,
            Err(e) => {
                failures.push(format!("{name}: {source}: {e}"));
                continue;
            }
        };
        match parser(BufReader::new(file)) {
            Ok(run) => {
                if std::env::var_os("LOOPEXEC_PARSE_DUMP").is_some() {
                    eprintln!(
                        "== {name} complete={} unattributed={}",
                        run.complete, run.unattributed_failure
                    );
                    for t in &run.tests {
                        eprintln!(
                            "   {:<13} {} | {:.80?}",
                            t.outcome.as_str(),
                            t.id,
                            t.message
                        );
                    }
                }
                let problems = compare(&exp, &run, check);
                if !problems.is_empty() {
                    failures.push(format!("{name}: {}", problems.join("; ")));
                }
            }
            Err(e) => failures.push(format!("{name}: parser error: {e}")),
        }
    }
    assert!(failures.is_empty(), "mismatches:\n{}", failures.join("\n"));
}

#[test]
fn unreadable_junit_sample_is_an_error_not_zero_failures() {
    let path = fixtures_dir().join("junit-edge-synthetic/empty.xml");
    let Ok(file) = std::fs::File::open(&path) else {
        eprintln!("note: {} missing, skipped", path.display());
        return;
    };
    assert!(parse_junit(BufReader::new(file)).is_err());
}
