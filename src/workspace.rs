//! The `.loopexec/` directory of a workdir: paths, run ids, the one-live-run lock.
//!
//! Layout (SPEC §4):
//! ```text
//! .loopexec/ledger.sqlite          the ledger (runs, iterations, halt_events, acks)
//! .loopexec/lock                   held (flock) by the live run; holds its run id and pid
//! .loopexec/runs/<run-id>.jsonl    the receipt
//! .loopexec/runs/<run-id>/         captured excerpts, heartbeat
//! ```
//! The lock is an advisory `flock(2)` on `.loopexec/lock`, held for the run's life:
//! the kernel drops it when the process dies (even by SIGKILL), so a killed run never
//! leaves the workdir locked.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// Errors about the workspace.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("workdir {0} does not exist")]
    Missing(PathBuf),
    #[error("workdir {0} is not a directory")]
    NotDir(PathBuf),
    #[error("workdir is in use by run `{run_id}` (pid {pid}); wait for it, or stop it")]
    Locked { run_id: String, pid: String },
    #[error("invalid run id `{0}`: use 1-128 characters from A-Z a-z 0-9 . _ - , not starting with a dot (`latest` is reserved for the newest run)")]
    BadRunId(String),
    #[error("no run found in {0}")]
    NoRuns(PathBuf),
    #[error("run `{0}` not found")]
    UnknownRun(String),
    /// A run refused before it started (a preflight halt): the ledger holds its halt
    /// event, and there is no receipt to read.
    #[error(
        "run `{id}` was refused before it started, so it has no receipt ({reason}): {description}"
    )]
    RefusedRun {
        id: String,
        reason: String,
        description: String,
    },
    /// A run that started and halted, whose receipt is gone (`loopexec gc` removed it,
    /// or it was deleted): the ledger still holds its halt event.
    #[error(
        "run `{id}` halted ({reason}) but its receipt is gone: `loopexec gc` removes the receipts of older runs (or it was deleted), and the ledger keeps only its halt event: {description}"
    )]
    RemovedRun {
        id: String,
        reason: String,
        description: String,
    },
    /// The tree holds a file name no snapshot can hold
    /// ([`crate::observe::store::StoreError::BadName`]).
    #[error("the tree cannot be snapshotted, so no check of it can be judged: {0}")]
    Unsnapshottable(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Paths of one workdir's `.loopexec/`.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub workdir: PathBuf,
    pub dir: PathBuf,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> WorkspaceError + '_ {
    move |source| WorkspaceError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Workspace {
    /// Checks `workdir` exists and is a directory (it is made absolute).
    ///
    /// # Errors
    /// [`WorkspaceError::Missing`] / [`WorkspaceError::NotDir`].
    pub fn at(workdir: &Path) -> Result<Workspace, WorkspaceError> {
        let meta =
            std::fs::metadata(workdir).map_err(|_| WorkspaceError::Missing(workdir.into()))?;
        if !meta.is_dir() {
            return Err(WorkspaceError::NotDir(workdir.into()));
        }
        let workdir = std::fs::canonicalize(workdir).map_err(io(workdir))?;
        let dir = workdir.join(".loopexec");
        Ok(Workspace { workdir, dir })
    }

    /// Creates `.loopexec/` and `.loopexec/runs/` (with a `.gitignore` of `*`, so
    /// loopexec's state never shows up as an untracked change).
    ///
    /// # Errors
    /// I/O errors.
    pub fn ensure(&self) -> Result<(), WorkspaceError> {
        std::fs::create_dir_all(self.runs_dir()).map_err(io(&self.dir))?;
        let gi = self.dir.join(".gitignore");
        if !gi.exists() {
            std::fs::write(&gi, "*\n").map_err(io(&gi))?;
        }
        Ok(())
    }

    #[must_use]
    pub fn runs_dir(&self) -> PathBuf {
        self.dir.join("runs")
    }
    #[must_use]
    pub fn ledger_path(&self) -> PathBuf {
        self.dir.join("ledger.sqlite")
    }
    #[must_use]
    pub fn receipt_path(&self, run_id: &str) -> PathBuf {
        self.runs_dir().join(format!("{run_id}.jsonl"))
    }
    #[must_use]
    pub fn run_dir(&self, run_id: &str) -> PathBuf {
        self.runs_dir().join(run_id)
    }
    #[must_use]
    pub fn heartbeat_path(&self, run_id: &str) -> PathBuf {
        self.run_dir(run_id).join("heartbeat")
    }
    /// The file a watchdog writes before it ends a wedged run's children.
    #[must_use]
    pub fn watchdog_path(&self, run_id: &str) -> PathBuf {
        self.run_dir(run_id).join("watchdog-kill.json")
    }

    /// Takes the workdir lock for `run_id`.
    ///
    /// # Errors
    /// [`WorkspaceError::Locked`] naming the holder, or I/O errors.
    pub fn lock(&self, run_id: &str) -> Result<RunLock, WorkspaceError> {
        let path = self.dir.join("lock");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io(&path))?;
        // The lock is held on the `.loopexec` directory too: a lock file that is
        // unlinked (and re-created by a second run) does not free the workdir, because
        // the directory itself cannot be replaced while it holds the receipts.
        let dir = File::open(&self.dir).map_err(io(&self.dir))?;
        // SAFETY: flock on valid, owned descriptors; no memory is shared.
        let rc = unsafe {
            let a = libc::flock(dir.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB);
            if a == 0 {
                libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB)
            } else {
                a
            }
        };
        if rc != 0 {
            let (run_id, pid) = read_holder(&path);
            return Err(WorkspaceError::Locked { run_id, pid });
        }
        file.set_len(0).map_err(io(&path))?;
        file.rewind().map_err(io(&path))?;
        writeln!(file, "{run_id}\n{}", std::process::id()).map_err(io(&path))?;
        file.flush().map_err(io(&path))?;
        Ok(RunLock {
            _file: file,
            _dir: dir,
        })
    }

    /// The run holding the workdir lock now, as `(run id, pid)` from the lock file, or
    /// `None` when no live process holds it. Probed with a shared, non-blocking
    /// `flock` on the `.loopexec` directory, released at once: a lock dies with its
    /// process, so a pid reused since is never taken for a live run.
    #[must_use]
    pub fn live_holder(&self) -> Option<(String, String)> {
        let dir = File::open(&self.dir).ok()?;
        // SAFETY: flock on a valid, owned descriptor; no memory is shared.
        let rc = unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
        if rc == 0 {
            // SAFETY: as above; unlocking the lock just taken.
            unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_UN) };
            return None;
        }
        Some(read_holder(&self.dir.join("lock")))
    }

    /// [`WorkspaceError::RefusedRun`] when the ledger holds a halt event of run `id`
    /// recorded before its receipt existed (`loopexec run` printed that id with its
    /// refusal), [`WorkspaceError::RemovedRun`] when it holds the halt of a run that
    /// started (its receipt was removed since); `None` otherwise, or when the ledger
    /// cannot be read.
    fn refused(&self, id: &str) -> Option<WorkspaceError> {
        if !self.ledger_path().is_file() {
            return None;
        }
        let store = crate::store::Store::open(&self.ledger_path()).ok()?;
        let events = store
            .halt_events(&crate::store::HaltEventFilter {
                unacked: false,
                run_id: Some(id),
                min_severity: None,
            })
            .ok()?;
        let e = events.into_iter().next()?;
        let (id, reason, description) = (id.to_string(), e.halt_reason, e.description);
        Some(if e.preflight {
            WorkspaceError::RefusedRun {
                id,
                reason,
                description,
            }
        } else {
            WorkspaceError::RemovedRun {
                id,
                reason,
                description,
            }
        })
    }

    /// Resolves `--run-id` (or `None` / `latest` for the newest run).
    ///
    /// # Errors
    /// Bad id, no runs, unknown run.
    pub fn resolve_run(&self, run_id: Option<&str>) -> Result<String, WorkspaceError> {
        match run_id {
            Some(id) if id != "latest" => {
                validate_run_id(id)?;
                if self.receipt_path(id).is_file() {
                    Ok(id.to_string())
                } else {
                    Err(self
                        .refused(id)
                        .unwrap_or_else(|| WorkspaceError::UnknownRun(id.to_string())))
                }
            }
            _ => self
                .latest_run()
                .ok_or_else(|| WorkspaceError::NoRuns(self.workdir.clone())),
        }
    }

    /// The newest run: the ledger's newest row, else the receipt with the greatest
    /// modification time. A newest row whose receipt has halted but was never sealed
    /// in the control journal (`journal::Decision::RunSealed`: rows and a receipt
    /// planted in the workdir) is passed over for the run the journal sealed last,
    /// when it sealed one.
    #[must_use]
    pub fn latest_run(&self) -> Option<String> {
        if self.ledger_path().is_file() {
            if let Ok(store) = crate::store::Store::open(&self.ledger_path()) {
                if let Ok(Some(r)) = store.latest_run() {
                    let path = self.receipt_path(&r.run_id);
                    if path.is_file() {
                        // (a journal that sealed nothing — another state directory,
                        // runs older than seals — cannot tell: the newest row stands,
                        // and the commands that read it say it is not recorded)
                        if ends_halted(&path)
                            && crate::cmd::unsealed(&store, &r.run_id, &path).is_some()
                        {
                            let last_sealed = store
                                .journal()
                                .state()
                                .ok()
                                .and_then(|s| s.last_sealed)
                                .filter(|id| self.receipt_path(id).is_file());
                            if last_sealed.is_some() {
                                return last_sealed;
                            }
                        }
                        return Some(r.run_id);
                    }
                }
            }
        }
        let entries = std::fs::read_dir(self.runs_dir()).ok()?;
        entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let id = name.strip_suffix(".jsonl")?.to_string();
                let mtime = e.metadata().ok()?.modified().ok()?;
                Some((mtime, id))
            })
            .max()
            .map(|(_, id)| id)
    }
}

