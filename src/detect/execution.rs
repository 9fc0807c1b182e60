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
//! | the baseline check never ran its tests (`not_run`)   | execution_failure   |
//! | the exec exited non-zero as an attempt, the Nth time in a row (`--exec-failures N`) | execution_failure |
//! | the exec exited non-zero or by a signal, not an attempt | execution_failure |
//!
//! A check that exits non-zero is not an execution failure: red is the check's
//! ordinary answer. A check that cannot start is, at whatever iteration (usually the
//! baseline, so the budget is never burnt on a command that does not exist); so is a
//! baseline check whose runner refused to run (`cargo tset`, a missing npm script,
//! pytest's usage error or empty collection), quoted in the runner's own words.
//!
//! An agent's own error is not a broken environment: an exec that exited non-zero
//! (not by a signal) after changing the tree, or whose output reports its own failure
//! (Claude's `is_error`, `error_max_turns`, a rate limit; codex's failed turn), is an
//! attempt the check judges. Only `exec_failures` such attempts in a row halt. A
//! non-zero exit with neither (nothing changed, nothing said) stops at once.

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
    if last.iteration == 0 {
        if let Some(h) = last.main_check().and_then(check_not_run) {
            return Some(h);
        }
    }
    if let Some(s) = exec {
        if failed(s) {
            let limit = t.config().map_or(3, |c| c.exec_failures).max(1);
            let own = agent_error(last);
            let attempt = own.is_some() || t.last_exec_changed_tree() == Some(true);
            let streak = failed_streak(t);
            if attempt && streak < limit {
                return None;
            }
            let mut contributors = vec![if attempt {
                format!(
                    "the agent exited non-zero in {streak} consecutive iterations (--exec-failures {limit}); last: {}: `{}`",
                    describe_exit(s),
                    s.command
                )
            } else {
                format!(
                    "work step failed ({}) without changing the tree or reporting an error of its own: `{}`",
                    describe_exit(s),
                    s.command
                )
            }];
            if let Some(e) = &own {
                contributors.push(format!("the agent reported: {e}"));
            }
            if let Some(x) = &s.stderr.excerpt {
                contributors.push(format!("the agent's stderr (head and tail): {x}"));
            }
            return Some(Halt {
                reason: HaltReason::ExecutionFailure,
                contributors,
                detail: serde_json::json!({"step": "exec", "cause": if attempt { "exec_failures" } else { "nonzero_exit" }, "exit_code": s.exit_code, "signal": s.signal, "consecutive": streak, "limit": limit, "agent_error": own}),
            });
        }
    }
    None
}

/// An exec that ran and exited non-zero (not stopped by loopexec).
fn failed(s: &StepResult) -> bool {
    s.stopped.is_none() && s.exit_code != Some(0)
}

/// The error the agent reported itself in this iteration's usage, if any: Claude's
/// result `subtype` when it is an error (`error_max_turns`, `error_during_execution`)
/// or `is_error`; codex's failed turn.
fn agent_error(it: &crate::trajectory::IterationObs) -> Option<String> {
    let u = it.exec.as_ref()?.usage.as_ref()?;
    let subtype = u.subtype.as_deref();
    let is_error = u.is_error == Some(true);
    match subtype {
        Some(st) if st.starts_with("error") => Some(st.to_string()),
        _ if is_error => {
            Some(subtype.map_or_else(|| "an error".to_string(), |s| format!("an error ({s})")))
        }
        _ => None,
    }
}

/// Consecutive iterations, ending with the last, whose exec ran and exited non-zero.
fn failed_streak(t: &Trajectory) -> u32 {
    let mut n = 0;
    for it in t.iterations.iter().rev() {
        match &it.exec {
            Some(e) if failed(&e.step) => n += 1,
            _ => break,
        }
    }
    n
}

/// The baseline check's runner never ran the tests (see
/// [`crate::check::model::ParsedRun::not_run`]).
fn check_not_run(c: &crate::receipt::events::CheckFinished) -> Option<Halt> {
    let why = c.parsed.not_run.as_ref()?;
    let what = if c.step.exit_code == Some(0) {
        "the check executes no test at the baseline, so its green verifies nothing"
    } else {
        "the check cannot run at the baseline"
    };
    Some(Halt {
        reason: HaltReason::ExecutionFailure,
        contributors: vec![format!(
            "{what}: `{}` — {why}; no agent iteration was started",
            c.step.command
        )],
        detail: serde_json::json!({"step": "check", "cause": "check_not_run", "command": c.step.command, "exit_code": c.step.exit_code, "runner_message": why}),
    })
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
