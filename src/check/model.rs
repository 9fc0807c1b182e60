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
/// `ctest`, `rspec`, `rspec-json`, `phpunit`, `teamcity`, `unittest`, `lines`,
/// `exit-code`).
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
    Unittest,
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
    /// Every test the parse recorded, in first-seen order, with its outcome, kept
    /// compactly ([`ListedTests`]): set only by a parse with `Listing::Compact` (in
    /// `check::parse::util`, what `parse`'s default shape reads), whose `tests` then
    /// hold what `Listing::Failing` keeps (the failing tests with their messages, and
    /// the synthetic member). [`ParsedRun::for_each_test`] and
    /// [`ParsedRun::into_full`] give the tests of such a run as a full parse lists
    /// them. `None` otherwise. Never recorded (not serialized).
    #[serde(skip)]
    #[schemars(skip)]
    pub listed: Option<ListedTests>,
}

/// One test of a run as [`ParsedRun::for_each_test`] hands it over (borrowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestRef<'a> {
    /// The test's id ([`TestResult::id`]).
    pub id: &'a str,
    /// How it ended.
    pub outcome: Outcome,
    /// Its failure message ([`TestResult::message`]).
    pub message: Option<&'a str>,
}

/// Every test of a parse in first-seen order with its outcome, in a few bytes each:
/// the ids front-coded in one buffer (each stored as the length of the prefix it
/// shares with the id before it and the bytes that follow), one outcome byte each.
///
/// Built attempt by attempt ([`ListedTests::push`]: every recorded attempt of a test,
/// repeats included, in order), then each test's final outcome is set at the
/// position of its first attempt ([`ListedTests::set`]); positions left unset
/// (later attempts of a test, tests removed again) are not listed. For 10⁶ tests
/// with ids of ~50 bytes in name order this is ~10 MB, where a `Vec<TestResult>`
/// holds ~120 MB.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListedTests {
    /// Per attempt: the shared prefix length and the suffix length (LEB128 varints),
    /// then the suffix bytes.
    ids: Vec<u8>,
    /// Per attempt: 0 (not listed) or an outcome code ([`ListedTests::code`]).
    states: Vec<u8>,
    /// The id of the last attempt pushed (the prefix the next one is coded against).
    last: String,
}

