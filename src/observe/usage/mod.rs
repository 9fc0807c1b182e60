//! Agent usage observation: what the agent spent in one iteration, read from what the
//! agent itself prints on stdout (format auto-detected per line) and from the side
//! channel file named by `LOOPEXEC_USAGE_FILE`.
//!
//! This module owns the [`UsageMeter`] (fed line by line while the agent streams) and
//! the [`IterationUsage`] figures it reports. One file per source parses that source:
//! [`claude`] (`-p --output-format json` and `stream-json`), [`codex`] (`exec --json`),
//! [`gemini`] (`--output-format json`), [`usage_file`] (wrapper-written JSON lines);
//! [`pricing`] turns tokens into an estimated cost; [`live`] is the engine's handle
//! while the step runs (stdout sink, usage-file tail, carry-over between iterations).
//!
//! Invariants:
//! * Token figures use one convention across sources: `input_tokens` are fresh
//!   (uncached) input tokens, `cached_input_tokens` are input tokens read from a prompt
//!   cache, `cache_creation_tokens` are tokens written to one, `output_tokens` include
//!   reasoning/thinking tokens. Sources that report cached tokens as a subset of input
//!   (codex, gemini, the usage file) are converted.
//! * Every cost is labelled: `Reported` when every contributing figure came from the
//!   agent, `Estimated` when any part came from [`Pricing`]. A cost that cannot be known
//!   (tokens with no price) is `None`, never 0; an iteration that metered nothing has
//!   cost `None`.
//! * Auxiliary models (background work by a second model) count as spend but are never
//!   the primary model.
//! * Non-JSON lines are skipped and counted in `skipped_lines`, never fatal. Blank lines
//!   are ignored without counting. Lines longer than [`MAX_LINE_BYTES`] are skipped
//!   without parsing; the caller is expected to cap lines (e.g. at 1 MiB) before
//!   feeding them, so nothing here buffers an unbounded line. A pretty-printed object
//!   (first line exactly `{`, last line exactly `}` at column 0, as `JSON.stringify(v,
//!   null, 2)` prints) is reassembled, up to [`MAX_PENDING_BYTES`]. A line holding a
//!   JSON array (Claude's `--output-format json` with verbose on prints its whole
//!   event list as one array) is read as its object elements, in order.
//! * Cumulative figures (a Claude session's `result`, a codex thread's totals) are kept
//!   as a running maximum: a later record with lower figures (Claude Code 2.1.1–2.1.6
//!   printed a spurious zero-cost second `result` for the same session) never lowers
//!   the spend.
//! * Sources add up: figures from stdout and from the usage file are summed, so a
//!   wrapper must only write to the usage file what the agent's stdout does not show.

pub mod claude;
pub mod codex;
pub mod gemini;
pub mod identity;
pub mod live;
pub mod pricing;
pub mod usage_file;

pub use codex::CodexTotals;
pub use identity::ModelIdentity;
pub use live::{CarryOver, LiveMeter};
pub use pricing::{ModelPrice, Pricing, PricingError};

use pricing::PriceTable;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Lines longer than this (bytes, after trimming the line end) are skipped unparsed.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// Largest pretty-printed object reassembled from several lines (bytes).
pub const MAX_PENDING_BYTES: usize = 4 * 1024 * 1024;

/// Where a figure came from.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum UsageSource {
    /// Claude Code `-p --output-format json` (one `result` object).
    ClaudeJson,
    /// Claude Code `--output-format stream-json --verbose`.
    ClaudeStreamJson,
    /// Codex `exec --json`.
    CodexJson,
    /// Gemini CLI `--output-format json`.
    GeminiJson,
    /// Lines of the `LOOPEXEC_USAGE_FILE` side channel.
    UsageFile,
}

/// Whether a figure was reported by the agent or estimated by loopexec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FigureKind {
    /// Printed by the agent (Claude's own cost figure is itself a client-side estimate,
    /// but it is the agent's figure, not ours).
    Reported,
    /// Computed by loopexec from tokens and the `[pricing]` table.
    Estimated,
}

