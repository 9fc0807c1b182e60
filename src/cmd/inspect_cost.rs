//! `loopexec inspect-cost`: per-iteration spend, totals, percentiles (p50/p90/p99),
//! caps and anomalies — for one run (from its receipt) or for a supplied cost ledger
//! (one USD figure per line, or JSON lines with `cost_usd`).
//!
//! Figures are rounded for display: to 4 decimals in the human text, to 6 in `--json`
//! (sums and interpolated percentiles otherwise print float noise such as
//! `3.040000000000001`), and a zero never prints as `-0`.
//!
//! Exit 0 when nothing is wrong; exit 18 (`budget_exceeded` or `cost_anomaly`) when
//! the figures cross the cap or hold an anomaly, so a dashboard job can alert on it.

use super::bodies_ops::{CostAnomaly, CostRow, InspectCostBody};
use crate::cli::{InspectCostArgs, Outcome};
use crate::halt::HaltReason;
use crate::stats;
use crate::trajectory::Trajectory;
use serde_json::{json, Value};
use std::path::Path;

/// `x` rounded to `decimals` places, with a negative zero (an empty `f64` sum, or a
/// figure that rounds to zero from below) made `0.0`.
fn round_to(x: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    let r = (x * scale).round() / scale;
    // Adding +0.0 turns -0.0 into +0.0 and leaves every other value as it is.
    if r.is_finite() {
        r + 0.0
    } else {
        x
    }
}

/// A USD figure for `--json`: 6 decimals, never `-0.0`.
fn json_usd(x: f64) -> f64 {
    round_to(x, 6)
}

/// A USD figure for the human text: 4 decimals, never `-0.0000`.
fn human_usd(x: f64) -> String {
    format!("{:.4}", round_to(x, 4))
}

