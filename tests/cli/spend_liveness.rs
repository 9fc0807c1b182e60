//! Spend caps from agent usage reports, stall detection, comprehension debt with
//! ack/resume, and the external watchdog.

use crate::support::*;
use std::time::Duration;

/// A TAP repo with `n` tests whose committed `agent.sh` is `agent`, run with
/// `--exec "bash agent.sh"` and the TAP check plus `rest`.
fn agent_run(n: usize, agent: &str, rest: &[&str]) -> (Repo, Out) {
    let r = tap_repo(n);
    r.write("agent.sh", agent).commit("agent");
    let out = r.lx_tap("bash agent.sh", rest);
    (r, out)
}

/// [`agent_run`] over 10 tests under a $1.00 budget.
fn budget_run(agent: &str) -> (Repo, Out) {
    agent_run(
        10,
        agent,
        &["--budget-usd", "1.00", "--max-iterations", "10"],
    )
}

#[test]
fn claude_json_spend_crosses_the_budget_at_iteration_3() {
    let (r, out) = budget_run(&format!(
        "{PROGRESS_AGENT}\n{CLAUDE_RESULT_FN}claude_result 0.40 claude-sonnet-4-5-20250929\n"
    ));
    let v = out.expect(18, Some("budget_exceeded"));
    assert_eq!(v["iteration"], 3, "{v}");
    // inspect-cost judges the run against its own cap: over budget, so 18 as well.
    let cost = r.lx(&["inspect-cost"]).expect(18, Some("budget_exceeded"));
    let total = cost["total_usd"].as_f64().unwrap();
    assert!((total - 1.20).abs() < 1e-6, "total spend {total}: {cost}");
}

#[test]
fn a_silent_exec_is_stopped_by_the_stall_timeout() {
    let r = Repo::with_f();
    let _g = ProcGuard::new(&["sleep 4175"]);
    let out = r.lx(&[
        "run",
        "--exec",
        "sleep 4175",
        "--check",
        "test -f done",
        "--stall-timeout",
        "2s",
        "--max-iterations",
        "3",
    ]);
    let v = out.expect(19, Some("heartbeat_stale"));
    assert_eq!(v["iteration"], 1, "{v}");
    assert_took_under(&out, 20);
    assert_none_left("sleep 4175", "the stalled exec");
}

#[test]
fn comprehension_debt_halts_then_ack_and_resume_converge_the_same_run() {
    let r = tap_repo(3);
    let out = r.lx(&[
        "run",
        "--run-id",
        "cmp",
        "--exec",
        PROGRESS_AGENT,
        "--check",
        "sh check.sh",
        "--test-format",
        "tap",
        "--comprehension-every",
        "2",
        "--max-iterations",
        "10",
    ]);
    let v = out.expect(19, Some("comprehension_debt_exceeded"));
    assert_eq!(v["iteration"], 2, "{v}");
    let v = r
        .lx(&["ack", "--run-id", "cmp", "--reviewer", "alice"])
        .expect(0, None);
    assert_eq!(v["run_id"], "cmp");
    let out = r.lx(&["run", "--resume", "cmp"]);
    let v = out.expect(10, Some("success_condition_met"));
    assert_eq!(v["run_id"], "cmp", "resume started a different run: {v}");
    assert_eq!(v["iteration"], 3, "{v}");
    let lines = verify_receipt(&r.receipt("cmp"));
    let resumed = events(&lines, "resumed");
    assert_eq!(resumed.len(), 1);
    assert!(mentions(resumed[0], "alice"), "{}", resumed[0]);
    assert_eq!(events(&lines, "run_started").len(), 1);
    assert_eq!(r.read("failing").trim(), "");
}

#[test]
fn watch_kill_ends_a_wedged_run_which_halts_heartbeat_stale() {
    let r = Repo::with_f();
    let _g = ProcGuard::new(&["sleep 4176"]);
    let mut run = spawn_wedged(
        &r,
        Some("wedged"),
        "sleep 4176",
        "sleep 4176",
        "test -f done",
    );
    // The exec has printed nothing; wait until its silence exceeds the 1s stall limit
    // and a heartbeat has been written.
    let v = watch_kill_after_stall(&r, "wedged");
    let w = v.expect(19, Some("heartbeat_stale"));
    assert!(
        w["killed_process_groups"]
            .as_array()
            .is_some_and(|a| !a.is_empty()),
        "{w}"
    );
    let out = finish(&mut run, HANG_LIMIT);
    let rv = out.expect(19, Some("heartbeat_stale"));
    assert_eq!(rv["run_id"], "wedged");
    assert_none_left("sleep 4176", "the wedged exec");
    let lines = receipt_of(&rv);
    assert_eq!(lines.last().unwrap()["halt_reason"], "heartbeat_stale");
}

