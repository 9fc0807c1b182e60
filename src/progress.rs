//! Progress for people, on stderr, in every mode (stdout stays the API).
//!
//! One line when a step starts and one per verdict — iteration, phase, failing count
//! and its change since the last verdict, spend so far, elapsed time — and a heartbeat
//! line at least every [`HEARTBEAT_EVERY`] while a step runs, so a CI log with a
//! no-output timeout sees a long agent step is alive. On a terminal the lines are
//! printed above an `indicatif` status line that shows the running step; elsewhere
//! they are plain lines. `--quiet` silences all of it.
//!
//! The reporter only reads what the loop has already recorded (the trajectory); it
//! decides nothing and nothing depends on it.

use crate::trajectory::Trajectory;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Longest gap between two progress lines while a step runs.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(30);

/// Writes progress lines to stderr (or nowhere when disabled).
pub struct Reporter {
    enabled: bool,
    /// Stream the work step's stdout lines (`--show-agent-output`).
    show_agent_output: bool,
    /// Where plain lines go (stderr; a buffer in tests).
    sink: Mutex<Box<dyn Write + Send>>,
    /// Longest gap between lines while a step runs.
    heartbeat_every: Duration,
    started: Instant,
    max_iterations: u32,
    /// The live status line (terminals only).
    bar: Option<indicatif::ProgressBar>,
    /// When the last line was printed (heartbeat pacing).
    last_line: Mutex<Instant>,
}

