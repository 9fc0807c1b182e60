//! The trajectory: a run's observations, rebuilt from receipt events, in the shape
//! the detectors read.
//!
//! The loop appends an event to the receipt, folds it into its [`Trajectory`] with
//! [`Trajectory::apply`], and calls [`crate::decide::decide`]. `explain-halt` and
//! `replay` rebuild the same value from the receipt with the same `apply`, so the
//! verdict they derive uses exactly what the loop saw.

use crate::check::model::ParsedRun;
use crate::config::RunConfig;
use crate::detect::progress::AttemptView;
use crate::proc::StopCause;
use crate::receipt::events::{CheckFinished, Event, ExecFinished, Reverted, RunStarted};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

/// One iteration's observations.
#[derive(Debug, Clone, Default)]
pub struct IterationObs {
    pub iteration: u32,
    pub exec: Option<ExecFinished>,
    /// Receipt timestamp of the exec_finished event (RFC 3339).
    pub exec_ts: Option<String>,
    /// The main check run (attempt 0) then confirmation runs.
    pub checks: Vec<CheckFinished>,
    /// The failing and passing sets of each run in `checks` (same index), computed
    /// on first use ([`Trajectory::sets`]).
    sets: Vec<OnceLock<CheckSets>>,
    pub reverted: Option<Reverted>,
    /// The judge's run on this iteration's green, if it ran.
    pub judged: Option<crate::receipt::judgment::JudgeFinished>,
    /// The task list as read at the start of this iteration (`--tasks`).
    pub tasks: Option<crate::receipt::judgment::TasksObserved>,
    /// The context measured before this iteration's exec.
    pub context: Option<crate::receipt::judgment::ContextBuilt>,
    /// The last check of this iteration was stopped by a signal to loopexec: it is in
    /// the receipt, not in `checks` (it measured nothing). A later check of the
    /// iteration (after `run --resume`) clears it.
    pub check_interrupted: bool,
}

impl IterationObs {
    /// The main check run, if it ran.
    #[must_use]
    pub fn main_check(&self) -> Option<&CheckFinished> {
        self.checks.first()
    }
}

/// What the detectors read of one check run's parse: its failing set with messages
/// and its passing set, built once per run, on first use ([`Trajectory::sets`]).
///
/// `decide` runs after every step and reads the sets of every iteration so far
/// (progress views, the ratchet, the flakiness groups); building them from each
/// [`ParsedRun`] on every call made a run's cost grow with iterations × tests on
/// every step. A set equal to the one of the run folded just before shares its
/// allocation (when those were built first, as the loop and every in-order reader
/// build them), so a stalled run holds one copy and
/// [`crate::detect::progress::accepted`] compares it by address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckSets {
    /// Failing set F: id → normalized message (`""` when none).
    pub failing: Arc<BTreeMap<String, String>>,
    /// Passing set P (flaky-passed included).
    pub passing: Arc<BTreeSet<String>>,
}

impl CheckSets {
    /// The sets of `p`, sharing either set with `prev` when equal.
    #[must_use]
    pub fn of(p: &ParsedRun, prev: Option<&CheckSets>) -> CheckSets {
        let failing = failing_messages(p);
        let passing = p.passing();
        CheckSets {
            failing: match prev {
                Some(q) if *q.failing == failing => Arc::clone(&q.failing),
                _ => Arc::new(failing),
            },
            passing: match prev {
                Some(q) if *q.passing == passing => Arc::clone(&q.passing),
                _ => Arc::new(passing),
            },
        }
    }
}

/// A signal loopexec received between or during steps.
#[derive(Debug, Clone, PartialEq)]
pub struct Interrupt {
    pub iteration: u32,
    pub signal: i32,
}

