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

use serde_json::{Map, Value};
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
}

/// RFC 3339 UTC timestamp with milliseconds, e.g. `2026-11-29T18:02:12.345Z`.
#[must_use]
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    now.format(&fmt)
        .unwrap_or_else(|_| now.unix_timestamp().to_string())
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
            },
            lines,
        ))
    }

    /// Checks that the receipt on disk is exactly what this writer wrote (a step must
    /// not edit loopexec's record of it). Returns what differs.
    ///
    /// # Errors
    /// A description of the difference (length, content, or the file is gone).
    pub fn untouched(&self) -> Result<(), String> {
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
        Ok(())
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
        let body = serde_json::to_value(event).map_err(std::io::Error::other)?;
        let mut obj = Map::new();
        obj.insert("schema".into(), Value::from(SCHEMA));
        obj.insert("seq".into(), Value::from(self.next_seq));
        let ts = now_rfc3339();
        obj.insert("ts".into(), Value::from(ts.clone()));
        obj.insert(
            "prev".into(),
            self.prev.clone().map_or(Value::Null, Value::from),
        );
        if let Value::Object(fields) = body {
            for (k, v) in fields {
                obj.insert(k, v);
            }
        }
        let line = serde_json::to_vec(&Value::Object(obj)).map_err(std::io::Error::other)?;
        // Secrets never reach a receipt: a provider key written into a command line
        // or echoed into a message is replaced before the line is hashed and written.
        let mut line = crate::observe::secrets::redact(&line);
        let hash = blake3::hash(&line).to_hex().to_string();
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.flush()?;
        if matches!(event, Event::Halted(_)) {
            self.file.sync_data()?;
        }
        self.digest.update(&line);
        self.len += line.len() as u64;
        self.prev = Some(hash);
        self.next_seq += 1;
        let raw = &line[..line.len() - 1];
        let value: Value = serde_json::from_slice(raw).map_err(std::io::Error::other)?;
        let written = parse_value(value, raw).map_err(|e| match e {
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
        let value: Value = match serde_json::from_slice(raw) {
            Ok(v) => v,
            Err(_) if !complete => {
                return Err(ReadError::TornTail {
                    path: path.to_path_buf(),
                    line: n,
                })
            }
            Err(e) => {
                return Err(ReadError::Bad {
                    path: path.to_path_buf(),
                    line: n,
                    message: e.to_string(),
                })
            }
        };
        let line = parse_value(value, raw).map_err(|e| match e {
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
    Newer(u64),
    Bad(String),
}

/// One receipt line from its JSON value and raw bytes (the bytes give its hash).
fn parse_value(value: Value, raw: &[u8]) -> Result<Line, LineError> {
    let bad = |m: &str| LineError::Bad(m.into());
    let schema = value
        .get("schema")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("no schema"))?;
    if schema > u64::from(SCHEMA) {
        return Err(LineError::Newer(schema));
    }
    let seq = value
        .get("seq")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("no seq"))?;
    let ts = value
        .get("ts")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let prev = value
        .get("prev")
        .and_then(Value::as_str)
        .map(str::to_string);
    let event: Event = serde_json::from_value(value).map_err(|e| bad(&e.to_string()))?;
    Ok(Line {
        seq,
        ts,
        prev,
        event,
        hash: blake3::hash(raw).to_hex().to_string(),
    })
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

    /// Before: `guards` and `usage` were untyped JSON, and a payload of the wrong
    /// shape read as "no measurements" or "no usage" — the guards off and the spend 0.
    /// Now the line does not parse: reading the receipt fails, naming the line.
    #[test]
    fn a_payload_of_the_wrong_shape_fails_when_read() {
        let good = r#"{"schema":1,"seq":0,"ts":"t","prev":null,"event":"exec_finished","iteration":1,"step":{"command":"x","exit_code":0,"signal":null,"spawn_error":null,"duration_ms":1,"timed_out":false,"stalled":false,"stopped":null,"leaked_processes":false,"pipe_held_open":false,"stdout":{"bytes":0,"blake3":"","excerpt":"","elided":false,"spool_truncated":false,"lines":0},"stderr":{"bytes":0,"blake3":"","excerpt":"","elided":false,"spool_truncated":false,"lines":0}}}"#;
        let v: Value = serde_json::from_str(good).unwrap();
        assert!(parse_value(v.clone(), good.as_bytes()).is_ok());
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
            match parse_value(w, raw.as_bytes()) {
                Err(LineError::Bad(m)) => assert!(!m.is_empty(), "{field}: {bad}"),
                _ => panic!("{field} = {bad} was read"),
            }
        }
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
