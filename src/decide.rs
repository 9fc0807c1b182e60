//! The join: `decide(&Trajectory, &RunConfig) -> Verdict`.
//!
//! `decide` is called by the loop after every observation (an exec, a check run) and
//! by `explain-halt` / `replay` over a receipt. It is a pure function of its inputs,
//! so the two always agree. The detectors run in a fixed order, and the first that
//! fires decides (its contributors are kept; later detectors are not consulted):
//!
//! | order | family | reasons | when |
//! |---|---|---|---|
//! | 0 | the exec's tree: blocked paths, frozen oracle, links out, toolchain | blocked_path_modified, metric_integrity_violation, hermeticity_violation | after the exec, however it ended |
//! | 0a | holds | human_required (a stop hold, SPEC §Holds) | any step |
//! | 1 | interruption, execution, step liveness | human_required, heartbeat_stale, execution_failure | any step |
//! | 1a | task list, context budget ([`crate::judgment::before_step`]) | no_actionable_tasks, context_budget_unsatisfiable | before an exec |
//! | 3 | spend and identity | budget_exceeded, cost_anomaly, model_drift_detected | after the exec; budget_exceeded also first of all for a run resumed over a cap (with row 9's cap) |
//! | 4 | tampering around the check, oracle trust | metric_integrity_violation, hermeticity_violation, check_flaky | after a check |
//! | 5 | metric integrity (if green, accepted, or green by exit code) | metric_integrity_violation | after a check |
//! | 5b | evidence (fail closed, if green) | objective_unverified | after a check |
//! | 6a | objective ([`objective::verify`]) | objective_unverified | the main check is green |
//! | 6b | judgment ([`crate::judgment::after_green`]) | reviewer_rejected, reward_hacking_detected, escalation_pending | green and confirmed |
//! | 6 | success | success_condition_met | the main check and its confirmations are green |
//! | 7 | no convergence | same_test_regressed … no_progress_detected | after a check |
//! | 8 | comprehension | comprehension_debt_exceeded | after a check, and before an exec |
//! | 9 | the cap | max_iterations_reached | at iteration N; first of all for a run resumed at N (no iteration past the cap starts) |
//!
//! Guards dominate success (rows 0 and 4–5 before row 6): a check that went green
//! because a test was deleted halts `metric_integrity_violation`, never
//! `success_condition_met`. The exec's tree is judged before what ended the exec (row 0
//! before rows 0a–1): a timed-out exec's deleted test is `metric_integrity_violation`,
//! which the next run refuses to inherit.
//! An iteration still waiting for its confirmation runs (green main check, fewer than
//! `confirm_runs` confirmations) is `Continue` at row 6: the loop runs them and asks
//! again.

use crate::config::RunConfig;
use crate::detect::{execution, integrity, liveness, objective, oracle, progress, spend};
use crate::halt::{Halt, HaltReason, Verdict};
use crate::trajectory::{is_green, Trajectory};

/// What the loop must do next when `decide` says continue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Run the work step of the current iteration.
    Exec,
    /// Run the check (the exec of this iteration is done).
    Check,
    /// Run another confirmation of a green check on the same tree.
    Confirm,
    /// Run the green check once more in the working tree itself (the checkout
    /// confirmation, SPEC §3.9), after its clean-room runs agreed.
    ConfirmInCheckout,
    /// Run the judge on this green iteration (`--judge`).
    Judge,
    /// Read the task list for this iteration (`--tasks`).
    ObserveTasks,
    /// Measure the context this iteration's agent must be given.
    BuildContext,
    /// The iteration is complete; start the next one.
    NextIteration {
        /// The ratchet rejected this iteration: restore this accepted iteration's tree.
        revert_to: Option<u32>,
    },
}

/// The verdict plus, when continuing, what comes next.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub verdict: Verdict,
    pub next: Option<Next>,
}

