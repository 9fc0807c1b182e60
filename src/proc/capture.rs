//! Bounded capture of one output stream of a child process.
//!
//! A [`Capture`] is fed chunks by a drain thread. It keeps, whatever the volume:
//! the byte count, the blake3 of the whole stream, the first [`CaptureLimits::head`]
//! bytes and the last [`CaptureLimits::tail`] bytes (a ring), and a spool file holding
//! the stream up to [`CaptureLimits::spool`] bytes for the test-output parsers, which
//! read it line by line after the process ends. Memory is bounded by head + tail +
//! one read buffer; a check printing gigabytes costs disk up to the spool limit and
//! nothing more.
//!
//! Lines are also handed, as they complete, to an optional [`LineSink`] (the agent
//! usage meter reads the work step's stdout while it streams). A line longer than
//! [`MAX_LINE`] is cut there: the sink sees its first `MAX_LINE` bytes once.

use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Longest line handed to a [`LineSink`], in bytes (1 MiB).
pub const MAX_LINE: usize = 1 << 20;

/// Which stream a line or chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    /// `stdout` or `stderr`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// Receives complete lines (without the trailing newline) as a stream is drained.
pub trait LineSink: Send {
    fn line(&mut self, stream: Stream, line: &[u8]);
}

/// Size limits of a capture, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureLimits {
    /// Bytes kept from the start of the stream (default 64 KiB).
    pub head: usize,
    /// Bytes kept from the end of the stream (default 64 KiB).
    pub tail: usize,
    /// Bytes spooled to disk for parsing (default 256 MiB); past it the parse sees a
    /// truncated stream and says so.
    pub spool: u64,
}

impl Default for CaptureLimits {
    fn default() -> Self {
        CaptureLimits {
            head: 64 << 10,
            tail: 64 << 10,
            spool: 256 << 20,
        }
    }
}

/// What a finished capture recorded (goes into the receipt).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CaptureSummary {
    /// Total bytes the stream carried.
    pub bytes: u64,
    /// blake3 of the whole stream, hex.
    pub blake3: String,
    /// Path of the kept excerpt (head, an elision marker, tail), relative to the workdir.
    pub excerpt: Option<String>,
    /// True when the stream was longer than head + tail (the excerpt elides the middle).
    pub elided: bool,
    /// True when the stream was longer than the spool limit (the parse saw a prefix).
    pub spool_truncated: bool,
    /// Complete lines seen.
    pub lines: u64,
}

impl CaptureSummary {
    /// The summary of a stream that printed nothing.
    #[must_use]
    pub fn empty() -> CaptureSummary {
        CaptureSummary {
            bytes: 0,
            blake3: blake3::hash(b"").to_hex().to_string(),
            excerpt: None,
            elided: false,
            spool_truncated: false,
            lines: 0,
        }
    }
}

/// The state of one stream's capture. See the module doc.
pub struct Capture {
    stream: Stream,
    limits: CaptureLimits,
    bytes: u64,
    lines: u64,
    hasher: blake3::Hasher,
    head: Vec<u8>,
    tail: Vec<u8>,
    tail_pos: usize,
    spool: Option<File>,
    spool_path: PathBuf,
    spool_written: u64,
    spool_error: Option<String>,
    partial: Vec<u8>,
    partial_overflow: bool,
    sink: Option<Box<dyn LineSink>>,
}

impl Capture {
    /// Creates a capture spooling to `spool_path` (created or truncated).
    ///
    /// # Errors
    /// The spool file cannot be created.
    pub fn new(
        stream: Stream,
        limits: CaptureLimits,
        spool_path: &Path,
        sink: Option<Box<dyn LineSink>>,
    ) -> io::Result<Self> {
        let spool = File::create(spool_path)?;
        Ok(Capture {
            stream,
            limits,
            bytes: 0,
            lines: 0,
            hasher: blake3::Hasher::new(),
            head: Vec::new(),
            tail: Vec::new(),
            tail_pos: 0,
            spool: Some(spool),
            spool_path: spool_path.to_path_buf(),
            spool_written: 0,
            spool_error: None,
            partial: Vec::new(),
            partial_overflow: false,
            sink,
        })
    }

    /// Feeds one chunk read from the stream.
    pub fn feed(&mut self, chunk: &[u8]) {
        self.bytes += chunk.len() as u64;
        self.hasher.update(chunk);
        if self.head.len() < self.limits.head {
            let take = (self.limits.head - self.head.len()).min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
        }
        self.feed_tail(chunk);
        self.feed_spool(chunk);
        self.feed_lines(chunk);
    }

    fn feed_tail(&mut self, chunk: &[u8]) {
        let cap = self.limits.tail;
        if cap == 0 {
            return;
        }
        let chunk = if chunk.len() > cap {
            &chunk[chunk.len() - cap..]
        } else {
            chunk
        };
        for &b in chunk {
            if self.tail.len() < cap {
                self.tail.push(b);
            } else {
                self.tail[self.tail_pos] = b;
                self.tail_pos = (self.tail_pos + 1) % cap;
            }
        }
    }

    fn feed_spool(&mut self, chunk: &[u8]) {
        let Some(f) = self.spool.as_mut() else { return };
        let room = self.limits.spool.saturating_sub(self.spool_written);
        if room == 0 {
            return;
        }
        let n = usize::try_from(room).unwrap_or(usize::MAX).min(chunk.len());
        if let Err(e) = f.write_all(&chunk[..n]) {
            self.spool_error = Some(e.to_string());
            self.spool = None;
            return;
        }
        self.spool_written += n as u64;
    }

