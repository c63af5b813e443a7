//! `--replies cheap` over real HTTP: replies valid for every shape the games ask, deterministic,
//! with estimated usage, and no tokenizing.

use std::net::SocketAddr;

use serde_json::{json, Value};

use super::*;
use crate::{MockConfig, MockServer, MockState, MockStats};
use sleuth_llm::{parse_sections, parse_structured, sections_schema_line, tokens};

fn cheap() -> MockConfig {
    MockConfig {
        replies: Replies::Cheap,
        ..MockConfig::default()
    }
}

async fn server(config: MockConfig) -> MockServer {
    let listen: SocketAddr = "127.0.0.1:0".parse().expect("an address");
    MockServer::start(listen, config)
        .await
        .expect("the mock starts")
}

/// POSTs a chat completion; the status and the JSON body.
async fn chat(s: &MockServer, body: &Value) -> (u16, Value) {
    sleuth_base::tls::install_crypto_provider();
    let resp = reqwest::Client::new()
        .post(format!("{}/chat/completions", s.base_url()))
        .json(body)
        .send()
        .await
        .expect("the request is sent");
    let status = resp.status().as_u16();
    (status, resp.json().await.expect("a JSON body"))
}

async fn stats(s: &MockServer) -> MockStats {
    reqwest::Client::new()
        .get(format!("http://{}/stats", s.addr))
        .send()
        .await
        .expect("stats")
        .json()
        .await
        .expect("stats JSON")
}

fn content(v: &Value) -> &str {
    v["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_else(|| panic!("no content in {v}"))
}

const SYSTEM: &str = "You are Ben.\n### Your script\nAt 10 pm I saw Ada near the brandy decanter.";

/// A nested schema of every kind the games use and a few more.
fn nested_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "suspect": {"type": "string", "enum": ["Ada", "Ben", "Cole"]},
            "options": {
                "type": "array",
                "items": {"type": "string", "enum": ["A", "B", "C", "D"]},
                "minItems": 2,
                "maxItems": 3
            },
            "confidence": {"type": "integer", "minimum": 1, "maximum": 5},
            "reason": {"type": "string", "maxLength": 12},
            "alibi": {"anyOf": [{"type": "null"}, {"type": "string", "maxLength": 20}]},
            "detail": {
                "type": "object",
                "properties": {
                    "weight": {"type": ["number", "null"], "minimum": 0.25, "maximum": 0.75},
                    "seen": {"type": "boolean"},
                    "notes": {"type": "array", "items": {"type": "string"}, "maxItems": 2}
                },
                "required": ["weight", "seen", "notes"]
            }
        },
        "required": ["suspect", "options", "confidence", "reason", "alibi", "detail"]
    })
}

/// What sleuth's own checks leave out (its checker reads types, enums, required properties and numeric
/// bounds): string lengths, array sizes and distinct enum items, and `anyOf` branches.
fn check_rest(v: &Value, schema: &Value, path: &str) {
    if let Some(alts) = schema.get("anyOf").and_then(Value::as_array) {
        assert!(
            alts.iter()
                .any(|a| match a.get("type").and_then(Value::as_str) {
                    Some("null") => v.is_null(),
                    Some("string") => v.is_string(),
                    _ => true,
                }),
            "{path} = {v} fits no branch of {schema}"
        );
        for a in alts.iter().filter(|_| v.is_string()) {
            check_rest(v, a, path);
        }
        return;
    }
    if let (Some(s), Some(max)) = (v.as_str(), schema.get("maxLength").and_then(Value::as_u64)) {
        assert!(s.chars().count() as u64 <= max, "{path} = {s:?} > {max}");
        assert!(!s.is_empty(), "{path} is empty");
    }
    if let Some(items) = v.as_array() {
        let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        let max = schema
            .get("maxItems")
            .and_then(Value::as_u64)
            .unwrap_or(u64::MAX);
        let n = items.len() as u64;
        assert!(
            (min..=max).contains(&n),
            "{path} has {n} items, not {min}..={max}"
        );
        let sub = &schema["items"];
        if sub.get("enum").is_some() {
            let distinct: std::collections::HashSet<String> =
                items.iter().map(Value::to_string).collect();
            assert_eq!(distinct.len(), items.len(), "{path} repeats an item: {v}");
        }
        for (i, x) in items.iter().enumerate() {
            check_rest(x, sub, &format!("{path}[{i}]"));
        }
    }
    if let (Some(obj), Some(props)) = (v.as_object(), schema["properties"].as_object()) {
        assert_eq!(
            obj.len(),
            props.len(),
            "{path}: exactly the listed properties"
        );
        for (k, sub) in props {
            check_rest(&obj[k], sub, &format!("{path}.{k}"));
        }
    }
}

