//! The control journal: a person's decisions, kept where the agent cannot write.
//!
//! The ledger (`.loopexec/ledger.sqlite`) lives in the workdir, and the sandbox cannot
//! carve it out of the tree the exec may write (Landlock grants whole hierarchies). An
//! agent that writes the ledger with any SQLite client could release a hold, answer
//! its own pending action, or acknowledge the halt that latched its run. So every
//! decision that lets a run go on is also appended to this journal, in loopexec's
//! state directory (`<state>/journals/<ledger digest>.jsonl`, `state` as
//! [`crate::control::state_dir`]), which the sandbox does not let the exec write; and
//! the decisions loopexec acts on are read from the journal, not from the ledger:
//!
//! | decision | ledger alone (the agent can write it) | the journal |
//! |---|---|---|
//! | hold taken | stops (a hold is never ignored) | stops |
//! | hold released | not believed: the hold still holds | releases |
//! | halt event acknowledged | not believed: still unacknowledged | acknowledges |
//! | run acknowledged (`ack RUN`) | not counted | counted |
//! | pending action answered | not believed: still open | answers |
//! | latch set / cleared | set: latched; cleared: not believed | sets / clears |
//!
//! Every rule fails closed: what only the ledger says can stop a run, never let one go
//! on. `loopexec check` lists every place where the ledger says more than the journal.
//!
//! Format: JSON Lines, one [`Line`] per decision: `seq` (0, 1, …), `at` (RFC 3339),
//! `prev` (hex blake3 of the previous line's bytes without its newline, `null` first)
//! and the decision, tagged by `kind`. Appends take an exclusive `flock` on the file,
//! are written with one `write` and fsynced. Reading verifies `seq` and the chain; a
//! broken journal is an error, and every caller treats an error as "nothing can be
//! ruled out" (holds stop, nothing is acknowledged).
//!
//! What the journal does not defend: an exec that may write the state directory (no
//! Landlock, `--sandbox off`, or a state directory inside a writable path — the run
//! says so in `run_started.sandbox`); see SPEC §3.13.

use super::control::AckHow;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Errors reading or appending the journal.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("control journal {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("control journal {path}, line {line}: {why} — it was written outside loopexec; nothing it records is believed until a person has looked (move it aside to start a new one)")]
    Broken {
        path: PathBuf,
        line: u64,
        why: String,
    },
}

/// One decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Decision {
    /// `hold`: scope label (`global`, `workspace`, `run:<id>`), strength, who, why.
    HoldTaken {
        hold_id: String,
        scope: String,
        strength: String,
        holder: String,
        reason: String,
        taken_at: String,
    },
    /// `release`.
    HoldReleased { hold_id: String, by: String },
    /// `ack RUN`: every halt event of the run triggered up to `at` is acknowledged.
    RunAcked {
        run_id: String,
        reviewer: String,
        iteration: u32,
        how: AckHow,
    },
    /// `ack EVENT`.
    EventAcked {
        halt_id: String,
        by: String,
        resolution: String,
        how: AckHow,
    },
    /// `confirm` / `deny` of a pending action.
    PendingDecided {
        action_id: String,
        decision: String,
        by: String,
    },
    /// The loop latched a run (a stop that needs a person before resuming).
    Latched {
        run_id: String,
        reason: String,
        halt_id: String,
    },
    /// `run --resume` cleared the latch after the acknowledgement.
    LatchCleared { run_id: String },
    /// A run halted and its receipt is complete: `receipt_blake3` is the hex blake3
    /// of the whole receipt file as loopexec wrote it. A receipt with a `halted` line
    /// and no seal here was not written by a run of this workspace (an agent can copy
    /// a green receipt made elsewhere into `.loopexec/runs/` and add ledger rows for
    /// it; it cannot write this journal from inside the sandbox), so nothing signs or
    /// picks it as the latest run.
    RunSealed {
        run_id: String,
        receipt_blake3: String,
        halt_reason: String,
    },
    /// A run started: `started_blake3` is the hex blake3 of its receipt's first line
    /// (`run_started`: the policy and t0) as written, without the newline; a copy of
    /// that line is kept beside the journal ([`Journal::keep_started`]). Appended
    /// before the run's first step, so a run whose loopexec died before its halt (a
    /// SIGKILL, or a limit an agent lowered with `prlimit`) stays known, and its
    /// policy and t0 stay readable, whatever became of its receipt and ledger rows in
    /// the workdir: the next start is judged from that t0, and `run --resume` refuses
    /// a receipt that does not start with that line (a nineteenth review erased and
    /// forged both).
    RunStarted {
        run_id: String,
        started_blake3: String,
    },
}

