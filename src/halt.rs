//! The halt taxonomy: every reason a loop can stop, its exit class and its owner.
//!
//! This is the one table; `exit-codes.md`, `SPEC.md` §2 and the JSON output are
//! derived from it (a test checks `exit-codes.md` against [`HaltReason::ALL`]). The
//! `halt_reason` string is the integration contract and never changes meaning; the
//! exit code is the coarse class CI branches on. Every match here is exhaustive (no
//! `_` arm), so adding a reason forces a decision on its class, owner and advice.

use serde::{Deserialize, Serialize};
use std::fmt;

/// One reason a loop halted. Wire form: the snake_case string of [`HaltReason::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HaltReason {
    /// The check passed (all guards holding): the work is done. Exit 10.
    SuccessConditionMet,
    /// Open tasks remain in the task list but every one is blocked. Exit 11.
    NoActionableTasks,
    /// A person stopped the run (SIGINT/SIGTERM, or a stop hold, SPEC §10) or must
    /// decide. Exit 11.
    HumanRequired,
    /// The iteration cap was reached while the loop was still improving. Exit 12.
    MaxIterationsReached,
    /// A protected path (CI config, `.git/`, `loop.toml`, …) changed since t0. Exit 13.
    BlockedPathModified,
    /// The judge (`--judge`) found the green gamed (special-cased inputs, weakened
    /// checks, hard-coded outputs). Exit 13.
    RewardHackingDetected,
    /// The measurement was weakened: collected set lost a member, a run cut short
    /// reported green, assertion count dropped, protected manifest changed. Exit 13.
    MetricIntegrityViolation,
    /// Provider credentials were visible to the check. Exit 13.
    CredentialScopeInvalid,
    /// A green that does not show its objective tests collected, run and passed. Exit 13.
    ObjectiveUnverified,
    /// The check's verdict or failing set varied on an identical tree. Exit 14.
    CheckFlaky,
    /// Fresh copies agree but reruns in one copy differ. Exit 14.
    CheckHasSideEffects,
    /// A perturbed environment dimension (tz, locale, seed, …) changed the verdict, or
    /// (dimension `place`) a green of the clean room was not green in the working tree
    /// (the checkout confirmation, SPEC §3.9). Exit 14.
    CheckNotHermetic,
    /// The check changed the working tree while running. Exit 14.
    HermeticityViolation,
    /// The check stayed green for a planted mutant in changed code. Exit 15.
    CheckInadequate,
    /// A judgment is pending: the judge escalated or could not decide, or a destructive
    /// agent action waited for a person's confirmation past the approval timeout of an
    /// attended run (SPEC §12). Exit 16.
    EscalationPending,
    /// The judge rejected a green iteration's work. Exit 16.
    ReviewerRejected,
    /// No new best failing-set size within K attempts while failures changed. Exit 17.
    NoProgressDetected,
    /// The same failing set with the same messages for R consecutive attempts. Exit 17.
    SameFailureRepeated,
    /// The failing set returned to an earlier one via a different set (A → B → A). Exit 17.
    OscillationDetected,
    /// A test that passed in an accepted iteration failed again. Exit 17.
    SameTestRegressed,
    /// Two tests trade places across at least two cycles. Exit 17.
    UnsatisfiableConstraints,
    /// The loop stalled though the tree kept changing, and a core never passed. Exit 17.
    InfeasibleSuspected,
    /// A run-total cap (USD, tokens, wall clock) was crossed. Exit 18.
    BudgetExceeded,
    /// One iteration cost far more than the earlier ones. Exit 18.
    CostAnomaly,
    /// The work step printed nothing for the stall timeout, or a watchdog found the
    /// heartbeat stale. Exit 19.
    HeartbeatStale,
    /// The primary model differs from the pinned one. Exit 19.
    ModelDriftDetected,
    /// Too many accepted iterations no person has acknowledged. Exit 19.
    ComprehensionDebtExceeded,
    /// The context the agent must be given cannot fit the model's window. Exit 19.
    ContextBudgetUnsatisfiable,
    /// Configuration or stored state failed validation. Exit 20.
    InvariantFailed,
    /// The workdir cannot host a run (no check, missing dir, locked). Exit 30.
    WorkspaceInvalid,
    /// A requested isolation cannot be provided on this machine. Exit 30.
    IsolationUnsatisfiable,
    /// A step failed to run: non-zero work step, spawn failure, timeout. Exit 40.
    ExecutionFailure,
    /// loopexec itself failed. Exit 50.
    InternalError,
}

