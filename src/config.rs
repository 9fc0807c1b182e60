//! Run configuration: `loop.toml` merged with command-line flags, then validated.
//!
//! Parse, then resolve: the CLI layer turns flags into a [`Overrides`], this module
//! reads the file (if any) into [`FileConfig`], applies the overrides (flags win) and
//! validates the result into a [`RunConfig`] — the one policy value every detector
//! reads. The resolved `RunConfig` is written into the receipt's `run_started`
//! event, so `explain-halt` re-derives verdicts under exactly the policy the run had.
//!
//! Errors are [`ConfigError`]s naming the field (or file and line) and the fix; the
//! run maps them to `invariant_failed` (exit 20).

use crate::detect::progress::ProgressPolicy;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A configuration problem. Each names the field it concerns.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path} is not valid: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("invalid value for `{field}`: {message}")]
    Invalid { field: String, message: String },
}

impl ConfigError {
    fn invalid(field: &str, message: impl Into<String>) -> Self {
        ConfigError::Invalid {
            field: field.to_string(),
            message: message.into(),
        }
    }
    /// The field or file the error concerns (for `errors[]`).
    #[must_use]
    pub fn hint(&self) -> String {
        match self {
            ConfigError::Read { .. } => "check the path given to --config".into(),
            ConfigError::Parse { path, .. } => {
                format!(
                    "fix {} (`loopexec init` in an empty directory writes a commented example)",
                    path.display()
                )
            }
            ConfigError::Invalid { field, .. } => match flag_of(field) {
                Some(flag) => {
                    format!("give `{flag}` a valid value (or `{field}` in loop.toml, where it is set there)")
                }
                None => format!("set `{field}` to a valid value in loop.toml"),
            },
        }
    }
}

/// The `run` flag that sets a configuration field, for the fields that have one.
#[must_use]
pub fn flag_of(field: &str) -> Option<&'static str> {
    Some(match field {
        "budget.usd" => "--budget-usd",
        "budget.tokens" => "--budget-tokens",
        "budget.max_duration" => "--max-duration",
        "max_iterations" => "--max-iterations",
        "confirm_runs" => "--confirm-runs",
        "judge.command" => "--judge",
        "judge.every" => "--judge-every",
        "task.objective" => "--objective",
        "check" => "--check",
        "exec" => "--exec",
        "exec_timeout" => "--exec-timeout",
        "check_timeout" => "--check-timeout",
        "liveness.stall_timeout" => "--stall-timeout",
        "kill_grace" => "--kill-grace",
        "control.approval_timeout" => "--approval-timeout",
        "control.max_turns" => "--max-turns",
        "success_exit_code" => "--success-exit-code",
        "budget.cost_sigma" => "--cost-sigma",
        "liveness.comprehension_every" => "--comprehension-every",
        "exec_failures" => "--exec-failures",
        "test_format" => "--test-format",
        "on_regression" => "--on-regression",
        "on_unmetered" => "--on-unmetered",
        "judge.timeout" => "--judge-timeout",
        "judge.budget_usd" => "--judge-budget-usd",
        "task.files" => "--context-files",
        _ => return None,
    })
}

/// A duration in the config: `"90s"`, `"10m"`, `"1h 30m"`, `"500ms"` (humantime syntax).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Dur(pub Duration);

impl TryFrom<String> for Dur {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        parse_duration(&s).map(Dur)
    }
}
impl From<Dur> for String {
    /// In the units [`parse_duration`] reads (`1d 2h 3m 4s 500ms`), so a recorded
    /// policy reads back: humantime's own format writes months past 30 days.
    fn from(d: Dur) -> String {
        let ms = d.0.as_millis();
        let parts: Vec<String> = [
            (ms / 86_400_000, "d"),
            (ms / 3_600_000 % 24, "h"),
            (ms / 60_000 % 60, "m"),
            (ms / 1000 % 60, "s"),
            (ms % 1000, "ms"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, u)| format!("{n}{u}"))
        .collect();
        if parts.is_empty() {
            "0s".into()
        } else {
            parts.join(" ")
        }
    }
}

/// The units a duration may use: milliseconds to days, in humantime's spellings.
/// Weeks, months and years are refused, and so is every other unit humantime reads:
/// `5M` (months to humantime) was recorded as five months where minutes were meant
/// (a new user's `check_timeout = "5M"`).
const DURATION_UNITS: &[&str] = &[
    "ms", "msec", "s", "sec", "secs", "second", "seconds", "m", "min", "mins", "minute", "minutes",
    "h", "hr", "hrs", "hour", "hours", "d", "day", "days",
];

/// Parses `90s`, `10m`, `1h30m`, `250ms`, `2d` (units ms, s, m, h and d in humantime's spellings, case
/// sensitive); a bare number is seconds.
///
/// # Errors
/// A message naming the text and the accepted forms.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let forms = "use e.g. 90s, 10m, 1h30m, 500ms, 2d";
    if let Some(u) = t
        .split(|c: char| !c.is_ascii_alphabetic())
        .find(|u| !u.is_empty() && !DURATION_UNITS.contains(u))
    {
        return Err(format!(
            "`{s}` is not a duration: `{u}` is not a unit loopexec reads (ms, s, m, h, d, or spelled out: sec, min, hour, day; a bare number is seconds, and 1.5h is 1h 30m); {forms}"
        ));
    }
    humantime::parse_duration(t).map_err(|e| format!("`{s}` is not a duration ({e}); {forms}"))
}

/// `[guards]` of loop.toml.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GuardsConfig {
    /// Extra globs the agent must not change (added to the defaults).
    pub blocked_paths: Vec<String>,
    /// Extra globs of test files (for assertion counting).
    pub test_paths: Vec<String>,
    /// Extra globs of the protected manifest (test runner config, lockfiles, CI).
    pub protected: Vec<String>,
    /// Globs the check may write without breaking hermeticity (caches).
    pub check_may_write: Vec<String>,
    /// Environment variables to pass to the check although they look like secrets.
    pub keep_env: Vec<String>,
    /// Runner-tampering hits a person has read and allows (`[[guards.allowed_code]]`):
    /// a hit whose path matches `path` and whose rule is `rule` is recorded but does
    /// not stop a green run. Left out of the serialized config when empty, so a
    /// receipt without waivers reads as before the field existed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_code: Vec<AllowedCode>,
}

