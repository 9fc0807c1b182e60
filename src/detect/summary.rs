//! A compact, human-oriented digest of a progress trajectory, and the operator advice
//! `explain-halt` prints for the class-17 reasons and for `max_iterations_reached`.
//!
//! Pure functions over the same [`AttemptView`] trajectory the detectors read
//! (position 0 = baseline), so a summary recomputed from a receipt is identical to the
//! one computed live. The one judgment made here, [`TrajectorySummary::improving_at_end`],
//! is what separates "out of budget, raise the limit" from "stalled, do not retry" at
//! the iteration cap.

use crate::detect::progress::{accepted, entered_left, list_ids, never_passed_core, AttemptView};
use crate::halt::{Advice, HaltReason};
use serde::{Deserialize, Serialize};

/// The window (in attempts) [`summarize`] uses for `improving_at_end`: the default
/// `k` of `[halt.no_progress_detected]`.
pub const DEFAULT_WINDOW: u32 = 3;

/// Largest number of ids kept in one `entered` / `left` list (the counts stay exact).
pub const MAX_DELTA_IDS: usize = 50;

/// The sparkline glyphs, lowest to highest.
const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// One iteration of the digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterationDelta {
    /// The recorded iteration number (0 = baseline).
    pub iteration: u32,
    /// |F| of this iteration.
    pub failing_count: usize,
    /// Ids failing here that did not fail in the previous iteration, sorted, at most
    /// [`MAX_DELTA_IDS`]. For the baseline: its whole failing set (the starting point).
    pub entered: Vec<String>,
    /// Exact size of the entered set.
    pub entered_count: usize,
    /// Ids that failed in the previous iteration and do not fail here, sorted, at most
    /// [`MAX_DELTA_IDS`]. Empty for the baseline.
    pub left: Vec<String>,
    /// Exact size of the left set.
    pub left_count: usize,
    /// Accepted by the ratchet ([`accepted`]).
    pub accepted: bool,
    pub green: bool,
    pub tree_changed: bool,
}

/// Digest of a trajectory for `explain-halt` and reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrajectorySummary {
    /// |F_i| per position, baseline first.
    pub failing_counts: Vec<usize>,
    /// One glyph per position: `▁` for 0 failures, otherwise `▂`..`█` scaled to the
    /// largest count (ceiling), so any non-zero count is visibly above zero.
    pub sparkline: String,
    /// Per-position detail, baseline first.
    pub iterations: Vec<IterationDelta>,
    /// Smallest |F| observed, `None` for an empty trajectory.
    pub best_failing_count: Option<usize>,
    /// First iteration that reached [`Self::best_failing_count`].
    pub best_iteration: Option<u32>,
    /// Window `k` (attempts) used for [`Self::improving_at_end`].
    pub window: u32,
    /// A new best |F| (strictly below every earlier position, baseline included)
    /// happened within the last `window` attempts. `false` with no attempt.
    pub improving_at_end: bool,
    /// Tests failing at the end that never passed anywhere ([`never_passed_core`]).
    pub never_passed: Vec<String>,
}

/// [`summarize_with_window`] with [`DEFAULT_WINDOW`].
#[must_use]
pub fn summarize(trajectory: &[AttemptView]) -> TrajectorySummary {
    summarize_with_window(trajectory, DEFAULT_WINDOW)
}

