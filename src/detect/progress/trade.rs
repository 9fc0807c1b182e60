//! Row 2 of the decision table, `unsatisfiable_constraints`: the search for a pair
//! of tests that trade places (see "Side", "flip" and "cycle" in the parent module doc).
//!
//! Only tests present in the last attempt that themselves flipped between failing and
//! passing at least `2·cycles` times can belong to such a pair. They are grouped by
//! identical status history (a group moves together and is reported together), and
//! failing-now groups are paired with passing-now groups, at most
//! [`MAX_PAIR_GROUPS`] per side.

use super::{
    join_numbers, judged, list_ids, AttemptView, ProgressPolicy, MAX_LISTED, MAX_PAIR_GROUPS,
};
use crate::check::model::UNATTRIBUTED_SUFFIX;
use crate::halt::{Halt, HaltReason};
use serde_json::json;
use std::collections::BTreeMap;

/// A test's status at one position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Status {
    Absent,
    Fail,
    Pass,
}

fn status(attempt: &AttemptView, id: &str) -> Status {
    if attempt.failing.contains_key(id) {
        Status::Fail
    } else if attempt.passing.contains(id) {
        Status::Pass
    } else {
        Status::Absent
    }
}

/// Changes between failing and passing in one test's history (absences skipped).
fn own_flips(history: &[Status]) -> usize {
    let mut prev = None;
    let mut flips = 0;
    for &s in history.iter().filter(|s| **s != Status::Absent) {
        if prev.is_some_and(|p| p != s) {
            flips += 1;
        }
        prev = Some(s);
    }
    flips
}

/// The trade record of a pair: positions on each side and the number of flips, or
/// `None` when the two ever pass together.
struct Trade {
    flips: usize,
    x_side: Vec<usize>,
    y_side: Vec<usize>,
}

fn trade(x: &[Status], y: &[Status]) -> Option<Trade> {
    let mut t = Trade {
        flips: 0,
        x_side: Vec::new(),
        y_side: Vec::new(),
    };
    let mut prev: Option<bool> = None;
    for (i, pair) in x.iter().zip(y).enumerate() {
        let side_x = match pair {
            (Status::Pass, Status::Pass) => return None,
            (Status::Fail, Status::Pass) => true,
            (Status::Pass, Status::Fail) => false,
            _ => continue,
        };
        if prev.is_some_and(|p| p != side_x) {
            t.flips += 1;
        }
        prev = Some(side_x);
        if side_x {
            t.x_side.push(i);
        } else {
            t.y_side.push(i);
        }
    }
    Some(t)
}

/// Row 2: two tests trade places (fixing one breaks the other) over at least
/// `cycles` cycles, and they are on opposite sides in the last attempt.
#[must_use]
pub fn unsatisfiable_constraints(
    trajectory: &[AttemptView],
    policy: &ProgressPolicy,
) -> Option<Halt> {
    let cfg = &policy.unsatisfiable_constraints;
    if !cfg.enabled {
        return None;
    }
    let n = judged(trajectory)?;
    let last = &trajectory[n];
    let cycles = usize::try_from(cfg.cycles).unwrap_or(usize::MAX).max(1);
    let need = cycles.saturating_mul(2);
    let mut failing_groups: BTreeMap<Vec<Status>, Vec<&str>> = BTreeMap::new();
    let mut passing_groups: BTreeMap<Vec<Status>, Vec<&str>> = BTreeMap::new();
    let ids = last.failing.keys().chain(last.passing.iter());
    for id in ids.filter(|id| !id.ends_with(UNATTRIBUTED_SUFFIX)) {
        let history: Vec<Status> = trajectory.iter().map(|a| status(a, id)).collect();
        if own_flips(&history) < need {
            continue;
        }
        let groups = match history[n] {
            Status::Fail => &mut failing_groups,
            _ => &mut passing_groups,
        };
        groups.entry(history).or_default().push(id);
    }
    // (flips, x ids, y ids, trade) of the best pair: most flips, then smallest ids.
    let mut best: Option<(usize, &Vec<&str>, &Vec<&str>, Trade)> = None;
    for (xh, xs) in failing_groups.iter().take(MAX_PAIR_GROUPS) {
        for (yh, ys) in passing_groups.iter().take(MAX_PAIR_GROUPS) {
            let Some(t) = trade(xh, yh) else { continue };
            if t.flips < need {
                continue;
            }
            let better = match &best {
                None => true,
                Some((f, bx, by, _)) => {
                    t.flips > *f || (t.flips == *f && (xs[0], ys[0]) < (bx[0], by[0]))
                }
            };
            if better {
                best = Some((t.flips, xs, ys, t));
            }
        }
    }
    let (flips, xs, ys, t) = best?;
    let (x, y) = (xs[0], ys[0]);
    let iters = |ps: &[usize]| {
        ps.iter()
            .map(|&p| trajectory[p].iteration)
            .collect::<Vec<_>>()
    };
    let x_at = iters(&t.x_side);
    let y_at = iters(&t.y_side);
    let mut contributors = vec![
        format!(
            "{x} and {y} trade places: fixing one breaks the other ({} cycles, {flips} flips; they never pass together)",
            flips / 2
        ),
        format!("{x} fails while {y} passes at iterations {}", join_numbers(&x_at)),
        format!("{y} fails while {x} passes at iterations {}", join_numbers(&y_at)),
    ];
    if xs.len() > 1 {
        contributors.push(format!("moving together with {x}: {}", list_ids(&xs[1..])));
    }
    if ys.len() > 1 {
        contributors.push(format!("moving together with {y}: {}", list_ids(&ys[1..])));
    }
    Some(Halt {
        reason: HaltReason::UnsatisfiableConstraints,
        contributors,
        detail: json!({
            "iteration": last.iteration,
            "pair": [x, y],
            "cycles": flips / 2,
            "required_cycles": cfg.cycles,
            "flips": flips,
            "first_fails_at": x_at,
            "second_fails_at": y_at,
            "moves_with_first": xs.iter().skip(1).take(MAX_LISTED).collect::<Vec<_>>(),
            "moves_with_second": ys.iter().skip(1).take(MAX_LISTED).collect::<Vec<_>>(),
        }),
    })
}
