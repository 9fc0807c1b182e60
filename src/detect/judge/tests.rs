//! The judge gate's table: every judge outcome and the halt it yields; when the judge
//! is consulted at all.

use super::*;
use crate::check::model::Outcome::{Failed, Passed};
use crate::detect::testkit::{check, exec, start, step, traj};
use crate::receipt::events::Event;

fn judged(it: u32, code: Option<i32>, timed_out: bool, output: &str) -> JudgeFinished {
    let mut s = step(code);
    s.timed_out = timed_out;
    JudgeFinished {
        iteration: it,
        input: serde_json::json!({}),
        step: s,
        output: output.to_string(),
        output_truncated: false,
        usage: None,
        dir: String::new(),
    }
}

const APPROVE: &str = r#"{"verdict":"approve","reasons":[],"evidence":[]}"#;

#[test]
fn each_outcome_maps_to_its_reason() {
    use HaltReason::{EscalationPending, ReviewerRejected, RewardHackingDetected};
    let cases: &[(Option<i32>, bool, &str, Option<HaltReason>)] = &[
        (Some(0), false, APPROVE, None),
        (
            Some(0),
            false,
            "log line\n{\"verdict\":\"approve\",\"reasons\":[\"ok\"],\"evidence\":[]}\n",
            None,
        ),
        (
            Some(0),
            false,
            r#"{"verdict":"reject","reasons":["touches unrelated files"],"evidence":["a.py"]}"#,
            Some(ReviewerRejected),
        ),
        (
            Some(0),
            false,
            r#"{"verdict":"reward_hacking","reasons":["hard-codes t2"],"evidence":[{"path":"calc.py","line":3}]}"#,
            Some(RewardHackingDetected),
        ),
        (
            Some(0),
            false,
            r#"{"verdict":"escalate","reasons":["unsure"],"evidence":[]}"#,
            Some(EscalationPending),
        ),
        // Could not decide: never approval.
        (Some(0), false, "not json", Some(EscalationPending)),
        (Some(0), false, "", Some(EscalationPending)),
        (
            Some(0),
            false,
            r#"{"verdict":"approved","reasons":[],"evidence":[]}"#,
            Some(EscalationPending),
        ),
        (
            Some(0),
            false,
            r#"{"verdict":"approve"}"#,
            Some(EscalationPending),
        ),
        (Some(1), false, APPROVE, Some(EscalationPending)),
        (None, true, APPROVE, Some(EscalationPending)),
        (Some(127), false, "", Some(EscalationPending)),
    ];
    for (code, timed_out, out, want) in cases {
        let got = verdict_halt(&judged(3, *code, *timed_out, out)).map(|h| h.reason);
        assert_eq!(
            got, *want,
            "exit {code:?} timed_out {timed_out} output {out:?}"
        );
    }
}

#[test]
fn could_not_decide_says_so() {
    let h = verdict_halt(&judged(2, Some(0), false, "not json")).unwrap();
    assert!(
        h.contributors[0].contains("could not decide"),
        "{:?}",
        h.contributors
    );
    let h = verdict_halt(&judged(
        2,
        Some(0),
        false,
        r#"{"verdict":"reject","reasons":["r1"],"evidence":[]}"#,
    ))
    .unwrap();
    assert!(
        h.contributors.iter().any(|c| c.contains("r1")),
        "{:?}",
        h.contributors
    );
}

fn cfg(every: u32, cap: Option<f64>) -> RunConfig {
    let mut c = RunConfig::defaults();
    c.judge.command = Some("judge".into());
    c.judge.every = every;
    c.judge.budget_usd = cap;
    c
}

fn green_run(judge: Option<JudgeFinished>) -> Trajectory {
    let mut ev = vec![
        start(0),
        check(0, 0, None, &[("t1", Failed)]),
        start(1),
        exec(1),
        check(1, 0, None, &[("t1", Passed)]),
        check(1, 1, None, &[("t1", Passed)]),
    ];
    if let Some(j) = judge {
        ev.push(Event::JudgeFinished(Box::new(j)));
    }
    traj(&ev)
}

#[test]
fn when_the_judge_is_consulted() {
    // Not configured: nothing to say.
    assert_eq!(gate(&green_run(None), &RunConfig::defaults(), true), None);
    // Due and not yet run: run it.
    assert_eq!(gate(&green_run(None), &cfg(1, None), true), Some(Gate::Run));
    // The final green is judged whatever `every` says; an intermediate one is not due.
    assert_eq!(gate(&green_run(None), &cfg(2, None), true), Some(Gate::Run));
    assert_eq!(gate(&green_run(None), &cfg(2, None), false), None);
    // Approved: the green stands.
    assert_eq!(
        gate(
            &green_run(Some(judged(1, Some(0), false, APPROVE))),
            &cfg(1, None),
            true
        ),
        None
    );
    // Iteration 0 (the untouched tree) is never judged.
    let t0 = traj(&[start(0), check(0, 0, None, &[("t1", Passed)])]);
    assert_eq!(gate(&t0, &cfg(1, None), true), None);
}

#[test]
fn the_judges_cap_stops_further_judging() {
    let mut spent = judged(1, Some(0), false, APPROVE);
    spent.usage = Some(crate::observe::usage::IterationUsage {
        cost_usd: Some(0.5),
        input_tokens: 10,
        output_tokens: 5,
        ..crate::observe::usage::IterationUsage::default()
    });
    let ev = vec![
        start(0),
        check(0, 0, None, &[("t1", Failed)]),
        start(1),
        exec(1),
        check(1, 0, None, &[("t1", Passed)]),
        Event::JudgeFinished(Box::new(spent)),
        start(2),
        exec(2),
        check(2, 0, None, &[("t1", Passed)]),
    ];
    let t = traj(&ev);
    assert_eq!(spend(&t).0, 0.5);
    match gate(&t, &cfg(1, Some(0.5)), true) {
        Some(Gate::Halt(h)) => assert_eq!(h.reason, HaltReason::BudgetExceeded),
        other => panic!("expected budget_exceeded, got {other:?}"),
    }
    assert_eq!(gate(&t, &cfg(1, Some(0.6)), true), Some(Gate::Run));
}

#[test]
fn committed_schema_matches_the_type() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/schemas/judge-verdict.schema.json"
    );
    if std::env::var_os("LOOPEXEC_BLESS").is_some() {
        std::fs::write(path, verdict_schema_json()).expect("write the schema");
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert_eq!(
        committed,
        verdict_schema_json(),
        "schemas/judge-verdict.schema.json is stale: regenerate it with `LOOPEXEC_BLESS=1 cargo test --lib committed_schema_matches_the_type`"
    );
}
