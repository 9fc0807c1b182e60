//! `keygen`, `attest RUN --key FILE` and `verify ATTESTATION --pub FILE`: signed,
//! checkable statements of a run's verdict (see [`crate::receipt::attest`]).
//!
//! `verify` exits 0 when the signature verifies, the receipt still has the digest
//! the statement names, everything else the statement says is what the receipt
//! re-derives to (the verdict, iterations, guards, fingerprint, spend, times and the
//! git tree: the key may be one the agent could read, so a signature says who
//! signed, not what happened) and, for a receipt read from the workspace (no
//! `--receipt`), a run of this workspace recorded it (ledger row and control-journal
//! seal); 13 (the integrity class) with status `invalid` when any fails; 1 when a
//! file cannot be read.

use crate::cli::{AttestArgs, KeygenArgs, Outcome, VerifyArgs};
use crate::cmd::bodies::{AttestBody, KeygenBody, VerifyBody};
use crate::halt::HaltReason;
use crate::receipt::attest::{self, Dsse, Statement, Subject, VerdictPredicate};
use crate::receipt::{Event, Line};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use std::os::unix::fs::DirBuilderExt;

fn fail(e: &attest::AttestError, hint: &str) -> Outcome {
    Outcome::error(super::EXIT_ERROR, e.to_string(), Some(hint.into()))
}

pub(crate) fn keygen(a: &KeygenArgs) -> Outcome {
    let Some(dir) = a.out.clone().or_else(default_key_dir) else {
        return Outcome::error(
            super::EXIT_ERROR,
            "neither XDG_CONFIG_HOME nor HOME is set, so there is no default key directory".into(),
            Some("name one with --out DIR (outside any project the agent works in)".into()),
        );
    };
    let key = match attest::generate() {
        Ok(k) => k,
        Err(e) => return fail(&e, "the OS random source is unavailable"),
    };
    // `--out ~/.config/loopexec` on a fresh machine: the directory is made (0700, as
    // it will hold a secret key)
    if !dir.exists() {
        let made = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir);
        if let Err(e) = made {
            return Outcome::error(
                super::EXIT_ERROR,
                format!("cannot create {}: {e}", dir.display()),
                Some("choose a directory you may write with --out DIR".into()),
            );
        }
    }
    let (sk, pk) = match attest::write_keys(&dir, &key) {
        Ok(p) => p,
        Err(e) => return fail(&e, "choose an empty directory with --out DIR"),
    };
    let abs = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let body = KeygenBody {
        private_key: abs(&sk).display().to_string(),
        public_key: abs(&pk).display().to_string(),
        keyid: attest::keyid(&key.verifying_key()),
        human: format!(
            "secret key: {} (keep it private; sign with `loopexec attest RUN --key {}`)\npublic key: {} (give it to verifiers: `loopexec verify ATTESTATION --pub {}`)\n",
            sk.display(),
            crate::observe::isolation::shell_word(&sk.display().to_string()),
            pk.display(),
            crate::observe::isolation::shell_word(&pk.display().to_string())
        ),
    };
    Outcome::from_body("ok", 0, &body)
}

/// `keygen`'s default directory: `$XDG_CONFIG_HOME/loopexec`, else
/// `$HOME/.config/loopexec` (the XDG base directory rule); `None` with neither set.
/// Never the current directory: that is usually the project, where the agent reads
/// files and `git add .` would commit the secret key.
fn default_key_dir() -> Option<PathBuf> {
    let set = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    set("XDG_CONFIG_HOME")
        .or_else(|| set("HOME").map(|h| h.join(".config")))
        .map(|d| d.join("loopexec"))
}

