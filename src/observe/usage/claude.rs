//! Claude Code output: `-p --output-format json` (one `result` object) and
//! `--output-format stream-json --verbose` (`system`/`init`, `assistant`, `user`,
//! final `result` lines).
//!
//! Figures are kept per session (`session_id`), so a work step that runs the CLI twice
//! is metered twice. Within a session:
//! * `assistant` lines add `message.usage` to a running sum per `message.model`. One
//!   `message.id` repeated across content blocks counts once: the session keeps the
//!   field-wise maximum per id and adds only the growth. Messages without an id each
//!   count.
//! * A `result` line is authoritative and supersedes the running sum. Its figures are
//!   cumulative for the session, so a session keeps their running maximum: a later
//!   `result` whose figures are all lower or equal (Claude Code 2.1.1–2.1.6 printed a
//!   second, zero-cost `error_during_execution` result for the same session) changes
//!   nothing, its status included; one that grows any figure is taken field-wise
//!   with the maximum. Its tokens are
//!   the sum over `modelUsage` (every model, auxiliary ones included, since they are
//!   spend), or its `usage` when `modelUsage` is absent. Its cost is `total_cost_usd`
//!   (older CLIs: `cost_usd`), else the sum of `modelUsage.*.costUSD` when every entry
//!   has one (both `Reported`), else an estimate from [`super::Pricing`].
//! * The primary model is what the CLI marks as the main model: the `model` of the
//!   session's top-level `assistant` messages (`parent_tool_use_id` null; the most
//!   frequent, ties to the latest). A utility call on another model is auxiliary; an
//!   assistant message from a model other than the one `init` declared makes that
//!   model the primary, so the drift detector sees it. Without assistant messages it
//!   is the `init` line's `model`; with neither (plain `--output-format json`) the
//!   model with the most output tokens (ties: higher `costUSD`, then the smaller id).
//! * Without a `result` (mid-stream, or a killed agent) the cost is estimated from
//!   the running sum.

use super::pricing::PriceTable;
use super::{f64_field, u64_field, ModelIdentity, Part, PartCost, Tokens, UsageSource};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// Sessions seen on stdout, in order of first appearance.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClaudeState {
    sessions: Vec<Session>,
}

#[derive(Debug, Clone, Default)]
struct Session {
    id: Option<String>,
    init_model: Option<String>,
    cli_version: Option<String>,
    streamed: bool,
    /// Per message id: model and the field-wise maximum usage seen.
    messages: HashMap<String, (String, Tokens)>,
    /// Running sum per model over assistant messages.
    running: BTreeMap<String, Tokens>,
    result: Option<ResultFigures>,
    /// Top-level assistant messages per model: (count, order of the latest).
    assistant_models: BTreeMap<String, (u64, u64)>,
    assistant_seen: u64,
}

#[derive(Debug, Clone, Default)]
struct ResultFigures {
    /// `modelUsage`: tokens and `costUSD` per model.
    by_model: BTreeMap<String, (Tokens, Option<f64>)>,
    usage: Option<Tokens>,
    cost: Option<f64>,
    num_turns: Option<u64>,
    is_error: Option<bool>,
    subtype: Option<String>,
}