/// What the agent spent in one iteration (so far, when taken mid-stream).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IterationUsage {
    /// Sources seen, in order of first appearance, each once.
    pub sources: Vec<UsageSource>,
    /// Fresh (uncached) input tokens, all models.
    pub input_tokens: u64,
    /// Output tokens (including reasoning), all models.
    pub output_tokens: u64,
    /// Input tokens read from a prompt cache, all models.
    pub cached_input_tokens: u64,
    /// Tokens written to a prompt cache, all models.
    pub cache_creation_tokens: u64,
    /// USD, all models; `None` when unknown (see module invariants).
    pub cost_usd: Option<f64>,
    /// Label of `cost_usd`; `None` exactly when `cost_usd` is `None`.
    pub cost_kind: Option<FigureKind>,
    /// The model that did the work, when known.
    pub primary_model: Option<ModelIdentity>,
    /// Other model ids that spent tokens (full ids, sorted, each once).
    pub auxiliary_models: Vec<String>,
    /// Agent turns: Claude's `num_turns` (summed over sessions); codex: completed plus
    /// failed turns; `None` when no source says.
    pub num_turns: Option<u64>,
    /// Whether the agent reported failure (Claude `is_error`; codex `turn.failed` or
    /// `error`); `None` when no source says.
    pub is_error: Option<bool>,
    /// Claude's result `subtype` (`success`, `error_max_turns`, ...), the last one seen.
    pub subtype: Option<String>,
    /// Non-blank lines that were not JSON objects (or unusable usage-file records).
    pub skipped_lines: u64,
    /// The first [`MAX_REJECTED_SHOWN`] lines of the `LOOPEXEC_USAGE_FILE` side channel
    /// that were no usable record, each as `why: line` (the line cut at 120 bytes): a
    /// wrapper that writes `{"cost": 0.5}` is told why nothing was metered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub usage_file_rejected: Vec<String>,
    /// Cumulative codex totals per thread id after this iteration: the prior totals
    /// given to [`UsageMeter::new`] updated with this iteration's. Pass this map to the
    /// next iteration's meter.
    pub codex_threads: BTreeMap<String, CodexTotals>,
}

impl IterationUsage {
    /// Tokens counted by `--budget-tokens`: fresh input + cache writes + output.
    /// Cache reads are excluded: they re-read context already counted when it was
    /// written, and counting them would grow the budget with the square of the turns.
    #[must_use]
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_creation_tokens)
            .saturating_add(self.output_tokens)
    }

    /// Every token processed, cache reads included.
    #[must_use]
    pub fn all_tokens(&self) -> u64 {
        self.total_tokens().saturating_add(self.cached_input_tokens)
    }
}

/// Token counts in the module's convention (see the module invariants).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Tokens {
    pub(crate) input: u64,
    pub(crate) cached: u64,
    pub(crate) cache_creation: u64,
    pub(crate) output: u64,
}

impl Tokens {
    pub(crate) fn add(&mut self, o: &Tokens) {
        self.input = self.input.saturating_add(o.input);
        self.cached = self.cached.saturating_add(o.cached);
        self.cache_creation = self.cache_creation.saturating_add(o.cache_creation);
        self.output = self.output.saturating_add(o.output);
    }

    pub(crate) fn sum(&self) -> u64 {
        self.input
            .saturating_add(self.cached)
            .saturating_add(self.cache_creation)
            .saturating_add(self.output)
    }

    pub(crate) fn is_zero(&self) -> bool {
        self.sum() == 0
    }

    /// Field-wise maximum.
    pub(crate) fn max(&self, o: &Tokens) -> Tokens {
        Tokens {
            input: self.input.max(o.input),
            cached: self.cached.max(o.cached),
            cache_creation: self.cache_creation.max(o.cache_creation),
            output: self.output.max(o.output),
        }
    }

