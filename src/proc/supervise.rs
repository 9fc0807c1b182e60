//! Spawning and supervising one step (`sh -c CMD`) of the loop.
//!
//! Invariants:
//! * the child is the leader of its own process group (`setpgid(0, 0)` at spawn),
//!   with stdin from `/dev/null`, so a stop can reach everything it started;
//! * stdout and stderr are drained on two threads into bounded [`Capture`]s, so a
//!   child that prints gigabytes never grows loopexec's memory;
//! * every way the step can end — it exits, it times out, it stops printing for the
//!   stall timeout, the caller asks it to stop (a signal to loopexec, a budget crossed
//!   mid-stream, a watchdog) — ends the *whole group*: SIGTERM, a grace period,
//!   SIGKILL;
//! * when the leader exits and members of its group remain (`sleep 300 &`), they are
//!   ended the same way and the leak is recorded;
//! * loopexec never blocks on a pipe held open by a grandchild that escaped the group:
//!   after the group is gone, the drain threads get a short deadline and are then
//!   abandoned (recorded as `pipe_held_open`).

use super::capture::{Capture, CaptureLimits, CaptureSummary, LineSink, Stream};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// Everything needed to run one step.
pub struct StepSpec<'a> {
    /// Shell command, run as `sh -c CMD`.
    pub command: &'a str,
    /// Working directory of the child.
    pub cwd: &'a Path,
    /// Environment variables to remove from the child's environment.
    pub env_remove: &'a [String],
    /// Environment variables to set.
    pub env_set: &'a [(String, String)],
    /// Wall-clock limit; `None` for none.
    pub timeout: Option<Duration>,
    /// Stop the step when it prints nothing (on either stream) for this long.
    pub stall_timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL when ending the group.
    pub grace: Duration,
    /// Capture limits for each stream.
    pub limits: CaptureLimits,
    /// Where the spool and excerpt files go: `<prefix>.stdout`, `<prefix>.stderr`, …
    pub capture_prefix: PathBuf,
    /// The workdir, to make recorded capture paths relative.
    pub workdir: &'a Path,
    /// Receives stdout lines as they arrive (the agent usage meter).
    pub stdout_sink: Option<Box<dyn LineSink>>,
    /// The filesystem sandbox the child runs under, if any.
    pub sandbox: Option<super::sandbox::Prepared>,
}

/// Why the caller asked a running step to stop (returned by the poll callback).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StopCause {
    /// loopexec received SIGINT or SIGTERM.
    Signal { signal: i32 },
    /// A run-total budget was crossed while the step ran.
    Budget { detail: String },
    /// A person's stop hold covers the run (the hold ids; SPEC §Holds).
    Hold { holds: Vec<String> },
}

/// What the poll callback sees on each tick (every ~50 ms).
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub pgid: i32,
    pub elapsed: Duration,
    /// Bytes read so far on stdout + stderr.
    pub output_bytes: u64,
    /// Time since the last byte of output (or since the start).
    pub quiet_for: Duration,
}

/// How a step ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepResult {
    pub command: String,
    /// Exit code when the leader exited normally.
    pub exit_code: Option<i32>,
    /// Signal that ended the leader, if any.
    pub signal: Option<i32>,
    /// The step could not be started at all (spawn error text).
    pub spawn_error: Option<String>,
    /// Wall-clock duration in milliseconds.
    pub duration_ms: u64,
    /// Ended by the step timeout.
    pub timed_out: bool,
    /// Ended by the stall timeout (no output for that long).
    pub stalled: bool,
    /// Ended on the caller's request.
    pub stopped: Option<StopCause>,
    /// Members of the group were still running after the leader exited and were ended.
    pub leaked_processes: bool,
    /// A drain thread did not finish after the group was gone (a process outside the
    /// group held the pipe open); its capture is what arrived until then.
    pub pipe_held_open: bool,
    /// Processes that had left the step's process group (new session, double fork)
    /// and were still running after it: ended, and listed as `pid N: command line`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escaped: Vec<String>,
    pub stdout: CaptureSummary,
    pub stderr: CaptureSummary,
}