/// One `[[guards.allowed_code]]` entry: a runner-tampering rule allowed in some files.
///
/// The rules are a floor of spellings, not a proof, and an honest line can match one
/// (a library's `exit_with(status)` helper). The entry lives in loop.toml, which the
/// agent cannot change (protected manifest), so only the person who configures the run
/// waives a rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AllowedCode {
    /// A glob of root-relative paths (`src/lib.rs`, `src/**/*.py`).
    pub path: String,
    /// The rule's name as a halt names it (`process exit`; a rule read in a file of no
    /// known language, `process exit (read as shell)`, is allowed by `process exit`
    /// too), or `*` for every rule.
    pub rule: String,
}

impl AllowedCode {
    /// True when this entry allows `hit`.
    #[must_use]
    pub fn allows(&self, hit: &crate::observe::tamper::TamperHit) -> bool {
        let rule_ok = self.rule == "*"
            || hit.rule == self.rule
            || hit
                .rule
                .strip_prefix(self.rule.as_str())
                .is_some_and(|rest| rest.starts_with(" (read as "));
        rule_ok
            && globset::Glob::new(&self.path)
                .map(|g| g.compile_matcher().is_match(&hit.path))
                .unwrap_or(false)
    }
}

/// What happens when the agent edits the frozen oracle (`[oracle] on_edit`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnOracleEdit {
    /// The edit is `metric_integrity_violation` (a cheating attempt stops the run).
    #[default]
    Halt,
    /// The check runs against t0's version of the edited files; the edits are recorded
    /// each iteration. Edits of test regions inside source files still halt (they
    /// cannot be restored file-wise).
    Restore,
}

/// `[oracle]` of loop.toml: the frozen oracle (SPEC §3.6) and how much the loop must
/// trust its check (SPEC §9.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OracleConfig {
    /// Extra globs of files frozen at t0 (golden files, fixtures, test data).
    pub frozen: Vec<String>,
    pub on_edit: OnOracleEdit,
    /// `check_flaky` fires when the Wilson lower bound (95 %) of the agreement rate of
    /// same-tree check runs falls below this (default 0.95; SPEC §9.5).
    pub confidence_target: f64,
    /// Start from a working tree an earlier run rejected for integrity
    /// (`--accept-rejected-tree`; default false: such a run halts at t0).
    pub accept_rejected_tree: bool,
    /// Whether test files the agent added since t0 run inside the judged check
    /// (`[oracle] new_tests`, default `exclude`; [`crate::observe::oracle_scope`]).
    pub new_tests: NewTestPolicy,
    /// Globs of files the agent may edit although loopexec would freeze them by what
    /// they are to the tests: data a test reads, a test helper, a file under a test
    /// directory (`[oracle] editable`; a locale file a test compares with another,
    /// whose missing entry is the task). Never a test file itself, a Rust test module,
    /// nor a file a `frozen` glob names. Empty by default, and then left out of the
    /// recorded configuration.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub editable: Vec<String>,
}

/// What the judged check does with test files the agent added (`[oracle] new_tests`).
///
/// The verdict is the frozen oracle's: a new test file runs inside the same runner as
/// t0's tests and can patch the runner or the code under test from there (SPEC §3.10).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NewTestPolicy {
    /// Added test files are left out of the tree synced into the clean room; the check
    /// record and the verdict name them.
    #[default]
    Exclude,
    /// Added test files run with t0's; their added lines are scanned by the runner
    /// tampering rules like the rest of the agent's code.
    Run,
}

impl Default for OracleConfig {
    fn default() -> Self {
        OracleConfig {
            frozen: Vec::new(),
            on_edit: OnOracleEdit::default(),
            confidence_target: 0.95,
            accept_rejected_tree: false,
            new_tests: NewTestPolicy::default(),
            editable: Vec::new(),
        }
    }
}

/// Who may change the dependency directories (`node_modules`, `.venv`) during a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DependencyPolicy {
    /// They are what they were at t0: a change is tampering.
    #[default]
    Frozen,
    /// The agent may change them (installing a package is part of the task).
    Agent,
}

/// `[clean_room]` of loop.toml: where the check runs (SPEC §3.5).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CleanRoomConfig {
    /// Run the check in the agent's working tree instead of a clean room (the old,
    /// weaker mode; recorded in the receipt and stated in every verdict).
    pub in_place: bool,
    pub dependencies: DependencyPolicy,
    /// Extra globs left out of snapshots (large generated data); caches and
    /// dependency directories are left out already.
    pub exclude: Vec<String>,
}

/// How the exec is sandboxed (`[sandbox] mode`, `--sandbox`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Landlock when the kernel has it; otherwise none, stated in every verdict.
    #[default]
    Auto,
    /// Landlock or the run does not start (`isolation_unsatisfiable`).
    Landlock,
    /// No sandbox (recorded, and stated in every verdict).
    Off,
}

/// `[sandbox]` of loop.toml: what the exec may write (SPEC §3.8).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    pub mode: SandboxMode,
    /// Extra paths the exec may write (`~/` is the home directory).
    pub writable: Vec<String>,
}

/// `[budget]` of loop.toml.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BudgetConfig {
    /// Run-total spend cap, USD.
    pub usd: Option<f64>,
    /// Run-total token cap (input + output).
    pub tokens: Option<u64>,
    /// Wall-clock cap for the whole run.
    pub max_duration: Option<Dur>,
    /// `cost_anomaly` fires when an iteration costs more than mean + sigma·sd of the
    /// earlier ones.
    pub cost_sigma: f64,
    /// Earlier iterations needed before `cost_anomaly` can fire.
    pub cost_min_history: usize,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        BudgetConfig {
            usd: None,
            tokens: None,
            max_duration: None,
            cost_sigma: 3.0,
            cost_min_history: 3,
        }
    }
}

