//! `loopexec check`: validates `.loopexec/` — the ledger's schema, every receipt's
//! hash chain and sequence, and that the snapshot refs the receipts name still exist.
//! The first broken record is named and the command exits 20 (`invariant_failed`).

use super::bodies_ops::CheckBody;
use crate::cli::Outcome;
use crate::halt::HaltReason;
use crate::receipt::{self, Event};
use crate::workspace::Workspace;
use std::path::Path;

pub(crate) fn run(workdir: &Path) -> Outcome {
    let ws = match Workspace::at(workdir) {
        Ok(w) => w,
        Err(e) => return super::ws_error(&e),
    };
    // nothing recorded here: "verified" would vouch for nothing (a new user's `check`
    // in a directory loopexec never ran in said ok)
    if !ws.ledger_path().is_file() && !ws.runs_dir().is_dir() {
        return Outcome::error(
            super::EXIT_ERROR,
            format!(
                "nothing to check: {} holds no ledger and no receipts (no run was recorded here)",
                ws.workdir.display()
            ),
            Some("run `loopexec check` in the project a run was recorded in (where its .loopexec/ is), or pass --workdir DIR".into()),
        );
    }
    let mut problems: Vec<String> = Vec::new();
    let ledger = ws
        .ledger_path()
        .is_file()
        .then(|| crate::store::Store::open(&ws.ledger_path()).ok())
        .flatten();
    let mut receipts = 0usize;
    let mut snapshots = 0usize;
    if ws.ledger_path().is_file() {
        match crate::store::Store::open(&ws.ledger_path()) {
            Ok(s) => {
                match s.journal_disagreements() {
                    Ok(v) => problems.extend(v),
                    Err(e) => problems.push(e.to_string()),
                }
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
                        Event::RunStarted(r) => r.git.baseline_snapshot.clone(),
                        Event::ExecFinished(e) => e.snapshot.clone(),
                        Event::Reverted(r) => Some(r.snapshot.clone()),
                        _ => None,
                    };
                    if let Some(s) = snap {
                        snapshots += 1;
                        if !crate::observe::git::git_cmd(&crate::observe::tree::store_path(
                            &ws.workdir,
                        ))
                        .args(["cat-file", "-e", &format!("{s}^{{commit}}")])
                        .stdout(std::process::Stdio::null())
                        .stderr(std::process::Stdio::null())
                        .status()
                        .is_ok_and(|st| st.success())
                        {
                            problems.push(format!(
                                "{} line {}: snapshot {s} is missing from the snapshot store",
                                path.display(),
                                l.seq + 1
                            ));
                        }
                    }
                }
                problems.extend(verify_halts(path, &lines, ledger.as_ref()));
            }
        }
    }
    let mut body = CheckBody {
        receipts,
        snapshots,
        problems: problems.clone(),
        halt_reason: None,
        human: String::new(),
    };
    if problems.is_empty() {
        body.human =
            format!("ok: ledger, {receipts} receipt(s) and {snapshots} snapshot(s) verified\n");
        return Outcome::from_body("ok", 0, &body);
    }
    body.halt_reason = Some(HaltReason::InvariantFailed.as_str().into());
    body.human = problems
        .iter()
        .map(|p| format!("broken: {p}\n"))
        .collect::<String>();
    let mut o = Outcome::from_body("halted", HaltReason::InvariantFailed.exit_code(), &body);
    o.errors = problems;
    o.hint = Some(
        "the first broken record is listed first; receipts are append-only and must not be edited"
            .into(),
    );
    o
}