/// Builds the digest; `window` is the `k` for "still improving at the end" (use the
/// run's `[halt.no_progress_detected].k`). A window of 0 is treated as 1.
#[must_use]
pub fn summarize_with_window(trajectory: &[AttemptView], window: u32) -> TrajectorySummary {
    let counts: Vec<usize> = trajectory.iter().map(|a| a.failing.len()).collect();
    let acc = accepted(trajectory);
    let iterations = trajectory
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let (entered, left) = match i.checked_sub(1) {
                Some(p) => entered_left(&trajectory[p], a),
                None => (a.failing.keys().cloned().collect(), Vec::new()),
            };
            IterationDelta {
                iteration: a.iteration,
                failing_count: a.failing.len(),
                entered_count: entered.len(),
                left_count: left.len(),
                entered: entered.into_iter().take(MAX_DELTA_IDS).collect(),
                left: left.into_iter().take(MAX_DELTA_IDS).collect(),
                accepted: acc[i],
                green: a.green,
                tree_changed: a.tree_changed,
            }
        })
        .collect();
    // "Best" is the ratchet's best: a rejected iteration's count never qualifies.
    let best = counts
        .iter()
        .enumerate()
        .filter(|&(i, _)| acc[i])
        .min_by_key(|&(i, c)| (*c, i));
    TrajectorySummary {
        sparkline: sparkline(&counts),
        iterations,
        best_failing_count: best.map(|(_, c)| *c),
        best_iteration: best.map(|(i, _)| trajectory[i].iteration),
        window,
        improving_at_end: improving_at_end(&counts, &acc, window),
        never_passed: never_passed_core(trajectory),
        failing_counts: counts,
    }
}

/// A new best within the last `window` attempts. Only the ratchet's accepted
/// iterations count, as bar and as new best: a rejected iteration's lower count was
/// thrown away, so a run whose last attempts were rejected is not "improving".
fn improving_at_end(counts: &[usize], accepted: &[bool], window: u32) -> bool {
    let Some(n) = counts.len().checked_sub(1) else {
        return false;
    };
    if n == 0 {
        return false;
    }
    let acc = |i: usize| accepted.get(i).copied().unwrap_or(true);
    let k = usize::try_from(window).unwrap_or(usize::MAX).clamp(1, n);
    (n + 1 - k..=n).any(|i| {
        acc(i)
            && counts[..i]
                .iter()
                .enumerate()
                .filter(|&(j, _)| acc(j))
                .all(|(_, &c)| counts[i] < c)
    })
}

/// The attempts made after the best failing count, in words: "any of its 50
/// attempts" when the baseline was the best, "the 3 attempts since" otherwise.
fn attempts_since_best(summary: &TrajectorySummary) -> String {
    let made = summary.failing_counts.len().saturating_sub(1);
    let best = summary
        .best_iteration
        .and_then(|i| usize::try_from(i).ok())
        .unwrap_or(0);
    match (best, made.saturating_sub(best)) {
        (_, 0) => "its last attempt".to_string(),
        (0, 1) => "its only attempt".to_string(),
        (0, n) => format!("any of its {n} attempts"),
        (_, 1) => "the attempt since".to_string(),
        (_, n) => format!("the {n} attempts since"),
    }
}

/// One glyph per count (see [`TrajectorySummary::sparkline`]); empty input, empty string.
#[must_use]
pub fn sparkline(counts: &[usize]) -> String {
    let max = counts.iter().copied().max().unwrap_or(0);
    counts
        .iter()
        .map(|&c| {
            if max == 0 || c == 0 {
                BLOCKS[0]
            } else {
                // ceil(c * 7 / max) in 1..=7; u128 keeps the product exact.
                let level = (c as u128 * 7).div_ceil(max as u128);
                BLOCKS[usize::try_from(level).unwrap_or(7).clamp(1, 7)]
            }
        })
        .collect()
}

/// The advice class once the trajectory is known: `max_iterations_reached` while
/// not improving is [`Advice::DoNotRetry`]; `budget_exceeded` while still improving
/// is [`Advice::RaiseTheLimit`] (the money ran out, not the progress); everything
/// else is [`HaltReason::advice`].
#[must_use]
pub fn refined_advice(reason: HaltReason, summary: &TrajectorySummary) -> Advice {
    match reason {
        HaltReason::MaxIterationsReached if !summary.improving_at_end => Advice::DoNotRetry,
        HaltReason::BudgetExceeded if summary.improving_at_end => Advice::RaiseTheLimit,
        _ => reason.advice(),
    }
}

