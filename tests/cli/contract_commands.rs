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
        .env("USER", "tester")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for v in ["LOOPEXEC_RUN_ID", "LOOPEXEC_ITERATION", "LOOPEXEC_WORKDIR"] {
        c.env_remove(v);
    }
    // Global holds live in the user's state directory: the hold commands get their
    // own, so no other hold shows up. (Runs keep the default one: it also holds the
    // snapshot stores that `check` and the printed commands name.)
    if matches!(args.first(), Some(&("hold" | "holds" | "release"))) {
        c.env("LOOPEXEC_STATE_DIR", r.outside().join("state"));
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
                call_waiting: false,
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

/// Replaces the values of `keys` (anywhere in `v`) with `[redacted]`.
fn redact_keys(v: &mut Value, keys: &[&str]) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if keys.contains(&k.as_str()) {
                    *x = Value::from("[redacted]");
                } else {
                    redact_keys(x, keys);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| redact_keys(x, keys)),
        _ => {}
    }
}

/// `run` and `report` in human form, and the commands around a finished run —
/// `init`, `keygen`, `attest`, `verify`, `gc` — in both forms.
#[test]
fn run_report_init_and_signing_commands_are_snapshotted() {
    let r = converged("c");
    let (_, text) = call(&r, false, &["report", "--run-id", "c"], None);
    let dur = regex::Regex::new(r"(exit \d+|-)\s+(\d+|-)").unwrap();
    let report = dur.replace_all(&text, "$1 [ms]").into_owned();
    insta::assert_snapshot!("report_human", scrub_text(&report, &r));
    let (_, md) = call(
        &r,
        false,
        &["report", "--run-id", "c", "--format", "markdown"],
        None,
    );
    // Durations (the exec and check columns, the run's length) differ between runs.
    let md: String = md
        .lines()
        .map(|l| {
            let mut cols: Vec<String> = l.split('|').map(str::to_string).collect();
            if cols.len() == 10 && cols[1].trim().parse::<u32>().is_ok() {
                cols[5] = " [ms] ".into();
                cols[6] = " [ms] ".into();
            }
            cols.join("|") + "\n"
        })
        .collect();
    let md = regex::Regex::new(r"after \d+\.\ds")
        .unwrap()
        .replace_all(&md, "after [s]")
        .into_owned();
    insta::assert_snapshot!("report_markdown", scrub_text(&md, &r));

    let r2 = crate::contract::tap_repo("t1");
    let mut c = Command::new(bin());
    c.args(["--quiet", "--workdir"])
        .arg(r2.path())
        .args(["run", "--run-id", "one", "--exec", crate::contract::FIX_ONE])
        .args(["--check", "sh check.sh", "--test-format", "tap"])
        .current_dir(r2.path());
    let out = run_cmd(c);
    assert_eq!(out.code, 10, "{}", out.stderr);
    let text = String::from_utf8(out.stdout).unwrap();
    insta::assert_snapshot!("run_human", scrub_text(&text, &r2));

    let keys = r.outside().join("keys");
    std::fs::create_dir(&keys).unwrap();
    let kd = keys.display().to_string();
    let kg = contract(&r, "keygen", 0, &["keygen", "--out", &kd], None);
    let sk = kg["private_key"].as_str().unwrap().to_string();
    let pk = kg["public_key"].as_str().unwrap().to_string();
    let (c, at) = call(&r, true, &["attest", "c", "--key", &sk], None);
    assert_eq!(c, 0, "{at}");
    let mut at: Value = serde_json::from_str(at.trim()).unwrap();
    assert_valid("attest", &at);
    let env = at["attestation_path"].as_str().unwrap().to_string();
    redact_keys(&mut at, &["attestation", "digest", "keyid", "fingerprint"]);
    insta::assert_json_snapshot!("attest_json", scrub_json(at, &r));
    let (_, text) = call(&r, false, &["attest", "c", "--key", &sk], None);
    let hex = regex::Regex::new(r"\b[0-9a-f]{16,}\b").unwrap();
    insta::assert_snapshot!(
        "attest_human",
        hex.replace_all(&scrub_text(&text, &r), "[hex]")
    );
    let (c, vf) = call(&r, true, &["verify", &env, "--pub", &pk], None);
    assert_eq!(c, 0, "{vf}");
    let mut vf: Value = serde_json::from_str(vf.trim()).unwrap();
    assert_valid("verify", &vf);
    redact_keys(&mut vf, &["keyid", "fingerprint", "digest"]);
    insta::assert_json_snapshot!("verify_json", scrub_json(vf, &r));
    let (_, text) = call(&r, false, &["verify", &env, "--pub", &pk], None);
    insta::assert_snapshot!(
        "verify_human",
        hex.replace_all(&scrub_text(&text, &r), "[hex]")
    );
    let fresh = r.outside().join("keys2");
    std::fs::create_dir(&fresh).unwrap();
    let fresh = fresh.display().to_string();
    let (c, text) = call(&r, false, &["keygen", "--out", &fresh], None);
    assert_eq!(c, 0, "{text}");
    insta::assert_snapshot!(
        "keygen_human",
        hex.replace_all(&scrub_text(&text, &r), "[hex]")
    );
    contract(
        &r,
        "gc",
        0,
        &["gc", "--keep", "1"],
        Some(&["gc", "--keep", "1"]),
    );
}

