//! Receipt events of the judgment layer (schema 1, fields only ever added): the judge's
//! input and output, the task list as read at the start of an iteration, and the
//! context the agent must be given. Each is recorded before `decide` reads it, so
//! `explain-halt` re-derives `reviewer_rejected`, `reward_hacking_detected`,
//! `escalation_pending`, `no_actionable_tasks` and `context_budget_unsatisfiable`
//! offline from the same observations.

use crate::proc::StepResult;
use serde::{Deserialize, Serialize};

/// One run of the judge (`--judge`) on a green iteration.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JudgeFinished {
    pub iteration: u32,
    /// The JSON object the judge read on stdin, exactly as given (secrets redacted).
    pub input: serde_json::Value,
    /// The judge process (exit, signal, timeout, excerpts).
    pub step: StepResult,
    /// The judge's standard output (at most [`JUDGE_OUTPUT_LIMIT`] bytes, lossy UTF-8,
    /// secrets redacted): the verdict is parsed from this text by the pure detector.
    pub output: String,
    /// True when the output was longer than the limit (and cut).
    #[serde(default)]
    pub output_truncated: bool,
    /// The judge's spend, metered like the agent's (`null` when it reported none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::observe::usage::IterationUsage>,
    /// The directory the judge ran in.
    #[serde(default)]
    pub dir: String,
}

/// Most bytes of judge output kept in the receipt.
pub const JUDGE_OUTPUT_LIMIT: usize = 64 * 1024;

/// The task list as read at the start of an iteration (`--tasks`).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TasksObserved {
    pub iteration: u32,
    /// The task file, as configured.
    pub file: String,
    /// The tasks in file order; empty with `error` set when the file could not be read.
    pub tasks: Vec<crate::observe::tasks::Task>,
    /// Why the file could not be read or parsed, naming the line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The context the agent must read, measured before an iteration's exec.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextBuilt {
    pub iteration: u32,
    /// The report of `build-context` (model, window, parts and their token estimates).
    pub report: crate::observe::context::ContextReport,
}
