//! The receipt: `.loopexec/runs/<run-id>.jsonl`, one typed, versioned, hash-chained
//! event per line.
//!
//! Each line is a JSON object whose first fields are the envelope — `schema`
//! ([`SCHEMA`]), `seq` (0, 1, 2, …), `ts` (RFC 3339 UTC, millisecond precision) and
//! `prev` (hex blake3 of the previous line's bytes, without its newline; `null` on the
//! first line) — followed by `event` (the type tag) and the event's fields.
//!
//! Invariants:
//! * a line is written with one `write` and flushed before loopexec acts on what it
//!   records, so a run killed with SIGKILL leaves a receipt whose every complete line
//!   parses (a torn last line, if the kernel ever produced one, is reported by
//!   [`read`] as [`ReadError::TornTail`] and ignored by readers that only need the
//!   observations);
//! * the chain makes any edit, insertion or deletion detectable ([`verify_chain`]);
//! * secrets never reach a line: step excerpts are files and the receipt carries only
//!   variable *names* that were stripped, never values.

pub mod attest;
pub mod events;
pub mod facts;
pub mod fingerprint;
pub mod judgment;
pub mod replay;
mod schema;

pub use events::{Event, RunStarted};

use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// Receipt schema version written by this loopexec.
pub const SCHEMA: u32 = 1;

/// Problems writing or reading a receipt.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read receipt {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("receipt {path} line {line}: {message}")]
    Bad {
        path: PathBuf,
        line: u64,
        message: String,
    },
    #[error("receipt {path} line {line} is torn (incomplete write)")]
    TornTail { path: PathBuf, line: u64 },
    #[error("receipt {path} was written with schema {found}; this loopexec reads up to {SCHEMA}")]
    NewerSchema { path: PathBuf, found: u64 },
}

/// One parsed receipt line.
#[derive(Debug, Clone)]
pub struct Line {
    pub seq: u64,
    pub ts: String,
    pub prev: Option<String>,
    pub event: Event,
    /// blake3 of the raw line (what the next line's `prev` must be).
    pub hash: String,
}

/// A receipt line as written: the chain fields, then the event's own fields (its
/// `event` tag first), in one JSON object.
#[derive(Serialize)]
struct Envelope<'a> {
    schema: u32,
    seq: u64,
    ts: &'a str,
    prev: Option<&'a str>,
    #[serde(flatten)]
    event: &'a Event,
}

/// Appends events to a receipt file, keeping the chain.
pub struct Writer {
    file: File,
    path: PathBuf,
    next_seq: u64,
    prev: Option<String>,
    /// blake3 and length of every byte this writer (and the receipt it resumed) holds,
    /// to notice a receipt modified behind its back ([`Writer::untouched`]).
    digest: blake3::Hasher,
    len: u64,
    /// What makes [`Writer::untouched`] cheap: see [`Watch`].
    watch: Watch,
}

/// RFC 3339 UTC timestamp with milliseconds, e.g. `2026-11-29T18:02:12.345Z`.
#[must_use]
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        now.millisecond()
    )
}

impl Writer {
    /// Creates a new receipt; fails if the file already exists (run ids are unique).
    ///
    /// # Errors
    /// I/O errors, including `AlreadyExists`.
    pub fn create(path: &Path) -> std::io::Result<Writer> {
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(path)?;
        Ok(Writer {
            file,
            path: path.to_path_buf(),
            next_seq: 0,
            prev: None,
            digest: blake3::Hasher::new(),
            len: 0,
            watch: Watch::new(WATCH_FROM_BYTES),
        })
    }

