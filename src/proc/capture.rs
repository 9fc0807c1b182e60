//! Bounded capture of one output stream of a child process.
//!
//! A [`Capture`] is fed chunks by the supervisor's event loop. It keeps, whatever the
//! volume: the byte count, the blake3 of the whole stream, the first
//! [`CaptureLimits::head`] bytes and the last [`CaptureLimits::tail`] bytes (a ring),
//! and the stream up to [`CaptureLimits::spool`] bytes for the test-output parsers.
//! That spool lives in memory while the stream is short (up to [`SPILL_AT`]) and is
//! spilled to its file past it, so a step that prints little touches no file at all;
//! [`Spools::write_files`] writes what stayed in memory when a parser needs files.
//! Memory is bounded by head + tail + [`SPILL_AT`] + one line ([`MAX_LINE`], only when
//! a sink reads lines); a check printing gigabytes costs disk up to the spool limit
//! and nothing more.
//!
//! Lines are also handed, as they complete, to an optional [`LineSink`] (the agent
//! usage meter reads the work step's stdout while it streams; `--show-agent-output`
//! reads both streams). A line longer than [`MAX_LINE`] is cut there: the sink sees its
//! first `MAX_LINE` bytes once.
//!
//! The excerpt file (head, an elision marker, tail) is redacted in memory before it is
//! written (`observe::secrets::redact`): a secret never reaches the disk, not even for
//! a moment. A stream that printed nothing has no excerpt file.

use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Longest line handed to a [`LineSink`], in bytes (1 MiB).
pub const MAX_LINE: usize = 1 << 20;

/// Bytes of a stream kept in memory before its spool file is created (256 KiB).
pub const SPILL_AT: usize = 256 << 10;

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
    /// Whether this sink reads lines of `stream` (default: stdout only). Lines of a
    /// stream no sink wants are counted, never assembled.
    fn wants(&self, stream: Stream) -> bool {
        stream == Stream::Stdout
    }
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
    /// Path of the kept excerpt (head, an elision marker, tail), relative to the workdir;
    /// `None` when the stream printed nothing (or the excerpt could not be written).
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

/// Where a finished capture's spool is: still in memory, or in its file.
#[derive(Debug)]
pub enum Spooled {
    /// The whole (short) stream, never written to disk.
    Memory(Vec<u8>),
    /// Spilled to the spool file.
    File,
}

/// The state of one stream's capture. See the module doc.
pub struct Capture {
    stream: Stream,
    limits: CaptureLimits,
    bytes: u64,
    lines: u64,
    /// The last byte fed was not a newline (an unterminated last line is pending).
    pending_line: bool,
    hasher: blake3::Hasher,
    head: Vec<u8>,
    tail: Vec<u8>,
    tail_pos: usize,
    /// The spool while it is short; `None` once spilled.
    memory: Option<Vec<u8>>,
    spool: Option<File>,
    spool_path: PathBuf,
    spool_written: u64,
    spool_error: Option<String>,
    partial: Vec<u8>,
}

impl Capture {
    /// Creates a capture whose spool, once longer than [`SPILL_AT`], goes to
    /// `spool_path` (created or truncated then; nothing is created before).
    #[must_use]
    pub fn new(stream: Stream, limits: CaptureLimits, spool_path: &Path) -> Self {
        Capture {
            stream,
            limits,
            bytes: 0,
            lines: 0,
            pending_line: false,
            hasher: blake3::Hasher::new(),
            head: Vec::new(),
            tail: Vec::new(),
            tail_pos: 0,
            memory: Some(Vec::new()),
            spool: None,
            spool_path: spool_path.to_path_buf(),
            spool_written: 0,
            spool_error: None,
            partial: Vec::new(),
        }
    }

    /// Which stream this is.
    #[must_use]
    pub fn stream(&self) -> Stream {
        self.stream
    }

    /// Feeds one chunk read from the stream; complete lines go to `sink` when it wants
    /// this stream.
    pub fn feed(&mut self, chunk: &[u8], sink: Option<&mut dyn LineSink>) {
        if chunk.is_empty() {
            return;
        }
        self.bytes += chunk.len() as u64;
        self.hasher.update(chunk);
        if self.head.len() < self.limits.head {
            let take = (self.limits.head - self.head.len()).min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
        }
        self.feed_tail(chunk);
        self.feed_spool(chunk);
        match sink {
            Some(s) if s.wants(self.stream) => self.feed_lines(chunk, s),
            _ => {
                self.lines += memchr::memchr_iter(b'\n', chunk).count() as u64;
                self.pending_line = chunk.last() != Some(&b'\n');
            }
        }
    }

