//! `loopexec doctor`: the preconditions gate — one report, one line per check, before
//! a loop is trusted to run unattended.
//!
//! | line | how it is measured | reason when it fails |
//! |---|---|---|
//! | isolation | a requested `--check-network none` needs a network namespace (`unshare --net`) | isolation_unsatisfiable (30) |
//! | credentials | provider secrets the check would see (`[guards] keep_env` names them) | credential_scope_invalid (13) |
//! | exec | the work step's program resolves on PATH | execution_failure (40) |
//! | determinism | `--probe-runs` fresh-copy runs agree | check_flaky (14) |
//! | hermeticity | a run in a fresh copy leaves existing files as they were | hermeticity_violation (14) |
//! | adequacy | every mutation canary planted in the lines changed since `--diff-base` (and every `--mutate-cmd`) turns the check red | check_inadequate (15) |
//!
//! The report's verdict is the first failing line in that order. Adequacy needs a
//! green check on the current tree (a red check kills every mutant and proves
//! nothing), so a red baseline is reported as "not measured". A line that was not
//! measured (hermeticity outside git, adequacy without `--diff-base` or on a red check)
//! does not fail the report, but says so: `skip` in the human report, `"measured":
//! false` in its JSON line. `--probe-runs` below 2 and a `--diff-base` that is not a
//! revision are usage errors (exit 2), found before anything runs.

use super::bodies_ops::{DoctorBody, DoctorLine};
use super::probe_check::{
    cannot_start, check_spec, describe, fresh_run, halted, sandbox, timed_out,
};
use crate::cli::{DoctorArgs, Outcome};
use crate::halt::HaltReason;
use crate::observe::{git, guards, mutate, secrets};
use crate::oracle::{self, Sandbox};
use crate::workspace::Workspace;
use serde_json::{json, Value};
use std::path::Path;

struct Line {
    name: &'static str,
    ok: bool,
    /// False when the line could not be measured (it passes, but proves nothing).
    measured: bool,
    reason: Option<HaltReason>,
    text: String,
    detail: Value,
}

fn line(
    name: &'static str,
    ok: bool,
    reason: Option<HaltReason>,
    text: String,
    detail: Value,
) -> Line {
    Line {
        name,
        ok,
        measured: true,
        reason: if ok { None } else { reason },
        text,
        detail,
    }
}

/// A line that passes because it could not be measured; `text` says why.
fn skipped(name: &'static str, text: String, detail: Value) -> Line {
    Line {
        measured: false,
        ..line(name, true, None, text, detail)
    }
}

