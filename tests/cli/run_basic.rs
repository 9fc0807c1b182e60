//! The basic loop contract: convergence, the cap, the baseline, failing steps,
//! preflight validation, run ids and the workdir lock.

use crate::support::*;
use std::time::Duration;

const COUNT_AGENT: &str = "n=$(cat count); echo $((n+1)) > count";

/// A repo with `count` at 0, run with [`COUNT_AGENT`] until `count` reaches `goal` or
/// `max_iterations` pass.
fn count_run(goal: &str, max_iterations: &str) -> (Repo, Out) {
    let r = Repo::with_file("count", "0\n");
    let check = format!(r#"test "$(cat count)" -ge {goal}"#);
    let out = r.lx(&[
        "run",
        "--exec",
        COUNT_AGENT,
        "--check",
        &check,
        "--max-iterations",
        max_iterations,
    ]);
    (r, out)
}

#[test]
fn converges_at_the_iteration_the_check_turns_green() {
    let (r, out) = count_run("3", "10");
    let v = out.expect(10, Some("success_condition_met"));
    assert_eq!(v["iteration"], 3, "{v}");
    assert_eq!(v["status"], "halted");
    assert!(v["errors"].as_array().unwrap().is_empty(), "{v}");
    assert_eq!(r.read("count").trim(), "3", "the agent ran exactly 3 times");
    // stderr carries progress only (one line per step and verdict), never an error.
    assert!(
        !out.stderr.contains("error"),
        "a computed halt writes no error to stderr: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains("iteration 3/10 · verdict green"),
        "progress names the verdicts: {}",
        out.stderr
    );
    let lines = receipt_of(&v);
    assert_eq!(lines[0]["event"], "run_started");
    let last = lines.last().unwrap();
    assert_eq!(last["event"], "halted");
    assert_eq!(last["halt_reason"], "success_condition_met");
    assert_eq!(events(&lines, "exec_finished").len(), 3);
}

#[test]
fn the_iteration_cap_halts_with_12() {
    let (r, out) = count_run("50", "2");
    let v = out.expect(12, Some("max_iterations_reached"));
    assert_eq!(v["iteration"], 2, "{v}");
    assert_eq!(r.read("count").trim(), "2");
    receipt_of(&v);
}

#[test]
fn a_green_baseline_halts_success_at_iteration_zero_without_running_the_agent() {
    let r = Repo::with_f();
    let out = r.lx(&["run", "--exec", "touch agent-ran", "--check", "true"]);
    let v = out.expect(10, Some("success_condition_met"));
    assert_eq!(v["iteration"], 0, "{v}");
    assert!(!r.path().join("agent-ran").exists(), "the agent ran");
    let lines = receipt_of(&v);
    assert!(events(&lines, "exec_finished").is_empty());
}

#[test]
fn a_failing_work_step_is_execution_failure_at_iteration_1() {
    let r = Repo::with_f();
    let out = r.lx(&[
        "run",
        "--exec",
        "echo boom >&2; exit 3",
        "--check",
        "false",
        "--max-iterations",
        "5",
    ]);
    let v = out.expect(40, Some("execution_failure"));
    assert_eq!(v["iteration"], 1, "{v}");
    let lines = receipt_of(&v);
    let ex = events(&lines, "exec_finished");
    assert_eq!(ex.len(), 1);
    assert_eq!(ex[0]["step"]["exit_code"], 3);
}

#[test]
fn a_missing_check_command_fails_early_and_is_named() {
    let r = Repo::with_f();
    let out = r.lx(&[
        "run",
        "--exec",
        "true",
        "--check",
        "./nope.sh",
        "--max-iterations",
        "8",
    ]);
    let v = out.expect(40, Some("execution_failure"));
    assert!(v["iteration"].as_u64().unwrap() <= 1, "{v}");
    assert!(
        out.errors_text().contains("nope.sh"),
        "errors[] does not name the missing check: {v}"
    );
}

/// loopexec's state directory inside the workdir (a run in `/tmp` with
/// `LOOPEXEC_STATE_DIR=/tmp/x/state`): refused before anything runs, naming both and
/// the fix. Before: every snapshot copied the state directory, and the run halted 13
/// with a message listing thousands of paths.
#[test]
fn a_state_directory_inside_the_workdir_is_refused() {
    let r = Repo::new();
    r.write("a.txt", "1\n").commit("x");
    let state = r.path().join("state");
    let out = lx_in(
        r.path(),
        &["run", "--exec", "true", "--check", "true"],
        &[("LOOPEXEC_STATE_DIR", state.to_str().unwrap())],
    );
    let v = out.expect(30, Some("workspace_invalid"));
    assert!(mentions(&v, "LOOPEXEC_STATE_DIR"), "{v}");
    assert!(!state.join("stores").exists(), "nothing was snapshotted");
}

#[test]
fn no_check_at_all_is_workspace_invalid() {
    let r = Repo::with_f();
    let out = r.lx(&["run", "--exec", "touch agent-ran"]);
    let v = out.expect(30, Some("workspace_invalid"));
    assert!(out.errors_text().contains("check"), "{v}");
    assert!(!r.path().join("agent-ran").exists());
}

#[test]
fn max_iterations_zero_is_a_usage_error_and_invariant_failed_in_loop_toml() {
    let r = Repo::with_f();
    let out = r.lx(&["run", "--check", "true", "--max-iterations", "0"]);
    let v = out.expect(2, None);
    assert!(out.errors_text().contains("--max-iterations"), "{v}");
    assert!(v.get("run_id").is_none(), "no run was started: {v}");
    r.write("loop.toml", "max_iterations = 0\n");
    let out = r.lx(&["run", "--check", "true"]);
    let v = out.expect(20, Some("invariant_failed"));
    assert!(out.errors_text().contains("max_iterations"), "{v}");
}

#[test]
fn a_malformed_loop_toml_is_invariant_failed_naming_the_file_and_field() {
    let r = Repo::with_f();
    // A syntax error: the file is named.
    r.write("loop.toml", "check = [\n");
    let out = r.lx(&["run", "--exec", "touch agent-ran"]);
    out.expect(20, Some("invariant_failed"));
    assert!(
        out.errors_text().contains("loop.toml"),
        "{}",
        out.errors_text()
    );
    // A wrongly typed field: the file and the field are named.
    r.write("loop.toml", "check = \"true\"\nmax_iterations = \"lots\"\n");
    let out = r.lx(&["run", "--exec", "touch agent-ran"]);
    out.expect(20, Some("invariant_failed"));
    let e = out.errors_text();
    assert!(
        e.contains("loop.toml") && e.contains("max_iterations"),
        "{e}"
    );
    assert!(!r.path().join("agent-ran").exists());
}

#[test]
fn an_unknown_flag_is_a_clap_usage_error() {
    let r = Repo::new();
    let out = r.lx(&["run", "--check", "true", "--frobnicate"]);
    assert_eq!(out.code, 2, "stderr: {}", out.stderr);
    assert!(out.stderr.contains("--frobnicate"), "{}", out.stderr);
    assert!(!r.path().join(".loopexec/runs").exists());
}

#[test]
fn run_ids_are_validated_and_echoed() {
    let r = Repo::with_f();
    // (`a..b`, `x.lock`, `y.`: no git ref can carry them, and a new user's `a..b`
    // ended its run `internal_error`)
    for bad in [
        "../x",
        "../../escaped",
        "a/b",
        ".hidden",
        "a..b",
        "x.lock",
        "y.",
    ] {
        let out = r.lx(&["run", "--run-id", bad, "--exec", "true", "--check", "true"]);
        let v = out.json();
        assert!(
            out.code != 0 && out.code != 10,
            "accepted run id {bad}: {v}"
        );
        assert_eq!(out.code, 2, "{v}");
        assert_eq!(v["status"], "usage_error", "{v}");
        assert!(
            out.errors_text().contains(bad),
            "error does not name {bad}: {v}"
        );
    }
    // Nothing next to the repo, nothing directly in .loopexec/ but the state files.
    let outside: Vec<_> = std::fs::read_dir(r.outside())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(outside, vec!["repo".to_string()], "wrote outside the repo");
    for f in files_under(r.path()) {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            !name.starts_with("x.") && !name.starts_with("escaped") && !name.starts_with("b."),
            "a refused run id left {}",
            f.display()
        );
    }
    let good = "nightly-2026.11.29_a";
    let out = r.lx(&["run", "--run-id", good, "--exec", "true", "--check", "true"]);
    let v = out.expect(10, Some("success_condition_met"));
    assert_eq!(v["run_id"], good);
    assert!(r.receipt(good).is_file());
    verify_receipt(&r.receipt(good));
}

