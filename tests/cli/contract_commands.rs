//! The JSON contract for the commands beyond a run's own: `inspect-cost`, `check`,
//! `probe-check`, `doctor`, `build-context`, `watch` and the control commands
//! (`hold`, `release`, `holds`, `halts`, `ack`, `gate`, `pending`, `confirm`, `deny`).
//! Each real output validates against its committed schema, and its human and JSON
//! renderings are snapshotted with times, paths, ids and users redacted. Also: the
//! `--help` of the top level and of every subcommand, snapshotted so a change of the
//! text is reviewed.

use crate::contract::{assert_valid, converged, redact, redact_text};
use crate::support::*;
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// One invocation: `loopexec [--json] --workdir REPO ARGS…` with its own state
/// directory (global holds), an optional stdin payload; returns (exit, stdout).
fn call(r: &Repo, json: bool, args: &[&str], stdin: Option<&str>) -> (i32, String) {
    let mut c = Command::new(bin());
    if json {
        c.arg("--json");
    }
    c.arg("--workdir")
        .arg(r.path())
        .args(args)
        .current_dir(r.path())
        .env("LOOPEXEC_STATE_DIR", r.outside().join("state"))
        .env("USER", "tester")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for v in ["LOOPEXEC_RUN_ID", "LOOPEXEC_ITERATION", "LOOPEXEC_WORKDIR"] {
        c.env_remove(v);
    }
    let mut child = c.spawn().expect("spawn loopexec");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).expect("write stdin");
    }
    drop(input);
    let (status, stdout, _) = wait_with_output(&mut child, HANG_LIMIT);
    (
        code_of(status),
        String::from_utf8_lossy(&stdout).into_owned(),
    )
}

/// Replaces what differs between honest runs in a text: the repo's paths, times,
/// durations, git object ids, halt-event and hold ids, secret counts.
fn scrub_text(s: &str, r: &Repo) -> String {
    let canon = std::fs::canonicalize(r.path()).unwrap();
    let outside = std::fs::canonicalize(r.outside()).unwrap();
    let mut s = redact_text(s, &canon.display().to_string());
    s = redact_text(&s, &r.path().display().to_string());
    s = s.replace(&outside.display().to_string(), "[tmp]");
    s = s.replace(&r.outside().display().to_string(), "[tmp]");
    for (re, to) in [
        (r"\b[0-9a-f]{32}\b", "[id]"),
        (r"hold-[0-9a-f]+", "hold-[id]"),
        (r"\b\d+ provider secret", "[n] provider secret"),
        (r"\d+ms\b", "[ms]"),
    ] {
        s = regex::Regex::new(re)
            .unwrap()
            .replace_all(&s, to)
            .into_owned();
    }
    s
}

/// The JSON output with [`redact`]'s keys and [`scrub_text`]'s patterns replaced.
fn scrub_json(mut v: Value, r: &Repo) -> Value {
    redact(&mut v, &r.path().display().to_string());
    // Which provider secrets the test's environment holds is not the contract.
    if let Some(lines) = v.get_mut("checks").and_then(Value::as_array_mut) {
        for l in lines {
            if l["name"] == "credentials" {
                l["detail"]["stripped"] = Value::from("[redacted]");
            }
        }
    }
    let text = scrub_text(&serde_json::to_string_pretty(&v).unwrap(), r);
    serde_json::from_str(&text).expect("scrubbed JSON parses")
}

/// Runs a command with `--json`, checks its exit code and schema, snapshots it; then
/// (when `human` is given) runs `human` without `--json` and snapshots that text.
fn contract(r: &Repo, schema: &str, code: i32, args: &[&str], human: Option<&[&str]>) -> Value {
    contract_in(r, schema, code, args, human, None)
}

fn contract_in(
    r: &Repo,
    schema: &str,
    code: i32,
    args: &[&str],
    human: Option<&[&str]>,
    stdin: Option<&str>,
) -> Value {
    let (c, out) = call(r, true, args, stdin);
    let v: Value = serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("{args:?}: stdout is not one JSON object ({e}): {out}"));
    assert_eq!(c, code, "{args:?}: exit {c}: {v}");
    assert_eq!(v["exit_code"], code, "{args:?}: {v}");
    assert_valid(schema, &v);
    let name = schema.replace('-', "_");
    insta::assert_json_snapshot!(format!("{name}_json"), scrub_json(v.clone(), r));
    if let Some(h) = human {
        let (hc, text) = call(r, false, h, stdin);
        assert_eq!(hc, code, "{h:?}: exit {hc}: {text}");
        assert!(!text.trim().is_empty(), "{h:?} printed nothing");
        insta::assert_snapshot!(format!("{name}_human"), scrub_text(&text, r));
    }
    v
}

