//! Pure detectors over the trajectory: no I/O, no clock, no randomness. Each owns
//! one family of halt reasons; [`crate::decide::decide`] runs them in a fixed order.

pub mod execution;
pub mod holds;
pub mod integrity;
pub mod liveness;
pub mod oracle;
pub mod progress;
pub mod rate;
pub mod spend;
pub mod summary;
