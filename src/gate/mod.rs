//! The action gate: every agent tool call, classified before it runs and logged.
//!
//! Source: the agent guardrails harness (classify each action; a real-time
//! confirmation for destructive ones; turn limits; an append-only audit log) and the
//! halt-conditions design's checks that observed calls make computable. SPEC §Gate.
//!
//! * [`protocol`] reads a hook payload (Claude Code PreToolUse/PostToolUse, Gemini CLI
//!   BeforeTool/AfterTool, or loopexec's generic JSON) into a [`ToolCall`] and renders
//!   the decision in the same protocol.
//! * [`classify`] is pure: a call, the policy and what was read earlier in the run in,
//!   a [`Classification`] out (read-only, reversible write, destructive; the rule that
//!   matched; the halt-condition findings).
//! * [`audit`] is the run's audit log, `.loopexec/runs/<run>/audit.jsonl`: JSON Lines,
//!   hash-chained like the receipt, one record per call and per outcome.
//! * After each exec the loop folds the new audit records into the receipt as an
//!   `actions` event ([`ActionsSeen`]); `report`, `explain-halt` and the verdict list
//!   the declined actions from there, and [`detect_turns`] / [`detect_repeats`]
//!   compute `--max-turns` and repeated failing calls from it.

pub mod audit;
pub mod classify;
pub mod protocol;

use crate::halt::{Halt, HaltReason};
use crate::trajectory::Trajectory;
use serde::{Deserialize, Serialize};

/// `[gate]` in loop.toml: extra rules on top of the built-in table (SPEC §Gate).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct GatePolicy {
    /// Names of production contexts (kube contexts, hosts, environment names): a
    /// command naming one is destructive (`production_context`).
    pub production: Vec<String>,
    /// Extra regular expressions over shell commands that are destructive.
    pub destructive: Vec<String>,
    /// Extra regular expressions over shell commands that are read-only.
    pub read_only: Vec<String>,
}

impl GatePolicy {
    /// Every regular expression compiles.
    ///
    /// # Errors
    /// The first pattern that does not, with regex's message.
    pub fn validate(&self) -> Result<(), String> {
        for (k, pats) in [
            ("destructive", &self.destructive),
            ("read_only", &self.read_only),
        ] {
            for p in pats {
                regex::Regex::new(p).map_err(|e| format!("gate.{k}: {p:?}: {e}"))?;
            }
        }
        Ok(())
    }
}

/// The three classes of the guardrails harness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActionClass {
    ReadOnly,
    ReversibleWrite,
    Destructive,
}

impl ActionClass {
    /// Wire string.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ActionClass::ReadOnly => "read_only",
            ActionClass::ReversibleWrite => "reversible_write",
            ActionClass::Destructive => "destructive",
        }
    }
}

/// One agent tool call as the gate sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolCall {
    /// `claude`, `gemini` or `generic`.
    pub agent: String,
    /// `pre` (before the call) or `post` (after it).
    pub phase: String,
    /// The tool's own name (`Bash`, `Edit`, `run_shell_command`, …).
    pub tool: String,
    /// What it acts on: the command line, the file path, the URL.
    pub target: String,
    /// The agent's description of the call, when it gives one.
    pub description: String,
    /// Content being written (Write/Edit), for the secrets check; never logged.
    #[serde(skip)]
    pub content: String,
    /// The agent's id of the call, when it has one.
    pub tool_use_id: Option<String>,
    /// The agent's working directory.
    pub cwd: Option<String>,
    /// For `post`: the call failed.
    pub failed: bool,
}

/// A halt condition the call makes computable (halt-conditions design).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    /// `modifying_unread_code`, `secrets_exposure`, `privilege_escalation`,
    /// `production_context`.
    pub halt_type: String,
    /// `low`, `medium`, `high` or `critical`.
    pub severity: String,
    pub description: String,
}

/// The gate's classification of one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Classification {
    pub class: ActionClass,
    /// The rule that decided the class (`git-push-force`, `write-outside-workdir`, …).
    pub rule: String,
    pub findings: Vec<Finding>,
}

impl Classification {
    /// Declined outright (no confirmation can help): a critical finding.
    #[must_use]
    pub fn critical(&self) -> bool {
        self.findings.iter().any(|f| f.severity == "critical")
    }
}