/// The coarse exit classes (SPEC §2). The numeric value is the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExitClass {
    Nominal,
    Converged,
    TerminalBlocked,
    IterationCap,
    Integrity,
    OracleUntrusted,
    CheckInadequate,
    ResumableJudgment,
    NoConvergence,
    Budget,
    LivenessDrift,
    Invariant,
    Workspace,
    Execution,
    Internal,
}

impl ExitClass {
    /// Every class, in exit-code order.
    pub const ALL: [ExitClass; 15] = [
        ExitClass::Nominal,
        ExitClass::Converged,
        ExitClass::TerminalBlocked,
        ExitClass::IterationCap,
        ExitClass::Integrity,
        ExitClass::OracleUntrusted,
        ExitClass::CheckInadequate,
        ExitClass::ResumableJudgment,
        ExitClass::NoConvergence,
        ExitClass::Budget,
        ExitClass::LivenessDrift,
        ExitClass::Invariant,
        ExitClass::Workspace,
        ExitClass::Execution,
        ExitClass::Internal,
    ];

    /// The process exit code of this class.
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            ExitClass::Nominal => 0,
            ExitClass::Converged => 10,
            ExitClass::TerminalBlocked => 11,
            ExitClass::IterationCap => 12,
            ExitClass::Integrity => 13,
            ExitClass::OracleUntrusted => 14,
            ExitClass::CheckInadequate => 15,
            ExitClass::ResumableJudgment => 16,
            ExitClass::NoConvergence => 17,
            ExitClass::Budget => 18,
            ExitClass::LivenessDrift => 19,
            ExitClass::Invariant => 20,
            ExitClass::Workspace => 30,
            ExitClass::Execution => 40,
            ExitClass::Internal => 50,
        }
    }

    /// The class name as written in `exit-codes.md`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ExitClass::Nominal => "nominal",
            ExitClass::Converged => "converged",
            ExitClass::TerminalBlocked => "terminal-blocked",
            ExitClass::IterationCap => "iteration-cap",
            ExitClass::Integrity => "integrity",
            ExitClass::OracleUntrusted => "oracle-untrusted",
            ExitClass::CheckInadequate => "check-inadequate",
            ExitClass::ResumableJudgment => "resumable-judgment",
            ExitClass::NoConvergence => "no-convergence",
            ExitClass::Budget => "budget",
            ExitClass::LivenessDrift => "liveness/drift",
            ExitClass::Invariant => "invariant",
            ExitClass::Workspace => "workspace",
            ExitClass::Execution => "execution",
            ExitClass::Internal => "internal",
        }
    }
}

/// Who decides a reason (halt-reasons doctrine: what a number can decide, what it
/// cannot, and what only a person can).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Owner {
    /// Decided by loopexec from state, not reproducible offline (signals, spawn errors).
    Loopexec,
    /// Decided by loopexec's pure detectors; re-derivable offline from the receipt.
    LoopexecDeterministic,
    /// A reviewer layer above the deterministic gate (the judge).
    Reviewer,
    /// A person.
    Human,
}

impl Owner {
    /// Stable wire name (`loopexec`, `loopexec_deterministic`, `reviewer`, `human`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Owner::Loopexec => "loopexec",
            Owner::LoopexecDeterministic => "loopexec_deterministic",
            Owner::Reviewer => "reviewer",
            Owner::Human => "human",
        }
    }
}

/// What the operator should do next, as `explain-halt` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Advice {
    /// Nothing: the work is done.
    Done,
    /// The loop was still improving: more iterations are a rational retry.
    RaiseTheLimit,
    /// More budget will not help; change the task, the approach or the agent.
    DoNotRetry,
    /// The instrument (the check) must be fixed before any verdict is believed.
    FixTheCheck,
    /// The machine, workdir or configuration must be fixed.
    FixTheEnvironment,
    /// A person must look and decide.
    HumanMustDecide,
}