/// Everything observed in a run (or the current segment of a resumed run).
#[derive(Debug, Clone, Default)]
pub struct Trajectory {
    pub started: Option<RunStarted>,
    pub started_ts: Option<String>,
    pub iterations: Vec<IterationObs>,
    pub interrupts: Vec<Interrupt>,
    /// Iteration up to which a person acknowledged the work (from `resumed` events).
    pub acknowledged_through: Option<u32>,
    /// First iteration of the current segment (0, or where a resume continued).
    pub segment_start: u32,
    /// Holds the loop saw in the current segment (`held` events).
    pub holds: Vec<crate::receipt::events::Held>,
    /// Agent actions the gate saw, per exec (`actions` events).
    pub actions: Vec<crate::gate::ActionsSeen>,
    /// Empty rate-limit buckets the loop saw (`rate_limited` events).
    pub rate_limits: Vec<crate::receipt::events::RateLimited>,
    /// Receipt time of the last `halted` event (RFC 3339).
    pub halted_ts: Option<String>,
    /// The last `halted` event: where a resumed run had stopped, and why.
    pub last_halted: Option<crate::receipt::events::Halted>,
    /// Receipt time of the last `resumed` event (RFC 3339), for a resumed run.
    pub resumed_ts: Option<String>,
    /// Milliseconds between each halt and the resume after it: time the run was not
    /// running, which its wall clock (`budget.max_duration`) does not count.
    pub paused_ms: u64,
}

impl Trajectory {
    /// True for a resumed run whose segment has started no iteration yet (a `resumed`
    /// event is its last word): what a halt at the resume itself is decided on.
    #[must_use]
    pub fn at_resume(&self) -> bool {
        self.last()
            .is_some_and(|last| self.segment_start > last.iteration)
    }

    /// The run's wall clock at receipt time `to`, in milliseconds: from its start,
    /// less the time between each halt and its resume ([`Self::paused_ms`]).
    #[must_use]
    pub fn active_ms(&self, to: &str) -> Option<u64> {
        let from = self.started_ts.as_deref()?;
        Some(crate::receipt::facts::millis_between(from, to)?.saturating_sub(self.paused_ms))
    }

    /// [`Self::apply`] for an event the caller no longer needs: the large ones (a
    /// run's start, an exec's and a check's record) are moved in, not copied (the
    /// recorder folds every line it writes).
    pub fn apply_owned(&mut self, event: Event, ts: &str) {
        match event {
            Event::RunStarted(s) => {
                self.started = Some(*s);
                self.started_ts = Some(ts.to_string());
            }
            Event::ExecFinished(e) => {
                if let Some(it) = self.iteration_mut(e.iteration) {
                    it.exec = Some(*e);
                    it.exec_ts = Some(ts.to_string());
                }
            }
            Event::CheckFinished(c) => self.push_check(*c),
            other => self.apply(&other, ts),
        }
    }

