//! The ledger's share of people in control: holds, the latch, halt events one at a
//! time, and the gate's pending actions.
//!
//! * `holds` — one row per hold ever taken (released rows keep `released_at` and
//!   `released_by`). A hold has a scope (`run` with its run id, `workspace`, or
//!   `global` when it lives in the user's state directory), a strength (`suspended`
//!   or `stopped`), a holder and a reason. Several holds may cover one run; each is
//!   released by its id.
//! * `runs.stopped_at`, `runs.stopped_reason`, `runs.stopped_halt_id` — the latch: set
//!   once when a stop hold halts a run (never overwritten while set, so the original
//!   time survives every nudge), cleared by `run --resume` after a person acknowledged
//!   the halt event.
//! * `halt_events.acknowledged_how` — how an acknowledgement was made (terminal or not,
//!   SSH-signed and by which key), next to the design's `acknowledged_by`.
//! * `pending_actions` — destructive agent actions waiting for a person (`gate`).

use super::journal::{Decision, JournalError, State};
use super::{Store, StoreError};
use crate::halt::{ExitClass, HaltReason};
use rusqlite::{params, OptionalExtension};

/// What the active holds of a ledger are a function of: the ledger's content (its
/// `data_version`, which moves when another connection commits; this connection's
/// own writes to `holds` drop the reused answer where they are made) and the
/// journal's identity, length and times (it is only ever appended to). Equal keys
/// mean the same answer, so [`Store::active_holds`] reuses its last one: the loop
/// asks before every step, and its other writes (an iteration's rows) no longer make
/// it read the ledger and the whole journal again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HoldsKey {
    run_id: Option<String>,
    data_version: i64,
    /// `(dev, ino, len, mtime s, mtime ns, ctime s, ctime ns)`; `None` when absent.
    journal: Option<(u64, u64, u64, i64, i64, i64, i64)>,
}

/// Schema migration 3 (see [`super::USER_VERSION`]).
pub(super) const MIGRATION: &str = "CREATE TABLE holds (
        id TEXT PRIMARY KEY,
        scope TEXT NOT NULL,
        run_id TEXT,
        strength TEXT NOT NULL,
        holder TEXT NOT NULL,
        reason TEXT NOT NULL,
        taken_at TEXT NOT NULL,
        released_at TEXT,
        released_by TEXT
    );
    CREATE INDEX idx_holds_active ON holds(scope, run_id) WHERE released_at IS NULL;
    ALTER TABLE runs ADD COLUMN stopped_at TEXT;
    ALTER TABLE runs ADD COLUMN stopped_reason TEXT;
    ALTER TABLE runs ADD COLUMN stopped_halt_id TEXT;
    ALTER TABLE halt_events ADD COLUMN acknowledged_how TEXT;
    ALTER TABLE acks ADD COLUMN method TEXT;
    CREATE INDEX idx_halt_events_task ON halt_events(task_id);
    CREATE INDEX idx_halt_events_severity ON halt_events(severity);
    CREATE INDEX idx_halt_events_triggered ON halt_events(triggered_at);
    CREATE INDEX idx_halt_events_acknowledged ON halt_events(acknowledged) WHERE acknowledged = 0;
    CREATE INDEX idx_halt_events_session_type ON halt_events(session_id, halt_type);
    CREATE TABLE pending_actions (
        id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL,
        hold_id TEXT,
        tool TEXT NOT NULL,
        target TEXT NOT NULL,
        description TEXT NOT NULL,
        classification TEXT NOT NULL,
        requested_at TEXT NOT NULL,
        decision TEXT,
        decided_by TEXT,
        decided_at TEXT
    );
    CREATE INDEX idx_pending_open ON pending_actions(run_id) WHERE decision IS NULL;
    CREATE TABLE rate_buckets (
        kind TEXT PRIMARY KEY,
        level REAL NOT NULL,
        updated_ms INTEGER NOT NULL
    );";

/// Default severity of a halt event by class (SPEC §Halt events). Only integrity
/// halts are `high` by default, so the everyday rerun after a cap, a budget or a
/// no-convergence halt is never blocked; `critical` is left to the gate's security
/// events. `[halt_events.<reason>] severity` overrides it.
#[must_use]
pub fn default_severity(reason: HaltReason) -> &'static str {
    // A rejection by the judge leaves the rejected work in the tree: the next run would
    // start green from it, so it blocks new runs until a person acknowledges it.
    if reason == HaltReason::ReviewerRejected {
        return "high";
    }
    match reason.class() {
        ExitClass::Integrity => "high",
        ExitClass::IterationCap
        | ExitClass::Budget
        | ExitClass::NoConvergence
        | ExitClass::TerminalBlocked
        | ExitClass::ResumableJudgment
        | ExitClass::OracleUntrusted
        | ExitClass::CheckInadequate
        | ExitClass::LivenessDrift
        | ExitClass::Execution
        | ExitClass::Internal => "medium",
        ExitClass::Nominal | ExitClass::Converged | ExitClass::Workspace | ExitClass::Invariant => {
            "low"
        }
    }
}

/// Severities in increasing order; the wire strings of `severity`.
pub const SEVERITIES: [&str; 4] = ["low", "medium", "high", "critical"];

/// Where a hold applies.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", content = "run_id", rename_all = "snake_case")]
pub enum HoldScope {
    /// Every workspace of this user (lives in the user's state directory).
    Global,
    /// Every run of one workspace.
    Workspace,
    /// One run.
    Run(String),
}

impl HoldScope {
    /// `global`, `workspace` or `run:<id>`.
    #[must_use]
    pub fn label(&self) -> String {
        match self {
            HoldScope::Global => "global".into(),
            HoldScope::Workspace => "workspace".into(),
            HoldScope::Run(id) => format!("run:{id}"),
        }
    }
    fn rank(&self) -> u8 {
        match self {
            HoldScope::Global => 0,
            HoldScope::Workspace => 1,
            HoldScope::Run(_) => 2,
        }
    }
}

/// How strongly a hold holds.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum HoldStrength {
    /// Park at the next step boundary; go on by itself when released. Never latches.
    Suspended,
    /// End the running step and halt `human_required`; latches the run.
    Stopped,
}

impl HoldStrength {
    /// `suspended` or `stopped`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            HoldStrength::Suspended => "suspended",
            HoldStrength::Stopped => "stopped",
        }
    }
}

