//! Progress detectors (exit class 17, no-convergence) and the ratchet.
//!
//! This module owns the six class-17 reasons and the acceptance rule for attempts.
//! Everything here is a pure function of the recorded trajectory and the policy: no
//! I/O, no clock, no randomness, no hidden state. `explain-halt` and
//! `replay --offline` call the same functions on the trajectory read back from the
//! receipt and must obtain the same verdict.
//!
//! # The trajectory
//!
//! `trajectory[0]` is the baseline (the check run once on the untouched tree, no agent
//! action); `trajectory[1..]` are the attempts in order; the last element, at
//! position `n`, is the attempt just observed. F_i is the failing set of position `i`
//! (ids, with a normalized message each), P_i its passing set, |F_i| its size.
//! Streaks and windows count *attempts* (positions >= 1); the baseline is the
//! starting point, never an attempt. Logic works on positions; contributors and
//! detail report the [`AttemptView::iteration`] numbers recorded in the receipt.
//!
//! The detectors judge only a red last attempt: with fewer than two elements, or a
//! green last element, every detector returns `None` (a green verdict is decided by
//! the caller before these run). Earlier elements may be anything.
//!
//! # Definitions
//!
//! * **Accepted** ([`accepted`]): the baseline is accepted; an attempt is accepted
//!   when P_i is a superset of P_a, where `a` is the last accepted position before
//!   it. Accepted passing sets therefore form an increasing chain, so "passed in some
//!   accepted iteration" is the same as "passes in the last accepted iteration".
//! * **Same failure** of two iterations: equal failing id sets, and for every id a
//!   message similarity of at least `similarity` ([`message_similarity`]: the
//!   character-level diff ratio `2·matches / (len_a + len_b)`, 1.0 for two empty
//!   messages).
//! * **New best** at position `i`: |F_i| strictly smaller than |F_j| for every `j < i`
//!   (baseline included). **Stalled over k**: `n >= k` and none of the last `k`
//!   attempts is a new best.
//! * **Core** ([`never_passed_core`]): ids failing in the last attempt that were in no
//!   passing set of any position (baseline and last included). Synthetic
//!   `<runner>::<unattributed>` members are not tests and never belong to the core.
//! * **Side** of a pair of tests (x, y) at position `i`: *x-side* when x fails and y
//!   passes, *y-side* when y fails and x passes; any other combination is neutral.
//!   A **flip** is a change of side between consecutive sided positions (neutral
//!   positions are skipped). A **cycle** is two flips (x-side → y-side → x-side): the
//!   two tests traded places and traded back. A pair **trades places** only if the
//!   two tests never pass together at any position.
//!
//! # Decision table
//!
//! Rows in precedence order; [`detect_progress`] returns the first row that fires.
//! Every row also requires its `enabled = true` and a red last attempt at `n >= 1`.
//!
//! | # | reason | fires when |
//! |---|--------|------------|
//! | 1 | `same_test_regressed` | `on_regression = "halt"` and F_n contains an id of P_a, `a` the last accepted position before `n` |
//! | 2 | `unsatisfiable_constraints` | some pair (x failing at `n`, y passing at `n`) trades places with at least `cycles` cycles |
//! | 3 | `oscillation_detected` | `n >= 2`, ids(F_{n-1}) ≠ ids(F_n), and ids(F_j) = ids(F_n) for some `j < n-1` (a return A → B → A; A → A is stagnation); with `on_regression = revert`, some iteration between j and n with a different set must have been accepted (a rejected, reverted B followed by A is the ratchet's restore, not oscillation) |
//! | 4 | `same_failure_repeated` | `n >= repeats` and the last `repeats` attempts are all red and pairwise the same failure (the baseline is never one of them) |
//! | 5 | `infeasible_suspected` | stalled over `k`, each of the last `k` attempts changed the tree, and the core is non-empty |
//! | 6 | `no_progress_detected` | stalled over `k`, and in the last `k` attempts at least one is not the same failure as its predecessor (the failures do change) |
//!
//! `max_iterations_reached` is not decided here: the caller applies it at the cap when
//! no row fires. `no_progress_detected` reads message similarity from
//! `[halt.same_failure_repeated].similarity`, so one threshold defines "same failure".
//!
//! Bound on work: the pair search of row 2 only considers tests that are present at
//! `n` and flipped between failing and passing at least `2·cycles` times, grouped by
//! identical status history (tests with one history move together and are reported
//! together); at most [`MAX_PAIR_GROUPS`] groups per side are examined.

