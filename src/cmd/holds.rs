//! `loopexec hold`, `release`, `holds`: a person's stop or suspension of running work
//! (SPEC §Holds). Workspace and run holds live in the workspace ledger; `--all` holds
//! live in the user's state directory and cover every workspace.

use super::bodies_control::{HoldBody, HoldsBody, ReleaseBody};
use crate::cli::{HoldArgs, Outcome, ReleaseArgs};
use crate::store::{HoldRow, HoldScope, HoldStrength, NewHold, Store};
use crate::workspace::Workspace;
use std::path::Path;

#[allow(clippy::result_large_err)] // the error is the command's rendered outcome
fn ledger(workdir: &Path) -> Result<(Workspace, Store), Outcome> {
    let ws = Workspace::at(workdir).map_err(|e| super::ws_error(&e))?;
    ws.ensure().map_err(|e| super::ws_error(&e))?;
    let store = Store::open(&ws.ledger_path()).map_err(|e| store_error(&e))?;
    Ok((ws, store))
}

fn store_error(e: &crate::store::StoreError) -> Outcome {
    Outcome::error(
        crate::halt::HaltReason::InvariantFailed.exit_code(),
        e.to_string(),
        Some("`loopexec check` validates the ledger".into()),
    )
}

/// The global hold ledger, created when `create` (taking a global hold).
#[allow(clippy::result_large_err)] // the error is the command's rendered outcome
fn global(create: bool) -> Result<Option<Store>, Outcome> {
    let Some(path) = crate::control::global_holds_path() else {
        return if create {
            Err(Outcome::error(
                super::EXIT_ERROR,
                "no state directory for global holds: set LOOPEXEC_STATE_DIR, XDG_STATE_HOME or HOME".into(),
                None,
            ))
        } else {
            Ok(None)
        };
    };
    if !create && !path.is_file() {
        return Ok(None);
    }
    if let Some(dir) = path.parent() {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return Err(Outcome::error(
                super::EXIT_ERROR,
                format!("cannot create {}: {e}", dir.display()),
                Some("set LOOPEXEC_STATE_DIR to a writable directory".into()),
            ));
        }
    }
    Store::open(&path).map(Some).map_err(|e| store_error(&e))
}

#[allow(clippy::result_large_err)] // the error is the command's rendered outcome
fn non_empty(flag: &str, v: &str) -> Result<(), Outcome> {
    if v.trim().is_empty() {
        return Err(Outcome::error(
            2,
            format!("{flag} must not be empty"),
            Some(format!(
                "give {flag} a value a person will understand at 3 a.m."
            )),
        ));
    }
    Ok(())
}

/// The refusal of a workspace or run hold where `workdir` is not a workspace, so the
/// hold would stop nothing, silently (a new user's hold taken in `p1/tests` let the run
/// in `p1` converge). A directory is a workspace when it holds `.loopexec/` (a run or
/// `init` worked there), or when no directory above holds one and it is a project's
/// root where no run has started yet (it holds `loop.toml` or `.git`): a hold taken
/// before the first run stops it. Names the nearest directory above that holds a
/// workspace, if any. `None` when `workdir` may be held.
fn no_workspace(workdir: &Path) -> Option<Outcome> {
    let abs = std::fs::canonicalize(workdir).unwrap_or_else(|_| workdir.to_path_buf());
    if abs.join(".loopexec").is_dir() {
        return None;
    }
    let above = abs
        .ancestors()
        .skip(1)
        .find(|d| d.join(".loopexec").is_dir());
    let project_root = abs.join("loop.toml").is_file() || abs.join(".git").exists();
    if above.is_none() && project_root {
        return None;
    }
    let hint = match above {
        Some(d) => format!(
            "the nearest workspace is {}: run the hold there, or pass --workdir {}",
            d.display(),
            crate::observe::isolation::shell_quote(&d.display().to_string())
        ),
        None => "run it in the project directory loopexec runs in (its root, or where `loopexec init` or `loopexec run` made .loopexec/), pass --workdir DIR, or hold every workspace with --all".into(),
    };
    Some(Outcome::error(
        super::EXIT_ERROR,
        format!(
            "{} is not a loopexec workspace (no .loopexec/, and not a project's root): a hold here would stop no run",
            abs.display()
        ),
        Some(hint),
    ))
}

pub(crate) fn hold(workdir: &Path, a: &HoldArgs) -> Outcome {
    if let Err(o) = non_empty("--reason", &a.reason).and(non_empty("--by", &a.by)) {
        return o;
    }
    let scope = match (&a.run, a.all) {
        (Some(r), _) => {
            if let Err(e) = crate::workspace::validate_run_id(r) {
                return Outcome::error(2, e.to_string(), None);
            }
            HoldScope::Run(r.clone())
        }
        (None, true) => HoldScope::Global,
        (None, false) => HoldScope::Workspace,
    };
    let store = if scope == HoldScope::Global {
        match global(true) {
            Ok(Some(s)) => s,
            Ok(None) => unreachable!("global(true) creates the ledger or fails"),
            Err(o) => return o,
        }
    } else {
        if let Some(o) = no_workspace(workdir) {
            return o;
        }
        match ledger(workdir) {
            Ok((_, s)) => s,
            Err(o) => return o,
        }
    };
    // A run hold names a run this ledger knows: a typo would otherwise hold nothing,
    // silently.
    if let HoldScope::Run(r) = &scope {
        match store.run(r) {
            Ok(Some(_)) => {}
            Ok(None) => {
                return Outcome::error(
                    super::EXIT_ERROR,
                    format!("--run {r}: no run with that id in this workspace's ledger"),
                    Some(
                        "list the runs with `loopexec runs` (or hold the whole workspace without --run)"
                            .into(),
                    ),
                )
            }
            Err(e) => return store_error(&e),
        }
    }
    let strength = if a.suspend {
        HoldStrength::Suspended
    } else {
        HoldStrength::Stopped
    };
    let row = match store.take_hold(&NewHold {
        scope,
        strength,
        holder: a.by.trim(),
        reason: a.reason.trim(),
    }) {
        Ok(r) => r,
        Err(e) => return store_error(&e),
    };
    let effect = match strength {
        HoldStrength::Stopped => "running steps it covers are ended within a poll; the runs halt human_required and resume only after this hold is released (`loopexec release ID --by NAME`) and a person acks their halt event",
        HoldStrength::Suspended => "the runs it covers park at their next step boundary and go on by themselves when it is released",
    };
    let human = format!(
        "hold {} taken ({} {}, by {}): {}\n{effect}\nrelease it with: loopexec release {} --by {}\n",
        row.id,
        row.scope,
        row.strength.as_str(),
        row.holder,
        row.reason,
        row.id,
        row.holder
    );
    let body = HoldBody {
        hold_id: row.id.clone(),
        hold: row,
        human,
    };
    Outcome::from_body("ok", 0, &body)
}