/// A reply checked by sleuth's own parsers: `parse_structured` (types, enums, required) as the gateway
/// parses a JSON reply, and `parse_sections` (which adds the numeric bounds) over the same JSON.
fn validate(reply: &str, schema: &Value) -> Value {
    let v = parse_structured(reply, schema).unwrap_or_else(|e| panic!("{e}: {reply}"));
    let as_sections = format!("### THOUGHT: x\n### RESPONSE: {reply}");
    parse_sections(&as_sections, schema).unwrap_or_else(|e| panic!("{e}: {reply}"));
    check_rest(&v, schema, "$");
    v
}

fn schema_body(seed: u64, schema: &Value) -> Value {
    json!({
        "model": "sim-1",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Question: Who was near the brandy decanter?"},
        ],
        "response_format": {"type": "json_schema", "json_schema": {"name": "vote", "schema": schema, "strict": true}},
        "seed": seed,
        "logprobs": true,
        "top_logprobs": 5,
    })
}

#[tokio::test]
async fn a_nested_schema_is_filled_validly_and_variously() {
    let s = server(cheap()).await;
    let schema = nested_schema();
    let mut suspects = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let (status, v) = chat(&s, &schema_body(seed, &schema)).await;
        assert_eq!(status, 200, "{v}");
        let reply = validate(content(&v), &schema);
        suspects.insert(reply["suspect"].to_string());
        // Log-probabilities: one entry per enum choice, the first the suspect chosen, which PLAYER*'s
        // reading of them takes as the most likely.
        let lps = v["choices"][0]["logprobs"]["content"]
            .as_array()
            .expect("logprobs asked for");
        assert_eq!(
            lps.len(),
            1 + reply["options"].as_array().map_or(0, Vec::len)
        );
        assert_eq!(lps[0]["token"], reply["suspect"]);
        let top = lps[0]["top_logprobs"].as_array().expect("alternatives");
        assert_eq!(top.len(), 3);
        let best = top
            .iter()
            .max_by(|a, b| {
                a["logprob"]
                    .as_f64()
                    .partial_cmp(&b["logprob"].as_f64())
                    .expect("finite")
            })
            .expect("one");
        assert_eq!(best["token"], reply["suspect"]);
    }
    assert!(
        suspects.len() > 1,
        "the choices vary with the seed: {suspects:?}"
    );
    let st = stats(&s).await;
    assert_eq!((st.ok, st.refused), (40, 0));
    s.shutdown().await;
}

fn sections_body(schema: &Value, seed: u64) -> Value {
    let user = format!(
        "### What happened\nAda was seen at ten.\n\nWhat do you say to the others?\n\n### Reply format\nWrite `### THOUGHT:` followed by your reasoning, then `### RESPONSE:`.\n{}",
        sections_schema_line(schema)
    );
    json!({
        "model": "sim-1",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
        "seed": seed,
        "max_tokens": 200,
    })
}

#[tokio::test]
async fn a_sections_request_gets_a_reply_the_gateway_parses() {
    let s = server(cheap()).await;
    let vote = json!({
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["ask", "accuse"]},
            "target": {"type": "string", "enum": ["Ada", "Cole"]},
            "certainty": {"type": "integer", "minimum": 0, "maximum": 3}
        },
        "required": ["action", "target", "certainty"]
    });
    for seed in 0..10 {
        let (_, v) = chat(&s, &sections_body(&vote, seed)).await;
        let reply = content(&v);
        assert!(reply.starts_with("### THOUGHT: "), "{reply}");
        let parsed = parse_sections(reply, &vote).unwrap_or_else(|e| panic!("{e}: {reply}"));
        check_rest(&parsed, &vote, "$");
        let (_, v) = chat(&s, &sections_body(&json!({"type": "string"}), seed)).await;
        let speech = parse_sections(content(&v), &json!({"type": "string"}))
            .unwrap_or_else(|e| panic!("{e}: {}", content(&v)));
        assert!(
            speech
                .as_str()
                .is_some_and(|t| !t.is_empty() && !t.starts_with('{')),
            "a string RESPONSE is free text: {speech}"
        );
    }
    s.shutdown().await;
}