/// A hold as stored.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct HoldRow {
    pub id: String,
    /// `global`, `workspace` or `run:<id>`.
    pub scope: String,
    pub strength: HoldStrength,
    pub holder: String,
    pub reason: String,
    /// RFC 3339.
    pub taken_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub released_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub released_by: Option<String>,
}

/// What `hold` asks for.
pub struct NewHold<'a> {
    pub scope: HoldScope,
    pub strength: HoldStrength,
    pub holder: &'a str,
    pub reason: &'a str,
}

/// The latch of a run, when set.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Latch {
    /// RFC 3339 time of the first stop.
    pub stopped_at: String,
    pub stopped_reason: String,
    /// The halt event a person must acknowledge.
    pub halt_id: Option<String>,
}

/// One halt event as `halts` lists it.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct HaltEventRow {
    pub id: String,
    pub run_id: String,
    pub halt_reason: String,
    pub halt_class: String,
    pub exit_code: i64,
    pub severity: String,
    pub description: String,
    pub iteration: Option<i64>,
    pub triggered_at: String,
    pub acknowledged: bool,
    pub acknowledged_at: Option<String>,
    pub acknowledged_by: Option<String>,
    /// How the acknowledgement was made (JSON), when acknowledged.
    pub acknowledged_how: Option<serde_json::Value>,
    /// `resolved`, `escalated`, `dismissed` or `timeout`.
    pub resolution: Option<String>,
    pub resolution_notes: Option<String>,
    pub attempt_count: Option<i64>,
    pub previous_error: Option<String>,
    /// The run was refused before it started (a configuration error, a busy or
    /// missing workdir, `--resume` of an unknown run): the caller had the exit code
    /// and the error, and no agent ran, so the event asks nothing of a person and
    /// `halts --unacked` leaves it out.
    pub preflight: bool,
}

/// The `halt_reason` of a converged run, whose event waits for no one.
const SUCCESS: &str = "success_condition_met";

/// Which halt events to list.
#[derive(Debug, Clone, Default)]
pub struct HaltEventFilter<'a> {
    /// Only events waiting for a person: unacknowledged, not a success (a run that
    /// converged asks nothing of anyone; its event is the record of the halt) and
    /// not a start refused before it began ([`HaltEventRow::preflight`]).
    pub unacked: bool,
    pub run_id: Option<&'a str>,
    /// At least this severity.
    pub min_severity: Option<&'a str>,
}

/// How an acknowledgement was made (stored as JSON in `acknowledged_how` / `acks.method`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct AckHow {
    /// `terminal` (stdin is a terminal), `non_interactive`, or `ssh_signature`.
    pub method: String,
    /// The SSH key fingerprint that signed, for `ssh_signature`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The operating-system user that ran `ack`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_user: Option<String>,
}

/// A destructive agent action waiting for a person, or answered.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct PendingAction {
    pub id: String,
    pub run_id: String,
    pub hold_id: Option<String>,
    pub tool: String,
    pub target: String,
    pub description: String,
    pub classification: String,
    pub requested_at: String,
    /// `confirmed` or `denied` once answered.
    pub decision: Option<String>,
    pub decided_by: Option<String>,
    pub decided_at: Option<String>,
    /// The gate still holds the agent's call waiting for this answer (its hold is in
    /// force). False once answered, and for an action whose call was declined at
    /// `--approval-timeout`: answering it then lets `run --resume` go on, and the
    /// agent must ask again. Worked out when read, not stored.
    #[serde(default)]
    pub call_waiting: bool,
}

/// Nanoseconds since the epoch, the pid and a per-process counter: never the same
/// twice in one process, and practically never across processes.
pub(super) fn unique_suffix() -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{nanos}:{}:{n}", std::process::id())
}

/// A short unique id with a prefix (`hold-1f2e…`), from `unique_suffix` and `salt`.
#[must_use]
pub fn new_id(prefix: &str, salt: &str) -> String {
    let h = blake3::hash(format!("{}:{salt}", unique_suffix()).as_bytes());
    format!("{prefix}-{}", &h.to_hex()[..10])
}

fn strength_of(s: &str) -> HoldStrength {
    if s == "suspended" {
        HoldStrength::Suspended
    } else {
        // Unknown strengths fail closed: they stop.
        HoldStrength::Stopped
    }
}

fn row_to_hold(r: &rusqlite::Row<'_>) -> rusqlite::Result<HoldRow> {
    let scope: String = r.get(1)?;
    let run: Option<String> = r.get(2)?;
    Ok(HoldRow {
        id: r.get(0)?,
        scope: match (scope.as_str(), run) {
            ("run", Some(id)) => format!("run:{id}"),
            (s, _) => s.to_string(),
        },
        strength: strength_of(&r.get::<_, String>(3)?),
        holder: r.get(4)?,
        reason: r.get(5)?,
        taken_at: r.get(6)?,
        released_at: r.get(7)?,
        released_by: r.get(8)?,
    })
}

const HOLD_COLS: &str =
    "id, scope, run_id, strength, holder, reason, taken_at, released_at, released_by";

fn row_to_event(r: &rusqlite::Row<'_>) -> rusqlite::Result<HaltEventRow> {
    let how: Option<String> = r.get(13)?;
    Ok(HaltEventRow {
        id: r.get(0)?,
        run_id: r.get(1)?,
        halt_reason: r.get(2)?,
        halt_class: r.get(3)?,
        exit_code: r.get(4)?,
        severity: r.get(5)?,
        description: r.get(6)?,
        iteration: r.get(7)?,
        triggered_at: r.get(8)?,
        acknowledged: r.get::<_, i64>(9)? != 0,
        acknowledged_at: r.get(10)?,
        acknowledged_by: r.get(11)?,
        resolution: r.get(12)?,
        acknowledged_how: how.and_then(|h| serde_json::from_str(&h).ok()),
        resolution_notes: r.get(14)?,
        attempt_count: r.get(15)?,
        previous_error: r.get(16)?,
        preflight: r.get::<_, Option<i64>>(17)?.unwrap_or(0) != 0,
    })
}

const EVENT_COLS: &str = "id, session_id, halt_type, halt_class, exit_code, severity, description,
    iteration, triggered_at, acknowledged, acknowledged_at, acknowledged_by, resolution,
    acknowledged_how, resolution_notes, attempt_count, previous_error,
    json_extract(context, '$.preflight') IS 1";

fn severity_rank(s: &str) -> usize {
    SEVERITIES.iter().position(|x| *x == s).unwrap_or(0)
}

