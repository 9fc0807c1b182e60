//! Spend and model identity, judged after every exec (and, for the caps, while it
//! streams): `budget_exceeded` and `cost_anomaly` (class 18), `model_drift_detected`
//! (class 19).
//!
//! | order | observation | reason |
//! |---|---|---|
//! | 1 | the exec was stopped mid-stream because a cap was crossed | budget_exceeded |
//! | 2 | run totals after this exec exceed `--budget-usd`, `--budget-tokens` or `--max-duration` | budget_exceeded |
//! | 2b | a cap is set, this iteration's spend is not metered, and `--on-unmetered halt` | budget_exceeded |
//! | 3 | this iteration's model identity (provider, model, version, CLI, CLI version) differs from the first observed, or its model from the pin (`--model`); see [`super::drift`] | model_drift_detected |
//! | 4 | this iteration's cost > mean + σ·sd of the earlier iterations (at least `cost_min_history`) | cost_anomaly |
//!
//! Drift is judged before the anomaly: a silent switch to another model usually costs
//! differently, and the switch is the cause worth naming. Auxiliary models (background
//! work listed beside the primary) are spend, never drift. Costs are the agent's own
//! reported figures, or estimates from `[pricing]`; an iteration with no known cost
//! counts 0 toward the USD cap and is left out of the anomaly history.
//!
//! Unmetered spend is never silent: with a cap set, an iteration whose output gave
//! the cap nothing to count ([`unmetered`]: no usage source at all, or no known cost
//! under `--budget-usd`) is reported by [`unmetered_warning`] (stderr at once, the
//! explanation, `inspect-cost` "unknown"), and halts the run when `on_unmetered` is
//! `halt`.

use crate::config::RunConfig;
use crate::halt::{Halt, HaltReason};
use crate::observe::usage::{IterationUsage, LiveMeter};
use crate::proc::StopCause;
use crate::trajectory::Trajectory;

/// Usage of each iteration that ran an exec, in order (iteration, usage).
#[must_use]
pub fn usages(t: &Trajectory) -> Vec<(u32, &IterationUsage)> {
    t.iterations
        .iter()
        .filter_map(|i| Some((i.iteration, i.exec.as_ref()?.usage.as_ref()?)))
        .collect()
}

/// Run totals: (USD, tokens) over all iterations.
#[must_use]
pub fn totals(us: &[(u32, &IterationUsage)]) -> (f64, u64) {
    us.iter().fold((0.0, 0), |(c, t), (_, u)| {
        (c + u.cost_usd.unwrap_or(0.0), t + u.total_tokens())
    })
}

/// `budget_exceeded` at a resume, before the segment starts an iteration, when the run's
/// totals (and its wall clock when it halted: the time until the resume is not the
/// run's) already cross a cap: a resumed run spends nothing past its caps (a new
/// user's run resumed over its USD cap ran one more paid exec). The way on is a
/// higher cap: `run --resume ID --budget-usd X` (or `--budget-tokens`,
/// `--max-duration`), SPEC §1.3. The loop starts no iteration then (as at the
/// iteration cap), so a refused resume uses none of the run's iterations (a review's
/// run had one counted per refused resume).
#[must_use]
pub fn exhausted_at_resume(t: &Trajectory, cfg: &RunConfig) -> Option<Halt> {
    let last = t.last()?;
    let resumed = t.resumed_ts.as_deref()?;
    if !t.at_resume() {
        return None;
    }
    let (usd, tokens) = totals(&usages(t));
    let (msg, mut detail) = cap_crossed(cfg, usd, tokens, t.active_ms(resumed))?;
    detail["iteration"] = serde_json::json!(last.iteration);
    detail["mid_iteration"] = serde_json::json!(false);
    detail["at_resume"] = serde_json::json!(true);
    Some(Halt {
        reason: HaltReason::BudgetExceeded,
        contributors: vec![format!(
            "{msg} when the run was resumed: iteration {} does not start (resume with a higher cap to let it go on)",
            t.segment_start
        )],
        detail,
    })
}

