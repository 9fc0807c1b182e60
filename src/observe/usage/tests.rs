//! Meter tests over the agent-output samples (`fixtures/agent-output/`). Every
//! expected figure was worked out by hand from the sample text; the arithmetic is in
//! the comments.

use super::*;

macro_rules! sample {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/agent-output/",
            $name
        ))
    };
}

fn pricing(toml_text: &str) -> Pricing {
    #[derive(Deserialize)]
    struct Doc {
        pricing: Pricing,
    }
    let p = toml::from_str::<Doc>(toml_text)
        .expect("test pricing")
        .pricing;
    p.validate().expect("valid test pricing");
    p
}

fn prices() -> Pricing {
    pricing(
        r#"
        [pricing]
        default_model = "gpt-5-codex"
        [pricing.models."claude-sonnet-4-5"]
        input = 3.0
        output = 15.0
        cached_input = 0.30
        cache_write = 3.75
        [pricing.models."gpt-5-codex"]
        input = 1.25
        output = 10.0
        cached_input = 0.125
        "#,
    )
}

fn meter_stdout(text: &str, pricing: Pricing) -> UsageMeter {
    let mut m = UsageMeter::new(pricing, BTreeMap::new());
    for line in text.split_inclusive('\n') {
        m.feed_stdout_line(line.as_bytes());
    }
    m.finish();
    m
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

#[test]
fn claude_json_success_sums_every_model_and_keeps_the_primary() {
    let u = meter_stdout(sample!("claude_json_success.stdout"), Pricing::default()).snapshot();
    assert_eq!(u.sources, vec![UsageSource::ClaudeJson]);
    // modelUsage: sonnet 152/2411/88310/10422, haiku 1204/83/0/0.
    assert_eq!(u.input_tokens, 152 + 1204);
    assert_eq!(u.output_tokens, 2411 + 83);
    assert_eq!(u.cached_input_tokens, 88310);
    assert_eq!(u.cache_creation_tokens, 10422);
    assert!(close(u.cost_usd, 0.184321), "{:?}", u.cost_usd);
    assert_eq!(u.cost_kind, Some(FigureKind::Reported));
    let p = u.primary_model.clone().expect("primary");
    assert_eq!(p.model, "claude-sonnet-4-5-20250929");
    assert_eq!(p.version.as_deref(), Some("20250929"));
    assert_eq!(p.provider.as_deref(), Some("anthropic"));
    assert_eq!(p.cli.as_deref(), Some("claude-code"));
    assert_eq!(
        u.auxiliary_models,
        vec!["claude-haiku-4-5-20251001".to_owned()]
    );
    assert_eq!(u.num_turns, Some(7));
    assert_eq!(u.is_error, Some(false));
    assert_eq!(u.subtype.as_deref(), Some("success"));
    assert_eq!(u.skipped_lines, 0);
    // Budget tokens: fresh input + cache writes + output = 1356 + 10422 + 2494.
    assert_eq!(u.total_tokens(), 14272);
    assert_eq!(u.all_tokens(), 14272 + 88310);
}

#[test]
fn claude_json_max_turns_skips_the_warning_line() {
    let m = meter_stdout(sample!("claude_json_max_turns.stdout"), Pricing::default());
    let u = m.snapshot();
    assert_eq!(u.skipped_lines, 1);
    assert_eq!(u.sources, vec![UsageSource::ClaudeJson]);
    // opus 4410/18377/1203344/61230, haiku 9930/612/0/0.
    assert_eq!(u.input_tokens, 4410 + 9930);
    assert_eq!(u.output_tokens, 18377 + 612);
    assert_eq!(u.cached_input_tokens, 1203344);
    assert_eq!(u.cache_creation_tokens, 61230);
    assert!(close(u.cost_usd, 1.92207));
    assert_eq!(u.cost_kind, Some(FigureKind::Reported));
    assert_eq!(
        u.primary_model.map(|p| p.model).as_deref(),
        Some("claude-opus-4-1-20250805")
    );
    assert_eq!(
        u.auxiliary_models,
        vec!["claude-haiku-4-5-20251001".to_owned()]
    );
    assert_eq!(u.num_turns, Some(31));
    assert_eq!(u.is_error, Some(true));
    assert_eq!(u.subtype.as_deref(), Some("error_max_turns"));
    assert_eq!(m.total_tokens(), 14340 + 61230 + 18989);
}

#[test]
fn claude_stream_counts_a_repeated_message_once_and_the_result_supersedes() {
    let text = sample!("claude_stream_json.stdout");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 8);
    let mut m = UsageMeter::new(prices(), BTreeMap::new());

    m.feed_stdout_line(lines[0].as_bytes()); // init
    let u = m.snapshot();
    assert_eq!(u.sources, vec![UsageSource::ClaudeStreamJson]);
    assert_eq!(u.total_tokens(), 0);
    assert_eq!(u.cost_usd, None, "nothing metered yet");
    let p = u.primary_model.expect("init names the model");
    assert_eq!(p.model, "claude-sonnet-4-5-20250929");
    assert_eq!(p.cli_version.as_deref(), Some("2.1.14"));

    // msg_01 twice (text block, then tool_use block): usage 3/9/13870/4201, once.
    m.feed_stdout_line(lines[1].as_bytes());
    m.feed_stdout_line(lines[2].as_bytes());
    let u = m.snapshot();
    assert_eq!((u.input_tokens, u.output_tokens), (3, 9));
    assert_eq!(
        (u.cached_input_tokens, u.cache_creation_tokens),
        (13870, 4201)
    );
    assert_eq!(u.cost_kind, Some(FigureKind::Estimated));

    // Tool result, msg_02 (6/141/18071/310), tool result, msg_03 (4/37/18381/402).
    for l in &lines[3..7] {
        m.feed_stdout_line(l.as_bytes());
    }
    let u = m.snapshot();
    assert_eq!(u.input_tokens, 3 + 6 + 4);
    assert_eq!(u.output_tokens, 9 + 141 + 37);
    assert_eq!(u.cached_input_tokens, 13870 + 18071 + 18381);
    assert_eq!(u.cache_creation_tokens, 4201 + 310 + 402);
    // Estimate: (13*3 + 50322*0.30 + 4913*3.75 + 187*15) / 1e6 = 36364.35 / 1e6.
    assert!(close(u.cost_usd, 0.03636435), "{:?}", u.cost_usd);
    assert_eq!(u.cost_kind, Some(FigureKind::Estimated));
    assert_eq!(u.num_turns, None);

    m.feed_stdout_line(lines[7].as_bytes()); // result
    let u = m.snapshot();
    // modelUsage: sonnet 13/187/50322/4913, haiku 3980/52/0/0.
    assert_eq!(u.input_tokens, 13 + 3980);
    assert_eq!(u.output_tokens, 187 + 52);
    assert_eq!(u.cached_input_tokens, 50322);
    assert_eq!(u.cache_creation_tokens, 4913);
    assert!(close(u.cost_usd, 0.041208));
    assert_eq!(u.cost_kind, Some(FigureKind::Reported));
    assert_eq!(
        u.primary_model.map(|p| p.model).as_deref(),
        Some("claude-sonnet-4-5-20250929")
    );
    assert_eq!(
        u.auxiliary_models,
        vec!["claude-haiku-4-5-20251001".to_owned()]
    );
    assert_eq!(u.num_turns, Some(3));
    assert_eq!(u.is_error, Some(false));
    assert_eq!(u.sources, vec![UsageSource::ClaudeStreamJson]);
    assert_eq!(u.skipped_lines, 0);
}