    /// Field-wise `self - o`, saturating at 0.
    pub(crate) fn minus(&self, o: &Tokens) -> Tokens {
        Tokens {
            input: self.input.saturating_sub(o.input),
            cached: self.cached.saturating_sub(o.cached),
            cache_creation: self.cache_creation.saturating_sub(o.cache_creation),
            output: self.output.saturating_sub(o.output),
        }
    }
}

/// The cost one part contributes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum PartCost {
    Reported(f64),
    Estimated(f64),
    Unknown,
}

impl PartCost {
    /// Estimate of per-model tokens; `Unknown` if any model with tokens has no price.
    pub(crate) fn estimate<'a>(
        prices: &PriceTable,
        models: impl IntoIterator<Item = (Option<&'a str>, &'a Tokens)>,
    ) -> PartCost {
        let mut total = 0.0;
        for (model, tokens) in models {
            if tokens.is_zero() {
                continue;
            }
            match prices.estimate(model, tokens) {
                Some(c) => total += c,
                None => return PartCost::Unknown,
            }
        }
        PartCost::Estimated(total)
    }
}

/// What one source (one Claude session, all codex threads, ...) contributes.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    pub(crate) tokens: Tokens,
    pub(crate) cost: PartCost,
    /// Model ids that spent tokens in this part.
    pub(crate) models: Vec<String>,
    pub(crate) primary: Option<ModelIdentity>,
    pub(crate) num_turns: Option<u64>,
    pub(crate) is_error: Option<bool>,
    pub(crate) subtype: Option<String>,
}

impl Part {
    pub(crate) fn new(tokens: Tokens, cost: PartCost) -> Self {
        Part {
            tokens,
            cost,
            models: Vec::new(),
            primary: None,
            num_turns: None,
            is_error: None,
            subtype: None,
        }
    }
}

/// Meters one iteration of one agent. Feed it lines as they arrive; take a
/// [`snapshot`](UsageMeter::snapshot) whenever a budget check needs one.
#[derive(Debug, Clone)]
pub struct UsageMeter {
    prices: PriceTable,
    sources: Vec<UsageSource>,
    skipped: u64,
    stdout_frame: Framer,
    file_frame: Framer,
    claude: claude::ClaudeState,
    codex: codex::CodexState,
    gemini: gemini::GeminiState,
    file: usage_file::UsageFileState,
    /// [`IterationUsage::usage_file_rejected`].
    file_rejected: Vec<String>,
}

/// How many rejected usage-file lines an iteration's usage names.
pub const MAX_REJECTED_SHOWN: usize = 5;

impl UsageMeter {
    /// A meter for one iteration. `prior_codex` is the previous iteration's
    /// [`IterationUsage::codex_threads`] (empty on the first iteration). `pricing`
    /// should have passed [`Pricing::validate`]; invalid entries are ignored.
    #[must_use]
    pub fn new(pricing: Pricing, prior_codex: BTreeMap<String, CodexTotals>) -> Self {
        UsageMeter {
            prices: PriceTable::new(&pricing),
            sources: Vec::new(),
            skipped: 0,
            stdout_frame: Framer::default(),
            file_frame: Framer::default(),
            claude: claude::ClaudeState::default(),
            codex: codex::CodexState::new(prior_codex),
            gemini: gemini::GeminiState::default(),
            file: usage_file::UsageFileState::default(),
            file_rejected: Vec::new(),
        }
    }

    /// One line of the agent's stdout (with or without its line end), as it streams.
    /// The format is detected per line; unrecognised JSON objects are ignored.
    pub fn feed_stdout_line(&mut self, line: &[u8]) {
        let (values, skipped) = self.stdout_frame.push(line);
        self.skipped = self.skipped.saturating_add(skipped);
        for v in values {
            if let Some(source) = self.dispatch_stdout(&v) {
                self.note_source(source);
            }
        }
    }