impl StepResult {
    /// A step that ended on its own with `exit_code` after `duration_ms`, with the given
    /// captures; every stop flag clear, nothing leaked or escaped.
    #[must_use]
    pub fn finished(
        command: &str,
        exit_code: Option<i32>,
        stdout: CaptureSummary,
        stderr: CaptureSummary,
    ) -> StepResult {
        StepResult {
            command: command.to_string(),
            exit_code,
            signal: None,
            spawn_error: None,
            duration_ms: 0,
            timed_out: false,
            stalled: false,
            stopped: None,
            leaked_processes: false,
            pipe_held_open: false,
            escaped: Vec::new(),
            stdout,
            stderr,
        }
    }

    /// True when the leader exited on its own with `code`.
    #[must_use]
    pub fn exited_with(&self, code: i32) -> bool {
        self.exit_code == Some(code) && !self.timed_out && !self.stalled && self.stopped.is_none()
    }
    /// True when the shell could not run the command: spawn error, or `sh`'s 126 (not
    /// executable) / 127 (not found).
    #[must_use]
    pub fn cannot_start(&self) -> bool {
        self.spawn_error.is_some() || matches!(self.exit_code, Some(126 | 127))
    }
}

/// Paths of the spooled full streams, for the parser (removed by the caller after).
pub struct Spools {
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

fn empty_summary() -> CaptureSummary {
    CaptureSummary::empty()
}

fn with_ext(prefix: &Path, ext: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

/// Sends `sig` to process group `pgid`; returns false when no member is left.
fn killpg(pgid: i32, sig: i32) -> bool {
    // SAFETY: kill(2) with a negative pid addresses a process group; no memory is touched.
    unsafe { libc::kill(-pgid, sig) == 0 }
}

/// True while any process of group `pgid` exists (zombies included).
#[must_use]
pub fn group_alive(pgid: i32) -> bool {
    killpg(pgid, 0)
}

/// Ends group `pgid`: SIGTERM, up to `grace` for it to go, then SIGKILL.
/// Returns true when something was there to end.
pub fn end_group(pgid: i32, grace: Duration) -> bool {
    if !killpg(pgid, libc::SIGTERM) {
        return false;
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if !group_alive(pgid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    killpg(pgid, libc::SIGKILL);
    true
}

/// Runs one step to its end. `poll` is called about every 50 ms while the child runs;
/// returning `Some(cause)` ends the group and records the cause.
///
/// # Errors
/// Only when the capture files cannot be created (the step is then not started);
/// a command that cannot be spawned is a [`StepResult`] with `spawn_error`.
pub fn run_step(
    mut spec: StepSpec<'_>,
    poll: &mut dyn FnMut(&Progress) -> Option<StopCause>,
) -> std::io::Result<(StepResult, Spools)> {
    let spools = Spools {
        stdout: with_ext(&spec.capture_prefix, "stdout.spool"),
        stderr: with_ext(&spec.capture_prefix, "stderr.spool"),
    };
    let out_cap = Capture::new(
        Stream::Stdout,
        spec.limits,
        &spools.stdout,
        spec.stdout_sink.take(),
    )?;
    let err_cap = Capture::new(Stream::Stderr, spec.limits, &spools.stderr, None)?;

    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(spec.command)
        .current_dir(spec.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for k in spec.env_remove {
        cmd.env_remove(k);
    }
    for (k, v) in spec.env_set {
        cmd.env(k, v);
    }
    let token = super::escape::new_token();
    cmd.env(super::escape::TOKEN_VAR, &token);
    if let Some(sb) = spec.sandbox.take() {
        sb.apply_to(&mut cmd);
    }
    let start = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let ex_out = with_ext(&spec.capture_prefix, "stdout");
            let ex_err = with_ext(&spec.capture_prefix, "stderr");
            let (so, _) = out_cap.finish(&ex_out, spec.workdir);
            let (se, _) = err_cap.finish(&ex_err, spec.workdir);
            return Ok((
                StepResult {
                    spawn_error: Some(format!("cannot start `sh -c {}`: {e}", spec.command)),
                    ..StepResult::finished(spec.command, None, so, se)
                },
                spools,
            ));
        }
    };
    let pgid = i32::try_from(child.id()).unwrap_or(i32::MAX);
    let total = Arc::new(AtomicU64::new(0));
    let last_output_ms = Arc::new(AtomicU64::new(0));

    let (tx, rx) = mpsc::channel::<(Stream, Capture)>();
    let spawn_drain = |mut pipe: Box<dyn Read + Send>, mut cap: Capture, stream: Stream| {
        let tx = tx.clone();
        let total = total.clone();
        let last = last_output_ms.clone();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 << 10];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        total.fetch_add(n as u64, Ordering::Relaxed);
                        let ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
                        last.store(ms, Ordering::Relaxed);
                        cap.feed(&buf[..n]);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = tx.send((stream, cap));
        });
    };
    if let Some(p) = child.stdout.take() {
        spawn_drain(Box::new(p), out_cap, Stream::Stdout);
    }
    if let Some(p) = child.stderr.take() {
        spawn_drain(Box::new(p), err_cap, Stream::Stderr);
    }
    drop(tx);

