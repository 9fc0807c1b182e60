//! The ledger: `.loopexec/ledger.sqlite` (SQLite through rusqlite, bundled).
//!
//! The receipt is the record of a run; the ledger is the index across runs that
//! `status`, `latest`, acknowledgements and dashboards query. Tables:
//! * `runs` — one row per run id (status, halt, pid, receipt path);
//! * `iterations` — one row per (run, iteration): exits, verdict, failing count, cost;
//! * `halt_events` — one row per halt, with the columns of the halt-conditions
//!   design (id, session id, task id, iteration, halt class and type, severity,
//!   description, context JSON, triggered_at, acknowledgement and resolution fields,
//!   attempt count, previous error, created/updated times);
//! * `acks` — acknowledgements of a run's diffs by a person (they outlast the run).
//!
//! The database runs in WAL mode with a busy timeout, so `status` can read while a
//! run writes. Schema changes are `PRAGMA user_version` migrations applied in order;
//! a database with a newer version than this loopexec knows is refused, never
//! rewritten.

mod control;
pub mod journal;

pub use control::{
    default_severity, new_id, AckHow, HaltEventFilter, HaltEventRow, HoldRow, HoldScope,
    HoldStrength, Latch, NewHold, PendingAction, SEVERITIES,
};

use crate::halt::HaltReason;
use rusqlite::config::DbConfig;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::path::Path;
use std::time::Duration;

/// Ledger schema version this loopexec writes.
pub const USER_VERSION: i64 = MIGRATIONS.len() as i64;

/// Ledger errors.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("ledger {path}: {source}")]
    Sql {
        path: String,
        source: rusqlite::Error,
    },
    #[error("ledger {path} has schema version {found}; this loopexec knows up to {USER_VERSION} (upgrade loopexec)")]
    Newer { path: String, found: i64 },
    #[error(transparent)]
    Journal(#[from] journal::JournalError),
}

const MIGRATIONS: &[&str] = &[
    // 1: initial schema
    "CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        workdir TEXT NOT NULL,
        pid INTEGER NOT NULL,
        status TEXT NOT NULL,
        iteration INTEGER,
        halt_reason TEXT,
        exit_code INTEGER,
        receipt TEXT NOT NULL
    );
    CREATE TABLE iterations (
        run_id TEXT NOT NULL,
        iteration INTEGER NOT NULL,
        exec_exit INTEGER,
        check_exit INTEGER,
        verdict TEXT,
        failing INTEGER,
        cost_usd REAL,
        recorded_at TEXT NOT NULL,
        PRIMARY KEY (run_id, iteration)
    );
    CREATE TABLE halt_events (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        task_id TEXT,
        iteration INTEGER,
        halt_class TEXT NOT NULL,
        halt_type TEXT NOT NULL,
        exit_code INTEGER NOT NULL,
        severity TEXT NOT NULL,
        description TEXT NOT NULL,
        context TEXT,
        triggered_at TEXT NOT NULL,
        acknowledged INTEGER NOT NULL DEFAULT 0,
        acknowledged_at TEXT,
        acknowledged_by TEXT,
        resolution TEXT,
        resolution_notes TEXT,
        attempt_count INTEGER,
        previous_error TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX idx_halt_events_session ON halt_events(session_id);
    CREATE INDEX idx_halt_events_type ON halt_events(halt_type);
    CREATE INDEX idx_halt_events_unack ON halt_events(session_id, acknowledged) WHERE acknowledged = 0;
    CREATE TABLE acks (
        run_id TEXT NOT NULL,
        reviewer TEXT NOT NULL,
        iteration INTEGER NOT NULL,
        acknowledged_at TEXT NOT NULL,
        notes TEXT
    );
    CREATE INDEX idx_acks_run ON acks(run_id);",
    // 2: the receipt's head (blake3 of its last line) and line count, so `check`
    // notices a receipt truncated at a line boundary.
    "CREATE TABLE receipt_heads (
        run_id TEXT PRIMARY KEY,
        head TEXT,
        lines INTEGER NOT NULL,
        recorded_at TEXT NOT NULL
    );",
    // 3: people in control (holds, the latch, per-event acknowledgement, pending
    // actions of the gate, rate buckets) and the halt-conditions design's indexes
    control::MIGRATION,
];