fn halt(h: Halt) -> Decision {
    Decision {
        verdict: Verdict::Halt(h),
        next: None,
    }
}
fn go(next: Next) -> Decision {
    Decision {
        verdict: Verdict::Continue,
        next: Some(next),
    }
}

/// Confirmation runs a green needs before it converges: `confirm_runs`, and at least
/// one when the check runs in the clean room — the confirmation runs cold (the room's
/// caches emptied first), so that nothing an earlier check planted there can make a
/// green (`--confirm-runs 0` keeps its meaning for a check in place only).
#[must_use]
pub fn confirmations(cfg: &RunConfig) -> u32 {
    if cfg.clean_room.in_place {
        cfg.confirm_runs
    } else {
        cfg.confirm_runs.max(1)
    }
}

/// The pure join. See the module table. A halt after a check whose clean room left
/// out test files the agent added also names them ([`crate::detect::scope::left_out_note`]).
#[must_use]
pub fn decide(t: &Trajectory, cfg: &RunConfig) -> Decision {
    let mut d = decide_inner(t, cfg);
    if let Verdict::Halt(h) = &mut d.verdict {
        let note = t
            .last()
            .and_then(|l| l.main_check())
            .and_then(crate::detect::scope::left_out_note);
        h.contributors.extend(note);
    }
    d
}

/// The integrity halts over the tree the last exec left (blocked paths, the frozen
/// oracle, links out of the tree, the check's toolchain), when that exec was measured.
fn exec_integrity(t: &Trajectory, cfg: &RunConfig) -> Option<Halt> {
    let last = t.last()?;
    if last.iteration == 0 {
        return None;
    }
    let now = last.exec.as_ref()?.guards.as_ref()?;
    let t0 = t.started.as_ref().and_then(|s| s.baseline.as_ref());
    integrity::blocked_paths(cfg, t0, now)
        .or_else(|| integrity::frozen_oracle(cfg, now))
        .or_else(|| crate::detect::scope::escaping_links(now))
        .or_else(|| integrity::toolchain(t0, now))
}

/// The halt of a resumed run at the resume itself, before its segment starts an
/// iteration: the iteration cap reached, or a spend or wall-clock cap already crossed
/// (SPEC §1.3). The loop starts no iteration when there is one, so a refused resume
/// uses none of the run's iterations.
#[must_use]
pub fn halts_at_resume(t: &Trajectory, cfg: &RunConfig) -> Option<Halt> {
    cap_reached_at_resume(t, cfg).or_else(|| spend::exhausted_at_resume(t, cfg))
}

/// `max_iterations_reached` at once for a run resumed with no iteration left: the
/// loop starts no iteration past the cap (SPEC §1.3; before, `run --resume` of a
/// capped run ran "iteration 3/2"), so a `resumed` event with no iteration after it
/// and the last iteration at the cap is this halt, whatever the receipt's earlier
/// halt was (nothing of this segment ran to judge). The halt names how a person gives
/// the run more iterations.
fn cap_reached_at_resume(t: &Trajectory, cfg: &RunConfig) -> Option<Halt> {
    let last = t.last()?;
    if !t.at_resume() || last.iteration < cfg.max_iterations {
        return None;
    }
    let run_id = t.started.as_ref().map_or("RUN_ID", |s| s.run_id.as_str());
    Some(Halt {
        reason: HaltReason::MaxIterationsReached,
        contributors: vec![format!(
            "the run had used its iteration cap ({cap}) when it was resumed; to give it more, resume with a higher cap: loopexec run --resume {run_id} --max-iterations N (N above {cap})",
            cap = cfg.max_iterations
        )],
        detail: serde_json::json!({"max_iterations": cfg.max_iterations, "resumed_past_cap": true}),
    })
}