    let mut timed_out = false;
    let mut stalled = false;
    let mut stopped = None;
    // Poll fast at first (most steps of a tight loop end within milliseconds), then
    // back off to 25 ms: the poll interval is loopexec's floor per step.
    let mut nap = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) => {}
            Err(_) => break None,
        }
        let elapsed = start.elapsed();
        let quiet_ms = u64::try_from(elapsed.as_millis())
            .unwrap_or(u64::MAX)
            .saturating_sub(last_output_ms.load(Ordering::Relaxed));
        let progress = Progress {
            pgid,
            elapsed,
            output_bytes: total.load(Ordering::Relaxed),
            quiet_for: Duration::from_millis(quiet_ms),
        };
        if spec.timeout.is_some_and(|t| elapsed >= t) {
            timed_out = true;
        } else if spec.stall_timeout.is_some_and(|t| progress.quiet_for >= t) {
            stalled = true;
        } else if let Some(cause) = poll(&progress) {
            stopped = Some(cause);
        }
        if timed_out || stalled || stopped.is_some() {
            end_group(pgid, spec.grace);
            break child.wait().ok();
        }
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(25));
    };
    // The leader is gone; anything left in its group is a leak (or the rest of a
    // group we were already ending).
    let leaked = group_alive(pgid) && !(timed_out || stalled || stopped.is_some());
    if group_alive(pgid) {
        end_group(pgid, spec.grace);
    }
    let escaped = super::escape::end_escapees(&token, &[]);
    // Drain threads end when every writer of the pipes is gone; a process that left
    // the group may still hold them, so wait only briefly.
    let mut out_done = None;
    let mut err_done = None;
    let deadline = Instant::now() + Duration::from_secs(2);
    while out_done.is_none() || err_done.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((Stream::Stdout, c)) => out_done = Some(c),
            Ok((Stream::Stderr, c)) => err_done = Some(c),
            Err(_) => break,
        }
    }
    let pipe_held_open = out_done.is_none() || err_done.is_none();
    let finish = |c: Option<Capture>, ext: &str| match c {
        Some(c) => {
            c.finish(&with_ext(&spec.capture_prefix, ext), spec.workdir)
                .0
        }
        None => empty_summary(),
    };
    let stdout = finish(out_done, "stdout");
    let stderr = finish(err_done, "stderr");
    let duration_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    let (exit_code, signal) = match status {
        Some(st) => (st.code(), st.signal()),
        None => (None, None),
    };
    Ok((
        StepResult {
            command: spec.command.to_string(),
            exit_code,
            signal,
            spawn_error: None,
            duration_ms,
            timed_out,
            stalled,
            stopped,
            leaked_processes: leaked,
            pipe_held_open,
            escaped,
            stdout,
            stderr,
        },
        spools,
    ))
}

/// True when some live process of group `pgid` has its working directory inside
/// `dir` — the check made before ending a group recorded by a run that is gone, so a
/// process-group id reused by an unrelated program is never signalled.
#[must_use]
pub fn group_works_in(pgid: i32, dir: &Path) -> bool {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return false;
    };
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|e| {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            return false;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        // Fields after the command name (which may hold spaces) start at ") ".
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            return false;
        };
        let mut f = rest.split_whitespace();
        let state = f.next();
        let pgrp = f.nth(1).and_then(|x| x.parse::<i32>().ok());
        pgrp == Some(pgid)
            && state != Some("Z")
            && std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c.starts_with(&dir))
    })
}

/// True when a process with this pid exists and is not a zombie.
#[must_use]
pub fn pid_alive(pid: u32) -> bool {
    let Ok(p) = i32::try_from(pid) else {
        return false;
    };
    // A zombie (exited, not yet reaped) is not alive: its state in /proc is `Z`.
    if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) {
        if let Some(state) = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next())
        {
            return state != 'Z' && state != 'X';
        }
    }
    // SAFETY: kill with signal 0 only checks for existence.
    let rc = unsafe { libc::kill(p, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