pub(crate) fn release(workdir: &Path, a: &ReleaseArgs) -> Outcome {
    if let Err(o) = non_empty("--by", &a.by) {
        return o;
    }
    let mut stores: Vec<Store> = Vec::new();
    match ledger(workdir) {
        Ok((_, s)) => stores.push(s),
        Err(o) => return o,
    }
    // Releasing a hold is a person's act, as acknowledging is: an agent must not undo
    // the stop a person put on it.
    if let Some(why) = crate::control::inside_step(stores.first()) {
        return Outcome::error(
            crate::halt::HaltReason::HumanRequired.exit_code(),
            format!("release refused: it runs inside a loopexec step ({why}); releasing a hold must come from a person"),
            Some("run `loopexec release` yourself, from your own terminal".into()),
        );
    }
    match global(false) {
        Ok(Some(g)) => stores.push(g),
        Ok(None) => {}
        Err(o) => return o,
    }
    for s in &stores {
        let row = match s.hold(&a.hold_id) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) => return store_error(&e),
        };
        if let Some(at) = &row.released_at {
            return Outcome::error(
                crate::halt::HaltReason::InvariantFailed.exit_code(),
                format!(
                    "hold {} was already released by {} at {at}",
                    row.id,
                    row.released_by.as_deref().unwrap_or("?")
                ),
                Some("`loopexec holds` lists the holds still in force".into()),
            );
        }
        // the gate's own hold on a run whose agent call waits for an answer: releasing
        // it would hide the waiting call from `holds` while the gate still waits
        // (a new user's review); the answer releases it
        let waiting = match s.pending(true) {
            Ok(v) => v
                .into_iter()
                .find(|p| p.hold_id.as_deref() == Some(row.id.as_str())),
            Err(e) => return store_error(&e),
        };
        if let Some(p) = waiting {
            return Outcome::error(
                super::EXIT_ERROR,
                format!(
                    "hold {} is the gate's: it holds run {} while action {} waits for a person ({} `{}`)",
                    row.id, p.run_id, p.id, p.tool, p.target
                ),
                Some(format!(
                    "answer the action instead: loopexec confirm {0} --by NAME, or loopexec deny {0} --by NAME",
                    p.id
                )),
            );
        }
        if let Err(e) = s.release_hold(&row.id, a.by.trim()) {
            return store_error(&e);
        }
        let after = match row.strength {
            HoldStrength::Suspended => "parked runs go on by themselves",
            HoldStrength::Stopped => "runs it stopped stay latched until a person acks their halt event (`loopexec halts --unacked`), then `loopexec run --resume RUN_ID`",
        };
        let body = ReleaseBody {
            hold_id: row.id.clone(),
            released_by: a.by.trim().into(),
            human: format!(
                "released hold {} ({} {}: {})\n{after}\n",
                row.id,
                row.scope,
                row.strength.as_str(),
                row.reason
            ),
        };
        return Outcome::from_body("ok", 0, &body);
    }
    Outcome::error(
        super::EXIT_ERROR,
        format!(
            "no hold `{}` in this workspace or among global holds",
            a.hold_id
        ),
        Some("`loopexec holds` lists hold ids".into()),
    )
}

pub(crate) fn list(workdir: &Path) -> Outcome {
    let mut rows: Vec<HoldRow> = Vec::new();
    match global(false) {
        Ok(Some(g)) => match g.active_holds(None) {
            Ok(v) => rows.extend(v.into_iter().filter(|h| h.scope == "global")),
            Err(e) => return store_error(&e),
        },
        Ok(None) => {}
        Err(o) => return o,
    }
    let ws = match Workspace::at(workdir) {
        Ok(w) => w,
        Err(e) => return super::ws_error(&e),
    };
    if ws.ledger_path().is_file() {
        match Store::open(&ws.ledger_path()).and_then(|s| s.active_holds(None)) {
            Ok(v) => rows.extend(v),
            Err(e) => return store_error(&e),
        }
    }
    let mut human = if rows.is_empty() {
        "no holds in force\n".to_string()
    } else {
        format!("{} hold(s) in force:\n", rows.len())
    };
    for h in &rows {
        human.push_str(&format!(
            "  {}  {:<10} {:<9} by {} since {}: {}\n",
            h.id,
            h.scope,
            h.strength.as_str(),
            h.holder,
            h.taken_at,
            h.reason
        ));
    }
    Outcome::from_body("ok", 0, &HoldsBody { holds: rows, human })
}