mod policy;
mod similarity;
#[cfg(test)]
mod tests;
mod trade;

pub use policy::{
    CyclesPolicy, OnRegression, PolicyError, ProgressPolicy, SameFailurePolicy, Toggle,
    WindowPolicy,
};
pub use similarity::message_similarity;
use similarity::similar_enough;
pub use trade::unsatisfiable_constraints;

use crate::check::model::UNATTRIBUTED_SUFFIX;
use crate::halt::{Halt, HaltReason};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// How many ids a contributor line or a detail list names before summarising the rest.
pub const MAX_LISTED: usize = 20;

/// At most this many status-history groups per side (failing now / passing now) are
/// paired by the `unsatisfiable_constraints` search.
pub const MAX_PAIR_GROUPS: usize = 256;

/// Longest message excerpt (in characters) quoted in a contributor line.
const MESSAGE_EXCERPT: usize = 160;

/// One iteration as the detectors see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptView {
    /// 0 for the baseline, then 1, 2, … for the attempts.
    pub iteration: u32,
    /// Whether the check was green in this iteration.
    pub green: bool,
    /// Failing set F: test id → normalized failure message (`""` when none). Shared
    /// with the trajectory, which computes it once per check run
    /// ([`crate::trajectory::CheckSets`]): building views is a reference count, not a
    /// copy of every id.
    pub failing: Arc<BTreeMap<String, String>>,
    /// Passing set P: test ids that passed (flaky-passed included). Shared like
    /// `failing`; consecutive runs with equal passing sets share one allocation, which
    /// [`accepted`] compares by address first.
    pub passing: Arc<BTreeSet<String>>,
    /// The agent changed the working tree in this iteration (`false` for the baseline).
    pub tree_changed: bool,
}

/// One row of the decision table: a reason and the detector that decides it.
pub type Rule = (
    HaltReason,
    fn(&[AttemptView], &ProgressPolicy) -> Option<Halt>,
);

/// The decision table in precedence order (see the module doc).
pub const RULES: [Rule; 6] = [
    (HaltReason::SameTestRegressed, same_test_regressed),
    (
        HaltReason::UnsatisfiableConstraints,
        unsatisfiable_constraints,
    ),
    (HaltReason::OscillationDetected, oscillation_detected),
    (HaltReason::SameFailureRepeated, same_failure_repeated),
    (HaltReason::InfeasibleSuspected, infeasible_suspected),
    (HaltReason::NoProgressDetected, no_progress_detected),
];

/// The ratchet: one flag per trajectory element, `true` when accepted.
///
/// The baseline (position 0) is always accepted; an attempt is accepted when its
/// passing set is a superset of the passing set of the last accepted position.
/// Rejected attempts do not move the reference. Empty input gives an empty vector.
#[must_use]
pub fn accepted(trajectory: &[AttemptView]) -> Vec<bool> {
    let mut out = Vec::with_capacity(trajectory.len());
    let mut reference: Option<&Arc<BTreeSet<String>>> = None;
    for attempt in trajectory {
        let ok = reference.map_or(true, |p| {
            Arc::ptr_eq(p, &attempt.passing) || attempt.passing.is_superset(p)
        });
        if ok {
            reference = Some(&attempt.passing);
        }
        out.push(ok);
    }
    out
}