#[tokio::test]
async fn the_same_request_gets_the_same_reply_and_another_sample_another() {
    let s = server(cheap()).await;
    let schema = nested_schema();
    let (_, a) = chat(&s, &schema_body(3, &schema)).await;
    let (_, b) = chat(&s, &schema_body(3, &schema)).await;
    assert_eq!(content(&a), content(&b));
    assert_eq!(a["choices"][0]["logprobs"], b["choices"][0]["logprobs"]);
    let mut replies = std::collections::HashSet::new();
    for seed in 4..12 {
        let (_, v) = chat(&s, &schema_body(seed, &schema)).await;
        replies.insert(content(&v).to_string());
    }
    assert!(replies.len() > 4, "samples differ: {replies:?}");
    s.shutdown().await;
}

#[tokio::test]
async fn free_text_is_short_and_usage_is_estimated_from_bytes() {
    let s = server(cheap()).await;
    let question = "Question: Who was near the brandy decanter at ten?";
    let body = |max_tokens: u32| {
        json!({
            "model": "sim-1",
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}],
            "max_tokens": max_tokens,
            "seed": 1,
        })
    };
    let (status, v) = chat(&s, &body(8)).await;
    assert_eq!(status, 200, "{v}");
    let reply = content(&v);
    assert!(
        !reply.is_empty() && reply.len() <= 8 * 4,
        "cut to max_tokens: {reply:?}"
    );
    let usage = &v["usage"];
    // 4 + ceil(bytes / 4) a message, 3 to prime the reply.
    let expected =
        4 + (SYSTEM.len() as u64).div_ceil(4) + 4 + (question.len() as u64).div_ceil(4) + 3;
    assert_eq!(usage["prompt_tokens"].as_u64(), Some(expected));
    assert_eq!(
        usage["completion_tokens"].as_u64(),
        Some((reply.len() as u64).div_ceil(4))
    );
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 0);
    assert!(v["choices"][0]["logprobs"].is_null(), "not asked for");
    // With room, one sentence that echoes the question's line.
    let (_, v) = chat(&s, &body(300)).await;
    let reply = content(&v);
    assert!(
        reply.contains("Who was near the brandy decanter"),
        "{reply}"
    );
    assert!(reply.len() < 200, "{reply}");
    let st = stats(&s).await;
    assert_eq!(st.prompt_tokens, 2 * expected);
    assert_eq!(st.ok, 2);
    s.shutdown().await;
}

#[tokio::test]
async fn the_context_window_is_checked_against_the_estimate() {
    const QUESTION: &str = "Who was it?";
    let prompt =
        4 + (SYSTEM.len() as u64).div_ceil(4) + 4 + (QUESTION.len() as u64).div_ceil(4) + 3;
    let s = server(MockConfig {
        context_window: Some(prompt + 10),
        ..cheap()
    })
    .await;
    let body = |max_tokens: u64| {
        json!({
            "model": "sim-1",
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}],
            "max_tokens": max_tokens,
        })
    };
    let (status, v) = chat(&s, &body(10)).await;
    assert_eq!(status, 200, "fits exactly: {v}");
    let (status, v) = chat(&s, &body(11)).await;
    assert_eq!(status, 400, "{v}");
    assert_eq!(v["error"]["code"], "context_length_exceeded");
    let st = stats(&s).await;
    assert_eq!((st.ok, st.refused), (1, 1));
    assert_eq!(st.max_request_tokens, prompt + 11);
    s.shutdown().await;
}

/// The point of the mode: a prompt never seen before is not tokenized (the simulated model, the
/// control, does tokenize it).
#[test]
fn a_cheap_reply_tokenizes_nothing() {
    let unique = format!(
        "### Notes\n{}\n\nQuestion: who?",
        (0..200)
            .map(|i| format!(
                "line {i} of a text no test has sent before {:?}",
                std::time::SystemTime::now()
            ))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let body = json!({
        "model": "sim-1",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": unique}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": nested_schema()}},
        "logprobs": true,
    })
    .to_string();
    let state = |replies| {
        MockState::new(MockConfig {
            replies,
            context_window: Some(1 << 30),
            ..MockConfig::default()
        })
    };
    let cheap = state(Replies::Cheap);
    let (answer, bytes) =
        tokens::metered_sync(|| crate::completion::complete(&cheap, body.as_bytes()));
    let (answer, usage) = answer.expect("answered");
    validate(content(&answer), &nested_schema());
    assert_eq!(bytes, 0, "cheap replies tokenize nothing");
    assert!(usage.prompt_tokens > 2_000, "{usage:?}");
    let simulated = state(Replies::Simulated);
    let (answer, bytes) =
        tokens::metered_sync(|| crate::completion::complete(&simulated, body.as_bytes()));
    assert!(answer.is_ok());
    assert!(
        bytes > 10_000,
        "the simulated model tokenizes the prompt: {bytes}"
    );
}