#[test]
fn claude_stream_without_prices_has_no_cost_until_the_result() {
    let text = sample!("claude_stream_json.stdout");
    let mut m = UsageMeter::new(Pricing::default(), BTreeMap::new());
    for l in text.lines().take(7) {
        m.feed_stdout_line(l.as_bytes());
    }
    let u = m.snapshot();
    assert!(u.total_tokens() > 0);
    assert_eq!((u.cost_usd, u.cost_kind), (None, None));
}

#[test]
fn codex_tokens_are_converted_and_priced_as_estimates() {
    let u = meter_stdout(sample!("codex_exec_json.stdout"), Pricing::default()).snapshot();
    assert_eq!(u.sources, vec![UsageSource::CodexJson]);
    // input 24763 includes cached 24448: fresh 315.
    assert_eq!(u.input_tokens, 315);
    assert_eq!(u.cached_input_tokens, 24448);
    assert_eq!(u.output_tokens, 1122);
    assert_eq!(u.cache_creation_tokens, 0);
    assert_eq!((u.cost_usd, u.cost_kind), (None, None), "no price, no cost");
    assert_eq!(u.primary_model, None);
    assert_eq!(u.num_turns, Some(1));
    assert_eq!(u.is_error, Some(false));
    let id = "0199a213-81c0-7800-8aa1-bbab2a035a53";
    assert_eq!(
        u.codex_threads.get(id),
        Some(&CodexTotals {
            input_tokens: 24763,
            cached_input_tokens: 24448,
            output_tokens: 1122
        })
    );

    let u = meter_stdout(sample!("codex_exec_json.stdout"), prices()).snapshot();
    // (315*1.25 + 24448*0.125 + 1122*10) / 1e6 = 14669.75 / 1e6.
    assert!(close(u.cost_usd, 0.01466975), "{:?}", u.cost_usd);
    assert_eq!(u.cost_kind, Some(FigureKind::Estimated));
}