    /// The ring of the last `tail` bytes, filled by slice copies.
    fn feed_tail(&mut self, chunk: &[u8]) {
        let cap = self.limits.tail;
        if cap == 0 {
            return;
        }
        let chunk = &chunk[chunk.len().saturating_sub(cap)..];
        let fill = (cap - self.tail.len()).min(chunk.len());
        self.tail.extend_from_slice(&chunk[..fill]);
        let mut rest = &chunk[fill..];
        while !rest.is_empty() {
            let n = (cap - self.tail_pos).min(rest.len());
            self.tail[self.tail_pos..self.tail_pos + n].copy_from_slice(&rest[..n]);
            self.tail_pos = (self.tail_pos + n) % cap;
            rest = &rest[n..];
        }
    }

    fn feed_spool(&mut self, chunk: &[u8]) {
        let room = self.limits.spool.saturating_sub(self.spool_written);
        if room == 0 || self.spool_error.is_some() {
            return;
        }
        let chunk = &chunk[..usize::try_from(room).unwrap_or(usize::MAX).min(chunk.len())];
        if let Some(m) = self.memory.as_mut() {
            if m.len() + chunk.len() <= SPILL_AT {
                m.extend_from_slice(chunk);
                self.spool_written += chunk.len() as u64;
                return;
            }
            // Past the threshold: the spool file takes what memory held, then the rest.
            let held = self.memory.take().unwrap_or_default();
            match File::create(&self.spool_path).and_then(|mut f| f.write_all(&held).map(|()| f)) {
                Ok(f) => self.spool = Some(f),
                Err(e) => {
                    self.spool_error = Some(e.to_string());
                    return;
                }
            }
        }
        let Some(f) = self.spool.as_mut() else { return };
        if let Err(e) = f.write_all(chunk) {
            self.spool_error = Some(e.to_string());
            self.spool = None;
            return;
        }
        self.spool_written += chunk.len() as u64;
    }

    fn feed_lines(&mut self, chunk: &[u8], sink: &mut dyn LineSink) {
        let mut rest = chunk;
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            self.push_partial(&rest[..nl]);
            self.emit_line(Some(&mut *sink));
            rest = &rest[nl + 1..];
        }
        self.push_partial(rest);
        self.pending_line = !self.partial.is_empty();
    }

    fn push_partial(&mut self, bytes: &[u8]) {
        let room = MAX_LINE.saturating_sub(self.partial.len());
        self.partial
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn emit_line(&mut self, sink: Option<&mut dyn LineSink>) {
        self.lines += 1;
        if let Some(sink) = sink {
            let line = self.partial.strip_suffix(b"\r").unwrap_or(&self.partial);
            sink.line(self.stream, line);
        }
        self.partial.clear();
        self.pending_line = false;
    }

    /// Ends the stream: hands a last unterminated line to `sink`, writes the redacted
    /// excerpt file `excerpt_path` (only when the stream printed something) and
    /// returns the summary with the spool (in memory, or in its file — which the
    /// caller removes with [`remove_spool`]).
    #[must_use]
    pub fn finish(
        mut self,
        excerpt_path: &Path,
        workdir: &Path,
        sink: Option<&mut dyn LineSink>,
    ) -> (CaptureSummary, Spooled) {
        if self.pending_line {
            let wants = sink.as_ref().is_some_and(|s| s.wants(self.stream));
            self.emit_line(if wants { sink } else { None });
        }
        if let Some(f) = self.spool.as_mut() {
            if let Err(e) = f.flush() {
                self.spool_error = Some(e.to_string());
            }
        }
        let elided = self.bytes > (self.limits.head + self.limits.tail) as u64;
        let excerpt = if self.bytes == 0 {
            None
        } else {
            self.write_excerpt(excerpt_path, elided).ok().map(|()| {
                excerpt_path
                    .strip_prefix(workdir)
                    .unwrap_or(excerpt_path)
                    .to_string_lossy()
                    .into_owned()
            })
        };
        let summary = CaptureSummary {
            bytes: self.bytes,
            blake3: self.hasher.finalize().to_hex().to_string(),
            excerpt,
            elided,
            spool_truncated: self.spool_written < self.bytes || self.spool_error.is_some(),
            lines: self.lines,
        };
        let spooled = match self.memory.take() {
            Some(m) => Spooled::Memory(m),
            None => Spooled::File,
        };
        (summary, spooled)
    }

    fn ordered_tail(&self) -> Vec<u8> {
        let mut t = Vec::with_capacity(self.tail.len());
        t.extend_from_slice(&self.tail[self.tail_pos..]);
        t.extend_from_slice(&self.tail[..self.tail_pos]);
        t
    }

    /// The excerpt's bytes, before redaction.
    fn excerpt_bytes(&self, elided: bool) -> Vec<u8> {
        let tail = self.ordered_tail();
        let mut out = Vec::with_capacity(self.head.len() + tail.len() + 64);
        out.extend_from_slice(&self.head);
        if elided {
            let skipped = self.bytes - (self.head.len() + tail.len()) as u64;
            out.extend_from_slice(format!("\n[loopexec: {skipped} bytes elided]\n").as_bytes());
            out.extend_from_slice(&tail);
        } else if self.bytes > self.head.len() as u64 {
            // Short stream: head + the part of the tail after it covers it exactly.
            let missing = usize::try_from(self.bytes).unwrap_or(usize::MAX) - self.head.len();
            out.extend_from_slice(&tail[tail.len() - missing.min(tail.len())..]);
        }
        out
    }

    fn write_excerpt(&self, path: &Path, elided: bool) -> io::Result<()> {
        let bytes = crate::observe::secrets::redact(&self.excerpt_bytes(elided));
        std::fs::write(path, bytes)
    }
}

