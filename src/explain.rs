//! Explanations: what a halt means and what to do next, in words, computed from the
//! halt and the trajectory (never stored guesses).

use crate::decide::decide;
use crate::detect::progress::AttemptView;
use crate::detect::summary::{summarize_with_window, TrajectorySummary};
use crate::halt::{Advice, Halt, HaltReason, Verdict};
use crate::receipt::events::Halted;
use crate::trajectory::Trajectory;
use serde::Serialize;

/// The trajectory digest with the run's own no-progress window.
#[must_use]
pub fn summary_of(t: &Trajectory, views: &[AttemptView]) -> TrajectorySummary {
    let k = t.config().map_or(3, |c| c.halt.no_progress_detected.k);
    summarize_with_window(views, k)
}

/// A compact text rendering of the trajectory: |F_i| per iteration, a sparkline, and
/// which tests entered and left the failing set.
#[must_use]
pub fn render_summary(s: &TrajectorySummary) -> String {
    if s.iterations.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\nfailing-set size by iteration: {}  {:?}\n",
        s.sparkline, s.failing_counts
    );
    if let (Some(b), Some(i)) = (s.best_failing_count, s.best_iteration) {
        let trend = if s.iterations.last().is_some_and(|d| d.green) {
            "green at the end"
        } else if s.improving_at_end {
            "still improving at the end"
        } else {
            "not improving at the end"
        };
        out.push_str(&format!("best: {b} failing at iteration {i}; {trend}\n"));
    }
    for d in s.iterations.iter().skip(1) {
        let mut line = format!("  {:>3}: {:>4} failing", d.iteration, d.failing_count);
        if d.green {
            line.push_str(" green");
        }
        if !d.accepted {
            line.push_str(" rejected");
        }
        if d.entered_count > 0 {
            line.push_str(&format!(" +{} ({})", d.entered_count, d.entered.join(", ")));
        }
        if d.left_count > 0 {
            line.push_str(&format!(" -{} ({})", d.left_count, d.left.join(", ")));
        }
        out.push_str(&line);
        out.push('\n');
    }
    if !s.never_passed.is_empty() {
        out.push_str(&format!("never passed: {}\n", s.never_passed.join(", ")));
    }
    out
}

/// The sentence of advice for an [`Advice`] class.
#[must_use]
pub fn advice_sentence(a: Advice) -> &'static str {
    match a {
        Advice::Done => "done: the check is green and every guard held.",
        Advice::RaiseTheLimit => "raise the limit: the loop was still improving when it stopped; more iterations are a rational retry.",
        Advice::DoNotRetry => "do not retry with more budget: the loop is not converging; change the task, the approach or the agent first.",
        Advice::FixTheCheck => "fix the check: the instrument cannot be trusted, so no verdict it gave should be believed yet.",
        Advice::FixTheEnvironment => "fix the environment: the command, workdir or configuration must be corrected before a rerun.",
        Advice::HumanMustDecide => "a human must decide: look at the work and the receipt before anything runs again.",
    }
}

/// How to go on past a `budget_exceeded` halt: the resume that raises the cap it
/// names (`detail.cap`: `usd`, `tokens` or `max_duration`), and where its spend is
/// shown. The caps are the settings a resume may change (SPEC §1.3).
fn raise_the_cap(h: &Halt, t: &Trajectory) -> String {
    let run = t.started.as_ref().map_or("RUN_ID", |s| s.run_id.as_str());
    match h.detail.get("cap").and_then(|c| c.as_str()) {
        Some("tokens") => format!("resume with a higher token cap (`loopexec run --resume {run} --budget-tokens N`; `loopexec inspect-cost` shows the spend per iteration)"),
        Some("max_duration") => format!("resume with a longer wall-clock cap (`loopexec run --resume {run} --max-duration D`; the time between a halt and its resume does not count; `loopexec report` shows each step's duration)"),
        _ => format!("resume with a higher cap (`loopexec run --resume {run} --budget-usd X`; `loopexec inspect-cost` shows the spend per iteration)"),
    }
}

