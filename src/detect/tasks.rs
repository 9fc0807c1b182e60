//! Task lists (SPEC §9.3): which task an iteration works on, and
//! `no_actionable_tasks` (11) when open tasks remain but every one is blocked.
//!
//! The rule, evaluated over the receipt's `tasks_observed` events (the list as read at
//! the start of each iteration):
//! * a task is **done** when the file marks it done (`[x]`, or a done status) and
//!   either it was already marked so when the run first read the list or the latest
//!   main check is green (a tick made during the run counts once the check is green);
//!   or it names objective tests and every one passed in the latest main check; or it
//!   was the task selected for an earlier iteration whose check went green and passed
//!   every guard (a green iteration completes its task);
//! * a task is **actionable** when it is open and every task in its `blocked_by` is
//!   done (a blocker id that is not in the list is never done);
//! * an iteration works on the first actionable task in file order
//!   (`LOOPEXEC_TASK_ID`); when none is actionable but some are open, the run halts
//!   before the agent runs; when none is open, the iteration runs without a task and
//!   the usual green ends the run;
//! * a green with open tasks left does not end the run: the next iteration takes the
//!   next task.

use crate::config::RunConfig;
use crate::halt::{Halt, HaltReason};
use crate::observe::tasks::{Task, TaskStatus};
use crate::receipt::judgment::TasksObserved;
use crate::trajectory::{is_green, Trajectory};
use std::collections::BTreeSet;

/// The task state at one iteration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// The task this iteration works on.
    pub selected: Option<Task>,
    /// Tasks still open (selected included), in file order.
    pub open: Vec<Task>,
    /// Ids of done tasks.
    pub done: BTreeSet<String>,
}

fn objective_done(task: &Task, run: Option<&crate::check::model::ParsedRun>) -> bool {
    !task.objective.is_empty()
        && run.is_some_and(|r| super::objective::check_explicit(&task.objective, r).is_empty())
}

/// What a task's done-ness is judged against at one observation.
struct Basis<'a> {
    /// Ids completed by earlier green iterations.
    by_green: &'a BTreeSet<String>,
    /// The latest main check before (or, after a green, of) this iteration.
    run: Option<&'a crate::check::model::ParsedRun>,
    /// Whether that check was green.
    run_green: bool,
    /// Ids the list marked done when the run first read it.
    initially_done: &'a BTreeSet<String>,
}

fn plan_of(obs: &TasksObserved, b: &Basis<'_>) -> Plan {
    // A tick made during the run counts once the check is green.
    let file_done = |t: &Task| {
        t.status == TaskStatus::Done && (b.initially_done.contains(&t.id) || b.run_green)
    };
    let done: BTreeSet<String> = obs
        .tasks
        .iter()
        .filter(|t| file_done(t) || b.by_green.contains(&t.id) || objective_done(t, b.run))
        .map(|t| t.id.clone())
        .collect();
    let open: Vec<Task> = obs
        .tasks
        .iter()
        .filter(|t| !done.contains(&t.id))
        .cloned()
        .collect();
    let selected = open
        .iter()
        .find(|t| t.blocked_by.iter().all(|b| done.contains(b)))
        .cloned();
    Plan {
        selected,
        open,
        done,
    }
}

/// The plan of the last iteration, and the ids completed by earlier green iterations.
/// `None` when no task list was observed.
#[must_use]
pub fn plan(t: &Trajectory, code: i32) -> Option<(Plan, BTreeSet<String>)> {
    let mut by_green = BTreeSet::new();
    let mut last_run: Option<&crate::check::model::ParsedRun> = None;
    let mut last_green = false;
    let mut current = None;
    let initially_done = initially_done(t);
    for it in &t.iterations {
        if let Some(obs) = &it.tasks {
            let p = plan_of(
                obs,
                &Basis {
                    by_green: &by_green,
                    run: last_run,
                    run_green: last_green,
                    initially_done: &initially_done,
                },
            );
            if it.iteration > 0 {
                if let (Some(sel), Some(c)) = (&p.selected, it.main_check()) {
                    if is_green(c, code) && t.last().is_some_and(|l| l.iteration != it.iteration) {
                        by_green.insert(sel.id.clone());
                    }
                }
            }
            current = Some(p);
        }
        if let Some(c) = it.main_check() {
            last_run = Some(&c.parsed);
            last_green = is_green(c, code);
        }
    }
    current.map(|p| (p, by_green))
}

