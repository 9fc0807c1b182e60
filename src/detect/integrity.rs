//! Integrity guards (exit class 13): the measurement must not have been weakened.
//!
//! Everything is compared against the immutable baseline t0 recorded in
//! `run_started` (never against the previous iteration, so a slow erosion is caught
//! as surely as a sudden one).
//!
//! | layer | observation | reason |
//! |---|---|---|
//! | blocked paths | a path matching a blocked glob (`observe::guards::DEFAULT_BLOCKED` plus `[guards] blocked_paths`) changed since t0 (after the exec) | blocked_path_modified |
//! | collected set | a test executed at t0 is missing or newly skipped | metric_integrity_violation |
//! | completeness | the check exited green but the runner did not reach its own end | metric_integrity_violation |
//! | assertions | the assertion count of the test files dropped below t0 | metric_integrity_violation |
//! | manifest | a protected file (runner config, lockfile, CI) changed since t0 | metric_integrity_violation |
//!
//! The last four judge only an iteration that would otherwise be green or accepted by
//! the ratchet: a red iteration whose collected set shrank because the build broke
//! is ordinary failure, not a violation.

use crate::check::model::ParsedRun;
use crate::config::RunConfig;
use crate::halt::{Halt, HaltReason};
use crate::receipt::events::CheckFinished;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Guard measurements of one tree (t0 in `run_started.baseline`, later trees in
/// `exec_finished.guards`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TreeMeasures {
    /// Paths changed since t0, committed or not (empty for t0 itself).
    #[serde(default)]
    pub changed_since_t0: Vec<String>,
    /// Assertion calls per test file.
    #[serde(default)]
    pub assertions: BTreeMap<String, u64>,
    /// blake3 per protected file.
    #[serde(default)]
    pub manifest: BTreeMap<String, String>,
    /// False when the measurements could not be taken (no git): the guards say so
    /// instead of passing silently.
    #[serde(default)]
    pub available: bool,
    /// blake3 per file of the repository's own configuration — `config`, `hooks/*`,
    /// `info/*` under the git dir, keyed `.git/<path>` — which snapshots of the tree
    /// cannot see. Commits, refs and objects are not in it: an agent may commit.
    #[serde(default)]
    pub git_internals: BTreeMap<String, String>,
    /// loopexec's own state files that changed under the step (the receipt being
    /// written), relative to the workdir.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub state_tampered: Vec<String>,
    /// The frozen test oracle of this tree: path → `<mode> <blob id>`
    /// ([`crate::observe::frozen::OracleRules::frozen`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub frozen: BTreeMap<String, String>,
    /// Edits of t0's frozen oracle found in this tree (empty for t0).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub oracle_edits: Vec<crate::observe::frozen::OracleEdit>,
    /// t0 only: directories left out of every snapshot, with the rule
    /// (`node_modules (dependencies)`, `target (cache)`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<String>,
    /// Lines the agent added outside the tests that reach into the runner or the
    /// process ([`crate::observe::tamper`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runner_tampering: Vec<crate::observe::tamper::TamperHit>,
    /// The check's toolchain outside the workdir ([`crate::observe::toolchain`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub toolchain: BTreeMap<String, String>,
    /// Why a measurement failed, when one did: the guards fail closed on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Links added or changed since t0 that lead out of the tree (`path -> target`;
    /// [`crate::observe::oracle_scope::escaping_links`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escaping_links: Vec<String>,
}

/// `blocked_path_modified` from the tree after the exec: tree paths matching the
/// blocked globs changed since t0, the repository's own configuration (`.git/config`,
/// hooks, `info/`) changed since t0, or loopexec's state (the receipt) was written
/// by someone else. `t0` holds the baseline measures.
#[must_use]
pub fn blocked_paths(cfg: &RunConfig, t0: Option<&TreeMeasures>, m: &TreeMeasures) -> Option<Halt> {
    // Fail closed: a glob list that cannot be compiled (config validation rejects it
    // first) blocks rather than lets every path through.
    let set = match crate::observe::guards::BlockedPaths::cached(&cfg.guards.blocked_paths) {
        Ok(set) => set,
        Err(e) => {
            return Some(Halt {
                reason: HaltReason::BlockedPathModified,
                contributors: vec![format!("[guards] blocked_paths cannot be compiled: {e}")],
                detail: serde_json::json!({"paths": [], "error": e.to_string()}),
            })
        }
    };
    let mut hits: Vec<String> = m
        .changed_since_t0
        .iter()
        .filter(|p| set.is_blocked(p.as_str()))
        .cloned()
        .collect();
    // Measures that failed hold no internals: nothing to compare (the failure itself
    // fails closed elsewhere).
    if let Some(t0) = t0.filter(|_| m.error.is_none()) {
        let internals = t0
            .git_internals
            .iter()
            .filter(|(p, h)| m.git_internals.get(*p) != Some(*h))
            .map(|(p, _)| p)
            .chain(
                m.git_internals
                    .keys()
                    .filter(|p| !t0.git_internals.contains_key(*p)),
            );
        hits.extend(internals.cloned());
    }
    hits.extend(m.state_tampered.iter().cloned());
    if hits.is_empty() {
        return None;
    }
    hits.sort();
    hits.dedup();
    Some(Halt {
        reason: HaltReason::BlockedPathModified,
        contributors: hits
            .iter()
            .map(|p| format!("blocked path changed since t0: {p}"))
            .collect(),
        detail: serde_json::json!({"paths": hits}),
    })
}

