//! The judge gate (SPEC §9.1): judgment on top of the deterministic gate. It can veto
//! or escalate a green, never promote a red: it is consulted only for an iteration
//! that is green, passed every guard and its confirmation runs, and it can only turn
//! that green into a halt of class 13 or 16 — or let it through.
//!
//! | judge outcome (recorded `judge_finished`) | halt |
//! |---|---|
//! | `{"verdict": "approve", …}` | none: the green stands (`success_condition_met`, or the next task) |
//! | `{"verdict": "reject", …}` | `reviewer_rejected` (16) |
//! | `{"verdict": "reward_hacking", …}` | `reward_hacking_detected` (13) |
//! | `{"verdict": "escalate", …}` | `escalation_pending` (16) |
//! | non-zero exit, signal, timeout, no start, no valid verdict | `escalation_pending` (16): the judge could not decide |
//! | the judge's spend so far has reached `[judge] budget_usd` (before a run) | `budget_exceeded` (18) |
//!
//! The verdict is parsed here, from the output text recorded in the receipt, so the
//! loop and `explain-halt` read the same verdict with the same code.

use crate::config::RunConfig;
use crate::halt::{Halt, HaltReason};
use crate::receipt::judgment::JudgeFinished;
use crate::trajectory::{is_green, Trajectory};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the judge decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// The work may stand.
    Approve,
    /// The work is wrong or unwanted; a person looks, acknowledges, and resumes.
    Reject,
    /// The work games the check (special-cases test inputs, weakens checks, hard-codes outputs).
    RewardHacking,
    /// The judge cannot tell; a person must decide.
    Escalate,
}

/// The verdict object a loopexec judge prints on stdout (the whole output, or its
/// last non-blank line).
///
/// `schemas/judge-verdict.schema.json` is generated from this type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "loopexec judge verdict")]
pub struct JudgeVerdict {
    /// approve, reject, reward_hacking or escalate.
    pub verdict: VerdictKind,
    /// Why, in sentences a person can check.
    pub reasons: Vec<String>,
    /// Where: file paths, lines, test ids, excerpts of the diff (strings or objects).
    pub evidence: Vec<serde_json::Value>,
}

/// The JSON Schema of [`JudgeVerdict`], pretty-printed with a trailing newline.
#[must_use]
pub fn verdict_schema_json() -> String {
    let schema = schemars::schema_for!(JudgeVerdict);
    let mut s = serde_json::to_string_pretty(&schema).unwrap_or_default();
    s.push('\n');
    s
}

/// Reads a verdict from a judge's output: the whole output as one JSON object, or
/// else its last non-blank line.
///
/// # Errors
/// A sentence saying why no verdict could be read.
pub fn parse_verdict(output: &str) -> Result<JudgeVerdict, String> {
    let whole = output.trim();
    if whole.is_empty() {
        return Err("the judge printed nothing on stdout".into());
    }
    let first = serde_json::from_str::<JudgeVerdict>(whole);
    if let Ok(v) = first {
        return Ok(v);
    }
    let last = whole
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    serde_json::from_str::<JudgeVerdict>(last.trim()).map_err(|e| {
        let shown: String = last.chars().take(120).collect();
        format!(
            "the judge's output is not a verdict object ({e}); last line: `{shown}`; expected {{\"verdict\": \"approve|reject|reward_hacking|escalate\", \"reasons\": [], \"evidence\": []}}"
        )
    })
}

/// Why a recorded judge run yields no usable verdict, if it does not.
#[must_use]
pub fn could_not_decide(j: &JudgeFinished) -> Option<String> {
    let s = &j.step;
    if let Some(e) = &s.spawn_error {
        return Some(format!("the judge could not be started: {e}"));
    }
    if s.timed_out {
        return Some(format!("the judge timed out after {} ms", s.duration_ms));
    }
    if let Some(sig) = s.signal {
        return Some(format!("the judge was ended by signal {sig}"));
    }
    if s.stopped.is_some() {
        return Some("the judge was stopped before it answered".into());
    }
    match s.exit_code {
        Some(0) => {}
        Some(c) => return Some(format!("the judge exited {c}")),
        None => return Some("the judge ended without an exit status".into()),
    }
    if j.output_truncated {
        return Some("the judge's output exceeded the receipt limit".into());
    }
    parse_verdict(&j.output).err()
}

