//! The `LOOPEXEC_USAGE_FILE` side channel: loopexec names a file in the agent's
//! environment and a wrapper script appends one JSON object per line for each model
//! call it wants metered:
//!
//! ```json
//! {"provider":"anthropic","model":"claude-sonnet-4-5-20250929","input_tokens":20011,
//!  "output_tokens":455,"cached_input_tokens":17000,"cost_usd":0.05}
//! ```
//!
//! Every field is optional, but a record must carry at least one of `cost_usd`,
//! `input_tokens` and `output_tokens` (an absent token count is 0, so a wrapper that
//! only knows a cost writes `{"cost_usd":2.0}`); other fields are ignored. A blank
//! `model` is taken as absent. `cached_input_tokens` is the part of `input_tokens` served from
//! a cache (so fresh input is the difference); if it exceeds `input_tokens` the two are
//! taken as separate counts. Records add up. A record's `cost_usd` is `Reported`;
//! without one its tokens are priced from `[pricing]` (`Estimated`). A line that is not
//! such a record is skipped and counted. The primary model is the one with the most
//! tokens (ties: the smaller id).

use super::pricing::PriceTable;
use super::{ModelIdentity, Part, PartCost, Tokens};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Deserialize)]
struct Record {
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cached_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_tokens: Option<u64>,
    #[serde(default)]
    cost_usd: Option<f64>,
}

#[derive(Debug, Clone, Default)]
struct ModelTotals {
    provider: Option<String>,
    tokens: Tokens,
    reported_cost: f64,
    /// Tokens of records that carried no cost.
    unpriced: Tokens,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct UsageFileState {
    /// Keyed by model id; `None` collects records that named no model.
    models: BTreeMap<Option<String>, ModelTotals>,
    any: bool,
}

impl UsageFileState {
    /// Takes one object.
    ///
    /// # Errors
    /// Why it is not a usable record (for the run's warning).
    pub(crate) fn feed(&mut self, v: &Value) -> Result<(), &'static str> {
        if !v.is_object() {
            return Err("not a JSON object");
        }
        let Ok(r) = Record::deserialize(v) else {
            return Err(
                "a field of the wrong type (cost_usd a number, token counts whole numbers, provider and model strings)",
            );
        };
        if r.cost_usd.is_none() && r.input_tokens.is_none() && r.output_tokens.is_none() {
            return Err("none of cost_usd, input_tokens, output_tokens");
        }
        let model = r.model.filter(|m| !m.trim().is_empty());
        if r.cost_usd.is_some_and(|c| !c.is_finite() || c < 0.0) {
            return Err("cost_usd is negative or not finite");
        }
        let cached = r.cached_input_tokens.unwrap_or(0);
        let input_tokens = r.input_tokens.unwrap_or(0);
        let input = if cached <= input_tokens {
            input_tokens - cached
        } else {
            input_tokens
        };
        let tokens = Tokens {
            input,
            cached,
            cache_creation: r.cache_creation_tokens.unwrap_or(0),
            output: r.output_tokens.unwrap_or(0),
        };
        let m = self.models.entry(model).or_default();
        if r.provider.is_some() {
            m.provider = r.provider;
        }
        m.tokens.add(&tokens);
        match r.cost_usd {
            Some(c) => m.reported_cost += c,
            None => m.unpriced.add(&tokens),
        }
        self.any = true;
        Ok(())
    }

    /// All records as one part; `None` before the first record.
    pub(crate) fn part(&self, prices: &PriceTable) -> Option<Part> {
        if !self.any {
            return None;
        }
        let mut tokens = Tokens::default();
        let mut reported = 0.0;
        for m in self.models.values() {
            tokens.add(&m.tokens);
            reported += m.reported_cost;
        }
        let estimate = PartCost::estimate(
            prices,
            self.models
                .iter()
                .map(|(id, m)| (id.as_deref(), &m.unpriced)),
        );
        let any_unpriced = self.models.values().any(|m| !m.unpriced.is_zero());
        let cost = match estimate {
            PartCost::Estimated(e) if any_unpriced => PartCost::Estimated(reported + e),
            PartCost::Estimated(_) | PartCost::Reported(_) => PartCost::Reported(reported),
            PartCost::Unknown => PartCost::Unknown,
        };
        let mut p = Part::new(tokens, cost);
        p.models = self.models.keys().flatten().cloned().collect();
        p.primary = self
            .models
            .iter()
            .filter_map(|(id, m)| id.as_ref().map(|id| (id, m)))
            .max_by(|a, b| {
                a.1.tokens
                    .sum()
                    .cmp(&b.1.tokens.sum())
                    .then_with(|| b.0.cmp(a.0))
            })
            .map(|(id, m)| ModelIdentity::from_model_id(id, m.provider.as_deref(), None));
        Some(p)
    }
}
