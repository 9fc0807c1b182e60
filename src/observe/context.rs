//! The context an agent must be given for a task: the task text, the failing tests'
//! messages, the files those tests live in, and declared files — measured in tokens
//! against the model's context window (SPEC §9.4).
//!
//! Tokens are estimated as ⌈bytes / 4⌉ (a common rule of thumb for English text and
//! code with current BPE tokenizers; it is stated as an estimate everywhere it is
//! shown). The window table holds current Claude, GPT and Gemini models and is
//! overridden by `[models] windows`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Built-in context windows, tokens, by model-id prefix (longest prefix wins).
pub const DEFAULT_WINDOWS: &[(&str, u64)] = &[
    ("claude", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-opus-4", 200_000),
    ("claude-haiku-4", 200_000),
    ("gpt-4o", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("codex", 400_000),
    ("gemini-2.5", 1_048_576),
    ("gemini-2.0", 1_048_576),
    ("gemini", 1_048_576),
];

/// The window of `model`: `[models] windows` first, then [`DEFAULT_WINDOWS`], each by
/// exact id or the longest matching prefix. `None` when the model is unknown.
#[must_use]
pub fn window_of(model: &str, overrides: &BTreeMap<String, u64>) -> Option<(u64, String)> {
    let pick = |table: Vec<(&str, u64)>| {
        table
            .into_iter()
            .filter(|(p, _)| model == *p || model.starts_with(p))
            .max_by_key(|(p, _)| p.len())
            .map(|(p, w)| (w, p.to_string()))
    };
    pick(overrides.iter().map(|(k, v)| (k.as_str(), *v)).collect())
        .map(|(w, p)| (w, format!("[models] windows.{p}")))
        .or_else(|| {
            pick(DEFAULT_WINDOWS.to_vec()).map(|(w, p)| (w, format!("built-in table ({p})")))
        })
}

/// Estimated tokens of `bytes` bytes of text: ⌈bytes / 4⌉.
#[must_use]
pub fn estimate_tokens(bytes: u64) -> u64 {
    bytes.div_ceil(4)
}

/// One part of the context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextPart {
    /// `task`, `failing_tests`, `test_file` or `declared_file`.
    pub kind: String,
    /// What it is (a path, or a description).
    pub name: String,
    pub bytes: u64,
    /// Estimated tokens (⌈bytes / 4⌉).
    pub tokens: u64,
}

/// What `build-context` measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextReport {
    pub model: String,
    /// The model's window in tokens, when known.
    pub window: Option<u64>,
    /// Where the window figure came from.
    pub window_source: Option<String>,
    pub parts: Vec<ContextPart>,
    pub total_tokens: u64,
    /// Always `bytes/4`: the token counts are estimates.
    pub estimate: String,
    /// Files named but not readable (counted as 0 and listed).
    #[serde(default)]
    pub missing: Vec<String>,
}

impl ContextReport {
    /// True when the context is known not to fit the window.
    #[must_use]
    pub fn exceeds(&self) -> bool {
        self.window.is_some_and(|w| self.total_tokens > w)
    }
}

/// What to assemble.
#[derive(Debug, Clone, Default)]
pub struct ContextRequest<'a> {
    pub task_file: Option<&'a str>,
    /// Globs of files the agent must read, relative to the workdir.
    pub files: &'a [String],
    /// Failing tests with their messages (from the last check).
    pub failing: Vec<(String, String)>,
    pub model: &'a str,
    pub windows: Option<&'a BTreeMap<String, u64>>,
}

fn file_len(dir: &Path, rel: &str) -> Option<u64> {
    let p = dir.join(rel);
    std::fs::metadata(&p)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len())
}

/// Assembles and measures the context in `workdir`.
#[must_use]
pub fn build(workdir: &Path, req: &ContextRequest<'_>) -> ContextReport {
    let mut parts = Vec::new();
    let mut missing = Vec::new();
    let mut push = |kind: &str, name: String, bytes: u64| {
        parts.push(ContextPart {
            kind: kind.to_string(),
            name,
            bytes,
            tokens: estimate_tokens(bytes),
        });
    };
    if let Some(t) = req.task_file {
        match file_len(workdir, t) {
            Some(b) => push("task", t.to_string(), b),
            None => missing.push(t.to_string()),
        }
    }
    if !req.failing.is_empty() {
        let bytes: usize = req
            .failing
            .iter()
            .map(|(id, m)| id.len() + m.len() + 2)
            .sum();
        push(
            "failing_tests",
            format!("{} failing test(s) and their messages", req.failing.len()),
            bytes as u64,
        );
    }
    // The files the failing tests live in, when the id names one (`path::name`).
    let mut test_files: Vec<String> = req
        .failing
        .iter()
        .filter_map(|(id, _)| id.split("::").next())
        .filter(|p| p.contains('.') || p.contains('/'))
        .map(str::to_string)
        .collect();
    test_files.sort();
    test_files.dedup();
    for f in test_files {
        if let Some(b) = file_len(workdir, &f) {
            push("test_file", f, b);
        }
    }
    for g in req.files {
        let found = crate::observe::reports::glob_files(workdir, g);
        if found.is_empty() {
            match file_len(workdir, g) {
                Some(b) => push("declared_file", g.clone(), b),
                None => missing.push(g.clone()),
            }
        }
        for p in found {
            let rel = p.strip_prefix(workdir).unwrap_or(&p).display().to_string();
            let b = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            push("declared_file", rel, b);
        }
    }
    let empty = BTreeMap::new();
    let win = window_of(req.model, req.windows.unwrap_or(&empty));
    let total_tokens = parts.iter().map(|p| p.tokens).sum();
    ContextReport {
        model: req.model.to_string(),
        window: win.as_ref().map(|w| w.0),
        window_source: win.map(|w| w.1),
        parts,
        total_tokens,
        estimate: "bytes/4".into(),
        missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_by_longest_prefix_and_override() {
        let mut o = BTreeMap::new();
        let cases: &[(&str, Option<u64>)] = &[
            ("claude-sonnet-4-5-20250929", Some(200_000)),
            ("gpt-4o-2024-08-06", Some(128_000)),
            ("gemini-2.5-pro", Some(1_048_576)),
            ("llama-3", None),
        ];
        for (m, w) in cases {
            assert_eq!(window_of(m, &o).map(|x| x.0), *w, "{m}");
        }
        o.insert("claude-sonnet-4-5".to_string(), 1_000);
        assert_eq!(
            window_of("claude-sonnet-4-5-20250929", &o).map(|x| x.0),
            Some(1_000)
        );
    }

    #[test]
    fn tokens_are_bytes_over_four_rounded_up() {
        for (b, t) in [(0, 0), (1, 1), (4, 1), (5, 2), (4000, 1000)] {
            assert_eq!(estimate_tokens(b), t);
        }
    }
}
