//! People in control: holds (stop, suspend, latch), halt events and their
//! acknowledgement (a person's, optionally SSH-signed), and the action gate (hook
//! protocols, unattended declines, attended confirmation, the audit log, turn caps).

use crate::support::*;
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn hold_id(out: &Out) -> String {
    let v = out.expect(0, None);
    v["hold_id"].as_str().expect("hold_id").to_string()
}

/// Before: the only way to stop a run was a signal, which named no holder and no reason.
#[test]
fn a_workspace_hold_from_another_process_stops_the_running_step_within_a_poll() {
    let _g = ProcGuard::new(&["sleep 4501"]);
    let r = Repo::with_f();
    let mut run = ChildGuard(Some(r.spawn(&[
        "run",
        "--run-id",
        "held",
        "--exec",
        "sleep 4501; touch done",
        "--check",
        "test -f done",
        "--kill-grace",
        "1s",
    ])));
    assert!(wait_until(Duration::from_secs(30), || child_running(
        "sleep 4501"
    )));
    let taken = Instant::now();
    let h = hold_id(&r.lx(&[
        "hold",
        "--workspace",
        "--reason",
        "maintenance window",
        "--by",
        "alice",
    ]));
    let out = finish(&mut run, Duration::from_secs(30));
    assert!(
        taken.elapsed() < Duration::from_secs(5),
        "the step outlived the hold by {:?}",
        taken.elapsed()
    );
    let v = out.expect(11, Some("human_required"));
    assert!(
        mentions(&v, "alice") && mentions(&v, "maintenance window") && mentions(&v, &h),
        "{v}"
    );
    assert_none_left("sleep 4501", "a stopped step");
    let lines = verify_receipt(&r.receipt("held"));
    let held = events(&lines, "held");
    assert_eq!(held.len(), 1, "one held event");
    assert_eq!(held[0]["verdict"], "stopped");
    assert_eq!(held[0]["phase"], "exec");
    assert_eq!(held[0]["latched"], true);
    // explain-halt re-derives the stop from the receipt.
    let ex = r.lx(&["explain-halt", "--run-id", "held"]).expect(0, None);
    assert_eq!(ex["rederived"], true, "{ex}");
}

/// Before: there was no way to pause a run; a person could only kill it.
#[test]
fn a_suspension_parks_at_a_step_boundary_and_resumes_by_itself_when_released() {
    let r = tap_repo(3);
    let exec = format!("sleep 1; {PROGRESS_AGENT}");
    let mut run = ChildGuard(Some(r.spawn(&[
        "run",
        "--run-id",
        "susp",
        "--exec",
        &exec,
        "--check",
        "sh check.sh",
        "--test-format",
        "tap",
    ])));
    assert!(wait_until(Duration::from_secs(30), || {
        std::fs::read_to_string(r.receipt("susp")).is_ok_and(|t| t.contains("iteration_started"))
    }));
    let h = hold_id(&r.lx(&[
        "hold",
        "--run",
        "susp",
        "--suspend",
        "--reason",
        "look",
        "--by",
        "alice",
    ]));
    std::thread::sleep(Duration::from_millis(2500));
    let parked = r.read("failing");
    std::thread::sleep(Duration::from_millis(2000));
    assert!(
        run.child().try_wait().unwrap().is_none(),
        "the run ended while suspended"
    );
    assert_eq!(
        r.read("failing"),
        parked,
        "the agent worked while suspended"
    );
    let st = r.lx(&["status", "--run-id", "susp"]).expect(0, None);
    assert!(mentions(&st, "suspended"), "{st}");
    r.lx(&["release", &h, "--by", "alice"]).expect(0, None);
    let out = finish(&mut run, Duration::from_secs(60));
    out.expect(10, Some("success_condition_met"));
    let lines = verify_receipt(&r.receipt("susp"));
    let held = events(&lines, "held");
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0]["verdict"], "suspended");
    assert_eq!(
        held[0]["phase"], "before_exec",
        "a suspension parks before an exec"
    );
    assert_eq!(events(&lines, "unheld").len(), 1);
    // A suspension never latches.
    let halts = r.lx(&["halts", "--run", "susp"]).expect(0, None);
    assert!(!mentions(&halts, "human_required"), "{halts}");
}

/// Before: `run --resume` continued any halted run, whoever had stopped it and why.
#[test]
fn a_latched_run_refuses_resume_until_a_person_acks_its_halt_event() {
    let _g = ProcGuard::new(&["sleep 4502"]);
    let r = Repo::with_f();
    let state = tempfile::tempdir().unwrap();
    let st = state.path().display().to_string();
    let agent = format!(
        "echo \"ran:${{LOOPEXEC_RESUME_REASON:-}}\" >> {st}/runs; [ -e {st}/slept ] || {{ touch {st}/slept; sleep 4502; }}; touch done"
    );
    let mut run = ChildGuard(Some(r.spawn(&[
        "run",
        "--run-id",
        "latch",
        "--exec",
        &agent,
        "--check",
        "test -f done",
    ])));
    assert!(wait_until(Duration::from_secs(30), || child_running(
        "sleep 4502"
    )));
    let h = hold_id(&r.lx(&["hold", "--reason", "disk swap", "--by", "alice"]));
    finish(&mut run, Duration::from_secs(30)).expect(11, Some("human_required"));
    r.lx(&["release", &h, "--by", "alice"]).expect(0, None);
    let refused = r
        .lx(&["run", "--resume", "latch"])
        .expect(11, Some("human_required"));
    assert!(mentions(&refused, "latched"), "{refused}");
    let runs = || std::fs::read_to_string(state.path().join("runs")).unwrap_or_default();
    assert_eq!(runs().lines().count(), 1, "the agent ran while latched");
    // An ack from inside a step's environment does not count.
    let halts = r
        .lx(&["halts", "--unacked", "--run", "latch"])
        .expect(0, None);
    let id = halts["halts"][0]["id"].as_str().unwrap().to_string();
    let status = r.lx(&["status", "latch"]).expect(0, None);
    assert!(
        mentions(
            &status["next_steps"],
            &format!("loopexec ack {id} --by NAME")
        ) && mentions(&status["next_steps"], "loopexec run --resume latch"),
        "{status}"
    );
    r.lx_env(
        &["ack", &id, "--by", "bot", "--resolution", "resolved"],
        &[("LOOPEXEC_RUN_ID", "latch")],
    )
    .expect(11, None);
    r.lx(&["run", "--resume", "latch"])
        .expect(11, Some("human_required"));
    r.lx(&["ack", &id, "--by", "alice", "--resolution", "resolved"])
        .expect(0, None);
    r.lx(&["run", "--resume", "latch"])
        .expect(10, Some("success_condition_met"));
    let last = runs().lines().last().unwrap_or_default().to_string();
    assert!(
        last.starts_with("ran:")
            && last.contains("disk swap")
            && last.contains("released by alice"),
        "the resumed agent's marker: {last}"
    );
}