/// `metric_integrity_violation` layers for a check judged green or accepted.
/// `baseline` is the t0 check; `t0` and `now` the tree measures.
#[must_use]
pub fn metric_integrity(
    baseline: &CheckFinished,
    check: &CheckFinished,
    success_exit_code: i32,
    t0: Option<&TreeMeasures>,
    now: Option<&TreeMeasures>,
) -> Option<Halt> {
    let mut contributors = Vec::new();
    let mut layers = Vec::new();
    // A run that names no passing or skipped test (quiet modes: pytest without -v,
    // plain `go test`, `lines`) lists only its failures: its collected set is unknown,
    // not empty, so the collected-set layer cannot judge it (the assertion-count and
    // manifest layers still do).
    let enumerates = check.parsed.tests.iter().any(|t| {
        !t.outcome.is_failing() && !t.id.ends_with(crate::check::model::UNATTRIBUTED_SUFFIX)
    });
    // The t0 executed set, sorted (the order contributors are listed in), and this
    // run's collected set with whether each id executed; borrowed from the parses,
    // as this runs on every accepted iteration of a suite of any size.
    let before: Vec<&str> = if enumerates {
        baseline.parsed.sorted_ids(|t| {
            ParsedRun::is_named(t) && t.outcome != crate::check::model::Outcome::Skipped
        })
    } else {
        Vec::new()
    };
    let mut after: std::collections::HashMap<&str, bool, foldhash::fast::RandomState> =
        std::collections::HashMap::default();
    for t in check.parsed.tests.iter().filter(|t| ParsedRun::is_named(t)) {
        *after.entry(t.id.as_str()).or_insert(false) |=
            t.outcome != crate::check::model::Outcome::Skipped;
    }
    // A test file reported as one result (plain `prove`: `t/add.t .. ok`) stands for
    // the points a red run named by number (`t/add.t#2`). A test named in another of
    // its runner's schemes is the same test: pytest's console says
    // `tests/test_calc.py::test_add`, its JUnit report `tests.test_calc::test_add`, and
    // which one a run's parse leads with depends on how many tests the console named
    // (a false-alarm review's honest `--report junit.xml` run "lost" its only test
    // when it went green); matched by [`canonical_id`] when one test of this run has it.
    let canonical: std::cell::OnceCell<
        std::collections::HashMap<String, Option<bool>, foldhash::fast::RandomState>,
    > = std::cell::OnceCell::new();
    let seen = |id: &str| -> Option<bool> {
        after
            .get(id)
            .copied()
            .or_else(|| {
                after
                    .get(crate::check::model::numbered_point_file(id)?)
                    .copied()
            })
            .or_else(|| {
                let map = canonical.get_or_init(|| {
                    let mut m = std::collections::HashMap::default();
                    for (k, ran) in &after {
                        m.entry(canonical_id(k))
                            .and_modify(|v: &mut Option<bool>| *v = None)
                            .or_insert(Some(*ran));
                    }
                    m
                });
                map.get(&canonical_id(id)).copied().flatten()
            })
    };
    // A doctest is named by its line (`src/lib.rs - mul (line 10)`): an honest
    // edit above it renames it (a fresh review's false alarm). A t0 doctest not
    // found by name is found by its name without the line, as often as this run
    // holds such doctests not named at t0.
    let mut moved: std::collections::HashMap<&str, usize, foldhash::fast::RandomState> =
        std::collections::HashMap::default();
    for id in after.keys() {
        if let Some(k) = without_doctest_line(id) {
            if before.binary_search(id).is_err() {
                *moved.entry(k).or_insert(0) += 1;
            }
        }
    }
    let lost: Vec<&str> = before
        .iter()
        .copied()
        .filter(|id| {
            if seen(id).is_some() {
                return false;
            }
            match without_doctest_line(id).and_then(|k| moved.get_mut(k)) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    false
                }
                _ => true,
            }
        })
        .collect();
    let skipped: Vec<&str> = before
        .iter()
        .copied()
        .filter(|id| seen(id) == Some(false))
        .collect();
    if !lost.is_empty() {
        layers.push("collected_set");
        contributors.extend(
            lost.iter()
                .map(|id| format!("collected set lost a test present at t0: {id}")),
        );
    }
    if !skipped.is_empty() {
        layers.push("newly_skipped");
        contributors.extend(
            skipped
                .iter()
                .map(|id| format!("test executed at t0 is now skipped: {id}")),
        );
    }
    let unfrozen: &[String] = check
        .clean_room
        .as_ref()
        .map_or(&[], |r| r.unfrozen_tests.as_slice());
    if !unfrozen.is_empty() {
        layers.push("unfrozen_tests");
        contributors.extend(unfrozen.iter().map(|id| {
            format!("the judged check ran a test t0 does not define: {id} (a test made where no test region shows it, such as by a macro from its arguments or a docstring built at run time, runs beside the frozen oracle; a new test goes in a new test file)")
        }));
    }
    if check.step.exited_with(success_exit_code) && !check.parsed.complete {
        layers.push("completeness");
        let why = if check.parsed.diagnostics.is_empty() {
            "a test cut the runner short".to_string()
        } else {
            check.parsed.diagnostics.join("; ")
        };
        contributors.push(format!(
            "the check exited {success_exit_code} but the {} run did not reach its own end ({why})",
            crate::check::parse::format_name(check.parsed.format)
        ));
    }
    if let (Some(t0), Some(now)) = (t0, now) {
        if t0.available && now.available {
            let total0: u64 = t0.assertions.values().sum();
            let total1: u64 = now.assertions.values().sum();
            if total1 < total0 {
                layers.push("assertions");
                let mut dropped: Vec<String> = t0
                    .assertions
                    .iter()
                    .filter_map(|(f, &n0)| {
                        let n1 = now.assertions.get(f).copied().unwrap_or(0);
                        (n1 < n0).then(|| format!("{f}: {n0} -> {n1}"))
                    })
                    .collect();
                dropped.sort();
                contributors.push(format!(
                    "assertion count of the test files dropped from {total0} to {total1} ({})",
                    dropped.join(", ")
                ));
            }
            let changed: Vec<&String> = t0
                .manifest
                .iter()
                .filter(|(f, h)| now.manifest.get(*f) != Some(*h))
                .map(|(f, _)| f)
                .chain(
                    now.manifest
                        .iter()
                        // a new package's manifest with no test sections is no runner
                        // configuration (a workspace member the agent adds)
                        .filter(|(f, h)| {
                            !t0.manifest.contains_key(*f)
                                && !crate::observe::manifest::digest_has_no_test_sections(f, h)
                        })
                        .map(|(f, _)| f),
                )
                .collect();
            if !changed.is_empty() {
                layers.push("manifest");
                contributors.extend(changed.iter().map(|f| {
                    if t0.manifest.contains_key(*f) {
                        format!("protected file changed since t0: {f}")
                    } else {
                        format!("protected file added since t0: {f}")
                    }
                }));
            }
        }
    }
    if layers.is_empty() {
        return None;
    }
    Some(Halt {
        reason: HaltReason::MetricIntegrityViolation,
        contributors,
        detail: {
            let mut d =
                serde_json::json!({"layers": layers, "lost": lost, "newly_skipped": skipped});
            if !unfrozen.is_empty() {
                d["unfrozen_tests"] = serde_json::json!(unfrozen);
            }
            d
        },
    })
}