/// What a green verdict adds when the action gate recorded critical findings during the
/// run (a credential written, declined): the checks passed, but a person must read and
/// acknowledge them before merging, and they stop the next run until then (a new user's
/// green run said only "merge it"). Empty when there are none.
fn critical_findings_note(t: &Trajectory) -> String {
    let critical: Vec<String> = t
        .actions
        .iter()
        .flat_map(|a| a.findings.iter())
        .filter(|f| f.severity == "critical")
        .map(|f| format!("{}: {}", f.halt_type, f.description))
        .collect();
    if critical.is_empty() {
        return String::new();
    }
    format!(
        " First: the action gate recorded {} critical finding(s) during the run ({}); read them (`loopexec halts --unacked`) and acknowledge each before merging — until then they stop the next run.",
        critical.len(),
        critical.join("; ")
    )
}

/// Reason-specific guidance (one or two sentences), with the run's own id in the
/// commands it names (`loopexec run --resume <id>`, not a placeholder).
#[must_use]
pub fn guidance(h: &Halt, t: &Trajectory) -> String {
    let text = guidance_text(h, t);
    match t.started.as_ref() {
        Some(s) => text.replace("RUN_ID", &s.run_id),
        None => text,
    }
}

fn guidance_text(h: &Halt, t: &Trajectory) -> String {
    let views = t.attempt_views(t.config().map_or(0, |c| c.success_exit_code));
    let summary = summary_of(t, &views);
    if h.detail.get("cause").and_then(|c| c.as_str()) == Some("inherited_rejection") {
        // t0 is the rejected tree itself: a diff or restore against t0 would be a no-op
        let run = h
            .detail
            .get("run_id")
            .and_then(|r| r.as_str())
            .unwrap_or("RUN");
        return format!(
            "The working tree is the one run {run} rejected. Restore that run's last accepted tree (`loopexec explain-halt --run-id {run}` prints the command), or start with --accept-rejected-tree if the change was meant."
        );
    }
    match h.reason {
        HaltReason::SuccessConditionMet if t.last().is_some_and(|i| i.iteration == 0) => {
            "The check was already green on the untouched tree, so no iteration ran. If work was intended, the check does not yet measure it: add a failing test for the change first.".into()
        }
        HaltReason::SuccessConditionMet => format!(
            "Review the diff against t0 ({}) and merge it.{}",
            t0_command(t, "git --no-pager --git-dir={store} diff --no-ext-diff --no-textconv --text {t0} {last}"),
            critical_findings_note(t)
        ),
        HaltReason::MaxIterationsReached
        | HaltReason::NoProgressDetected
        | HaltReason::SameFailureRepeated
        | HaltReason::OscillationDetected
        | HaltReason::SameTestRegressed
        | HaltReason::UnsatisfiableConstraints
        | HaltReason::InfeasibleSuspected => crate::detect::summary::advice_text(h.reason, &summary),
        HaltReason::ExecutionFailure if h.detail.get("cause").and_then(|c| c.as_str()) == Some("timeout") => {
            let flag = if h.detail.get("step").and_then(|s| s.as_str()) == Some("check") {
                "--check-timeout"
            } else {
                "--exec-timeout"
            };
            format!("The step ran past its time limit and its process group was ended. If it needs longer, start a new run with a longer {flag}; if it should not, run it by hand in the workdir to see where it waits.")
        }
        HaltReason::ExecutionFailure => "Run the named command by hand in the workdir to see why it fails; loopexec never retries a step that cannot run.".into(),
        HaltReason::WorkspaceInvalid => "Give a check with --check (or `check` in loop.toml) and, when it is not green, an exec with --exec; give a --test-format the check's output is in (or none); point --workdir at an existing directory; or wait for the run holding the workdir.".into(),
        HaltReason::InvariantFailed => "Correct the named configuration field; `loopexec init` writes a commented loop.toml.".into(),
        HaltReason::HumanRequired if h.detail.get("cause").and_then(|c| c.as_str()) == Some("hold") => "A person's hold stopped the run. Release the hold (`loopexec holds`, `loopexec release ID --by NAME`), acknowledge the halt event (`loopexec halts --unacked`, `loopexec ack ID --by NAME --resolution resolved`), then `loopexec run --resume RUN_ID`.".into(),
        HaltReason::HumanRequired => "The run was stopped by a signal. Inspect the tree, then start a new run (or `run --resume` this one).".into(),
        HaltReason::EscalationPending if h.detail.get("cause").and_then(|c| c.as_str()) == Some("approval_timeout") => "A destructive agent action waited for a person past the approval timeout. List it with `loopexec pending`, answer with `loopexec confirm ID --by NAME` or `loopexec deny ID --by NAME`, then `loopexec run --resume RUN_ID` (the agent must ask again: a confirmation covers one call, in real time).".into(),
        HaltReason::BlockedPathModified if !git_files_named(h).is_empty() => {
            let named = git_files_named(h);
            let rest = named.len() < h.detail["paths"].as_array().map_or(0, Vec::len);
            format!(
                "The repository's own git files changed ({}): they are in no snapshot, so no diff or revert of the tree covers them. Compare them with what you expect (`git config --local --list --show-origin`, `ls -la .git/hooks .git/info`) and remove what you did not put there: a `core.fsmonitor`, a filter driver or a hook runs its program the next time git reads the work tree (loopexec's own git calls never run them).{}",
                named.join(", "),
                if rest {
                    format!(
                        " Then read the diff of the other named files ({}) and revert to t0 ({}).",
                        t0_command(t, "git --no-pager --git-dir={store} diff --no-ext-diff --no-textconv --text {t0} {last}"),
                        t0_command(
                            t,
                            "cd {workdir} && git --git-dir={store} --work-tree=. restore --source={t0} --worktree -- . && git --git-dir={store} diff -z --no-renames --name-only --diff-filter=A {t0} {last} | xargs -0 rm -f --"
                        )
                    )
                } else {
                    String::new()
                }
            )
        }
        HaltReason::MetricIntegrityViolation | HaltReason::BlockedPathModified => format!(
            "Do not trust the green: read the diff of the named files ({}), then revert to t0 ({}).",
            t0_command(t, "git --no-pager --git-dir={store} diff --no-ext-diff --no-textconv --text {t0} {last}"),
            // Restore t0's files, then remove the files added since t0 (restore
            // alone leaves them).
            t0_command(
                t,
                "cd {workdir} && git --git-dir={store} --work-tree=. restore --source={t0} --worktree -- . && git --git-dir={store} diff -z --no-renames --name-only --diff-filter=A {t0} {last} | xargs -0 rm -f --"
            )
        ),
        HaltReason::HermeticityViolation if h.detail.get("toolchain_changed").is_some() => "What the check runs on outside the tree changed since t0 (a program on its PATH, an interpreter's start-up hook, a runner configuration in a directory above the tree or the clean room, a registry crate): find who wrote the named file — the agent, or code under test during a check — and restore it; a change you made yourself on purpose needs a new run, whose t0 measures it.".into(),
        HaltReason::HermeticityViolation => "The check wrote into the files it judged (the clean room's copy, or the working tree for a check in place): make it write only to ignored or temporary paths (or list its caches in [guards] check_may_write).".into(),
        HaltReason::CheckNotHermetic if h.detail.get("dimension").and_then(|d| d.as_str()) == Some("place") => "The check was green in the clean room and not in the working tree: run it there by hand and read the named tests. Code whose result depends on where it runs (its path, a `.git` or `.loopexec/` beside it) is not a fix; a new test the agent added that fails there is its to fix; a test that needs the working tree (an ignored file, a cache directory) needs it in the tree.".into(),
        HaltReason::CheckFlaky => "Quarantine or fix the flaky test(s), then measure the check with `loopexec probe-check`.".into(),
        HaltReason::BudgetExceeded if summary.improving_at_end => format!(
            "The loop was still improving when the budget ran out ({}); if the spend was expected, {}.",
            summary
                .best_failing_count
                .zip(summary.best_iteration)
                .map_or("no failing count recorded".to_string(), |(c, i)| format!("best {c} failing at iteration {i}")),
            raise_the_cap(h, t)
        ),
        HaltReason::BudgetExceeded => format!(
            "The budget ran out and the loop was not improving at its end ({}): more budget alone is unlikely to help. Only if the spend was expected, {}.",
            summary
                .best_failing_count
                .zip(summary.best_iteration)
                .map_or("no failing count recorded".to_string(), |(c, i)| format!("best {c} failing at iteration {i}")),
            raise_the_cap(h, t)
        ),
        HaltReason::CostAnomaly => "Read the per-iteration spend with `loopexec inspect-cost`; raise the cap only if the spend was expected.".into(),
        HaltReason::ModelDriftDetected => "The agent's primary model changed mid-run: pin the model in the agent's own configuration, or accept the new one with --model.".into(),
        HaltReason::HeartbeatStale => "The work step went silent: look at its last output excerpt, then rerun with a longer --stall-timeout if the silence was expected.".into(),
        HaltReason::ComprehensionDebtExceeded => "Review the accepted diffs, record it with `loopexec ack --reviewer NAME`, then `loopexec run --resume RUN_ID`.".into(),
        HaltReason::ReviewerRejected | HaltReason::EscalationPending | HaltReason::RewardHackingDetected
            if t.last().is_some_and(|i| i.judged.is_some()) =>
        {
            "Read the judge's reasons (the contributors, and `judge_finished` in the receipt) against the diff from t0; revert or fix the work, or acknowledge it and `loopexec run --resume RUN_ID`.".into()
        }
        HaltReason::NoActionableTasks => "Every open task waits on another that is not done: mark a blocker done, remove the cycle, or add the missing task to the list, then start a new run.".into(),
        HaltReason::ObjectiveUnverified => "The green cannot be vouched for; the contributors say why. When they name tests the green did not show passing (the --objective given, or the tests t0 named), make the check collect and run them (no deselection, no skip); when the working tree changed under the check, rerun without touching it.".into(),
        HaltReason::ContextBudgetUnsatisfiable => "Split the task, declare fewer files, or use a model with a larger window ([models.windows] in loop.toml); `loopexec build-context` shows the breakdown.".into(),
        _ => String::new(),
    }
}

