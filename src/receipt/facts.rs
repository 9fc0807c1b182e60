//! A run's facts ([`RunFacts`]) read back from its receipt: the one place that says
//! when a run started and ended, where it halted, and what it spent, so every command
//! prints them with the same names and values.

use super::{Event, Line};
use crate::halt::Halt;
use crate::output::{RunFacts, Spend};
use crate::trajectory::Trajectory;
use std::path::Path;

/// Milliseconds between two RFC 3339 timestamps (`None` when either does not parse or
/// `end` is before `start`).
#[must_use]
pub fn millis_between(start: &str, end: &str) -> Option<u64> {
    let fmt = time::format_description::well_known::Rfc3339;
    let a = time::OffsetDateTime::parse(start, &fmt).ok()?;
    let b = time::OffsetDateTime::parse(end, &fmt).ok()?;
    u64::try_from((b - a).whole_milliseconds()).ok()
}

/// What the agent spent over a trajectory's iterations.
#[must_use]
pub fn spend_of(t: &Trajectory) -> Spend {
    let mut s = Spend::default();
    let mut usd = None::<f64>;
    for it in &t.iterations {
        let Some(e) = &it.exec else { continue };
        if e.step.command.is_empty() {
            continue; // no work step ran
        }
        let u = e.usage.clone();
        s.tokens += u.as_ref().map_or(0, |u| u.total_tokens());
        match u.and_then(|u| u.cost_usd) {
            Some(c) => {
                s.metered_iterations += 1;
                usd = Some(usd.unwrap_or(0.0) + c);
            }
            None => s.unmetered_iterations += 1,
        }
    }
    s.usd = usd;
    s
}

/// The facts of the run recorded in `lines` (a whole receipt, resumed segments
/// included). `receipt` is the file they were read from.
#[must_use]
pub fn run_facts(run_id: &str, receipt: &Path, lines: &[Line]) -> RunFacts {
    let mut f = RunFacts {
        run_id: Some(run_id.to_string()),
        receipt: Some(receipt.display().to_string()),
        ..RunFacts::default()
    };
    for l in lines {
        match &l.event {
            Event::RunStarted(_) if f.started_at.is_none() => {
                f.started_at = Some(l.ts.clone());
            }
            Event::IterationStarted(i) => {
                f.iteration = Some(i.iteration);
            }
            Event::Resumed(_) => {
                f.halt_reason = None;
                f.halt_class = None;
                f.exit_code = None;
                f.finished_at = None;
            }
            Event::Halted(h) => {
                f.iteration = Some(h.iteration);
                f.halt_reason = Some(h.halt_reason.as_str().to_string());
                f.halt_class = Some(h.halt_reason.class().as_str().to_string());
                f.exit_code = Some(h.exit_code);
                f.finished_at = Some(l.ts.clone());
            }
            _ => {}
        }
    }
    if f.started_at.is_none() {
        f.started_at = lines.first().map(|l| l.ts.clone());
    }
    f.duration_ms = match (&f.started_at, &f.finished_at) {
        (Some(a), Some(b)) => millis_between(a, b),
        _ => None,
    };
    f.spend = spend_of(&whole_run(lines));
    f
}

/// The trajectory of every segment of a run (a resumed run's earlier iterations
/// included), for totals: what [`spend_of`] reads (the iterations and their execs),
/// without the check runs.
fn whole_run(lines: &[Line]) -> Trajectory {
    let mut t = Trajectory::default();
    for l in lines {
        if matches!(l.event, Event::Resumed(_) | Event::CheckFinished(_)) {
            continue;
        }
        t.apply(&l.event, &l.ts);
    }
    t
}

/// The facts of a run refused before its receipt existed (preflight).
#[must_use]
pub fn preflight_facts(run_id: Option<&str>, halt: &Halt) -> RunFacts {
    let now = super::now_rfc3339();
    RunFacts {
        run_id: run_id.map(str::to_string),
        halt_reason: Some(halt.reason.as_str().to_string()),
        halt_class: Some(halt.reason.class().as_str().to_string()),
        exit_code: Some(halt.reason.exit_code()),
        iteration: None,
        started_at: Some(now.clone()),
        finished_at: Some(now),
        duration_ms: Some(0),
        spend: Spend::default(),
        receipt: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millis_between_timestamps() {
        let cases = [
            (
                "2026-01-01T00:00:00.000Z",
                "2026-01-01T00:00:01.250Z",
                Some(1250),
            ),
            ("2026-01-01T00:00:02.000Z", "2026-01-01T00:00:01.000Z", None),
            ("not a time", "2026-01-01T00:00:01.000Z", None),
        ];
        for (a, b, want) in cases {
            assert_eq!(millis_between(a, b), want, "{a} -> {b}");
        }
    }
}