#[test]
fn measuring_commands_validate_against_their_schemas_and_are_snapshotted() {
    let r = converged("c");
    let ic = contract(
        &r,
        "inspect-cost",
        0,
        &["inspect-cost", "--run-id", "c"],
        Some(&["inspect-cost", "--run-id", "c"]),
    );
    assert_eq!(ic["iterations"][0]["cost_usd"], Value::Null, "{ic}");
    assert_eq!(ic["total_known"], false);
    // A ledger over the cap: exit 18, budget_exceeded.
    std::fs::write(r.outside().join("costs.txt"), "1.0\n2.5\n").unwrap();
    let ledger = r.outside().join("costs.txt").display().to_string();
    let capped = ["inspect-cost", "--ledger", &ledger, "--budget-usd", "3"];
    let (c, out) = call(&r, true, &capped, None);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        (c, v["halt_reason"].as_str()),
        (18, Some("budget_exceeded"))
    );
    assert_valid("inspect-cost", &v);

    contract(&r, "check", 0, &["check"], Some(&["check"]));
    let probe = [
        "probe-check",
        "--check",
        "sh check.sh",
        "--test-format",
        "tap",
        "--runs",
        "2",
        "--reruns",
        "1",
        "--dimensions",
        "tz",
    ];
    let p = contract(&r, "probe-check", 0, &probe, Some(&probe));
    assert_eq!(p["status"], "inconclusive", "{p}");
    let doctor = ["doctor", "--check", "sh check.sh", "--probe-runs", "2"];
    contract(&r, "doctor", 0, &doctor, Some(&doctor));
    r.write("TASK.md", "Make every test pass.\n");
    let bc = [
        "build-context",
        "--task",
        "TASK.md",
        "--model",
        "claude-sonnet-4-5",
        "--run-id",
        "c",
    ];
    let b = contract(&r, "build-context", 0, &bc, Some(&bc));
    assert_eq!(b["fits"], true, "{b}");
    let w = contract(
        &r,
        "watch",
        0,
        &["watch", "--run-id", "c"],
        Some(&["watch", "--run-id", "c"]),
    );
    assert_eq!(w["status"], "finished");
    assert_eq!(w["run"]["halt_reason"], w["run_halt_reason"]);
}