/// The `--diff-base` revision must name a commit in the workdir's repository. The
/// revision to diff against: `base`, or, when `base` is `main` (`master`) and only
/// `master` (`main`) is here, the other one, said on stderr (README's example names
/// `main`; many repositories' default branch is `master`).
#[allow(clippy::result_large_err)]
fn check_diff_base(workdir: &Path, base: &str) -> Result<String, Outcome> {
    // the example names a branch this repository has (its current one), not one
    // that may be the very name that failed (`main` in a `master` repository)
    let branch = git::git_cmd(workdir)
        .args(["symbolic-ref", "--quiet", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|b| !b.is_empty() && b != base);
    let usage = |why: &str| {
        let example = branch.as_deref().map_or_else(
            || "e.g. HEAD~1".to_string(),
            |b| format!("e.g. --diff-base {b} (this repository's current branch) or HEAD~1"),
        );
        Outcome::error(
            2,
            format!("cannot diff against `{base}`: {why}"),
            Some(format!(
                "give --diff-base a branch, tag or commit, {example}"
            )),
        )
    };
    if git::repo_root(workdir).is_none() {
        return Err(usage("the workdir is not a git work tree"));
    }
    let resolves = |rev: &str| {
        git::git_cmd(workdir)
            .args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
            .arg(format!("{rev}^{{commit}}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if resolves(base) {
        return Ok(base.to_string());
    }
    let other = match base {
        "main" => Some("master"),
        "master" => Some("main"),
        _ => None,
    };
    match other {
        Some(o) if resolves(o) => {
            eprintln!("note: --diff-base {base}: no such branch here; diffing against `{o}`");
            Ok(o.to_string())
        }
        _ => Err(usage("not a revision in this repository")),
    }
}

pub(crate) fn run(workdir: &Path, a: &DoctorArgs) -> Outcome {
    if a.probe_runs < 2 {
        return Outcome::error(
            2,
            format!(
                "--probe-runs {}: at least 2 runs are needed (one run cannot disagree with itself)",
                a.probe_runs
            ),
            None,
        );
    }
    let ws = match Workspace::at(workdir) {
        Ok(w) => w,
        Err(e) => return super::ws_error(&e),
    };
    let spec = match check_spec(&a.check) {
        Ok(s) => s,
        Err(o) => return o,
    };
    let mut diff_base = None;
    if let Some(base) = &a.diff_base {
        match check_diff_base(&ws.workdir, base) {
            Ok(b) => diff_base = Some(b),
            Err(o) => return o,
        }
    }
    let cfg = crate::config::resolve(
        &ws.workdir,
        None,
        &crate::config::Overrides {
            check: Some(a.check.command.clone()),
            ..Default::default()
        },
    )
    .unwrap_or_else(|_| crate::config::RunConfig::defaults());
    let mut lines = Vec::new();

    // isolation
    if a.check_network == "none" {
        let ok = crate::observe::isolation::network_namespace_available();
        lines.push(line(
            "isolation",
            ok,
            Some(HaltReason::IsolationUnsatisfiable),
            if ok { "a network namespace can be created for the check".into() } else { "--check-network none was requested but this machine cannot create a network namespace (unshare --net failed)".into() },
            json!({"check_network": "none"}),
        ));
    } else {
        lines.push(line(
            "isolation",
            true,
            None,
            "no isolation requested (the check shares the host network)".into(),
            json!({"check_network": "host"}),
        ));
    }

    // credentials
    let visible: Vec<String> = cfg
        .guards
        .keep_env
        .iter()
        .filter(|k| secrets::is_secret_name(k) && std::env::var_os(k).is_some())
        .cloned()
        .collect();
    let stripped = secrets::secret_env_names(&cfg.guards.keep_env);
    lines.push(line(
        "credentials",
        visible.is_empty(),
        Some(HaltReason::CredentialScopeInvalid),
        if visible.is_empty() {
            format!(
                "{} provider secret(s) in this environment are stripped from the check by `run`",
                stripped.len()
            )
        } else {
            format!(
                "provider secrets visible to the check through [guards] keep_env: {}",
                visible.join(", ")
            )
        },
        json!({"stripped": stripped, "visible": visible}),
    ));

    // exec
    if let Some(exec) = &a.exec {
        let prog = exec.split_whitespace().next().unwrap_or("");
        let ok = std::process::Command::new("sh")
            .arg("-c")
            .arg("command -v \"$1\" >/dev/null 2>&1")
            .arg("sh")
            .arg(prog)
            .current_dir(&ws.workdir)
            .status()
            .is_ok_and(|s| s.success());
        lines.push(line(
            "exec",
            ok,
            Some(HaltReason::ExecutionFailure),
            if ok {
                format!("the work step's program `{prog}` resolves")
            } else {
                format!("the work step's program `{prog}` is not found")
            },
            json!({"program": prog}),
        ));
    }

    let sb = match sandbox(&ws.workdir) {
        Ok(s) => s,
        Err(o) => return o,
    };

    // determinism
    let mut runs = Vec::new();
    for _ in 0..a.probe_runs {
        let r = match fresh_run(&sb, &spec, &[], false) {
            Ok(r) => r,
            Err(o) => return o,
        };
        if let Some(o) = cannot_start(&spec, &r, DoctorBody::default()) {
            return o;
        }
        if let Some(o) = timed_out(&spec, &r, DoctorBody::default()) {
            return o;
        }
        runs.push(r);
    }
    let reference = runs[0].clone();
    let agree = runs.iter().all(|r| r.verdict() == reference.verdict());
    lines.push(line(
        "determinism",
        agree,
        Some(HaltReason::CheckFlaky),
        if agree {
            format!("{} fresh runs agree: {}", runs.len(), describe(&reference))
        } else {
            format!(
                "fresh runs disagree: {}",
                runs.iter().map(describe).collect::<Vec<_>>().join(", ")
            )
        },
        json!({"runs": runs.iter().map(describe).collect::<Vec<_>>()}),
    ));

    // hermeticity
    lines.push(hermeticity(&sb, &spec));

    // adequacy
    lines.push(adequacy(
        &ws,
        &sb,
        &spec,
        &reference,
        a,
        diff_base.as_deref(),
    ));

    // The frozen oracle a run would freeze at t0 (SPEC §3.10), measured on a fresh
    // copy so the workdir gets no snapshot store of its own.
    let copy = sb.fresh();
    let (baseline, unavailable) = match &copy {
        Ok(c) => {
            let mut obs = crate::observe::tree::TreeObserver::new(&c.path(), "doctor", &cfg);
            let (_, b, u) = obs.baseline();
            (b, u)
        }
        Err(e) => (
            crate::detect::integrity::TreeMeasures::default(),
            vec![format!("cannot copy the workdir: {e}")],
        ),
    };
    let m = baseline;
    let mut oracle: Vec<String> = m.frozen.keys().chain(m.manifest.keys()).cloned().collect();
    oracle.sort();
    oracle.dedup();
    lines.push(line(
        "oracle",
        unavailable.is_empty(),
        Some(HaltReason::ObjectiveUnverified),
        if unavailable.is_empty() {
            format!(
                "{} file(s) would be frozen at t0 (tests and runner configuration){}",
                oracle.len(),
                if m.excluded.is_empty() {
                    String::new()
                } else {
                    format!("; left out of snapshots: {}", m.excluded.join(", "))
                }
            )
        } else {
            format!("the tree cannot be snapshotted: {}", unavailable.join("; "))
        },
        json!({"frozen": oracle, "excluded": m.excluded}),
    ));

    let mut body = DoctorBody {
        checks: lines
            .iter()
            .map(|l| DoctorLine {
                name: l.name.into(),
                ok: l.ok,
                measured: l.measured,
                reason: l.reason.map(|r| r.as_str().into()),
                text: l.text.clone(),
                detail: l.detail.clone(),
            })
            .collect(),
        ..DoctorBody::default()
    };
    let mut human = String::new();
    for l in &lines {
        human.push_str(&format!(
            "{:<5} {:<12} {}\n",
            match (l.ok, l.measured) {
                (false, _) => "FAIL",
                (true, false) => "skip",
                (true, true) => "ok",
            },
            l.name,
            l.text
        ));
    }
    match lines.iter().find(|l| !l.ok) {
        None => {
            body.human = human;
            Outcome::from_body("ok", 0, &body)
        }
        Some(l) => {
            let reason = l.reason.unwrap_or(HaltReason::InternalError);
            let contributors: Vec<String> = lines
                .iter()
                .filter(|x| !x.ok)
                .map(|x| format!("{}: {}", x.name, x.text))
                .collect();
            halted(reason, body, human, contributors)
        }
    }
}

fn hermeticity(sb: &Sandbox, spec: &oracle::CheckSpec) -> Line {
    let copy = match sb.fresh() {
        Ok(c) => c,
        Err(e) => {
            return line(
                "hermeticity",
                false,
                Some(HaltReason::InternalError),
                format!("cannot copy the workdir: {e}"),
                Value::Null,
            )
        }
    };
    let dir = copy.path();
    if git::repo_root(&dir).is_none() {
        return skipped(
            "hermeticity",
            "not measured: the workdir is not a git work tree".into(),
            json!({"measured": false}),
        );
    }
    let before = git::snapshot(&dir, "doctor", "before");
    let run = oracle::run_check(spec, &dir, &[], false);
    let after = git::snapshot(&dir, "doctor", "after");
    match (before, run, after) {
        (Ok(b), Ok(_), Ok(af)) => {
            let changed: Vec<String> = git::changed_paths(&dir, &b.tree, &af.tree)
                .unwrap_or_default()
                .into_iter()
                .filter(|c| c.status != git::ChangeKind::Added)
                .map(|c| c.path)
                .collect();
            line(
                "hermeticity",
                changed.is_empty(),
                Some(HaltReason::HermeticityViolation),
                if changed.is_empty() {
                    "the check leaves existing files as they were".into()
                } else {
                    format!("the check changed existing files: {}", changed.join(", "))
                },
                json!({"changed": changed}),
            )
        }
        _ => skipped(
            "hermeticity",
            "not measured: could not snapshot the copy".into(),
            json!({"measured": false}),
        ),
    }
}

fn adequacy(
    ws: &Workspace,
    sb: &Sandbox,
    spec: &oracle::CheckSpec,
    reference: &oracle::ProbeRun,
    a: &DoctorArgs,
    diff_base: Option<&str>,
) -> Line {
    if diff_base.is_none() && a.mutate_cmds.is_empty() {
        return skipped(
            "adequacy",
            "not measured: give --diff-base REV (or --mutate-cmd CMD)".into(),
            json!({"measured": false}),
        );
    }
    if !reference.green {
        return skipped(
            "adequacy",
            format!(
                "not measured: the check is {} on the current tree; a red check kills every mutant",
                describe(reference)
            ),
            json!({"measured": false}),
        );
    }
    let mut mutants = Vec::new();
    if let Some(base) = diff_base {
        let changed = match mutate::changed_lines(&ws.workdir, base) {
            Ok(c) => c,
            Err(e) => {
                return line(
                    "adequacy",
                    false,
                    Some(HaltReason::InvariantFailed),
                    format!("cannot diff against `{base}`: {e}"),
                    Value::Null,
                )
            }
        };
        let none = globset::GlobSet::empty();
        for (file, lines) in &changed {
            if guards::is_test_file(file, &none).is_some() {
                continue;
            }
            let Ok(src) = std::fs::read_to_string(ws.workdir.join(file)) else {
                continue;
            };
            mutants.extend(mutate::mutants_for(file, &src, lines));
        }
    }
    let planted = mutants.len();
    mutants.truncate(a.max_mutants);
    let mut survivors = Vec::new();
    let mut killed = 0usize;
    let progress = std::io::IsTerminal::is_terminal(&std::io::stderr());
    for (i, m) in mutants.iter().enumerate() {
        if progress {
            eprint!(
                "\rloopexec: mutation canary {}/{} ({}:{})",
                i + 1,
                mutants.len(),
                m.file,
                m.line
            );
        }
        let Ok(copy) = sb.fresh() else { continue };
        if mutate::apply(&copy.path(), m).is_err() {
            continue;
        }
        match oracle::run_check(spec, &copy.path(), &[], false) {
            Ok(r) if r.green => survivors.push(json!({"file": m.file, "line": m.line, "operator": m.operator.as_str(), "replacement": m.replacement})),
            Ok(_) => killed += 1,
            Err(_) => {}
        }
    }
    if progress && !mutants.is_empty() {
        eprintln!();
    }
    for cmd in &a.mutate_cmds {
        let Ok(copy) = sb.fresh() else { continue };
        let ok = std::process::Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .current_dir(copy.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            survivors.push(json!({"mutate_cmd": cmd, "error": "the mutate command failed"}));
            continue;
        }
        match oracle::run_check(spec, &copy.path(), &[], false) {
            Ok(r) if r.green => survivors.push(json!({"mutate_cmd": cmd})),
            Ok(_) => killed += 1,
            Err(_) => {}
        }
    }
    let total = mutants.len() + a.mutate_cmds.len();
    if total == 0 {
        return skipped(
            "adequacy",
            "not measured: no mutable line changed since the diff base".into(),
            json!({"measured": false, "planted": planted}),
        );
    }
    let names: Vec<String> = survivors
        .iter()
        .map(|s| match (s.get("file"), s.get("line")) {
            (Some(f), Some(l)) => format!(
                "{}:{} ({})",
                f.as_str().unwrap_or(""),
                l,
                s["operator"].as_str().unwrap_or("")
            ),
            _ => format!("--mutate-cmd {}", s["mutate_cmd"].as_str().unwrap_or("")),
        })
        .collect();
    line(
        "adequacy",
        survivors.is_empty(),
        Some(HaltReason::CheckInadequate),
        if survivors.is_empty() {
            format!("the check turned red for all {total} mutation canaries")
        } else {
            format!(
                "{} of {total} mutation canaries survived (the check stayed green): {}",
                survivors.len(),
                names.join(", ")
            )
        },
        json!({"planted": planted, "run": total, "killed": killed, "survivors": survivors}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::CheckOpts;
    use crate::observe::git::testutil;

    fn args(command: &str) -> DoctorArgs {
        DoctorArgs {
            check: CheckOpts {
                command: command.into(),
                test_format: "auto".into(),
                success_exit_code: 0,
                check_timeout: None,
            },
            exec: None,
            diff_base: None,
            mutate_cmds: Vec::new(),
            max_mutants: 40,
            probe_runs: 2,
            check_network: "host".into(),
        }
    }

    fn check<'a>(o: &'a Outcome, name: &str) -> &'a Value {
        o.fields["checks"]
            .as_array()
            .and_then(|c| c.iter().find(|l| l["name"] == name))
            .expect("line present")
    }

    #[test]
    fn lines_that_were_not_measured_say_skip() {
        let dir = tempfile::tempdir().expect("tempdir");
        for command in ["true", "false"] {
            let o = run(dir.path(), &args(command));
            assert_eq!(o.exit_code, 0, "{}", o.human);
            for name in ["hermeticity", "adequacy"] {
                assert_eq!(check(&o, name)["ok"], json!(true));
                assert_eq!(check(&o, name)["measured"], json!(false));
                assert!(
                    o.human.contains(&format!("skip  {name:<12} not measured")),
                    "{}",
                    o.human
                );
            }
            assert_eq!(check(&o, "determinism")["measured"], json!(true));
            assert!(o.human.contains("ok    determinism"), "{}", o.human);
        }
        // Red check with a diff base: adequacy is skipped for the red baseline.
        let repo = testutil::repo();
        testutil::write(repo.path(), "f", "x\n");
        testutil::commit_all(repo.path(), "base");
        let mut a = args("false");
        a.diff_base = Some("HEAD".into());
        let o = run(repo.path(), &a);
        assert_eq!(check(&o, "adequacy")["measured"], json!(false));
        assert!(o.human.contains("skip  adequacy"), "{}", o.human);
        assert_eq!(check(&o, "hermeticity")["measured"], json!(true));
    }

    #[test]
    fn an_unknown_diff_base_is_a_usage_error() {
        let repo = testutil::repo();
        testutil::write(repo.path(), "f", "x\n");
        testutil::commit_all(repo.path(), "base");
        let mut a = args("true");
        a.diff_base = Some("nosuchrev".into());
        let o = run(repo.path(), &a);
        assert_eq!(o.exit_code, 2);
        assert_eq!(
            o.errors,
            vec!["cannot diff against `nosuchrev`: not a revision in this repository".to_string()]
        );
        a.diff_base = Some("HEAD".into());
        assert_eq!(run(repo.path(), &a).exit_code, 0);
    }

    /// README's `--diff-base main` in a repository whose branch is `master` (and the
    /// other way round) diffs against the branch that is there; any other missing
    /// name stays a usage error.
    #[test]
    fn main_and_master_stand_in_for_each_other_as_diff_base() {
        let repo = testutil::repo();
        testutil::write(repo.path(), "f", "x\n");
        testutil::commit_all(repo.path(), "base");
        for (here, asked) in [("master", "main"), ("main", "master")] {
            testutil::g(repo.path(), &["branch", "-M", here]);
            assert_eq!(
                check_diff_base(repo.path(), asked).ok().as_deref(),
                Some(here)
            );
            assert_eq!(
                check_diff_base(repo.path(), here).ok().as_deref(),
                Some(here)
            );
        }
        testutil::g(repo.path(), &["branch", "-M", "trunk"]);
        assert!(check_diff_base(repo.path(), "main").is_err());
        let mut a = args("true");
        a.diff_base = Some("master".into());
        assert_eq!(run(repo.path(), &a).exit_code, 2);
    }

    #[test]
    fn fewer_than_two_probe_runs_is_a_usage_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut a = args("true");
        a.probe_runs = 1;
        let o = run(dir.path(), &a);
        assert_eq!(o.exit_code, 2);
        assert!(o.errors[0].starts_with("--probe-runs 1:"), "{:?}", o.errors);
    }

    #[test]
    fn a_timed_out_probe_run_is_an_execution_failure() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut a = args("sleep 5");
        a.check.check_timeout = Some("200ms".into());
        let o = run(dir.path(), &a);
        assert_eq!(o.exit_code, HaltReason::ExecutionFailure.exit_code());
        assert!(
            o.errors[0].contains("timed out after 200ms"),
            "{:?}",
            o.errors
        );
    }
}