/// `[model]` of loop.toml.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// The model id the agent must keep using; unset pins the first one observed.
    pub pin: Option<String>,
}

/// `[liveness]` of loop.toml.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LivenessConfig {
    /// Stop the work step when it prints nothing for this long.
    pub stall_timeout: Option<Dur>,
    /// Halt after this many accepted iterations no person has acknowledged.
    pub comprehension_every: Option<u32>,
}

/// `[judge]` of loop.toml: a reviewer command run on green iterations (SPEC §9.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JudgeConfig {
    /// The judge (run with `sh -c`); unset: no judge, a guard-clean green converges.
    pub command: Option<String>,
    /// Judge every Nth green that completes a task of a task list; the green that
    /// would end the run is always judged. At least 1.
    pub every: u32,
    /// Time limit for one judge run (default 10m); a judge that times out cannot decide.
    pub timeout: Option<Dur>,
    /// Cap on the judge's own run-total spend, USD (metered like the agent's).
    pub budget_usd: Option<f64>,
}

impl Default for JudgeConfig {
    fn default() -> Self {
        JudgeConfig {
            command: None,
            every: 1,
            timeout: None,
            budget_usd: None,
        }
    }
}

/// `[task]` of loop.toml: what the run is for (SPEC §9.2, §9.3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TaskConfig {
    /// A file describing the task (given to the judge and counted in the context).
    pub file: Option<String>,
    /// Test ids or globs a green iteration must have collected, run and passed.
    pub objective: Vec<String>,
    /// A task list: a Markdown checklist or JSON Lines of `{id, title, status, blocked_by[]}`.
    pub list: Option<String>,
    /// Globs of files the agent must read (counted in the context budget).
    pub files: Vec<String>,
}

/// `[models]` of loop.toml: model identities and context windows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelsConfig {
    /// A change of the agent CLI's version mid-run is not drift when true.
    pub allow_cli_upgrade: bool,
    /// Context windows in tokens by model id or family prefix (added to, and
    /// overriding, the built-in table).
    pub windows: std::collections::BTreeMap<String, u64>,
}

/// The file form of loop.toml: every field optional.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FileConfig {
    pub exec: Option<String>,
    pub check: Option<String>,
    pub max_iterations: Option<u32>,
    pub exec_timeout: Option<Dur>,
    pub check_timeout: Option<Dur>,
    pub success_exit_code: Option<i32>,
    pub test_format: Option<String>,
    pub reports: Option<Vec<String>>,
    pub confirm_runs: Option<u32>,
    pub kill_grace: Option<Dur>,
    pub check_network: Option<String>,
    pub halt: Option<ProgressPolicy>,
    pub guards: Option<GuardsConfig>,
    pub budget: Option<BudgetConfig>,
    pub model: Option<ModelConfig>,
    pub pricing: Option<crate::observe::usage::Pricing>,
    pub liveness: Option<LivenessConfig>,
    /// `[halt_events.<reason>]`: severity and escalation of halt events.
    pub halt_events: Option<crate::control::HaltEventsPolicy>,
    /// `[review]`: what an acknowledgement must be.
    pub review: Option<crate::control::ReviewConfig>,
    /// `[control]`: attended runs, approval timeout, ack gate, notifier, turn cap.
    pub control: Option<crate::control::ControlConfig>,
    /// `[gate]`: the action gate's classification rules.
    pub gate: Option<crate::gate::GatePolicy>,
    /// `[limits]`: spend per hour across the workspace's runs.
    pub limits: Option<crate::control::LimitsConfig>,
    pub oracle: Option<OracleConfig>,
    pub clean_room: Option<CleanRoomConfig>,
    pub sandbox: Option<SandboxConfig>,
    pub exec_failures: Option<u32>,
    pub on_unmetered: Option<String>,
    pub judge: Option<JudgeConfig>,
    pub task: Option<TaskConfig>,
    pub models: Option<ModelsConfig>,
}

/// Flag values; `None` leaves the file's value (or the default) in place.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    pub exec: Option<String>,
    pub check: Option<String>,
    pub max_iterations: Option<u32>,
    pub exec_timeout: Option<String>,
    pub check_timeout: Option<String>,
    pub success_exit_code: Option<i32>,
    pub test_format: Option<String>,
    pub reports: Vec<String>,
    pub confirm_runs: Option<u32>,
    pub kill_grace: Option<String>,
    pub check_network: Option<String>,
    pub no_progress_k: Option<u32>,
    pub on_regression: Option<String>,
    pub blocked_paths: Vec<String>,
    pub budget_usd: Option<f64>,
    pub budget_tokens: Option<u64>,
    pub max_duration: Option<String>,
    pub cost_sigma: Option<f64>,
    pub model_pin: Option<String>,
    pub stall_timeout: Option<String>,
    pub comprehension_every: Option<u32>,
    /// `--attended`.
    pub attended: Option<bool>,
    /// `--approval-timeout`.
    pub approval_timeout: Option<String>,
    /// `--ack-required`.
    pub ack_required: Option<bool>,
    /// `--on-halt`.
    pub on_halt: Option<String>,
    /// `--max-turns`.
    pub max_turns: Option<u64>,
    /// `--on-rate-limit`.
    pub on_rate_limit: Option<String>,
    /// `--check-in-place`.
    pub check_in_place: bool,
    /// `--accept-rejected-tree`.
    pub accept_rejected_tree: bool,
    /// `--sandbox auto|landlock|off`.
    pub sandbox: Option<SandboxMode>,
    pub exec_failures: Option<u32>,
    pub on_unmetered: Option<String>,
    pub judge: Option<String>,
    pub judge_every: Option<u32>,
    pub judge_timeout: Option<String>,
    pub judge_budget_usd: Option<f64>,
    pub task_file: Option<String>,
    pub objective: Vec<String>,
    pub tasks: Option<String>,
    pub context_files: Vec<String>,
}

