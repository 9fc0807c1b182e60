//! Oracle trust in the loop (exit class 14): the check is the instrument, and an
//! instrument that changes what it measures, or answers differently on the same
//! input, certifies nothing.
//!
//! * `hermeticity_violation`: the tree after a check run differs from the tree before
//!   it (paths matching `[guards] check_may_write` and the built-in cache globs
//!   excepted).
//! * `check_flaky`: two check runs on the same tree (same git tree id, or the
//!   confirmation runs of one iteration) disagree on the verdict or the failing set.
//!   Every such run is a free Bernoulli sample; the receipt carries the observed
//!   disagreement rate with its Wilson 95 % interval.

use crate::config::RunConfig;
use crate::halt::{Halt, HaltReason};
use crate::receipt::events::CheckFinished;
use crate::trajectory::{is_green, Trajectory};
use std::collections::{BTreeMap, BTreeSet};

/// Caches a check may write without breaking hermeticity.
pub const DEFAULT_CHECK_MAY_WRITE: &[&str] = &[
    "**/__pycache__/**",
    "**/*.pyc",
    ".pytest_cache/**",
    "**/.pytest_cache/**",
    ".mypy_cache/**",
    ".ruff_cache/**",
    "node_modules/.cache/**",
    ".nyc_output/**",
    "coverage/**",
];

/// `hermeticity_violation` for one check run.
#[must_use]
pub fn hermeticity(cfg: &RunConfig, c: &CheckFinished) -> Option<Halt> {
    let globs: Vec<&str> = DEFAULT_CHECK_MAY_WRITE
        .iter()
        .copied()
        .chain(cfg.guards.check_may_write.iter().map(String::as_str))
        .collect();
    // Invalid globs are rejected when the config is validated.
    let allowed =
        crate::observe::guards::build_globset(&globs).unwrap_or_else(|_| globset::GlobSet::empty());
    let wrote: Vec<&String> = c
        .check_wrote
        .iter()
        .filter(|p| !allowed.is_match(p.as_str()))
        .collect();
    if wrote.is_empty() {
        return None;
    }
    Some(Halt {
        reason: HaltReason::HermeticityViolation,
        contributors: wrote
            .iter()
            .map(|p| format!("the check changed the working tree: {p}"))
            .collect(),
        detail: serde_json::json!({"iteration": c.iteration, "paths": wrote}),
    })
}

type Verdict = (bool, BTreeSet<String>);

fn verdict(c: &CheckFinished, code: i32) -> Verdict {
    (is_green(c, code), c.parsed.failing())
}

/// `check_flaky`: disagreement between check runs on an identical tree.
#[must_use]
pub fn flaky(t: &Trajectory, code: i32) -> Option<Halt> {
    // Runs are compared within two kinds of group: all runs on the same tree (git
    // tree id before the check), and the runs of one iteration (the main run and its
    // confirmations, which nothing but the check itself ran between).
    let mut groups: BTreeMap<String, Vec<(u32, u32, Verdict)>> = BTreeMap::new();
    for it in &t.iterations {
        for c in &it.checks {
            if c.step.timed_out || c.step.stopped.is_some() || c.step.cannot_start() {
                continue;
            }
            if !c.check_wrote.is_empty() {
                continue; // judged by hermeticity
            }
            let v = (it.iteration, c.attempt, verdict(c, code));
            if let Some(tree) = &c.tree_before {
                groups
                    .entry(format!("tree {tree}"))
                    .or_default()
                    .push(v.clone());
            }
            groups
                .entry(format!("iteration {}", it.iteration))
                .or_default()
                .push(v);
        }
    }
    let last_iteration = t.last()?.iteration;
    for (tree, runs) in &groups {
        if !runs.iter().any(|r| r.0 == last_iteration) {
            continue; // only the newest observation can raise a new halt
        }
        let first = &runs[0].2;
        let Some(odd) = runs.iter().find(|r| r.2 != *first) else {
            continue;
        };
        let n = runs.len() as u64;
        let disagree = runs.iter().filter(|r| r.2 != *first).count() as u64;
        let minority = disagree.min(n - disagree);
        let (lo, hi) = crate::stats::wilson_interval(minority, n, 0.95);
        let describe = |v: &Verdict| {
            if v.0 {
                "green".to_string()
            } else {
                format!("red ({} failing)", v.1.len())
            }
        };
        return Some(Halt {
            reason: HaltReason::CheckFlaky,
            contributors: vec![
                format!(
                    "the check answered {} at iteration {} and {} at iteration {} on an identical tree",
                    describe(first),
                    runs[0].0,
                    describe(&odd.2),
                    odd.0
                ),
                format!(
                    "observed flake rate {minority}/{n}, Wilson 95% interval [{lo:.3}, {hi:.3}]"
                ),
            ],
            detail: serde_json::json!({
                "tree": tree,
                "runs": n,
                "disagreeing": minority,
                "flake_rate": minority as f64 / n as f64,
                "wilson_95": [lo, hi],
                "samples": runs.iter().map(|r| serde_json::json!({"iteration": r.0, "attempt": r.1, "green": r.2 .0, "failing": r.2 .1})).collect::<Vec<_>>(),
            }),
        });
    }
    None
}