    /// Opens an existing receipt to continue it (`run --resume`), after reading it to
    /// find the chain's end.
    ///
    /// # Errors
    /// The receipt cannot be read or its last line is broken.
    pub fn resume(path: &Path) -> Result<(Writer, Vec<Line>), ReadError> {
        let lines = read(path)?;
        if let Some((line, message)) = verify_chain(&lines) {
            return Err(ReadError::Bad {
                path: path.to_path_buf(),
                line,
                message: format!("the hash chain is broken ({message}); the run cannot be resumed"),
            });
        }
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|source| ReadError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        let (next_seq, prev) = match lines.last() {
            Some(l) => (l.seq + 1, Some(l.hash.clone())),
            None => (0, None),
        };
        let bytes = std::fs::read(path).map_err(|source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut digest = blake3::Hasher::new();
        digest.update(&bytes);
        Ok((
            Writer {
                file,
                path: path.to_path_buf(),
                next_seq,
                prev,
                digest,
                len: bytes.len() as u64,
                watch: Watch::new(WATCH_FROM_BYTES),
            },
            lines,
        ))
    }

    /// Checks that the receipt on disk is exactly what this writer wrote (a step must
    /// not edit loopexec's record of it). Returns what differs.
    ///
    /// # Errors
    /// A description of the difference (length, content, or the file is gone).
    pub fn untouched(&mut self) -> Result<(), String> {
        if self.watch.unchanged(&self.path, self.len) {
            return Ok(());
        }
        let bytes = std::fs::read(&self.path).map_err(|e| format!("cannot be read ({e})"))?;
        if bytes.len() as u64 != self.len {
            return Err(format!(
                "{} bytes where loopexec wrote {}",
                bytes.len(),
                self.len
            ));
        }
        if blake3::hash(&bytes) != self.digest.finalize() {
            return Err("its content differs from what loopexec wrote".into());
        }
        self.watch.verified(&self.path, self.len);
        Ok(())
    }

    /// Hex blake3 of every byte written to the receipt so far (what
    /// [`Self::untouched`] compares the file with).
    #[must_use]
    pub fn digest_hex(&self) -> String {
        self.digest.finalize().to_hex().to_string()
    }

    /// The receipt's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `event` as one line and flushes it; returns the line's `ts`.
    ///
    /// # Errors
    /// Serialization or I/O errors; the event is then not recorded.
    pub fn append(&mut self, event: &Event) -> std::io::Result<String> {
        self.append_line(event).map(|l| l.ts)
    }

    /// Appends `event` as one line, flushes it, and returns the line exactly as
    /// written and read back (timestamp and redaction included): what the trajectory
    /// folds is what the receipt holds.
    ///
    /// # Errors
    /// Serialization or I/O errors (the disk full among them); the event is then not
    /// recorded.
    pub fn append_line(&mut self, event: &Event) -> std::io::Result<Line> {
        let ts = now_rfc3339();
        let line = serde_json::to_vec(&Envelope {
            schema: SCHEMA,
            seq: self.next_seq,
            ts: &ts,
            prev: self.prev.as_deref(),
            event,
        })
        .map_err(std::io::Error::other)?;
        // Secrets never reach a receipt: a provider key written into a command line
        // or echoed into a message is replaced before the line is hashed and written.
        let mut line = crate::observe::secrets::redact(&line);
        let hash = blake3::hash(&line).to_hex().to_string();
        line.push(b'\n');
        self.watch.before_write();
        self.file.write_all(&line)?;
        self.file.flush()?;
        if matches!(event, Event::Halted(_)) {
            self.file.sync_data()?;
        }
        self.digest.update(&line);
        self.len += line.len() as u64;
        self.watch.after_write(&self.file);
        self.prev = Some(hash);
        self.next_seq += 1;
        let raw = &line[..line.len() - 1];
        let written = parse_line(raw).map_err(|e| match e {
            LineError::Json(e) => std::io::Error::other(e),
            LineError::Newer(n) => std::io::Error::other(format!("schema {n}")),
            LineError::Bad(m) => {
                std::io::Error::other(format!("the line written does not read back: {m}"))
            }
        })?;
        debug_assert_eq!(written.ts, ts);
        Ok(written)
    }

    /// The receipt's head: blake3 of its last line and the number of lines.
    #[must_use]
    pub fn head(&self) -> (Option<String>, u64) {
        (self.prev.clone(), self.next_seq)
    }
}

/// Notices, without reading the receipt, whether anything but this writer touched
/// it — so [`Writer::untouched`], asked after every exec, re-hashes the whole file
/// only when something may have changed it, instead of every time (a receipt grows by
/// ~10 KB per iteration; re-hashing it after each exec made a long run quadratic).
///
/// The receipt counts as unchanged, with no read, only when all of these hold:
/// * an inotify watch on it (modify, attribute change, open, close after writing,
///   move, delete) saw no event between this writer's own appends (events are
///   collected just before each append, so an edit made between two appends is
///   never taken for ours);
/// * `stat` gives the inode, length, mtime and ctime this writer saw after its own
///   last append (a write through a memory mapping raises no inotify event but moves
///   mtime and ctime; replacing the file changes the inode);
/// * the receipt has not doubled in length since its last full check (so even an
///   edit that slipped past both — a writer racing one of our appends within the same
///   clock tick, through a mapping made before — is caught after at most as many
///   bytes again, and the total re-hashing of a run stays linear in its length).
///
/// Otherwise, and wherever inotify is unavailable, the file is read and hashed in
/// full, as before. So is a receipt shorter than [`WATCH_FROM_BYTES`]: re-hashing it
/// costs less than an inotify instance does, whose close waits for an RCU grace period
/// (5–20 ms at the end of every run); the watch is set up when the receipt first
/// reaches that length. An edit before the recorded length is therefore still caught at
/// the next exec; the hash chain and the ledger's recorded head catch it again at
/// `check` and `--resume`.
struct Watch {
    /// The inotify descriptor (`None`: not set up yet, or unavailable: re-hash).
    fd: Option<std::os::fd::OwnedFd>,
    /// The receipt length from which the watch is set up (see [`WATCH_FROM_BYTES`]).
    from_len: u64,
    /// The watch was set up (or tried and found unavailable).
    started: bool,
    /// An event not explained by our own append was seen since the last full check.
    dirty: bool,
    /// (dev, inode, length, mtime ns, ctime ns) after our last append.
    stat: Option<(u64, u64, u64, i128, i128)>,
    /// Length at the last full check.
    verified_len: u64,
    /// Full checks made (for tests: the cheap path must be the one tested).
    full_checks: u64,
}

/// The receipt length (bytes) from which [`Writer::untouched`] watches the receipt
/// instead of re-hashing it: 128 KiB, about 75 trivial iterations' lines. Reading and
/// hashing that much costs ~0.05 ms, and all the re-hashes below it together ~2.5 ms:
/// less than the one close of an inotify instance they spare a shorter run.
pub const WATCH_FROM_BYTES: u64 = 128 * 1024;

impl Drop for Watch {
    fn drop(&mut self) {
        // Closing an inotify instance waits for an RCU grace period.
        if let Some(fd) = self.fd.take() {
            crate::observe::watch::close_in_background(fd);
        }
    }
}

impl Watch {
    /// A watch that starts once the receipt reaches `from_len` bytes.
    fn new(from_len: u64) -> Watch {
        Watch {
            fd: None,
            from_len,
            started: false,
            dirty: true,
            stat: None,
            verified_len: 0,
            full_checks: 0,
        }
    }

