//! `loopexec ack`: a person acknowledges a halt event (`ack HALT_ID --by NAME
//! --resolution R`) or a run's work (`ack --run-id ID --reviewer NAME`, which clears
//! comprehension debt on `run --resume`).
//!
//! An acknowledgement is a person's (SPEC §Halt events): `ack` refuses inside a
//! loopexec step (a step's environment, or a running run's loopexec among its
//! ancestors), records how it was made (terminal, non-interactive, SSH-signed and by
//! which key), and, when the run's policy says `[review] require_signed_ack`, accepts
//! only an SSH signature that verifies against `[review] allowed_signers`.

use super::bodies_control::AckBody;
use crate::cli::{AckArgs, Outcome};
use crate::config::RunConfig;
use crate::halt::HaltReason;
use crate::receipt::Event;
use crate::store::{AckHow, Store};
use crate::workspace::Workspace;
use std::path::{Path, PathBuf};

/// Exit code of a refused acknowledgement (a person must do it): human_required's.
fn refused(message: String, hint: &str) -> Outcome {
    Outcome::error(
        HaltReason::HumanRequired.exit_code(),
        message,
        Some(hint.to_string()),
    )
}

fn invariant(message: String, hint: Option<String>) -> Outcome {
    Outcome::error(HaltReason::InvariantFailed.exit_code(), message, hint)
}

/// The policy a run was started with (its `run_started`), else the workspace's
/// loop.toml, else the defaults.
fn run_policy(ws: &Workspace, run_id: &str) -> RunConfig {
    crate::receipt::read(&ws.receipt_path(run_id))
        .ok()
        .and_then(|lines| {
            lines.into_iter().find_map(|l| match l.event {
                Event::RunStarted(s) => Some(s.config),
                _ => None,
            })
        })
        .or_else(|| {
            crate::config::resolve(&ws.workdir, None, &crate::config::Overrides::default()).ok()
        })
        .unwrap_or_else(RunConfig::defaults)
}

/// How this acknowledgement is made: unsigned, or an SSH signature that verifies.
#[allow(clippy::result_large_err)] // the error is the command's rendered outcome
fn provenance(
    a: &AckArgs,
    ws: &Workspace,
    cfg: &RunConfig,
    subject: &str,
    by: &str,
    resolution: &str,
) -> Result<AckHow, Outcome> {
    let message = crate::control::ack_message(subject, by, resolution);
    // A signature made here lives in a temp dir that outlives the verification only.
    let made_here = match &a.sign_with {
        Some(key) if a.signature.is_none() => Some(sign(key, &message)?),
        _ => None,
    };
    let sig: Option<PathBuf> = match (&a.signature, &made_here) {
        (Some(s), _) => Some(s.clone()),
        (None, Some((_dir, s))) => Some(s.clone()),
        (None, None) => None,
    };
    let Some(sig) = sig else {
        if cfg.review.require_signed_ack {
            return Err(refused(
                "this run's policy requires a signed acknowledgement ([review] require_signed_ack = true)".into(),
                "sign it: loopexec ack … --sign-with ~/.ssh/id_ed25519 (or --signature FILE from `ssh-keygen -Y sign -n loopexec`)",
            ));
        }
        return Ok(crate::control::ack_how_unsigned());
    };
    let Some(allowed) = &cfg.review.allowed_signers else {
        return Err(invariant(
            "a signed acknowledgement needs an allowed-signers file, and [review] allowed_signers is not set".into(),
            Some("set [review] allowed_signers = \"path/to/allowed_signers\" in loop.toml (the format of ssh-keygen -Y verify -f)".into()),
        ));
    };
    let allowed = if allowed.is_absolute() {
        allowed.clone()
    } else {
        ws.workdir.join(allowed)
    };
    match crate::control::verify_signature(&allowed, by, &message, &sig) {
        Ok(text) => Ok(AckHow {
            method: "ssh_signature".into(),
            key: Some(text),
            os_user: std::env::var("USER").ok(),
        }),
        Err(why) => Err(refused(
            format!("the signature does not verify for {by} against {}: {why}", allowed.display()),
            "sign exactly the ack message (see `loopexec ack --help`) with a key listed for this name in the allowed-signers file",
        )),
    }
}