#[test]
fn reusing_an_existing_run_id_is_refused_and_the_old_receipt_kept() {
    let r = Repo::with_f();
    r.lx(&["run", "--run-id", "once", "--check", "true"])
        .expect(10, None);
    let before = std::fs::read(r.receipt("once")).unwrap();
    let out = r.lx(&["run", "--run-id", "once", "--check", "false"]);
    let v = out.expect(20, Some("invariant_failed"));
    assert!(out.errors_text().contains("once"), "{v}");
    assert_eq!(
        std::fs::read(r.receipt("once")).unwrap(),
        before,
        "the first run's receipt was modified"
    );
}

#[test]
fn a_concurrent_second_run_is_refused_naming_the_first() {
    let r = Repo::with_f();
    let _g = ProcGuard::new(&["sleep 2.4171"]);
    // Wait until the first run is inside its exec step.
    let mut first = spawn_wedged(
        &r,
        Some("first"),
        "sleep 2.4171",
        "sleep 2.4171; touch done",
        "test -f done",
    );
    let out = r.lx(&[
        "run", "--run-id", "second", "--exec", "true", "--check", "true",
    ]);
    let v = out.expect(30, Some("workspace_invalid"));
    assert!(
        out.errors_text().contains("first"),
        "refusal does not name the run holding the workdir: {v}"
    );
    assert!(
        !r.receipt("second").exists(),
        "the refused run wrote a receipt"
    );
    let (status, stdout, _) = wait_with_output(first.child(), HANG_LIMIT);
    assert_eq!(code_of(status), 10, "the first run did not converge");
    let fv: serde_json::Value = serde_json::from_slice(&stdout).expect("first run JSON");
    assert_eq!(fv["halt_reason"], "success_condition_met");
    assert_eq!(fv["run_id"], "first");
}