impl Store {
    /// Takes a hold; returns its row.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn take_hold(&self, h: &NewHold<'_>) -> Result<HoldRow, StoreError> {
        let id = new_id("hold", &format!("{}{}", h.holder, h.reason));
        let now = crate::receipt::now_rfc3339();
        let (scope, run) = match &h.scope {
            HoldScope::Global => ("global", None),
            HoldScope::Workspace => ("workspace", None),
            HoldScope::Run(r) => ("run", Some(r.as_str())),
        };
        self.conn
            .execute(
                "INSERT INTO holds (id, scope, run_id, strength, holder, reason, taken_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![id, scope, run, h.strength.as_str(), h.holder, h.reason, now],
            )
            .map_err(self.sql())?;
        self.holds_cache.replace(None);
        // A hold in the ledger alone already stops; the journal makes sure no ledger
        // edit can release it. Only a sandboxed step (the gate) cannot write the journal.
        match self.journal.append(Decision::HoldTaken {
            hold_id: id.clone(),
            scope: h.scope.label(),
            strength: h.strength.as_str().into(),
            holder: h.holder.into(),
            reason: h.reason.into(),
            taken_at: now.clone(),
        }) {
            Ok(_) => {}
            Err(JournalError::Io { source, .. }) if denied(&source) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(HoldRow {
            id,
            scope: h.scope.label(),
            strength: h.strength,
            holder: h.holder.to_string(),
            reason: h.reason.to_string(),
            taken_at: now,
            released_at: None,
            released_by: None,
        })
    }