/// The iteration of the last attempt [`accepted`] accepts: the one a run that stops
/// without converging leaves in the tree, and the one a resumed run continues from.
/// `None` for an empty trajectory (the baseline, when present, is always accepted).
#[must_use]
pub fn last_accepted(trajectory: &[AttemptView]) -> Option<u32> {
    let accepted = accepted(trajectory);
    trajectory
        .iter()
        .zip(&accepted)
        .rev()
        .find(|(_, a)| **a)
        .map(|(v, _)| v.iteration)
}

/// Runs the decision table and returns the first halt that fires, or `None`.
///
/// `None` also when the trajectory has no attempt yet or its last element is green.
/// The policy is assumed validated ([`ProgressPolicy::validate`]); out-of-range
/// values do not panic (a zero window simply never fires).
#[must_use]
pub fn detect_progress(trajectory: &[AttemptView], policy: &ProgressPolicy) -> Option<Halt> {
    RULES.iter().find_map(|(_, rule)| rule(trajectory, policy))
}

/// Every row that fires, in precedence order (the first is [`detect_progress`]'s
/// answer). For `explain-halt`, which may show what else held at the halt.
#[must_use]
pub fn detect_all(trajectory: &[AttemptView], policy: &ProgressPolicy) -> Vec<Halt> {
    RULES
        .iter()
        .filter_map(|(_, rule)| rule(trajectory, policy))
        .collect()
}

/// Position of the last element when it can be judged: at least one attempt and red.
fn judged(trajectory: &[AttemptView]) -> Option<usize> {
    let n = trajectory.len().checked_sub(1)?;
    (n >= 1 && !trajectory[n].green).then_some(n)
}

/// Row 1: a test that passed in an accepted iteration fails in the last attempt.
/// Only with `on_regression = "halt"`.
#[must_use]
pub fn same_test_regressed(trajectory: &[AttemptView], policy: &ProgressPolicy) -> Option<Halt> {
    if !policy.same_test_regressed.enabled || policy.on_regression != OnRegression::Halt {
        return None;
    }
    let n = judged(trajectory)?;
    let last = &trajectory[n];
    let acc = accepted(&trajectory[..n]);
    let a = acc.iter().rposition(|&ok| ok)?;
    let regressed: Vec<&String> = trajectory[a]
        .passing
        .iter()
        .filter(|id| last.failing.contains_key(*id))
        .collect();
    if regressed.is_empty() {
        return None;
    }
    let mut contributors = Vec::new();
    let mut listed = Vec::new();
    for id in regressed.iter().take(MAX_LISTED) {
        // The latest position before n where it passed (a at the earliest).
        let lp = (0..n)
            .rev()
            .find(|&j| trajectory[j].passing.contains(*id))
            .unwrap_or(a);
        let msg = last.failing.get(*id).map(String::as_str).unwrap_or("");
        contributors.push(format!(
            "{id} fails at iteration {} after passing at iteration {}{}{}",
            last.iteration,
            trajectory[lp].iteration,
            if acc[lp] { " (accepted)" } else { "" },
            quote(msg)
        ));
        listed.push(json!({
            "id": id,
            "last_passed": trajectory[lp].iteration,
            "message": msg,
        }));
    }
    if regressed.len() > MAX_LISTED {
        contributors.push(format!(
            "and {} more regressed tests",
            regressed.len() - MAX_LISTED
        ));
    }
    Some(Halt {
        reason: HaltReason::SameTestRegressed,
        contributors,
        detail: json!({
            "on_regression": "halt",
            "iteration": last.iteration,
            "last_accepted_iteration": trajectory[a].iteration,
            "regressed_count": regressed.len(),
            "regressed": listed,
        }),
    })
}

/// True when the two iterations fail exactly the same ids.
fn same_ids(a: &AttemptView, b: &AttemptView) -> bool {
    a.failing.len() == b.failing.len() && a.failing.keys().eq(b.failing.keys())
}

