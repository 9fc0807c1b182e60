//! What the judged check may see and do (SPEC §3.9, §3.10): links that lead out of the
//! tree, writes to the judged tree while the check ran, a watch that could not see, and
//! the new test files left out of the judged tree.
//!
//! | observation | reason | when |
//! |---|---|---|
//! | a link added or changed since t0 leads out of the tree (`exec_finished.guards.escaping_links`) | metric_integrity_violation (layer `escaping_links`) | after the exec |
//! | the check modified, re-attributed, moved or deleted a file of the judged tree while it ran (`clean_room.touched`), restored or not | hermeticity_violation | after a check |
//! | the clean room could not be watched (`clean_room.watch_error`) | objective_unverified | a green check |

use crate::config::RunConfig;
use crate::detect::integrity::TreeMeasures;
use crate::halt::{Halt, HaltReason};
use crate::receipt::events::CheckFinished;

/// `metric_integrity_violation` (layer `escaping_links`): the agent added or changed a
/// link whose target is absolute or climbs out of the tree, so the check would read
/// code that is in no snapshot.
#[must_use]
pub fn escaping_links(m: &TreeMeasures) -> Option<Halt> {
    if m.escaping_links.is_empty() {
        return None;
    }
    Some(Halt {
        reason: HaltReason::MetricIntegrityViolation,
        contributors: m
            .escaping_links
            .iter()
            .map(|l| {
                format!("a link added or changed since t0 leads out of the tree (the check would read code no snapshot holds): {l}")
            })
            .collect(),
        detail: serde_json::json!({"layers": ["escaping_links"], "links": m.escaping_links}),
    })
}

/// `hermeticity_violation`: the check changed a file of the judged tree while it ran
/// (the watch saw it, even if the check put it back before it ended). Paths matching
/// the caches a check may write ([`super::oracle::DEFAULT_CHECK_MAY_WRITE`], `[guards]
/// check_may_write`) are exempt, as for the before/after scan.
#[must_use]
pub fn room_writes(cfg: &RunConfig, c: &CheckFinished) -> Option<Halt> {
    let room = c.clean_room.as_ref()?;
    if room.touched.is_empty() {
        return None;
    }
    let globs: Vec<&str> = super::oracle::DEFAULT_CHECK_MAY_WRITE
        .iter()
        .copied()
        .chain(cfg.guards.check_may_write.iter().map(String::as_str))
        .collect();
    let allowed =
        crate::observe::guards::build_globset(&globs).unwrap_or_else(|_| globset::GlobSet::empty());
    let hits: Vec<(&String, &String)> = room
        .touched
        .iter()
        .filter(|(p, _)| !allowed.is_match(p.as_str()))
        .collect();
    if hits.is_empty() {
        return None;
    }
    Some(Halt {
        reason: HaltReason::HermeticityViolation,
        contributors: hits
            .iter()
            .map(|(p, what)| {
                format!("the check changed a file of the judged tree while it ran ({what}; restored or not, the code it tested was not the snapshot's): {p}")
            })
            .collect(),
        detail: serde_json::json!({
            "iteration": c.iteration,
            "attempt": c.attempt,
            "touched": hits.iter().map(|(p, w)| serde_json::json!({"path": p, "what": w})).collect::<Vec<_>>(),
        }),
    })
}

/// `objective_unverified` for a green check whose clean room could not be watched:
/// the guard could not measure, so the green is not believed.
#[must_use]
pub fn watch_unavailable(c: &CheckFinished) -> Option<Halt> {
    let e = c.clean_room.as_ref()?.watch_error.as_ref()?;
    Some(Halt {
        reason: HaltReason::ObjectiveUnverified,
        contributors: vec![format!("a guard could not run: {e}")],
        detail: serde_json::json!({"missing_evidence": [e]}),
    })
}

/// The sentence a verdict carries when test files the agent added were left out of
/// the judged check: out of the clean room's tree, or skipped by a check in place
/// (`check_finished.deselected`). `None`: none were.
#[must_use]
pub fn left_out_note(c: &CheckFinished) -> Option<String> {
    if !c.deselected.is_empty() {
        return Some(format!(
            "{} test file(s) the agent added since t0 were skipped by the check in place (the verdict is the frozen oracle's; [oracle] new_tests = \"run\" runs them): {}",
            c.deselected.len(),
            c.deselected.join(", ")
        ));
    }
    let left = &c.clean_room.as_ref()?.left_out;
    if left.is_empty() {
        return None;
    }
    Some(format!(
        "{} test file(s) or new tests in a source file (path:lines) the agent added since t0 were left out of the judged check (the verdict is the frozen oracle's; [oracle] new_tests = \"run\" runs them): {}",
        left.len(),
        left.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receipt::events::CleanRoomRecord;

    fn check(room: CleanRoomRecord) -> CheckFinished {
        let crate::receipt::Event::CheckFinished(mut c) =
            crate::detect::testkit::check(1, 0, Some("t"), &[])
        else {
            unreachable!("testkit::check builds a check_finished")
        };
        c.clean_room = Some(room);
        *c
    }

    fn room() -> CleanRoomRecord {
        crate::detect::testkit::room_record("t")
    }

    #[test]
    fn room_writes_table() {
        let cfg = RunConfig::defaults();
        // (touched paths, halts?)
        let table: &[(&[&str], bool)] = &[
            (&[], false),
            (&["src/lib.rs"], true),
            (&["calc.js", "test/.orig"], true),
            (&["pkg/__pycache__/calc.cpython-312.pyc"], false),
        ];
        for (paths, want) in table {
            let mut r = room();
            r.touched = paths
                .iter()
                .map(|p| ((*p).to_string(), "modified".to_string()))
                .collect();
            let h = room_writes(&cfg, &check(r));
            assert_eq!(h.is_some(), *want, "{paths:?}");
            if let Some(h) = h {
                assert_eq!(h.reason, HaltReason::HermeticityViolation);
                assert!(h.contributors[0].contains(paths[0]));
            }
        }
    }

    #[test]
    fn an_unwatched_green_is_unverified_and_left_out_tests_are_named() {
        let mut r = room();
        assert!(watch_unavailable(&check(r.clone())).is_none());
        assert!(left_out_note(&check(r.clone())).is_none());
        r.watch_error = Some("inotify's watch limit was reached".into());
        r.left_out = vec!["tests/test_000_helpers.py".into()];
        let h = watch_unavailable(&check(r.clone())).unwrap();
        assert_eq!(h.reason, HaltReason::ObjectiveUnverified);
        assert!(left_out_note(&check(r))
            .unwrap()
            .contains("tests/test_000_helpers.py"));
    }

    #[test]
    fn escaping_links_name_the_link() {
        let m = TreeMeasures {
            escaping_links: vec!["calc.py -> /tmp/outside_calc.py".into()],
            ..TreeMeasures::default()
        };
        let h = escaping_links(&m).unwrap();
        assert_eq!(h.reason, HaltReason::MetricIntegrityViolation);
        assert!(h.contributors[0].contains("calc.py -> /tmp/outside_calc.py"));
        assert!(escaping_links(&TreeMeasures::default()).is_none());
    }
}