/// Which cap (if any) the totals cross. `elapsed` is the run's wall clock so far.
#[must_use]
pub fn cap_crossed(
    cfg: &RunConfig,
    usd: f64,
    tokens: u64,
    elapsed_ms: Option<u64>,
) -> Option<(String, serde_json::Value)> {
    if let Some(cap) = cfg.budget.usd {
        if usd > cap {
            return Some((
                format!("run spend ${usd:.4} exceeds the cap ${cap:.2}"),
                serde_json::json!({"cap": "usd", "limit": cap, "value": usd}),
            ));
        }
    }
    if let Some(cap) = cfg.budget.tokens {
        if tokens > cap {
            return Some((
                format!("run tokens {tokens} exceed the cap {cap}"),
                serde_json::json!({"cap": "tokens", "limit": cap, "value": tokens}),
            ));
        }
    }
    if let (Some(cap), Some(ms)) = (cfg.budget.max_duration, elapsed_ms) {
        if u128::from(ms) > cap.0.as_millis() {
            return Some((
                format!(
                    "run wall clock {} exceeds the cap {}",
                    humantime::format_duration(std::time::Duration::from_millis(ms)),
                    humantime::format_duration(cap.0)
                ),
                serde_json::json!({"cap": "max_duration", "limit_ms": cap.0.as_millis() as u64, "value_ms": ms}),
            ));
        }
    }
    None
}

/// Why an iteration's spend escapes the caps set in `cfg`, if it does: no usage
/// source under any cap, or no known cost under a USD cap. `None` when no cap is set
/// or the spend was metered.
#[must_use]
pub fn unmetered(cfg: &RunConfig, u: &IterationUsage) -> Option<&'static str> {
    let usd = cfg.budget.usd.is_some();
    if !usd && cfg.budget.tokens.is_none() {
        return None;
    }
    if u.sources.is_empty() {
        Some("the agent's output carried no usage loopexec can read (no usage source)")
    } else if usd && u.cost_usd.is_none() {
        Some("the agent reported tokens but no cost, and [pricing] has no price for them")
    } else {
        None
    }
}

/// The warning for the last iteration when its spend was not metered under a cap
/// (see [`unmetered`]); the loop prints it on stderr as soon as the exec ends.
#[must_use]
pub fn unmetered_warning(t: &Trajectory, cfg: &RunConfig) -> Option<String> {
    let last = t.last()?;
    let e = last.exec.as_ref()?;
    let u = e.usage.as_ref()?;
    let why = unmetered(cfg, u)?;
    Some(format!(
        "spend not metered in iteration {}: {why}; the budget cap cannot count it (cost unknown; --on-unmetered halt stops the run)",
        last.iteration
    ))
}

/// Iterations (in order) whose spend was not metered under the caps of `cfg`.
#[must_use]
pub fn unmetered_iterations(t: &Trajectory, cfg: &RunConfig) -> Vec<u32> {
    usages(t)
        .iter()
        .filter(|(_, u)| unmetered(cfg, u).is_some())
        .map(|(i, _)| *i)
        .collect()
}

