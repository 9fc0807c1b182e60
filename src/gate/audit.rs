//! The run's audit log of agent actions: `.loopexec/runs/<run>/audit.jsonl`.
//!
//! JSON Lines, append-only, hash-chained like the receipt: each record carries `seq`
//! (0, 1, …) and `prev` (hex blake3 of the previous line's bytes, `null` first), so an
//! edit, insertion or deletion breaks the chain ([`read`] says where). Every call is
//! logged before the gate answers (`phase` `pre`, outcome `allowed` or `declined`),
//! and again after it ran when the agent reports it (`post`, outcome `executed` or
//! `failed`). Shell targets and descriptions are redacted before they are written;
//! content being written is never logged. The schema is
//! `schemas/audit-record.schema.json`.

use super::{ActionView, ActionsSeen, Finding};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

/// One audit record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Record {
    pub seq: u64,
    /// RFC 3339 UTC.
    pub ts: String,
    pub prev: Option<String>,
    pub run_id: String,
    pub iteration: u32,
    /// `claude`, `gemini` or `generic`.
    pub agent: String,
    /// `pre` or `post`.
    pub phase: String,
    pub tool: String,
    pub target: String,
    pub description: String,
    /// `read_only`, `reversible_write` or `destructive`.
    pub classification: String,
    /// The rule that decided the classification.
    pub rule: String,
    /// `allowed`, `declined` (pre), `executed`, `failed` (post).
    pub outcome: String,
    /// Why a call was declined, or what confirmed it.
    pub reason: String,
    pub findings: Vec<Finding>,
    /// `<run>:<seq>` of the pre record (what `confirm`/`deny` name).
    pub action_id: String,
    pub tool_use_id: Option<String>,
    /// Who confirmed a destructive call, and when.
    pub confirmed_by: Option<String>,
    pub confirmed_at: Option<String>,
}

/// Problems with the audit log.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("audit log {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

fn redact(s: &str) -> String {
    String::from_utf8_lossy(&crate::observe::secrets::redact(s.as_bytes())).into_owned()
}

/// Appends `rec` (its `seq`, `prev` and `ts` are set here) under an exclusive lock,
/// so hooks running in parallel keep one chain. Returns the record as written.
///
/// # Errors
/// [`AuditError::Io`] when the log cannot be opened, locked or written.
pub fn append(path: &Path, mut rec: Record) -> Result<Record, AuditError> {
    let io = |source| AuditError::Io {
        path: path.display().to_string(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut f = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(io)?;
    // SAFETY: flock on a valid, owned descriptor; released when `f` is closed.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(io(std::io::Error::last_os_error()));
    }
    let mut text = String::new();
    f.rewind().map_err(io)?;
    f.read_to_string(&mut text).map_err(io)?;
    let last = text.lines().rfind(|l| !l.trim().is_empty());
    let (seq, prev) = match last {
        Some(l) => {
            let seq = serde_json::from_str::<Record>(l).map_or(0, |r| r.seq + 1);
            (seq, Some(blake3::hash(l.as_bytes()).to_hex().to_string()))
        }
        None => (0, None),
    };
    rec.seq = seq;
    rec.prev = prev;
    rec.ts = crate::receipt::now_rfc3339();
    rec.target = redact(&rec.target);
    rec.description = redact(&rec.description);
    if rec.action_id.is_empty() {
        rec.action_id = format!("{}:{seq}", rec.run_id);
    }
    let mut line = serde_json::to_string(&rec).map_err(|e| io(std::io::Error::other(e)))?;
    line.push('\n');
    f.write_all(line.as_bytes()).map_err(io)?;
    f.flush().map_err(io)?;
    Ok(rec)
}

/// A read audit log: its records, the hash of its last line, and the first problem
/// found (a line that does not parse, a broken chain), if any.
#[derive(Debug, Default)]
pub struct Log {
    pub records: Vec<Record>,
    pub head: Option<String>,
    pub problem: Option<String>,
    /// blake3 of each record's line, in order.
    pub hashes: Vec<String>,
}

impl Log {
    /// Checks that the first `records` lines still end in `head` (what an earlier fold
    /// recorded in the receipt): the chain alone cannot show an edit of the last line.
    #[must_use]
    pub fn still_ends_in(&self, records: u64, head: Option<&str>) -> Option<String> {
        let n = usize::try_from(records).unwrap_or(usize::MAX);
        if n == 0 {
            return None;
        }
        match self.hashes.get(n - 1) {
            Some(h) if Some(h.as_str()) == head => None,
            Some(_) => Some(format!(
                "record {n} is not the one the receipt recorded as the log's head: records folded earlier were changed"
            )),
            None => Some(format!(
                "the log holds {} records; the receipt recorded {n}: records were removed",
                self.hashes.len()
            )),
        }
    }
}

/// Reads and verifies the log (a missing file is an empty log).
#[must_use]
pub fn read(path: &Path) -> Log {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Log::default();
    };
    let mut log = Log::default();
    let mut prev: Option<String> = None;
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(l) {
            Ok(r) => {
                if log.problem.is_none() && (r.prev != prev || r.seq != log.records.len() as u64) {
                    log.problem = Some(format!(
                        "line {}: the hash chain is broken (a record was edited, inserted or removed)",
                        i + 1
                    ));
                }
                log.records.push(r);
            }
            Err(e) => {
                if log.problem.is_none() {
                    log.problem = Some(format!("line {}: not an audit record: {e}", i + 1));
                }
            }
        }
        let h = blake3::hash(l.as_bytes()).to_hex().to_string();
        log.hashes.push(h.clone());
        prev = Some(h);
    }
    log.head = prev;
    log
}