    /// Folds one receipt event in. `ts` is the event's receipt timestamp.
    pub fn apply(&mut self, event: &Event, ts: &str) {
        match event {
            Event::RunStarted(s) => {
                self.started = Some((**s).clone());
                self.started_ts = Some(ts.to_string());
            }
            Event::IterationStarted(s) => {
                self.iterations.push(IterationObs {
                    iteration: s.iteration,
                    ..IterationObs::default()
                });
            }
            Event::ExecFinished(e) => {
                if let Some(it) = self.iteration_mut(e.iteration) {
                    it.exec = Some((**e).clone());
                    it.exec_ts = Some(ts.to_string());
                }
            }
            Event::CheckFinished(c) => self.push_check((**c).clone()),
            Event::Reverted(r) => {
                if let Some(it) = self.iteration_mut(r.iteration) {
                    it.reverted = Some(r.clone());
                }
            }
            Event::Resumed(r) => {
                if !r.acknowledged_by.is_empty() {
                    self.acknowledged_through = Some(r.from_iteration);
                }
                self.segment_start = r.from_iteration + 1;
                self.interrupts.clear();
                self.holds.clear();
                // A cap set at the resume holds from here on: the loop decided with
                // it, so re-derivation must too.
                if let Some(s) = self.started.as_mut() {
                    let c = &mut s.config;
                    if let Some(n) = r.max_iterations {
                        c.max_iterations = n;
                    }
                    if r.budget_usd.is_some() {
                        c.budget.usd = r.budget_usd;
                    }
                    if r.budget_tokens.is_some() {
                        c.budget.tokens = r.budget_tokens;
                    }
                    if let Some(ms) = r.max_duration_ms {
                        c.budget.max_duration =
                            Some(crate::config::Dur(std::time::Duration::from_millis(ms)));
                    }
                }
                if let Some(h) = self.halted_ts.as_deref() {
                    self.paused_ms += crate::receipt::facts::millis_between(h, ts).unwrap_or(0);
                }
                self.resumed_ts = Some(ts.to_string());
            }
            Event::Interrupted(i) => {
                self.interrupts.push(Interrupt {
                    iteration: i.iteration,
                    signal: i.signal,
                });
            }
            Event::Halted(h) => {
                self.halted_ts = Some(ts.to_string());
                self.last_halted = Some((**h).clone());
            }
            Event::Unheld(_) => {}
            Event::Held(h) => self.holds.push(h.clone()),
            Event::Actions(a) => self.actions.push((**a).clone()),
            Event::RateLimited(r) => self.rate_limits.push(r.clone()),
            Event::JudgeFinished(j) => {
                if let Some(it) = self.iteration_mut(j.iteration) {
                    it.judged = Some((**j).clone());
                }
            }
            Event::TasksObserved(o) => {
                if let Some(it) = self.iteration_mut(o.iteration) {
                    it.tasks = Some((**o).clone());
                }
            }
            Event::ContextBuilt(c) => {
                if let Some(it) = self.iteration_mut(c.iteration) {
                    it.context = Some((**c).clone());
                }
            }
        }
    }

    /// Rebuilds a trajectory from receipt lines, up to and excluding the last
    /// `halted` event (the state `decide` saw when it halted).
    #[must_use]
    pub fn from_lines(lines: &[crate::receipt::Line]) -> Trajectory {
        let mut t = Trajectory::default();
        for l in lines {
            t.apply(&l.event, &l.ts);
        }
        t
    }

    /// Adds a check run to its iteration (ignored when the iteration never started).
    /// A check that a signal to loopexec stopped (Ctrl-C, `kill`) measured nothing:
    /// it stays in the receipt, but no detector, verdict or resume reads it as a red
    /// run (a new user's review saw an interrupted baseline shown as "red, 1 failing of
    /// 0 collected" and `--resume` judge from it). The interrupt itself is folded from
    /// its `interrupted` event.
    fn push_check(&mut self, c: CheckFinished) {
        if matches!(c.step.stopped, Some(StopCause::Signal { .. })) {
            if let Some(it) = self.iteration_mut(c.iteration) {
                it.check_interrupted = true;
            }
            return;
        }
        if let Some(it) = self.iteration_mut(c.iteration) {
            it.check_interrupted = false;
            it.sets.push(OnceLock::new());
            it.checks.push(c);
        }
    }

    /// The sets of check run `j` of `self.iterations[i]`, built on first use.
    ///
    /// # Panics
    /// When there is no such run.
    #[must_use]
    pub fn sets(&self, i: usize, j: usize) -> &CheckSets {
        let it = &self.iterations[i];
        it.sets[j].get_or_init(|| {
            // the run folded just before, if its sets are built
            let prev = if j > 0 {
                it.sets[j - 1].get()
            } else {
                self.iterations[..i]
                    .iter()
                    .rev()
                    .find_map(|p| p.sets.last())
                    .and_then(OnceLock::get)
            };
            CheckSets::of(&it.checks[j].parsed, prev)
        })
    }

    /// The sets of the main check run of `self.iterations[i]`, if it ran.
    #[must_use]
    pub fn main_sets(&self, i: usize) -> Option<&CheckSets> {
        (!self.iterations.get(i)?.checks.is_empty()).then(|| self.sets(i, 0))
    }

