//! loopexec: run a coding agent in a bounded, auditable loop and halt only on a
//! reason computed from observed state.
//!
//! The crate is organised around one idea (see SPEC.md): observers turn the world
//! into plain data ([`observe`], [`proc`], [`check`]); every observation is written to
//! the receipt ([`receipt`]) and folded into a [`trajectory::Trajectory`]; the pure
//! [`decide::decide`] joins the detectors ([`detect`]) in a fixed order and returns
//! continue or a [`halt::Halt`]. `explain-halt` re-runs `decide` over a receipt with
//! the same code.

pub mod check;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod control;
pub mod decide;
pub mod detect;
pub mod engine;
pub mod explain;
pub mod gate;
pub mod halt;
pub mod judgment;
pub mod observe;
pub mod oracle;
pub mod output;
pub mod proc;
pub mod progress;
pub mod receipt;
pub mod stats;
pub mod store;
pub mod trajectory;
pub mod workspace;