/// Files the agent read (or wrote itself) earlier in the run, normalized against
/// `workdir`: what an edit may change without `modifying_unread_code`.
#[must_use]
pub fn read_set(log: &Log, workdir: Option<&Path>) -> BTreeSet<String> {
    log.records
        .iter()
        .filter(|r| r.phase == "pre" && r.outcome == "allowed")
        .filter(|r| r.classification == "read_only" || r.rule == "write-in-workdir")
        .map(|r| super::classify::normalize(&r.target, workdir))
        .collect()
}

fn view(r: &Record) -> ActionView {
    ActionView {
        seq: r.seq,
        ts: r.ts.clone(),
        iteration: r.iteration,
        tool: r.tool.clone(),
        target: r.target.clone(),
        classification: r.classification.clone(),
        outcome: r.outcome.clone(),
        reason: r.reason.clone(),
        confirmed_by: r.confirmed_by.clone(),
        confirmed_at: r.confirmed_at.clone(),
    }
}

/// Folds the records from `from_seq` on into what one exec's `actions` event says.
#[must_use]
pub fn fold(log: &Log, from_seq: u64, iteration: u32, audit_log: &str) -> ActionsSeen {
    let new: Vec<&Record> = log.records.iter().filter(|r| r.seq >= from_seq).collect();
    let mut seen = ActionsSeen {
        iteration,
        audit_log: audit_log.to_string(),
        records: log.records.len() as u64,
        head: log.head.clone(),
        log_problem: log.problem.clone(),
        ..ActionsSeen::default()
    };
    let mut streak: Option<(String, u32)> = None;
    for r in new {
        if r.phase == "pre" {
            seen.calls += 1;
            if r.outcome == "declined" {
                seen.declined.push(view(r));
                if r.rule == "approval-timeout" {
                    seen.unanswered.push(view(r));
                }
            }
            if r.confirmed_by.is_some() {
                seen.confirmed.push(view(r));
            }
            for f in &r.findings {
                if !seen.findings.contains(f) {
                    seen.findings.push(f.clone());
                }
            }
        } else {
            let key = format!("{} {}", r.tool, r.target);
            if r.outcome == "failed" {
                let n = match &streak {
                    Some((k, n)) if *k == key => n + 1,
                    _ => 1,
                };
                if n == 3 {
                    seen.repeated_failures.push(key.clone());
                }
                streak = Some((key, n));
            } else {
                streak = None;
            }
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(phase: &str, tool: &str, target: &str, outcome: &str) -> Record {
        Record {
            run_id: "r".into(),
            iteration: 1,
            agent: "claude".into(),
            phase: phase.into(),
            tool: tool.into(),
            target: target.into(),
            classification: "read_only".into(),
            outcome: outcome.into(),
            ..Record::default()
        }
    }

    #[test]
    fn the_chain_detects_an_edit_and_a_removal() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("audit.jsonl");
        for i in 0..3 {
            append(&p, rec("pre", "Read", &format!("f{i}"), "allowed")).unwrap();
        }
        let log = read(&p);
        assert_eq!(log.records.len(), 3);
        assert!(log.problem.is_none(), "{:?}", log.problem);
        assert_eq!(log.records[2].action_id, "r:2");
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, text.replace("\"f1\"", "\"fX\"")).unwrap();
        assert!(read(&p).problem.unwrap().contains("line 3"));
        let lines: Vec<&str> = text.lines().collect();
        std::fs::write(&p, format!("{}\n{}\n", lines[0], lines[2])).unwrap();
        assert!(read(&p).problem.is_some());
    }

    #[test]
    fn secrets_in_targets_are_redacted() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("audit.jsonl");
        append(
            &p,
            rec(
                "pre",
                "Bash",
                "curl -H 'x: ghp_abcdefghijklmnopqrstuvwxyz0123456789' u",
                "allowed",
            ),
        )
        .unwrap();
        assert!(!std::fs::read_to_string(&p)
            .unwrap()
            .contains("ghp_abcdefghij"));
    }

    #[test]
    fn fold_counts_calls_declines_and_three_failures_in_a_row() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("audit.jsonl");
        let mut rows = vec![rec("pre", "Bash", "git push --force", "declined")];
        for _ in 0..3 {
            rows.push(rec("pre", "Bash", "cargo build", "allowed"));
            rows.push(rec("post", "Bash", "cargo build", "failed"));
        }
        rows.push(rec("pre", "Bash", "ls", "allowed"));
        rows.push(rec("post", "Bash", "ls", "executed"));
        for r in rows {
            append(&p, r).unwrap();
        }
        let s = fold(&read(&p), 0, 1, "a");
        assert_eq!(s.calls, 5);
        assert_eq!(s.declined.len(), 1);
        assert_eq!(s.declined[0].target, "git push --force");
        assert_eq!(s.repeated_failures, vec!["Bash cargo build".to_string()]);
        let later = fold(&read(&p), 7, 2, "a");
        assert_eq!(later.calls, 1);
        assert!(later.declined.is_empty());
    }

    #[test]
    fn the_schema_names_every_field() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../schemas/audit-record.schema.json")).unwrap();
        let v = serde_json::to_value(rec("pre", "Read", "x", "allowed")).unwrap();
        let props = schema["properties"].as_object().unwrap();
        for k in v.as_object().unwrap().keys() {
            assert!(props.contains_key(k), "schema lacks {k}");
        }
        for k in schema["required"].as_array().unwrap() {
            assert!(v.get(k.as_str().unwrap()).is_some(), "record lacks {k}");
        }
    }
}