impl Reporter {
    /// A reporter; `enabled` false prints nothing. The live line is used only when
    /// stderr is a terminal and `NO_COLOR`/`TERM=dumb` do not ask for plain output.
    #[must_use]
    pub fn new(enabled: bool, max_iterations: u32) -> Reporter {
        use std::io::IsTerminal;
        let tty = std::io::stderr().is_terminal()
            && std::env::var_os("TERM").map_or(true, |t| t != "dumb")
            && std::env::var_os("NO_COLOR").is_none();
        let bar = (enabled && tty).then(|| {
            let b = indicatif::ProgressBar::new_spinner();
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        Reporter {
            enabled,
            show_agent_output: false,
            sink: Mutex::new(Box::new(std::io::stderr())),
            heartbeat_every: HEARTBEAT_EVERY,
            started: Instant::now(),
            max_iterations,
            bar,
            last_line: Mutex::new(Instant::now()),
        }
    }

    /// A reporter writing plain lines (no live line) to `sink`, with heartbeats every
    /// `heartbeat_every`.
    #[must_use]
    pub fn to_sink(
        sink: Box<dyn Write + Send>,
        max_iterations: u32,
        heartbeat_every: Duration,
    ) -> Reporter {
        Reporter {
            enabled: true,
            show_agent_output: false,
            sink: Mutex::new(sink),
            heartbeat_every,
            started: Instant::now(),
            max_iterations,
            bar: None,
            last_line: Mutex::new(Instant::now()),
        }
    }

    /// Also stream the work step's stdout lines to stderr (`--show-agent-output`;
    /// printed even with `--quiet`, since it was asked for).
    #[must_use]
    pub fn showing_agent_output(mut self, show: bool) -> Reporter {
        self.show_agent_output = show;
        self
    }

    /// The line sink of the work step: `inner` (the usage meter), plus a copy of each
    /// line to stderr when `--show-agent-output` is on.
    #[must_use]
    pub fn agent_sink(
        &self,
        inner: Box<dyn crate::proc::capture::LineSink>,
    ) -> Box<dyn crate::proc::capture::LineSink> {
        if !self.show_agent_output {
            return inner;
        }
        Box::new(TeeSink {
            inner,
            bar: self.bar.clone(),
        })
    }

    /// A reporter that prints nothing.
    #[must_use]
    pub fn silent() -> Reporter {
        Reporter::new(false, 0)
    }

    fn line(&self, text: &str) {
        if !self.enabled {
            return;
        }
        let full = format!(
            "loopexec: [{:>7.1}s] {text}",
            self.started.elapsed().as_secs_f64()
        );
        match &self.bar {
            Some(b) => b.println(full),
            None => {
                if let Ok(mut e) = self.sink.lock() {
                    // Progress is best effort: a closed stderr must not stop the loop.
                    let _ = writeln!(e, "{full}");
                }
            }
        }
        if let Ok(mut l) = self.last_line.lock() {
            *l = Instant::now();
        }
    }

    fn prefix(&self, iteration: u32) -> String {
        format!("iteration {iteration}/{}", self.max_iterations)
    }

    /// A step starts (`exec`, `check`, `confirming green (1/2)`).
    pub fn step(&self, iteration: u32, what: &str, t: &Trajectory) {
        if !self.enabled {
            // `--quiet`: nothing is printed, so nothing is worked out
            return;
        }
        let mut s = format!("{} · {what}", self.prefix(iteration));
        if let Some(f) = last_failing(t) {
            s.push_str(&format!(" · {f} failing so far"));
        }
        if let Some(sp) = spend_text(t) {
            s.push_str(&format!(" · spend {sp}"));
        }
        if let Some(b) = &self.bar {
            b.set_message(format!("{} · {what}", self.prefix(iteration)));
        }
        self.line(&s);
    }

    /// A main check run was recorded: the verdict line.
    pub fn verdict(&self, t: &Trajectory, success_exit_code: i32) {
        if !self.enabled {
            return;
        }
        let Some(obs) = t.last() else { return };
        let Some(c) = obs.main_check() else { return };
        let green = crate::trajectory::is_green(c, success_exit_code);
        let failing = c.parsed.failing().len();
        let delta = previous_failing(t).map(|p| {
            let d = i64::try_from(failing).unwrap_or(i64::MAX) - i64::try_from(p).unwrap_or(0);
            if d == 0 {
                " (±0)".to_string()
            } else {
                format!(" ({d:+})")
            }
        });
        // Quiet runner modes name few tests but still count them.
        let collected = u64::try_from(c.parsed.collected().len())
            .unwrap_or(u64::MAX)
            .max(c.parsed.counts().total());
        let verdict = if green { "green" } else { "red" };
        let mut s = if collected == 0 {
            // a check judged by its exit code alone (`test -f done`, a script)
            format!(
                "{} · verdict {verdict}: exit {} (the check names no tests)",
                self.prefix(obs.iteration),
                c.step.exit_text()
            )
        } else {
            format!(
                "{} · verdict {verdict}: {failing} failing{} of {collected} collected",
                self.prefix(obs.iteration),
                delta.unwrap_or_default(),
            )
        };
        if let Some(sp) = spend_text(t) {
            s.push_str(&format!(" · spend {sp}"));
        }
        s.push_str(&format!(
            " · elapsed {}",
            fmt_secs(self.started.elapsed().as_secs())
        ));
        self.line(&s);
    }

    /// Called on every supervision tick of a running step; prints a heartbeat line
    /// when nothing was printed for [`HEARTBEAT_EVERY`].
    pub fn tick(&self, iteration: u32, phase: &str, elapsed: Duration, output_bytes: u64) {
        if !self.enabled {
            return;
        }
        let due = self
            .last_line
            .lock()
            .map(|l| l.elapsed() >= self.heartbeat_every)
            .unwrap_or(false);
        if let Some(b) = &self.bar {
            b.set_message(format!(
                "{} · {phase} running {} · {output_bytes} bytes of output",
                self.prefix(iteration),
                fmt_secs(elapsed.as_secs())
            ));
        }
        if due {
            self.line(&format!(
                "{} · {phase} still running ({}, {output_bytes} bytes of output)",
                self.prefix(iteration),
                fmt_secs(elapsed.as_secs())
            ));
        }
    }

    /// The run ended: clear the live line.
    pub fn done(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// Forwards agent lines to the meter and copies them to stderr: stdout lines prefixed
/// `agent| `, stderr lines `agent! ` (stdout stays loopexec's API).
struct TeeSink {
    inner: Box<dyn crate::proc::capture::LineSink>,
    bar: Option<indicatif::ProgressBar>,
}

impl crate::proc::capture::LineSink for TeeSink {
    fn line(&mut self, stream: crate::proc::capture::Stream, line: &[u8]) {
        let prefix = match stream {
            crate::proc::capture::Stream::Stdout => "agent| ",
            crate::proc::capture::Stream::Stderr => "agent! ",
        };
        let text = format!(
            "{prefix}{}",
            String::from_utf8_lossy(line).trim_end_matches(['\n', '\r'])
        );
        match &self.bar {
            Some(b) => b.println(text),
            None => {
                // Best effort, like every progress line.
                let _ = writeln!(std::io::stderr().lock(), "{text}");
            }
        }
        if self.inner.wants(stream) {
            self.inner.line(stream, line);
        }
    }
    fn wants(&self, _stream: crate::proc::capture::Stream) -> bool {
        true
    }
}

/// loopexec's own stdout and stderr when they are regular files inside `workdir`
/// (e.g. `loopexec run … 2> log.txt` in the project): their paths relative to the
/// workdir, glob-escaped. Progress lines written there while a step runs are
/// loopexec's, not the agent's or the check's, so `run` leaves these files out of
/// the snapshots (`[clean_room] exclude`, recorded in `run_started`).
#[must_use]
pub fn own_output_files(workdir: &Path) -> Vec<String> {
    let Ok(root) = std::fs::canonicalize(workdir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for fd in [1, 2] {
        let Ok(target) = std::fs::read_link(format!("/proc/self/fd/{fd}")) else {
            continue;
        };
        if !std::fs::metadata(&target).is_ok_and(|m| m.is_file()) {
            continue;
        }
        let Ok(rel) = target.strip_prefix(&root) else {
            continue;
        };
        let escaped: String = rel
            .to_string_lossy()
            .chars()
            .flat_map(|c| {
                if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
                    vec!['[', c, ']']
                } else {
                    vec![c]
                }
            })
            .collect();
        if !out.contains(&escaped) {
            out.push(escaped);
        }
    }
    out
}

/// `1m05s`, `42s`.
fn fmt_secs(s: u64) -> String {
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

fn main_failing(t: &Trajectory) -> Vec<usize> {
    (0..t.iterations.len())
        .filter_map(|i| t.main_sets(i).map(|s| s.failing.len()))
        .collect()
}

/// The failing count of the last main check, unless that check names no tests (an
/// exit-code check, whose one "failure" is its exit: its verdict line says so).
fn last_failing(t: &Trajectory) -> Option<usize> {
    let last = t.iterations.iter().rev().find_map(|i| i.main_check())?;
    if last.parsed.counts().total() == 0 && last.parsed.collected().is_empty() {
        return None;
    }
    main_failing(t).last().copied()
}

fn previous_failing(t: &Trajectory) -> Option<usize> {
    let v = main_failing(t);
    (v.len() >= 2).then(|| v[v.len() - 2])
}

/// `$0.1234`, `$0.10 (+1 unmetered)`, `unknown (unmetered)`; `None` before any exec.
fn spend_text(t: &Trajectory) -> Option<String> {
    let s = crate::receipt::facts::spend_of(t);
    if s.metered_iterations == 0 && s.unmetered_iterations == 0 {
        return None;
    }
    Some(match s.usd {
        Some(u) if s.unmetered_iterations == 0 => format!("${u:.4}"),
        Some(u) => format!("${u:.4} (+{} unmetered)", s.unmetered_iterations),
        None => "unknown (unmetered)".to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A `Write` whose bytes the test can read back.
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    impl Buf {
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
        }
    }

    #[test]
    fn a_running_step_gets_heartbeat_lines_and_a_quiet_reporter_none() {
        let buf = Buf::default();
        let r = Reporter::to_sink(Box::new(buf.clone()), 5, Duration::from_millis(20));
        let t = Trajectory::default();
        r.step(2, "exec", &t);
        r.tick(2, "exec", Duration::from_secs(1), 10);
        assert_eq!(buf.text().lines().count(), 1, "no heartbeat before the gap");
        std::thread::sleep(Duration::from_millis(30));
        r.tick(2, "exec", Duration::from_secs(61), 10);
        let text = buf.text();
        assert!(text.contains("iteration 2/5 · exec"), "{text}");
        assert!(
            text.contains("iteration 2/5 · exec still running (1m01s, 10 bytes of output)"),
            "{text}"
        );
        let silent = Reporter::silent();
        silent.tick(1, "exec", Duration::from_secs(600), 0);
    }

    /// The verdict line counts tests, or says the check names none (a check judged by
    /// its exit code: a new user read "1 failing of 0 collected").
    #[test]
    fn the_verdict_line_counts_tests_or_names_the_exit() {
        use crate::check::model::Outcome;
        use crate::detect::testkit::{check, start, traj};
        use crate::receipt::events::Event;
        let exit_only = |code: i32| {
            let Event::CheckFinished(mut c) = check(0, 0, None, &[]) else {
                unreachable!()
            };
            c.step.exit_code = Some(code);
            c.parsed.format = crate::check::model::Format::ExitCode;
            Event::CheckFinished(c)
        };
        let rows: [(Event, &str); 3] = [
            (
                check(
                    0,
                    0,
                    None,
                    &[("a", Outcome::Failed), ("b", Outcome::Passed)],
                ),
                "verdict red: 1 failing of 2 collected",
            ),
            (
                exit_only(1),
                "verdict red: exit 1 (the check names no tests)",
            ),
            (
                exit_only(0),
                "verdict green: exit 0 (the check names no tests)",
            ),
        ];
        for (ev, want) in rows {
            let buf = Buf::default();
            let r = Reporter::to_sink(Box::new(buf.clone()), 5, Duration::from_millis(20));
            r.verdict(&traj(&[start(0), ev]), 0);
            assert!(buf.text().contains(want), "{}", buf.text());
        }
    }

    #[test]
    fn seconds_are_readable() {
        for (s, want) in [(0, "0s"), (59, "59s"), (60, "1m00s"), (125, "2m05s")] {
            assert_eq!(fmt_secs(s), want);
        }
    }
}