/// An open ledger.
pub struct Store {
    conn: Connection,
    path: String,
    /// The control journal of this ledger (a person's decisions; see [`journal`]).
    journal: journal::Journal,
    /// The last answer of [`Store::active_holds`] and what it depended on.
    holds_cache: std::cell::RefCell<Option<(control::HoldsKey, Vec<control::HoldRow>)>>,
}

impl Drop for Store {
    /// Makes what this connection committed durable before the connection closes
    /// without a checkpoint: `synchronous = NORMAL` does not sync the WAL at each
    /// commit, so it is synced once here (nothing when this connection changed no
    /// row). A sync that fails is reported, not fatal: every commit already reached
    /// the WAL and stays readable; only a power cut could still take it.
    fn drop(&mut self) {
        if self.conn.total_changes() == 0 {
            return;
        }
        let Some(db) = self.conn.path() else { return };
        let wal = format!("{db}-wal");
        // A WAL grown past [`WAL_TRUNCATE_AT`] is checkpointed and truncated here. The
        // first connection of a process recovers the WAL from scratch (every frame is
        // read again and counts as not yet copied), so a WAL that only short-lived
        // commands write is never restarted: one refused run at a time (a preflight
        // halt row each), it grew by ~47 KB a command without bound. Busy (another
        // connection reads): left for a later command.
        if std::fs::metadata(&wal).is_ok_and(|m| m.len() > WAL_TRUNCATE_AT) {
            match self.conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)") {
                Ok(()) => {}
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if matches!(
                        e.code,
                        rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                    ) => {}
                Err(e) => eprintln!(
                    "loopexec: warning: the ledger's WAL {wal} could not be checkpointed: {e}"
                ),
            }
        }
        let synced = std::fs::File::open(&wal).and_then(|f| f.sync_data());
        match synced {
            Ok(()) => {}
            // no WAL: a checkpoint took it, so the database file holds everything
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                eprintln!("loopexec: warning: the ledger's WAL {wal} could not be synced: {e}")
            }
        }
    }
}

/// Bytes of WAL past which a connection that wrote checkpoints and truncates it when
/// it closes (see `Drop for Store`): SQLite's own checkpoint starts at 1,000 pages
/// (4 MiB), and this keeps the file near that size whatever the pattern of commands.
pub const WAL_TRUNCATE_AT: u64 = 8 << 20;

/// A row of `runs`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunRow {
    pub run_id: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub workdir: String,
    pub pid: i64,
    pub status: String,
    pub iteration: Option<i64>,
    pub halt_reason: Option<String>,
    pub exit_code: Option<i64>,
    pub receipt: String,
}

/// An acknowledgement of a run's work by a person.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AckRow {
    pub reviewer: String,
    pub iteration: i64,
    pub acknowledged_at: String,
}

/// What one halt row records.
pub struct HaltRecord<'a> {
    pub run_id: &'a str,
    pub iteration: u32,
    pub reason: HaltReason,
    pub description: &'a str,
    pub context: &'a serde_json::Value,
    pub attempt_count: Option<u32>,
    pub previous_error: Option<&'a str>,
    /// The event's severity when it is not the reason's default
    /// ([`control::default_severity`]).
    pub severity: Option<&'a str>,
}

fn severity(reason: HaltReason) -> &'static str {
    control::default_severity(reason)
}