/// Row 3: the failing set just returned to one seen earlier by way of a different one.
#[must_use]
pub fn oscillation_detected(trajectory: &[AttemptView], policy: &ProgressPolicy) -> Option<Halt> {
    if !policy.oscillation_detected.enabled {
        return None;
    }
    let n = judged(trajectory)?;
    if n < 2 {
        return None;
    }
    let cur = &trajectory[n];
    if same_ids(&trajectory[n - 1], cur) {
        return None;
    }
    let j = (0..n - 1).rev().find(|&j| same_ids(&trajectory[j], cur))?;
    // With the ratchet reverting rejected attempts, a return to A after a rejected B is
    // loopexec's own restore, not the agent flip-flopping: the loop must have actually
    // moved to a different set (an accepted iteration in between).
    if policy.on_regression == OnRegression::Revert {
        let acc = accepted(trajectory);
        if !(j + 1..n).any(|m| acc[m] && !same_ids(&trajectory[m], cur)) {
            return None;
        }
    }
    let between: Vec<Value> = (j + 1..n)
        .take(MAX_LISTED)
        .map(|m| {
            json!({
                "iteration": trajectory[m].iteration,
                "failing": trajectory[m].failing.keys().take(MAX_LISTED).collect::<Vec<_>>(),
                "failing_count": trajectory[m].failing.len(),
            })
        })
        .collect();
    let cur_ids: Vec<&str> = cur.failing.keys().map(String::as_str).collect();
    let prev_ids: Vec<&str> = trajectory[n - 1]
        .failing
        .keys()
        .map(String::as_str)
        .collect();
    let contributors = vec![
        format!(
            "iteration {} fails {{{}}} again, as iteration {} did",
            cur.iteration,
            list_ids(&cur_ids),
            trajectory[j].iteration
        ),
        format!(
            "in between, iteration {} failed {{{}}}",
            trajectory[n - 1].iteration,
            list_ids(&prev_ids)
        ),
        format!(
            "returned after {} iteration(s) with a different failing set",
            n - 1 - j
        ),
    ];
    Some(Halt {
        reason: HaltReason::OscillationDetected,
        contributors,
        detail: json!({
            "iteration": cur.iteration,
            "returned_to_iteration": trajectory[j].iteration,
            "failing": cur_ids.iter().take(MAX_LISTED).collect::<Vec<_>>(),
            "failing_count": cur_ids.len(),
            "between": between,
        }),
    })
}

/// Same failing ids and, id by id, messages at least `threshold` similar.
fn same_failure(a: &AttemptView, b: &AttemptView, threshold: f64) -> bool {
    same_ids(a, b)
        && a.failing
            .iter()
            .zip(b.failing.values())
            .all(|((_, ma), mb)| similar_enough(ma, mb, threshold))
}

/// Row 4 (three strikes): the last `repeats` attempts are red and pairwise the same
/// failure. The baseline never counts as one of them.
#[must_use]
pub fn same_failure_repeated(trajectory: &[AttemptView], policy: &ProgressPolicy) -> Option<Halt> {
    let cfg = &policy.same_failure_repeated;
    if !cfg.enabled {
        return None;
    }
    let n = judged(trajectory)?;
    let r = usize::try_from(cfg.repeats).ok()?.max(2);
    if n < r {
        return None;
    }
    let window = &trajectory[n + 1 - r..=n];
    if window.iter().any(|a| a.green) {
        return None;
    }
    // Newest against each older first (cheap rejection), then the remaining pairs.
    for i in (0..r).rev() {
        for j in (0..i).rev() {
            if !same_failure(&window[i], &window[j], cfg.similarity) {
                return None;
            }
        }
    }
    let last = &trajectory[n];
    let iterations: Vec<u32> = window.iter().map(|a| a.iteration).collect();
    let ids: Vec<&str> = last.failing.keys().map(String::as_str).collect();
    let mut contributors = vec![format!(
        "{r} consecutive attempts (iterations {}) failed the same way: {{{}}}",
        join_numbers(&iterations),
        list_ids(&ids)
    )];
    for (id, msg) in last.failing.iter().take(MAX_LISTED) {
        if !msg.is_empty() {
            contributors.push(format!("{id}{}", quote(msg)));
        }
    }
    if window.iter().all(|a| !a.tree_changed) {
        contributors.push("the agent did not change the tree in any of them".to_string());
    }
    Some(Halt {
        reason: HaltReason::SameFailureRepeated,
        contributors,
        detail: json!({
            "iteration": last.iteration,
            "repeats": cfg.repeats,
            "similarity": cfg.similarity,
            "iterations": iterations,
            "failing_count": last.failing.len(),
            "failing": last.failing.iter().take(MAX_LISTED)
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect::<serde_json::Map<_, _>>(),
            "tree_changed": window.iter().map(|a| a.tree_changed).collect::<Vec<_>>(),
        }),
    })
}