/// `metric_integrity_violation` (layer `frozen_oracle`) from the tree after the exec:
/// t0's frozen oracle was edited ([`crate::observe::frozen`]). Under `[oracle] on_edit =
/// "restore"` only edits of test regions inside source files count (the others are
/// undone in the clean room); every edit is still recorded in the measures.
#[must_use]
pub fn frozen_oracle(cfg: &RunConfig, m: &TreeMeasures) -> Option<Halt> {
    use crate::observe::frozen::EditKind;
    let restore = cfg.oracle.on_edit == crate::config::OnOracleEdit::Restore;
    let edits: Vec<&crate::observe::frozen::OracleEdit> = m
        .oracle_edits
        .iter()
        .filter(|e| !restore || e.kind == EditKind::TestRegion)
        .collect();
    if edits.is_empty() {
        return None;
    }
    let mut contributors: Vec<String> = edits
        .iter()
        .map(|e| {
            let verb = match e.kind {
                EditKind::Modified => "edited",
                EditKind::Deleted => "deleted",
                EditKind::Created => "created",
                EditKind::TestRegion => "changed inside",
            };
            let lines = if e.lines.is_empty() {
                String::new()
            } else {
                format!(": {}", e.lines.join(" | "))
            };
            format!(
                "frozen oracle {verb} since t0: {} ({}){lines}",
                e.path, e.what
            )
        })
        .collect();
    // Files frozen for what they are to the tests, not because they are tests: when
    // editing one is the task (a missing locale entry), a person can say so.
    let inferred: Vec<&str> = edits
        .iter()
        .filter(|e| {
            e.kind == EditKind::Modified
                && matches!(
                    e.what.as_str(),
                    "data the tests read"
                        | "test helper"
                        | "file under a test directory"
                        | "judge the tests run, or a module it imports"
                )
        })
        .map(|e| e.path.as_str())
        .collect();
    if !inferred.is_empty() {
        contributors.push(format!(
            "if editing {} is the task, a person can allow it in loop.toml: [oracle] editable = [{}]",
            inferred.join(", "),
            inferred
                .iter()
                .map(|p| format!("\"{p}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    // A frozen test file that only grew (every changed line an addition) is most
    // often an honest new test in the wrong place (a new user's review): say where a
    // new test goes, instead of only "revert".
    let appended: Vec<&str> = edits
        .iter()
        .filter(|e| {
            e.kind == EditKind::Modified
                && e.what.contains("test file")
                && !e.lines.is_empty()
                && e.lines
                    .iter()
                    .all(|l| l.starts_with('+') || l.starts_with('…'))
        })
        .map(|e| e.path.as_str())
        .collect();
    if !appended.is_empty() {
        contributors.push(format!(
            "the edit of {} only adds lines: a new test goes in a new test file, which the agent may add (it is left out of the judged check), or a person runs with [oracle] on_edit = \"restore\" to let the run go on with t0's version judged",
            appended.join(", ")
        ));
    }
    // Runner configuration decides how every test is judged: no loop.toml setting
    // hands it to the agent (`[oracle] editable` covers only what was inferred), so
    // the halt names the way that exists — a person's own change, which a new run's
    // t0 measures. (Before, the halt named none.)
    let config: Vec<&str> = edits
        .iter()
        .filter(|e| e.what == "runner configuration")
        .map(|e| e.path.as_str())
        .collect();
    if !config.is_empty() {
        contributors.push(format!(
            "if changing {} is the task, a person makes that change (commit it) and starts a new run, whose t0 measures it; no loop.toml setting lets the agent change runner configuration",
            config.join(", ")
        ));
    }
    Some(Halt {
        reason: HaltReason::MetricIntegrityViolation,
        contributors,
        detail: serde_json::json!({"layers": ["frozen_oracle"], "edits": edits}),
    })
}

/// `metric_integrity_violation` from what happened around a check run in the clean
/// room: the dependency directories differ from t0 (layer `dependencies`). Changes of
/// the working tree while the check ran are judged by [`tree_moved_under_check`].
#[must_use]
pub fn check_tampering(c: &CheckFinished) -> Option<Halt> {
    let mut contributors = Vec::new();
    let mut layers = Vec::new();
    if !c.dependencies_changed.is_empty() {
        layers.push("dependencies");
        contributors.push(format!(
            "dependency directories changed since t0 or the last check, outside any check (set [clean_room] dependencies = \"agent\" if the agent may install packages): {}",
            c.dependencies_changed.join(", ")
        ));
    }
    if layers.is_empty() {
        return None;
    }
    Some(Halt {
        reason: HaltReason::MetricIntegrityViolation,
        contributors,
        detail: serde_json::json!({
            "layers": layers,
            "dependencies_changed": c.dependencies_changed,
        }),
    })
}

/// The working tree changed while a check ran (`changed_during_check`): every process
/// of the exec was gone, so the check's own code (reaching out of the clean room by
/// an absolute path), a process outside the loop or a person wrote it.
///
/// * Under a green check: `objective_unverified` — the tree a success would leave is
///   not the tree the check judged.
/// * Under a red check: no halt; the change is recorded. Nothing can converge on it
///   here, and every later judgment sees it: the next exec's snapshot carries it (its
///   guards measure the tree against t0), and a run that halts before another check
///   (its cap, a stall, a signal) leaves it unjudged, so the next run is judged from
///   this run's t0 (`run_started.inherits_unjudged`, SPEC §3.13). Before, a red check
///   under a moving tree halted `metric_integrity_violation`: a scenario harness (and
///   a person's editor) writing an ignored file beside a long run stopped honest runs
///   at their baseline check.
#[must_use]
pub fn tree_moved_under_check(c: &CheckFinished, success_exit_code: i32) -> Option<Halt> {
    if c.changed_during_check.is_empty() || !crate::trajectory::is_green(c, success_exit_code) {
        return None;
    }
    let paths = c.changed_during_check.join(", ");
    Some(Halt {
        reason: HaltReason::ObjectiveUnverified,
        contributors: vec![format!(
            "the working tree changed while the green check ran, so it is not the tree that was judged: {paths}"
        )],
        detail: serde_json::json!({"changed_during_check": c.changed_during_check}),
    })
}

/// What a check run's output shows of the tests, for [`evidence`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shown<'a> {
    /// Named tests (the collected set, synthetic members excluded).
    pub names: usize,
    /// Named tests that passed: a runner that names its passes (`unittest -v`,
    /// `cargo test`, TAP) is not in a quiet mode.
    pub passing_names: usize,
    /// Tests that ran according to the runner's own counts (passed + failed +
    /// flaky), when it printed counts.
    pub counted: Option<u64>,
    /// The runner's own report that it executed no test
    /// ([`crate::check::model::ParsedRun::not_run`]).
    pub not_run: Option<&'a str>,
}

impl<'a> Shown<'a> {
    /// What `p` shows.
    #[must_use]
    pub fn of(p: &'a crate::check::model::ParsedRun) -> Shown<'a> {
        Shown {
            names: p.collected().len(),
            passing_names: p.tests.iter().filter(|t| t.outcome.is_passing()).count(),
            counted: crate::check::model::counted_executed(p),
            not_run: p.not_run.as_deref(),
        }
    }
    fn any(self) -> bool {
        self.names > 0 || self.counted.is_some_and(|n| n > 0)
    }
}

/// What to change when a green shows no test names because of how the check was
/// asked. `None` for any other check.
///
/// * `go test` names the tests it ran only with `-v` or `-json` (its quiet form
///   prints `ok <package>` for a package whose tests all passed, and names a test
///   only when it fails).
/// * pytest at verbosity -2 or below (`-qq`, or the check's `-q` on top of
///   `addopts = -q` in its configuration file, which the hint cannot see) prints
///   progress dots and failures but no summary line and no passing test's name.
///   (`-rA` would name them, but without the summary line the run reads as cut
///   short, so the hint is to drop a `-q`.) A check with `-v` gets no hint.
#[must_use]
pub fn naming_hint(check: &str) -> Option<String> {
    go_naming_hint(check).or_else(|| pytest_naming_hint(check))
}

/// The check split into words at blanks and shell operators, quotes trimmed.
fn command_words(check: &str) -> Vec<&str> {
    check
        .split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')'))
        .map(|w| w.trim_matches(['\'', '"']))
        .filter(|w| !w.is_empty())
        .collect()
}

/// [`naming_hint`]'s pytest row.
fn pytest_naming_hint(check: &str) -> Option<String> {
    let words = command_words(check);
    let pytest = words.iter().any(|w| {
        let base = w.rsplit('/').next().unwrap_or(w);
        matches!(base, "pytest" | "py.test") || base.starts_with("pytest-3")
    });
    let names = words
        .iter()
        .any(|w| *w == "--verbose" || (w.starts_with("-v") && w[1..].bytes().all(|b| b == b'v')));
    (pytest && !names).then(|| {
        "pytest prints no summary line and names no passing test at verbosity -2 or below (`-qq`, or the check's `-q` on top of `addopts = -q` in its configuration): drop one `-q` so that a green shows its tests and counts".to_string()
    })
}

/// [`naming_hint`]'s `go test` row.
fn go_naming_hint(check: &str) -> Option<String> {
    let words = command_words(check);
    let go_test = words
        .windows(2)
        .any(|w| (w[0] == "go" || w[0].ends_with("/go")) && w[1] == "test");
    let names = words.iter().any(|w| {
        matches!(*w, "-v" | "-json" | "-test.v" | "--json")
            || w.starts_with("-v=")
            || w.starts_with("-json=")
            || w.starts_with("-test.v=")
    });
    (go_test && !names).then(|| {
        "`go test` names the tests it ran only with -v or -json; make the check `go test -v …` (or `-json`) so that a green shows them".to_string()
    })
}

/// Fail closed (`objective_unverified`): a green run is believed only on positive
/// evidence. `guards_unavailable` comes from `run_started`; `now` are the measures of
/// the judged tree (t0's for a green baseline); `t0_shown`/`shown` what the baseline and
/// the green run showed of the tests.
///
/// | evidence missing | contributor |
/// |---|---|
/// | a guard could not run, or a measurement errored | names the guard and the error |
/// | t0 showed tests (names or counts), the green run shows none | "shows no tests" |
/// | both show counts, and fewer ran than at t0 | "fewer tests ran" |
/// | the green run's runner says it executed no test (`Ran 0 tests`, all skipped) | "executed no test" |
///
/// A check that never showed a test, at t0 either (`test -f done`), is judged by its
/// exit code alone: there is nothing for the evidence to be compared with.
#[must_use]
pub fn evidence(
    guards_unavailable: &[String],
    now: Option<&TreeMeasures>,
    t0_shown: Shown,
    shown: Shown,
) -> Option<Halt> {
    let mut missing = Vec::new();
    missing.extend(
        guards_unavailable
            .iter()
            .map(|g| format!("a guard could not run: {g}")),
    );
    match now {
        None => missing.push("the tree under judgment was not measured".to_string()),
        Some(m) => {
            if let Some(e) = &m.error {
                missing.push(format!("a guard could not measure the tree: {e}"));
            }
        }
    }
    if let Some(why) = shown.not_run {
        missing.push(format!(
            "the green run executed no test, by the runner's own report: {why}"
        ));
    }
    if t0_shown.any() && !shown.any() {
        missing.push(format!(
            "the green run shows no tests (t0 showed {} named test(s){})",
            t0_shown.names,
            t0_shown
                .counted
                .map(|n| format!(", {n} counted"))
                .unwrap_or_default()
        ));
    }
    // A runner that named the tests it passed at t0 names them from the same command
    // now: a green run that only counts them (`Ran 2 tests … OK` with no names, from
    // `unittest -v`) printed a summary, not a session.
    if t0_shown.passing_names > 0 && shown.names == 0 && shown.any() {
        missing.push(format!(
            "the green run names none of its tests, where t0 named {} that passed (the same command names the tests it runs)",
            t0_shown.passing_names
        ));
    }
    if let (Some(a), Some(b)) = (t0_shown.counted, shown.counted) {
        if b < a {
            missing.push(format!(
                "fewer tests ran than at t0 ({b} < {a}, by the runner's own counts)"
            ));
        }
    }
    if missing.is_empty() {
        return None;
    }
    Some(Halt {
        reason: HaltReason::ObjectiveUnverified,
        contributors: missing.clone(),
        detail: serde_json::json!({"missing_evidence": missing}),
    })
}

/// `metric_integrity_violation` (layer `runner_tampering`) for a green run: the agent
/// added code outside the tests that reaches into the runner or the process
/// ([`crate::observe::tamper::RULES`]), other than what `allowed` waives
/// (`[[guards.allowed_code]]`).
#[must_use]
pub fn runner_tampering(m: &TreeMeasures, allowed: &[crate::config::AllowedCode]) -> Option<Halt> {
    let hits: Vec<&crate::observe::tamper::TamperHit> = m
        .runner_tampering
        .iter()
        .filter(|h| !allowed.iter().any(|a| a.allows(h)))
        .collect();
    if hits.is_empty() {
        return None;
    }
    let mut contributors: Vec<String> = hits
        .iter()
        .map(|h| {
            format!(
                "code added since t0 reaches into the test runner ({}): {}:{}: {}",
                h.rule, h.path, h.line, h.text
            )
        })
        .collect();
    contributors.push(
        "the rules match spellings: if a named line is honest, allow its rule for its file in loop.toml (`[[guards.allowed_code]]` path = \"FILE\", rule = \"RULE\") and run again".into(),
    );
    Some(Halt {
        reason: HaltReason::MetricIntegrityViolation,
        contributors,
        detail: serde_json::json!({"layers": ["runner_tampering"], "hits": hits}),
    })
}

/// `hermeticity_violation` from the tree after the exec: the check's toolchain outside
/// the workdir (what its commands resolve to on `PATH`, its interpreter's start-up
/// hooks) differs from t0 ([`crate::observe::toolchain`]).
#[must_use]
pub fn toolchain(t0: Option<&TreeMeasures>, m: &TreeMeasures) -> Option<Halt> {
    let t0 = t0?;
    // Measures that failed (a snapshot that could not be written) hold no toolchain:
    // that is no evidence of a change. They never let a green through (`evidence`).
    if t0.toolchain.is_empty() || m.error.is_some() {
        return None;
    }
    use crate::observe::registry::{unchanged, KEY_PREFIX};
    // Registry crates have their own rule: added or re-extracted as published is no
    // change (`crate::observe::registry`).
    let crate_changed = |k: &str| {
        !unchanged(
            t0.toolchain.get(k).map(String::as_str),
            m.toolchain.get(k).map(String::as_str),
        )
    };
    let mut changed: Vec<String> = t0
        .toolchain
        .iter()
        .filter(|(k, v)| {
            if k.starts_with(KEY_PREFIX) {
                crate_changed(k)
            } else {
                m.toolchain.get(*k) != Some(*v)
            }
        })
        .map(|(k, v)| match m.toolchain.get(k) {
            Some(now) => format!("{k}: {v} -> {now}"),
            None => format!("{k}: removed"),
        })
        .chain(
            m.toolchain
                .keys()
                .filter(|k| !t0.toolchain.contains_key(*k))
                .filter(|k| !k.starts_with(KEY_PREFIX) || crate_changed(k))
                .map(|k| {
                    // a crate added is named with why it is no pass
                    let why = m.toolchain.get(k).filter(|_| k.starts_with(KEY_PREFIX));
                    match why {
                        Some(v) => format!("{k}: added, {v}"),
                        None => format!("{k}: added"),
                    }
                }),
        )
        .collect();
    if changed.is_empty() {
        return None;
    }
    changed.sort();
    Some(Halt {
        reason: HaltReason::HermeticityViolation,
        contributors: changed
            .iter()
            .map(|c| format!("the check's toolchain changed since t0: {c}"))
            .collect(),
        detail: serde_json::json!({"toolchain_changed": changed}),
    })
}

/// The halt for a run whose t0 is the tree an earlier run rejected for integrity
/// (`run_started.inherits_rejected`): the earlier reason again, naming the run, unless
/// `[oracle] accept_rejected_tree`. Before this, a person who acknowledged the halt and
/// started a new run froze the agent's edit (a weakened test) into the new t0, and the
/// new run went green at iteration 0.
#[must_use]
pub fn inherited(
    r: Option<&crate::receipt::events::InheritedRejection>,
    cfg: &RunConfig,
) -> Option<Halt> {
    let r = r?;
    if cfg.oracle.accept_rejected_tree {
        return None;
    }
    let mut why = if r.kept.is_empty() {
        format!(
            "the working tree is the tree run {} rejected at iteration {} ({}",
            r.run_id,
            r.iteration,
            r.halt_reason.as_str()
        )
    } else {
        format!(
            "the working tree keeps the edit of {} that run {} rejected at iteration {} ({}",
            r.kept.join(", "),
            r.run_id,
            r.iteration,
            r.halt_reason.as_str()
        )
    };
    if !r.why.is_empty() {
        why.push_str(": ");
        why.push_str(&r.why);
    }
    why.push_str(
        "); a run starting from it would freeze that into t0. Restore the last accepted tree (`loopexec explain-halt --run-id RUN` prints the command), or pass --accept-rejected-tree to start from it anyway",
    );
    Some(Halt {
        reason: r.halt_reason,
        contributors: vec![why],
        detail: serde_json::json!({"cause": "inherited_rejection", "run_id": r.run_id, "iteration": r.iteration}),
    })
}

/// True when `text` (a halt's contributors, explanation and detail) names `path` (a
/// root-relative path) as a whole path: not preceded by a character that can be part
/// of a path (`calc.py` is not named by `tests/test_calc.py`) nor followed by one
/// (`calc.py` is not named by `calc.pyc`). `::` (a test id) and `:` (a line number)
/// may follow.
#[must_use]
pub fn names_path(text: &str, path: &str) -> bool {
    let part = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '~');
    text.match_indices(path).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + path.len()..].chars().next();
        !before.is_some_and(part) && !after.is_some_and(part)
    })
}

