//! `loopexec run`: resolve the policy, run preflight checks, drive the loop, render
//! the halt.
//!
//! Preflight halts (no receipt can be written, or there is nothing to run) are
//! computed here from the configuration and the workdir: `workspace_invalid` (no
//! check, the workdir missing or not a directory, the workdir locked by a live run)
//! and `invariant_failed` (a field that fails validation, a malformed loop.toml, a
//! run id that is already taken). They are recorded in the ledger when one can be
//! opened.

use crate::cli::{Outcome, RunArgs};
use crate::cmd::bodies::RunBody;
use crate::config::{self, Overrides};
use crate::engine::{self, EngineError, RunOutcome, RunRequest, SignalFlag};
use crate::halt::{Halt, HaltReason};
use crate::output::RunFacts;
use crate::workspace::{self, Workspace, WorkspaceError};
use std::path::Path;

fn overrides(a: &RunArgs) -> Overrides {
    Overrides {
        exec: a.exec.clone(),
        check: a.check.clone(),
        max_iterations: if a.once { Some(1) } else { a.max_iterations },
        exec_timeout: a.exec_timeout.clone(),
        check_timeout: a.check_timeout.clone(),
        success_exit_code: a.success_exit_code,
        test_format: a.test_format.clone(),
        reports: a.reports.clone(),
        confirm_runs: a.confirm_runs,
        kill_grace: a.kill_grace.clone(),
        check_network: a.check_network.clone(),
        no_progress_k: a.no_progress_k,
        on_regression: a.on_regression.clone(),
        blocked_paths: a.blocked_paths.clone(),
        budget_usd: a.budget_usd,
        budget_tokens: a.budget_tokens,
        max_duration: a.max_duration.clone(),
        cost_sigma: a.cost_sigma,
        model_pin: a.model.clone(),
        stall_timeout: a.stall_timeout.clone(),
        comprehension_every: a.comprehension_every,
        attended: a.attended.then_some(true),
        approval_timeout: a.approval_timeout.clone(),
        ack_required: a.ack_required,
        on_halt: a.on_halt.clone(),
        max_turns: a.max_turns,
        on_rate_limit: a.on_rate_limit.clone(),
        check_in_place: a.check_in_place,
        accept_rejected_tree: a.accept_rejected_tree,
        sandbox: a.sandbox.as_deref().map(|m| match m {
            "landlock" => crate::config::SandboxMode::Landlock,
            "off" => crate::config::SandboxMode::Off,
            _ => crate::config::SandboxMode::Auto,
        }),
        exec_failures: a.exec_failures,
        on_unmetered: a.on_unmetered.clone(),
        judge: a.judge.clone(),
        judge_every: a.judge_every,
        judge_timeout: a.judge_timeout.clone(),
        judge_budget_usd: a.judge_budget_usd,
        task_file: a.task.clone(),
        objective: a.objective.clone(),
        tasks: a.tasks.clone(),
        context_files: a.context_files.clone(),
    }
}

