//! The typed events of a receipt (schema 1). Fields are only ever added; a reader of
//! schema 1 ignores fields it does not know.

use crate::check::model::ParsedRun;
use crate::config::RunConfig;
use crate::halt::HaltReason;
use crate::proc::StepResult;
use serde::{Deserialize, Serialize};

/// One receipt event; the wire tag is `event` (`run_started`, `iteration_started`, …).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    RunStarted(Box<RunStarted>),
    IterationStarted(IterationStarted),
    ExecFinished(Box<ExecFinished>),
    CheckFinished(Box<CheckFinished>),
    Reverted(Reverted),
    Resumed(Resumed),
    Interrupted(Interrupted),
    Halted(Box<Halted>),
    Held(Held),
    Unheld(Unheld),
    Actions(Box<crate::gate::ActionsSeen>),
    RateLimited(RateLimited),
    JudgeFinished(Box<super::judgment::JudgeFinished>),
    TasksObserved(Box<super::judgment::TasksObserved>),
    ContextBuilt(Box<super::judgment::ContextBuilt>),
}

/// loopexec received SIGINT or SIGTERM (during a step, the step's `stopped` says so too).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Interrupted {
    pub iteration: u32,
    pub signal: i32,
    /// `exec`, `check` or `between` steps.
    pub phase: String,
}

/// Git facts at run start (absent when the workdir is not a git repository).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GitState {
    /// False when the workdir is not inside a git work tree: the git-based guards
    /// cannot run and say so.
    pub available: bool,
    pub head: Option<String>,
    pub dirty: Option<bool>,
    /// The t0 snapshot (commit object under `refs/loopexec/<run>/0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_snapshot: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_tree: Option<String>,
    /// Why git facts are missing, when they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// First event of a run.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunStarted {
    pub run_id: String,
    pub loopexec_version: String,
    pub workdir: String,
    pub pid: u32,
    pub config: RunConfig,
    pub git: GitState,
    /// Names (never values) of environment variables removed from the check's env.
    #[serde(default)]
    pub env_stripped: Vec<String>,
    /// Guards that cannot run here and why (e.g. no git).
    #[serde(default)]
    pub guards_unavailable: Vec<String>,
    /// Baseline measurements the integrity guards compare against (t0); `None` in
    /// receipts written before they were recorded. A value of the wrong shape is an
    /// error when the receipt is read, never "no measurements".
    #[serde(default)]
    pub baseline: Option<crate::detect::integrity::TreeMeasures>,
    /// Process groups of earlier runs whose loopexec died (SIGKILL) and that were still
    /// working in this workdir; they were ended before this run started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub orphans_ended: Vec<String>,
    /// Where checks run: `clean_room` or `in_place`.
    #[serde(default)]
    pub check_placement: String,
    /// The frozen oracle at t0: test files and runner configuration, root-relative.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub oracle: Vec<String>,
    /// The exec's sandbox (`None` in receipts older than the sandbox).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxRecord>,
    /// The working tree at t0 is the tree an earlier run of this workdir rejected for
    /// integrity (its last exec's tree): starting from it would freeze the cheat into
    /// t0. `decide` halts on it unless `[oracle] accept_rejected_tree`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inherits_rejected: Option<InheritedRejection>,
    /// The working tree at t0 is the tree an earlier run of this workdir left without
    /// a verdict on it (it halted red, or stopped, after its agent changed the tree):
    /// no scan ever read that agent's work (whatever check this run names). This run is
    /// judged from that run's t0 instead (`git.baseline_tree` and `baseline` are that
    /// run's, but for the toolchain and the repository's configuration, measured now),
    /// and its iteration
    /// 0 is no green: a cheat planted by a red run and armed later would otherwise make
    /// the next run green on a tree nobody judged (a third fresh review's dormant
    /// cheat). `[oracle] accept_rejected_tree` (`--accept-rejected-tree`) takes the
    /// tree as it is instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inherits_unjudged: Option<InheritedUnjudged>,
}

/// An earlier run whose unjudged final tree this run starts from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InheritedUnjudged {
    pub run_id: String,
    /// Its halt (a reason other than success or an integrity rejection); `None` for a
    /// run that recorded no halt (it died).
    pub halt_reason: Option<HaltReason>,
    /// The tree it left: this run's working tree at t0.
    pub tree: String,
    /// The tree this run is judged from: that run's own t0.
    pub judged_from: String,
}

/// An earlier run whose rejected tree this run starts from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InheritedRejection {
    pub run_id: String,
    /// Its halt (an integrity reason).
    pub halt_reason: HaltReason,
    /// The iteration whose tree it rejected.
    pub iteration: u32,
    /// The rejected tree's id: this run's `git.baseline_tree`, unless `kept` names
    /// what this run's t0 keeps of it.
    pub tree: String,
    /// The halt's first contributor (what was wrong with the tree).
    #[serde(default)]
    pub why: String,
    /// Guarded files (tests, runner configuration, the oracle, sources) the rejected
    /// exec changed that this run's t0 holds exactly as it left them; empty when t0 is
    /// the rejected tree itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<String>,
    /// The files of the rejected edit that the halt was about: those the rejected exec
    /// changed (from its run's t0) that the halt names, else those of them an integrity
    /// guard protects (tests, runner configuration, the frozen oracle).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flagged: Vec<String>,
}