    /// One hold by id (released or not).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn hold(&self, id: &str) -> Result<Option<HoldRow>, StoreError> {
        let row = self
            .conn
            .query_row(
                &format!("SELECT {HOLD_COLS} FROM holds WHERE id = ?1"),
                [id],
                row_to_hold,
            )
            .optional()
            .map_err(self.sql())?;
        // A release the journal does not have is not believed.
        let j = self.journal.state()?;
        Ok(match (row, j.holds.get(id)) {
            (Some(mut h), Some(_)) => {
                h.released_at = None;
                h.released_by = None;
                Some(h)
            }
            (None, Some(jh)) => Some(HoldRow {
                id: id.to_string(),
                scope: jh.scope.clone(),
                strength: strength_of(&jh.strength),
                holder: jh.holder.clone(),
                reason: jh.reason.clone(),
                taken_at: jh.taken_at.clone(),
                released_at: None,
                released_by: None,
            }),
            (row, None) => row,
        })
    }

    /// Releases a hold. Returns false when it was already released.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn release_hold(&self, id: &str, by: &str) -> Result<bool, StoreError> {
        let journaled = self.journal.state()?.holds.contains_key(id);
        if journaled {
            self.journal.append(Decision::HoldReleased {
                hold_id: id.into(),
                by: by.into(),
            })?;
        }
        let n = self
            .conn
            .execute(
                "UPDATE holds SET released_at = ?2, released_by = ?3
                 WHERE id = ?1 AND released_at IS NULL",
                params![id, crate::receipt::now_rfc3339(), by],
            )
            .map_err(self.sql())?;
        self.holds_cache.replace(None);
        Ok(n > 0 || journaled)
    }

    /// Active holds of this ledger: every one when `run_id` is `None`, else those that
    /// cover that run (global and workspace ones, and the run's own). Broadest scope
    /// first, then oldest first.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn active_holds(&self, run_id: Option<&str>) -> Result<Vec<HoldRow>, StoreError> {
        // The loop asks before every step; the answer is reused while nothing that
        // decides it can have changed (see [`HoldsKey`]).
        let key = self.holds_key(run_id)?;
        if let Some(k) = &key {
            if let Some((was, rows)) = self.holds_cache.borrow().as_ref() {
                if was == k {
                    return Ok(rows.clone());
                }
            }
        }
        let rows = self.read_active_holds(run_id)?;
        *self.holds_cache.borrow_mut() = key.map(|k| (k, rows.clone()));
        Ok(rows)
    }

    /// What [`Self::active_holds`] depends on, or `None` when it cannot be vouched for
    /// (the journal cannot be looked at).
    fn holds_key(&self, run_id: Option<&str>) -> Result<Option<HoldsKey>, StoreError> {
        let data_version: i64 = self
            .conn
            .prepare_cached("SELECT data_version FROM pragma_data_version")
            .and_then(|mut st| st.query_row([], |r| r.get(0)))
            .map_err(self.sql())?;
        let journal = match std::fs::metadata(self.journal.path()) {
            Ok(m) => {
                use std::os::unix::fs::MetadataExt;
                Some((
                    m.dev(),
                    m.ino(),
                    m.len(),
                    m.mtime(),
                    m.mtime_nsec(),
                    m.ctime(),
                    m.ctime_nsec(),
                ))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(_) => return Ok(None),
        };
        Ok(Some(HoldsKey {
            run_id: run_id.map(str::to_string),
            data_version,
            journal,
        }))
    }

    fn read_active_holds(&self, run_id: Option<&str>) -> Result<Vec<HoldRow>, StoreError> {
        let journal = self.journal.state()?;
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT {HOLD_COLS} FROM holds
                 WHERE (?1 IS NULL OR scope <> 'run' OR run_id = ?1) ORDER BY taken_at, rowid"
            ))
            .map_err(self.sql())?;
        let rows = st.query_map([run_id], row_to_hold).map_err(self.sql())?;
        let all = rows.collect::<Result<Vec<_>, _>>().map_err(self.sql())?;
        // Active: the ledger says so, or the journal does (a release written only to
        // the ledger is not believed).
        let mut v: Vec<HoldRow> = all
            .into_iter()
            .filter(|h| h.released_at.is_none() || journal.holds.contains_key(&h.id))
            .map(|mut h| {
                if journal.holds.contains_key(&h.id) {
                    h.released_at = None;
                    h.released_by = None;
                }
                h
            })
            .collect();
        for (id, j) in &journal.holds {
            let covers = match (run_id, j.scope.strip_prefix("run:")) {
                (Some(r), Some(of)) => r == of,
                _ => true,
            };
            if covers && !v.iter().any(|h| &h.id == id) {
                v.push(HoldRow {
                    id: id.clone(),
                    scope: j.scope.clone(),
                    strength: strength_of(&j.strength),
                    holder: j.holder.clone(),
                    reason: j.reason.clone(),
                    taken_at: j.taken_at.clone(),
                    released_at: None,
                    released_by: None,
                });
            }
        }
        v.sort_by(|a, b| {
            scope_rank(&a.scope)
                .cmp(&scope_rank(&b.scope))
                .then_with(|| a.taken_at.cmp(&b.taken_at))
        });
        Ok(v)
    }

    /// Runs whose status is `running`, with their loopexec pid.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn running_pids(&self) -> Result<Vec<(String, u32)>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached("SELECT run_id, pid FROM runs WHERE status = 'running'")
            .map_err(self.sql())?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    u32::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                ))
            })
            .map_err(self.sql())?;
        rows.collect::<Result<Vec<_>, _>>().map_err(self.sql())
    }

    /// Sets the latch of a run unless it is already set (the first stop's time and
    /// reason survive every later stop).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn latch(&self, run_id: &str, reason: &str, halt_id: &str) -> Result<(), StoreError> {
        self.journal.append(Decision::Latched {
            run_id: run_id.into(),
            reason: reason.into(),
            halt_id: halt_id.into(),
        })?;
        self.conn
            .execute(
                "UPDATE runs SET stopped_at = ?2, stopped_reason = ?3, stopped_halt_id = ?4
                 WHERE run_id = ?1 AND stopped_at IS NULL",
                params![run_id, crate::receipt::now_rfc3339(), reason, halt_id],
            )
            .map(|_| ())
            .map_err(self.sql())
    }

    /// The latch of a run, if set.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn latch_of(&self, run_id: &str) -> Result<Option<Latch>, StoreError> {
        let journal = self.journal.state()?;
        let ledger = self
            .conn
            .query_row(
                "SELECT stopped_at, stopped_reason, stopped_halt_id FROM runs
                 WHERE run_id = ?1 AND stopped_at IS NOT NULL",
                [run_id],
                |r| {
                    Ok(Latch {
                        stopped_at: r.get(0)?,
                        stopped_reason: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                        halt_id: r.get(2)?,
                    })
                },
            )
            .optional()
            .map_err(self.sql())?;
        // Latched when either says so: a latch cleared only in the ledger still holds.
        Ok(ledger.or_else(|| {
            journal
                .latches
                .get(run_id)
                .map(|(reason, halt_id, at)| Latch {
                    stopped_at: at.clone(),
                    stopped_reason: reason.clone(),
                    halt_id: Some(halt_id.clone()),
                })
        }))
    }

    /// Clears the latch (only `run --resume` does, after a person's acknowledgement).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn clear_latch(&self, run_id: &str) -> Result<(), StoreError> {
        if self.journal.state()?.latches.contains_key(run_id) {
            self.journal.append(Decision::LatchCleared {
                run_id: run_id.into(),
            })?;
        }
        self.conn
            .execute(
                "UPDATE runs SET stopped_at = NULL, stopped_reason = NULL, stopped_halt_id = NULL
                 WHERE run_id = ?1",
                [run_id],
            )
            .map(|_| ())
            .map_err(self.sql())
    }

    /// Halt events, newest first.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn halt_events(&self, f: &HaltEventFilter<'_>) -> Result<Vec<HaltEventRow>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT {EVENT_COLS} FROM halt_events
                 WHERE (?1 IS NULL OR session_id = ?1)
                 ORDER BY triggered_at DESC, rowid DESC"
            ))
            .map_err(self.sql())?;
        let rows = st
            .query_map(params![f.run_id], row_to_event)
            .map_err(self.sql())?;
        let journal = self.journal.state()?;
        let mut v = rows
            .map(|r| r.map(|e| believed(e, &journal)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.sql())?;
        if f.unacked {
            v.retain(|e| !e.acknowledged && e.halt_reason != SUCCESS && !e.preflight);
        }
        if let Some(min) = f.min_severity {
            let floor = severity_rank(min);
            v.retain(|e| severity_rank(&e.severity) >= floor);
        }
        Ok(v)
    }

    /// One halt event by id.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn halt_event(&self, id: &str) -> Result<Option<HaltEventRow>, StoreError> {
        self.conn
            .query_row(
                &format!("SELECT {EVENT_COLS} FROM halt_events WHERE id = ?1"),
                [id],
                row_to_event,
            )
            .optional()
            .map_err(self.sql())?
            .map(|e| self.journal.state().map(|j| believed(e, &j)))
            .transpose()
            .map_err(StoreError::from)
    }

    /// Acknowledges one halt event. Returns false when it was already acknowledged
    /// (nothing is changed then).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn ack_event(
        &self,
        id: &str,
        by: &str,
        resolution: &str,
        notes: Option<&str>,
        how: &AckHow,
    ) -> Result<bool, StoreError> {
        if self.journal.state()?.event_acks.contains_key(id) {
            return Ok(false);
        }
        self.journal.append(Decision::EventAcked {
            halt_id: id.into(),
            by: by.into(),
            resolution: resolution.into(),
            how: how.clone(),
        })?;
        let now = crate::receipt::now_rfc3339();
        let how = serde_json::to_string(how).unwrap_or_default();
        let n = self
            .conn
            .execute(
                "UPDATE halt_events SET acknowledged = 1, acknowledged_at = ?2, acknowledged_by = ?3,
                 resolution = ?4, resolution_notes = ?5, acknowledged_how = ?6, updated_at = ?2
                 WHERE id = ?1 AND acknowledged = 0",
                params![id, now, by, resolution, notes, how],
            )
            .map_err(self.sql())?;
        Ok(n > 0 || self.halt_event(id)?.is_some())
    }

    /// Records how the newest acknowledgement of a run (`acks` row) was made, and on the
    /// halt events it acknowledged.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn set_ack_method(&self, run_id: &str, how: &AckHow) -> Result<(), StoreError> {
        let how = serde_json::to_string(how).unwrap_or_default();
        self.conn
            .execute(
                "UPDATE acks SET method = ?2 WHERE rowid =
                 (SELECT MAX(rowid) FROM acks WHERE run_id = ?1)",
                params![run_id, how],
            )
            .map_err(self.sql())?;
        self.conn
            .execute(
                "UPDATE halt_events SET acknowledged_how = ?2
                 WHERE session_id = ?1 AND acknowledged = 1 AND acknowledged_how IS NULL",
                params![run_id, how],
            )
            .map(|_| ())
            .map_err(self.sql())
    }

    /// The methods of a run's acknowledgements (`acks` rows), oldest first; `None` for
    /// rows written before methods were recorded.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn ack_methods(&self, run_id: &str) -> Result<Vec<Option<AckHow>>, StoreError> {
        Ok(self
            .journal
            .state()?
            .run_acks
            .remove(run_id)
            .unwrap_or_default()
            .into_iter()
            .map(|a| Some(a.how))
            .collect())
    }

    /// Sets an event's severity (from `[halt_events.<reason>]`) and its three-strikes
    /// fields: `attempt_count` is how many events of this type the run has had,
    /// this one included; `previous_error` is the description of the run's previous
    /// halt event.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn finish_event(&self, id: &str, severity: Option<&str>) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE halt_events SET
                   severity = COALESCE(?2, severity),
                   attempt_count = (SELECT COUNT(*) FROM halt_events o
                       WHERE o.session_id = halt_events.session_id
                         AND o.halt_type = halt_events.halt_type
                         AND o.rowid <= halt_events.rowid),
                   previous_error = (SELECT o.description FROM halt_events o
                       WHERE o.session_id = halt_events.session_id
                         AND o.rowid < halt_events.rowid ORDER BY o.rowid DESC LIMIT 1)
                 WHERE id = ?1",
                params![id, severity],
            )
            .map(|_| ())
            .map_err(self.sql())
    }

    /// Escalates unacknowledged events of `halt_type` older than `older_than` (RFC
    /// 3339): resolution `timeout`, still unacknowledged. Returns the ids escalated.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn escalate(&self, halt_type: &str, older_than: &str) -> Result<Vec<String>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT id FROM halt_events WHERE halt_type = ?1 AND acknowledged = 0
                 AND resolution IS NULL AND triggered_at < ?2",
            )
            .map_err(self.sql())?;
        let ids = st
            .query_map(params![halt_type, older_than], |r| r.get::<_, String>(0))
            .map_err(self.sql())?
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.sql())?;
        for id in &ids {
            self.conn
                .execute(
                    "UPDATE halt_events SET resolution = 'timeout', updated_at = ?2 WHERE id = ?1",
                    params![id, crate::receipt::now_rfc3339()],
                )
                .map_err(self.sql())?;
        }
        Ok(ids)
    }

    /// Records a halt condition the action gate observed as a halt event of the run
    /// (`halt_class` `gate`; `halt_type` is the finding's). Returns its id.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn record_finding(
        &self,
        run_id: &str,
        iteration: u32,
        halt_type: &str,
        severity: &str,
        description: &str,
        context: &serde_json::Value,
    ) -> Result<String, StoreError> {
        let now = crate::receipt::now_rfc3339();
        let id = new_id("gate", &format!("{run_id}{halt_type}{description}"));
        let description =
            String::from_utf8_lossy(&crate::observe::secrets::redact(description.as_bytes()))
                .into_owned();
        self.conn
            .execute(
                "INSERT INTO halt_events (id, session_id, task_id, iteration, halt_class, halt_type,
                 exit_code, severity, description, context, triggered_at, created_at, updated_at)
                 VALUES (?1, ?2, NULL, ?3, 'gate', ?4, 0, ?5, ?6, ?7, ?8, ?8, ?8)",
                params![
                    id,
                    run_id,
                    iteration,
                    halt_type,
                    severity,
                    description,
                    context.to_string(),
                    now
                ],
            )
            .map_err(self.sql())?;
        self.finish_event(&id, None)?;
        Ok(id)
    }

    /// The level of the workspace's `kind` bucket (`usd` or `tokens`) at `now_ms`,
    /// refilled at `per_hour` up to a capacity of one hour's worth, after drawing
    /// `amount` from it (0 to only read it). A bucket never seen starts full. The
    /// read-refill-write is one immediate transaction, so concurrent runs of the
    /// workspace share one bucket.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn bucket_draw(
        &self,
        kind: &str,
        per_hour: f64,
        amount: f64,
        now_ms: u64,
    ) -> Result<f64, StoreError> {
        let tx = rusqlite::Transaction::new_unchecked(
            &self.conn,
            rusqlite::TransactionBehavior::Immediate,
        )
        .map_err(self.sql())?;
        let row: Option<(f64, i64)> = tx
            .query_row(
                "SELECT level, updated_ms FROM rate_buckets WHERE kind = ?1",
                [kind],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(self.sql())?;
        let now = i64::try_from(now_ms).unwrap_or(i64::MAX);
        let level = match row {
            Some((level, at)) => crate::detect::rate::refill(
                level,
                per_hour,
                u64::try_from(now.saturating_sub(at)).unwrap_or(0),
            ),
            None => per_hour,
        } - amount;
        tx.execute(
            "INSERT INTO rate_buckets (kind, level, updated_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT(kind) DO UPDATE SET level = ?2, updated_ms = ?3",
            params![kind, level, now],
        )
        .map_err(self.sql())?;
        tx.commit().map_err(self.sql())?;
        Ok(level)
    }

    /// Records a destructive action waiting for a person.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn add_pending(&self, a: &PendingAction) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO pending_actions (id, run_id, hold_id, tool, target, description,
                 classification, requested_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    a.id,
                    a.run_id,
                    a.hold_id,
                    a.tool,
                    a.target,
                    a.description,
                    a.classification,
                    a.requested_at
                ],
            )
            .map(|_| ())
            .map_err(self.sql())
    }

    /// Pending actions (`open_only`: unanswered ones), oldest first.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn pending(&self, open_only: bool) -> Result<Vec<PendingAction>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT id, run_id, hold_id, tool, target, description, classification,
                 requested_at, decision, decided_by, decided_at FROM pending_actions
                 ORDER BY requested_at, rowid",
            )
            .map_err(self.sql())?;
        let journal = self.journal.state()?;
        let rows = st
            .query_map([], |r| {
                Ok(PendingAction {
                    id: r.get(0)?,
                    run_id: r.get(1)?,
                    hold_id: r.get(2)?,
                    tool: r.get(3)?,
                    target: r.get(4)?,
                    description: r.get(5)?,
                    classification: r.get(6)?,
                    requested_at: r.get(7)?,
                    decision: r.get(8)?,
                    decided_by: r.get(9)?,
                    decided_at: r.get(10)?,
                    call_waiting: false,
                })
            })
            .map_err(self.sql())?;
        let mut v = rows.collect::<Result<Vec<_>, _>>().map_err(self.sql())?;
        // The answer is the journal's: one written only to the ledger is not believed.
        for a in &mut v {
            match journal.answers.get(&a.id) {
                Some((decision, by, at)) => {
                    a.decision = Some(decision.clone());
                    a.decided_by = Some(by.clone());
                    a.decided_at = Some(at.clone());
                }
                None => {
                    a.decision = None;
                    a.decided_by = None;
                    a.decided_at = None;
                }
            }
        }
        if open_only {
            v.retain(|a| a.decision.is_none());
        }
        for a in v.iter_mut().filter(|a| a.decision.is_none()) {
            if let Some(h) = &a.hold_id {
                a.call_waiting = self.hold(h)?.is_some_and(|r| r.released_at.is_none());
            }
        }
        Ok(v)
    }

    /// Answers a pending action (`confirmed` or `denied`). Returns false when it was
    /// already answered or does not exist.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn decide_pending(&self, id: &str, decision: &str, by: &str) -> Result<bool, StoreError> {
        if self.journal.state()?.answers.contains_key(id) {
            return Ok(false);
        }
        let exists = self.any("SELECT COUNT(*) FROM pending_actions WHERE id = ?1", id)?;
        if !exists {
            return Ok(false);
        }
        self.journal.append(Decision::PendingDecided {
            action_id: id.into(),
            decision: decision.into(),
            by: by.into(),
        })?;
        let n = self
            .conn
            .execute(
                "UPDATE pending_actions SET decision = ?2, decided_by = ?3, decided_at = ?4
                 WHERE id = ?1 AND decision IS NULL",
                params![id, decision, by, crate::receipt::now_rfc3339()],
            )
            .map_err(self.sql())?;
        Ok(n > 0 || exists)
    }
}

