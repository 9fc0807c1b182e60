//! One file per subcommand: validated input in, [`Outcome`] out. The dispatch match
//! lives here; domain modules never see clap.

mod ack;
mod attest;
pub mod bodies;
pub mod bodies_control;
pub mod bodies_ops;
mod build_context;
mod check_state;
mod doctor;
mod explain_halt;
mod gate;
mod gc;
mod halt_notes;
pub(crate) mod halts;
mod holds;
mod init;
mod init_detect;
mod inspect_cost;
mod meta;
pub mod parse;
mod probe_check;
mod replay;
mod report;
mod report_formats;
mod run;
mod runs;
mod status;
mod watch;

pub use meta::exit_codes_text;

use crate::cli::{Cli, Command, Outcome};
use crate::halt::HaltReason;
use crate::receipt::{self, Line};
use crate::workspace::{Workspace, WorkspaceError};
use std::path::PathBuf;

/// Runs the parsed command line.
#[must_use]
pub fn dispatch(cli: Cli) -> Outcome {
    let workdir = cli.workdir.clone().unwrap_or_else(|| PathBuf::from("."));
    // Escalation happens "when any loopexec command next runs" (SPEC §Halt events).
    let escalated = crate::control::escalate_due(&workdir);
    if !escalated.is_empty() && !cli.json {
        eprintln!(
            "loopexec: escalated {} unacknowledged halt event(s) past their escalation time: {}",
            escalated.len(),
            escalated.join(", ")
        );
    }
    match cli.command {
        Command::Init(a) => init::run(&workdir, &a),
        Command::Run(a) => run::run(&workdir, &a, cli.json, cli.quiet),
        Command::Status(s) => status::run(&workdir, s.id()),
        Command::ExplainHalt(s) => explain_halt::run(&workdir, s.id()),
        Command::Report(a) => report::run(&workdir, &a, cli.json),
        Command::Parse(a) => parse::run(&a),
        Command::Ack(a) => ack::run(&workdir, &a),
        Command::Watch(a) => watch::run(&workdir, &a),
        Command::InspectCost(a) => inspect_cost::run(&workdir, &a),
        Command::Check => check_state::run(&workdir),
        Command::ProbeCheck(a) => probe_check::run(&workdir, &a),
        Command::Doctor(a) => doctor::run(&workdir, &a),
        Command::Replay(a) => replay::run(&workdir, &a, cli.quiet),
        Command::Keygen(a) => attest::keygen(&a),
        Command::Attest(a) => attest::attest(&workdir, &a),
        Command::Verify(a) => attest::verify(cli.workdir.as_deref(), &a),
        Command::Runs => runs::list(&workdir),
        Command::Gc(a) => gc::run(&workdir, &a),
        Command::ExitCodes => meta::exit_codes(),
        Command::Completions(a) => meta::completions(&a),
        Command::Man => meta::man(),
        Command::Hold(a) => holds::hold(&workdir, &a),
        Command::Release(a) => holds::release(&workdir, &a),
        Command::Holds => holds::list(&workdir),
        Command::Halts(a) => halts::list(&workdir, &a),
        Command::Gate => gate::run(&workdir),
        Command::Pending => gate::pending(&workdir),
        Command::Confirm(a) => gate::decide(&workdir, &a, "confirmed"),
        Command::Deny(a) => gate::decide(&workdir, &a, "denied"),
        Command::BuildContext(a) => build_context::run(&workdir, &a),
    }
}

/// Exit code of command errors that are not halts (bad input to a read command).
pub(crate) const EXIT_ERROR: u8 = 1;

/// A loaded run: its id, receipt path and lines.
pub(crate) struct LoadedRun {
    pub ws: Workspace,
    pub run_id: String,
    pub receipt: PathBuf,
    pub lines: Vec<Line>,
}

impl LoadedRun {
    /// The run's facts (the `run` object of every command's JSON).
    pub fn facts(&self) -> crate::output::RunFacts {
        crate::receipt::facts::run_facts(&self.run_id, &self.receipt, &self.lines)
    }

