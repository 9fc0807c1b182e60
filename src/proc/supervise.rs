//! Spawning and supervising one step (`sh -c CMD`) of the loop.
//!
//! Invariants:
//! * the child is the leader of its own process group (`setpgid(0, 0)` at spawn),
//!   with stdin from `/dev/null`, so a stop can reach everything it started;
//! * one thread waits for everything at once: a pidfd of the leader and both output
//!   pipes in one `poll(2)`, whose timeout is the nearest deadline (the step timeout,
//!   the stall timeout, the next tick of the caller's poll callback, the grace before
//!   SIGKILL). Nothing sleeps: a step that exits is reaped the moment it does. Where
//!   the kernel has no `pidfd_open` (before Linux 5.3), the loop also wakes when the
//!   pipes close and otherwise every few milliseconds to reap the leader;
//! * output goes into bounded [`Capture`]s, so a child that prints gigabytes never
//!   grows loopexec's memory;
//! * every way the step can end — it exits, it times out, it stops printing for the
//!   stall timeout, the caller asks it to stop (a signal to loopexec, a budget crossed
//!   mid-stream, a hold, a watchdog) — ends the *whole group*: SIGTERM, a grace period
//!   (while the output is still read), SIGKILL;
//! * when the leader exits and members of its group remain (`sleep 300 &`), they are
//!   ended the same way and the leak is recorded;
//! * loopexec never blocks on a pipe held open by a process that escaped the group:
//!   after the group is gone, the pipes get a short deadline and are then abandoned
//!   (recorded as `pipe_held_open`; the capture keeps what arrived).

use super::capture::{Capture, CaptureLimits, CaptureSummary, LineSink, Stream};
use serde::{Deserialize, Serialize};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
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
    /// Where the excerpt files go: `<prefix>.stdout`, `<prefix>.stderr`.
    pub capture_prefix: PathBuf,
    /// Where the spools go (`<prefix>.stdout.spool`, `<prefix>.stderr.spool`); `None`:
    /// next to the excerpts. The engine passes one prefix per run, so its steps (one
    /// at a time) reuse the same two files instead of creating two per step.
    pub spool_prefix: Option<PathBuf>,
    /// The workdir, to make recorded capture paths relative.
    pub workdir: &'a Path,
    /// Receives stdout lines as they arrive (the agent usage meter), and stderr lines
    /// when it asks for them ([`LineSink::wants`]; `--show-agent-output`).
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