/// The tests failing in the last element that passed at no position, baseline and
/// last included; synthetic `::<unattributed>` members excluded. Sorted by id.
#[must_use]
pub fn never_passed_core(trajectory: &[AttemptView]) -> Vec<String> {
    let Some(last) = trajectory.last() else {
        return Vec::new();
    };
    last.failing
        .keys()
        .filter(|id| !id.ends_with(UNATTRIBUTED_SUFFIX))
        .filter(|id| trajectory.iter().all(|a| !a.passing.contains(*id)))
        .cloned()
        .collect()
}

/// When none of the last `k` attempts is a new best: `(best |F| before the window,
/// its first position)`. `None` when `k` is 0, fewer than `k` attempts exist, or the
/// window holds a new best.
fn stalled(trajectory: &[AttemptView], n: usize, k: u32) -> Option<(usize, usize)> {
    let k = usize::try_from(k).ok()?;
    if k == 0 || n < k {
        return None;
    }
    let start = n + 1 - k;
    let (best_pos, best) = trajectory[..start]
        .iter()
        .enumerate()
        .map(|(i, a)| (i, a.failing.len()))
        .min_by_key(|&(i, len)| (len, i))?;
    let window_min = trajectory[start..=n]
        .iter()
        .map(|a| a.failing.len())
        .min()?;
    (window_min >= best).then_some((best, best_pos))
}

fn window_counts(trajectory: &[AttemptView], n: usize, k: u32) -> Vec<Value> {
    let start = n + 1 - usize::try_from(k).unwrap_or(0).min(n);
    trajectory[start..=n]
        .iter()
        .map(|a| json!({"iteration": a.iteration, "failing_count": a.failing.len()}))
        .collect()
}

fn counts_text(trajectory: &[AttemptView], n: usize, k: u32) -> String {
    let start = n + 1 - usize::try_from(k).unwrap_or(0).min(n);
    let counts: Vec<usize> = trajectory[start..=n]
        .iter()
        .map(|a| a.failing.len())
        .collect();
    join_numbers(&counts)
}

/// Row 5: stalled over `k` although every attempt in the window changed the tree,
/// and a non-empty core never passed.
#[must_use]
pub fn infeasible_suspected(trajectory: &[AttemptView], policy: &ProgressPolicy) -> Option<Halt> {
    let cfg = &policy.infeasible_suspected;
    if !cfg.enabled {
        return None;
    }
    let n = judged(trajectory)?;
    let (best, best_pos) = stalled(trajectory, n, cfg.k)?;
    let start = n + 1 - usize::try_from(cfg.k).ok()?;
    if !trajectory[start..=n].iter().all(|a| a.tree_changed) {
        return None;
    }
    let core = never_passed_core(trajectory);
    if core.is_empty() {
        return None;
    }
    let contributors = vec![
        format!(
            "{} test(s) never passed in any of {} iterations: {}",
            core.len(),
            n + 1,
            list_ids(&core)
        ),
        format!(
            "no new best failing count in the last {} attempts though each changed the tree (best {best} at iteration {}; since: {})",
            cfg.k,
            trajectory[best_pos].iteration,
            counts_text(trajectory, n, cfg.k)
        ),
    ];
    Some(Halt {
        reason: HaltReason::InfeasibleSuspected,
        contributors,
        detail: json!({
            "iteration": trajectory[n].iteration,
            "k": cfg.k,
            "best_failing_count": best,
            "best_iteration": trajectory[best_pos].iteration,
            "window": window_counts(trajectory, n, cfg.k),
            "core_count": core.len(),
            "core": core.iter().take(MAX_LISTED).collect::<Vec<_>>(),
        }),
    })
}

