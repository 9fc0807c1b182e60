//! Oracle trust in the loop (exit class 14): the check is the instrument, and an
//! instrument that changes what it measures, or answers differently on the same
//! input, certifies nothing.
//!
//! * `hermeticity_violation`: the tree after a check run differs from the tree before
//!   it (paths matching `[guards] check_may_write` and the built-in cache globs
//!   excepted), or code the check created there holds what the tamper rules flag
//!   (`check_created_code`: a module written and loaded within one check).
//! * `check_flaky`: a maintained sequential bound. Every check run on an unchanged tree
//!   (same git tree id, or the confirmation runs of one iteration) is a Bernoulli
//!   sample of the check's stability: it agrees with the group's majority answer
//!   (verdict and failing set) or it does not. The run halts when the group has at
//!   least one disagreement and the Wilson 95 % lower bound of its agreement rate is
//!   below `[oracle] confidence_target` (default 0.95). Without a disagreement nothing
//!   speaks against the check, so a few agreeing runs never halt. One disagreement
//!   is enough while fewer than 110 runs back the group at the default target (see
//!   the table in SPEC §9.5 and the `bound_table` test); a lower target tolerates it in larger
//!   groups, but a green whose confirmations disagree with it is never believed.
//! * `check_not_hermetic`: the checkout confirmation ([`checkout_disagrees`]) — the
//!   green check run once more in the working tree itself, where its user runs it —
//!   is not green, or does not pass every test the clean room passed. Code whose
//!   result depends on where it runs (right only where `.loopexec/` or `.git` is
//!   missing, only under the room's path) is green in the room and red here.

use crate::config::RunConfig;
use crate::halt::{Halt, HaltReason};
use crate::receipt::events::CheckFinished;
use crate::trajectory::{is_green, CheckSets, Trajectory};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Caches a check may write without breaking hermeticity.
pub const DEFAULT_CHECK_MAY_WRITE: &[&str] = &[
    "**/__pycache__/**",
    "**/*.pyc",
    ".pytest_cache/**",
    "**/.pytest_cache/**",
    ".mypy_cache/**",
    ".ruff_cache/**",
    "node_modules/.cache/**",
    ".nyc_output/**",
    "coverage/**",
];

/// `hermeticity_violation` for one check run.
#[must_use]
pub fn hermeticity(cfg: &RunConfig, c: &CheckFinished) -> Option<Halt> {
    // `decide` asks this for every check of the trajectory at every step: the glob set
    // is built only when there is a write to judge.
    if c.check_wrote.is_empty() && c.check_created_code.is_empty() {
        return None;
    }
    // the report files the run names (`reports`) are the check's own output: removed
    // before every check run and written again by it (a new user's `--report
    // reports/junit.xml` in place halted at the first green)
    let globs: Vec<&str> = DEFAULT_CHECK_MAY_WRITE
        .iter()
        .copied()
        .chain(cfg.guards.check_may_write.iter().map(String::as_str))
        .chain(cfg.reports.iter().map(String::as_str))
        .collect();
    // Invalid globs are rejected when the config is validated.
    let allowed =
        crate::observe::guards::build_globset(&globs).unwrap_or_else(|_| globset::GlobSet::empty());
    let wrote: Vec<&String> = c
        .check_wrote
        .iter()
        .filter(|p| !allowed.is_match(p.as_str()))
        .collect();
    if wrote.is_empty() && c.check_created_code.is_empty() {
        return None;
    }
    let created: Vec<&String> = c.check_created_code.iter().map(|h| &h.path).collect();
    Some(Halt {
        reason: HaltReason::HermeticityViolation,
        contributors: wrote
            .iter()
            .map(|p| format!("the check changed a file of the tree it judged: {p} (a report or cache the check writes is named with --report FILE or [guards] check_may_write)"))
            .chain(c.check_created_code.iter().map(|h| {
                format!(
                    "the check created code in the tree it judged: {}:{} ({}): {}",
                    h.path, h.line, h.rule, h.text
                )
            }))
            .collect(),
        detail: serde_json::json!({
            "iteration": c.iteration,
            "paths": wrote.iter().copied().chain(created).collect::<Vec<_>>(),
        }),
    })
}