/// The run flags `o` sets, by their spelling (`--confirm-runs`), in `run --help`'s
/// order: what a refused `run --resume` names (its `max_iterations` is set only by
/// `--once` there).
fn given_flags(o: &Overrides) -> Vec<&'static str> {
    let d = Overrides::default();
    [
        ("--exec", o.exec != d.exec),
        ("--check", o.check != d.check),
        ("--once", o.max_iterations != d.max_iterations),
        ("--exec-timeout", o.exec_timeout != d.exec_timeout),
        ("--check-timeout", o.check_timeout != d.check_timeout),
        (
            "--success-exit-code",
            o.success_exit_code != d.success_exit_code,
        ),
        ("--test-format", o.test_format != d.test_format),
        ("--report", o.reports != d.reports),
        ("--confirm-runs", o.confirm_runs != d.confirm_runs),
        ("--kill-grace", o.kill_grace != d.kill_grace),
        ("--check-network", o.check_network != d.check_network),
        ("--no-progress-k", o.no_progress_k != d.no_progress_k),
        ("--on-regression", o.on_regression != d.on_regression),
        ("--blocked-path", o.blocked_paths != d.blocked_paths),
        ("--budget-usd", o.budget_usd != d.budget_usd),
        ("--budget-tokens", o.budget_tokens != d.budget_tokens),
        ("--max-duration", o.max_duration != d.max_duration),
        ("--cost-sigma", o.cost_sigma != d.cost_sigma),
        ("--model", o.model_pin != d.model_pin),
        ("--stall-timeout", o.stall_timeout != d.stall_timeout),
        (
            "--comprehension-every",
            o.comprehension_every != d.comprehension_every,
        ),
        ("--attended", o.attended != d.attended),
        (
            "--approval-timeout",
            o.approval_timeout != d.approval_timeout,
        ),
        ("--ack-required", o.ack_required != d.ack_required),
        ("--on-halt", o.on_halt != d.on_halt),
        ("--max-turns", o.max_turns != d.max_turns),
        ("--on-rate-limit", o.on_rate_limit != d.on_rate_limit),
        ("--check-in-place", o.check_in_place),
        ("--accept-rejected-tree", o.accept_rejected_tree),
        ("--sandbox", o.sandbox != d.sandbox),
        ("--exec-failures", o.exec_failures != d.exec_failures),
        ("--on-unmetered", o.on_unmetered != d.on_unmetered),
        ("--judge", o.judge != d.judge),
        ("--judge-every", o.judge_every != d.judge_every),
        ("--judge-timeout", o.judge_timeout != d.judge_timeout),
        (
            "--judge-budget-usd",
            o.judge_budget_usd != d.judge_budget_usd,
        ),
        ("--task", o.task_file != d.task_file),
        ("--objective", o.objective != d.objective),
        ("--tasks", o.tasks != d.tasks),
        ("--context-file", o.context_files != d.context_files),
    ]
    .into_iter()
    .filter_map(|(flag, set)| set.then_some(flag))
    .collect()
}

/// Renders a halt as the command's outcome. `facts` are the run's facts (read back
/// from its receipt, or the preflight halt's).
pub(crate) fn halt_outcome(
    run_id: Option<&str>,
    iteration: Option<u32>,
    halt: &Halt,
    explanation: &str,
    receipt: Option<&Path>,
    facts: RunFacts,
) -> Outcome {
    let body = halt_body(run_id, iteration, halt, explanation, receipt, facts, None);
    outcome_of(&body, halt)
}

/// A contributor as a bullet; its further lines (a TOML error's caret diagram, a
/// hint) stay on their own lines, indented under the bullet so the diagram's columns
/// keep lining up.
fn bullet(c: &str) -> String {
    let mut lines = c.lines();
    let mut s = format!("  - {}\n", lines.next().unwrap_or(""));
    for l in lines {
        s.push_str(&format!("    {l}\n"));
    }
    s
}

/// The halt's outcome from its body: status `halted`, the halt's exit code, and its
/// contributors as `errors[]` unless it converged.
fn outcome_of(body: &RunBody, halt: &Halt) -> Outcome {
    let mut o = Outcome::from_body("halted", halt.reason.exit_code(), body);
    if halt.reason != HaltReason::SuccessConditionMet {
        o.errors.clone_from(&halt.contributors);
    }
    o
}

