//! `loopexec explain-halt`: why the run stopped and what to do, re-derived by running
//! `decide` over the receipt's observations. A recorded reason that cannot be
//! re-derived is reported loudly (status `mismatch`, exit 20): it is a bug.

use crate::cli::Outcome;
use crate::receipt::Event;
use crate::trajectory::Trajectory;
use serde_json::{json, Map};
use std::path::Path;

pub(crate) fn run(workdir: &Path, run_id: Option<&str>) -> Outcome {
    let run = match super::load_run(workdir, run_id) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let Some(pos) = run
        .lines
        .iter()
        .rposition(|l| matches!(l.event, Event::Halted(_)))
    else {
        return Outcome::error(
            super::EXIT_ERROR,
            format!("run {} has not halted (yet)", run.run_id),
            Some("see its progress with `loopexec status`".into()),
        );
    };
    let Event::Halted(recorded) = &run.lines[pos].event else {
        unreachable!("checked above")
    };
    let traj = Trajectory::from_lines(&run.lines[..pos]);
    let ex = crate::explain::explain(&traj, recorded);
    let exempt = matches!(recorded.halt_reason, crate::halt::HaltReason::InternalError);
    let mut f = Map::new();
    f.insert("run_id".into(), json!(run.run_id));
    f.insert("iteration".into(), json!(recorded.iteration));
    f.insert("halt_reason".into(), json!(recorded.halt_reason.as_str()));
    f.insert("halt_exit_code".into(), json!(recorded.exit_code));
    f.insert("receipt".into(), json!(run.receipt.display().to_string()));
    f.insert(
        "explanation".into(),
        serde_json::to_value(&ex).unwrap_or_default(),
    );
    f.insert("advice".into(), json!(ex.advice));
    f.insert("declined_actions".into(), crate::gate::declined_json(&traj));
    f.insert("actions".into(), crate::gate::summary_json(&traj));
    f.insert("what_to_do".into(), json!(ex.what_to_do));
    f.insert("rederived".into(), json!(ex.rederived || exempt));
    f.insert(
        "derived_reason".into(),
        json!(ex.derived_reason.map(|r| r.as_str())),
    );
    f.insert(
        "trajectory".into(),
        serde_json::to_value(&ex.trajectory).unwrap_or_default(),
    );
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
    human.push_str(&format!("\nwhat to do: {}\n", ex.what_to_do));
    human.push_str(&crate::explain::render_summary(&ex.trajectory));
    human.push_str(&crate::gate::declined_text(&traj));
    if ex.rederived || exempt {
        human.push_str(&format!(
            "\nverdict re-derived from the receipt: {} (matches)\n",
            recorded.halt_reason
        ));
        Outcome::ok(f, human)
    } else {
        let msg = format!(
            "RECEIPT MISMATCH: the receipt records {} but its observations derive {}",
            recorded.halt_reason,
            ex.derived_reason
                .map_or("no halt".to_string(), |r| r.to_string())
        );
        human.push_str(&format!("\n{msg}\n"));
        let mut o = Outcome::ok(f, human);
        o.status = "mismatch".into();
        o.exit_code = crate::halt::HaltReason::InvariantFailed.exit_code();
        o.errors.push(msg);
        o
    }
}
