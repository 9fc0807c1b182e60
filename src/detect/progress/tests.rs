//! Decision-table rows, precedence, negatives and the product's acceptance trajectories.

use super::*;
use crate::halt::ExitClass;

/// One iteration with messages; `tree_changed` as given.
fn it(i: u32, failing: &[(&str, &str)], passing: &[&str], changed: bool) -> AttemptView {
    AttemptView {
        iteration: i,
        green: failing.is_empty(),
        failing: Arc::new(
            failing
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        passing: Arc::new(passing.iter().map(|s| s.to_string()).collect()),
        tree_changed: changed,
    }
}

/// One iteration with empty messages; attempts changed the tree, the baseline did not.
fn ids(i: u32, failing: &[&str], passing: &[&str]) -> AttemptView {
    let f: Vec<(&str, &str)> = failing.iter().map(|k| (*k, "")).collect();
    it(i, &f, passing, i > 0)
}

/// Simulates the loop: runs the detectors after every attempt and returns the
/// position and halt of the first one that fires.
fn first_halt(t: &[AttemptView], policy: &ProgressPolicy) -> Option<(usize, Halt)> {
    (2..=t.len()).find_map(|len| detect_progress(&t[..len], policy).map(|h| (len - 1, h)))
}

fn halt_mode() -> ProgressPolicy {
    ProgressPolicy {
        on_regression: OnRegression::Halt,
        ..ProgressPolicy::default()
    }
}

// ---- acceptance scenarios -------------------------------------------------------

fn stagnation(changed: bool, attempts: u32) -> Vec<AttemptView> {
    let f = [("parses_body", "expected 3, got 2")];
    let mut t = vec![it(0, &f, &["parses_header"], false)];
    t.extend((1..=attempts).map(|i| it(i, &f, &["parses_header"], changed)));
    t
}

#[test]
fn scenario_stagnation_is_same_failure_repeated_at_iteration_3() {
    let t = stagnation(false, 10);
    let (pos, halt) = first_halt(&t, &ProgressPolicy::default()).expect("must fire");
    assert_eq!(halt.reason, HaltReason::SameFailureRepeated);
    assert_eq!(t[pos].iteration, 3);
    assert!(pos <= 4);
    assert!(
        halt.contributors[0].contains("parses_body"),
        "{:?}",
        halt.contributors
    );
    assert!(halt
        .contributors
        .iter()
        .any(|c| c.contains("expected 3, got 2")));
    assert_eq!(halt.detail["iterations"], json!([1, 2, 3]));
}

fn oscillation(len: u32) -> Vec<AttemptView> {
    let a = |i| ids(i, &["left_case"], &["stable_case", "right_case"]);
    let b = |i| ids(i, &["right_case"], &["stable_case", "left_case"]);
    (0..=len)
        .map(|i| if i % 2 == 0 { a(i) } else { b(i) })
        .collect()
}

#[test]
fn scenario_oscillation_halts_in_class_17_by_iteration_7() {
    let t = oscillation(12);
    let (pos, halt) = first_halt(&t, &ProgressPolicy::default()).expect("must fire");
    assert!(pos <= 7);
    assert_eq!(halt.reason.class(), ExitClass::NoConvergence);
    // Every B regresses right_case, so the ratchet rejects and reverts it: the return to
    // A at iteration 2 is the restore, not oscillation. At iteration 3 the agent makes
    // the rejected B again after an accepted A: that is the flip-flop.
    assert_eq!(pos, 3);
    assert_eq!(halt.reason, HaltReason::OscillationDetected);
    assert_eq!(halt.detail["returned_to_iteration"], 1);
}

#[test]
fn scenario_oscillation_without_revert_is_oscillation() {
    let t = oscillation(12);
    let mut p = ProgressPolicy {
        on_regression: OnRegression::Halt,
        ..ProgressPolicy::default()
    };
    p.same_test_regressed.enabled = false;
    let (pos, halt) = first_halt(&t, &p).expect("must fire");
    assert_eq!(halt.reason, HaltReason::OscillationDetected);
    assert_eq!(pos, 2);
    assert_eq!(halt.detail["returned_to_iteration"], 0);
    assert!(halt.contributors[0].contains("left_case"));
}

#[test]
fn return_after_an_accepted_detour_is_oscillation_under_revert() {
    // B is accepted (it passes everything A passed, and more), then the agent returns
    // to A's failing set: the loop really moved, so this is oscillation.
    let t = vec![
        ids(0, &["x"], &["y"]),
        ids(1, &["z"], &["x", "y"]),
        ids(2, &["x"], &["y", "z"]),
    ];
    let halt = oscillation_detected(&t, &ProgressPolicy::default()).expect("fires");
    assert_eq!(halt.detail["returned_to_iteration"], 0);
    // The same shape with a rejected detour does not fire.
    let t2 = vec![
        ids(0, &["x"], &["y"]),
        ids(1, &["z"], &["x"]),
        ids(2, &["x"], &["y"]),
    ];
    assert!(oscillation_detected(&t2, &ProgressPolicy::default()).is_none());
}

#[test]
fn scenario_oscillation_still_halts_when_rows_are_switched_off() {
    let t = oscillation(12);
    let mut p = ProgressPolicy::default();
    p.oscillation_detected.enabled = false;
    let (pos, halt) = first_halt(&t, &p).expect("must fire");
    assert_eq!((pos, halt.reason), (3, HaltReason::NoProgressDetected));
    p.no_progress_detected.enabled = false;
    let (pos, halt) = first_halt(&t, &p).expect("must fire");
    assert_eq!(
        (pos, halt.reason),
        (4, HaltReason::UnsatisfiableConstraints)
    );
    assert_eq!(halt.detail["pair"], json!(["left_case", "right_case"]));
}

fn regression() -> Vec<AttemptView> {
    vec![
        ids(0, &["t1", "t2"], &["t3"]),
        ids(1, &["t2"], &["t1", "t3"]),
        ids(2, &["t1"], &["t2", "t3"]),
        ids(3, &[], &["t1", "t2", "t3"]),
    ]
}

#[test]
fn scenario_regression_in_halt_mode_is_same_test_regressed_at_iteration_2() {
    let t = regression();
    let (pos, halt) = first_halt(&t, &halt_mode()).expect("must fire");
    assert_eq!((pos, halt.reason), (2, HaltReason::SameTestRegressed));
    assert_eq!(halt.contributors.len(), 1);
    assert!(halt.contributors[0].contains("t1"));
    assert!(
        halt.contributors[0].contains("iteration 1"),
        "{}",
        halt.contributors[0]
    );
    assert_eq!(halt.detail["regressed"][0]["id"], "t1");
    assert_eq!(halt.detail["regressed"][0]["last_passed"], 1);
    assert_eq!(halt.detail["last_accepted_iteration"], 1);
}

#[test]
fn regression_rule_only_in_halt_mode() {
    let t = regression();
    assert!(same_test_regressed(&t[..3], &ProgressPolicy::default()).is_none());
    assert!(first_halt(&t, &ProgressPolicy::default()).is_none());
    let mut p = halt_mode();
    p.same_test_regressed.enabled = false;
    assert!(first_halt(&t, &p).is_none());
}

fn improving() -> Vec<AttemptView> {
    let all = ["case_1", "case_2", "case_3", "case_4", "case_5", "case_6"];
    (0..=4u32)
        .map(|i| ids(i, &all[i as usize..], &all[..i as usize]))
        .collect()
}

#[test]
fn scenario_improving_fires_nothing() {
    let t = improving();
    let counts: Vec<usize> = t[1..].iter().map(|a| a.failing.len()).collect();
    assert_eq!(counts, vec![5, 4, 3, 2]);
    for len in 2..=t.len() {
        assert!(
            detect_all(&t[..len], &halt_mode()).is_empty(),
            "fired at {len}"
        );
    }
    // Same with a baseline equal to the first attempt (5, 5, 4, 3, 2).
    let all = ["c1", "c2", "c3", "c4", "c5", "c6"];
    let mut t = vec![ids(0, &all[1..], &all[..1])];
    t.extend((1..=4u32).map(|i| ids(i, &all[i as usize..], &all[..i as usize])));
    assert!(first_halt(&t, &ProgressPolicy::default()).is_none());
    assert!(accepted(&t).iter().all(|&a| a));
}

// ---- one test per decision-table row -------------------------------------------

fn date_trade() -> Vec<AttemptView> {
    vec![
        ids(
            0,
            &["parse_eu", "tz_a", "tz_b", "tz_c"],
            &["parse_us", "round_trip"],
        ),
        ids(
            1,
            &["parse_us", "tz_a", "tz_b", "tz_c"],
            &["parse_eu", "round_trip"],
        ),
        ids(
            2,
            &["parse_eu", "tz_b", "tz_c"],
            &["parse_us", "tz_a", "round_trip"],
        ),
        ids(
            3,
            &["parse_us", "tz_c"],
            &["parse_eu", "tz_a", "tz_b", "round_trip"],
        ),
        ids(
            4,
            &["parse_eu"],
            &["parse_us", "tz_a", "tz_b", "tz_c", "round_trip"],
        ),
    ]
}

#[test]
fn row2_unsatisfiable_constraints_on_a_trading_pair() {
    let t = date_trade();
    let (pos, halt) = first_halt(&t, &ProgressPolicy::default()).expect("must fire");
    assert_eq!(
        (pos, halt.reason),
        (4, HaltReason::UnsatisfiableConstraints)
    );
    assert_eq!(halt.detail["pair"], json!(["parse_eu", "parse_us"]));
    assert_eq!(halt.detail["cycles"], 2);
    assert_eq!(halt.detail["first_fails_at"], json!([0, 2, 4]));
    assert_eq!(halt.detail["second_fails_at"], json!([1, 3]));
    assert!(halt.contributors[0].contains("parse_eu") && halt.contributors[0].contains("parse_us"));
    // One cycle short at iteration 3; three cycles required never fires here.
    assert!(unsatisfiable_constraints(&t[..4], &ProgressPolicy::default()).is_none());
    let mut p = ProgressPolicy::default();
    p.unsatisfiable_constraints.cycles = 3;
    assert!(unsatisfiable_constraints(&t, &p).is_none());
}

#[test]
fn a_pair_that_once_passed_together_is_not_unsatisfiable() {
    let mut t = date_trade();
    t.insert(
        1,
        ids(
            1,
            &["tz_a", "tz_b", "tz_c"],
            &["parse_eu", "parse_us", "round_trip"],
        ),
    );
    for (i, a) in t.iter_mut().enumerate() {
        a.iteration = i as u32;
    }
    assert!(unsatisfiable_constraints(&t, &ProgressPolicy::default()).is_none());
}

#[test]
fn row2_beats_row3_when_both_hold() {
    let t = oscillation(2);
    let mut p = ProgressPolicy::default();
    p.unsatisfiable_constraints.cycles = 1;
    p.on_regression = OnRegression::Halt;
    p.same_test_regressed.enabled = false;
    let all = detect_all(&t, &p);
    let reasons: Vec<HaltReason> = all.iter().map(|h| h.reason).collect();
    assert_eq!(
        reasons,
        vec![
            HaltReason::UnsatisfiableConstraints,
            HaltReason::OscillationDetected
        ]
    );
    assert_eq!(
        detect_progress(&t, &p).map(|h| h.reason),
        Some(HaltReason::UnsatisfiableConstraints)
    );
}

#[test]
fn row1_beats_everything_in_halt_mode() {
    // The oscillation scenario in halt mode: right_case passed in the accepted
    // baseline and fails at iteration 1 -> regression before any oscillation.
    let t = oscillation(6);
    let (pos, halt) = first_halt(&t, &halt_mode()).expect("must fire");
    assert_eq!((pos, halt.reason), (1, HaltReason::SameTestRegressed));
    assert!(halt.contributors[0].starts_with("right_case"));
    assert!(halt.contributors[0].contains("iteration 0"));
}

#[test]
fn row3_oscillation_returns_via_several_sets() {
    let t = vec![
        ids(0, &["a", "b"], &["c"]),
        ids(1, &["a"], &["b", "c"]),
        ids(2, &["a", "c"], &["b"]),
        ids(3, &["a", "b"], &["c"]),
    ];
    let (pos, halt) = first_halt(&t, &ProgressPolicy::default()).expect("must fire");
    assert_eq!((pos, halt.reason), (3, HaltReason::OscillationDetected));
    assert_eq!(halt.detail["returned_to_iteration"], 0);
    assert_eq!(halt.detail["between"].as_array().map(Vec::len), Some(2));
}

#[test]
fn unchanged_set_is_stagnation_not_oscillation() {
    let t = stagnation(true, 6);
    for len in 2..=t.len() {
        assert!(oscillation_detected(&t[..len], &ProgressPolicy::default()).is_none());
    }
    // A -> B -> B is not a return either.
    let t = vec![
        ids(0, &["a"], &["b"]),
        ids(1, &["b"], &["a"]),
        ids(2, &["b"], &["a"]),
    ];
    assert!(oscillation_detected(&t, &ProgressPolicy::default()).is_none());
}

#[test]
fn row4_three_strikes_tolerates_small_message_noise() {
    let msgs = [
        "timed out after 1001 ms",
        "timed out after 1002 ms",
        "timed out after 1003 ms",
    ];
    let mut t = vec![it(
        0,
        &[("io::reads", "timed out after 1000 ms")],
        &["io::opens"],
        false,
    )];
    for (i, m) in msgs.iter().enumerate() {
        t.push(it(i as u32 + 1, &[("io::reads", m)], &["io::opens"], true));
    }
    assert!(message_similarity(msgs[0], msgs[2]) >= 0.9);
    let (pos, halt) = first_halt(&t, &ProgressPolicy::default()).expect("must fire");
    assert_eq!((pos, halt.reason), (3, HaltReason::SameFailureRepeated));
}

#[test]
fn messages_below_the_threshold_break_the_streak() {
    let msgs = [
        "expected 3, got 2",
        "thread panicked: index out of bounds: the len is 0",
        "called Option::unwrap on a None value",
    ];
    let mut t = vec![it(
        0,
        &[("parses_body", "expected 3, got 2")],
        &["parses_header"],
        false,
    )];
    for (i, m) in msgs.iter().enumerate() {
        t.push(it(
            i as u32 + 1,
            &[("parses_body", m)],
            &["parses_header"],
            true,
        ));
    }
    assert!(same_failure_repeated(&t, &ProgressPolicy::default()).is_none());
    // The agent kept editing and parses_body never passed: row 5 takes it; without
    // row 5, the failures changed and nothing improved: row 6.
    let (pos, halt) = first_halt(&t, &ProgressPolicy::default()).expect("must fire");
    assert_eq!((pos, halt.reason), (3, HaltReason::InfeasibleSuspected));
    let mut p = ProgressPolicy::default();
    p.infeasible_suspected.enabled = false;
    let (pos, halt) = first_halt(&t, &p).expect("must fire");
    assert_eq!((pos, halt.reason), (3, HaltReason::NoProgressDetected));
    assert!(halt.contributors[1].contains("same tests, different messages"));
    // Loosening the threshold far enough makes them "the same" again.
    let mut p = ProgressPolicy::default();
    p.same_failure_repeated.similarity = 0.01;
    assert_eq!(
        first_halt(&t, &p).map(|(_, h)| h.reason),
        Some(HaltReason::SameFailureRepeated)
    );
}

#[test]
fn baseline_is_not_one_of_the_strikes() {
    let t = stagnation(false, 2);
    assert!(same_failure_repeated(&t, &ProgressPolicy::default()).is_none());
    let mut p = ProgressPolicy::default();
    p.same_failure_repeated.repeats = 2;
    assert!(same_failure_repeated(&t, &p).is_some());
    assert!(same_failure_repeated(&t[..2], &p).is_none());
}

#[test]
fn row4_beats_row5_when_both_hold() {
    // The agent edits every time, the test never passes, the failure never changes.
    let t = stagnation(true, 3);
    let reasons: Vec<HaltReason> = detect_all(&t, &ProgressPolicy::default())
        .iter()
        .map(|h| h.reason)
        .collect();
    assert_eq!(
        reasons,
        vec![
            HaltReason::SameFailureRepeated,
            HaltReason::InfeasibleSuspected
        ]
    );
}

fn infeasible() -> Vec<AttemptView> {
    vec![
        it(
            0,
            &[("solves_h", "no"), ("a", "x"), ("b", "y")],
            &["base", "c"],
            false,
        ),
        it(
            1,
            &[("solves_h", "no"), ("a", "x")],
            &["base", "b", "c"],
            true,
        ),
        it(
            2,
            &[("solves_h", "no"), ("a", "assertion left == right failed")],
            &["base", "b", "c"],
            true,
        ),
        it(
            3,
            &[("solves_h", "no"), ("c", "z")],
            &["base", "a", "b"],
            true,
        ),
        it(
            4,
            &[("solves_h", "no"), ("a", "x"), ("c", "z")],
            &["base", "b"],
            true,
        ),
    ]
}

#[test]
fn row5_infeasible_when_the_tree_keeps_changing_and_a_core_never_passes() {
    let t = infeasible();
    let (pos, halt) = first_halt(&t, &ProgressPolicy::default()).expect("must fire");
    assert_eq!((pos, halt.reason), (4, HaltReason::InfeasibleSuspected));
    assert_eq!(halt.detail["core"], json!(["solves_h"]));
    assert!(halt.contributors[0].contains("solves_h"));
    assert_eq!(halt.detail["best_failing_count"], 2);
    assert_eq!(halt.detail["best_iteration"], 1);
    assert_eq!(never_passed_core(&t), vec!["solves_h".to_string()]);
    let reasons: Vec<HaltReason> = detect_all(&t, &ProgressPolicy::default())
        .iter()
        .map(|h| h.reason)
        .collect();
    assert_eq!(
        reasons,
        vec![
            HaltReason::InfeasibleSuspected,
            HaltReason::NoProgressDetected
        ]
    );
}

#[test]
fn row6_takes_over_when_an_attempt_left_the_tree_alone() {
    let mut t = infeasible();
    t[3].tree_changed = false;
    let (pos, halt) = first_halt(&t, &ProgressPolicy::default()).expect("must fire");
    assert_eq!((pos, halt.reason), (4, HaltReason::NoProgressDetected));
}

#[test]
fn row6_no_progress_while_failures_churn() {
    let t = vec![
        ids(0, &["a", "b"], &["c", "d"]),
        ids(1, &["b", "c"], &["a", "d"]),
        ids(2, &["c", "d"], &["a", "b"]),
        ids(3, &["a", "d"], &["b", "c"]),
    ];
    let (pos, halt) = first_halt(&t, &ProgressPolicy::default()).expect("must fire");
    assert_eq!((pos, halt.reason), (3, HaltReason::NoProgressDetected));
    assert_eq!(halt.detail["best_failing_count"], 2);
    assert_eq!(halt.detail["best_iteration"], 0);
    assert_eq!(halt.detail["changed_at"], json!([1, 2, 3]));
    assert!(never_passed_core(&t).is_empty());
    // A longer window has not elapsed yet.
    let mut p = ProgressPolicy::default();
    p.no_progress_detected.k = 4;
    assert!(no_progress_detected(&t, &p).is_none());
}

#[test]
fn unsatisfiable_ignores_the_unattributed_member() {
    let u = "cargo::<unattributed>";
    let t: Vec<AttemptView> = (0..6u32)
        .map(|i| {
            if i % 2 == 0 {
                ids(i, &[u], &["x"])
            } else {
                ids(i, &["x"], &[u])
            }
        })
        .collect();
    assert!(unsatisfiable_constraints(&t, &ProgressPolicy::default()).is_none());
    assert!(never_passed_core(&[ids(0, &[u], &[]), ids(1, &[u], &[])]).is_empty());
}

// ---- general properties ---------------------------------------------------------

#[test]
fn ratchet_keeps_the_last_accepted_reference() {
    let t = vec![
        ids(0, &["b", "c"], &["a"]),
        ids(1, &["c"], &["a", "b"]),
        ids(2, &["b"], &["a", "c"]),
        ids(3, &[], &["a", "b", "c"]),
        ids(4, &["c"], &["a", "b"]),
        ids(5, &["c", "d"], &["a", "b"]),
    ];
    assert_eq!(accepted(&t), vec![true, true, false, true, false, false]);
    assert!(accepted(&[]).is_empty());
    // The tree a non-converging run leaves, and a resumed run continues from.
    let cases: &[(usize, Option<u32>)] = &[
        (0, None),
        (1, Some(0)),
        (3, Some(1)),
        (5, Some(3)),
        (6, Some(3)),
    ];
    for &(len, want) in cases {
        assert_eq!(last_accepted(&t[..len]), want, "first {len} attempts");
    }
}

#[test]
fn a_green_last_attempt_is_never_judged() {
    let mut t = stagnation(false, 4);
    t.push(ids(5, &[], &["parses_header", "parses_body"]));
    assert!(detect_all(&t, &halt_mode()).is_empty());
    let mut t = oscillation(4);
    t.push(ids(5, &[], &["stable_case", "left_case", "right_case"]));
    assert!(detect_all(&t, &halt_mode()).is_empty());
    // No attempt yet: nothing to judge.
    assert!(detect_all(&t[..1], &halt_mode()).is_empty());
    assert!(detect_all(&[], &halt_mode()).is_empty());
}

#[test]
fn disabled_conditions_never_fire() {
    let cases: Vec<(HaltReason, Vec<AttemptView>, ProgressPolicy)> = vec![
        (HaltReason::SameTestRegressed, regression(), halt_mode()),
        (
            HaltReason::UnsatisfiableConstraints,
            date_trade(),
            ProgressPolicy::default(),
        ),
        (
            HaltReason::OscillationDetected,
            oscillation(8),
            ProgressPolicy::default(),
        ),
        (
            HaltReason::SameFailureRepeated,
            stagnation(true, 8),
            ProgressPolicy::default(),
        ),
        (
            HaltReason::InfeasibleSuspected,
            infeasible(),
            ProgressPolicy::default(),
        ),
        (
            HaltReason::NoProgressDetected,
            oscillation(8),
            ProgressPolicy::default(),
        ),
    ];
    for (reason, t, mut p) in cases {
        let fired = |p: &ProgressPolicy| {
            (2..=t.len()).any(|len| detect_all(&t[..len], p).iter().any(|h| h.reason == reason))
        };
        assert!(fired(&p), "{reason} should fire when enabled");
        match reason {
            HaltReason::SameTestRegressed => p.same_test_regressed.enabled = false,
            HaltReason::UnsatisfiableConstraints => p.unsatisfiable_constraints.enabled = false,
            HaltReason::OscillationDetected => p.oscillation_detected.enabled = false,
            HaltReason::SameFailureRepeated => p.same_failure_repeated.enabled = false,
            HaltReason::InfeasibleSuspected => p.infeasible_suspected.enabled = false,
            _ => p.no_progress_detected.enabled = false,
        }
        assert!(!fired(&p), "{reason} fired while disabled");
    }
}

#[test]
fn verdict_re_derives_from_the_serialized_trajectory() {
    for (t, p) in [
        (stagnation(false, 3), ProgressPolicy::default()),
        (date_trade(), ProgressPolicy::default()),
        (regression()[..3].to_vec(), halt_mode()),
        (infeasible(), ProgressPolicy::default()),
    ] {
        let live = detect_progress(&t, &p);
        assert!(live.is_some());
        let text = serde_json::to_string(&t).unwrap();
        let back: Vec<AttemptView> = serde_json::from_str(&text).unwrap();
        let policy_back: ProgressPolicy =
            serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(detect_progress(&back, &policy_back), live);
        let halt_back: Halt = serde_json::from_value(serde_json::to_value(&live).unwrap()).unwrap();
        assert_eq!(Some(halt_back), live);
    }
}

#[test]
fn similarity_matches_the_diff_ratio() {
    assert_eq!(message_similarity("", ""), 1.0);
    assert_eq!(message_similarity("abc", ""), 0.0);
    assert!((message_similarity("abc", "abd") - 4.0 / 6.0).abs() < 1e-9);
    let pairs = [
        ("expected 3, got 2", "expected 4, got 2"),
        ("expected 3, got 2", "called unwrap on None"),
        ("ééé ü", "éé ü"),
        ("timed out after 1001 ms", "timed out after 1002 ms"),
    ];
    for (a, b) in pairs {
        let exact = message_similarity(a, b);
        let lib = f64::from(similar::TextDiff::from_chars(a, b).ratio());
        assert!((exact - lib).abs() < 1e-6, "{a} / {b}: {exact} vs {lib}");
        for th in [0.1, 0.5, 0.8, 0.9, 0.95, 1.0] {
            assert_eq!(similar_enough(a, b, th), exact >= th, "{a} / {b} at {th}");
        }
    }
}

#[test]
fn many_tests_moving_together_stay_cheap_and_grouped() {
    // 3000 tests fail and pass in lockstep against one other test; the pair search
    // groups identical histories instead of pairing every test.
    let group: Vec<String> = (0..3000).map(|i| format!("suite::case_{i:04}")).collect();
    let g: Vec<&str> = group.iter().map(String::as_str).collect();
    let t: Vec<AttemptView> = (0..5u32)
        .map(|i| {
            if i % 2 == 0 {
                ids(i, &g, &["lonely"])
            } else {
                ids(i, &["lonely"], &g)
            }
        })
        .collect();
    let halt = unsatisfiable_constraints(&t, &ProgressPolicy::default()).expect("fires");
    assert_eq!(halt.detail["pair"], json!(["suite::case_0000", "lonely"]));
    assert_eq!(
        halt.detail["moves_with_first"].as_array().map(Vec::len),
        Some(MAX_LISTED)
    );
    assert!(halt.contributors.iter().any(|c| c.contains("(+2979 more)")));
}
