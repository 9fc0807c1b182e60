//! The ratchet's action: restoring the last accepted snapshot after a rejected iteration.

use super::{EngineError, Loop};
use crate::receipt::events::Reverted;
use crate::receipt::Event;

impl Loop<'_> {
    /// At a halt that ends the run's work (the cap, no convergence, a budget), when the
    /// last iteration was rejected by the ratchet, restores the last accepted tree
    /// first, as the next iteration would have: the run leaves the tree it would
    /// stand behind, never a rejected one. The `reverted` line precedes `halted`;
    /// `decide` does not read it, so the verdict re-derives the same.
    ///
    /// # Errors
    /// A restore that fails ([`Loop::revert`]).
    pub(super) fn leave_accepted_tree(&mut self, h: &crate::halt::Halt) -> Result<(), EngineError> {
        use crate::halt::ExitClass;
        if !matches!(
            h.reason.class(),
            ExitClass::IterationCap | ExitClass::NoConvergence | ExitClass::Budget
        ) {
            return Ok(());
        }
        let views = self.traj.attempt_views(self.cfg.success_exit_code);
        let Some(to) = crate::detect::progress::last_accepted(&views) else {
            return Ok(());
        };
        let it = self.current_iteration();
        if views.last().map(|v| v.iteration) == Some(to)
            || it == to
            || self.traj.last().is_some_and(|i| i.reverted.is_some())
        {
            return Ok(());
        }
        self.revert(it, to)
    }

    pub(super) fn revert(&mut self, it: u32, to: u32) -> Result<(), EngineError> {
        let Some(snap) = self.tree.snapshot_of(to, &self.traj) else {
            return Ok(());
        };
        let views = self.traj.attempt_views(self.cfg.success_exit_code);
        let lost: Vec<String> = match (views.iter().find(|v| v.iteration == to), views.last()) {
            (Some(a), Some(b)) => a.passing.difference(&b.passing).cloned().collect(),
            _ => Vec::new(),
        };
        self.say(&format!(
            "rejected (regressed {}); restoring iteration {to}",
            lost.len()
        ));
        // The receipt says what is about to happen before it happens.
        self.record(Event::Reverted(Reverted {
            iteration: it,
            to_iteration: to,
            snapshot: snap.clone(),
            lost_tests: lost,
        }))?;
        // The next iteration must start from the accepted tree: a restore that fails
        // stops the run (internal_error) instead of letting it go on from the rejected one.
        self.tree.restore(&snap, &self.traj, to).map_err(|e| {
            EngineError::Tree(format!(
                "restoring iteration {to}'s tree after rejecting iteration {it} failed: {e}"
            ))
        })?;
        self.tree
            .refresh(&format!("{it}-reverted"))
            .map_err(|e| EngineError::Tree(format!("snapshot after the revert failed: {e}")))?;
        Ok(())
    }
}
