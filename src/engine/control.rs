//! The loop's side of people in control (SPEC §Holds, §Halt events, §Gate).
//!
//! * Before each exec and each check the loop reads the holds covering the run (this
//!   workspace's ledger and the user's global hold file) and asks the pure
//!   [`holds::decide`]: a stop is recorded (`held`) and `decide` halts
//!   `human_required`; a suspension is recorded and the loop parks here, before the
//!   next exec, until the holds are released (`unheld`) — never mid-step, and never
//!   between an exec and the check of the tree it left.
//! * While a step runs, the poll closure reads the holds on the same tick as the
//!   stall and budget checks (at most every [`POLL_EVERY`]): a stop ends the step's
//!   process group, and the `held` event is written right after the step's own event.
//! * After a halt: the latch (a stop that did not land over a suspension), the event's
//!   configured severity and its three-strikes fields.
//! * On resume: the latch must have been acknowledged by a person; the marker (why the
//!   run stopped, what was released) goes to the first exec as `LOOPEXEC_RESUME_REASON`
//!   and `LOOPEXEC_RESUME_FILE`.

use super::recorder::{unix_ms, write_atomic};
use super::{EngineError, Heartbeat, Loop};
use crate::detect::holds::{self, HoldVerdict, HoldView};
use crate::halt::{Halt, HaltReason};
use crate::proc::StopCause;
use crate::receipt::events::{Held, Unheld};
use crate::receipt::Event;
use crate::store::{HoldRow, Store};
use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How often a running step re-reads the holds.
pub(super) const POLL_EVERY: Duration = Duration::from_millis(200);
/// How often a parked loop re-reads the holds.
const PARK_EVERY: Duration = Duration::from_millis(200);

/// Per-run state of the control checkpoints.
#[derive(Default)]
pub(super) struct Control {
    last_poll: Cell<Option<Instant>>,
    /// The stop holds a running step was ended for (taken after the step).
    hit: RefCell<Option<Vec<HoldView>>>,
    /// The resume marker for the next exec.
    marker: RefCell<Option<String>>,
}

/// The user's global hold file, when it exists (never created by a reader).
fn global_ledger() -> Option<PathBuf> {
    crate::control::global_holds_path().filter(|p| p.is_file())
}

fn view(h: &HoldRow) -> HoldView {
    HoldView {
        id: h.id.clone(),
        scope: h.scope.clone(),
        strength: h.strength.as_str().to_string(),
        holder: h.holder.clone(),
        reason: h.reason.clone(),
        taken_at: h.taken_at.clone(),
    }
}

/// Every active hold covering `run_id`: global ones first, then this workspace's.
/// A ledger that cannot be read is a stop (fail closed), named as such.
pub(crate) fn covering(store: &Store, run_id: &str) -> Vec<HoldView> {
    covering_in(Some(store), run_id)
}

/// [`covering`] for a workspace that may have no ledger yet (`None`: only the
/// user's global holds can cover the run).
pub(crate) fn covering_in(store: Option<&Store>, run_id: &str) -> Vec<HoldView> {
    let mut out = Vec::new();
    if let Some(g) = global_ledger() {
        match Store::open(&g).and_then(|s| s.active_holds(None)) {
            Ok(v) => out.extend(v.iter().filter(|h| h.scope == "global").map(view)),
            Err(e) => out.push(unreadable(&e.to_string())),
        }
    }
    if let Some(store) = store {
        match store.active_holds(Some(run_id)) {
            Ok(v) => out.extend(v.iter().map(view)),
            Err(e) => out.push(unreadable(&e.to_string())),
        }
    }
    out
}

fn unreadable(why: &str) -> HoldView {
    HoldView {
        id: "-".into(),
        scope: "workspace".into(),
        strength: "stopped".into(),
        holder: "loopexec".into(),
        reason: format!("the holds cannot be read, so none can be ruled out: {why}"),
        taken_at: crate::receipt::now_rfc3339(),
    }
}