/// A command over the run's snapshots in loopexec's own store: `{t0}` is the t0
/// snapshot and `{last}` the last iteration's (commit ids from the receipt). Without a
/// recorded t0 snapshot, says so instead.
/// The paths of a `blocked_path_modified` halt that are the repository's own git
/// files (`.git/config`, hooks, info: measured outside any tree).
fn git_files_named(h: &Halt) -> Vec<&str> {
    h.detail["paths"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| p.as_str())
                .filter(|p| p.starts_with(".git/"))
                .collect()
        })
        .unwrap_or_default()
}

fn t0_command(t: &Trajectory, template: &str) -> String {
    let Some(t0) = t
        .started
        .as_ref()
        .and_then(|s| s.git.baseline_snapshot.clone())
    else {
        return "no t0 snapshot was recorded".to_string();
    };
    let last = t
        .iterations
        .iter()
        .rev()
        .find_map(|i| i.exec.as_ref().and_then(|e| e.snapshot.clone()))
        .unwrap_or_else(|| t0.clone());
    let store_dir = t
        .started
        .as_ref()
        .map(|s| crate::observe::tree::store_path(std::path::Path::new(&s.workdir)));
    let word =
        |p: &std::path::Path| crate::observe::isolation::shell_word(&p.display().to_string());
    let store = store_dir
        .as_ref()
        .map_or_else(|| "STORE".to_string(), |p| word(p));
    // the restore runs in the workdir, named in full: pasted from anywhere else it
    // would write t0's files there and remove files there
    let workdir = t.started.as_ref().map_or_else(
        || "WORKDIR".to_string(),
        |s| word(std::path::Path::new(&s.workdir)),
    );
    let command = format!(
        "`{}`",
        template
            .replace("{t0}", &t0)
            .replace("{last}", &last)
            .replace("{store}", &store)
            .replace("{workdir}", &workdir)
    );
    // The store lives in the state directory of whoever ran the run: another
    // LOOPEXEC_STATE_DIR (or HOME) names a store that is not there.
    match store_dir {
        Some(p) if !p.exists() => format!(
            "{command} (no snapshot store at {}: run it with the LOOPEXEC_STATE_DIR the run used)",
            p.display()
        ),
        _ => command,
    }
}

