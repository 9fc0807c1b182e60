//! The verdict fingerprint: one hash that two honest runs of the same check on the same
//! tree share, and that changes when the verdict's evidence changes.
//!
//! Definition (version 1): blake3 over the UTF-8 bytes of
//!
//! ```text
//! loopexec-verdict-fingerprint/v1\n
//! exit_ok=<true|false>\n
//! counts=<collected>,<failing>,<passed>,<skipped>\n
//! failing=<id>\n   (one line per failing id, sorted)
//! collected=<id>\n (one line per collected id, sorted)
//! ```
//!
//! printed as `b3v1:<64 hex digits>`. `exit_ok` is whether the check exited with the
//! run's success exit code; ids are the parser's normalized test ids (the synthetic
//! `<runner>::<unattributed>` member included in the failing set). Raw output bytes,
//! durations, messages and timestamps are left out on purpose: they differ between
//! honest runs. Ids containing a newline are written with `\n` escaped.

use crate::check::model::{Outcome, ParsedRun};

/// Prefix of a version-1 fingerprint.
pub const PREFIX: &str = "b3v1:";

/// The normalized evidence a fingerprint covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    pub exit_ok: bool,
    pub failing: Vec<String>,
    pub collected: Vec<String>,
    pub passed: usize,
    pub skipped: usize,
}

impl Evidence {
    /// The evidence of one parsed check run; `exit_ok` says whether the check exited
    /// with the success exit code.
    #[must_use]
    pub fn of(parsed: &ParsedRun, exit_ok: bool) -> Evidence {
        Evidence {
            exit_ok,
            failing: parsed.failing().into_iter().collect(),
            collected: parsed.collected().into_iter().collect(),
            passed: parsed.passing().len(),
            skipped: parsed
                .tests
                .iter()
                .filter(|t| t.outcome == Outcome::Skipped)
                .count(),
        }
    }
}

/// The fingerprint of `e` (see the module doc for the exact bytes hashed).
#[must_use]
pub fn fingerprint(e: &Evidence) -> String {
    let mut failing: Vec<&str> = e.failing.iter().map(String::as_str).collect();
    let mut collected: Vec<&str> = e.collected.iter().map(String::as_str).collect();
    failing.sort_unstable();
    collected.sort_unstable();
    hash(e.exit_ok, &failing, &collected, e.passed, e.skipped)
}

/// The bytes of the module doc, hashed: `failing` and `collected` sorted; the counts
/// are of the lists as given.
fn hash(
    exit_ok: bool,
    failing: &[&str],
    collected: &[&str],
    passed: usize,
    skipped: usize,
) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"loopexec-verdict-fingerprint/v1\n");
    h.update(format!("exit_ok={exit_ok}\n").as_bytes());
    h.update(
        format!(
            "counts={},{},{passed},{skipped}\n",
            collected.len(),
            failing.len(),
        )
        .as_bytes(),
    );
    let mut line = |key: &[u8], id: &str| {
        h.update(key);
        if id.contains(['\\', '\n']) {
            h.update(id.replace('\\', "\\\\").replace('\n', "\\n").as_bytes());
        } else {
            h.update(id.as_bytes());
        }
        h.update(b"\n");
    };
    for f in failing {
        line(b"failing=", f);
    }
    for c in collected {
        line(b"collected=", c);
    }
    format!("{PREFIX}{}", h.finalize().to_hex())
}

/// The fingerprint of a parsed check run: [`fingerprint`] of [`Evidence::of`], read
/// from the parse's ids in place (a check's parse is fingerprinted as it is recorded,
/// every iteration, whatever the suite's size).
#[must_use]
pub fn of_parsed(parsed: &ParsedRun, exit_ok: bool) -> String {
    let failing = parsed.sorted_ids(|t| t.outcome.is_failing());
    let collected = parsed.sorted_ids(ParsedRun::is_named);
    let passed = parsed.sorted_ids(|t| t.outcome.is_passing()).len();
    let skipped = parsed
        .tests
        .iter()
        .filter(|t| t.outcome == Outcome::Skipped)
        .count();
    hash(exit_ok, &failing, &collected, passed, skipped)
}

