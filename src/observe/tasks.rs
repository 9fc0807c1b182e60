//! Task lists (`--tasks FILE`): reading a Markdown checklist or JSON Lines into
//! [`Task`]s. Reading is the only I/O; which task is done, open or actionable is
//! decided by the pure [`crate::detect::tasks`] over what was read and recorded.
//!
//! Formats (SPEC §9.3):
//! * JSON Lines (`.jsonl`, or a first non-blank character `{`): one object per line,
//!   `{"id": "...", "title": "...", "status": "open", "blocked_by": ["..."]}`, with an
//!   optional `"objective": ["test id or glob", ...]`. `status` is one of `open`,
//!   `todo`, `pending`, `in_progress`, `blocked` (open) or `done`, `closed`,
//!   `completed`, `cancelled` (not open).
//! * Markdown: every checklist item (`- [ ]`, `* [x]`, `1. [ ]`) is a task; `[x]` is
//!   done. Its id is `{#id}` written in the item, else its position (`1`, `2`, …);
//!   `blocked by: #a, #b` in the item names its blockers.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// Largest task file read, bytes.
pub const MAX_TASK_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Whether a task still needs work, as the file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Open,
    Done,
}

/// One task of a task list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Task {
    pub id: String,
    pub title: String,
    pub status: TaskStatus,
    /// Ids of the tasks that must be done before this one can be selected.
    #[serde(default)]
    pub blocked_by: Vec<String>,
    /// Test ids or globs whose passing marks the task done.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objective: Vec<String>,
}

/// A task file that cannot be used, naming where.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TaskFileError {
    #[error("cannot read task list {path}: {message}")]
    Read { path: String, message: String },
    #[error("task list {path} line {line}: {message}")]
    Bad {
        path: String,
        line: usize,
        message: String,
    },
    #[error("task list {path} holds no task (no JSON line, no `- [ ]` checklist item)")]
    Empty { path: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonTask {
    id: String,
    #[serde(default)]
    title: String,
    status: String,
    #[serde(default)]
    blocked_by: Vec<String>,
    #[serde(default)]
    objective: Vec<String>,
}

fn status_of(s: &str) -> Option<TaskStatus> {
    match s.trim().to_ascii_lowercase().as_str() {
        "open" | "todo" | "pending" | "in_progress" | "in-progress" | "blocked" => {
            Some(TaskStatus::Open)
        }
        "done" | "closed" | "completed" | "complete" | "cancelled" | "canceled" => {
            Some(TaskStatus::Done)
        }
        _ => None,
    }
}

/// Reads and parses the task list at `path` (relative paths against `workdir`).
///
/// # Errors
/// [`TaskFileError`] naming the file and the line.
pub fn read(workdir: &Path, path: &str) -> Result<Vec<Task>, TaskFileError> {
    let full = if Path::new(path).is_absolute() {
        std::path::PathBuf::from(path)
    } else {
        workdir.join(path)
    };
    let err = |message: String| TaskFileError::Read {
        path: path.to_string(),
        message,
    };
    let meta = std::fs::metadata(&full).map_err(|e| err(e.to_string()))?;
    if meta.len() > MAX_TASK_FILE_BYTES {
        return Err(err(format!(
            "larger than {MAX_TASK_FILE_BYTES} bytes; split the list"
        )));
    }
    let bytes = std::fs::read(&full).map_err(|e| err(e.to_string()))?;
    parse(path, &String::from_utf8_lossy(&bytes))
}

/// Parses a task list's text; `path` only names it in errors and picks the format.
///
/// # Errors
/// [`TaskFileError::Bad`] for a malformed line, [`TaskFileError::Empty`] when no task is found.
pub fn parse(path: &str, text: &str) -> Result<Vec<Task>, TaskFileError> {
    let json =
        path.ends_with(".jsonl") || path.ends_with(".ndjson") || text.trim_start().starts_with('{');
    let tasks = if json {
        parse_jsonl(path, text)?
    } else {
        parse_markdown(text)
    };
    if tasks.is_empty() {
        return Err(TaskFileError::Empty {
            path: path.to_string(),
        });
    }
    let mut seen = std::collections::BTreeSet::new();
    for t in &tasks {
        if !seen.insert(t.id.as_str()) {
            return Err(TaskFileError::Bad {
                path: path.to_string(),
                line: 0,
                message: format!("task id `{}` appears twice; ids must be unique", t.id),
            });
        }
    }
    Ok(tasks)
}

fn parse_jsonl(path: &str, text: &str) -> Result<Vec<Task>, TaskFileError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let bad = |message: String| TaskFileError::Bad {
            path: path.to_string(),
            line: i + 1,
            message,
        };
        if line.trim().is_empty() {
            continue;
        }
        let j: JsonTask = serde_json::from_str(line).map_err(|e| {
            bad(format!(
                "{e} (expected {{\"id\", \"title\", \"status\", \"blocked_by\": []}})"
            ))
        })?;
        if j.id.trim().is_empty() {
            return Err(bad("empty `id`".into()));
        }
        let status = status_of(&j.status).ok_or_else(|| {
            bad(format!(
                "unknown status `{}`; use open, todo, pending, in_progress, blocked, done, closed, completed or cancelled",
                j.status
            ))
        })?;
        out.push(Task {
            id: j.id,
            title: j.title,
            status,
            blocked_by: j.blocked_by,
            objective: j.objective,
        });
    }
    Ok(out)
}