/// The advice for a halt given the trajectory: the reason's own advice, except that a
/// cap reached while stalled is "do not retry" rather than "raise the limit".
#[must_use]
pub fn advice_for(reason: HaltReason, t: &Trajectory) -> Advice {
    let views = t.attempt_views(t.config().map_or(0, |c| c.success_exit_code));
    crate::detect::summary::refined_advice(reason, &summary_of(t, &views))
}

/// What to do, in sentences: the advice class, then the reason's guidance. For the
/// cap, the budget and the no-convergence reasons the guidance already states the
/// advice (it depends on whether the loop was still improving), so it stands alone.
#[must_use]
pub fn what_to_do(h: &Halt, t: &Trajectory) -> String {
    let g = guidance(h, t);
    let own = matches!(
        h.reason,
        HaltReason::MaxIterationsReached | HaltReason::BudgetExceeded
    ) || h.reason.class() == crate::halt::ExitClass::NoConvergence;
    match (g.is_empty(), own) {
        (true, _) => advice_sentence(advice_for(h.reason, t)).to_string(),
        (false, true) => g,
        (false, false) => format!("{} {g}", advice_sentence(advice_for(h.reason, t))),
    }
}

/// The one-line explanation stored in the `halted` event.
#[must_use]
pub fn one_line(h: &Halt, t: &Trajectory) -> String {
    format!("{}: {}{}", h.reason, what_to_do(h, t), protection_note(t))
}

