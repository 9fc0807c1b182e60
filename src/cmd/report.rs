//! `loopexec report`: the whole run — per iteration the exec and check exits,
//! durations, output sizes, failing and collected counts and names, whether the
//! ratchet accepted it, spend and model; totals; the halt. As text, markdown
//! (`--format markdown`), JSON, a JUnit suite (`--junit FILE`) or one HTML page
//! (`--html FILE`).

use crate::cli::{Outcome, ReportArgs};
use crate::cmd::bodies::{IterationRow, ReportBody, ReportHalt, ReportTotals, StepRow};
use crate::receipt::Event;
use serde_json::json;
use std::path::Path;

fn step_row(s: &crate::proc::StepResult) -> StepRow {
    StepRow {
        command: s.command.clone(),
        exit_code: s.exit_code,
        signal: s.signal,
        duration_ms: s.duration_ms,
        timed_out: s.timed_out,
        stalled: s.stalled,
        stdout_bytes: s.stdout.bytes,
        stderr_bytes: s.stderr.bytes,
        leaked_processes: s.leaked_processes,
        format: None,
        failing: None,
        collected: None,
        complete: None,
        green: None,
        failing_names: None,
        fingerprint: None,
    }
}

/// Builds the report body from a loaded run.
pub(crate) fn build(run: &super::LoadedRun) -> ReportBody {
    let mut code = 0;
    let mut rows: Vec<IterationRow> = Vec::new();
    let mut halt: Option<ReportHalt> = None;
    for l in &run.lines {
        match &l.event {
            Event::RunStarted(s) => code = s.config.success_exit_code,
            Event::IterationStarted(i) => rows.push(IterationRow {
                iteration: i.iteration,
                started_at: l.ts.clone(),
                exec: None,
                usage: None,
                check: None,
                confirmations: Vec::new(),
                checkout: None,
                verdict: None,
                accepted: None,
                reverted_to: None,
                interrupted: None,
                cost_usd: None,
                tokens: None,
                model: None,
                duration_ms: 0,
                judge: None,
                tasks: None,
                held: None,
                parked_ms: None,
                rate_limited: None,
                actions: None,
            }),
            Event::ExecFinished(e) => {
                if let Some(r) = rows.last_mut() {
                    r.exec = Some(step_row(&e.step));
                    r.duration_ms += e.step.duration_ms;
                    if let Some(u) = &e.usage {
                        r.usage = serde_json::to_value(u).ok();
                        r.cost_usd = u.cost_usd;
                        r.tokens = Some(u.total_tokens());
                        r.model = u.primary_model.as_ref().map(|m| m.model.clone());
                    }
                }
            }
            Event::CheckFinished(c) => {
                if let Some(r) = rows.last_mut() {
                    let green = crate::trajectory::is_green(c, code);
                    let mut cj = step_row(&c.step);
                    cj.format = Some(crate::check::parse::format_name(c.parsed.format).into());
                    cj.failing = Some(c.parsed.failing().len());
                    cj.collected = Some(c.parsed.collected().len());
                    cj.complete = Some(c.parsed.complete);
                    cj.green = Some(green);
                    cj.failing_names = Some(c.parsed.failing().into_iter().collect());
                    cj.fingerprint = Some(crate::receipt::fingerprint::recorded(c, code));
                    r.duration_ms += c.step.duration_ms;
                    let interrupted =
                        matches!(c.step.stopped, Some(crate::proc::StopCause::Signal { .. }));
                    if c.in_checkout.is_some() {
                        r.checkout = Some(cj);
                    } else if interrupted {
                        // stopped by a signal to loopexec: no measurement, no verdict
                        cj.failing = None;
                        cj.collected = None;
                        cj.green = None;
                        cj.failing_names = None;
                        if c.attempt == 0 {
                            r.check = Some(cj);
                            r.verdict = Some("interrupted".into());
                        } else {
                            r.confirmations.push(cj);
                        }
                    } else if c.attempt == 0 {
                        r.check = Some(cj);
                        r.verdict = Some(if green { "green" } else { "red" }.into());
                        r.accepted = Some(true);
                    } else {
                        r.confirmations.push(cj);
                    }
                }
            }
            Event::Reverted(v) => {
                if let Some(r) = rows.last_mut() {
                    r.reverted_to = Some(v.to_iteration);
                    r.verdict = Some("rejected".into());
                    r.accepted = Some(false);
                }
            }
            Event::Interrupted(i) => {
                if let Some(r) = rows.last_mut() {
                    r.interrupted = Some(i.signal);
                }
            }
            Event::Resumed(_) | Event::ContextBuilt(_) => {}
            Event::Held(h) => {
                if let Some(r) = rows.last_mut() {
                    r.held =
                        Some(json!({"verdict": h.verdict, "phase": h.phase, "holds": h.holds}));
                }
            }
            Event::Unheld(u) => {
                if let Some(r) = rows.last_mut() {
                    r.parked_ms = Some(u.parked_ms);
                }
            }
            Event::RateLimited(l) => {
                if let Some(r) = rows.last_mut() {
                    r.rate_limited = Some(json!(l));
                }
            }
            Event::Actions(a) => {
                if let Some(r) = rows.last_mut() {
                    r.actions = Some(
                        json!({"calls": a.calls, "declined": a.declined, "confirmed": a.confirmed, "findings": a.findings}),
                    );
                }
            }
            Event::JudgeFinished(j) => {
                if let Some(r) = rows.last_mut() {
                    let mut jj = serde_json::to_value(step_row(&j.step)).unwrap_or_default();
                    jj["verdict"] = match crate::detect::judge::could_not_decide(j) {
                        Some(_) => json!("could_not_decide"),
                        None => crate::detect::judge::parse_verdict(&j.output)
                            .map_or(json!(null), |v| json!(v.verdict)),
                    };
                    r.judge = Some(jj);
                }
            }
            Event::TasksObserved(o) => {
                if let Some(r) = rows.last_mut() {
                    r.tasks = Some(o.tasks.len());
                }
            }
            Event::Halted(h) => {
                halt = Some(ReportHalt {
                    iteration: h.iteration,
                    halt_reason: h.halt_reason.as_str().into(),
                    exit_code: h.exit_code,
                    contributors: h.contributors.clone(),
                });
            }
        }
    }
    // The ratchet's view: an iteration whose check ran is accepted unless it was
    // reverted; the last one may be rejected without a revert (the run halted first).
    let traj = crate::trajectory::Trajectory::from_lines(&run.lines);
    let views = traj.attempt_views(code);
    let accepted = crate::detect::progress::accepted(&views);
    for (v, a) in views.iter().zip(&accepted) {
        if let Some(r) = rows.iter_mut().rev().find(|r| r.iteration == v.iteration) {
            if r.reverted_to.is_none() {
                r.accepted = Some(*a);
                // A rejected last iteration (the run halted before reverting it) is
                // reported as rejected, as `status` and `explain-halt` say.
                if !*a && r.verdict.is_some() {
                    r.verdict = Some("rejected".into());
                }
            }
        }
    }
    let mut totals = ReportTotals::default();
    for r in &rows {
        totals.iterations += 1;
        match r.accepted {
            Some(true) => totals.accepted += 1,
            Some(false) => totals.rejected += 1,
            None => {}
        }
        totals.exec_ms += r.exec.as_ref().map_or(0, |e| e.duration_ms);
        totals.check_ms += r.check.as_ref().map_or(0, |e| e.duration_ms)
            + r.confirmations.iter().map(|c| c.duration_ms).sum::<u64>()
            + r.checkout.as_ref().map_or(0, |c| c.duration_ms);
    }
    let facts = run.facts();
    let mut body = ReportBody {
        run_id: run.run_id.clone(),
        receipt: run.receipt.display().to_string(),
        halt_reason: halt.as_ref().map(|h| h.halt_reason.clone()),
        iteration: halt.as_ref().map(|h| h.iteration),
        iterations: rows,
        halt,
        totals,
        declined_actions: crate::gate::declined_json(&traj),
        actions: crate::gate::summary_json(&traj),
        run: facts,
        stderr_tail: super::halt_notes::of_run(&run.ws.workdir, &run.lines),
        rejected_tree: halted_run(&run.lines)
            .and_then(|l| super::halt_notes::rejected_tree(l, &super::halt_notes::acceptance(l))),
        recorded: true,
        unrecorded_because: Vec::new(),
        human: String::new(),
    };
    body.human = text(&body);
    body.human.push_str(&crate::gate::declined_text(&traj));
    body
}

