//! Every command's `--json` shape, explain-halt agreeing with the run, and `check`
//! finding a tampered receipt.

use crate::support::*;
use serde_json::Value;

/// A repo with one finished run `r1` (converged at iteration 2).
fn repo_with_run() -> (Repo, Value) {
    let r = Repo::with_file("count", "0\n");
    let v = r
        .lx(&[
            "run",
            "--run-id",
            "r1",
            "--exec",
            "n=$(cat count); echo $((n+1)) > count",
            "--check",
            r#"test "$(cat count)" -ge 2"#,
        ])
        .expect(10, Some("success_condition_met"));
    (r, v)
}

#[test]
fn every_command_prints_exactly_one_json_object() {
    let (r, run) = repo_with_run();
    assert_eq!(run["run_id"], "r1");
    assert_eq!(run["iteration"], 2);

    let v = r.lx(&["init"]).expect(0, None);
    assert!(
        r.path().join("loop.toml").is_file(),
        "init wrote no loop.toml: {v}"
    );
    // init again without --force does not overwrite.
    r.write("loop.toml", "# mine\n");
    r.lx(&["init"]).json();
    assert_eq!(r.read("loop.toml"), "# mine\n", "init overwrote loop.toml");
    std::fs::remove_file(r.path().join("loop.toml")).unwrap();

    let v = r.lx(&["status"]).expect(0, None);
    assert_eq!(v["run_id"], "r1");
    assert_eq!(v["halt_reason"], "success_condition_met");
    assert_eq!(v["alive"], false);

    let v = r.lx(&["explain-halt", "--run-id", "r1"]).expect(0, None);
    assert_eq!(v["halt_reason"], "success_condition_met");

    let v = r.lx(&["report", "--run-id", "r1"]).expect(0, None);
    assert_eq!(v["run_id"], "r1");
    assert!(
        v["iterations"].as_array().is_some_and(|a| a.len() >= 3),
        "{v}"
    );

    let tap = r.outside().join("out.tap");
    std::fs::write(&tap, "TAP version 13\n1..2\nok 1 - a\nnot ok 2 - b\n").unwrap();
    let v = r
        .lx(&[
            "parse",
            "--format",
            "tap",
            "--stdout",
            tap.to_str().unwrap(),
            "--exit-code",
            "1",
        ])
        .expect(0, None);
    assert_eq!(v["failing"], serde_json::json!(["b"]), "{v}");

    let v = r
        .lx(&["ack", "--run-id", "r1", "--reviewer", "alice"])
        .expect(0, None);
    assert_eq!(v["reviewer"], "alice");

    let v = r.lx(&["watch", "--run-id", "r1"]).expect(0, None);
    assert_eq!(v["run_id"], "r1");
    assert_eq!(v["status"], "finished");

    let v = r.lx(&["inspect-cost", "--run-id", "r1"]).expect(0, None);
    assert!(v["anomalies"].is_array(), "{v}");
    let ledger = r.outside().join("costs.txt");
    std::fs::write(&ledger, "0.10\n0.20\n").unwrap();
    let v = r
        .lx(&["inspect-cost", "--ledger", ledger.to_str().unwrap()])
        .expect(0, None);
    let total = v["total_usd"].as_f64().unwrap();
    assert!((total - 0.30).abs() < 1e-9, "{v}");

    let v = r.lx(&["check"]).expect(0, None);
    assert!(v["problems"].as_array().is_some_and(Vec::is_empty), "{v}");

    // Errors are JSON too: an unknown run.
    let out = r.lx(&["status", "--run-id", "nosuchrun"]);
    let v = out.json();
    assert_ne!(out.code, 0);
    assert_eq!(v["status"], "error");
    assert!(out.errors_text().contains("nosuchrun"), "{v}");
}

#[test]
fn probe_check_and_doctor_print_exactly_one_json_object() {
    let r = Repo::with_f();
    let out = r.lx(&[
        "probe-check",
        "--check",
        "true",
        "--runs",
        "3",
        "--reruns",
        "1",
    ]);
    let v = out.expect(0, None);
    assert_eq!(v["flips"], 0, "{v}");
    let out = r.lx(&["doctor", "--check", "true", "--probe-runs", "2"]);
    let v = out.json();
    assert!(v["checks"].is_array(), "{v}");
}

#[test]
fn every_subcommand_has_working_help() {
    for sub in [
        "init",
        "run",
        "status",
        "explain-halt",
        "report",
        "parse",
        "ack",
        "watch",
        "inspect-cost",
        "check",
        "probe-check",
        "doctor",
    ] {
        let mut cmd = std::process::Command::new(bin());
        cmd.args([sub, "--help"]);
        let out = run_cmd(cmd);
        assert_eq!(out.code, 0, "`{sub} --help` failed: {}", out.stderr);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Usage:"),
            "`{sub} --help` printed no usage"
        );
    }
}