/// The body of a halt; a failed work step's stderr `tail` is shown right under the
/// halt's contributors (and in `stderr_tail`/`stderr_file`).
fn halt_body(
    run_id: Option<&str>,
    iteration: Option<u32>,
    halt: &Halt,
    explanation: &str,
    receipt: Option<&Path>,
    facts: RunFacts,
    tail: Option<super::halt_notes::StderrTail>,
) -> RunBody {
    let mut human = format!(
        "halted: {} (exit {}) at iteration {}\n",
        halt.reason,
        halt.reason.exit_code(),
        iteration.map_or_else(|| "-".to_string(), |i| i.to_string())
    );
    for c in &halt.contributors {
        human.push_str(&bullet(c));
    }
    if let Some(t) = &tail {
        human.push_str(&t.render());
    }
    if !explanation.is_empty() {
        human.push_str(&format!("{explanation}\n"));
    }
    if let (Some(id), Some(path)) = (run_id, receipt) {
        // the receipt's own path: the project may not be where the command was typed
        human.push_str(&format!(
            "receipt: {} (explain: loopexec explain-halt {id})\n",
            path.display()
        ));
    }
    RunBody {
        run_id: run_id.map(str::to_string),
        iteration,
        halt_reason: halt.reason.as_str().to_string(),
        halt_class: halt.reason.class().as_str().to_string(),
        advice: halt.reason.advice().as_str().to_string(),
        receipt: receipt.map(|p| p.display().to_string()),
        contributors: halt.contributors.clone(),
        explanation: explanation.to_string(),
        detail: halt.detail.clone(),
        run: facts,
        stderr_tail: tail.as_ref().map(|t| t.text.clone()),
        stderr_file: tail.map(|t| t.file),
        rejected_tree: None,
        human,
    }
}

/// The refusal when loopexec's state directory ([`crate::engine::cleanroom::state_dir`])
/// lies inside `workdir`: every snapshot and clean room would hold loopexec's own
/// stores and clean rooms, which change while the run goes on (a fresh review ran in
/// `/tmp` with the state directory under it and got a halt listing thousands of
/// paths). `None` when it lies elsewhere.
fn state_dir_inside(workdir: &Path) -> Option<String> {
    let state = crate::engine::cleanroom::state_dir();
    // the state directory may not exist yet: judge its nearest existing ancestor's
    // real path with the rest appended
    let mut existing = state.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        rest.push(existing.file_name()?.to_owned());
        existing = existing.parent()?;
    }
    let mut real = std::fs::canonicalize(existing).ok()?;
    for r in rest.iter().rev() {
        real.push(r);
    }
    let work = std::fs::canonicalize(workdir).ok()?;
    real.starts_with(&work).then(|| {
        format!(
            "loopexec's state directory {} is inside the workdir {}: every snapshot and clean room would copy loopexec's own records\nhint: set LOOPEXEC_STATE_DIR to a directory outside the workdir, or run in the project's own directory",
            real.display(),
            work.display()
        )
    })
}

/// The `run` flag of configuration field `field`, when it is on this process's
/// command line (`--flag V` or `--flag=V`).
fn given_flag(field: &str) -> Option<&'static str> {
    let flag = config::flag_of(field)?;
    let eq = format!("{flag}=");
    std::env::args_os()
        .any(|a| a.to_str().is_some_and(|a| a == flag || a.starts_with(&eq)))
        .then_some(flag)
}

fn preflight(ws: Option<&Workspace>, run_id: &str, reason: HaltReason, message: String) -> Outcome {
    let halt = Halt::new(reason, vec![message]);
    engine::record_preflight(ws, run_id, &halt);
    let explanation = format!(
        "{}: {}",
        reason,
        crate::explain::advice_sentence(reason.advice())
    );
    let facts = crate::receipt::facts::preflight_facts(Some(run_id), &halt);
    halt_outcome(Some(run_id), None, &halt, &explanation, None, facts)
}

/// The refusal of a start (or a resume) while run `live` (pid `pid`) holds the
/// workdir: nothing is wrong with the command, and the live run's receipt and ledger
/// rows are not touched.
fn locked(run_id: &str, live: String, pid: String) -> Outcome {
    let e = WorkspaceError::Locked {
        run_id: live.clone(),
        pid,
    };
    let halt = Halt::new(HaltReason::WorkspaceInvalid, vec![e.to_string()]);
    let explanation = format!(
        "{}: wait for run {live} to halt (`loopexec status --run {live}` follows it), or stop it (`loopexec hold --run {live} --reason TEXT --by NAME`), then start again",
        halt.reason
    );
    let facts = crate::receipt::facts::preflight_facts(Some(run_id), &halt);
    halt_outcome(Some(run_id), None, &halt, &explanation, None, facts)
}

