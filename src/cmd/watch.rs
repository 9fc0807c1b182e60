//! `loopexec watch`: an external watchdog for CI steps.
//!
//! It reads the run's receipt and heartbeat and reports one of:
//! * `finished` (exit 0): the receipt ends in a `halted` event;
//! * `alive` (exit 0): the heartbeat is fresh and the running step's output moved
//!   within the stall timeout;
//! * `stale`, `heartbeat_stale` (exit 19): the heartbeat is older than the stall timeout, the
//!   running step printed nothing for that long, or loopexec's process is gone without
//!   a `halted` event.
//!
//! With `--kill` on a stale, live run it first writes
//! `.loopexec/runs/<id>/watchdog-kill.json` (what it observed), then ends the process
//! groups the heartbeat names (TERM, grace, KILL). The run's own loop sees its step
//! end, reads that record into the receipt, and halts `heartbeat_stale`.

use super::bodies_control::WatchBody;
use crate::cli::{Outcome, WatchArgs};
use crate::engine::Heartbeat;
use crate::halt::HaltReason;
use crate::receipt::Event;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

pub(crate) fn run(workdir: &Path, a: &WatchArgs) -> Outcome {
    let stall = match crate::config::parse_duration(&a.stall_timeout) {
        Ok(d) => d,
        Err(m) => return Outcome::error(2, format!("--stall-timeout: {m}"), None),
    };
    if stall.is_zero() {
        return Outcome::error(
            2,
            "--stall-timeout must be greater than zero".into(),
            Some("e.g. --stall-timeout 10m".into()),
        );
    }
    let run = match super::load_run(workdir, a.run_id.as_deref().or(a.run.as_deref())) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let mut body = WatchBody {
        run_id: run.run_id.clone(),
        run: run.facts(),
        run_halt_reason: None,
        iteration: None,
        pid: None,
        heartbeat: None,
        halt_reason: None,
        contributors: Vec::new(),
        killed_process_groups: None,
        human: String::new(),
    };
    // The run is finished when its newest halt is not followed by a resume.
    let halted = run.lines.iter().rev().find_map(|l| match &l.event {
        Event::Halted(h) => Some(Some(h.clone())),
        Event::Resumed(_) => Some(None),
        _ => None,
    });
    if let Some(Some(h)) = halted {
        body.run_halt_reason = Some(h.halt_reason.as_str().into());
        body.iteration = Some(h.iteration);
        body.human = format!(
            "run {} finished: {} (exit {})\n",
            run.run_id, h.halt_reason, h.exit_code
        );
        return Outcome::from_body("finished", 0, &body);
    }
    let pid = run.lines.iter().rev().find_map(|l| match &l.event {
        Event::RunStarted(s) => Some(s.pid),
        Event::Resumed(r) => Some(r.pid),
        _ => None,
    });
    let hb: Option<Heartbeat> = std::fs::read(run.ws.heartbeat_path(&run.run_id))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let now = now_ms();
    let limit = u64::try_from(stall.as_millis()).unwrap_or(u64::MAX);
    let alive = pid.is_some_and(super::pid_alive);
    let stale_reason = if !alive {
        Some(format!(
            "loopexec (pid {}) is gone without a halted event",
            pid.map_or("?".into(), |p| p.to_string())
        ))
    } else if let Some(h) = &hb {
        if now.saturating_sub(h.time_ms) > limit {
            Some(format!(
                "the heartbeat is {}s old (limit {}s)",
                now.saturating_sub(h.time_ms) / 1000,
                limit / 1000
            ))
        } else if now.saturating_sub(h.last_output_ms) > limit {
            Some(format!(
                "the {} step of iteration {} has printed nothing for {}s (limit {}s)",
                h.phase,
                h.iteration,
                now.saturating_sub(h.last_output_ms) / 1000,
                limit / 1000
            ))
        } else {
            None
        }
    } else {
        None
    };
    body.pid = Some(pid);
    body.heartbeat = Some(hb.clone());
    // a run parked by a suspending hold is alive, and a person is what it waits for
    let parked = run.lines.iter().rev().find_map(|l| match &l.event {
        Event::Held(h) => Some(Some(h.clone())),
        Event::Unheld(_) | Event::Resumed(_) => Some(None),
        _ => None,
    });
    let Some(reason) = stale_reason else {
        body.human = match parked.flatten() {
            Some(h) => format!(
                "run {} is alive, {} by a hold: it goes on when the hold is released (`loopexec holds`)\n",
                run.run_id, h.verdict
            ),
            None => format!("run {} is alive\n", run.run_id),
        };
        return Outcome::from_body("alive", 0, &body);
    };
    let mut killed = Vec::new();
    if a.kill {
        if let Some(h) = hb.as_ref().filter(|_| alive) {
            let record = json!({
                "reason": reason,
                "observed_heartbeat": h,
                "stall_timeout_ms": limit,
                "watchdog_pid": std::process::id(),
                "at": crate::receipt::now_rfc3339(),
            });
            let path = run.ws.watchdog_path(&run.run_id);
            if let Err(e) = std::fs::write(&path, record.to_string()) {
                return Outcome::error(
                    HaltReason::InternalError.exit_code(),
                    format!("cannot write {}: {e}", path.display()),
                    None,
                );
            }
        }
        // The step's process group outlives a loopexec that was SIGKILLed: end it
        // whether or not loopexec is still there to record the kill.
        for &pg in hb.iter().flat_map(|h| &h.pgids) {
            if crate::engine::cleanroom::group_works_for(pg, &run.ws.workdir)
                && crate::proc::end_group(pg, Duration::from_secs(3))
            {
                killed.push(pg);
            }
        }
    }
    body.halt_reason = Some(HaltReason::HeartbeatStale.as_str().into());
    body.contributors = vec![reason.clone()];
    let mut human = format!("run {} is wedged: {reason}\n", run.run_id);
    if !killed.is_empty() {
        human.push_str(&format!(
            "ended process groups {killed:?}; the run records heartbeat_stale\n"
        ));
    } else if a.kill && !alive {
        human.push_str("nothing to kill: the loopexec process and its steps are already gone\n");
    }
    body.killed_process_groups = Some(killed);
    body.human = human;
    // `stale`, not `halted`: the watch judged the run wedged; the run itself halts
    // (heartbeat_stale) only once `--kill` ended its step (a new user's review read
    // `halted` for a run still running)
    let mut o = Outcome::from_body("stale", HaltReason::HeartbeatStale.exit_code(), &body);
    o.errors = vec![reason];
    o
}