/// One run's answer as the flakiness bound compares it: green or red, and the
/// failing set (ids only: a message that varies between runs is not a disagreement).
#[derive(Debug, Clone)]
struct Verdict {
    green: bool,
    failing: Arc<BTreeMap<String, String>>,
}

impl PartialEq for Verdict {
    fn eq(&self, other: &Self) -> bool {
        self.green == other.green
            && (Arc::ptr_eq(&self.failing, &other.failing)
                || self.failing.keys().eq(other.failing.keys()))
    }
}

fn verdict(c: &CheckFinished, sets: &CheckSets, code: i32) -> Verdict {
    Verdict {
        green: is_green(c, code),
        failing: Arc::clone(&sets.failing),
    }
}

/// The Wilson 95 % lower bound of the agreement rate of `n` same-tree runs of which
/// `disagreements` differ from the majority answer.
#[must_use]
pub fn agreement_bound(n: u64, disagreements: u64) -> f64 {
    crate::stats::wilson_interval(n.saturating_sub(disagreements), n, 0.95).0
}

/// Does a same-tree group of `n` runs with `disagreements` halt `check_flaky` at
/// `target`? Only with at least one disagreement and the bound below the target.
#[must_use]
pub fn bound_crossed(n: u64, disagreements: u64, target: f64) -> bool {
    disagreements > 0 && agreement_bound(n, disagreements) < target
}

/// True when every confirmation run of the last iteration agrees with its main run
/// (a green is believed only then, whatever the flakiness bound tolerates).
#[must_use]
pub fn confirmations_agree(t: &Trajectory, code: i32) -> bool {
    let Some(last) = t.last() else { return true };
    let i = t.iterations.len() - 1;
    let (Some(main), Some(sets)) = (last.main_check(), t.main_sets(i)) else {
        return true;
    };
    let want = verdict(main, sets, code);
    last.checks
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, c)| c.in_checkout.is_none())
        .all(|(j, c)| verdict(c, t.sets(i, j), code) == want)
}

/// `check_flaky` with the run's confidence target (SPEC §9.5).
#[must_use]
pub fn flaky_bound(t: &Trajectory, cfg: &RunConfig) -> Option<Halt> {
    flaky_at(t, cfg.success_exit_code, cfg.oracle.confidence_target)
}

/// A group of check runs [`flaky_at`] compares. Ordered as their names are
/// (`iteration N` before `tree …`), which decides which group a halt names first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Group<'a> {
    /// The runs of one iteration: its main run and confirmations.
    Iteration(u32),
    /// The runs started from one tree (git tree id).
    Tree(&'a str),
}

impl std::fmt::Display for Group<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Group::Iteration(n) => write!(f, "iteration {n}"),
            Group::Tree(t) => write!(f, "tree {t}"),
        }
    }
}

