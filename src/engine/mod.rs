//! The loop: observe, record, decide, act — until `decide` halts.
//!
//! Lifecycle (SPEC §1): preflight (workdir, configuration, lock) → `run_started`
//! (resolved policy, git state, t0 measurements) → iteration 0, the baseline check on
//! the untouched tree → iterations 1..N: exec, tree snapshot and guard measurements,
//! check (plus confirmation runs when green) → `halted`.
//!
//! Every observation is appended to the receipt *before* it is acted on, then folded
//! into the in-memory [`Trajectory`] with the same code `explain-halt` uses to rebuild
//! it, and only then is [`decide`] asked what comes next. The loop itself decides
//! nothing: it only does what the decision says (run the exec, run the check, run a
//! confirmation, revert a rejected iteration, start the next one, or stop).
//!
//! Layout: this file holds the lifecycle (`run`, `drive`, `act`); `steps` runs the
//! exec and the check; `ratchet` restores the last accepted snapshot; `recorder`
//! owns the receipt and ledger writes.

pub mod cleanroom;
pub(crate) mod control;
mod judgment;
mod keep;
mod pycache;
mod ratchet;
mod recorder;
mod steps;

pub(crate) use control::covering_in;
pub use recorder::record_preflight;

use crate::config::RunConfig;
use crate::decide::{decide, Next};
use crate::halt::{Halt, HaltReason, Verdict};
use crate::observe::tree::TreeObserver;
use crate::proc;
use crate::receipt::events::{Interrupted, IterationStarted, Resumed, RunStarted};
use crate::receipt::{Event, Writer};
use crate::store::Store;
use crate::trajectory::Trajectory;
use crate::workspace::{Workspace, WorkspaceError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// An earlier run of the workdir as a new run's start reads it: its id, its halt
/// reason (`None`: not halted, or a reason this loopexec does not know) and its
/// receipt's lines.
type PreviousRun = (String, Option<HaltReason>, Vec<crate::receipt::Line>);

/// The signal (if any) loopexec has received; set by the signal handlers.
#[derive(Clone, Default)]
pub struct SignalFlag(pub Arc<AtomicI32>);

impl SignalFlag {
    /// Installs SIGINT/SIGTERM/SIGHUP handlers that record the signal number.
    ///
    /// # Errors
    /// When a handler cannot be installed.
    pub fn install() -> std::io::Result<SignalFlag> {
        let flag = SignalFlag::default();
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            let f = flag.0.clone();
            // SAFETY: the handler only stores into an atomic (async-signal-safe).
            unsafe {
                signal_hook::low_level::register(sig, move || f.store(sig, Ordering::SeqCst))?;
            }
        }
        Ok(flag)
    }
    /// The signal received, if any.
    #[must_use]
    pub fn get(&self) -> Option<i32> {
        match self.0.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }
}

/// What to run.
pub struct RunRequest {
    pub workspace: Workspace,
    pub config: RunConfig,
    pub run_id: String,
    /// Continue this halted run instead of starting a new one.
    pub resume: bool,
    /// Show progress lines on stderr.
    pub progress: bool,
    /// Stream the work step's stdout lines to stderr as they arrive.
    pub show_agent_output: bool,
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub run_id: String,
    pub iteration: u32,
    pub halt: Halt,
    pub explanation: String,
    /// What to do next (refined by the trajectory: a stalled cap is "do not retry").
    pub advice: crate::halt::Advice,
    pub receipt: Option<PathBuf>,
    pub preflight: bool,
}