impl Advice {
    /// Stable wire name, e.g. `raise_the_limit`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Advice::Done => "done",
            Advice::RaiseTheLimit => "raise_the_limit",
            Advice::DoNotRetry => "do_not_retry",
            Advice::FixTheCheck => "fix_the_check",
            Advice::FixTheEnvironment => "fix_the_environment",
            Advice::HumanMustDecide => "human_must_decide",
        }
    }
}

impl HaltReason {
    /// All 33 reasons, in taxonomy order.
    pub const ALL: [HaltReason; 33] = [
        HaltReason::SuccessConditionMet,
        HaltReason::NoActionableTasks,
        HaltReason::HumanRequired,
        HaltReason::MaxIterationsReached,
        HaltReason::BlockedPathModified,
        HaltReason::RewardHackingDetected,
        HaltReason::MetricIntegrityViolation,
        HaltReason::CredentialScopeInvalid,
        HaltReason::ObjectiveUnverified,
        HaltReason::CheckFlaky,
        HaltReason::CheckHasSideEffects,
        HaltReason::CheckNotHermetic,
        HaltReason::HermeticityViolation,
        HaltReason::CheckInadequate,
        HaltReason::EscalationPending,
        HaltReason::ReviewerRejected,
        HaltReason::NoProgressDetected,
        HaltReason::SameFailureRepeated,
        HaltReason::OscillationDetected,
        HaltReason::SameTestRegressed,
        HaltReason::UnsatisfiableConstraints,
        HaltReason::InfeasibleSuspected,
        HaltReason::BudgetExceeded,
        HaltReason::CostAnomaly,
        HaltReason::HeartbeatStale,
        HaltReason::ModelDriftDetected,
        HaltReason::ComprehensionDebtExceeded,
        HaltReason::ContextBudgetUnsatisfiable,
        HaltReason::InvariantFailed,
        HaltReason::WorkspaceInvalid,
        HaltReason::IsolationUnsatisfiable,
        HaltReason::ExecutionFailure,
        HaltReason::InternalError,
    ];