/// Where a refusal made before the engine starts is recorded: in the workspace's
/// ledger, unless `run_id` names a run the workspace already holds (a refused
/// `--resume`, a reused `--run-id`). That refusal is not the run's halt: written under
/// its id, it rewrote a converged run's ledger row, and the run's `check`, `verify`
/// and `explain-halt` failed from then on (a new user's mistyped resume). The output
/// still names the refusal.
fn refusal_ledger<'a>(ws: &'a Workspace, run_id: &str) -> Option<&'a Workspace> {
    let known = ws.receipt_path(run_id).exists()
        || (ws.ledger_path().exists()
            && crate::store::Store::open(&ws.ledger_path())
                .ok()
                .and_then(|s| s.run(run_id).ok().flatten())
                .is_some());
    (!known).then_some(ws)
}

pub(crate) fn run(workdir: &Path, a: &RunArgs, _json: bool, quiet: bool) -> Outcome {
    let resume = a.resume.is_some();
    // The caps are the settings a resume may change: they say how far a person lets
    // the run go, not how its work is judged (SPEC §1.3).
    let others = Overrides {
        max_iterations: if a.once { Some(1) } else { None },
        budget_usd: None,
        budget_tokens: None,
        max_duration: None,
        ..overrides(a)
    };
    if resume && (others != Overrides::default() || a.config.is_some()) {
        let mut refused = given_flags(&others);
        if a.config.is_some() {
            refused.push("--config");
        }
        return Outcome::error(
            2,
            format!(
                "--resume continues a run under the policy recorded in its receipt, so {} would be ignored: only the caps may change (--max-iterations, --budget-usd, --budget-tokens, --max-duration)",
                refused.join(", ")
            ),
            Some(format!(
                "drop {}, or start a new run with the new settings",
                refused.join(", ")
            )),
        );
    }
    let run_id = a
        .resume
        .clone()
        .or_else(|| a.run_id.clone())
        .unwrap_or_else(workspace::new_run_id);
    if let Err(e) = workspace::validate_run_id(&run_id) {
        // Only a flag gives an id that can be wrong (a generated one never is): a
        // usage error that names the flag; nothing is recorded and no run is named.
        let flag = if resume { "--resume" } else { "--run-id" };
        return Outcome::error(
            2,
            format!("{flag} {run_id:?}: {e}"),
            Some(format!(
                "give {flag} 1-128 letters, digits, `.`, `_` or `-`, not starting with `.` and not `latest`"
            )),
        );
    }
    let ws = match Workspace::at(workdir) {
        Ok(w) => w,
        Err(e) => return preflight(None, &run_id, HaltReason::WorkspaceInvalid, e.to_string()),
    };
    let refusals = refusal_ledger(&ws, &run_id);
    // a run still going is not resumed: its receipt has no halt yet, which would read
    // as a loopexec that died (a new user's review)
    if let Some((live, pid)) = ws.live_holder().filter(|_| resume) {
        return locked(&run_id, live, pid);
    }
    let cfg = if resume {
        match resumed_config(&ws, &run_id) {
            Ok((mut c, done)) => {
                if let Some(n) = a.max_iterations {
                    if let Some(o) = raised_cap(&run_id, n, done) {
                        return o;
                    }
                    c.max_iterations = n;
                }
                let caps = Overrides {
                    budget_usd: a.budget_usd,
                    budget_tokens: a.budget_tokens,
                    max_duration: a.max_duration.clone(),
                    ..Overrides::default()
                };
                if let Err(e) = config::resume_caps(&mut c, &caps) {
                    return Outcome::error(2, e.to_string(), Some(e.hint()));
                }
                c
            }
            Err(m) => return preflight(refusals, &run_id, HaltReason::InvariantFailed, m),
        }
    } else {
        match config::resolve(&ws.workdir, a.config.as_deref(), &overrides(a)) {
            Ok(c) => c,
            // a bad value given on the command line is a usage error (exit 2, no run),
            // as a bad flag is; one from loop.toml is the configuration's (20)
            Err(config::ConfigError::Invalid {
                ref field,
                ref message,
            }) if given_flag(field).is_some() => {
                let flag = given_flag(field).unwrap_or_default();
                return Outcome::error(
                    2,
                    format!("invalid value for `{flag}`: {message}"),
                    Some(format!("give `{flag}` a valid value")),
                );
            }
            Err(e) => {
                return preflight(
                    refusals,
                    &run_id,
                    HaltReason::InvariantFailed,
                    format!("{e}\nhint: {}", e.hint()),
                )
            }
        }
    };
    // loopexec's own output files inside the workdir (`2> log.txt`) receive progress
    // lines while steps run: they are not the agent's work nor the check's writes.
    let mut cfg = cfg;
    // the wait is an attended run's: given alone it would change nothing (a new
    // user's `--approval-timeout 0s` was taken without a word)
    if a.approval_timeout.is_some() && !cfg.control.attended {
        return Outcome::error(
            2,
            "--approval-timeout applies only to an attended run, where a destructive agent call waits for a person".into(),
            Some("add --attended (or `[control] attended = true` in loop.toml), or drop --approval-timeout".into()),
        );
    }
    for own in crate::progress::own_output_files(&ws.workdir) {
        if !cfg.clean_room.exclude.contains(&own) {
            cfg.clean_room.exclude.push(own);
        }
    }
    if cfg.check.is_none() {
        return preflight(
            refusals,
            &run_id,
            HaltReason::WorkspaceInvalid,
            "no check command: give --check CMD (or `check = \"...\"` in loop.toml); without an external check there is no loop".into(),
        );
    }
    // the task file is the judge's and the context budget's reading of the task: a
    // name that reaches nothing would be recorded as if it had been given (a new
    // user's `--task NOPE.md` ran and converged)
    if let Some(t) = cfg.task.file.as_deref() {
        let p = ws.workdir.join(t);
        if !p.is_file() {
            return preflight(
                refusals,
                &run_id,
                HaltReason::InvariantFailed,
                format!(
                    "the task file `{t}` (--task, or [task] file in loop.toml) is not a file: {} does not exist\nhint: give the path of the task's description, relative to the workdir {}",
                    p.display(),
                    ws.workdir.display()
                ),
            );
        }
    }
    if let Some(m) = state_dir_inside(&ws.workdir) {
        return preflight(refusals, &run_id, HaltReason::WorkspaceInvalid, m);
    }
    if !cfg.clean_room.in_place {
        let check = cfg.check.as_deref().unwrap_or_default();
        if let Some((root, file)) = engine::cleanroom::pytest_rootdir_above(&ws.workdir, check) {
            return preflight(
                refusals,
                &run_id,
                HaltReason::WorkspaceInvalid,
                format!(
                    "pytest takes its rootdir from {} ({} is there), above the workdir {}: the clean room holds the workdir only, so a check there would run without that file and the conftest.py files beside it\nhint: run loopexec from {} with a check that changes into the project (`--workdir {} --check 'cd {} && ...'`), or give --check-in-place",
                    root.display(),
                    file.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
                    ws.workdir.display(),
                    root.display(),
                    root.display(),
                    ws.workdir
                        .canonicalize()
                        .ok()
                        .and_then(|w| w.strip_prefix(&root).ok().map(|r| r.display().to_string()))
                        .unwrap_or_else(|| ".".into()),
                ),
            );
        }
    }
    if cfg.check_network == "none" && !crate::observe::isolation::network_namespace_available() {
        return preflight(
            refusals,
            &run_id,
            HaltReason::IsolationUnsatisfiable,
            "check_network = none was requested but this machine cannot create a network namespace (`unshare --net` failed)".into(),
        );
    }
    if !resume && cfg.control.ack_required {
        if let Some(o) = crate::cmd::halts::refuse_new_run(&ws, &run_id) {
            return o;
        }
    }
    if !resume {
        if let Some(o) = crate::cmd::halts::refuse_held_start(&ws, &run_id) {
            return o;
        }
    }
    let signals = match SignalFlag::install() {
        Ok(s) => s,
        Err(e) => {
            return preflight(
                refusals,
                &run_id,
                HaltReason::InternalError,
                format!("cannot install signal handlers: {e}"),
            )
        }
    };
    let req = RunRequest {
        workspace: ws.clone(),
        config: cfg,
        run_id: run_id.clone(),
        resume,
        // Progress goes to stderr in every mode (CI logs need signs of life); stdout
        // stays the API. `--quiet` silences it.
        progress: !quiet,
        show_agent_output: a.show_agent_output,
    };
    match engine::run(req, &signals) {
        Ok(RunOutcome {
            run_id,
            iteration,
            halt,
            explanation,
            advice,
            receipt,
            ..
        }) => {
            // the receipt is read back once, for every part of the verdict below
            let lines = receipt
                .as_deref()
                .and_then(|p| crate::receipt::read(p).ok())
                .unwrap_or_default();
            let traj = crate::trajectory::Trajectory::from_lines(&lines);
            warn_unmetered(&traj);
            let facts = match &receipt {
                Some(p) if !lines.is_empty() => {
                    crate::receipt::facts::run_facts(&run_id, p, &lines)
                }
                _ => crate::receipt::facts::preflight_facts(Some(&run_id), &halt),
            };
            let tail = super::halt_notes::of_halt(&ws.workdir, halt.reason, &halt.detail, &lines);
            let mut body = halt_body(
                Some(&run_id),
                Some(iteration),
                &halt,
                &explanation,
                receipt.as_deref(),
                facts,
                tail,
            );
            body.advice = advice.as_str().to_string();
            let before_halt = lines
                .iter()
                .rposition(|l| matches!(l.event, crate::receipt::Event::Halted(_)))
                .map_or(&lines[..], |p| &lines[..p]);
            body.rejected_tree = super::halt_notes::rejected_tree(
                before_halt,
                &super::halt_notes::acceptance(before_halt),
            );
            if let Some(r) = &body.rejected_tree {
                body.human.push_str(&r.render());
            }
            let mut o = outcome_of(&body, &halt);
            crate::cmd::halts::attach_declined_from(&mut o, &traj);
            o
        }
        Err(
            e @ (EngineError::Latched { .. }
            | EngineError::AwaitingAnswer { .. }
            | EngineError::HeldAtResume { .. }),
        ) => {
            // Refused: the latch stands, and no new halt event is added for it.
            let halt = Halt::new(e.reason(), vec![e.to_string()]);
            let explanation = format!(
                "{}: a person must act first (`loopexec halts --unacked --run {run_id}`, `loopexec pending`), then resume",
                halt.reason
            );
            let facts = crate::receipt::facts::preflight_facts(Some(&run_id), &halt);
            halt_outcome(Some(&run_id), None, &halt, &explanation, None, facts)
        }
        Err(EngineError::Workspace(WorkspaceError::Locked { run_id: live, pid })) => {
            locked(&run_id, live, pid)
        }
        // A refused reuse of an existing id, or a refused resume, must not add rows
        // under that run ([`refusal_ledger`]).
        Err(e @ (EngineError::RunExists(_) | EngineError::NotResumable(..))) => {
            preflight(None, &run_id, e.reason(), e.to_string())
        }
        Err(e) => preflight(Some(&ws), &run_id, e.reason(), e.to_string()),
    }
}