    /// One line of the `LOOPEXEC_USAGE_FILE` side channel. Lines that are not a usable
    /// record are skipped and counted.
    pub fn feed_usage_file_line(&mut self, line: &[u8]) {
        let (values, mut skipped) = self.file_frame.push(line);
        if skipped > 0 {
            self.reject("not a JSON object", line);
        }
        for v in values {
            match self.file.feed(&v) {
                Ok(()) => self.note_source(UsageSource::UsageFile),
                Err(why) => {
                    skipped = skipped.saturating_add(1);
                    self.reject(why, line);
                }
            }
        }
        self.skipped = self.skipped.saturating_add(skipped);
    }

    /// Notes a rejected usage-file line (the first [`MAX_REJECTED_SHOWN`]).
    fn reject(&mut self, why: &str, line: &[u8]) {
        if self.file_rejected.len() >= MAX_REJECTED_SHOWN {
            return;
        }
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        let mut cut = text.len().min(120);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let more = if cut < text.len() { "…" } else { "" };
        self.file_rejected
            .push(format!("{why}: {}{more}", &text[..cut]));
    }

    /// Ends the iteration's input: an unfinished multi-line object is counted as
    /// skipped lines. Feeding after `finish` is allowed.
    pub fn finish(&mut self) {
        let s = self.stdout_frame.abandon() + self.file_frame.abandon();
        self.skipped = self.skipped.saturating_add(s);
    }

    /// The figures so far. Cost is proportional to the number of distinct models and
    /// sessions seen, not to the number of lines fed. Lines held for an unfinished
    /// multi-line object are not yet counted anywhere.
    #[must_use]
    pub fn snapshot(&self) -> IterationUsage {
        let mut stdout_parts = self.claude.parts(&self.prices);
        stdout_parts.extend(self.codex.part(&self.prices));
        stdout_parts.extend(self.gemini.parts(&self.prices));
        let file_parts: Vec<Part> = self.file.part(&self.prices).into_iter().collect();
        let mut u = combine(&stdout_parts, &file_parts);
        u.sources = self.sources.clone();
        u.skipped_lines = self.skipped;
        u.usage_file_rejected = self.file_rejected.clone();
        u.codex_threads = self.codex.threads_after();
        u
    }

    /// Tokens for `--budget-tokens`, as [`IterationUsage::total_tokens`] counts them.
    #[must_use]
    pub fn total_tokens(&self) -> u64 {
        self.snapshot().total_tokens()
    }

    fn note_source(&mut self, s: UsageSource) {
        if !self.sources.contains(&s) {
            self.sources.push(s);
        }
    }

    /// Routes one stdout object to its parser; returns the source it belonged to.
    fn dispatch_stdout(&mut self, v: &Value) -> Option<UsageSource> {
        if let Some(msg) = codex::legacy_msg(v) {
            return self.codex.feed_legacy(msg);
        }
        let ty = v.get("type").and_then(Value::as_str);
        match ty {
            Some("system" | "assistant" | "user" | "result") => self.claude.feed(v),
            Some(t) if codex::is_codex_event(t) => self.codex.feed(t, v),
            _ if gemini::is_gemini_stats(v) => self.gemini.feed(v),
            _ => None,
        }
    }
}

