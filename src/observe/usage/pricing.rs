//! The `[pricing]` table of `loop.toml`: USD per million tokens per model, used to
//! estimate a cost where the agent reports tokens but no price.
//!
//! Shape (every price is USD per 1,000,000 tokens, finite and >= 0):
//!
//! ```toml
//! [pricing]
//! default_model = "gpt-5-codex"        # prices streams that name no model (codex)
//! [pricing.models."gpt-5-codex"]
//! input = 1.25
//! output = 10.0
//! cached_input = 0.125                 # optional; defaults to `input`
//! [pricing.models."claude-sonnet-4-5"] # also matches claude-sonnet-4-5-20250929
//! input = 3.0
//! output = 15.0
//! cached_input = 0.30
//! cache_write = 3.75                   # optional; defaults to `input`
//! [pricing.models."gemini-2.5-*"]      # glob
//! input = 1.25
//! output = 10.0
//! ```
//!
//! Lookup order for a model id: the exact key; then a key equal to the id without its
//! snapshot suffix (`-YYYYMMDD`); then glob keys (`*`, `?`, `[..]`, `{..}`), the longest
//! pattern first, ties in key order. Invariant: a model without a matching key has no
//! price, and an estimate that needs it is `None`, never 0.

use super::identity::split_version;
use super::Tokens;
use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The `[pricing]` table. Deserialise with `toml`; then call [`Pricing::validate`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pricing {
    /// Model id used to price tokens from a stream that names no model (codex `exec
    /// --json`). Must match a key of `models` when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// Prices by model id, id without snapshot suffix, or glob.
    #[serde(default)]
    pub models: BTreeMap<String, ModelPrice>,
}

/// Prices of one model, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Fresh (uncached) input tokens.
    pub input: f64,
    /// Output tokens (including reasoning/thinking tokens).
    pub output: f64,
    /// Input tokens served from a prompt cache; defaults to `input` (an over- rather
    /// than under-estimate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
    /// Tokens written to a prompt cache; defaults to `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

/// A `[pricing]` value that cannot be used; `field` is its dotted path in `loop.toml`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PricingError {
    /// A price is negative, NaN or infinite.
    #[error("{field}: price must be a finite number >= 0 (USD per million tokens), got {value}")]
    InvalidPrice { field: String, value: f64 },
    /// A model key is empty or is a glob that does not compile.
    #[error("{field}: invalid model pattern: {message}")]
    InvalidPattern { field: String, message: String },
    /// `default_model` is empty or matches no key of `models`.
    #[error("{field}: {message}")]
    InvalidDefaultModel { field: String, message: String },
}

impl Pricing {
    /// Checks every price and pattern.
    ///
    /// # Errors
    /// The first bad entry, in key order, naming its field, e.g.
    /// `pricing.models."claude-*".output`.
    pub fn validate(&self) -> Result<(), PricingError> {
        for (key, price) in &self.models {
            let base = format!("pricing.models.{key:?}");
            if key.trim().is_empty() {
                return Err(PricingError::InvalidPattern {
                    field: base,
                    message: "empty model id".into(),
                });
            }
            if is_glob(key) {
                if let Err(e) = Glob::new(key) {
                    return Err(PricingError::InvalidPattern {
                        field: base,
                        message: e.to_string(),
                    });
                }
            }
            let fields = [
                ("input", Some(price.input)),
                ("output", Some(price.output)),
                ("cached_input", price.cached_input),
                ("cache_write", price.cache_write),
            ];
            for (name, value) in fields {
                if let Some(v) = value {
                    if !v.is_finite() || v < 0.0 {
                        return Err(PricingError::InvalidPrice {
                            field: format!("{base}.{name}"),
                            value: v,
                        });
                    }
                }
            }
        }
        if let Some(d) = &self.default_model {
            let field = "pricing.default_model".to_owned();
            if d.trim().is_empty() {
                return Err(PricingError::InvalidDefaultModel {
                    field,
                    message: "empty model id".into(),
                });
            }
            if PriceTable::new(self).lookup(d).is_none() {
                return Err(PricingError::InvalidDefaultModel {
                    field,
                    message: format!("{d:?} matches no key of [pricing.models]"),
                });
            }
        }
        Ok(())
    }
}

/// A compiled [`Pricing`]: globs built once. Entries that fail validation are ignored.
#[derive(Debug, Clone, Default)]
pub(crate) struct PriceTable {
    exact: BTreeMap<String, ModelPrice>,
    /// Sorted longest pattern first, then key order.
    globs: Vec<(String, GlobMatcher, ModelPrice)>,
    default_model: Option<String>,
}

impl PriceTable {
    pub(crate) fn new(pricing: &Pricing) -> Self {
        let mut exact = BTreeMap::new();
        let mut globs = Vec::new();
        for (key, price) in &pricing.models {
            if is_glob(key) {
                if let Ok(g) = Glob::new(key) {
                    globs.push((key.clone(), g.compile_matcher(), *price));
                }
            } else {
                exact.insert(key.clone(), *price);
            }
        }
        globs.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        PriceTable {
            exact,
            globs,
            default_model: pricing.default_model.clone(),
        }
    }