/// One journal line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    pub seq: u64,
    /// RFC 3339.
    pub at: String,
    /// Hex blake3 of the previous line's bytes (without the newline); `None` first.
    pub prev: Option<String>,
    #[serde(flatten)]
    pub decision: Decision,
}

/// A journal file (it need not exist: a missing journal has no decisions).
#[derive(Debug, Clone)]
pub struct Journal {
    path: PathBuf,
}

/// The journal of the ledger at `ledger`, under `state`: `<state>/journals/<first 16
/// hex of blake3(absolute ledger path)>.jsonl`. The path is the workdir's canonical
/// path (the ledger's grandparent) joined with the workspace directory's and the
/// ledger's own names, never resolved through them: an agent that moved
/// `.loopexec/` away and left a symlink in its place named a fresh, empty journal
/// for the next run, which then knew no seal and no rejection (a seventeenth
/// review).
#[must_use]
pub fn path_for(state: &Path, ledger: &Path) -> PathBuf {
    let names = ledger.parent().and_then(|ws| {
        Some((
            ws.parent()?,
            ws.file_name()?,
            ledger.file_name().unwrap_or_default(),
        ))
    });
    let abs = names
        .and_then(|(workdir, ws, file)| {
            let workdir = if workdir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                workdir
            };
            std::fs::canonicalize(workdir)
                .ok()
                .map(|w| w.join(ws).join(file))
        })
        .unwrap_or_else(|| ledger.to_path_buf());
    let h = blake3::hash(abs.as_os_str().as_encoded_bytes()).to_hex();
    state
        .join("journals")
        .join(format!("{}.jsonl", &h.as_str()[..16]))
}

impl Journal {
    /// The journal at `path`.
    #[must_use]
    pub fn at(path: PathBuf) -> Journal {
        Journal { path }
    }

    /// Where it lives.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates the directory `path` lies in (and its parents), mode 0700.
    fn make_parent(&self, path: &Path) -> Result<(), JournalError> {
        match path.parent() {
            Some(dir) => std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(self.io()),
            None => Ok(()),
        }
    }

