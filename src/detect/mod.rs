//! Pure detectors over the trajectory: no I/O, no clock, no randomness. Each owns
//! one family of halt reasons; [`crate::decide::decide`] runs them in a fixed order.

pub mod execution;
pub mod integrity;
pub mod oracle;
pub mod progress;
pub mod summary;

use crate::config::RunConfig;
use crate::halt::Halt;
use crate::trajectory::Trajectory;

/// Spend and model identity after an exec (budget, anomaly, drift).
#[must_use]
pub fn spend_hook(_t: &Trajectory, _cfg: &RunConfig) -> Option<Halt> {
    None
}

/// Comprehension debt after a check.
#[must_use]
pub fn comprehension_hook(_t: &Trajectory, _cfg: &RunConfig, _accepted: &[bool]) -> Option<Halt> {
    None
}

/// Whether a run-total budget is crossed while the exec streams (mid-iteration stop).
#[must_use]
pub fn budget_crossed_live(
    _t: &Trajectory,
    _cfg: &RunConfig,
    _m: &crate::observe::usage::LiveMeter,
) -> Option<String> {
    None
}
