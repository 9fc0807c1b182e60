//! What the structured-report parsers (JUnit XML, JSON event streams and documents,
//! TeamCity service messages) share: their error type and [`RunBuilder`], which turns a
//! stream of per-test observations into a [`ParsedRun`] that keeps the model's
//! invariants (one entry per id, final attempt decides, a red run never has an empty
//! failing set).
//!
//! Policy for the synthetic `<runner>::<unattributed>` member: a parser *flags* every
//! failure it cannot pin on a test ([`RunBuilder::unattributed`]); when the run is
//! finished the flag sets [`ParsedRun::unattributed_failure`], and the synthetic member
//! is added only when no named test is failing (so the failing set is never empty while
//! something is red, and is not padded when named failures already make it red).

use super::hashed::{HashedTests, MessageRule};
use crate::check::model::{Counts, Format, Outcome, ParsedRun, TestResult};
use crate::check::parse::util;

/// Why a structured report could not be read at all.
///
/// A report that was readable up to some point is *not* an error: the parsers return
/// what they read with `complete: false` and a diagnostic. These variants are for input
/// that yields nothing usable.
#[derive(Debug, thiserror::Error)]
pub enum StructuredError {
    /// The XML is not well-formed before any usable content (e.g. a zero-byte file).
    /// `position` is the byte offset in the input where the problem was found.
    #[error("XML report unreadable at byte {position}: {message}")]
    Xml { position: u64, message: String },
    /// A JSON document or event could not be decoded. `line` is 1-based.
    #[error("JSON report unreadable at line {line}: {message}")]
    Json { line: u64, message: String },
    /// Reading the input failed.
    #[error("could not read the report: {0}")]
    Io(#[from] std::io::Error),
    /// The input holds nothing in the expected format (no root element, no event,
    /// no service message).
    #[error("input is not in the expected report format")]
    NotRecognised,
}

/// Accumulates per-test results in first-seen order, one entry per id.
///
/// Memory is one [`TestResult`] plus one 16-byte map entry per distinct id; under
/// [`util::Listing::Failing`] ([`RunBuilder::with_listing`]) a 32-byte hash slot per
/// test, with text kept for failing tests only.
#[derive(Debug)]
pub struct RunBuilder {
    format: Format,
    runner: String,
    tests: Vec<TestResult>,
    index: util::IdIndex,
    /// The store under [`util::Listing::Failing`] (then `tests` stays empty).
    hashed: Option<HashedTests>,
    unattributed: bool,
    unattributed_message: Option<String>,
    diagnostics: Vec<String>,
    summary: Option<crate::check::model::Counts>,
}

impl RunBuilder {
    /// A builder for a run in `format`; `runner` names the synthetic unattributed member
    /// (`<runner>::<unattributed>`).
    #[must_use]
    pub fn new(format: Format, runner: &str) -> Self {
        Self::with_listing(format, runner, util::Listing::Full)
    }

    /// [`RunBuilder::new`] keeping the tests as `listing` asks.
    #[must_use]
    pub fn with_listing(format: Format, runner: &str, listing: util::Listing) -> Self {
        RunBuilder {
            format,
            runner: runner.to_string(),
            tests: Vec::new(),
            index: util::IdIndex::default(),
            hashed: super::hashed::for_listing(listing),
            unattributed: false,
            unattributed_message: None,
            diagnostics: Vec::new(),
            summary: None,
        }
    }

    /// Makes room for `n` more tests, as the report announces them, capped at
    /// [`util::RESERVE_LIMIT`] (growing the id index holds its old and new table at
    /// once).
    pub fn reserve(&mut self, n: usize) {
        let n = n.min(util::RESERVE_LIMIT);
        match self.hashed.as_mut() {
            Some(h) => h.reserve(n),
            None => {
                self.tests.reserve(n);
                self.index.reserve(n);
            }
        }
    }

    /// Makes room for `n` more failing tests, as the report announces them, when
    /// only failing tests are kept whole ([`super::hashed::HashedTests::reserve_failing`];
    /// the full store's room is made by [`RunBuilder::reserve`]).
    pub fn reserve_failing(&mut self, n: usize) {
        if let Some(h) = self.hashed.as_mut() {
            h.reserve_failing(n);
        }
    }

    /// Records the report's own totals (see [`ParsedRun::summary`]).
    pub fn set_summary(&mut self, counts: crate::check::model::Counts) {
        self.summary = Some(counts);
    }

