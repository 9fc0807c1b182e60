//! `loopexec runs`: every run in the workdir with its verdict, newest first.

use crate::cli::Outcome;
use crate::cmd::bodies::RunsBody;
use crate::output::RunFacts;
use crate::workspace::Workspace;
use std::path::Path;

/// Run ids with a receipt, newest first (by the receipt's first timestamp, then id).
pub(crate) fn run_ids(ws: &Workspace) -> Vec<(String, RunFacts)> {
    with_lines(ws)
        .into_iter()
        .map(|(id, facts, _)| (id, facts))
        .collect()
}

/// [`run_ids`] with each receipt's lines.
fn with_lines(ws: &Workspace) -> Vec<(String, RunFacts, Vec<crate::receipt::Line>)> {
    let Ok(rd) = std::fs::read_dir(ws.runs_dir()) else {
        return Vec::new();
    };
    let mut out: Vec<(String, RunFacts, Vec<crate::receipt::Line>)> = rd
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let id = name.strip_suffix(".jsonl")?.to_string();
            let path = e.path();
            let lines = match crate::receipt::read(&path) {
                Ok(l) => l,
                Err(_) => super::read_complete_lines(&path),
            };
            let facts = crate::receipt::facts::run_facts(&id, &path, &lines);
            Some((id, facts, lines))
        })
        .collect();
    out.sort_by(|a, b| {
        b.1.started_at
            .cmp(&a.1.started_at)
            .then_with(|| b.0.cmp(&a.0))
    });
    out
}

pub(crate) fn list(workdir: &Path) -> Outcome {
    let ws = match Workspace::at(workdir) {
        Ok(w) => w,
        Err(e) => return super::ws_error(&e),
    };
    let runs = with_lines(&ws);
    // one ledger for every run: a receipt it did not record is marked
    let store = ws
        .ledger_path()
        .is_file()
        .then(|| crate::store::Store::open(&ws.ledger_path()).ok())
        .flatten();
    let unrecorded: Vec<String> = runs
        .iter()
        .filter(|(id, _, lines)| {
            let Some(store) = &store else { return true };
            !super::recorded_in(store, id, &ws.receipt_path(id), lines).is_empty()
        })
        .map(|(id, _, _)| id.clone())
        .collect();
    let mut human = String::new();
    if runs.is_empty() {
        human.push_str("no runs yet (start one with `loopexec run --check CMD`)\n");
    } else {
        human.push_str(&format!(
            "{:<28} {:<24} {:>4} {:>5} {:>9}  started\n",
            "run", "halt", "exit", "iter", "duration"
        ));
    }
    // a resume after the sealed halt that recorded no halt of its own
    // (listed as the run still going or died, with no halt, not as a planted receipt)
    let (open, unrecorded): (Vec<String>, Vec<String>) = unrecorded.into_iter().partition(|id| {
        store
            .as_ref()
            .is_some_and(|st| super::open_resume(st, id, &ws.receipt_path(id)))
    });
    for (id, f, _) in &runs {
        let halt = if open.contains(id) {
            "(resumed, no halt)"
        } else if unrecorded.contains(id) {
            "(not recorded)"
        } else {
            f.halt_reason.as_deref().unwrap_or("(running or died)")
        };
        human.push_str(&format!(
            "{:<28} {:<24} {:>4} {:>5} {:>9}  {}\n",
            id,
            halt,
            f.exit_code.map_or("-".into(), |c| c.to_string()),
            f.iteration
                .map_or_else(|| "-".to_string(), |i| i.to_string()),
            f.duration_ms
                .map_or("-".into(), |d| format!("{:.1}s", d as f64 / 1000.0)),
            f.started_at.as_deref().unwrap_or("-")
        ));
    }
    if !unrecorded.is_empty() {
        human.push_str(
            "(not recorded): a receipt no run of this workspace recorded (copied in, edited, or missing its seal in the control journal); `loopexec check` names what differs\n",
        );
    }
    let body = RunsBody {
        runs: runs.into_iter().map(|(_, f, _)| f).collect(),
        unrecorded,
        human,
    };
    Outcome::from_body("ok", 0, &body)
}