/// `check_flaky`: the agreement bound of check runs on an identical tree.
#[must_use]
pub fn flaky_at(t: &Trajectory, code: i32, target: f64) -> Option<Halt> {
    // Runs are compared within two kinds of group: all runs on the same tree (git
    // tree id before the check), and the runs of one iteration (the main run and its
    // confirmations, which nothing but the check itself ran between).
    let counted = |c: &&crate::receipt::events::CheckFinished| {
        !(c.step.timed_out || c.step.stopped.is_some() || c.step.cannot_start())
            // a check that wrote is judged by hermeticity
            && c.check_wrote.is_empty()
            // another place is not another sample of the same instrument: the
            // checkout confirmation is judged by `checkout_disagrees`
            && c.in_checkout.is_none()
    };
    // Only a group holding a run of the newest iteration can raise a new halt: the
    // trees its runs started from, and the iteration itself.
    let last = t.last()?;
    let last_iteration = last.iteration;
    let trees: std::collections::BTreeSet<&str> = last
        .checks
        .iter()
        .filter(counted)
        .filter_map(|c| c.tree_before.as_deref())
        .collect();
    let mut groups: BTreeMap<Group<'_>, Vec<(u32, u32, Verdict)>> = BTreeMap::new();
    for (i, it) in t.iterations.iter().enumerate() {
        for (j, c) in it.checks.iter().enumerate().filter(|(_, c)| counted(c)) {
            let in_tree = c.tree_before.as_deref().filter(|t| trees.contains(t));
            if in_tree.is_none() && it.iteration != last_iteration {
                continue;
            }
            let v = (it.iteration, c.attempt, verdict(c, t.sets(i, j), code));
            if let Some(tree) = in_tree {
                groups.entry(Group::Tree(tree)).or_default().push(v.clone());
            }
            if it.iteration == last_iteration {
                groups
                    .entry(Group::Iteration(it.iteration))
                    .or_default()
                    .push(v);
            }
        }
    }
    for (tree, runs) in &groups {
        // The majority answer (ties: the earliest); every other run is a disagreement.
        let mut counts: Vec<(&Verdict, u64)> = Vec::new();
        for r in runs {
            match counts.iter_mut().find(|(v, _)| **v == r.2) {
                Some(c) => c.1 += 1,
                None => counts.push((&r.2, 1)),
            }
        }
        let (majority, agree) =
            counts.iter().copied().fold(
                (&runs[0].2, 0),
                |best, c| if c.1 > best.1 { c } else { best },
            );
        let n = runs.len() as u64;
        let disagree = n - agree;
        if !bound_crossed(n, disagree, target) {
            continue;
        }
        let Some(odd) = runs.iter().find(|r| r.2 != *majority) else {
            continue;
        };
        let first = majority;
        let first_it = runs.iter().find(|r| r.2 == *majority).map_or(0, |r| r.0);
        let bound = agreement_bound(n, disagree);
        let (lo, hi) = crate::stats::wilson_interval(disagree, n, 0.95);
        let broke = if first.green == odd.2.green {
            "the failing set"
        } else {
            "the verdict (green or red)"
        };
        let describe = |v: &Verdict| {
            if v.green {
                "green".to_string()
            } else {
                format!("red ({} failing)", v.failing.len())
            }
        };
        return Some(Halt {
            reason: HaltReason::CheckFlaky,
            contributors: vec![
                format!(
                    "the check answered {} at iteration {} and {} at iteration {} on an identical tree ({broke} changed)",
                    describe(first),
                    first_it,
                    describe(&odd.2),
                    odd.0
                ),
                format!(
                    "{disagree} of {n} same-tree runs disagree: the Wilson 95% lower bound of the agreement rate is {bound:.3}, below the confidence target {target}"
                ),
                format!(
                    "observed flake rate {disagree}/{n}, Wilson 95% interval [{lo:.3}, {hi:.3}]"
                ),
            ],
            detail: serde_json::json!({
                "tree": tree.to_string(),
                "runs": n,
                "disagreeing": disagree,
                "flake_rate": disagree as f64 / n as f64,
                "wilson_95": [lo, hi],
                "agreement_lower_bound": bound,
                "confidence_target": target,
                "broke": broke,
                "samples": runs.iter().map(|r| serde_json::json!({"iteration": r.0, "attempt": r.1, "green": r.2.green, "failing": r.2.failing.keys().collect::<Vec<_>>()})).collect::<Vec<_>>(),
            }),
        });
    }
    None
}

/// How a checkout confirmation is compared with the clean room's main run
/// ([`checkout_disagrees`]): the two runs and their sets.
pub struct PlaceRuns<'a> {
    /// The clean room's main run of the iteration and its sets.
    pub room: (&'a CheckFinished, &'a CheckSets),
    /// The checkout confirmation and its sets.
    pub checkout: (&'a CheckFinished, &'a CheckSets),
    /// The check's success exit code (`success_exit_code`).
    pub code: i32,
}