impl Loop<'_> {
    /// The checkpoint before a step (`phase` is `exec` or `check`). Returns true when
    /// the step must not run: a stop was recorded (and `decide` will halt), or a
    /// signal arrived while parked (the drive loop records it).
    pub(super) fn hold_gate(&mut self, phase: &str) -> Result<bool, EngineError> {
        let it = self.current_iteration();
        let at = format!("before_{phase}");
        let mut parked: Option<(Instant, Vec<HoldView>)> = None;
        loop {
            match holds::decide(&covering(&self.store, &self.run_id)) {
                HoldVerdict::Proceed => {
                    if let Some((since, was)) = parked {
                        self.record(Event::Unheld(Unheld {
                            iteration: it,
                            released: was,
                            parked_ms: u64::try_from(since.elapsed().as_millis())
                                .unwrap_or(u64::MAX),
                        }))?;
                        self.say("suspension released; going on");
                    }
                    return Ok(false);
                }
                HoldVerdict::Stopped(h) => {
                    self.record(Event::Held(Held {
                        iteration: it,
                        phase: at,
                        verdict: "stopped".into(),
                        holds: h,
                        latched: parked.is_none(),
                    }))?;
                    return Ok(true);
                }
                // A check follows its exec on the tree the exec left: a suspension parks
                // the loop at the boundary before the next exec, never between the two.
                HoldVerdict::Suspended(_) if phase == "check" && parked.is_none() => {
                    return Ok(false);
                }
                HoldVerdict::Suspended(h) => {
                    if parked.is_none() {
                        self.record(Event::Held(Held {
                            iteration: it,
                            phase: at.clone(),
                            verdict: "suspended".into(),
                            holds: h.clone(),
                            latched: false,
                        }))?;
                        self.say(&format!(
                            "suspended by {}; parked until released",
                            h.iter()
                                .map(HoldView::describe)
                                .collect::<Vec<_>>()
                                .join("; ")
                        ));
                        parked = Some((Instant::now(), h));
                    }
                    if self.signals.get().is_some() {
                        return Ok(true);
                    }
                    self.parked_heartbeat(it);
                    std::thread::sleep(PARK_EVERY);
                }
            }
        }
    }

    fn parked_heartbeat(&self, iteration: u32) {
        let now = unix_ms();
        let hb = Heartbeat {
            run_id: self.run_id.clone(),
            time: crate::receipt::now_rfc3339(),
            time_ms: now,
            pid: std::process::id(),
            pgids: Vec::new(),
            iteration,
            phase: "suspended".into(),
            output_bytes: 0,
            last_output_ms: now,
        };
        if let Ok(b) = serde_json::to_vec(&hb) {
            write_atomic(&self.ws.heartbeat_path(&self.run_id), &b);
        }
    }

    /// Called from a running step's poll closure: a stop hold ends the step.
    pub(super) fn poll_holds(&self) -> Option<StopCause> {
        let ctl = &self.control;
        if ctl
            .last_poll
            .get()
            .is_some_and(|t| t.elapsed() < POLL_EVERY)
        {
            return None;
        }
        ctl.last_poll.set(Some(Instant::now()));
        match holds::decide(&covering(&self.store, &self.run_id)) {
            HoldVerdict::Stopped(h) => {
                let ids = h.iter().map(|x| x.id.clone()).collect();
                *ctl.hit.borrow_mut() = Some(h);
                Some(StopCause::Hold { holds: ids })
            }
            HoldVerdict::Proceed | HoldVerdict::Suspended(_) => None,
        }
    }

    /// After a step: records the stop that ended it, if one did.
    pub(super) fn after_step(&mut self, phase: &str) -> Result<(), EngineError> {
        let hit = self.control.hit.borrow_mut().take();
        if let Some(h) = hit {
            let it = self.current_iteration();
            self.record(Event::Held(Held {
                iteration: it,
                phase: phase.to_string(),
                verdict: "stopped".into(),
                holds: h,
                latched: true,
            }))?;
        }
        Ok(())
    }

    /// After the halt was recorded in the ledger as `halt_id`: severity from the
    /// policy, three strikes, the latch, and the notifier.
    pub(super) fn after_halt(&self, halt: &Halt, halt_id: Option<&str>) {
        let Some(id) = halt_id else { return };
        let sev = self.cfg.halt_events.severity_for(halt.reason);
        if let Err(e) = self.store.finish_event(id, sev.as_deref()) {
            self.say(&format!("could not record the halt event's severity: {e}"));
        }
        let latched = halt.reason == HaltReason::HumanRequired
            && halt.detail.get("cause").and_then(|c| c.as_str()) == Some("hold")
            && halt
                .detail
                .get("latched")
                .and_then(serde_json::Value::as_bool)
                == Some(true);
        if latched {
            // The holds, without the advice line that follows them.
            let n = halt.contributors.len().saturating_sub(1).max(1);
            let why = halt.contributors[..n.min(halt.contributors.len())].join("; ");
            if let Err(e) = self.store.latch(&self.run_id, &why, id) {
                self.say(&format!("could not latch the run: {e}"));
            }
        }
        crate::control::notify_halt(self.cfg, &self.store, id);
    }

    /// On resume: the marker for the agent (why the run stopped and what has been
    /// released since; for a halt of another kind, its reason and first contributor),
    /// kept for the first exec. Clears the latch (the caller checked
    /// that a person acknowledged it).
    pub(super) fn resume_marker(&self) -> Option<String> {
        // what stopped the run is what stopped it at its last halt: a signal or a hold
        // of an earlier segment is history
        let halted_at = self.traj.last_halted.as_ref().map(|h| h.iteration);
        let recent = |at: u32| halted_at.map_or(true, |h| at >= h);
        let stop = self
            .traj
            .holds
            .iter()
            .rev()
            .find(|h| h.verdict == "stopped")
            .filter(|h| recent(h.iteration));
        // a signal to loopexec (Ctrl-C, SIGTERM) stopped it after any hold did
        if let Some(i) = self
            .traj
            .interrupts
            .last()
            .filter(|i| recent(i.iteration))
            .filter(|i| stop.map_or(true, |s| i.iteration >= s.iteration))
        {
            let name = match i.signal {
                libc::SIGINT => "SIGINT (Ctrl-C)".to_string(),
                libc::SIGTERM => "SIGTERM".to_string(),
                libc::SIGHUP => "SIGHUP".to_string(),
                n => format!("signal {n}"),
            };
            let text = format!(
                "stopped at iteration {} by {name} to loopexec; no verdict was reached",
                i.iteration
            );
            *self.control.marker.borrow_mut() = Some(text.clone());
            return Some(text);
        }
        let Some(stop) = stop else {
            // any other halt: its reason and first contributor
            let h = self.traj.last_halted.as_ref()?;
            let text = format!(
                "halted at iteration {} with {} (exit {}){}",
                h.iteration,
                h.halt_reason,
                h.exit_code,
                h.contributors
                    .first()
                    .map_or(String::new(), |c| format!(": {c}"))
            );
            *self.control.marker.borrow_mut() = Some(text.clone());
            return Some(text);
        };
        let released: Vec<String> = stop
            .holds
            .iter()
            .map(|h| match self.store.hold(&h.id) {
                Ok(Some(row)) if row.released_at.is_some() => format!(
                    "{} released by {} at {}",
                    h.id,
                    row.released_by.unwrap_or_default(),
                    row.released_at.unwrap_or_default()
                ),
                _ => format!("{} not released", h.id),
            })
            .collect();
        let text = format!(
            "stopped at iteration {} by {}; since then: {}",
            stop.iteration,
            stop.holds
                .iter()
                .map(HoldView::describe)
                .collect::<Vec<_>>()
                .join("; "),
            released.join("; ")
        );
        *self.control.marker.borrow_mut() = Some(text.clone());
        Some(text)
    }

    /// Environment for the next exec: the resume marker (once).
    pub(super) fn marker_env(&self) -> Vec<(String, String)> {
        let Some(text) = self.control.marker.borrow_mut().take() else {
            return Vec::new();
        };
        let path = self.ws.run_dir(&self.run_id).join("resume-reason.txt");
        let mut env = vec![("LOOPEXEC_RESUME_REASON".to_string(), text.clone())];
        if std::fs::write(&path, format!("{text}\n")).is_ok() {
            env.push((
                "LOOPEXEC_RESUME_FILE".to_string(),
                path.display().to_string(),
            ));
        }
        env
    }
}

