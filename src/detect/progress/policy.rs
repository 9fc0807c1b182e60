//! The `[halt]` table of `loop.toml`: which progress conditions are on, their
//! thresholds, and what the loop does after a rejected (regressing) attempt.
//!
//! Every table and every key is optional; a missing one takes the value of
//! [`ProgressPolicy::default`]. Unknown keys are rejected at parse time so a typo
//! (`repeat = 5`) cannot silently leave the default in force. Values are checked by
//! [`ProgressPolicy::validate`], whose error names the offending key by its full
//! dotted path (e.g. `halt.same_failure_repeated.repeats`).
//!
//! ```toml
//! [halt]
//! on_regression = "revert"            # or "halt"
//! [halt.same_failure_repeated]
//! enabled = true
//! repeats = 3
//! similarity = 0.9
//! [halt.no_progress_detected]
//! enabled = true
//! k = 3
//! [halt.oscillation_detected]
//! enabled = true
//! [halt.same_test_regressed]
//! enabled = true
//! [halt.unsatisfiable_constraints]
//! enabled = true
//! cycles = 2
//! [halt.infeasible_suspected]
//! enabled = true
//! k = 3
//! ```

use serde::{Deserialize, Serialize};

/// What the loop does when an attempt is rejected by the ratchet (its passing set
/// is not a superset of the last accepted one). Wire form: `"revert"` / `"halt"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnRegression {
    /// Restore the last accepted snapshot and continue (the default). The
    /// `same_test_regressed` condition never fires in this mode.
    #[default]
    Revert,
    /// Stop: a test that passed in an accepted iteration failing again halts the
    /// loop with `same_test_regressed` (when that condition is enabled).
    Halt,
}

/// `[halt.same_failure_repeated]`: the "three strikes" rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SameFailurePolicy {
    /// Whether the condition can fire. Default `true`.
    pub enabled: bool,
    /// How many consecutive attempts (baseline excluded) must show the same failure.
    /// At least 2. Default 3.
    pub repeats: u32,
    /// Minimum character-level similarity ratio (0 < s <= 1) for two failure
    /// messages of one test to count as the same. Default 0.9.
    pub similarity: f64,
}

impl Default for SameFailurePolicy {
    fn default() -> Self {
        SameFailurePolicy {
            enabled: true,
            repeats: 3,
            similarity: 0.9,
        }
    }
}

/// `[halt.no_progress_detected]` and `[halt.infeasible_suspected]`: a condition
/// judged over a window of the last `k` attempts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WindowPolicy {
    /// Whether the condition can fire. Default `true`.
    pub enabled: bool,
    /// Window length in attempts (iterations >= 1). At least 1. Default 3.
    pub k: u32,
}

impl Default for WindowPolicy {
    fn default() -> Self {
        WindowPolicy {
            enabled: true,
            k: 3,
        }
    }
}

/// `[halt.oscillation_detected]` and `[halt.same_test_regressed]`: an on/off switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Toggle {
    /// Whether the condition can fire. Default `true`.
    pub enabled: bool,
}

impl Default for Toggle {
    fn default() -> Self {
        Toggle { enabled: true }
    }
}

/// `[halt.unsatisfiable_constraints]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CyclesPolicy {
    /// Whether the condition can fire. Default `true`.
    pub enabled: bool,
    /// Completed trade cycles (see the `progress` module doc) needed to fire.
    /// At least 1. Default 2.
    pub cycles: u32,
}

impl Default for CyclesPolicy {
    fn default() -> Self {
        CyclesPolicy {
            enabled: true,
            cycles: 2,
        }
    }
}

/// The whole `[halt]` table as the progress detectors read it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProgressPolicy {
    /// After a rejected attempt: revert to the last accepted snapshot, or halt.
    pub on_regression: OnRegression,
    pub same_failure_repeated: SameFailurePolicy,
    pub no_progress_detected: WindowPolicy,
    pub oscillation_detected: Toggle,
    pub same_test_regressed: Toggle,
    pub unsatisfiable_constraints: CyclesPolicy,
    pub infeasible_suspected: WindowPolicy,
}

/// A `[halt]` value outside its allowed range. The lead maps it to `invariant_failed`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyError {
    /// `field` is the full dotted key, `value` its rendering, `rule` the constraint.
    #[error("{field} = {value}: {rule}")]
    OutOfRange {
        field: &'static str,
        value: String,
        rule: &'static str,
    },
}