impl ClaudeState {
    /// Takes one object whose `type` is `system`, `assistant`, `user` or `result`;
    /// returns its source when it is Claude output.
    pub(crate) fn feed(&mut self, v: &Value) -> Option<UsageSource> {
        let sid = v.get("session_id").and_then(Value::as_str);
        match v.get("type").and_then(Value::as_str)? {
            "system" => {
                if v.get("subtype").and_then(Value::as_str) != Some("init") {
                    return None;
                }
                let s = self.session(sid);
                s.streamed = true;
                if let Some(m) = v.get("model").and_then(Value::as_str) {
                    s.init_model = Some(m.to_owned());
                }
                if let Some(cv) = v.get("claude_code_version").and_then(Value::as_str) {
                    s.cli_version = Some(cv.to_owned());
                }
                Some(UsageSource::ClaudeStreamJson)
            }
            "assistant" => {
                let msg = v.get("message")?.as_object()?;
                let top_level = v.get("parent_tool_use_id").map_or(true, Value::is_null);
                let s = self.session(sid);
                s.streamed = true;
                if let Some(m) = msg.get("model").and_then(Value::as_str) {
                    // `<synthetic>` marks messages the CLI wrote itself (errors)
                    if top_level && !m.is_empty() && !m.starts_with('<') {
                        s.assistant_seen += 1;
                        let order = s.assistant_seen;
                        let e = s.assistant_models.entry(m.to_owned()).or_default();
                        e.0 += 1;
                        e.1 = order;
                    }
                }
                if let Some(usage) = msg.get("usage") {
                    let model = msg
                        .get("model")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    let tokens = usage_tokens(usage);
                    let grown = match msg.get("id").and_then(Value::as_str) {
                        Some(id) => {
                            let entry = s
                                .messages
                                .entry(id.to_owned())
                                .or_insert_with(|| (model.clone(), Tokens::default()));
                            let max = entry.1.max(&tokens);
                            let grown = max.minus(&entry.1);
                            entry.1 = max;
                            grown
                        }
                        None => tokens,
                    };
                    s.running.entry(model).or_default().add(&grown);
                }
                Some(UsageSource::ClaudeStreamJson)
            }
            "user" => {
                v.get("message")?;
                self.session(sid).streamed = true;
                Some(UsageSource::ClaudeStreamJson)
            }
            "result" => {
                let has_figures = [
                    "usage",
                    "modelUsage",
                    "total_cost_usd",
                    "cost_usd",
                    "num_turns",
                ]
                .iter()
                .any(|k| v.get(*k).is_some());
                if !has_figures {
                    return None;
                }
                let r = parse_result(v);
                let s = self.session(sid);
                s.result = Some(match s.result.take() {
                    Some(old) => old.merge(r),
                    None => r,
                });
                Some(if s.streamed {
                    UsageSource::ClaudeStreamJson
                } else {
                    UsageSource::ClaudeJson
                })
            }
            _ => None,
        }
    }

    /// The session a line belongs to: by `session_id`; a line without one joins the
    /// latest session; a new id adopts a latest session that has no id and no result.
    fn session(&mut self, sid: Option<&str>) -> &mut Session {
        let idx = match sid {
            Some(id) => {
                if let Some(i) = self
                    .sessions
                    .iter()
                    .position(|s| s.id.as_deref() == Some(id))
                {
                    Some(i)
                } else if let Some(last) = self
                    .sessions
                    .last_mut()
                    .filter(|s| s.id.is_none() && s.result.is_none())
                {
                    last.id = Some(id.to_owned());
                    Some(self.sessions.len() - 1)
                } else {
                    None
                }
            }
            None => self.sessions.len().checked_sub(1),
        };
        let idx = match idx {
            Some(i) => i,
            None => {
                self.sessions.push(Session {
                    id: sid.map(str::to_owned),
                    ..Session::default()
                });
                self.sessions.len() - 1
            }
        };
        &mut self.sessions[idx]
    }

    /// One part per session.
    pub(crate) fn parts(&self, prices: &PriceTable) -> Vec<Part> {
        self.sessions.iter().map(|s| s.part(prices)).collect()
    }
}

impl Session {
    fn part(&self, prices: &PriceTable) -> Part {
        let running_total = sum_tokens(self.running.values());
        let running_primary = pick_primary(self.running.iter().map(|(m, t)| (m.as_str(), t, None)));
        let mut part = match &self.result {
            Some(r) if !r.by_model.is_empty() => {
                let tokens = sum_tokens(r.by_model.values().map(|(t, _)| t));
                let cost = match r.cost {
                    Some(c) => PartCost::Reported(c),
                    None => match r.by_model.values().map(|(_, c)| *c).sum::<Option<f64>>() {
                        Some(c) => PartCost::Reported(c),
                        None => PartCost::estimate(
                            prices,
                            r.by_model.iter().map(|(m, (t, _))| (Some(m.as_str()), t)),
                        ),
                    },
                };
                let mut p = Part::new(tokens, cost);
                p.models = r.by_model.keys().cloned().collect();
                let by_model_primary =
                    pick_primary(r.by_model.iter().map(|(m, (t, c))| (m.as_str(), t, *c)));
                p.primary = self.identity(by_model_primary.or(running_primary));
                p
            }
            Some(r) => {
                let tokens = r.usage.unwrap_or(running_total);
                let primary = self.init_model.as_deref().or(running_primary);
                let cost = match r.cost {
                    Some(c) => PartCost::Reported(c),
                    None => PartCost::estimate(prices, [(primary, &tokens)]),
                };
                let mut p = Part::new(tokens, cost);
                p.models = self
                    .running
                    .keys()
                    .filter(|m| !m.is_empty())
                    .cloned()
                    .collect();
                p.primary = self.identity(running_primary);
                p
            }
            None => {
                let cost = PartCost::estimate(
                    prices,
                    self.running
                        .iter()
                        .map(|(m, t)| (Some(m.as_str()).filter(|m| !m.is_empty()), t)),
                );
                let mut p = Part::new(running_total, cost);
                p.models = self
                    .running
                    .keys()
                    .filter(|m| !m.is_empty())
                    .cloned()
                    .collect();
                p.primary = self.identity(running_primary);
                p
            }
        };
        if let Some(r) = &self.result {
            part.num_turns = r.num_turns;
            part.is_error = r.is_error;
            part.subtype.clone_from(&r.subtype);
        }
        part
    }