#[test]
fn a_live_run_is_alive_to_watch_and_status_and_sigterm_halts_it() {
    let r = Repo::with_f();
    let _g = ProcGuard::new(&["tick-4179"]);
    let mut run = spawn_wedged(
        &r,
        Some("busy"),
        "tick-4179",
        "while :; do echo tick-4179; sleep 0.2; done",
        "test -f done",
    );
    let me = i32::try_from(run.child().id()).unwrap();
    // Let a heartbeat be written.
    assert!(
        wait_until(Duration::from_secs(10), || r
            .path()
            .join(".loopexec/runs/busy/heartbeat")
            .is_file()),
        "no heartbeat file"
    );
    let w = r
        .lx(&["watch", "--run-id", "busy", "--stall-timeout", "5s"])
        .expect(0, None);
    assert_eq!(w["status"], "alive", "{w}");
    let st = r.lx(&["status", "--run-id", "busy"]).expect(0, None);
    assert_eq!(st["alive"], true, "{st}");
    assert!(st["halt_reason"].is_null(), "{st}");
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(me, libc::SIGTERM) }, 0);
    let out = finish(&mut run, Duration::from_secs(20));
    let v = out.expect(11, Some("human_required"));
    let left = leftovers_after("tick-4179", Duration::from_secs(3));
    assert!(left.is_empty(), "children left after SIGTERM: {left:?}");
    let lines = receipt_of(&v);
    assert_eq!(lines.last().unwrap()["event"], "halted");
    assert!(
        !events(&lines, "interrupted").is_empty(),
        "no interrupted event"
    );
    let w = r.lx(&["watch", "--run-id", "busy"]).expect(0, None);
    assert_eq!(w["status"], "finished", "{w}");
}

/// A run halted for comprehension debt, resumed without anyone acknowledging it.
fn resume_without_ack() -> (Repo, serde_json::Value) {
    let r = tap_repo(6);
    r.lx(&[
        "run",
        "--run-id",
        "debt",
        "--exec",
        PROGRESS_AGENT,
        "--check",
        "sh check.sh",
        "--test-format",
        "tap",
        "--comprehension-every",
        "2",
    ])
    .expect(19, Some("comprehension_debt_exceeded"));
    let v = r
        .lx(&["run", "--resume", "debt"])
        .expect(19, Some("comprehension_debt_exceeded"));
    (r, v)
}

#[test]
fn resuming_without_an_ack_halts_on_the_same_debt() {
    let (_r, v) = resume_without_ack();
    assert_eq!(v["run_id"], "debt");
    assert!(mentions(&v, "acknowledged"), "{v}");
}

#[test]
fn resuming_without_an_ack_runs_no_further_agent_iteration() {
    let (r, v) = resume_without_ack();
    // The debt (2 unacknowledged accepted iterations) already met the limit when the
    // run halted at iteration 2; resuming must not put the agent back to work.
    assert!(
        v["iteration"] == 2 || v["iteration"] == 3,
        "halted at an unexpected iteration: {v}"
    );
    let lines = verify_receipt(&r.receipt("debt"));
    assert_eq!(events(&lines, "exec_finished").len(), 2);
    assert_eq!(r.read("failing").split_whitespace().count(), 4);
}

#[test]
fn spend_reported_through_the_usage_file_counts_against_the_cap() {
    let (_r, out) = budget_run(&format!(
        "{PROGRESS_AGENT}\necho '{{\"provider\":\"acme\",\"model\":\"acme-coder-2\",\"input_tokens\":1000,\"output_tokens\":200,\"cost_usd\":0.60}}' >> \"$LOOPEXEC_USAGE_FILE\"\n"
    ));
    let v = out.expect(18, Some("budget_exceeded"));
    assert_eq!(v["iteration"], 2, "{v}");
}

