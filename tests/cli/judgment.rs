//! The judgment layer (SPEC §9): each of its reasons provoked with real child processes
//! — a judge script, a task list, an objective test that is never collected, a context
//! that cannot fit — and re-derived offline by `explain-halt`.

use crate::support::*;

/// A judge script (outside the repo) that drains stdin, keeps a copy of its input
/// next to itself, and prints `answer`.
fn judge(state: &Counter, answer: &str) -> String {
    let dir = state.dir();
    let script = dir.join("judge.sh");
    let input = dir.join("input.json");
    std::fs::write(
        &script,
        format!(
            "cat > {}\nprintf '%s\\n' '{answer}'\n",
            shell_quote(input.as_os_str())
        ),
    )
    .expect("write judge");
    format!("sh {}", shell_quote(script.as_os_str()))
}

/// `explain-halt` re-derives `reason` for `run_id` from its receipt.
fn rederives(r: &Repo, run_id: &str, reason: &str) {
    let v = r.lx(&["explain-halt", "--run-id", run_id]).expect(0, None);
    assert_eq!(v["halt_reason"], reason, "{v}");
    assert_eq!(v["derived_reason"], reason, "{v}");
    assert_eq!(v["rederived"], true, "{v}");
}

#[test]
fn a_rejecting_judge_halts_reviewer_rejected_with_its_reasons_in_the_receipt() {
    let r = tap_repo(2);
    let st = Counter::new();
    let j = judge(
        &st,
        r#"{"verdict":"reject","reasons":["touches unrelated files"],"evidence":["check.sh"]}"#,
    );
    let out = r.lx_tap(
        PROGRESS_AGENT,
        &["--run-id", "jr", "--judge", &j, "--max-iterations", "5"],
    );
    let v = out.expect(16, Some("reviewer_rejected"));
    assert!(out.errors_text().contains("touches unrelated files"), "{v}");
    // The tree went green before the judge ran.
    assert_eq!(r.read("failing").trim(), "");
    let lines = receipt_of(&v);
    let judged = events(&lines, "judge_finished");
    assert_eq!(judged.len(), 1, "{lines:?}");
    assert!(judged[0]["output"]
        .as_str()
        .unwrap()
        .contains("touches unrelated files"));
    // What the judge read on stdin is what the receipt records.
    let seen: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(st.dir().join("input.json")).unwrap())
            .expect("the judge got JSON on stdin");
    assert_eq!(seen, judged[0]["input"]);
    // The diff is readable text (the snapshot store unsets `diff` for every path, so
    // without `--text` git showed each file as a `GIT binary patch`), and the paths
    // it touches are listed apart.
    let text = seen["diff"]["text"].as_str().unwrap();
    assert!(text.contains("\n-t1 t2\n"), "the changed line: {text}");
    assert!(!text.contains("GIT binary patch"), "{text}");
    assert_eq!(
        seen["diff"]["paths"],
        serde_json::json!(["failing"]),
        "{seen}"
    );
    assert_eq!(seen["check"]["failing"], serde_json::json!([]));
    rederives(&r, "jr", "reviewer_rejected");
    // The timeline shows the judge's verdict on the iteration it judged.
    let rep = r.lx(&["report", "--run-id", "jr"]).expect(0, None);
    let rows = rep["iterations"].as_array().unwrap();
    let judged: Vec<_> = rows.iter().filter(|r| r["judge"].is_object()).collect();
    assert_eq!(judged.len(), 1, "{rep}");
    assert_eq!(judged[0]["judge"]["verdict"], "reject", "{rep}");
    // Resumable only after a person acknowledges the rejection.
    let refused = r.lx(&["run", "--resume", "jr"]);
    assert_eq!(
        refused.code,
        11,
        "resume before an ack: {}",
        refused.errors_text()
    );
    assert!(
        refused.errors_text().contains("acknowledg"),
        "{}",
        refused.errors_text()
    );
    let halts = r.lx(&["halts", "--unacked", "--run", "jr"]).expect(0, None);
    let id = halts["halts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["halt_reason"] == "reviewer_rejected")
        .and_then(|h| h["id"].as_str())
        .expect("the rejection is an unacknowledged halt event")
        .to_string();
    r.lx(&["ack", &id, "--by", "alice", "--resolution", "resolved"])
        .expect(0, None);
    let resumed = r.lx(&["run", "--resume", "jr"]);
    assert_ne!(
        resumed.code,
        11,
        "resume after the ack: {}",
        resumed.errors_text()
    );
}

