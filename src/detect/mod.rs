//! Pure detectors over the trajectory: no I/O, no clock, no randomness. Each owns
//! one family of halt reasons; [`crate::decide::decide`] runs them in a fixed order.

pub mod context;
pub mod drift;
pub mod execution;
pub mod holds;
pub mod integrity;
pub mod judge;
pub mod liveness;
pub mod objective;
pub mod oracle;
pub mod progress;
pub mod rate;
pub mod scope;
pub mod spend;
pub mod summary;
pub mod tasks;
#[cfg(test)]
pub(crate) mod testkit;