#[test]
fn one_iteration_costing_far_more_than_the_others_is_cost_anomaly() {
    let c = Counter::new();
    let s = c.shell();
    let agent = format!(
        "{PROGRESS_AGENT}\n{CLAUDE_RESULT_FN}n=$(cat {s}); echo $((n+1)) > {s}\n\
         case $n in 0) c=0.10;; 1) c=0.11;; 2) c=0.09;; 3) c=0.10;; *) c=2.50;; esac\n\
         claude_result $c claude-sonnet-4-5-20250929\n"
    );
    let (_r, out) = agent_run(10, &agent, &["--max-iterations", "9"]);
    let v = out.expect(18, Some("cost_anomaly"));
    assert_eq!(v["iteration"], 5, "{v}");
}

#[test]
fn a_streaming_agent_is_stopped_mid_iteration_by_the_token_cap() {
    let _g = ProcGuard::new(&["sleep 0.4177"]);
    let (_r, out) = agent_run(
        3,
        r#"echo '{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5-20250929","tools":[]}'
for i in $(seq 1 100); do
  echo '{"type":"assistant","message":{"id":"msg_'$i'","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"thinking"}],"usage":{"input_tokens":10,"output_tokens":1000}},"session_id":"s1"}'
  sleep 0.4177
done
"#,
        &["--budget-tokens", "5000", "--max-iterations", "3"],
    );
    let v = out.expect(18, Some("budget_exceeded"));
    assert_eq!(v["iteration"], 1, "{v}");
    // 100 messages at 0.42 s would take 42 s; the cap is crossed after ~5.
    assert_took_under(&out, 25);
    assert_none_left("sleep 0.4177", "the agent");
}

#[test]
fn a_change_of_primary_model_is_model_drift_detected() {
    let c = Counter::new();
    let s = c.shell();
    let agent = format!(
        "{PROGRESS_AGENT}\nn=$(cat {s}); echo $((n+1)) > {s}\n\
         m=claude-opus-4-1-20250805; [ $n -ge 2 ] && m=claude-sonnet-4-5-20250929\n{}",
        r#"echo '{"type":"system","subtype":"init","session_id":"s1","model":"'$m'","claude_code_version":"2.1.14","tools":[]}'
echo '{"type":"assistant","message":{"id":"msg_'$n'","type":"message","role":"assistant","model":"'$m'","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":10,"output_tokens":5}},"session_id":"s1"}'
echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"session_id":"s1","total_cost_usd":0.01,"usage":{"input_tokens":10,"output_tokens":5},"modelUsage":{"'$m'":{"inputTokens":10,"outputTokens":5,"costUSD":0.009},"claude-haiku-4-5-20251001":{"inputTokens":300,"outputTokens":9,"costUSD":0.001}}}'
"#
    );
    let (_r, out) = agent_run(10, &agent, &["--max-iterations", "9"]);
    let v = out.expect(19, Some("model_drift_detected"));
    assert_eq!(v["iteration"], 3, "{v}");
    assert!(mentions(&v, "claude-sonnet-4-5"), "{v}");
}

#[test]
fn watch_kill_during_a_wedged_check_also_halts_heartbeat_stale() {
    let r = Repo::with_f();
    let _g = ProcGuard::new(&["sleep 4180"]);
    // The baseline check passes straight away unless the agent's marker exists; the
    // agent creates it, so iteration 1's check is the one that wedges.
    let mut run = spawn_wedged(
        &r,
        Some("wedgedcheck"),
        "sleep 4180",
        "touch marker",
        // (the sleep named through a variable, as in `run_process`)
        "if [ -f marker ]; then n=4180; sleep $n; fi; false",
    );
    watch_kill_after_stall(&r, "wedgedcheck").expect(19, Some("heartbeat_stale"));
    let out = finish(&mut run, Duration::from_secs(30));
    let v = out.expect(19, Some("heartbeat_stale"));
    assert_eq!(v["iteration"], 1, "{v}");
    assert_none_left("sleep 4180", "the wedged check");
    let lines = receipt_of(&v);
    let checks = events(&lines, "check_finished");
    assert!(
        checks.iter().any(|c| c["watchdog"].is_object()),
        "no check_finished records the watchdog's kill"
    );
}

/// A TAP run of 5 failing tests that fixes one per iteration, halted at its cap of 2.
fn capped_run(id: &str) -> Repo {
    let r = tap_repo(5);
    r.lx_tap(PROGRESS_AGENT, &["--run-id", id, "--max-iterations", "2"])
        .expect(12, Some("max_iterations_reached"));
    r
}

