//! `loopexec inspect-cost`: per-iteration spend, totals, percentiles (p50/p90/p99),
//! caps and anomalies — for one run (from its receipt) or for a supplied cost ledger
//! (one USD figure per line, or JSON lines with `cost_usd`).
//!
//! Exit 0 when nothing is wrong; exit 18 (`budget_exceeded` or `cost_anomaly`) when
//! the figures cross the cap or hold an anomaly, so a dashboard job can alert on it.

use crate::cli::{InspectCostArgs, Outcome};
use crate::halt::HaltReason;
use crate::stats;
use crate::trajectory::Trajectory;
use serde_json::{json, Map, Value};
use std::path::Path;

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
        let run = match super::load_run(workdir, a.run_id.as_deref()) {
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
    let pct = |p| {
        if sorted.is_empty() {
            Value::Null
        } else {
            json!(stats::percentile(&sorted, p))
        }
    };
    let mut anomalies = Vec::new();
    let mut history = Vec::new();
    for (i, c, _) in &rows {
        if let Some(c) = c {
            if let Some(an) = stats::is_anomalous(&history, *c, sigma, min_history) {
                anomalies.push(
                    json!({"iteration": i, "cost_usd": c, "threshold": an.threshold, "z": an.z}),
                );
            }
            history.push(*c);
        }
    }
    let over_cap = cap.is_some_and(|c| total > c);
    let mut f = Map::new();
    f.insert("source".into(), json!(source));
    f.insert(
        "iterations".into(),
        json!(rows
            .iter()
            .map(|(i, c, d)| json!({"iteration": i, "cost_usd": c, "usage": d}))
            .collect::<Vec<_>>()),
    );
    f.insert("total_usd".into(), json!(total));
    f.insert("total_tokens".into(), json!(tokens));
    f.insert(
        "unknown_cost_iterations".into(),
        json!(rows.iter().filter(|r| r.1.is_none()).count()),
    );
    f.insert("p50".into(), pct(50.0));
    f.insert("p90".into(), pct(90.0));
    f.insert("p99".into(), pct(99.0));
    f.insert("cap_usd".into(), json!(cap));
    f.insert("cost_sigma".into(), json!(sigma));
    f.insert("anomalies".into(), json!(anomalies));
    let mut human = format!("{source}\n{:>5}  {:>12}\n", "it", "cost (USD)");
    for (i, c, _) in &rows {
        human.push_str(&format!(
            "{i:>5}  {:>12}\n",
            c.map_or("unknown".into(), |c| format!("{c:.4}"))
        ));
    }
    human.push_str(&format!(
        "total ${total:.4}  p50 {}  p90 {}  p99 {}\n",
        f["p50"], f["p90"], f["p99"]
    ));
    if let Some(c) = cap {
        human.push_str(&format!(
            "cap ${c:.2}: {}\n",
            if over_cap { "EXCEEDED" } else { "within" }
        ));
    }
    for an in &anomalies {
        human.push_str(&format!(
            "anomaly: iteration {} cost ${} (threshold ${:.4})\n",
            an["iteration"],
            an["cost_usd"],
            an["threshold"].as_f64().unwrap_or(0.0)
        ));
    }
    let reason = if over_cap {
        Some(HaltReason::BudgetExceeded)
    } else if !anomalies.is_empty() {
        Some(HaltReason::CostAnomaly)
    } else {
        None
    };
    match reason {
        None => Outcome::ok(f, human),
        Some(r) => {
            f.insert("halt_reason".into(), json!(r.as_str()));
            let msg = if over_cap {
                format!(
                    "total ${total:.4} exceeds the cap ${:.2}",
                    cap.unwrap_or(0.0)
                )
            } else {
                format!(
                    "{} anomalous iteration(s) at sigma {sigma}",
                    anomalies.len()
                )
            };
            Outcome {
                status: "halted".into(),
                exit_code: r.exit_code(),
                fields: f,
                human,
                errors: vec![msg],
                hint: None,
            }
        }
    }
}
