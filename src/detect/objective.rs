//! The objective (SPEC §9.2): the tests that define the task. At a green main check,
//! each must have been collected, run and passed in that very run; a green that does
//! not show its objective passing is `objective_unverified` (13), naming the test.
//!
//! | objective entry | green run shows | verdict |
//! |---|---|---|
//! | `--objective ID` (exact id, a glob over ids, or a group's id: members continue with `::`, `[`, `.`) | at least one matching test, every match passed | verified |
//! | same | no matching test (not collected, deselected, renamed) | objective_unverified: missing |
//! | same | a matching test skipped (or not passed) | objective_unverified: skipped |
//! | none given, baseline red | each test that failed at t0 (named, not the synthetic member) that the green run names passed | verified |
//! | same | a t0-failing test the green run names as skipped | objective_unverified: skipped |
//! | same | a t0-failing test missing from a green run that names the tests it passed | objective_unverified: missing |
//!
//! A quiet runner names no passing test: a t0-failing test it does not name cannot be
//! looked up, and the integrity gate's counts judge it (a pytest check always names
//! its passes, through the witness). A lost collected member is first the integrity
//! gate's finding, which runs before this one.
//!
//! This detector is separate from the fail-closed evidence check (no names, no counts:
//! also `objective_unverified`) so the two read independently.

use crate::check::model::{Outcome, ParsedRun, UNATTRIBUTED_SUFFIX};
use crate::config::RunConfig;
use crate::halt::{Halt, HaltReason};
use crate::trajectory::Trajectory;

/// Why one objective entry is unverified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unverified {
    /// No test of the run matches it.
    Missing(String),
    /// Matching tests were collected but not passed (skipped).
    NotPassed(String, Vec<(String, Outcome)>),
}

/// An objective entry, compiled once per check: an exact id, or a glob.
struct Entry<'a> {
    text: &'a str,
    glob: Option<globset::GlobMatcher>,
}