    /// Changes the reported format (when it is only known after reading).
    pub fn set_format(&mut self, format: Format) {
        self.format = format;
    }

    /// Records one attempt of test `id` (ANSI escapes are removed from ids and
    /// messages). A later attempt of the same id replaces the
    /// earlier one; a passing attempt after a failing one (or after a flaky pass) gives
    /// [`Outcome::FlakyPassed`]. `message` is normalized and kept for failing outcomes only.
    pub fn attempt(&mut self, id: &str, outcome: Outcome, message: Option<&str>) {
        let id = &*util::strip_ansi(id);
        let message = message_for(outcome, message);
        if let Some(h) = self.hashed.as_mut() {
            h.record(
                id,
                |prev| prev.map_or(outcome, |p| retry(p, outcome)),
                message,
                MessageRule::Replace,
            );
            return;
        }
        match self.index.find(&self.tests, id) {
            Some(i) => {
                let entry = &mut self.tests[i];
                entry.outcome = retry(entry.outcome, outcome);
                entry.message = message;
            }
            None => self.push(id.to_string(), None, outcome, message),
        }
    }

    /// True when test `id` was recorded.
    fn has(&mut self, id: &str) -> bool {
        match self.hashed.as_mut() {
            Some(h) => h.outcome(id).is_some(),
            None => self.index.find(&self.tests, id).is_some(),
        }
    }

    /// The 64-bit hash the builder keys `id` by: a parser that needs one for its own
    /// grouping hands it back through [`RunBuilder::add_distinct_hashed`], so the id
    /// is hashed once.
    #[must_use]
    pub fn id_hash(&self, id: &str) -> u64 {
        super::hashed::store_hash(self.hashed.as_ref(), id)
    }

    /// Records a test that is distinct from any test already recorded even if its id is
    /// taken: the id then gets the first free suffix `#2`, `#3`, ... (position-based, so
    /// stable as long as the runner reports in a stable order). Returns the id used.
    pub fn distinct(&mut self, id: &str, outcome: Outcome, message: Option<&str>) -> String {
        let id = &*util::strip_ansi(id);
        let message = message_for(outcome, message);
        if !self.has(id) {
            self.push(id.to_string(), None, outcome, message);
            return id.to_string();
        }
        let mut n = 2u64;
        let mut final_id = format!("{id}#{n}");
        while self.has(&final_id) {
            n += 1;
            final_id = format!("{id}#{n}");
        }
        self.push(final_id.clone(), None, outcome, message);
        final_id
    }

    /// [`RunBuilder::distinct`] for an owned id, without handing the id back (no copy
    /// of the id is made when it is free, the common case).
    pub fn add_distinct(&mut self, id: String, outcome: Outcome, message: Option<&str>) {
        let hash = self.id_hash(&id);
        self.add_distinct_hashed(id, hash, outcome, message);
    }

    /// [`RunBuilder::add_distinct`] for an id whose [`RunBuilder::id_hash`] is `hash`.
    pub fn add_distinct_hashed(
        &mut self,
        id: String,
        hash: u64,
        outcome: Outcome,
        message: Option<&str>,
    ) {
        let (id, hash) = match util::strip_ansi(&id) {
            std::borrow::Cow::Borrowed(_) => (id, hash),
            std::borrow::Cow::Owned(o) => {
                let h = self.id_hash(&o);
                (o, h)
            }
        };
        let seen = match self.hashed.as_mut() {
            Some(h) => h.outcome_hashed(&id, hash).is_some(),
            None => self.index.find(&self.tests, &id).is_some(),
        };
        if seen {
            self.distinct(&id, outcome, message);
            return;
        }
        let message = message_for(outcome, message);
        self.push(id, Some(hash), outcome, message);
    }

    /// Flags a failure that cannot be pinned on a named test. The first message given
    /// is kept for the synthetic member.
    pub fn unattributed(&mut self, message: Option<&str>) {
        self.unattributed = true;
        if self.unattributed_message.is_none() {
            if let Some(m) = message {
                let m = util::normalize_message(m);
                if !m.is_empty() {
                    self.unattributed_message = Some(m);
                }
            }
        }
    }

    /// Flags an unattributed failure whose message is also worth a diagnostic (tests
    /// that started and never ended, counts the report cannot account for).
    pub fn unattributed_with_diagnostic(&mut self, text: String) {
        self.unattributed(Some(&text));
        self.diagnostic(text);
    }

    /// Adds a diagnostic (a problem met while reading).
    pub fn diagnostic(&mut self, text: impl Into<String>) {
        self.diagnostics.push(text.into());
    }