#[test]
fn codex_resumed_thread_is_metered_by_difference() {
    let first = meter_stdout(sample!("codex_exec_json.stdout"), Pricing::default()).snapshot();
    let id = "0199a213-81c0-7800-8aa1-bbab2a035a53";
    let second_run = format!(
        "{{\"type\":\"thread.started\",\"thread_id\":\"{id}\"}}\n{{\"type\":\"turn.started\"}}\n\
         {{\"type\":\"turn.completed\",\"usage\":{{\"input_tokens\":30000,\"cached_input_tokens\":28000,\"output_tokens\":1500}}}}\n"
    );
    let mut m = UsageMeter::new(Pricing::default(), first.codex_threads.clone());
    for l in second_run.lines() {
        m.feed_stdout_line(l.as_bytes());
    }
    let u = m.snapshot();
    // Deltas: input 30000-24763 = 5237, cached 28000-24448 = 3552, output 378.
    assert_eq!(u.input_tokens, 5237 - 3552);
    assert_eq!(u.cached_input_tokens, 3552);
    assert_eq!(u.output_tokens, 1500 - 1122);
    assert_eq!(
        u.codex_threads.get(id),
        Some(&CodexTotals {
            input_tokens: 30000,
            cached_input_tokens: 28000,
            output_tokens: 1500
        })
    );

    // Without the carried totals the same stream would be counted whole.
    let fresh = meter_stdout(&second_run, Pricing::default()).snapshot();
    assert_eq!(fresh.input_tokens, 2000);
    assert_eq!(fresh.output_tokens, 1500);
}

#[test]
fn codex_failed_turn_is_an_error_with_no_spend() {
    let prior: BTreeMap<String, CodexTotals> = [(
        "other-thread".to_owned(),
        CodexTotals {
            input_tokens: 1,
            cached_input_tokens: 0,
            output_tokens: 1,
        },
    )]
    .into_iter()
    .collect();
    let mut m = UsageMeter::new(prices(), prior.clone());
    for l in sample!("codex_exec_json_failed.stdout").lines() {
        m.feed_stdout_line(l.as_bytes());
    }
    let u = m.snapshot();
    assert_eq!(u.sources, vec![UsageSource::CodexJson]);
    assert_eq!(u.is_error, Some(true));
    assert_eq!(u.num_turns, Some(1));
    assert_eq!(u.total_tokens(), 0);
    assert_eq!(u.cost_usd, None, "nothing metered is not a cost of 0");
    assert_eq!(u.codex_threads, prior, "untouched threads are carried");
}

#[test]
fn gemini_json_takes_tokens_per_model() {
    let u = meter_stdout(sample!("gemini_json.stdout"), Pricing::default()).snapshot();
    assert_eq!(u.sources, vec![UsageSource::GeminiJson]);
    // input 10234 (= prompt 12034 - cached 1800), output candidates 512 + thoughts 344.
    assert_eq!(u.input_tokens, 10234);
    assert_eq!(u.cached_input_tokens, 1800);
    assert_eq!(u.output_tokens, 856);
    assert_eq!(u.all_tokens(), 12890, "matches the sample's own total");
    assert_eq!(u.cost_usd, None);
    let p = u.primary_model.expect("primary");
    assert_eq!(p.model, "gemini-2.5-pro");
    assert_eq!(p.provider.as_deref(), Some("google"));
    assert_eq!(p.cli.as_deref(), Some("gemini-cli"));
    assert!(u.auxiliary_models.is_empty());
    assert_eq!(u.is_error, Some(false));

    let priced = pricing(
        "[pricing.models.\"gemini-2.5-*\"]\ninput = 1.25\noutput = 10.0\ncached_input = 0.31\n",
    );
    let u = meter_stdout(sample!("gemini_json.stdout"), priced).snapshot();
    // (10234*1.25 + 1800*0.31 + 856*10) / 1e6 = (12792.5 + 558 + 8560) / 1e6.
    assert!(close(u.cost_usd, 0.0219105), "{:?}", u.cost_usd);
    assert_eq!(u.cost_kind, Some(FigureKind::Estimated));
}