/// `check_not_hermetic` when the checkout confirmation disagrees with the clean room's
/// green main run (SPEC §3.9): it is not green under `code` (the exit code, or a
/// failing test), it did not reach its runner's end where the room's run did, or a
/// test the room passed did not pass in it (a room id holding the room's path is
/// looked up with the workdir's in its place, [`crate::receipt::events::InCheckout`]).
/// Tests only the working tree has (new test files left out of the judged check)
/// count only through the checkout's verdict. `None` when they agree.
#[must_use]
pub fn checkout_disagrees(runs: &PlaceRuns<'_>) -> Option<Halt> {
    let ((room, room_sets), (co, co_sets)) = (runs.room, runs.checkout);
    let code_ok = co.step.exited_with(runs.code);
    let map = |id: &str| -> String {
        match &co.in_checkout {
            Some(p) if !p.room.is_empty() && id.contains(&p.room) => {
                id.replacen(&p.room, &p.workdir, 1)
            }
            _ => id.to_string(),
        }
    };
    let not_passed: Vec<String> = room_sets
        .passing
        .iter()
        .map(|id| map(id))
        .filter(|id| !co_sets.passing.contains(id))
        .collect();
    let cut_short = room.parsed.complete && !co.parsed.complete;
    if code_ok && co_sets.failing.is_empty() && not_passed.is_empty() && !cut_short {
        return None;
    }
    let list = |ids: &mut dyn Iterator<Item = &String>, n: usize| -> String {
        let shown: Vec<&str> = ids.take(LISTED).map(String::as_str).collect();
        let more = n.saturating_sub(shown.len());
        let mut s = shown.join(", ");
        if more > 0 {
            s.push_str(&format!(" and {more} more"));
        }
        s
    };
    let mut contributors = vec![format!(
        "the check was green in the clean room and is not in the working tree (the checkout confirmation: exit {})",
        co.step.exit_text()
    )];
    if !not_passed.is_empty() {
        contributors.push(format!(
            "{} test(s) the clean room passed did not pass in the working tree: {}",
            not_passed.len(),
            list(&mut not_passed.iter(), not_passed.len())
        ));
    }
    let room_ids: std::collections::BTreeSet<String> = room_sets
        .passing
        .iter()
        .chain(room_sets.failing.keys())
        .map(|id| map(id))
        .collect();
    let only_here: Vec<&String> = co_sets
        .failing
        .keys()
        .filter(|id| !room_ids.contains(*id))
        .collect();
    if !only_here.is_empty() {
        contributors.push(format!(
            "{} failing test(s) the clean room did not run (new test files left out of the judged check, `[oracle] new_tests`): {}",
            only_here.len(),
            list(&mut only_here.iter().copied(), only_here.len())
        ));
    }
    if cut_short {
        contributors.push("the working tree's run did not reach its runner's end".into());
    }
    contributors.push(
        "the same tree gave two answers by where it ran: code whose result depends on its place (the clean room's path, a missing .git or .loopexec/), a test that needs the working tree, or a flaky check; run the check in the working tree by hand"
            .into(),
    );
    Some(Halt {
        reason: HaltReason::CheckNotHermetic,
        contributors,
        detail: serde_json::json!({
            "dimension": "place",
            "room_green": true,
            "checkout_exit_code": co.step.exit_code,
            "not_passed": not_passed.len(),
            "failing_only_in_checkout": only_here.len(),
            "checkout_complete": co.parsed.complete,
        }),
    })
}

/// `metric_integrity_violation` (layer `restored`) when the clean room's green main run
/// judged t0's copy of frozen files the working tree still holds edited
/// (`[oracle] on_edit = "restore"`): the checkout confirmation would run the edited
/// tests, and the tree a green leaves would keep them (a sixteenth review weakened an
/// assertion, probed for `.git` in the code, and converged). `None` when the room
/// restored nothing. Asked before the checkout confirmation runs.
#[must_use]
pub fn restored_at_green(room: &CheckFinished) -> Option<Halt> {
    let restored = &room.clean_room.as_ref()?.restored;
    if restored.is_empty() {
        return None;
    }
    let shown: Vec<&str> = restored.iter().take(LISTED).map(String::as_str).collect();
    Some(Halt {
        reason: HaltReason::MetricIntegrityViolation,
        contributors: vec![
            format!(
                "the check is green on t0's copy of frozen files the working tree keeps edited: {}{}",
                shown.join(", "),
                if restored.len() > shown.len() {
                    format!(" and {} more", restored.len() - shown.len())
                } else {
                    String::new()
                }
            ),
            "`on_edit = \"restore\"` lets the run go on past an edit of the oracle, not converge with one: the green would leave the edited tests in your tree, and the run in the working tree would judge them; put t0's files back and run again".into(),
        ],
        detail: serde_json::json!({"layers": ["restored"], "restored": restored}),
    })
}

/// Tests a halt names, at most.
const LISTED: usize = 12;

#[cfg(test)]
mod tests {
    use super::*;