    /// Sets up the inotify watch when the receipt has reached `from_len`.
    fn start_at(&mut self, path: &Path, len: u64) {
        if !self.started && len >= self.from_len {
            self.started = true;
            self.fd = Self::inotify(path);
            // Whatever happened before the watch existed is checked in full once.
            self.dirty = true;
            self.drain();
        }
    }

    fn inotify(path: &Path) -> Option<std::os::fd::OwnedFd> {
        use std::os::fd::FromRawFd;
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: inotify_init1 takes flags and returns a new descriptor or -1.
        let raw = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        let fd = (raw >= 0).then(|| {
            // SAFETY: the kernel just returned this descriptor; nothing else owns it.
            unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) }
        });
        let fd = fd.filter(|fd| {
            use std::os::fd::AsRawFd;
            let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
                return false;
            };
            let mask = libc::IN_MODIFY
                | libc::IN_ATTRIB
                | libc::IN_OPEN
                | libc::IN_CLOSE_WRITE
                | libc::IN_MOVE_SELF
                | libc::IN_DELETE_SELF;
            // SAFETY: a valid descriptor and a NUL-terminated path.
            unsafe { libc::inotify_add_watch(fd.as_raw_fd(), c.as_ptr(), mask) >= 0 }
        });
        fd
    }

    /// Reads every queued event; returns true when there was one.
    fn drain(&mut self) -> bool {
        use std::os::fd::AsRawFd;
        let Some(fd) = &self.fd else { return true };
        let mut any = false;
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: reading into a buffer we own, at most its length.
            let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            any = true;
        }
        any
    }

    fn before_write(&mut self) {
        if self.drain() {
            self.dirty = true;
        }
    }

    fn after_write(&mut self, file: &File) {
        // Our own append's events.
        self.drain();
        self.stat = file.metadata().ok().map(|m| stat_key(&m));
    }

    fn verified(&mut self, path: &Path, len: u64) {
        self.drain();
        self.dirty = false;
        self.verified_len = len;
        self.full_checks += 1;
        self.stat = std::fs::metadata(path).ok().map(|m| stat_key(&m));
    }

    fn unchanged(&mut self, path: &Path, len: u64) -> bool {
        self.start_at(path, len);
        if self.drain() {
            self.dirty = true;
        }
        if self.fd.is_none() || self.dirty || len >= self.verified_len.saturating_mul(2).max(1) {
            return false;
        }
        let now = std::fs::metadata(path).ok().map(|m| stat_key(&m));
        now.is_some() && now == self.stat && now.is_some_and(|k| k.2 == len)
    }
}

