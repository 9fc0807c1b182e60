//! Holds: the pure join over the holds that cover a run, and `human_required` from a
//! stop hold recorded in the receipt.
//!
//! Source: the inhibitors design (SPEC §Holds). A hold is taken by a person (or by the
//! action gate while it waits for one) with a strength:
//!
//! | holds covering the run                 | [`decide`]  | the loop                         |
//! |----------------------------------------|-------------|----------------------------------|
//! | none                                   | Proceed     | goes on                          |
//! | only `suspended` ones                  | Suspended   | parks at the next step boundary  |
//! | at least one `stopped` (with any other)| Stopped     | ends the step, halts, latches    |
//!
//! Stopped wins over Suspended, and the verdict names every hold of the winning
//! strength, so whoever reads the halt releases all of them, not the first one shown.
//! The loop writes what it saw (a `held` event) before acting on it, so
//! `explain-halt` re-derives the halt from the receipt with [`detect`].

use crate::halt::{Halt, HaltReason};
use crate::receipt::events::Held;
use crate::trajectory::Trajectory;
use serde::{Deserialize, Serialize};

/// A hold as the loop observed it (and the receipt records it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HoldView {
    pub id: String,
    /// `global`, `workspace` or `run:<id>`.
    pub scope: String,
    /// `suspended` or `stopped`.
    pub strength: String,
    pub holder: String,
    pub reason: String,
    /// RFC 3339.
    pub taken_at: String,
}

impl HoldView {
    fn stops(&self) -> bool {
        // Anything that is not explicitly a suspension stops (fail closed).
        self.strength != "suspended"
    }

    /// One line naming the hold: `alice (workspace hold hold-1a2b…): maintenance`.
    #[must_use]
    pub fn describe(&self) -> String {
        format!(
            "{} ({} hold {}, taken {}): {}",
            self.holder, self.scope, self.id, self.taken_at, self.reason
        )
    }
}

/// What the holds covering a run say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HoldVerdict {
    Proceed,
    /// Park at the next step boundary; every suspending hold.
    Suspended(Vec<HoldView>),
    /// End the step and halt; every stopping hold.
    Stopped(Vec<HoldView>),
}

/// The pure join (see the module table).
#[must_use]
pub fn decide(holds: &[HoldView]) -> HoldVerdict {
    let stops: Vec<HoldView> = holds.iter().filter(|h| h.stops()).cloned().collect();
    if !stops.is_empty() {
        return HoldVerdict::Stopped(stops);
    }
    if holds.is_empty() {
        HoldVerdict::Proceed
    } else {
        HoldVerdict::Suspended(holds.to_vec())
    }
}

/// The halt for a stop the loop recorded in the last iteration of the current
/// segment, naming every stopping hold and whether the run is latched.
#[must_use]
pub fn detect(t: &Trajectory) -> Option<Halt> {
    let last = t.last()?;
    let held = t
        .holds
        .iter()
        .rev()
        .find(|h| h.iteration == last.iteration && h.verdict == "stopped")?;
    Some(stop_halt(held))
}

fn stop_halt(held: &Held) -> Halt {
    let mut contributors: Vec<String> = held
        .holds
        .iter()
        .map(|h| format!("held by {}", h.describe()))
        .collect();
    contributors.push(format!(
        "{}; {}",
        match held.phase.strip_prefix("before_") {
            Some(step) => format!("the run was stopped before its {step}"),
            None => format!("the running {}'s process group was ended", held.phase),
        },
        if held.latched {
            "the run is latched: release the hold(s), acknowledge the halt (`loopexec halts --unacked`, `loopexec ack ID --by NAME --resolution resolved`), then `loopexec run --resume`"
        } else {
            "a stop over a suspension does not latch: release the hold(s) and `loopexec run --resume`"
        }
    ));
    Halt {
        reason: HaltReason::HumanRequired,
        contributors,
        detail: serde_json::json!({
            "cause": "hold",
            "phase": held.phase,
            "latched": held.latched,
            "holds": held.holds,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(id: &str, strength: &str) -> HoldView {
        HoldView {
            id: id.into(),
            scope: "workspace".into(),
            strength: strength.into(),
            holder: "alice".into(),
            reason: "why".into(),
            taken_at: "2026-01-01T00:00:00.000Z".into(),
        }
    }

    #[test]
    fn decide_table() {
        let rows: Vec<(Vec<HoldView>, HoldVerdict)> = vec![
            (vec![], HoldVerdict::Proceed),
            (
                vec![h("a", "suspended")],
                HoldVerdict::Suspended(vec![h("a", "suspended")]),
            ),
            (
                vec![h("a", "suspended"), h("b", "suspended")],
                HoldVerdict::Suspended(vec![h("a", "suspended"), h("b", "suspended")]),
            ),
            (
                vec![h("a", "stopped")],
                HoldVerdict::Stopped(vec![h("a", "stopped")]),
            ),
            // Stopped wins and names every stopping hold.
            (
                vec![h("a", "suspended"), h("b", "stopped"), h("c", "stopped")],
                HoldVerdict::Stopped(vec![h("b", "stopped"), h("c", "stopped")]),
            ),
            // An unknown strength fails closed.
            (
                vec![h("a", "paused?")],
                HoldVerdict::Stopped(vec![h("a", "paused?")]),
            ),
        ];
        for (holds, want) in rows {
            assert_eq!(decide(&holds), want, "{holds:?}");
        }
    }

    fn traj(events: Vec<crate::receipt::Event>) -> Trajectory {
        let mut t = Trajectory::default();
        for e in &events {
            t.apply(e, "2026-01-01T00:00:00.000Z");
        }
        t
    }

    fn held(iteration: u32, verdict: &str, latched: bool) -> crate::receipt::Event {
        crate::receipt::Event::Held(Held {
            iteration,
            phase: "exec".into(),
            verdict: verdict.into(),
            holds: vec![h("a", verdict)],
            latched,
        })
    }

    fn started(i: u32) -> crate::receipt::Event {
        crate::receipt::Event::IterationStarted(crate::receipt::events::IterationStarted {
            iteration: i,
        })
    }

    #[test]
    fn detect_table() {
        let rows: Vec<(Vec<crate::receipt::Event>, Option<bool>)> = vec![
            (vec![started(0)], None),
            (vec![started(0), held(0, "suspended", false)], None),
            (
                vec![started(0), started(1), held(1, "stopped", true)],
                Some(true),
            ),
            (
                vec![started(0), started(1), held(1, "stopped", false)],
                Some(false),
            ),
            // A stop of an earlier iteration does not speak for this one.
            (vec![started(0), held(0, "stopped", true), started(1)], None),
        ];
        for (events, want) in rows {
            let got = detect(&traj(events.clone()));
            assert_eq!(
                got.as_ref().map(|h| h.detail["latched"].as_bool().unwrap()),
                want,
                "{events:?}"
            );
            if let Some(h) = got {
                assert_eq!(h.reason, HaltReason::HumanRequired);
                assert!(h.contributors[0].contains("alice"), "{:?}", h.contributors);
                assert!(h.contributors[0].contains("why"), "{:?}", h.contributors);
            }
        }
    }
}