    fn io(&self) -> impl Fn(std::io::Error) -> JournalError + '_ {
        move |source| JournalError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Every line, verified (sequence and chain).
    ///
    /// # Errors
    /// [`JournalError::Io`] when it cannot be read; [`JournalError::Broken`] at the
    /// first line that is not valid JSON of a [`Line`], out of sequence, or whose `prev`
    /// is not the previous line's blake3.
    pub fn lines(&self) -> Result<Vec<Line>, JournalError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.io()(e)),
        };
        self.parse(&bytes).map(|(v, _)| v)
    }

    /// Parses `bytes`; returns the lines and the last line's hash.
    fn parse(&self, bytes: &[u8]) -> Result<(Vec<Line>, Option<String>), JournalError> {
        let broken = |line: u64, why: String| JournalError::Broken {
            path: self.path.clone(),
            line,
            why,
        };
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            return Err(broken(
                bytes.iter().filter(|b| **b == b'\n').count() as u64 + 1,
                "the last line is incomplete".into(),
            ));
        }
        let mut out = Vec::new();
        let mut prev: Option<String> = None;
        let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let pieces = if body.is_empty() {
            Vec::new()
        } else {
            body.split(|b| *b == b'\n').collect()
        };
        for (i, raw) in pieces.into_iter().enumerate() {
            let n = i as u64 + 1;
            let l: Line = serde_json::from_slice(raw)
                .map_err(|e| broken(n, format!("not a journal line: {e}")))?;
            if l.seq != i as u64 {
                return Err(broken(n, format!("seq {} where {i} was expected", l.seq)));
            }
            if l.prev != prev {
                return Err(broken(
                    n,
                    "prev is not the previous line's blake3 (a line was edited, inserted or removed)".into(),
                ));
            }
            prev = Some(blake3::hash(raw).to_hex().to_string());
            out.push(l);
        }
        Ok((out, prev))
    }

    /// Appends `decision` (creating the journal and its directory, mode 0700).
    ///
    /// # Errors
    /// [`JournalError::Io`] when it cannot be written (inside a sandboxed step it
    /// cannot: that is the point); [`JournalError::Broken`] when the journal does not
    /// verify (nothing is appended to a broken chain).
    pub fn append(&self, decision: Decision) -> Result<Line, JournalError> {
        use std::io::{Read, Seek};
        self.make_parent(&self.path)?;
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&self.path)
            .map_err(self.io())?;
        let _lock = Flock::exclusive(&f).map_err(self.io())?;
        let mut bytes = Vec::new();
        f.seek(std::io::SeekFrom::Start(0)).map_err(self.io())?;
        f.read_to_end(&mut bytes).map_err(self.io())?;
        let (lines, prev) = self.parse(&bytes)?;
        let line = Line {
            seq: lines.len() as u64,
            at: crate::receipt::now_rfc3339(),
            prev,
            decision,
        };
        let mut text = serde_json::to_vec(&line).map_err(|e| self.io()(e.into()))?;
        text.push(b'\n');
        f.write_all(&text).map_err(self.io())?;
        f.sync_all().map_err(self.io())?;
        Ok(line)
    }

    /// Where the first receipt line of run `run_id` is kept
    /// (`<journal stem>.started/<run_id>.jsonl`, beside the journal). `None` for an id
    /// that is not a plain file name.
    fn started_path(&self, run_id: &str) -> Option<PathBuf> {
        let plain = !run_id.is_empty()
            && run_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
            && !run_id.starts_with('.');
        let stem = self.path.file_stem()?.to_str()?;
        plain.then(|| {
            self.path
                .with_file_name(format!("{stem}.started"))
                .join(format!("{run_id}.jsonl"))
        })
    }

    /// Keeps `line` (run `run_id`'s first receipt line, without its newline) beside
    /// the journal and appends [`Decision::RunStarted`] with its blake3. The copy is
    /// written (and fsynced) first, so the journal never names a line it lacks.
    ///
    /// # Errors
    /// [`JournalError::Io`] when either cannot be written or the id is not a plain
    /// file name; as [`Journal::append`].
    pub fn keep_started(&self, run_id: &str, line: &[u8]) -> Result<Line, JournalError> {
        let path = self.started_path(run_id).ok_or_else(|| {
            self.io()(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("run id {run_id:?} is not a plain file name"),
            ))
        })?;
        self.make_parent(&path)?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .map_err(self.io())?;
        f.write_all(line).map_err(self.io())?;
        f.write_all(b"\n").map_err(self.io())?;
        f.sync_all().map_err(self.io())?;
        self.append(Decision::RunStarted {
            run_id: run_id.to_string(),
            started_blake3: blake3::hash(line).to_hex().to_string(),
        })
    }

    /// Run `run_id`'s first receipt line as [`Journal::keep_started`] kept it, when the
    /// copy is there and its blake3 is `blake3` (the journal's word for it); without
    /// the newline.
    #[must_use]
    pub fn started_line(&self, run_id: &str, blake3: &str) -> Option<Vec<u8>> {
        let mut bytes = std::fs::read(self.started_path(run_id)?).ok()?;
        if bytes.last() == Some(&b'\n') {
            bytes.pop();
        }
        (blake3::hash(&bytes).to_hex().as_str() == blake3).then_some(bytes)
    }

    /// Removes the copy of run `run_id`'s first line (`gc` of the run); a copy that
    /// is not there is no error.
    ///
    /// # Errors
    /// [`JournalError::Io`] when it is there and cannot be removed.
    pub fn drop_started(&self, run_id: &str) -> Result<(), JournalError> {
        let Some(path) = self.started_path(run_id) else {
            return Ok(());
        };
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(JournalError::Io { path, source: e })
            }
            _ => Ok(()),
        }
    }

    /// The decisions folded into what is in force.
    ///
    /// # Errors
    /// As [`Journal::lines`].
    pub fn state(&self) -> Result<State, JournalError> {
        Ok(State::fold(&self.lines()?))
    }
}

/// An exclusive `flock` held until dropped.
struct Flock(i32);

impl Flock {
    fn exclusive(f: &std::fs::File) -> std::io::Result<Flock> {
        use std::os::fd::AsRawFd;
        let fd = f.as_raw_fd();
        // SAFETY: flock on a descriptor this process owns; no memory is passed.
        if unsafe { libc::flock(fd, libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Flock(fd))
    }
}

impl Drop for Flock {
    fn drop(&mut self) {
        // SAFETY: unlocking the descriptor locked in `exclusive`, still open (the file
        // outlives the guard in `append`).
        unsafe {
            libc::flock(self.0, libc::LOCK_UN);
        }
    }
}

/// A hold the journal says was taken.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalHold {
    pub scope: String,
    pub strength: String,
    pub holder: String,
    pub reason: String,
    pub taken_at: String,
}

/// An acknowledgement the journal records.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalAck {
    pub by: String,
    pub at: String,
    pub resolution: String,
    pub how: AckHow,
}

/// A run acknowledgement the journal records.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalRunAck {
    pub reviewer: String,
    pub iteration: u32,
    pub at: String,
    pub how: AckHow,
}