    /// Which writes of a check are `hermeticity_violation`: caches, `check_may_write`
    /// and the run's report files are the check's own.
    #[test]
    fn hermeticity_table() {
        use crate::check::model::Outcome::Passed as P;
        let mut cfg = RunConfig::defaults();
        cfg.reports = vec!["reports/*.xml".into()];
        cfg.guards.check_may_write = vec!["out/**".into()];
        // (what the check wrote, halts)
        let rows: &[(&[&str], bool)] = &[
            (&[], false),
            (&["src/__pycache__/a.cpython-311.pyc"], false),
            (&["reports/junit.xml"], false),
            (&["out/build.bin"], false),
            (&["tests/test_a.py"], true),
            (&["reports/junit.xml", "conftest.py"], true),
        ];
        for (wrote, halts) in rows {
            let crate::receipt::Event::CheckFinished(mut c) =
                crate::detect::testkit::check(1, 0, None, &[("a", P)])
            else {
                unreachable!()
            };
            c.check_wrote = wrote.iter().map(|p| (*p).to_string()).collect();
            let h = hermeticity(&cfg, &c);
            assert_eq!(h.is_some(), *halts, "{wrote:?}");
            if let Some(h) = h {
                assert_eq!(h.reason, HaltReason::HermeticityViolation);
            }
        }
    }

    /// A green on restored frozen files does not converge while the working tree
    /// keeps their edits.
    #[test]
    fn a_green_on_restored_files_is_not_believed() {
        use crate::check::model::Outcome::Passed as P;
        use crate::detect::testkit::{check, room_record};
        use crate::receipt::events::{CleanRoomRecord, Event};
        let room = |restored: &[&str]| {
            let Event::CheckFinished(mut c) = check(1, 0, Some("T"), &[("a", P)]) else {
                unreachable!()
            };
            c.clean_room = Some(CleanRoomRecord {
                restored: restored.iter().map(|s| (*s).to_string()).collect(),
                ..room_record("T")
            });
            *c
        };
        assert!(restored_at_green(&room(&[])).is_none());
        let h = restored_at_green(&room(&["tests/test_calc.py"])).expect("a halt");
        assert_eq!(h.reason, HaltReason::MetricIntegrityViolation);
        assert!(h.contributors[0].contains("tests/test_calc.py"), "{h:?}");
        // a check in place has no room record: nothing to say
        let Event::CheckFinished(c) = check(1, 0, None, &[("a", P)]) else {
            unreachable!()
        };
        assert!(restored_at_green(&c).is_none());
    }