/// Signs `message` with `key` through `ssh-keygen -Y sign -n loopexec`; returns the
/// temp dir holding the signature (removed when dropped) and the signature file.
#[allow(clippy::result_large_err)] // the error is the command's rendered outcome
fn sign(key: &Path, message: &str) -> Result<(tempfile::TempDir, PathBuf), Outcome> {
    let dir = tempfile::tempdir().map_err(|e| invariant(format!("temp dir: {e}"), None))?;
    let msg = dir.path().join("ack.txt");
    std::fs::write(&msg, message)
        .map_err(|e| invariant(format!("{}: {e}", msg.display()), None))?;
    let st = std::process::Command::new("ssh-keygen")
        .args(["-q", "-Y", "sign", "-n", "loopexec", "-f"])
        .arg(key)
        .arg(&msg)
        .status()
        .map_err(|e| invariant(format!("cannot run ssh-keygen: {e}"), None))?;
    let sig = dir.path().join("ack.txt.sig");
    if !st.success() || !sig.is_file() {
        return Err(refused(
            format!("ssh-keygen -Y sign with {} failed ({st})", key.display()),
            "check the key path and its passphrase",
        ));
    }
    Ok((dir, sig))
}

pub(crate) fn run(workdir: &Path, a: &AckArgs) -> Outcome {
    let ws = match Workspace::at(workdir) {
        Ok(w) => w,
        Err(e) => return super::ws_error(&e),
    };
    let store = if ws.ledger_path().is_file() {
        match Store::open(&ws.ledger_path()) {
            Ok(s) => Some(s),
            Err(e) => return invariant(e.to_string(), None),
        }
    } else {
        None
    };
    if let Some(why) = crate::control::inside_step(store.as_ref()) {
        return refused(
            format!("ack refused: it runs inside a loopexec step ({why}); an acknowledgement must come from a person"),
            "run `loopexec ack` yourself, from your own terminal",
        );
    }
    match &a.halt_id {
        Some(id) => ack_event(&ws, store, a, id),
        None => ack_run(workdir, &ws, a),
    }
}

fn ack_event(ws: &Workspace, store: Option<Store>, a: &AckArgs, id: &str) -> Outcome {
    let Some(by) = a.by.as_deref().map(str::trim).filter(|b| !b.is_empty()) else {
        return Outcome::error(
            2,
            "ack HALT_ID needs --by NAME (the person acknowledging)".into(),
            None,
        );
    };
    let resolution = a.resolution.as_deref().unwrap_or("resolved");
    let Some(store) = store else {
        return Outcome::error(
            super::EXIT_ERROR,
            format!("no halt event `{id}`: this workspace has no ledger yet"),
            None,
        );
    };
    let ev = match store.halt_event(id) {
        Ok(Some(e)) => e,
        Ok(None) => {
            return Outcome::error(
                super::EXIT_ERROR,
                format!("no halt event `{id}` in this workspace"),
                Some("`loopexec halts --unacked` lists the open ones".into()),
            )
        }
        Err(e) => return invariant(e.to_string(), None),
    };
    if ev.acknowledged {
        return invariant(
            format!(
                "halt event {id} was already acknowledged by {} at {} (resolution {})",
                ev.acknowledged_by.as_deref().unwrap_or("?"),
                ev.acknowledged_at.as_deref().unwrap_or("?"),
                ev.resolution.as_deref().unwrap_or("-")
            ),
            Some(
                "an event is acknowledged once; `loopexec halts --run RUN_ID` shows who and how"
                    .into(),
            ),
        );
    }
    let cfg = run_policy(ws, &ev.run_id);
    let how = match provenance(a, ws, &cfg, id, by, resolution) {
        Ok(h) => h,
        Err(o) => return o,
    };
    match store.ack_event(id, by, resolution, a.notes.as_deref(), &how) {
        Ok(true) => {}
        Ok(false) => {
            return invariant(
                format!("halt event {id} was acknowledged by someone else a moment ago"),
                Some("`loopexec halts --run RUN_ID` shows who".into()),
            )
        }
        Err(e) => {
            return Outcome::error(HaltReason::InternalError.exit_code(), e.to_string(), None)
        }
    }
    // Resuming helps where a person was the missing piece; a cap or a failed
    // convergence halts again at once.
    let resumable = matches!(
        ev.halt_reason.as_str(),
        "human_required" | "comprehension_debt_exceeded" | "escalation_pending"
    );
    let next = if resumable {
        format!(
            "continue the run with: loopexec run --resume {}\n",
            ev.run_id
        )
    } else {
        String::new()
    };
    let human = format!(
        "acknowledged halt event {id} ({} of run {}) by {by}: {resolution} ({})\n{next}",
        ev.halt_reason, ev.run_id, how.method
    );
    let body = AckBody {
        run_id: ev.run_id,
        halt_id: Some(id.into()),
        acknowledged_by: Some(by.into()),
        resolution: Some(resolution.into()),
        reviewer: None,
        iteration: None,
        how,
        run: None,
        human,
    };
    Outcome::from_body("ok", 0, &body)
}