/// Ids marked done in the first task list the run read.
fn initially_done(t: &Trajectory) -> BTreeSet<String> {
    t.iterations
        .iter()
        .find_map(|i| i.tasks.as_ref())
        .map(|o| {
            o.tasks
                .iter()
                .filter(|t| t.status == TaskStatus::Done)
                .map(|t| t.id.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// The task the last iteration works on.
#[must_use]
pub fn selected(t: &Trajectory, code: i32) -> Option<Task> {
    plan(t, code).and_then(|(p, _)| p.selected)
}

/// What the task list asks of the loop before a step.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskStep {
    /// Read the task list for this iteration.
    Observe,
    /// Stop.
    Halt(Halt),
}

/// Before the last iteration's next step: read the list if this iteration has not,
/// and before an exec halt when nothing is actionable.
#[must_use]
pub fn step(t: &Trajectory, cfg: &RunConfig) -> Option<TaskStep> {
    let file = cfg.task.list.as_ref()?;
    let last = t.last()?;
    let Some(obs) = &last.tasks else {
        return Some(TaskStep::Observe);
    };
    if let Some(e) = &obs.error {
        return Some(TaskStep::Halt(Halt {
            reason: HaltReason::InvariantFailed,
            contributors: vec![format!(
                "the task list {file} cannot be read at iteration {}: {e}",
                last.iteration
            )],
            detail: serde_json::json!({"iteration": last.iteration, "tasks": file, "error": e}),
        }));
    }
    if last.iteration == 0 || last.exec.is_some() {
        return None;
    }
    let (p, _) = plan(t, cfg.success_exit_code)?;
    if p.selected.is_some() || p.open.is_empty() {
        return None;
    }
    let status = |id: &str| -> String {
        match obs.tasks.iter().find(|t| t.id == id) {
            None => format!("{id} (not in the list)"),
            Some(_) if p.done.contains(id) => format!("{id} (done)"),
            Some(_) => format!("{id} (open)"),
        }
    };
    let mut contributors = vec![format!(
        "{} open task(s) in {file} and none is actionable: every one waits on a task that is not done",
        p.open.len()
    )];
    for t in &p.open {
        let blockers: Vec<String> = t
            .blocked_by
            .iter()
            .filter(|b| !p.done.contains(*b))
            .map(|b| status(b))
            .collect();
        contributors.push(format!(
            "{} ({}) is blocked by {}",
            t.id,
            t.title,
            blockers.join(", ")
        ));
    }
    Some(TaskStep::Halt(Halt {
        reason: HaltReason::NoActionableTasks,
        contributors,
        detail: serde_json::json!({
            "iteration": last.iteration,
            "tasks": file,
            "blocked": p.open.iter().map(|t| serde_json::json!({"id": t.id, "title": t.title, "blocked_by": t.blocked_by})).collect::<Vec<_>>(),
        }),
    }))
}

/// After a green, guard-clean last iteration: do open tasks remain once this green
/// completes the task it worked on (and objectives it passed)? `false` without a list.
#[must_use]
pub fn open_remain_after_green(t: &Trajectory, cfg: &RunConfig) -> bool {
    if cfg.task.list.is_none() {
        return false;
    }
    let Some(last) = t.last() else { return false };
    let Some(obs) = &last.tasks else { return false };
    let Some((p, mut by_green)) = plan(t, cfg.success_exit_code) else {
        return false;
    };
    if last.iteration > 0 {
        if let Some(s) = &p.selected {
            by_green.insert(s.id.clone());
        }
    }
    let initially = initially_done(t);
    let now = plan_of(
        obs,
        &Basis {
            by_green: &by_green,
            run: last.main_check().map(|c| &c.parsed),
            run_green: true,
            initially_done: &initially,
        },
    );
    !now.open.is_empty()
}

#[cfg(test)]
mod tests;