/// Row 6: stalled over `k` while the failures kept changing.
#[must_use]
pub fn no_progress_detected(trajectory: &[AttemptView], policy: &ProgressPolicy) -> Option<Halt> {
    let cfg = &policy.no_progress_detected;
    if !cfg.enabled {
        return None;
    }
    let n = judged(trajectory)?;
    let (best, best_pos) = stalled(trajectory, n, cfg.k)?;
    let start = n + 1 - usize::try_from(cfg.k).ok()?;
    let threshold = policy.same_failure_repeated.similarity;
    let changes: Vec<usize> = (start..=n)
        .filter(|&i| !same_failure(&trajectory[i - 1], &trajectory[i], threshold))
        .collect();
    if changes.is_empty() {
        return None;
    }
    let mut contributors = vec![format!(
        "no new best failing count in the last {} attempts: best {best} at iteration {}; since: {}",
        cfg.k,
        trajectory[best_pos].iteration,
        counts_text(trajectory, n, cfg.k)
    )];
    for &i in changes.iter().take(MAX_LISTED) {
        let (entered, left) = entered_left(&trajectory[i - 1], &trajectory[i]);
        let what = if entered.is_empty() && left.is_empty() {
            "same tests, different messages".to_string()
        } else {
            format!("+{{{}}} -{{{}}}", list_ids(&entered), list_ids(&left))
        };
        contributors.push(format!(
            "failures changed at iteration {}: {what}",
            trajectory[i].iteration
        ));
    }
    Some(Halt {
        reason: HaltReason::NoProgressDetected,
        contributors,
        detail: json!({
            "iteration": trajectory[n].iteration,
            "k": cfg.k,
            "best_failing_count": best,
            "best_iteration": trajectory[best_pos].iteration,
            "window": window_counts(trajectory, n, cfg.k),
            "changed_at": changes.iter().map(|&i| trajectory[i].iteration).collect::<Vec<_>>(),
        }),
    })
}

/// Ids that entered F (failing in `cur`, not in `prev`) and left F, sorted.
#[must_use]
pub fn entered_left(prev: &AttemptView, cur: &AttemptView) -> (Vec<String>, Vec<String>) {
    let entered = cur
        .failing
        .keys()
        .filter(|id| !prev.failing.contains_key(*id))
        .cloned()
        .collect();
    let left = prev
        .failing
        .keys()
        .filter(|id| !cur.failing.contains_key(*id))
        .cloned()
        .collect();
    (entered, left)
}

/// `a, b, c` with at most [`MAX_LISTED`] names, then `(+N more)`.
pub(crate) fn list_ids<S: AsRef<str>>(ids: &[S]) -> String {
    let mut s = ids
        .iter()
        .take(MAX_LISTED)
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > MAX_LISTED {
        s.push_str(&format!(" (+{} more)", ids.len() - MAX_LISTED));
    }
    s
}

fn join_numbers<T: ToString>(xs: &[T]) -> String {
    xs.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `: "first line of the message"` (shortened), or nothing for an empty message.
fn quote(msg: &str) -> String {
    let line = msg
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.is_empty() {
        return String::new();
    }
    let mut excerpt: String = line.chars().take(MESSAGE_EXCERPT).collect();
    if line.chars().count() > MESSAGE_EXCERPT {
        excerpt.push('…');
    }
    format!(": \"{excerpt}\"")
}
