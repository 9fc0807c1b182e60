//! The JSON contract, replay and attestation, end to end: every command's real output
//! validates against its committed schema (`schemas/`), the run's facts are the same
//! under `run` everywhere, a replay agrees with an honest receipt and names the
//! iteration of a forged one, `verify` refuses one changed byte, and snapshots of
//! the human and JSON output (timestamps, paths and durations redacted).

use crate::support::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// A TAP check over `tests` (count) and `failing` (names), and an agent that fixes
/// one failing test per iteration.
pub(crate) fn tap_repo(failing: &str) -> Repo {
    let r = Repo::new();
    r.write("tests", "3\n")
        .write("failing", &format!("{failing}\n"));
    r.tap_check(
        r#"n=$(cat tests); f=" $(cat failing) "; echo "TAP version 13"; echo "1..$n"; bad=0
for i in $(seq 1 "$n"); do case "$f" in *" t$i "*) echo "not ok $i - t$i"; bad=1;; *) echo "ok $i - t$i";; esac; done
exit $bad
"#,
    )
    .commit("fixture");
    r
}

pub(crate) const FIX_ONE: &str = r#"set -- $(cat failing); shift; echo "$*" > failing"#;

pub(crate) fn converged(run_id: &str) -> Repo {
    let r = tap_repo("t1 t2");
    r.lx_tap(FIX_ONE, &["--run-id", run_id, "--max-iterations", "5"])
        .expect(10, Some("success_condition_met"));
    r
}

fn schema(name: &str) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(&p).expect("committed schema")).expect("json")
}

pub(crate) fn assert_valid(name: &str, v: &Value) {
    let s = schema(name);
    let validator = jsonschema::validator_for(&s).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "{name} output does not match schemas/{name}.json: {errors:?}\n{v}"
    );
}

#[test]
fn every_command_output_validates_against_its_committed_schema() {
    let r = tap_repo("t1 t2");
    let run = r.lx_tap(FIX_ONE, &["--run-id", "sc", "--max-iterations", "5"]);
    assert_valid("run", &run.expect(10, Some("success_condition_met")));
    for (cmd, args) in [
        ("status", vec!["status"]),
        ("explain-halt", vec!["explain-halt"]),
        ("report", vec!["report"]),
        ("replay", vec!["replay", "sc"]),
        ("replay", vec!["replay", "sc", "--offline", "--reparse"]),
        ("runs", vec!["runs"]),
    ] {
        let v = r.lx(&args).expect(0, None);
        assert_valid(cmd, &v);
    }
    for line in verify_receipt(&r.receipt("sc")) {
        assert_valid("receipt-event", &line);
    }
    let keys = tempfile::tempdir().unwrap();
    let kd = keys.path().display().to_string();
    let kg = r.lx(&["keygen", "--out", &kd]).expect(0, None);
    assert_valid("keygen", &kg);
    let at = r
        .lx(&["attest", "sc", "--key", kg["private_key"].as_str().unwrap()])
        .expect(0, None);
    assert_valid("attest", &at);
    assert_valid("attestation-statement", &at["statement"]);
    let vf = r
        .lx(&[
            "verify",
            at["attestation_path"].as_str().unwrap(),
            "--pub",
            kg["public_key"].as_str().unwrap(),
        ])
        .expect(0, None);
    assert_valid("verify", &vf);
    assert_valid("gc", &r.lx(&["gc", "--keep", "1"]).expect(0, None));
    for (cmd, args) in [
        ("init", vec!["init"]),
        ("exit-codes", vec!["exit-codes"]),
        ("completions", vec!["completions", "bash"]),
        ("man", vec!["man"]),
    ] {
        assert_valid(cmd, &r.lx(&args).expect(0, None));
    }
    // `status`, `explain-halt` and `report` of a run that has not started a halt yet
    // are covered by the converged run above; watch and ack carry `run` too.
    let w = r.lx(&["watch", "--run-id", "sc"]).json();
    assert_eq!(w["run"]["run_id"], "sc");
}

#[test]
fn the_run_object_is_the_same_in_every_command() {
    let r = Repo::with_file("count", "0\n");
    let out = r.lx(&[
        "run",
        "--run-id",
        "same",
        "--exec",
        "n=$(cat count); echo $((n+1)) > count",
        "--check",
        "test \"$(cat count)\" -ge 50",
        "--max-iterations",
        "2",
    ]);
    let v = out.expect(12, Some("max_iterations_reached"));
    let facts = v["run"].clone();
    assert_eq!(facts["halt_reason"], "max_iterations_reached");
    assert_eq!(facts["halt_class"], "iteration-cap");
    assert_eq!(facts["exit_code"], 12);
    assert_eq!(facts["iteration"], 2);
    assert!(facts["duration_ms"].is_u64(), "{facts}");
    for cmd in ["status", "explain-halt", "report"] {
        let w = r.lx(&[cmd, "--run-id", "same"]).expect(0, None);
        assert_eq!(w["run"], facts, "{cmd}'s run object differs from run's");
        assert_eq!(
            w["exit_code"], 0,
            "{cmd}: the envelope's exit code is its own"
        );
    }
    // Compatibility: the top-level fields scenarios read are still there.
    let st = r.lx(&["status", "--run-id", "same"]).json();
    assert_eq!(st["halt_reason"], "max_iterations_reached");
    assert_eq!(st["halt_exit_code"], 12);
}