/// The spend and identity detectors after an exec. See the module table.
#[must_use]
pub fn detect(t: &Trajectory, cfg: &RunConfig) -> Option<Halt> {
    let last = t.last()?;
    let exec = last.exec.as_ref()?;
    let us = usages(t);
    let (usd, tokens) = totals(&us);
    if let Some(StopCause::Budget { detail }) = &exec.step.stopped {
        return Some(Halt {
            reason: HaltReason::BudgetExceeded,
            contributors: vec![format!(
                "{detail} during iteration {}; the work step was stopped mid-stream",
                last.iteration
            )],
            detail: serde_json::json!({"iteration": last.iteration, "mid_iteration": true, "total_usd": usd, "total_tokens": tokens}),
        });
    }
    let elapsed = last.exec_ts.as_deref().and_then(|ts| t.active_ms(ts));
    if let Some((msg, mut detail)) = cap_crossed(cfg, usd, tokens, elapsed) {
        detail["iteration"] = serde_json::json!(last.iteration);
        detail["mid_iteration"] = serde_json::json!(false);
        return Some(Halt {
            reason: HaltReason::BudgetExceeded,
            contributors: vec![format!("{msg} after iteration {}", last.iteration)],
            detail,
        });
    }
    let this = us
        .iter()
        .find(|(i, _)| *i == last.iteration)
        .map(|(_, u)| u);
    if cfg.on_unmetered == "halt" {
        if let Some(why) = this.and_then(|u| unmetered(cfg, u)) {
            return Some(Halt {
                reason: HaltReason::BudgetExceeded,
                contributors: vec![format!(
                    "spend not metered in iteration {}: {why}; with a budget cap and --on-unmetered halt the run stops rather than spend blind",
                    last.iteration
                )],
                detail: serde_json::json!({"iteration": last.iteration, "cause": "unmetered", "total_usd": usd, "total_tokens": tokens}),
            });
        }
    }
    if let Some(h) = this.and_then(|u| super::drift::detect(cfg, &us, last.iteration, u)) {
        return Some(h);
    }
    let cost = this.and_then(|u| u.cost_usd)?;
    let history: Vec<f64> = us
        .iter()
        .filter(|(i, _)| *i < last.iteration)
        .filter_map(|(_, u)| u.cost_usd)
        .collect();
    let a = crate::stats::is_anomalous(
        &history,
        cost,
        cfg.budget.cost_sigma,
        cfg.budget.cost_min_history,
    )?;
    Some(Halt {
        reason: HaltReason::CostAnomaly,
        contributors: vec![format!(
            "iteration {} cost ${cost:.4}, above mean ${:.4} + {}·sd (threshold ${:.4}) of the {} earlier iterations",
            last.iteration, a.mean, a.sigma, a.threshold, a.history_len
        )],
        detail: serde_json::to_value(&a).unwrap_or_default(),
    })
}

/// The live cap check while an exec streams: earlier iterations' totals plus what the
/// running step has reported so far, and the run's wall clock. Returns the message
/// recorded as the stop cause.
#[must_use]
pub fn crossed_live(
    t: &Trajectory,
    cfg: &RunConfig,
    meter: &LiveMeter,
    elapsed_ms: u64,
) -> Option<String> {
    if cfg.budget.usd.is_none() && cfg.budget.tokens.is_none() && cfg.budget.max_duration.is_none()
    {
        return None;
    }
    let (usd, tokens) = totals(&usages(t));
    let now = meter.snapshot();
    cap_crossed(
        cfg,
        usd + now.cost_usd.unwrap_or(0.0),
        tokens + now.total_tokens(),
        Some(elapsed_ms),
    )
    .map(|(m, _)| m)
}

