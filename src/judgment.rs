//! The judgment layer's part of `decide` (SPEC §9): task lists, the context budget
//! and the judge, joined into decisions. Called from [`crate::decide::decide`] at two
//! points — before an iteration's steps, and after a green that passed every guard
//! and its confirmations — so the deterministic gate always runs first and judgment
//! can only veto or escalate a green, never promote a red.

use crate::config::RunConfig;
use crate::decide::{Decision, Next};
use crate::detect::{context, judge, tasks};
use crate::halt::{Halt, Verdict};
use crate::trajectory::Trajectory;

fn halt(h: Halt) -> Option<Decision> {
    Some(Decision {
        verdict: Verdict::Halt(h),
        next: None,
    })
}

fn go(next: Next) -> Option<Decision> {
    Some(Decision {
        verdict: Verdict::Continue,
        next: Some(next),
    })
}

/// Before the last iteration's next step: read the task list (every iteration),
/// then, before an exec, halt when no task is actionable or the context cannot fit.
#[must_use]
pub fn before_step(t: &Trajectory, cfg: &RunConfig) -> Option<Decision> {
    match tasks::step(t, cfg) {
        Some(tasks::TaskStep::Observe) => return go(Next::ObserveTasks),
        Some(tasks::TaskStep::Halt(h)) => return halt(h),
        None => {}
    }
    match context::step(t, cfg) {
        Some(context::ContextStep::Build) => go(Next::BuildContext),
        Some(context::ContextStep::Halt(h)) => halt(h),
        None => None,
    }
}

/// After the last iteration's green passed every guard and its confirmations: the
/// judge (when due), then the task list (open tasks left: next iteration). `None`:
/// the green ends the run (`success_condition_met`).
#[must_use]
pub fn after_green(t: &Trajectory, cfg: &RunConfig) -> Option<Decision> {
    let final_green = !tasks::open_remain_after_green(t, cfg);
    match judge::gate(t, cfg, final_green) {
        Some(judge::Gate::Run) => return go(Next::Judge),
        Some(judge::Gate::Halt(h)) => return halt(h),
        None => {}
    }
    if !final_green {
        return go(Next::NextIteration { revert_to: None });
    }
    None
}