#[test]
fn control_commands_validate_against_their_schemas_and_are_snapshotted() {
    let r = converged("c");
    // hold, holds, release (the human rendering on a second hold).
    let h = contract(
        &r,
        "hold",
        0,
        &["hold", "--reason", "look", "--by", "alice"],
        None,
    );
    let (_, text) = call(
        &r,
        false,
        &["hold", "--reason", "later", "--by", "bob"],
        None,
    );
    insta::assert_snapshot!("hold_human", scrub_text(&text, &r));
    let second = regex::Regex::new(r"hold-[0-9a-f]+")
        .unwrap()
        .find(&text)
        .expect("a hold id")
        .as_str()
        .to_string();
    let holds = contract(&r, "holds", 0, &["holds"], Some(&["holds"]));
    assert_eq!(holds["holds"].as_array().unwrap().len(), 2, "{holds}");
    let first = h["hold_id"].as_str().unwrap();
    contract(&r, "release", 0, &["release", first, "--by", "alice"], None);
    let (c, text) = call(&r, false, &["release", &second, "--by", "bob"], None);
    assert_eq!(c, 0, "{text}");
    insta::assert_snapshot!("release_human", scrub_text(&text, &r));

    // halts and ack (a halt event; a run's work).
    let halts = contract(&r, "halts", 0, &["halts"], Some(&["halts"]));
    let id = halts["halts"][0]["id"].as_str().unwrap().to_string();
    let ack = [
        "ack",
        id.as_str(),
        "--by",
        "alice",
        "--resolution",
        "resolved",
    ];
    let a = contract(&r, "ack", 0, &ack, None);
    assert_eq!(a["halt_id"], id.as_str());
    let (c, text) = call(
        &r,
        false,
        &["ack", "--run-id", "c", "--reviewer", "alice"],
        None,
    );
    assert_eq!(c, 0, "{text}");
    insta::assert_snapshot!("ack_human", scrub_text(&text, &r));
    let (c, out) = call(
        &r,
        true,
        &["ack", "--run-id", "c", "--reviewer", "alice"],
        None,
    );
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(c, 0, "{v}");
    assert_valid("ack", &v);
    assert_eq!(v["run"]["run_id"], "c");

    // pending, confirm, deny: actions a run asked a person about.
    let store = loopexec::store::Store::open(&r.path().join(".loopexec/ledger.sqlite")).unwrap();
    for n in 1..=4 {
        store
            .add_pending(&loopexec::store::PendingAction {
                id: format!("act-{n}"),
                run_id: "c".into(),
                hold_id: None,
                tool: "Bash".into(),
                target: "git push --force".into(),
                description: "force push".into(),
                classification: "destructive (git-push-force)".into(),
                requested_at: "2026-01-01T00:00:00Z".into(),
                decision: None,
                decided_by: None,
                decided_at: None,
            })
            .unwrap();
    }
    let p = contract(&r, "pending", 0, &["pending"], Some(&["pending"]));
    assert_eq!(p["pending"].as_array().unwrap().len(), 4);
    contract(
        &r,
        "confirm",
        0,
        &["confirm", "act-1", "--by", "alice"],
        Some(&["confirm", "act-2", "--by", "alice"]),
    );
    let d = contract(
        &r,
        "deny",
        0,
        &["deny", "act-3", "--by", "alice"],
        Some(&["deny", "act-4", "--by", "alice"]),
    );
    assert_eq!(d["decision"], "denied");

    // gate: the hook's answer, as the agent reads it and inside the envelope.
    let payload = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/agent-output/hooks/claude_pre_bash_force_push.json"),
    )
    .unwrap();
    let g = contract_in(&r, "gate", 0, &["gate"], Some(&["gate"]), Some(&payload));
    assert_eq!(
        g["hook_output"]["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
    let (c, out) = call(&r, true, &["gate"], Some("not json"));
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!((c, v["status"].as_str()), (2, Some("error")), "{v}");
    assert_valid("gate", &v);
}

/// Every subcommand's `--help` (and the top level's), so a change of the text shows
/// in review. Subcommands are taken from the command definition, so a new one is
/// covered without editing this test.
#[test]
fn help_texts_are_snapshotted() {
    let top = loopexec::cli::command();
    let mut names = vec![String::new()];
    names.extend(
        top.get_subcommands()
            .map(|c| c.get_name().to_string())
            .filter(|n| n != "help"),
    );
    for name in names {
        let mut c = Command::new(bin());
        if !name.is_empty() {
            c.arg(&name);
        }
        c.arg("--help");
        let out = run_cmd(c);
        assert_eq!(out.code, 0, "{name} --help: {}", out.stderr);
        let text = String::from_utf8(out.stdout).unwrap();
        let snap = if name.is_empty() {
            "help_top".to_string()
        } else {
            format!("help_{}", name.replace('-', "_"))
        };
        insta::assert_snapshot!(snap, text);
    }
}

/// Every `LOOPEXEC_*` variable loopexec sets for its steps or reads is documented
/// where a user looks: the README and `run --help`. The list comes from the source,
/// so a new variable without documentation fails here.
#[test]
fn every_loopexec_variable_is_in_the_readme_and_run_help() {
    // Read only by loopexec's own test suites and sample tooling.
    const DEVELOPER_ONLY: [&str; 4] = [
        "LOOPEXEC_BLESS",
        "LOOPEXEC_PARSE_DUMP",
        "LOOPEXEC_SAMPLES",
        "LOOPEXEC_UPDATE_SCHEMAS",
    ];
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    walk(&root.join("src"), &mut files);
    let re = regex::Regex::new(r#""(LOOPEXEC_[A-Z_]+)""#).unwrap();
    let mut vars: Vec<String> = files
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            re.captures_iter(&text)
                .map(|c| c[1].to_string())
                .collect::<Vec<_>>()
        })
        .filter(|v| !DEVELOPER_ONLY.contains(&v.as_str()))
        .collect();
    vars.sort();
    vars.dedup();
    assert!(vars.len() >= 10, "{vars:?}");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut c = Command::new(bin());
    c.args(["run", "--help"]);
    let help = String::from_utf8(run_cmd(c).stdout).unwrap();
    for v in &vars {
        assert!(readme.contains(&format!("`{v}`")), "README lacks {v}");
        assert!(help.contains(v.as_str()), "run --help lacks {v}");
    }
}
