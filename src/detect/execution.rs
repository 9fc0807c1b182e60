//! Execution and interruption: `human_required` (a signal reached loopexec),
//! `execution_failure` (a step could not start, exited non-zero, or timed out) and
//! the step-level liveness stops (`heartbeat_stale` from the stall timeout or a
//! watchdog kill), read from the steps of the last iteration.
//!
//! Decision table (first row that matches wins):
//!
//! | observation (last iteration)                         | reason              |
//! |------------------------------------------------------|---------------------|
//! | an `interrupted` event, or a step stopped by a signal | human_required      |
//! | a watchdog ended the exec or a check run             | heartbeat_stale     |
//! | the exec printed nothing for the stall timeout       | heartbeat_stale     |
//! | a step could not start (spawn error, exit 126/127)   | execution_failure   |
//! | a step hit its timeout                               | execution_failure   |
//! | the exec exited non-zero or by a signal              | execution_failure   |
//!
//! A check that exits non-zero is not an execution failure: red is the check's
//! ordinary answer. A check that cannot start is, at whatever iteration (usually the
//! baseline, so the budget is never burnt on a command that does not exist).

use crate::halt::{Halt, HaltReason};
use crate::proc::{StepResult, StopCause};
use crate::trajectory::Trajectory;

fn describe_exit(s: &StepResult) -> String {
    match (s.exit_code, s.signal) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(sig)) => format!("signal {sig}"),
        _ => "no exit status".into(),
    }
}

fn cannot_start(kind: &str, s: &StepResult) -> Halt {
    let why = match (&s.spawn_error, s.exit_code) {
        (Some(e), _) => e.clone(),
        (None, Some(127)) => "exit 127: command not found".into(),
        (None, Some(126)) => "exit 126: command found but not executable".into(),
        _ => describe_exit(s),
    };
    Halt {
        reason: HaltReason::ExecutionFailure,
        contributors: vec![format!(
            "{kind} command cannot start: `{}` ({why})",
            s.command
        )],
        detail: serde_json::json!({"step": kind, "command": s.command, "exit_code": s.exit_code, "cause": "cannot_start"}),
    }
}

/// Checks the last iteration's steps. See the module table.
#[must_use]
pub fn detect(t: &Trajectory) -> Option<Halt> {
    let last = t.last()?;
    if let Some(i) = t.interrupts.iter().find(|i| i.iteration == last.iteration) {
        return Some(interrupted(i.signal));
    }
    let exec = last.exec.as_ref().map(|e| &e.step);
    let steps = exec
        .into_iter()
        .map(|s| ("exec", s))
        .chain(last.checks.iter().map(|c| ("check", &c.step)));
    for (_, s) in steps.clone() {
        if let Some(StopCause::Signal { signal }) = s.stopped {
            return Some(interrupted(signal));
        }
    }
    let mut watchdogs = last
        .exec
        .iter()
        .filter_map(|e| e.watchdog.as_ref().map(|w| ("work step", w)))
        .chain(
            last.checks
                .iter()
                .filter_map(|c| c.watchdog.as_ref().map(|w| ("check", w))),
        );
    if let Some((kind, w)) = watchdogs.next() {
        return Some(Halt {
            reason: HaltReason::HeartbeatStale,
            contributors: vec![format!(
                "a watchdog found the run wedged and ended the {kind}: {}",
                w.get("reason")
                    .and_then(|v| v.as_str())
                    .unwrap_or("heartbeat stale")
            )],
            detail: w.clone(),
        });
    }
    if let Some(e) = &last.exec {
        if e.step.stalled {
            let limit = t
                .config()
                .and_then(|c| c.liveness.stall_timeout)
                .map(|d| humantime::format_duration(d.0).to_string())
                .unwrap_or_default();
            return Some(Halt {
                reason: HaltReason::HeartbeatStale,
                contributors: vec![format!(
                    "the work step printed nothing for {limit}; its process group was ended"
                )],
                detail: serde_json::json!({"stall_timeout": limit, "output_bytes": e.step.stdout.bytes + e.step.stderr.bytes}),
            });
        }
    }
    for (kind, s) in steps.clone() {
        if s.cannot_start() {
            return Some(cannot_start(kind, s));
        }
    }
    for (kind, s) in steps {
        if s.timed_out {
            let limit = t
                .config()
                .and_then(|c| {
                    if kind == "exec" {
                        c.exec_timeout
                    } else {
                        c.check_timeout
                    }
                })
                .map(|d| humantime::format_duration(d.0).to_string())
                .unwrap_or_default();
            return Some(Halt {
                reason: HaltReason::ExecutionFailure,
                contributors: vec![format!(
                    "{kind} timed out after {limit}: `{}`; its process group was ended",
                    s.command
                )],
                detail: serde_json::json!({"step": kind, "cause": "timeout", "timeout": limit}),
            });
        }
    }
    if let Some(s) = exec {
        if s.stopped.is_none() && s.exit_code != Some(0) {
            return Some(Halt {
                reason: HaltReason::ExecutionFailure,
                contributors: vec![format!(
                    "work step failed ({}): `{}`",
                    describe_exit(s),
                    s.command
                )],
                detail: serde_json::json!({"step": "exec", "cause": "nonzero_exit", "exit_code": s.exit_code, "signal": s.signal}),
            });
        }
    }
    None
}

fn interrupted(signal: i32) -> Halt {
    let name = match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    };
    Halt {
        reason: HaltReason::HumanRequired,
        contributors: vec![format!(
            "loopexec received {name}; the running step's process group was ended"
        )],
        detail: serde_json::json!({"signal": signal}),
    }
}
