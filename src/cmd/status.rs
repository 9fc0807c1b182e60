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
                if c.attempt == 0 && c.in_checkout.is_none() {
                    // a check a signal to loopexec stopped measured nothing
                    let interrupted =
                        matches!(c.step.stopped, Some(crate::proc::StopCause::Signal { .. }));
                    let green = !interrupted && crate::trajectory::is_green(c, code);
                    verdicts.push(VerdictRow {
                        iteration: c.iteration,
                        green,
                        failing: if interrupted {
                            0
                        } else {
                            c.parsed.failing().len()
                        },
                        check_exit: c.step.exit_code,
                        accepted: !interrupted,
                        interrupted,
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
    for v in verdicts.iter_mut().filter(|v| !v.interrupted) {
        if let Some(k) = views.iter().position(|a| a.iteration == v.iteration) {
            v.accepted = accepted.get(k).copied().unwrap_or(true);
        }
    }
    let LedgerView {
        actions,
        holds,
        latch,
    } = ledger_view(&run.ws, &run.run_id);
    if let Some((id, _)) = actions.iter().find(|(_, waits)| *waits).filter(|_| alive) {
        phase = format!("waiting for a person to answer action {id}");
    }
    let next = next_steps(&NextView {
        run_id: &run.run_id,
        halted: halted.as_ref().map(|h| h.halt_reason.as_str()),
        alive,
        actions: &actions,
        holds: &holds,
        latch: latch.as_deref(),
    });
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
            match (v.interrupted, v.accepted, v.green) {
                (true, _, _) => "interrupted",
                (_, false, _) => "rejected",
                (_, true, true) => "green",
                (_, true, false) => "red",
            },
            v.failing
        ));
    }
    for step in &next {
        human.push_str(&format!("  next: {step}\n"));
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
        next_steps: next,
        human,
    };
    let o = Outcome::from_body("ok", 0, &body);
    // a halted run's verdict is believed only when this workspace recorded it, as in
    // `explain-halt` and `report`
    if halted.is_some() {
        let problems = run.provenance_problems();
        return super::mark_unrecorded(o, &run.run_id, &problems, true);
    }
    o
}

/// What `status` saw that tells a person what to do next (pure input of
/// [`next_steps`]).
#[derive(Debug, Default)]
pub(crate) struct NextView<'a> {
    pub run_id: &'a str,
    /// The recorded halt reason, when the run halted.
    pub halted: Option<&'a str>,
    /// The run's process is running.
    pub alive: bool,
    /// Actions of this run waiting for an answer: (id, its call still waits; false
    /// when it was declined at `--approval-timeout`).
    pub actions: &'a [(String, bool)],
    /// Holds covering the run that a person took (the gate's own hold for a waiting
    /// action left out: it is answered, not released): (id, `suspended`/`stopped`).
    pub holds: &'a [(String, String)],
    /// The halt event a person must acknowledge before the run resumes.
    pub latch: Option<&'a str>,
}

/// The commands a person runs next, in order: answer a waiting action, release a
/// hold, acknowledge a latched halt, then read why it halted and resume it (a
/// process that ended with no halt recorded: end what it left running first). Empty
/// for a live run nothing holds back.
pub(crate) fn next_steps(v: &NextView<'_>) -> Vec<String> {
    let run = v.run_id;
    let mut out = Vec::new();
    for (id, waits) in v.actions {
        out.push(if *waits {
            format!("answer the agent's waiting call: loopexec confirm {id} --by NAME, or loopexec deny {id} --by NAME")
        } else {
            format!("answer action {id}, whose call was declined at the approval timeout (the agent must ask again): loopexec confirm {id} --by NAME, or loopexec deny {id} --by NAME")
        });
    }
    for (id, strength) in v.holds {
        out.push(format!(
            "release the {strength} hold {id} when the run may go on: loopexec release {id} --by NAME"
        ));
    }
    if let Some(h) = v.latch {
        out.push(format!(
            "acknowledge halt event {h}: loopexec ack {h} --by NAME"
        ));
    }
    match (v.halted, v.alive) {
        (Some("success_condition_met"), _) => {
            out.push(format!("the run converged: loopexec report {run}"));
        }
        (Some(reason), _) => {
            out.push(format!("read why it halted: loopexec explain-halt {run}"));
            let code = crate::halt::HaltReason::from_str_opt(reason).map(|r| r.exit_code());
            match code {
                // a resume keeps the recorded exec, check and format: the fix is a new run
                Some(20 | 30) => out.push(
                    "fix what the halt names, then start a new run (a resume keeps the recorded exec, check and test format)".to_string(),
                ),
                Some(12) => out.push(format!(
                    "go on with a higher cap: loopexec run --resume {run} --max-iterations N"
                )),
                Some(13) => {
                    out.push(format!(
                        "read the diff, then acknowledge its halt event: loopexec halts --unacked --run {run}, loopexec ack ID --by NAME"
                    ));
                    out.push(format!("go on from there: loopexec run --resume {run}"));
                }
                _ => out.push(format!("go on from there: loopexec run --resume {run}")),
            }
        }
        (None, false) => {
            out.push(format!(
                "end what the ended process left running: loopexec watch {run} --kill"
            ));
            out.push(format!("go on from there: loopexec run --resume {run}"));
        }
        (None, true) => {}
    }
    out
}