#[test]
fn a_judge_finding_reward_hacking_halts_13() {
    let r = tap_repo(2);
    let st = Counter::new();
    let j = judge(
        &st,
        r#"{"verdict":"reward_hacking","reasons":["special-cases t2"],"evidence":[]}"#,
    );
    let out = r.lx_tap(PROGRESS_AGENT, &["--run-id", "jh", "--judge", &j]);
    out.expect(13, Some("reward_hacking_detected"));
    rederives(&r, "jh", "reward_hacking_detected");
}

#[test]
fn a_judge_that_cannot_decide_never_approves() {
    for (i, answer) in [
        "not a verdict",
        r#"{"verdict":"escalate","reasons":["unsure"],"evidence":[]}"#,
    ]
    .iter()
    .enumerate()
    {
        let r = tap_repo(2);
        let st = Counter::new();
        let j = judge(&st, answer);
        let id = format!("je{i}");
        let out = r.lx_tap(PROGRESS_AGENT, &["--run-id", &id, "--judge", &j]);
        out.expect(16, Some("escalation_pending"));
        rederives(&r, &id, "escalation_pending");
    }
    // A judge that exits non-zero after printing approve is not approval either.
    let r = tap_repo(1);
    let out = r.lx_tap(
        PROGRESS_AGENT,
        &[
            "--judge",
            r#"cat >/dev/null; echo '{"verdict":"approve","reasons":[],"evidence":[]}'; exit 3"#,
        ],
    );
    let v = out.expect(16, Some("escalation_pending"));
    assert!(out.errors_text().contains("could not decide"), "{v}");
}

#[test]
fn an_approving_judge_converges_and_never_runs_on_red() {
    let r = tap_repo(2);
    let st = Counter::new();
    let j = judge(
        &st,
        r#"{"verdict":"approve","reasons":["fine"],"evidence":[]}"#,
    );
    let out = r.lx_tap(PROGRESS_AGENT, &["--judge", &j]);
    let v = out.expect(10, Some("success_condition_met"));
    let lines = receipt_of(&v);
    // Iterations 1 (red) and 2 (green): one judge run, on the green.
    let judged = events(&lines, "judge_finished");
    assert_eq!(judged.len(), 1);
    assert_eq!(judged[0]["iteration"], 2);
}

#[test]
fn the_judges_spend_is_metered_and_capped() {
    // Two tasks, each completed by a green iteration; the judge reports $0.40 per run
    // through the usage file, and its cap is $0.30: the second green cannot be judged.
    let r = tap_repo(1);
    r.write(
        "tasks.jsonl",
        "{\"id\":\"a\",\"title\":\"A\",\"status\":\"open\",\"blocked_by\":[]}\n{\"id\":\"b\",\"title\":\"B\",\"status\":\"open\",\"blocked_by\":[]}\n",
    )
    .commit("tasks");
    let j = r#"cat >/dev/null; echo '{"cost_usd":0.4}' >> "$LOOPEXEC_USAGE_FILE"; echo '{"verdict":"approve","reasons":[],"evidence":[]}'"#;
    let out = r.lx_tap(
        "echo > failing; echo $LOOPEXEC_TASK_ID >> worked",
        &[
            "--run-id",
            "jc",
            "--judge",
            j,
            "--judge-budget-usd",
            "0.3",
            "--tasks",
            "tasks.jsonl",
        ],
    );
    let v = out.expect(18, Some("budget_exceeded"));
    assert!(out.errors_text().contains("judge"), "{v}");
    let lines = receipt_of(&v);
    let judged = events(&lines, "judge_finished");
    assert_eq!(judged.len(), 1);
    assert_eq!(judged[0]["usage"]["cost_usd"], 0.4);
    rederives(&r, "jc", "budget_exceeded");
}