/// How long opening waits for another connection to finish switching a new ledger
/// to WAL (the same as the busy timeout of every other statement).
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Puts `conn`'s database in WAL mode. Switching a new ledger takes an exclusive lock
/// and SQLite answers `SQLITE_BUSY` at once, without its busy handler, while another
/// connection holds the file; two commands opening a new ledger together (`run`
/// starting while the agent's gate or a person's `status` opens it) retry here for
/// up to [`BUSY_TIMEOUT`] instead of failing.
///
/// # Errors
/// SQLite errors, `SQLITE_BUSY` after [`BUSY_TIMEOUT`].
fn wal_mode(conn: &Connection) -> rusqlite::Result<()> {
    let start = std::time::Instant::now();
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && start.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

/// True when schema `version` of the ledger at `path` is this loopexec's, false when
/// migrations are due.
///
/// # Errors
/// [`StoreError::Newer`] for a database a newer loopexec wrote.
fn is_current(path: &str, version: i64) -> Result<bool, StoreError> {
    if version > USER_VERSION {
        return Err(StoreError::Newer {
            path: path.to_string(),
            found: version,
        });
    }
    Ok(version == USER_VERSION)
}

impl Store {
    /// Opens (creating and migrating if needed) the ledger at `path`, with its control
    /// journal under loopexec's state directory
    /// ([`crate::engine::cleanroom::state_dir`]).
    ///
    /// # Errors
    /// SQLite errors, or a database newer than this loopexec.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_in(path, &crate::engine::cleanroom::state_dir())
    }

    /// As [`Store::open`], with the control journal under `state`.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub fn open_in(path: &Path, state: &Path) -> Result<Store, StoreError> {
        let p = path.display().to_string();
        let sql = |source| StoreError::Sql {
            path: p.clone(),
            source,
        };
        let fresh = !path.exists();
        let conn = Connection::open(path).map_err(sql)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        // A ledger created now holds nothing yet: building it (the switch to WAL and
        // the migrations) is not worth the five fsyncs SQLite would spend on it. A
        // power cut in those milliseconds can only cost an empty ledger; every later
        // write is synchronous = NORMAL (WAL: durable at each checkpoint).
        if fresh {
            conn.pragma_update(None, "synchronous", "OFF")
                .map_err(sql)?;
        }
        wal_mode(&conn).map_err(sql)?;
        // Closing leaves the WAL as it is: a checkpoint on close copies every page the
        // connection wrote back into the database and costs three fsyncs and an
        // unlink (10–15 ms at the end of every run and every command that writes).
        // What this connection committed is made durable by one `fdatasync` of the
        // WAL instead (`Drop`); the pages move into the database at SQLite's automatic
        // checkpoint (1,000 pages), whichever connection reaches it.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
            .map_err(sql)?;
        let mut store = Store {
            conn,
            path: p.clone(),
            journal: journal::Journal::at(journal::path_for(state, path)),
            holds_cache: std::cell::RefCell::new(None),
        };
        store.migrate()?;
        store
            .conn
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(sql)?;
        Ok(store)
    }

    /// Runs `f` in one transaction: its writes commit together (one WAL commit for
    /// an iteration's rows), or none of them does when it fails.
    ///
    /// # Errors
    /// What `f` returns, or SQLite errors of the transaction itself.
    pub fn in_transaction<T>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let tx = self.conn.unchecked_transaction().map_err(self.sql())?;
        let out = f(self)?;
        tx.commit().map_err(self.sql())?;
        Ok(out)
    }

    fn sql(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |source| StoreError::Sql {
            path: self.path.clone(),
            source,
        }
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let path = self.path.clone();
        let sql = |source| StoreError::Sql {
            path: path.clone(),
            source,
        };
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(sql)?;
        if is_current(&path, version)? {
            return Ok(());
        }
        // Every pending migration in one transaction: a fresh ledger is built with one
        // commit, and an upgrade is all or nothing (DDL is transactional in SQLite).
        // The transaction takes the write lock first and reads the version again
        // under it: two commands opening a new ledger at once (`run` and `status` or
        // the gate's `pending`) would otherwise both build it, and the second would
        // fail with "table runs already exists".
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let version: i64 = tx
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(sql)?;
        if is_current(&path, version)? {
            return tx.commit().map_err(sql);
        }
        for m in MIGRATIONS
            .iter()
            .skip(usize::try_from(version).unwrap_or(0))
        {
            tx.execute_batch(m).map_err(sql)?;
        }
        tx.pragma_update(None, "user_version", USER_VERSION)
            .map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(())
    }

    /// The schema version of the open database.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn user_version(&self) -> Result<i64, StoreError> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(self.sql())
    }

    /// Records a run's start (or its resumption: the row is updated).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn run_started(
        &self,
        run_id: &str,
        workdir: &str,
        pid: u32,
        receipt: &str,
    ) -> Result<(), StoreError> {
        let now = crate::receipt::now_rfc3339();
        self.conn
            .execute(
                "INSERT INTO runs (run_id, started_at, workdir, pid, status, receipt)
                 VALUES (?1, ?2, ?3, ?4, 'running', ?5)
                 ON CONFLICT(run_id) DO UPDATE SET pid = ?4, status = 'running', finished_at = NULL",
                params![run_id, now, workdir, pid, receipt],
            )
            .map(|_| ())
            .map_err(self.sql())
    }

    /// Records the receipt's head: blake3 of its last line and its line count.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn receipt_head(
        &self,
        run_id: &str,
        head: Option<&str>,
        lines: u64,
    ) -> Result<(), StoreError> {
        // per iteration: the statement is prepared once per connection
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO receipt_heads (run_id, head, lines, recorded_at)
                 VALUES (?1, ?2, ?3, ?4)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    run_id,
                    head,
                    i64::try_from(lines).unwrap_or(i64::MAX),
                    crate::receipt::now_rfc3339()
                ])
            })
            .map(|_| ())
            .map_err(self.sql())
    }

    /// The recorded receipt head of `run_id`: `(head, lines)`.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn receipt_head_of(
        &self,
        run_id: &str,
    ) -> Result<Option<(Option<String>, u64)>, StoreError> {
        let r = self.conn.query_row(
            "SELECT head, lines FROM receipt_heads WHERE run_id = ?1",
            params![run_id],
            |r| Ok((r.get::<_, Option<String>>(0)?, r.get::<_, i64>(1)?)),
        );
        match r {
            Ok((h, n)) => Ok(Some((h, u64::try_from(n).unwrap_or(0)))),
            Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
            Err(e) => Err(self.sql()(e)),
        }
    }

    /// Records one iteration's outcome.
    ///
    /// # Errors
    /// SQLite errors.
    #[allow(clippy::too_many_arguments)]
    pub fn iteration(
        &self,
        run_id: &str,
        iteration: u32,
        exec_exit: Option<i32>,
        check_exit: Option<i32>,
        verdict: &str,
        failing: Option<usize>,
        cost_usd: Option<f64>,
    ) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO iterations
                 (run_id, iteration, exec_exit, check_exit, verdict, failing, cost_usd, recorded_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    run_id,
                    iteration,
                    exec_exit,
                    check_exit,
                    verdict,
                    failing.map(|n| i64::try_from(n).unwrap_or(i64::MAX)),
                    cost_usd,
                    crate::receipt::now_rfc3339()
                ])
            })
            .map(|_| ())
            .map_err(self.sql())
    }

    /// Records a halt: updates `runs` and inserts a `halt_events` row. Returns the row id.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn halted(&self, h: &HaltRecord<'_>) -> Result<String, StoreError> {
        let now = crate::receipt::now_rfc3339();
        // The ledger, like the receipt, never stores a secret.
        let redact = |s: &str| {
            String::from_utf8_lossy(&crate::observe::secrets::redact(s.as_bytes())).into_owned()
        };
        let description = redact(h.description);
        let context = redact(&h.context.to_string());
        // Unique even for two halts of one run in the same millisecond (a preflight
        // refusal and a halt, or a test): the clock in nanoseconds and a counter.
        let id = blake3::hash(
            format!(
                "{}:{}:{}:{now}:{}",
                h.run_id,
                h.iteration,
                h.reason,
                control::unique_suffix()
            )
            .as_bytes(),
        )
        .to_hex()[..32]
            .to_string();
        self.conn
            .execute(
                "UPDATE runs SET status = 'halted', finished_at = ?2, iteration = ?3,
                 halt_reason = ?4, exit_code = ?5 WHERE run_id = ?1",
                params![
                    h.run_id,
                    now,
                    h.iteration,
                    h.reason.as_str(),
                    h.reason.exit_code()
                ],
            )
            .map_err(self.sql())?;
        self.conn
            .execute(
                "INSERT INTO halt_events (id, session_id, task_id, iteration, halt_class, halt_type,
                 exit_code, severity, description, context, triggered_at, attempt_count,
                 previous_error, created_at, updated_at)
                 VALUES (?1, ?2, NULL, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?10, ?10)",
                params![
                    id,
                    h.run_id,
                    h.iteration,
                    h.reason.class().as_str(),
                    h.reason.as_str(),
                    h.reason.exit_code(),
                    h.severity.unwrap_or_else(|| severity(h.reason)),
                    description,
                    context,
                    now,
                    h.attempt_count,
                    h.previous_error,
                ],
            )
            .map_err(self.sql())?;
        Ok(id)
    }

    /// The newest run, if any: by its last start or halt, so that a run resumed and
    /// halted again is newer than one that started after its first start (a new
    /// user's `explain-halt` after `run --resume` showed the other run).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn latest_run(&self) -> Result<Option<RunRow>, StoreError> {
        self.conn
            .query_row(
                "SELECT run_id, started_at, finished_at, workdir, pid, status, iteration,
                 halt_reason, exit_code, receipt FROM runs
                 ORDER BY max(started_at, COALESCE(finished_at, started_at)) DESC, rowid DESC LIMIT 1",
                [],
                row_to_run,
            )
            .optional()
            .map_err(self.sql())
    }

    /// One run by id.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn run(&self, run_id: &str) -> Result<Option<RunRow>, StoreError> {
        // asked after every exec (a run row deleted under the run is tampering)
        self.conn
            .prepare_cached(
                "SELECT run_id, started_at, finished_at, workdir, pid, status, iteration,
                 halt_reason, exit_code, receipt FROM runs WHERE run_id = ?1",
            )
            .and_then(|mut st| st.query_row([run_id], row_to_run).optional())
            .map_err(self.sql())
    }

    /// Records that `reviewer` acknowledged the run's work up to `iteration` (made as
    /// `how` says), and marks the run's unacknowledged halt events acknowledged. The
    /// control journal is written first: it is what later reads believe.
    ///
    /// # Errors
    /// The journal cannot be written (inside a sandboxed step it cannot), or SQLite
    /// errors.
    pub fn ack(
        &self,
        run_id: &str,
        reviewer: &str,
        iteration: u32,
        notes: Option<&str>,
        how: &AckHow,
    ) -> Result<(), StoreError> {
        self.journal.append(journal::Decision::RunAcked {
            run_id: run_id.to_string(),
            reviewer: reviewer.to_string(),
            iteration,
            how: how.clone(),
        })?;
        let now = crate::receipt::now_rfc3339();
        self.conn
            .execute(
                "INSERT INTO acks (run_id, reviewer, iteration, acknowledged_at, notes) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![run_id, reviewer, iteration, now, notes],
            )
            .map_err(self.sql())?;
        self.conn
            .execute(
                "UPDATE halt_events SET acknowledged = 1, acknowledged_at = ?2, acknowledged_by = ?3,
                 resolution = 'resolved', resolution_notes = ?4, updated_at = ?2
                 WHERE session_id = ?1 AND acknowledged = 0",
                params![run_id, now, reviewer, notes],
            )
            .map_err(self.sql())?;
        self.set_ack_method(run_id, how)
    }

    /// Acknowledgements of a run, oldest first, as the control journal records them
    /// (an `acks` row the journal does not have was not made by `loopexec ack`).
    ///
    /// # Errors
    /// The journal cannot be read or does not verify.
    pub fn acks(&self, run_id: &str) -> Result<Vec<AckRow>, StoreError> {
        Ok(self
            .journal
            .state()?
            .run_acks
            .remove(run_id)
            .unwrap_or_default()
            .into_iter()
            .map(|a| AckRow {
                reviewer: a.reviewer,
                iteration: i64::from(a.iteration),
                acknowledged_at: a.at,
            })
            .collect())
    }

    /// The control journal of this ledger.
    #[must_use]
    pub fn journal(&self) -> &journal::Journal {
        &self.journal
    }

    /// Number of `halt_events` rows of a run.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn halt_count(&self, run_id: &str) -> Result<i64, StoreError> {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM halt_events WHERE session_id = ?1",
                [run_id],
                |r| r.get(0),
            )
            .map_err(self.sql())
    }

    /// Every run id, oldest first.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn run_ids(&self) -> Result<Vec<String>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached("SELECT run_id FROM runs ORDER BY started_at, rowid")
            .map_err(self.sql())?;
        let rows = st.query_map([], |r| r.get(0)).map_err(self.sql())?;
        rows.collect::<Result<Vec<_>, _>>().map_err(self.sql())
    }
}

