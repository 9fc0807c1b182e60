//! The two steps of an iteration: the exec (the agent) and the check, run supervised.

use super::recorder::{unix_ms, write_atomic};
use super::{EngineError, Heartbeat, Loop};
use crate::check::parse::{self, CheckInput, FormatChoice};
use crate::proc::{self, StepResult, StepSpec, StopCause};
use crate::receipt::events::{CheckFinished, CleanRoomRecord, ExecFinished};
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
            spool_prefix: Some(self.ws.run_dir(&self.run_id).join("step")),
            workdir: &self.ws.workdir,
            stdout_sink: None,
            sandbox: None,
        }
    }

    /// Runs one step under the supervisor with this run's poll callback: progress
    /// ticks, the heartbeat, signals, the live budget and holds.
    ///
    /// The heartbeat file (`Heartbeat`) is written only once a step has run for
    /// [`HEARTBEAT_AFTER`], then every [`HEARTBEAT_EVERY`], and removed when that step
    /// ends: a tight loop of short steps writes none. What it serves — `watch` and the
    /// next run's cleanup of a dead run's process groups — concerns steps that live
    /// long enough to be watched or left behind; a run killed within the first
    /// [`HEARTBEAT_AFTER`] of a step leaves that step's group to the kernel's usual
    /// fate (its escapees were re-parented to the dead loopexec's reaper).
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
        let mut last_hb: Option<Instant> = None;
        let cfg = self.cfg;
        let traj = &self.traj;
        let reporter = &self.reporter;
        let this = self;
        let mut poll = |p: &proc::Progress| -> Option<StopCause> {
            reporter.tick(iteration, &phase_s, p.elapsed, p.output_bytes);
            let due = match last_hb {
                None => p.elapsed >= HEARTBEAT_AFTER,
                Some(t) => t.elapsed() >= HEARTBEAT_EVERY,
            };
            if due {
                last_hb = Some(Instant::now());
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
            this.poll_holds()
        };
        let r = proc::run_step(spec, &mut poll).map_err(|source| EngineError::Capture {
            path: prefix.clone(),
            source,
        });
        if last_hb.is_some() {
            // The step it described is over (a heartbeat that outlives its step would
            // read as a stale one to `watch`).
            if let Err(e) = std::fs::remove_file(&hb_path) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    eprintln!(
                        "loopexec: warning: the heartbeat file {} was not removed: {e}",
                        hb_path.display()
                    );
                }
            }
        }
        // The excerpts were redacted in memory before they were written (proc::capture).
        r
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
                usage: None,
                guards: Some(obs.measures),
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
        remove_if_present(&usage_file)?;
        let env_set = vec![
            (
                "LOOPEXEC_USAGE_FILE".to_string(),
                usage_file.display().to_string(),
            ),
            ("LOOPEXEC_RUN_ID".to_string(), self.run_id.clone()),
            ("LOOPEXEC_ITERATION".to_string(), it.to_string()),
        ]
        .into_iter()
        .chain(self.control_env())
        .collect::<Vec<_>>();
        let env_set = [env_set, self.task_env()].concat();
        let meter = crate::observe::usage::LiveMeter::new(
            &self.cfg.pricing,
            &self.meter_state,
            Some(usage_file.clone()),
        );
        let sink = self.reporter.agent_sink(meter.sink());
        let stall = self.cfg.liveness.stall_timeout.map(|d| d.0);
        let outside: Vec<String> = proc::sandbox::OUTSIDE_SERVERS
            .iter()
            .map(|v| (*v).to_string())
            .collect();
        let mut spec = self.step_spec(&cmd, prefix);
        spec.env_set = &env_set;
        spec.env_remove = &outside;
        spec.timeout = self.cfg.exec_timeout.map(|d| d.0);
        spec.stall_timeout = stall;
        spec.stdout_sink = Some(sink);
        if let Some(plan) = &self.sandbox {
            spec.sandbox = Some(plan.prepare().map_err(|e| {
                EngineError::Tree(format!("the exec's sandbox could not be built: {e}"))
            })?);
        }
        let (step, spools) = self.run_supervised(spec, "exec", Some(&meter))?;
        spools.remove();
        let usage = meter.finish(&mut self.meter_state);
        let watchdog = self.take_watchdog(&step);
        let mut obs = self.tree.observe(it);
        if let Err(what) = self.receipt.untouched() {
            // The step wrote into loopexec's own record: a blocked path, observed.
            let rel = self
                .receipt
                .path()
                .strip_prefix(&self.ws.workdir)
                .unwrap_or(self.receipt.path());
            obs.measures
                .state_tampered
                .push(format!("{} ({what})", rel.display()));
        }
        // The run's ledger row was written before the first step: a step that left
        // none deleted it (the ledger lies in the workdir the exec may write).
        if self.store.run(&self.run_id).is_ok_and(|r| r.is_none()) {
            obs.measures.state_tampered.push(format!(
                "{} (the run's row was deleted)",
                self.ws
                    .ledger_path()
                    .strip_prefix(&self.ws.workdir)
                    .unwrap_or(&self.ws.ledger_path())
                    .display()
            ));
        }
        let ev = ExecFinished {
            iteration: it,
            step,
            tree: obs.tree,
            snapshot: obs.snapshot,
            usage: Some(usage),
            guards: Some(obs.measures),
            watchdog,
        };
        self.record(Event::ExecFinished(Box::new(ev)))?;
        if let Some(w) = crate::detect::spend::unmetered_warning(&self.traj, self.cfg) {
            eprintln!("loopexec: warning: {w}");
        }
        Ok(())
    }

    /// Runs the check once: in the clean room (the main run, `attempt` 0, and its
    /// confirmations), or with `in_checkout` in the working tree itself, the checkout
    /// confirmation of a green (SPEC §3.9), judged as a check in place is.
    pub(super) fn check(&mut self, attempt: u32, in_checkout: bool) -> Result<(), EngineError> {
        let it = self.current_iteration();
        let Some(cmd) = self.cfg.check.clone() else {
            return Err(EngineError::NotResumable(
                self.run_id.clone(),
                "no check configured".into(),
            ));
        };
        self.say(
            if in_checkout {
                "confirming green in the working tree".to_string()
            } else if attempt == 0 {
                "check".to_string()
            } else {
                format!(
                    "confirming green ({attempt}/{})",
                    crate::decide::confirmations(self.cfg)
                )
            }
            .as_str(),
        );
        let tree_before = self.tree.tree_before_check();
        // The clean room: the check runs on the snapshot, never in the agent's tree.
        let mut room_record = None;
        let mut dependencies_changed = Vec::new();
        let mut checkout_env = None;
        let mut in_checkout_record = None;
        if let Some(room) = self.room.as_ref().filter(|_| in_checkout) {
            room.checkout_dirs()?;
            let base_env: Vec<(String, String)> = std::env::vars().collect();
            checkout_env = Some(room.checkout_env(&base_env));
            in_checkout_record = Some(crate::receipt::events::InCheckout {
                workdir: self.ws.workdir.display().to_string(),
                room: room.root().display().to_string(),
            });
        }
        if let Some(room) = self.room.as_mut().filter(|_| !in_checkout) {
            // A confirmation runs cold: nothing an earlier check left in the room's
            // caches may help a green converge (CleanRoom::clear_leftovers).
            if attempt > 0 {
                room.clear_leftovers()?;
            }
            let restore = self.cfg.oracle.on_edit == crate::config::OnOracleEdit::Restore;
            let (judged, restored) = self.tree.judged_tree(restore).map_err(|e| {
                EngineError::Tree(format!("the tree to judge could not be built: {e}"))
            })?;
            let (judged, left_out) = crate::observe::oracle_scope::judged_without_new_tests(
                &self.tree,
                judged,
                self.cfg.oracle.new_tests,
            )
            .map_err(EngineError::Tree)?;
            let store = self
                .tree
                .store()
                .ok_or_else(|| EngineError::Tree("the snapshot store is not available".into()))?;
            let frozen_deps =
                self.cfg.clean_room.dependencies == crate::config::DependencyPolicy::Frozen;
            let unlinked = room.unlinked_dependencies(self.tree.dependency_dirs());
            if !frozen_deps {
                room.adopt_dependencies(&unlinked);
            }
            let stats = room.sync(store, &judged)?;
            if frozen_deps {
                dependencies_changed = room.dependencies_changed();
                dependencies_changed.extend(unlinked.iter().map(|d| {
                    format!("{d}/ (a dependency directory made since t0: the clean room does not have it, the checkout does)")
                }));
            } else {
                room.rebase_dependencies();
            }
            room_record = Some(CleanRoomRecord {
                tree: judged,
                after: None,
                restored,
                synced_written: stats.written,
                synced_removed: stats.removed,
                left_out,
                unfrozen_tests: Vec::new(),
                touched: std::collections::BTreeMap::new(),
                watch_error: None,
            });
        }
        let check_dir = self
            .room
            .as_ref()
            .filter(|_| !in_checkout)
            .map_or_else(|| self.ws.workdir.clone(), |r| r.root().to_path_buf());
        // The files the agent added since t0 that the runner must not collect: in place
        // there is no room to leave the new test files out of, so pytest and unittest
        // are told to skip them (`deselected`), and in either place a new module or text
        // file pytest would collect under `--doctest-modules`/`--doctest-glob` (SPEC
        // §3.13). Not for the checkout confirmation, which runs the new tests on purpose.
        let (deselected, uncollected) = if it > 0 && !in_checkout {
            self.new_files_to_skip()
        } else {
            (Vec::new(), Vec::new())
        };
        let reports = self.clear_reports(&check_dir)?;
        let suffix = if in_checkout {
            "-checkout".to_string()
        } else if attempt == 0 {
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
        let base_env: Vec<(String, String)> = std::env::vars().collect();
        let (mut env_set, mut env_remove) = match checkout_env {
            Some(e) => e,
            None => self
                .room
                .as_ref()
                .map(|r| r.env(&base_env))
                .unwrap_or_default(),
        };
        // Python bytecode goes to a directory that is empty when the check starts
        // (see `pycache`): bytecode planted for it, or left by an earlier check, is
        // never read.
        // the room's own directory (in the state directory) when there is a room
        let private = self
            .room
            .as_ref()
            .map_or_else(std::env::temp_dir, |r| r.private_dir());
        let pycache = self
            .pycache
            .for_check(&private)
            .map_err(|source| EngineError::Capture {
                path: std::env::temp_dir(),
                source,
            })?;
        env_set.push(("PYTHONPYCACHEPREFIX".into(), pycache.display().to_string()));
        // pytest checks carry loopexec's witness plugin (check::witness).
        let witness = if crate::check::witness::wanted(&cmd) {
            let w = crate::check::witness::Witness::prepare(&private).map_err(|source| {
                EngineError::Capture {
                    path: std::env::temp_dir(),
                    source,
                }
            })?;
            env_set.extend(w.env(std::env::var("PYTHONPATH").ok().as_deref()));
            let real = std::fs::canonicalize(&check_dir).unwrap_or_else(|_| check_dir.clone());
            let absolute =
                |v: &[String]| -> Vec<PathBuf> { v.iter().map(|f| real.join(f)).collect() };
            let skip = w
                .skip(Some(&real), &absolute(&deselected), &absolute(&uncollected))
                .map_err(|source| EngineError::Capture {
                    path: std::env::temp_dir(),
                    source,
                })?;
            env_set.extend(skip);
            // In the clean room, imports the working tree would provide (an editable
            // install) are moved to the room (`witness/sitecustomize.py`); the
            // dependency directories the room links to (a project's `.venv`) are read
            // from the working tree on purpose, and are named after the two roots.
            if let Some(room) = self.room.as_ref().filter(|_| !in_checkout) {
                let real = |p: &std::path::Path| {
                    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
                };
                let mut confine = vec![
                    real(&self.ws.workdir).display().to_string(),
                    real(room.root()).display().to_string(),
                ];
                confine.extend(
                    room.linked_dependencies()
                        .iter()
                        .map(|d| real(d).display().to_string()),
                );
                env_set.push(("LOOPEXEC_CONFINE".into(), confine.join("\n")));
            }
            Some(w)
        } else {
            None
        };
        env_remove.extend(self.env_stripped.iter().cloned());
        let mut spec = self.step_spec(&wrapped, prefix);
        spec.cwd = &check_dir;
        spec.env_remove = &env_remove;
        spec.env_set = &env_set;
        spec.timeout = timeout;
        let plan = if in_checkout {
            &self.checkout_sandbox
        } else {
            &self.check_sandbox
        };
        if let Some(plan) = plan {
            spec.sandbox = Some(plan.prepare().map_err(|e| {
                EngineError::Tree(format!("the check's sandbox could not be built: {e}"))
            })?);
        }
        let watch = crate::observe::watch::for_check(
            self.room
                .as_ref()
                .filter(|_| !in_checkout)
                .map(|r| r.root()),
            self.tree.store(),
            room_record.as_ref().map(|r| r.tree.as_str()),
        );
        let (step, spools) = self.run_supervised(spec, "check", None)?;
        let watched = watch.map(crate::observe::watch::RoomWatch::finish);
        // A short stream is still in memory: the parsers and the kept output read it
        // there (`Spools::source`), no spool file is written for it.
        // A check that failed because the disk filled up says nothing about the code:
        // name the full disk instead of recording a red (or flaky) check.
        for d in [self.ws.run_dir(&self.run_id), check_dir.clone()] {
            if let Some(free) = free_bytes(&d) {
                if free < DISK_FULL_BELOW {
                    return Err(EngineError::Tree(format!(
                        "the disk is full: the one holding {} has {free} bytes free, so the check's result cannot be judged; free space and resume the run",
                        d.display()
                    )));
                }
            }
        }
        let found: Vec<PathBuf> = self.find_reports(&check_dir);
        let choice = if self.cfg.test_format == "auto" {
            FormatChoice::Auto
        } else {
            parse::format_from_name(&self.cfg.test_format)
                .map_or(FormatChoice::Auto, FormatChoice::Fixed)
        };
        let exit = parse::exit_for_parser(step.exit_code, step.signal, self.cfg.success_exit_code);
        // The check command is part of the evidence: it says which targets a run had
        // to reach (cargo's fail-fast stop across targets leaves some never run).
        let mut parsed = parse::parse_command(
            &CheckInput {
                stdout: Some(spools.source(crate::proc::Stream::Stdout)),
                stderr: Some(spools.source(crate::proc::Stream::Stderr)),
                exit_code: exit,
                reports: &found,
            },
            choice,
            Some(&cmd),
        );
        let missing: Vec<String> = reports
            .iter()
            .filter(|r| {
                if r.contains(['*', '?', '[']) {
                    found.is_empty()
                } else {
                    !found.iter().any(|f| f.ends_with(r.as_str()))
                }
            })
            .cloned()
            .collect();
        crate::check::postparse::settle(
            &mut parsed,
            &crate::check::postparse::StepFacts {
                exit_code: step.exit_code,
                signal: step.signal,
                exited_ok: step.exited_with(self.cfg.success_exit_code),
                output_truncated: step.stdout.spool_truncated || step.stderr.spool_truncated,
                missing_reports: &missing,
            },
        );
        let pytest_witness = witness
            .as_ref()
            .map(|w| crate::check::witness::read(w.path()));
        if let Some(seen) = pytest_witness.clone() {
            let t0_wrote = self.traj.baseline_check().and_then(|b| b.pytest_witness);
            let expected = crate::check::witness::expected(&cmd, t0_wrote);
            if let Some(w) = &seen {
                let foreign = crate::check::witness::foreign_test_files(
                    w,
                    &check_dir,
                    self.tree.entries_now(),
                );
                if !foreign.is_empty() {
                    parsed.complete = false;
                    parsed.diagnostics.push(format!(
                        "pytest ran tests from files that are not in the tree it judges ({}): the check was moved away from the tree, so its outcomes say nothing about it",
                        foreign.join(", ")
                    ));
                }
            }
            crate::check::witness::judge_deselection(
                &mut parsed,
                seen.as_ref(),
                &deselected,
                deselected.len() + uncollected.len(),
            );
            crate::check::witness::judge_expected(&mut parsed, seen, expected);
        }
        let unittest_witness = witness
            .as_ref()
            .map(|w| crate::check::witness::unittest::read(w.unittest_path()));
        let early = witness
            .as_ref()
            .map(|w| crate::check::witness::unittest::early_new(w.unittest_path()))
            .unwrap_or_default();
        if !early.is_empty() {
            parsed.complete = false;
            parsed.diagnostics.push(format!(
                "code in a file the agent added since t0 ran before any file of the tree did ({}): the interpreter or the runner imported it on its own (a name it tries at start-up), so it is runner configuration, not code under test, and the outcomes say nothing",
                early.join(", ")
            ));
        }
        if let Some(seen) = &unittest_witness {
            let t0_wrote = self.traj.baseline_check().and_then(|b| b.unittest_witness);
            crate::check::witness::unittest::judge(
                &mut parsed,
                seen.as_deref(),
                t0_wrote == Some(true),
            );
            crate::check::witness::unittest::judge_deselection(
                &mut parsed,
                seen.as_deref(),
                &deselected,
                deselected.len() + uncollected.len(),
            );
        }
        if let (Some(rec), Some(base)) = (room_record.as_mut(), self.traj.baseline_check()) {
            if it > 0 {
                rec.unfrozen_tests = crate::observe::oracle_scope::unfrozen_in(
                    &self.tree,
                    &parsed,
                    &base.parsed,
                    self.cfg.oracle.new_tests,
                );
            }
        }
        let kept = self.keep_check_output(it, attempt, &spools);
        spools.remove();
        let watchdog = self.take_watchdog(&step);
        // A red exit cannot converge: the tree after it may be the exec's, as a quiet
        // watch observed it (TreeObserver::after_check).
        // The checkout confirmation ran in the tree: always walked, as a check in place
        // that may converge is.
        let red = !step.exited_with(self.cfg.success_exit_code) && !in_checkout;
        let tree_after = self.tree.after_check(it, attempt, red);
        let mut changed_during_check = Vec::new();
        let mut writes = crate::observe::tree::CheckWrites::default();
        if let (Some(room), Some(rec)) = (
            self.room.as_mut().filter(|_| !in_checkout),
            room_record.as_mut(),
        ) {
            let store = self
                .tree
                .store()
                .ok_or_else(|| EngineError::Tree("the snapshot store is not available".into()))?;
            crate::observe::watch::record(watched, rec);
            // Always walked: inotify does not see a write through a shared memory
            // mapping, so a quiet watch cannot vouch for the room after a check (the
            // code under test ran there); the walk sees the write's new mtime.
            let (after, restat) = room.scan_after_check(store)?;
            // A judged file whose stat moved was written during the check even if its
            // bytes are back (a rewrite through a memory mapping or a hard link made
            // outside the watched directories raises no inotify event).
            let judged = store.entries_shared(&rec.tree).map_err(|e| {
                EngineError::Tree(format!("the judged tree could not be listed: {e}"))
            })?;
            for p in restat.into_iter().filter(|p| judged.contains_key(p)) {
                rec.touched
                    .entry(p)
                    .or_insert_with(|| "rewritten (its inode's times moved)".into());
            }
            if after != rec.tree {
                writes = self.tree.check_writes(&rec.tree, &after);
            }
            rec.after = Some(after);
            // What the check itself wrote into the linked dependency directories: judged
            // here, as the check's writes (hermeticity, unless `check_may_write` allows
            // them), and then the state the next check's comparison starts from, so an
            // allowed write of the check is never taken for the agent's.
            let deps_after = room.dependency_dirs_changed();
            room.rebase_dependencies();
            writes.changed.extend(
                deps_after
                    .into_iter()
                    .filter(|p| !dependencies_changed.contains(p) && !p.starts_with('…')),
            );
            // The agent's tree must not move while the check runs: only a process
            // outside the check can have changed it.
            if let (Some(a), Some(b)) = (&tree_before, &tree_after) {
                if a != b {
                    changed_during_check = self
                        .tree
                        .check_writes(a, b)
                        .changed
                        .into_iter()
                        .chain(self.tree.check_writes(a, b).created)
                        .collect();
                    changed_during_check.sort();
                }
            }
        } else if let (Some(a), Some(b)) = (&tree_before, &tree_after) {
            if a != b {
                writes = self.tree.check_writes(a, b);
                // In place, a runner configuration the check created stays for every
                // later check and run: it is a write to the tree it judged (a review's
                // green check created a pytest.ini deselecting a test, and the next
                // task's run was green on it).
                let planted: Vec<String> = writes
                    .created
                    .iter()
                    .filter(|p| self.tree.runner_configuration(p))
                    .cloned()
                    .collect();
                writes.changed.extend(planted);
            }
        }
        // Code the check created in the tree it judged, read by the tamper rules against
        // what the baseline check created (t0's own check is the reference: none at it)
        let judged_after = match &room_record {
            Some(rec) => rec.after.clone(),
            None => tree_after.clone(),
        };
        let check_created_code = match judged_after.filter(|_| it > 0 && !writes.created.is_empty())
        {
            Some(after) => {
                let baseline = self
                    .traj
                    .baseline_check()
                    .and_then(|b| match &b.clean_room {
                        Some(r) => r.after.clone(),
                        None => b.tree_after.clone(),
                    });
                self.tree
                    .created_code(&after, baseline.as_deref(), &writes.created)
                    .map_err(|e| {
                        EngineError::Tree(format!(
                            "the files the check created could not be read: {e}"
                        ))
                    })?
            }
            None => Vec::new(),
        };
        // The receipt is in the workdir, which a check in place and the checkout
        // confirmation run in: a check that swapped it for a forged one (a hash chain
        // of its own, for `run --resume` to take its policy from) wrote into
        // loopexec's own record (a seventeenth review: it was asked after execs only).
        if let Err(what) = self.receipt.untouched() {
            writes.changed.push(format!(
                "{} (loopexec's receipt: {what})",
                self.receipt.path().display()
            ));
        }
        // What the check changed in cargo's registry: sources cargo never reads twice,
        // so an edit made by code under test (a build script) would be compiled into the
        // next check unseen (crate::observe::registry).
        writes.changed.extend(
            self.tree
                .registry_changed(&check_dir)
                .into_iter()
                .map(|c| format!("cargo registry {c}")),
        );
        // The checkout confirmation leaves the working tree as it found it: what it
        // created there (a test's output file) is removed, so that the next run's t0
        // is the tree this one judged and its checks do not find the file to write
        // over (a file it wrote over is judged as a check in place's write is).
        if in_checkout && !writes.created.is_empty() {
            remove_created(&self.ws.workdir, &writes.created)?;
            self.tree
                .refresh(&format!("{it}-checkout-restored"))
                .map_err(|e| {
                    EngineError::Tree(format!(
                        "snapshot after the checkout confirmation's files were removed failed: {e}"
                    ))
                })?;
        }
        let ev = CheckFinished {
            iteration: it,
            attempt,
            step,
            parsed,
            tree_before,
            tree_after,
            check_wrote: writes.changed,
            check_created: writes.created,
            check_created_code,
            kept,
            reports: found.iter().map(|p| p.display().to_string()).collect(),
            watchdog,
            clean_room: room_record,
            changed_during_check,
            dependencies_changed,
            fingerprint: None,
            pytest_witness: pytest_witness.map(|w| w.is_some()),
            unittest_witness: unittest_witness.map(|w| w.is_some()),
            in_checkout: in_checkout_record,
            deselected,
        };
        self.record(Event::CheckFinished(Box::new(ev)))
    }

    /// The files the agent added since t0 that the check's runner must not collect
    /// (relative, sorted), under `[oracle] new_tests = "exclude"`:
    /// * test files ([`crate::observe::oracle_scope::added_tests`]), for a check in
    ///   place only (the clean room leaves them out of its tree): a new
    ///   `tests/test_0.py` collected before the frozen tests could patch the code under
    ///   test in a spelling no tamper rule reads (a review's four exit-10 runs);
    /// * every other new file, in either place: pytest imports a new module it collects
    ///   under `--doctest-modules`, and runs a new text file under `--doctest-glob`,
    ///   before the frozen tests (a later review's exit 10 in the clean room too). Code
    ///   may still import such a module.
    ///
    /// Not skipped: what the baseline check created itself and still holds what that
    /// check left (a generated test file the frozen check writes before running
    /// pytest; a review's honest run stayed red when it was skipped). Every new
    /// directory is skipped too, and a bare new `__init__.py` is no test file
    /// ([`crate::observe::oracle_scope::new_files_to_skip`] says which and why).
    ///
    /// Empty under `run`, or without t0's tree.
    fn new_files_to_skip(&self) -> (Vec<String>, Vec<String>) {
        if self.cfg.oracle.new_tests != crate::config::NewTestPolicy::Exclude {
            return (Vec::new(), Vec::new());
        }
        let Some(t0) = self.tree.t0_entries() else {
            return (Vec::new(), Vec::new());
        };
        let now = self.tree.entries_now();
        let store = self.tree.store();
        // what the baseline check created, as long as it still holds what that check
        // left there (the tree after it): a file the agent rewrote since is its own
        let left = self.traj.baseline_check().and_then(|b| {
            let tree = b.tree_after.as_deref()?;
            store?.entries(tree).ok().map(|e| (b, e))
        });
        let baseline: Vec<&str> = left
            .as_ref()
            .map(|(b, after)| {
                b.check_created
                    .iter()
                    .filter(|p| {
                        matches!((now.get(*p), after.get(*p)), (Some(n), Some(a)) if n.oid == a.oid)
                    })
                    .map(String::as_str)
                    .collect()
            })
            .unwrap_or_default();
        let text = |p: &str| -> Option<String> {
            let e = now.get(p)?;
            let (_, bytes) = store?
                .odb()
                .read(&crate::observe::store::odb::from_hex(&e.oid)?)?;
            String::from_utf8(bytes).ok()
        };
        let (tests, others) = crate::observe::oracle_scope::new_files_to_skip(
            t0,
            now,
            self.tree.rules(),
            &baseline,
            &text,
        );
        if self.room.is_some() {
            (Vec::new(), others)
        } else {
            (tests, others)
        }
    }

    /// The record a watchdog left before ending this step's group, if it did (consumed).
    pub(super) fn take_watchdog(&self, step: &StepResult) -> Option<serde_json::Value> {
        let path = self.ws.watchdog_path(&self.run_id);
        let record = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
        if let Err(e) = std::fs::remove_file(&path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                eprintln!(
                    "loopexec: warning: the watchdog record {} was not removed: {e}",
                    path.display()
                );
            }
        }
        record.filter(|_| step.signal.is_some() || step.exit_code != Some(0))
    }

    /// Removes the configured report files before a check run (a stale report from an
    /// earlier iteration must never speak for this one). Returns the patterns.
    ///
    /// # Errors
    /// A report that cannot be removed (a must-succeed write: a stale report would be
    /// read as this run's).
    pub(super) fn clear_reports(&self, dir: &Path) -> Result<Vec<String>, EngineError> {
        for p in self.find_reports(dir) {
            remove_if_present(&p)?;
        }
        Ok(self.cfg.reports.clone())
    }

    pub(super) fn find_reports(&self, dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for pat in &self.cfg.reports {
            let full = if Path::new(pat).is_absolute() {
                PathBuf::from(pat)
            } else {
                dir.join(pat)
            };
            if pat.contains(['*', '?', '[']) {
                out.extend(crate::observe::reports::glob_files(dir, pat));
            } else if full.is_file() {
                out.push(full);
            }
        }
        out
    }
}