/// True for the errors a sandboxed step gets writing outside what it may write.
fn denied(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EACCES | libc::EPERM | libc::EROFS)
    )
}

/// A halt event as the control journal has it: acknowledged only when the journal
/// records the acknowledgement (the event's own, or a run acknowledgement made after
/// it was triggered); the acknowledgement's who, when and how come from the journal.
fn believed(mut e: HaltEventRow, j: &State) -> HaltEventRow {
    match j.ack_of(&e.id, &e.run_id, &e.triggered_at) {
        Some(a) => {
            e.acknowledged = true;
            e.acknowledged_by = Some(a.by);
            e.acknowledged_at = Some(a.at);
            e.acknowledged_how = serde_json::to_value(&a.how).ok();
            e.resolution = Some(a.resolution);
        }
        None => {
            e.acknowledged = false;
            e.acknowledged_by = None;
            e.acknowledged_at = None;
            e.acknowledged_how = None;
            if e.resolution.as_deref() != Some("timeout") {
                e.resolution = None;
            }
        }
    }
    e
}

impl Store {
    /// Whether `count_sql` (a `SELECT COUNT(*) … ?1` query) counts any row for `param`.
    fn any(&self, count_sql: &str, param: &str) -> Result<bool, StoreError> {
        self.conn
            .query_row(count_sql, [param], |r| r.get::<_, i64>(0))
            .map(|n| n > 0)
            .map_err(self.sql())
    }