/// The validated policy of one run. Serialized into `run_started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    pub exec: Option<String>,
    pub check: Option<String>,
    pub max_iterations: u32,
    pub exec_timeout: Option<Dur>,
    pub check_timeout: Option<Dur>,
    pub success_exit_code: i32,
    /// `auto` or a format wire name.
    pub test_format: String,
    pub reports: Vec<String>,
    /// Extra check runs on the same tree before a green verdict is believed.
    pub confirm_runs: u32,
    pub kill_grace: Dur,
    /// The check's network: `host` (default) or `none` (a fresh network namespace with
    /// only loopback; needs `unshare --net`, else the run halts `isolation_unsatisfiable`).
    #[serde(default = "default_network")]
    pub check_network: String,
    pub halt: ProgressPolicy,
    pub guards: GuardsConfig,
    pub budget: BudgetConfig,
    pub model: ModelConfig,
    pub pricing: crate::observe::usage::Pricing,
    pub liveness: LivenessConfig,
    #[serde(default)]
    pub oracle: OracleConfig,
    #[serde(default)]
    pub clean_room: CleanRoomConfig,
    /// Whether a green of the clean room is run once more in the working tree before
    /// it is believed (the checkout confirmation, SPEC §3.9; not with
    /// `clean_room.in_place`). Set for every run of this version, with no setting to
    /// turn it off; absent (`false`) from the receipts of earlier runs, which
    /// re-derive as they were decided.
    #[serde(default)]
    pub checkout_confirmation: bool,
    #[serde(default)]
    pub sandbox: SandboxConfig,
    /// The config file read, if any.
    pub config_file: Option<PathBuf>,
    /// Severity and escalation of halt events (`[halt_events.<reason>]`).
    #[serde(default)]
    pub halt_events: crate::control::HaltEventsPolicy,
    /// What an acknowledgement must be (`[review]`).
    #[serde(default)]
    pub review: crate::control::ReviewConfig,
    /// Attended runs, approval timeout, the ack gate, the notifier, the turn cap.
    #[serde(default)]
    pub control: crate::control::ControlConfig,
    /// The action gate's rules (`[gate]`).
    #[serde(default)]
    pub gate: crate::gate::GatePolicy,
    /// Spend per hour across the workspace's runs (`[limits]`).
    #[serde(default)]
    pub limits: crate::control::LimitsConfig,
    /// Consecutive iterations whose agent exited non-zero (its own error, judged by
    /// the check) before the run halts `execution_failure`; at least 1.
    #[serde(default = "default_exec_failures")]
    pub exec_failures: u32,
    /// With a budget cap set, what an iteration whose spend was not metered does:
    /// `warn` (stderr, receipt, explain-halt) or `halt` (`budget_exceeded`).
    #[serde(default = "default_on_unmetered")]
    pub on_unmetered: String,
    #[serde(default)]
    pub judge: JudgeConfig,
    #[serde(default)]
    pub task: TaskConfig,
    #[serde(default)]
    pub models: ModelsConfig,
}

fn default_exec_failures() -> u32 {
    3
}

fn default_on_unmetered() -> String {
    "warn".into()
}

impl RunConfig {
    /// The resolved default policy (no file, no flags) — what `init` documents.
    #[must_use]
    pub fn defaults() -> RunConfig {
        RunConfig {
            exec: None,
            check: None,
            max_iterations: 10,
            exec_timeout: None,
            check_timeout: None,
            success_exit_code: 0,
            test_format: "auto".into(),
            reports: Vec::new(),
            confirm_runs: 3,
            check_network: default_network(),
            kill_grace: Dur(Duration::from_secs(3)),
            halt: ProgressPolicy::default(),
            guards: GuardsConfig::default(),
            budget: BudgetConfig::default(),
            model: ModelConfig::default(),
            pricing: crate::observe::usage::Pricing::default(),
            liveness: LivenessConfig::default(),
            oracle: OracleConfig::default(),
            clean_room: CleanRoomConfig::default(),
            checkout_confirmation: true,
            sandbox: SandboxConfig::default(),
            config_file: None,
            halt_events: crate::control::HaltEventsPolicy::default(),
            review: crate::control::ReviewConfig::default(),
            control: crate::control::ControlConfig::default(),
            gate: crate::gate::GatePolicy::default(),
            limits: crate::control::LimitsConfig::default(),
            exec_failures: default_exec_failures(),
            on_unmetered: default_on_unmetered(),
            judge: JudgeConfig::default(),
            task: TaskConfig::default(),
            models: ModelsConfig::default(),
        }
    }
}

fn default_network() -> String {
    "host".into()
}

/// Reads `path` as loop.toml.
///
/// # Errors
/// [`ConfigError::Read`] or [`ConfigError::Parse`] (with toml's line and column).
pub fn read_file(path: &Path) -> Result<FileConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let f: FileConfig = toml::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        message: format!(
            "in {}: {}",
            toml_table_at(&text, e.span().map_or(0, |s| s.start)),
            e.to_string().trim()
        ),
    })?;
    // Taking a tree an earlier run rejected or left unjudged is a person's choice for
    // one start. loop.toml lies in the tree the agent writes: granted there, the
    // agent's own file would switch off the check of its own work (a nineteenth
    // review wrote it, made loopexec die, and the next start took the weakened
    // tests for t0).
    if f.oracle.as_ref().is_some_and(|o| o.accept_rejected_tree) {
        return Err(ConfigError::Parse {
            path: path.to_path_buf(),
            message: "in table [oracle]: `accept_rejected_tree` cannot be set in a config file (a loop.toml in the work tree is written by the agent too); give `--accept-rejected-tree` to the one `loopexec run` that should take the tree as it is".into(),
        });
    }
    Ok(f)
}