#[test]
fn tasks_run_in_order_and_all_blocked_is_no_actionable_tasks() {
    let r = tap_repo(1);
    r.write(
        "tasks.jsonl",
        "{\"id\":\"second\",\"title\":\"Print\",\"status\":\"open\",\"blocked_by\":[\"first\"]}\n{\"id\":\"first\",\"title\":\"Parse\",\"status\":\"open\",\"blocked_by\":[]}\n",
    )
    .commit("tasks");
    // Each iteration records the task it was given; a green completes it.
    let exec = r#"echo "$LOOPEXEC_TASK_ID $(jq -r .task.title "$LOOPEXEC_TASK_FILE" 2>/dev/null || echo -)" >> worked; echo > failing"#;
    let out = r.lx_tap(exec, &["--tasks", "tasks.jsonl", "--max-iterations", "5"]);
    let v = out.expect(10, Some("success_condition_met"));
    let worked = r.read("worked");
    let ids: Vec<&str> = worked
        .lines()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(ids, ["first", "second"], "{worked}\n{v}");

    // Mutually blocked: the agent never runs.
    let r = tap_repo(1);
    r.write(
        "tasks.jsonl",
        "{\"id\":\"alpha\",\"title\":\"A\",\"status\":\"open\",\"blocked_by\":[\"beta\"]}\n{\"id\":\"beta\",\"title\":\"B\",\"status\":\"open\",\"blocked_by\":[\"alpha\"]}\n",
    )
    .commit("tasks");
    let out = r.lx_tap("touch ran", &["--run-id", "tb", "--tasks", "tasks.jsonl"]);
    let v = out.expect(11, Some("no_actionable_tasks"));
    assert!(mentions(&v, "alpha") && mentions(&v, "beta"), "{v}");
    assert!(
        !r.path().join("ran").exists(),
        "the agent ran with nothing actionable"
    );
    rederives(&r, "tb", "no_actionable_tasks");
}

#[test]
fn an_objective_test_never_collected_is_objective_unverified() {
    let r = tap_repo(2);
    let out = r.lx_tap(": > failing", &["--run-id", "ob", "--objective", "t9"]);
    let v = out.expect(13, Some("objective_unverified"));
    assert!(out.errors_text().contains("t9"), "{v}");
    rederives(&r, "ob", "objective_unverified");
    // A glob that matches collected, passing tests is verified.
    let r = tap_repo(2);
    r.lx_tap(": > failing", &["--objective", "t*"])
        .expect(10, Some("success_condition_met"));
}

/// A check green at t0 that does not verify the objective is the task, not its
/// failure: the agent runs (a new user's run halted 13 at iteration 0, before it).
#[test]
fn a_green_baseline_without_the_objective_sets_the_agent_to_work() {
    let r = tap_repo(2);
    r.write("failing", "").commit("green already");
    let out = r.lx_tap("touch ran", &["--objective", "t9", "--max-iterations", "1"]);
    let v = out.expect(13, Some("objective_unverified"));
    assert_eq!(v["iteration"], 1, "{v}");
    assert!(r.path().join("ran").exists(), "the agent never ran");
}

#[test]
fn an_objective_test_that_runs_skipped_is_objective_unverified() {
    // The task is to add and pass t3; the agent fixes t2 and adds t3 as skipped.
    let r = Repo::new();
    r.write("fixed", "")
        .tap_check(
            r#"echo "TAP version 13"
if [ -s fixed ]; then echo "1..3"; echo "ok 1 - t1"; echo "ok 2 - t2"; echo "ok 3 - t3 # SKIP not yet"; exit 0; fi
echo "1..2"; echo "ok 1 - t1"; echo "not ok 2 - t2"; exit 1
"#,
        )
        .commit("fixture");
    let out = r.lx_tap("echo yes > fixed", &["--run-id", "sk", "--objective", "t3"]);
    let v = out.expect(13, Some("objective_unverified"));
    assert!(out.errors_text().contains("t3 skipped"), "{v}");
    rederives(&r, "sk", "objective_unverified");
}

#[test]
fn a_context_that_cannot_fit_is_context_budget_unsatisfiable() {
    let r = tap_repo(1);
    r.write("TASK.md", "Fix the failing test.\n")
        .write("big.txt", &"x".repeat(8_000))
        .write("loop.toml", "[models.windows]\ntiny-model = 1000\n")
        .commit("context");
    let out = r.lx_tap(
        "touch ran",
        &[
            "--run-id",
            "cx",
            "--task",
            "TASK.md",
            "--context-file",
            "big.txt",
            "--model",
            "tiny-model",
        ],
    );
    let v = out.expect(19, Some("context_budget_unsatisfiable"));
    assert!(out.errors_text().contains("big.txt"), "{v}");
    assert!(
        !r.path().join("ran").exists(),
        "the agent ran with a context that cannot fit"
    );
    rederives(&r, "cx", "context_budget_unsatisfiable");
    // build-context reports the same breakdown.
    let v = r
        .lx(&[
            "build-context",
            "--task",
            "TASK.md",
            "--files",
            "big.txt",
            "--model",
            "tiny-model",
        ])
        .expect(0, None);
    assert_eq!(v["fits"], false, "{v}");
    assert_eq!(v["report"]["window"], 1000, "{v}");
    assert_eq!(v["report"]["estimate"], "bytes/4", "{v}");
    // A task file that is not there is an error naming it, not a zero that fits.
    let missing = r.lx(&[
        "build-context",
        "--task",
        "NOSUCH.md",
        "--model",
        "tiny-model",
    ]);
    let v = missing.expect(1, None);
    assert_eq!(v["status"], "error", "{v}");
    assert!(
        missing.errors_text().contains("NOSUCH.md: not found"),
        "{v}"
    );
}