#[test]
fn report_json_carries_the_whole_run() {
    let r = converged("whole");
    let v = r.lx(&["report"]).expect(0, None);
    let its = v["iterations"].as_array().unwrap();
    assert_eq!(its.len(), 3, "baseline + 2 attempts: {v}");
    assert_eq!(
        its[0]["check"]["failing_names"],
        serde_json::json!(["t1", "t2"])
    );
    assert_eq!(its[1]["check"]["failing"], 1);
    assert_eq!(its[1]["check"]["collected"], 3);
    assert_eq!(its[2]["verdict"], "green");
    assert!(its.iter().all(|i| i["accepted"] == true), "{v}");
    assert_eq!(v["totals"]["iterations"], 3);
    assert_eq!(v["run"]["spend"]["unmetered_iterations"], 2);
}

#[test]
fn a_replay_of_a_converged_run_agrees() {
    let r = converged("ok");
    let v = r.lx(&["replay", "ok", "--runs", "2"]).expect(0, None);
    assert_eq!(v["agrees"], true, "{v}");
    assert_eq!(v["mode"], "live");
    let its = v["iterations"].as_array().unwrap();
    assert_eq!(its.len(), 3, "{v}");
    for i in its {
        assert_eq!(i["verdict"], "agrees", "{i}");
        assert_eq!(i["agreed"], 2);
        assert!(i["agreement_interval"][0].as_f64().unwrap() > 0.0);
    }
    let off = r
        .lx(&["replay", "ok", "--offline", "--reparse"])
        .expect(0, None);
    assert_eq!(off["derived_reason"], "success_condition_met");
    assert!(off["iterations"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["reparse_fingerprint"] == i["recorded_fingerprint"]));
}

/// An honest pytest run whose quiet transcript names only its failures: the loop
/// named the passing tests from its witness, and the replay runs the check the same
/// way. Before: the replay ran without the witness, read one collected test where the
/// receipt held two, and called every honest pytest run DISAGREES (exit 20).
#[test]
fn a_replay_of_an_honest_quiet_pytest_run_agrees() {
    if pytest_missing() {
        return;
    }
    let r = Repo::new();
    r.write("calc.py", "def add(a, b):\n    return a - b\n")
        .write(
            "tests/test_calc.py",
            "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
        )
        .commit("red");
    let fix = "printf 'def add(a, b):\\n    return a + b\\n' > calc.py";
    r.lx(&[
        "run",
        "--run-id",
        "py",
        "--exec",
        fix,
        "--check",
        "python3 -m pytest -q",
        "--max-iterations",
        "2",
    ])
    .expect(10, Some("success_condition_met"));
    let v = r.lx(&["replay", "py"]).expect(0, None);
    assert_eq!(v["agrees"], true, "{v}");
    let its = v["iterations"].as_array().unwrap();
    assert_eq!(its.len(), 2, "{v}");
    for i in its {
        assert_eq!(i["verdict"], "agrees", "{i}");
        assert_eq!(i["runs"][0]["collected"], 2, "{i}");
    }
}

/// Iteration 1 of an honest run was red (t2 failing); the forged receipt claims green.
fn claim_green_at_1(v: &mut Value) {
    if v["event"] == "check_finished" && v["iteration"] == 1 {
        v["step"]["exit_code"] = Value::from(0);
        for t in v["parsed"]["tests"].as_array_mut().unwrap() {
            t["outcome"] = Value::from("passed");
            t.as_object_mut().unwrap().remove("message");
        }
        v.as_object_mut().unwrap().remove("fingerprint");
    }
}

#[test]
fn a_replay_of_a_receipt_edited_to_claim_green_disagrees_and_names_the_iteration() {
    let r = converged("forged");
    forge_receipt(&r.receipt("forged"), claim_green_at_1);
    let out = r.lx(&["replay", "forged"]);
    let v = out.expect(20, None);
    assert_eq!(v["status"], "mismatch");
    assert_eq!(v["agrees"], false);
    assert_eq!(v["chain_intact"], true, "the forger recomputed the chain");
    assert_eq!(v["first_disagreement"], 1, "{v}");
    assert!(out.errors_text().contains("iteration 1"), "{v}");
    // An edit that leaves the recorded fingerprint is caught offline too.
    let r2 = converged("edited");
    let p = r2.receipt("edited");
    let text = std::fs::read_to_string(&p).unwrap();
    let edited: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["event"] == "check_finished" && v["iteration"] == 1 {
                let fp = v["fingerprint"].clone();
                claim_green_at_1(&mut v);
                v["fingerprint"] = fp;
            }
            serde_json::to_string(&v).unwrap()
        })
        .collect();
    std::fs::write(&p, edited.join("\n") + "\n").unwrap();
    let off = r2.lx(&["replay", "edited", "--offline"]).expect(20, None);
    assert_eq!(off["first_disagreement"], 1, "{off}");
    assert_eq!(off["chain_intact"], false, "{off}");
}

