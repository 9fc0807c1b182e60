//! `loopexec explain-halt`: why the run stopped and what to do, re-derived by running
//! `decide` over the receipt's observations. A recorded reason that cannot be
//! re-derived is reported loudly (status `mismatch`, exit 20): it is a bug.

use crate::cli::Outcome;
use crate::cmd::bodies::ExplainBody;
use crate::receipt::Event;
use crate::trajectory::Trajectory;
use std::path::Path;

pub(crate) fn run(workdir: &Path, run_id: Option<&str>) -> Outcome {
    let run = match super::load_run(workdir, run_id) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let unrecorded = run.provenance_problems();
    let halted = run
        .lines
        .iter()
        .rposition(|l| matches!(l.event, Event::Halted(_)));
    // a resume after the last halt that recorded none of its own: the run is going on,
    // or its loopexec died; that halt is not where the run stands (a new user's review)
    let resumed = halted.filter(|p| {
        run.lines[p + 1..]
            .iter()
            .any(|l| matches!(l.event, Event::Resumed(_)))
    });
    let Some(pos) = halted.filter(|_| resumed.is_none()) else {
        let since = if resumed.is_some() {
            " since its resume"
        } else {
            " (yet)"
        };
        let o = Outcome::error(
            super::EXIT_ERROR,
            format!(
                "run {} has not halted{since}: it is still running, or its loopexec ended before recording a halt (killed, or the machine stopped)",
                run.run_id
            ),
            Some(format!(
                "see where it stands with `loopexec status --run {}`",
                run.run_id
            )),
        );
        // a receipt the workspace did not record is said to be so (exit 13), whether
        // it halted or not: a truncated one once read as a run still going (a review)
        let died_resume = resumed.is_some()
            && run.ws.ledger_path().is_file()
            && crate::store::Store::open(&run.ws.ledger_path())
                .is_ok_and(|st| super::open_resume(&st, &run.run_id, &run.receipt));
        let problems: Vec<String> = if died_resume { Vec::new() } else { unrecorded };
        return super::mark_unrecorded(o, &run.run_id, &problems, true);
    };
    let Event::Halted(recorded) = &run.lines[pos].event else {
        unreachable!("checked above")
    };
    let traj = Trajectory::from_lines(&run.lines[..pos]);
    let ex = crate::explain::explain(&traj, recorded);
    let exempt = matches!(recorded.halt_reason, crate::halt::HaltReason::InternalError);
    let mut human = format!(
        "run {} halted at iteration {}: {} (exit {}, class {}, owner {})\n\nwhy:\n",
        run.run_id,
        recorded.iteration,
        recorded.halt_reason,
        recorded.exit_code,
        ex.class,
        ex.owner.as_str()
    );
    for c in &ex.contributors {
        human.push_str(&format!("  - {c}\n"));
    }
    let tail = super::halt_notes::of_run(&run.ws.workdir, &run.lines[..=pos]);
    if let Some(t) = &tail {
        human.push_str(&t.render());
    }
    human.push_str(&format!("\nwhat to do: {}\n", ex.what_to_do));
    human.push_str(&crate::explain::render_summary(&ex.trajectory));
    let rejected = super::halt_notes::rejected_tree(
        &run.lines[..pos],
        &super::halt_notes::acceptance(&run.lines[..pos]),
    );
    if let Some(r) = &rejected {
        human.push_str(&r.render());
    }
    human.push_str(&crate::gate::declined_text(&traj));
    let ok = ex.rederived || exempt;
    if ok {
        human.push_str(&format!(
            "\nverdict re-derived from the receipt: {} (matches)\n",
            recorded.halt_reason
        ));
    }
    let mismatch = format!(
        "RECEIPT MISMATCH: the receipt records {} but its observations derive {}",
        recorded.halt_reason,
        ex.derived_reason
            .map_or("no halt".to_string(), |r| r.to_string())
    );
    if !ok {
        human.push_str(&format!("\n{mismatch}\n"));
    }
    let body = ExplainBody {
        run_id: run.run_id.clone(),
        iteration: recorded.iteration,
        halt_reason: recorded.halt_reason.as_str().to_string(),
        halt_exit_code: recorded.exit_code,
        receipt: run.receipt.display().to_string(),
        explanation: serde_json::to_value(&ex).unwrap_or_default(),
        advice: ex.advice.to_string(),
        what_to_do: ex.what_to_do.clone(),
        rederived: ok,
        derived_reason: ex.derived_reason.map(|r| r.as_str().to_string()),
        trajectory: serde_json::to_value(&ex.trajectory).unwrap_or_default(),
        declined_actions: crate::gate::declined_json(&traj),
        actions: crate::gate::summary_json(&traj),
        run: run.facts(),
        stderr_tail: tail,
        rejected_tree: rejected,
        recorded: unrecorded.is_empty(),
        unrecorded_because: unrecorded.clone(),
        human,
    };
    if ok {
        super::mark_unrecorded(
            Outcome::from_body("ok", 0, &body),
            &run.run_id,
            &unrecorded,
            true,
        )
    } else {
        let mut o = Outcome::from_body(
            "mismatch",
            crate::halt::HaltReason::InvariantFailed.exit_code(),
            &body,
        );
        o.errors.push(mismatch);
        o
    }
}