#[test]
fn explain_halt_rederives_the_runs_reason() {
    let r = Repo::with_file("count", "0\n");
    let run = r
        .lx(&[
            "run",
            "--exec",
            "n=$(cat count); echo $((n+1)) > count",
            "--check",
            r#"test "$(cat count)" -ge 50"#,
            "--max-iterations",
            "2",
        ])
        .expect(12, Some("max_iterations_reached"));
    // Latest run by default.
    let v = r.lx(&["explain-halt"]).expect(0, None);
    assert_eq!(v["run_id"], run["run_id"]);
    assert_eq!(v["halt_reason"], run["halt_reason"]);
    assert_eq!(v["iteration"], run["iteration"]);
    assert_eq!(v["rederived"], true, "{v}");
    assert_eq!(v["derived_reason"], "max_iterations_reached", "{v}");
    // The run named as `replay RUN` names it, and as --run-id, agree.
    let id = run["run_id"].as_str().unwrap_or_default();
    for args in [vec!["explain-halt", id], vec!["status", id]] {
        let by_arg = r.lx(&args).expect(0, None);
        assert_eq!(by_arg["run"], run["run"], "{args:?}: {by_arg}");
    }
    // The human rendering works too.
    let mut cmd = std::process::Command::new(bin());
    cmd.arg("--workdir").arg(r.path()).arg("explain-halt");
    let human = run_cmd(cmd);
    assert_eq!(human.code, 0, "{}", human.stderr);
    assert!(String::from_utf8_lossy(&human.stdout).contains("max_iterations_reached"));
}

#[test]
fn a_tampered_receipt_fails_check_naming_the_file() {
    let (r, _) = repo_with_run();
    r.lx(&["check"]).expect(0, None);
    let path = r.receipt("r1");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    // Rewrite one recorded fact (a check's exit code) in the middle of the chain.
    let idx = lines
        .iter()
        .position(|l| l.contains("\"check_finished\""))
        .expect("a check_finished line");
    let mut v: Value = serde_json::from_str(&lines[idx]).unwrap();
    let old = v["step"]["exit_code"].as_i64().unwrap();
    v["step"]["exit_code"] = Value::from(if old == 0 { 1 } else { 0 });
    lines[idx] = v.to_string();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let out = r.lx(&["check"]);
    let v = out.expect(20, None);
    assert!(
        out.errors_text().contains("r1.jsonl"),
        "check does not name the tampered receipt: {v}"
    );
}

/// Fifth review: every row of the run deleted from the ledger (by the agent, during
/// the run) left `check` saying "verified".
#[test]
fn a_run_row_deleted_from_the_ledger_fails_check() {
    let (r, _) = repo_with_run();
    r.lx(&["check"]).expect(0, None);
    let db = rusqlite::Connection::open(r.path().join(".loopexec/ledger.sqlite")).unwrap();
    db.execute("DELETE FROM runs", []).unwrap();
    drop(db);
    let out = r.lx(&["check"]);
    let v = out.expect(20, None);
    let e = out.errors_text();
    assert!(
        e.contains("r1.jsonl") && e.contains("no row for this run"),
        "{v}"
    );
}

#[test]
fn a_torn_last_receipt_line_is_reported_by_check_and_does_not_block_new_runs() {
    let (r, _) = repo_with_run();
    let path = r.receipt("r1");
    let data = std::fs::read(&path).unwrap();
    std::fs::write(&path, &data[..data.len() - 40]).unwrap();
    let out = r.lx(&["check"]);
    let v = out.expect(20, None);
    let e = out.errors_text();
    assert!(e.contains("r1.jsonl") && e.contains("torn"), "{v}");
    r.git(&["checkout", "--", "."]);
    r.lx(&["run", "--run-id", "r2", "--check", "true"])
        .expect(10, Some("success_condition_met"));
}

/// Marks the ledger as written by a newer loopexec.
fn newer_ledger() -> Repo {
    let (r, _) = repo_with_run();
    let db = rusqlite::Connection::open(r.path().join(".loopexec/ledger.sqlite")).unwrap();
    db.pragma_update(None, "user_version", 999).unwrap();
    drop(db);
    r
}

#[test]
fn a_ledger_from_a_newer_loopexec_is_refused() {
    let r = newer_ledger();
    let out = r.lx(&["check"]);
    let v = out.expect(20, Some("invariant_failed"));
    assert!(out.errors_text().contains("999"), "{v}");
    let out = r.lx(&["run", "--run-id", "r2", "--check", "true"]);
    let v = out.json();
    assert!(
        out.code != 0 && out.code != 10,
        "ran on a newer ledger: {v}"
    );
    assert!(out.errors_text().contains("999"), "{v}");
    let db = rusqlite::Connection::open(r.path().join(".loopexec/ledger.sqlite")).unwrap();
    let ver: i64 = db
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap();
    assert_eq!(ver, 999, "the newer ledger was rewritten");
}

#[test]
fn a_newer_ledger_makes_run_halt_invariant_failed_like_check() {
    let r = newer_ledger();
    r.lx(&["run", "--run-id", "r2", "--check", "true"])
        .expect(20, Some("invariant_failed"));
}