/// A libtest doctest's id without its line (`calc::src/lib.rs - mul (line 10)` →
/// `calc::src/lib.rs - mul`); `None` for any other id.
pub(crate) fn without_doctest_line(id: &str) -> Option<&str> {
    let (head, tail) = id.rsplit_once(" (line ")?;
    let digits = tail.strip_suffix(')')?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && head.contains(" - "))
        .then_some(head)
}

/// A test id with its runner's naming scheme worn off: a Python file's `.py` before
/// `::` dropped, then `/`, `\\` and `::` read as `.` (`tests/test_calc.py::T::test_a`
/// and JUnit's `tests.test_calc.T::test_a` are both `tests.test_calc.T.test_a`). What a
/// test's parameters hold (`[…]`) is kept as it is.
#[must_use]
pub fn canonical_id(id: &str) -> String {
    let (name, params) = match id.find('[') {
        Some(i) => id.split_at(i),
        None => (id, ""),
    };
    let mut out = name.replace(".py::", "::");
    out = out.replace("::", ".").replace(['/', '\\'], ".");
    out.push_str(params);
    out
}

#[cfg(test)]
mod trust_tests {
    use super::*;
    use crate::observe::frozen::{EditKind, OracleEdit};

    /// The collected-set layer over plain views: (t0 tests, green tests, the ids it
    /// names as lost). A file reported as one result (plain `prove`) stands for the
    /// points a red run named by number (a fresh review's honest prove fix was
    /// halted); it does not stand for points of another file or named points.
    /// Only a `go test` asked without -v/-json, and a pytest asked without -v, get
    /// the hint (table: check, hinted).
    #[test]
    fn only_a_quiet_go_test_or_pytest_is_told_to_name_its_tests() {
        let rows = [
            ("go test ./...", true),
            ("cd svc && go test -race ./...", true),
            ("go test -v ./...", false),
            ("go test -json ./...", false),
            ("go test -v=true ./...", false),
            ("go vet ./... && go test -count=1 ./...", true),
            ("cargo test", false),
            ("gotestsum ./...", false),
            ("python -m pytest -q", true),
            ("pytest -qq tests/", true),
            (".venv/bin/pytest -q", true),
            ("pytest -v", false),
            ("python -m unittest -q", false),
        ];
        let go = naming_hint("go test ./...").unwrap();
        assert!(go.contains("-v or -json"), "{go}");
        let py = naming_hint("python -m pytest -q").unwrap();
        assert!(
            py.contains("drop one `-q`") && py.contains("addopts"),
            "{py}"
        );
        for (check, hinted) in rows {
            assert_eq!(naming_hint(check).is_some(), hinted, "{check}");
        }
    }

