//! The typed `--json` bodies of the commands that measure the check, the spend and
//! the state directory: `inspect-cost`, `check`, `probe-check`, `doctor`,
//! `build-context` (see [`crate::output`]). Each keeps every field the command printed
//! before the contract was typed; a field that only some outcomes print is optional
//! and absent from the others.

use crate::output::Body;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

macro_rules! body {
    ($t:ty, $name:literal) => {
        impl Body for $t {
            const COMMAND: &'static str = $name;
            fn human(&self) -> String {
                self.human.clone()
            }
        }
    };
}

/// A command whose outcome can be a computed halt: the halt's fields are set on the
/// body (`halt_reason`, `contributors`).
pub(crate) trait HaltSlot {
    /// Records the halt's reason and why.
    fn set_halt(&mut self, reason: crate::halt::HaltReason, contributors: Vec<String>);
}

/// One iteration's spend in `inspect-cost`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CostRow {
    pub iteration: u32,
    /// USD (6 decimals); `null` when the iteration reported no cost ("unknown").
    pub cost_usd: Option<f64>,
    /// The recorded usage (`cost_kind`, token counts, `primary_model`); `null` for a
    /// ledger file.
    pub usage: Value,
}

/// An iteration whose cost is an outlier against the ones before it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CostAnomaly {
    pub iteration: u32,
    pub cost_usd: f64,
    /// The cost above which an iteration is anomalous (mean + sigma·sd of history).
    pub threshold: f64,
    /// Standard deviations above the mean.
    pub z: f64,
}

/// `inspect-cost`: per-iteration spend, totals, percentiles, cap and anomalies.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct InspectCostBody {
    /// `run <id>` or the ledger file's path.
    pub source: String,
    pub iterations: Vec<CostRow>,
    /// USD over iterations with a known cost (unknown ones count 0).
    pub total_usd: f64,
    /// Tokens counted by `--budget-tokens` (`null` for a ledger file).
    pub total_tokens: Option<u64>,
    /// Iterations whose cost is unknown (unmetered).
    pub unknown_cost_iterations: usize,
    /// Every iteration's cost is known, so `total_usd` is the whole spend.
    pub total_known: bool,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    /// The USD cap in force (`--budget-usd`, else the run's `[budget] usd`).
    pub cap_usd: Option<f64>,
    pub cost_sigma: f64,
    pub anomalies: Vec<CostAnomaly>,
    /// `budget_exceeded` or `cost_anomaly` when the figures cross the cap or hold an
    /// anomaly (exit 18).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub halt_reason: Option<String>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(InspectCostBody, "inspect-cost");

/// `check`: the state directory validated.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CheckBody {
    /// Receipts read.
    pub receipts: usize,
    /// Snapshot references the receipts name.
    pub snapshots: usize,
    /// Broken records, the first one first; empty when everything verifies.
    pub problems: Vec<String>,
    /// `invariant_failed` when a record is broken (exit 20).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub halt_reason: Option<String>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(CheckBody, "check");

/// The Wilson interval of an observed flake rate.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WilsonInterval {
    pub confidence: f64,
    pub lower: f64,
    pub upper: f64,
}

/// The achieved bound on the flake rate when no run disagreed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FlakeRateBound {
    /// Always `clopper-pearson one-sided, zero flips`.
    pub method: String,
    pub confidence: f64,
    /// `1 - (1 - confidence)^(1/n)`.
    pub upper: f64,
    /// The bound is at or below `--max-flake-rate`.
    pub meets_target: bool,
}

/// One perturbed setting of a dimension.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DimensionVariant {
    /// `NAME=value` settings (empty for CPU load).
    pub env: Vec<String>,
    /// `green` or `red (N failing)`.
    pub verdict: String,
    /// Same verdict as the unperturbed run.
    pub agrees: bool,
}

/// One hermeticity dimension probed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DimensionReport {
    /// `order`, `seed`, `tz`, `locale`, `concurrency` or `load`.
    pub dimension: String,
    pub variants: Vec<DimensionVariant>,
}

/// `probe-check`: the check measured (flakiness, side effects, hermeticity).
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct ProbeCheckBody {
    /// The check command.
    pub check: String,
    pub planned_runs: u64,
    /// Runs that bound the flake rate below the target at the confidence.
    pub runs_needed: u64,
    pub max_flake_rate: f64,
    pub confidence: f64,
    /// The probe got to the end and the bound meets the target.
    pub certified: bool,
    /// Fresh-copy runs made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fresh_runs: Option<u64>,
    /// Each fresh run's verdict (`green` or `red (N failing)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fresh_verdicts: Option<Vec<String>>,
    /// The first run's verdict, which the others are compared with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference_verdict: Option<String>,
    /// Runs whose verdict differed from the first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flips: Option<u64>,
    /// flips / fresh runs, when some differed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flake_rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wilson: Option<WilsonInterval>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flake_rate_bound: Option<FlakeRateBound>,
    /// Verdicts of the runs in one reused copy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reruns_in_one_copy: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<Vec<DimensionReport>>,
    /// The dimension whose perturbation changed the verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dimension: Option<String>,
    /// `check_flaky`, `check_has_side_effects`, `check_not_hermetic` or
    /// `execution_failure`, when the probe halted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub halt_reason: Option<String>,
    /// Why it halted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contributors: Vec<String>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(ProbeCheckBody, "probe-check");

impl HaltSlot for ProbeCheckBody {
    fn set_halt(&mut self, reason: crate::halt::HaltReason, contributors: Vec<String>) {
        self.halt_reason = Some(reason.as_str().into());
        self.contributors = contributors;
    }
}

/// One line of `doctor`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DoctorLine {
    /// `isolation`, `credentials`, `exec`, `determinism`, `hermeticity`, `adequacy`,
    /// `oracle`.
    pub name: String,
    pub ok: bool,
    /// False when the line could not be measured (it passes, but proves nothing).
    pub measured: bool,
    /// The halt reason this line fails with.
    pub reason: Option<String>,
    pub text: String,
    /// What was measured (shape depends on the line).
    pub detail: Value,
}

/// `doctor`: the preconditions gate.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct DoctorBody {
    /// One line per precondition, in order (empty when the check could not run).
    pub checks: Vec<DoctorLine>,
    /// The first failing line's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub halt_reason: Option<String>,
    /// Every failing line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contributors: Vec<String>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(DoctorBody, "doctor");

impl HaltSlot for DoctorBody {
    fn set_halt(&mut self, reason: crate::halt::HaltReason, contributors: Vec<String>) {
        self.halt_reason = Some(reason.as_str().into());
        self.contributors = contributors;
    }
}

/// `build-context`: what the agent must read and whether it fits.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BuildContextBody {
    /// The context fits the model's window (`null`: the window is unknown).
    pub fits: Option<bool>,
    /// `context_budget_unsatisfiable` when it does not fit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub halt_reason: Option<String>,
    pub report: crate::observe::context::ContextReport,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(BuildContextBody, "build-context");
