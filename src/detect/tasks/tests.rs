//! Task selection rows: done by file, by a green iteration, by objective tests;
//! blocked, unknown blockers, and the halt.

use super::*;
use crate::check::model::Outcome::{Failed, Passed};
use crate::detect::testkit::{check, exec, start, traj};
use crate::observe::tasks::Task;
use crate::receipt::events::Event;

fn task(id: &str, status: TaskStatus, blocked_by: &[&str], objective: &[&str]) -> Task {
    Task {
        id: id.into(),
        title: format!("title of {id}"),
        status,
        blocked_by: blocked_by.iter().map(|s| (*s).to_string()).collect(),
        objective: objective.iter().map(|s| (*s).to_string()).collect(),
    }
}

fn observed(it: u32, tasks: &[Task]) -> Event {
    Event::TasksObserved(Box::new(TasksObserved {
        iteration: it,
        file: "tasks.jsonl".into(),
        tasks: tasks.to_vec(),
        error: None,
    }))
}

fn cfg() -> RunConfig {
    let mut c = RunConfig::defaults();
    c.task.list = Some("tasks.jsonl".into());
    c
}

use TaskStatus::{Done, Open};

#[test]
fn selection_rows() {
    let red = [("t1", Failed)];
    let cases: Vec<(&str, Vec<Task>, Option<&str>)> = vec![
        (
            "first open, unblocked",
            vec![task("a", Open, &[], &[]), task("b", Open, &[], &[])],
            Some("a"),
        ),
        (
            "a blocked by open b: b first",
            vec![task("a", Open, &["b"], &[]), task("b", Open, &[], &[])],
            Some("b"),
        ),
        (
            "blocker done in the file",
            vec![task("a", Done, &[], &[]), task("b", Open, &["a"], &[])],
            Some("b"),
        ),
        (
            "mutual block",
            vec![task("a", Open, &["b"], &[]), task("b", Open, &["a"], &[])],
            None,
        ),
        (
            "unknown blocker never done",
            vec![task("a", Open, &["zz"], &[])],
            None,
        ),
        ("all done", vec![task("a", Done, &[], &[])], None),
    ];
    for (name, tasks, want) in cases {
        let t = traj(&[
            start(0),
            check(0, 0, None, &red),
            start(1),
            observed(1, &tasks),
        ]);
        assert_eq!(selected(&t, 0).map(|t| t.id).as_deref(), want, "{name}");
    }
}

#[test]
fn a_green_iteration_completes_its_task_and_objectives_complete_theirs() {
    let tasks = [
        task("a", Open, &[], &[]),
        task("b", Open, &["a"], &[]),
        task("c", Open, &[], &["t9"]),
    ];
    let t = traj(&[
        start(0),
        check(0, 0, None, &[("t1", Failed)]),
        start(1),
        observed(1, &tasks),
        exec(1),
        check(1, 0, None, &[("t1", Passed)]),
        start(2),
        observed(2, &tasks),
    ]);
    // Iteration 1 was green on task a: b is now actionable.
    assert_eq!(selected(&t, 0).map(|t| t.id).as_deref(), Some("b"));
    // An objective that passed in the latest check completes its task.
    let t = traj(&[
        start(0),
        check(0, 0, None, &[("t9", Passed), ("t1", Failed)]),
        start(1),
        observed(
            1,
            &[task("c", Open, &[], &["t9"]), task("d", Open, &["c"], &[])],
        ),
    ]);
    assert_eq!(selected(&t, 0).map(|t| t.id).as_deref(), Some("d"));
}

#[test]
fn nothing_actionable_halts_before_the_exec_listing_blockers() {
    let tasks = [
        task("alpha", Open, &["beta"], &[]),
        task("beta", Open, &["alpha"], &[]),
    ];
    let before = traj(&[start(0), check(0, 0, None, &[("t1", Failed)]), start(1)]);
    assert_eq!(step(&before, &cfg()), Some(TaskStep::Observe));
    let t = traj(&[
        start(0),
        check(0, 0, None, &[("t1", Failed)]),
        start(1),
        observed(1, &tasks),
    ]);
    match step(&t, &cfg()) {
        Some(TaskStep::Halt(h)) => {
            assert_eq!(h.reason, HaltReason::NoActionableTasks);
            let text = h.contributors.join("\n");
            assert!(text.contains("alpha") && text.contains("beta"), "{text}");
        }
        other => panic!("expected a halt, got {other:?}"),
    }
    // Without a list there is nothing to do.
    assert_eq!(step(&t, &RunConfig::defaults()), None);
    // All done: no halt, the usual green ends the run.
    let t = traj(&[
        start(0),
        check(0, 0, None, &[("t1", Failed)]),
        start(1),
        observed(1, &[task("a", Done, &[], &[])]),
    ]);
    assert_eq!(step(&t, &cfg()), None);
}

#[test]
fn a_green_with_open_tasks_left_continues() {
    let tasks = [task("a", Open, &[], &[]), task("b", Open, &[], &[])];
    let one = [task("a", Open, &[], &[])];
    let green_on = |list: &[Task]| {
        traj(&[
            start(0),
            check(0, 0, None, &[("t1", Failed)]),
            start(1),
            observed(1, list),
            exec(1),
            check(1, 0, None, &[("t1", Passed)]),
        ])
    };
    assert!(open_remain_after_green(&green_on(&tasks), &cfg()));
    assert!(!open_remain_after_green(&green_on(&one), &cfg()));
    assert!(!open_remain_after_green(
        &green_on(&tasks),
        &RunConfig::defaults()
    ));
}

#[test]
fn a_tick_made_during_the_run_counts_once_the_check_is_green() {
    let before = [task("a", Open, &[], &[]), task("b", Open, &[], &[])];
    let ticked = [task("a", Done, &[], &[]), task("b", Open, &[], &[])];
    let run = |check_1: &[(&str, crate::check::model::Outcome)]| {
        traj(&[
            start(0),
            check(0, 0, None, &[("t1", Failed), ("t2", Failed)]),
            start(1),
            observed(1, &before),
            exec(1),
            check(1, 0, None, check_1),
            start(2),
            observed(2, &ticked),
        ])
    };
    // The agent ticked a while the check stayed red: a is still the task.
    let red = run(&[("t1", Passed), ("t2", Failed)]);
    assert_eq!(selected(&red, 0).map(|t| t.id).as_deref(), Some("a"));
    // Ticked, and the check is green: a is done (by the tick and by the green), b next.
    let green = run(&[("t1", Passed), ("t2", Passed)]);
    assert_eq!(selected(&green, 0).map(|t| t.id).as_deref(), Some("b"));
    // Marked done before the run: done from the start.
    let t = traj(&[
        start(0),
        check(0, 0, None, &[("t1", Failed)]),
        start(1),
        observed(1, &ticked),
    ]);
    assert_eq!(selected(&t, 0).map(|t| t.id).as_deref(), Some("b"));
}
