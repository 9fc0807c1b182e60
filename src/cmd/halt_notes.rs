//! What a halt shows beyond its reason, the same way in `run`, `explain-halt` and
//! `report` (human and JSON):
//! * a failed work step's stderr: its last lines and the file holding the rest (the
//!   bounded head + tail excerpt under `.loopexec/runs/<id>/`);
//! * a rejected last iteration: the tree still holds its work, so the accepted tree
//!   and the exact command restoring it.

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

/// A run that halted right after rejecting its last iteration: the tree still holds
/// the rejected work (the ratchet reverts only before the next iteration), so the
/// halt names the accepted tree and the exact command that restores it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RejectedTree {
    /// The rejected iteration whose tree is in the workdir.
    pub iteration: u32,
    /// The last accepted iteration.
    pub accepted_iteration: u32,
    /// Restores the accepted iteration's files and removes the files added since.
    pub restore_command: String,
}

impl RejectedTree {
    /// The human rendering (one paragraph).
    #[must_use]
    pub fn render(&self) -> String {
        format!(
            "\nthe tree holds iteration {}'s rejected work; the last accepted tree is iteration {}'s. Restore it with:\n  {}\n",
            self.iteration, self.accepted_iteration, self.restore_command
        )
    }
}

/// [`RejectedTree`] for a halted run whose last iteration the ratchet rejected and
/// did not revert; `None` otherwise (or when a snapshot is not recorded).
pub(crate) fn rejected_tree(lines: &[Line], accepted: &[(u32, bool)]) -> Option<RejectedTree> {
    let &(last, ok) = accepted.last()?;
    if ok
        || lines
            .iter()
            .any(|l| matches!(&l.event, Event::Reverted(r) if r.iteration == last))
    {
        return None;
    }
    let to = accepted.iter().rev().find(|(_, a)| *a)?.0;
    let snapshot_of = |it: u32| {
        lines.iter().rev().find_map(|l| match &l.event {
            Event::ExecFinished(e) if e.iteration == it => e.snapshot.clone(),
            Event::Reverted(r) if r.to_iteration == it => Some(r.snapshot.clone()),
            Event::RunStarted(s) if it == 0 => s.git.baseline_snapshot.clone(),
            _ => None,
        })
    };
    let (good, bad) = (snapshot_of(to)?, snapshot_of(last)?);
    let workdir = lines.iter().find_map(|l| match &l.event {
        Event::RunStarted(s) => Some(s.workdir.clone()),
        _ => None,
    })?;
    let store = crate::observe::tree::store_path(Path::new(&workdir));
    let word = |p: &Path| crate::observe::isolation::shell_word(&p.display().to_string());
    let git = format!("git --git-dir={}", word(&store));
    // run in the workdir, named in full (pasted elsewhere, `--work-tree=.` and the
    // `rm` would act on that directory)
    let cd = format!("cd {} && ", word(Path::new(&workdir)));
    Some(RejectedTree {
        iteration: last,
        accepted_iteration: to,
        restore_command: format!(
            "{cd}{git} --work-tree=. restore --source={good} --worktree -- . && {git} diff -z --no-renames --name-only --diff-filter=A {good} {bad} | xargs -0 rm -f --"
        ),
    })
}

/// Each iteration's acceptance by the ratchet (`(iteration, accepted)`, baseline
/// first), as `report`, `status` and `explain-halt` report it.
pub(crate) fn acceptance(lines: &[Line]) -> Vec<(u32, bool)> {
    let t = crate::trajectory::Trajectory::from_lines(lines);
    let code = t.config().map_or(0, |c| c.success_exit_code);
    let views = t.attempt_views(code);
    let acc = crate::detect::progress::accepted(&views);
    views.iter().map(|v| v.iteration).zip(acc).collect()
}
