//! `context_budget_unsatisfiable` (19, SPEC §9.4): before an iteration's exec, the
//! context the agent must be given (task, failing tests, their files, declared files)
//! is measured against the pinned model's window; when it cannot fit, the run halts
//! with the breakdown instead of letting the agent work from a truncated view.
//!
//! Measured only when there is something declared to measure (`--task` or
//! `--context-file`) and a model to measure against (`--model`, `[model] pin`).

use crate::config::RunConfig;
use crate::halt::{Halt, HaltReason};
use crate::trajectory::Trajectory;

/// What the context budget asks of the loop.
#[derive(Debug, Clone, PartialEq)]
pub enum ContextStep {
    /// Measure the context for this iteration.
    Build,
    /// Stop.
    Halt(Halt),
}

/// True when the run measures its context.
#[must_use]
pub fn enabled(cfg: &RunConfig) -> bool {
    cfg.model.pin.is_some() && (cfg.task.file.is_some() || !cfg.task.files.is_empty())
}

/// Before the last iteration's exec.
#[must_use]
pub fn step(t: &Trajectory, cfg: &RunConfig) -> Option<ContextStep> {
    if !enabled(cfg) {
        return None;
    }
    let last = t.last()?;
    if last.iteration == 0 || last.exec.is_some() {
        return None;
    }
    let Some(c) = &last.context else {
        return Some(ContextStep::Build);
    };
    let r = &c.report;
    if !r.exceeds() {
        return None;
    }
    let window = r.window.unwrap_or(0);
    let mut contributors = vec![format!(
        "the context iteration {} must be given is ~{} tokens (estimated as bytes/4), more than the {window}-token window of {} ({})",
        last.iteration,
        r.total_tokens,
        r.model,
        r.window_source.as_deref().unwrap_or("unknown source")
    )];
    let mut parts = r.parts.clone();
    parts.sort_by_key(|p| std::cmp::Reverse(p.tokens));
    for p in parts.iter().take(10) {
        contributors.push(format!("{} {}: ~{} tokens", p.kind, p.name, p.tokens));
    }
    Some(ContextStep::Halt(Halt {
        reason: HaltReason::ContextBudgetUnsatisfiable,
        contributors,
        detail: serde_json::to_value(r).unwrap_or_default(),
    }))
}
