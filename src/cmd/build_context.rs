//! `loopexec build-context`: what the agent must read for a task, and whether it fits
//! the model's context window (SPEC §9.4). The same measurement a run makes before
//! each exec when given `--task`/`--context-file` and `--model`.

use super::bodies_ops::BuildContextBody;
use crate::cli::{BuildContextArgs, Outcome};
use crate::observe::context::{self, ContextRequest};
use crate::receipt::Event;
use crate::trajectory::Trajectory;
use std::path::Path;

/// Failing tests (id, message) of the run's last main check, when a run exists.
fn failing_of(workdir: &Path, run_id: Option<&str>) -> Result<Vec<(String, String)>, Box<Outcome>> {
    let has_runs = crate::workspace::Workspace::at(workdir)
        .ok()
        .and_then(|w| w.latest_run())
        .is_some();
    if run_id.is_none() && !has_runs {
        return Ok(Vec::new());
    }
    let run = super::load_run(workdir, run_id).map_err(Box::new)?;
    let lines: Vec<_> = run
        .lines
        .iter()
        .filter(|l| !matches!(l.event, Event::Halted(_)))
        .cloned()
        .collect();
    let t = Trajectory::from_lines(&lines);
    Ok(t.last_failing_messages())
}

pub(crate) fn run(workdir: &Path, a: &BuildContextArgs) -> Outcome {
    if a.task.is_none() && a.files.is_empty() {
        return Outcome::error(
            2,
            "nothing to measure: give --task FILE and/or --files GLOB".into(),
            Some("e.g. loopexec build-context --task TASK.md --model claude-sonnet-4-5".into()),
        );
    }
    let windows = match crate::config::resolve(
        workdir,
        a.config.as_deref(),
        &crate::config::Overrides::default(),
    ) {
        Ok(c) => c.models.windows,
        Err(e) => return Outcome::error(super::EXIT_ERROR, e.to_string(), Some(e.hint())),
    };
    let failing = match failing_of(workdir, a.run_id.as_deref()) {
        Ok(f) => f,
        Err(o) => return *o,
    };
    let req = ContextRequest {
        task_file: a.task.as_deref(),
        files: &a.files,
        failing,
        model: &a.model,
        windows: Some(&windows),
    };
    let report = context::build(workdir, &req);
    let fits = report.window.map(|w| report.total_tokens <= w);
    let mut human = format!(
        "context for {} (tokens estimated as bytes/4)\n",
        report.model
    );
    for p in &report.parts {
        human.push_str(&format!(
            "  {:>9} tokens  {:<13} {}\n",
            p.tokens, p.kind, p.name
        ));
    }
    for m in &report.missing {
        human.push_str(&format!("  missing: {m}\n"));
    }
    human.push_str(&format!("  {:>9} tokens  total\n", report.total_tokens));
    match (report.window, &report.window_source) {
        (Some(w), Some(src)) => human.push_str(&format!(
            "window: {w} tokens ({src}): {}\n",
            if fits == Some(true) {
                "fits"
            } else {
                "does NOT fit"
            }
        )),
        _ => human.push_str(&format!(
            "window: unknown for model `{}`; set [models.windows] in loop.toml\n",
            report.model
        )),
    }
    let body = BuildContextBody {
        fits,
        halt_reason: (fits == Some(false)).then(|| {
            crate::halt::HaltReason::ContextBudgetUnsatisfiable
                .as_str()
                .to_string()
        }),
        report: report.clone(),
        human,
    };
    // a file the person named that is not there is an error, not a zero: the
    // estimate would otherwise say "fits" for a task that was never read
    if !report.missing.is_empty() {
        let mut o = Outcome::from_body("error", super::EXIT_ERROR, &body);
        o.errors = report
            .missing
            .iter()
            .map(|m| {
                format!(
                    "{m}: not found in {} (counted as 0 tokens)",
                    workdir.display()
                )
            })
            .collect();
        o.hint = Some(
            "give --task and --files paths relative to the workdir (or a glob that matches)".into(),
        );
        return o;
    }
    Outcome::from_body("ok", 0, &body)
}