/// A new user's review: a run halted 13 (an integrity halt is a high event) was
/// resumed and its agent ran again at once, while a new run in the same workspace was
/// refused until a person acknowledged the event. Now the resume is refused too
/// (exit 11, naming the event), runs no agent, and goes on once the event is acked.
#[test]
fn a_resume_after_an_integrity_halt_waits_for_the_ack_a_new_run_waits_for() {
    let r = tap_repo(3);
    r.write("docs/spec.md", "spec\n").commit("docs");
    let state = tempfile::tempdir().unwrap();
    let ran = state.path().join("ran");
    let exec = format!(
        "echo x >> '{}'; [ -e .edited ] || {{ echo edit >> docs/spec.md; touch .edited; }}; {PROGRESS_AGENT}",
        ran.display()
    );
    r.lx_tap(&exec, &["--run-id", "cheat", "--blocked-path", "docs/**"])
        .expect(13, Some("blocked_path_modified"));
    let runs = || {
        std::fs::read_to_string(&ran)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let before = runs();
    let refused = r
        .lx(&["run", "--resume", "cheat"])
        .expect(11, Some("human_required"));
    let halts = r
        .lx(&["halts", "--unacked", "--run", "cheat"])
        .expect(0, None);
    let id = halts["halts"][0]["id"].as_str().unwrap().to_string();
    assert!(mentions(&refused, &id), "{refused}");
    assert_eq!(runs(), before, "the agent ran before the ack");
    r.lx(&["ack", &id, "--by", "alice", "--resolution", "resolved"])
        .expect(0, None);
    let resumed = r.lx(&["run", "--resume", "cheat"]);
    assert_ne!(
        resumed.code,
        11,
        "{}",
        String::from_utf8_lossy(&resumed.stdout)
    );
    assert!(runs() > before, "the resumed run ran no agent");
}

/// A new user's review: with the stop hold still in force, each `run --resume` after
/// the ack stopped again before its exec, added an event and used an iteration, and
/// two were enough to end the run `max_iterations_reached`. Now the resume is refused
/// up front naming the hold and its release, records nothing, and after the release the
/// run resumes and converges.
#[test]
fn a_resume_under_a_stop_hold_still_in_force_is_refused_and_uses_no_iteration() {
    let _g = ProcGuard::new(&["sleep 4503"]);
    let r = Repo::with_f();
    let state = tempfile::tempdir().unwrap();
    let st = state.path().display().to_string();
    let agent = format!("[ -e {st}/slept ] || {{ touch {st}/slept; sleep 4503; }}; touch done");
    let mut run = ChildGuard(Some(r.spawn(&[
        "run",
        "--run-id",
        "inforce",
        "--exec",
        &agent,
        "--check",
        "test -f done",
        "--max-iterations",
        "2",
    ])));
    assert!(wait_until(Duration::from_secs(30), || child_running(
        "sleep 4503"
    )));
    let h = hold_id(&r.lx(&["hold", "--reason", "incident", "--by", "alice"]));
    finish(&mut run, Duration::from_secs(30)).expect(11, Some("human_required"));
    let halts = r
        .lx(&["halts", "--unacked", "--run", "inforce"])
        .expect(0, None);
    let id = halts["halts"][0]["id"].as_str().unwrap().to_string();
    r.lx(&["ack", &id, "--by", "alice", "--resolution", "resolved"])
        .expect(0, None);
    let before = std::fs::read(r.receipt("inforce")).unwrap();
    for _ in 0..3 {
        let v = r
            .lx(&["run", "--resume", "inforce"])
            .expect(11, Some("human_required"));
        assert!(mentions(&v, &h) && mentions(&v, "loopexec release"), "{v}");
    }
    assert_eq!(
        std::fs::read(r.receipt("inforce")).unwrap(),
        before,
        "a refused resume wrote the receipt"
    );
    let unacked = r.lx(&["halts", "--unacked"]).expect(0, None);
    assert_eq!(
        unacked["halts"].as_array().map_or(0, Vec::len),
        0,
        "{unacked}"
    );
    r.lx(&["release", &h, "--by", "alice"]).expect(0, None);
    r.lx(&["run", "--resume", "inforce"])
        .expect(10, Some("success_condition_met"));
}

/// A new user's review: `hold` in a subdirectory of the project (or any directory
/// that is no workspace) said "hold taken" and stopped nothing; the run in the project
/// converged. Now it is refused naming the workspace above, and nothing is created.
#[test]
fn a_hold_where_no_workspace_is_is_refused_naming_the_one_above() {
    let r = Repo::with_f();
    r.lx(&["run", "--check", "true"])
        .expect(10, Some("success_condition_met"));
    let sub = r.path().join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let out = lx_in(&sub, &["hold", "--reason", "x", "--by", "alice"], &[]);
    let v = out.expect(1, None);
    let root = std::fs::canonicalize(r.path()).unwrap();
    assert!(mentions(&v, &root.display().to_string()), "{v}");
    assert!(!sub.join(".loopexec").exists(), "a workspace was made");
}

/// A new user's review: `gc --keep 1` removed a run a hold named (its receipt and
/// attestation gone, the hold still listed for a run `explain-halt` could not find).
/// Now a run a person must still act on is kept and named; after the release it goes.
#[test]
fn gc_keeps_a_run_a_hold_names_until_it_is_released() {
    let r = Repo::with_f();
    for id in ["older", "newer"] {
        r.lx(&["run", "--run-id", id, "--check", "true"])
            .expect(10, Some("success_condition_met"));
    }
    let h = hold_id(&r.lx(&[
        "hold", "--run", "older", "--reason", "audit", "--by", "alice",
    ]));
    let gc = r.lx(&["gc", "--keep", "0"]).expect(0, None);
    assert!(
        gc["kept"].as_array().unwrap().iter().any(|k| k == "older"),
        "{gc}"
    );
    assert_eq!(gc["awaiting_person"], serde_json::json!(["older"]), "{gc}");
    assert!(
        r.receipt("older").is_file(),
        "the held run's receipt was removed"
    );
    r.lx(&["explain-halt", "--run-id", "older"]).expect(0, None);
    r.lx(&["release", &h, "--by", "alice"]).expect(0, None);
    let gc = r.lx(&["gc", "--keep", "0"]).expect(0, None);
    assert!(
        gc["removed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k == "older"),
        "{gc}"
    );
}

/// Before: `ack` resolved every halt of a run at once, and a second ack overwrote the first.
#[test]
fn halt_events_are_acknowledged_one_at_a_time_and_only_once() {
    let r = Repo::with_file("count", "0\n");
    let exec = "n=$(cat count); echo $((n+1)) > count";
    for id in ["c1", "c2"] {
        r.lx(&[
            "run",
            "--run-id",
            id,
            "--exec",
            exec,
            "--check",
            "false",
            "--max-iterations",
            "1",
        ])
        .expect(12, Some("max_iterations_reached"));
    }
    let all = r.lx(&["halts", "--unacked"]).expect(0, None);
    let list = all["halts"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{all}");
    assert_eq!(list[0]["severity"], "medium");
    let c1 = list.iter().find(|e| e["run_id"] == "c1").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    r.lx(&[
        "ack",
        &c1,
        "--by",
        "alice",
        "--resolution",
        "escalated",
        "--notes",
        "paging",
    ])
    .expect(0, None);
    let again = r.lx(&["ack", &c1, "--by", "bob", "--resolution", "resolved"]);
    assert_eq!(again.code, 20);
    assert!(
        again.errors_text().contains("alice"),
        "{}",
        again.errors_text()
    );
    let left = r.lx(&["halts", "--unacked"]).expect(0, None);
    assert_eq!(left["halts"].as_array().unwrap().len(), 1);
    assert_eq!(left["halts"][0]["run_id"], "c2");
    let c1v = r.lx(&["halts", "--run", "c1"]).expect(0, None);
    assert_eq!(c1v["halts"][0]["resolution"], "escalated");
    assert_eq!(c1v["halts"][0]["acknowledged_by"], "alice");
    assert!(c1v["halts"][0]["acknowledged_how"]["method"].is_string());
}

/// Before: a new run started regardless of an integrity halt nobody had looked at.
#[test]
fn an_unacknowledged_high_severity_event_blocks_a_new_run_until_acked() {
    let r = Repo::with_f();
    r.write(
        "loop.toml",
        "[halt_events.max_iterations_reached]\nseverity = \"high\"\n",
    )
    .commit("policy");
    r.run_red(1).expect(12, Some("max_iterations_reached"));
    let blocked = r.run_red(1).expect(11, Some("human_required"));
    let halts = r
        .lx(&["halts", "--unacked", "--severity", "high"])
        .expect(0, None);
    let id = halts["halts"][0]["id"].as_str().unwrap().to_string();
    assert!(
        mentions(&blocked, &id),
        "the refusal names the event: {blocked}"
    );
    r.lx(&[
        "run",
        "--exec",
        "true",
        "--check",
        "false",
        "--max-iterations",
        "1",
        "--ack-required=false",
    ])
    .expect(12, Some("max_iterations_reached"));
    r.lx(&["ack", &id, "--by", "alice", "--resolution", "resolved"])
        .expect(0, None);
    // The override run's own event is high too; ack it, then runs start freely.
    for e in r.lx(&["halts", "--unacked"]).expect(0, None)["halts"]
        .as_array()
        .unwrap()
    {
        r.lx(&["ack", e["id"].as_str().unwrap(), "--by", "alice"])
            .expect(0, None);
    }
    r.run_red(1).expect(12, Some("max_iterations_reached"));
}

/// Before: the agent's own `loopexec ack` (even with the step's variables removed)
/// counted as a person's review.
#[test]
fn ack_from_a_descendant_of_a_running_step_is_refused_even_without_its_environment() {
    let r = tap_repo(3);
    let exec = format!(
        "{PROGRESS_AGENT}; env -u LOOPEXEC_RUN_ID -u LOOPEXEC_ITERATION -u LOOPEXEC_USAGE_FILE -u LOOPEXEC_STEP_TOKEN '{}' --workdir . ack --run-id self --reviewer bot > ack.out 2>&1; echo $? > ack.rc",
        bin()
    );
    r.write(".gitignore", "ack.out\nack.rc\n").commit("ignore");
    r.lx_tap(
        &exec,
        &[
            "--run-id",
            "self",
            "--comprehension-every",
            "1",
            "--max-iterations",
            "3",
        ],
    )
    .expect(19, Some("comprehension_debt_exceeded"));
    assert_eq!(r.read("ack.rc").trim(), "11", "{}", r.read("ack.out"));
    assert!(
        r.read("ack.out").contains("inside a loopexec step"),
        "{}",
        r.read("ack.out")
    );
    r.lx(&["run", "--resume", "self"])
        .expect(19, Some("comprehension_debt_exceeded"));
    assert_eq!(r.read("failing").split_whitespace().count(), 2);
}

fn ssh_key(dir: &Path, name: &str) -> std::path::PathBuf {
    let key = dir.join(name);
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&key)
        .status()
        .expect("ssh-keygen");
    assert!(st.success());
    key
}

/// Before: with signed acknowledgements required, any unsigned `ack` still counted.
#[test]
fn a_required_signed_ack_must_verify_against_the_allowed_signers() {
    if Command::new("ssh-keygen").arg("-?").output().is_err() {
        eprintln!("skipped: no ssh-keygen");
        return;
    }
    let r = Repo::with_f();
    let keys = tempfile::tempdir().unwrap();
    let alice = ssh_key(keys.path(), "alice");
    let mallory = ssh_key(keys.path(), "mallory");
    let pubkey = std::fs::read_to_string(alice.with_extension("pub")).unwrap();
    let allowed = keys.path().join("allowed_signers");
    std::fs::write(&allowed, format!("alice namespaces=\"loopexec\" {pubkey}")).unwrap();
    r.write(
        "loop.toml",
        &format!(
            "[review]\nrequire_signed_ack = true\nallowed_signers = \"{}\"\n",
            allowed.display()
        ),
    )
    .commit("policy");
    r.lx(&[
        "run",
        "--run-id",
        "s",
        "--exec",
        "true",
        "--check",
        "false",
        "--max-iterations",
        "1",
    ])
    .expect(12, None);
    let id = r.lx(&["halts", "--unacked"]).expect(0, None)["halts"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let unsigned = r.lx(&["ack", &id, "--by", "alice"]);
    assert_eq!(unsigned.code, 11, "{}", unsigned.errors_text());
    assert!(unsigned.errors_text().contains("signed"));
    let k = mallory.display().to_string();
    let forged = r.lx(&["ack", &id, "--by", "alice", "--sign-with", &k]);
    assert_eq!(
        forged.code,
        11,
        "a key not listed for alice: {}",
        forged.errors_text()
    );
    let k = alice.display().to_string();
    let ok = r
        .lx(&["ack", &id, "--by", "alice", "--sign-with", &k])
        .expect(0, None);
    assert_eq!(ok["how"]["method"], "ssh_signature", "{ok}");
}

// ---- the action gate ------------------------------------------------------------

fn fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/agent-output/hooks")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Pipes `payload` into `loopexec gate` with `env`; returns (exit, stdout, stderr).
fn gate(dir: &Path, payload: &str, env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(bin());
    cmd.arg("gate")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for v in [
        "LOOPEXEC_RUN_ID",
        "LOOPEXEC_ITERATION",
        "LOOPEXEC_WORKDIR",
        "LOOPEXEC_AUDIT_LOG",
    ] {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn gate");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn denied(stdout: &str) -> bool {
    let v: Value = serde_json::from_str(stdout).unwrap_or(Value::Null);
    v["hookSpecificOutput"]["permissionDecision"] == "deny" || v["decision"] == "deny"
}

/// Before: nothing saw the agent's individual actions.
#[test]
fn recorded_hook_payloads_are_classified_answered_and_logged_end_to_end() {
    let r = Repo::with_file("src/lib.rs", "pub fn f() {}\n");
    r.write("src/parser.rs", "let n = 0;\n").commit("code");
    let wd = r.path().display().to_string();
    let audit = r.path().join(".loopexec/runs/hooks/audit.jsonl");
    let audit_s = audit.display().to_string();
    let env = [
        ("LOOPEXEC_RUN_ID", "hooks"),
        ("LOOPEXEC_ITERATION", "1"),
        ("LOOPEXEC_WORKDIR", wd.as_str()),
        ("LOOPEXEC_AUDIT_LOG", audit_s.as_str()),
    ];
    // (fixture, denied, stdout when allowed)
    let rows: &[(&str, bool, &str)] = &[
        ("claude_pre_read.json", false, ""),
        ("claude_pre_bash_force_push.json", true, ""),
        ("claude_pre_edit_unread.json", false, ""),
        ("claude_pre_write_secret.json", true, ""),
        ("claude_post_bash_failed.json", false, ""),
        ("gemini_before_read_file.json", false, "{}"),
        ("gemini_before_shell_rm_outside.json", true, ""),
        ("gemini_after_shell_failed.json", false, "{}"),
    ];
    for (name, deny, allowed_out) in rows {
        let payload = fixture(name).replace("/home/dev/app", &wd);
        let (code, out, err) = gate(r.path(), &payload, &env);
        assert_eq!(code, 0, "{name}: {err}");
        assert_eq!(denied(&out), *deny, "{name}: {out}");
        if !deny {
            assert_eq!(out.trim(), *allowed_out, "{name}");
        }
    }
    let deny_shape: Value = serde_json::from_str(&fixture("claude_decision_deny.json")).unwrap();
    let (_, out, _) = gate(
        r.path(),
        &fixture("claude_pre_bash_force_push.json").replace("/home/dev/app", &wd),
        &env,
    );
    let got: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        got["hookSpecificOutput"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        deny_shape["hookSpecificOutput"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>()
    );
    let recs: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len(), rows.len() + 1);
    let by_tool = |tool: &str, phase: &str| {
        recs.iter()
            .find(|v| v["tool"] == tool && v["phase"] == phase)
            .unwrap_or_else(|| panic!("no {phase} record of {tool}"))
    };
    assert_eq!(by_tool("Read", "pre")["classification"], "read_only");
    assert_eq!(by_tool("Bash", "pre")["outcome"], "declined");
    assert_eq!(by_tool("Bash", "pre")["rule"], "git-push-force");
    assert_eq!(
        by_tool("Edit", "pre")["findings"][0]["halt_type"],
        "modifying_unread_code"
    );
    assert_eq!(
        by_tool("Write", "pre")["findings"][0]["halt_type"],
        "secrets_exposure"
    );
    assert_eq!(by_tool("Bash", "post")["outcome"], "failed");
    assert_eq!(by_tool("run_shell_command", "post")["outcome"], "failed");
    // The secret never reaches the log.
    assert!(!std::fs::read_to_string(&audit)
        .unwrap()
        .contains("wJalrXUtnFEMI"));
    // The chain holds: each prev is the previous line's hash.
    let text = std::fs::read_to_string(&audit).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for w in lines.windows(2) {
        let v: Value = serde_json::from_str(w[1]).unwrap();
        assert_eq!(
            v["prev"],
            blake3::hash(w[0].as_bytes()).to_hex().to_string()
        );
    }
    // A payload the gate cannot read blocks the call (exit 2), never waves it through.
    let (code, _, err) = gate(r.path(), "not json", &env);
    assert_eq!(code, 2, "{err}");
}

fn hook_agent(state: &Path, calls: &str) -> String {
    format!(
        "LX='{}'\nD='{}'\nhook() {{ printf '%s' \"{{\\\"session_id\\\":\\\"s1\\\",\\\"cwd\\\":\\\".\\\",\\\"hook_event_name\\\":\\\"PreToolUse\\\",$2}}\" | \"$LX\" gate > \"$D/$1.out\" 2> \"$D/$1.err\"; echo $? > \"$D/$1.rc\"; }}\n{calls}\n",
        bin(),
        state.display()
    )
}

/// Before: a force push by the agent ran unseen; nothing in the verdict said so.
#[test]
fn a_destructive_call_is_declined_in_an_unattended_run_and_listed_in_the_verdict() {
    let r = tap_repo(3);
    let st = tempfile::tempdir().unwrap();
    let agent = hook_agent(
        st.path(),
        &format!(
            "hook push '\"tool_name\":\"Bash\",\"tool_input\":{{\"command\":\"git push --force origin main\"}}'\n{PROGRESS_AGENT}"
        ),
    );
    std::fs::write(st.path().join("agent.sh"), agent).unwrap();
    let exec = format!("sh {}/agent.sh", st.path().display());
    let v = r
        .lx_tap(&exec, &["--run-id", "gated", "--max-iterations", "5"])
        .expect(10, Some("success_condition_met"));
    assert!(denied(
        &std::fs::read_to_string(st.path().join("push.out")).unwrap()
    ));
    let declined = v["declined_actions"].as_array().expect("declined_actions");
    assert_eq!(declined.len(), 3, "one per iteration: {v}");
    assert!(declined
        .iter()
        .all(|d| d["target"] == "git push --force origin main"));
    for c in ["report", "explain-halt"] {
        let o = r.lx(&[c, "--run-id", "gated"]).expect(0, None);
        assert_eq!(
            o["declined_actions"].as_array().map(Vec::len),
            Some(3),
            "{c}: {o}"
        );
        assert_eq!(o["actions"]["calls"], 3, "{c}: {o}");
        assert_eq!(
            o["actions"]["log_problems"].as_array().map(Vec::len),
            Some(0)
        );
    }
    let lines = verify_receipt(&r.receipt("gated"));
    assert_eq!(events(&lines, "actions").len(), 3);
}

/// A new user's review: the agent's Write of an AWS secret was declined and recorded as
/// a critical `secrets_exposure`, and the green verdict said only "merge it". It now
/// names the critical finding and asks for its acknowledgement first.
#[test]
fn a_green_run_with_a_critical_gate_finding_says_so_before_merge() {
    let r = tap_repo(2);
    let st = tempfile::tempdir().unwrap();
    let agent = hook_agent(
        st.path(),
        &format!(
            "hook w '\"tool_name\":\"Write\",\"tool_input\":{{\"file_path\":\"deploy.env\",\"content\":\"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"}}'\n{PROGRESS_AGENT}"
        ),
    );
    std::fs::write(st.path().join("agent.sh"), agent).unwrap();
    let exec = format!("sh {}/agent.sh", st.path().display());
    let v = r
        .lx_tap(&exec, &["--run-id", "secret", "--max-iterations", "5"])
        .expect(10, Some("success_condition_met"));
    assert!(mentions(&v, "critical finding"), "{v}");
    assert!(mentions(&v, "secrets_exposure"), "{v}");
    let ex = r
        .lx(&["explain-halt", "--run-id", "secret"])
        .expect(0, None);
    assert!(mentions(&ex, "critical finding"), "{ex}");
}

/// Before: there was no turn limit across a run.
#[test]
fn max_turns_counts_tool_call_rounds_across_the_run() {
    let r = tap_repo(6);
    let st = tempfile::tempdir().unwrap();
    let agent = hook_agent(
        st.path(),
        &format!("hook a '\"tool_name\":\"Read\",\"tool_input\":{{\"file_path\":\"check.sh\"}}'\nhook b '\"tool_name\":\"Read\",\"tool_input\":{{\"file_path\":\"tests\"}}'\n{PROGRESS_AGENT}"),
    );
    std::fs::write(st.path().join("agent.sh"), agent).unwrap();
    let exec = format!("sh {}/agent.sh", st.path().display());
    let v = r
        .lx_tap(&exec, &["--max-turns", "5", "--max-iterations", "10"])
        .expect(12, Some("max_iterations_reached"));
    assert_eq!(v["iteration"], 3, "{v}");
    assert!(mentions(&v, "tool-call rounds"), "{v}");
}

/// A run in `--attended` mode whose agent asks once (its first iteration) to run
/// `git reset --hard HEAD~1` — after `before` in the same shell line — and nobody
/// answers within `timeout`: the call is declined and the run halts
/// `escalation_pending`. Returns the verdict and the directory holding the hook's
/// output files.
fn unanswered_reset(
    r: &Repo,
    run_id: &str,
    before: &str,
    timeout: &str,
) -> (Value, tempfile::TempDir) {
    let st = tempfile::tempdir().unwrap();
    let s = st.path().display();
    let agent = hook_agent(
        st.path(),
        &format!(
            "[ -e {s}/asked ] || {{ touch {s}/asked; {before} hook push '\"tool_name\":\"Bash\",\"tool_input\":{{\"command\":\"git reset --hard HEAD~1\"}}'; wait; }}\n{PROGRESS_AGENT}"
        ),
    );
    std::fs::write(st.path().join("agent.sh"), agent).unwrap();
    let exec = format!("sh {s}/agent.sh");
    let v = r
        .lx_tap(
            &exec,
            &[
                "--run-id",
                run_id,
                "--attended",
                "--approval-timeout",
                timeout,
            ],
        )
        .expect(16, Some("escalation_pending"));
    assert!(mentions(&v, "git reset --hard"), "{v}");
    assert!(denied(
        &std::fs::read_to_string(st.path().join("push.out")).unwrap()
    ));
    (v, st)
}

/// Before: no destructive call could wait for a person; nothing halted when nobody answered.
#[test]
fn an_attended_call_unanswered_past_the_timeout_halts_escalation_pending_and_resumes_after_confirm()
{
    let r = tap_repo(2);
    // The agent's directory outlives the halt: the resumed run runs it again.
    let (_v, _agent) = unanswered_reset(&r, "att", "", "1s");
    let pending = r.lx(&["pending"]).expect(0, None);
    let id = pending["pending"][0]["id"]
        .as_str()
        .expect("a pending action")
        .to_string();
    // its call was declined at the timeout: said so, and what an answer does (a new
    // user's review saw it listed as waiting)
    assert_eq!(pending["pending"][0]["call_waiting"], false, "{pending}");
    let status = r.lx(&["status", "att"]).expect(0, None);
    assert!(
        mentions(&status["next_steps"], "declined at the approval timeout")
            && mentions(&status["next_steps"], "loopexec run --resume att"),
        "{status}"
    );
    r.lx(&["run", "--resume", "att"])
        .expect(16, Some("escalation_pending"));
    r.lx(&["confirm", &id, "--by", "alice"]).expect(0, None);
    let again = r.lx(&["deny", &id, "--by", "bob"]).expect(1, None);
    assert!(mentions(&again, "already confirmed by alice"), "{again}");
    r.lx(&["run", "--resume", "att"])
        .expect(10, Some("success_condition_met"));
    // The waiting call's hold was released.
    let holds = r.lx(&["holds"]).expect(0, None);
    assert_eq!(holds["holds"].as_array().map(Vec::len), Some(0), "{holds}");
}

/// A call confirmed in real time while the gate waits runs, and the log says who.
#[test]
fn an_attended_call_confirmed_in_time_is_allowed_and_logged_with_who_confirmed() {
    let r = tap_repo(1);
    let st = tempfile::tempdir().unwrap();
    let agent = hook_agent(
        st.path(),
        &format!(
            "hook push '\"tool_name\":\"Bash\",\"tool_input\":{{\"command\":\"git push --force origin main\"}}'\n{PROGRESS_AGENT}"
        ),
    );
    std::fs::write(st.path().join("agent.sh"), agent).unwrap();
    let exec = format!("sh {}/agent.sh", st.path().display());
    let mut run = ChildGuard(Some(r.spawn(&[
        "run",
        "--run-id",
        "ok",
        "--exec",
        &exec,
        "--check",
        "sh check.sh",
        "--test-format",
        "tap",
        "--attended",
        "--approval-timeout",
        "60s",
    ])));
    let mut id = String::new();
    // (deadlines, not timings: generous for a loaded machine). The hook's answer
    // ends the wait too: a call answered without waiting is the failure to show.
    let answered = |name: &str| std::fs::read_to_string(st.path().join(name)).unwrap_or_default();
    let waited = wait_until(Duration::from_secs(240), || {
        let p = r.lx(&["pending"]).json();
        match p["pending"][0]["id"].as_str() {
            Some(i) => {
                id = i.to_string();
                true
            }
            // the hook answered, or the run ended, without the call waiting
            None => {
                st.path().join("push.rc").exists()
                    || run.child().try_wait().is_ok_and(|s| s.is_some())
            }
        }
    });
    if !waited || id.is_empty() {
        let out = finish(&mut run, Duration::from_secs(180));
        panic!(
            "no pending action; the hook answered rc={} out={} err={}; the run: {} {}",
            answered("push.rc"),
            answered("push.out"),
            answered("push.err"),
            String::from_utf8_lossy(&out.stdout),
            out.stderr
        );
    }
    let holds = r.lx(&["holds"]).expect(0, None);
    assert!(mentions(&holds, "waiting for a person"), "{holds}");
    assert_eq!(
        r.lx(&["pending"]).json()["pending"][0]["call_waiting"],
        true
    );
    // the gate's own hold is released by the answer, not by a person (a new user's
    // review released it and the waiting call vanished from `holds`)
    let gate_hold = holds["holds"][0]["id"].as_str().unwrap().to_string();
    let refused = r
        .lx(&["release", &gate_hold, "--by", "alice"])
        .expect(1, None);
    assert!(
        mentions(&refused, &format!("loopexec confirm {id}")),
        "{refused}"
    );
    let status = r.lx(&["status", "ok"]).expect(0, None);
    assert!(
        mentions(
            &status["phase"],
            &format!("waiting for a person to answer action {id}")
        ),
        "{status}"
    );
    assert!(
        mentions(&status["next_steps"], &format!("loopexec confirm {id}")),
        "{status}"
    );
    r.lx(&["confirm", &id, "--by", "alice"]).expect(0, None);
    finish(&mut run, Duration::from_secs(180)).expect(10, Some("success_condition_met"));
    assert_eq!(
        std::fs::read_to_string(st.path().join("push.out")).unwrap(),
        ""
    );
    let log = std::fs::read_to_string(r.path().join(".loopexec/runs/ok/audit.jsonl")).unwrap();
    let rec: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(rec["confirmed_by"], "alice");
    assert_eq!(rec["outcome"], "allowed");
}

/// Before: a workspace had no spend rate across runs; each run only saw its own cap.
#[test]
fn an_empty_rate_bucket_halts_budget_exceeded_across_runs_or_parks_until_it_refills() {
    let r = tap_repo(4);
    r.write(
        "loop.toml",
        "[limits]\nusd_per_hour = 0.5\non_rate_limit = \"halt\"\n",
    )
    .commit("limits");
    let spend = format!(
        "echo '{{\"provider\":\"acme\",\"model\":\"m\",\"input_tokens\":10,\"output_tokens\":5,\"cost_usd\":0.6}}' >> \"$LOOPEXEC_USAGE_FILE\"; {PROGRESS_AGENT}"
    );
    let v = r
        .lx_tap(&spend, &["--run-id", "rl1"])
        .expect(18, Some("budget_exceeded"));
    assert_eq!(v["iteration"], 2, "the second exec never ran: {v}");
    assert!(mentions(&v, "rate limit"), "{v}");
    let lines = verify_receipt(&r.receipt("rl1"));
    assert_eq!(events(&lines, "exec_finished").len(), 1);
    assert_eq!(events(&lines, "rate_limited").len(), 1);
    // The bucket belongs to the workspace: the next run finds it empty too.
    let v = r
        .lx_tap(&spend, &["--run-id", "rl2"])
        .expect(18, Some("budget_exceeded"));
    assert_eq!(v["iteration"], 1, "{v}");
    let ex = r.lx(&["explain-halt", "--run-id", "rl2"]).expect(0, None);
    assert_eq!(ex["rederived"], true, "{ex}");

    // Suspend mode: 36 USD/h refills 0.01 USD per second; a 36.005 USD exec empties
    // the bucket for about half a second, and the loop parks, then goes on.
    let s = tap_repo(2);
    s.write("loop.toml", "[limits]\nusd_per_hour = 36.0\n")
        .commit("limits");
    let big = format!(
        "echo '{{\"provider\":\"acme\",\"model\":\"m\",\"input_tokens\":10,\"output_tokens\":5,\"cost_usd\":36.005}}' >> \"$LOOPEXEC_USAGE_FILE\"; {PROGRESS_AGENT}"
    );
    s.lx_tap(&big, &["--run-id", "sus"])
        .expect(10, Some("success_condition_met"));
    let lines = verify_receipt(&s.receipt("sus"));
    let rl = events(&lines, "rate_limited");
    assert_eq!(rl.len(), 1, "{rl:?}");
    assert_eq!(rl[0]["mode"], "suspend");
    let unheld = events(&lines, "unheld");
    assert_eq!(unheld.len(), 1);
    assert!(
        unheld[0]["parked_ms"].as_u64().unwrap() >= 100,
        "{:?}",
        unheld[0]
    );
}

/// Before: nobody was told when a run halted unless they watched it.
#[test]
fn on_halt_runs_the_notifier_with_the_halt_event_on_stdin() {
    let r = Repo::with_f();
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("event.json");
    let cmd = format!("cat > '{}'", file.display());
    r.lx(&[
        "run",
        "--run-id",
        "n",
        "--exec",
        "true",
        "--check",
        "false",
        "--max-iterations",
        "1",
        "--on-halt",
        &cmd,
    ])
    .expect(12, Some("max_iterations_reached"));
    let ev: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(ev["run_id"], "n");
    assert_eq!(ev["halt_reason"], "max_iterations_reached");
    assert_eq!(ev["acknowledged"], false);
    let listed = r.lx(&["halts", "--run", "n"]).expect(0, None);
    assert_eq!(listed["halts"][0]["id"], ev["id"]);
}

/// Before: wiring the gate into an agent meant editing its settings by hand.
#[test]
fn init_agent_installs_the_gate_hook_keeping_existing_settings() {
    let r = Repo::with_f();
    r.write(
        ".claude/settings.json",
        r#"{"model": "sonnet", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}}"#,
    );
    // `loopexec` on PATH is this binary: the hook names it bare
    let linked = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(bin(), linked.path().join("loopexec")).unwrap();
    let path = format!("{}:/usr/bin:/bin", linked.path().display());
    let init = |agent: &str| r.lx_env(&["init", "--agent", agent], &[("PATH", &path)]);
    let out = init("claude");
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    let v = out.expect(0, None);
    assert!(v["hooks"]
        .as_str()
        .unwrap()
        .ends_with(".claude/settings.json"));
    let read = |p: &str| -> Value { serde_json::from_str(&r.read(p)).unwrap() };
    let s = read(".claude/settings.json");
    assert_eq!(s["model"], "sonnet");
    assert_eq!(s["hooks"]["Stop"][0]["hooks"][0]["command"], "notify");
    for ev in ["PreToolUse", "PostToolUse"] {
        assert_eq!(
            s["hooks"][ev][0]["hooks"][0]["command"], "loopexec gate",
            "{s}"
        );
    }
    // Running it again adds nothing twice.
    init("claude").expect(0, None);
    assert_eq!(
        read(".claude/settings.json")["hooks"]["PreToolUse"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    init("gemini").expect(0, None);
    let g = read(".gemini/settings.json");
    assert_eq!(
        g["hooks"]["BeforeTool"][0]["hooks"][0]["command"],
        "loopexec gate"
    );
    assert_eq!(
        g["hooks"]["AfterTool"][0]["hooks"][0]["command"],
        "loopexec gate"
    );
}

/// Before: `init --agent claude` from a binary built with `cargo build --release`
/// and never installed wrote a hook running bare `loopexec gate`, which could not
/// run: the action gate was silently missing (a fresh review). Now the hook runs this
/// binary by its absolute path, init says so, and a later init repoints the hook.
#[test]
fn init_agent_names_this_binary_when_loopexec_is_not_on_path() {
    let r = Repo::with_f();
    let exe = std::fs::canonicalize(bin()).unwrap();
    let want = format!("{} gate", exe.display());
    let read = || -> Value { serde_json::from_str(&r.read(".claude/settings.json")).unwrap() };
    // an earlier init from an installed loopexec
    let linked = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(bin(), linked.path().join("loopexec")).unwrap();
    let with_link = format!("{}:/usr/bin:/bin", linked.path().display());
    r.lx_env(&["init", "--agent", "claude"], &[("PATH", &with_link)])
        .expect(0, None);
    assert_eq!(
        read()["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "loopexec gate"
    );
    let out = r.lx_env(&["init", "--agent", "claude"], &[("PATH", "/usr/bin:/bin")]);
    assert!(
        out.stderr.contains("warning: `loopexec` is not on PATH")
            && out.stderr.contains(&exe.display().to_string()),
        "{}",
        out.stderr
    );
    let v = out.expect(0, None);
    assert_eq!(v["hook_command"], want.as_str(), "{v}");
    let s = read();
    for ev in ["PreToolUse", "PostToolUse"] {
        let list = s["hooks"][ev].as_array().unwrap();
        assert_eq!(list.len(), 1, "{s}");
        assert_eq!(list[0]["hooks"][0]["command"], want.as_str(), "{s}");
    }
}

/// Before: the record of the agent's actions was whatever the agent left in the file.
#[test]
fn an_audit_log_edited_by_the_agent_is_named_in_the_receipt() {
    let r = tap_repo(2);
    let st = tempfile::tempdir().unwrap();
    let s = st.path().display();
    // Iteration 1 asks for a force push (declined); iteration 2 rewrites that record.
    let agent = hook_agent(
        st.path(),
        &format!(
            "if [ -e {s}/asked ]; then sed -i 's/--force //' \"$LOOPEXEC_AUDIT_LOG\"; else touch {s}/asked; hook push '\"tool_name\":\"Bash\",\"tool_input\":{{\"command\":\"git push --force origin main\"}}'; fi\n{PROGRESS_AGENT}"
        ),
    );
    std::fs::write(st.path().join("agent.sh"), agent).unwrap();
    let exec = format!("sh {s}/agent.sh");
    r.lx_tap(&exec, &["--run-id", "edited"])
        .expect(10, Some("success_condition_met"));
    let o = r
        .lx(&["explain-halt", "--run-id", "edited"])
        .expect(0, None);
    assert!(mentions(&o["actions"]["log_problems"], "changed"), "{o}");
    let lines = verify_receipt(&r.receipt("edited"));
    let acts = events(&lines, "actions");
    assert_eq!(acts.len(), 2, "{acts:?}");
    assert!(acts[0]["log_problem"].is_null());
    assert!(
        acts[1]["log_problem"]
            .as_str()
            .unwrap()
            .contains("record 1"),
        "{:?}",
        acts[1]
    );
    // The declined call stays on the record as the gate wrote it at the time.
    assert_eq!(
        acts[0]["declined"][0]["target"],
        "git push --force origin main"
    );
}

/// An agent releasing a person's hold from inside its step. Before: the hold was
/// released and the run went on to exit 10.
#[test]
fn release_refuses_inside_a_step() {
    let r = Repo::with_f();
    let held = r
        .lx(&["hold", "--workspace", "--reason", "stop", "--by", "alice"])
        .expect(0, None);
    let id = held["hold_id"].as_str().expect("hold_id").to_string();
    let out = r.lx_env(
        &["release", &id, "--by", "alice"],
        &[("LOOPEXEC_RUN_ID", "r1")],
    );
    assert_eq!(out.code, 11, "{}", out.errors_text());
    assert!(out.errors_text().contains("inside a loopexec step"));
    r.lx(&["release", &id, "--by", "alice"]).expect(0, None);
}

/// Before: the agent, which may write the workdir, released a person's suspension by
/// writing `.loopexec/ledger.sqlite` itself (`UPDATE holds SET released_at = …`), and
/// the loop went on at the next step boundary as if the person had released it;
/// `loopexec check` said ok. Now the release is not believed (only the control
/// journal, which the sandboxed agent cannot write, releases a hold), the run stays
/// parked, `check` names the forged row, and the person's own release goes on.
#[test]
fn a_hold_released_by_the_agent_writing_the_ledger_still_holds() {
    let r = tap_repo(2);
    let st = tempfile::tempdir().unwrap();
    let forge = st.path().join("forge.py");
    std::fs::write(
        &forge,
        r#"import sqlite3, time
open('started', 'w').write('yes')
db = sqlite3.connect('.loopexec/ledger.sqlite', timeout=10)
for _ in range(300):
    if db.execute("SELECT COUNT(*) FROM holds WHERE released_at IS NULL").fetchone()[0]:
        break
    time.sleep(0.1)
db.execute("UPDATE holds SET released_at = '2026-01-01T00:00:00Z', released_by = 'alice'")
db.commit()
open('forged', 'w').write('yes')
"#,
    )
    .unwrap();
    let exec = format!(
        "test -f forged || python3 {}; {PROGRESS_AGENT}",
        forge.display()
    );
    let mut run = ChildGuard(Some(r.spawn(&[
        "run",
        "--run-id",
        "forge",
        "--exec",
        &exec,
        "--check",
        "sh check.sh",
        "--test-format",
        "tap",
    ])));
    // The person suspends the run while the agent works.
    assert!(wait_until(Duration::from_secs(30), || r
        .path()
        .join("started")
        .exists()));
    let h = hold_id(&r.lx(&[
        "hold",
        "--run",
        "forge",
        "--suspend",
        "--reason",
        "look",
        "--by",
        "alice",
    ]));
    assert!(
        wait_until(Duration::from_secs(30), || r.path().join("forged").exists()),
        "the agent's forgery ran"
    );
    std::thread::sleep(Duration::from_millis(3000));
    assert!(
        run.child().try_wait().unwrap().is_none(),
        "the run went on after a release written only to the ledger"
    );
    assert_eq!(r.read("failing").trim(), "t2", "parked after iteration 1");
    let held = r.lx(&["holds"]).expect(0, None);
    assert!(mentions(&held, &h), "the hold is still listed: {held}");
    let chk = r.lx(&["check"]);
    assert_eq!(chk.code, 20, "check must report the forged release");
    assert!(
        chk.errors_text().contains(&format!("hold {h}"))
            && chk.errors_text().contains("control journal"),
        "{}",
        chk.errors_text()
    );
    r.lx(&["release", &h, "--by", "alice"]).expect(0, None);
    finish(&mut run, Duration::from_secs(60)).expect(10, Some("success_condition_met"));
    let lines = verify_receipt(&r.receipt("forge"));
    assert_eq!(events(&lines, "held").len(), 1);
    assert_eq!(events(&lines, "unheld").len(), 1);
}

/// Before: an agent waiting on the gate for a person's answer could answer itself — a
/// background process wrote `decision = 'confirmed'` into the ledger's pending row —
/// and the gate let its `git reset --hard` through. Now only the control journal's
/// answer counts: the call is still declined when nobody answers, the run halts
/// `escalation_pending`, and `check` names the forged answer.
#[test]
fn an_answer_the_agent_writes_into_the_ledger_is_not_a_persons() {
    let r = tap_repo(2);
    let (_keep, forge) = {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("forge.py");
        std::fs::write(
            &f,
            r#"import sqlite3, time
db = sqlite3.connect('.loopexec/ledger.sqlite', timeout=10)
for _ in range(100):
    n = db.execute("UPDATE pending_actions SET decision = 'confirmed', decided_by = 'alice' WHERE decision IS NULL").rowcount
    db.commit()
    if n:
        break
    time.sleep(0.05)
"#,
        )
        .unwrap();
        (d, f)
    };
    unanswered_reset(&r, "self", &format!("python3 {} &", forge.display()), "3s");
    let pending = r.lx(&["pending"]).expect(0, None);
    assert_eq!(
        pending["pending"].as_array().map(Vec::len),
        Some(1),
        "still open: {pending}"
    );
    let chk = r.lx(&["check"]);
    assert_eq!(chk.code, 20);
    assert!(
        chk.errors_text().contains("pending action"),
        "{}",
        chk.errors_text()
    );
}

/// Fifth review: `hold --run` took any id, so a typo held nothing, silently.
#[test]
fn a_hold_on_a_run_the_ledger_does_not_know_is_refused_naming_it() {
    let r = Repo::with_f();
    r.lx(&["run", "--run-id", "known", "--check", "true"])
        .expect(10, Some("success_condition_met"));
    let out = r.lx(&[
        "hold", "--run", "knwon", "--reason", "look", "--by", "alice",
    ]);
    out.expect(1, None);
    assert!(out.errors_text().contains("knwon"), "{}", out.errors_text());
    let ok = r.lx(&[
        "hold", "--run", "known", "--reason", "look", "--by", "alice",
    ]);
    ok.expect(0, None);
}

/// Before: a run started under a stop hold became a run stopped at iteration 0, with
/// its own unacknowledged `human_required` event asking to resume a run that never
/// ran; every try added one. Now it is refused before anything is recorded, naming
/// the hold and how to release it; after the release the run starts.
#[test]
fn a_run_started_under_a_stop_hold_is_refused_and_leaves_nothing() {
    let r = Repo::with_f();
    let h = hold_id(&r.lx(&[
        "hold",
        "--workspace",
        "--reason",
        "maintenance window",
        "--by",
        "alice",
    ]));
    let run = ["run", "--exec", "touch done", "--check", "test -f done"];
    let v = r.lx(&run).expect(11, Some("human_required"));
    assert!(
        mentions(&v, "alice") && mentions(&v, "maintenance window") && mentions(&v, &h),
        "{v}"
    );
    assert!(mentions(&v, "loopexec release"), "{v}");
    let runs = r.lx(&["runs"]).expect(0, None);
    assert_eq!(runs["runs"].as_array().map_or(0, Vec::len), 0, "{runs}");
    let halts = r.lx(&["halts", "--unacked"]).expect(0, None);
    assert_eq!(halts["halts"].as_array().map_or(0, Vec::len), 0, "{halts}");
    r.lx(&["release", &h, "--by", "alice"]).expect(0, None);
    r.lx(&run).expect(10, Some("success_condition_met"));
}

/// A start refused before it began (a bad flag value, `--resume` of an unknown run)
/// is listed by `halts` but waits for no one: before, every typo became an UNACKED
/// event in the list a person reads at 3 a.m. (a fresh review).
#[test]
fn a_start_refused_before_it_began_needs_no_ack() {
    let r = tap_repo(1);
    // a bad flag value is a usage error: nothing is recorded
    r.lx(&[
        "run",
        "--exec",
        "true",
        "--check",
        "sh check.sh",
        "--exec-timeout",
        "5x",
    ])
    .expect(2, None);
    // the same value in loop.toml is refused at preflight and recorded
    r.write("loop.toml", "exec_timeout = \"5x\"\n");
    r.lx(&["run", "--exec", "true", "--check", "sh check.sh"])
        .expect(20, Some("invariant_failed"));
    std::fs::remove_file(r.path().join("loop.toml")).unwrap();
    r.lx(&["run", "--resume", "nosuch"])
        .expect(20, Some("invariant_failed"));
    let all = r.lx(&["halts"]).expect(0, None);
    let events = all["halts"].as_array().unwrap();
    assert_eq!(events.len(), 2, "{all}");
    assert!(events.iter().all(|e| e["preflight"] == true), "{all}");
    let mut cmd = Command::new(bin());
    cmd.arg("--workdir").arg(r.path()).arg("halts");
    let human = String::from_utf8_lossy(&run_cmd(cmd).stdout).into_owned();
    assert!(
        human.contains("no ack needed: refused before it started"),
        "{human}"
    );
    assert!(!human.contains("acknowledge one with"), "{human}");
    let open = r.lx(&["halts", "--unacked"]).expect(0, None);
    assert_eq!(open["halts"], serde_json::json!([]), "{open}");
    // a run that ran and halted still waits for a person
    r.lx_tap("true", &["--run-id", "ran", "--max-iterations", "1"])
        .expect(12, None);
    let open = r.lx(&["halts", "--unacked"]).expect(0, None);
    assert_eq!(open["halts"][0]["run_id"], "ran", "{open}");
    assert_eq!(open["halts"][0]["preflight"], false, "{open}");
}

/// A new user's review: `halts --run nosuch` answered "no halt events match" with 0,
/// `hold --run nosuch` exited 2, `ack --by bob` acknowledged the latest run, and
/// `ack --run-id R --resolution dismissed` dropped the resolution; `check` where no run
/// was ever recorded said "verified". Each now names what is wrong, with the code
/// exit-codes.md gives.
#[test]
fn commands_given_nothing_real_to_act_on_say_so() {
    let r = tap_repo(1);
    r.lx_tap(PROGRESS_AGENT, &["--run-id", "real"])
        .expect(10, Some("success_condition_met"));
    let e = r.lx(&["halts", "--run", "nosuch"]).expect(1, None);
    assert!(mentions(&e, "nosuch"), "{e}");
    r.lx(&["halts", "--run", "real"]).expect(0, None);
    r.lx(&["hold", "--run", "nosuch", "--reason", "x", "--by", "alice"])
        .expect(1, None);
    let e = r.lx(&["ack", "--by", "bob"]).expect(2, None);
    assert!(mentions(&e, "HALT_ID"), "{e}");
    r.lx(&[
        "ack",
        "--run-id",
        "real",
        "--reviewer",
        "carol",
        "--resolution",
        "dismissed",
    ])
    .expect(2, None);
    r.lx(&["ack", "--run-id", "real", "--reviewer", "carol"])
        .expect(0, None);
    let empty = tempfile::tempdir().unwrap();
    let e = lx_in(empty.path(), &["check"], &[]).expect(1, None);
    assert!(mentions(&e, "nothing to check"), "{e}");
}