    fn iteration_mut(&mut self, n: u32) -> Option<&mut IterationObs> {
        self.iterations.iter_mut().rev().find(|i| i.iteration == n)
    }

    /// The policy the run had (with the iteration cap of its last `resumed` event
    /// that set one).
    #[must_use]
    pub fn config(&self) -> Option<&RunConfig> {
        self.started.as_ref().map(|s| &s.config)
    }

    /// The last iteration observed.
    #[must_use]
    pub fn last(&self) -> Option<&IterationObs> {
        self.iterations.last()
    }

    /// The baseline (iteration 0) main check.
    #[must_use]
    pub fn baseline_check(&self) -> Option<&CheckFinished> {
        self.iterations
            .iter()
            .find(|i| i.iteration == 0)
            .and_then(IterationObs::main_check)
    }

    /// Iterations that completed a main check, in order (baseline first), as the
    /// progress detectors see them. `tree_changed` compares the tree after the exec
    /// with the tree the iteration started from (false when git is unavailable).
    #[must_use]
    pub fn attempt_views(&self, success_exit_code: i32) -> Vec<AttemptView> {
        let mut out = Vec::with_capacity(self.iterations.len());
        let mut start_tree: Option<&str> = self.baseline_tree();
        for (i, it) in self.iterations.iter().enumerate() {
            let (Some(check), Some(sets)) = (it.main_check(), self.main_sets(i)) else {
                continue;
            };
            let exec_tree = it.exec.as_ref().and_then(|e| e.tree.as_deref());
            let tree_changed = match (exec_tree, start_tree) {
                (Some(a), Some(b)) => a != b,
                _ => false,
            };
            out.push(AttemptView {
                iteration: it.iteration,
                green: check.step.exited_with(success_exit_code) && sets.failing.is_empty(),
                failing: Arc::clone(&sets.failing),
                passing: Arc::clone(&sets.passing),
                tree_changed: it.iteration > 0 && tree_changed,
            });
            // The tree the next iteration starts from.
            start_tree = if let Some(r) = &it.reverted {
                self.tree_of_iteration(r.to_iteration).or(start_tree)
            } else {
                check.tree_after.as_deref().or(exec_tree).or(start_tree)
            };
        }
        out
    }

    /// Whether the last iteration's exec changed the tree it started from: `Some(true)`
    /// or `Some(false)` when both trees are known (git available), else `None`. The
    /// start is the tree the previous iteration left (its check's tree, or the tree a
    /// revert restored), as [`Trajectory::attempt_views`] follows it.
    #[must_use]
    pub fn last_exec_changed_tree(&self) -> Option<bool> {
        let (last, before) = self.iterations.split_last()?;
        let exec_tree = last.exec.as_ref()?.tree.as_deref()?;
        let mut start: Option<&str> = self.baseline_tree();
        for it in before {
            let Some(check) = it.main_check() else {
                continue;
            };
            let it_exec = it.exec.as_ref().and_then(|e| e.tree.as_deref());
            start = if let Some(r) = &it.reverted {
                self.tree_of_iteration(r.to_iteration).or(start)
            } else {
                check.tree_after.as_deref().or(it_exec).or(start)
            };
        }
        Some(exec_tree != start?)
    }

    /// The t0 snapshot's tree id, when git was available.
    fn baseline_tree(&self) -> Option<&str> {
        self.started
            .as_ref()
            .and_then(|s| s.git.baseline_tree.as_deref())
    }

    fn tree_of_iteration(&self, n: u32) -> Option<&str> {
        if n == 0 {
            return self.baseline_tree();
        }
        let it = self.iterations.iter().rev().find(|i| i.iteration == n)?;
        it.main_check()
            .and_then(|c| c.tree_after.as_deref())
            .or_else(|| it.exec.as_ref()?.tree.as_deref())
    }
}