#[test]
fn the_example_scope_judge_approves_in_scope_and_rejects_outside() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/judges/scope_judge.py"
    );
    let judge = |allow: &str| format!("python3 '{script}' --allow '{allow}'");
    // The agent changes only `failing`.
    let r = tap_repo(2);
    r.lx_tap(PROGRESS_AGENT, &["--judge", &judge("failing")])
        .expect(10, Some("success_condition_met"));
    // The same work with a scope that excludes it.
    let r = tap_repo(2);
    let out = r.lx_tap(
        PROGRESS_AGENT,
        &["--run-id", "sc", "--judge", &judge("src/*")],
    );
    let v = out.expect(16, Some("reviewer_rejected"));
    assert!(
        out.errors_text()
            .contains("outside the declared scope: failing"),
        "{v}"
    );
    rederives(&r, "sc", "reviewer_rejected");
    // A name git quotes in the diff's headers (a tab) outside the scope: rejected
    // (a header regex over `a/… b/…` once skipped it and approved).
    let r = tap_repo(2);
    let agent = format!("{PROGRESS_AGENT}; echo x > \"$(printf 'release\\tprod.sh')\"");
    let out = r.lx_tap(&agent, &["--judge", &judge("failing")]);
    out.expect(16, Some("reviewer_rejected"));
    assert!(
        out.errors_text()
            .contains("outside the declared scope: release\tprod.sh"),
        "{}",
        out.errors_text()
    );
}

/// The example scope judge over inputs of its own: the path list when there is one,
/// else the diff's headers with git's C-quoted names unquoted; a header it cannot
/// split for certain, or a diff cut with no path list, is escalated, never approved.
#[test]
fn the_example_scope_judge_reads_quoted_names_and_fails_closed() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/judges/scope_judge.py"
    );
    let cases: &[(&str, serde_json::Value, &str)] = &[
        (
            "a listed path outside",
            serde_json::json!({"paths": ["src/a.py", "deploy/r\tp.sh"], "text": ""}),
            "reject",
        ),
        (
            "listed paths inside, whatever the text says",
            serde_json::json!({"paths": ["src/a.py"], "text": "diff --git a/x b/x\n"}),
            "approve",
        ),
        (
            "a quoted header outside",
            serde_json::json!({"text": "diff --git \"a/deploy/r\\tp.sh\" \"b/deploy/r\\tp.sh\"\nnew file mode 100644\n"}),
            "reject",
        ),
        (
            "an octal-quoted header inside",
            serde_json::json!({"text": "diff --git \"a/src/\\303\\244.py\" \"b/src/\\303\\244.py\"\n"}),
            "approve",
        ),
        (
            "a plain header with a space inside",
            serde_json::json!({"text": "diff --git a/src/a b.py b/src/a b.py\n"}),
            "approve",
        ),
        (
            "a rename out of the scope",
            serde_json::json!({"text": "diff --git a/src/x.py b/out/x.py\nrename from src/x.py\nrename to out/x.py\n"}),
            "reject",
        ),
        (
            "a header that splits two ways",
            serde_json::json!({"text": "diff --git a/src/x b/src/y b/z\n"}),
            "escalate",
        ),
        (
            "an unterminated quote",
            serde_json::json!({"text": "diff --git \"a/src/x \"b/src/x\n"}),
            "escalate",
        ),
        (
            "a diff cut at its bound, no path list",
            serde_json::json!({"text": "diff --git a/src/x b/src/x\n", "truncated": true}),
            "escalate",
        ),
        (
            "no diff",
            serde_json::json!({"error": "not a git repository"}),
            "escalate",
        ),
    ];
    for (what, diff, want) in cases {
        let input = serde_json::json!({"diff": diff}).to_string();
        let mut c = std::process::Command::new("python3");
        c.args([script, "--allow", "src/*"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = c.spawn().expect("python3");
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{what}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one verdict");
        assert_eq!(v["verdict"], *want, "{what}: {v}");
    }
}

/// An agent printing Claude Code stream-json whose CLI version is 2.1.14 for its first
/// two calls and 2.2.0 afterwards (same model), state kept in `c`.
fn upgrading_agent(c: &Counter) -> String {
    let s = c.shell();
    format!(
        "{PROGRESS_AGENT}\nn=$(cat {s}); echo $((n+1)) > {s}\nv=2.1.14; [ $n -ge 2 ] && v=2.2.0\nm=claude-sonnet-4-5-20250929\n{}",
        r#"echo '{"type":"system","subtype":"init","session_id":"s1","model":"'$m'","claude_code_version":"'$v'","tools":[]}'
echo '{"type":"assistant","message":{"id":"msg_'$n'","type":"message","role":"assistant","model":"'$m'","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":10,"output_tokens":5}},"session_id":"s1"}'
echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"session_id":"s1","total_cost_usd":0.01,"usage":{"input_tokens":10,"output_tokens":5}}'
"#
    )
}