fn text(b: &ReportBody) -> String {
    let mut human = format!(
        "run {}\n{:>4}  {:>10} {:>8}  {:>10} {:>8} {:>8}  verdict\n",
        b.run_id, "it", "exec", "ms", "check", "ms", "failing"
    );
    let exit = |v: Option<&StepRow>| match v {
        Some(s) => match (s.exit_code, s.signal) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(sig)) => format!("sig {sig}"),
            _ => "-".into(),
        },
        None => "-".into(),
    };
    let ms = |v: Option<&StepRow>| v.map_or("-".to_string(), |s| s.duration_ms.to_string());
    for r in &b.iterations {
        human.push_str(&format!(
            "{:>4}  {:>10} {:>8}  {:>10} {:>8} {:>8}  {}\n",
            r.iteration,
            exit(r.exec.as_ref()),
            ms(r.exec.as_ref()),
            exit(r.check.as_ref()),
            ms(r.check.as_ref()),
            r.check
                .as_ref()
                .and_then(|c| c.failing)
                .map_or("-".to_string(), |f| f.to_string()),
            r.verdict.as_deref().unwrap_or("-")
        ));
    }
    if let Some(h) = &b.halt {
        human.push_str(&format!(
            "halted: {} (exit {}) at iteration {}\n",
            h.halt_reason, h.exit_code, h.iteration
        ));
    }
    if let Some(t) = &b.stderr_tail {
        human.push_str(&t.render());
    }
    if let Some(r) = &b.rejected_tree {
        human.push_str(&r.render());
    }
    human
}