/// What the poll callback sees on each tick (every [`TICK`]).
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

    /// How the leader ended, for a person: its exit code (`"1"`), or `"by a signal"`.
    #[must_use]
    pub fn exit_text(&self) -> String {
        self.exit_code
            .map_or_else(|| "by a signal".to_string(), |c| c.to_string())
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

pub use super::capture::Spools;

/// The `sh` a step runs under: `sh` resolved on `path` (the child's `PATH`) once per
/// `PATH` value and process, as a shell hashes a command it has found; bare `sh`
/// (resolved by the spawn itself) when no directory of `path` holds one.
///
/// Resolving once is what keeps a step's spawn from trying `execve` in every `PATH`
/// directory before the one that holds `sh` (the parent waits through those attempts:
/// the child is spawned with `CLONE_VFORK`); it also means an `sh` put earlier on
/// `PATH` during a run is not the shell the run's steps start under.
fn shell(path: Option<&std::ffi::OsStr>) -> PathBuf {
    use std::collections::HashMap;
    use std::ffi::OsString;
    use std::os::unix::fs::MetadataExt;
    static FOUND: std::sync::Mutex<Option<HashMap<Option<OsString>, PathBuf>>> =
        std::sync::Mutex::new(None);
    let key = path.map(std::ffi::OsStr::to_os_string);
    let mut found = FOUND
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    found
        .get_or_insert_with(HashMap::new)
        .entry(key)
        .or_insert_with(|| {
            path.and_then(|p| {
                std::env::split_paths(p)
                    .filter(|d| d.is_absolute())
                    .map(|d| d.join("sh"))
                    .find(|c| {
                        std::fs::metadata(c).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0)
                    })
            })
            .unwrap_or_else(|| PathBuf::from("sh"))
        })
        .clone()
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

/// How often the poll callback runs while a step runs.
pub const TICK: Duration = Duration::from_millis(50);

/// How long the pipes may stay open after the step's group is gone.
const PIPE_GRACE: Duration = Duration::from_secs(2);

/// Bytes read from a pipe per `read(2)`; the pipes are widened to this size where
/// the kernel allows, so a check printing gigabytes costs one wakeup per 256 KiB
/// (larger buffers only add to peak memory: 4096 reads per GiB cost no measurable CPU).
const READ_CHUNK: usize = 256 << 10;

/// The supervisor's read buffer ([`READ_CHUNK`] bytes), kept per thread between steps:
/// a fresh zeroed 256 KiB buffer is an `mmap`, its page faults and an `munmap` per
/// step. Taken by [`ReadBuf::take`], given back when dropped.
struct ReadBuf(Vec<u8>);

thread_local! {
    static SPARE_BUF: std::cell::Cell<Option<Vec<u8>>> = const { std::cell::Cell::new(None) };
}

impl ReadBuf {
    /// This thread's spare buffer, or a new one.
    fn take() -> ReadBuf {
        ReadBuf(
            SPARE_BUF
                .with(std::cell::Cell::take)
                .unwrap_or_else(|| vec![0u8; READ_CHUNK]),
        )
    }
}

impl Drop for ReadBuf {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.0);
        SPARE_BUF.with(|c| c.set(Some(buf)));
    }
}

/// A pidfd for `pid` (Linux ≥ 5.3), `None` where the kernel has none.
fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = i32::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Makes `fd` non-blocking and widens its pipe buffer (best effort).
fn prepare_pipe(fd: &OwnedFd) {
    let raw = fd.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own; F_GETFL/F_SETFL/F_SETPIPE_SZ take ints.
    unsafe {
        let fl = libc::fcntl(raw, libc::F_GETFL);
        if fl >= 0 {
            libc::fcntl(raw, libc::F_SETFL, fl | libc::O_NONBLOCK);
        }
        libc::fcntl(raw, libc::F_SETPIPE_SZ, READ_CHUNK as libc::c_int);
    }
}

/// The sink as a short-lived borrow (the capture hands it lines while it feeds).
fn sink_mut(sink: &mut Option<Box<dyn LineSink>>) -> Option<&mut dyn LineSink> {
    match sink {
        Some(b) => Some(&mut **b),
        None => None,
    }
}

/// One output pipe of the step and its capture.
struct Pipe {
    fd: Option<OwnedFd>,
    cap: Capture,
}

/// What reading a pipe found.
enum Drained {
    /// Read this many bytes; the pipe may hold more.
    Bytes(usize),
    /// Nothing to read now.
    Empty,
    /// Every writer is gone (or the pipe failed): closed.
    Closed,
}

impl Pipe {
    fn read_once(&mut self, buf: &mut [u8], sink: Option<&mut dyn LineSink>) -> Drained {
        let Some(fd) = self.fd.as_ref() else {
            return Drained::Closed;
        };
        // SAFETY: reading into a buffer we own, at most its length.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        match usize::try_from(n) {
            Ok(0) => {
                self.fd = None;
                Drained::Closed
            }
            Ok(n) => {
                self.cap.feed(&buf[..n], sink);
                Drained::Bytes(n)
            }
            Err(_) => match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EAGAIN | libc::EINTR) => Drained::Empty,
                _ => {
                    self.fd = None;
                    Drained::Closed
                }
            },
        }
    }
}

