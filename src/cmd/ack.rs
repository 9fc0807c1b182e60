//! `loopexec ack`: a person records that they reviewed a run's work. The
//! acknowledgement lives in the ledger (it outlasts the run); `run --resume` carries it
//! into the receipt, where the comprehension detector reads it.

use crate::cli::{AckArgs, Outcome};
use crate::receipt::Event;
use crate::store::Store;
use serde_json::{json, Map};
use std::path::Path;

pub(crate) fn run(workdir: &Path, a: &AckArgs) -> Outcome {
    if a.reviewer.trim().is_empty() {
        return Outcome::error(2, "--reviewer must name a person".into(), None);
    }
    let run = match super::load_run(workdir, a.run_id.as_deref()) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let iteration = run
        .lines
        .iter()
        .filter_map(|l| match &l.event {
            Event::IterationStarted(i) => Some(i.iteration),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let store = match Store::open(&run.ws.ledger_path()) {
        Ok(s) => s,
        Err(e) => {
            return Outcome::error(
                crate::halt::HaltReason::InvariantFailed.exit_code(),
                e.to_string(),
                None,
            )
        }
    };
    if let Err(e) = store.ack(
        &run.run_id,
        a.reviewer.trim(),
        iteration,
        a.notes.as_deref(),
    ) {
        return Outcome::error(
            crate::halt::HaltReason::InternalError.exit_code(),
            e.to_string(),
            None,
        );
    }
    let mut f = Map::new();
    f.insert("run_id".into(), json!(run.run_id));
    f.insert(
        "run".into(),
        json!(crate::receipt::facts::run_facts(
            &run.run_id,
            &run.receipt,
            &run.lines
        )),
    );
    f.insert("reviewer".into(), json!(a.reviewer.trim()));
    f.insert("iteration".into(), json!(iteration));
    Outcome::ok(
        f,
        format!(
            "acknowledged run {} through iteration {iteration} by {}\ncontinue it with: loopexec run --resume {}\n",
            run.run_id,
            a.reviewer.trim(),
            run.run_id
        ),
    )
}