/// One or two sentences telling the operator what to do after `reason`, using the
/// trajectory digest for figures. Says "raise the limit" only for
/// `max_iterations_reached` while improving; says "do not retry" for every class-17
/// reason and for a cap reached while stalled. Other reasons get a generic sentence
/// from their [`Advice`].
#[must_use]
pub fn advice_text(reason: HaltReason, summary: &TrajectorySummary) -> String {
    let best = match (summary.best_failing_count, summary.best_iteration) {
        (Some(c), Some(i)) => format!("best {c} failing at iteration {i}"),
        _ => "no failing count recorded".to_string(),
    };
    let core = if summary.never_passed.is_empty() {
        String::new()
    } else {
        format!(" (never passed: {})", list_ids(&summary.never_passed))
    };
    match reason {
        HaltReason::MaxIterationsReached if summary.improving_at_end => format!(
            "The loop was still improving when it reached the iteration cap ({best}; trend {}): raise the limit (--max-iterations) and run again; more iterations are a rational retry.",
            summary.sparkline
        ),
        HaltReason::MaxIterationsReached => format!(
            "The loop reached the iteration cap without a new best failing count in {} ({best}): do not retry with a higher limit alone; look at the failures that kept recurring{core} and change the task or the approach.",
            attempts_since_best(summary)
        ),
        HaltReason::SameFailureRepeated => format!(
            "The agent produced the same failure attempt after attempt ({best}): do not retry with more budget; give the agent new information (the failure message, the code involved) or change the approach{core}."
        ),
        HaltReason::NoProgressDetected => format!(
            "The failures kept changing but the failing count stopped improving ({best}): do not retry with more budget; the agent is churning, so look at which tests entered and left the failing set each iteration."
        ),
        HaltReason::OscillationDetected => "The loop is thrashing between failing states it has already visited: do not retry with more budget; widen the agent's context or state the conflicting requirement explicitly to break the cycle.".to_string(),
        HaltReason::SameTestRegressed => "A test that passed in an accepted iteration failed again: do not retry with more budget; inspect the change that broke it again, or run with on_regression = \"revert\" to keep the last accepted state.".to_string(),
        HaltReason::UnsatisfiableConstraints => "Two tests keep trading places, as if their requirements contradict each other: do not retry with more budget; check whether both expectations can hold at once and fix the tests or the task.".to_string(),
        HaltReason::InfeasibleSuspected => format!(
            "The tree kept changing but the failing count stalled and {} test(s) never passed{core}: there may be no reachable green; do not retry with more budget, and verify that these tests can pass at all.",
            summary.never_passed.len()
        ),
        other => match other.advice() {
            Advice::Done => "The check passed: nothing left to do.".to_string(),
            Advice::RaiseTheLimit => "The loop ran out of iterations: raise the limit and run again.".to_string(),
            Advice::DoNotRetry => "More budget will not help: do not retry as is; change the task, the approach or the agent.".to_string(),
            Advice::FixTheCheck => "The check itself cannot be trusted: fix the check before believing any verdict it gave.".to_string(),
            Advice::FixTheEnvironment => "The machine, workdir or configuration must be fixed before running again.".to_string(),
            Advice::HumanMustDecide => "A person must look at the contributors and decide how to proceed.".to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::halt::ExitClass;

    fn view(i: u32, failing: &[&str], passing: &[&str]) -> AttemptView {
        AttemptView {
            iteration: i,
            green: failing.is_empty(),
            failing: std::sync::Arc::new(
                failing
                    .iter()
                    .map(|k| (k.to_string(), String::new()))
                    .collect(),
            ),
            passing: std::sync::Arc::new(passing.iter().map(|s| s.to_string()).collect()),
            tree_changed: i > 0,
        }
    }

    fn counts_traj(counts: &[usize]) -> Vec<AttemptView> {
        let names: Vec<String> = (0..counts.iter().copied().max().unwrap_or(0))
            .map(|k| format!("case_{k}"))
            .collect();
        counts
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let f: Vec<&str> = names[..c].iter().map(String::as_str).collect();
                let p: Vec<&str> = names[c..].iter().map(String::as_str).collect();
                view(i as u32, &f, &p)
            })
            .collect()
    }

    /// A rejected iteration (it broke a test that had passed) never becomes "best",
    /// even with the smallest failing count.
    #[test]
    fn best_never_points_at_a_rejected_iteration() {
        let t = vec![
            view(0, &["a", "b", "c"], &["d"]),
            view(1, &["a", "b"], &["c", "d"]),
            view(2, &["d"], &["a", "b", "c"]), // d passed before: rejected
        ];
        let s = summarize(&t);
        assert!(!s.iterations[2].accepted);
        assert_eq!((s.best_failing_count, s.best_iteration), (Some(2), Some(1)));
    }

    /// "Still improving" counts only accepted iterations: a lower count the ratchet
    /// rejected neither is a new best nor sets the bar for one.
    #[test]
    fn a_rejected_iteration_is_not_improvement() {
        // (trajectory, improving at the end)
        let cases: [(Vec<AttemptView>, bool); 3] = [
            // 3 -> 2 (accepted) -> 1 (rejected: c passed before) -> 1 (rejected)
            (
                vec![
                    view(0, &["a", "b", "c"], &[]),
                    view(1, &["a", "b"], &["c"]),
                    view(2, &["c"], &["a", "b"]),
                    view(3, &["c"], &["a", "b"]),
                ],
                true, // iteration 1 is within the last 3 attempts
            ),
            (
                vec![
                    view(0, &["a", "b", "c"], &[]),
                    view(1, &["a", "b"], &["c"]),
                    view(2, &["c"], &["a", "b"]),
                    view(3, &["c"], &["a", "b"]),
                    view(4, &["c"], &["a", "b"]),
                    view(5, &["c"], &["a", "b"]),
                ],
                false,
            ),
            // A rejected low count does not raise the bar for a later accepted one.
            (
                vec![
                    view(0, &["a", "b", "c", "d"], &[]),
                    view(1, &["a", "b", "c"], &["d"]),
                    view(2, &["d"], &["a", "b", "c"]),
                    view(3, &["a", "b"], &["c", "d"]),
                ],
                true,
            ),
        ];
        for (t, want) in cases {
            let s = summarize(&t);
            assert_eq!(s.improving_at_end, want, "{:?}", s.failing_counts);
        }
    }

    /// The cap's advice counts the attempts made since the best count, never more
    /// than were made and never a detector's window (a new user's 50 attempts with no
    /// new best read "in its last 3 attempts").
    #[test]
    fn the_cap_advice_counts_the_attempts_since_the_best() {
        let cases: [(&[usize], &str); 4] = [
            (&[2, 2], "its only attempt"),
            (&[2, 2, 2], "any of its 2 attempts"),
            (&[2, 2, 2, 2, 2, 2], "any of its 5 attempts"),
            (&[4, 2, 3, 3, 3, 3], "the 4 attempts since"),
        ];
        for (counts, want) in cases {
            let text = advice_text(
                HaltReason::MaxIterationsReached,
                &summarize(&counts_traj(counts)),
            );
            assert!(text.contains(want), "{counts:?}: {text}");
        }
    }

    #[test]
    fn improving_cap_is_detected_and_advises_raising_the_limit() {
        let s = summarize(&counts_traj(&[6, 5, 4, 3]));
        assert_eq!(s.failing_counts, vec![6, 5, 4, 3]);
        assert!(s.improving_at_end);
        assert_eq!((s.best_failing_count, s.best_iteration), (Some(3), Some(3)));
        assert_eq!(
            refined_advice(HaltReason::MaxIterationsReached, &s),
            Advice::RaiseTheLimit
        );
        let text = advice_text(HaltReason::MaxIterationsReached, &s);
        assert!(text.contains("raise the limit"), "{text}");
        assert!(!text.contains("do not retry"));
    }

    /// A budget halt says "raise the cap" only while the loop was improving, and
    /// never both that and "do not retry".
    #[test]
    fn a_budget_halt_follows_the_trend() {
        let cases: [(&[usize], Advice); 3] = [
            (&[3, 2], Advice::RaiseTheLimit),
            (&[6, 5, 4, 3], Advice::RaiseTheLimit),
            (&[4, 2, 3, 2, 2], Advice::DoNotRetry),
        ];
        for (counts, want) in cases {
            let s = summarize(&counts_traj(counts));
            assert_eq!(
                refined_advice(HaltReason::BudgetExceeded, &s),
                want,
                "{counts:?}"
            );
        }
    }

    #[test]
    fn stalled_cap_advises_not_to_retry() {
        // Best reached at iteration 1, then three attempts without a new best.
        let s = summarize(&counts_traj(&[4, 2, 3, 2, 2]));
        assert!(!s.improving_at_end);
        assert_eq!(s.best_iteration, Some(1));
        assert_eq!(
            refined_advice(HaltReason::MaxIterationsReached, &s),
            Advice::DoNotRetry
        );
        let text = advice_text(HaltReason::MaxIterationsReached, &s);
        assert!(
            text.contains("do not retry") && !text.contains("raise the limit"),
            "{text}"
        );
        // A longer window still sees the new best at iteration 1.
        assert!(summarize_with_window(&counts_traj(&[4, 2, 3, 2, 2]), 4).improving_at_end);
    }

    #[test]
    fn every_class_17_reason_says_do_not_retry() {
        let s = summarize(&counts_traj(&[2, 2, 2, 2]));
        for r in HaltReason::ALL
            .into_iter()
            .filter(|r| r.class() == ExitClass::NoConvergence)
        {
            let text = advice_text(r, &s);
            assert!(text.contains("do not retry"), "{r}: {text}");
        }
        assert!(advice_text(HaltReason::CheckFlaky, &s).contains("fix the check"));
    }

    #[test]
    fn deltas_track_entered_and_left_ids() {
        let t = vec![
            view(0, &["a", "b"], &["c"]),
            view(1, &["b", "c"], &["a"]),
            view(2, &[], &["a", "b", "c"]),
        ];
        let s = summarize(&t);
        assert_eq!(s.iterations[0].entered, vec!["a", "b"]);
        assert!(s.iterations[0].left.is_empty());
        assert_eq!(s.iterations[1].entered, vec!["c"]);
        assert_eq!(s.iterations[1].left, vec!["a"]);
        assert_eq!(s.iterations[2].left, vec!["b", "c"]);
        assert_eq!(s.iterations[2].left_count, 2);
        assert_eq!(
            s.iterations.iter().map(|d| d.accepted).collect::<Vec<_>>(),
            vec![true, false, true]
        );
        assert_eq!(s.best_failing_count, Some(0));
        assert!(s.improving_at_end);
    }

    #[test]
    fn never_passed_core_is_reported_and_named_in_advice() {
        let t = vec![
            view(0, &["hard", "easy"], &["x"]),
            view(1, &["hard"], &["x", "easy"]),
            view(2, &["hard", "easy"], &["x"]),
        ];
        let s = summarize(&t);
        assert_eq!(s.never_passed, vec!["hard"]);
        let text = advice_text(HaltReason::InfeasibleSuspected, &s);
        assert!(
            text.contains("hard") && text.contains("1 test(s)"),
            "{text}"
        );
    }

    #[test]
    fn sparkline_scales_to_the_largest_count() {
        assert_eq!(sparkline(&[7, 6, 0, 1]), "█▇▁▂");
        assert_eq!(sparkline(&[0, 0]), "▁▁");
        assert_eq!(sparkline(&[3, 3]), "██");
        assert_eq!(sparkline(&[]), "");
        assert_eq!(sparkline(&[1000, 1]).chars().nth(1), Some('▂'));
    }

    #[test]
    fn empty_and_baseline_only_trajectories() {
        let s = summarize(&[]);
        assert!(s.failing_counts.is_empty() && s.sparkline.is_empty());
        assert_eq!(s.best_failing_count, None);
        assert!(!s.improving_at_end);
        let s = summarize(&counts_traj(&[3]));
        assert!(!s.improving_at_end);
        assert_eq!(s.best_iteration, Some(0));
        assert!(advice_text(HaltReason::MaxIterationsReached, &s).contains("do not retry"));
    }

    #[test]
    fn summary_round_trips_through_json() {
        let s = summarize(&counts_traj(&[5, 4, 4, 3]));
        let back: TrajectorySummary =
            serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }
}