/// The fingerprint a recorded check run stands for: its `fingerprint` field, or (in
/// receipts written before the field existed) the one computed from its parse.
#[must_use]
pub fn recorded(c: &crate::receipt::events::CheckFinished, success_exit_code: i32) -> String {
    c.fingerprint
        .clone()
        .unwrap_or_else(|| of_check(c, success_exit_code))
}

/// The fingerprint computed from a recorded check run's parse and exit.
#[must_use]
pub fn of_check(c: &crate::receipt::events::CheckFinished, success_exit_code: i32) -> String {
    of_parsed(&c.parsed, c.step.exited_with(success_exit_code))
}

/// Fills in the `fingerprint` of a `check_finished` event before it is recorded.
pub fn stamp(event: &mut crate::receipt::Event, success_exit_code: i32) {
    if let crate::receipt::Event::CheckFinished(c) = event {
        if c.fingerprint.is_none() {
            c.fingerprint = Some(of_check(c, success_exit_code));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `of_parsed` reads the parse in place; it must hash exactly what the
    /// definition's [`Evidence`] holds, for every shape of parse (skipped, flaky,
    /// errored, a synthetic member, ids needing escapes, out of order).
    #[test]
    fn of_parsed_is_the_fingerprint_of_the_evidence() {
        use crate::check::model::{Outcome as O, UNATTRIBUTED_SUFFIX};
        let unattributed = format!("cargo{UNATTRIBUTED_SUFFIX}");
        let rows: Vec<Vec<(&str, O)>> = vec![
            vec![],
            vec![("b", O::Passed), ("a", O::Failed)],
            vec![("z", O::Skipped), ("y", O::FlakyPassed), ("x", O::Errored)],
            vec![("new\nline", O::Failed), ("back\\slash", O::Passed)],
            vec![(unattributed.as_str(), O::Failed), ("a", O::Passed)],
        ];
        for tests in rows {
            let p = crate::detect::testkit::parsed(&tests);
            for exit_ok in [true, false] {
                assert_eq!(
                    of_parsed(&p, exit_ok),
                    fingerprint(&Evidence::of(&p, exit_ok)),
                    "{tests:?} exit_ok={exit_ok}"
                );
            }
        }
    }

    fn ev(exit_ok: bool, failing: &[&str], collected: &[&str]) -> Evidence {
        Evidence {
            exit_ok,
            failing: failing.iter().map(|s| (*s).to_string()).collect(),
            collected: collected.iter().map(|s| (*s).to_string()).collect(),
            passed: collected.len().saturating_sub(failing.len()),
            skipped: 0,
        }
    }

    #[test]
    fn equal_evidence_equal_fingerprint_and_each_part_counts() {
        let base = ev(false, &["t1"], &["t1", "t2"]);
        let same_other_order = ev(false, &["t1"], &["t2", "t1"]);
        assert_eq!(fingerprint(&base), fingerprint(&same_other_order));
        let differs = [
            ("exit status", ev(true, &["t1"], &["t1", "t2"])),
            ("failing set", ev(false, &["t2"], &["t1", "t2"])),
            ("collected set", ev(false, &["t1"], &["t1", "t3"])),
            ("counts", ev(false, &[], &["t1", "t2"])),
        ];
        for (what, e) in differs {
            assert_ne!(fingerprint(&base), fingerprint(&e), "{what} must change it");
        }
        assert!(fingerprint(&base).starts_with(PREFIX));
        assert_eq!(fingerprint(&base).len(), PREFIX.len() + 64);
    }

    #[test]
    fn a_newline_in_an_id_cannot_forge_another_line() {
        let a = ev(false, &["a\nfailing=b"], &["a\nfailing=b"]);
        let b = ev(false, &["a", "b"], &["a\nfailing=b"]);
        assert_ne!(fingerprint(&a), fingerprint(&b));
    }
}