/// Length of the longest common prefix of `a` and `b`, compared 8 bytes at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let mut x = [0u8; 8];
        let mut y = [0u8; 8];
        x.copy_from_slice(&a[i..i + 8]);
        y.copy_from_slice(&b[i..i + 8]);
        let diff = u64::from_le_bytes(x) ^ u64::from_le_bytes(y);
        if diff != 0 {
            // the first differing byte is the lowest set byte (little-endian)
            return i + (diff.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

impl ListedTests {
    /// An empty list.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn code(o: Outcome) -> u8 {
        match o {
            Outcome::Passed => 1,
            Outcome::Failed => 2,
            Outcome::Errored => 3,
            Outcome::Skipped => 4,
            Outcome::FlakyPassed => 5,
        }
    }

    fn outcome(state: u8) -> Option<Outcome> {
        Some(match state {
            1 => Outcome::Passed,
            2 => Outcome::Failed,
            3 => Outcome::Errored,
            4 => Outcome::Skipped,
            5 => Outcome::FlakyPassed,
            _ => return None,
        })
    }

    fn put_varint(&mut self, mut n: usize) {
        while n >= 0x80 {
            // the low seven bits, with the continuation bit
            self.ids.push((n & 0x7f) as u8 | 0x80);
            n >>= 7;
        }
        self.ids.push(n as u8);
    }

    /// Appends one attempt of test `id` (not listed until [`ListedTests::set`] gives
    /// its position an outcome); its position is the number of attempts before it.
    pub fn push(&mut self, id: &str) {
        let shared = common_prefix(self.last.as_bytes(), id.as_bytes());
        let suffix = &id.as_bytes()[shared..];
        self.put_varint(shared);
        self.put_varint(suffix.len());
        self.ids.extend_from_slice(suffix);
        self.states.push(0);
        // keeps the allocation: the ids of a run are short
        self.last.clear();
        self.last.push_str(id);
    }

    /// Lists the attempt at `pos` with outcome `o` (the final outcome of the test
    /// whose first attempt it is). A position past the attempts pushed is ignored.
    pub fn set(&mut self, pos: usize, o: Outcome) {
        if let Some(s) = self.states.get_mut(pos) {
            *s = Self::code(o);
        }
    }

    /// Number of attempts pushed (listed or not).
    #[must_use]
    pub fn attempts(&self) -> usize {
        self.states.len()
    }

    /// Frees the memory kept for appending (once every attempt is pushed).
    pub fn shrink(&mut self) {
        self.ids.shrink_to_fit();
        self.states.shrink_to_fit();
        self.last = String::new();
    }

    /// Calls `f` with each listed test's id and outcome, in order, until it returns an
    /// error (which is returned).
    ///
    /// # Errors
    /// The first error `f` returns.
    pub fn try_for_each<E>(
        &self,
        mut f: impl FnMut(&str, Outcome) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut id: Vec<u8> = Vec::new();
        let mut pos = 0;
        let varint = |pos: &mut usize| {
            let mut n = 0usize;
            let mut shift = 0;
            while let Some(&b) = self.ids.get(*pos) {
                *pos += 1;
                n |= usize::from(b & 0x7f) << shift;
                if b & 0x80 == 0 {
                    break;
                }
                shift += 7;
            }
            n
        };
        for &state in &self.states {
            let shared = varint(&mut pos);
            let len = varint(&mut pos);
            let end = (pos + len).min(self.ids.len());
            id.truncate(shared);
            id.extend_from_slice(&self.ids[pos..end]);
            pos = end;
            if let Some(o) = Self::outcome(state) {
                // the bytes of an id pushed as a `str`: valid, checked in one pass
                match std::str::from_utf8(&id) {
                    Ok(text) => f(text, o)?,
                    Err(_) => f(&String::from_utf8_lossy(&id), o)?,
                }
            }
        }
        Ok(())
    }
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
    /// The ids of the tests `keep` selects, sorted (byte order, as the sets sort them)
    /// and deduplicated, borrowed from the parse: one pointer per test, no copy. For
    /// readers of one run's ids on every iteration (the fingerprint, metric integrity,
    /// `parse`'s collected set).
    #[must_use]
    pub fn sorted_ids(&self, keep: impl Fn(&TestResult) -> bool) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .tests
            .iter()
            .filter(|t| keep(t))
            .map(|t| t.id.as_str())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
    /// True for a test that is not a synthetic `::<unattributed>` member.
    #[must_use]
    pub fn is_named(t: &TestResult) -> bool {
        !t.id.ends_with(UNATTRIBUTED_SUFFIX)
    }
    /// Whether the failing set is non-empty, without building it.
    #[must_use]
    pub fn has_failing(&self) -> bool {
        self.tests.iter().any(|t| t.outcome.is_failing())
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

    /// Calls `f` with every test of the run, in the order of [`ParsedRun::tests`] under
    /// a full parse, until it returns an error (which is returned). For a run with
    /// [`ParsedRun::listed`]: each listed test in order, a failing one with the outcome
    /// and message `tests` holds for it (`tests` then holds the failing tests), then
    /// the entries of `tests` not listed (the synthetic member, added after the
    /// parse); otherwise `tests` as they are.
    ///
    /// # Errors
    /// The first error `f` returns.
    pub fn for_each_test<E>(
        &self,
        mut f: impl FnMut(TestRef<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        fn as_ref(t: &TestResult) -> TestRef<'_> {
            TestRef {
                id: t.id.as_str(),
                outcome: t.outcome,
                message: t.message.as_deref(),
            }
        }
        let Some(listed) = &self.listed else {
            return self.tests.iter().try_for_each(|t| f(as_ref(t)));
        };
        // `tests` holds few entries here (the failing ones), looked up only for a
        // failing listed test
        let by_id: std::collections::HashMap<&str, usize, foldhash::fast::FixedState> = self
            .tests
            .iter()
            .enumerate()
            .map(|(k, t)| (t.id.as_str(), k))
            .collect();
        let mut used = vec![false; self.tests.len()];
        listed.try_for_each(|id, outcome| {
            // asked only for a failing test: hashing every id cost a tenth of
            // `parse`'s default shape
            match outcome.is_failing().then(|| by_id.get(id)).flatten() {
                Some(&k) => {
                    used[k] = true;
                    f(as_ref(&self.tests[k]))
                }
                None => f(TestRef {
                    id,
                    outcome,
                    message: None,
                }),
            }
        })?;
        self.tests
            .iter()
            .zip(used)
            .filter(|(_, u)| !u)
            .try_for_each(|(t, _)| f(as_ref(t)))
    }

    /// The run as a full parse gives it: `tests` lists every test
    /// ([`ParsedRun::for_each_test`]), `listed` and `unlisted` are cleared. A run
    /// without [`ParsedRun::listed`] is returned as it is.
    #[must_use]
    pub fn into_full(mut self) -> ParsedRun {
        if self.listed.is_none() {
            return self;
        }
        let mut tests = Vec::new();
        let done: Result<(), std::convert::Infallible> = self.for_each_test(|t| {
            tests.push(TestResult {
                id: t.id.to_string(),
                outcome: t.outcome,
                message: t.message.map(str::to_string),
            });
            Ok(())
        });
        match done {
            Ok(()) => {}
            Err(never) => match never {},
        }
        self.tests = tests;
        self.listed = None;
        self.unlisted = Counts::default();
        self
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

/// The test file a numbered point's id stands in (`t/add.t#2` → `t/add.t`): a runner
/// that names a failing point only by its number (plain `prove`'s `Failed tests: 2`)
/// reports a passing file as one result under the file's name, which stands for all
/// its points. `None` for any other id.
#[must_use]
pub fn numbered_point_file(id: &str) -> Option<&str> {
    let (file, n) = id.rsplit_once('#')?;
    (!file.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(file)
}

/// Tests that ran in `p` according to the runner's own tally ([`ParsedRun::summary`]:
/// passed + failed + flaky), when the runner printed one; `None` when it did not.
#[must_use]
pub fn counted_executed(p: &ParsedRun) -> Option<u64> {
    p.summary
        .map(|s| s.passed.saturating_add(s.failed).saturating_add(s.flaky))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids come back as pushed, in order, with the outcome set at their position;
    /// positions never set are skipped. Covers prefixes cut inside a character,
    /// lengths past one varint byte and an empty id.
    #[test]
    fn listed_tests_round_trip() {
        let long = "x".repeat(300);
        let ids = [
            "a::b",
            "a::bc",
            "a::b",
            "ünï::ç",
            "ünï::é",
            "",
            long.as_str(),
            &format!("{long}y"),
            "z",
        ];
        let mut l = ListedTests::new();
        for id in ids {
            l.push(id);
        }
        assert_eq!(l.attempts(), ids.len());
        let outcomes = [
            Outcome::Passed,
            Outcome::Failed,
            Outcome::Errored,
            Outcome::Skipped,
            Outcome::FlakyPassed,
        ];
        // position 2 (a repeat) is never set
        let listed: Vec<usize> = vec![0, 1, 3, 4, 5, 6, 7, 8];
        for (k, &pos) in listed.iter().enumerate() {
            l.set(pos, outcomes[k % outcomes.len()]);
        }
        l.set(99, Outcome::Passed);
        l.shrink();
        let mut got = Vec::new();
        let done: Result<(), ()> = l.try_for_each(|id, o| {
            got.push((id.to_string(), o));
            Ok(())
        });
        assert_eq!(done, Ok(()));
        let want: Vec<(String, Outcome)> = listed
            .iter()
            .enumerate()
            .map(|(k, &pos)| (ids[pos].to_string(), outcomes[k % outcomes.len()]))
            .collect();
        assert_eq!(got, want);
        // an error stops the walk and is returned
        let mut seen = 0;
        assert_eq!(
            l.try_for_each(|_, _| {
                seen += 1;
                Err("stop")
            }),
            Err("stop")
        );
        assert_eq!(seen, 1);
    }

    /// The common prefix is found across and inside 8-byte words, and up to the
    /// shorter input.
    #[test]
    fn common_prefix_counts_equal_leading_bytes() {
        for (a, b, n) in [
            ("", "", 0),
            ("abc", "", 0),
            ("abc", "abd", 2),
            ("abcdefgh", "abcdefgh", 8),
            ("abcdefghij", "abcdefghXj", 8),
            ("abcdefghijklmnopq", "abcdefghijklmnopz", 16),
            ("abcdefghijkl", "abcdefghijk", 11),
            ("abcdeXgh", "abcdefgh", 5),
        ] {
            assert_eq!(common_prefix(a.as_bytes(), b.as_bytes()), n, "{a} {b}");
            assert_eq!(common_prefix(b.as_bytes(), a.as_bytes()), n, "{b} {a}");
        }
    }

    /// A compact run reads back as the full run: listed tests in order with the
    /// messages `tests` holds for the failing ones, then the synthetic member.
    #[test]
    fn compact_run_expands_to_the_full_run() {
        let t = |id: &str, outcome, message: Option<&str>| TestResult {
            id: id.into(),
            outcome,
            message: message.map(str::to_string),
        };
        let full = vec![
            t("b::ok", Outcome::Passed, None),
            t("a::bad", Outcome::Failed, Some("boom")),
            t("c::skip", Outcome::Skipped, None),
            t("cargo::<unattributed>", Outcome::Failed, Some("x")),
        ];
        let mut listed = ListedTests::new();
        for id in ["b::ok", "a::bad", "b::ok", "c::skip"] {
            listed.push(id);
        }
        listed.set(0, Outcome::Passed);
        listed.set(1, Outcome::Failed);
        listed.set(3, Outcome::Skipped);
        let run = ParsedRun {
            format: Format::Libtest,
            complete: true,
            unattributed_failure: true,
            tests: vec![full[1].clone(), full[3].clone()],
            diagnostics: Vec::new(),
            summary: None,
            not_run: None,
            unlisted: Counts {
                passed: 1,
                skipped: 1,
                ..Counts::default()
            },
            listed: Some(listed),
        };
        let counts = run.counts();
        let expanded = run.into_full();
        assert_eq!(expanded.tests, full);
        assert_eq!(expanded.listed, None);
        assert_eq!(expanded.counts(), counts);
    }
}