/// Paths of the spooled full streams, for the parser (removed by the caller after),
/// and what stayed in memory of them.
pub struct Spools {
    pub stdout: PathBuf,
    pub stderr: PathBuf,
    /// The streams still in memory (`None`: in its file, or not captured).
    memory: [Option<Vec<u8>>; 2],
}

impl Spools {
    /// Spools at `stdout` and `stderr` whose streams are in their files (or absent).
    #[must_use]
    pub fn on_disk(stdout: PathBuf, stderr: PathBuf) -> Spools {
        Spools {
            stdout,
            stderr,
            memory: [None, None],
        }
    }

    /// Records what a finished capture of `stream` spooled.
    pub fn set(&mut self, stream: Stream, spooled: Spooled) {
        let i = usize::from(stream == Stream::Stderr);
        self.memory[i] = match spooled {
            Spooled::Memory(m) => Some(m),
            Spooled::File => None,
        };
    }

    /// The in-memory content of `stream`, when it never reached its file.
    #[must_use]
    pub fn in_memory(&self, stream: Stream) -> Option<&[u8]> {
        self.memory[usize::from(stream == Stream::Stderr)].as_deref()
    }

    /// `stream` as the parsers and the kept output read it: the bytes still in memory,
    /// else its spool file (no file is written for a short stream).
    #[must_use]
    pub fn source(&self, stream: Stream) -> crate::check::parse::Source<'_> {
        let path = match stream {
            Stream::Stdout => &self.stdout,
            Stream::Stderr => &self.stderr,
        };
        match self.in_memory(stream) {
            Some(bytes) => crate::check::parse::Source::Memory { path, bytes },
            None => crate::check::parse::Source::File(path),
        }
    }

    /// Writes the streams that stayed in memory to their spool paths, so a reader of
    /// files (the parsers, the kept output) finds every stream there.
    ///
    /// # Errors
    /// The file cannot be written (the caller treats it as a capture failure).
    pub fn write_files(&mut self) -> io::Result<()> {
        for (i, path) in [&self.stdout, &self.stderr].into_iter().enumerate() {
            if let Some(m) = self.memory[i].take() {
                if let Err(e) = std::fs::write(path, &m) {
                    self.memory[i] = Some(m);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Empties both spool files once parsed (a stream that stayed in memory has
    /// none). The files are truncated, not unlinked: the next step of the run writes
    /// the same paths, and reusing their inodes spares a file creation per stream and
    /// step. The engine removes them when the run ends.
    pub fn remove(&self) {
        for (i, path) in [&self.stdout, &self.stderr].into_iter().enumerate() {
            if self.memory[i].is_none() {
                remove_spool(path);
            }
        }
    }
}

/// Empties a spool file once it has been parsed (truncated to 0 bytes, kept for the
/// next step; see [`Spools::remove`]). Errors are ignored: a spool left full costs
/// disk until the run ends, never correctness (the next step truncates it first).
pub fn remove_spool(path: &Path) {
    if let Ok(f) = std::fs::OpenOptions::new().write(true).open(path) {
        let _ = f.set_len(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect {
        lines: Vec<(Stream, Vec<u8>)>,
        both: bool,
    }
    impl LineSink for Collect {
        fn line(&mut self, s: Stream, line: &[u8]) {
            self.lines.push((s, line.to_vec()));
        }
        fn wants(&self, s: Stream) -> bool {
            self.both || s == Stream::Stdout
        }
    }

    fn spool_bytes(spooled: Spooled, path: &Path) -> Vec<u8> {
        match spooled {
            Spooled::Memory(m) => m,
            Spooled::File => std::fs::read(path).unwrap(),
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
        let mut c = Capture::new(Stream::Stdout, limits, &dir.path().join("s"));
        let data: Vec<u8> = (0..100u8).map(|i| b'a' + (i % 26)).collect();
        for chunk in data.chunks(7) {
            c.feed(chunk, None);
        }
        let (sum, spooled) = c.finish(&dir.path().join("x"), dir.path(), None);
        assert_eq!(sum.bytes, 100);
        assert_eq!(sum.blake3, blake3::hash(&data).to_hex().to_string());
        assert!(sum.elided && sum.spool_truncated);
        let ex = std::fs::read(dir.path().join("x")).unwrap();
        assert!(ex.starts_with(&data[..4]));
        assert!(ex.ends_with(&data[96..]));
        assert!(
            matches!(spooled, Spooled::Memory(_)),
            "10 bytes stay in memory"
        );
        assert_eq!(spool_bytes(spooled, &dir.path().join("s")), &data[..10]);
        assert!(
            !dir.path().join("s").exists(),
            "no spool file for a short stream"
        );
    }

    /// The tail ring, fed in chunks of every size, always ends holding the stream's
    /// last `tail` bytes in order.
    #[test]
    fn the_tail_ring_holds_the_last_bytes_whatever_the_chunking() {
        let data: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        for (tail, chunk) in [
            (1, 1),
            (7, 3),
            (7, 7),
            (7, 50),
            (64, 5),
            (64, 64),
            (64, 999),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let limits = CaptureLimits {
                head: 0,
                tail,
                spool: 0,
            };
            let mut c = Capture::new(Stream::Stdout, limits, &dir.path().join("s"));
            for part in data.chunks(chunk) {
                c.feed(part, None);
            }
            assert_eq!(
                c.ordered_tail(),
                &data[data.len() - tail..],
                "tail {tail}, chunks of {chunk}"
            );
        }
    }

    /// A stream spills to its file past `SPILL_AT`, and the spool holds every byte up
    /// to the limit either way.
    #[test]
    fn a_long_stream_spills_to_its_file_and_a_short_one_stays_in_memory() {
        for (len, spilled) in [
            (0, false),
            (100, false),
            (SPILL_AT, false),
            (SPILL_AT + 1, true),
            (3 * SPILL_AT, true),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s");
            let data: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let mut c = Capture::new(Stream::Stderr, CaptureLimits::default(), &path);
            for part in data.chunks(65_536) {
                c.feed(part, None);
            }
            let (sum, spooled) = c.finish(&dir.path().join("x"), dir.path(), None);
            assert_eq!(path.exists(), spilled, "length {len}");
            assert_eq!(matches!(spooled, Spooled::File), spilled, "length {len}");
            assert_eq!(spool_bytes(spooled, &path), data, "length {len}");
            assert!(!sum.spool_truncated);
            assert_eq!(
                sum.excerpt.is_some(),
                len > 0,
                "no excerpt for an empty stream"
            );
        }
    }

    /// Lines reach a sink that wants their stream; the count is the same with or
    /// without a sink.
    #[test]
    fn lines_reach_the_sink_and_are_counted_alike_without_one() {
        /// (chunks fed, lines the sink sees, lines counted)
        type Case<'a> = (&'a [&'a [u8]], &'a [&'a [u8]], u64);
        let cases: [Case; 5] = [
            (&[b"one\r\ntw", b"o\nthree"], &[b"one", b"two", b"three"], 3),
            (&[b"a\n", b"b\n"], &[b"a", b"b"], 2),
            (&[b"\n\n"], &[b"", b""], 2),
            (&[b"no newline"], &[b"no newline"], 1),
            (&[], &[], 0),
        ];
        for (chunks, want, count) in cases {
            let dir = tempfile::tempdir().unwrap();
            for with_sink in [true, false] {
                let mut sink = Collect::default();
                let mut c = Capture::new(
                    Stream::Stdout,
                    CaptureLimits::default(),
                    &dir.path().join("s"),
                );
                for ch in chunks {
                    c.feed(ch, with_sink.then_some(&mut sink as &mut dyn LineSink));
                }
                let (sum, _) = c.finish(
                    &dir.path().join("x"),
                    dir.path(),
                    with_sink.then_some(&mut sink as &mut dyn LineSink),
                );
                assert_eq!(sum.lines, count, "{chunks:?} sink {with_sink}");
                let got: Vec<&[u8]> = sink.lines.iter().map(|(_, l)| l.as_slice()).collect();
                let expect: &[&[u8]] = if with_sink { want } else { &[] };
                assert_eq!(got, expect, "{chunks:?}");
            }
        }
    }

    #[test]
    fn stderr_lines_reach_only_a_sink_that_asks_for_them() {
        let dir = tempfile::tempdir().unwrap();
        for both in [false, true] {
            let mut sink = Collect {
                lines: Vec::new(),
                both,
            };
            let mut c = Capture::new(
                Stream::Stderr,
                CaptureLimits::default(),
                &dir.path().join("s"),
            );
            c.feed(b"oops\n", Some(&mut sink));
            let (sum, _) = c.finish(&dir.path().join("x"), dir.path(), Some(&mut sink));
            assert_eq!(sum.lines, 1);
            assert_eq!(sink.lines.len(), usize::from(both));
        }
    }

    #[test]
    fn short_stream_excerpt_is_exact_and_redacted_before_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let limits = CaptureLimits {
            head: 8,
            tail: 8,
            spool: 1000,
        };
        let mut c = Capture::new(Stream::Stdout, limits, &dir.path().join("s"));
        c.feed(b"one\r\ntw", None);
        c.feed(b"o\nthree", None);
        let (sum, _) = c.finish(&dir.path().join("x"), dir.path(), None);
        assert_eq!(
            std::fs::read(dir.path().join("x")).unwrap(),
            b"one\r\ntwo\nthree"
        );
        assert!(!sum.elided);
        let key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH";
        let mut c = Capture::new(
            Stream::Stdout,
            CaptureLimits::default(),
            &dir.path().join("s"),
        );
        c.feed(format!("export ANTHROPIC_API_KEY={key}\n").as_bytes(), None);
        let (sum, _) = c.finish(&dir.path().join("k"), dir.path(), None);
        let written = std::fs::read_to_string(dir.path().join("k")).unwrap();
        assert!(!written.contains(key), "{written}");
        assert_eq!(sum.excerpt.as_deref(), Some("k"));
    }

    #[test]
    fn write_files_puts_what_stayed_in_memory_where_the_parser_reads() {
        let dir = tempfile::tempdir().unwrap();
        let mut sp = Spools::on_disk(dir.path().join("o"), dir.path().join("e"));
        sp.set(Stream::Stdout, Spooled::Memory(b"out".to_vec()));
        sp.set(Stream::Stderr, Spooled::Memory(Vec::new()));
        assert_eq!(sp.in_memory(Stream::Stdout), Some(&b"out"[..]));
        sp.write_files().unwrap();
        assert_eq!(std::fs::read(dir.path().join("o")).unwrap(), b"out");
        assert_eq!(std::fs::read(dir.path().join("e")).unwrap(), b"");
        sp.remove();
        // emptied, kept for the next step to reuse
        assert_eq!(std::fs::read(dir.path().join("o")).unwrap(), b"");
        assert_eq!(std::fs::read(dir.path().join("e")).unwrap(), b"");
    }
}
