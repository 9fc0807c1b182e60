//! `loopexec replay RUN`: does the receipt tell the truth?
//!
//! Live (default): for each iteration (or `--iteration N`), the check re-runs `--runs
//! K` times in a clean room holding the snapshot it judged; each run's verdict
//! fingerprint ([`crate::receipt::fingerprint`]) is compared with the receipt's. With
//! K > 1 the agreement rate and its Wilson interval tell a flaky check (some runs
//! agree) from a receipt that does not match what the check does (none agree).
//!
//! Offline (`--offline`): nothing runs; every recorded fingerprint is recomputed from
//! its recorded parse, the hash chain is verified, and the halt is re-derived by
//! `decide` over the receipt's observations (what `explain-halt` does). With
//! `--reparse` the kept check output is parsed again with this loopexec's parser, and
//! an iteration whose fingerprint would change is shown; a kept file that is no longer
//! the bytes the run kept (`check_finished.kept`: length and blake3) makes its
//! iteration disagree.
//!
//! Outcome: `ok` (exit 0) when everything agrees; `mismatch` (exit 20, the invariant
//! class: the record is wrong) naming the first iteration that disagrees; `flaky`
//! (exit 14, the oracle-untrusted class) when some runs agree and some do not.

use crate::cli::{Outcome, ReplayArgs};
use crate::cmd::bodies::{ReplayBody, ReplayIteration, ReplayRun};
use crate::halt::HaltReason;
use crate::receipt::events::CheckFinished;
use crate::receipt::{fingerprint, replay as rp, Event};
use std::collections::BTreeMap;
use std::path::Path;

/// The recorded main check of each iteration and the snapshot it judged.
struct Recorded {
    check: CheckFinished,
    snapshot: Option<String>,
    /// A signal to loopexec stopped the check (Ctrl-C, `kill`): it measured nothing
    /// (SPEC §1), so there is no verdict to replay.
    interrupted: bool,
}

fn recorded_iterations(lines: &[crate::receipt::Line]) -> BTreeMap<u32, Recorded> {
    let mut out = BTreeMap::new();
    let mut snaps: BTreeMap<u32, String> = BTreeMap::new();
    for l in lines {
        match &l.event {
            Event::RunStarted(s) => {
                if let Some(b) = &s.git.baseline_snapshot {
                    snaps.insert(0, b.clone());
                }
            }
            Event::ExecFinished(e) => {
                if let Some(s) = e.snapshot.as_ref().or(e.tree.as_ref()) {
                    snaps.insert(e.iteration, s.clone());
                }
            }
            Event::CheckFinished(c) if c.attempt == 0 => {
                // The tree the check was judged on (the clean room's), else the
                // iteration's snapshot, else the tree before the check.
                let snapshot = c
                    .clean_room
                    .as_ref()
                    .map(|r| r.tree.clone())
                    .or_else(|| snaps.get(&c.iteration).cloned())
                    .or_else(|| c.tree_before.clone());
                let interrupted =
                    matches!(c.step.stopped, Some(crate::proc::StopCause::Signal { .. }));
                // a resumed run checks the iteration again: that record is the one
                if interrupted && out.contains_key(&c.iteration) {
                    continue;
                }
                out.insert(
                    c.iteration,
                    Recorded {
                        check: (**c).clone(),
                        snapshot,
                        interrupted,
                    },
                );
            }
            _ => {}
        }
    }
    out
}