/// [`crossed_live`] with the run's wall clock read now (the live check is the one
/// place a clock is read; what it finds is recorded as the step's stop cause, which
/// the pure detector then reads).
#[must_use]
pub fn crossed_live_now(t: &Trajectory, cfg: &RunConfig, m: &LiveMeter) -> Option<String> {
    let elapsed = t.active_ms(&crate::receipt::now_rfc3339());
    crossed_live(t, cfg, m, elapsed.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::testkit;
    use crate::observe::usage::{FigureKind, UsageSource};
    use crate::receipt::events::{Event, Halted, Resumed};

    /// A run that started at 00:00:00, spent `usd` in iteration 1, halted `halted_s`
    /// seconds in and was resumed `resumed_s` seconds in (no iteration started since).
    fn resumed_run(usd: f64, halted_s: u32, resumed_s: u32) -> Trajectory {
        let at = |s: u32| {
            format!(
                "2026-01-01T{:02}:{:02}:{:02}.000Z",
                s / 3600,
                s / 60 % 60,
                s % 60
            )
        };
        let mut t = Trajectory {
            started_ts: Some(at(0)),
            ..Trajectory::default()
        };
        let Event::ExecFinished(mut e) = testkit::exec(1) else {
            unreachable!()
        };
        e.usage = Some(IterationUsage {
            sources: vec![UsageSource::ClaudeJson],
            cost_usd: Some(usd),
            cost_kind: Some(FigureKind::Reported),
            ..IterationUsage::default()
        });
        let halted = Event::Halted(Box::new(Halted {
            iteration: 1,
            halt_reason: HaltReason::BudgetExceeded,
            exit_code: 18,
            class: String::new(),
            contributors: Vec::new(),
            explanation: String::new(),
            detail: serde_json::Value::Null,
            preflight: false,
        }));
        let resumed = Event::Resumed(Resumed {
            pid: 1,
            acknowledged_by: Vec::new(),
            from_iteration: 1,
            resume_reason: None,
            max_iterations: None,
            budget_usd: None,
            budget_tokens: None,
            max_duration_ms: None,
        });
        t.apply(&testkit::start(1), &at(1));
        t.apply(&Event::ExecFinished(e), &at(2));
        t.apply(&halted, &at(halted_s));
        t.apply(&resumed, &at(resumed_s));
        t
    }

    /// A resumed run whose totals, or whose wall clock when it halted, already cross a
    /// cap halts before its first exec; the time between the halt and the resume is
    /// not the run's (a new user's run resumed the next day halted at once).
    #[test]
    fn a_resumed_run_over_a_cap_halts_before_its_first_exec() {
        // (USD cap, wall-clock cap s, spent, halted at s, resumed at s, halts)
        type Row = (Option<f64>, Option<u64>, f64, u32, u32, bool);
        let rows: &[Row] = &[
            (Some(1.0), None, 1.2, 3, 4, true),
            (Some(1.0), None, 0.8, 3, 4, false),
            (Some(1.0), None, 1.0, 3, 4, false),
            (None, Some(10), 5.0, 5, 7200, false),
            (None, Some(10), 5.0, 12, 13, true),
            (None, Some(10), 5.0, 9, 7200, false),
            (None, None, 99.0, 3, 4, false),
        ];
        for &(usd, secs, spent, halted, resumed, want) in rows {
            let mut cfg = RunConfig::defaults();
            cfg.budget.usd = usd;
            cfg.budget.max_duration =
                secs.map(|s| crate::config::Dur(std::time::Duration::from_secs(s)));
            let t = resumed_run(spent, halted, resumed);
            assert_eq!(
                t.paused_ms,
                u64::from(resumed - halted) * 1000,
                "{usd:?} {secs:?} {spent} {halted} {resumed}"
            );
            let h = exhausted_at_resume(&t, &cfg);
            assert_eq!(
                h.is_some(),
                want,
                "{usd:?} {secs:?} {spent} {halted} {resumed}: {h:?}"
            );
            if let Some(h) = h {
                assert_eq!(h.reason, HaltReason::BudgetExceeded);
                assert_eq!(h.detail["at_resume"], true);
            }
        }
        // a segment that started an iteration is past its resume
        let mut t = resumed_run(1.2, 3, 4);
        t.apply(&testkit::start(2), "2026-01-01T00:00:05.000Z");
        let mut cfg = RunConfig::defaults();
        cfg.budget.usd = Some(1.0);
        assert!(exhausted_at_resume(&t, &cfg).is_none());
    }

    #[test]
    fn unmetered_spend_is_named_only_under_a_cap() {
        let none = IterationUsage::default();
        let tokens_only = IterationUsage {
            sources: vec![UsageSource::CodexJson],
            input_tokens: 10,
            ..IterationUsage::default()
        };
        let priced = IterationUsage {
            sources: vec![UsageSource::ClaudeJson],
            cost_usd: Some(0.5),
            cost_kind: Some(FigureKind::Reported),
            ..IterationUsage::default()
        };
        // (usd cap, token cap, usage, unmetered?)
        let table: &[(Option<f64>, Option<u64>, &IterationUsage, bool)] = &[
            (None, None, &none, false),
            (Some(1.0), None, &none, true),
            (None, Some(100), &none, true),
            (Some(1.0), None, &tokens_only, true),
            (None, Some(100), &tokens_only, false),
            (Some(1.0), Some(100), &priced, false),
        ];
        for (usd, tokens, u, want) in table {
            let mut cfg = RunConfig::defaults();
            cfg.budget.usd = *usd;
            cfg.budget.tokens = *tokens;
            assert_eq!(
                unmetered(&cfg, u).is_some(),
                *want,
                "{usd:?} {tokens:?} {u:?}"
            );
        }
    }
}