pub(crate) fn run(workdir: &Path, a: &InspectCostArgs) -> Outcome {
    let (source, rows, cap, sigma, min_history, tokens) = if let Some(ledger) = &a.ledger {
        let text = match std::fs::read_to_string(ledger) {
            Ok(t) => t,
            Err(e) => {
                return Outcome::error(
                    super::EXIT_ERROR,
                    format!("cannot read ledger {}: {e}", ledger.display()),
                    None,
                )
            }
        };
        let costs = match stats::parse_cost_ledger(&text) {
            Ok(c) => c,
            Err(e) => {
                return Outcome::error(
                    super::EXIT_ERROR,
                    format!("{}: {e}", ledger.display()),
                    Some(
                        "write one USD figure per line, or JSON lines with a cost_usd field".into(),
                    ),
                )
            }
        };
        let rows: Vec<(u32, Option<f64>, Value)> = costs
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                (
                    u32::try_from(i + 1).unwrap_or(u32::MAX),
                    Some(c),
                    Value::Null,
                )
            })
            .collect();
        (
            ledger.display().to_string(),
            rows,
            a.budget_usd,
            a.cost_sigma.unwrap_or(3.0),
            stats::DEFAULT_MIN_HISTORY,
            None,
        )
    } else {
        let run = match super::load_run(workdir, a.run_id.as_deref().or(a.run.as_deref())) {
            Ok(r) => r,
            Err(o) => return o,
        };
        let t = Trajectory::from_lines(&run.lines);
        let Some(cfg) = t.config().cloned() else {
            return Outcome::error(
                super::EXIT_ERROR,
                format!("run {} has no run_started event", run.run_id),
                None,
            );
        };
        let us = crate::detect::spend::usages(&t);
        let (_, tok) = crate::detect::spend::totals(&us);
        let rows = us
            .into_iter()
            .map(|(i, u)| {
                let detail = json!({
                    "cost_kind": u.cost_kind, "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                    "cached_input_tokens": u.cached_input_tokens, "primary_model": u.primary_model.as_ref().map(|m| m.model.clone()),
                });
                (i, u.cost_usd, detail)
            })
            .collect();
        (
            format!("run {}", run.run_id),
            rows,
            a.budget_usd.or(cfg.budget.usd),
            a.cost_sigma.unwrap_or(cfg.budget.cost_sigma),
            cfg.budget.cost_min_history,
            Some(tok),
        )
    };
    let known: Vec<f64> = rows.iter().filter_map(|r| r.1).collect();
    let total: f64 = known.iter().sum();
    let mut sorted = known.clone();
    sorted.sort_by(f64::total_cmp);
    let pct = |p| (!sorted.is_empty()).then(|| stats::percentile(&sorted, p));
    let (p50, p90, p99) = (pct(50.0), pct(90.0), pct(99.0));
    let mut anomalies = Vec::new();
    let mut history = Vec::new();
    for (i, c, _) in &rows {
        if let Some(c) = c {
            if let Some(an) = stats::is_anomalous(&history, *c, sigma, min_history) {
                anomalies.push(CostAnomaly {
                    iteration: *i,
                    cost_usd: json_usd(*c),
                    threshold: json_usd(an.threshold),
                    z: json_usd(an.z),
                });
            }
            history.push(*c);
        }
    }
    let over_cap = cap.is_some_and(|c| total > c);
    let mut human = format!("{source}\n{:>5}  {:>12}\n", "it", "cost (USD)");
    for (i, c, _) in &rows {
        human.push_str(&format!(
            "{i:>5}  {:>12}\n",
            c.map_or_else(|| "unknown".into(), human_usd)
        ));
    }
    let human_pct = |p: Option<f64>| p.map_or_else(|| "n/a".into(), human_usd);
    // unmetered iterations are unknown spend, never $0
    let unknown = rows.iter().filter(|r| r.1.is_none()).count();
    let total_text = match (known.is_empty(), unknown) {
        (true, n) if n > 0 => format!("unknown ({n} iteration(s) not metered)"),
        (_, 0) => format!("${}", human_usd(total)),
        (_, n) => format!("at least ${} ({n} iteration(s) unknown)", human_usd(total)),
    };
    human.push_str(&format!(
        "total {total_text}  p50 {}  p90 {}  p99 {}\n",
        human_pct(p50),
        human_pct(p90),
        human_pct(p99)
    ));
    if let Some(c) = cap {
        human.push_str(&format!(
            "cap ${c:.2}: {}\n",
            if over_cap { "EXCEEDED" } else { "within" }
        ));
    }
    for an in &anomalies {
        human.push_str(&format!(
            "anomaly: iteration {} cost ${} (threshold ${})\n",
            an.iteration,
            human_usd(an.cost_usd),
            human_usd(an.threshold)
        ));
    }
    let reason = if over_cap {
        Some(HaltReason::BudgetExceeded)
    } else if !anomalies.is_empty() {
        Some(HaltReason::CostAnomaly)
    } else {
        None
    };
    let body = InspectCostBody {
        source,
        total_usd: json_usd(total),
        total_tokens: tokens,
        unknown_cost_iterations: unknown,
        total_known: unknown == 0,
        iterations: rows
            .into_iter()
            .map(|(iteration, c, usage)| CostRow {
                iteration,
                cost_usd: c.map(json_usd),
                usage,
            })
            .collect(),
        p50: p50.map(json_usd),
        p90: p90.map(json_usd),
        p99: p99.map(json_usd),
        cap_usd: cap,
        cost_sigma: sigma,
        halt_reason: reason.map(|r| r.as_str().to_string()),
        anomalies,
        human,
    };
    match reason {
        None => Outcome::from_body("ok", 0, &body),
        Some(r) => {
            let msg = if over_cap {
                format!(
                    "total ${} exceeds the cap ${:.2}",
                    human_usd(total),
                    cap.unwrap_or(0.0)
                )
            } else {
                format!(
                    "{} anomalous iteration(s) at sigma {sigma}",
                    body.anomalies.len()
                )
            };
            let mut o = Outcome::from_body("halted", r.exit_code(), &body);
            o.errors = vec![msg];
            o
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inspect(ledger_text: &str) -> Outcome {
        let dir = tempfile::tempdir().expect("tempdir");
        let ledger = dir.path().join("costs.txt");
        std::fs::write(&ledger, ledger_text).expect("write ledger");
        run(
            dir.path(),
            &InspectCostArgs {
                run_id: None,
                run: None,
                ledger: Some(ledger),
                budget_usd: None,
                cost_sigma: None,
            },
        )
    }

    #[test]
    fn a_zero_total_is_never_negative() {
        for text in ["# no iterations yet\n", "-0.0\n"] {
            let o = inspect(text);
            assert_eq!(o.exit_code, 0, "{}", o.human);
            let t = o.fields["total_usd"].as_f64().expect("number");
            assert!(t == 0.0 && t.is_sign_positive(), "{text:?}: {t:?}");
            assert!(!o.human.contains("-0"), "{}", o.human);
            assert!(o.human.contains("total $0.0000"), "{}", o.human);
        }
        assert_eq!(human_usd(-0.00001), "0.0000");
        assert_eq!(json_usd(-0.0000001).to_bits(), 0.0f64.to_bits());
    }

    #[test]
    fn figures_are_rounded_without_float_noise() {
        // p90 of [1.0, 3.2] interpolates to 1.0 + 0.9 * 2.2 = 2.9800000000000004.
        let o = inspect("1.0\n3.2\n0.1\n0.2\n");
        let text = serde_json::to_string(&o.fields).expect("json");
        assert!(!text.contains("00000000"), "{text}");
        assert_eq!(o.fields["total_usd"], json!(4.5));
        let o = inspect("1.0\n3.2\n");
        assert_eq!(o.fields["p90"], json!(2.98));
        assert_eq!(o.fields["p99"], json!(3.178));
        assert!(
            o.human.contains("p50 2.1000  p90 2.9800  p99 3.1780"),
            "{}",
            o.human
        );
        assert_eq!(json_usd(0.123_456_789), 0.123_457);
    }
}