    /// Finishes the run. See the module doc for when the synthetic member is added.
    #[must_use]
    pub fn finish(mut self, complete: bool) -> ParsedRun {
        let (mut tests, unlisted, listed) = match self.hashed.take() {
            Some(h) => h.finish(),
            None => (std::mem::take(&mut self.tests), Counts::default(), None),
        };
        if self.unattributed && !tests.iter().any(|t| t.outcome.is_failing()) {
            tests.push(util::unattributed(
                &self.runner,
                self.unattributed_message.take(),
            ));
        }
        ParsedRun {
            format: self.format,
            complete,
            unattributed_failure: self.unattributed,
            tests,
            diagnostics: self.diagnostics,
            summary: self.summary,
            not_run: None,
            unlisted,
            listed,
        }
    }

    /// Records a test not recorded before.
    /// `hash`, when the caller has it, is `id`'s [`RunBuilder::id_hash`].
    fn push(&mut self, id: String, hash: Option<u64>, outcome: Outcome, message: Option<String>) {
        if let Some(h) = self.hashed.as_mut() {
            let hash = hash.unwrap_or_else(|| h.hash_of(&id));
            h.record_hashed(&id, hash, |_| outcome, message, MessageRule::Replace);
            return;
        }
        self.index.insert(&id, self.tests.len());
        self.tests.push(TestResult {
            id,
            outcome,
            message,
        });
    }
}

/// The merge rule of [`RunBuilder::attempt`]: a passing attempt after a failing one
/// (or after a flaky pass) is `FlakyPassed`; otherwise the later attempt decides.
fn retry(prev: Outcome, outcome: Outcome) -> Outcome {
    if outcome.is_passing() && (prev.is_failing() || prev == Outcome::FlakyPassed) {
        Outcome::FlakyPassed
    } else {
        outcome
    }
}

fn message_for(outcome: Outcome, message: Option<&str>) -> Option<String> {
    if !outcome.is_failing() {
        return None;
    }
    message
        .map(|m| util::normalize_message(&util::strip_ansi(m)))
        .filter(|m| !m.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_that_passes_is_flaky_and_final_attempt_decides() {
        let mut b = RunBuilder::new(Format::Junit, "junit");
        b.attempt("a", Outcome::Failed, Some("boom"));
        b.attempt("a", Outcome::Passed, None);
        b.attempt("b", Outcome::Passed, None);
        b.attempt("b", Outcome::Failed, Some("late"));
        let run = b.finish(true);
        assert_eq!(run.tests.len(), 2);
        assert_eq!(run.tests[0].outcome, Outcome::FlakyPassed);
        assert_eq!(run.tests[0].message, None);
        assert_eq!(run.tests[1].outcome, Outcome::Failed);
        assert_eq!(run.tests[1].message.as_deref(), Some("late"));
    }

    #[test]
    fn distinct_ids_get_position_suffixes() {
        let mut b = RunBuilder::new(Format::Junit, "junit");
        assert_eq!(b.distinct("x", Outcome::Passed, None), "x");
        assert_eq!(b.distinct("x", Outcome::Failed, None), "x#2");
        assert_eq!(b.distinct("x", Outcome::Passed, None), "x#3");
    }

    #[test]
    fn synthetic_member_only_when_nothing_named_fails() {
        let mut b = RunBuilder::new(Format::GotestJson, "gotest");
        b.attempt("p::T", Outcome::Passed, None);
        b.unattributed(Some("build failed"));
        let run = b.finish(false);
        assert!(run.unattributed_failure);
        assert_eq!(run.failing().len(), 1);
        assert_eq!(run.tests[1].id, "gotest::<unattributed>");
        assert_eq!(run.tests[1].message.as_deref(), Some("build failed"));

        let mut b = RunBuilder::new(Format::GotestJson, "gotest");
        b.attempt("p::T", Outcome::Failed, None);
        b.unattributed(None);
        let run = b.finish(false);
        assert!(run.unattributed_failure);
        assert_eq!(run.tests.len(), 1);
    }

    #[test]
    fn errors_say_what_and_where() {
        let e = StructuredError::Xml {
            position: 12,
            message: "unexpected end".into(),
        };
        assert_eq!(
            e.to_string(),
            "XML report unreadable at byte 12: unexpected end"
        );
        let e = StructuredError::Json {
            line: 3,
            message: "EOF".into(),
        };
        assert!(e.to_string().contains("line 3"));
    }
}