/// Says on stderr which iterations' spend escaped the budget caps (not metered), from
/// the run's trajectory as read back from its receipt; see
/// [`crate::detect::spend::unmetered`]. A receipt that could not be read (an empty
/// trajectory) was already reported by the run itself.
fn warn_unmetered(t: &crate::trajectory::Trajectory) {
    // lines of the side channel the agent's wrapper wrote in a shape loopexec cannot
    // meter: named, so a wrapper that writes `{"cost": 0.5}` is told why
    for (it, u) in crate::detect::spend::usages(t) {
        for line in &u.usage_file_rejected {
            eprintln!(
                "loopexec: warning: iteration {it}: a $LOOPEXEC_USAGE_FILE line was not metered ({line}); write one JSON object per line with cost_usd and/or input_tokens, output_tokens"
            );
        }
    }
    let Some(cfg) = t.config() else { return };
    let its = crate::detect::spend::unmetered_iterations(t, cfg);
    if !its.is_empty() {
        eprintln!(
            "loopexec: warning: spend not metered in iteration(s) {its:?}: the agent's output gave the budget cap nothing to count (cost unknown, not $0); use --on-unmetered halt to stop such a run, or write usage to $LOOPEXEC_USAGE_FILE"
        );
    }
}

/// The refusal of `--resume ID --max-iterations N` when `N` gives the run no
/// iteration it has not started (`done`, the last iteration in its receipt), or is out
/// of the range a new run accepts; `None` when `N` may be the new cap.
fn raised_cap(run_id: &str, n: u32, done: u32) -> Option<Outcome> {
    if n > 100_000 {
        return Some(Outcome::error(
            2,
            format!("--max-iterations {n}: must be at most 100000"),
            None,
        ));
    }
    (n <= done).then(|| {
        Outcome::error(
            2,
            format!(
                "--max-iterations {n} gives run `{run_id}` no further iteration: it has already started iteration {done}; give a cap above {done} (--max-iterations {})",
                done + 1
            ),
            Some(format!(
                "give a cap above {done}: loopexec run --resume {run_id} --max-iterations {}",
                done + 1
            )),
        )
    })
}