fn parse_markdown(text: &str) -> Vec<Task> {
    let mut out = Vec::new();
    for line in text.lines() {
        let l = line.trim_start();
        let rest = if let Some(r) = l.strip_prefix("- ").or_else(|| l.strip_prefix("* ")) {
            r
        } else if let Some(dot) = l.find(". ") {
            if l[..dot].chars().all(|c| c.is_ascii_digit()) && dot > 0 {
                &l[dot + 2..]
            } else {
                continue;
            }
        } else {
            continue;
        };
        let rest = rest.trim_start();
        let (status, body) = if let Some(b) = rest.strip_prefix("[ ]") {
            (TaskStatus::Open, b)
        } else if let Some(b) = rest
            .strip_prefix("[x]")
            .or_else(|| rest.strip_prefix("[X]"))
        {
            (TaskStatus::Done, b)
        } else {
            continue;
        };
        let body = body.trim();
        let id = tag_id(body).unwrap_or_else(|| (out.len() + 1).to_string());
        out.push(Task {
            id,
            title: body.to_string(),
            status,
            blocked_by: blockers(body),
            objective: Vec::new(),
        });
    }
    out
}

/// `{#id}` in an item.
fn tag_id(body: &str) -> Option<String> {
    let start = body.find("{#")?;
    let end = body[start..].find('}')? + start;
    let id = body[start + 2..end].trim();
    (!id.is_empty()).then(|| id.to_string())
}

/// `blocked by: #a, #b` in an item.
fn blockers(body: &str) -> Vec<String> {
    let lower = body.to_ascii_lowercase();
    let Some(pos) = lower.find("blocked by") else {
        return Vec::new();
    };
    let tail = body[pos + "blocked by".len()..].trim_start_matches([':', ' ']);
    tail.split([',', ' ', ')'])
        .filter_map(|w| w.strip_prefix('#'))
        .map(|w| w.trim_end_matches(['.', ';']).to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(t: &[Task]) -> Vec<(&str, TaskStatus, Vec<&str>)> {
        t.iter()
            .map(|t| {
                (
                    t.id.as_str(),
                    t.status,
                    t.blocked_by.iter().map(String::as_str).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn reads_both_formats() {
        use TaskStatus::{Done, Open};
        type Row<'a> = (&'a str, &'a str, Vec<(&'a str, TaskStatus, Vec<&'a str>)>);
        let cases: &[Row] = &[
            (
                "t.jsonl",
                "{\"id\":\"a\",\"title\":\"A\",\"status\":\"open\",\"blocked_by\":[\"b\"]}\n\n{\"id\":\"b\",\"title\":\"B\",\"status\":\"done\",\"blocked_by\":[]}\n",
                vec![("a", Open, vec!["b"]), ("b", Done, vec![])],
            ),
            (
                "TODO.md",
                "# Plan\n- [x] parse {#parse}\n- [ ] print {#print} blocked by: #parse, #lex\n* [ ] third\ntext\n1. [X] numbered\n",
                vec![
                    ("parse", Done, vec![]),
                    ("print", Open, vec!["parse", "lex"]),
                    ("3", Open, vec![]),
                    ("4", Done, vec![]),
                ],
            ),
        ];
        for (path, text, want) in cases {
            let got = parse(path, text).unwrap();
            assert_eq!(ids(&got), *want, "{path}");
        }
    }

    #[test]
    fn bad_lists_name_the_line() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "t.jsonl",
                "{\"id\":\"a\",\"status\":\"open\"}\n{\"id\":\"b\",\"status\":\"wip\"}\n",
                "line 2",
            ),
            (
                "t.jsonl",
                "{\"id\":\"a\",\"status\":\"open\"}\nnot json\n",
                "line 2",
            ),
            (
                "t.jsonl",
                "{\"id\":\"a\",\"status\":\"open\"}\n{\"id\":\"a\",\"status\":\"open\"}\n",
                "twice",
            ),
            ("t.md", "no checklist here\n", "no task"),
        ];
        for (path, text, needle) in cases {
            let e = parse(path, text).unwrap_err().to_string();
            assert!(e.contains(needle), "{path}: {e}");
        }
    }
}
