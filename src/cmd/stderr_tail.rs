//! A failed work step's stderr, shown where a person looks: the halt of `run`,
//! `explain-halt` and `report` (human and JSON) print its last lines and the file
//! holding the rest (the bounded head + tail excerpt under `.loopexec/runs/<id>/`).

use crate::halt::HaltReason;
use crate::receipt::{Event, Line};
use schemars::JsonSchema;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Lines of a failed work step's stderr shown with the halt.
pub(crate) const STDERR_TAIL_LINES: usize = 12;

/// The end of a failed work step's stderr and where the rest is.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StderrTail {
    /// The last lines (at most 12) of the step's captured stderr.
    pub text: String,
    /// The file holding the captured stderr (head and tail excerpt).
    pub file: String,
}

impl StderrTail {
    /// The human rendering: the lines indented behind `|`, then the file.
    #[must_use]
    pub fn render(&self) -> String {
        format!(
            "the work step's stderr ended with:\n{}\n(the rest: {})\n",
            self.text
                .lines()
                .map(|l| format!("  | {l}"))
                .collect::<Vec<_>>()
                .join("\n"),
            self.file
        )
    }
}

/// For an `execution_failure` of the work step (`detail.step == "exec"`): the last
/// lines of its recorded stderr excerpt and the excerpt's path. `None` for any other
/// halt, or when the excerpt is gone or empty.
pub(crate) fn of_halt(
    workdir: &Path,
    reason: HaltReason,
    detail: &serde_json::Value,
    lines: &[Line],
) -> Option<StderrTail> {
    if reason != HaltReason::ExecutionFailure
        || detail.get("step").and_then(serde_json::Value::as_str) != Some("exec")
    {
        return None;
    }
    let rel = lines.iter().rev().find_map(|l| match &l.event {
        Event::ExecFinished(e) => e.step.stderr.excerpt.clone(),
        _ => None,
    })?;
    let path = if Path::new(&rel).is_absolute() {
        PathBuf::from(&rel)
    } else {
        workdir.join(&rel)
    };
    let text = String::from_utf8_lossy(&std::fs::read(&path).ok()?).into_owned();
    let all: Vec<&str> = text.lines().collect();
    let tail = all[all.len().saturating_sub(STDERR_TAIL_LINES)..].join("\n");
    (!tail.trim().is_empty()).then(|| StderrTail {
        text: tail,
        file: path.display().to_string(),
    })
}

/// [`of_halt`] for the last `halted` event of a receipt.
pub(crate) fn of_run(workdir: &Path, lines: &[Line]) -> Option<StderrTail> {
    lines.iter().rev().find_map(|l| match &l.event {
        Event::Halted(h) => of_halt(workdir, h.halt_reason, &h.detail, lines),
        _ => None,
    })
}