    /// The price of `model` by the lookup order of the module docs.
    pub(crate) fn lookup(&self, model: &str) -> Option<ModelPrice> {
        if let Some(p) = self.exact.get(model) {
            return Some(*p);
        }
        let (base, version) = split_version(model);
        if version.is_some() {
            if let Some(p) = self.exact.get(base) {
                return Some(*p);
            }
        }
        self.globs
            .iter()
            .find(|(_, m, _)| m.is_match(model))
            .map(|(_, _, p)| *p)
    }

    /// Estimated USD for `tokens` of `model` (`None` = the stream named no model, use
    /// `default_model`). `None` when no price applies.
    pub(crate) fn estimate(&self, model: Option<&str>, tokens: &Tokens) -> Option<f64> {
        let model = model.or(self.default_model.as_deref())?;
        let p = self.lookup(model)?;
        let micro = tokens.input as f64 * p.input
            + tokens.cached as f64 * p.cached_input.unwrap_or(p.input)
            + tokens.cache_creation as f64 * p.cache_write.unwrap_or(p.input)
            + tokens.output as f64 * p.output;
        Some(micro / 1_000_000.0)
    }
}

fn is_glob(key: &str) -> bool {
    key.contains(['*', '?', '[', '{'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(toml_text: &str) -> Pricing {
        #[derive(Deserialize)]
        struct Doc {
            pricing: Pricing,
        }
        match toml::from_str::<Doc>(toml_text) {
            Ok(d) => d.pricing,
            Err(e) => panic!("bad test toml: {e}"),
        }
    }

    #[test]
    fn lookup_prefers_exact_then_base_then_longest_glob() {
        let p = table(
            r#"
            [pricing.models."claude-*"]
            input = 1.0
            output = 1.0
            [pricing.models."claude-sonnet-*"]
            input = 2.0
            output = 2.0
            [pricing.models."claude-sonnet-4-5"]
            input = 3.0
            output = 15.0
            [pricing.models."claude-sonnet-4-5-20250929"]
            input = 4.0
            output = 4.0
            "#,
        );
        assert_eq!(p.validate(), Ok(()));
        let t = PriceTable::new(&p);
        let input = |m: &str| t.lookup(m).map(|p| p.input);
        assert_eq!(input("claude-sonnet-4-5-20250929"), Some(4.0));
        assert_eq!(input("claude-sonnet-4-5-20991231"), Some(3.0));
        assert_eq!(input("claude-sonnet-4-0"), Some(2.0));
        assert_eq!(input("claude-haiku-4-5-20251001"), Some(1.0));
        assert_eq!(input("gpt-5"), None);
    }

    #[test]
    fn estimate_uses_each_rate_and_defaults() {
        let p = table(
            r#"
            [pricing]
            default_model = "gpt-5-codex"
            [pricing.models."gpt-5-codex"]
            input = 1.25
            output = 10.0
            cached_input = 0.125
            "#,
        );
        assert_eq!(p.validate(), Ok(()));
        let t = PriceTable::new(&p);
        let tokens = Tokens {
            input: 1_000_000,
            cached: 2_000_000,
            cache_creation: 0,
            output: 500_000,
        };
        // 1.25 + 2 * 0.125 + 0.5 * 10 = 6.5
        let est = t.estimate(None, &tokens).unwrap_or(f64::NAN);
        assert!((est - 6.5).abs() < 1e-12, "{est}");
        // Without a cached price the cached tokens cost the input price.
        let p2 = table("[pricing.models.m]\ninput = 2.0\noutput = 0.0\n");
        let t2 = PriceTable::new(&p2);
        let est2 = t2.estimate(Some("m"), &tokens).unwrap_or(f64::NAN);
        assert!((est2 - 6.0).abs() < 1e-12, "{est2}");
        assert_eq!(t2.estimate(None, &tokens), None);
        assert_eq!(t2.estimate(Some("other"), &tokens), None);
    }

    #[test]
    fn validation_names_the_bad_field() {
        let p = table("[pricing.models.\"claude-*\"]\ninput = 1.0\noutput = -2.0\n");
        let err = p
            .validate()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.starts_with("pricing.models.\"claude-*\".output"),
            "{err}"
        );

        let p = table(
            "[pricing]\ndefault_model = \"x\"\n[pricing.models.y]\ninput = 1.0\noutput = 1.0\n",
        );
        let err = p
            .validate()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.starts_with("pricing.default_model"), "{err}");

        let p = table("[pricing.models.\"a[\"]\ninput = 1.0\noutput = 1.0\n");
        assert!(matches!(
            p.validate(),
            Err(PricingError::InvalidPattern { .. })
        ));
    }

    #[test]
    fn unknown_fields_are_rejected_by_name() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Doc {
            pricing: Pricing,
        }
        let err = toml::from_str::<Doc>(
            "[pricing.models.m]\ninput = 1.0\noutput = 1.0\ncahced_input = 1.0\n",
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(err.contains("cahced_input"), "{err}");
    }
}