/// The TOML table holding byte `offset` of `text`: `table [budget]`, or `the top
/// level` before any header. The caret diagram of toml's message stays on its own
/// lines after it.
fn toml_table_at(text: &str, offset: usize) -> String {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    // an error inside a header (`[halt.no_progres_detected]`, an unknown key of
    // `[halt]`) is in the table the header's earlier keys name
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let head = before[line_start..].trim_start();
    let line = text[line_start..].lines().next().unwrap_or("");
    let line = line.split('#').next().unwrap_or(line).trim();
    let complete = line.starts_with('[') && !line.starts_with("[[") && line.ends_with(']');
    if complete && head.starts_with('[') {
        let path = head
            .trim_start_matches('[')
            .trim_end()
            .trim_end_matches('.')
            .trim();
        return if path.is_empty() {
            "the top level".to_string()
        } else {
            format!("table [{path}]")
        };
    }
    before
        .lines()
        .rev()
        .map(|l| l.split('#').next().unwrap_or(l).trim())
        // a complete header only: an error inside a broken one (`[oracle`) is named by
        // the caret diagram, not by a garbled table name
        .find(|l| l.starts_with('[') && l.ends_with(']'))
        .map_or_else(|| "the top level".to_string(), |h| format!("table {h}"))
}

fn dur_flag(field: &str, v: Option<&String>) -> Result<Option<Dur>, ConfigError> {
    v.map(|s| {
        parse_duration(s)
            .map(Dur)
            .map_err(|m| ConfigError::invalid(field, m))
    })
    .transpose()
}

/// Sets the caps a resume may change on the policy `c` of a resumed run: the
/// run-total USD and token caps and the wall-clock cap of `o` (SPEC §1.3), then
/// validates the policy as [`resolve`] does.
///
/// # Errors
/// A cap that is not valid (`--budget-usd -5`, `--max-duration 5x`), as
/// [`ConfigError::Invalid`] naming its field.
pub fn resume_caps(c: &mut RunConfig, o: &Overrides) -> Result<(), ConfigError> {
    set_spend_caps(c, o)?;
    validate(c)
}

/// Sets the spend and wall-clock caps `o` gives (`budget.usd`, `budget.tokens`,
/// `budget.max_duration`), unvalidated.
fn set_spend_caps(c: &mut RunConfig, o: &Overrides) -> Result<(), ConfigError> {
    if o.budget_usd.is_some() {
        c.budget.usd = o.budget_usd;
    }
    if o.budget_tokens.is_some() {
        c.budget.tokens = o.budget_tokens;
    }
    if let Some(d) = dur_flag("budget.max_duration", o.max_duration.as_ref())? {
        c.budget.max_duration = Some(d);
    }
    Ok(())
}

/// Merges the file (if any) and the flags, and validates.
///
/// `config_path`: `Some` when `--config` was given (must exist); otherwise
/// `<workdir>/loop.toml` is read when present.
///
/// # Errors
/// The first [`ConfigError`] found.
pub fn resolve(
    workdir: &Path,
    config_path: Option<&Path>,
    o: &Overrides,
) -> Result<RunConfig, ConfigError> {
    let mut c = RunConfig::defaults();
    let file_path = match config_path {
        Some(p) => Some(if p.is_absolute() {
            p.to_path_buf()
        } else {
            workdir.join(p)
        }),
        None => Some(workdir.join("loop.toml")).filter(|p| p.is_file()),
    };
    if let Some(p) = &file_path {
        let f = read_file(p)?;
        c.config_file = Some(p.clone());
        apply_file(&mut c, f);
    }
    apply_flags(&mut c, o)?;
    validate(&c)?;
    Ok(c)
}

fn apply_file(c: &mut RunConfig, f: FileConfig) {
    macro_rules! take {
        ($($field:ident),*) => { $( if let Some(v) = f.$field { c.$field = v; } )* };
    }
    if f.exec.is_some() {
        c.exec = f.exec;
    }
    if f.check.is_some() {
        c.check = f.check;
    }
    if f.exec_timeout.is_some() {
        c.exec_timeout = f.exec_timeout;
    }
    if f.check_timeout.is_some() {
        c.check_timeout = f.check_timeout;
    }
    take!(
        max_iterations,
        success_exit_code,
        test_format,
        reports,
        confirm_runs,
        kill_grace,
        check_network
    );
    take!(
        halt,
        guards,
        budget,
        model,
        pricing,
        liveness,
        oracle,
        clean_room,
        sandbox,
        exec_failures,
        on_unmetered
    );
    take!(judge, task, models);
    take!(halt_events, review, control, gate, limits);
}

