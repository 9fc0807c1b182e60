//! Comprehension debt (class 19): the loop may not run ahead of the people who must
//! understand its work. With `--comprehension-every N`, after N accepted iterations
//! whose diffs no person has acknowledged (`loopexec ack`, recorded in the ledger and
//! carried into the receipt by `run --resume`), the run halts
//! `comprehension_debt_exceeded`. Iterations the ratchet rejected (and reverted) are
//! not debt: their diff is gone.

use crate::config::RunConfig;
use crate::halt::{Halt, HaltReason};
use crate::trajectory::Trajectory;

/// `comprehension_debt_exceeded` after a check. `accepted` is the ratchet's verdict per
/// attempt view (baseline first), as [`crate::detect::progress::accepted`] returns it.
#[must_use]
pub fn comprehension(t: &Trajectory, cfg: &RunConfig, accepted: &[bool]) -> Option<Halt> {
    let every = cfg.liveness.comprehension_every?;
    let views = t.attempt_views(cfg.success_exit_code);
    let acked = t.acknowledged_through.unwrap_or(0);
    let unacked: Vec<u32> = views
        .iter()
        .zip(accepted)
        .filter(|(v, a)| **a && v.iteration > acked && v.iteration > 0)
        .map(|(v, _)| v.iteration)
        .collect();
    if (unacked.len() as u32) < every {
        return None;
    }
    Some(Halt {
        reason: HaltReason::ComprehensionDebtExceeded,
        contributors: vec![format!(
            "{} accepted iteration(s) ({}) have not been acknowledged by a person (limit {every})",
            unacked.len(),
            unacked
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )],
        detail: serde_json::json!({"unacknowledged": unacked, "every": every, "acknowledged_through": t.acknowledged_through}),
    })
}