    /// Where the ledger says more than the control journal — each is a decision
    /// written to the ledger outside loopexec (see [`super::journal`]), which loopexec
    /// does not believe: a hold released, a halt event acknowledged, a run
    /// acknowledged, a pending action answered, or a latch cleared only in the ledger.
    /// A journal that does not verify is one entry. `loopexec check` lists these.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn journal_disagreements(&self) -> Result<Vec<String>, StoreError> {
        let j = match self.journal.state() {
            Ok(j) => j,
            Err(e) => return Ok(vec![e.to_string()]),
        };
        let at = self.journal.path().display();
        let mut out = Vec::new();
        let strings = |sql: &str| -> Result<Vec<(String, String)>, StoreError> {
            let mut st = self.conn.prepare_cached(sql).map_err(self.sql())?;
            let rows = st
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
                .map_err(self.sql())?;
            rows.collect::<Result<Vec<_>, _>>().map_err(self.sql())
        };
        for (id, by) in strings(
            "SELECT id, COALESCE(released_by, '') FROM holds WHERE released_at IS NOT NULL",
        )? {
            if j.holds.contains_key(&id) {
                out.push(format!(
                    "hold {id}: the ledger says released (by {by:?}) but the control journal {at} does not: the hold still holds"
                ));
            }
        }
        for (id, run) in strings("SELECT id, session_id FROM halt_events WHERE acknowledged = 1")? {
            let triggered: String = self
                .conn
                .query_row(
                    "SELECT triggered_at FROM halt_events WHERE id = ?1",
                    [&id],
                    |r| r.get(0),
                )
                .map_err(self.sql())?;
            if j.ack_of(&id, &run, &triggered).is_none() {
                out.push(format!(
                    "halt event {id} of run {run}: the ledger says acknowledged but the control journal {at} has no such acknowledgement: it is still unacknowledged"
                ));
            }
        }
        for (run, n) in strings("SELECT run_id, CAST(COUNT(*) AS TEXT) FROM acks GROUP BY run_id")?
        {
            let journaled = j.run_acks.get(&run).map_or(0, Vec::len);
            if n.parse::<usize>().unwrap_or(0) > journaled {
                out.push(format!(
                    "run {run}: the ledger has {n} acknowledgement(s), the control journal {at} {journaled}: the others were not made by `loopexec ack` and do not count"
                ));
            }
        }
        for (id, decision) in
            strings("SELECT id, decision FROM pending_actions WHERE decision IS NOT NULL")?
        {
            match j.answers.get(&id) {
                Some((d, _, _)) if *d == decision => {}
                Some((d, _, _)) => out.push(format!(
                    "pending action {id}: the ledger says {decision}, the control journal {at} says {d}"
                )),
                None => out.push(format!(
                    "pending action {id}: the ledger says {decision} but the control journal {at} has no answer: it is still open"
                )),
            }
        }
        for (run, (reason, _, _)) in &j.latches {
            let latched = self.any(
                "SELECT COUNT(*) FROM runs WHERE run_id = ?1 AND stopped_at IS NOT NULL",
                run,
            )?;
            if !latched {
                out.push(format!(
                    "run {run}: the ledger's latch is clear but the control journal {at} has it latched ({reason}): it stays latched until a person acknowledges"
                ));
            }
        }
        Ok(out)
    }
}

