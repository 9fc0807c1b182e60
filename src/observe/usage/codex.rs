//! Codex `exec --json` events: `thread.started` (`thread_id`), `turn.started`,
//! `item.*`, `turn.completed` (`usage`: `input_tokens`, `cached_input_tokens`,
//! `output_tokens`), `turn.failed`, `error`. The stream names no model and no cost:
//! the cost is estimated with the `[pricing]` `default_model`.
//!
//! Usage totals are cumulative over a thread, across `exec resume` runs too. So the
//! meter keeps the largest totals seen per thread in this iteration, and the spend of
//! the iteration is their difference from the totals carried over from earlier
//! iterations ([`CodexTotals`] per thread id). If any counter went down, the thread is
//! taken to have restarted and its totals are counted whole. `cached_input_tokens` is
//! a subset of `input_tokens`; fresh input is their difference (saturating at 0).
//! A `turn.completed` before any `thread.started` is counted whole and not carried.
//! The run failed (`is_error`) when a turn failed, or when an `error` event was not
//! followed by any completed turn (a completed turn after an `error` was a retry).
//!
//! Codex before 0.44 printed `{"id":"<submission>","msg":{"type":…}}` events instead
//! (`legacy_msg`): `session_configured` names the `model` (the primary identity),
//! `token_count` carries `input_tokens` (cached included), `cached_input_tokens`,
//! `output_tokens` (reasoning included) — flat, or as `info.total_token_usage` in
//! later legacy builds — as running totals of the session, so the largest seen
//! counts; `error` and `stream_error` events mark a failure unless a later
//! `task_complete` follows. Those totals are not carried between iterations (the
//! legacy stream has no thread to resume).

use super::pricing::PriceTable;
use super::{u64_field, Part, PartCost, Tokens, UsageSource};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Cumulative token totals of one codex thread, as its last `turn.completed` said.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct CodexTotals {
    /// All input tokens, cached ones included.
    pub input_tokens: u64,
    /// The part of `input_tokens` served from the prompt cache.
    pub cached_input_tokens: u64,
    /// Output tokens (reasoning included).
    pub output_tokens: u64,
}

impl CodexTotals {
    fn max(self, o: CodexTotals) -> CodexTotals {
        CodexTotals {
            input_tokens: self.input_tokens.max(o.input_tokens),
            cached_input_tokens: self.cached_input_tokens.max(o.cached_input_tokens),
            output_tokens: self.output_tokens.max(o.output_tokens),
        }
    }

    /// Spend since `prior` (whole totals when a counter went down).
    fn since(self, prior: Option<CodexTotals>) -> CodexTotals {
        match prior {
            Some(p)
                if self.input_tokens >= p.input_tokens
                    && self.cached_input_tokens >= p.cached_input_tokens
                    && self.output_tokens >= p.output_tokens =>
            {
                CodexTotals {
                    input_tokens: self.input_tokens - p.input_tokens,
                    cached_input_tokens: self.cached_input_tokens - p.cached_input_tokens,
                    output_tokens: self.output_tokens - p.output_tokens,
                }
            }
            _ => self,
        }
    }

    fn tokens(self) -> Tokens {
        Tokens {
            input: self.input_tokens.saturating_sub(self.cached_input_tokens),
            cached: self.cached_input_tokens,
            cache_creation: 0,
            output: self.output_tokens,
        }
    }
}

/// True for the event types of `codex exec --json`.
pub(crate) fn is_codex_event(t: &str) -> bool {
    t == "thread.started" || t == "error" || t.starts_with("turn.") || t.starts_with("item.")
}

/// The `msg` object of a legacy (before 0.44) `codex exec --json` event:
/// `{"id": "...", "msg": {"type": "...", ...}}`.
pub(crate) fn legacy_msg(v: &Value) -> Option<&Value> {
    v.get("id")?;
    let msg = v.get("msg")?;
    msg.get("type")?.as_str()?;
    Some(msg)
}

#[derive(Debug, Clone, Default)]
pub(crate) struct CodexState {
    /// Legacy stream: the model `session_configured` named.
    legacy_model: Option<String>,
    /// Legacy stream: the largest `token_count` totals seen.
    legacy_totals: Option<CodexTotals>,
    legacy_completed: bool,
    prior: BTreeMap<String, CodexTotals>,
    current: Option<String>,
    latest: BTreeMap<String, CodexTotals>,
    unthreaded: Option<CodexTotals>,
    completed: u64,
    failed: u64,
    errored: bool,
    seen: bool,
}

impl CodexState {
    pub(crate) fn new(prior: BTreeMap<String, CodexTotals>) -> Self {
        CodexState {
            prior,
            ..CodexState::default()
        }
    }