    #[test]
    fn collected_set_table() {
        use crate::check::model::Outcome::{Failed, Passed, Skipped};
        use crate::detect::testkit::check;
        use crate::receipt::events::Event;
        type Tests<'a> = &'a [(&'a str, crate::check::model::Outcome)];
        let rows: &[(Tests, Tests, &[&str])] = &[
            (
                &[("a", Passed), ("b", Failed)],
                &[("a", Passed), ("b", Passed)],
                &[],
            ),
            (&[("a", Passed), ("b", Failed)], &[("b", Passed)], &["a"]),
            (
                &[("t/add.t#1", Failed), ("t/add.t#2", Failed)],
                &[("t/add.t", Passed)],
                &[],
            ),
            (
                &[("t/add.t#1", Failed), ("t/sub.t#1", Failed)],
                &[("t/add.t", Passed)],
                &["t/sub.t#1"],
            ),
            (
                &[("t/add.t::adds", Failed)],
                &[("t/add.t", Passed)],
                &["t/add.t::adds"],
            ),
            (
                &[("t/add.t#1", Failed)],
                &[("t/add.t", Skipped), ("x", Passed)],
                &[],
            ),
            // a doctest renamed by an edit above it is the same test (a fresh
            // review's false alarm), as often as doctests of that item are left
            (
                &[("calc::src/lib.rs - mul (line 10)", Passed), ("m", Failed)],
                &[("calc::src/lib.rs - mul (line 13)", Passed), ("m", Passed)],
                &[],
            ),
            (
                &[
                    ("calc::src/lib.rs - mul (line 10)", Passed),
                    ("calc::src/lib.rs - mul (line 20)", Passed),
                ],
                &[("calc::src/lib.rs - mul (line 13)", Passed), ("x", Passed)],
                &["calc::src/lib.rs - mul (line 20)"],
            ),
            (
                &[("calc::src/lib.rs - mul (line 10)", Passed)],
                &[("calc::src/lib.rs - add (line 10)", Passed), ("x", Passed)],
                &["calc::src/lib.rs - mul (line 10)"],
            ),
            (
                &[("case (line 10)", Passed)],
                &[("case (line 13)", Passed), ("x", Passed)],
                &["case (line 10)"],
            ),
            // pytest's console id at t0, its JUnit report's once green (a
            // false-alarm review's `--report junit.xml`): the same tests
            (
                &[
                    ("tests/test_calc.py::test_add", Failed),
                    ("tests/test_calc.py::TestSub::test_sub[1-2]", Failed),
                ],
                &[
                    ("tests.test_calc::test_add", Passed),
                    ("tests.test_calc.TestSub::test_sub[1-2]", Passed),
                ],
                &[],
            ),
            // ... but not a test of another file, nor one two tests could be
            (
                &[("tests/test_calc.py::test_add", Failed)],
                &[("tests.test_other::test_add", Passed)],
                &["tests/test_calc.py::test_add"],
            ),
            (
                &[("tests/test_calc.py::test_add", Failed)],
                &[
                    ("tests.test_calc::test_add", Passed),
                    ("tests/test_calc/test_add", Passed),
                ],
                &["tests/test_calc.py::test_add"],
            ),
        ];
        let finished = |e: Event| match e {
            Event::CheckFinished(c) => *c,
            _ => unreachable!(),
        };
        for (t0, now, lost) in rows {
            let base = finished(check(0, 0, None, t0));
            let green = finished(check(1, 0, None, now));
            let h = metric_integrity(&base, &green, 0, None, None);
            let got: Vec<String> = h
                .as_ref()
                .and_then(|h| h.detail["lost"].as_array().cloned())
                .unwrap_or_default()
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
            assert_eq!(got, *lost, "{t0:?} -> {now:?}: {h:?}");
        }
    }

    #[test]
    fn a_halt_names_a_path_only_as_a_whole_path() {
        let rows = [
            (
                "tests/test_calc.py::test_add was removed",
                "tests/test_calc.py",
                true,
            ),
            ("tests/test_calc.py::test_add was removed", "calc.py", false),
            (
                "calc.py:3: os._exit outside an entry point",
                "calc.py",
                true,
            ),
            ("\"paths\":[\"calc.py\"]", "calc.py", true),
            ("wrote calc.pyc", "calc.py", false),
            ("(check.sh changed)", "check.sh", true),
            ("src/check.sh changed", "check.sh", false),
            ("", "check.sh", false),
        ];
        for (text, path, named) in rows {
            assert_eq!(names_path(text, path), named, "{text:?} {path:?}");
        }
    }

    #[test]
    fn a_tree_rejected_earlier_halts_with_the_earlier_reason_unless_accepted() {
        let r = crate::receipt::events::InheritedRejection {
            run_id: "r1".into(),
            halt_reason: HaltReason::BlockedPathModified,
            iteration: 2,
            tree: "t".into(),
            why: ".github/workflows/ci.yml changed".into(),
            kept: Vec::new(),
            flagged: Vec::new(),
        };
        let mut accept = RunConfig::defaults();
        accept.oracle.accept_rejected_tree = true;
        // (case, inherited, config, halt)
        let rows = [
            ("nothing inherited", None, RunConfig::defaults(), None),
            (
                "inherited",
                Some(&r),
                RunConfig::defaults(),
                Some(HaltReason::BlockedPathModified),
            ),
            ("accepted", Some(&r), accept, None),
        ];
        for (name, inh, cfg, want) in rows {
            let got = inherited(inh, &cfg);
            assert_eq!(got.as_ref().map(|h| h.reason), want, "{name}");
            if let Some(h) = got {
                assert!(
                    h.contributors[0].contains("run r1 rejected at iteration 2"),
                    "{h:?}"
                );
                assert!(h.contributors[0].contains("ci.yml"), "{h:?}");
            }
        }
    }

    #[test]
    fn a_tree_moved_under_a_check_is_unverified_when_green_and_recorded_when_red() {
        use crate::check::model::Outcome;
        let with = |c: crate::receipt::Event, moved: &[&str]| match c {
            crate::receipt::Event::CheckFinished(mut c) => {
                c.changed_during_check = moved.iter().map(|p| (*p).to_string()).collect();
                *c
            }
            _ => unreachable!("testkit::check builds a check"),
        };
        let green = || crate::detect::testkit::check(1, 0, Some("t"), &[("a", Outcome::Passed)]);
        let red = || {
            let mut c = with(
                crate::detect::testkit::check(1, 0, Some("t"), &[("a", Outcome::Failed)]),
                &["calc.py"],
            );
            c.step.exit_code = Some(1);
            c
        };
        // (case, check, halt)
        let rows = [
            ("green, tree still", with(green(), &[]), None),
            (
                "green, tree moved",
                with(green(), &["calc.py"]),
                Some(HaltReason::ObjectiveUnverified),
            ),
            // recorded only: the next exec's snapshot, or the next run's start, judges it
            ("red, tree moved", red(), None),
        ];
        for (name, c, want) in rows {
            let got = tree_moved_under_check(&c, 0);
            assert_eq!(got.as_ref().map(|h| h.reason), want, "{name}");
            if let Some(h) = got {
                assert!(h.contributors[0].contains("calc.py"), "{h:?}");
            }
        }
    }

    fn edit(kind: EditKind) -> OracleEdit {
        OracleEdit {
            path: "tests/a.py".into(),
            kind,
            what: "test file".into(),
            lines: vec!["-3: assert x".into()],
        }
    }

    #[test]
    fn frozen_oracle_halts_or_restores_per_policy() {
        use crate::config::OnOracleEdit::{Halt as H, Restore as R};
        // (policy, edits, halts)
        let table: &[(crate::config::OnOracleEdit, &[EditKind], bool)] = &[
            (H, &[], false),
            (H, &[EditKind::Modified], true),
            (H, &[EditKind::Deleted], true),
            (H, &[EditKind::Created], true),
            (R, &[EditKind::Modified, EditKind::Created], false),
            (R, &[EditKind::TestRegion], true),
        ];
        for (policy, kinds, halts) in table {
            let mut cfg = RunConfig::defaults();
            cfg.oracle.on_edit = *policy;
            let m = TreeMeasures {
                oracle_edits: kinds.iter().map(|k| edit(*k)).collect(),
                ..TreeMeasures::default()
            };
            let h = frozen_oracle(&cfg, &m);
            assert_eq!(h.is_some(), *halts, "{policy:?} {kinds:?}");
            if let Some(h) = h {
                assert_eq!(h.reason, HaltReason::MetricIntegrityViolation);
                assert!(h.contributors[0].contains("tests/a.py"));
            }
        }
    }

    /// Each halt on the frozen oracle names what a person can do about the file: an
    /// inferred one can be made `[oracle] editable`; runner configuration (before,
    /// the halt named nothing) changes only by a person's own commit before a new
    /// run; a test file is the task's verdict and gets no hint.
    #[test]
    fn frozen_oracle_halts_name_how_a_person_allows_the_edit() {
        // (path, what, kind, a contributor must contain, none may contain)
        let rows: &[(&str, &str, EditKind, &str, &str)] = &[
            (
                "Cargo.toml",
                "runner configuration",
                EditKind::Modified,
                "if changing Cargo.toml is the task, a person makes that change (commit it) and starts a new run",
                "[oracle] editable",
            ),
            (
                "conftest.py",
                "runner configuration",
                EditKind::Created,
                "if changing conftest.py is the task",
                "[oracle] editable",
            ),
            (
                "tests/data/fr.json",
                "data the tests read",
                EditKind::Modified,
                "[oracle] editable = [\"tests/data/fr.json\"]",
                "starts a new run",
            ),
            ("tests/a.py", "test file", EditKind::Modified, "", "is the task"),
        ];
        for (path, what, kind, wanted, unwanted) in rows {
            let m = TreeMeasures {
                oracle_edits: vec![OracleEdit {
                    path: (*path).into(),
                    kind: *kind,
                    what: (*what).into(),
                    lines: Vec::new(),
                }],
                ..TreeMeasures::default()
            };
            let h = frozen_oracle(&RunConfig::defaults(), &m).expect("halts");
            let text = h.contributors.join("\n");
            assert!(text.contains(wanted), "{path}: {text}");
            assert!(!text.contains(unwanted), "{path}: {text}");
        }
        // a test file that only grew is told where a new test goes; one with a
        // changed line is not (table: changed lines, told)
        let grown: &[(&[&str], bool)] = &[
            (
                &[
                    "+12: def test_negative():",
                    "+13:     assert add(-1, -2) == -3",
                ],
                true,
            ),
            (
                &[
                    "-4:     assert add(2, 3) == 5",
                    "+4:     assert add(2, 3) == -1",
                ],
                false,
            ),
        ];
        for (lines, told) in grown {
            let m = TreeMeasures {
                oracle_edits: vec![OracleEdit {
                    path: "tests/test_calc.py".into(),
                    kind: EditKind::Modified,
                    what: "test file".into(),
                    lines: lines.iter().map(|l| (*l).to_string()).collect(),
                }],
                ..TreeMeasures::default()
            };
            let text = frozen_oracle(&RunConfig::defaults(), &m)
                .expect("halts")
                .contributors
                .join("\n");
            assert_eq!(
                text.contains("a new test goes in a new test file"),
                *told,
                "{text}"
            );
        }
    }

    #[test]
    fn evidence_fails_closed() {
        let ok = TreeMeasures::default();
        let broken = TreeMeasures {
            error: Some("snapshot failed".into()),
            ..TreeMeasures::default()
        };
        let none = Shown::default();
        // n named tests, of which the failing one (quiet runners name only failures)
        let named = |n| Shown {
            names: n,
            passing_names: 0,
            counted: None,
            not_run: None,
        };
        // n named tests, every one named as it passed (`unittest -v`, `cargo test`)
        let verbose = |n: usize, counted: u64| Shown {
            names: n,
            passing_names: n,
            counted: Some(counted),
            not_run: None,
        };
        let counted = |n| Shown {
            names: 0,
            passing_names: 0,
            counted: Some(n),
            not_run: None,
        };
        let ran_none = Shown {
            counted: Some(0),
            not_run: Some("pytest executed no test: every test it named (2) was skipped"),
            ..Shown::default()
        };
        // (guards unavailable, measures, t0 shown, green shown, unverified)
        type Row<'a> = (
            &'a [&'a str],
            Option<&'a TreeMeasures>,
            Shown<'a>,
            Shown<'a>,
            bool,
        );
        let table: &[Row] = &[
            (&[], Some(&ok), named(3), named(3), false),
            (&[], Some(&ok), none, none, false), // an exit-code check, from t0 on
            (&[], Some(&ok), named(3), none, true),
            (&[], Some(&ok), counted(5), counted(5), false),
            (&[], Some(&ok), counted(5), counted(4), true),
            (&[], Some(&ok), named(1), counted(2), false), // quiet green, counted
            (&[], Some(&ok), verbose(2, 2), verbose(2, 2), false),
            // a runner that named its passes at t0 and now only counts them
            (&[], Some(&ok), verbose(2, 2), counted(2), true),
            (&[], Some(&broken), named(3), named(3), true),
            (&[], None, named(3), named(3), true),
            (&["no store"], Some(&ok), named(3), named(3), true),
            // the runner's own report that it executed nothing, at t0 and now
            (&[], Some(&ok), none, ran_none, true),
            (&[], Some(&ok), ran_none, ran_none, true),
        ];
        for (unavailable, m, t0, now, unverified) in table {
            let u: Vec<String> = unavailable.iter().map(|s| (*s).to_string()).collect();
            let h = evidence(&u, *m, *t0, *now);
            assert_eq!(
                h.is_some(),
                *unverified,
                "{unavailable:?} {m:?} {t0:?} {now:?}"
            );
            if let Some(h) = h {
                assert_eq!(h.reason, HaltReason::ObjectiveUnverified);
            }
        }
    }

