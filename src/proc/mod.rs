//! Child processes: spawning a step in its own process group, bounded capture of its
//! output, timeouts and stops that end the whole group.

pub mod capture;
pub mod cargo_runner;
pub mod escape;
pub mod sandbox;
pub mod supervise;

pub use capture::{CaptureLimits, CaptureSummary, LineSink, Stream};
pub use supervise::{
    end_group, group_alive, run_step, Progress, Spools, StepResult, StepSpec, StopCause,
};