/// One audit record as the receipt carries it (see [`audit::Record`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ActionView {
    pub seq: u64,
    pub ts: String,
    pub iteration: u32,
    pub tool: String,
    pub target: String,
    pub classification: String,
    pub outcome: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_at: Option<String>,
}

/// What the gate saw during one exec, folded from the audit log into the receipt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ActionsSeen {
    pub iteration: u32,
    /// The audit log, relative to the workdir.
    pub audit_log: String,
    /// Records in the log after this fold, and the hash of its last line.
    pub records: u64,
    pub head: Option<String>,
    /// A problem with the log (a broken chain, an unreadable line), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_problem: Option<String>,
    /// Tool-call rounds (calls asked about before they ran) in this exec.
    pub calls: u64,
    /// Destructive or critical calls the gate declined.
    pub declined: Vec<ActionView>,
    /// Destructive calls a person confirmed.
    pub confirmed: Vec<ActionView>,
    /// Halt conditions observed (each also a halt event in the ledger).
    pub findings: Vec<Finding>,
    /// Calls that failed three times in a row (`tool target`), in order.
    pub repeated_failures: Vec<String>,
    /// Destructive calls of an attended run nobody answered within the approval
    /// timeout (the run halts `escalation_pending`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unanswered: Vec<ActionView>,
}

/// Every declined action of the run, in order (from the receipt).
#[must_use]
pub fn declined(t: &Trajectory) -> Vec<&ActionView> {
    t.actions.iter().flat_map(|a| a.declined.iter()).collect()
}

/// `max_iterations_reached` once the run's tool-call rounds reach `--max-turns`
/// (checked at the step boundary after an exec).
#[must_use]
pub fn detect_turns(t: &Trajectory, cfg: &crate::config::RunConfig) -> Option<Halt> {
    let cap = cfg.control.max_turns?;
    let rounds: u64 = t.actions.iter().map(|a| a.calls).sum();
    if rounds < cap {
        return None;
    }
    Some(Halt {
        reason: HaltReason::MaxIterationsReached,
        contributors: vec![format!(
            "the agent used {rounds} tool-call rounds across the run; --max-turns is {cap}"
        )],
        detail: serde_json::json!({"cause": "max_turns", "turns": rounds, "max_turns": cap}),
    })
}

/// `same_failure_repeated` when the same call failed three times in a row in two
/// different iterations (the audit log's repeated failures, across execs).
#[must_use]
pub fn detect_repeats(t: &Trajectory) -> Option<Halt> {
    let mut seen: std::collections::BTreeMap<&str, Vec<u32>> = std::collections::BTreeMap::new();
    for a in &t.actions {
        for r in &a.repeated_failures {
            let its = seen.entry(r.as_str()).or_default();
            if !its.contains(&a.iteration) {
                its.push(a.iteration);
            }
        }
    }
    let (call, its) = seen.into_iter().find(|(_, its)| its.len() >= 2)?;
    Some(Halt {
        reason: HaltReason::SameFailureRepeated,
        contributors: vec![format!(
            "the agent's call `{call}` failed three times in a row in iterations {its:?}"
        )],
        detail: serde_json::json!({"cause": "repeated_tool_failure", "call": call, "iterations": its}),
    })
}

/// `escalation_pending` when an attended run's destructive call went unanswered past
/// the approval timeout (checked at the step boundary after the exec).
#[must_use]
pub fn detect_unanswered(t: &Trajectory) -> Option<Halt> {
    let last = t.last()?;
    let a = t
        .actions
        .iter()
        .rev()
        .find(|a| a.iteration == last.iteration && !a.unanswered.is_empty())?;
    Some(Halt {
        reason: HaltReason::EscalationPending,
        contributors: a
            .unanswered
            .iter()
            .map(|v| {
                format!(
                    "nobody confirmed the agent's destructive call {} `{}` in time: {}",
                    v.tool, v.target, v.reason
                )
            })
            .collect(),
        detail: serde_json::json!({"cause": "approval_timeout", "actions": a.unanswered}),
    })
}