fn scope_rank(label: &str) -> u8 {
    match label {
        "global" => HoldScope::Global.rank(),
        "workspace" => HoldScope::Workspace.rank(),
        _ => HoldScope::Run(String::new()).rank(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open_in(&d.path().join("l.sqlite"), d.path()).unwrap();
        (d, s)
    }

    #[test]
    fn holds_cover_their_scope_and_release_by_id() {
        let (_d, s) = store();
        let a = s
            .take_hold(&NewHold {
                scope: HoldScope::Run("r1".into()),
                strength: HoldStrength::Suspended,
                holder: "alice",
                reason: "look",
            })
            .unwrap();
        let b = s
            .take_hold(&NewHold {
                scope: HoldScope::Workspace,
                strength: HoldStrength::Stopped,
                holder: "bob",
                reason: "maintenance",
            })
            .unwrap();
        let r1: Vec<String> = s
            .active_holds(Some("r1"))
            .unwrap()
            .into_iter()
            .map(|h| h.id)
            .collect();
        // Workspace-wide first.
        assert_eq!(r1, vec![b.id.clone(), a.id.clone()]);
        let r2 = s.active_holds(Some("r2")).unwrap();
        assert_eq!(r2.len(), 1);
        assert!(s.release_hold(&b.id, "bob").unwrap());
        assert!(!s.release_hold(&b.id, "bob").unwrap());
        assert_eq!(s.active_holds(None).unwrap().len(), 1);
        assert_eq!(
            s.hold(&b.id).unwrap().unwrap().released_by.as_deref(),
            Some("bob")
        );
    }

    /// Backdates the journal so its answer may be reused (see [`Store::holds_key`]).
    fn age_journal(s: &Store) {
        if let Ok(f) = std::fs::File::options().append(true).open(s.journal.path()) {
            let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
            f.set_times(std::fs::FileTimes::new().set_modified(old))
                .unwrap();
        }
    }

    #[test]
    fn a_reused_answer_never_hides_a_hold_taken_or_released_elsewhere() {
        let (d, looping) = store();
        let person = Store::open_in(&d.path().join("l.sqlite"), d.path()).unwrap();
        age_journal(&looping);
        assert!(looping.active_holds(Some("r")).unwrap().is_empty());
        assert!(
            looping.active_holds(Some("r")).unwrap().is_empty(),
            "asked twice"
        );
        let h = person
            .take_hold(&NewHold {
                scope: HoldScope::Workspace,
                strength: HoldStrength::Stopped,
                holder: "alice",
                reason: "look",
            })
            .unwrap();
        age_journal(&looping);
        let seen: Vec<String> = looping
            .active_holds(Some("r"))
            .unwrap()
            .into_iter()
            .map(|h| h.id)
            .collect();
        assert_eq!(
            seen,
            vec![h.id.clone()],
            "another connection's hold is seen"
        );
        // a change to the ledger alone (the journal untouched) is seen too
        person
            .conn
            .execute("UPDATE holds SET reason = 'edited'", [])
            .unwrap();
        let now = looping.active_holds(Some("r")).unwrap();
        assert_eq!(now[0].reason, "edited", "the ledger's data_version moved");
        assert!(person.release_hold(&h.id, "alice").unwrap());
        age_journal(&looping);
        assert!(
            looping.active_holds(Some("r")).unwrap().is_empty(),
            "and its release"
        );
        // this connection's own write drops the reused answer
        let own = looping
            .take_hold(&NewHold {
                scope: HoldScope::Run("r".into()),
                strength: HoldStrength::Suspended,
                holder: "loopexec",
                reason: "own",
            })
            .unwrap();
        age_journal(&looping);
        assert_eq!(looping.active_holds(Some("r")).unwrap().len(), 1, "{own:?}");
        assert!(
            looping.active_holds(Some("other")).unwrap().is_empty(),
            "run id is part of the key"
        );
    }

    #[test]
    fn escalation_times_out_only_old_unacknowledged_events_of_its_type() {
        let (_d, s) = store();
        s.run_started("r", "/w", 1, "r.jsonl").unwrap();
        let ctx = serde_json::json!({});
        let rec = super::super::HaltRecord {
            run_id: "r",
            iteration: 1,
            reason: HaltReason::MaxIterationsReached,
            description: "cap",
            context: &ctx,
            attempt_count: None,
            previous_error: None,
            severity: None,
        };
        let old = s.halted(&rec).unwrap();
        let acked = s.halted(&rec).unwrap();
        let how = AckHow {
            method: "terminal".into(),
            key: None,
            os_user: None,
        };
        assert!(s
            .ack_event(&acked, "alice", "resolved", None, &how)
            .unwrap());
        // Nothing is older than the distant past.
        assert!(s
            .escalate("max_iterations_reached", "2000-01-01T00:00:00.000Z")
            .unwrap()
            .is_empty());
        let ids = s
            .escalate("max_iterations_reached", "2999-01-01T00:00:00.000Z")
            .unwrap();
        assert_eq!(ids, vec![old.clone()]);
        let e = s.halt_event(&old).unwrap().unwrap();
        assert_eq!(e.resolution.as_deref(), Some("timeout"));
        assert!(!e.acknowledged);
        // Escalated once only.
        assert!(s
            .escalate("max_iterations_reached", "2999-01-01T00:00:00.000Z")
            .unwrap()
            .is_empty());
        assert!(s
            .escalate("budget_exceeded", "2999-01-01T00:00:00.000Z")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn the_latch_keeps_its_first_time_and_reason() {
        let (_d, s) = store();
        s.run_started("r", "/w", 1, "r.jsonl").unwrap();
        s.latch("r", "first", "h1").unwrap();
        let first = s.latch_of("r").unwrap().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        s.latch("r", "second", "h2").unwrap();
        assert_eq!(s.latch_of("r").unwrap().unwrap(), first);
        s.clear_latch("r").unwrap();
        assert!(s.latch_of("r").unwrap().is_none());
    }

    /// Each of these ledger edits, made with any SQLite client by an agent that can
    /// write the workdir, used to let a run go on: the hold was gone, the halt was
    /// acknowledged as a person's, the destructive action was confirmed, the latch
    /// was clear. Only the control journal's decisions count now.
    #[test]
    fn ledger_writes_alone_let_nothing_go_on() {
        let (d, s) = store();
        s.run_started("r", "/w", 1, "r.jsonl").unwrap();
        let hold = s
            .take_hold(&NewHold {
                scope: HoldScope::Workspace,
                strength: HoldStrength::Stopped,
                holder: "alice",
                reason: "look first",
            })
            .unwrap();
        let ctx = serde_json::json!({});
        let ev = s
            .halted(&super::super::HaltRecord {
                run_id: "r",
                iteration: 1,
                reason: HaltReason::HumanRequired,
                description: "held",
                context: &ctx,
                attempt_count: None,
                previous_error: None,
                severity: None,
            })
            .unwrap();
        s.latch("r", "held", &ev).unwrap();
        s.add_pending(&PendingAction {
            call_waiting: true,
            id: "act-1".into(),
            run_id: "r".into(),
            hold_id: None,
            tool: "Bash".into(),
            target: "rm -rf /".into(),
            description: "delete".into(),
            classification: "destructive".into(),
            requested_at: crate::receipt::now_rfc3339(),
            decision: None,
            decided_by: None,
            decided_at: None,
        })
        .unwrap();
        // A hold that only the ledger has (taken before the journal existed, or by the
        // gate inside the sandbox) still stops.
        let raw = rusqlite::Connection::open(d.path().join("l.sqlite")).unwrap();
        raw.execute(
            "INSERT INTO holds (id, scope, run_id, strength, holder, reason, taken_at)
             VALUES ('hold-ledger', 'workspace', NULL, 'stopped', 'gate', 'x', '2026-01-01T00:00:00Z')",
            [],
        )
        .unwrap();
        // The forgeries.
        raw.execute_batch(
            "UPDATE holds SET released_at = '2026-01-01T00:00:00Z', released_by = 'alice' WHERE id <> 'hold-ledger';
             UPDATE halt_events SET acknowledged = 1, acknowledged_by = 'alice', acknowledged_how = '{\"method\":\"ssh_signature\"}';
             UPDATE runs SET stopped_at = NULL, stopped_reason = NULL, stopped_halt_id = NULL;
             UPDATE pending_actions SET decision = 'confirmed', decided_by = 'alice';
             INSERT INTO acks (run_id, reviewer, iteration, acknowledged_at) VALUES ('r', 'alice', 1, '2030-01-01T00:00:00Z');",
        )
        .unwrap();
        let active: Vec<String> = s
            .active_holds(Some("r"))
            .unwrap()
            .into_iter()
            .map(|h| h.id)
            .collect();
        assert!(
            active.contains(&hold.id),
            "the journaled hold still holds: {active:?}"
        );
        assert!(active.contains(&"hold-ledger".to_string()), "{active:?}");
        let e = s.halt_event(&ev).unwrap().unwrap();
        assert!(!e.acknowledged && e.acknowledged_how.is_none(), "{e:?}");
        assert_eq!(
            s.halt_events(&HaltEventFilter {
                unacked: true,
                run_id: Some("r"),
                min_severity: None
            })
            .unwrap()
            .len(),
            1
        );
        assert_eq!(
            s.latch_of("r").unwrap().unwrap().halt_id.as_deref(),
            Some(ev.as_str())
        );
        assert!(s.pending(true).unwrap().iter().any(|a| a.id == "act-1"));
        assert!(s.acks("r").unwrap().is_empty());
        assert!(s.ack_methods("r").unwrap().is_empty());
        let told = s.journal_disagreements().unwrap();
        for what in [
            format!("hold {}", hold.id),
            format!("halt event {ev}"),
            "run r: the ledger has 1 acknowledgement".to_string(),
            "pending action act-1".to_string(),
            "run r: the ledger's latch is clear".to_string(),
        ] {
            assert!(
                told.iter().any(|t| t.starts_with(&what)),
                "{what} not in {told:#?}"
            );
        }
        assert_eq!(told.len(), 5, "{told:#?}");
        // The person's own decisions go through.
        let how = AckHow {
            method: "terminal".into(),
            key: None,
            os_user: None,
        };
        assert!(s.release_hold(&hold.id, "alice").unwrap());
        assert!(s.ack_event(&ev, "alice", "resolved", None, &how).unwrap());
        assert!(s.decide_pending("act-1", "denied", "alice").unwrap());
        s.clear_latch("r").unwrap();
        let active: Vec<String> = s
            .active_holds(Some("r"))
            .unwrap()
            .into_iter()
            .map(|h| h.id)
            .collect();
        assert_eq!(active, vec!["hold-ledger".to_string()]);
        assert!(s.halt_event(&ev).unwrap().unwrap().acknowledged);
        assert!(s.latch_of("r").unwrap().is_none());
        assert_eq!(
            s.pending(false).unwrap()[0].decision.as_deref(),
            Some("denied")
        );
    }

    #[test]
    fn an_event_is_acknowledged_once_and_strikes_count() {
        let (_d, s) = store();
        s.run_started("r", "/w", 1, "r.jsonl").unwrap();
        let ctx = serde_json::json!({});
        fn rec<'a>(d: &'a str, ctx: &'a serde_json::Value) -> super::super::HaltRecord<'a> {
            super::super::HaltRecord {
                run_id: "r",
                iteration: 1,
                reason: HaltReason::MaxIterationsReached,
                description: d,
                context: ctx,
                attempt_count: None,
                previous_error: None,
                severity: None,
            }
        }
        let first = s.halted(&rec("one", &ctx)).unwrap();
        s.finish_event(&first, None).unwrap();
        let second = s.halted(&rec("two", &ctx)).unwrap();
        s.finish_event(&second, Some("high")).unwrap();
        let e = s.halt_event(&second).unwrap().unwrap();
        assert_eq!(e.attempt_count, Some(2));
        assert_eq!(e.previous_error.as_deref(), Some("one"));
        assert_eq!(e.severity, "high");
        let how = AckHow {
            method: "terminal".into(),
            key: None,
            os_user: None,
        };
        assert!(s
            .ack_event(&first, "alice", "dismissed", None, &how)
            .unwrap());
        assert!(!s.ack_event(&first, "bob", "resolved", None, &how).unwrap());
        // a converged run's event waits for no one
        let green = s
            .halted(&super::super::HaltRecord {
                reason: HaltReason::SuccessConditionMet,
                ..rec("green", &ctx)
            })
            .unwrap();
        s.finish_event(&green, None).unwrap();
        let unacked = s
            .halt_events(&HaltEventFilter {
                unacked: true,
                ..HaltEventFilter::default()
            })
            .unwrap();
        assert_eq!(unacked.len(), 1);
        assert_eq!(unacked[0].id, second);
        let high = s
            .halt_events(&HaltEventFilter {
                min_severity: Some("high"),
                ..HaltEventFilter::default()
            })
            .unwrap();
        assert_eq!(high.len(), 1);
    }
}