/// What sandbox the exec ran under.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SandboxRecord {
    /// The mode asked for: `auto`, `landlock`, `off`.
    pub mode: String,
    /// What was in force: `landlock (kernel ABI N)`, or `none (why)`.
    pub in_force: String,
    /// Paths the exec could write.
    #[serde(default)]
    pub writable: Vec<String>,
    /// Paths the check could write (`proc::sandbox::SandboxPlan::for_check`); empty
    /// when no sandbox was in force.
    #[serde(default)]
    pub check_writable: Vec<String>,
}

/// Start of iteration N (0 is the baseline check).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IterationStarted {
    pub iteration: u32,
}

/// The work step of an iteration ended.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExecFinished {
    pub iteration: u32,
    pub step: StepResult,
    /// The tree after the exec (a git tree id), when git is available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<String>,
    /// The snapshot commit under `refs/loopexec/<run>/<iteration>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    /// Agent usage observed in this step (tokens, cost, model identity); `None` when
    /// no exec ran. A value of the wrong shape is an error when the receipt is read,
    /// never "no usage".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::observe::usage::IterationUsage>,
    /// Guard measurements of the tree after the exec (paths changed since t0, …); a
    /// value of the wrong shape is an error when the receipt is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guards: Option<crate::detect::integrity::TreeMeasures>,
    /// Set when an external watchdog ended this step (`loopexec watch --kill`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watchdog: Option<serde_json::Value>,
}

/// One check run of an iteration. `attempt` 0 is the main run; 1.. are confirmation
/// runs on the same tree.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckFinished {
    pub iteration: u32,
    #[serde(default)]
    pub attempt: u32,
    pub step: StepResult,
    pub parsed: ParsedRun,
    /// Tree before and after the check (git tree ids), when git is available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_after: Option<String>,
    /// Files that existed before the check and that it modified or deleted
    /// (hermeticity), relative to the repository root.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub check_wrote: Vec<String>,
    /// Files the check created (build outputs, lockfiles, reports): tolerated, recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub check_created: Vec<String>,
    /// Tamper-rule hits in code the check created in the tree it judged, read against
    /// what the baseline check created at the same paths
    /// ([`crate::observe::tree::TreeObserver::created_code`]): code under test that
    /// writes a module and loads it in the same check (hermeticity).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub check_created_code: Vec<crate::observe::tamper::TamperHit>,
    /// What was kept of the check's streams for `replay --offline --reparse` (bytes
    /// and blake3 before compression); `null` when nothing was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<crate::receipt::replay::KeptOutput>,
    /// Report files removed before the run and found after it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reports: Vec<String>,
    /// Set when an external watchdog ended this check run (`loopexec watch --kill`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watchdog: Option<serde_json::Value>,
    /// Where the check ran: the clean room's record, `None` when it ran in place
    /// (`--check-in-place`, or a receipt older than the clean room).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_room: Option<CleanRoomRecord>,
    /// Files of the working tree that changed while the check ran in the clean room:
    /// written by a process outside the check (tampering).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_during_check: Vec<String>,
    /// Files of the dependency directories that differ from t0 before this check
    /// (`[clean_room] dependencies = "frozen"`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies_changed: Vec<String>,
    /// The verdict fingerprint of this run ([`crate::receipt::fingerprint`]); absent in
    /// receipts written before it was recorded (readers compute it from `parsed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// Whether loopexec's pytest witness was written (`None`: none was injected;
    /// [`crate::check::witness`]). A later run of a check whose t0 run wrote one must
    /// write one too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pytest_witness: Option<bool>,
    /// Whether loopexec's unittest witness recorded a run (`None`: none was injected;
    /// [`crate::check::witness::unittest`]). A later run of a check whose t0 run wrote
    /// one must write one too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unittest_witness: Option<bool>,
    /// Set for the checkout confirmation: the run of a green check in the working tree
    /// itself, after its clean-room runs agreed (SPEC §3.9). It is not one of the
    /// iteration's same-tree confirmations (the flakiness bound does not count it);
    /// `decide` compares it with the clean room's main run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_checkout: Option<InCheckout>,
    /// Test files the agent added since t0 that a check in place had pytest skip
    /// (relative paths; `--check-in-place` under `[oracle] new_tests = "exclude"`): the
    /// witness plugin ignores them at collection, and a skip that did not hold marks
    /// the parse incomplete ([`crate::check::witness::judge_deselection`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deselected: Vec<String>,
}

impl CheckFinished {
    /// True when the working tree after this check run is not the one it started
    /// from: something outside the check wrote it while it ran
    /// (`changed_during_check`), or the check ran in place and wrote it itself. No
    /// exec's guards measured such a tree, so a run that ends after this check is
    /// taken to have left any tree (and a rejection at it passes on the tree after).
    #[must_use]
    pub fn moved_the_tree(&self) -> bool {
        !self.changed_during_check.is_empty()
            || (self.clean_room.is_none()
                && self.tree_after.is_some()
                && self.tree_after != self.tree_before)
    }
}