    fn feed_lines(&mut self, chunk: &[u8]) {
        let mut rest = chunk;
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            self.push_partial(&rest[..nl]);
            self.emit_line();
            rest = &rest[nl + 1..];
        }
        self.push_partial(rest);
    }

    fn push_partial(&mut self, bytes: &[u8]) {
        let room = MAX_LINE.saturating_sub(self.partial.len());
        if bytes.len() > room {
            self.partial_overflow = true;
        }
        self.partial
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn emit_line(&mut self) {
        self.lines += 1;
        if let Some(sink) = self.sink.as_mut() {
            let line = self.partial.strip_suffix(b"\r").unwrap_or(&self.partial);
            sink.line(self.stream, line);
        }
        self.partial.clear();
        self.partial_overflow = false;
    }

    /// Ends the stream: flushes a last unterminated line, writes the excerpt file
    /// `excerpt_path` and returns the summary. The spool stays for the parser; the
    /// caller removes it with [`remove_spool`].
    #[must_use]
    pub fn finish(mut self, excerpt_path: &Path, workdir: &Path) -> (CaptureSummary, PathBuf) {
        if !self.partial.is_empty() {
            self.emit_line();
        }
        if let Some(f) = self.spool.as_mut() {
            let _ = f.flush();
        }
        let elided = self.bytes > (self.limits.head + self.limits.tail) as u64;
        let excerpt = self.write_excerpt(excerpt_path, elided).ok().map(|()| {
            excerpt_path
                .strip_prefix(workdir)
                .unwrap_or(excerpt_path)
                .to_string_lossy()
                .into_owned()
        });
        let summary = CaptureSummary {
            bytes: self.bytes,
            blake3: self.hasher.finalize().to_hex().to_string(),
            excerpt,
            elided,
            spool_truncated: self.spool_written < self.bytes || self.spool_error.is_some(),
            lines: self.lines,
        };
        (summary, self.spool_path.clone())
    }

    fn ordered_tail(&self) -> Vec<u8> {
        let mut t = Vec::with_capacity(self.tail.len());
        t.extend_from_slice(&self.tail[self.tail_pos..]);
        t.extend_from_slice(&self.tail[..self.tail_pos]);
        t
    }

    fn write_excerpt(&self, path: &Path, elided: bool) -> io::Result<()> {
        let mut f = File::create(path)?;
        if elided {
            let tail = self.ordered_tail();
            f.write_all(&self.head)?;
            let skipped = self.bytes - (self.head.len() + tail.len()) as u64;
            write!(f, "\n[loopexec: {skipped} bytes elided]\n")?;
            f.write_all(&tail)?;
        } else {
            // Short stream: head holds all of it when bytes <= head; otherwise head + tail
            // overlap-free concatenation covers it exactly.
            f.write_all(&self.head)?;
            if self.bytes > self.head.len() as u64 {
                let tail = self.ordered_tail();
                let missing = usize::try_from(self.bytes).unwrap_or(usize::MAX) - self.head.len();
                f.write_all(&tail[tail.len() - missing.min(tail.len())..])?;
            }
        }
        f.flush()
    }
}

/// Removes a spool file once it has been parsed (errors are ignored: a leftover spool
/// costs disk, never correctness).
pub fn remove_spool(path: &Path) {
    let _ = std::fs::remove_file(path);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    struct Collect(Arc<Mutex<Vec<Vec<u8>>>>);
    impl LineSink for Collect {
        fn line(&mut self, _s: Stream, line: &[u8]) {
            self.0.lock().unwrap().push(line.to_vec());
        }
    }

    #[test]
    fn keeps_head_tail_count_and_hash_of_a_long_stream() {
        let dir = tempfile::tempdir().unwrap();
        let limits = CaptureLimits {
            head: 4,
            tail: 4,
            spool: 10,
        };
        let mut c = Capture::new(Stream::Stdout, limits, &dir.path().join("s"), None).unwrap();
        let data: Vec<u8> = (0..100u8).map(|i| b'a' + (i % 26)).collect();
        for chunk in data.chunks(7) {
            c.feed(chunk);
        }
        let (sum, spool) = c.finish(&dir.path().join("x"), dir.path());
        assert_eq!(sum.bytes, 100);
        assert_eq!(sum.blake3, blake3::hash(&data).to_hex().to_string());
        assert!(sum.elided && sum.spool_truncated);
        let ex = std::fs::read(dir.path().join("x")).unwrap();
        assert!(ex.starts_with(&data[..4]));
        assert!(ex.ends_with(&data[96..]));
        assert_eq!(std::fs::read(spool).unwrap(), &data[..10]);
    }

    #[test]
    fn short_stream_excerpt_is_exact_and_lines_reach_the_sink() {
        let dir = tempfile::tempdir().unwrap();
        let got = Arc::new(Mutex::new(Vec::new()));
        let limits = CaptureLimits {
            head: 8,
            tail: 8,
            spool: 1000,
        };
        let mut c = Capture::new(
            Stream::Stdout,
            limits,
            &dir.path().join("s"),
            Some(Box::new(Collect(got.clone()))),
        )
        .unwrap();
        c.feed(b"one\r\ntw");
        c.feed(b"o\nthree");
        let (sum, _) = c.finish(&dir.path().join("x"), dir.path());
        assert_eq!(
            std::fs::read(dir.path().join("x")).unwrap(),
            b"one\r\ntwo\nthree"
        );
        assert!(!sum.elided);
        assert_eq!(sum.lines, 3);
        let lines = got.lock().unwrap().clone();
        assert_eq!(
            lines,
            vec![b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]
        );
    }
}