    /// Why this receipt is not one this workspace's ledger recorded (empty when the
    /// ledger holds the run with this receipt's head and verdict): a receipt copied in
    /// from another project, or edited behind loopexec's back, has a valid hash chain
    /// but no agreeing ledger row. See [`check_state::ledger_disagreements`].
    pub fn provenance_problems(&self) -> Vec<String> {
        recorded_by_ledger(&self.ws, &self.run_id, &self.receipt, &self.lines)
    }
}

/// A command that reads a run's verdict back (`explain-halt`, `report`, `verify`)
/// about a run this workspace did not record (`problems`, from
/// [`LoadedRun::provenance_problems`]): status `unrecorded`, exit 13 (the integrity
/// class) and an error naming why, so neither a script reading the JSON nor a CI
/// step reading the exit code takes a planted receipt's verdict (a fresh review
/// planted a green one that `explain-halt --json` reported as `ok`). The body and
/// its human rendering are kept, what the receipt says can still be read; `banner`
/// puts the error above the human rendering too (not over a JSON document).
pub(crate) fn mark_unrecorded(
    mut o: Outcome,
    run_id: &str,
    problems: &[String],
    banner: bool,
) -> Outcome {
    if problems.is_empty() {
        return o;
    }
    let msg = format!(
        "run {run_id} was not recorded by this workspace, so its verdict is only its receipt's word: {}",
        problems.join("; ")
    );
    o.status = "unrecorded".into();
    o.exit_code = crate::halt::HaltReason::MetricIntegrityViolation.exit_code();
    if banner {
        o.human = format!("UNRECORDED: {msg}\n\n{}", o.human);
    }
    o.errors.push(msg);
    o.hint.get_or_insert_with(|| {
        "`loopexec check` lists every receipt the ledger and the control journal disagree with; read the run's verdict where it ran".into()
    });
    o
}

/// [`LoadedRun::provenance_problems`] for the receipt at `path` (run `run_id`, its
/// `lines`) of workspace `ws`.
pub(crate) fn recorded_by_ledger(
    ws: &Workspace,
    run_id: &str,
    path: &std::path::Path,
    lines: &[Line],
) -> Vec<String> {
    let ledger = ws.ledger_path();
    if !ledger.is_file() {
        return vec![format!(
            "this workspace has no ledger ({}), so nothing vouches that loopexec ran {run_id} here",
            ledger.display()
        )];
    }
    match crate::store::Store::open(&ledger) {
        Ok(store) => recorded_in(&store, run_id, path, lines),
        Err(e) => vec![format!("the ledger cannot be read: {e}")],
    }
}

/// [`recorded_by_ledger`] against an open ledger `store` (`runs` opens it once for
/// every receipt).
pub(crate) fn recorded_in(
    store: &crate::store::Store,
    run_id: &str,
    path: &std::path::Path,
    lines: &[Line],
) -> Vec<String> {
    let last = lines.iter().rev().find_map(|l| match &l.event {
        crate::receipt::Event::Halted(h) => Some(h.halt_reason),
        _ => None,
    });
    let mut problems = check_state::ledger_disagreements(path, run_id, lines, last, store);
    if problems.is_empty() && store.run(run_id).is_ok_and(|r| r.is_none()) {
        problems.push(format!(
            "{}: the ledger has no row for this run",
            path.display()
        ));
    }
    if last.is_some() {
        problems.extend(unsealed(store, run_id, path));
    } else {
        problems.extend(unstarted(store, run_id, path, lines));
    }
    problems
}

