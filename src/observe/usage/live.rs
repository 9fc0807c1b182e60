//! The engine's handle on a [`UsageMeter`] while the work step runs: a line sink for
//! the step's stdout (fed from the drain thread), a tail reader for the
//! `LOOPEXEC_USAGE_FILE` side channel, snapshots for the live budget check, and the
//! [`CarryOver`] state (codex thread totals) passed from one iteration to the next.
//!
//! Invariants: nothing here panics (a poisoned lock is recovered, an unreadable usage
//! file reads as empty); memory is bounded: the usage file is read incrementally, at
//! most [`MAX_USAGE_FILE_BYTES`] in total, holding at most one partial line of
//! [`MAX_FILE_LINE_BYTES`]. Stdout lines arrive already capped by the capture (1 MiB).

use super::{CodexTotals, IterationUsage, Pricing, UsageMeter};
use crate::proc::{LineSink, Stream};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

/// Most bytes of the usage file read in one iteration; the rest is ignored.
pub const MAX_USAGE_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Longest usage-file line kept; a longer one is skipped (and counted).
pub const MAX_FILE_LINE_BYTES: usize = 1024 * 1024;

/// State carried from one iteration's meter to the next.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CarryOver {
    /// Cumulative codex totals per thread id (see [`super::codex`]).
    #[serde(default)]
    pub codex_threads: BTreeMap<String, CodexTotals>,
}

#[derive(Debug)]
struct Shared {
    meter: UsageMeter,
    file: Option<PathBuf>,
    /// Bytes of the usage file consumed so far.
    offset: u64,
    /// The unfinished last line of the usage file.
    partial: Vec<u8>,
    /// The partial line outgrew its cap: drop bytes until the next newline.
    discarding: bool,
}

impl Shared {
    /// Reads what the wrapper appended since the last call and feeds complete lines.
    fn pull_file(&mut self) {
        let Some(path) = &self.file else { return };
        let Ok(mut f) = File::open(path) else { return };
        let budget = MAX_USAGE_FILE_BYTES.saturating_sub(self.offset);
        if budget == 0 || f.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut buf = Vec::new();
        let Ok(n) = f.take(budget).read_to_end(&mut buf) else {
            return;
        };
        self.offset += n as u64;
        for &b in &buf {
            if b == b'\n' {
                if self.discarding {
                    self.discarding = false;
                    self.meter.skipped = self.meter.skipped.saturating_add(1);
                } else {
                    let line = std::mem::take(&mut self.partial);
                    self.meter.feed_usage_file_line(&line);
                }
            } else if !self.discarding {
                if self.partial.len() >= MAX_FILE_LINE_BYTES {
                    self.partial.clear();
                    self.discarding = true;
                } else {
                    self.partial.push(b);
                }
            }
        }
    }
}

/// One iteration's live meter. Cheap to share: the sink and the engine hold the same
/// meter behind a lock.
#[derive(Debug, Clone)]
pub struct LiveMeter {
    shared: Arc<Mutex<Shared>>,
}