/// Before: `run --resume` of a run that halted at its cap ran "iteration 3/2", and
/// the cap could not be raised (`--max-iterations` with `--resume` exited 2). A plain
/// resume now halts again at once, at the cap's iteration, without starting another,
/// naming how to raise the cap; the halt re-derives from the receipt.
#[test]
fn resuming_a_capped_run_halts_at_the_cap_again_before_the_agent_runs() {
    let r = capped_run("cap");
    let v = r
        .lx(&["run", "--resume", "cap"])
        .expect(12, Some("max_iterations_reached"));
    assert!(
        mentions(&v, "loopexec run --resume cap --max-iterations N"),
        "{v}"
    );
    assert_eq!(v["iteration"], 2, "{v}");
    let lines = verify_receipt(&r.receipt("cap"));
    assert_eq!(
        events(&lines, "exec_finished").len(),
        2,
        "the agent ran again"
    );
    assert_eq!(
        events(&lines, "iteration_started").len(),
        3,
        "iterations 0..=2 only"
    );
    assert_eq!(r.read("failing").split_whitespace().count(), 3);
    let ex = r.lx(&["explain-halt", "--run-id", "cap"]).expect(0, None);
    assert_eq!(ex["rederived"], true, "{ex}");
    assert_eq!(ex["derived_reason"], "max_iterations_reached", "{ex}");
}

/// `--resume ID --max-iterations N` raises the cap: the receipt's `resumed` event
/// records it, the run goes on to converge, and the verdict re-derives offline with
/// the new cap (under the first cap of 2 the receipt's last verdict would not
/// re-derive).
#[test]
fn resuming_with_a_higher_cap_continues_and_re_derives_with_it() {
    let r = capped_run("raise");
    let v = r
        .lx(&["run", "--resume", "raise", "--max-iterations", "4"])
        .expect(12, Some("max_iterations_reached"));
    assert_eq!(v["iteration"], 4, "{v}");
    assert!(mentions(&v, "cap (4)"), "{v}");
    // A plain resume keeps the raised cap (the receipt's), and a second raise goes on.
    r.lx(&["run", "--resume", "raise"])
        .expect(12, Some("max_iterations_reached"));
    let v = r
        .lx(&["run", "--resume", "raise", "--max-iterations", "8"])
        .expect(10, Some("success_condition_met"));
    assert_eq!(v["iteration"], 5, "{v}");
    let lines = verify_receipt(&r.receipt("raise"));
    let caps: Vec<&serde_json::Value> = events(&lines, "resumed")
        .iter()
        .map(|e| &e["max_iterations"])
        .collect();
    assert_eq!(
        caps,
        [
            &serde_json::json!(4),
            &serde_json::Value::Null,
            &serde_json::json!(8)
        ]
    );
    assert_eq!(events(&lines, "exec_finished").len(), 5);
    // The agent is told why the run had stopped after any halt, not only a signal or
    // a hold (a new user's agent saw LOOPEXEC_RESUME_REASON empty after a cap).
    for e in events(&lines, "resumed") {
        assert!(
            e["resume_reason"]
                .as_str()
                .is_some_and(|t| t.contains("max_iterations_reached")),
            "{e}"
        );
    }
    let ex = r.lx(&["explain-halt", "--run-id", "raise"]).expect(0, None);
    assert_eq!(ex["rederived"], true, "{ex}");
    let off = r.lx(&["replay", "raise", "--offline"]).expect(0, None);
    assert_eq!(off["derived_reason"], "success_condition_met", "{off}");
}