impl<'a> Entry<'a> {
    fn new(text: &'a str) -> Entry<'a> {
        let glob = text
            .contains(['*', '?', '['])
            .then(|| {
                globset::GlobBuilder::new(text)
                    .literal_separator(false)
                    .build()
                    .ok()
                    .map(|g| g.compile_matcher())
            })
            .flatten();
        Entry { text, glob }
    }

    /// Does this entry name `id`? The id itself, a glob over ids, or a group the
    /// runner runs by that id: a file, class or parametrized test id followed by
    /// `::`, `[` or `.` (`tests/test_calc.py::test_add` names
    /// `tests/test_calc.py::test_add[1-2-3]`; a new user's review had pytest's own id
    /// of a parametrized test end in `objective_unverified`).
    fn matches(&self, id: &str) -> bool {
        self.text == id
            || self.glob.as_ref().is_some_and(|g| g.is_match(id))
            || id.strip_prefix(self.text).is_some_and(|rest| {
                rest.starts_with("::") || rest.starts_with('[') || rest.starts_with('.')
            })
    }
}

/// Checks explicit objective entries against one run.
#[must_use]
pub fn check_explicit(entries: &[String], run: &ParsedRun) -> Vec<Unverified> {
    let mut out = Vec::new();
    for e in entries {
        let entry = Entry::new(e);
        let hits: Vec<_> = run
            .tests
            .iter()
            .filter(|t| !t.id.ends_with(UNATTRIBUTED_SUFFIX) && entry.matches(&t.id))
            .collect();
        if hits.is_empty() {
            out.push(Unverified::Missing(e.clone()));
            continue;
        }
        let bad: Vec<(String, Outcome)> = hits
            .iter()
            .filter(|t| !t.outcome.is_passing())
            .map(|t| (t.id.clone(), t.outcome))
            .collect();
        if !bad.is_empty() {
            out.push(Unverified::NotPassed(e.clone(), bad));
        }
    }
    out
}

/// The implicit objective: t0's named failing tests that the green run names without
/// a pass, or does not name at all while it names the tests it passed.
#[must_use]
pub fn check_implicit(baseline: &ParsedRun, run: &ParsedRun) -> Vec<Unverified> {
    // A run that names the tests it passed names every one of them (a listing runner,
    // or pytest through the witness): a t0-failing test it does not name did not run
    // — the check was pointed elsewhere, or the test deselected. A quiet runner names
    // no passing test, and its green is judged by counts (`integrity::evidence`).
    let names_passes = run
        .tests
        .iter()
        .any(|t| t.outcome.is_passing() && !t.id.ends_with(UNATTRIBUTED_SUFFIX));
    baseline
        .failing()
        .into_iter()
        .filter(|id| !id.ends_with(UNATTRIBUTED_SUFFIX))
        .filter_map(|id| {
            // a passing file reported as one result stands for its numbered points
            let find = |want: &str| run.tests.iter().find(|t| t.id == want);
            // a doctest renamed by its line (an edit above it) is found under its
            // item's name, among the doctests this run names that t0 did not; a
            // failing one among them is the one found
            let moved_doctest = || {
                let item = super::integrity::without_doctest_line(&id)?;
                let mut renamed = run.tests.iter().filter(|t| {
                    super::integrity::without_doctest_line(&t.id) == Some(item)
                        && !baseline.tests.iter().any(|b| b.id == t.id)
                });
                let first = renamed.next()?;
                Some(
                    std::iter::once(first)
                        .chain(renamed)
                        .find(|t| !t.outcome.is_passing())
                        .unwrap_or(first),
                )
            };
            // the same test in another of its runner's naming schemes (pytest's
            // console id at t0, its JUnit report's now), when one test has it
            let renamed_scheme = || {
                let want = super::integrity::canonical_id(&id);
                let mut same = run
                    .tests
                    .iter()
                    .filter(|t| super::integrity::canonical_id(&t.id) == want);
                match (same.next(), same.next()) {
                    (Some(t), None) => Some(t),
                    _ => None,
                }
            };
            let found = find(&id)
                .or_else(|| crate::check::model::numbered_point_file(&id).and_then(find))
                .or_else(moved_doctest)
                .or_else(renamed_scheme);
            match found {
                Some(t) => (!t.outcome.is_passing())
                    .then(|| Unverified::NotPassed(id.clone(), vec![(id.clone(), t.outcome)])),
                None => names_passes.then(|| Unverified::Missing(id.clone())),
            }
        })
        .collect()
}

/// The objective in force: the explicit entries, or else t0's named failing set (with
/// where it came from: `explicit`, `t0_failing`, or `none`).
#[must_use]
pub fn effective(t: &Trajectory, cfg: &RunConfig) -> (Vec<String>, &'static str) {
    if !cfg.task.objective.is_empty() {
        return (cfg.task.objective.clone(), "explicit");
    }
    let implicit: Vec<String> = t
        .baseline_check()
        .map(|b| {
            b.parsed
                .failing()
                .into_iter()
                .filter(|id| !id.ends_with(UNATTRIBUTED_SUFFIX))
                .collect()
        })
        .unwrap_or_default();
    if implicit.is_empty() {
        (implicit, "none")
    } else {
        (implicit, "t0_failing")
    }
}

/// Warnings for the explicit objective entries that match no test of the baseline
/// check `base`, when `base` names the tests it collected (it names a pass, or passed
/// none). With `[oracle] new_tests = "exclude"` only a whole new test added to a
/// frozen test file can still match such an entry (a new test file is left out of the
/// judged check), so a mistyped id is said at iteration 0 rather than found as
/// `objective_unverified` after the agent's work (a new user's review). Not a halt:
/// the objective may name the test the task is to write.
#[must_use]
pub fn unmatched_at_baseline(cfg: &RunConfig, base: &ParsedRun) -> Vec<String> {
    if cfg.task.objective.is_empty() {
        return Vec::new();
    }
    let named: Vec<&str> = base
        .tests
        .iter()
        .filter(|t| !t.id.ends_with(UNATTRIBUTED_SUFFIX))
        .map(|t| t.id.as_str())
        .collect();
    let names_passes = base
        .tests
        .iter()
        .any(|t| t.outcome.is_passing() && !t.id.ends_with(UNATTRIBUTED_SUFFIX));
    if named.is_empty() || !(names_passes || base.counts().passed == 0) {
        return Vec::new();
    }
    let some: Vec<&str> = named.iter().take(5).copied().collect();
    let more = if named.len() > some.len() {
        ", …"
    } else {
        ""
    };
    let only = if cfg.oracle.new_tests == crate::config::NewTestPolicy::Exclude {
        "no test the agent adds can match it (new tests are left out of the judged check, and an existing test file is frozen): name a test t0 has, or set [oracle] new_tests = \"run\" to let the agent's new tests count"
    } else {
        "a test the agent adds must match it"
    };
    cfg.task
        .objective
        .iter()
        .filter(|e| {
            let entry = Entry::new(e);
            !named.iter().any(|id| entry.matches(id))
        })
        .map(|e| {
            format!(
                "warning: objective {e} names no test the baseline check collected ({} named: {}{more}); {only}. If the id is mistyped, stop the run and give one the baseline shows",
                named.len(),
                some.join(", ")
            )
        })
        .collect()
}

/// `objective_unverified` for the last iteration's green main check, if any entry is
/// unverified. `run` is that green main check's parse.
#[must_use]
pub fn verify(t: &Trajectory, cfg: &RunConfig, run: &ParsedRun) -> Option<Halt> {
    let it = t.last()?.iteration;
    let explicit = !cfg.task.objective.is_empty();
    let found = if explicit {
        check_explicit(&cfg.task.objective, run)
    } else {
        let base = t.baseline_check()?;
        if it == 0 {
            return None;
        }
        check_implicit(&base.parsed, run)
    };
    if found.is_empty() {
        return None;
    }
    let source = if explicit {
        "--objective / [task] objective"
    } else {
        "the tests that failed at t0 (no objective was given)"
    };
    let mut contributors = Vec::new();
    let mut names = Vec::new();
    for u in &found {
        match u {
            Unverified::Missing(e) => {
                names.push(e.clone());
                contributors.push(format!(
                    "objective test {e} was not collected or run in iteration {it}'s green check (missing or deselected)"
                ));
            }
            Unverified::NotPassed(e, bad) => {
                names.push(e.clone());
                let list: Vec<String> = bad
                    .iter()
                    .map(|(id, o)| format!("{id} {}", o.as_str()))
                    .collect();
                contributors.push(format!(
                    "objective test {e} did not pass in iteration {it}'s green check: {}",
                    list.join(", ")
                ));
            }
        }
    }
    contributors.push(format!(
        "the objective ({source}) must be collected, run and passed for a green to count"
    ));
    Some(Halt {
        reason: HaltReason::ObjectiveUnverified,
        contributors,
        detail: serde_json::json!({"iteration": it, "objective": if explicit { cfg.task.objective.clone() } else { Vec::new() }, "implicit": !explicit, "unverified": names}),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::testkit::parsed as run;

    /// An explicit objective no test of the baseline matches is warned about at
    /// iteration 0, when the baseline names what it collected.
    #[test]
    fn an_objective_the_baseline_does_not_show_is_warned_about() {
        use Outcome::{Failed, Passed};
        let listing = run(&[
            ("tests/test_calc.py::test_add", Failed),
            ("tests/test_calc.py::test_zero", Passed),
        ]);
        let all_failing = run(&[("tests/test_calc.py::test_add", Failed)]);
        let quiet = run(&[("tests/test_calc.py::test_add", Failed)]);
        let mut quiet = quiet;
        quiet.summary = Some(crate::check::model::Counts {
            passed: 3,
            failed: 1,
            ..Default::default()
        });
        let rows: &[(&[&str], &ParsedRun, usize)] = &[
            (&["tests/test_cal.py::test_add"], &listing, 1),
            (&["tests/test_calc.py::test_add"], &listing, 0),
            (&["tests/test_calc.py::*"], &listing, 0),
            (
                &["test_add", "tests/test_calc.py::test_zero"],
                &all_failing,
                2,
            ),
            // a quiet runner does not name its passes: nothing can be told
            (&["tests/test_calc.py::test_new"], &quiet, 0),
            (&[], &listing, 0),
        ];
        for (entries, base, warned) in rows {
            let mut cfg = RunConfig::defaults();
            cfg.task.objective = entries.iter().map(|s| (*s).to_string()).collect();
            let got = unmatched_at_baseline(&cfg, base);
            assert_eq!(got.len(), *warned, "{entries:?}: {got:?}");
            if let Some(w) = got.first() {
                assert!(w.contains(entries[0]) || w.contains(entries[1]), "{w}");
            }
        }
    }

    #[test]
    fn explicit_entries() {
        use Outcome::{Passed, Skipped};
        let green = run(&[
            ("t1", Passed),
            ("t2", Passed),
            ("m::a", Passed),
            ("m::b", Skipped),
        ]);
        let cases: &[(&[&str], &[&str])] = &[
            (&["t2"], &[]),
            (&["t9"], &["missing t9"]),
            (&["t*"], &[]),
            (&["m::*"], &["not_passed m::*"]),
            (&["m::a", "x::*"], &["missing x::*"]),
            (&["m::b"], &["not_passed m::b"]),
            // a group the runner runs by that id: its members
            (&["m"], &["not_passed m"]),
            (&["t"], &["missing t"]),
        ];
        for (entries, want) in cases {
            let e: Vec<String> = entries.iter().map(|s| (*s).to_string()).collect();
            let got: Vec<String> = check_explicit(&e, &green)
                .iter()
                .map(|u| match u {
                    Unverified::Missing(x) => format!("missing {x}"),
                    Unverified::NotPassed(x, _) => format!("not_passed {x}"),
                })
                .collect();
            assert_eq!(got, *want, "{entries:?}");
        }
    }

    #[test]
    fn implicit_objective_is_t0_failing_tests_named_without_a_pass() {
        use Outcome::{Failed, Passed, Skipped};
        let base = run(&[
            ("t1", Failed),
            ("t2", Failed),
            ("t3", Passed),
            ("check::<unattributed>", Failed),
        ]);
        type Row<'a> = (&'a [(&'a str, Outcome)], &'a [&'a str]);
        let cases: &[Row] = &[
            (&[("t1", Passed), ("t2", Passed), ("t3", Passed)], &[]),
            (&[("t1", Passed), ("t2", Skipped), ("t3", Passed)], &["t2"]),
            // Missing from a green run that names what it passed: not run.
            (&[("t1", Passed), ("t3", Passed)], &["t2"]),
            (
                &[("t1", Passed), ("elsewhere::t2", Passed), ("t3", Passed)],
                &["t2"],
            ),
            // A quiet runner names no passing test: nothing to look the ids up in.
            (&[], &[]),
            (&[("t9", Skipped)], &[]),
        ];
        for (green, want) in cases {
            let got: Vec<String> = check_implicit(&base, &run(green))
                .iter()
                .map(|u| match u {
                    Unverified::Missing(x) | Unverified::NotPassed(x, _) => x.clone(),
                })
                .collect();
            assert_eq!(got, *want, "{green:?}");
        }
        // what `check_implicit` finds, said as `missing ID` / `not_passed ID`
        let found = |base: &ParsedRun, green: &ParsedRun| -> Vec<String> {
            check_implicit(base, green)
                .iter()
                .map(|u| match u {
                    Unverified::Missing(x) => format!("missing {x}"),
                    Unverified::NotPassed(x, _) => format!("not_passed {x}"),
                })
                .collect()
        };
        // plain `prove`: red points named by number, a passing file as one result
        let prove = run(&[("t/add.t#1", Failed), ("t/sub.t#2", Failed)]);
        let green = run(&[("t/add.t", Passed), ("t/sub.t", Skipped)]);
        assert_eq!(found(&prove, &green), ["not_passed t/sub.t#2"]);
        // pytest's console id at t0 is its JUnit report's id once the run is green
        let console = run(&[
            ("tests/test_calc.py::test_add", Failed),
            ("tests/test_calc.py::test_sub", Failed),
        ]);
        let report = run(&[
            ("tests.test_calc::test_add", Passed),
            ("tests.test_calc::test_sub", Skipped),
        ]);
        assert_eq!(
            found(&console, &report),
            ["not_passed tests/test_calc.py::test_sub"]
        );
        // a doctest renamed by its line is found under its item's name; a doctest
        // of another item, or one t0 already named, is not it
        let doc = |line: u32| format!("calc::src/lib.rs - mul (line {line})");
        let base = run(&[(doc(10).as_str(), Failed), ("t", Passed)]);
        let other = "calc::src/lib.rs - add (line 13)";
        type DocRow<'a> = (Vec<(String, Outcome)>, &'a [&'a str]);
        let rows: &[DocRow] = &[
            (vec![(doc(13), Passed), ("t".into(), Passed)], &[]),
            (
                vec![(doc(13), Failed), ("t".into(), Passed)],
                &["not_passed"],
            ),
            (
                vec![(other.into(), Passed), ("t".into(), Passed)],
                &["missing"],
            ),
        ];
        for (green, want) in rows {
            let green: Vec<(&str, Outcome)> = green.iter().map(|(i, o)| (i.as_str(), *o)).collect();
            let got: Vec<&str> = check_implicit(&base, &run(&green))
                .iter()
                .map(|u| match u {
                    Unverified::Missing(_) => "missing",
                    Unverified::NotPassed(..) => "not_passed",
                })
                .collect();
            assert_eq!(got, *want, "{green:?}");
        }
    }
}