/// What protection was *not* in force, stated in every verdict that lacked it: the
/// check ran in the agent's working tree (`--check-in-place`). Empty otherwise.
#[must_use]
pub fn protection_note(t: &Trajectory) -> String {
    let Some(s) = t.started.as_ref() else {
        return String::new();
    };
    let mut missing = Vec::new();
    if s.check_placement == "in_place" {
        missing.push(
            "the check ran in place, in the agent's working tree, not in a clean room".to_string(),
        );
    }
    if let Some(sb) = &s.sandbox {
        if sb.in_force.starts_with("none") {
            missing.push(format!("the exec had no sandbox: {}", sb.in_force));
        } else if let Some((_, why)) = sb.in_force.split_once("; ") {
            missing.push(why.to_string());
        }
    }
    if missing.is_empty() {
        String::new()
    } else {
        format!(" (protection not in force: {})", missing.join("; "))
    }
}

/// What `explain-halt` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    pub halt_reason: HaltReason,
    pub exit_code: u8,
    pub class: &'static str,
    pub owner: crate::halt::Owner,
    pub advice: &'static str,
    pub what_to_do: String,
    pub contributors: Vec<String>,
    /// The reason `decide` derives from the receipt's observations.
    pub derived_reason: Option<HaltReason>,
    /// True when the derived reason equals the recorded one.
    pub rederived: bool,
    pub trajectory: TrajectorySummary,
    pub iteration: u32,
}

/// Re-derives the verdict from the receipt's observations and explains it.
#[must_use]
pub fn explain(t: &Trajectory, recorded: &Halted) -> Explanation {
    let derived = t
        .config()
        .map(|cfg| decide(t, cfg))
        .and_then(|d| match d.verdict {
            Verdict::Halt(h) => Some(h.reason),
            Verdict::Continue => None,
        });
    let rederived = recorded.preflight || derived == Some(recorded.halt_reason);
    let h = Halt {
        reason: recorded.halt_reason,
        contributors: recorded.contributors.clone(),
        detail: recorded.detail.clone(),
    };
    let views = t.attempt_views(t.config().map_or(0, |c| c.success_exit_code));
    Explanation {
        halt_reason: recorded.halt_reason,
        exit_code: recorded.exit_code,
        class: recorded.halt_reason.class().as_str(),
        owner: recorded.halt_reason.owner(),
        advice: advice_for(recorded.halt_reason, t).as_str(),
        what_to_do: what_to_do(&h, t),
        contributors: recorded.contributors.clone(),
        derived_reason: derived,
        rederived,
        trajectory: summary_of(t, &views),
        iteration: recorded.iteration,
    }
}