fn ack_run(workdir: &Path, ws: &Workspace, a: &AckArgs) -> Outcome {
    // an acknowledgement names what it acknowledges: a bare `ack --by NAME` took the
    // latest run's (a new user's review); a resolution belongs to a halt event
    let Some(run_id) = a.run_id.as_deref() else {
        return Outcome::error(
            2,
            "ack needs a HALT_ID (a halt event) or --run-id RUN (a run's work)".into(),
            Some("loopexec ack HALT_ID --by NAME (`loopexec halts --unacked` lists them), or loopexec ack --run-id RUN_ID --reviewer NAME".into()),
        );
    };
    if a.resolution.is_some() {
        return Outcome::error(
            2,
            "--resolution applies to a halt event (ack HALT_ID --by NAME --resolution R), not to a run's work".into(),
            Some("drop --resolution, or give the halt event's id from `loopexec halts --run RUN_ID`".into()),
        );
    }
    let Some(reviewer) = a
        .reviewer
        .as_deref()
        .or(a.by.as_deref())
        .map(str::trim)
        .filter(|r| !r.is_empty())
    else {
        return Outcome::error(
            2,
            "--reviewer must name a person (or give a HALT_ID with --by)".into(),
            Some("loopexec ack --run-id RUN_ID --reviewer NAME, or loopexec ack HALT_ID --by NAME --resolution resolved".into()),
        );
    };
    let run = match super::load_run(workdir, Some(run_id)) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let iteration = run
        .lines
        .iter()
        .filter_map(|l| match &l.event {
            Event::IterationStarted(i) => Some(i.iteration),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let store = match Store::open(&run.ws.ledger_path()) {
        Ok(s) => s,
        Err(e) => return invariant(e.to_string(), None),
    };
    let cfg = run_policy(ws, &run.run_id);
    let how = match provenance(a, ws, &cfg, &run.run_id, reviewer, "resolved") {
        Ok(h) => h,
        Err(o) => return o,
    };
    if let Err(e) = store.ack(&run.run_id, reviewer, iteration, a.notes.as_deref(), &how) {
        return Outcome::error(HaltReason::InternalError.exit_code(), e.to_string(), None);
    }
    let human = format!(
        "acknowledged run {} through iteration {iteration} by {reviewer} ({})\ncontinue it with: loopexec run --resume {}\n",
        run.run_id, how.method, run.run_id
    );
    let body = AckBody {
        run_id: run.run_id.clone(),
        halt_id: None,
        acknowledged_by: None,
        resolution: None,
        reviewer: Some(reviewer.into()),
        iteration: Some(iteration),
        how,
        run: Some(run.facts()),
        human,
    };
    Outcome::from_body("ok", 0, &body)
}