fn flip_byte(path: &Path, at: usize) {
    let mut b = std::fs::read(path).unwrap();
    let i = at.min(b.len() - 2);
    b[i] = if b[i] == b'0' { b'1' } else { b'0' };
    std::fs::write(path, b).unwrap();
}

/// A new user's review: `attest --out` wrote over any file, an older run's receipt
/// included (`loopexec check` then failed on it). Now a file that exists and is not an
/// attestation is refused and left as it was; re-attesting over an attestation works.
#[test]
fn attest_refuses_to_write_over_a_file_that_is_not_an_attestation() {
    let r = converged("first");
    r.lx(&["run", "--run-id", "second", "--check", "true"])
        .expect(10, Some("success_condition_met"));
    let keys = tempfile::tempdir().unwrap();
    let kd = keys.path().join("k").display().to_string();
    let kg = r.lx(&["keygen", "--out", &kd]).expect(0, None);
    let sk = kg["private_key"].as_str().unwrap().to_string();
    let receipt = r.receipt("first");
    let before = std::fs::read(&receipt).unwrap();
    let out = r.lx(&[
        "attest",
        "second",
        "--key",
        &sk,
        "--out",
        &receipt.display().to_string(),
    ]);
    assert_eq!(out.code, 1, "{}", out.errors_text());
    assert!(
        out.errors_text().contains("exists"),
        "{}",
        out.errors_text()
    );
    assert_eq!(
        std::fs::read(&receipt).unwrap(),
        before,
        "the receipt was overwritten"
    );
    r.lx(&["check"]).expect(0, None);
    let at = keys.path().join("second.intoto.json").display().to_string();
    for _ in 0..2 {
        r.lx(&["attest", "second", "--key", &sk, "--out", &at])
            .expect(0, None);
    }
}

#[test]
fn verify_refuses_a_receipt_or_an_envelope_changed_by_one_byte() {
    let r = converged("att");
    let keys = tempfile::tempdir().unwrap();
    // the README's `--out ~/.config/loopexec` on a fresh machine: not there yet
    let kd = keys.path().join("config/loopexec").display().to_string();
    let kg = r.lx(&["keygen", "--out", &kd]).expect(0, None);
    let (sk, pk) = (
        kg["private_key"].as_str().unwrap().to_string(),
        kg["public_key"].as_str().unwrap().to_string(),
    );
    let no_key = r.lx(&["attest", "att"]);
    assert_eq!(no_key.code, 2, "attest without --key is a usage error");
    assert!(
        no_key.errors_text().contains("--key"),
        "{}",
        no_key.errors_text()
    );
    let at = r.lx(&["attest", "att", "--key", &sk]).expect(0, None);
    let env_path = at["attestation_path"].as_str().unwrap().to_string();
    let st = &at["statement"];
    assert_eq!(st["predicateType"], "https://loopexec.dev/verdict/v1");
    assert_eq!(st["predicate"]["halt_reason"], "success_condition_met");
    assert!(st["subject"][0]["digest"]["sha256"].is_string());
    r.lx(&["verify", &env_path, "--pub", &pk]).expect(0, None);
    // The command `attest` prints works from any directory: the receipt is found in
    // the workspace the attestation lies in (a new user's review got 13 from `/`).
    let mut cmd = std::process::Command::new(crate::support::bin());
    cmd.args(["--json", "verify", &env_path, "--pub", &pk])
        .current_dir(r.outside());
    crate::support::run_cmd(cmd).expect(0, None);
    // A receipt that cannot be read is exit 1 (a file loopexec cannot read), naming
    // it: no integrity verdict for CI to branch on.
    let receipt = r.receipt("att");
    let aside = r.outside().join("aside.jsonl");
    std::fs::rename(&receipt, &aside).unwrap();
    let gone = r.lx(&["verify", &env_path, "--pub", &pk]);
    assert_eq!(gone.code, 1, "{}", gone.errors_text());
    assert!(
        gone.errors_text().contains("cannot read the receipt"),
        "{}",
        gone.errors_text()
    );
    std::fs::rename(&aside, &receipt).unwrap();

    // One byte of the receipt.
    let receipt = r.receipt("att");
    let original = std::fs::read(&receipt).unwrap();
    flip_byte(&receipt, original.len() / 2);
    let bad = r.lx(&["verify", &env_path, "--pub", &pk]);
    let v = bad.expect(13, None);
    assert_eq!(v["signature_valid"], true);
    assert_eq!(v["receipt_matches"], false);
    std::fs::write(&receipt, &original).unwrap();
    r.lx(&["verify", &env_path, "--pub", &pk]).expect(0, None);

    // One byte of the signed payload (decoded, changed, re-encoded).
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let env: Value = serde_json::from_str(&std::fs::read_to_string(&env_path).unwrap()).unwrap();
    let mut payload = b64.decode(env["payload"].as_str().unwrap()).unwrap();
    let mid = payload.len() / 2;
    payload[mid] ^= 0x01;
    let mut tampered = env.clone();
    tampered["payload"] = Value::from(b64.encode(&payload));
    let tp = r.outside().join("tampered.json");
    std::fs::write(&tp, tampered.to_string()).unwrap();
    let v = r
        .lx(&["verify", tp.to_str().unwrap(), "--pub", &pk])
        .expect(13, None);
    assert_eq!(v["signature_valid"], false, "{v}");
    // One byte of the envelope file itself (inside the signature).
    let raw = std::fs::read_to_string(&env_path).unwrap();
    let sig_at = raw.find("\"sig\"").unwrap() + 10;
    let ep = r.outside().join("env-byte.json");
    std::fs::write(&ep, &raw).unwrap();
    flip_byte(&ep, sig_at);
    r.lx(&["verify", ep.to_str().unwrap(), "--pub", &pk])
        .expect(13, None);
}