/// `workspace_invalid` for an exec that left a file name no snapshot can hold (a
/// newline, or not UTF-8: [`crate::observe::store::BAD_NAME`]): its tree was not
/// snapshotted, so a check would judge the tree before it (a new user's fix was
/// never checked, and the run ended "the agent did not change the tree"). Not
/// decided once the iteration has a check (an older receipt).
fn unsnapshottable(t: &Trajectory) -> Option<Halt> {
    let last = t.last()?;
    let exec = last.exec.as_ref()?;
    let error = exec.guards.as_ref()?.error.as_deref()?;
    if exec.tree.is_some()
        || last.main_check().is_some()
        || !error.contains(crate::observe::store::BAD_NAME)
    {
        return None;
    }
    Some(Halt {
        reason: HaltReason::WorkspaceInvalid,
        contributors: vec![format!(
            "iteration {}'s exec left a tree that cannot be snapshotted, so no check of it can be judged: {error}",
            last.iteration
        )],
        detail: serde_json::json!({"iteration": last.iteration, "error": error}),
    })
}

/// `workspace_invalid` for a run with no exec whose check was not green: nothing runs
/// between its checks, so the tree cannot change and another iteration would only
/// re-check it (a new user's run without `--exec`, `init` leaves it commented out,
/// looped to `same_failure_repeated`, "the agent did not change the tree"). A run
/// without an exec whose baseline is green converges as any other, and one whose
/// green check was no success of its own (a baseline inheriting an unjudged tree) is
/// checked again.
fn no_exec(iteration: u32) -> Halt {
    Halt {
        reason: HaltReason::WorkspaceInvalid,
        contributors: vec![
            "no exec command: the check is not green and nothing runs between checks to change the tree; give --exec CMD (or `exec = \"...\"` in loop.toml)".into(),
        ],
        detail: serde_json::json!({"cause": "no_exec", "iteration": iteration}),
    }
}