fn stat_key(m: &std::fs::Metadata) -> (u64, u64, u64, i128, i128) {
    use std::os::unix::fs::MetadataExt;
    (
        m.dev(),
        m.ino(),
        m.len(),
        i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
    )
}

/// Reads every line of a receipt.
///
/// # Errors
/// [`ReadError`] naming the file and line.
pub fn read(path: &Path) -> Result<Vec<Line>, ReadError> {
    let f = File::open(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut out = Vec::new();
    let mut reader = BufReader::new(f);
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        let read = reader
            .read_until(b'\n', &mut buf)
            .map_err(|source| ReadError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        if read == 0 {
            break;
        }
        n += 1;
        let complete = buf.ends_with(b"\n");
        let raw = buf.strip_suffix(b"\n").unwrap_or(&buf);
        if raw.is_empty() {
            continue;
        }
        let line = parse_line(raw).map_err(|e| match e {
            LineError::Json(_) if !complete => ReadError::TornTail {
                path: path.to_path_buf(),
                line: n,
            },
            LineError::Json(e) => ReadError::Bad {
                path: path.to_path_buf(),
                line: n,
                message: e.to_string(),
            },
            LineError::Newer(found) => ReadError::NewerSchema {
                path: path.to_path_buf(),
                found,
            },
            LineError::Bad(message) => ReadError::Bad {
                path: path.to_path_buf(),
                line: n,
                message,
            },
        })?;
        out.push(line);
    }
    Ok(out)
}

enum LineError {
    /// Not JSON at all (a torn last line, or garbage).
    Json(serde_json::Error),
    Newer(u64),
    Bad(String),
}

/// A receipt line's envelope fields; the event's own fields are skipped here and
/// read by [`Event`]'s deserializer from the same bytes.
#[derive(serde::Deserialize)]
struct Head {
    schema: Option<u64>,
    seq: Option<u64>,
    #[serde(default)]
    ts: Option<String>,
    #[serde(default)]
    prev: Option<String>,
    /// The event's tag, read here only to pick [`Event::CheckFinished`]'s fast path.
    #[serde(default)]
    event: Option<String>,
}

/// True when `raw` (one line, without its newline) is a well-formed `halted` line.
pub(crate) fn is_halted_line(raw: &[u8]) -> bool {
    parse_line(raw).is_ok_and(|l| matches!(l.event, Event::Halted(_)))
}

/// One receipt line from its raw bytes (without the newline; they also give its
/// hash). The envelope is read first, so a line of a newer schema is reported as
/// such before its event is read; the event is then deserialized from the same
/// bytes, without an intermediate `serde_json::Value` (a check's line holds every test of the
/// run, and the recorder reads back each line it writes).
/// One receipt line from its raw bytes (without the newline), parsed as [`read`]
/// parses each line; `None` when it is not a valid line of a schema this loopexec
/// reads. Its chain (`prev`) is not checked: there is no line before it here.
#[must_use]
pub fn line_from_bytes(raw: &[u8]) -> Option<Line> {
    parse_line(raw).ok()
}

fn parse_line(raw: &[u8]) -> Result<Line, LineError> {
    let bad = |m: &str| LineError::Bad(m.into());
    let head: Head = serde_json::from_slice(raw).map_err(|e| {
        if e.is_data() {
            LineError::Bad(e.to_string())
        } else {
            LineError::Json(e)
        }
    })?;
    let schema = head.schema.ok_or_else(|| bad("no schema"))?;
    if schema > u64::from(SCHEMA) {
        return Err(LineError::Newer(schema));
    }
    let seq = head.seq.ok_or_else(|| bad("no seq"))?;
    let event = parse_event(raw, head.event.as_deref()).map_err(|e| bad(&e.to_string()))?;
    Ok(Line {
        seq,
        ts: head.ts.unwrap_or_default(),
        prev: head.prev,
        event,
        hash: blake3::hash(raw).to_hex().to_string(),
    })
}

/// The event of a line whose tag is `tag`. A `check_finished` line (every test of the
/// run, the largest line by far) is deserialized straight into its struct: an
/// internally tagged enum first buffers the whole object as generic content to find
/// its tag, which for a large line costs as much as the decoding itself. Unknown
/// fields (the envelope's, the tag) are ignored by both paths alike.
fn parse_event(raw: &[u8], tag: Option<&str>) -> serde_json::Result<Event> {
    if tag == Some("check_finished") {
        return serde_json::from_slice::<events::CheckFinished>(raw)
            .map(|c| Event::CheckFinished(Box::new(c)));
    }
    serde_json::from_slice(raw)
}

/// Checks the hash chain and the sequence numbers; returns the first broken line
/// (1-based) with what is wrong.
#[must_use]
pub fn verify_chain(lines: &[Line]) -> Option<(u64, String)> {
    let mut prev: Option<&str> = None;
    for (i, l) in lines.iter().enumerate() {
        let expect_seq = i as u64;
        if l.seq != expect_seq {
            return Some((
                expect_seq + 1,
                format!("seq {} where {expect_seq} was expected", l.seq),
            ));
        }
        if l.prev.as_deref() != prev {
            return Some((
                expect_seq + 1,
                "prev does not match the previous line's blake3".into(),
            ));
        }
        prev = Some(&l.hash);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use events::IterationStarted;

    /// Every way of changing the receipt behind the writer's back is caught by
    /// `untouched`, however many clean checks came before (the cheap path must
    /// never hide an edit).
    /// A receipt shorter than `WATCH_FROM_BYTES` has no inotify instance (its close
    /// would wait for an RCU grace period) and is re-hashed at every look; the watch
    /// starts when the receipt reaches the threshold, and an edit made before then is
    /// still caught by the first look after it.
    #[test]
    fn a_short_receipt_is_re_hashed_and_the_watch_starts_at_the_threshold() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.jsonl");
        let mut w = Writer::create(&p).unwrap();
        w.append(&Event::IterationStarted(IterationStarted { iteration: 0 }))
            .unwrap();
        let threshold = w.len * 3;
        w.watch = Watch::new(threshold);
        for i in 1..3 {
            let before = w.watch.full_checks;
            assert_eq!(w.untouched(), Ok(()));
            assert_eq!(w.watch.full_checks, before + 1, "line {i}: not re-hashed");
            assert!(
                w.watch.fd.is_none(),
                "line {i}: watched below the threshold"
            );
            w.append(&Event::IterationStarted(IterationStarted { iteration: i }))
                .unwrap();
        }
        // at the threshold: set up, and the first look is a full one
        assert!(w.len >= threshold);
        let before = w.watch.full_checks;
        assert_eq!(w.untouched(), Ok(()));
        assert!(w.watch.fd.is_some(), "no watch at the threshold");
        assert_eq!(w.watch.full_checks, before + 1);
        // then the cheap path …
        assert_eq!(w.untouched(), Ok(()));
        assert_eq!(
            w.watch.full_checks,
            before + 1,
            "the cheap path was not taken"
        );
        // … which still sees an edit
        {
            use std::os::unix::fs::FileExt;
            let f = OpenOptions::new().write(true).open(&p).unwrap();
            f.write_at(b"[", 0).unwrap();
        }
        assert!(w.untouched().is_err());
    }

    #[test]
    fn untouched_catches_every_edit_and_passes_an_untouched_receipt() {
        type Edit = fn(&Path);
        let edits: [(&str, Edit); 6] = [
            ("same-size edit before the end", |p| {
                let t = std::fs::read_to_string(p).unwrap().replacen(
                    "\"iteration\":1",
                    "\"iteration\":7",
                    1,
                );
                std::fs::write(p, t).unwrap();
            }),
            ("append", |p| {
                let mut f = OpenOptions::new().append(true).open(p).unwrap();
                f.write_all(b"{\"forged\":1}\n").unwrap();
            }),
            ("truncate", |p| {
                let f = OpenOptions::new().write(true).open(p).unwrap();
                let n = f.metadata().unwrap().len();
                f.set_len(n - 1).unwrap();
            }),
            ("replace by rename", |p| {
                let t = std::fs::read(p).unwrap();
                let mut t2 = t.clone();
                t2[10] ^= 1;
                let tmp = p.with_extension("tmp");
                std::fs::write(&tmp, t2).unwrap();
                std::fs::rename(&tmp, p).unwrap();
            }),
            ("same-size edit at byte 0 through pwrite", |p| {
                use std::os::unix::fs::FileExt;
                let f = OpenOptions::new().write(true).open(p).unwrap();
                f.write_at(b"[", 0).unwrap();
            }),
            ("delete", |p| std::fs::remove_file(p).unwrap()),
        ];
        for (what, edit) in edits {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("r.jsonl");
            let mut w = Writer::create(&p).unwrap();
            // watched from the first byte, so that the cheap path is the one tested
            w.watch = Watch::new(0);
            for i in 0..20 {
                w.append(&Event::IterationStarted(IterationStarted { iteration: i }))
                    .unwrap();
                assert_eq!(w.untouched(), Ok(()), "{what}: clean after line {i}");
                assert_eq!(w.untouched(), Ok(()), "{what}: clean when asked twice");
            }
            // The last clean checks took the cheap path (no re-hash) …
            let full = w.watch.full_checks;
            w.append(&Event::IterationStarted(IterationStarted { iteration: 20 }))
                .unwrap();
            assert_eq!(w.untouched(), Ok(()));
            assert_eq!(
                w.watch.full_checks, full,
                "{what}: the cheap path was not taken"
            );
            // … and still an edit is caught.
            edit(&p);
            assert!(w.untouched().is_err(), "{what}: not caught");
            assert!(
                w.untouched().is_err(),
                "{what}: forgotten on the second look"
            );
        }
    }

    /// Before: `guards` and `usage` were untyped JSON, and a payload of the wrong
    /// shape read as "no measurements" or "no usage" — the guards off and the spend 0.
    /// Now the line does not parse: reading the receipt fails, naming the line.
    #[test]
    fn a_payload_of_the_wrong_shape_fails_when_read() {
        let good = r#"{"schema":1,"seq":0,"ts":"t","prev":null,"event":"exec_finished","iteration":1,"step":{"command":"x","exit_code":0,"signal":null,"spawn_error":null,"duration_ms":1,"timed_out":false,"stalled":false,"stopped":null,"leaked_processes":false,"pipe_held_open":false,"stdout":{"bytes":0,"blake3":"","excerpt":"","elided":false,"spool_truncated":false,"lines":0},"stderr":{"bytes":0,"blake3":"","excerpt":"","elided":false,"spool_truncated":false,"lines":0}}}"#;
        let v: serde_json::Value = serde_json::from_str(good).unwrap();
        assert!(parse_line(good.as_bytes()).is_ok());
        // (field, value of the wrong shape)
        let rows = [
            ("guards", serde_json::json!("measured")),
            (
                "guards",
                serde_json::json!({"changed_since_t0": "src/lib.rs"}),
            ),
            ("usage", serde_json::json!({"cost_usd": "0.5"})),
            ("usage", serde_json::json!([1, 2])),
        ];
        for (field, bad) in rows {
            let mut w = v.clone();
            w[field] = bad.clone();
            let raw = w.to_string();
            match parse_line(raw.as_bytes()) {
                Err(LineError::Bad(m)) => assert!(!m.is_empty(), "{field}: {bad}"),
                _ => panic!("{field} = {bad} was read"),
            }
        }
    }

    /// A `check_finished` line read through its fast path is the event the generic
    /// path reads, field for field; a line of another kind takes the generic path.
    #[test]
    fn a_check_line_reads_the_same_through_its_fast_path() {
        use crate::check::model::Outcome;
        let mut event = crate::detect::testkit::check(
            3,
            1,
            Some("abc"),
            &[
                ("a", Outcome::Failed),
                ("b", Outcome::Passed),
                ("c", Outcome::Skipped),
            ],
        );
        if let Event::CheckFinished(c) = &mut event {
            c.parsed.tests[0].message = Some("boom".into());
            c.fingerprint = Some("b3v1:x".into());
        }
        let dir = tempfile::tempdir().unwrap();
        let mut w = Writer::create(&dir.path().join("r.jsonl")).unwrap();
        w.append(&Event::IterationStarted(IterationStarted { iteration: 3 }))
            .unwrap();
        let line = w.append_line(&event).unwrap();
        let text = std::fs::read_to_string(dir.path().join("r.jsonl")).unwrap();
        let raw = text.lines().nth(1).unwrap().as_bytes();
        let generic: Event = serde_json::from_slice(raw).unwrap();
        let fast = parse_event(raw, Some("check_finished")).unwrap();
        assert!(matches!(fast, Event::CheckFinished(_)));
        assert_eq!(format!("{fast:?}"), format!("{generic:?}"));
        assert_eq!(format!("{:?}", line.event), format!("{generic:?}"));
        let first = text.lines().next().unwrap().as_bytes();
        assert!(matches!(
            parse_event(first, Some("iteration_started")).unwrap(),
            Event::IterationStarted(_)
        ));
    }

    #[test]
    fn chain_round_trips_and_detects_edits() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.jsonl");
        let mut w = Writer::create(&p).unwrap();
        for i in 0..3 {
            w.append(&Event::IterationStarted(IterationStarted { iteration: i }))
                .unwrap();
        }
        assert!(
            Writer::create(&p).is_err(),
            "a receipt is never overwritten"
        );
        let lines = read(&p).unwrap();
        assert_eq!(lines.len(), 3);
        assert!(verify_chain(&lines).is_none());
        let text =
            std::fs::read_to_string(&p)
                .unwrap()
                .replacen("\"iteration\":1", "\"iteration\":7", 1);
        std::fs::write(&p, text).unwrap();
        let (line, _) = verify_chain(&read(&p).unwrap()).expect("edit detected");
        assert_eq!(line, 3);
        // An edited receipt is never continued.
        let err = Writer::resume(&p)
            .err()
            .expect("resume refuses a broken chain");
        assert!(err.to_string().contains("hash chain is broken"), "{err}");
    }

    #[test]
    fn resume_continues_the_chain_and_append_line_returns_the_line_written() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.jsonl");
        let mut w = Writer::create(&p).unwrap();
        let first = w
            .append_line(&Event::IterationStarted(IterationStarted { iteration: 0 }))
            .unwrap();
        let on_disk = read(&p).unwrap();
        assert_eq!(on_disk[0].hash, first.hash);
        assert_eq!(on_disk[0].ts, first.ts);
        assert_eq!(w.head(), (Some(first.hash.clone()), 1));
        let (mut w, old) = Writer::resume(&p).unwrap();
        w.append(&Event::IterationStarted(IterationStarted { iteration: 9 }))
            .unwrap();
        let lines = read(&p).unwrap();
        assert_eq!(lines.last().unwrap().seq, old.len() as u64);
        assert!(verify_chain(&lines).is_none());
    }
}