/// What the journal holds in force: a pure fold of its lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct State {
    /// Holds taken and not released, by id.
    pub holds: BTreeMap<String, JournalHold>,
    /// Ids of holds released.
    pub released: BTreeSet<String>,
    /// `ack EVENT` by halt id (the first one; later ones are refused by `ack`).
    pub event_acks: BTreeMap<String, JournalAck>,
    /// `ack RUN` by run id, oldest first.
    pub run_acks: BTreeMap<String, Vec<JournalRunAck>>,
    /// Answers by pending-action id: (decision, by, at).
    pub answers: BTreeMap<String, (String, String, String)>,
    /// Runs latched, with (reason, halt id, at); cleared latches are removed.
    pub latches: BTreeMap<String, (String, String, String)>,
    /// Sealed runs: run id → hex blake3 of its receipt (the last seal of a run wins).
    pub seals: BTreeMap<String, String>,
    /// The run sealed last, if any.
    pub last_sealed: Option<String>,
    /// Started runs: run id → hex blake3 of its receipt's first line.
    pub started: BTreeMap<String, String>,
    /// The run started last, if any.
    pub last_started: Option<String>,
}

impl State {
    /// Folds `lines` in order.
    #[must_use]
    pub fn fold(lines: &[Line]) -> State {
        let mut s = State::default();
        for l in lines {
            match &l.decision {
                Decision::HoldTaken {
                    hold_id,
                    scope,
                    strength,
                    holder,
                    reason,
                    taken_at,
                } => {
                    if !s.released.contains(hold_id) {
                        s.holds.insert(
                            hold_id.clone(),
                            JournalHold {
                                scope: scope.clone(),
                                strength: strength.clone(),
                                holder: holder.clone(),
                                reason: reason.clone(),
                                taken_at: taken_at.clone(),
                            },
                        );
                    }
                }
                Decision::HoldReleased { hold_id, .. } => {
                    s.holds.remove(hold_id);
                    s.released.insert(hold_id.clone());
                }
                Decision::EventAcked {
                    halt_id,
                    by,
                    resolution,
                    how,
                } => {
                    s.event_acks
                        .entry(halt_id.clone())
                        .or_insert_with(|| JournalAck {
                            by: by.clone(),
                            at: l.at.clone(),
                            resolution: resolution.clone(),
                            how: how.clone(),
                        });
                }
                Decision::RunAcked {
                    run_id,
                    reviewer,
                    iteration,
                    how,
                } => s
                    .run_acks
                    .entry(run_id.clone())
                    .or_default()
                    .push(JournalRunAck {
                        reviewer: reviewer.clone(),
                        iteration: *iteration,
                        at: l.at.clone(),
                        how: how.clone(),
                    }),
                Decision::PendingDecided {
                    action_id,
                    decision,
                    by,
                } => {
                    s.answers
                        .entry(action_id.clone())
                        .or_insert_with(|| (decision.clone(), by.clone(), l.at.clone()));
                }
                Decision::Latched {
                    run_id,
                    reason,
                    halt_id,
                } => {
                    s.latches
                        .entry(run_id.clone())
                        .or_insert_with(|| (reason.clone(), halt_id.clone(), l.at.clone()));
                }
                Decision::LatchCleared { run_id } => {
                    s.latches.remove(run_id);
                }
                Decision::RunSealed {
                    run_id,
                    receipt_blake3,
                    ..
                } => {
                    s.seals.insert(run_id.clone(), receipt_blake3.clone());
                    s.last_sealed = Some(run_id.clone());
                }
                Decision::RunStarted {
                    run_id,
                    started_blake3,
                } => {
                    s.started.insert(run_id.clone(), started_blake3.clone());
                    s.last_started = Some(run_id.clone());
                }
            }
        }
        s
    }

    /// The acknowledgement of halt event `halt_id` of run `run_id` triggered at
    /// `triggered_at` (RFC 3339): its own `ack EVENT`, else the first `ack RUN` of the
    /// run made at or after the event was triggered.
    #[must_use]
    pub fn ack_of(&self, halt_id: &str, run_id: &str, triggered_at: &str) -> Option<JournalAck> {
        if let Some(a) = self.event_acks.get(halt_id) {
            return Some(a.clone());
        }
        self.run_acks
            .get(run_id)?
            .iter()
            .find(|a| a.at.as_str() >= triggered_at)
            .map(|a| JournalAck {
                by: a.reviewer.clone(),
                at: a.at.clone(),
                resolution: "resolved".into(),
                how: a.how.clone(),
            })
    }
}

#[cfg(test)]
mod tests;