/// Joins stdout parts and usage-file parts into one figure set.
fn combine(stdout: &[Part], file: &[Part]) -> IterationUsage {
    let mut u = IterationUsage::default();
    let mut tokens = Tokens::default();
    let mut cost = 0.0;
    let mut any_cost = false;
    let mut unknown = false;
    let mut estimated = false;
    let mut models = BTreeSet::new();
    for p in stdout.iter().chain(file) {
        tokens.add(&p.tokens);
        match p.cost {
            PartCost::Reported(c) => {
                cost += c;
                any_cost = true;
            }
            PartCost::Estimated(c) => {
                if !p.tokens.is_zero() {
                    cost += c;
                    any_cost = true;
                    estimated = true;
                }
            }
            PartCost::Unknown => unknown |= !p.tokens.is_zero(),
        }
        models.extend(p.models.iter().cloned());
        if let Some(n) = p.num_turns {
            u.num_turns = Some(u.num_turns.unwrap_or(0).saturating_add(n));
        }
        if let Some(e) = p.is_error {
            u.is_error = Some(u.is_error.unwrap_or(false) || e);
        }
        if p.subtype.is_some() {
            u.subtype.clone_from(&p.subtype);
        }
    }
    // The agent's own stdout names the primary model; the usage file only when stdout
    // names none. Among parts of one channel, the latest wins.
    u.primary_model = stdout
        .iter()
        .rev()
        .chain(file.iter().rev())
        .find_map(|p| p.primary.clone());
    if let Some(p) = &u.primary_model {
        models.remove(&p.model);
    }
    u.auxiliary_models = models.into_iter().collect();
    u.input_tokens = tokens.input;
    u.output_tokens = tokens.output;
    u.cached_input_tokens = tokens.cached;
    u.cache_creation_tokens = tokens.cache_creation;
    if any_cost && !unknown {
        u.cost_usd = Some(cost);
        u.cost_kind = Some(if estimated {
            FigureKind::Estimated
        } else {
            FigureKind::Reported
        });
    }
    u
}

/// Splits a byte stream of lines into JSON objects (see the module invariants).
#[derive(Debug, Clone, Default)]
struct Framer {
    pending: Vec<u8>,
    pending_lines: u64,
}

impl Framer {
    /// Takes one line; returns the complete objects it yields and how many lines were
    /// skipped.
    fn push(&mut self, line: &[u8]) -> (Vec<Value>, u64) {
        let line = trim_line_end(line);
        let mut skipped = 0;
        if line.len() > MAX_LINE_BYTES {
            return (Vec::new(), self.abandon() + 1);
        }
        if self.pending_lines > 0 {
            if line == b"}" {
                self.pending.extend_from_slice(b"\n}");
                let buf = std::mem::take(&mut self.pending);
                let n = std::mem::take(&mut self.pending_lines) + 1;
                return match serde_json::from_slice::<Value>(&buf) {
                    Ok(v) if v.is_object() => (vec![v], 0),
                    _ => (Vec::new(), n),
                };
            }
            let indented = line.first().is_some_and(|b| *b == b' ' || *b == b'\t');
            if indented && self.pending.len() + line.len() < MAX_PENDING_BYTES {
                self.pending.push(b'\n');
                self.pending.extend_from_slice(line);
                self.pending_lines += 1;
                return (Vec::new(), 0);
            }
            // Not the continuation of a pretty-printed object: give it up and read
            // this line on its own.
            skipped += self.abandon();
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return (Vec::new(), skipped);
        }
        if line == b"{" {
            self.pending.extend_from_slice(line);
            self.pending_lines = 1;
            return (Vec::new(), skipped);
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(v) if v.is_object() => (vec![v], skipped),
            // `claude -p --output-format json` with verbose on: one array of events
            Ok(Value::Array(items)) if items.iter().any(Value::is_object) => (
                items.into_iter().filter(Value::is_object).collect(),
                skipped,
            ),
            _ => (Vec::new(), skipped + 1),
        }
    }

    /// Drops an unfinished object; returns the number of lines it held.
    fn abandon(&mut self) -> u64 {
        self.pending.clear();
        std::mem::take(&mut self.pending_lines)
    }
}

fn trim_line_end(mut line: &[u8]) -> &[u8] {
    while let [rest @ .., b'\n' | b'\r'] = line {
        line = rest;
    }
    line
}

/// Reads a non-negative integer field; absent, negative or non-integer gives 0.
pub(crate) fn u64_field(v: &Value, key: &str) -> u64 {
    match v.get(key) {
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.is_finite() && *f >= 0.0)
                    .map(|f| f as u64)
            })
            .unwrap_or(0),
        _ => 0,
    }
}

/// Reads a finite, non-negative number field.
pub(crate) fn f64_field(v: &Value, key: &str) -> Option<f64> {
    v.get(key)
        .and_then(Value::as_f64)
        .filter(|f| f.is_finite() && *f >= 0.0)
}

#[cfg(test)]
mod tests;