/// Refuses to resume a run a stop hold still covers, a run whose workspace has an
/// unacknowledged `high` or `critical` halt event (with `[control] ack_required`, as a
/// new run is refused), or a latched run until a person acknowledged the halt event
/// that latched it; clears the latch otherwise.
///
/// # Errors
/// [`EngineError::HeldAtResume`] naming the holds, [`EngineError::Latched`] naming
/// the event, [`EngineError::AwaitingAnswer`], or ledger errors.
pub(super) fn check_latch(
    store: &Store,
    run_id: &str,
    cfg: &crate::config::RunConfig,
) -> Result<(), EngineError> {
    // A stop hold still in force would stop the resumed run again before its exec,
    // and each such stop used an iteration (a new user's run ended at its cap that
    // way): refused before anything is recorded.
    if let HoldVerdict::Stopped(h) = holds::decide(&covering(store, run_id)) {
        return Err(EngineError::HeldAtResume {
            run_id: run_id.to_string(),
            holds: h
                .iter()
                .map(HoldView::describe)
                .collect::<Vec<_>>()
                .join("; "),
            ids: h
                .iter()
                .map(|v| v.id.as_str())
                .collect::<Vec<_>>()
                .join(" / "),
        });
    }
    if let Some(p) = store
        .pending(true)?
        .into_iter()
        .find(|p| p.run_id == run_id)
    {
        return Err(EngineError::AwaitingAnswer {
            run_id: run_id.to_string(),
            action_id: p.id,
        });
    }
    // A rejection by the judge resumes only after a person has acknowledged it (an
    // escalation is answered instead: `confirm`/`deny`, or a judge that can decide).
    let unacked_judgment = store
        .halt_events(&crate::store::HaltEventFilter {
            unacked: true,
            run_id: Some(run_id),
            min_severity: None,
        })?
        .into_iter()
        .find(|e| HaltReason::from_str_opt(&e.halt_reason) == Some(HaltReason::ReviewerRejected));
    if let Some(e) = unacked_judgment {
        return Err(EngineError::Latched {
            run_id: run_id.to_string(),
            halt_id: e.id,
            since: e.triggered_at,
            reason: format!("{} needs a person's acknowledgement", e.halt_reason),
        });
    }
    // As a new run is refused, so is a resume: an unacknowledged `high` or
    // `critical` event (an integrity halt, a gate finding) waits for a person before
    // the agent runs again in that workspace (a new user resumed a run halted 13 and
    // its agent ran at once).
    if cfg.control.ack_required {
        let open = store.halt_events(&crate::store::HaltEventFilter {
            unacked: true,
            run_id: None,
            min_severity: Some("high"),
        })?;
        if let Some(e) = open.into_iter().next() {
            return Err(EngineError::Latched {
                run_id: run_id.to_string(),
                halt_id: e.id,
                since: e.triggered_at,
                reason: format!(
                    "an unacknowledged {} halt event, {} of run {}",
                    e.severity, e.halt_reason, e.run_id
                ),
            });
        }
    }
    let Some(l) = store.latch_of(run_id)? else {
        return Ok(());
    };
    // With `[review] require_signed_ack`, only an SSH-signed acknowledgement counts.
    let acked = match &l.halt_id {
        Some(id) => store.halt_event(id)?.is_some_and(|e| {
            e.acknowledged
                && (!cfg.review.require_signed_ack
                    || e.acknowledged_how
                        .as_ref()
                        .and_then(|h| h.get("method"))
                        .and_then(|m| m.as_str())
                        == Some("ssh_signature"))
        }),
        None => false,
    };
    if !acked {
        return Err(EngineError::Latched {
            run_id: run_id.to_string(),
            halt_id: l.halt_id.unwrap_or_else(|| "-".into()),
            since: l.stopped_at,
            reason: l.stopped_reason,
        });
    }
    store.clear_latch(run_id)?;
    Ok(())
}