impl LiveMeter {
    /// A meter priced by `pricing`, continuing `carry`, tailing `usage_file` (the path
    /// given to the agent as `LOOPEXEC_USAGE_FILE`; it may not exist yet).
    #[must_use]
    pub fn new(pricing: &Pricing, carry: &CarryOver, usage_file: Option<PathBuf>) -> Self {
        let shared = Shared {
            meter: UsageMeter::new(pricing.clone(), carry.codex_threads.clone()),
            file: usage_file,
            offset: 0,
            partial: Vec::new(),
            discarding: false,
        };
        LiveMeter {
            shared: Arc::new(Mutex::new(shared)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A sink for the work step's output: stdout lines go to the meter, stderr is
    /// ignored (agents print their machine-readable output on stdout).
    #[must_use]
    pub fn sink(&self) -> Box<dyn LineSink> {
        Box::new(MeterSink {
            shared: Arc::clone(&self.shared),
        })
    }

    /// The figures so far, usage-file lines appended until now included.
    #[must_use]
    pub fn snapshot(&self) -> IterationUsage {
        let mut s = self.lock();
        s.pull_file();
        s.meter.snapshot()
    }

    /// Ends the iteration: reads the rest of the usage file (a last line without a
    /// newline counts), updates `carry`, and returns the iteration's figures.
    pub fn finish(&self, carry: &mut CarryOver) -> IterationUsage {
        let usage = {
            let mut s = self.lock();
            s.pull_file();
            if !s.partial.is_empty() {
                let line = std::mem::take(&mut s.partial);
                s.meter.feed_usage_file_line(&line);
            }
            s.meter.finish();
            s.meter.snapshot()
        };
        carry.codex_threads.clone_from(&usage.codex_threads);
        usage
    }
}

struct MeterSink {
    shared: Arc<Mutex<Shared>>,
}

impl LineSink for MeterSink {
    fn line(&mut self, stream: Stream, line: &[u8]) {
        if stream == Stream::Stdout {
            let mut s = self
                .shared
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            s.meter.feed_stdout_line(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn sink_and_usage_file_feed_one_meter_and_carry_codex_totals() {
        let dir = std::env::temp_dir().join(format!("usage-live-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("tmp dir");
        let path = dir.join("1.usage.jsonl");
        let _ = std::fs::remove_file(&path);

        let mut carry = CarryOver::default();
        let live = LiveMeter::new(&Pricing::default(), &carry, Some(path.clone()));
        let mut sink = live.sink();
        assert_eq!(
            live.snapshot().total_tokens(),
            0,
            "missing file reads as empty"
        );

        sink.line(
            Stream::Stdout,
            br#"{"type":"thread.started","thread_id":"t1"}"#,
        );
        sink.line(Stream::Stderr, b"this is not metered and not counted");
        sink.line(
            Stream::Stdout,
            br#"{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":7}}"#,
        );
        let mut f = File::create(&path).expect("usage file");
        f.write_all(b"{\"model\":\"m\",\"input_tokens\":5,\"output_tokens\":1}\n{\"model\":\"m\",")
            .expect("write");
        let u = live.snapshot();
        assert_eq!(u.input_tokens, 60 + 5, "the partial second record waits");
        assert_eq!(u.skipped_lines, 0);
        f.write_all(b"\"input_tokens\":2,\"output_tokens\":2}")
            .expect("write");
        drop(f);

        let v = live.finish(&mut carry);
        assert_eq!(v.input_tokens, 67);
        assert_eq!(v.output_tokens, 10);
        assert_eq!(
            carry.codex_threads.get("t1"),
            Some(&CodexTotals {
                input_tokens: 100,
                cached_input_tokens: 40,
                output_tokens: 7
            })
        );

        // Next iteration resumes the thread: only the growth counts.
        let live2 = LiveMeter::new(&Pricing::default(), &carry, None);
        let mut sink2 = live2.sink();
        sink2.line(
            Stream::Stdout,
            br#"{"type":"thread.started","thread_id":"t1"}"#,
        );
        sink2.line(
            Stream::Stdout,
            br#"{"type":"turn.completed","usage":{"input_tokens":150,"cached_input_tokens":90,"output_tokens":10}}"#,
        );
        let u2 = live2.snapshot();
        assert_eq!(
            (u2.input_tokens, u2.cached_input_tokens, u2.output_tokens),
            (0, 50, 3)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_overlong_usage_file_line_is_skipped_not_buffered() {
        let dir = std::env::temp_dir().join(format!("usage-live-long-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("tmp dir");
        let path = dir.join("u.jsonl");
        let mut body = vec![b'x'; MAX_FILE_LINE_BYTES + 10];
        body.extend_from_slice(b"\n{\"model\":\"m\",\"input_tokens\":3,\"output_tokens\":4}\n");
        std::fs::write(&path, &body).expect("write");
        let live = LiveMeter::new(&Pricing::default(), &CarryOver::default(), Some(path));
        let u = live.snapshot();
        assert_eq!(u.skipped_lines, 1);
        assert_eq!((u.input_tokens, u.output_tokens), (3, 4));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
