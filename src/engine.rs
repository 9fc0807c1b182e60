//! The loop: observe, record, decide, act — until `decide` halts.
//!
//! Lifecycle (SPEC §1): preflight (workdir, configuration, lock) → `run_started`
//! (resolved policy, git state, t0 measurements) → iteration 0, the baseline check on
//! the untouched tree → iterations 1..N: exec, tree snapshot and guard measurements,
//! check (plus confirmation runs when green) → `halted`.
//!
//! Every observation is appended to the receipt *before* it is acted on, then folded
//! into the in-memory [`Trajectory`] with the same code `explain-halt` uses to rebuild
//! it, and only then is [`decide`] asked what comes next. The loop itself decides
//! nothing: it only does what the decision says (run the exec, run the check, run a
//! confirmation, revert a rejected iteration, start the next one, or stop).

use crate::check::parse::{self, CheckInput, FormatChoice};
use crate::config::RunConfig;
use crate::decide::{decide, Next};
use crate::halt::{Halt, HaltReason, Verdict};
use crate::observe::tree::TreeObserver;
use crate::proc::{self, StepResult, StepSpec, StopCause};
use crate::receipt::events::{
    CheckFinished, ExecFinished, Halted, Interrupted, IterationStarted, Resumed, Reverted,
    RunStarted,
};
use crate::receipt::{Event, Writer};
use crate::store::{HaltRecord, Store};
use crate::trajectory::Trajectory;
use crate::workspace::{Workspace, WorkspaceError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The signal (if any) loopexec has received; set by the signal handlers.
#[derive(Clone, Default)]
pub struct SignalFlag(pub Arc<AtomicI32>);

impl SignalFlag {
    /// Installs SIGINT/SIGTERM/SIGHUP handlers that record the signal number.
    ///
    /// # Errors
    /// When a handler cannot be installed.
    pub fn install() -> std::io::Result<SignalFlag> {
        let flag = SignalFlag::default();
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            let f = flag.0.clone();
            // SAFETY: the handler only stores into an atomic (async-signal-safe).
            unsafe {
                signal_hook::low_level::register(sig, move || f.store(sig, Ordering::SeqCst))?;
            }
        }
        Ok(flag)
    }
    /// The signal received, if any.
    #[must_use]
    pub fn get(&self) -> Option<i32> {
        match self.0.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }
}

/// What to run.
pub struct RunRequest {
    pub workspace: Workspace,
    pub config: RunConfig,
    pub run_id: String,
    /// Continue this halted run instead of starting a new one.
    pub resume: bool,
    /// Show progress lines on stderr.
    pub progress: bool,
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub run_id: String,
    pub iteration: u32,
    pub halt: Halt,
    pub explanation: String,
    /// What to do next (refined by the trajectory: a stalled cap is "do not retry").
    pub advice: crate::halt::Advice,
    pub receipt: Option<PathBuf>,
    pub preflight: bool,
}