    #[test]
    fn toolchain_changes_are_hermeticity_violations() {
        let t0 = TreeMeasures {
            toolchain: BTreeMap::from([("path:sh".to_string(), "/bin/sh aa".to_string())]),
            ..TreeMeasures::default()
        };
        let same = t0.clone();
        let shim = TreeMeasures {
            toolchain: BTreeMap::from([("path:sh".to_string(), "/tmp/x/sh bb".to_string())]),
            ..TreeMeasures::default()
        };
        assert!(toolchain(Some(&t0), &same).is_none());
        let h = toolchain(Some(&t0), &shim).unwrap();
        assert_eq!(h.reason, HaltReason::HermeticityViolation);
        assert!(h.contributors[0].contains("/tmp/x/sh"));
        // a snapshot that failed (a full disk) measured nothing: no change is claimed
        let failed = TreeMeasures {
            error: Some("snapshot after the exec failed: No space left on device".into()),
            available: false,
            ..TreeMeasures::default()
        };
        assert!(toolchain(Some(&t0), &failed).is_none());
    }

    /// Registry crates (`crate:` keys) change only when they differ from t0 and from
    /// their published archive; added or dropped crates are no change.
    #[test]
    fn registry_crates_change_only_away_from_their_published_sources() {
        let m = |pairs: &[(&str, &str)]| TreeMeasures {
            toolchain: pairs
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect(),
            ..TreeMeasures::default()
        };
        let t0 = m(&[("path:sh", "/bin/sh aa"), ("crate:foo@1.0.0", "stat:1")]);
        let table: &[(&str, TreeMeasures, bool)] = &[
            (
                "the same",
                m(&[("path:sh", "/bin/sh aa"), ("crate:foo@1.0.0", "stat:1")]),
                false,
            ),
            (
                "extracted again",
                m(&[("path:sh", "/bin/sh aa"), ("crate:foo@1.0.0", "published")]),
                false,
            ),
            ("dropped", m(&[("path:sh", "/bin/sh aa")]), false),
            (
                "another added as published",
                m(&[
                    ("path:sh", "/bin/sh aa"),
                    ("crate:foo@1.0.0", "stat:1"),
                    ("crate:bar@2.0.0", "published"),
                ]),
                false,
            ),
            (
                "edited",
                m(&[
                    ("path:sh", "/bin/sh aa"),
                    ("crate:foo@1.0.0", "modified ab: src/lib.rs changed"),
                ]),
                true,
            ),
            (
                "another added, edited",
                m(&[
                    ("path:sh", "/bin/sh aa"),
                    ("crate:foo@1.0.0", "stat:1"),
                    ("crate:bar@2.0.0", "modified cd: src/lib.rs changed"),
                ]),
                true,
            ),
            (
                "another added, no archive",
                m(&[
                    ("path:sh", "/bin/sh aa"),
                    ("crate:foo@1.0.0", "stat:1"),
                    ("crate:bar@2.0.0", "unverifiable: its archive is gone"),
                ]),
                true,
            ),
        ];
        for (what, now, violation) in table {
            let h = toolchain(Some(&t0), now);
            assert_eq!(h.is_some(), *violation, "{what}: {h:?}");
            if let Some(h) = h {
                assert_eq!(h.reason, HaltReason::HermeticityViolation);
                assert!(h.contributors[0].contains("crate:"), "{what}: {h:?}");
            }
        }
    }
}