    /// The stable `halt_reason` string.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            HaltReason::SuccessConditionMet => "success_condition_met",
            HaltReason::NoActionableTasks => "no_actionable_tasks",
            HaltReason::HumanRequired => "human_required",
            HaltReason::MaxIterationsReached => "max_iterations_reached",
            HaltReason::BlockedPathModified => "blocked_path_modified",
            HaltReason::RewardHackingDetected => "reward_hacking_detected",
            HaltReason::MetricIntegrityViolation => "metric_integrity_violation",
            HaltReason::CredentialScopeInvalid => "credential_scope_invalid",
            HaltReason::ObjectiveUnverified => "objective_unverified",
            HaltReason::CheckFlaky => "check_flaky",
            HaltReason::CheckHasSideEffects => "check_has_side_effects",
            HaltReason::CheckNotHermetic => "check_not_hermetic",
            HaltReason::HermeticityViolation => "hermeticity_violation",
            HaltReason::CheckInadequate => "check_inadequate",
            HaltReason::EscalationPending => "escalation_pending",
            HaltReason::ReviewerRejected => "reviewer_rejected",
            HaltReason::NoProgressDetected => "no_progress_detected",
            HaltReason::SameFailureRepeated => "same_failure_repeated",
            HaltReason::OscillationDetected => "oscillation_detected",
            HaltReason::SameTestRegressed => "same_test_regressed",
            HaltReason::UnsatisfiableConstraints => "unsatisfiable_constraints",
            HaltReason::InfeasibleSuspected => "infeasible_suspected",
            HaltReason::BudgetExceeded => "budget_exceeded",
            HaltReason::CostAnomaly => "cost_anomaly",
            HaltReason::HeartbeatStale => "heartbeat_stale",
            HaltReason::ModelDriftDetected => "model_drift_detected",
            HaltReason::ComprehensionDebtExceeded => "comprehension_debt_exceeded",
            HaltReason::ContextBudgetUnsatisfiable => "context_budget_unsatisfiable",
            HaltReason::InvariantFailed => "invariant_failed",
            HaltReason::WorkspaceInvalid => "workspace_invalid",
            HaltReason::IsolationUnsatisfiable => "isolation_unsatisfiable",
            HaltReason::ExecutionFailure => "execution_failure",
            HaltReason::InternalError => "internal_error",
        }
    }

    /// Parses a `halt_reason` string (used when reading receipts back).
    #[must_use]
    pub fn from_str_opt(s: &str) -> Option<HaltReason> {
        HaltReason::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// The exit class of this reason.
    #[must_use]
    pub fn class(self) -> ExitClass {
        match self {
            HaltReason::SuccessConditionMet => ExitClass::Converged,
            HaltReason::NoActionableTasks | HaltReason::HumanRequired => ExitClass::TerminalBlocked,
            HaltReason::MaxIterationsReached => ExitClass::IterationCap,
            HaltReason::BlockedPathModified
            | HaltReason::RewardHackingDetected
            | HaltReason::MetricIntegrityViolation
            | HaltReason::CredentialScopeInvalid
            | HaltReason::ObjectiveUnverified => ExitClass::Integrity,
            HaltReason::CheckFlaky
            | HaltReason::CheckHasSideEffects
            | HaltReason::CheckNotHermetic
            | HaltReason::HermeticityViolation => ExitClass::OracleUntrusted,
            HaltReason::CheckInadequate => ExitClass::CheckInadequate,
            HaltReason::EscalationPending | HaltReason::ReviewerRejected => {
                ExitClass::ResumableJudgment
            }
            HaltReason::NoProgressDetected
            | HaltReason::SameFailureRepeated
            | HaltReason::OscillationDetected
            | HaltReason::SameTestRegressed
            | HaltReason::UnsatisfiableConstraints
            | HaltReason::InfeasibleSuspected => ExitClass::NoConvergence,
            HaltReason::BudgetExceeded | HaltReason::CostAnomaly => ExitClass::Budget,
            HaltReason::HeartbeatStale
            | HaltReason::ModelDriftDetected
            | HaltReason::ComprehensionDebtExceeded
            | HaltReason::ContextBudgetUnsatisfiable => ExitClass::LivenessDrift,
            HaltReason::InvariantFailed => ExitClass::Invariant,
            HaltReason::WorkspaceInvalid | HaltReason::IsolationUnsatisfiable => {
                ExitClass::Workspace
            }
            HaltReason::ExecutionFailure => ExitClass::Execution,
            HaltReason::InternalError => ExitClass::Internal,
        }
    }

    /// The process exit code (the class's code).
    #[must_use]
    pub fn exit_code(self) -> u8 {
        self.class().code()
    }

    /// Who decides this reason.
    #[must_use]
    pub fn owner(self) -> Owner {
        match self {
            HaltReason::NoActionableTasks
            | HaltReason::HumanRequired
            | HaltReason::EscalationPending => Owner::Human,
            HaltReason::RewardHackingDetected | HaltReason::ReviewerRejected => Owner::Reviewer,
            HaltReason::SuccessConditionMet
            | HaltReason::MaxIterationsReached
            | HaltReason::InvariantFailed
            | HaltReason::WorkspaceInvalid
            | HaltReason::IsolationUnsatisfiable
            | HaltReason::ExecutionFailure
            | HaltReason::InternalError => Owner::Loopexec,
            HaltReason::BlockedPathModified
            | HaltReason::MetricIntegrityViolation
            | HaltReason::CredentialScopeInvalid
            | HaltReason::ObjectiveUnverified
            | HaltReason::CheckFlaky
            | HaltReason::CheckHasSideEffects
            | HaltReason::CheckNotHermetic
            | HaltReason::HermeticityViolation
            | HaltReason::CheckInadequate
            | HaltReason::NoProgressDetected
            | HaltReason::SameFailureRepeated
            | HaltReason::OscillationDetected
            | HaltReason::SameTestRegressed
            | HaltReason::UnsatisfiableConstraints
            | HaltReason::InfeasibleSuspected
            | HaltReason::BudgetExceeded
            | HaltReason::CostAnomaly
            | HaltReason::HeartbeatStale
            | HaltReason::ModelDriftDetected
            | HaltReason::ComprehensionDebtExceeded
            | HaltReason::ContextBudgetUnsatisfiable => Owner::LoopexecDeterministic,
        }
    }

    /// What to do next (`explain-halt`).
    #[must_use]
    pub fn advice(self) -> Advice {
        match self {
            HaltReason::SuccessConditionMet => Advice::Done,
            HaltReason::MaxIterationsReached => Advice::RaiseTheLimit,
            HaltReason::NoProgressDetected
            | HaltReason::SameFailureRepeated
            | HaltReason::OscillationDetected
            | HaltReason::SameTestRegressed
            | HaltReason::UnsatisfiableConstraints
            | HaltReason::InfeasibleSuspected
            | HaltReason::BudgetExceeded
            | HaltReason::CostAnomaly
            | HaltReason::ModelDriftDetected => Advice::DoNotRetry,
            HaltReason::CheckFlaky
            | HaltReason::CheckHasSideEffects
            | HaltReason::CheckNotHermetic
            | HaltReason::HermeticityViolation
            | HaltReason::CheckInadequate => Advice::FixTheCheck,
            HaltReason::WorkspaceInvalid
            | HaltReason::IsolationUnsatisfiable
            | HaltReason::InvariantFailed
            | HaltReason::ExecutionFailure
            | HaltReason::InternalError
            | HaltReason::CredentialScopeInvalid
            | HaltReason::ContextBudgetUnsatisfiable => Advice::FixTheEnvironment,
            HaltReason::NoActionableTasks
            | HaltReason::HumanRequired
            | HaltReason::BlockedPathModified
            | HaltReason::RewardHackingDetected
            | HaltReason::MetricIntegrityViolation
            | HaltReason::ObjectiveUnverified
            | HaltReason::EscalationPending
            | HaltReason::ReviewerRejected
            | HaltReason::HeartbeatStale
            | HaltReason::ComprehensionDebtExceeded => Advice::HumanMustDecide,
        }
    }
}