#[test]
fn a_cli_upgrade_mid_run_is_drift_unless_allowed() {
    let c = Counter::new();
    let r = tap_repo(6);
    r.write("agent.sh", &upgrading_agent(&c)).commit("agent");
    let out = r.lx_tap(
        "bash agent.sh",
        &["--run-id", "up", "--max-iterations", "9"],
    );
    let v = out.expect(19, Some("model_drift_detected"));
    assert_eq!(v["iteration"], 3, "{v}");
    let changed = &v["detail"]["changed"];
    assert_eq!(changed[0]["field"], "cli_version", "{v}");
    assert_eq!(changed[0]["pinned"], "2.1.14", "{v}");
    assert_eq!(changed[0]["observed"], "2.2.0", "{v}");
    rederives(&r, "up", "model_drift_detected");

    let c = Counter::new();
    let r = tap_repo(6);
    r.write("agent.sh", &upgrading_agent(&c))
        .write("loop.toml", "[models]\nallow_cli_upgrade = true\n")
        .commit("agent");
    r.lx_tap("bash agent.sh", &["--max-iterations", "9"])
        .expect(10, Some("success_condition_met"));
}

#[test]
fn a_judge_that_hangs_is_ended_and_cannot_decide() {
    let _g = ProcGuard::new(&["sleep 4191"]);
    let r = tap_repo(1);
    let out = r.lx_tap(
        PROGRESS_AGENT,
        &[
            "--run-id",
            "jt",
            "--judge",
            "cat >/dev/null; sleep 4191",
            "--judge-timeout",
            "1s",
        ],
    );
    let v = out.expect(16, Some("escalation_pending"));
    assert!(out.errors_text().contains("timed out"), "{v}");
    assert_none_left("sleep 4191", "the hung judge");
    rederives(&r, "jt", "escalation_pending");
}

#[test]
fn judge_every_n_skips_intermediate_greens_but_never_the_last() {
    // Three tasks, each completed by one green iteration; --judge-every 2 judges the
    // second green (intermediate) and the third (the one that ends the run).
    let r = tap_repo(1);
    r.write("tasks.md", "- [ ] one\n- [ ] two\n- [ ] three\n")
        .commit("tasks");
    let j = r#"cat >/dev/null; echo '{"verdict":"approve","reasons":[],"evidence":[]}'"#;
    let out = r.lx_tap(
        "echo > failing",
        &[
            "--tasks",
            "tasks.md",
            "--judge",
            j,
            "--judge-every",
            "2",
            "--max-iterations",
            "5",
        ],
    );
    let v = out.expect(10, Some("success_condition_met"));
    let lines = receipt_of(&v);
    let judged: Vec<i64> = events(&lines, "judge_finished")
        .iter()
        .map(|j| j["iteration"].as_i64().unwrap())
        .collect();
    assert_eq!(judged, [2, 3], "{v}");
    assert_eq!(v["iteration"], 3, "{v}");
}

/// A `--task` file that is not there refuses the run before any step, naming it
/// (before: the run went on, converged, and recorded the name as if it were read).
#[test]
fn a_task_file_that_is_not_there_refuses_the_run() {
    let r = tap_repo(1);
    let out = r.lx_tap("touch ran", &["--task", "NOPE.md"]);
    let v = out.expect(20, Some("invariant_failed"));
    assert!(out.errors_text().contains("NOPE.md"), "{v}");
    assert!(!r.path().join("ran").exists(), "the agent ran");
}