/// The judge's spend over the run: (USD, tokens).
#[must_use]
pub fn spend(t: &Trajectory) -> (f64, u64) {
    t.iterations
        .iter()
        .filter_map(|i| i.judged.as_ref())
        .filter_map(|j| j.usage.clone())
        .fold((0.0, 0), |(c, n), u| {
            (c + u.cost_usd.unwrap_or(0.0), n + u.total_tokens())
        })
}

/// What the gate asks of the loop.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// Run the judge on this iteration.
    Run,
    /// The judged green halts.
    Halt(Halt),
}

/// Greens of iterations 1..=last (main check green), for `--judge-every`.
fn greens(t: &Trajectory, code: i32) -> usize {
    t.iterations
        .iter()
        .filter(|i| i.iteration > 0)
        .filter(|i| i.main_check().is_some_and(|c| is_green(c, code)))
        .count()
}

/// The gate for the last iteration, which is green, guard-clean and confirmed.
/// `final_green`: this green would end the run (no open task remains). `None`: the
/// judge has nothing to say (not configured, iteration 0, or not due under
/// `[judge] every`, or it approved).
#[must_use]
pub fn gate(t: &Trajectory, cfg: &RunConfig, final_green: bool) -> Option<Gate> {
    cfg.judge.command.as_ref()?;
    let last = t.last()?;
    if last.iteration == 0 {
        return None; // the untouched tree: nothing was done to judge
    }
    let every = cfg.judge.every.max(1) as usize;
    if !final_green && greens(t, cfg.success_exit_code) % every != 0 {
        return None;
    }
    let Some(j) = &last.judged else {
        if let Some(cap) = cfg.judge.budget_usd {
            let (usd, _) = spend(t);
            if usd >= cap {
                return Some(Gate::Halt(Halt {
                    reason: HaltReason::BudgetExceeded,
                    contributors: vec![format!(
                        "the judge's spend ${usd:.4} has reached its cap ${cap:.2} ([judge] budget_usd); iteration {}'s green cannot be judged",
                        last.iteration
                    )],
                    detail: serde_json::json!({"cap": "judge_usd", "limit": cap, "value": usd, "iteration": last.iteration}),
                }));
            }
        }
        return Some(Gate::Run);
    };
    verdict_halt(j).map(Gate::Halt)
}

/// The halt a recorded judge run yields (`None` for approve).
#[must_use]
pub fn verdict_halt(j: &JudgeFinished) -> Option<Halt> {
    let it = j.iteration;
    if let Some(why) = could_not_decide(j) {
        return Some(Halt {
            reason: HaltReason::EscalationPending,
            contributors: vec![
                format!("the judge could not decide on iteration {it}'s green: {why}"),
                "a green the judge did not approve is never success; a person must decide".into(),
            ],
            detail: serde_json::json!({"iteration": it, "judge": "could_not_decide", "why": why, "exit_code": j.step.exit_code}),
        });
    }
    let v = parse_verdict(&j.output).ok()?;
    let (reason, what) = match v.verdict {
        VerdictKind::Approve => return None,
        VerdictKind::Reject => (HaltReason::ReviewerRejected, "rejected"),
        VerdictKind::RewardHacking => {
            (HaltReason::RewardHackingDetected, "found reward hacking in")
        }
        VerdictKind::Escalate => (HaltReason::EscalationPending, "escalated"),
    };
    let mut contributors = vec![format!("the judge {what} iteration {it}'s green")];
    contributors.extend(v.reasons.iter().map(|r| format!("judge: {r}")));
    contributors.extend(v.evidence.iter().take(10).map(|e| match e {
        serde_json::Value::String(s) => format!("evidence: {s}"),
        other => format!("evidence: {other}"),
    }));
    Some(Halt {
        reason,
        contributors,
        detail: serde_json::json!({"iteration": it, "judge": v}),
    })
}

#[cfg(test)]
mod tests;