/// The declined actions of a receipt as JSON (for `run`, `report`, `explain-halt`).
#[must_use]
pub fn declined_json(t: &Trajectory) -> serde_json::Value {
    serde_json::to_value(declined(t)).unwrap_or_default()
}

/// The run's agent actions in one object (for `report` and `explain-halt`): tool-call
/// rounds, declined and confirmed calls, halt conditions observed, repeated failures,
/// the audit log and any break in its chain. `null` when the gate saw nothing.
#[must_use]
pub fn summary_json(t: &Trajectory) -> serde_json::Value {
    if t.actions.is_empty() {
        return serde_json::Value::Null;
    }
    let calls: u64 = t.actions.iter().map(|a| a.calls).sum();
    let findings: Vec<&Finding> = t.actions.iter().flat_map(|a| &a.findings).collect();
    let problems: Vec<&String> = t
        .actions
        .iter()
        .filter_map(|a| a.log_problem.as_ref())
        .collect();
    let last = t.actions.last();
    serde_json::json!({
        "calls": calls,
        "declined": declined(t).len(),
        "confirmed": t.actions.iter().map(|a| a.confirmed.len()).sum::<usize>(),
        "findings": findings,
        "repeated_failures": t.actions.iter().flat_map(|a| &a.repeated_failures).collect::<Vec<_>>(),
        "audit_log": last.map(|a| a.audit_log.clone()),
        "records": last.map(|a| a.records),
        "head": last.and_then(|a| a.head.clone()),
        "log_problems": problems,
    })
}

/// Human lines listing declined actions (empty when none).
#[must_use]
pub fn declined_text(t: &Trajectory) -> String {
    let d = declined(t);
    let mut s = String::new();
    for p in t.actions.iter().filter_map(|a| a.log_problem.as_ref()) {
        s.push_str(&format!("audit log problem: {p}\n"));
    }
    if d.is_empty() {
        return s;
    }
    s.push_str(&format!("declined agent actions ({}):\n", d.len()));
    for a in d {
        s.push_str(&format!(
            "  - iteration {}: {} `{}` ({}){}\n",
            a.iteration,
            a.tool,
            a.target,
            a.classification,
            if a.reason.is_empty() {
                String::new()
            } else {
                format!(": {}", a.reason)
            }
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receipt::Event;

    fn seen(iteration: u32, calls: u64, repeats: &[&str]) -> Event {
        Event::Actions(Box::new(ActionsSeen {
            iteration,
            calls,
            repeated_failures: repeats.iter().map(|s| s.to_string()).collect(),
            ..ActionsSeen::default()
        }))
    }

    fn traj(events: &[Event]) -> Trajectory {
        let mut t = Trajectory::default();
        for e in events {
            t.apply(e, "2026-01-01T00:00:00.000Z");
        }
        t
    }

    #[test]
    fn turns_table() {
        let mut cfg = crate::config::RunConfig::defaults();
        let rows: Vec<(Option<u64>, Vec<Event>, bool)> = vec![
            (None, vec![seen(1, 100, &[])], false),
            (Some(5), vec![seen(1, 3, &[])], false),
            (Some(5), vec![seen(1, 3, &[]), seen(2, 2, &[])], true),
            (Some(5), vec![seen(1, 9, &[])], true),
        ];
        for (cap, events, fires) in rows {
            cfg.control.max_turns = cap;
            let h = detect_turns(&traj(&events), &cfg);
            assert_eq!(h.is_some(), fires, "{cap:?} {events:?}");
            if let Some(h) = h {
                assert_eq!(h.reason, HaltReason::MaxIterationsReached);
            }
        }
    }

    #[test]
    fn repeats_table() {
        let rows: Vec<(Vec<Event>, bool)> = vec![
            (vec![seen(1, 3, &["Bash cargo build"])], false),
            (
                vec![
                    seen(1, 3, &["Bash cargo build"]),
                    seen(2, 3, &["Bash make"]),
                ],
                false,
            ),
            (
                vec![
                    seen(1, 3, &["Bash cargo build"]),
                    seen(2, 3, &["Bash cargo build"]),
                ],
                true,
            ),
        ];
        for (events, fires) in rows {
            let h = detect_repeats(&traj(&events));
            assert_eq!(h.is_some(), fires, "{events:?}");
        }
    }
}