impl fmt::Display for HaltReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of [`crate::decide::decide`]: go on, or stop for a reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    Continue,
    Halt(Halt),
}

/// A computed halt: the reason, what contributed to it, and a one-line explanation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Halt {
    pub reason: HaltReason,
    /// The facts that led here, e.g. `"collected set lost tests::b"`, most important
    /// first. Rendered as `errors[]` in `--json` when the halt is not a success.
    pub contributors: Vec<String>,
    /// Structured detail for dashboards (thresholds, figures, test ids).
    #[serde(default)]
    pub detail: serde_json::Value,
}

impl Halt {
    /// A halt with contributors and no structured detail.
    #[must_use]
    pub fn new(reason: HaltReason, contributors: Vec<String>) -> Self {
        Halt {
            reason,
            contributors,
            detail: serde_json::Value::Null,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_round_trips_and_is_unique() {
        let mut seen = std::collections::HashSet::new();
        for r in HaltReason::ALL {
            assert!(seen.insert(r.as_str()), "duplicate {r}");
            assert_eq!(HaltReason::from_str_opt(r.as_str()), Some(r));
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
        }
        assert_eq!(seen.len(), 33);
    }

    #[test]
    fn fourteen_classes_are_used() {
        let classes: std::collections::HashSet<_> =
            HaltReason::ALL.iter().map(|r| r.class()).collect();
        // Nominal has no reason; every other class has at least one.
        assert_eq!(classes.len(), 14);
        assert!(!classes.contains(&ExitClass::Nominal));
    }
}

#[cfg(test)]
mod exit_codes_doc {
    use super::*;

    /// exit-codes.md is the table CI authors read: it must list every reason with its
    /// code and class, and nothing else.
    #[test]
    fn exit_codes_md_agrees_with_the_enum() {
        let doc = include_str!("../exit-codes.md");
        let mut seen = std::collections::BTreeMap::new();
        for line in doc
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| exit"))
        {
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            let (Ok(code), class, reason) = (cells[0].parse::<u8>(), cells[1], cells[2]) else {
                continue;
            };
            if let Some(r) = HaltReason::from_str_opt(reason) {
                assert_eq!(r.exit_code(), code, "{reason}: exit-codes.md says {code}");
                assert_eq!(
                    r.class().as_str(),
                    class,
                    "{reason}: exit-codes.md says class {class}"
                );
                assert!(seen.insert(r, code).is_none(), "{reason} listed twice");
            } else {
                assert!(
                    reason.starts_with('('),
                    "exit-codes.md lists unknown reason `{reason}`"
                );
            }
        }
        for r in HaltReason::ALL {
            assert!(seen.contains_key(&r), "exit-codes.md does not list {r}");
        }
    }
}