/// Errors that stop a run before a halt can be computed from observations.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("receipt {path}: {source}")]
    Receipt {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    ReadReceipt(#[from] crate::receipt::ReadError),
    #[error("run `{0}` already exists; choose another --run-id, or continue it with --resume {0}")]
    RunExists(String),
    #[error("run `{0}` cannot be resumed: {1}")]
    NotResumable(String, String),
    #[error("capture files under {path}: {source}")]
    Capture {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl EngineError {
    /// The halt reason this preflight error maps to.
    #[must_use]
    pub fn reason(&self) -> HaltReason {
        match self {
            EngineError::Workspace(_) => HaltReason::WorkspaceInvalid,
            // Stored state that fails validation (a ledger that is newer than this
            // loopexec, or not a database; a damaged receipt) is an invariant failure,
            // like damaged configuration.
            EngineError::RunExists(_)
            | EngineError::NotResumable(..)
            | EngineError::Store(_)
            | EngineError::ReadReceipt(_) => HaltReason::InvariantFailed,
            EngineError::Receipt { .. } | EngineError::Capture { .. } => HaltReason::InternalError,
        }
    }
}

struct Loop<'a> {
    ws: &'a Workspace,
    cfg: &'a RunConfig,
    run_id: String,
    receipt: Writer,
    store: Store,
    traj: Trajectory,
    signals: &'a SignalFlag,
    env_stripped: Vec<String>,
    tree: TreeObserver,
    progress: bool,
    started: Instant,
    meter_state: crate::observe::usage::CarryOver,
    orphans_ended: Vec<String>,
}

/// Heartbeat written while a step runs (`.loopexec/runs/<id>/heartbeat`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Heartbeat {
    pub run_id: String,
    /// RFC 3339 time of this write.
    pub time: String,
    /// Unix time of this write, milliseconds.
    pub time_ms: u64,
    pub pid: u32,
    /// Process groups of the running children.
    pub pgids: Vec<i32>,
    pub iteration: u32,
    /// `exec` or `check`.
    pub phase: String,
    /// Bytes of output the running step has printed.
    pub output_bytes: u64,
    /// Unix time (ms) of the step's last output, or of its start.
    pub last_output_ms: u64,
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn write_atomic(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("tmp");
    if std::fs::write(&tmp, bytes).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

/// Runs (or resumes) a loop to its halt.
///
/// # Errors
/// Preflight problems that happen before a receipt exists ([`EngineError`]); every
/// later problem ends in a recorded halt instead.
pub fn run(req: RunRequest, signals: &SignalFlag) -> Result<RunOutcome, EngineError> {
    let ws = &req.workspace;
    ws.ensure()?;
    let _lock = ws.lock(&req.run_id)?;
    let store = Store::open(&ws.ledger_path())?;
    let receipt_path = ws.receipt_path(&req.run_id);
    let run_dir = ws.run_dir(&req.run_id);
    std::fs::create_dir_all(&run_dir).map_err(|source| EngineError::Capture {
        path: run_dir.clone(),
        source,
    })?;
    remove_stale_spools(&run_dir);
    let orphans_ended = end_orphans(ws);
    let env_stripped = crate::observe::secrets::secret_env_names(&req.config.guards.keep_env);
    let tree = TreeObserver::new(&ws.workdir, &req.run_id, &req.config);

    let (receipt, traj) = if req.resume {
        let (w, lines) = Writer::resume(&receipt_path)?;
        let traj = Trajectory::from_lines(&lines);
        // The workdir lock is ours, so no process is still writing this receipt: a run
        // without a `halted` event died (SIGKILL, power loss) and may be continued. A
        // run that converged has nothing left to do.
        let converged = lines.iter().rev().find_map(|l| match &l.event {
            Event::Halted(h) => Some(h.halt_reason == HaltReason::SuccessConditionMet),
            Event::Resumed(_) => Some(false),
            _ => None,
        });
        if converged == Some(true) {
            return Err(EngineError::NotResumable(
                req.run_id.clone(),
                "it already converged (success_condition_met); start a new run".into(),
            ));
        }
        (w, traj)
    } else {
        if receipt_path.exists() {
            return Err(EngineError::RunExists(req.run_id.clone()));
        }
        let w = Writer::create(&receipt_path).map_err(|source| EngineError::Receipt {
            path: receipt_path.clone(),
            source,
        })?;
        (w, Trajectory::default())
    };
    store.run_started(
        &req.run_id,
        &ws.workdir.display().to_string(),
        std::process::id(),
        &receipt_path.display().to_string(),
    )?;
    let mut lp = Loop {
        ws,
        cfg: &req.config,
        run_id: req.run_id.clone(),
        receipt,
        store,
        traj,
        signals,
        env_stripped,
        tree,
        progress: req.progress,
        started: Instant::now(),
        meter_state: crate::observe::usage::CarryOver::default(),
        orphans_ended,
    };
    if req.resume {
        lp.resume()?;
    } else {
        lp.start()?;
    }
    Ok(lp.drive())
}

/// Ends the process groups that earlier runs left behind when their loopexec died
/// (SIGKILL, OOM): the heartbeat names them, the dead pid proves nobody supervises
/// them, and they must still be working in this workdir. We hold the workdir lock, so
/// no live run owns them. Returns what was ended, for `run_started`.
fn end_orphans(ws: &Workspace) -> Vec<String> {
    let mut ended = Vec::new();
    let Ok(rd) = std::fs::read_dir(ws.runs_dir()) else {
        return ended;
    };
    for e in rd.flatten() {
        let hb_path = e.path().join("heartbeat");
        let Some(hb) = std::fs::read(&hb_path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Heartbeat>(&b).ok())
        else {
            continue;
        };
        if proc::supervise::pid_alive(hb.pid) {
            continue;
        }
        for pg in hb.pgids {
            if proc::supervise::group_works_in(pg, &ws.workdir)
                && proc::end_group(pg, Duration::from_secs(3))
            {
                ended.push(format!(
                    "process group {pg} of run {} (loopexec pid {} is gone)",
                    hb.run_id, hb.pid
                ));
            }
        }
        let _ = std::fs::remove_file(&hb_path);
    }
    ended
}

fn remove_stale_spools(dir: &Path) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().ends_with(".spool") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

impl Loop<'_> {
    fn record(&mut self, event: Event) -> Result<(), EngineError> {
        self.receipt
            .append(&event)
            .map_err(|source| EngineError::Receipt {
                path: self.receipt.path().to_path_buf(),
                source,
            })?;
        let ts = crate::receipt::now_rfc3339();
        self.traj.apply(&event, &ts);
        Ok(())
    }

    fn start(&mut self) -> Result<(), EngineError> {
        let (git, baseline, unavailable) = self.tree.baseline();
        let started = RunStarted {
            run_id: self.run_id.clone(),
            loopexec_version: env!("CARGO_PKG_VERSION").to_string(),
            workdir: self.ws.workdir.display().to_string(),
            pid: std::process::id(),
            config: self.cfg.clone(),
            git,
            env_stripped: self.env_stripped.clone(),
            guards_unavailable: unavailable,
            baseline,
            orphans_ended: std::mem::take(&mut self.orphans_ended),
        };
        self.record(Event::RunStarted(Box::new(started)))?;
        self.record(Event::IterationStarted(IterationStarted { iteration: 0 }))
    }

    fn resume(&mut self) -> Result<(), EngineError> {
        let last_halt = self.traj.last().map_or(0, |i| i.iteration);
        let acks = self.store.acks(&self.run_id)?;
        // Continue from the last accepted state: restore it when the last iteration
        // was rejected.
        let views = self.traj.attempt_views(self.cfg.success_exit_code);
        let accepted = crate::detect::progress::accepted(&views);
        let from = views
            .iter()
            .zip(&accepted)
            .rev()
            .find(|(_, a)| **a)
            .map_or(0, |(v, _)| v.iteration);
        self.tree.adopt_baseline(&self.traj);
        if from != last_halt {
            if let Some(snap) = self.tree.snapshot_of(from, &self.traj) {
                let _ = self.tree.restore(&snap);
            }
        }
        self.tree.refresh(&format!("{last_halt}-resumed"));
        self.record(Event::Resumed(Resumed {
            pid: std::process::id(),
            acknowledged_by: acks.iter().map(|a| a.reviewer.clone()).collect(),
            from_iteration: last_halt,
        }))?;
        self.record(Event::IterationStarted(IterationStarted {
            iteration: last_halt + 1,
        }))
    }

    fn current_iteration(&self) -> u32 {
        self.traj.last().map_or(0, |i| i.iteration)
    }

    fn say(&self, what: &str) {
        if self.progress {
            let it = self.current_iteration();
            eprintln!(
                "loopexec: [{:>6.1}s] iteration {it}/{} · {what}",
                self.started.elapsed().as_secs_f64(),
                self.cfg.max_iterations
            );
        }
    }

    /// Asks `decide` and acts until it halts.
    fn drive(mut self) -> RunOutcome {
        loop {
            if let Some(sig) = self.signals.get() {
                if !self
                    .traj
                    .interrupts
                    .iter()
                    .any(|i| i.iteration == self.current_iteration())
                {
                    let ev = Event::Interrupted(Interrupted {
                        iteration: self.current_iteration(),
                        signal: sig,
                        phase: "between".into(),
                    });
                    if let Err(e) = self.record(ev) {
                        return self.internal(&e.to_string());
                    }
                }
            }
            let decision = decide(&self.traj, self.cfg);
            let step = match (decision.verdict, decision.next) {
                (Verdict::Halt(h), _) => return self.finish(h),
                (Verdict::Continue, Some(next)) => self.act(next),
                (Verdict::Continue, None) => Ok(()),
            };
            if let Err(e) = step {
                return self.internal(&e.to_string());
            }
        }
    }

    fn act(&mut self, next: Next) -> Result<(), EngineError> {
        match next {
            Next::Exec => self.exec(),
            Next::Check => self.check(0),
            Next::Confirm => {
                let n = self.traj.last().map_or(0, |i| i.checks.len());
                self.check(u32::try_from(n).unwrap_or(u32::MAX))
            }
            Next::NextIteration { revert_to } => {
                let it = self.current_iteration();
                self.ledger_iteration(it);
                if let Some(to) = revert_to {
                    self.revert(it, to)?;
                }
                self.record(Event::IterationStarted(IterationStarted {
                    iteration: it + 1,
                }))
            }
        }
    }

    fn ledger_iteration(&self, it: u32) {
        let Some(obs) = self.traj.last() else { return };
        let check = obs.main_check();
        let verdict = match check {
            Some(c) if crate::trajectory::is_green(c, self.cfg.success_exit_code) => "green",
            Some(_) => "red",
            None => "none",
        };
        let cost = obs
            .exec
            .as_ref()
            .and_then(|e| e.usage.get("cost_usd"))
            .and_then(serde_json::Value::as_f64);
        let _ = self.store.iteration(
            &self.run_id,
            it,
            obs.exec.as_ref().and_then(|e| e.step.exit_code),
            check.and_then(|c| c.step.exit_code),
            verdict,
            check.map(|c| c.parsed.failing().len()),
            cost,
        );
    }

    fn revert(&mut self, it: u32, to: u32) -> Result<(), EngineError> {
        let Some(snap) = self.tree.snapshot_of(to, &self.traj) else {
            return Ok(());
        };
        let views = self.traj.attempt_views(self.cfg.success_exit_code);
        let lost: Vec<String> = match (views.iter().find(|v| v.iteration == to), views.last()) {
            (Some(a), Some(b)) => a.passing.difference(&b.passing).cloned().collect(),
            _ => Vec::new(),
        };
        self.say(&format!(
            "rejected (regressed {}); restoring iteration {to}",
            lost.len()
        ));
        // The receipt says what is about to happen before it happens.
        self.record(Event::Reverted(Reverted {
            iteration: it,
            to_iteration: to,
            snapshot: snap.clone(),
            lost_tests: lost,
        }))?;
        let _ = self.tree.restore(&snap);
        self.tree.refresh(&format!("{it}-reverted"));
        Ok(())
    }

    /// A step in the workdir with the run's grace and capture limits; callers set the
    /// environment, timeouts and sink.
    fn step_spec<'s>(&'s self, command: &'s str, prefix: PathBuf) -> StepSpec<'s> {
        StepSpec {
            command,
            cwd: &self.ws.workdir,
            env_remove: &[],
            env_set: &[],
            timeout: None,
            stall_timeout: None,
            grace: self.cfg.kill_grace.0,
            limits: proc::CaptureLimits::default(),
            capture_prefix: prefix,
            workdir: &self.ws.workdir,
            stdout_sink: None,
        }
    }

    fn run_supervised(
        &self,
        spec: StepSpec<'_>,
        phase: &str,
        budget: Option<&crate::observe::usage::LiveMeter>,
    ) -> Result<(StepResult, proc::Spools), EngineError> {
        let prefix = spec.capture_prefix.clone();
        let hb_path = self.ws.heartbeat_path(&self.run_id);
        let iteration = self.current_iteration();
        let run_id = self.run_id.clone();
        let signals = self.signals.clone();
        let phase_s = phase.to_string();
        let step_start_ms = unix_ms();
        let mut last_hb = Instant::now() - Duration::from_secs(5);
        let cfg = self.cfg;
        let traj = &self.traj;
        let mut poll = |p: &proc::Progress| -> Option<StopCause> {
            if last_hb.elapsed() >= Duration::from_millis(500) {
                last_hb = Instant::now();
                let quiet = u64::try_from(p.quiet_for.as_millis()).unwrap_or(0);
                let hb = Heartbeat {
                    run_id: run_id.clone(),
                    time: crate::receipt::now_rfc3339(),
                    time_ms: unix_ms(),
                    pid: std::process::id(),
                    pgids: vec![p.pgid],
                    iteration,
                    phase: phase_s.clone(),
                    output_bytes: p.output_bytes,
                    last_output_ms: unix_ms().saturating_sub(quiet).max(step_start_ms),
                };
                if let Ok(b) = serde_json::to_vec(&hb) {
                    write_atomic(&hb_path, &b);
                }
            }
            if let Some(sig) = signals.get() {
                return Some(StopCause::Signal { signal: sig });
            }
            if let Some(m) = budget {
                if let Some(detail) = crate::detect::spend::crossed_live_now(traj, cfg, m) {
                    return Some(StopCause::Budget { detail });
                }
            }
            None
        };
        let r = proc::run_step(spec, &mut poll).map_err(|source| EngineError::Capture {
            path: prefix.clone(),
            source,
        })?;
        for ext in ["stdout", "stderr"] {
            let mut p = prefix.as_os_str().to_owned();
            p.push(format!(".{ext}"));
            let _ = crate::observe::secrets::redact_file(Path::new(&p));
        }
        Ok(r)
    }

    fn exec(&mut self) -> Result<(), EngineError> {
        let it = self.current_iteration();
        let Some(cmd) = self.cfg.exec.clone() else {
            // No work step: the iteration is a re-check of the same tree.
            let obs = self.tree.observe(it);
            let ev = ExecFinished {
                iteration: it,
                step: noop_step(),
                tree: obs.tree,
                snapshot: obs.snapshot,
                usage: serde_json::Value::Null,
                guards: obs.measures,
                watchdog: None,
            };
            return self.record(Event::ExecFinished(Box::new(ev)));
        };
        self.say("exec");
        let prefix = self.ws.run_dir(&self.run_id).join(format!("{it}.exec"));
        let usage_file = self
            .ws
            .run_dir(&self.run_id)
            .join(format!("{it}.usage.jsonl"));
        let _ = std::fs::remove_file(&usage_file);
        let env_set = vec![
            (
                "LOOPEXEC_USAGE_FILE".to_string(),
                usage_file.display().to_string(),
            ),
            ("LOOPEXEC_RUN_ID".to_string(), self.run_id.clone()),
            ("LOOPEXEC_ITERATION".to_string(), it.to_string()),
        ];
        let meter = crate::observe::usage::LiveMeter::new(
            &self.cfg.pricing,
            &self.meter_state,
            Some(usage_file.clone()),
        );
        let sink = meter.sink();
        let stall = self.cfg.liveness.stall_timeout.map(|d| d.0);
        let mut spec = self.step_spec(&cmd, prefix);
        spec.env_set = &env_set;
        spec.timeout = self.cfg.exec_timeout.map(|d| d.0);
        spec.stall_timeout = stall;
        spec.stdout_sink = Some(sink);
        let (step, spools) = self.run_supervised(spec, "exec", Some(&meter))?;
        proc::capture::remove_spool(&spools.stdout);
        proc::capture::remove_spool(&spools.stderr);
        let usage = meter.finish(&mut self.meter_state);
        let watchdog = self.take_watchdog(&step);
        let mut obs = self.tree.observe(it);
        if let Err(what) = self.receipt.untouched() {
            // The step wrote into loopexec's own record: a blocked path, observed.
            let mut m: crate::detect::integrity::TreeMeasures =
                serde_json::from_value(obs.measures.clone()).unwrap_or_default();
            let rel = self
                .receipt
                .path()
                .strip_prefix(&self.ws.workdir)
                .unwrap_or(self.receipt.path());
            m.state_tampered.push(format!("{} ({what})", rel.display()));
            obs.measures = serde_json::to_value(m).unwrap_or_default();
        }
        let ev = ExecFinished {
            iteration: it,
            step,
            tree: obs.tree,
            snapshot: obs.snapshot,
            usage,
            guards: obs.measures,
            watchdog,
        };
        self.record(Event::ExecFinished(Box::new(ev)))
    }

    fn check(&mut self, attempt: u32) -> Result<(), EngineError> {
        let it = self.current_iteration();
        let Some(cmd) = self.cfg.check.clone() else {
            return Err(EngineError::NotResumable(
                self.run_id.clone(),
                "no check configured".into(),
            ));
        };
        self.say(
            if attempt == 0 {
                "check".to_string()
            } else {
                format!("confirming green ({attempt}/{})", self.cfg.confirm_runs)
            }
            .as_str(),
        );
        let reports = self.clear_reports();
        let tree_before = self.tree.tree_before_check();
        let suffix = if attempt == 0 {
            String::new()
        } else {
            format!("-{attempt}")
        };
        let prefix = self
            .ws
            .run_dir(&self.run_id)
            .join(format!("{it}.check{suffix}"));
        let timeout = self.cfg.check_timeout.map(|d| d.0);
        let wrapped = crate::observe::isolation::wrap_check(&cmd, &self.cfg.check_network);
        let mut spec = self.step_spec(&wrapped, prefix);
        spec.env_remove = &self.env_stripped;
        spec.timeout = timeout;
        let (step, spools) = self.run_supervised(spec, "check", None)?;
        let found: Vec<PathBuf> = self.find_reports();
        let choice = if self.cfg.test_format == "auto" {
            FormatChoice::Auto
        } else {
            parse::format_from_name(&self.cfg.test_format)
                .map_or(FormatChoice::Auto, FormatChoice::Fixed)
        };
        let exit = parse::exit_for_parser(step.exit_code, step.signal, self.cfg.success_exit_code);
        let mut parsed = parse::parse(
            &CheckInput {
                stdout: Some(&spools.stdout),
                stderr: Some(&spools.stderr),
                exit_code: exit,
                reports: &found,
            },
            choice,
        );
        // The failing set is never empty while the check is red: a red run whose
        // output names no failing test (e.g. pytest's "no tests collected", exit 5)
        // contributes the synthetic member.
        if !step.exited_with(self.cfg.success_exit_code) && parsed.failing().is_empty() {
            let what = match (step.exit_code, step.signal) {
                (Some(c), _) => format!("the check exited {c} and named no failing test"),
                (None, Some(s)) => {
                    format!("the check ended by signal {s} and named no failing test")
                }
                _ => "the check ended without an exit status".to_string(),
            };
            parsed
                .tests
                .push(parse::util::unattributed("check", Some(what)));
            parsed.unattributed_failure = true;
        }
        if step.stdout.spool_truncated || step.stderr.spool_truncated {
            parsed.complete = false;
            parsed.diagnostics.push(
                "check output exceeded the capture limit; the parse saw only its beginning".into(),
            );
        }
        // A configured report the check did not write is a hole in the evidence, never
        // "0 failures": the run is incomplete, so a green exit code alone cannot pass
        // the integrity gate.
        let missing: Vec<&String> = reports
            .iter()
            .filter(|r| {
                if r.contains(['*', '?', '[']) {
                    found.is_empty()
                } else {
                    !found.iter().any(|f| f.ends_with(r.as_str()))
                }
            })
            .collect();
        for r in &missing {
            parsed
                .diagnostics
                .push(format!("report file {r} was not written by this check run"));
        }
        if !missing.is_empty() {
            parsed.complete = false;
        }
        proc::capture::remove_spool(&spools.stdout);
        proc::capture::remove_spool(&spools.stderr);
        let watchdog = self.take_watchdog(&step);
        let tree_after = self.tree.after_check(it, attempt);
        let writes = match (&tree_before, &tree_after) {
            (Some(a), Some(b)) if a != b => self.tree.check_writes(a, b),
            _ => crate::observe::tree::CheckWrites::default(),
        };
        let ev = CheckFinished {
            iteration: it,
            attempt,
            step,
            parsed,
            tree_before,
            tree_after,
            check_wrote: writes.changed,
            check_created: writes.created,
            reports: found.iter().map(|p| p.display().to_string()).collect(),
            watchdog,
        };
        self.record(Event::CheckFinished(Box::new(ev)))
    }

    /// The record a watchdog left before ending this step's group, if it did (consumed).
    fn take_watchdog(&self, step: &StepResult) -> Option<serde_json::Value> {
        let path = self.ws.watchdog_path(&self.run_id);
        let record = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
        let _ = std::fs::remove_file(&path);
        record.filter(|_| step.signal.is_some() || step.exit_code != Some(0))
    }

    /// Removes the configured report files before a check run (a stale report from an
    /// earlier iteration must never speak for this one). Returns the patterns.
    fn clear_reports(&self) -> Vec<String> {
        for p in self.find_reports() {
            let _ = std::fs::remove_file(p);
        }
        self.cfg.reports.clone()
    }

    fn find_reports(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for pat in &self.cfg.reports {
            let full = if Path::new(pat).is_absolute() {
                PathBuf::from(pat)
            } else {
                self.ws.workdir.join(pat)
            };
            if pat.contains(['*', '?', '[']) {
                out.extend(crate::observe::reports::glob_files(&self.ws.workdir, pat));
            } else if full.is_file() {
                out.push(full);
            }
        }
        out
    }

    fn internal(mut self, message: &str) -> RunOutcome {
        let h = Halt::new(
            HaltReason::InternalError,
            vec![format!("loopexec failed: {message}")],
        );
        self.finish(h)
    }

    fn finish(&mut self, halt: Halt) -> RunOutcome {
        let it = self.current_iteration();
        if let Some(obs) = self.traj.last() {
            if obs.exec.is_some() || !obs.checks.is_empty() {
                self.ledger_iteration(it);
            }
        }
        let explanation = crate::explain::one_line(&halt, &self.traj);
        let ev = Halted {
            iteration: it,
            halt_reason: halt.reason,
            exit_code: halt.reason.exit_code(),
            class: halt.reason.class().as_str().to_string(),
            contributors: halt.contributors.clone(),
            explanation: explanation.clone(),
            detail: halt.detail.clone(),
            preflight: false,
        };
        let _ = self.receipt.append(&Event::Halted(Box::new(ev)));
        let failing = self
            .traj
            .last()
            .and_then(|o| o.main_check())
            .map(|c| c.parsed.failing().len());
        let _ = self.store.halted(&HaltRecord {
            run_id: &self.run_id,
            iteration: it,
            reason: halt.reason,
            description: &explanation,
            context: &serde_json::json!({"contributors": halt.contributors, "detail": halt.detail, "failing": failing}),
            attempt_count: Some(it),
            previous_error: None,
        });
        let _ = std::fs::remove_file(self.ws.heartbeat_path(&self.run_id));
        RunOutcome {
            run_id: self.run_id.clone(),
            iteration: it,
            advice: crate::explain::advice_for(halt.reason, &self.traj),
            halt,
            explanation,
            receipt: Some(self.receipt.path().to_path_buf()),
            preflight: false,
        }
    }
}

fn noop_step() -> StepResult {
    let empty = proc::CaptureSummary {
        bytes: 0,
        blake3: blake3::hash(b"").to_hex().to_string(),
        excerpt: None,
        elided: false,
        spool_truncated: false,
        lines: 0,
    };
    StepResult {
        command: String::new(),
        exit_code: Some(0),
        signal: None,
        spawn_error: None,
        duration_ms: 0,
        timed_out: false,
        stalled: false,
        stopped: None,
        leaked_processes: false,
        pipe_held_open: false,
        stdout: empty.clone(),
        stderr: empty,
    }
}

/// Records a preflight halt (no receipt) in the ledger when one can be opened.
pub fn record_preflight(ws: Option<&Workspace>, run_id: &str, halt: &Halt) {
    let Some(ws) = ws else { return };
    if ws.ensure().is_err() {
        return;
    }
    if let Ok(store) = Store::open(&ws.ledger_path()) {
        let _ = store.halted(&HaltRecord {
            run_id,
            iteration: 0,
            reason: halt.reason,
            description: &halt.contributors.join("; "),
            context: &serde_json::json!({"preflight": true, "contributors": halt.contributors}),
            attempt_count: None,
            previous_error: None,
        });
    }
}