fn decide_inner(t: &Trajectory, cfg: &RunConfig) -> Decision {
    let Some(last) = t.last() else {
        return go(Next::Check);
    };
    if let Some(h) = halts_at_resume(t, cfg) {
        return halt(h);
    }
    // What the exec left in the tree is judged first, whatever ended the step: an exec
    // that edits a test and then times out, stalls or is stopped by a hold leaves the
    // edit for the next run's t0, and only an integrity halt makes that run refuse it
    // (`inherits_rejected`).
    if let Some(h) = exec_integrity(t, cfg) {
        return halt(h);
    }
    if let Some(h) = crate::detect::holds::detect(t).or_else(|| crate::detect::rate::detect(t)) {
        return halt(h);
    }
    if let Some(h) = integrity::inherited(
        t.started
            .as_ref()
            .and_then(|s| s.inherits_rejected.as_ref()),
        cfg,
    ) {
        return halt(h);
    }
    if let Some(h) = execution::detect(t).or_else(|| unsnapshottable(t)) {
        return halt(h);
    }
    if let Some(d) = crate::judgment::before_step(t, cfg) {
        return d;
    }
    if last.iteration > 0 && last.exec.is_none() && cfg.exec.is_none() {
        // (a green check that was no success of its own, a baseline that inherits an
        // unjudged tree, is checked again)
        let before_green = t
            .iterations
            .iter()
            .rev()
            .nth(1)
            .and_then(|i| i.main_check())
            .is_some_and(|c| crate::trajectory::is_green(c, cfg.success_exit_code));
        if !before_green {
            return halt(no_exec(last.iteration));
        }
    }
    if last.iteration > 0 && last.exec.is_none() {
        // Before more work: a comprehension debt still unpaid (a resumed run nobody
        // acknowledged) stops the run before the agent runs again.
        let views = t.attempt_views(cfg.success_exit_code);
        if let Some(h) = liveness::comprehension(t, cfg, &progress::accepted(&views)) {
            return halt(h);
        }
        return go(Next::Exec);
    }
    let now = last.exec.as_ref().and_then(|e| e.guards.clone());
    if last.iteration > 0 && last.exec.is_some() {
        if let Some(h) = spend::detect(t, cfg) {
            return halt(h);
        }
        if let Some(h) = crate::gate::detect_unanswered(t)
            .or_else(|| crate::gate::detect_turns(t, cfg))
            .or_else(|| crate::gate::detect_repeats(t))
        {
            return halt(h);
        }
    }
    let Some(main) = last.main_check() else {
        return go(Next::Check);
    };
    // a baseline read with a format its output is not in judges nothing that follows
    if last.iteration == 0 {
        if let Some(d) = main
            .parsed
            .diagnostics
            .iter()
            .find(|d| d.starts_with(crate::check::parse::FORMAT_MISMATCH))
        {
            return halt(Halt {
                reason: HaltReason::WorkspaceInvalid,
                contributors: vec![format!("the baseline check's output: {d}")],
                detail: serde_json::json!({"cause": "format_mismatch"}),
            });
        }
    }
    for c in &last.checks {
        if let Some(h) = integrity::check_tampering(c)
            .or_else(|| integrity::tree_moved_under_check(c, cfg.success_exit_code))
        {
            return halt(h);
        }
        if let Some(h) = oracle::hermeticity(cfg, c) {
            return halt(h);
        }
        if let Some(h) = crate::detect::scope::room_writes(cfg, c) {
            return halt(h);
        }
    }
    if let Some(h) = oracle::flaky_bound(t, cfg) {
        return halt(h);
    }
    let code = cfg.success_exit_code;
    // A run whose t0 is a tree an earlier run left unjudged is judged from that
    // run's t0: its untouched tree is no green of its own (SPEC §3.13)
    let inherited = last.iteration == 0
        && t.started
            .as_ref()
            .is_some_and(|s| s.inherits_unjudged.is_some());
    let green = is_green(main, code) && oracle::confirmations_agree(t, code) && !inherited;
    let views = t.attempt_views(code);
    let accepted = progress::accepted(&views);
    let this_accepted = accepted.last().copied().unwrap_or(true);
    // Metric integrity judges an iteration that would otherwise count: green, accepted
    // by the ratchet, or whose exit code alone says green (a test that cut the runner
    // short with exit 0 leaves failing tests unreported, never "red").
    let exit_green = main.step.exited_with(code);
    if green || this_accepted || exit_green {
        let t0 = t.started.as_ref().and_then(|s| s.baseline.clone());
        if let Some(base) = t.baseline_check() {
            if let Some(h) =
                integrity::metric_integrity(base, main, code, t0.as_ref(), now.as_ref())
            {
                return halt(h);
            }
        }
    }
    if green {
        if let Some(h) = now
            .as_ref()
            .and_then(|m| integrity::runner_tampering(m, &cfg.guards.allowed_code))
        {
            return halt(h);
        }
        // Fail closed: a green run is believed only on positive evidence.
        if let Some(h) = last
            .checks
            .iter()
            .find_map(crate::detect::scope::watch_unavailable)
        {
            return halt(h);
        }
        let t0 = t.started.as_ref().and_then(|s| s.baseline.clone());
        let judged = if last.iteration == 0 {
            t0.as_ref()
        } else {
            now.as_ref()
        };
        let unavailable = t
            .started
            .as_ref()
            .map_or(&[][..], |s| s.guards_unavailable.as_slice());
        let t0_shown = t
            .baseline_check()
            .map(|b| integrity::Shown::of(&b.parsed))
            .unwrap_or_default();
        if let Some(mut h) = integrity::evidence(
            unavailable,
            judged,
            t0_shown,
            integrity::Shown::of(&main.parsed),
        ) {
            let unnamed = h
                .contributors
                .iter()
                .any(|c| c.contains("shows no tests") || c.contains("names none of its tests"));
            if let Some(hint) = cfg
                .check
                .as_deref()
                .and_then(integrity::naming_hint)
                .filter(|_| unnamed)
            {
                h.contributors.push(hint);
            }
            return halt(h);
        }
        if let Some(h) = objective::verify(t, cfg, &main.parsed) {
            // green before any work, but not on the objective: the objective is the
            // work (a new user's run halted 13 before its agent ran)
            if last.iteration == 0 {
                return go(Next::NextIteration { revert_to: None });
            }
            return halt(h);
        }
        let in_room = last
            .checks
            .iter()
            .filter(|c| c.in_checkout.is_none())
            .count();
        if (in_room as u32) < 1 + confirmations(cfg) {
            return go(Next::Confirm);
        }
        if cfg.checkout_confirmation && !cfg.clean_room.in_place {
            if let Some(h) = oracle::restored_at_green(main) {
                return halt(h);
            }
            let i = t.iterations.len() - 1;
            let Some((j, co)) = last
                .checks
                .iter()
                .enumerate()
                .find(|(_, c)| c.in_checkout.is_some())
            else {
                return go(Next::ConfirmInCheckout);
            };
            let runs = oracle::PlaceRuns {
                room: (main, t.sets(i, 0)),
                checkout: (co, t.sets(i, j)),
                code,
            };
            if let Some(h) = oracle::checkout_disagrees(&runs) {
                return halt(h);
            }
        }
        if let Some(d) = crate::judgment::after_green(t, cfg) {
            return d;
        }
        let mut contributors = vec![if last.iteration == 0 {
            "the check is already green on the untouched tree (iteration 0): nothing to do"
                .to_string()
        } else {
            format!("the check is green at iteration {}", last.iteration)
        }];
        if confirmations(cfg) > 0 {
            contributors.push(format!(
                "{} confirmation run(s) on the same tree agreed",
                confirmations(cfg)
            ));
        }
        if cfg.checkout_confirmation && !cfg.clean_room.in_place {
            contributors.push(
                "the check is green in the working tree too (the checkout confirmation)".into(),
            );
        }
        // a waived rule is part of what the green rests on: said, not hidden
        let waived: Vec<String> = now
            .as_ref()
            .map(|m| {
                m.runner_tampering
                    .iter()
                    .filter(|h| cfg.guards.allowed_code.iter().any(|a| a.allows(h)))
                    .map(|h| format!("{}:{} ({})", h.path, h.line, h.rule))
                    .collect()
            })
            .unwrap_or_default();
        if !waived.is_empty() {
            contributors.push(format!(
                "runner-tampering hit(s) allowed by loop.toml's [[guards.allowed_code]]: {}",
                waived.join(", ")
            ));
        }
        return halt(Halt {
            reason: HaltReason::SuccessConditionMet,
            contributors,
            // as the verdict line counts them: named tests, or the runner's own count
            // when a quiet mode names fewer
            detail: serde_json::json!({"iteration": last.iteration, "collected": u64::try_from(main.parsed.collected().len()).unwrap_or(u64::MAX).max(main.parsed.counts().total())}),
        });
    }
    if last.iteration > 0 {
        if let Some(h) = progress::detect_progress(&views, &cfg.halt) {
            return halt(h);
        }
        if let Some(h) = liveness::comprehension(t, cfg, &accepted) {
            return halt(h);
        }
    }
    if last.iteration >= cfg.max_iterations {
        let sizes: Vec<usize> = views.iter().map(|v| v.failing.len()).collect();
        // the line names the first and the last sizes of a long run (all are in detail)
        let shown = if sizes.len() > 16 {
            let (head, tail) = (&sizes[..3], &sizes[sizes.len() - 10..]);
            let list = |v: &[usize]| {
                v.iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            format!(
                "[{}, … {} more …, {}]",
                list(head),
                sizes.len() - 13,
                list(tail)
            )
        } else {
            format!("{sizes:?}")
        };
        return halt(Halt {
            reason: HaltReason::MaxIterationsReached,
            contributors: vec![format!(
                "reached the iteration cap ({}) with the check still red; failing-set sizes by iteration: {shown}",
                cfg.max_iterations
            )],
            detail: serde_json::json!({"max_iterations": cfg.max_iterations, "failing_sizes": sizes}),
        });
    }
    let revert_to = if this_accepted || last.iteration == 0 {
        None
    } else {
        progress::last_accepted(&views)
    };
    go(Next::NextIteration { revert_to })
}