/// Errors that stop a run before a halt can be computed from observations.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("receipt {path}: {}", recorder::describe_io(source))]
    Receipt {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    ReadReceipt(#[from] crate::receipt::ReadError),
    #[error("run `{0}` already exists; choose another --run-id, or continue it with --resume {0}")]
    RunExists(String),
    #[error("run `{0}` cannot be resumed: {1}")]
    NotResumable(String, String),
    #[error("capture files under {path}: {}", recorder::describe_io(source))]
    Capture {
        path: PathBuf,
        source: std::io::Error,
    },
    /// An agent action of this run still waits for a person's answer.
    #[error("run `{run_id}` waits for a person to answer agent action {action_id}: loopexec confirm {action_id} --by NAME (or deny), then resume")]
    AwaitingAnswer { run_id: String, action_id: String },
    /// A stop hold latched the run; a person must acknowledge halt event `halt_id`.
    #[error("run `{run_id}` is latched since {since} ({reason}); a person must acknowledge halt event {halt_id} first: loopexec ack {halt_id} --by NAME --resolution resolved")]
    Latched {
        run_id: String,
        halt_id: String,
        since: String,
        reason: String,
    },
    /// A stop hold covering the run is still in force at its resume: resuming would
    /// only stop it again before its exec, so the resume is refused and nothing is
    /// recorded (`holds`: each hold described; `ids`: their ids, for the advice).
    #[error("run `{run_id}` is stopped by a hold still in force: {holds}; release it first (loopexec release {ids} --by NAME), then resume")]
    HeldAtResume {
        run_id: String,
        holds: String,
        ids: String,
    },
    /// A must-succeed change of the tree or the clean room failed (a revert's restore,
    /// a snapshot, the clean room's sync): going on would judge the wrong tree.
    #[error("{0}")]
    Tree(String),
    #[error(transparent)]
    CleanRoom(#[from] cleanroom::CleanRoomError),
}

impl EngineError {
    /// The halt reason this preflight error maps to.
    #[must_use]
    pub fn reason(&self) -> HaltReason {
        match self {
            EngineError::Workspace(_) => HaltReason::WorkspaceInvalid,
            // Stored state that fails validation (a ledger that is newer than this
            // loopexec, or not a database; a damaged receipt) is an invariant failure,
            // like damaged configuration.
            EngineError::RunExists(_)
            | EngineError::NotResumable(..)
            | EngineError::Store(_)
            | EngineError::ReadReceipt(_) => HaltReason::InvariantFailed,
            EngineError::Latched { .. } | EngineError::HeldAtResume { .. } => {
                HaltReason::HumanRequired
            }
            EngineError::AwaitingAnswer { .. } => HaltReason::EscalationPending,
            EngineError::Receipt { .. }
            | EngineError::Capture { .. }
            | EngineError::Tree(_)
            | EngineError::CleanRoom(_) => HaltReason::InternalError,
        }
    }
}

struct Loop<'a> {
    ws: &'a Workspace,
    cfg: &'a RunConfig,
    run_id: String,
    receipt: Writer,
    store: Store,
    traj: Trajectory,
    signals: &'a SignalFlag,
    env_stripped: Vec<String>,
    tree: TreeObserver,
    reporter: crate::progress::Reporter,
    meter_state: crate::observe::usage::CarryOver,
    orphans_ended: Vec<String>,
    control: control::Control,
    /// Where checks run; `None` with `--check-in-place`.
    room: Option<cleanroom::CleanRoom>,
    /// The exec's sandbox; `None` when none is in force.
    sandbox: Option<proc::sandbox::SandboxPlan>,
    /// The check's sandbox, set with the clean room (`prepare_room`); `None` when no
    /// sandbox is in force.
    check_sandbox: Option<proc::sandbox::SandboxPlan>,
    /// The checkout confirmation's sandbox: the check's plan with the workdir as its
    /// tree (`None` without a sandbox, or with the check in place).
    checkout_sandbox: Option<proc::sandbox::SandboxPlan>,
    /// What protection the exec has, for `run_started` and every verdict.
    sandbox_record: crate::receipt::events::SandboxRecord,
    /// Where the checks' Python bytecode goes.
    pycache: pycache::Pycache,
}

/// Heartbeat written while a step runs (`.loopexec/runs/<id>/heartbeat`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Heartbeat {
    pub run_id: String,
    /// RFC 3339 time of this write.
    pub time: String,
    /// Unix time of this write, milliseconds.
    pub time_ms: u64,
    pub pid: u32,
    /// Process groups of the running children.
    pub pgids: Vec<i32>,
    pub iteration: u32,
    /// `exec` or `check`.
    pub phase: String,
    /// Bytes of output the running step has printed.
    pub output_bytes: u64,
    /// Unix time (ms) of the step's last output, or of its start.
    pub last_output_ms: u64,
}

/// Runs (or resumes) a loop to its halt.
///
/// # Errors
/// Preflight problems that happen before a receipt exists ([`EngineError`]); every
/// later problem ends in a recorded halt instead.
pub fn run(req: RunRequest, signals: &SignalFlag) -> Result<RunOutcome, EngineError> {
    let ws = &req.workspace;
    ws.ensure()?;
    let _lock = ws.lock(&req.run_id)?;
    let store = Store::open(&ws.ledger_path())?;
    if req.resume {
        control::check_latch(&store, &req.run_id, &req.config)?;
    }
    let receipt_path = ws.receipt_path(&req.run_id);
    let run_dir = ws.run_dir(&req.run_id);
    std::fs::create_dir_all(&run_dir).map_err(|source| EngineError::Capture {
        path: run_dir.clone(),
        source,
    })?;
    remove_stale_spools(&run_dir);
    // Orphaned descendants of a step (setsid, double fork) are re-parented to loopexec
    // and ended with the step (proc::escape).
    // Not in loopexec's own unit tests: there, one test process runs many tests on
    // threads, and a subreaper's escapee sweep (children of this process outside the
    // step's group) would take other tests' children for escapees. The CLI tests run
    // the real binary, where it is always on.
    #[cfg(not(test))]
    proc::escape::become_subreaper();
    let orphans_ended = end_orphans(ws);
    let (sandbox, sandbox_record) = sandbox_for(ws, &req.config);
    let env_stripped = crate::observe::secrets::secret_env_names(&req.config.guards.keep_env);
    let tree = TreeObserver::new(&ws.workdir, &req.run_id, &req.config);

    let (receipt, traj) = if req.resume {
        let (w, lines) = Writer::resume(&receipt_path)?;
        let traj = Trajectory::from_lines(&lines);
        // The workdir lock is ours, so no process is still writing this receipt: a run
        // without a `halted` event died (SIGKILL, power loss) and may be continued. A
        // run that converged has nothing left to do.
        let converged = lines.iter().rev().find_map(|l| match &l.event {
            Event::Halted(h) => Some(h.halt_reason == HaltReason::SuccessConditionMet),
            Event::Resumed(_) => Some(false),
            _ => None,
        });
        if converged == Some(true) {
            return Err(EngineError::NotResumable(
                req.run_id.clone(),
                "it already converged (success_condition_met); start a new run".into(),
            ));
        }
        (w, traj)
    } else {
        if receipt_path.exists() {
            return Err(EngineError::RunExists(req.run_id.clone()));
        }
        let w = Writer::create(&receipt_path).map_err(|source| EngineError::Receipt {
            path: receipt_path.clone(),
            source,
        })?;
        (w, Trajectory::default())
    };
    store.run_started(
        &req.run_id,
        &ws.workdir.display().to_string(),
        std::process::id(),
        &receipt_path.display().to_string(),
    )?;
    let mut lp = Loop {
        ws,
        cfg: &req.config,
        run_id: req.run_id.clone(),
        receipt,
        store,
        traj,
        signals,
        env_stripped,
        tree,
        reporter: crate::progress::Reporter::new(req.progress, req.config.max_iterations)
            .showing_agent_output(req.show_agent_output),
        meter_state: crate::observe::usage::CarryOver::default(),
        orphans_ended,
        control: control::Control::default(),
        room: None,
        sandbox,
        check_sandbox: None,
        checkout_sandbox: None,
        sandbox_record,
        pycache: pycache::Pycache::default(),
    };
    let started = if req.resume { lp.resume() } else { lp.start() };
    let outcome = started.map(|()| lp.drive());
    // the steps' spools are reused across the run (proc::Spools::remove) and go with it
    remove_stale_spools(&run_dir);
    outcome
}