impl Loop<'_> {
    /// The environment the control checkpoints add to an exec: the resume marker
    /// (once), and where `loopexec gate` finds the run (`LOOPEXEC_WORKDIR`) and its
    /// audit log (`LOOPEXEC_AUDIT_LOG`).
    pub(super) fn control_env(&self) -> Vec<(String, String)> {
        let mut env = self.marker_env();
        env.push((
            "LOOPEXEC_WORKDIR".to_string(),
            self.ws.workdir.display().to_string(),
        ));
        env.push((
            "LOOPEXEC_AUDIT_LOG".to_string(),
            self.audit_path().display().to_string(),
        ));
        env
    }

    fn audit_path(&self) -> PathBuf {
        self.ws.run_dir(&self.run_id).join("audit.jsonl")
    }

    /// After an exec: folds the audit records the gate wrote during it into an
    /// `actions` event, and records each halt condition it observed as a halt event.
    pub(super) fn fold_actions(&mut self) -> Result<(), EngineError> {
        let path = self.audit_path();
        if !path.is_file() {
            return Ok(());
        }
        let mut log = crate::gate::audit::read(&path);
        let prev = self.traj.actions.last();
        let from: u64 = prev.map_or(0, |a| a.records);
        if log.problem.is_none() {
            log.problem = prev.and_then(|p| log.still_ends_in(p.records, p.head.as_deref()));
        }
        if log.records.len() as u64 <= from && log.problem.is_none() {
            return Ok(());
        }
        let it = self.current_iteration();
        let rel = path
            .strip_prefix(&self.ws.workdir)
            .unwrap_or(&path)
            .display()
            .to_string();
        let seen = crate::gate::audit::fold(&log, from, it, &rel);
        for f in &seen.findings {
            if let Err(e) = self.store.record_finding(
                &self.run_id,
                it,
                &f.halt_type,
                &f.severity,
                &f.description,
                &serde_json::json!({"source": "gate", "audit_log": rel}),
            ) {
                self.say(&format!(
                    "could not record the gate's {} event: {e}",
                    f.halt_type
                ));
            }
        }
        self.record(Event::Actions(Box::new(seen)))
    }
}