    /// The model of the session's top-level assistant messages (module doc).
    fn assistant_model(&self) -> Option<&str> {
        self.assistant_models
            .iter()
            .max_by_key(|(_, (n, last))| (*n, *last))
            .map(|(m, _)| m.as_str())
    }

    /// The primary identity: the assistant messages' model, else the init model,
    /// else `fallback`.
    fn identity(&self, fallback: Option<&str>) -> Option<ModelIdentity> {
        let model = self
            .assistant_model()
            .or(self.init_model.as_deref())
            .or(fallback)
            .filter(|m| !m.is_empty())?;
        let mut id = ModelIdentity::from_model_id(model, None, Some("claude-code"));
        id.cli_version.clone_from(&self.cli_version);
        Some(id)
    }
}

/// The model with the most output tokens; ties: the higher cost, then the smaller id.
fn pick_primary<'a>(
    models: impl Iterator<Item = (&'a str, &'a Tokens, Option<f64>)>,
) -> Option<&'a str> {
    models
        .filter(|(m, _, _)| !m.is_empty())
        .max_by(|a, b| {
            a.1.output
                .cmp(&b.1.output)
                .then_with(|| a.2.unwrap_or(0.0).total_cmp(&b.2.unwrap_or(0.0)))
                .then_with(|| b.0.cmp(a.0))
        })
        .map(|(m, _, _)| m)
}

fn sum_tokens<'a>(ts: impl Iterator<Item = &'a Tokens>) -> Tokens {
    let mut total = Tokens::default();
    for t in ts {
        total.add(t);
    }
    total
}

/// A Claude `usage` object (snake_case fields).
fn usage_tokens(u: &Value) -> Tokens {
    Tokens {
        input: u64_field(u, "input_tokens"),
        cached: u64_field(u, "cache_read_input_tokens"),
        cache_creation: u64_field(u, "cache_creation_input_tokens"),
        output: u64_field(u, "output_tokens"),
    }
}

impl ResultFigures {
    /// All tokens the record counts (`modelUsage`, else `usage`).
    fn tokens(&self) -> u64 {
        if self.by_model.is_empty() {
            self.usage.map_or(0, |u| u.sum())
        } else {
            self.by_model.values().map(|(t, _)| t.sum()).sum()
        }
    }

    /// Joins a later `result` of the same session (see the module doc): one that
    /// grows no figure is ignored; otherwise each figure is the larger of the two and
    /// the status is the later record's.
    fn merge(self, later: ResultFigures) -> ResultFigures {
        let grows = later.cost.unwrap_or(0.0) > self.cost.unwrap_or(0.0)
            || later.tokens() > self.tokens()
            || later.num_turns.unwrap_or(0) > self.num_turns.unwrap_or(0);
        if !grows {
            return self;
        }
        let mut by_model = self.by_model;
        for (m, (t, c)) in later.by_model {
            let e = by_model.entry(m).or_insert((Tokens::default(), None));
            e.0 = e.0.max(&t);
            e.1 = match (e.1, c) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
        ResultFigures {
            by_model,
            usage: match (self.usage, later.usage) {
                (Some(a), Some(b)) => Some(a.max(&b)),
                (a, b) => a.or(b),
            },
            cost: match (self.cost, later.cost) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            },
            num_turns: self.num_turns.max(later.num_turns),
            is_error: later.is_error.or(self.is_error),
            subtype: later.subtype.or(self.subtype),
        }
    }
}