/// The statement over run `run_id` whose receipt at `receipt` holds `lines` and is
/// `receipt_bytes`: what `attest` signs, and what `verify` derives again from the
/// receipt to compare with what was signed.
fn statement(run_id: &str, receipt: &Path, lines: &[Line], receipt_bytes: &[u8]) -> Statement {
    let facts = crate::receipt::facts::run_facts(run_id, receipt, lines);
    let mut guards = serde_json::json!({});
    let mut code = 0;
    let mut last_tree = None;
    let mut last_fp = None;
    for l in lines {
        match &l.event {
            Event::RunStarted(s) => {
                code = s.config.success_exit_code;
                guards = serde_json::json!({
                    "policy": s.config.guards,
                    "confirm_runs": s.config.confirm_runs,
                    "budget": s.config.budget,
                    "on_regression": s.config.halt,
                    "unavailable": s.guards_unavailable,
                });
                last_tree = s.git.baseline_tree.clone();
            }
            Event::ExecFinished(e) if e.tree.is_some() => last_tree.clone_from(&e.tree),
            Event::CheckFinished(c) if c.attempt == 0 => {
                last_fp = Some(crate::receipt::fingerprint::recorded(c, code));
            }
            _ => {}
        }
    }
    let name = receipt.file_name().map_or_else(
        || "receipt.jsonl".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut subject = vec![Subject {
        name: format!("receipt:{name}"),
        digest: attest::digests(receipt_bytes),
    }];
    if let Some(t) = last_tree {
        let mut d = BTreeMap::new();
        d.insert("gitTree".into(), t);
        subject.push(Subject {
            name: format!("tree:{run_id}"),
            digest: d,
        });
    }
    Statement {
        statement_type: attest::STATEMENT_TYPE.into(),
        subject,
        predicate_type: attest::PREDICATE_TYPE.into(),
        predicate: VerdictPredicate {
            run_id: run_id.to_string(),
            halt_reason: facts.halt_reason.clone(),
            halt_class: facts.halt_class.clone(),
            exit_code: facts.exit_code,
            iterations: facts.iteration.unwrap_or(0),
            guards,
            fingerprint: last_fp,
            spend: facts.spend.clone(),
            started_at: facts.started_at.clone(),
            finished_at: facts.finished_at.clone(),
            loopexec_version: env!("CARGO_PKG_VERSION").into(),
        },
    }
}

pub(crate) fn attest(workdir: &Path, a: &AttestArgs) -> Outcome {
    let key = match attest::read_secret(&a.key) {
        Ok(k) => k,
        Err(e) => return fail(&e, "create a key pair with `loopexec keygen`"),
    };
    let run = match super::load_run(workdir, a.run.as_deref()) {
        Ok(r) => r,
        Err(o) => return o,
    };
    if let Some((line, what)) = crate::receipt::verify_chain(&run.lines) {
        return Outcome::error(
            HaltReason::InvariantFailed.exit_code(),
            format!(
                "receipt {} is damaged at line {line} ({what}); it cannot be attested",
                run.receipt.display()
            ),
            Some("`loopexec check` names the first broken record".into()),
        );
    }
    // A valid hash chain says the receipt is whole, not that it is this workspace's:
    // a receipt copied in from another project would be signed as this one's run.
    let provenance = run.provenance_problems();
    if !provenance.is_empty() {
        return Outcome::error(
            HaltReason::InvariantFailed.exit_code(),
            format!(
                "run {} is not one this workspace's ledger recorded, so it cannot be attested: {}",
                run.run_id,
                provenance.join("; ")
            ),
            Some("`loopexec check` lists every receipt that disagrees with the ledger; attest the run in the workspace that ran it".into()),
        );
    }
    let bytes = match std::fs::read(&run.receipt) {
        Ok(b) => b,
        Err(e) => {
            return Outcome::error(
                super::EXIT_ERROR,
                format!("cannot read {}: {e}", run.receipt.display()),
                None,
            )
        }
    };
    let st = statement(&run.run_id, &run.receipt, &run.lines, &bytes);
    let env = match attest::sign(&st, &key) {
        Ok(e) => e,
        Err(e) => return fail(&e, "this is a loopexec bug"),
    };
    let out = a.out.clone().unwrap_or_else(|| {
        run.ws
            .runs_dir()
            .join(format!("{}.intoto.json", run.run_id))
    });
    if let Some(o) = refuse_overwrite(&out) {
        return o;
    }
    // an attestation replaced is said so, not done silently (a new user's review)
    let replaced = if out.is_file() {
        format!("replaced the attestation that was at {}\n", out.display())
    } else {
        String::new()
    };
    let text = serde_json::to_string_pretty(&env).unwrap_or_default();
    if let Err(e) = std::fs::write(&out, format!("{text}\n")) {
        return Outcome::error(
            super::EXIT_ERROR,
            format!("cannot write {}: {e}", out.display()),
            Some("give --out a writable path".into()),
        );
    }
    let body = AttestBody {
        run_id: run.run_id.clone(),
        attestation_path: out.display().to_string(),
        human: format!(
            "{replaced}attested run {}: {} (exit {}) — {}\nverify with: loopexec verify {} --pub PUBLIC_KEY\n",
            run.run_id,
            st.predicate.halt_reason.as_deref().unwrap_or("not halted"),
            st.predicate
                .exit_code
                .map_or("-".to_string(), |c| c.to_string()),
            out.display(),
            crate::observe::isolation::shell_word(&out.display().to_string())
        ),
        attestation: env,
        run: run.facts(),
        statement: st,
    };
    Outcome::from_body("ok", 0, &body)
}

/// The statement `attest` would sign over the receipt at `path` (its bytes `bytes`),
/// as JSON, for comparing with the signed one (`signed`): the loopexec version is the
/// signer's (the one field the receipt cannot say), and with `--receipt` (`renamed`)
/// so is the receipt subject's name (the file may have been copied under another).
/// Errors: why the receipt cannot be read back.
fn rederived(
    path: &Path,
    bytes: &[u8],
    signed: &Statement,
    renamed: bool,
) -> Result<serde_json::Value, String> {
    let lines = match crate::receipt::read(path) {
        Ok(l) => l,
        Err(crate::receipt::ReadError::TornTail { .. }) => super::read_complete_lines(path),
        Err(e) => {
            return Err(format!(
                "the receipt cannot be read back ({e}), so nothing the statement says can be checked against it"
            ))
        }
    };
    if let Some((line, what)) = crate::receipt::verify_chain(&lines) {
        return Err(format!(
            "the receipt is damaged at line {line} ({what}), so nothing the statement says can be checked against it"
        ));
    }
    let run_id = lines
        .iter()
        .find_map(|l| match &l.event {
            Event::RunStarted(s) => Some(s.run_id.clone()),
            _ => None,
        })
        .or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let mut st = statement(&run_id, path, &lines, bytes);
    st.predicate
        .loopexec_version
        .clone_from(&signed.predicate.loopexec_version);
    if renamed {
        let was = signed
            .subject
            .iter()
            .find(|s| s.name.starts_with("receipt:"));
        if let (Some(was), Some(now)) = (
            was,
            st.subject
                .iter_mut()
                .find(|s| s.name.starts_with("receipt:")),
        ) {
            now.name.clone_from(&was.name);
        }
    }
    serde_json::to_value(&st).map_err(|e| format!("cannot derive the statement: {e}"))
}

/// The refusal to write an attestation over `out` when it exists and is not itself a
/// DSSE envelope (re-attesting a run replaces its attestation; anything else is a
/// file a person or loopexec needs: a new user's `--out` named an older run's receipt,
/// and `loopexec check` then failed on it). `None` when `out` may be written.
fn refuse_overwrite(out: &Path) -> Option<Outcome> {
    let meta = std::fs::symlink_metadata(out).ok()?;
    let envelope = meta.is_file()
        && std::fs::read(out)
            .ok()
            .and_then(|b| serde_json::from_slice::<Dsse>(&b).ok())
            .is_some();
    if envelope {
        return None;
    }
    Some(Outcome::error(
        super::EXIT_ERROR,
        format!(
            "--out {}: the file exists and is not an attestation; it is left as it was",
            out.display()
        ),
        Some("name a new file with --out (or omit it: the attestation goes beside the run's receipt)".into()),
    ))
}

/// Finds the DSSE envelope in a file: the file itself, or the first object in it
/// (e.g. `attest --json` output) that has `payloadType`, `payload` and `signatures`.
fn find_envelope(v: &serde_json::Value) -> Option<Dsse> {
    if let Ok(d) = serde_json::from_value::<Dsse>(v.clone()) {
        return Some(d);
    }
    match v {
        serde_json::Value::Object(m) => m.values().find_map(find_envelope),
        serde_json::Value::Array(a) => a.iter().find_map(find_envelope),
        _ => None,
    }
}

/// The workspace an attestation at `attestation` was written into: `<dir>` for
/// `<dir>/.loopexec/runs/<run>.intoto.json` (where `attest` puts it), else `None`.
fn workspace_of(attestation: &Path) -> Option<PathBuf> {
    let runs = std::fs::canonicalize(attestation)
        .ok()?
        .parent()?
        .to_path_buf();
    let state = runs.parent()?;
    (runs.file_name()? == "runs" && state.file_name()? == ".loopexec")
        .then(|| state.parent().map(Path::to_path_buf))
        .flatten()
}

/// `loopexec verify`. `workdir` is `--workdir` as given: without it, the workspace
/// is the one the attestation lies in ([`workspace_of`]), else the current
/// directory, so the `verify` command `attest` prints works from anywhere.
pub(crate) fn verify(workdir: Option<&Path>, a: &VerifyArgs) -> Outcome {
    let workdir = workdir
        .map(Path::to_path_buf)
        .or_else(|| workspace_of(&a.attestation))
        .unwrap_or_else(|| PathBuf::from("."));
    let workdir = workdir.as_path();
    let key = match attest::read_public(&a.public) {
        Ok(k) => k,
        Err(e) => {
            return fail(
                &e,
                "give the public key `loopexec keygen` wrote (loopexec.pub)",
            )
        }
    };
    let text = match std::fs::read(&a.attestation) {
        Ok(t) => t,
        Err(e) => {
            return Outcome::error(
                super::EXIT_ERROR,
                format!("cannot read {}: {e}", a.attestation.display()),
                None,
            )
        }
    };
    let mut body = VerifyBody {
        signature_valid: false,
        receipt_matches: None,
        receipt: None,
        run_id: None,
        keyid: Some(attest::keyid(&key)),
        predicate: None,
        statement_matches: None,
        mismatches: Vec::new(),
        recorded: None,
        human: String::new(),
    };
    let invalid = |body: &mut VerifyBody, msg: String| {
        body.human = format!("INVALID: {msg}\n");
        let mut o = Outcome::from_body(
            "invalid",
            HaltReason::MetricIntegrityViolation.exit_code(),
            &*body,
        );
        o.errors.push(msg);
        o
    };
    let Some(env) = serde_json::from_slice::<serde_json::Value>(&text)
        .ok()
        .as_ref()
        .and_then(find_envelope)
    else {
        return invalid(
            &mut body,
            format!(
                "{} holds no DSSE envelope (payloadType, payload, signatures)",
                a.attestation.display()
            ),
        );
    };
    let (st, signed) = match attest::open_json(&env, &key) {
        Ok(s) => s,
        Err(e) => return invalid(&mut body, e.to_string()),
    };
    body.signature_valid = true;
    body.run_id = Some(st.predicate.run_id.clone());
    body.predicate = serde_json::to_value(&st.predicate).ok();
    let receipt = a.receipt.clone().or_else(|| {
        crate::workspace::Workspace::at(workdir)
            .ok()
            .map(|ws| ws.receipt_path(&st.predicate.run_id))
    });
    let Some(receipt) = receipt else {
        return invalid(&mut body, "no receipt to check: give --receipt FILE".into());
    };
    body.receipt = Some(receipt.display().to_string());
    // A receipt that cannot be read is no verdict on the attestation: exit 1, as for
    // any file loopexec cannot read (exit-codes.md), not the integrity code.
    let bytes = match std::fs::read(&receipt) {
        Ok(b) => b,
        Err(e) => {
            let msg = format!(
                "cannot read the receipt {} ({e}); give --receipt FILE, or --workdir the attested run's workspace",
                receipt.display()
            );
            body.human = format!("not verified: {msg}\n");
            let mut o = Outcome::from_body("error", super::EXIT_ERROR, &body);
            o.errors.push(msg);
            return o;
        }
    };
    let got = attest::digests(&bytes);
    let want = st
        .subject
        .iter()
        .find(|s| s.name.starts_with("receipt:"))
        .map(|s| s.digest.clone())
        .unwrap_or_default();
    let matches = !want.is_empty() && want.iter().all(|(alg, d)| got.get(alg) == Some(d));
    body.receipt_matches = Some(matches);
    if !matches {
        return invalid(
            &mut body,
            format!(
                "the receipt {} differs from the one that was attested (digest mismatch)",
                receipt.display()
            ),
        );
    }
    // The signing key may be one the agent could read (SPEC §13.3): a statement it
    // rewrote and signed again (a red run's verdict said green, another tree named)
    // has a good signature over the right receipt digest. What the statement says
    // must be what the receipt re-derives to.
    let mismatches = match rederived(&receipt, &bytes, &st, a.receipt.is_some()) {
        Ok(derived) => attest::disagreements(&signed, &derived),
        Err(why) => vec![why],
    };
    body.statement_matches = Some(mismatches.is_empty());
    if !mismatches.is_empty() {
        body.mismatches.clone_from(&mismatches);
        return invalid(
            &mut body,
            format!(
                "the signature is good, but the signed statement disagrees with the receipt {} (the receipt says what happened; whoever holds the key can sign anything): {}",
                receipt.display(),
                mismatches.join("; ")
            ),
        );
    }
    // A receipt found in this workspace (no `--receipt`) must be one a run here
    // recorded: the signing key may be one the agent could read, and a receipt and
    // its attestation made elsewhere can be copied into `.loopexec/runs/` (a fresh
    // review did both).
    // So is one named with `--receipt` that lies in this workspace's state directory
    // (`--receipt .loopexec/runs/forged.jsonl` skipped the question, a fresh review).
    let named_here = a.receipt.as_deref().and_then(|p| {
        let ws = crate::workspace::Workspace::at(workdir).ok()?;
        let state = ws.receipt_path(&st.predicate.run_id);
        let state = std::fs::canonicalize(state.parent()?.parent()?).ok()?;
        std::fs::canonicalize(p)
            .ok()?
            .starts_with(&state)
            .then_some(ws)
    });
    let problems = match (&named_here, &a.receipt) {
        (Some(ws), _) => Some(match crate::receipt::read(&receipt) {
            Ok(lines) => super::recorded_by_ledger(ws, &st.predicate.run_id, &receipt, &lines),
            Err(e) => vec![e.to_string()],
        }),
        (None, None) => Some(match super::load_run(workdir, Some(&st.predicate.run_id)) {
            Ok(run) => run.provenance_problems(),
            Err(o) => o.errors,
        }),
        // a file outside any workspace is checked as a file
        (None, Some(_)) => None,
    };
    if let Some(problems) = problems {
        body.recorded = Some(problems.is_empty());
        if !problems.is_empty() {
            return invalid(
                &mut body,
                format!(
                    "the signature is good, but no run of this workspace recorded run {}: {}",
                    st.predicate.run_id,
                    problems.join("; ")
                ),
            );
        }
    }
    body.human = format!(
        "valid: signed by key {} — run {} halted {} (exit {}); receipt {} unchanged\n",
        body.keyid.as_deref().unwrap_or("-"),
        st.predicate.run_id,
        st.predicate.halt_reason.as_deref().unwrap_or("-"),
        st.predicate
            .exit_code
            .map_or("-".to_string(), |c| c.to_string()),
        receipt.display()
    );
    Outcome::from_body("ok", 0, &body)
}