#[allow(clippy::too_many_lines)] // one linear story: load, compare, render
pub(crate) fn run(workdir: &Path, a: &ReplayArgs, quiet: bool) -> Outcome {
    let run = match super::load_run(workdir, a.run.as_deref()) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let Some(cfg) = run.lines.iter().find_map(|l| match &l.event {
        Event::RunStarted(s) => Some(s.config.clone()),
        _ => None,
    }) else {
        return Outcome::error(
            super::EXIT_ERROR,
            format!("run {} has no run_started event to replay", run.run_id),
            Some("`loopexec check` validates the receipt".into()),
        );
    };
    let code = cfg.success_exit_code;
    let dependencies = run
        .lines
        .iter()
        .find_map(|l| match &l.event {
            Event::RunStarted(s) => Some(rp::dependencies_of(s.baseline.as_ref())),
            _ => None,
        })
        .unwrap_or_default();
    let chain = crate::receipt::verify_chain(&run.lines);
    let mut errors = Vec::new();
    if let Some((line, what)) = &chain {
        errors.push(format!(
            "the receipt's hash chain is broken at line {line}: {what}"
        ));
    }
    // A whole receipt that this workspace's ledger did not record (copied in from
    // another project) re-derives its own verdict, not this workspace's.
    errors.extend(
        run.provenance_problems()
            .into_iter()
            .map(|p| format!("not this workspace's run: {p}")),
    );
    // Offline: the halt re-derived from the observations.
    let halted_pos = run
        .lines
        .iter()
        .rposition(|l| matches!(l.event, Event::Halted(_)));
    let (recorded_reason, derived_reason, rederived) = match halted_pos {
        Some(pos) => {
            let Event::Halted(h) = &run.lines[pos].event else {
                unreachable!("found above")
            };
            let traj = crate::trajectory::Trajectory::from_lines(&run.lines[..pos]);
            let ex = crate::explain::explain(&traj, h);
            let exempt = h.halt_reason == HaltReason::InternalError;
            (
                Some(h.halt_reason.as_str().to_string()),
                ex.derived_reason.map(|r| r.as_str().to_string()),
                ex.rederived || exempt,
            )
        }
        None => (None, None, true),
    };
    if !rederived {
        errors.push(format!(
            "the receipt records {} but its observations derive {}",
            recorded_reason.as_deref().unwrap_or("-"),
            derived_reason.as_deref().unwrap_or("no halt")
        ));
    }
    let recorded = recorded_iterations(&run.lines);
    // whether t0's check wrote the witnesses (the rerun expects them the same way)
    let t0_wrote = rp::T0Witnesses {
        pytest: recorded.get(&0).and_then(|r| r.check.pytest_witness),
        unittest: recorded.get(&0).and_then(|r| r.check.unittest_witness),
    };
    if let Some(n) = a.iteration {
        if !recorded.contains_key(&n) {
            return Outcome::error(
                super::EXIT_ERROR,
                format!("run {} recorded no check for iteration {n}", run.run_id),
                Some(format!(
                    "iterations with a check: {}",
                    recorded
                        .keys()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            );
        }
    }
    let run_dir = run.ws.run_dir(&run.run_id);
    let mut iterations = Vec::new();
    for (it, rec) in &recorded {
        if a.iteration.is_some_and(|n| n != *it) {
            continue;
        }
        let recorded_fp = fingerprint::recorded(&rec.check, code);
        let parse_fp = fingerprint::of_check(&rec.check, code);
        let mut item = ReplayIteration {
            iteration: *it,
            snapshot: if a.offline {
                None
            } else {
                rec.snapshot.clone()
            },
            recorded_fingerprint: recorded_fp.clone(),
            parse_fingerprint: parse_fp.clone(),
            recorded_failing: rec.check.parsed.failing().len(),
            recorded_green: crate::trajectory::is_green(&rec.check, code),
            runs: Vec::new(),
            agreed: 0,
            agreement_interval: (0.0, 1.0),
            verdict: String::new(),
            note: None,
            reparse_fingerprint: None,
        };
        let consistent = recorded_fp == parse_fp;
        if rec.interrupted {
            item.verdict = "interrupted".into();
            item.note = Some(
                "a signal to loopexec stopped this check: it measured nothing, and no verdict read it"
                    .into(),
            );
            iterations.push(item);
            continue;
        }
        if a.offline {
            item.verdict = if consistent { "agrees" } else { "disagrees" }.into();
            if !consistent {
                item.note = Some(
                    "the recorded fingerprint does not match the recorded parse: the receipt was edited".into(),
                );
            }
            if a.reparse {
                match rp::reparse(
                    &run_dir,
                    &cfg,
                    *it,
                    0,
                    &rec.check.step,
                    rec.check.kept.as_ref(),
                ) {
                    Ok(p) => {
                        let fp = fingerprint::of_parsed(&p, rec.check.step.exited_with(code));
                        if fp != parse_fp {
                            let (now, was) = (p.failing().len(), item.recorded_failing);
                            item.note = Some(if now == was {
                                format!(
                                    "this loopexec's parse of the kept output has another fingerprint than the recorded parse, with the same {now} failing: the recorded parse also holds what was learnt beside the output (report files, the runner's witness)"
                                )
                            } else {
                                format!(
                                    "this loopexec's parser reads the kept output differently: {now} failing where the receipt has {was}"
                                )
                            });
                        }
                        item.reparse_fingerprint = Some(fp);
                    }
                    Err(e) => {
                        if matches!(e, rp::ReplayError::KeptAltered { .. }) {
                            item.verdict = "disagrees".into();
                        }
                        item.note = Some(e.to_string());
                    }
                }
            }
            iterations.push(item);
            continue;
        }
        let Some(snap) = rec.snapshot.clone() else {
            item.verdict = "not_replayable".into();
            item.note =
                Some("no snapshot was recorded (the workdir was not a git repository)".into());
            iterations.push(item);
            continue;
        };
        for k in 1..=a.runs {
            if !quiet {
                eprintln!(
                    "loopexec: replay iteration {it} · run {k}/{} on snapshot {}",
                    a.runs,
                    &snap[..snap.len().min(12)]
                );
            }
            match rp::rerun(&run.ws.workdir, &cfg, &snap, &dependencies, t0_wrote) {
                Ok((step, parsed)) => {
                    let fp = fingerprint::of_parsed(&parsed, step.exited_with(code));
                    let agrees = fp == recorded_fp && consistent;
                    if !quiet {
                        eprintln!(
                            "loopexec: replay iteration {it} · run {k}/{}: {} failing (receipt: {}) · {}",
                            a.runs,
                            parsed.failing().len(),
                            item.recorded_failing,
                            if agrees { "agrees" } else { "DISAGREES" }
                        );
                    }
                    item.runs.push(ReplayRun {
                        fingerprint: fp,
                        agrees,
                        failing: parsed.failing().len(),
                        collected: parsed.collected().len(),
                        exit_code: step.exit_code,
                        duration_ms: step.duration_ms,
                    });
                }
                Err(e) => {
                    item.note = Some(e.to_string());
                    break;
                }
            }
        }
        let n = item.runs.len() as u64;
        let ok = item.runs.iter().filter(|r| r.agrees).count() as u64;
        item.agreed = u32::try_from(ok).unwrap_or(u32::MAX);
        item.agreement_interval = crate::stats::wilson_interval(ok, n, 0.95);
        item.verdict = match (ok, n) {
            (_, 0) => "not_replayable",
            (o, n) if o == n => "agrees",
            (0, _) => "disagrees",
            _ => "flaky",
        }
        .into();
        if !consistent && item.note.is_none() {
            item.note = Some(
                "the recorded fingerprint does not match the recorded parse: the receipt was edited".into(),
            );
        }
        iterations.push(item);
    }
    let first_disagreement = iterations
        .iter()
        .find(|i| i.verdict == "disagrees")
        .map(|i| i.iteration);
    let flaky = iterations.iter().any(|i| i.verdict == "flaky");
    let replayed = iterations
        .iter()
        .filter(|i| i.verdict != "not_replayable" && i.verdict != "interrupted")
        .count();
    if let Some(i) = first_disagreement {
        let it = iterations.iter().find(|x| x.iteration == i);
        errors.push(format!(
            "iteration {i}: the receipt records {} failing ({}) but {}",
            it.map_or(0, |x| x.recorded_failing),
            if it.is_some_and(|x| x.recorded_green) {
                "green"
            } else {
                "red"
            },
            match it.and_then(|x| x.runs.first()) {
                Some(r) => format!("the check on its snapshot finds {} failing", r.failing),
                None => "its recorded fingerprint does not match its recorded parse".into(),
            }
        ));
    }
    let agrees = errors.is_empty() && !flaky && (a.offline || replayed > 0);
    let mode = if a.offline { "offline" } else { "live" };
    let mut human = format!("replay of run {} ({mode})\n", run.run_id);
    for i in &iterations {
        human.push_str(&format!(
            "  iteration {:>3}: {:<14} receipt {} failing{}",
            i.iteration,
            i.verdict,
            i.recorded_failing,
            if i.runs.is_empty() {
                String::new()
            } else {
                format!(
                    ", {}/{} runs agree (95% interval {:.2}–{:.2})",
                    i.agreed,
                    i.runs.len(),
                    i.agreement_interval.0,
                    i.agreement_interval.1
                )
            }
        ));
        if let Some(n) = &i.note {
            human.push_str(&format!(" — {n}"));
        }
        human.push('\n');
    }
    human.push_str(&format!(
        "halt: recorded {}, re-derived {}\nhash chain: {}\n",
        recorded_reason.as_deref().unwrap_or("-"),
        derived_reason.as_deref().unwrap_or("-"),
        if chain.is_none() { "intact" } else { "BROKEN" }
    ));
    for e in &errors {
        human.push_str(&format!("  - {e}\n"));
    }
    human.push_str(if agrees {
        "the replay agrees with the receipt\n"
    } else if first_disagreement.is_some() || !errors.is_empty() {
        "the replay DISAGREES with the receipt\n"
    } else if flaky {
        "the check is flaky: some runs agree with the receipt, some do not\n"
    } else {
        "nothing could be replayed (try --offline)\n"
    });
    let body = ReplayBody {
        run_id: run.run_id.clone(),
        receipt: run.receipt.display().to_string(),
        mode: mode.into(),
        agrees,
        chain_intact: chain.is_none(),
        first_disagreement,
        iterations,
        derived_reason,
        recorded_reason,
        run: run.facts(),
        human,
    };
    let (status, exit) = if !errors.is_empty() {
        ("mismatch", HaltReason::InvariantFailed.exit_code())
    } else if flaky {
        ("flaky", HaltReason::CheckFlaky.exit_code())
    } else if agrees {
        ("ok", 0)
    } else {
        errors.push("no iteration could be replayed (no snapshots were recorded)".into());
        ("not_replayable", super::EXIT_ERROR)
    };
    let mut o = Outcome::from_body(status, exit, &body);
    o.errors = errors;
    if status == "not_replayable" {
        o.hint =
            Some("`loopexec replay --offline` re-derives the verdicts from the receipt".into());
    }
    o
}