    /// Takes one event of type `t`.
    pub(crate) fn feed(&mut self, t: &str, v: &Value) -> Option<UsageSource> {
        self.seen = true;
        match t {
            "thread.started" => {
                self.current = v
                    .get("thread_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            "turn.completed" => {
                self.completed += 1;
                if let Some(u) = v.get("usage") {
                    let totals = CodexTotals {
                        input_tokens: u64_field(u, "input_tokens"),
                        cached_input_tokens: u64_field(u, "cached_input_tokens"),
                        output_tokens: u64_field(u, "output_tokens"),
                    };
                    let slot = match &self.current {
                        Some(id) => self.latest.entry(id.clone()).or_default(),
                        None => self.unthreaded.get_or_insert_with(CodexTotals::default),
                    };
                    *slot = slot.max(totals);
                }
            }
            "turn.failed" => self.failed += 1,
            "error" => self.errored = true,
            _ => {}
        }
        Some(UsageSource::CodexJson)
    }

    /// Takes one legacy event's `msg` (see [`legacy_msg`]).
    pub(crate) fn feed_legacy(&mut self, msg: &Value) -> Option<UsageSource> {
        self.seen = true;
        match msg.get("type").and_then(Value::as_str)? {
            "session_configured" => {
                if let Some(m) = msg.get("model").and_then(Value::as_str) {
                    self.legacy_model = Some(m.to_owned());
                }
            }
            "token_count" => {
                let u = msg
                    .get("info")
                    .and_then(|i| i.get("total_token_usage"))
                    .unwrap_or(msg);
                let totals = CodexTotals {
                    input_tokens: u64_field(u, "input_tokens"),
                    cached_input_tokens: u64_field(u, "cached_input_tokens"),
                    output_tokens: u64_field(u, "output_tokens"),
                };
                let slot = self.legacy_totals.get_or_insert_with(CodexTotals::default);
                *slot = slot.max(totals);
            }
            "task_complete" => {
                self.completed += 1;
                self.legacy_completed = true;
            }
            "error" | "stream_error" => self.errored = true,
            _ => {}
        }
        Some(UsageSource::CodexJson)
    }

    /// This iteration's codex spend; `None` when no codex event was seen.
    pub(crate) fn part(&self, prices: &PriceTable) -> Option<Part> {
        if !self.seen {
            return None;
        }
        let mut tokens = Tokens::default();
        for (id, now) in &self.latest {
            tokens.add(&now.since(self.prior.get(id).copied()).tokens());
        }
        if let Some(u) = self.unthreaded {
            tokens.add(&u.tokens());
        }
        if let Some(u) = self.legacy_totals {
            tokens.add(&u.tokens());
        }
        let model = self.legacy_model.as_deref();
        let cost = PartCost::estimate(prices, [(model, &tokens)]);
        let mut p = Part::new(tokens, cost);
        if let Some(m) = model {
            p.models = vec![m.to_owned()];
            p.primary = Some(super::ModelIdentity::from_model_id(m, None, Some("codex")));
        }
        let turns = self.completed + self.failed;
        if turns > 0 {
            p.num_turns = Some(turns);
        }
        if turns > 0 || self.errored {
            // An `error` event followed by a completed turn was a retried hiccup.
            p.is_error = Some(self.failed > 0 || (self.errored && self.completed == 0));
        }
        Some(p)
    }

    /// Prior totals updated with this iteration's.
    pub(crate) fn threads_after(&self) -> BTreeMap<String, CodexTotals> {
        let mut all = self.prior.clone();
        for (id, t) in &self.latest {
            all.insert(id.clone(), *t);
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::usage::Pricing;

    fn run(lines: &[&str]) -> Part {
        let mut s = CodexState::default();
        for l in lines {
            let v: Value = serde_json::from_str(l).expect("test json");
            let t = v
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            s.feed(&t, &v);
        }
        s.part(&PriceTable::new(&Pricing::default()))
            .expect("codex seen")
    }

    #[test]
    fn an_error_followed_by_a_completed_turn_is_not_a_failure() {
        let p = run(&[
            r#"{"type":"thread.started","thread_id":"t"}"#,
            r#"{"type":"error","message":"Reconnecting... 1/5"}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":5,"cached_input_tokens":0,"output_tokens":1}}"#,
        ]);
        assert_eq!(p.is_error, Some(false));
        let p = run(&[r#"{"type":"error","message":"boom"}"#]);
        assert_eq!(p.is_error, Some(true));
        assert_eq!(p.num_turns, None);
    }

    #[test]
    fn turns_are_cumulative_within_a_thread_and_unthreaded_turns_count_whole() {
        let p = run(&[
            r#"{"type":"thread.started","thread_id":"t"}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":10,"output_tokens":5}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":300,"cached_input_tokens":200,"output_tokens":9}}"#,
        ]);
        assert_eq!(
            p.tokens,
            Tokens {
                input: 100,
                cached: 200,
                cache_creation: 0,
                output: 9
            }
        );
        assert_eq!(p.num_turns, Some(2));
        let p = run(&[
            r#"{"type":"turn.completed","usage":{"input_tokens":7,"cached_input_tokens":2,"output_tokens":3}}"#,
        ]);
        assert_eq!(
            p.tokens,
            Tokens {
                input: 5,
                cached: 2,
                cache_creation: 0,
                output: 3
            }
        );
    }

    #[test]
    fn a_counter_going_down_counts_the_thread_whole() {
        let now = CodexTotals {
            input_tokens: 10,
            cached_input_tokens: 4,
            output_tokens: 3,
        };
        let prior = CodexTotals {
            input_tokens: 50,
            cached_input_tokens: 0,
            output_tokens: 1,
        };
        assert_eq!(now.since(Some(prior)), now);
        let smaller = CodexTotals {
            input_tokens: 5,
            cached_input_tokens: 1,
            output_tokens: 1,
        };
        assert_eq!(
            now.since(Some(smaller)),
            CodexTotals {
                input_tokens: 5,
                cached_input_tokens: 3,
                output_tokens: 2
            }
        );
        assert_eq!(
            now.tokens(),
            Tokens {
                input: 6,
                cached: 4,
                cache_creation: 0,
                output: 3
            }
        );
    }
}