#[test]
fn gemini_pretty_printed_object_is_reassembled() {
    let v: Value = serde_json::from_str(sample!("gemini_json.stdout")).expect("sample");
    let pretty = serde_json::to_string_pretty(&v).expect("pretty");
    let text = format!("Loaded cached credentials.\n{pretty}\n");
    let u = meter_stdout(&text, Pricing::default()).snapshot();
    assert_eq!(u.skipped_lines, 1);
    assert_eq!(u.input_tokens, 10234);
    assert_eq!(u.output_tokens, 856);
}

#[test]
fn usage_file_records_add_up_and_unpriced_tokens_are_estimated() {
    let text = sample!("generic_usage.jsonl");
    let feed = |p: Pricing| {
        let mut m = UsageMeter::new(p, BTreeMap::new());
        for l in text.lines() {
            m.feed_usage_file_line(l.as_bytes());
        }
        m.snapshot()
    };
    let u = feed(Pricing::default());
    assert_eq!(u.sources, vec![UsageSource::UsageFile]);
    // 18230 + (20011 - 17000) fresh input; 17000 cached; 912 + 455 output.
    assert_eq!(u.input_tokens, 21241);
    assert_eq!(u.cached_input_tokens, 17000);
    assert_eq!(u.output_tokens, 1367);
    assert_eq!(
        u.cost_usd, None,
        "the second record has no cost and no price"
    );
    let p = u.primary_model.expect("primary");
    assert_eq!(p.model, "claude-sonnet-4-5-20250929");
    assert_eq!(p.provider.as_deref(), Some("anthropic"));
    assert_eq!(p.cli, None);

    let u = feed(prices());
    // 0.0684 reported + (3011*3 + 17000*0.30 + 455*15) / 1e6 = 0.0684 + 0.020958.
    assert!(close(u.cost_usd, 0.089358), "{:?}", u.cost_usd);
    assert_eq!(u.cost_kind, Some(FigureKind::Estimated));

    // Only the reported record: the cost stays Reported.
    let mut m = UsageMeter::new(prices(), BTreeMap::new());
    m.feed_usage_file_line(text.lines().next().unwrap_or_default().as_bytes());
    let u = m.snapshot();
    assert!(close(u.cost_usd, 0.0684));
    assert_eq!(u.cost_kind, Some(FigureKind::Reported));
}