#[test]
fn reply_modes_parse_by_name() {
    assert_eq!("cheap".parse::<Replies>(), Ok(Replies::Cheap));
    assert_eq!("simulated".parse::<Replies>(), Ok(Replies::Simulated));
    assert_eq!(Replies::default(), Replies::Simulated);
    let e = "fast".parse::<Replies>().expect_err("unknown");
    assert!(e.to_string().contains("simulated or cheap"), "{e}");
}

#[test]
fn the_estimate_is_bytes_over_four_rounded_up() {
    assert_eq!(estimate(""), 0);
    assert_eq!(estimate("abcd"), 1);
    assert_eq!(estimate("abcde"), 2);
    assert_eq!(estimate("阿达"), 2, "bytes, not characters");
    let msgs = [Message::system("abcd"), Message::user("abcdefgh")];
    assert_eq!(estimate_messages(&msgs), (4 + 1) + (4 + 2) + 3);
}

#[test]
fn schemas_at_their_edges_still_give_valid_values() {
    let mut w = Writer {
        rng: SplitMix64(7),
        logprobs: Vec::new(),
    };
    // Every branch null; a list of types; a const; an empty enum; bounds that meet; huge minItems.
    assert_eq!(w.fill(&json!({"anyOf": [{"type": "null"}]})), Value::Null);
    assert!(w.fill(&json!({"type": ["null", "integer"], "minimum": 3, "maximum": 3})) == json!(3));
    assert_eq!(w.fill(&json!({"const": "x"})), json!("x"));
    assert_eq!(w.fill(&json!({"enum": []})), Value::Null);
    let big = w.fill(
        &json!({"type": "array", "items": {"type": "integer"}, "minItems": 1_000_000_000u64}),
    );
    assert_eq!(big.as_array().map(Vec::len), Some(MAX_ITEMS));
    let few = w.fill(&json!({"type": "array", "items": {"enum": ["A", "B"]}, "minItems": 3}));
    assert_eq!(
        few.as_array().map(Vec::len),
        Some(2),
        "as many distinct values as there are"
    );
    let s = w.fill(&json!({"type": "string", "minLength": 30, "maxLength": 40}));
    let n = s.as_str().map_or(0, |t| t.chars().count());
    assert!((30..=40).contains(&n), "{s}");
    let r = w.fill(&json!({"type": "object", "properties": {}, "required": ["why"]}));
    assert!(r["why"].is_string(), "{r}");
    let u = w.fill(&json!({"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 2, "uniqueItems": true}));
    let u = u.as_array().expect("an array");
    assert!(u.len() <= 2 && (u.len() < 2 || u[0] != u[1]), "{u:?}");
}

#[test]
fn the_sections_line_is_found_as_the_simulated_model_finds_it() {
    let req = |content: &str| ChatRequest {
        model: "sim-1".into(),
        messages: vec![Message::user(content)],
        temperature: 1.0,
        top_p: 1.0,
        max_tokens: 100,
        schema: None,
        logprobs: false,
        sample: 0,
        cache_key: None,
    };
    let line = sections_schema_line(&json!({"type": "string"}));
    let found = |c: &str| sections_schema(&req(c), c);
    assert_eq!(
        found(&format!("Q?\n\n  {line}\r\n")),
        Some(Arc::new(json!({"type": "string"})))
    );
    // Only at a line's start, and only a JSON object.
    assert_eq!(found(&format!("Q? {line}")), None);
    assert_eq!(found(&format!("Q?\n{SECTIONS_SCHEMA_MARKER} [1]")), None);
    // The last such line wins, even after a mention mid-line.
    let other = sections_schema_line(&json!({"type": "object", "properties": {}}));
    let text = format!("{line}\n{other} and {SECTIONS_SCHEMA_MARKER}");
    assert_eq!(found(&text), None, "the last line's JSON does not parse");
    let text = format!("{line}\nsee {SECTIONS_SCHEMA_MARKER} above\n{other}");
    assert_eq!(
        found(&text),
        Some(Arc::new(json!({"type": "object", "properties": {}})))
    );
}
