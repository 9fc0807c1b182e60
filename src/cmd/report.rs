//! `loopexec report`: the run as a timeline — per iteration, the exec and check exit,
//! signal, duration, output sizes, and the verdict.

use crate::cli::Outcome;
use crate::receipt::Event;
use serde_json::{json, Map, Value};
use std::path::Path;

pub(crate) fn run(workdir: &Path, run_id: Option<&str>) -> Outcome {
    let run = match super::load_run(workdir, run_id) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let mut code = 0;
    let mut rows: Vec<Map<String, Value>> = Vec::new();
    let mut halt = Value::Null;
    let step_json = |s: &crate::proc::StepResult| {
        json!({
            "command": s.command, "exit_code": s.exit_code, "signal": s.signal,
            "duration_ms": s.duration_ms, "timed_out": s.timed_out, "stalled": s.stalled,
            "stdout_bytes": s.stdout.bytes, "stderr_bytes": s.stderr.bytes,
            "leaked_processes": s.leaked_processes,
        })
    };
    for l in &run.lines {
        match &l.event {
            Event::RunStarted(s) => code = s.config.success_exit_code,
            Event::IterationStarted(i) => {
                let mut m = Map::new();
                m.insert("iteration".into(), json!(i.iteration));
                m.insert("started_at".into(), json!(l.ts));
                rows.push(m);
            }
            Event::ExecFinished(e) => {
                if let Some(r) = rows.last_mut() {
                    r.insert("exec".into(), step_json(&e.step));
                    if !e.usage.is_null() {
                        r.insert("usage".into(), e.usage.clone());
                    }
                }
            }
            Event::CheckFinished(c) => {
                if let Some(r) = rows.last_mut() {
                    let green = crate::trajectory::is_green(c, code);
                    let mut cj = step_json(&c.step);
                    cj["format"] = json!(crate::check::parse::format_name(c.parsed.format));
                    cj["failing"] = json!(c.parsed.failing().len());
                    cj["collected"] = json!(c.parsed.collected().len());
                    cj["complete"] = json!(c.parsed.complete);
                    cj["green"] = json!(green);
                    if c.attempt == 0 {
                        r.insert("check".into(), cj);
                        r.insert("verdict".into(), json!(if green { "green" } else { "red" }));
                    } else {
                        if let Some(a) = r
                            .entry("confirmations")
                            .or_insert_with(|| json!([]))
                            .as_array_mut()
                        {
                            a.push(cj);
                        }
                    }
                }
            }
            Event::Reverted(v) => {
                if let Some(r) = rows.last_mut() {
                    r.insert("reverted_to".into(), json!(v.to_iteration));
                    r.insert("verdict".into(), json!("rejected"));
                }
            }
            Event::Interrupted(i) => {
                if let Some(r) = rows.last_mut() {
                    r.insert("interrupted".into(), json!(i.signal));
                }
            }
            Event::Resumed(_) | Event::ContextBuilt(_) => {}
            Event::Held(h) => {
                if let Some(r) = rows.last_mut() {
                    r.insert(
                        "held".into(),
                        json!({"verdict": h.verdict, "phase": h.phase, "holds": h.holds}),
                    );
                }
            }
            Event::Unheld(u) => {
                if let Some(r) = rows.last_mut() {
                    r.insert("parked_ms".into(), json!(u.parked_ms));
                }
            }
            Event::RateLimited(l) => {
                if let Some(r) = rows.last_mut() {
                    r.insert("rate_limited".into(), json!(l));
                }
            }
            Event::Actions(a) => {
                if let Some(r) = rows.last_mut() {
                    r.insert("actions".into(), json!({"calls": a.calls, "declined": a.declined, "confirmed": a.confirmed, "findings": a.findings}));
                }
            }
            Event::JudgeFinished(j) => {
                if let Some(r) = rows.last_mut() {
                    let mut jj = step_json(&j.step);
                    jj["verdict"] = match crate::detect::judge::could_not_decide(j) {
                        Some(_) => json!("could_not_decide"),
                        None => crate::detect::judge::parse_verdict(&j.output)
                            .map_or(json!(null), |v| json!(v.verdict)),
                    };
                    r.insert("judge".into(), jj);
                }
            }
            Event::TasksObserved(o) => {
                if let Some(r) = rows.last_mut() {
                    r.insert("tasks".into(), json!(o.tasks.len()));
                }
            }
            Event::Halted(h) => {
                halt = json!({"iteration": h.iteration, "halt_reason": h.halt_reason.as_str(), "exit_code": h.exit_code, "contributors": h.contributors});
            }
        }
    }
    let mut human = format!(
        "run {}\n{:>4}  {:>10} {:>8}  {:>10} {:>8} {:>8}  verdict\n",
        run.run_id, "it", "exec", "ms", "check", "ms", "failing"
    );
    for r in &rows {
        let ex = r.get("exec");
        let ck = r.get("check");
        let exit = |v: Option<&Value>| match v {
            Some(s) => match (s["exit_code"].as_i64(), s["signal"].as_i64()) {
                (Some(c), _) => format!("exit {c}"),
                (None, Some(sig)) => format!("sig {sig}"),
                _ => "-".into(),
            },
            None => "-".into(),
        };
        let ms = |v: Option<&Value>| v.map_or("-".to_string(), |s| s["duration_ms"].to_string());
        human.push_str(&format!(
            "{:>4}  {:>10} {:>8}  {:>10} {:>8} {:>8}  {}\n",
            r["iteration"],
            exit(ex),
            ms(ex),
            exit(ck),
            ms(ck),
            ck.map_or("-".to_string(), |c| c["failing"].to_string()),
            r.get("verdict").and_then(Value::as_str).unwrap_or("-")
        ));
    }
    if let Some(h) = halt.as_object() {
        human.push_str(&format!(
            "halted: {} (exit {}) at iteration {}\n",
            h["halt_reason"].as_str().unwrap_or(""),
            h["exit_code"],
            h["iteration"]
        ));
    }
    let traj = crate::trajectory::Trajectory::from_lines(&run.lines);
    human.push_str(&crate::gate::declined_text(&traj));
    let mut f = Map::new();
    f.insert("run_id".into(), json!(run.run_id));
    f.insert("receipt".into(), json!(run.receipt.display().to_string()));
    f.insert("declined_actions".into(), crate::gate::declined_json(&traj));
    f.insert("actions".into(), crate::gate::summary_json(&traj));
    f.insert("iterations".into(), json!(rows));
    if let Some(h) = halt.as_object() {
        f.insert("halt_reason".into(), h["halt_reason"].clone());
        f.insert("iteration".into(), h["iteration"].clone());
    }
    f.insert("halt".into(), halt);
    Outcome::ok(f, human)
}