#[test]
fn stdout_and_usage_file_add_up() {
    let mut m = meter_stdout(sample!("claude_json_success.stdout"), Pricing::default());
    m.feed_usage_file_line(br#"{"provider":"openai","model":"gpt-5","input_tokens":100,"output_tokens":10,"cost_usd":0.5}"#);
    let u = m.snapshot();
    assert_eq!(
        u.sources,
        vec![UsageSource::ClaudeJson, UsageSource::UsageFile]
    );
    assert_eq!(u.input_tokens, 1356 + 100);
    assert!(close(u.cost_usd, 0.184321 + 0.5));
    // Stdout names the primary model; the file's model is auxiliary.
    assert_eq!(
        u.primary_model.map(|p| p.model).as_deref(),
        Some("claude-sonnet-4-5-20250929")
    );
    assert_eq!(
        u.auxiliary_models,
        vec!["claude-haiku-4-5-20251001".to_owned(), "gpt-5".to_owned()]
    );
}

#[test]
fn non_json_lines_are_skipped_and_counted() {
    let mut m = UsageMeter::new(Pricing::default(), BTreeMap::new());
    let junk: [&[u8]; 7] = [
        b"Compiling app v0.1.0\n",
        b"\r\n",
        b"   \n",
        b"{\"type\":\"result\",\"usage\":{\"input_tok", // truncated by the line cap
        b"[1,2,3]",
        b"\xff\xfe not utf-8",
        b"42",
    ];
    for l in junk {
        m.feed_stdout_line(l);
    }
    m.feed_stdout_line(br#"{"type":"result","subtype":"success","total_cost_usd":0.5,"usage":{"input_tokens":2,"output_tokens":3}}"#);
    m.feed_usage_file_line(b"not json");
    m.feed_usage_file_line(br#"{"model":"m"}"#); // missing token counts
    m.feed_usage_file_line(br#"{"model":"m","input_tokens":1,"output_tokens":1,"cost_usd":-1}"#);
    let u = m.snapshot();
    // Blank lines are not counted: 5 stdout + 3 usage-file lines.
    assert_eq!(u.skipped_lines, 8);
    assert_eq!((u.input_tokens, u.output_tokens), (2, 3));
    assert!(close(u.cost_usd, 0.5));
}

#[test]
fn an_unfinished_pretty_object_is_skipped_and_the_stream_goes_on() {
    let mut m = UsageMeter::new(Pricing::default(), BTreeMap::new());
    for l in ["{", "  \"stats\": {", "    \"models\": {"] {
        m.feed_stdout_line(l.as_bytes());
    }
    assert_eq!(m.snapshot().skipped_lines, 0, "held, not yet judged");
    // A column-0 line that is not `}` ends the attempt and is read on its own.
    m.feed_stdout_line(
        br#"{"type":"result","total_cost_usd":0.1,"usage":{"input_tokens":1,"output_tokens":1}}"#,
    );
    let u = m.snapshot();
    assert_eq!(u.skipped_lines, 3);
    assert!(close(u.cost_usd, 0.1));
    m.feed_stdout_line(b"{");
    m.finish();
    assert_eq!(m.snapshot().skipped_lines, 4);
}

#[test]
fn a_multi_line_object_is_held_only_up_to_its_cap() {
    let mut m = UsageMeter::new(Pricing::default(), BTreeMap::new());
    m.feed_stdout_line(b"{");
    let chunk = format!("  \"pad\": \"{}\",", "x".repeat(64 * 1024));
    let lines_to_cap = MAX_PENDING_BYTES / chunk.len();
    for _ in 0..lines_to_cap {
        m.feed_stdout_line(chunk.as_bytes());
    }
    assert_eq!(m.snapshot().skipped_lines, 0);
    // The next line would pass the cap: everything held is dropped and counted, and the
    // line itself (not JSON on its own) too.
    m.feed_stdout_line(chunk.as_bytes());
    assert_eq!(m.snapshot().skipped_lines, 1 + lines_to_cap as u64 + 1);
    m.feed_stdout_line(b"}");
    assert_eq!(m.snapshot().skipped_lines, 1 + lines_to_cap as u64 + 2);
}

#[test]
fn snapshot_grows_as_lines_arrive() {
    let mut m = UsageMeter::new(prices(), BTreeMap::new());
    let mut last = (0, 0.0);
    for l in sample!("claude_stream_json.stdout").lines().take(7) {
        m.feed_stdout_line(l.as_bytes());
        let u = m.snapshot();
        let now = (u.total_tokens(), u.cost_usd.unwrap_or(0.0));
        assert!(now.0 >= last.0 && now.1 >= last.1, "{now:?} after {last:?}");
        last = now;
    }
    assert_eq!(last.0, 13 + 4913 + 187);
}

#[test]
fn iteration_usage_round_trips_through_json() {
    let u = meter_stdout(sample!("claude_stream_json.stdout"), Pricing::default()).snapshot();
    let json = serde_json::to_string(&u).expect("serialize");
    assert!(json.contains("\"claude_stream_json\""));
    assert!(json.contains("\"cost_kind\":\"reported\""));
    let back: IterationUsage = serde_json::from_str(&json).expect("deserialize");
    assert_eq!(back, u);
}

#[test]
fn usage_file_record_with_only_a_cost_is_metered() {
    let mut m = UsageMeter::new(Pricing::default(), BTreeMap::new());
    m.feed_usage_file_line(br#"{"cost_usd": 2.0, "model": "m1"}"#);
    m.feed_usage_file_line(br#"{"cost_usd": 0.5}"#); // no model either
    m.feed_usage_file_line(br#"{"output_tokens": 7}"#); // tokens only, no price: unknown
    let u = m.snapshot();
    assert_eq!(u.skipped_lines, 0);
    assert_eq!(u.sources, vec![UsageSource::UsageFile]);
    assert_eq!((u.input_tokens, u.output_tokens), (0, 7));
    assert_eq!(
        u.cost_usd, None,
        "7 tokens with no price make the cost unknown"
    );

    let mut m = UsageMeter::new(Pricing::default(), BTreeMap::new());
    m.feed_usage_file_line(br#"{"cost_usd": 2.0, "model": "m1"}"#);
    m.feed_usage_file_line(br#"{"cost_usd": 0.5}"#);
    let u = m.snapshot();
    assert_eq!(u.skipped_lines, 0);
    assert!(close(u.cost_usd, 2.5), "{:?}", u.cost_usd);
    assert_eq!(u.cost_kind, Some(FigureKind::Reported));
    assert_eq!(u.primary_model.map(|p| p.model).as_deref(), Some("m1"));
    assert!(u.auxiliary_models.is_empty());

    let mut m = UsageMeter::new(Pricing::default(), BTreeMap::new());
    m.feed_usage_file_line(br#"{"cost_usd": 2.0, "model": "m1"}"#);
    assert_eq!(m.snapshot().cost_usd, Some(2.0));
}

/// The agent-output field samples (`fixtures/agent-output/field/`, right readings in
/// its README): shapes real CLIs shipped that broke tools reading them.
struct FieldSample {
    name: &'static str,
    text: &'static str,
    cost: Option<f64>,
    kind: Option<FigureKind>,
    input: u64,
    cached: u64,
    output: u64,
    primary: &'static str,
}

const FIELD: &[FieldSample] = &[
    // a real result ($2.0751) then a ghost zero-cost result for the same session
    FieldSample {
        name: "claude_stream_json_ghost_result",
        text: sample!("field/claude_stream_json_ghost_result.stdout"),
        cost: Some(2.0751),
        kind: Some(FigureKind::Reported),
        input: 12,
        cached: 1_810_221,
        output: 31_204,
        primary: "claude-sonnet-4-5-20250929",
    },
    // legacy `{"id","msg"}` events: 381674 input of which 301627 cached -> 80047 fresh
    FieldSample {
        name: "codex_exec_json_legacy",
        text: sample!("field/codex_exec_json_legacy.stdout"),
        cost: None,
        kind: None,
        input: 80_047,
        cached: 301_627,
        output: 12_384,
        primary: "codex-mini-latest",
    },
    // one line holding the whole event array
    FieldSample {
        name: "claude_json_verbose_array",
        text: sample!("field/claude_json_verbose_array.stdout"),
        cost: Some(1.3104),
        kind: Some(FigureKind::Reported),
        input: 9,
        cached: 402_113,
        output: 6_120,
        primary: "claude-opus-4-5-20251101",
    },
];

#[test]
fn field_samples_read_as_their_readme_says() {
    for s in FIELD {
        let u = meter_stdout(s.text, Pricing::default()).snapshot();
        match s.cost {
            Some(c) => assert!(close(u.cost_usd, c), "{}: cost {:?}", s.name, u.cost_usd),
            None => assert_eq!(u.cost_usd, None, "{}: no cost in the stream", s.name),
        }
        assert_eq!(u.cost_kind, s.kind, "{}", s.name);
        assert_eq!(
            (u.input_tokens, u.cached_input_tokens, u.output_tokens),
            (s.input, s.cached, s.output),
            "{}",
            s.name
        );
        assert_eq!(
            u.primary_model.as_ref().map(|m| m.model.as_str()),
            Some(s.primary),
            "{}",
            s.name
        );
        assert!(!u.sources.is_empty(), "{}: metered", s.name);
    }
}

#[test]
fn a_ghost_result_keeps_the_real_status_and_a_growing_one_updates_it() {
    let ghost = meter_stdout(
        sample!("field/claude_stream_json_ghost_result.stdout"),
        Pricing::default(),
    )
    .snapshot();
    assert_eq!(ghost.is_error, Some(false));
    assert_eq!(ghost.subtype.as_deref(), Some("success"));
    // a later result of the same session with larger figures is the new total
    let grown = meter_stdout(
        concat!(
            r#"{"type":"result","subtype":"success","session_id":"s","total_cost_usd":1.0,"usage":{"input_tokens":5,"output_tokens":5}}"#,
            "\n",
            r#"{"type":"result","subtype":"error_max_turns","is_error":true,"session_id":"s","total_cost_usd":1.5,"usage":{"input_tokens":7,"output_tokens":9}}"#,
            "\n"
        ),
        Pricing::default(),
    )
    .snapshot();
    assert!(close(grown.cost_usd, 1.5));
    assert_eq!((grown.input_tokens, grown.output_tokens), (7, 9));
    assert_eq!(grown.subtype.as_deref(), Some("error_max_turns"));
}

#[test]
fn primary_model_comes_from_the_assistant_messages_not_token_volume_or_init() {
    let cases: &[(&str, &str)] = &[
        // a utility model spends more tokens than the main one: still auxiliary
        (
            concat!(
                r#"{"type":"system","subtype":"init","session_id":"s","model":"claude-sonnet-4-5"}"#,
                "\n",
                r#"{"type":"assistant","session_id":"s","parent_tool_use_id":null,"message":{"id":"a","model":"claude-sonnet-4-5","usage":{"input_tokens":10,"output_tokens":20}}}"#,
                "\n",
                r#"{"type":"result","session_id":"s","total_cost_usd":0.1,"modelUsage":{"claude-sonnet-4-5":{"inputTokens":10,"outputTokens":20},"claude-haiku-4-5":{"inputTokens":90000,"outputTokens":900}}}"#,
                "\n",
            ),
            "claude-sonnet-4-5",
        ),
        // the assistant messages came from another model than init declared: drift
        (
            concat!(
                r#"{"type":"system","subtype":"init","session_id":"s","model":"claude-opus-4-5"}"#,
                "\n",
                r#"{"type":"assistant","session_id":"s","parent_tool_use_id":null,"message":{"id":"a","model":"claude-sonnet-4-5","usage":{"input_tokens":1,"output_tokens":2}}}"#,
                "\n",
            ),
            "claude-sonnet-4-5",
        ),
        // a subagent's messages (parent_tool_use_id set) do not name the primary
        (
            concat!(
                r#"{"type":"system","subtype":"init","session_id":"s","model":"claude-opus-4-5"}"#,
                "\n",
                r#"{"type":"assistant","session_id":"s","parent_tool_use_id":"t1","message":{"id":"b","model":"claude-haiku-4-5","usage":{"input_tokens":1,"output_tokens":2}}}"#,
                "\n",
            ),
            "claude-opus-4-5",
        ),
    ];
    for (text, want) in cases {
        let u = meter_stdout(text, Pricing::default()).snapshot();
        assert_eq!(
            u.primary_model.as_ref().map(|m| m.model.as_str()),
            Some(*want),
            "{text}"
        );
    }
}

/// Usage-file lines that meter nothing are named with the reason, the first
/// `MAX_REJECTED_SHOWN` of them (a new user's wrapper wrote `cost` for `cost_usd`, a
/// cost as a string, and a `key=value` line, and was told only "no usage source").
#[test]
fn rejected_usage_file_lines_are_named_with_the_reason() {
    let rows: &[(&str, Option<&str>)] = &[
        (r#"{"model": "m", "cost": 0.50}"#, Some("none of cost_usd")),
        (r#"{"model": "m", "cost_usd": "0.50"}"#, Some("wrong type")),
        ("cost_usd=0.50", Some("not a JSON object")),
        (r#"{"cost_usd": -1}"#, Some("negative")),
        ("[1, 2]", Some("not a JSON object")),
        (r#"{"cost_usd": 0.25}"#, None),
    ];
    for (line, why) in rows {
        let mut m = UsageMeter::new(Pricing::default(), BTreeMap::new());
        m.feed_usage_file_line(line.as_bytes());
        m.finish();
        let u = m.snapshot();
        match why {
            Some(w) => {
                assert_eq!(u.usage_file_rejected.len(), 1, "{line}: {u:?}");
                assert!(u.usage_file_rejected[0].contains(w), "{line}: {u:?}");
                assert!(
                    u.usage_file_rejected[0].contains(line.trim()),
                    "the line is quoted: {u:?}"
                );
            }
            None => assert!(u.usage_file_rejected.is_empty(), "{line}: {u:?}"),
        }
    }
    let mut m = UsageMeter::new(Pricing::default(), BTreeMap::new());
    for _ in 0..(MAX_REJECTED_SHOWN + 3) {
        m.feed_usage_file_line(b"nope");
    }
    let u = m.snapshot();
    assert_eq!(u.usage_file_rejected.len(), MAX_REJECTED_SHOWN);
    assert_eq!(u.skipped_lines, (MAX_REJECTED_SHOWN + 3) as u64);
}
