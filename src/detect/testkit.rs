//! Plain builders of receipt events and trajectories for the detectors' unit tests.

use crate::check::model::{Format, Outcome, ParsedRun, TestResult};
use crate::proc::{CaptureSummary, StepResult};
use crate::receipt::events::{CheckFinished, Event, ExecFinished, IterationStarted};
use crate::trajectory::Trajectory;

/// A step that exited with `code`.
pub fn step(code: Option<i32>) -> StepResult {
    StepResult {
        duration_ms: 5,
        ..StepResult::finished(
            "sh x",
            code,
            CaptureSummary::empty(),
            CaptureSummary::empty(),
        )
    }
}

/// A parse of named tests.
pub fn parsed(tests: &[(&str, Outcome)]) -> ParsedRun {
    ParsedRun {
        format: Format::Tap,
        complete: true,
        unattributed_failure: false,
        tests: tests
            .iter()
            .map(|(id, o)| TestResult {
                id: (*id).to_string(),
                outcome: *o,
                message: None,
            })
            .collect(),
        diagnostics: Vec::new(),
        summary: None,
        not_run: None,
        unlisted: crate::check::model::Counts::default(),
        listed: None,
    }
}

/// A check run of iteration `it` (attempt `attempt`) on tree `tree`; exit 1 when a test fails.
pub fn check(it: u32, attempt: u32, tree: Option<&str>, tests: &[(&str, Outcome)]) -> Event {
    let p = parsed(tests);
    let code = i32::from(!p.failing().is_empty());
    Event::CheckFinished(Box::new(CheckFinished {
        iteration: it,
        attempt,
        step: step(Some(code)),
        parsed: p,
        tree_before: tree.map(str::to_string),
        tree_after: tree.map(str::to_string),
        check_wrote: Vec::new(),
        check_created: Vec::new(),
        check_created_code: Vec::new(),
        kept: None,
        reports: Vec::new(),
        watchdog: None,
        changed_during_check: Vec::new(),
        clean_room: None,
        dependencies_changed: Vec::new(),
        fingerprint: None,
        pytest_witness: None,
        unittest_witness: None,
        in_checkout: None,
        deselected: Vec::new(),
    }))
}

/// A clean-room record of tree `tree` that restored, left out and touched nothing.
pub fn room_record(tree: &str) -> crate::receipt::events::CleanRoomRecord {
    crate::receipt::events::CleanRoomRecord {
        tree: tree.to_string(),
        after: None,
        restored: Vec::new(),
        synced_written: 0,
        synced_removed: 0,
        left_out: Vec::new(),
        unfrozen_tests: Vec::new(),
        touched: std::collections::BTreeMap::new(),
        watch_error: None,
    }
}

/// An exec of iteration `it` that exited 0.
pub fn exec(it: u32) -> Event {
    Event::ExecFinished(Box::new(ExecFinished {
        iteration: it,
        step: step(Some(0)),
        tree: None,
        snapshot: None,
        usage: None,
        guards: None,
        watchdog: None,
    }))
}

/// The start of iteration `it`.
pub fn start(it: u32) -> Event {
    Event::IterationStarted(IterationStarted { iteration: it })
}

/// Folds events into a trajectory.
pub fn traj(events: &[Event]) -> Trajectory {
    let mut t = Trajectory::default();
    for e in events {
        t.apply(e, "2026-01-01T00:00:00.000Z");
    }
    t
}