/// The receipt's lines before its last `halted` event, when the run halted.
fn halted_run(lines: &[crate::receipt::Line]) -> Option<&[crate::receipt::Line]> {
    let pos = lines
        .iter()
        .rposition(|l| matches!(l.event, Event::Halted(_)))?;
    Some(&lines[..pos])
}

pub(crate) fn run(workdir: &Path, a: &ReportArgs, _json: bool) -> Outcome {
    let run = match super::load_run(workdir, a.run_id.as_deref().or(a.run.as_deref())) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let unrecorded = run.provenance_problems();
    let mut body = build(&run);
    body.recorded = unrecorded.is_empty();
    body.unrecorded_because.clone_from(&unrecorded);
    let mut written = Vec::new();
    if let Some(p) = &a.junit {
        if let Err(e) = std::fs::write(p, super::report_formats::junit(&body)) {
            return Outcome::error(
                super::EXIT_ERROR,
                format!("cannot write the JUnit report {}: {e}", p.display()),
                Some("give --junit a writable path".into()),
            );
        }
        written.push(format!("JUnit report: {}", p.display()));
    }
    if let Some(p) = &a.html {
        if let Err(e) = std::fs::write(p, super::report_formats::html(&body)) {
            return Outcome::error(
                super::EXIT_ERROR,
                format!("cannot write the HTML report {}: {e}", p.display()),
                Some("give --html a writable path".into()),
            );
        }
        written.push(format!("HTML report: {}", p.display()));
    }
    if a.format.as_deref() == Some("markdown") {
        body.human = super::report_formats::markdown(&body);
    } else if a.format.as_deref() == Some("json") {
        body.human = serde_json::to_string_pretty(&body).unwrap_or_default();
    }
    let mut o = Outcome::from_body("ok", 0, &body);
    if !written.is_empty() && a.format.as_deref() != Some("markdown") {
        o.human.push_str(&written.join("\n"));
        o.human.push('\n');
    }
    // (`--format json` prints the body itself, which says `recorded: false`)
    let banner = a.format.as_deref() != Some("json");
    super::mark_unrecorded(o, &run.run_id, &unrecorded, banner)
}