fn row_to_run(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        run_id: r.get(0)?,
        started_at: r.get(1)?,
        finished_at: r.get(2)?,
        workdir: r.get(3)?,
        pid: r.get(4)?,
        status: r.get(5)?,
        iteration: r.get(6)?,
        halt_reason: r.get(7)?,
        exit_code: r.get(8)?,
        receipt: r.get(9)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Short-lived commands that each open the ledger, write one halt row and close it
    /// (a run refused at preflight) keep the WAL near [`WAL_TRUNCATE_AT`]: each first
    /// connection recovers the WAL anew, so SQLite alone never restarted it (a fresh
    /// machine's 1,500 refused runs left a 70 MB WAL).
    #[test]
    fn the_wal_stays_bounded_under_short_lived_writers() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.sqlite");
        let ctx = serde_json::json!({"preflight": true, "contributors": ["x".repeat(2000)]});
        let wal = dir.path().join("l.sqlite-wal");
        let mut largest = 0;
        for i in 0..400 {
            let s = Store::open_in(&p, dir.path()).unwrap();
            s.halted(&HaltRecord {
                run_id: &format!("r{i}"),
                iteration: 0,
                reason: HaltReason::InvariantFailed,
                description: "invalid value",
                context: &ctx,
                attempt_count: None,
                previous_error: None,
                severity: None,
            })
            .unwrap();
            drop(s);
            largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
        }
        assert!(
            largest <= WAL_TRUNCATE_AT + (1 << 20),
            "the WAL reached {largest} bytes"
        );
    }

    /// The latest run is the one that started or halted last: a run resumed and
    /// halted after another's start is the latest.
    #[test]
    fn the_latest_run_is_the_last_to_start_or_halt() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open_in(&dir.path().join("l.sqlite"), dir.path()).unwrap();
        let ctx = serde_json::json!({});
        let halt = |id: &str| {
            std::thread::sleep(std::time::Duration::from_millis(3));
            s.halted(&HaltRecord {
                run_id: id,
                iteration: 1,
                reason: HaltReason::HumanRequired,
                description: "stopped",
                context: &ctx,
                attempt_count: None,
                previous_error: None,
                severity: None,
            })
            .unwrap();
        };
        let latest = || s.latest_run().unwrap().unwrap().run_id;
        s.run_started("a", "/w", 1, "a.jsonl").unwrap();
        halt("a");
        std::thread::sleep(std::time::Duration::from_millis(3));
        s.run_started("b", "/w", 2, "b.jsonl").unwrap();
        assert_eq!(latest(), "b");
        halt("b");
        // `a` resumed: still older while it runs, the latest once it halts again
        s.run_started("a", "/w", 3, "a.jsonl").unwrap();
        assert_eq!(latest(), "b");
        halt("a");
        assert_eq!(latest(), "a");
    }

    #[test]
    fn migrates_records_and_refuses_newer() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.sqlite");
        let s = Store::open_in(&p, dir.path()).unwrap();
        assert_eq!(s.user_version().unwrap(), USER_VERSION);
        s.run_started("r1", "/w", 1, "r1.jsonl").unwrap();
        let ctx = serde_json::json!({"k": 1});
        s.halted(&HaltRecord {
            run_id: "r1",
            iteration: 2,
            reason: HaltReason::MaxIterationsReached,
            description: "cap",
            context: &ctx,
            attempt_count: Some(2),
            previous_error: None,
            severity: None,
        })
        .unwrap();
        assert_eq!(s.halt_count("r1").unwrap(), 1);
        let r = s.latest_run().unwrap().unwrap();
        assert_eq!(r.halt_reason.as_deref(), Some("max_iterations_reached"));
        assert_eq!(r.exit_code, Some(12));
        let how = AckHow {
            method: "terminal".into(),
            key: None,
            os_user: None,
        };
        s.ack("r1", "alice", 2, None, &how).unwrap();
        assert_eq!(s.acks("r1").unwrap()[0].reviewer, "alice");
        drop(s);
        let c = Connection::open(&p).unwrap();
        c.pragma_update(None, "user_version", USER_VERSION + 1)
            .unwrap();
        drop(c);
        assert!(matches!(
            Store::open_in(&p, dir.path()),
            Err(StoreError::Newer { .. })
        ));
    }

    /// Two commands opening a ledger nobody has built yet (`run` starting while the
    /// agent's gate or a person's `status` opens it) both get a ledger; before, the
    /// later one failed with "table runs already exists" and the run halted
    /// `invariant_failed` at its start.
    #[test]
    fn commands_opening_a_new_ledger_at_once_both_get_it() {
        for round in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("l.sqlite");
            let go = std::sync::Barrier::new(4);
            std::thread::scope(|s| {
                let opened: Vec<_> = (0..4)
                    .map(|_| {
                        s.spawn(|| {
                            go.wait();
                            Store::open_in(&p, dir.path()).map(|s| s.user_version().unwrap())
                        })
                    })
                    .collect();
                for o in opened {
                    let v = o.join().unwrap();
                    assert!(
                        matches!(v, Ok(USER_VERSION)),
                        "round {round}: {:?}",
                        v.err()
                    );
                }
            });
        }
    }
}