/// An envelope over `statement` signed as loopexec signs one (DSSE, ed25519 over
/// the pre-authentication encoding) with the secret key file at `key_file`: what an
/// agent that can read the user's key does.
fn resign(statement: &Value, key_file: &str) -> Value {
    use base64::Engine as _;
    use ed25519_dalek::Signer as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let text = std::fs::read_to_string(key_file).unwrap();
    let seed: [u8; 32] = b64
        .decode(text.split_whitespace().nth(1).unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    let key = ed25519_dalek::SigningKey::from_bytes(&seed);
    let payload = serde_json::to_vec(statement).unwrap();
    let typ = "application/vnd.in-toto+json";
    let mut pae = format!("DSSEv1 {} {typ} {} ", typ.len(), payload.len()).into_bytes();
    pae.extend_from_slice(&payload);
    serde_json::json!({
        "payloadType": typ,
        "payload": b64.encode(&payload),
        "signatures": [{"keyid": "forged", "sig": b64.encode(key.sign(&pae).to_bytes())}],
    })
}

/// A run that ended red, attested honestly, verifies (0). Its statement rewritten
/// and signed again with the same key (the agent can read it, SPEC §13.3) has a good
/// signature over the right receipt digest; `verify` re-derives the statement from
/// the receipt and exits 13 naming each field the signed one got wrong.
#[test]
fn verify_refuses_a_re_signed_statement_the_receipt_does_not_say() {
    let r = tap_repo("t1 t2");
    r.lx_tap("true", &["--run-id", "red", "--max-iterations", "2"])
        .expect(12, Some("max_iterations_reached"));
    let keys = tempfile::tempdir().unwrap();
    let kd = keys.path().display().to_string();
    let kg = r.lx(&["keygen", "--out", &kd]).expect(0, None);
    let (sk, pk) = (
        kg["private_key"].as_str().unwrap().to_string(),
        kg["public_key"].as_str().unwrap().to_string(),
    );
    let at = r.lx(&["attest", "red", "--key", &sk]).expect(0, None);
    let honest = at["statement"].clone();
    assert_eq!(honest["predicate"]["exit_code"], 12, "{honest}");
    let env_path = at["attestation_path"].as_str().unwrap().to_string();
    let ok = r.lx(&["verify", &env_path, "--pub", &pk]).expect(0, None);
    assert_eq!(ok["statement_matches"], true, "{ok}");
    assert_eq!(ok["mismatches"], serde_json::json!([]), "{ok}");
    // the honest statement signed again by the test: the signing itself is loopexec's
    let same = r.outside().join("same.json");
    std::fs::write(&same, resign(&honest, &sk).to_string()).unwrap();
    r.lx(&["verify", same.to_str().unwrap(), "--pub", &pk])
        .expect(0, None);

    // the empty tree
    const OTHER_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
    type Edit = fn(&mut Value);
    let cases: [(&str, Edit, &[&str]); 5] = [
        (
            "the red verdict said green",
            |s| {
                s["predicate"]["halt_reason"] = "success_condition_met".into();
                s["predicate"]["halt_class"] = "converged".into();
                s["predicate"]["exit_code"] = 10.into();
            },
            &[
                "predicate.exit_code",
                "predicate.halt_class",
                "predicate.halt_reason",
            ],
        ),
        (
            "another tree named",
            |s| s["subject"][1]["digest"]["gitTree"] = OTHER_TREE.into(),
            &["subject[1].digest.gitTree"],
        ),
        (
            "fewer iterations",
            |s| s["predicate"]["iterations"] = 1.into(),
            &["predicate.iterations"],
        ),
        (
            "a verdict field loopexec never writes",
            |s| s["predicate"]["verdict"] = "green".into(),
            &["predicate.verdict"],
        ),
        (
            "the tree subject dropped",
            |s| {
                s["subject"].as_array_mut().unwrap().truncate(1);
            },
            &["subject[1]"],
        ),
    ];
    for (what, edit, named) in cases {
        let mut forged = honest.clone();
        edit(&mut forged);
        let fp = r.outside().join("forged.json");
        std::fs::write(&fp, resign(&forged, &sk).to_string()).unwrap();
        let out = r.lx(&["verify", fp.to_str().unwrap(), "--pub", &pk]);
        let v = out.expect(13, None);
        assert_eq!(v["status"], "invalid", "{what}: {v}");
        assert_eq!(v["signature_valid"], true, "{what}: {v}");
        assert_eq!(v["receipt_matches"], true, "{what}: {v}");
        assert_eq!(v["statement_matches"], false, "{what}: {v}");
        let got: Vec<&str> = v["mismatches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap().split(':').next().unwrap())
            .collect();
        assert_eq!(got, named, "{what}: {v}");
        for n in named {
            assert!(
                out.errors_text().contains(n),
                "{what}: {}",
                out.errors_text()
            );
        }
        // checked as a file (`--receipt`), the receipt says the same
        let receipt = r.receipt("red").display().to_string();
        r.lx(&[
            "verify",
            fp.to_str().unwrap(),
            "--pub",
            &pk,
            "--receipt",
            &receipt,
        ])
        .expect(13, None);
    }
    // the honest attestation still verifies
    r.lx(&["verify", &env_path, "--pub", &pk]).expect(0, None);
}

/// `gc --stores` removes the snapshot store of a workdir that no longer exists (a
/// deleted temporary checkout) and keeps the store of one that does; plain `gc`
/// leaves stores alone.
#[test]
fn gc_stores_removes_the_stores_of_workdirs_that_are_gone() {
    let state = tempfile::tempdir().unwrap();
    let env = [("LOOPEXEC_STATE_DIR", state.path().to_str().unwrap())];
    let gone = Repo::new();
    gone.write("a.txt", "1\n").commit("x");
    let kept = Repo::new();
    kept.write("a.txt", "1\n").commit("x");
    for r in [&gone, &kept] {
        r.lx_env(&["run", "--exec", "true", "--check", "true"], &env)
            .expect(10, None);
    }
    let gone_path = gone.path().to_path_buf();
    drop(gone);
    assert!(!gone_path.exists());
    let stores = || {
        std::fs::read_dir(state.path().join("stores"))
            .unwrap()
            .count()
    };
    assert_eq!(stores(), 2);
    let plain = kept.lx_env(&["gc"], &env).expect(0, None);
    assert_eq!(plain["stores_removed"], serde_json::json!([]), "{plain}");
    assert_eq!(stores(), 2);
    let gc = kept.lx_env(&["gc", "--stores"], &env).expect(0, None);
    assert_valid("gc", &gc);
    assert_eq!(
        gc["stores_removed"],
        serde_json::json!([gone_path.display().to_string()]),
        "{gc}"
    );
    assert_eq!(gc["stores_unknown"], 0, "{gc}");
    assert_eq!(stores(), 1);
}

#[test]
fn runs_lists_and_gc_keeps_the_newest() {
    let r = converged("first");
    r.git(&["checkout", "-q", "--", "failing"]);
    r.lx_tap(FIX_ONE, &["--run-id", "second", "--max-iterations", "5"])
        .expect(10, None);
    let v = r.lx(&["runs"]).expect(0, None);
    let ids: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["second", "first"]);
    let gc = r.lx(&["gc", "--keep", "1"]).expect(0, None);
    assert_eq!(gc["removed"], serde_json::json!(["first"]));
    assert!(gc["refs_deleted"].as_u64().unwrap() > 0, "{gc}");
    assert!(!r.receipt("first").exists());
    assert!(r.receipt("second").exists());
    // A new user's review: `explain-halt` of the removed run said it "was refused
    // before it started". It names the removal, and keeps exit 1.
    let gone = r.lx(&["explain-halt", "--run-id", "first"]);
    assert_eq!(gone.code, 1, "{:?}", gone.stderr);
    assert!(
        mentions(&gone.json(), "receipt is gone") && !mentions(&gone.json(), "refused"),
        "{}",
        gone.json()
    );
    let git_dir = format!("--git-dir={}", store_dir(r.path()).display());
    let store = [git_dir.as_str(), "for-each-ref"];
    let left = |run: &str| {
        let mut a = store.to_vec();
        let prefix = format!("refs/loopexec/{run}/");
        a.push(&prefix);
        r.git(&a).trim().to_string()
    };
    assert!(left("first").is_empty(), "refs of the removed run remain");
    assert!(
        !left("second").is_empty(),
        "refs of the kept run were removed"
    );
}

#[test]
fn report_renders_markdown_junit_and_html() {
    let r = converged("fmt");
    let dir = r.outside();
    let junit = dir.join("r.xml");
    let html = dir.join("r.html");
    let out = human(
        &r,
        &[
            "report",
            "--format",
            "markdown",
            "--junit",
            junit.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
    );
    assert!(out.contains("| it | verdict |"), "{out}");
    assert!(out.contains("success_condition_met"), "{out}");
    let x = std::fs::read_to_string(&junit).unwrap();
    // converged: the red iterations it went on from are told, not failed (a CI test
    // reporter reads failures as the job's outcome)
    assert!(x.contains("tests=\"3\" failures=\"0\""), "{x}");
    assert!(x.contains("the loop went on"), "{x}");
    // a run that ended at its cap fails at the iteration it ended at, naming the halt
    let capped = Repo::new();
    capped.run_red(2).expect(12, Some("max_iterations_reached"));
    let junit = dir.join("capped.xml");
    human(&capped, &["report", "--junit", junit.to_str().unwrap()]);
    let x = std::fs::read_to_string(&junit).unwrap();
    assert!(x.contains("failures=\"1\""), "{x}");
    assert!(
        x.contains("<failure message=\"max_iterations_reached (exit 12)"),
        "{x}"
    );
    let h = std::fs::read_to_string(&html).unwrap();
    assert!(h.contains("<svg") && h.contains("<polyline"), "{h}");
}

/// `loopexec --workdir <repo> ARGS…` without `--json`: stdout.
fn human(r: &Repo, args: &[&str]) -> String {
    let mut c = Command::new(bin());
    c.arg("--workdir")
        .arg(r.path())
        .args(args)
        .current_dir(r.path());
    let out = run_cmd(c);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Replaces what differs between honest runs (times, durations, paths, ids of git
/// objects, pids, the version) so a snapshot compares the contract's shape and values.
pub(crate) fn redact(v: &mut Value, repo: &str) {
    const KEYS: [&str; 17] = [
        "started_at",
        "finished_at",
        "duration_ms",
        "exec_ms",
        "check_ms",
        "version",
        "pid",
        "snapshot",
        "heartbeat",
        "receipt",
        "blake3",
        "tree",
        "ts",
        "time",
        "excerpt",
        "stdout",
        "stderr",
    ];
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if KEYS.contains(&k.as_str()) && !x.is_null() {
                    *x = Value::from("[redacted]");
                } else {
                    redact(x, repo);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| redact(x, repo)),
        Value::String(s) => {
            let sha = regex::Regex::new(r"\b[0-9a-f]{40}\b").unwrap();
            let store = regex::Regex::new(r"/\S*/stores/[0-9a-f]{16}\.git").unwrap();
            let s2 = store.replace_all(s, "[store]").into_owned();
            // Which sandbox protections the kernel offers differs between machines.
            let s2 = protection_note().replace_all(&s2, "$1").into_owned();
            *s = sha
                .replace_all(&s2.replace(repo, "[repo]"), "[sha]")
                .into_owned();
        }
        _ => {}
    }
}

/// The verdict's note on protections not in force (it depends on the kernel).
fn protection_note() -> regex::Regex {
    regex::Regex::new(r" \(protection not in force: [^\n]*?\)+(\n|$)").unwrap()
}

pub(crate) fn redact_text(s: &str, repo: &str) -> String {
    let store = regex::Regex::new(r"/\S*/stores/[0-9a-f]{16}\.git").unwrap();
    let s = store.replace_all(s, "[store]").replace(repo, "[repo]");
    let s = protection_note().replace_all(&s, "$1").into_owned();
    let ts = regex::Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z").unwrap();
    let secs = regex::Regex::new(r"\b\d+(\.\d+)?s\b").unwrap();
    let interval = regex::Regex::new(r"interval \d\.\d\d–\d\.\d\d").unwrap();
    let s = ts.replace_all(&s, "[ts]");
    let s = secs.replace_all(&s, "[secs]");
    let s = interval.replace_all(&s, "interval [w]");
    let pid = regex::Regex::new(r"pid \d+").unwrap();
    let s = pid.replace_all(&s, "pid [pid]");
    let sha = regex::Regex::new(r"\b[0-9a-f]{40}\b").unwrap();
    sha.replace_all(&s, "[sha]").into_owned()
}

#[test]
fn snapshots_of_human_and_json_output() {
    let r = converged("snap");
    let repo = std::fs::canonicalize(r.path())
        .unwrap()
        .display()
        .to_string();
    let raw = r.path().display().to_string();
    let scrub = |mut v: Value| {
        redact(&mut v, &raw);
        redact(&mut v, &repo);
        v
    };
    for (name, args) in [
        ("status_json", vec!["status"]),
        ("explain_halt_json", vec!["explain-halt"]),
        ("replay_json", vec!["replay", "snap"]),
        ("replay_offline_json", vec!["replay", "snap", "--offline"]),
        ("runs_json", vec!["runs"]),
    ] {
        let v = scrub(r.lx(&args).expect(0, None));
        insta::assert_json_snapshot!(name, v);
    }
    // The report's per-step durations and byte counts vary; its shape and verdicts do not.
    let mut rep = scrub(r.lx(&["report"]).expect(0, None));
    for it in rep["iterations"].as_array_mut().unwrap() {
        for k in ["exec", "check"] {
            if let Some(o) = it.get_mut(k).and_then(Value::as_object_mut) {
                o.insert("duration_ms".into(), Value::from("[redacted]"));
            }
        }
        it["started_at"] = Value::from("[redacted]");
    }
    insta::assert_json_snapshot!("report_json", rep);
    for (name, args) in [
        ("status_human", vec!["status"]),
        ("explain_halt_human", vec!["explain-halt"]),
        ("replay_human", vec!["--quiet", "replay", "snap"]),
        ("runs_human", vec!["runs"]),
        ("exit_codes_human", vec!["help", "exit-codes"]),
    ] {
        let text = redact_text(&redact_text(&human(&r, &args), &raw), &repo);
        insta::assert_snapshot!(name, text);
    }
    // `run` itself, in both modes, on a fresh repo.
    let r2 = tap_repo("t1");
    let raw2 = r2.path().display().to_string();
    let mut v = r2
        .lx_tap(FIX_ONE, &["--run-id", "one", "--max-iterations", "3"])
        .expect(10, None);
    redact(&mut v, &raw2);
    insta::assert_json_snapshot!("run_json", v);
}

/// A check that, during the replay, fails once in three runs (an extra failing test on
/// the second run, counted in a file outside the tree): the replay says `flaky`, not
/// that the receipt is forged.
#[test]
fn a_replay_tells_a_flaky_check_from_a_forged_receipt() {
    let r = Repo::new();
    let counter = r.outside().join("flip");
    let c = counter.display();
    r.write("tests", "3\n").write("failing", "t1\n");
    r.tap_check(&format!(
        r#"extra=""; if [ -f {c} ]; then n=$(cat {c}); echo $((n-1)) > {c}; [ "$n" = 1 ] && extra=" t3"; fi
n=$(cat tests); f=" $(cat failing)$extra "; echo "TAP version 13"; echo "1..$n"; bad=0
for i in $(seq 1 "$n"); do case "$f" in *" t$i "*) echo "not ok $i - t$i"; bad=1;; *) echo "ok $i - t$i";; esac; done
exit $bad
"#
    ))
    .commit("fixture");
    r.lx_tap(FIX_ONE, &["--run-id", "fl", "--max-iterations", "3"])
        .expect(10, None);
    std::fs::write(&counter, "2\n").unwrap();
    let v = r
        .lx(&["replay", "fl", "--iteration", "1", "--runs", "3"])
        .expect(14, None);
    assert_eq!(v["status"], "flaky", "{v}");
    let it = &v["iterations"][0];
    assert_eq!(it["iteration"], 1);
    assert_eq!(it["verdict"], "flaky");
    assert_eq!(it["agreed"], 2, "{it}");
    let (lo, hi) = (
        it["agreement_interval"][0].as_f64().unwrap(),
        it["agreement_interval"][1].as_f64().unwrap(),
    );
    assert!(
        lo > 0.0 && lo < 2.0 / 3.0 && hi > 2.0 / 3.0 && hi <= 1.0,
        "{it}"
    );
    assert_eq!(v["first_disagreement"], Value::Null);
}

/// A real agent script that logs 30 lines on stderr and fails: the halt of `run`,
/// `explain-halt` and `report` (human, JSON, markdown) show its last lines and the
/// file holding the rest.
#[test]
fn a_failed_work_step_shows_its_stderr_tail_and_the_file_with_the_rest() {
    let r = Repo::with_f();
    let agent = r.outside().join("agent.sh");
    std::fs::write(
        &agent,
        "#!/bin/sh\nfor i in $(seq 1 30); do echo \"agent log line $i\" >&2; done\necho 'fatal: no API key' >&2\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let exec = agent.display().to_string();
    let args = [
        "run", "--run-id", "fail", "--exec", &exec, "--check", "false",
    ];
    let v = r.lx(&args).expect(40, Some("execution_failure"));
    assert_valid("run", &v);
    let tail = v["stderr_tail"].as_str().unwrap();
    assert!(tail.ends_with("fatal: no API key"), "{v}");
    assert!(tail.contains("agent log line 30"), "{tail}");
    assert!(
        !tail.contains("agent log line 19\n") && tail.lines().count() <= 12,
        "only the last lines: {tail}"
    );
    let file = v["stderr_file"].as_str().unwrap();
    assert!(std::fs::read_to_string(file)
        .unwrap()
        .contains("agent log line 1\n"));

    // The human verdict: the tail right under the halt's reasons, before the receipt.
    let r2 = Repo::with_f();
    let text = human(
        &r2,
        &["--quiet", "run", "--exec", &exec, "--check", "false"],
    );
    let at = text
        .find("the work step's stderr ended with:")
        .expect(&text);
    assert!(at < text.find("receipt:").unwrap(), "{text}");
    assert!(
        text.contains("  | fatal: no API key\n(the rest: "),
        "{text}"
    );

    let ex = r.lx(&["explain-halt", "--run-id", "fail"]).expect(0, None);
    assert_valid("explain-halt", &ex);
    assert_eq!(ex["stderr_tail"]["text"], tail, "{ex}");
    assert_eq!(ex["stderr_tail"]["file"], file);
    let text = human(&r, &["explain-halt", "--run-id", "fail"]);
    assert!(text.contains("  | fatal: no API key"), "{text}");
    assert!(text.contains(&format!("(the rest: {file})")), "{text}");

    let rep = r.lx(&["report", "--run-id", "fail"]).expect(0, None);
    assert_valid("report", &rep);
    assert_eq!(rep["stderr_tail"]["text"], tail, "{rep}");
    let text = human(&r, &["report", "--run-id", "fail"]);
    assert!(text.contains("  | fatal: no API key"), "{text}");
    let md = human(&r, &["report", "--run-id", "fail", "--format", "markdown"]);
    assert!(md.contains("fatal: no API key\n```"), "{md}");
    assert!(md.contains(file), "{md}");

    // A halt that is not a failed work step shows none.
    let ok = converged("fine");
    let v = ok.lx(&["explain-halt"]).expect(0, None);
    assert!(v.get("stderr_tail").is_none(), "{v}");
}

/// `loopexec run … 2> log` inside the project (usual in CI): the progress lines written
/// there while steps run are loopexec's own, never the agent's work or tampering.
#[test]
fn progress_into_a_file_inside_the_workdir_is_not_mistaken_for_a_change() {
    let r = tap_repo("t1 t2");
    let log = r.path().join("loopexec.log");
    let mut c = Command::new(bin());
    c.args(["--json", "--workdir"])
        .arg(r.path())
        .args(["run", "--run-id", "log", "--exec", FIX_ONE])
        .args(["--check", "sh check.sh", "--test-format", "tap"])
        .current_dir(r.path())
        .stdin(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let out = c.output().expect("run");
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["halt_reason"], "success_condition_met", "{v}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("iteration 2/10 · verdict green"), "{text}");
    let started = &verify_receipt(&r.receipt("log"))[0];
    assert_eq!(
        started["config"]["clean_room"]["exclude"],
        serde_json::json!(["loopexec.log"]),
        "{started}"
    );
}

#[test]
fn show_agent_output_streams_the_agent_to_stderr_and_quiet_silences_progress() {
    let r = Repo::with_file("c", "0\n");
    let out = r.lx(&[
        "--quiet",
        "run",
        "--show-agent-output",
        "--exec",
        "echo thinking hard; echo 1 > c",
        "--check",
        "grep -q 1 c",
    ]);
    out.expect(10, Some("success_condition_met"));
    assert_eq!(out.stderr.trim(), "agent| thinking hard", "{}", out.stderr);
    let r2 = Repo::with_file("c", "0\n");
    let quiet = r2.lx(&[
        "--quiet",
        "run",
        "--exec",
        "echo 1 > c",
        "--check",
        "grep -q 1 c",
    ]);
    quiet.expect(10, None);
    assert_eq!(quiet.stderr, "", "--quiet prints no progress");
}

/// `keygen` without `--out` writes into the user's configuration directory, never
/// into the project it is run from (before, `./loopexec.key` sat where the agent
/// reads files and `git add .` commits them: a fresh review).
#[test]
fn keygen_keeps_the_secret_key_out_of_the_project_by_default() {
    let r = Repo::new();
    let home = r.outside().display().to_string();
    let kg = r
        .lx_env(
            &["keygen"],
            &[("HOME", home.as_str()), ("XDG_CONFIG_HOME", "")],
        )
        .expect(0, None);
    let want = r.outside().join(".config/loopexec/loopexec.key");
    let got = kg["private_key"].as_str().unwrap();
    assert_eq!(
        std::fs::canonicalize(got).unwrap(),
        std::fs::canonicalize(&want).unwrap(),
        "{kg}"
    );
    assert!(!r.path().join("loopexec.key").exists());
    assert!(r.git(&["status", "--porcelain"]).trim().is_empty());
}
