//! The data model of one check run as loopexec sees it: which tests ran, how each
//! ended, and whether the runner reached its own end.
//!
//! Everything here is plain data (serde), produced by the parsers in
//! [`crate::check::parse`] and consumed by the detectors. Invariants:
//!
//! * a [`TestResult::id`] is stable: the same test gets the same id across runs (no
//!   durations, counters, worker numbers or ANSI escapes in it);
//! * [`ParsedRun::tests`] holds at most one entry per id (the final attempt decides);
//! * when the check is red and no named test failed, the parser adds one synthetic
//!   failing member `<runner>::<unattributed>` and sets `unattributed_failure`, so the
//!   failing set is never empty while the check is red.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// How one test ended in one check run.
///
/// `Skipped` covers xfail, todo, pending, ignored and disabled tests. `FlakyPassed`
/// is a test the runner itself retried that failed, then passed on a later attempt
/// (nextest retries, Surefire `flakyFailure`, pytest-rerunfailures, gotestsum
/// `--rerun-fails`): the final attempt decides, so it is not failing.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    Failed,
    Errored,
    Skipped,
    FlakyPassed,
}

impl Outcome {
    /// True for `Failed` and `Errored`: members of the failing set.
    #[must_use]
    pub fn is_failing(self) -> bool {
        matches!(self, Outcome::Failed | Outcome::Errored)
    }
    /// True for `Passed` and `FlakyPassed`: members of the passing set.
    #[must_use]
    pub fn is_passing(self) -> bool {
        matches!(self, Outcome::Passed | Outcome::FlakyPassed)
    }
    /// The stable wire name (`passed`, `failed`, `errored`, `skipped`, `flaky_passed`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::Errored => "errored",
            Outcome::Skipped => "skipped",
            Outcome::FlakyPassed => "flaky_passed",
        }
    }
}

/// One test's result in one check run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TestResult {
    /// Stable id, e.g. `tests::fails_assert`, `tests/test_demo.py::test_fail`,
    /// `example.com/godemo/calc::TestTable/wrong_answer`, `demo.test.js > outer > inner fail`.
    pub id: String,
    pub outcome: Outcome,
    /// Normalized failure message (first meaningful lines, ANSI stripped, addresses,
    /// durations and thread ids removed), at most 2 KiB. `None` for passing tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The test-output formats loopexec understands. Wire names are kebab-case
/// (`libtest`, `libtest-json`, `nextest`, `pytest`, `gotest`, `gotest-json`, `jest`,
/// `jest-json`, `vitest`, `vitest-json`, `mocha`, `mocha-json`, `tap`, `junit`,
/// `ctest`, `rspec`, `rspec-json`, `phpunit`, `teamcity`, `lines`, `exit-code`).
///
/// `ExitCode` is what remains when nothing else is recognised: the verdict is the
/// exit code alone and a red run is one unattributed failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Libtest,
    LibtestJson,
    Nextest,
    Pytest,
    Gotest,
    GotestJson,
    Jest,
    JestJson,
    Vitest,
    VitestJson,
    Mocha,
    MochaJson,
    Tap,
    Junit,
    Ctest,
    Rspec,
    RspecJson,
    Phpunit,
    Teamcity,
    Lines,
    ExitCode,
}

/// Everything loopexec read from one check run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ParsedRun {
    /// The format that supplied the results (for a report file, the report's format).
    pub format: Format,
    /// True when the run visibly reached the runner's own end (summary line, TAP plan,
    /// closing root element) with the counts it announced. A run cut short (a test
    /// calling `exit(0)`, an abort, truncated XML, a bail out, cargo's fail-fast stop
    /// across targets) is `false`, whatever its exit code.
    pub complete: bool,
    /// True when some failure cannot be pinned on a named test (build error,
    /// collection error, suite failed to load, red exit with no failing test).
    pub unattributed_failure: bool,
    /// One entry per test id, in the order first seen.
    pub tests: Vec<TestResult>,
    /// Problems met while reading (a report file missing or not well-formed, output
    /// past the capture limit). Recorded in the receipt; never read as "0 failures".
    #[serde(default)]
    pub diagnostics: Vec<String>,
    /// The runner's own tallies, from its summary or progress marks (`10 passed, 1
    /// failed` lines, libtest's `test result:`, a TAP plan's ok/not ok, a report's
    /// totals), when the output carries them; `None` when it does not. Quiet and dot
    /// modes name few tests but still count them: [`ParsedRun::counts`] joins these with
    /// the named tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Counts>,
    /// Set when the runner never ran the tests: it refused the command (`cargo tset`,
    /// a missing npm script), stopped on a usage error (pytest exit 4) or collected
    /// nothing (pytest exit 5). Holds the runner's own words. At the baseline this is
    /// `execution_failure`: the check is broken, not red.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_run: Option<String>,
    /// Tests read but not listed in `tests`, by group: zero except in a parse that
    /// lists only failing tests (`Listing::Failing` in `check::parse::util`, what
    /// `parse --summary` reads), where every named test that is not failing is
    /// counted here instead. Never recorded (not serialized).
    #[serde(skip)]
    #[schemars(skip)]
    pub unlisted: Counts,
}