#[test]
fn the_reserved_run_id_latest_is_refused() {
    let r = Repo::with_f();
    let out = r.lx(&["run", "--run-id", "latest", "--check", "true"]);
    if out.code == 10 {
        // Accepted: then it must stay addressable by its id.
        std::thread::sleep(Duration::from_millis(1100));
        r.lx(&["run", "--run-id", "newer", "--check", "true"])
            .expect(10, None);
        let v = r
            .lx(&["explain-halt", "--run-id", "latest"])
            .expect(0, None);
        assert_eq!(
            v["run_id"], "latest",
            "the run named `latest` is unreachable: {v}"
        );
    } else {
        // a flag's bad value: a usage error naming the flag, never a halt
        let v = out.expect(2, None);
        assert_eq!(v["status"], "usage_error", "{v}");
        assert!(mentions(&v, "--run-id"), "{v}");
        assert!(!r.receipt("latest").exists());
        let v = r
            .lx(&["run", "--run-id", "../x", "--check", "true"])
            .expect(2, None);
        assert!(v["run_id"].is_null(), "{v}");
    }
}

#[test]
fn without_json_a_halt_is_rendered_on_stdout_and_stderr_has_only_progress() {
    let r = Repo::with_file("count", "0\n");
    let mut cmd = std::process::Command::new(bin());
    cmd.arg("--workdir").arg(r.path()).args([
        "run",
        "--exec",
        COUNT_AGENT,
        "--check",
        r#"test "$(cat count)" -ge 1"#,
    ]);
    let out = run_cmd(cmd);
    assert_eq!(out.code, 10, "{}", out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("success_condition_met"), "{text}");
    assert!(
        text.contains("explain-halt"),
        "no pointer to explain-halt: {text}"
    );
    assert!(
        serde_json::from_str::<serde_json::Value>(&text).is_err(),
        "human output is JSON"
    );
    // A non-TTY stderr (CI) gets progress lines, never an error.
    assert!(
        out.stderr.lines().all(|l| l.starts_with("loopexec: [")),
        "stderr holds something other than progress: {}",
        out.stderr
    );
    assert!(!out.stderr.contains("error"), "{}", out.stderr);
}

#[test]
fn loop_toml_supplies_the_policy_and_flags_override_it() {
    let r = Repo::new();
    r.write("count", "0\n")
        .write(
            "loop.toml",
            "exec = \"n=$(cat count); echo $((n+1)) > count\"\n\
             check = 'test \"$(cat count)\" -ge 50'\n\
             max_iterations = 2\n",
        )
        .commit("fixture");
    let v = r.lx(&["run"]).expect(12, Some("max_iterations_reached"));
    assert_eq!(v["iteration"], 2, "{v}");
    let v = r
        .lx(&["run", "--max-iterations", "1"])
        .expect(12, Some("max_iterations_reached"));
    assert_eq!(
        v["iteration"], 1,
        "the flag did not override loop.toml: {v}"
    );
    // An explicit --config file is read instead of ./loop.toml. The runs before left
    // the tree red and unjudged, so this one is judged from their t0 although its
    // check differs (the agent could have written the file naming it): its
    // iteration 0 is no green, and the exec runs once before the green.
    let other = r.outside().join("other.toml");
    std::fs::write(&other, "check = \"true\"\n").unwrap();
    let v = r
        .lx(&["run", "--config", other.to_str().unwrap()])
        .expect(10, Some("success_condition_met"));
    assert_eq!(v["iteration"], 1, "{v}");
    let lines = receipt_of(&v);
    let started = events(&lines, "run_started")[0];
    assert!(
        started["inherits_unjudged"]["run_id"].is_string(),
        "{started}"
    );
}