/// True when the receipt at `path` ends with its `halted` line (read from its last
/// 256 KiB; a `halted` line is smaller).
fn ends_halted(path: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let from = len.saturating_sub(256 * 1024);
    let mut tail = Vec::new();
    if f.seek(SeekFrom::Start(from)).is_err() || f.read_to_end(&mut tail).is_err() {
        return false;
    }
    let body = tail.strip_suffix(b"\n").unwrap_or(&tail);
    let last = body.rsplit(|b| *b == b'\n').next().unwrap_or(body);
    crate::receipt::is_halted_line(last)
}

fn read_holder(path: &Path) -> (String, String) {
    for _ in 0..20 {
        let mut s = String::new();
        if File::open(path)
            .and_then(|mut f| f.read_to_string(&mut s))
            .is_ok()
        {
            let mut it = s.lines();
            if let (Some(id), Some(pid)) = (it.next(), it.next()) {
                return (id.to_string(), pid.to_string());
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    ("(unknown)".into(), "(unknown)".into())
}

/// The held workdir lock; released when dropped or when the process dies.
pub struct RunLock {
    _file: File,
    _dir: File,
}

/// Checks a run id: 1-128 of `[A-Za-z0-9._-]`, not starting or ending with `.`, with
/// no `..` and not ending in `.lock` (a run id names a git ref of the snapshot store,
/// and git refuses such names: a new user's `a..b` ended the run `internal_error`),
/// and not `latest` (which every read command resolves to the newest run).
///
/// # Errors
/// [`WorkspaceError::BadRunId`].
pub fn validate_run_id(id: &str) -> Result<(), WorkspaceError> {
    let ok = !id.is_empty()
        && id != "latest"
        && id.len() <= 128
        && !id.starts_with('.')
        && !id.ends_with('.')
        && !id.contains("..")
        && !id.ends_with(".lock")
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(WorkspaceError::BadRunId(id.to_string()))
    }
}

/// A new unique, time-sortable run id: `YYYYMMDDTHHMMSSZ-xxxxxx`.
#[must_use]
pub fn new_run_id() -> String {
    let now = time::OffsetDateTime::now_utc();
    let fmt = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let stamp = now
        .format(&fmt)
        .unwrap_or_else(|_| now.unix_timestamp().to_string());
    let seed = format!(
        "{}:{}:{:?}",
        std::process::id(),
        now.unix_timestamp_nanos(),
        std::thread::current().id()
    );
    let h = blake3::hash(seed.as_bytes()).to_hex();
    format!("{stamp}-{}", &h[..6])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_validated() {
        for bad in ["", "../x", "a/b", ".hidden", "a b", "x\0", "latest"] {
            assert!(validate_run_id(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["nightly-2026.11.29_a", "r1", &new_run_id()] {
            validate_run_id(good).unwrap();
        }
        assert_ne!(new_run_id(), new_run_id());
    }

    #[test]
    fn lock_is_exclusive_and_names_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::at(dir.path()).unwrap();
        ws.ensure().unwrap();
        let held = ws.lock("first").unwrap();
        match ws.lock("second") {
            Err(WorkspaceError::Locked { run_id, pid }) => {
                assert_eq!(run_id, "first");
                assert_eq!(pid, std::process::id().to_string());
            }
            other => panic!("expected Locked, got {:?}", other.err()),
        }
        drop(held);
        ws.lock("third").unwrap();
    }
}