/// Where the step is in its ending.
#[derive(Clone, Copy)]
enum Phase {
    /// Running; nobody asked it to stop.
    Running,
    /// SIGTERM was sent to the group; SIGKILL follows at `kill_at`.
    Ending { kill_at: Instant, killed: bool },
    /// The leader is reaped and no member of the group is left.
    Gone,
}

/// The event loop of one step: reads both pipes, reaps the leader, applies the
/// deadlines, and ends the group when asked to. Returns when the leader is reaped and
/// the group is gone.
struct Supervisor {
    child: Child,
    pidfd: Option<OwnedFd>,
    pgid: i32,
    pipes: [Pipe; 2],
    sink: Option<Box<dyn LineSink>>,
    buf: ReadBuf,
    total: u64,
    last_output: Instant,
    status: Option<ExitStatus>,
    wait_failed: bool,
    phase: Phase,
    grace: Duration,
    /// The fallback's poll interval without a pidfd (grows to 25 ms).
    nap: Duration,
}

impl Supervisor {
    /// Tries to reap the leader (without blocking).
    fn reap(&mut self) {
        if self.status.is_some() || self.wait_failed {
            return;
        }
        match self.child.try_wait() {
            Ok(Some(st)) => {
                self.status = Some(st);
                self.pidfd = None;
            }
            Ok(None) => {}
            Err(_) => self.wait_failed = true,
        }
    }

    fn leader_done(&self) -> bool {
        self.status.is_some() || self.wait_failed
    }

    /// Sends SIGTERM to the group and starts the grace period.
    fn begin_end(&mut self) {
        if matches!(self.phase, Phase::Running) {
            killpg(self.pgid, libc::SIGTERM);
            self.phase = Phase::Ending {
                kill_at: Instant::now() + self.grace,
                killed: false,
            };
        }
    }

    /// True while a member of the group lives, once the leader is reaped. Members
    /// that exited after their parent did were re-parented to loopexec (a subreaper)
    /// and wait as zombies in the group: they are reaped here, or the group would
    /// never look empty.
    fn rest_of_group_alive(&self) -> bool {
        if !self.leader_done() {
            return true;
        }
        loop {
            let mut st = 0;
            // SAFETY: waitpid on our own children of group `pgid`, without blocking;
            // the leader was already reaped, so no status the caller needs is taken.
            let r = unsafe { libc::waitpid(-self.pgid, &mut st, libc::WNOHANG) };
            if r <= 0 {
                break;
            }
        }
        group_alive(self.pgid)
    }

    /// Advances the ending: SIGKILL once the grace is over; `Gone` once the leader is
    /// reaped and the group is empty.
    fn advance_end(&mut self) {
        if let Phase::Ending { kill_at, killed } = self.phase {
            if self.leader_done() && !self.rest_of_group_alive() {
                self.phase = Phase::Gone;
            } else if !killed && Instant::now() >= kill_at {
                killpg(self.pgid, libc::SIGKILL);
                self.phase = Phase::Ending {
                    kill_at,
                    killed: true,
                };
            }
        }
    }

    /// Reads what the pipes hold now (a bounded number of reads per pipe, so one
    /// stream cannot starve the deadlines). Returns true when something was read.
    fn drain(&mut self, ready: [bool; 2]) -> bool {
        let mut any = false;
        for (i, is_ready) in ready.into_iter().enumerate() {
            if !is_ready {
                continue;
            }
            for _ in 0..16 {
                let sink = sink_mut(&mut self.sink);
                match self.pipes[i].read_once(&mut self.buf.0, sink) {
                    Drained::Bytes(n) => {
                        self.total += n as u64;
                        any = true;
                        if n < self.buf.0.len() {
                            break;
                        }
                    }
                    Drained::Empty | Drained::Closed => break,
                }
            }
        }
        if any {
            self.last_output = Instant::now();
        }
        any
    }

