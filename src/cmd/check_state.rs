//! `loopexec check`: validates `.loopexec/` — the ledger's schema, every receipt's
//! hash chain and sequence, and that the snapshot refs the receipts name still exist.
//! The first broken record is named and the command exits 20 (`invariant_failed`).

use crate::cli::Outcome;
use crate::halt::HaltReason;
use crate::receipt::{self, Event};
use crate::workspace::Workspace;
use serde_json::{json, Map};
use std::path::Path;

pub(crate) fn run(workdir: &Path) -> Outcome {
    let ws = match Workspace::at(workdir) {
        Ok(w) => w,
        Err(e) => return super::ws_error(&e),
    };
    let mut problems: Vec<String> = Vec::new();
    let mut receipts = 0usize;
    let mut snapshots = 0usize;
    if ws.ledger_path().is_file() {
        match crate::store::Store::open(&ws.ledger_path()) {
            Ok(s) => {
                if let Ok(v) = s.user_version() {
                    if v != crate::store::USER_VERSION {
                        problems.push(format!(
                            "ledger schema version {v}, expected {}",
                            crate::store::USER_VERSION
                        ));
                    }
                }
            }
            Err(e) => problems.push(e.to_string()),
        }
    }
    let mut entries: Vec<_> = std::fs::read_dir(ws.runs_dir())
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    entries.sort();
    for path in &entries {
        receipts += 1;
        match receipt::read(path) {
            Err(e) => problems.push(e.to_string()),
            Ok(lines) => {
                if let Some((line, what)) = receipt::verify_chain(&lines) {
                    problems.push(format!("{} line {line}: {what}", path.display()));
                }
                for l in &lines {
                    let snap = match &l.event {
                        Event::ExecFinished(e) => e.snapshot.clone(),
                        Event::Reverted(r) => Some(r.snapshot.clone()),
                        _ => None,
                    };
                    if let Some(s) = snap {
                        snapshots += 1;
                        if !crate::observe::git::git_cmd(&ws.workdir)
                            .args(["cat-file", "-e", &format!("{s}^{{commit}}")])
                            .stdout(std::process::Stdio::null())
                            .stderr(std::process::Stdio::null())
                            .status()
                            .is_ok_and(|st| st.success())
                        {
                            problems.push(format!(
                                "{} line {}: snapshot {s} is missing from the git object store",
                                path.display(),
                                l.seq + 1
                            ));
                        }
                    }
                }
            }
        }
    }
    let mut f = Map::new();
    f.insert("receipts".into(), json!(receipts));
    f.insert("snapshots".into(), json!(snapshots));
    f.insert("problems".into(), json!(problems));
    if problems.is_empty() {
        return Outcome::ok(
            f,
            format!("ok: ledger, {receipts} receipt(s) and {snapshots} snapshot(s) verified\n"),
        );
    }
    f.insert(
        "halt_reason".into(),
        json!(HaltReason::InvariantFailed.as_str()),
    );
    let human = problems
        .iter()
        .map(|p| format!("broken: {p}\n"))
        .collect::<String>();
    Outcome {
        status: "halted".into(),
        exit_code: HaltReason::InvariantFailed.exit_code(),
        fields: f,
        human,
        errors: problems,
        hint: Some("the first broken record is listed first; receipts are append-only and must not be edited".into()),
    }
}
