//! `loopexec halts`: the halt events of this workspace with their acknowledgements
//! (SPEC §Halt events); also the new-run gate (an unacknowledged high or critical
//! event refuses a new run) and the declined actions attached to a run's verdict.

use super::bodies_control::HaltsBody;
use crate::cli::{HaltsArgs, Outcome};
use crate::store::{HaltEventFilter, Store};
use crate::workspace::Workspace;
use serde_json::json;
use std::path::Path;

pub(crate) fn list(workdir: &Path, a: &HaltsArgs) -> Outcome {
    let ws = match Workspace::at(workdir) {
        Ok(w) => w,
        Err(e) => return super::ws_error(&e),
    };
    let events = if ws.ledger_path().is_file() {
        let filter = HaltEventFilter {
            unacked: a.unacked,
            run_id: a.run.as_deref(),
            min_severity: a.severity.as_deref(),
        };
        match Store::open(&ws.ledger_path()).and_then(|s| s.halt_events(&filter)) {
            Ok(v) => v,
            Err(e) => {
                return Outcome::error(
                    crate::halt::HaltReason::InvariantFailed.exit_code(),
                    e.to_string(),
                    Some("`loopexec check` validates the ledger".into()),
                )
            }
        }
    } else {
        Vec::new()
    };
    // a run id that names no run is a typo, not an empty answer (a new user's
    // `halts --run nosuch` exited 0)
    if let (Some(r), true) = (a.run.as_deref(), events.is_empty()) {
        if let Err(e) = ws.resolve_run(Some(r)) {
            return super::ws_error(&e);
        }
    }
    let mut human = if events.is_empty() {
        "no halt events match\n".to_string()
    } else {
        format!("{} halt event(s), newest first:\n", events.len())
    };
    for e in &events {
        let ack = match (&e.acknowledged_by, &e.resolution) {
            (Some(by), r) if e.acknowledged => format!(
                "acked by {by} at {} ({})",
                e.acknowledged_at.as_deref().unwrap_or("?"),
                r.as_deref().unwrap_or("-")
            ),
            _ if e.halt_reason == "success_condition_met" => "no ack needed".to_string(),
            _ if e.preflight => "no ack needed: refused before it started".to_string(),
            (_, Some(r)) => format!("UNACKED ({r})"),
            _ => "UNACKED".to_string(),
        };
        human.push_str(&format!(
            "  {}  {} {:<8} run {} {}: {}\n      {}\n",
            e.id, e.triggered_at, e.severity, e.run_id, e.halt_reason, ack, e.description
        ));
    }
    if events
        .iter()
        .any(|e| !e.acknowledged && e.halt_reason != "success_condition_met" && !e.preflight)
    {
        human.push_str("acknowledge one with: loopexec ack HALT_ID --by NAME --resolution resolved|escalated|dismissed\n");
    }
    Outcome::from_body(
        "ok",
        0,
        &HaltsBody {
            halts: events,
            human,
        },
    )
}

/// A new run refuses to start while an unacknowledged high or critical halt event
/// exists in the workspace (exit 11, naming the event), unless `--ack-required=false`.
pub(crate) fn refuse_new_run(ws: &Workspace, run_id: &str) -> Option<Outcome> {
    if !ws.ledger_path().is_file() {
        return None;
    }
    let store = Store::open(&ws.ledger_path()).ok()?;
    let open = store
        .halt_events(&HaltEventFilter {
            unacked: true,
            run_id: None,
            min_severity: Some("high"),
        })
        .ok()?;
    let first = open.first()?;
    let reason = crate::halt::HaltReason::HumanRequired;
    let msg = format!(
        "an unacknowledged {} halt event blocks new runs: {} ({} of run {} at {}: {})",
        first.severity,
        first.id,
        first.halt_reason,
        first.run_id,
        first.triggered_at,
        first.description
    );
    let halt = crate::halt::Halt {
        reason,
        contributors: vec![msg],
        detail: json!({"cause": "unacknowledged_halt_event", "halt_id": first.id, "open": open.len()}),
    };
    let explanation = format!(
        "{reason}: a person must look at it first: loopexec ack {} --by NAME --resolution resolved (or start with --ack-required=false)",
        first.id
    );
    Some(refusal(run_id, &halt, &explanation))
}

/// A new run refuses to start while a person's stop hold covers it (exit 11,
/// `human_required`, naming each hold): nothing is recorded — no run, no receipt, no
/// halt event to acknowledge (a new user's runs started under a hold each left a run
/// stopped at iteration 0 and an event). A suspension does not refuse: the run parks
/// before its first exec, as a running one would.
pub(crate) fn refuse_held_start(ws: &Workspace, run_id: &str) -> Option<Outcome> {
    let store = if ws.ledger_path().is_file() {
        Some(Store::open(&ws.ledger_path()).ok()?)
    } else {
        None
    };
    let covering = crate::engine::covering_in(store.as_ref(), run_id);
    let crate::detect::holds::HoldVerdict::Stopped(holds) = crate::detect::holds::decide(&covering)
    else {
        return None;
    };
    let reason = crate::halt::HaltReason::HumanRequired;
    let contributors: Vec<String> = holds
        .iter()
        .map(|h| {
            format!(
                "a {} hold by {} stops every run it covers: {} ({}, since {})",
                h.scope, h.holder, h.reason, h.id, h.taken_at
            )
        })
        .collect();
    let halt = crate::halt::Halt {
        reason,
        contributors,
        detail: json!({"cause": "held", "holds": holds.iter().map(|h| h.id.as_str()).collect::<Vec<_>>()}),
    };
    let explanation = format!(
        "{reason}: the run did not start; release the hold first: loopexec release {} --by NAME",
        holds.first().map_or("HOLD_ID", |h| h.id.as_str())
    );
    Some(refusal(run_id, &halt, &explanation))
}

/// The outcome of a start refused before anything is recorded (no receipt).
fn refusal(run_id: &str, halt: &crate::halt::Halt, explanation: &str) -> Outcome {
    let facts = crate::receipt::facts::preflight_facts(Some(run_id), halt);
    super::run::halt_outcome(Some(run_id), None, halt, explanation, None, facts)
}

/// Adds the run's declined agent actions to its verdict (`declined_actions`, and a
/// human line per action), from the run's trajectory.
pub(crate) fn attach_declined_from(o: &mut Outcome, traj: &crate::trajectory::Trajectory) {
    let declined = crate::gate::declined(traj);
    if declined.is_empty() {
        return;
    }
    o.fields
        .insert("declined_actions".into(), crate::gate::declined_json(traj));
    o.human.push_str(&crate::gate::declined_text(traj));
}