fn apply_flags(c: &mut RunConfig, o: &Overrides) -> Result<(), ConfigError> {
    if o.exec.is_some() {
        c.exec.clone_from(&o.exec);
    }
    if o.check.is_some() {
        c.check.clone_from(&o.check);
    }
    if let Some(v) = o.max_iterations {
        c.max_iterations = v;
    }
    if let Some(v) = o.exec_failures {
        c.exec_failures = v;
    }
    if let Some(v) = &o.on_unmetered {
        c.on_unmetered.clone_from(v);
    }
    if let Some(d) = dur_flag("exec_timeout", o.exec_timeout.as_ref())? {
        c.exec_timeout = Some(d);
    }
    if let Some(d) = dur_flag("check_timeout", o.check_timeout.as_ref())? {
        c.check_timeout = Some(d);
    }
    if let Some(d) = dur_flag("kill_grace", o.kill_grace.as_ref())? {
        c.kill_grace = d;
    }
    if let Some(v) = o.success_exit_code {
        c.success_exit_code = v;
    }
    if let Some(v) = &o.test_format {
        c.test_format.clone_from(v);
    }
    if !o.reports.is_empty() {
        c.reports.clone_from(&o.reports);
    }
    if let Some(v) = o.confirm_runs {
        c.confirm_runs = v;
    }
    if let Some(v) = &o.check_network {
        c.check_network.clone_from(v);
    }
    override_halt(&mut c.halt, o.no_progress_k, o.on_regression.as_deref())?;
    c.guards
        .blocked_paths
        .extend(o.blocked_paths.iter().cloned());
    set_spend_caps(c, o)?;
    if let Some(v) = o.cost_sigma {
        c.budget.cost_sigma = v;
    }
    if o.model_pin.is_some() {
        c.model.pin.clone_from(&o.model_pin);
    }
    if let Some(d) = dur_flag("liveness.stall_timeout", o.stall_timeout.as_ref())? {
        c.liveness.stall_timeout = Some(d);
    }
    if o.comprehension_every.is_some() {
        c.liveness.comprehension_every = o.comprehension_every;
    }
    if let Some(v) = o.attended {
        c.control.attended = v;
    }
    if let Some(d) = dur_flag("control.approval_timeout", o.approval_timeout.as_ref())? {
        c.control.approval_timeout = d;
    }
    if let Some(v) = o.ack_required {
        c.control.ack_required = v;
    }
    if o.on_halt.is_some() {
        c.control.on_halt.clone_from(&o.on_halt);
    }
    if o.max_turns.is_some() {
        c.control.max_turns = o.max_turns;
    }
    if let Some(m) = &o.on_rate_limit {
        c.limits.on_rate_limit.clone_from(m);
    }
    if o.check_in_place {
        c.clean_room.in_place = true;
    }
    if o.accept_rejected_tree {
        c.oracle.accept_rejected_tree = true;
    }
    if let Some(m) = o.sandbox {
        c.sandbox.mode = m;
    }
    apply_judgment_flags(c, o)?;
    Ok(())
}

/// The judge, task and objective flags.
fn apply_judgment_flags(c: &mut RunConfig, o: &Overrides) -> Result<(), ConfigError> {
    if o.judge.is_some() {
        c.judge.command.clone_from(&o.judge);
    }
    if let Some(n) = o.judge_every {
        c.judge.every = n;
    }
    if let Some(d) = dur_flag("judge.timeout", o.judge_timeout.as_ref())? {
        c.judge.timeout = Some(d);
    }
    if o.judge_budget_usd.is_some() {
        c.judge.budget_usd = o.judge_budget_usd;
    }
    if o.task_file.is_some() {
        c.task.file.clone_from(&o.task_file);
    }
    if !o.objective.is_empty() {
        c.task.objective.clone_from(&o.objective);
    }
    if o.tasks.is_some() {
        c.task.list.clone_from(&o.tasks);
    }
    c.task.files.extend(o.context_files.iter().cloned());
    Ok(())
}

/// Applies `--no-progress-k` and `--on-regression` to the `[halt]` policy through its
/// TOML shape (`no_progress_detected.k`, `on_regression`), so the flags and the file
/// share one spelling and one validation.
fn override_halt(
    halt: &mut ProgressPolicy,
    k: Option<u32>,
    on_regression: Option<&str>,
) -> Result<(), ConfigError> {
    if k.is_none() && on_regression.is_none() {
        return Ok(());
    }
    let mut v =
        serde_json::to_value(&*halt).map_err(|e| ConfigError::invalid("halt", e.to_string()))?;
    if let Some(k) = k {
        v["no_progress_detected"]["k"] = serde_json::json!(k);
    }
    if let Some(r) = on_regression {
        if r != "revert" && r != "halt" {
            return Err(ConfigError::invalid(
                "on_regression",
                format!("`{r}` is not one of: revert, halt"),
            ));
        }
        v["on_regression"] = serde_json::json!(r);
    }
    *halt = serde_json::from_value(v).map_err(|e| ConfigError::invalid("halt", e.to_string()))?;
    Ok(())
}