/// The exec's sandbox plan and its record. (A required Landlock that the kernel lacks
/// is refused before the run starts, in `cmd::run`.)
fn sandbox_for(
    ws: &Workspace,
    cfg: &RunConfig,
) -> (
    Option<proc::sandbox::SandboxPlan>,
    crate::receipt::events::SandboxRecord,
) {
    use crate::config::SandboxMode;
    let mode = match cfg.sandbox.mode {
        SandboxMode::Auto => "auto",
        SandboxMode::Landlock => "landlock",
        SandboxMode::Off => "off",
    };
    if cfg.sandbox.mode == SandboxMode::Off {
        return (
            None,
            crate::receipt::events::SandboxRecord {
                mode: mode.into(),
                in_force: "none (--sandbox off)".into(),
                writable: Vec::new(),
                check_writable: Vec::new(),
            },
        );
    }
    match proc::sandbox::kernel_abi() {
        Some(abi) => {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            let plan = proc::sandbox::SandboxPlan::for_workdir(
                &ws.workdir,
                home.as_deref(),
                &cfg.sandbox.writable,
            );
            // A clean room (or a control journal) the exec may write protects nothing:
            // say so in every verdict.
            let room = cleanroom::base_dir(&cleanroom::state_dir(), &ws.workdir);
            let exposed = plan.writable.iter().any(|w| room.starts_with(w));
            let rec = crate::receipt::events::SandboxRecord {
                mode: mode.into(),
                in_force: if exposed {
                    format!(
                        "landlock (kernel ABI {abi}); loopexec's state directory {} (the clean room and the control journal of a person's decisions) lies inside a path the exec may write: set LOOPEXEC_STATE_DIR outside {}",
                        cleanroom::state_dir().display(),
                        plan.writable
                            .iter()
                            .find(|w| room.starts_with(w))
                            .map_or(String::new(), |w| w.display().to_string())
                    )
                } else if abi >= 6 {
                    format!("landlock (kernel ABI {abi}, signals and abstract sockets scoped)")
                } else {
                    format!("landlock (kernel ABI {abi})")
                },
                writable: plan
                    .writable
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect(),
                check_writable: Vec::new(),
            };
            (Some(plan), rec)
        }
        None => (
            None,
            crate::receipt::events::SandboxRecord {
                mode: mode.into(),
                in_force: "none (this kernel has no Landlock)".into(),
                writable: Vec::new(),
                check_writable: Vec::new(),
            },
        ),
    }
}

/// Ends the process groups that earlier runs left behind when their loopexec died
/// (SIGKILL, OOM): the heartbeat names them, the dead pid proves nobody supervises
/// them, and they must still be working in this workdir. We hold the workdir lock, so
/// no live run owns them. Returns what was ended, for `run_started`.
fn end_orphans(ws: &Workspace) -> Vec<String> {
    let mut ended = Vec::new();
    let Ok(rd) = std::fs::read_dir(ws.runs_dir()) else {
        return ended;
    };
    for e in rd.flatten() {
        let hb_path = e.path().join("heartbeat");
        let Some(hb) = std::fs::read(&hb_path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Heartbeat>(&b).ok())
        else {
            continue;
        };
        if proc::supervise::pid_alive(hb.pid) {
            continue;
        }
        for pg in hb.pgids {
            if cleanroom::group_works_for(pg, &ws.workdir)
                && proc::end_group(pg, Duration::from_secs(3))
            {
                ended.push(format!(
                    "process group {pg} of run {} (loopexec pid {} is gone)",
                    hb.run_id, hb.pid
                ));
            }
        }
        let _ = std::fs::remove_file(&hb_path);
    }
    ended
}

fn remove_stale_spools(dir: &Path) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().ends_with(".spool") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// Halts that reject the tree the run left (integrity, and hermeticity: a check that
/// changed what the next check reads, a `.pth` planted in a linked `.venv` by code
/// under test, leaves a start that is green for that reason; second fresh review).
fn rejects_tree(r: HaltReason) -> bool {
    matches!(
        r,
        HaltReason::MetricIntegrityViolation
            | HaltReason::BlockedPathModified
            | HaltReason::RewardHackingDetected
            | HaltReason::HermeticityViolation
    )
}