    /// One `poll(2)` over the pidfd (while the leader runs) and the open pipes, for at
    /// most until `deadline`. Reads what became readable and reaps the leader when it
    /// exited. Returns true when a signal interrupted the wait.
    fn wait(&mut self, deadline: Option<Instant>) -> bool {
        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(3);
        let mut slots = [usize::MAX; 2];
        for (i, p) in self.pipes.iter().enumerate() {
            if let Some(fd) = &p.fd {
                slots[i] = fds.len();
                fds.push(libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                });
            }
        }
        let pid_slot = match (&self.pidfd, self.leader_done()) {
            (Some(fd), false) => {
                fds.push(libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                });
                Some(fds.len() - 1)
            }
            _ => None,
        };
        let mut deadline = deadline;
        let leader_unwatched = self.pidfd.is_none() && !self.leader_done();
        // Without a pidfd (or, while ending, for the rest of the group, which has no
        // descriptor) the loop must look again soon.
        if leader_unwatched || matches!(self.phase, Phase::Ending { .. }) {
            let soon = Instant::now() + self.nap;
            self.nap = (self.nap * 2).min(Duration::from_millis(25));
            deadline = Some(deadline.map_or(soon, |d| d.min(soon)));
        }
        let timeout_ms = deadline.map_or(-1, |d| {
            let left = d.saturating_duration_since(Instant::now());
            // Round up: waking a moment early would only spin.
            i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX)
        });
        // SAFETY: `fds` is a valid array of pollfd of the given length for the call.
        let rc = unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                libc::nfds_t::try_from(fds.len()).unwrap_or(0),
                timeout_ms,
            )
        };
        if rc > 0 {
            let ready = [0, 1].map(|i| {
                slots[i] != usize::MAX
                    && fds[slots[i]].revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0
            });
            self.drain(ready);
        }
        // A signal (EINTR) or a timeout: the caller re-evaluates its deadlines.
        if pid_slot.is_some_and(|s| rc > 0 && fds[s].revents != 0) || self.pidfd.is_none() {
            self.reap();
        }
        rc < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
    }

    fn pipes_open(&self) -> bool {
        self.pipes.iter().any(|p| p.fd.is_some())
    }
}