/// `init` writes the check it detects from the project's files, and a run reads it.
#[test]
fn init_detects_the_project_and_writes_its_check() {
    for (files, check, from) in [
        (
            &[("Cargo.toml", "[package]\nname = \"x\"\n")][..],
            "cargo test",
            "Cargo.toml",
        ),
        (&[("go.mod", "module x\n")][..], "go test ./...", "go.mod"),
        (
            &[("package.json", r#"{"scripts": {"test": "jest"}}"#)][..],
            "npm test",
            "package.json",
        ),
        (
            &[("pyproject.toml", "[tool.pytest.ini_options]\n")][..],
            "python3 -m pytest",
            "pyproject.toml",
        ),
        (
            &[("pyproject.toml", "[project]\n"), ("tests/test_a.py", "")][..],
            "python3 -m pytest",
            "pyproject.toml",
        ),
    ] {
        let r = Repo::new();
        for (f, c) in files {
            r.write(f, c);
        }
        r.commit("project");
        let v = r.lx(&["init"]).expect(0, None);
        assert_valid("init", &v);
        assert_eq!(v["check"], check, "{v}");
        assert_eq!(v["detected_from"], from, "{v}");
        let toml = r.read("loop.toml");
        assert!(
            toml.lines().any(|l| l == format!("check = \"{check}\"")),
            "{toml}"
        );
    }
    // Nothing to detect: the check stays a commented example, and init says so.
    let r = Repo::with_f();
    let (c, text) = call(&r, false, &["init"], None);
    assert_eq!(c, 0, "{text}");
    insta::assert_snapshot!("init_human_undetected", scrub_text(&text, &r));
    let r = Repo::new();
    r.write("Cargo.toml", "[package]\nname = \"x\"\n")
        .commit("p");
    let (_, text) = call(&r, false, &["init"], None);
    insta::assert_snapshot!("init_human", scrub_text(&text, &r));
    let v = scrub_json(r.lx(&["init", "--force"]).expect(0, None), &r);
    insta::assert_json_snapshot!("init_json", v);
}

/// A loop.toml error as a user sees it: the file, the TOML table, and the caret
/// diagram on lines of its own, its columns lined up under the bullet.
#[test]
fn a_config_error_names_the_table_and_shows_the_caret_diagram_on_its_own_lines() {
    let r = Repo::with_f();
    r.write(
        "loop.toml",
        "check = \"true\"\n\n[budget]\nusd = \"lots\"\n",
    );
    let v = r
        .lx(&["run", "--exec", "true"])
        .expect(20, Some("invariant_failed"));
    let msg = v["errors"][0].as_str().unwrap();
    assert!(
        msg.contains("loop.toml is not valid: in table [budget]"),
        "{msg}"
    );
    let (c, text) = call(&r, false, &["--quiet", "run", "--exec", "true"], None);
    assert_eq!(c, 20, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let src = lines
        .iter()
        .position(|l| l.ends_with("4 | usd = \"lots\""))
        .unwrap_or_else(|| panic!("the offending line on its own: {text}"));
    let caret = lines[src + 1];
    assert_eq!(
        caret.trim().trim_start_matches('|').trim(),
        "^^^^^^",
        "{text}"
    );
    // The caret sits under the value: same column as `"lots"` in the source line.
    assert_eq!(
        caret.find('^'),
        lines[src].find("\"lots\""),
        "caret misaligned: {text}"
    );
    assert!(
        lines[src].starts_with("    "),
        "indented under the bullet: {text}"
    );
    insta::assert_snapshot!("config_error_human", scrub_text(&text, &r));
}

/// Every command's own exit codes are documented in exit-codes.md and printed by
/// `loopexec help exit-codes` (the same text); the list of commands comes from the
/// command definition, so a new command without documentation fails here.
#[test]
fn every_command_has_its_exit_codes_in_exit_codes_md_and_help() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("exit-codes.md"))
        .unwrap();
    let section = &doc[doc
        .find("## Exit codes of the checking commands")
        .expect("the section")..];
    let mut c = Command::new(bin());
    c.args(["help", "exit-codes"]);
    let help = String::from_utf8(run_cmd(c).stdout).unwrap();
    for sub in loopexec::cli::command().get_subcommands() {
        let name = sub.get_name();
        if ["run", "help"].contains(&name) {
            continue; // `run`'s codes are the table itself
        }
        let tag = format!("`{name}`");
        assert!(section.contains(&tag), "exit-codes.md does not list {name}");
        assert!(help.contains(&tag), "help exit-codes does not list {name}");
    }
}

/// Progress on stderr in `--json` mode too (CI logs see the loop alive): a line per
/// step start and per verdict with the iteration, the phase, the failing count and
/// its change, the spend so far and the elapsed time; stdout stays one JSON object.
#[test]
fn progress_lines_carry_phase_failing_delta_spend_and_elapsed() {
    let r = crate::contract::tap_repo("t1 t2");
    let out = r.lx_tap(crate::contract::FIX_ONE, &["--max-iterations", "5"]);
    out.expect(10, Some("success_condition_met"));
    let err = &out.stderr;
    assert!(
        err.contains("iteration 1/5 · exec · 2 failing so far"),
        "{err}"
    );
    let verdict = err
        .lines()
        .find(|l| l.contains("iteration 1/5 · verdict red"))
        .unwrap_or_else(|| panic!("no verdict line: {err}"));
    for part in ["1 failing (-1) of 3 collected", "spend unknown", "elapsed "] {
        assert!(verdict.contains(part), "{part}: {verdict}");
    }
    assert!(
        err.contains("iteration 2/5 · verdict green: 0 failing (-1)"),
        "{err}"
    );
}

/// Shell completions and the man page come from the command definition, so every
/// subcommand is in both.
#[test]
fn completions_and_man_page_cover_every_command() {
    let text = |args: &[&str]| {
        let mut c = Command::new(bin());
        c.args(args);
        let out = run_cmd(c);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        String::from_utf8(out.stdout).unwrap()
    };
    let bash = text(&["completions", "bash"]);
    let zsh = text(&["completions", "zsh"]);
    let fish = text(&["completions", "fish"]);
    let man = text(&["man"]);
    assert!(bash.contains("complete -F"), "{bash}");
    assert!(zsh.starts_with("#compdef loopexec"), "{zsh}");
    assert!(
        man.starts_with(".ie \\n(.g") || man.contains(".TH loopexec"),
        "{man}"
    );
    for sub in loopexec::cli::command().get_subcommands() {
        let name = sub.get_name();
        for (shell, script) in [("bash", &bash), ("zsh", &zsh), ("fish", &fish)] {
            assert!(script.contains(name), "{shell} completion lacks {name}");
        }
        if name != "help" {
            assert!(
                man.contains(&format!(".SS \"loopexec {name}\"")),
                "man page lacks a section for {name}"
            );
        }
    }
}

/// A command that fails before it has a result prints the envelope alone, which
/// validates against `schemas/error.json` (every output is its command's schema or
/// that one).
#[test]
fn error_outputs_validate_against_the_error_schema() {
    let r = Repo::with_f();
    let ledger = r.outside().join("missing.txt").display().to_string();
    for (args, code, status) in [
        (vec!["status", "--run-id", "nope"], 1, "error"),
        (vec!["report", "--run-id", "../x"], 1, "error"),
        (vec!["run", "--no-such-flag"], 2, "usage_error"),
        // exit 2 found by the command, not the argument parser: the same status (a
        // new user's CI branched on `status` and saw `error`)
        (vec!["parse"], 2, "usage_error"),
        (
            vec!["probe-check", "--check", "true", "--dimensions", "tz,bogus"],
            2,
            "usage_error",
        ),
        (vec!["release", "hold-x", "--by", "alice"], 1, "error"),
        (vec!["confirm", "act-x", "--by", "alice"], 1, "error"),
        (vec!["inspect-cost", "--ledger", &ledger], 1, "error"),
    ] {
        let out = r.lx(&args);
        let v = out.expect(code, None);
        assert_eq!(v["status"], status, "{args:?}: {v}");
        assert!(!out.errors_text().is_empty(), "{args:?}: {v}");
        assert_valid("error", &v);
    }
    // the fix the human output's `hint:` line gives is in the JSON too (a new user's
    // `--json report nosuchrun` had only the message)
    let v = r.lx(&["report", "nosuchrun"]).expect(1, None);
    assert_eq!(v["hint"], "list runs with `loopexec runs`", "{v}");
}

/// The GitHub Actions example calls loopexec with subcommands and flags that exist.
#[test]
fn the_github_actions_example_uses_real_commands_and_flags() {
    let yml = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/github-actions/loopexec.yml"),
    )
    .unwrap();
    // Join shell continuation lines and blank quoted words (the agent's own flags),
    // then look at every `loopexec SUB …` call.
    let joined = yml.replace("\\\n", " ");
    let joined = regex::Regex::new(r#"'[^']*'|"[^"]*""#)
        .unwrap()
        .replace_all(&joined, "Q")
        .into_owned();
    let cmd = loopexec::cli::command();
    let mut calls = 0;
    for line in joined.lines() {
        let Some(at) = line.find("loopexec ") else {
            continue;
        };
        let words: Vec<&str> = line[at + "loopexec ".len()..].split_whitespace().collect();
        let Some(sub) = words.first().and_then(|w| cmd.find_subcommand(w)) else {
            continue; // prose, e.g. "see loopexec help exit-codes"
        };
        calls += 1;
        for w in words.iter().filter(|w| w.starts_with("--")) {
            let flag = w.trim_start_matches("--").split('=').next().unwrap();
            assert!(
                sub.get_arguments().any(|a| a.get_long() == Some(flag))
                    || cmd.get_arguments().any(|a| a.get_long() == Some(flag)),
                "loopexec {} has no --{flag} (examples/github-actions/loopexec.yml)",
                sub.get_name()
            );
        }
    }
    assert!(calls >= 4, "found {calls} loopexec calls");
}

/// `--version`, `--help` and `help COMMAND` keep the one-JSON-object promise under
/// `--json`, each valid against its schema, with the text people would see.
#[test]
fn version_and_help_print_their_schema_under_json() {
    let r = Repo::with_f();
    let out = r.lx(&["--version"]);
    let v = out.expect(0, None);
    assert_valid("version", &v);
    assert_eq!(v["text"], format!("loopexec {}", env!("CARGO_PKG_VERSION")));
    for args in [
        vec!["help"],
        vec!["--help"],
        vec!["help", "run"],
        vec!["run", "--help"],
    ] {
        let out = r.lx(&args);
        let v = out.expect(0, None);
        assert_valid("help", &v);
        let text = v["text"].as_str().unwrap_or_default();
        assert!(text.contains("Usage: loopexec"), "{args:?}: {v}");
        if args.contains(&"run") {
            assert!(text.contains("--max-iterations"), "{args:?}: {text}");
        }
    }
}