/// Checks the ranges and names of every field.
///
/// # Errors
/// The first invalid field, named.
pub fn validate(c: &RunConfig) -> Result<(), ConfigError> {
    c.halt_events
        .validate()
        .map_err(|m| ConfigError::invalid("halt_events", m))?;
    c.gate
        .validate()
        .map_err(|m| ConfigError::invalid("gate", m))?;
    c.limits
        .validate()
        .map_err(|m| ConfigError::invalid("limits", m))?;
    if c.exec_failures == 0 {
        return Err(ConfigError::invalid("exec_failures", "must be at least 1"));
    }
    if !matches!(c.on_unmetered.as_str(), "warn" | "halt") {
        return Err(ConfigError::invalid(
            "on_unmetered",
            format!("`{}`: use warn or halt", c.on_unmetered),
        ));
    }
    if c.max_iterations == 0 {
        return Err(ConfigError::invalid(
            "max_iterations",
            "must be at least 1 (iteration 0 is the baseline check; 1..N are agent attempts)",
        ));
    }
    if c.max_iterations > 100_000 {
        return Err(ConfigError::invalid(
            "max_iterations",
            "must be at most 100000",
        ));
    }
    for (field, v) in [("exec", &c.exec), ("check", &c.check)] {
        if v.as_deref().is_some_and(|s| s.trim().is_empty()) {
            return Err(ConfigError::invalid(field, "is empty"));
        }
    }
    // A zero wait would decline every attended call at once (a new user's
    // `--approval-timeout 0s` halted escalation_pending on the first one), and a zero
    // turn cap would halt after the first exec by configuration alone.
    if c.control.approval_timeout.0.is_zero() {
        return Err(ConfigError::invalid(
            "control.approval_timeout",
            "must be greater than zero",
        ));
    }
    if c.control.max_turns == Some(0) {
        return Err(ConfigError::invalid(
            "control.max_turns",
            "must be at least 1",
        ));
    }
    // A zero limit would make a reason fire by configuration rather than by anything
    // observed, so every duration limit must be positive.
    for (field, d) in [
        ("exec_timeout", c.exec_timeout),
        ("check_timeout", c.check_timeout),
        ("liveness.stall_timeout", c.liveness.stall_timeout),
        ("budget.max_duration", c.budget.max_duration),
    ] {
        if d.is_some_and(|d| d.0.is_zero()) {
            return Err(ConfigError::invalid(field, "must be greater than zero"));
        }
    }
    if !(0..=255).contains(&c.success_exit_code) {
        return Err(ConfigError::invalid(
            "success_exit_code",
            "must be between 0 and 255",
        ));
    }
    if c.test_format != "auto" && crate::check::parse::format_from_name(&c.test_format).is_none() {
        return Err(ConfigError::invalid(
            "test_format",
            format!(
                "unknown format `{}`; known: auto, {}",
                c.test_format,
                known_formats()
            ),
        ));
    }
    // loopexec deletes report files before every check run, so a report path must stay
    // inside the workdir: relative, without `..`.
    for r in &c.reports {
        let p = std::path::Path::new(r);
        if p.is_absolute()
            || p.components()
                .any(|x| matches!(x, std::path::Component::ParentDir))
        {
            return Err(ConfigError::invalid(
                "reports",
                format!("`{r}` is outside the workdir; give a path (or glob) relative to it, without `..`"),
            ));
        }
    }
    if c.check_network != "host" && c.check_network != "none" {
        return Err(ConfigError::invalid(
            "check_network",
            format!("`{}` is not one of: host, none", c.check_network),
        ));
    }
    if c.confirm_runs > 100 {
        return Err(ConfigError::invalid("confirm_runs", "must be at most 100"));
    }
    c.halt.validate().map_err(|e| {
        // `halt.<detector>.<key> = <value>: <why>`: the hint names the key itself
        let text = e.to_string();
        match text.split_once(" = ") {
            Some((field, rest)) if field.starts_with("halt.") && !field.contains(' ') => {
                ConfigError::invalid(field, rest)
            }
            _ => ConfigError::invalid("halt", text),
        }
    })?;
    if let Some(u) = c.budget.usd {
        if !(u.is_finite() && u > 0.0) {
            return Err(ConfigError::invalid(
                "budget.usd",
                "must be a positive number of USD",
            ));
        }
    }
    if c.budget.tokens == Some(0) {
        return Err(ConfigError::invalid("budget.tokens", "must be at least 1"));
    }
    if !(c.budget.cost_sigma.is_finite() && c.budget.cost_sigma > 0.0) {
        return Err(ConfigError::invalid(
            "budget.cost_sigma",
            "must be a positive number",
        ));
    }
    if c.liveness.comprehension_every == Some(0) {
        return Err(ConfigError::invalid(
            "liveness.comprehension_every",
            "must be at least 1",
        ));
    }
    c.pricing
        .validate()
        .map_err(|e| ConfigError::invalid("pricing", e.to_string()))?;
    validate_judgment(c)?;
    for (field, globs) in [
        ("guards.blocked_paths", &c.guards.blocked_paths),
        ("guards.test_paths", &c.guards.test_paths),
        ("guards.protected", &c.guards.protected),
        ("guards.check_may_write", &c.guards.check_may_write),
        ("oracle.frozen", &c.oracle.frozen),
        ("oracle.editable", &c.oracle.editable),
    ] {
        for g in globs {
            globset::Glob::new(g)
                .map_err(|e| ConfigError::invalid(field, format!("bad glob `{g}`: {e}")))?;
        }
    }
    Ok(())
}

/// The `[judge]`, `[task]`, `[oracle]` and `[models]` fields.
fn validate_judgment(c: &RunConfig) -> Result<(), ConfigError> {
    if c.judge
        .command
        .as_deref()
        .is_some_and(|s| s.trim().is_empty())
    {
        return Err(ConfigError::invalid("judge.command", "is empty"));
    }
    if c.judge.every == 0 {
        return Err(ConfigError::invalid("judge.every", "must be at least 1"));
    }
    if c.judge.timeout.is_some_and(|d| d.0.is_zero()) {
        return Err(ConfigError::invalid(
            "judge.timeout",
            "must be greater than zero",
        ));
    }
    if let Some(u) = c.judge.budget_usd {
        if !(u.is_finite() && u > 0.0) {
            return Err(ConfigError::invalid(
                "judge.budget_usd",
                "must be a positive number of USD",
            ));
        }
    }
    for g in &c.task.objective {
        if g.trim().is_empty() {
            return Err(ConfigError::invalid(
                "task.objective",
                "names an empty test id",
            ));
        }
        globset::Glob::new(g).map_err(|e| {
            ConfigError::invalid("task.objective", format!("bad test id or glob `{g}`: {e}"))
        })?;
    }
    if !c.task.files.is_empty() && c.model.pin.is_none() {
        return Err(ConfigError::invalid(
            "task.files",
            "the context files are measured against a model's window: give --model (or [model] pin)",
        ));
    }
    for g in &c.task.files {
        globset::Glob::new(g)
            .map_err(|e| ConfigError::invalid("task.files", format!("bad glob `{g}`: {e}")))?;
    }
    let t = c.oracle.confidence_target;
    if !(t.is_finite() && t > 0.0 && t < 1.0) {
        return Err(ConfigError::invalid(
            "oracle.confidence_target",
            "must be a number between 0 and 1 (exclusive), e.g. 0.95",
        ));
    }
    if let Some((m, _)) = c.models.windows.iter().find(|(_, w)| **w == 0) {
        return Err(ConfigError::invalid(
            "models.windows",
            format!("the window of `{m}` must be at least 1 token"),
        ));
    }
    Ok(())
}

fn known_formats() -> String {
    crate::check::parse::format_names().join(", ")
}

/// The commented `loop.toml` that `loopexec init` writes.
pub const INIT_TEMPLATE: &str = include_str!("init_loop.toml");

