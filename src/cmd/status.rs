//! `loopexec status`: a run's phase, iteration, last verdicts, and whether its
//! process is alive.

use crate::cli::Outcome;
use crate::cmd::bodies::{StatusBody, VerdictRow};
use crate::receipt::Event;
use std::path::Path;

pub(crate) fn run(workdir: &Path, run_id: Option<&str>) -> Outcome {
    let run = match super::load_run(workdir, run_id) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let mut pid = None;
    let mut halted = None;
    let mut phase = "starting".to_string();
    let mut iteration = 0u32;
    let mut verdicts: Vec<VerdictRow> = Vec::new();
    let mut code = 0;
    for l in &run.lines {
        match &l.event {
            Event::RunStarted(s) => {
                pid = Some(s.pid);
                code = s.config.success_exit_code;
            }
            Event::Resumed(r) => {
                pid = Some(r.pid);
                halted = None;
            }
            Event::IterationStarted(i) => {
                iteration = i.iteration;
                phase = if i.iteration == 0 {
                    "baseline".into()
                } else {
                    "exec".into()
                };
            }
            Event::ExecFinished(_) => phase = "check".into(),
            Event::CheckFinished(c) => {
                phase = "deciding".into();
                if c.attempt == 0 {
                    let green = crate::trajectory::is_green(c, code);
                    verdicts.push(VerdictRow {
                        iteration: c.iteration,
                        green,
                        failing: c.parsed.failing().len(),
                        check_exit: c.step.exit_code,
                        accepted: true,
                    });
                }
            }
            Event::Halted(h) => {
                halted = Some(h.clone());
                phase = "halted".into();
            }
            Event::Held(h) => phase = format!("{} by a hold", h.verdict),
            Event::Unheld(_) => phase = "resumed after a suspension".into(),
            Event::JudgeFinished(_) => phase = "deciding".into(),
            Event::Reverted(_)
            | Event::Interrupted(_)
            | Event::Actions(_)
            | Event::RateLimited(_)
            | Event::TasksObserved(_)
            | Event::ContextBuilt(_) => {}
        }
    }
    let alive = halted.is_none() && pid.is_some_and(super::pid_alive);
    if halted.is_none() && !alive {
        phase = "dead (no halt recorded: the process ended without finishing)".into();
    }
    let hb: Option<serde_json::Value> = std::fs::read(run.ws.heartbeat_path(&run.run_id))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    // Rejected is said the same way as in `report` and `explain-halt`: the ratchet's
    // acceptance of each iteration.
    let traj = crate::trajectory::Trajectory::from_lines(&run.lines);
    let views = traj.attempt_views(code);
    let accepted = crate::detect::progress::accepted(&views);
    for v in &mut verdicts {
        if let Some(k) = views.iter().position(|a| a.iteration == v.iteration) {
            v.accepted = accepted.get(k).copied().unwrap_or(true);
        }
    }
    let last = verdicts
        .iter()
        .rev()
        .take(5)
        .rev()
        .cloned()
        .collect::<Vec<_>>();
    let mut human = format!(
        "run {}\n  phase: {phase}\n  iteration: {iteration}\n  process: {}\n",
        run.run_id,
        match (pid, alive) {
            (Some(p), true) => format!("alive (pid {p})"),
            (Some(p), false) => format!("not running (was pid {p})"),
            _ => "unknown".into(),
        }
    );
    if let Some(h) = &halted {
        human.push_str(&format!(
            "  halted: {} (exit {})\n",
            h.halt_reason, h.exit_code
        ));
    }
    for v in &last {
        human.push_str(&format!(
            "  iteration {}: {} ({} failing)\n",
            v.iteration,
            match (v.accepted, v.green) {
                (false, _) => "rejected",
                (true, true) => "green",
                (true, false) => "red",
            },
            v.failing
        ));
    }
    let body = StatusBody {
        run_id: run.run_id.clone(),
        phase,
        iteration,
        alive,
        pid,
        last_verdicts: last,
        heartbeat: hb.unwrap_or(serde_json::Value::Null),
        receipt: run.receipt.display().to_string(),
        halt_reason: halted.as_ref().map(|h| h.halt_reason.as_str().to_string()),
        halt_exit_code: halted.as_ref().map(|h| h.exit_code),
        run: run.facts(),
        human,
    };
    Outcome::from_body("ok", 0, &body)
}