#[test]
fn a_blocked_path_from_the_flag_or_loop_toml_halts_13() {
    let r = tap_repo(3);
    r.write("docs/spec.md", "spec\n")
        .write("vendor/lib.txt", "v1\n")
        .write("loop.toml", "[guards]\nblocked_paths = [\"vendor/**\"]\n")
        .commit("more");
    let exec = format!("echo edit >> docs/spec.md; {PROGRESS_AGENT}");
    let v = r
        .lx_tap(&exec, &["--blocked-path", "docs/**"])
        .expect(13, Some("blocked_path_modified"));
    assert_eq!(v["iteration"], 1, "{v}");
    assert!(mentions(&v, "docs/spec.md"), "{v}");
    r.git(&["checkout", "--", "."]);
    let exec = format!("echo edit >> vendor/lib.txt; {PROGRESS_AGENT}");
    // The first integrity halt (high severity) blocks new runs until a person acks
    // it; these reruns are deliberate.
    let v = r
        .lx_tap(&exec, &["--ack-required=false"])
        .expect(13, Some("blocked_path_modified"));
    assert!(mentions(&v, "vendor/lib.txt"), "{v}");
    // Without blocked edits the same agent converges.
    r.git(&["checkout", "--", "."]);
    r.lx_tap(PROGRESS_AGENT, &["--ack-required=false"])
        .expect(10, Some("success_condition_met"));
}

#[test]
fn a_custom_success_exit_code_counts_as_green() {
    let r = Repo::with_f();
    let out = r.lx(&[
        "run",
        "--exec",
        "touch done",
        "--check",
        "test -f done && exit 3; exit 0",
        "--success-exit-code",
        "3",
        "--max-iterations",
        "5",
    ]);
    let v = out.expect(10, Some("success_condition_met"));
    assert_eq!(v["iteration"], 1, "{v}");
}

/// A new user's run without `--exec` (`init` leaves `exec` commented out) re-checked
/// the same red tree until `same_failure_repeated`, "the agent did not change the
/// tree". Now a red check with nothing to run between checks halts
/// `workspace_invalid` (30) at once, naming `--exec`; a green baseline without an exec
/// still converges.
#[test]
fn a_red_check_with_no_exec_to_change_the_tree_is_workspace_invalid() {
    let r = Repo::with_f();
    let out = r.lx(&["run", "--check", "false"]);
    let v = out.expect(30, Some("workspace_invalid"));
    assert!(mentions(&v, "--exec"), "{v}");
    let lines = receipt_of(&v);
    assert_eq!(events(&lines, "check_finished").len(), 1, "one check only");
    assert!(events(&lines, "exec_finished").is_empty());
    r.lx(&["run", "--check", "true"])
        .expect(10, Some("success_condition_met"));
}

/// A new user's `--test-format tap` over output in another format read no test at
/// the baseline, and the honest green that followed halted 13 as a runner cut short,
/// a high event that blocked every later run. Now the baseline says what the output
/// reads as and the run halts `workspace_invalid` (30) before any exec.
#[test]
fn a_fixed_test_format_the_baseline_output_is_not_in_is_workspace_invalid() {
    let r = Repo::with_f();
    let check = "printf '\\nrunning 1 test\\ntest a ... FAILED\\n\\nfailures:\\n    a\\n\\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\\n'; test -f done";
    let v = r
        .lx(&[
            "run",
            "--exec",
            "touch done",
            "--check",
            check,
            "--test-format",
            "tap",
        ])
        .expect(30, Some("workspace_invalid"));
    assert!(mentions(&v, "--test-format libtest"), "{v}");
    assert!(!r.path().join("done").exists(), "the exec ran");
    // a new run is not blocked by it: the event is no high one
    let halts = r.lx(&["halts", "--unacked"]).expect(0, None);
    assert!(!mentions(&halts, "\"high\""), "{halts}");
    let out = r.outside().join("lib.txt");
    std::fs::write(
        &out,
        "\nrunning 1 test\ntest a ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n",
    )
    .unwrap();
    let v = r
        .lx(&["parse", "--format", "tap", out.to_str().unwrap()])
        .expect(0, None);
    assert!(mentions(&v, "format mismatch"), "{v}");
}