/// A new user's review: a run that halted `budget_exceeded` at $1.20 of its $1.00 cap
/// was resumed and ran one more paid exec ($1.85 in all), and the advice to "raise
/// the cap and resume" was refused (`--budget-usd` with `--resume` exited 2). A plain
/// resume now halts again before any exec; `--budget-usd` raises the cap, the
/// `resumed` event records it, and the run converges and re-derives with it.
#[test]
fn a_run_resumed_over_its_budget_spends_nothing_until_the_cap_is_raised() {
    let r = tap_repo(5);
    r.write(
        "agent.sh",
        &format!(
            "{PROGRESS_AGENT}
{CLAUDE_RESULT_FN}claude_result 0.40 claude-sonnet-4-5-20250929
"
        ),
    )
    .commit("agent");
    let v = r
        .lx_tap(
            "bash agent.sh",
            &[
                "--run-id",
                "spent",
                "--budget-usd",
                "1.00",
                "--max-iterations",
                "10",
            ],
        )
        .expect(18, Some("budget_exceeded"));
    assert_eq!(v["iteration"], 3, "{v}");
    assert!(
        mentions(&v, "loopexec run --resume spent --budget-usd"),
        "the advice names the resume that raises the cap: {v}"
    );
    let again = r
        .lx(&["run", "--resume", "spent"])
        .expect(18, Some("budget_exceeded"));
    assert!(mentions(&again, "when the run was resumed"), "{again}");
    let lines = verify_receipt(&r.receipt("spent"));
    assert_eq!(
        events(&lines, "exec_finished").len(),
        3,
        "a paid exec ran past the cap"
    );
    // a refused resume uses none of the run's iterations (a review's run lost one to
    // each refusal, and then halted at its iteration cap when the budget was raised)
    assert_eq!(
        events(&lines, "iteration_started").len(),
        4,
        "iterations 0..=3 only"
    );
    let v = r
        .lx(&["run", "--resume", "spent", "--budget-usd", "5"])
        .expect(10, Some("success_condition_met"));
    assert!(v["iteration"].as_u64() > Some(4), "{v}");
    let lines = verify_receipt(&r.receipt("spent"));
    let caps: Vec<&serde_json::Value> = events(&lines, "resumed")
        .iter()
        .map(|e| &e["budget_usd"])
        .collect();
    assert_eq!(caps, [&serde_json::Value::Null, &serde_json::json!(5.0)]);
    let ex = r.lx(&["explain-halt", "--run-id", "spent"]).expect(0, None);
    assert_eq!(ex["rederived"], true, "{ex}");
    let off = r.lx(&["replay", "spent", "--offline"]).expect(0, None);
    assert_eq!(off["derived_reason"], "success_condition_met", "{off}");
}

/// A new user's review: the time between a halt and its resume counted against
/// `--max-duration`, so a run stopped in the evening halted at once when resumed the
/// next day. Here a run capped at one iteration under a 10 s wall-clock cap waits 11 s
/// before it is resumed for one more iteration: it runs it (before: `budget_exceeded`
/// at once, its exec killed). The cap leaves a loaded machine room for the two short
/// iterations themselves (a 3 s cap was crossed by them under load).
#[test]
fn the_time_between_a_halt_and_its_resume_is_not_the_runs_wall_clock() {
    let r = tap_repo(5);
    r.lx_tap(
        PROGRESS_AGENT,
        &[
            "--run-id",
            "idle",
            "--max-duration",
            "10s",
            "--max-iterations",
            "1",
        ],
    )
    .expect(12, Some("max_iterations_reached"));
    std::thread::sleep(Duration::from_secs(11));
    let v = r
        .lx(&["run", "--resume", "idle", "--max-iterations", "2"])
        .expect(12, Some("max_iterations_reached"));
    assert_eq!(v["iteration"], 2, "{v}");
    let lines = verify_receipt(&r.receipt("idle"));
    assert_eq!(events(&lines, "exec_finished").len(), 2);
    let ex = r.lx(&["explain-halt", "--run-id", "idle"]).expect(0, None);
    assert_eq!(ex["rederived"], true, "{ex}");
}

/// A cap that gives the run no further iteration, or any other run flag, is refused
/// with exit 2 before anything is recorded, naming what to give instead (for a cap,
/// the smallest that gives one more iteration).
#[test]
fn resume_refuses_a_cap_that_does_not_raise_and_other_flags() {
    let r = capped_run("low");
    // (extra arguments, the error or hint must mention)
    let rows: &[(&[&str], &str)] = &[
        (&["--max-iterations", "2"], "--max-iterations 3"),
        (&["--max-iterations", "1"], "already started iteration 2"),
        (&["--max-iterations", "100001"], "at most 100000"),
        (&["--once"], "--once would be ignored"),
        (
            &["--confirm-runs", "1", "--check-in-place"],
            "drop --confirm-runs, --check-in-place",
        ),
        (&["--budget-usd", "-1"], "budget.usd"),
        (&["--max-duration", "5x"], "budget.max_duration"),
    ];
    for (extra, says) in rows {
        let mut args = vec!["run", "--resume", "low"];
        args.extend_from_slice(extra);
        let out = r.lx(&args);
        let v = out.json();
        assert_eq!(out.code, 2, "{extra:?}: {v}");
        assert!(mentions(&v, says), "{extra:?}: {v}");
    }
    let lines = verify_receipt(&r.receipt("low"));
    assert!(events(&lines, "resumed").is_empty(), "a refusal resumed");
}