impl ProgressPolicy {
    /// Checks every threshold: `repeats >= 2`, both `k >= 1`, `0 < similarity <= 1`
    /// (NaN rejected), `cycles >= 1`. Returns the first violation in table order.
    ///
    /// # Errors
    /// [`PolicyError::OutOfRange`] naming the key, e.g. `halt.no_progress_detected.k`.
    pub fn validate(&self) -> Result<(), PolicyError> {
        let sf = &self.same_failure_repeated;
        if sf.repeats < 2 {
            return Err(PolicyError::OutOfRange {
                field: "halt.same_failure_repeated.repeats",
                value: sf.repeats.to_string(),
                rule: "must be at least 2",
            });
        }
        // Written so that NaN fails the check.
        if !(sf.similarity > 0.0 && sf.similarity <= 1.0) {
            return Err(PolicyError::OutOfRange {
                field: "halt.same_failure_repeated.similarity",
                value: sf.similarity.to_string(),
                rule: "must be greater than 0 and at most 1",
            });
        }
        if self.no_progress_detected.k < 1 {
            return Err(PolicyError::OutOfRange {
                field: "halt.no_progress_detected.k",
                value: self.no_progress_detected.k.to_string(),
                rule: "must be at least 1",
            });
        }
        if self.unsatisfiable_constraints.cycles < 1 {
            return Err(PolicyError::OutOfRange {
                field: "halt.unsatisfiable_constraints.cycles",
                value: self.unsatisfiable_constraints.cycles.to_string(),
                rule: "must be at least 1",
            });
        }
        if self.infeasible_suspected.k < 1 {
            return Err(PolicyError::OutOfRange {
                field: "halt.infeasible_suspected.k",
                value: self.infeasible_suspected.k.to_string(),
                rule: "must be at least 1",
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct LoopToml {
        #[serde(default)]
        halt: ProgressPolicy,
    }

    fn parse(text: &str) -> Result<ProgressPolicy, toml::de::Error> {
        toml::from_str::<LoopToml>(text).map(|l| l.halt)
    }

    #[test]
    fn defaults_match_the_documented_values() {
        let p = ProgressPolicy::default();
        assert_eq!(p.on_regression, OnRegression::Revert);
        assert_eq!(p.same_failure_repeated.repeats, 3);
        assert!((p.same_failure_repeated.similarity - 0.9).abs() < 1e-12);
        assert_eq!(p.no_progress_detected.k, 3);
        assert_eq!(p.infeasible_suspected.k, 3);
        assert_eq!(p.unsatisfiable_constraints.cycles, 2);
        assert!(p.oscillation_detected.enabled && p.same_test_regressed.enabled);
        assert!(p.validate().is_ok());
    }

    #[test]
    fn missing_table_and_partial_tables_take_defaults() {
        assert_eq!(parse("").unwrap(), ProgressPolicy::default());
        let p = parse("[halt.same_failure_repeated]\nrepeats = 5\n").unwrap();
        assert_eq!(p.same_failure_repeated.repeats, 5);
        assert!(p.same_failure_repeated.enabled);
        assert!((p.same_failure_repeated.similarity - 0.9).abs() < 1e-12);
    }

    #[test]
    fn full_table_parses() {
        let text = r#"
[halt]
on_regression = "halt"
[halt.same_failure_repeated]
enabled = false
repeats = 4
similarity = 0.75
[halt.no_progress_detected]
enabled = true
k = 5
[halt.oscillation_detected]
enabled = false
[halt.same_test_regressed]
enabled = true
[halt.unsatisfiable_constraints]
enabled = true
cycles = 3
[halt.infeasible_suspected]
enabled = false
k = 6
"#;
        let p = parse(text).unwrap();
        assert_eq!(p.on_regression, OnRegression::Halt);
        assert!(!p.same_failure_repeated.enabled);
        assert_eq!(p.same_failure_repeated.repeats, 4);
        assert_eq!(p.no_progress_detected.k, 5);
        assert!(!p.oscillation_detected.enabled);
        assert_eq!(p.unsatisfiable_constraints.cycles, 3);
        assert!(!p.infeasible_suspected.enabled);
        assert_eq!(p.infeasible_suspected.k, 6);
        // Round trip through serde keeps the values.
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json["on_regression"], "halt");
        let back: ProgressPolicy = serde_json::from_value(json).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn unknown_keys_and_bad_enum_values_are_rejected() {
        assert!(parse("[halt.same_failure_repeated]\nrepeat = 5\n").is_err());
        assert!(parse("[halt]\nbogus = 1\n").is_err());
        assert!(parse("[halt]\non_regression = \"ignore\"\n").is_err());
    }

    #[test]
    fn validate_names_the_bad_field() {
        type Mutation = Box<dyn Fn(&mut ProgressPolicy)>;
        let cases: Vec<(Mutation, &str)> = vec![
            (
                Box::new(|p| p.same_failure_repeated.repeats = 1),
                "halt.same_failure_repeated.repeats",
            ),
            (
                Box::new(|p| p.same_failure_repeated.similarity = 0.0),
                "halt.same_failure_repeated.similarity",
            ),
            (
                Box::new(|p| p.same_failure_repeated.similarity = 1.5),
                "halt.same_failure_repeated.similarity",
            ),
            (
                Box::new(|p| p.same_failure_repeated.similarity = f64::NAN),
                "halt.same_failure_repeated.similarity",
            ),
            (
                Box::new(|p| p.no_progress_detected.k = 0),
                "halt.no_progress_detected.k",
            ),
            (
                Box::new(|p| p.unsatisfiable_constraints.cycles = 0),
                "halt.unsatisfiable_constraints.cycles",
            ),
            (
                Box::new(|p| p.infeasible_suspected.k = 0),
                "halt.infeasible_suspected.k",
            ),
        ];
        for (mutate, field) in cases {
            let mut p = ProgressPolicy::default();
            mutate(&mut p);
            let err = p.validate().unwrap_err();
            let PolicyError::OutOfRange { field: got, .. } = &err;
            assert_eq!(*got, field);
            assert!(err.to_string().starts_with(field), "{err}");
        }
        let mut edge = ProgressPolicy::default();
        edge.same_failure_repeated.similarity = 1.0;
        edge.same_failure_repeated.repeats = 2;
        edge.unsatisfiable_constraints.cycles = 1;
        assert!(edge.validate().is_ok());
    }
}