impl Loop<'_> {
    pub(super) fn start(&mut self) -> Result<(), EngineError> {
        let (mut git, mut baseline, unavailable) = self.tree.baseline();
        if let Some(e) = baseline
            .error
            .as_ref()
            .filter(|e| git.baseline_tree.is_none() && e.contains(crate::observe::store::BAD_NAME))
        {
            return Err(EngineError::Workspace(
                crate::workspace::WorkspaceError::Unsnapshottable(e.clone()),
            ));
        }
        let unjudged = if self.cfg.oracle.accept_rejected_tree {
            None
        } else {
            git.baseline_tree
                .as_deref()
                .and_then(|t| self.unjudged_tree_run(t))
        };
        if let Some((u, earlier)) = &unjudged {
            // The tree's measurements are the earlier t0's; what lies outside the tree
            // (the check's toolchain, the repository's own configuration) is measured
            // now: a change there during the earlier run halted it already, and one
            // since is no agent's
            if let Some(b) = &earlier.baseline {
                baseline = crate::detect::integrity::TreeMeasures {
                    toolchain: std::mem::take(&mut baseline.toolchain),
                    git_internals: std::mem::take(&mut baseline.git_internals),
                    ..b.clone()
                };
            }
            self.tree.adopt_t0_measured(earlier, Some(baseline.clone()));
            git.baseline_tree = earlier.git.baseline_tree.clone();
            git.baseline_snapshot = earlier.git.baseline_snapshot.clone();
            self.say(&format!(
                "t0 is the tree run {} left unjudged ({}): this run is judged from that run's t0, and its iteration 0 is no green (--accept-rejected-tree takes the tree as it is)",
                u.run_id,
                u.halt_reason.map_or("no halt recorded", |r| r.as_str())
            ));
        }
        self.prepare_room(&baseline)?;
        let oracle = self.oracle_list(&baseline);
        let started = RunStarted {
            run_id: self.run_id.clone(),
            loopexec_version: env!("CARGO_PKG_VERSION").to_string(),
            workdir: self.ws.workdir.display().to_string(),
            pid: std::process::id(),
            config: self.cfg.clone(),
            git,
            env_stripped: self.env_stripped.clone(),
            guards_unavailable: unavailable,
            baseline: Some(baseline),
            orphans_ended: std::mem::take(&mut self.orphans_ended),
            check_placement: if self.room.is_some() {
                "clean_room".into()
            } else {
                "in_place".into()
            },
            oracle,
            sandbox: Some(self.sandbox_record.clone()),
            inherits_rejected: None,
            inherits_unjudged: unjudged.map(|(u, _)| u),
        };
        let mut started = started;
        started.inherits_rejected = started
            .git
            .baseline_tree
            .as_deref()
            .and_then(|t| self.rejected_tree_run(t));
        self.record(Event::RunStarted(Box::new(started)))?;
        self.keep_started()?;
        self.record(Event::IterationStarted(IterationStarted { iteration: 0 }))
    }

    /// The newest earlier run of this workdir, when it halted for integrity or
    /// hermeticity and `tree`
    /// (t0 of this run) still holds what it rejected: its last exec's tree exactly, or
    /// that exec's edit of a file the halt was about (`flagged_edits`) beside other
    /// changes. A run that was itself
    /// refused for inheriting a rejection passes that rejection on. Read from the
    /// ledger's runs and the receipts; a receipt that cannot be read answers `None`
    /// (its own `check` reports it).
    /// The run the control journal sealed last is asked too
    /// ([`Self::runs_judged_against`]).
    fn rejected_tree_run(&self, tree: &str) -> Option<crate::receipt::events::InheritedRejection> {
        self.runs_judged_against()
            .into_iter()
            .find_map(|run| self.rejection_by(run, tree))
    }

    /// The rejection `run` (an earlier run: id, halt, receipt lines) passes on to a
    /// run whose t0 is `tree`, if any (see [`Self::rejected_tree_run`]).
    fn rejection_by(
        &self,
        (prev, reason, lines): PreviousRun,
        tree: &str,
    ) -> Option<crate::receipt::events::InheritedRejection> {
        let reason = reason.filter(|r| rejects_tree(*r))?;
        let started = lines.iter().find_map(|l| match &l.event {
            Event::RunStarted(s) => Some(s),
            _ => None,
        })?;
        // The tree the run left: its last exec's, or, when the working tree changed
        // while a check after that exec ran (`changed_during_check`, or the check's
        // own writes in place), the tree after that check.
        let mut last_exec = None;
        for l in lines.iter().rev() {
            match &l.event {
                Event::CheckFinished(c) if last_exec.is_none() => {
                    if let Some(after) = c.tree_after.clone().filter(|_| c.moved_the_tree()) {
                        last_exec = Some((c.iteration, after));
                    }
                }
                Event::ExecFinished(e) => {
                    last_exec = last_exec.or_else(|| Some((e.iteration, e.tree.clone()?)));
                    break;
                }
                _ => {}
            }
        }
        let rejection = match (last_exec, &started.inherits_rejected) {
            (Some((iteration, last_tree)), _) => {
                let halted = lines.iter().rev().find_map(|l| match &l.event {
                    Event::Halted(h) => Some(h),
                    _ => None,
                });
                let why = halted
                    .and_then(|h| h.contributors.first().cloned())
                    .unwrap_or_default();
                let said = halted.map_or_else(String::new, |h| {
                    format!(
                        "{}\n{}\n{}",
                        h.contributors.join("\n"),
                        h.explanation,
                        h.detail
                    )
                });
                let flagged = started
                    .git
                    .baseline_tree
                    .as_deref()
                    .map(|t0| self.flagged_edits(t0, &last_tree, &said))
                    .unwrap_or_default();
                crate::receipt::events::InheritedRejection {
                    run_id: prev,
                    halt_reason: reason,
                    iteration,
                    tree: last_tree,
                    why,
                    kept: Vec::new(),
                    flagged,
                }
            }
            // refused before any exec for inheriting a rejection: the same rejection
            (None, Some(r)) => r.clone(),
            (None, None) => return None,
        };
        if rejection.tree == tree {
            return Some(crate::receipt::events::InheritedRejection {
                kept: Vec::new(),
                ..rejection
            });
        }
        let kept = self.kept_edits(&rejection.flagged, &rejection.tree, tree);
        (!kept.is_empty())
            .then_some(crate::receipt::events::InheritedRejection { kept, ..rejection })
    }

    /// Keeps the receipt's first line (`run_started`, just written) in the control
    /// journal ([`crate::store::journal::Journal::keep_started`]) before any step
    /// runs. A must-succeed write: without it a run whose loopexec dies before its
    /// halt could be erased from the workdir and forgotten.
    fn keep_started(&self) -> Result<(), EngineError> {
        let path = self.receipt.path();
        let bytes = std::fs::read(path).map_err(|source| EngineError::Receipt {
            path: path.to_path_buf(),
            source,
        })?;
        let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
        let (head, lines) = self.receipt.head();
        if lines != 1 || head.as_deref() != Some(blake3::hash(first).to_hex().as_str()) {
            return Err(EngineError::Receipt {
                path: path.to_path_buf(),
                source: std::io::Error::other(
                    "its first line is not the run_started line loopexec wrote",
                ),
            });
        }
        self.store
            .journal()
            .keep_started(&self.run_id, first)
            .map_err(crate::store::StoreError::from)?;
        Ok(())
    }

    /// The newest earlier run of this workdir that the workspace recorded: its id, its
    /// halt (`None`: none recorded, or one this loopexec does not know) and its
    /// receipt's lines. A ledger row whose receipt does not read, or that the ledger
    /// and the control journal do not vouch for ([`crate::cmd::recorded_in`]: the
    /// ledger lies in the workdir, the journal out of the agent's reach), is passed
    /// over: a fake "success" row dated 2099 hid the run before it (a fresh review).
    /// Every row is looked at (twenty fake rows dated 2999 once hid the real run
    /// behind a limit taken before this filter), and the receipt is read where the
    /// workspace keeps it, never where the ledger's `receipt` column says (an agent
    /// pointed its run's row at a missing file: a seventeenth review).
    fn previous_run(&self) -> Option<PreviousRun> {
        let ids = self.store.run_ids().ok()?;
        ids.into_iter()
            .rev()
            .filter(|r| *r != self.run_id)
            .find_map(|id| self.recorded_run(id))
    }

    /// The earlier runs a new run's start is judged against: the newest recorded one
    /// ([`Self::previous_run`]), then the run the control journal sealed last when
    /// that is another: a newer run the journal cannot vouch for (a killed one, or
    /// rows and a receipt an agent wrote) must not hide what the sealed one passes on
    /// (a seventeenth review).
    fn runs_judged_against(&self) -> Vec<PreviousRun> {
        let mut runs: Vec<PreviousRun> = Vec::new();
        for run in [
            self.last_started_run(),
            self.previous_run(),
            self.last_sealed_run(),
        ]
        .into_iter()
        .flatten()
        {
            if !runs.iter().any(|(id, _, _)| *id == run.0) {
                runs.push(run);
            }
        }
        runs
    }

    /// The run the control journal says started last, other than this one
    /// ([`crate::store::journal::Decision::RunStarted`]). When it halted, as
    /// [`Self::recorded_run`] reads it. When it did not (its loopexec died: killed,
    /// or a limit the agent lowered), its receipt counts only when its first line is
    /// the one the journal kept; otherwise — the receipt erased or rewritten in the
    /// workdir — it is read as that kept line alone: a run that recorded no halt,
    /// which may have left any tree (a nineteenth review deleted its receipt, made
    /// loopexec die, and the next start judged the weakened test as t0).
    fn last_started_run(&self) -> Option<PreviousRun> {
        let journal = self.store.journal();
        let state = journal.state().ok()?;
        let id = state.last_started.filter(|id| *id != self.run_id)?;
        if state.seals.contains_key(&id) {
            return self.recorded_run(id);
        }
        if let Some(run) = self.recorded_run(id.clone()) {
            if run.1.is_none() {
                return Some(run);
            }
        }
        let line = journal.started_line(&id, state.started.get(&id)?)?;
        let started = crate::receipt::line_from_bytes(&line)?;
        Some((id, None, vec![started]))
    }

    /// Run `id`'s halt and receipt lines when the workspace recorded it (see
    /// [`Self::previous_run`]). A halted run is vouched for by its seal in the control
    /// journal alone, and its halt is read from its sealed receipt: the ledger lies in
    /// the workdir, and an edit of its row must not make the run disappear. A run
    /// without a halt (killed, or still running) has no seal: the ledger vouches for
    /// it, and the control journal for its first line ([`crate::cmd::unstarted`]).
    fn recorded_run(&self, id: String) -> Option<PreviousRun> {
        let path = self.ws.receipt_path(&id);
        let lines = crate::receipt::read(&path).ok()?;
        let halted = lines.iter().rev().find_map(|l| match &l.event {
            Event::Halted(h) => Some(h.halt_reason),
            _ => None,
        });
        let vouched = match halted {
            Some(_) => crate::cmd::unsealed(&self.store, &id, &path).is_none(),
            None => crate::cmd::recorded_in(&self.store, &id, &path, &lines).is_empty(),
        };
        vouched.then_some((id, halted, lines))
    }

    /// The run the control journal sealed last, other than this one, when its sealed
    /// receipt reads (see [`Self::recorded_run`]).
    fn last_sealed_run(&self) -> Option<PreviousRun> {
        let id = self.store.journal().state().ok()?.last_sealed?;
        (id != self.run_id)
            .then_some(id)
            .and_then(|id| self.recorded_run(id))
    }

    /// The newest earlier run of this workdir when `tree` (this run's t0) is the tree
    /// it left and no verdict judged it: that run halted neither green nor for an
    /// integrity reason (those are [`Self::rejected_tree_run`]'s), its agent changed
    /// the tree since its t0, and the store still
    /// holds that t0. The tree a run left is its last exec's; a run that recorded no
    /// halt (killed) may have left any tree; a run that ran no exec but inherited
    /// itself passes its inheritance on. Returns the inheritance and that run's
    /// `run_started` (its t0, transitively an earlier one's when it inherited too).
    /// As for a rejection, the run the control journal sealed last is asked too
    /// ([`Self::runs_judged_against`]).
    fn unjudged_tree_run(
        &self,
        tree: &str,
    ) -> Option<(crate::receipt::events::InheritedUnjudged, RunStarted)> {
        self.runs_judged_against()
            .into_iter()
            .find_map(|run| self.unjudged_by(run, tree))
    }

    /// What `run` (an earlier run) left unjudged for a run whose t0 is `tree`, if
    /// anything (see [`Self::unjudged_tree_run`]).
    fn unjudged_by(
        &self,
        (prev, reason, lines): PreviousRun,
        tree: &str,
    ) -> Option<(crate::receipt::events::InheritedUnjudged, RunStarted)> {
        if reason.is_some_and(|r| r == HaltReason::SuccessConditionMet || rejects_tree(r)) {
            return None;
        }
        let started = lines.iter().find_map(|l| match &l.event {
            Event::RunStarted(s) => Some((**s).clone()),
            _ => None,
        })?;
        // A changed check does not start afresh: the agent can write the config file
        // that names it (loop.toml in the tree, or a `--config` file under /tmp, two
        // reviews), and judging the tree from the earlier t0 costs an honest start
        // only its iteration 0's green (`--accept-rejected-tree` takes the tree as it
        // is).
        let died = !lines.iter().any(|l| matches!(l.event, Event::Halted(_)));
        // the tree the last exec left; `Some(None)`: it was not recorded (a name no
        // snapshot holds halted the run), so it may be any tree, as a run that died
        // may have left (a nineteenth review). So may a run whose working tree moved
        // while a check after its last exec ran: no exec's guards measured that
        // change, and what came after it (the ratchet's revert of a regression at
        // the cap) may have left yet another tree.
        let last = lines.iter().rev().find_map(|l| match &l.event {
            Event::ExecFinished(e) => Some(e.tree.clone()),
            // in place, the check's own writes too (a file it created, read by the
            // next run's runner)
            Event::CheckFinished(c) if c.moved_the_tree() => Some(None),
            _ => None,
        });
        let unrecorded = matches!(last, Some(None));
        let left = match (last.flatten(), &started.inherits_unjudged) {
            _ if died || unrecorded => tree.to_string(),
            (Some(t), _) => t,
            // no exec ran (halted at its baseline check): the same inheritance
            (None, Some(u)) if u.tree == tree => return Some((u.clone(), started)),
            (None, _) => return None,
        };
        let t0 = started.git.baseline_tree.clone()?;
        if left != tree || t0 == tree {
            return None;
        }
        self.tree.store()?.entries_shared(&t0).ok()?;
        Some((
            crate::receipt::events::InheritedUnjudged {
                run_id: prev,
                halt_reason: reason,
                tree: tree.to_string(),
                judged_from: t0,
            },
            started,
        ))
    }

    /// The files the rejected exec changed from `rejected_t0` to `rejected` that the
    /// halt's text (`said`) names as a path, and those an integrity guard protects
    /// ([`crate::observe::tree::TreeObserver::protected`]) whether named or not.
    fn flagged_edits(&self, rejected_t0: &str, rejected: &str, said: &str) -> Vec<String> {
        let w = self.tree.check_writes(rejected_t0, rejected);
        let changed: Vec<String> = w.changed.into_iter().chain(w.created).collect();
        // the files the halt names, and every protected file it changed whether named
        // or not: a halt that named only a decoy (`loop.toml`) once let a weakened
        // test through once the decoy was removed (a nineteenth review)
        changed
            .into_iter()
            .filter(|p| crate::detect::integrity::names_path(said, p) || self.tree.protected(p))
            .collect()
    }

    /// Of `flagged`, the files `tree` holds exactly as the rejected tree does (a
    /// deleted test still deleted counts).
    fn kept_edits(&self, flagged: &[String], rejected: &str, tree: &str) -> Vec<String> {
        let Some(store) = self.tree.store() else {
            return Vec::new();
        };
        let (Ok(after), Ok(now)) = (store.entries_shared(rejected), store.entries_shared(tree))
        else {
            return Vec::new();
        };
        flagged
            .iter()
            .filter(|p| now.get(*p) == after.get(*p))
            .cloned()
            .collect()
    }

    pub(super) fn resume(&mut self) -> Result<(), EngineError> {
        let last_halt = self.traj.last().map_or(0, |i| i.iteration);
        let acks = self.store.acks(&self.run_id)?;
        // Continue from the last accepted state: restore it when the last iteration
        // was rejected.
        // An iteration whose check a signal stopped was not judged: it is checked
        // again on the tree its exec left, which stays (a new user's fix was put back
        // to t0's and re-checked there). A confirmation stopped so goes on confirming
        // that green (before, the resumed run started the next iteration and paid for
        // another agent turn on a tree already green).
        let interrupted = self.traj.last().is_some_and(|l| l.check_interrupted);
        let from = if interrupted {
            last_halt
        } else {
            let views = self.traj.attempt_views(self.cfg.success_exit_code);
            crate::detect::progress::last_accepted(&views).unwrap_or(0)
        };
        self.tree.adopt_baseline(&self.traj);
        let baseline = self
            .traj
            .started
            .as_ref()
            .and_then(|s| s.baseline.clone())
            .unwrap_or_default();
        self.prepare_room(&baseline)?;
        if from != last_halt {
            if let Some(snap) = self.tree.snapshot_of(from, &self.traj) {
                self.tree.restore(&snap, &self.traj, from).map_err(|e| {
                    EngineError::Tree(format!(
                        "restoring the last accepted iteration {from} before resuming failed: {e}"
                    ))
                })?;
            }
        }
        let now = self
            .tree
            .refresh(&format!("{last_halt}-resumed"))
            .map_err(|e| EngineError::Tree(format!("snapshot before resuming failed: {e}")))?;
        // The re-check judges the tree its exec left (t0 for a baseline) and nothing
        // else: no exec's guards measured any other tree. One the check's code rewrote
        // while it ran (then hung for a person's Ctrl-C), or that changed since, goes
        // to the next exec instead, whose guards measure it against t0 (a review's
        // resumed re-check passed on a test rewritten during the interrupted check).
        let left = match self.traj.last() {
            Some(l) if l.iteration > 0 => l.exec.as_ref().and_then(|e| e.tree.clone()),
            _ => self
                .traj
                .started
                .as_ref()
                .and_then(|s| s.git.baseline_tree.clone()),
        };
        let interrupted = interrupted && left.as_deref() == Some(now.as_str());
        let acknowledged_by =
            crate::control::counted_acks(&self.store, &self.run_id, self.cfg, &acks);
        let resume_reason = self.resume_marker();
        // The caps this segment decides with go into the receipt when they are not the
        // ones re-derivation would read there (`run --resume ID --max-iterations N`,
        // `--budget-usd X`, `--budget-tokens N`, `--max-duration D`).
        let recorded = self.traj.config();
        let changed = |f: &dyn Fn(&RunConfig) -> bool| recorded.is_some_and(|c| !f(c));
        let cfg = self.cfg;
        let max_iterations =
            changed(&|c| c.max_iterations == cfg.max_iterations).then_some(cfg.max_iterations);
        let budget_usd = changed(&|c| c.budget.usd == cfg.budget.usd)
            .then_some(cfg.budget.usd)
            .flatten();
        let budget_tokens = changed(&|c| c.budget.tokens == cfg.budget.tokens)
            .then_some(cfg.budget.tokens)
            .flatten();
        let max_duration_ms = changed(&|c| c.budget.max_duration == cfg.budget.max_duration)
            .then_some(cfg.budget.max_duration)
            .flatten()
            .map(|d| u64::try_from(d.0.as_millis()).unwrap_or(u64::MAX));
        self.record(Event::Resumed(Resumed {
            pid: std::process::id(),
            acknowledged_by,
            from_iteration: last_halt,
            resume_reason,
            max_iterations,
            budget_usd,
            budget_tokens,
            max_duration_ms,
        }))?;
        // No iteration past a cap starts: `decide` halts the resumed run at once
        // (`max_iterations_reached` naming `--max-iterations`, or `budget_exceeded`),
        // and the refused resume uses no iteration.
        if crate::decide::halts_at_resume(&self.traj, self.cfg).is_some() {
            return Ok(());
        }
        // An iteration whose check a signal to loopexec stopped is checked again
        // rather than skipped: an interrupted baseline is measured before any exec.
        if interrupted {
            return Ok(());
        }
        self.record(Event::IterationStarted(IterationStarted {
            iteration: last_halt + 1,
        }))
    }

    /// Sets up the clean room (unless the check runs in place), linking the dependency
    /// directories that t0's snapshot left out.
    fn prepare_room(
        &mut self,
        m: &crate::detect::integrity::TreeMeasures,
    ) -> Result<(), EngineError> {
        if self.cfg.clean_room.in_place {
            self.set_check_sandbox(&self.ws.workdir.clone(), &[]);
            // Walked after every check, as in the clean room (see there): a run that
            // ends after a red check leaves the tree that walk saw.
            self.tree.watch_during_checks(None);
            return Ok(());
        }
        let deps: Vec<String> = m
            .excluded
            .iter()
            .filter_map(|e| e.strip_suffix(" (dependencies)"))
            .map(str::to_string)
            .collect();
        let excludes = crate::observe::store::Excludes::new(&self.cfg.clean_room.exclude)
            .map_err(|e| EngineError::Tree(format!("[clean_room] exclude: {e}")))?;
        let mut room = cleanroom::CleanRoom::prepare(
            &cleanroom::state_dir(),
            &self.ws.workdir,
            excludes,
            &deps,
        )?;
        // Caches outside the tree the check reads and the exec may write are digested
        // like the dependency directories. Without a sandbox the exec may write every
        // one: the site directories of a system interpreter (tens of thousands of
        // files) are then left to the toolchain digests (§3.12), the caches are not.
        let writable = |d: &Path| match &self.sandbox {
            Some(plan) => plan.writable.iter().any(|w| d.starts_with(w)),
            None => !self.tree.site_dirs().iter().any(|s| s == d),
        };
        let check = self.cfg.check.clone().unwrap_or_default();
        let outside: Vec<PathBuf> =
            cleanroom::external_caches(&check, &self.ws.workdir, self.tree.site_dirs())
                .into_iter()
                .filter(|d| !d.starts_with(&self.ws.workdir) && writable(d))
                .collect();
        room.watch_external(&outside);
        if self.cfg.clean_room.dependencies == crate::config::DependencyPolicy::Agent {
            room.rebase_dependencies();
        }
        // An exec sandboxed away from the room cannot write it: between checks it stays
        // as scanned unless its watch says otherwise (TreeScanner::watch_between_scans).
        // Not when the room lies inside a path the exec may write (a state directory
        // under /tmp): a write through a memory mapping would go unseen.
        let sealed = self
            .sandbox
            .as_ref()
            .is_some_and(|plan| !plan.writable.iter().any(|w| room.root().starts_with(w)));
        room.watch_between_checks(sealed);
        let mut linked: Vec<PathBuf> = deps.iter().map(|d| self.ws.workdir.join(d)).collect();
        linked.extend(room.check_dirs()?);
        self.set_check_sandbox(room.root(), &linked);
        self.checkout_sandbox = self.sandbox.as_ref().map(|_| {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            proc::sandbox::SandboxPlan::for_check(
                &self.ws.workdir,
                &room.checkout_dirs().unwrap_or_default(),
                home.as_deref(),
                &self.cfg.sandbox.writable,
                |k| std::env::var(k).ok(),
            )
        });
        self.room = Some(room);
        // The agent's tree is walked after every check, red too
        // (TreeObserver::after_check): a quiet inotify watch cannot vouch for it, as a
        // write through a shared memory mapping raises no event, and the tree after
        // the last check is the one a run leaves to the next (a review rewrote a test
        // that way in a 1,100-file tree, the run ended at its cap, and the next run
        // started green from it).
        self.tree.watch_during_checks(None);
        Ok(())
    }

    /// The check's sandbox (where the exec has one): `root` is where the check runs
    /// (the clean room's tree, or the workdir in place), `linked` the dependency
    /// directories the room links to and the room's other directories the check
    /// writes ([`cleanroom::CleanRoom::check_dirs`]). Recorded in `run_started.sandbox`.
    fn set_check_sandbox(&mut self, root: &Path, linked: &[PathBuf]) {
        if self.sandbox.is_none() {
            return;
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let plan = proc::sandbox::SandboxPlan::for_check(
            root,
            linked,
            home.as_deref(),
            &self.cfg.sandbox.writable,
            |k| std::env::var(k).ok(),
        );
        self.sandbox_record.check_writable = plan
            .writable
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        self.check_sandbox = Some(plan);
    }

    /// The frozen oracle of t0, for `run_started`.
    fn oracle_list(&self, m: &crate::detect::integrity::TreeMeasures) -> Vec<String> {
        let mut v: Vec<String> = m.frozen.keys().chain(m.manifest.keys()).cloned().collect();
        v.sort();
        v.dedup();
        v
    }

    pub(super) fn current_iteration(&self) -> u32 {
        self.traj.last().map_or(0, |i| i.iteration)
    }

    pub(super) fn say(&self, what: &str) {
        self.reporter
            .step(self.current_iteration(), what, &self.traj);
    }

    /// Asks `decide` and acts until it halts.
    pub(super) fn drive(mut self) -> RunOutcome {
        loop {
            if let Some(sig) = self.signals.get() {
                if !self
                    .traj
                    .interrupts
                    .iter()
                    .any(|i| i.iteration == self.current_iteration())
                {
                    let ev = Event::Interrupted(Interrupted {
                        iteration: self.current_iteration(),
                        signal: sig,
                        phase: "between".into(),
                    });
                    if let Err(e) = self.record(ev) {
                        return self.internal(&e.to_string());
                    }
                }
            }
            let decision = decide(&self.traj, self.cfg);
            let step = match (decision.verdict, decision.next) {
                (Verdict::Halt(h), _) => {
                    if let Err(e) = self.leave_accepted_tree(&h) {
                        return self.internal(&e.to_string());
                    }
                    return self.finish(h);
                }
                (Verdict::Continue, Some(next)) => self.act(next),
                (Verdict::Continue, None) => Ok(()),
            };
            if let Err(e) = step {
                return self.internal(&e.to_string());
            }
        }
    }

    pub(super) fn act(&mut self, next: Next) -> Result<(), EngineError> {
        match next {
            Next::Exec => {
                if self.rate_gate()? || self.hold_gate("exec")? {
                    return Ok(());
                }
                self.exec()?;
                self.after_step("exec")?;
                self.draw_rate();
                self.fold_actions()
            }
            Next::Check => {
                if self.hold_gate("check")? {
                    return Ok(());
                }
                self.check(0, false)?;
                if self.current_iteration() == 0 {
                    let warnings = self
                        .traj
                        .last()
                        .and_then(|it| it.main_check())
                        .map(|c| {
                            crate::detect::objective::unmatched_at_baseline(self.cfg, &c.parsed)
                        })
                        .unwrap_or_default();
                    // a warning, not progress: printed under --quiet too
                    for w in warnings {
                        eprintln!("loopexec: {w}");
                    }
                }
                self.after_step("check")
            }
            Next::Judge => self.judge(),
            Next::ObserveTasks => self.observe_tasks(),
            Next::BuildContext => self.build_context(),
            Next::Confirm => {
                if self.hold_gate("check")? {
                    return Ok(());
                }
                let n = self.traj.last().map_or(0, |i| i.checks.len());
                self.check(u32::try_from(n).unwrap_or(u32::MAX), false)?;
                self.after_step("check")
            }
            Next::ConfirmInCheckout => {
                if self.hold_gate("check")? {
                    return Ok(());
                }
                let n = self.traj.last().map_or(0, |i| i.checks.len());
                self.check(u32::try_from(n).unwrap_or(u32::MAX), true)?;
                self.after_step("check")
            }
            Next::NextIteration { revert_to } => {
                let it = self.current_iteration();
                self.ledger_iteration(it);
                if let Some(to) = revert_to {
                    self.revert(it, to)?;
                }
                self.record(Event::IterationStarted(IterationStarted {
                    iteration: it + 1,
                }))
            }
        }
    }

    pub(super) fn internal(mut self, message: &str) -> RunOutcome {
        let h = Halt::new(
            HaltReason::InternalError,
            vec![format!("loopexec failed: {message}")],
        );
        self.finish(h)
    }
}
