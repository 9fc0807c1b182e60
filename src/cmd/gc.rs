//! `loopexec gc [--keep N] [--stores]`: removes old runs — the receipt, the run's
//! directory of captured and kept outputs, its attestation file and its snapshot refs —
//! keeping the newest N. A run whose process is still alive is never removed, nor the
//! newest run or the runs the control journal sealed and started last (even under
//! `--keep 0`): the next run's start is judged against them; nor a run a person must
//! still act on (a hold names it, it is latched, an agent action of it waits). With
//! `--stores`, also the snapshot stores of workdirs that no longer exist (each store
//! records its workdir, `observe::store::WORKDIR_RECORD`); a store is evidence a
//! receipt points at, so this happens only when asked, never on its own.

use crate::cli::{GcArgs, Outcome};
use crate::cmd::bodies::GcBody;
use crate::workspace::Workspace;
use std::path::Path;

/// True when a person must still act on run `id`: a hold in force names it, a stop
/// latched it, or one of its agent actions waits for an answer. Removing its receipt
/// would leave the hold, the latch or the action pointing at a run `explain-halt` and
/// `run --resume` can no longer find (a new user's `gc --keep 1` removed a held run).
/// A ledger that cannot be read keeps the run (fail closed).
fn awaits_a_person(store: &crate::store::Store, id: &str) -> bool {
    let named = format!("run:{id}");
    let held = store
        .active_holds(Some(id))
        .map_or(true, |h| h.iter().any(|h| h.scope == named));
    let latched = store.latch_of(id).map_or(true, |l| l.is_some());
    let waiting = store
        .pending(true)
        .map_or(true, |p| p.iter().any(|a| a.run_id == id));
    held || latched || waiting
}

pub(crate) fn run(workdir: &Path, a: &GcArgs) -> Outcome {
    let ws = match Workspace::at(workdir) {
        Ok(w) => w,
        Err(e) => return super::ws_error(&e),
    };
    let runs = super::runs::run_ids(&ws);
    let mut kept = Vec::new();
    let mut removed = Vec::new();
    let mut refs_deleted = 0;
    let mut errors = Vec::new();
    // The newest run is what the next run's start is judged against (a tree it
    // rejected stays rejected, a tree it left unjudged is judged from its t0:
    // `engine`'s `previous_run`), so it is kept whatever `--keep` says: removing it
    // would let a weakened test it halted on become the next run's t0 (a fresh
    // review's `gc --keep 0` then exit 10).
    // "Newest" is what the receipts in the workdir say of themselves, and an agent
    // can write receipts dated 2999 there: the run the control journal sealed last
    // (out of the agent's reach) is kept too (a seventeenth review had gc keep ten
    // fakes and remove the rejecting run's receipt).
    // So is the run the journal started last (a run whose loopexec died has no seal).
    let newest = runs.first().map(|(id, _)| id.clone());
    let ledger = Some(ws.ledger_path())
        .filter(|p| p.is_file())
        .and_then(|p| crate::store::Store::open(&p).ok());
    let journal = ledger.as_ref().map(|s| s.journal().clone());
    let state = journal.as_ref().and_then(|j| j.state().ok());
    let sealed = state.as_ref().and_then(|j| j.last_sealed.clone());
    let started = state.as_ref().and_then(|j| j.last_started.clone());
    let mut awaiting = Vec::new();
    for (i, (id, facts)) in runs.iter().enumerate() {
        let live = facts.halt_reason.is_none() && ws.heartbeat_path(id).is_file();
        let judged_against = [&newest, &sealed, &started]
            .iter()
            .any(|r| r.as_ref() == Some(id));
        let person = ledger.as_ref().is_some_and(|s| awaits_a_person(s, id));
        if person {
            awaiting.push(id.clone());
        }
        if i < a.keep || live || judged_against || person {
            kept.push(id.clone());
            continue;
        }
        // Snapshot refs live in loopexec's own store (and, for runs recorded before
        // it, in the user's repository).
        let store = crate::observe::tree::store_path(&ws.workdir);
        let mut places = Vec::new();
        if store.join(crate::observe::store::STORE_MARKER).is_file() {
            places.push(store);
        }
        if crate::observe::git::repo_root(&ws.workdir).is_some() {
            places.push(ws.workdir.clone());
        }
        for dir in places {
            match crate::observe::git::delete_refs(&dir, id) {
                Ok(n) => refs_deleted += n,
                Err(e) => errors.push(format!("run {id}: cannot delete snapshot refs: {e}")),
            }
        }
        let mut ok = true;
        for p in [
            ws.receipt_path(id),
            ws.runs_dir().join(format!("{id}.intoto.json")),
        ] {
            if let Err(e) = std::fs::remove_file(&p) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    errors.push(format!("cannot remove {}: {e}", p.display()));
                    ok = false;
                }
            }
        }
        if let Err(e) = std::fs::remove_dir_all(ws.run_dir(id)) {
            if e.kind() != std::io::ErrorKind::NotFound {
                errors.push(format!("cannot remove {}: {e}", ws.run_dir(id).display()));
                ok = false;
            }
        }
        // the copy of its first line the journal kept (the journal's entry stays)
        if let Some(Err(e)) = journal.as_ref().map(|j| j.drop_started(id)) {
            errors.push(format!("run {id}: {e}"));
            ok = false;
        }
        if ok {
            removed.push(id.clone());
        }
    }
    let mut human = format!(
        "kept {} run(s), removed {} run(s) and {refs_deleted} snapshot ref(s){}\n",
        kept.len(),
        removed.len(),
        if removed.is_empty() {
            String::new()
        } else {
            format!(": {}", removed.join(", "))
        }
    );
    if !awaiting.is_empty() {
        human.push_str(&format!(
            "kept because a person must still act on them (a hold names the run, it is latched, or an agent action waits): {}\n",
            awaiting.join(", ")
        ));
    }
    let mut stores_removed = Vec::new();
    let mut stores_unknown = 0;
    if a.stores {
        let stores = crate::engine::cleanroom::state_dir().join("stores");
        let (gone, unknown) = crate::observe::store::abandoned_stores(&stores);
        stores_unknown = unknown;
        for (dir, wd) in gone {
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => stores_removed.push(wd.display().to_string()),
                Err(e) => errors.push(format!(
                    "cannot remove the snapshot store {} of {} (gone): {e}",
                    dir.display(),
                    wd.display()
                )),
            }
        }
        human.push_str(&format!(
            "removed {} snapshot store(s) of workdirs that no longer exist{}; {stores_unknown} store(s) record no workdir and were kept\n",
            stores_removed.len(),
            if stores_removed.is_empty() {
                String::new()
            } else {
                format!(": {}", stores_removed.join(", "))
            }
        ));
    }
    let body = GcBody {
        kept,
        removed,
        awaiting_person: awaiting,
        refs_deleted,
        stores_removed,
        stores_unknown,
        human,
    };
    let failed = !errors.is_empty();
    let mut o = Outcome::from_body(
        if failed { "error" } else { "ok" },
        if failed { super::EXIT_ERROR } else { 0 },
        &body,
    );
    o.errors = errors;
    o
}
