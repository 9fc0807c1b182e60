//! The recorder: receipt and ledger writes of the loop.

use super::{EngineError, Loop, RunOutcome};
use crate::halt::Halt;
use crate::receipt::events::Halted;
use crate::receipt::Event;
use crate::store::journal::Decision;
use crate::store::{HaltRecord, Store};
use crate::workspace::Workspace;
use std::path::Path;

pub(super) fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

pub(super) fn write_atomic(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("tmp");
    if std::fs::write(&tmp, bytes).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

impl Loop<'_> {
    pub(super) fn record(&mut self, mut event: Event) -> Result<(), EngineError> {
        crate::receipt::fingerprint::stamp(&mut event, self.cfg.success_exit_code);
        let line = self
            .receipt
            .append_line(&event)
            .map_err(|source| EngineError::Receipt {
                path: self.receipt.path().to_path_buf(),
                source,
            })?;
        let first_check = matches!(&line.event, Event::CheckFinished(c) if c.attempt == 0);
        self.traj.apply_owned(line.event, &line.ts);
        if first_check {
            self.reporter
                .verdict(&self.traj, self.cfg.success_exit_code);
        }
        Ok(())
    }

    /// Records the receipt's head in the ledger (at iteration ends and at the halt).
    pub(super) fn ledger_head(&self) -> Result<(), crate::store::StoreError> {
        let (head, lines) = self.receipt.head();
        self.store
            .receipt_head(&self.run_id, head.as_deref(), lines)
    }

    pub(super) fn ledger_iteration(&self, it: u32) {
        let Some(obs) = self.traj.last() else { return };
        let check = obs.main_check();
        let verdict = match check {
            Some(c) if crate::trajectory::is_green(c, self.cfg.success_exit_code) => "green",
            Some(_) => "red",
            None => "none",
        };
        let cost = obs
            .exec
            .as_ref()
            .and_then(|e| e.usage.as_ref())
            .and_then(|u| u.cost_usd);
        // The iteration's row and the receipt's head commit together.
        let (head, lines) = self.receipt.head();
        let r = self.store.in_transaction(|s| {
            s.iteration(
                &self.run_id,
                it,
                obs.exec.as_ref().and_then(|e| e.step.exit_code),
                check.and_then(|c| c.step.exit_code),
                verdict,
                check.map(|c| c.parsed.failing().len()),
                cost,
            )?;
            s.receipt_head(&self.run_id, head.as_deref(), lines)
        });
        // The ledger is an index of the receipt (which holds every fact): a failed
        // row is said, and `check` reports the mismatch later.
        if let Err(e) = r {
            eprintln!("loopexec: warning: the ledger row of iteration {it} was not written: {e}");
        }
    }

    pub(super) fn finish(&mut self, halt: Halt) -> RunOutcome {
        let it = self.current_iteration();
        if let Some(obs) = self.traj.last() {
            if obs.exec.is_some() || !obs.checks.is_empty() {
                self.ledger_iteration(it);
            }
        }
        let explanation = crate::explain::one_line(&halt, &self.traj);
        let ev = Halted {
            iteration: it,
            halt_reason: halt.reason,
            exit_code: halt.reason.exit_code(),
            class: halt.reason.class().as_str().to_string(),
            contributors: halt.contributors.clone(),
            explanation: explanation.clone(),
            detail: halt.detail.clone(),
            preflight: false,
        };
        // The final line is a must-succeed write: when it fails (a full disk, a receipt
        // taken away) the outcome is internal_error, saying what was not recorded.
        let (halt, explanation) = match self.receipt.append_line(&Event::Halted(Box::new(ev))) {
            Ok(_) => {
                // The seal, outside the workdir: `attest`, `runs` and `latest` believe
                // a halted receipt only with it (see `journal::Decision::RunSealed`).
                let sealed = self.store.journal().append(Decision::RunSealed {
                    run_id: self.run_id.clone(),
                    receipt_blake3: self.receipt.digest_hex(),
                    halt_reason: halt.reason.to_string(),
                });
                if let Err(e) = sealed {
                    eprintln!(
                        "loopexec: warning: the receipt was not sealed in the control journal ({e}); `attest` will refuse this run"
                    );
                }
                (halt, explanation)
            }
            Err(e) => {
                let h = Halt::new(
                    crate::halt::HaltReason::InternalError,
                    vec![format!(
                        "the final `halted` line ({}) could not be written to {}: {}",
                        halt.reason,
                        self.receipt.path().display(),
                        describe_io(&e)
                    )],
                );
                let x = crate::explain::one_line(&h, &self.traj);
                (h, x)
            }
        };
        let failing = self
            .traj
            .last()
            .and_then(|o| o.main_check())
            .map(|c| c.parsed.failing().len());
        let halt_id = self.store.halted(&HaltRecord {
                run_id: &self.run_id,
                iteration: it,
                reason: halt.reason,
                description: &explanation,
                context: &serde_json::json!({"contributors": halt.contributors, "detail": halt.detail, "failing": failing}),
                attempt_count: Some(it),
                previous_error: None,
                // A start refused for inheriting a rejected tree repeats a halt a person
                // has been asked about already: it does not block the next start again.
                severity: (halt.detail.get("cause").and_then(serde_json::Value::as_str)
                    == Some("inherited_rejection"))
                .then_some("medium"),
            });
        self.after_halt(&halt, halt_id.as_ref().ok().map(String::as_str));
        let ledger = halt_id.and_then(|_| self.ledger_head());
        if let Err(e) = ledger {
            eprintln!("loopexec: warning: the ledger did not record the halt: {e}");
        }
        if let Err(e) = std::fs::remove_file(self.ws.heartbeat_path(&self.run_id)) {
            if e.kind() != std::io::ErrorKind::NotFound {
                eprintln!("loopexec: warning: the heartbeat file was not removed: {e}");
            }
        }
        self.reporter.done();
        RunOutcome {
            run_id: self.run_id.clone(),
            iteration: it,
            advice: crate::explain::advice_for(halt.reason, &self.traj),
            halt,
            explanation,
            receipt: Some(self.receipt.path().to_path_buf()),
            preflight: false,
        }
    }
}

/// An I/O error in words, naming a full disk as such.
#[must_use]
pub fn describe_io(e: &std::io::Error) -> String {
    if e.raw_os_error() == Some(libc::ENOSPC) {
        format!("the disk is full ({e})")
    } else {
        e.to_string()
    }
}

/// Records a preflight halt (no receipt) in the ledger when one can be opened.
pub fn record_preflight(ws: Option<&Workspace>, run_id: &str, halt: &Halt) {
    let Some(ws) = ws else { return };
    if ws.ensure().is_err() {
        return;
    }
    if let Ok(store) = Store::open(&ws.ledger_path()) {
        let _ = store.halted(&HaltRecord {
            run_id,
            iteration: 0,
            reason: halt.reason,
            description: &halt.contributors.join("; "),
            context: &serde_json::json!({"preflight": true, "contributors": halt.contributors}),
            attempt_count: None,
            previous_error: None,
            severity: None,
        });
    }
}
