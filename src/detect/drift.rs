//! `model_drift_detected` over the whole identity tuple (SPEC §9.6): the primary
//! model's (provider, model, version, CLI, CLI version), compared field by field with
//! the run's reference identity — the first one observed — and the model with the
//! pin when one is given.
//!
//! | field | drift when |
//! |---|---|
//! | model | it does not match `--model` / `[model] pin` (a family pin accepts any snapshot); without a pin, it differs from the first observed id |
//! | provider | both known and different |
//! | version | both known and different, unless a family pin accepts any snapshot |
//! | cli | both known and different (claude-code → codex is another agent) |
//! | cli_version | both known and different, unless `[models] allow_cli_upgrade = true` |
//!
//! A field unknown on either side is not compared: a missing reading is no evidence
//! of change. Every changed field is named in the verdict.

use crate::config::RunConfig;
use crate::halt::{Halt, HaltReason};
use crate::observe::usage::{IterationUsage, ModelIdentity};

/// One field of the identity that changed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Changed {
    pub field: &'static str,
    pub pinned: String,
    pub observed: String,
}

/// The fields of `now` that drifted from `reference` (and from `pin`, when given).
#[must_use]
pub fn changed_fields(
    reference: &ModelIdentity,
    now: &ModelIdentity,
    pin: Option<&str>,
    allow_cli_upgrade: bool,
) -> Vec<Changed> {
    let mut out = Vec::new();
    let mut push = |field: &'static str, pinned: &str, observed: &str| {
        out.push(Changed {
            field,
            pinned: pinned.to_string(),
            observed: observed.to_string(),
        });
    };
    let family_pin = pin.is_some_and(|p| p.trim() != now.model && now.matches_pin(p));
    match pin {
        Some(p) if !now.matches_pin(p) => push("model", p.trim(), &now.model),
        Some(_) => {}
        None if reference.model != now.model && reference.base_model() != now.base_model() => {
            push("model", &reference.model, &now.model);
        }
        None => {}
    }
    let both = |a: &Option<String>, b: &Option<String>| match (a, b) {
        (Some(a), Some(b)) if a != b => Some((a.clone(), b.clone())),
        _ => None,
    };
    if let Some((a, b)) = both(&reference.provider, &now.provider) {
        push("provider", &a, &b);
    }
    if !family_pin {
        if let Some((a, b)) = both(&reference.version, &now.version) {
            push("version", &a, &b);
        }
    }
    if let Some((a, b)) = both(&reference.cli, &now.cli) {
        push("cli", &a, &b);
    }
    if !allow_cli_upgrade {
        if let Some((a, b)) = both(&reference.cli_version, &now.cli_version) {
            push("cli_version", &a, &b);
        }
    }
    out
}

/// `model_drift_detected` for iteration `it` whose usage is `u`; `us` is every
/// iteration's usage so far, in order.
#[must_use]
pub fn detect(
    cfg: &RunConfig,
    us: &[(u32, &IterationUsage)],
    it: u32,
    u: &IterationUsage,
) -> Option<Halt> {
    let now = u.primary_model.as_ref()?;
    let (first_it, reference) = us
        .iter()
        .find_map(|(i, x)| x.primary_model.as_ref().map(|m| (*i, m)))?;
    let pin = cfg.model.pin.as_deref();
    let changed = changed_fields(reference, now, pin, cfg.models.allow_cli_upgrade);
    if changed.is_empty() {
        return None;
    }
    let source = match pin {
        Some(_) => "pinned with --model / [model] pin".to_string(),
        None => format!("pinned by iteration {first_it}, the first to report one"),
    };
    let mut contributors = Vec::new();
    for c in &changed {
        let what = if c.field == "model" {
            format!(
                "iteration {it}'s primary model is {} but the run is pinned to {} ({source})",
                c.observed, c.pinned
            )
        } else {
            format!(
                "iteration {it}'s {} is {} but was {} at iteration {first_it}",
                c.field, c.observed, c.pinned
            )
        };
        contributors.push(what);
    }
    if changed.iter().any(|c| c.field == "cli_version") {
        contributors.push(
            "a CLI upgrade mid-run is drift; allow it with [models] allow_cli_upgrade = true"
                .into(),
        );
    }
    Some(Halt {
        reason: HaltReason::ModelDriftDetected,
        contributors,
        detail: serde_json::json!({
            "iteration": it,
            "pin": pin.map_or_else(|| reference.model.clone(), str::to_string),
            "reference": reference,
            "observed": now,
            "changed": changed,
            "auxiliary_models": u.auxiliary_models,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(model: &str, cli: Option<&str>, cli_version: Option<&str>) -> ModelIdentity {
        let mut m = ModelIdentity::from_model_id(model, None, cli);
        m.cli_version = cli_version.map(str::to_string);
        m
    }

    #[test]
    fn field_by_field() {
        let base = id(
            "claude-sonnet-4-5-20250929",
            Some("claude-code"),
            Some("2.1.14"),
        );
        let cases: &[(ModelIdentity, Option<&str>, bool, &[&str])] = &[
            (base.clone(), None, false, &[]),
            (
                id(
                    "claude-opus-4-1-20250805",
                    Some("claude-code"),
                    Some("2.1.14"),
                ),
                None,
                false,
                &["model", "version"],
            ),
            (
                id(
                    "claude-sonnet-4-5-20251101",
                    Some("claude-code"),
                    Some("2.1.14"),
                ),
                None,
                false,
                &["version"],
            ),
            // A family pin accepts another snapshot.
            (
                id(
                    "claude-sonnet-4-5-20251101",
                    Some("claude-code"),
                    Some("2.1.14"),
                ),
                Some("claude-sonnet-4-5"),
                false,
                &[],
            ),
            (
                id(
                    "claude-sonnet-4-5-20250929",
                    Some("claude-code"),
                    Some("2.2.0"),
                ),
                None,
                false,
                &["cli_version"],
            ),
            (
                id(
                    "claude-sonnet-4-5-20250929",
                    Some("claude-code"),
                    Some("2.2.0"),
                ),
                None,
                true,
                &[],
            ),
            (
                id("claude-sonnet-4-5-20250929", Some("codex"), None),
                None,
                false,
                &["cli"],
            ),
            (
                id("gpt-5-2025-08-07", Some("claude-code"), Some("2.1.14")),
                None,
                false,
                &["model", "provider", "version"],
            ),
            // Unknown on one side: not compared.
            (
                id("claude-sonnet-4-5-20250929", None, None),
                None,
                false,
                &[],
            ),
            // The pin itself.
            (base.clone(), Some("claude-opus-4-1"), false, &["model"]),
        ];
        for (now, pin, allow, want) in cases {
            let got: Vec<&str> = changed_fields(&base, now, *pin, *allow)
                .iter()
                .map(|c| c.field)
                .collect();
            assert_eq!(got, *want, "{now:?} pin {pin:?} allow {allow}");
        }
    }
}