/// How many tests the run reported in each group. Errors count as failed;
/// xfail/todo/pending/ignored as skipped; a test that failed then passed on a retry
/// as flaky.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Counts {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub flaky: u64,
}

impl Counts {
    /// Field-wise maximum.
    #[must_use]
    pub fn max(self, o: Counts) -> Counts {
        Counts {
            passed: self.passed.max(o.passed),
            failed: self.failed.max(o.failed),
            skipped: self.skipped.max(o.skipped),
            flaky: self.flaky.max(o.flaky),
        }
    }

    /// Field-wise sum (saturating).
    #[must_use]
    pub fn plus(self, o: Counts) -> Counts {
        Counts {
            passed: self.passed.saturating_add(o.passed),
            failed: self.failed.saturating_add(o.failed),
            skipped: self.skipped.saturating_add(o.skipped),
            flaky: self.flaky.saturating_add(o.flaky),
        }
    }

    /// Tests counted in any group.
    #[must_use]
    pub fn total(self) -> u64 {
        self.passed
            .saturating_add(self.failed)
            .saturating_add(self.skipped)
            .saturating_add(self.flaky)
    }
}

impl ParsedRun {
    /// The failing set F: ids whose outcome is failed or errored.
    #[must_use]
    pub fn failing(&self) -> BTreeSet<String> {
        self.ids_where(Outcome::is_failing)
    }
    /// The passing set: ids that passed (flaky-passed included).
    #[must_use]
    pub fn passing(&self) -> BTreeSet<String> {
        self.ids_where(Outcome::is_passing)
    }
    /// The collected set C: every id the runner reported, skipped included, excluding
    /// synthetic `::<unattributed>` members.
    #[must_use]
    pub fn collected(&self) -> BTreeSet<String> {
        self.tests
            .iter()
            .filter(|t| !t.id.ends_with(UNATTRIBUTED_SUFFIX))
            .map(|t| t.id.clone())
            .collect()
    }
    /// The executed set: collected minus skipped.
    #[must_use]
    pub fn executed(&self) -> BTreeSet<String> {
        self.tests
            .iter()
            .filter(|t| t.outcome != Outcome::Skipped && !t.id.ends_with(UNATTRIBUTED_SUFFIX))
            .map(|t| t.id.clone())
            .collect()
    }
    /// Counts of the named tests (synthetic members excluded), by group; the
    /// [`ParsedRun::unlisted`] tests included.
    #[must_use]
    pub fn named_counts(&self) -> Counts {
        let mut c = self.unlisted;
        for t in self
            .tests
            .iter()
            .filter(|t| !t.id.ends_with(UNATTRIBUTED_SUFFIX))
        {
            match t.outcome {
                Outcome::Passed => c.passed += 1,
                Outcome::Failed | Outcome::Errored => c.failed += 1,
                Outcome::Skipped => c.skipped += 1,
                Outcome::FlakyPassed => c.flaky += 1,
            }
        }
        c
    }

    /// How many tests the run reported in each group. When the named tests are at
    /// least as many as the runner's own tally ([`ParsedRun::summary`]) they are the
    /// counts (a verbose run names every test, and a test that reported its result and
    /// then crashed its binary is named but in no tally; a retried test is one flaky
    /// test, not a pass). Otherwise the output names fewer tests than it counted (quiet,
    /// dot and progress modes), and each group is the larger of the two.
    #[must_use]
    pub fn counts(&self) -> Counts {
        let named = self.named_counts();
        match self.summary {
            Some(s) if s.total() > named.total() => s.max(named),
            _ => named,
        }
    }

    fn ids_where(&self, f: impl Fn(Outcome) -> bool) -> BTreeSet<String> {
        self.tests
            .iter()
            .filter(|t| f(t.outcome))
            .map(|t| t.id.clone())
            .collect()
    }
}

/// Suffix of the synthetic failing member added for a red run with no attributable
/// failing test: `<runner>::<unattributed>`.
pub const UNATTRIBUTED_SUFFIX: &str = "::<unattributed>";

/// Tests that ran in `p` according to the runner's own tally ([`ParsedRun::summary`]:
/// passed + failed + flaky), when the runner printed one; `None` when it did not.
#[must_use]
pub fn counted_executed(p: &ParsedRun) -> Option<u64> {
    p.summary
        .map(|s| s.passed.saturating_add(s.failed).saturating_add(s.flaky))
}