#[cfg(test)]
mod tests {
    /// The commented loop.toml `init` writes names every format `test_format` takes.
    #[test]
    fn the_init_template_names_every_format() {
        for name in crate::check::parse::format_names() {
            let quoted = format!(" {name},");
            let last = format!(" {name}.");
            assert!(
                super::INIT_TEMPLATE.contains(&quoted) || super::INIT_TEMPLATE.contains(&last),
                "{name} is missing from the template's test_format list"
            );
        }
    }

    /// A bad value's hint names the flag that set it, when a flag can set it.
    #[test]
    fn a_hint_names_the_flag_of_its_field() {
        let rows = [
            ("exec_timeout", "`--exec-timeout`"),
            ("liveness.stall_timeout", "`--stall-timeout`"),
            ("max_iterations", "`--max-iterations`"),
            ("gate", "set `gate` to a valid value in loop.toml"),
        ];
        for (field, want) in rows {
            let h = super::ConfigError::invalid(field, "bad").hint();
            assert!(h.contains(want), "{field}: {h}");
        }
    }

    #[test]
    fn a_toml_error_names_its_table_and_keeps_the_caret_diagram() {
        let cases = [
            ("x = 1\n", 0, "the top level"),
            ("[budget]  # caps\nusd = \"five\"\n", 22, "table [budget]"),
            ("[halt]\nk = 1\n[budget]\nusd = 1\n", 10, "table [halt]"),
            ("[halt]\nk = 1\n[oracle\nx = 1\n", 19, "table [halt]"),
            ("[oracle\n", 5, "the top level"),
            // a key of a header unknown to its table
            (
                "[limits]\nx = 1\n\n[halt.no_progres_detected]\nk = 2\n",
                21,
                "table [halt]",
            ),
            ("[holds]\n", 1, "the top level"),
        ];
        for (text, at, want) in cases {
            assert_eq!(super::toml_table_at(text, at), want, "{text:?} @ {at}");
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("loop.toml");
        std::fs::write(&p, "[budget]\nusd = \"five\"\n").unwrap();
        let msg = super::read_file(&p).unwrap_err().to_string();
        assert!(msg.contains("in table [budget]:"), "{msg}");
        assert!(
            msg.lines().any(|l| l.trim_end().ends_with('^')),
            "caret on its own line: {msg}"
        );
    }

    use super::*;

    #[test]
    fn init_template_parses_and_validates() {
        let f: FileConfig = toml::from_str(INIT_TEMPLATE).expect("template parses");
        let mut c = RunConfig::defaults();
        apply_file(&mut c, f);
        c.check = Some("true".into());
        validate(&c).expect("template validates");
    }

    #[test]
    fn unknown_field_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("loop.toml"), "max_iteratons = 3\n").unwrap();
        let e = resolve(dir.path(), None, &Overrides::default()).unwrap_err();
        assert!(e.to_string().contains("max_iteratons"), "{e}");
    }

    #[test]
    fn flags_override_file_and_zero_iterations_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("loop.toml"),
            "max_iterations = 3\ncheck = \"x\"\n",
        )
        .unwrap();
        let c = resolve(dir.path(), None, &Overrides::default()).unwrap();
        assert_eq!(c.max_iterations, 3);
        let o = Overrides {
            max_iterations: Some(7),
            ..Overrides::default()
        };
        assert_eq!(resolve(dir.path(), None, &o).unwrap().max_iterations, 7);
        let o = Overrides {
            max_iterations: Some(0),
            ..Overrides::default()
        };
        let e = resolve(dir.path(), None, &o).unwrap_err();
        assert!(e.to_string().contains("max_iterations"));
    }

    #[test]
    fn judgment_fields_are_validated_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let cases: &[(&str, &str)] = &[
            ("[judge]\nevery = 0\n", "judge.every"),
            ("[judge]\ncommand = \" \"\n", "judge.command"),
            ("[judge]\nbudget_usd = -1.0\n", "judge.budget_usd"),
            ("[judge]\ntimeout = \"0s\"\n", "judge.timeout"),
            (
                "[oracle]\nconfidence_target = 1.5\n",
                "oracle.confidence_target",
            ),
            ("[task]\nfiles = [\"src/*\"]\n", "task.files"),
            ("[task]\nobjective = [\"\"]\n", "task.objective"),
            ("[models.windows]\nm = 0\n", "models.windows"),
        ];
        for (toml_text, field) in cases {
            std::fs::write(
                dir.path().join("loop.toml"),
                format!("check = \"x\"\n{toml_text}"),
            )
            .unwrap();
            let e = resolve(dir.path(), None, &Overrides::default()).unwrap_err();
            assert!(e.to_string().contains(field), "{toml_text}: {e}");
        }
        std::fs::write(
            dir.path().join("loop.toml"),
            "check = \"x\"\n[judge]\ncommand = \"j\"\nevery = 2\n[task]\nobjective = [\"t*\"]\nfiles = [\"a\"]\n[model]\npin = \"m\"\n[oracle]\nconfidence_target = 0.9\n",
        )
        .unwrap();
        let c = resolve(dir.path(), None, &Overrides::default()).unwrap();
        assert_eq!((c.judge.every, c.oracle.confidence_target), (2, 0.9));
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("5").unwrap(), Duration::from_secs(5));
        assert!(parse_duration("ten").unwrap_err().contains("ten"));
        // months, weeks and years are not read; `M` is not minutes
        for bad in ["5M", "2w", "1y", "3months", "1 fortnight"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains(bad) && e.contains("is not a unit"), "{bad}: {e}");
        }
        assert_eq!(parse_duration("2d").unwrap(), Duration::from_secs(172_800));
        assert_eq!(parse_duration("1h 30m").unwrap(), Duration::from_secs(5400));
        // what a policy records reads back, past a month too
        for secs in [0, 1, 90, 5400, 3_888_000] {
            let d = Dur(Duration::from_secs(secs));
            let text = String::from(d);
            assert_eq!(Dur::try_from(text.clone()), Ok(d), "{text}");
        }
        assert_eq!(
            String::from(Dur(Duration::from_millis(90_500))),
            "1m 30s 500ms"
        );
    }
}