impl Trajectory {
    /// The failing set of the newest main check, with its messages, sorted by id
    /// (empty before any check).
    #[must_use]
    pub fn last_failing_messages(&self) -> Vec<(String, String)> {
        (0..self.iterations.len())
            .rev()
            .find_map(|i| self.main_sets(i))
            .map(|s| {
                s.failing
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Failing ids with their normalized messages ("" when none).
#[must_use]
pub fn failing_messages(p: &ParsedRun) -> BTreeMap<String, String> {
    p.tests
        .iter()
        .filter(|t| t.outcome.is_failing())
        .map(|t| (t.id.clone(), t.message.clone().unwrap_or_default()))
        .collect()
}

/// Green: the check exited with the success code on its own (no timeout, no stop) and
/// no test is in the failing set. Completeness is judged by the integrity guards,
/// which run before the green branch.
#[must_use]
pub fn is_green(c: &CheckFinished, success_exit_code: i32) -> bool {
    c.step.exited_with(success_exit_code) && !c.parsed.has_failing()
}

#[cfg(test)]
mod apply_tests {
    use super::Trajectory;
    use crate::check::model::Outcome;
    use crate::detect::testkit::{check, exec, start, traj};

    #[test]
    fn folding_an_owned_event_is_folding_a_borrowed_one() {
        let events = [
            start(1),
            exec(1),
            check(1, 0, Some("t1"), &[("a", Outcome::Failed)]),
            start(2),
            exec(2),
            check(2, 0, Some("t2"), &[("a", Outcome::Passed)]),
            check(2, 1, Some("t2"), &[("a", Outcome::Passed)]),
        ];
        let borrowed = traj(&events);
        let mut owned = Trajectory::default();
        for e in events {
            owned.apply_owned(e, "2026-01-01T00:00:00.000Z");
        }
        assert_eq!(format!("{owned:?}"), format!("{borrowed:?}"));
        assert_eq!(owned.iterations.len(), 2);
        assert_eq!(owned.iterations[1].checks.len(), 2);
    }

    /// Each check run's sets are its parse's failing set (with messages) and passing
    /// set; a set equal to the previous run's shares its allocation, one that
    /// differs does not, and views hand out the same allocations.
    #[test]
    fn sets_are_the_parse_and_equal_neighbours_share_them() {
        use std::sync::Arc;
        let (f, p) = (Outcome::Failed, Outcome::Passed);
        let t = traj(&[
            start(0),
            check(0, 0, Some("t0"), &[("a", f), ("b", p)]),
            start(1),
            exec(1),
            check(1, 0, Some("t1"), &[("a", f), ("b", p)]),
            check(1, 1, Some("t1"), &[("a", f), ("b", p)]),
            start(2),
            exec(2),
            check(2, 0, Some("t2"), &[("a", p), ("b", p)]),
        ]);
        // (iteration index, run index, failing ids, passing ids)
        let rows: [(usize, usize, &[&str], &[&str]); 4] = [
            (0, 0, &["a"], &["b"]),
            (1, 0, &["a"], &["b"]),
            (1, 1, &["a"], &["b"]),
            (2, 0, &[], &["a", "b"]),
        ];
        for (i, j, failing, passing) in rows {
            let s = t.sets(i, j);
            assert_eq!(s.failing.keys().collect::<Vec<_>>(), failing, "({i},{j})");
            assert_eq!(s.passing.iter().collect::<Vec<_>>(), passing, "({i},{j})");
        }
        assert!(Arc::ptr_eq(&t.sets(0, 0).passing, &t.sets(1, 0).passing));
        assert!(Arc::ptr_eq(&t.sets(1, 0).failing, &t.sets(1, 1).failing));
        assert!(!Arc::ptr_eq(&t.sets(1, 1).passing, &t.sets(2, 0).passing));
        let views = t.attempt_views(0);
        assert_eq!(views.len(), 3);
        assert!(Arc::ptr_eq(&views[1].passing, &t.sets(1, 0).passing));
        assert!(views[2].green && !views[1].green);
    }
}