/// What is wrong with the start of run `run_id` (receipt at `path`, read as `lines`)
/// that recorded no halt: the control journal keeps every run's first receipt line
/// (`journal::Decision::RunStarted`, out of the agent's reach), and this receipt's
/// must be that line — a run killed before its halt has no seal, and its receipt and
/// ledger rows lie in the workdir, where an agent rewrote its policy for `run
/// --resume` (a nineteenth review). A journal that records no start at all is a
/// workspace's from before starts were kept: the ledger alone vouches then. A journal
/// that cannot be read vouches for nothing. `None` when the start matches.
pub(crate) fn unstarted(
    store: &crate::store::Store,
    run_id: &str,
    path: &std::path::Path,
    lines: &[Line],
) -> Option<String> {
    let journal = store.journal().path().display().to_string();
    let state = match store.journal().state() {
        Ok(s) => s,
        Err(e) => return Some(format!("the control journal cannot vouch for it: {e}")),
    };
    if state.started.is_empty() {
        return None;
    }
    let Some(kept) = state.started.get(run_id) else {
        return Some(format!(
            "{}: loopexec's control journal ({journal}, outside the workdir) records no start of this run, so no run of this workspace began this receipt",
            path.display()
        ));
    };
    if lines.first().is_some_and(|l| l.hash == *kept) {
        None
    } else {
        Some(format!(
            "{}: the receipt's first line is not the run_started line loopexec kept when the run began (its blake3 {kept} in {journal}): its policy or t0 was rewritten",
            path.display()
        ))
    }
}

/// What is wrong with the seal of halted run `run_id` (receipt at `path`): none in the
/// control journal (the receipt was not written by a run of this workspace: the
/// ledger, in the workdir, can be written by the agent; the journal, outside it,
/// cannot), a receipt that differs from the one sealed, or a journal that cannot be
/// read (nothing is vouched for then). `None` when the seal matches.
pub(crate) fn unsealed(
    store: &crate::store::Store,
    run_id: &str,
    path: &std::path::Path,
) -> Option<String> {
    let journal = store.journal().path().display().to_string();
    let seals = match store.journal().state() {
        Ok(s) => s.seals,
        Err(e) => return Some(format!("the control journal cannot vouch for it: {e}")),
    };
    let Some(sealed) = seals.get(run_id) else {
        // a journal that sealed nothing here at all is most often another state
        // directory's: say how to read the run back where it ran
        let elsewhere = if seals.is_empty() {
            " (it seals no run of this workspace at all: if the run used another LOOPEXEC_STATE_DIR, read it back with that one)"
        } else {
            ""
        };
        return Some(format!(
            "{}: loopexec's control journal ({journal}, outside the workdir) holds no seal for this run, so no run of this workspace wrote this receipt{elsewhere}",
            path.display()
        ));
    };
    match std::fs::read(path) {
        Ok(bytes) if blake3::hash(&bytes).to_hex().as_str() == sealed => None,
        Ok(bytes) if resumed_after_seal(&bytes, sealed) => Some(format!(
            "{}: the run was resumed after the halt loopexec sealed, and its loopexec ended before recording another (killed, or the machine stopped): nothing vouches for the lines after the seal ({sealed} in {journal}); start a new run",
            path.display()
        )),
        Ok(_) => Some(format!(
            "{}: the receipt is not the one loopexec sealed when the run halted (its blake3 differs from {sealed} in {journal})",
            path.display()
        )),
        Err(e) => Some(format!("{}: cannot be read ({e})", path.display())),
    }
}

/// True when run `run_id`'s receipt at `path` is its sealed receipt followed by a
/// resume that recorded no halt ([`resumed_after_seal`]): a resumed run still going,
/// or whose loopexec died.
pub(crate) fn open_resume(
    store: &crate::store::Store,
    run_id: &str,
    path: &std::path::Path,
) -> bool {
    let Some(sealed) = store
        .journal()
        .state()
        .ok()
        .and_then(|j| j.seals.get(run_id).cloned())
    else {
        return false;
    };
    std::fs::read(path).is_ok_and(|b| resumed_after_seal(&b, &sealed))
}

