//! Model identities: splitting a reported model id into its name and snapshot
//! version, and naming the provider a model id belongs to.
//!
//! Invariant: [`ModelIdentity::model`] is always the id exactly as the agent reported
//! it; `version` is only a reading of its trailing snapshot suffix, never a rewrite.

use serde::{Deserialize, Serialize};

/// Which model did the work, as the agent reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModelIdentity {
    /// Provider, e.g. `"anthropic"`, `"openai"`, `"google"`: from the source when it says
    /// so (usage file), otherwise inferred from the model id prefix; `None` if unknown.
    pub provider: Option<String>,
    /// The model id exactly as reported, e.g. `"claude-sonnet-4-5-20250929"`.
    pub model: String,
    /// The snapshot suffix of `model` when it has one: `20250929` (8-digit date after the
    /// last `-` or `@`) or `2024-08-06` (trailing ISO date).
    pub version: Option<String>,
    /// The agent CLI that reported it: `"claude-code"`, `"codex"`, `"gemini-cli"`, or
    /// `None` for the usage file.
    pub cli: Option<String>,
    /// The CLI's own version when it printed one (Claude's `claude_code_version`).
    pub cli_version: Option<String>,
}

impl ModelIdentity {
    /// Builds an identity from a reported model id, reading the snapshot version and
    /// inferring the provider from the id when `provider` is `None`.
    #[must_use]
    pub fn from_model_id(model: &str, provider: Option<&str>, cli: Option<&str>) -> Self {
        let (base, version) = split_version(model);
        let provider = provider
            .map(str::to_owned)
            .or_else(|| infer_provider(base).map(str::to_owned));
        ModelIdentity {
            provider,
            model: model.to_owned(),
            version: version.map(str::to_owned),
            cli: cli.map(str::to_owned),
            cli_version: None,
        }
    }

    /// The model id without its snapshot suffix, e.g. `"claude-sonnet-4-5"`.
    #[must_use]
    pub fn base_model(&self) -> &str {
        split_version(&self.model).0
    }

    /// True when `pin` names this model: either the full id, or the id without its
    /// snapshot suffix (a pin on a model family accepts any snapshot of it).
    #[must_use]
    pub fn matches_pin(&self, pin: &str) -> bool {
        let pin = pin.trim();
        pin == self.model || pin == self.base_model()
    }
}

/// Splits `id` into (base, snapshot version). Recognised suffixes: `-YYYYMMDD`,
/// `@YYYYMMDD` and `-YYYY-MM-DD`.
pub(crate) fn split_version(id: &str) -> (&str, Option<&str>) {
    let all_digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(pos) = id.rfind(['-', '@']) {
        let tail = &id[pos + 1..];
        if pos > 0 && all_digits(tail, 8) {
            return (&id[..pos], Some(tail));
        }
    }
    // Trailing ISO date: base-YYYY-MM-DD.
    if id.len() > 11 {
        let split = id.len() - 11;
        if id.is_char_boundary(split) {
            let (base, tail) = id.split_at(split);
            let t = tail.as_bytes();
            if !base.is_empty()
                && t[0] == b'-'
                && all_digits(&tail[1..5], 4)
                && t[5] == b'-'
                && all_digits(&tail[6..8], 2)
                && t[8] == b'-'
                && all_digits(&tail[9..11], 2)
            {
                return (base, Some(&tail[1..]));
            }
        }
    }
    (id, None)
}

/// The provider a model id belongs to, from its well-known prefix.
pub(crate) fn infer_provider(model: &str) -> Option<&'static str> {
    let m = model.to_ascii_lowercase();
    if m.starts_with("claude") {
        Some("anthropic")
    } else if m.starts_with("gemini") {
        Some("google")
    } else if m.starts_with("gpt")
        || m.starts_with("codex")
        || (m.starts_with('o') && m[1..].starts_with(|c: char| c.is_ascii_digit()))
    {
        Some("openai")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_suffixes_are_read_as_versions() {
        assert_eq!(
            split_version("claude-sonnet-4-5-20250929"),
            ("claude-sonnet-4-5", Some("20250929"))
        );
        assert_eq!(
            split_version("claude-sonnet-4-5@20250929"),
            ("claude-sonnet-4-5", Some("20250929"))
        );
        assert_eq!(
            split_version("gpt-4o-2024-08-06"),
            ("gpt-4o", Some("2024-08-06"))
        );
        assert_eq!(split_version("gemini-2.5-pro"), ("gemini-2.5-pro", None));
        assert_eq!(split_version("20250929"), ("20250929", None));
    }

    #[test]
    fn identity_keeps_full_id_and_matches_family_pins() {
        let id =
            ModelIdentity::from_model_id("claude-opus-4-1-20250805", None, Some("claude-code"));
        assert_eq!(id.model, "claude-opus-4-1-20250805");
        assert_eq!(id.version.as_deref(), Some("20250805"));
        assert_eq!(id.provider.as_deref(), Some("anthropic"));
        assert!(id.matches_pin("claude-opus-4-1"));
        assert!(id.matches_pin("claude-opus-4-1-20250805"));
        assert!(!id.matches_pin("claude-opus-4"));
        assert_eq!(infer_provider("o3-mini"), Some("openai"));
        assert_eq!(infer_provider("gemini-2.5-flash"), Some("google"));
        assert_eq!(infer_provider("mistral-large"), None);
    }
}