    /// The checkout confirmation against the clean room's green main run: which
    /// disagreements halt `check_not_hermetic`, and what they name.
    #[test]
    fn checkout_confirmation_table() {
        use crate::check::model::Outcome::{Failed as F, Passed as P, Skipped as S};
        use crate::detect::testkit::check;
        use crate::receipt::events::{Event, InCheckout};
        let run = |tests: &[(&str, crate::check::model::Outcome)], exit: i32, complete: bool| {
            let Event::CheckFinished(mut c) = check(1, 0, Some("T"), tests) else {
                unreachable!()
            };
            c.step.exit_code = Some(exit);
            c.parsed.complete = complete;
            c.in_checkout = Some(InCheckout {
                workdir: "/w".into(),
                room: "/s/room/tree".into(),
            });
            *c
        };
        let room_tests = [("a", P), ("/s/room/tree/t.js::b", P)];
        let room = run(&room_tests, 0, true);
        let room_sets = CheckSets::of(&room.parsed, None);
        // (the checkout's tests, its exit, complete, halts, a contributor it names)
        type Row<'a> = (
            &'a [(&'a str, crate::check::model::Outcome)],
            i32,
            bool,
            bool,
            &'a str,
        );
        let rows: &[Row<'_>] = &[
            // the same tests pass, the room's path mapped to the workdir's
            (&[("a", P), ("/w/t.js::b", P)], 0, true, false, ""),
            // a test only the working tree has, passing: agreement
            (
                &[("a", P), ("/w/t.js::b", P), ("new", P)],
                0,
                true,
                false,
                "",
            ),
            // code right only in the room: the frozen test fails here
            (
                &[("a", F), ("/w/t.js::b", P)],
                1,
                true,
                true,
                "1 test(s) the clean room passed did not pass in the working tree: a",
            ),
            // skipped here (code that tells the checkout and skips itself)
            (
                &[("a", S), ("/w/t.js::b", P)],
                0,
                true,
                true,
                "did not pass in the working tree: a",
            ),
            // not collected here
            (
                &[("/w/t.js::b", P)],
                0,
                true,
                true,
                "did not pass in the working tree: a",
            ),
            // the room's id unmapped is not the checkout's
            (
                &[("a", P), ("/s/room/tree/t.js::b", P)],
                0,
                true,
                true,
                "/w/t.js::b",
            ),
            // a red exit with every test passing
            (&[("a", P), ("/w/t.js::b", P)], 2, true, true, "exit 2"),
            // cut short where the room's run was complete
            (
                &[("a", P), ("/w/t.js::b", P)],
                0,
                false,
                true,
                "did not reach its runner's end",
            ),
            // a new test left out of the room fails here
            (
                &[("a", P), ("/w/t.js::b", P), ("new", F)],
                1,
                true,
                true,
                "1 failing test(s) the clean room did not run",
            ),
        ];
        for (i, &(tests, exit, complete, halts, names)) in rows.iter().enumerate() {
            let co = run(tests, exit, complete);
            let co_sets = CheckSets::of(&co.parsed, None);
            let runs = PlaceRuns {
                room: (&room, &room_sets),
                checkout: (&co, &co_sets),
                code: 0,
            };
            let h = checkout_disagrees(&runs);
            assert_eq!(h.is_some(), halts, "row {i}: {h:?}");
            if let Some(h) = h {
                assert_eq!(h.reason, HaltReason::CheckNotHermetic, "row {i}");
                assert!(
                    h.contributors.iter().any(|c| c.contains(names)),
                    "row {i}: {:?} should name {names:?}",
                    h.contributors
                );
            }
        }
    }

    /// SPEC §9.5: n same-tree runs, disagreements, the Wilson 95 % lower bound of the
    /// agreement rate, and whether the default target (0.95) halts.
    #[test]
    fn bound_table() {
        let rows: &[(u64, u64, f64, bool)] = &[
            (2, 0, 0.342, false),
            (2, 1, 0.095, true),
            (3, 1, 0.208, true),
            (10, 1, 0.596, true),
            (50, 1, 0.895, true),
            (100, 1, 0.946, true),
            (110, 1, 0.950, false),
            (200, 1, 0.972, false),
            (100, 2, 0.930, true),
            (300, 2, 0.976, false),
        ];
        for &(n, d, bound, halts) in rows {
            let b = agreement_bound(n, d);
            assert!(
                (b - bound).abs() < 6e-4,
                "n={n} d={d}: bound {b:.4}, table {bound}"
            );
            assert_eq!(bound_crossed(n, d, 0.95), halts, "n={n} d={d} bound {b:.4}");
        }
        // A lower target tolerates one disagreement in a larger group.
        assert!(bound_crossed(3, 1, 0.5));
        assert!(!bound_crossed(10, 1, 0.5));
    }

    /// Same-tree runs that fail the same tests with different messages agree (a
    /// message carrying a time or an address is not a flake); a different failing
    /// set on the same tree is a disagreement.
    #[test]
    fn runs_compare_by_failing_ids_not_messages() {
        use crate::check::model::Outcome;
        use crate::detect::testkit::{check, exec, start, traj};
        use crate::receipt::events::Event;
        let with_message = |e: Event, m: &str| match e {
            Event::CheckFinished(mut c) => {
                c.parsed.tests[0].message = Some(m.to_string());
                Event::CheckFinished(c)
            }
            other => other,
        };
        let (f, p) = (Outcome::Failed, Outcome::Passed);
        let runs = |second: &[(&str, Outcome)]| {
            traj(&[
                start(0),
                with_message(check(0, 0, Some("T"), &[("a", f), ("b", p)]), "took 3 ms"),
                start(1),
                exec(1),
                with_message(check(1, 0, Some("T"), second), "took 4 ms"),
            ])
        };
        assert!(flaky_at(&runs(&[("a", f), ("b", p)]), 0, 0.95).is_none());
        let h = flaky_at(&runs(&[("a", p), ("b", f)]), 0, 0.95).expect("a disagreement");
        assert_eq!(h.reason, HaltReason::CheckFlaky);
        assert_eq!(h.detail["samples"][0]["failing"], serde_json::json!(["a"]));
    }
}