/// True when the receipt `bytes` begin with the receipt sealed as `sealed` (hex
/// blake3), ending at a `halted` line, and go on with a `resumed` line and no other
/// halt: a resume whose loopexec died. Its tail is not vouched for, but nothing was
/// rewritten that the seal covers.
pub(crate) fn resumed_after_seal(bytes: &[u8], sealed: &str) -> bool {
    let mut end = 0;
    let mut halted_at = None;
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        end += line.len();
        let Some(l) = crate::receipt::line_from_bytes(line.strip_suffix(b"\n").unwrap_or(line))
        else {
            return false;
        };
        match (&l.event, halted_at) {
            (receipt::Event::Halted(_), None)
                if blake3::hash(&bytes[..end]).to_hex().as_str() == sealed =>
            {
                halted_at = Some(end);
            }
            (receipt::Event::Halted(_), Some(_)) => return false,
            _ => {}
        }
    }
    halted_at.is_some_and(|at| {
        bytes[at..]
            .split(|b| *b == b'\n')
            .next()
            .and_then(crate::receipt::line_from_bytes)
            .is_some_and(|l| matches!(l.event, receipt::Event::Resumed(_)))
    })
}

/// Resolves the workdir and `--run-id` (latest by default) and reads the receipt.
#[allow(clippy::result_large_err)] // the error is the command's rendered outcome
pub(crate) fn load_run(
    workdir: &std::path::Path,
    run_id: Option<&str>,
) -> Result<LoadedRun, Outcome> {
    let ws = Workspace::at(workdir).map_err(|e| ws_error(&e))?;
    let run_id = ws.resolve_run(run_id).map_err(|e| ws_error(&e))?;
    let path = ws.receipt_path(&run_id);
    let lines = match receipt::read(&path) {
        Ok(l) => l,
        Err(receipt::ReadError::TornTail { .. }) => read_complete_lines(&path),
        Err(e) => {
            return Err(Outcome::error(
                HaltReason::InvariantFailed.exit_code(),
                e.to_string(),
                Some(
                    "the receipt is damaged; `loopexec check` names the first broken record".into(),
                ),
            ))
        }
    };
    Ok(LoadedRun {
        ws,
        run_id,
        receipt: path,
        lines,
    })
}

/// Reads a receipt whose last line is torn (killed mid-write): every complete line.
pub(crate) fn read_complete_lines(path: &std::path::Path) -> Vec<Line> {
    let Ok(data) = std::fs::read(path) else {
        return Vec::new();
    };
    let cut = data.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let tmp = tempfile::NamedTempFile::new().ok();
    tmp.and_then(|t| {
        std::fs::write(t.path(), &data[..cut]).ok()?;
        receipt::read(t.path()).ok()
    })
    .unwrap_or_default()
}

pub(crate) fn ws_error(e: &WorkspaceError) -> Outcome {
    let hint = match e {
        WorkspaceError::NoRuns(_) => Some("start one with `loopexec run --check CMD`".to_string()),
        WorkspaceError::UnknownRun(_) => Some("list runs with `loopexec runs`".to_string()),
        WorkspaceError::RefusedRun { .. } => Some(
            "fix what the refusal names and start a new run; `loopexec halts` lists the refusal and `loopexec ack` clears it".to_string(),
        ),
        WorkspaceError::RemovedRun { .. } => Some(
            "`loopexec halts` still lists its halt event; `loopexec runs` lists the runs whose receipts remain".to_string(),
        ),
        WorkspaceError::BadRunId(_) => {
            Some("run ids never contain `/` or start with a dot".to_string())
        }
        WorkspaceError::Missing(_) | WorkspaceError::NotDir(_) => {
            Some("pass an existing directory to --workdir".to_string())
        }
        _ => None,
    };
    Outcome::error(EXIT_ERROR, e.to_string(), hint)
}

/// True when a process with this pid exists and is not a zombie.
pub(crate) fn pid_alive(pid: u32) -> bool {
    crate::proc::supervise::pid_alive(pid)
}