/// Where a checkout confirmation ran, and the clean room it is compared with: a test
/// id holding the room's path (a jest report's absolute file names) is the same test
/// as the id holding the workdir's in its place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InCheckout {
    /// The workdir the check ran in (absolute).
    pub workdir: String,
    /// The clean room's tree directory (absolute) the main run ran in.
    pub room: String,
}

/// The clean room of one check run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CleanRoomRecord {
    /// The tree the check was judged on (the snapshot, with frozen files restored
    /// from t0 under `on_edit = "restore"`).
    pub tree: String,
    /// The clean room's tree after the check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Frozen files restored from t0 for this run (`on_edit = "restore"`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restored: Vec<String>,
    /// Files the sync wrote and removed to make the clean room equal to `tree`.
    pub synced_written: usize,
    pub synced_removed: usize,
    /// Test files the agent added since t0, left out of `tree` (`[oracle] new_tests =
    /// "exclude"`, [`crate::observe::oracle_scope`]), and `path:first-last` for the new
    /// tests of a Rust source's test modules, blanked out of its copy in `tree`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// Tests the check named that t0 does not define, under `new_tests = "exclude"`
    /// (a test a macro made from its arguments; [`crate::observe::unfrozen`]): they ran
    /// beside the frozen oracle, so the run's verdict is not the oracle's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unfrozen_tests: Vec<String>,
    /// Files and directories of `tree` the check modified, re-attributed, moved or
    /// deleted while it ran, even when restored before it ended: path → what happened
    /// ([`crate::observe::watch`]).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub touched: std::collections::BTreeMap<String, String>,
    /// Why the clean room could not be watched while the check ran (a green then fails
    /// closed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch_error: Option<String>,
}

/// The ratchet restored an accepted tree after a rejected iteration.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Reverted {
    pub iteration: u32,
    /// The accepted iteration whose snapshot was restored.
    pub to_iteration: u32,
    pub snapshot: String,
    pub lost_tests: Vec<String>,
}

/// A halted run was continued (`run --resume`).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Resumed {
    pub pid: u32,
    /// Acknowledgements recorded in the ledger since the halt.
    #[serde(default)]
    pub acknowledged_by: Vec<String>,
    /// The iteration whose accepted state the run continues from.
    pub from_iteration: u32,
    /// Why the run had stopped and what was released since (the marker the resumed
    /// agent gets as `LOOPEXEC_RESUME_REASON`), when a hold had stopped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_reason: Option<String>,
    /// The iteration cap from here on, when the person resuming set one
    /// (`run --resume ID --max-iterations N`); the recorded policy's cap otherwise.
    /// `explain-halt` and `replay` fold it into the policy they decide with (SPEC §1.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
    /// The run-total USD cap from here on, when the person resuming set one
    /// (`run --resume ID --budget-usd X`); folded like `max_iterations`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_usd: Option<f64>,
    /// The run-total token cap from here on (`--budget-tokens N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u64>,
    /// The run's wall-clock cap from here on, in milliseconds (`--max-duration D`).
    /// The run's wall clock counts the time loopexec ran it, not the time between
    /// a halt and its resume (SPEC §1.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_ms: Option<u64>,
}

/// The last event of a run (or of a resumed segment).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Halted {
    pub iteration: u32,
    pub halt_reason: HaltReason,
    pub exit_code: u8,
    pub class: String,
    pub contributors: Vec<String>,
    pub explanation: String,
    #[serde(default)]
    pub detail: serde_json::Value,
    /// True when the halt came from configuration or workspace checks before any step.
    #[serde(default)]
    pub preflight: bool,
}

/// The loop saw holds covering the run (SIGNAL-free human control; SPEC §Holds).
/// Written before the loop acts on them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Held {
    pub iteration: u32,
    /// Where: `before_exec`, `before_check` (a step boundary), `exec` or `check` (the
    /// step was running and its process group was ended).
    pub phase: String,
    /// `suspended` (parked) or `stopped` (halts `human_required`).
    pub verdict: String,
    /// Every hold of the winning strength.
    pub holds: Vec<crate::detect::holds::HoldView>,
    /// A stop latches the run unless it landed while the run was parked by a suspension.
    #[serde(default)]
    pub latched: bool,
}

/// A suspension lifted: the parked loop goes on by itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Unheld {
    pub iteration: u32,
    /// The holds that had parked the run (now released).
    pub released: Vec<crate::detect::holds::HoldView>,
    /// How long the loop was parked, in milliseconds.
    pub parked_ms: u64,
}

/// A workspace rate-limit bucket was empty before an exec (SPEC §10, rate limits).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RateLimited {
    pub iteration: u32,
    /// `usd` or `tokens`.
    pub kind: String,
    /// The configured rate (and bucket capacity), per hour.
    pub per_hour: f64,
    /// The bucket's level when read (≤ 0).
    pub level: f64,
    /// Milliseconds until it holds more than nothing again.
    pub refill_ms: u64,
    /// `suspend` (the loop parks until then) or `halt` (`budget_exceeded`).
    pub mode: String,
}