/// The policy of a run being resumed: the one recorded in its `run_started`, with
/// the cap of the last `resumed` event that set one; and the last iteration its
/// receipt started.
fn resumed_config(ws: &Workspace, run_id: &str) -> Result<(crate::config::RunConfig, u32), String> {
    let path = ws.receipt_path(run_id);
    if !path.is_file() {
        return Err(format!(
            "run `{run_id}` not found in {} (nothing to resume)",
            ws.runs_dir().display()
        ));
    }
    let lines = crate::receipt::read(&path).map_err(|e| e.to_string())?;
    // the resumed run takes its whole policy from this receipt: it must be the one
    // loopexec wrote (a chain that holds is not enough: a check in place once swapped
    // in a forged receipt with a chain of its own, a seventeenth review)
    let store = crate::store::Store::open(&ws.ledger_path()).map_err(|e| e.to_string())?;
    let problems = super::recorded_in(&store, run_id, &path, &lines);
    if !problems.is_empty() {
        return Err(format!(
            "run `{run_id}` cannot be resumed: its receipt is not the one this workspace recorded ({}); start a new run",
            problems.join("; ")
        ));
    }
    // A run whose loopexec died before its halt has no seal: nothing out of the
    // agent's reach vouches for what its receipt says after its first line (the
    // control journal keeps only that), and a resume builds on every line of it — a
    // nineteenth review relabelled a check as interrupted and forged an exec's
    // guards, and the resumed run took the weakened tree for t0's. A new run is
    // judged from that run's t0 instead (its `inherits_unjudged`).
    if !lines
        .iter()
        .any(|l| matches!(l.event, crate::receipt::Event::Halted(_)))
    {
        return Err(format!(
            "run `{run_id}` cannot be resumed: its loopexec ended before recording a halt (killed, or the machine stopped), so nothing vouches for what its receipt says after its start; start a new run: it is judged from run `{run_id}`'s t0, and keeps the tree as it is"
        ));
    }
    let t = crate::trajectory::Trajectory::from_lines(&lines);
    let cfg = t
        .config()
        .cloned()
        .ok_or_else(|| format!("receipt {} has no run_started event", path.display()))?;
    Ok((cfg, t.last().map_or(0, |i| i.iteration)))
}
