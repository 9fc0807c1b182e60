//! Rate limits across runs: token-bucket arithmetic and `budget_exceeded` from an
//! exhausted bucket the loop recorded (SPEC §10, rate limits).
//!
//! A workspace has one bucket per limit (`[limits] usd_per_hour`, `tokens_per_hour`)
//! in its ledger. Its capacity is one hour's worth; it refills continuously at the
//! hourly rate; each exec draws what it spent. Before an exec the loop reads the
//! buckets: an empty one (level ≤ 0) is recorded as a `rate_limited` event, and either
//! parks the loop until the bucket refills (`on_rate_limit = "suspend"`, the default)
//! or halts `budget_exceeded` (`"halt"`), which [`detect`] derives from the event.

use crate::halt::{Halt, HaltReason};
use crate::trajectory::Trajectory;

/// The level after `elapsed_ms` of refilling at `per_hour`, capped at one hour's worth.
#[must_use]
pub fn refill(level: f64, per_hour: f64, elapsed_ms: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)] // milliseconds well below 2^52
    let added = per_hour * (elapsed_ms as f64) / 3_600_000.0;
    (level + added).min(per_hour)
}

/// Milliseconds until an empty bucket at `level` holds more than nothing again.
#[must_use]
pub fn wait_ms(level: f64, per_hour: f64) -> u64 {
    if level > 0.0 || per_hour <= 0.0 {
        return 0;
    }
    let ms = (-level) * 3_600_000.0 / per_hour;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // non-negative, bounded
    let out = ms.ceil().min(u64::MAX as f64) as u64;
    out.max(1)
}

/// `budget_exceeded` when the loop recorded an empty bucket with `halt` before this
/// iteration's exec.
#[must_use]
pub fn detect(t: &Trajectory) -> Option<Halt> {
    let last = t.last()?;
    let r = t
        .rate_limits
        .iter()
        .rev()
        .find(|r| r.iteration == last.iteration && r.mode == "halt")?;
    Some(Halt {
        reason: HaltReason::BudgetExceeded,
        contributors: vec![format!(
            "the workspace's {} rate limit ({} per hour) is used up (bucket at {:.4}); it refills in {}s, and on_rate_limit = halt",
            r.kind,
            r.per_hour,
            r.level,
            r.refill_ms.div_ceil(1000)
        )],
        detail: serde_json::json!({"cause": "rate_limit", "kind": r.kind, "per_hour": r.per_hour, "level": r.level, "refill_ms": r.refill_ms}),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refill_table() {
        // (level, per_hour, elapsed_ms, want)
        let rows = [
            (0.0, 2.0, 0, 0.0),
            (0.0, 2.0, 1_800_000, 1.0),
            (-1.0, 2.0, 1_800_000, 0.0),
            (1.5, 2.0, 3_600_000, 2.0),
            (2.0, 2.0, 10, 2.0),
        ];
        for (level, rate, ms, want) in rows {
            let got = refill(level, rate, ms);
            assert!((got - want).abs() < 1e-9, "{level} {rate} {ms}: {got}");
        }
    }

    #[test]
    fn wait_table() {
        let rows = [
            (1.0, 2.0, 0),
            (0.0, 2.0, 1),
            (-1.0, 2.0, 1_800_000),
            (-0.5, 3600.0, 500),
        ];
        for (level, rate, want) in rows {
            assert_eq!(wait_ms(level, rate), want, "{level} {rate}");
        }
    }

    #[test]
    fn detect_fires_only_for_halt_mode_in_the_current_iteration() {
        use crate::receipt::events::{IterationStarted, RateLimited};
        use crate::receipt::Event;
        let ev = |it: u32, mode: &str| {
            Event::RateLimited(RateLimited {
                iteration: it,
                kind: "usd".into(),
                per_hour: 1.0,
                level: -0.2,
                refill_ms: 720_000,
                mode: mode.into(),
            })
        };
        let start = |i: u32| Event::IterationStarted(IterationStarted { iteration: i });
        let rows: Vec<(Vec<Event>, bool)> = vec![
            (vec![start(0), start(1), ev(1, "halt")], true),
            (vec![start(0), start(1), ev(1, "suspend")], false),
            (vec![start(0), start(1), ev(1, "halt"), start(2)], false),
        ];
        for (events, fires) in rows {
            let mut t = Trajectory::default();
            for e in &events {
                t.apply(e, "2026-01-01T00:00:00.000Z");
            }
            let h = detect(&t);
            assert_eq!(h.is_some(), fires, "{events:?}");
            if let Some(h) = h {
                assert_eq!(h.reason, HaltReason::BudgetExceeded);
            }
        }
    }
}