/// The ledger's view of `run_id` for [`next_steps`]: its open actions (with whether
/// each call still waits), the holds a person took over it, and its latch. Nothing
/// when the workspace has no ledger or it cannot be read (`status` still reports
/// what the receipt says).
fn ledger_view(ws: &crate::workspace::Workspace, run_id: &str) -> LedgerView {
    let path = ws.ledger_path();
    if !path.is_file() {
        return LedgerView::default();
    }
    let Ok(store) = crate::store::Store::open(&path) else {
        return LedgerView::default();
    };
    let holds = crate::engine::control::covering(&store, run_id);
    let open: Vec<_> = store
        .pending(true)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.run_id == run_id)
        .collect();
    let gate_holds: Vec<&str> = open.iter().filter_map(|p| p.hold_id.as_deref()).collect();
    let actions = open
        .iter()
        .map(|p| {
            let waits = p
                .hold_id
                .as_deref()
                .is_some_and(|h| holds.iter().any(|v| v.id == h));
            (p.id.clone(), waits)
        })
        .collect();
    let person_holds = holds
        .iter()
        .filter(|h| !gate_holds.contains(&h.id.as_str()))
        .map(|h| (h.id.clone(), h.strength.clone()))
        .collect();
    let latch = store
        .latch_of(run_id)
        .ok()
        .flatten()
        .and_then(|l| l.halt_id)
        .filter(|id| {
            store
                .halt_event(id)
                .ok()
                .flatten()
                .is_some_and(|e| !e.acknowledged)
        });
    LedgerView {
        actions,
        holds: person_holds,
        latch,
    }
}

/// [`ledger_view`]'s answer, as [`NextView`] borrows it.
#[derive(Debug, Default)]
struct LedgerView {
    actions: Vec<(String, bool)>,
    holds: Vec<(String, String)>,
    latch: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (what status saw, the first and the last step it names).
    #[test]
    fn next_steps_follow_what_holds_the_run_back() {
        let waiting = [("act-1".to_string(), true)];
        let timed_out = [("act-1".to_string(), false)];
        let hold = [("hold-1".to_string(), "stopped".to_string())];
        let rows: Vec<(NextView<'_>, Option<&str>, Option<&str>)> = vec![
            (
                NextView {
                    run_id: "R",
                    alive: true,
                    ..NextView::default()
                },
                None,
                None,
            ),
            (
                NextView {
                    run_id: "R",
                    alive: true,
                    actions: &waiting,
                    ..NextView::default()
                },
                Some("loopexec confirm act-1 --by NAME, or loopexec deny act-1"),
                Some("deny act-1 --by NAME"),
            ),
            (
                NextView {
                    run_id: "R",
                    halted: Some("escalation_pending"),
                    actions: &timed_out,
                    ..NextView::default()
                },
                Some("declined at the approval timeout"),
                Some("loopexec run --resume R"),
            ),
            (
                NextView {
                    run_id: "R",
                    halted: Some("human_required"),
                    holds: &hold,
                    ..NextView::default()
                },
                Some("loopexec release hold-1 --by NAME"),
                Some("loopexec run --resume R"),
            ),
            (
                NextView {
                    run_id: "R",
                    halted: Some("max_iterations_reached"),
                    latch: Some("halt-9"),
                    ..NextView::default()
                },
                Some("loopexec ack halt-9 --by NAME"),
                Some("loopexec run --resume R"),
            ),
            // a resume keeps the exec, check and format that a workspace halt names
            (
                NextView {
                    run_id: "R",
                    halted: Some("workspace_invalid"),
                    ..NextView::default()
                },
                Some("loopexec explain-halt R"),
                Some("start a new run"),
            ),
            // an integrity halt's event is acknowledged before the resume
            (
                NextView {
                    run_id: "R",
                    halted: Some("metric_integrity_violation"),
                    ..NextView::default()
                },
                Some("loopexec explain-halt R"),
                Some("loopexec run --resume R"),
            ),
            (
                NextView {
                    run_id: "R",
                    halted: Some("success_condition_met"),
                    ..NextView::default()
                },
                Some("loopexec report R"),
                Some("loopexec report R"),
            ),
            (
                NextView {
                    run_id: "R",
                    ..NextView::default()
                },
                Some("loopexec watch R --kill"),
                Some("loopexec run --resume R"),
            ),
        ];
        let integrity = next_steps(&NextView {
            run_id: "R",
            halted: Some("metric_integrity_violation"),
            ..NextView::default()
        });
        assert!(
            integrity
                .iter()
                .any(|s| s.contains("loopexec ack ID --by NAME")),
            "{integrity:?}"
        );
        for (view, first, last) in rows {
            let steps = next_steps(&view);
            assert_eq!(steps.is_empty(), first.is_none(), "{view:?}: {steps:?}");
            if let (Some(f), Some(l)) = (first, last) {
                assert!(steps[0].contains(f), "{view:?}: {steps:?}");
                assert!(steps[steps.len() - 1].contains(l), "{view:?}: {steps:?}");
            }
        }
    }
}