impl Loop<'_> {
    /// The rate-limit checkpoint before an exec: an empty workspace bucket is recorded
    /// (`rate_limited`); with `halt` the step does not run (and `decide` halts
    /// `budget_exceeded`), with `suspend` the loop parks until every bucket refills.
    /// Returns true when the exec must not run.
    pub(super) fn rate_gate(&mut self) -> Result<bool, EngineError> {
        let buckets = self.cfg.limits.buckets();
        if buckets.is_empty() {
            return Ok(false);
        }
        let it = self.current_iteration();
        let mode = self.cfg.limits.on_rate_limit.clone();
        let mut parked: Option<Instant> = None;
        loop {
            let mut empty = None;
            for (kind, per_hour) in &buckets {
                let level = self.store.bucket_draw(kind, *per_hour, 0.0, unix_ms())?;
                if level <= 0.0 {
                    empty = Some((*kind, *per_hour, level));
                    break;
                }
            }
            let Some((kind, per_hour, level)) = empty else {
                if let Some(since) = parked {
                    self.record(Event::Unheld(Unheld {
                        iteration: it,
                        released: Vec::new(),
                        parked_ms: u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX),
                    }))?;
                }
                return Ok(false);
            };
            let refill_ms = crate::detect::rate::wait_ms(level, per_hour);
            if parked.is_none() {
                self.record(Event::RateLimited(crate::receipt::events::RateLimited {
                    iteration: it,
                    kind: kind.to_string(),
                    per_hour,
                    level,
                    refill_ms,
                    mode: mode.clone(),
                }))?;
                if mode == "halt" {
                    return Ok(true);
                }
                self.say(&format!(
                    "the workspace's {kind} rate limit is used up; parked about {}s until it refills",
                    refill_ms.div_ceil(1000)
                ));
                parked = Some(Instant::now());
            }
            if self.signals.get().is_some() {
                return Ok(true);
            }
            self.parked_heartbeat(it);
            std::thread::sleep(Duration::from_millis(refill_ms.clamp(100, 1000)));
        }
    }

    /// After an exec: draws its spend from the workspace's buckets (best effort: a
    /// ledger error is reported, and the next checkpoint reads the bucket again).
    pub(super) fn draw_rate(&self) {
        let buckets = self.cfg.limits.buckets();
        if buckets.is_empty() {
            return;
        }
        let Some(usage) = self
            .traj
            .last()
            .and_then(|i| i.exec.as_ref())
            .and_then(|e| e.usage.clone())
        else {
            return;
        };
        for (kind, per_hour) in buckets {
            #[allow(clippy::cast_precision_loss)] // token counts far below 2^52
            let amount = match kind {
                "usd" => usage.cost_usd.unwrap_or(0.0),
                _ => usage.total_tokens() as f64,
            };
            if amount > 0.0 {
                if let Err(e) = self.store.bucket_draw(kind, per_hour, amount, unix_ms()) {
                    self.say(&format!("could not draw from the {kind} rate bucket: {e}"));
                }
            }
        }
    }
}