/// A step writes its first heartbeat after running this long.
const HEARTBEAT_AFTER: Duration = Duration::from_millis(250);

/// Time between heartbeats of a long step.
const HEARTBEAT_EVERY: Duration = Duration::from_millis(500);

/// Below this many free bytes the disk counts as full (ENOSPC is near or has happened).
const DISK_FULL_BELOW: u64 = 1 << 20;

/// Bytes available to an unprivileged writer on the filesystem holding `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: statvfs writes into the struct we own; the path is NUL-terminated.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    (rc == 0).then_some(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Removes `path`; a file already gone is fine, any other failure is an error.
/// Removes the files `created` (paths relative to `root`, as a tree diff names them)
/// and then each of their parent directories below `root` that is left empty. A path
/// that is absolute or climbs out of `root` is not touched.
fn remove_created(root: &Path, created: &[String]) -> Result<(), EngineError> {
    use std::path::Component;
    for rel in created {
        let p = Path::new(rel);
        if !p.components().all(|c| matches!(c, Component::Normal(_))) {
            continue;
        }
        let full = root.join(p);
        if std::fs::symlink_metadata(&full).is_ok_and(|m| !m.is_dir()) {
            remove_if_present(&full)?;
        }
        let mut dir = full.parent();
        while let Some(d) = dir.filter(|d| *d != root && d.starts_with(root)) {
            // a directory something else still fills stays
            if std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
    Ok(())
}

fn remove_if_present(path: &Path) -> Result<(), EngineError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(EngineError::Capture {
            path: path.to_path_buf(),
            source,
        }),
    }
}

pub(super) fn noop_step() -> StepResult {
    StepResult::finished(
        "",
        Some(0),
        proc::CaptureSummary::empty(),
        proc::CaptureSummary::empty(),
    )
}