/// Every `halted` event must be what `decide` derives from the observations before it
/// (preflight halts and `internal_error` excepted), and the newest one must agree with
/// the ledger's row for the run: a forged verdict is a broken record.
fn verify_halts(
    path: &Path,
    lines: &[receipt::Line],
    ledger: Option<&crate::store::Store>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut last = None;
    for (k, l) in lines.iter().enumerate() {
        let Event::Halted(h) = &l.event else { continue };
        last = Some(h.halt_reason);
        if h.preflight || h.halt_reason == HaltReason::InternalError {
            continue;
        }
        let t = crate::trajectory::Trajectory::from_lines(&lines[..k]);
        let derived = t
            .config()
            .and_then(|cfg| match crate::decide::decide(&t, cfg).verdict {
                crate::halt::Verdict::Halt(x) => Some(x.reason),
                crate::halt::Verdict::Continue => None,
            });
        if derived != Some(h.halt_reason) {
            problems.push(format!(
                "{} line {}: records {} but its observations derive {}",
                path.display(),
                l.seq + 1,
                h.halt_reason,
                derived.map_or("no halt".to_string(), |r| r.to_string())
            ));
        }
    }
    let run_id = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(store) = ledger {
        problems.extend(ledger_disagreements(path, &run_id, lines, last, store));
    }
    problems
}

/// Where the receipt of `run_id` at `path` (its `lines`, its last halt `last`)
/// disagrees with the ledger `store`: a head the ledger did not record (truncated, or
/// lines added behind loopexec's back), halts without a halt event, no row for a run
/// that started (a receipt copied in from elsewhere), a status or halt the row does
/// not hold. Empty when the two agree.
pub(crate) fn ledger_disagreements(
    path: &Path,
    run_id: &str,
    lines: &[receipt::Line],
    last: Option<HaltReason>,
    store: &crate::store::Store,
) -> Vec<String> {
    let mut problems = Vec::new();
    let run_id = run_id.to_string();
    // The ledger holds the receipt's head (blake3 of its last line, line count) as of
    // the last iteration end or halt: a receipt cut at a line boundary, or lines
    // added behind loopexec's back, no longer matches it.
    {
        match store.receipt_head_of(&run_id) {
            Ok(Some((head, n))) => {
                let actual_n = lines.len() as u64;
                let actual_head = lines.last().map(|l| l.hash.clone());
                if actual_n < n {
                    problems.push(format!(
                        "{}: the receipt has {actual_n} line(s) but the ledger recorded {n}: it was truncated",
                        path.display()
                    ));
                } else if actual_n == n && actual_head != head {
                    problems.push(format!(
                        "{}: the receipt's last line is not the one the ledger recorded",
                        path.display()
                    ));
                } else if actual_n > n
                    && lines
                        .get(usize::try_from(n).unwrap_or(usize::MAX).saturating_sub(1))
                        .map(|l| l.hash.clone())
                        != head
                    && n > 0
                {
                    problems.push(format!(
                        "{}: line {n} is not the one the ledger recorded as the receipt's head",
                        path.display()
                    ));
                }
            }
            Ok(None) => {}
            Err(e) => problems.push(format!("{}: {e}", path.display())),
        }
        let recorded_halts = lines
            .iter()
            .filter(|l| matches!(&l.event, Event::Halted(h) if !h.preflight))
            .count();
        if recorded_halts > 0 && store.halt_count(&run_id).is_ok_and(|n| n == 0) {
            problems.push(format!(
                "{}: the receipt records {recorded_halts} halt(s) but the ledger has no halt event for the run",
                path.display()
            ));
        }
        let started = lines
            .iter()
            .any(|l| matches!(&l.event, Event::RunStarted(_)));
        if started && store.run(&run_id).is_ok_and(|r| r.is_none()) {
            problems.push(format!(
                "{}: the ledger has no row for this run, whose receipt says it started: the row was deleted (or never written: the run warned then)",
                path.display()
            ));
        }
        if let Ok(Some(row)) = store.run(&run_id) {
            if row.status != "running" && last.is_none() {
                problems.push(format!(
                    "{}: the ledger records the run as {} but the receipt has no `halted` line",
                    path.display(),
                    row.status
                ));
            }
        }
    }
    if let Some(last) = last {
        if let Ok(Some(row)) = store.run(&run_id) {
            if row
                .halt_reason
                .as_deref()
                .is_some_and(|r| r != last.as_str())
            {
                problems.push(format!(
                    "{}: the last halt is {last} but the ledger records {}",
                    path.display(),
                    row.halt_reason.unwrap_or_default()
                ));
            }
        }
    }
    problems
}
