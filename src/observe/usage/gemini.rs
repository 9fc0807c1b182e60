//! Gemini CLI `--output-format json`: one object (possibly pretty-printed over many
//! lines) with `stats.models.<id>.tokens` = {`prompt`, `input`, `candidates`, `cached`,
//! `thoughts`, `tool`, `total`}.
//!
//! Conversion: `prompt` includes `cached`, so fresh input is `input` when present, else
//! `prompt - cached`; output is `candidates + thoughts` (thinking tokens are billed as
//! output). No cost is printed: it is estimated from `[pricing]`. The primary model is
//! the one with the most tokens (`total`, else the sum of the parts; ties: the smaller
//! id). An object with a non-null `error` field marks the run as failed. Objects with
//! the same `session_id` replace each other; others add up.

use super::pricing::PriceTable;
use super::{u64_field, ModelIdentity, Part, PartCost, Tokens, UsageSource};
use serde_json::Value;
use std::collections::BTreeMap;

/// True when `v` carries `stats.models` as an object.
pub(crate) fn is_gemini_stats(v: &Value) -> bool {
    v.get("stats")
        .and_then(|s| s.get("models"))
        .is_some_and(Value::is_object)
}

#[derive(Debug, Clone, Default)]
pub(crate) struct GeminiState {
    runs: Vec<Run>,
}

#[derive(Debug, Clone, Default)]
struct Run {
    session: Option<String>,
    /// Per model: converted tokens and the model's token total.
    models: BTreeMap<String, (Tokens, u64)>,
    is_error: bool,
}

impl GeminiState {
    pub(crate) fn feed(&mut self, v: &Value) -> Option<UsageSource> {
        let models = v.get("stats")?.get("models")?.as_object()?;
        let mut run = Run {
            session: v
                .get("session_id")
                .and_then(Value::as_str)
                .map(str::to_owned),
            models: BTreeMap::new(),
            is_error: v.get("error").is_some_and(|e| !e.is_null()),
        };
        for (id, m) in models {
            let Some(t) = m.get("tokens") else { continue };
            let cached = u64_field(t, "cached");
            let input = match t.get("input") {
                Some(_) => u64_field(t, "input"),
                None => u64_field(t, "prompt").saturating_sub(cached),
            };
            let tokens = Tokens {
                input,
                cached,
                cache_creation: 0,
                output: u64_field(t, "candidates").saturating_add(u64_field(t, "thoughts")),
            };
            let total = match t.get("total") {
                Some(_) => u64_field(t, "total"),
                None => tokens.sum(),
            };
            run.models.insert(id.clone(), (tokens, total));
        }
        match self
            .runs
            .iter_mut()
            .find(|r| r.session.is_some() && r.session == run.session)
        {
            Some(existing) => *existing = run,
            None => self.runs.push(run),
        }
        Some(UsageSource::GeminiJson)
    }

    pub(crate) fn parts(&self, prices: &PriceTable) -> Vec<Part> {
        self.runs
            .iter()
            .map(|r| {
                let mut tokens = Tokens::default();
                for (t, _) in r.models.values() {
                    tokens.add(t);
                }
                let cost = PartCost::estimate(
                    prices,
                    r.models.iter().map(|(m, (t, _))| (Some(m.as_str()), t)),
                );
                let mut p = Part::new(tokens, cost);
                p.models = r.models.keys().cloned().collect();
                p.primary = r
                    .models
                    .iter()
                    .max_by(|a, b| a.1 .1.cmp(&b.1 .1).then_with(|| b.0.cmp(a.0)))
                    .map(|(m, _)| ModelIdentity::from_model_id(m, None, Some("gemini-cli")));
                p.is_error = Some(r.is_error);
                p
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::usage::Pricing;

    #[test]
    fn the_model_with_most_tokens_is_primary_and_errors_are_seen() {
        let v: Value = serde_json::from_str(
            r#"{"session_id":"s","error":{"type":"ApiError","message":"quota"},"stats":{"models":{
                "gemini-2.5-flash-lite":{"tokens":{"prompt":900,"candidates":10,"cached":0,"thoughts":0,"total":910}},
                "gemini-2.5-pro":{"tokens":{"prompt":400,"candidates":600,"cached":100,"thoughts":50,"total":1050}}}}}"#,
        )
        .expect("test json");
        let mut g = GeminiState::default();
        assert_eq!(g.feed(&v), Some(UsageSource::GeminiJson));
        // The same session printed again replaces, not adds.
        g.feed(&v);
        let parts = g.parts(&PriceTable::new(&Pricing::default()));
        assert_eq!(parts.len(), 1);
        let p = &parts[0];
        assert_eq!(
            p.primary.as_ref().map(|m| m.model.as_str()),
            Some("gemini-2.5-pro")
        );
        // No `input` field: fresh input = prompt - cached = 900 + 300.
        assert_eq!(
            p.tokens,
            Tokens {
                input: 1200,
                cached: 100,
                cache_creation: 0,
                output: 660
            }
        );
        assert_eq!(p.is_error, Some(true));
        assert_eq!(p.cost, PartCost::Unknown);
    }
}