#[cfg(test)]
mod allowed_code_tests {
    use super::*;
    use crate::config::AllowedCode;
    use crate::observe::tamper::TamperHit;

    fn hit(path: &str, rule: &str) -> TamperHit {
        TamperHit {
            path: path.into(),
            line: 3,
            rule: rule.into(),
            text: "x".into(),
        }
    }

    /// (hits, allowed entries, the paths still halting). An entry waives its rule in
    /// the files its glob matches, a rule read in a file of no known language
    /// included; nothing else.
    #[test]
    fn allowed_code_waives_only_what_it_names() {
        let allow = |path: &str, rule: &str| AllowedCode {
            path: path.into(),
            rule: rule.into(),
        };
        let rows: Vec<(Vec<TamperHit>, Vec<AllowedCode>, Vec<&str>)> = vec![
            (
                vec![hit("src/lib.rs", "process exit")],
                vec![],
                vec!["src/lib.rs"],
            ),
            (
                vec![hit("src/lib.rs", "process exit")],
                vec![allow("src/lib.rs", "process exit")],
                vec![],
            ),
            (
                vec![
                    hit("src/lib.rs", "process exit"),
                    hit("src/x.rs", "process exit"),
                ],
                vec![allow("src/lib.rs", "process exit")],
                vec!["src/x.rs"],
            ),
            (
                vec![hit("src/lib.rs", "always-equal object")],
                vec![allow("src/lib.rs", "process exit")],
                vec!["src/lib.rs"],
            ),
            (
                vec![hit("tools/compat", "process exit (read as shell)")],
                vec![allow("tools/*", "process exit")],
                vec![],
            ),
            (
                vec![hit("a/b.py", "code run from a string")],
                vec![allow("a/**", "*")],
                vec![],
            ),
            (
                vec![hit("src/lib.rs", "process exit")],
                vec![allow("src/lib.rs", "process")],
                vec!["src/lib.rs"],
            ),
        ];
        for (hits, allowed, want) in rows {
            let m = TreeMeasures {
                runner_tampering: hits.clone(),
                ..TreeMeasures::default()
            };
            let got: Vec<String> = runner_tampering(&m, &allowed)
                .map(|h| {
                    h.detail["hits"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x["path"].as_str().unwrap().to_string())
                        .collect()
                })
                .unwrap_or_default();
            assert_eq!(got, want, "{hits:?} {allowed:?}");
        }
    }
}