/// Runs one step to its end. `poll` is called every [`TICK`] while the child runs
/// (and at once when a signal interrupts the wait); returning `Some(cause)` ends the
/// group and records the cause.
///
/// # Errors
/// None today (kept for callers: capture files are created only when output spills,
/// and a spill that fails marks the spool truncated); a command that cannot be
/// spawned is a [`StepResult`] with `spawn_error`.
pub fn run_step(
    mut spec: StepSpec<'_>,
    poll: &mut dyn FnMut(&Progress) -> Option<StopCause>,
) -> std::io::Result<(StepResult, Spools)> {
    let spool_prefix = spec.spool_prefix.as_ref().unwrap_or(&spec.capture_prefix);
    let mut spools = Spools::on_disk(
        with_ext(spool_prefix, "stdout.spool"),
        with_ext(spool_prefix, "stderr.spool"),
    );
    let out_cap = Capture::new(Stream::Stdout, spec.limits, &spools.stdout);
    let err_cap = Capture::new(Stream::Stderr, spec.limits, &spools.stderr);
    let ex_out = with_ext(&spec.capture_prefix, "stdout");
    let ex_err = with_ext(&spec.capture_prefix, "stderr");

    let path_env = spec
        .env_set
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| std::ffi::OsString::from(v))
        .or_else(|| {
            if spec.env_remove.iter().any(|k| k == "PATH") {
                None
            } else {
                std::env::var_os("PATH")
            }
        });
    let mut cmd = Command::new(shell(path_env.as_deref()));
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
    let sandbox = spec.sandbox.take();
    let start = Instant::now();
    let spawned = match sandbox {
        Some(sb) => sb.spawn(&mut cmd),
        None => cmd.spawn(),
    };
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            let (so, _) = out_cap.finish(&ex_out, spec.workdir, None);
            let (se, _) = err_cap.finish(&ex_err, spec.workdir, None);
            return Ok((
                StepResult {
                    spawn_error: Some(format!("cannot start `sh -c {}`: {e}", spec.command)),
                    ..StepResult::finished(spec.command, None, so, se)
                },
                spools,
            ));
        }
    };
    let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
    let out_fd = child.stdout.take().map(OwnedFd::from);
    let err_fd = child.stderr.take().map(OwnedFd::from);
    for fd in [&out_fd, &err_fd].into_iter().flatten() {
        prepare_pipe(fd);
    }
    let mut sv = Supervisor {
        pidfd: pidfd_open(pid),
        child,
        pgid: pid,
        pipes: [
            Pipe {
                fd: out_fd,
                cap: out_cap,
            },
            Pipe {
                fd: err_fd,
                cap: err_cap,
            },
        ],
        sink: spec.stdout_sink.take(),
        buf: ReadBuf::take(),
        total: 0,
        last_output: start,
        status: None,
        wait_failed: false,
        phase: Phase::Running,
        grace: spec.grace,
        nap: Duration::from_millis(1),
    };

    let mut timed_out = false;
    let mut stalled = false;
    let mut stopped = None;
    let mut leaked = false;
    let mut next_tick = start + TICK;
    loop {
        sv.reap();
        match sv.phase {
            Phase::Gone => break,
            Phase::Ending { .. } => sv.advance_end(),
            Phase::Running if sv.leader_done() => {
                // The leader is gone; anything left in its group is a leak.
                if sv.rest_of_group_alive() {
                    leaked = true;
                    sv.begin_end();
                } else {
                    sv.phase = Phase::Gone;
                }
                continue;
            }
            Phase::Running => {
                let now = Instant::now();
                let elapsed = now - start;
                let quiet_for = now - sv.last_output;
                if spec.timeout.is_some_and(|t| elapsed >= t) {
                    timed_out = true;
                } else if spec.stall_timeout.is_some_and(|t| quiet_for >= t) {
                    stalled = true;
                } else if now >= next_tick {
                    next_tick = now + TICK;
                    let progress = Progress {
                        pgid: sv.pgid,
                        elapsed,
                        output_bytes: sv.total,
                        quiet_for,
                    };
                    stopped = poll(&progress);
                }
                if timed_out || stalled || stopped.is_some() {
                    sv.begin_end();
                    continue;
                }
            }
        }
        if matches!(sv.phase, Phase::Gone) {
            break;
        }
        let deadline = match sv.phase {
            Phase::Running => [
                Some(next_tick),
                spec.timeout.map(|t| start + t),
                spec.stall_timeout.map(|t| sv.last_output + t),
            ]
            .into_iter()
            .flatten()
            .min(),
            Phase::Ending { kill_at, killed } => (!killed).then_some(kill_at),
            Phase::Gone => None,
        };
        // A signal to loopexec interrupts the wait: the callback sees it at once.
        if sv.wait(deadline) {
            next_tick = Instant::now();
        }
    }
    let escaped = super::escape::end_escapees(&token, &[]);
    // The pipes close when every writer is gone; a process that left the group may
    // still hold them, so wait only briefly.
    let pipe_deadline = Instant::now() + PIPE_GRACE;
    while sv.pipes_open() && Instant::now() < pipe_deadline {
        let _interrupted = sv.wait(Some(pipe_deadline));
    }
    let pipe_held_open = sv.pipes_open();
    let duration_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    let (exit_code, signal) = match sv.status {
        Some(st) => (st.code(), st.signal()),
        None => (None, None),
    };
    let Supervisor {
        pipes: [out, err],
        mut sink,
        ..
    } = sv;
    let (stdout, so) = out.cap.finish(&ex_out, spec.workdir, sink_mut(&mut sink));
    let (stderr, se) = err.cap.finish(&ex_err, spec.workdir, sink_mut(&mut sink));
    spools.set(Stream::Stdout, so);
    spools.set(Stream::Stderr, se);
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