fn parse_result(v: &Value) -> ResultFigures {
    let mut by_model = BTreeMap::new();
    if let Some(mu) = v.get("modelUsage").and_then(Value::as_object) {
        for (model, e) in mu {
            let t = Tokens {
                input: u64_field(e, "inputTokens"),
                cached: u64_field(e, "cacheReadInputTokens"),
                cache_creation: u64_field(e, "cacheCreationInputTokens"),
                output: u64_field(e, "outputTokens"),
            };
            by_model.insert(model.clone(), (t, f64_field(e, "costUSD")));
        }
    }
    ResultFigures {
        by_model,
        usage: v.get("usage").filter(|u| u.is_object()).map(usage_tokens),
        cost: f64_field(v, "total_cost_usd").or_else(|| f64_field(v, "cost_usd")),
        num_turns: v.get("num_turns").and_then(Value::as_u64),
        is_error: v.get("is_error").and_then(Value::as_bool),
        subtype: v.get("subtype").and_then(Value::as_str).map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::usage::Pricing;

    fn feed(lines: &[&str]) -> ClaudeState {
        let mut s = ClaudeState::default();
        for l in lines {
            let v: Value = serde_json::from_str(l).expect("test json");
            s.feed(&v);
        }
        s
    }

    #[test]
    fn without_init_the_primary_is_the_biggest_writer() {
        // The small model read more input but wrote less: it is auxiliary.
        let s = feed(&[
            r#"{"type":"result","subtype":"success","is_error":false,"num_turns":2,
            "modelUsage":{"big-model":{"inputTokens":10,"outputTokens":500,"costUSD":0.5},
                          "small-model":{"inputTokens":9000,"outputTokens":40,"costUSD":0.01}}}"#,
        ]);
        let parts = s.parts(&PriceTable::new(&Pricing::default()));
        assert_eq!(parts.len(), 1);
        assert_eq!(
            parts[0].primary.as_ref().map(|p| p.model.as_str()),
            Some("big-model")
        );
        // No total_cost_usd: the per-model costs are summed and still reported.
        match parts[0].cost {
            PartCost::Reported(c) => assert!((c - 0.51).abs() < 1e-12),
            other => panic!("{other:?}"),
        }
        assert_eq!(parts[0].tokens.input, 9010);
        assert_eq!(parts[0].tokens.output, 540);
    }

    #[test]
    fn older_cost_usd_field_is_read() {
        let s = feed(&[r#"{"type":"result","subtype":"success","cost_usd":0.25,
            "usage":{"input_tokens":5,"output_tokens":7}}"#]);
        let parts = s.parts(&PriceTable::new(&Pricing::default()));
        assert_eq!(parts[0].cost, PartCost::Reported(0.25));
        assert_eq!(
            parts[0].tokens,
            Tokens {
                input: 5,
                cached: 0,
                cache_creation: 0,
                output: 7
            }
        );
    }

    #[test]
    fn a_growing_message_counts_its_final_usage_once() {
        let s = feed(&[
            r#"{"type":"assistant","session_id":"s","message":{"id":"m1","model":"x","usage":{"input_tokens":3,"output_tokens":1}}}"#,
            r#"{"type":"assistant","session_id":"s","message":{"id":"m1","model":"x","usage":{"input_tokens":3,"output_tokens":9}}}"#,
            r#"{"type":"assistant","session_id":"s","message":{"id":"m1","model":"x","usage":{"input_tokens":3,"output_tokens":9}}}"#,
        ]);
        let parts = s.parts(&PriceTable::new(&Pricing::default()));
        assert_eq!(
            parts[0].tokens,
            Tokens {
                input: 3,
                cached: 0,
                cache_creation: 0,
                output: 9
            }
        );
        assert_eq!(parts[0].cost, PartCost::Unknown);
    }

    #[test]
    fn two_sessions_are_metered_separately() {
        let s = feed(&[
            r#"{"type":"result","session_id":"a","total_cost_usd":0.5,"usage":{"input_tokens":1,"output_tokens":2}}"#,
            r#"{"type":"result","session_id":"b","total_cost_usd":0.25,"usage":{"input_tokens":3,"output_tokens":4}}"#,
            r#"{"type":"result","session_id":"a","total_cost_usd":0.5,"usage":{"input_tokens":1,"output_tokens":2}}"#,
        ]);
        let parts = s.parts(&PriceTable::new(&Pricing::default()));
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].cost, PartCost::Reported(0.5));
        assert_eq!(parts[1].cost, PartCost::Reported(0.25));
    }
}
