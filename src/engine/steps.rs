//! The two steps of an iteration: the exec (the agent) and the check, run supervised.

use super::recorder::{unix_ms, write_atomic};
use super::{EngineError, Heartbeat, Loop};
use crate::check::parse::{self, CheckInput, FormatChoice};
use crate::proc::{self, StepResult, StepSpec, StopCause};
use crate::receipt::events::{CheckFinished, ExecFinished};
use crate::receipt::Event;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

impl Loop<'_> {
    /// A step in the workdir with the run's grace and capture limits; callers set the
    /// environment, timeouts and sink.
    pub(super) fn step_spec<'s>(&'s self, command: &'s str, prefix: PathBuf) -> StepSpec<'s> {
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

    pub(super) fn run_supervised(
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
        let reporter = &self.reporter;
        let mut poll = |p: &proc::Progress| -> Option<StopCause> {
            reporter.tick(iteration, &phase_s, p.elapsed, p.output_bytes);
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

    pub(super) fn exec(&mut self) -> Result<(), EngineError> {
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

    pub(super) fn check(&mut self, attempt: u32) -> Result<(), EngineError> {
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
        self.keep_check_output(it, attempt, &spools);
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
            fingerprint: None,
        };
        self.record(Event::CheckFinished(Box::new(ev)))
    }

    /// The record a watchdog left before ending this step's group, if it did (consumed).
    pub(super) fn take_watchdog(&self, step: &StepResult) -> Option<serde_json::Value> {
        let path = self.ws.watchdog_path(&self.run_id);
        let record = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
        let _ = std::fs::remove_file(&path);
        record.filter(|_| step.signal.is_some() || step.exit_code != Some(0))
    }

    /// Removes the configured report files before a check run (a stale report from an
    /// earlier iteration must never speak for this one). Returns the patterns.
    pub(super) fn clear_reports(&self) -> Vec<String> {
        for p in self.find_reports() {
            let _ = std::fs::remove_file(p);
        }
        self.cfg.reports.clone()
    }

    pub(super) fn find_reports(&self) -> Vec<PathBuf> {
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
}

pub(super) fn noop_step() -> StepResult {
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
