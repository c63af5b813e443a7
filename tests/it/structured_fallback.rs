//! Servers that are OpenAI-compatible in name only, over real HTTP: `sleuth mock-llm` in the dialects
//! of llama.cpp's Python server (`json_schema` refused with HTTP 500, only `max_tokens` read) and of
//! OpenAI's reasoning models (`max_tokens` refused with HTTP 400), and with a context window.
//!
//! What a user would notice: a game against such a server completes, taking each fallback once for
//! the whole run (the server's request count shows no retry storm); errors that will never succeed
//! are not retried; the completion limit reaches the server in the field it reads, and a reply that
//! ignores it anyway is cut and counted (`docs/sweeps.md`, *Models and their endpoints*).

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use sleuth::agent::{AgentConfig, Modules};
use sleuth::game::{self, GameConfig, ProtocolSettings, ThinkThriceSettings};
use sleuth::llm::{
    tokens, CallTags, ChatRequest, Gateway, GatewayConfig, LlmError, Message, OpenAiProvider,
    OpenAiSettings, Phase, Pricing, ProviderError, ResponseSchema, StructuredMode, TokenLimit,
};
use sleuth::mockllm::{Dialect, MockConfig, MockServer, UNBOUNDED_REPLY_TOKENS};

async fn mock(dialect: Dialect, context_window: Option<u64>) -> MockServer {
    MockServer::start(
        "127.0.0.1:0".parse().expect("an address"),
        MockConfig {
            dialect,
            context_window,
            ..MockConfig::default()
        },
    )
    .await
    .expect("the mock starts")
}

/// A gateway to `server` with the given endpoint settings; retries fast, so that a test that would
/// retry fails quickly by its request count rather than by its clock.
async fn gateway(server: &MockServer, structured: StructuredMode, limit: TokenLimit) -> Gateway {
    let provider = OpenAiProvider::new(&OpenAiSettings {
        structured,
        token_limit: limit,
        ..OpenAiSettings::new(server.base_url(), "test-key", Duration::from_secs(20))
    })
    .expect("the client builds");
    Gateway::start(
        Arc::new(provider),
        Pricing::builtin(),
        GatewayConfig {
            backoff_base: Duration::from_millis(2),
            backoff_max: Duration::from_millis(10),
            ..GatewayConfig::default()
        },
    )
    .await
    .expect("the gateway starts")
}

fn tags() -> CallTags {
    CallTags {
        game: "g".into(),
        agent: "Ada".into(),
        framework: "thinkthrice".into(),
        phase: Phase::Gameplay,
        purpose: "vote".into(),
    }
}

const CONTEXT: &str = "You are Ben.\n### Your script\nAt 10 pm I saw Ada near the brandy decanter. Cole was in the library all evening.";

fn free_text(max_tokens: u32) -> ChatRequest {
    ChatRequest {
        model: "sim-1".into(),
        messages: vec![
            Message::system(CONTEXT),
            Message::user("Question: Who was near the brandy decanter?"),
        ],
        temperature: 0.0,
        top_p: 1.0,
        max_tokens,
        schema: None,
        logprobs: false,
        sample: 7,
        cache_key: None,
    }
}

fn vote() -> ChatRequest {
    let schema = json!({
        "type": "object",
        "properties": {
            "vote": {"type": "string", "enum": ["Ada", "Cole"]},
            "reason": {"type": "string"},
        },
        "required": ["vote", "reason"],
        "additionalProperties": false,
    });
    ChatRequest {
        schema: Some(ResponseSchema::json("vote", schema)),
        messages: vec![
            Message::system(CONTEXT),
            Message::user("Who killed the host? Reply with JSON: \"vote\" and \"reason\"."),
        ],
        ..free_text(120)
    }
}

/// The answer a server that takes `json_schema` gives: the reference every fallback must match.
async fn reference_vote() -> Value {
    let server = mock(Dialect::OpenAi, None).await;
    let gw = gateway(&server, StructuredMode::Auto, TokenLimit::Both).await;
    let out = gw.chat(vote(), tags()).await.expect("the vote answers");
    server.shutdown().await;
    out.json.expect("a structured answer")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_cpp_refuses_json_schema_once_and_the_fallback_is_remembered() {
    let expected = reference_vote().await;
    let server = mock(Dialect::LlamaCpp, None).await;
    let gw = gateway(&server, StructuredMode::Auto, TokenLimit::Both).await;

    let first = gw.chat(vote(), tags()).await.expect("the fallback answers");
    assert_eq!(
        first.json.as_ref(),
        Some(&expected),
        "json_object with the schema: the same answer"
    );
    assert_eq!(
        first.usage.retries, 1,
        "the refused request is counted once"
    );
    assert_eq!(first.usage.calls, 1);
    let s = server.stats();
    assert_eq!((s.requests, s.refused, s.ok), (2, 1, 1), "{s:?}");

    for _ in 0..3 {
        let again = gw.chat(vote(), tags()).await.expect("answers");
        assert_eq!(
            again.usage.retries, 0,
            "remembered: json_schema is not sent again"
        );
        assert_eq!(again.json.as_ref(), Some(&expected));
    }
    let s = server.stats();
    assert_eq!((s.requests, s.refused), (5, 1), "{s:?}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_stated_in_the_prompt_gives_the_same_answer() {
    let expected = reference_vote().await;
    let server = mock(Dialect::LlamaCpp, None).await;
    let gw = gateway(&server, StructuredMode::Prompt, TokenLimit::Both).await;
    let out = gw.chat(vote(), tags()).await.expect("answers");
    assert_eq!(out.json.as_ref(), Some(&expected));
    assert_eq!(out.usage.retries, 0);
    assert_eq!(server.stats().refused, 0, "no response_format was sent");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_mode_is_kept_and_its_refusal_is_final() {
    let server = mock(Dialect::LlamaCpp, None).await;
    let gw = gateway(&server, StructuredMode::JsonSchema, TokenLimit::Both).await;
    match gw.chat(vote(), tags()).await {
        Err(LlmError::Refused {
            error:
                ProviderError::Refused {
                    status: 500,
                    message,
                },
            ..
        }) => assert!(message.contains("response_format"), "{message}"),
        other => panic!("expected a final refusal, got {other:?}"),
    }
    assert_eq!(
        server.stats().requests,
        1,
        "a validation 500 is not retried"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_400_is_not_retried() {
    // A reasoning model refuses max_tokens with 400; told to send only max_tokens, sleuth has no
    // fallback left, and the refusal is final.
    let server = mock(Dialect::OpenAiReasoning, None).await;
    let gw = gateway(&server, StructuredMode::Auto, TokenLimit::MaxTokens).await;
    match gw.chat(free_text(30), tags()).await {
        Err(LlmError::Refused {
            error: ProviderError::Refused { status: 400, .. },
            ..
        }) => {}
        other => panic!("expected a final refusal, got {other:?}"),
    }
    assert_eq!(server.stats().requests, 1, "not retried");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reasoning_model_gets_max_completion_tokens_after_one_refusal() {
    let server = mock(Dialect::OpenAiReasoning, None).await;
    let gw = gateway(&server, StructuredMode::Auto, TokenLimit::Both).await;
    let first = gw.chat(free_text(30), tags()).await.expect("answers");
    assert_eq!(first.usage.retries, 1);
    let second = gw.chat(free_text(30), tags()).await.expect("answers");
    assert_eq!(second.usage.retries, 0, "remembered");
    let s = server.stats();
    assert_eq!((s.requests, s.refused), (3, 1), "{s:?}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_length_error_is_not_retried() {
    // llama-cpp-python reports no window, so the request goes out; the server answers 400 with
    // OpenAI's context_length_exceeded, which is final (a 500 with a context-length message is final
    // too: the classifier's unit tests).
    let server = mock(Dialect::LlamaCpp, Some(40)).await;
    let gw = gateway(&server, StructuredMode::Auto, TokenLimit::Both).await;
    match gw.chat(free_text(30), tags()).await {
        Err(LlmError::Refused {
            error: ProviderError::ContextLength { .. },
            ..
        }) => {}
        other => panic!("expected a context-length error, got {other:?}"),
    }
    assert_eq!(server.stats().requests, 1, "not retried");
    server.shutdown().await;
    // A server that reports its window (as vLLM does in /v1/models) is never sent a prompt that
    // cannot fit: the gateway refuses it first, with the sizes.
    let server = mock(Dialect::OpenAi, Some(40)).await;
    let gw = gateway(&server, StructuredMode::Auto, TokenLimit::Both).await;
    match gw.chat(free_text(30), tags()).await {
        Err(LlmError::ContextWindow {
            window: 40,
            max_tokens: 30,
            ..
        }) => {}
        other => panic!("expected the gateway's own refusal, got {other:?}"),
    }
    assert_eq!(server.stats().requests, 0, "nothing was sent");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_tokens_is_sent_and_honoured() {
    let server = mock(Dialect::LlamaCpp, None).await;
    let gw = gateway(&server, StructuredMode::Auto, TokenLimit::Both).await;
    let out = gw.chat(free_text(30), tags()).await.expect("answers");
    assert!(out.usage.completion_tokens <= 30, "{:?}", out.usage);
    assert!(
        server.stats().completion_tokens <= 30,
        "the server generated within the limit"
    );
    assert_eq!(out.usage.truncated, 0);
    assert!(
        out.response.content.contains("Ada"),
        "{}",
        out.response.content
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_past_its_limit_is_cut_and_counted() {
    // Sending only the field this server ignores: it runs to the end of the context; sleuth keeps
    // what was asked for and counts the cut. The tokens billed are the server's.
    let server = mock(Dialect::LlamaCpp, None).await;
    let gw = gateway(
        &server,
        StructuredMode::Auto,
        TokenLimit::MaxCompletionTokens,
    )
    .await;
    let out = gw.chat(free_text(30), tags()).await.expect("answers");
    assert_eq!(out.usage.truncated, 1);
    assert!(
        out.usage.completion_tokens >= UNBOUNDED_REPLY_TOKENS,
        "{:?}",
        out.usage
    );
    let kept = tokens::count(&out.response.content);
    assert!(kept <= 32, "{kept} tokens kept: {}", out.response.content);
    assert!(
        out.response.content.contains("Ada"),
        "{}",
        out.response.content
    );
    server.shutdown().await;
}

/// Transcript events without their wall-clock time and usage (the fallback's refused request shows
/// as one retry in one event's usage; everything the players said and did must be the same).
fn events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("the transcript exists")
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).expect("a JSON event");
            let o = v.as_object_mut().expect("an object");
            o.remove("ts");
            o.remove("usage");
            v
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_against_llama_cpp_completes_with_one_fallback_and_plays_the_same() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let script = common::example_script("night-ferry.toml");
    let mut transcripts = Vec::new();
    let mut results = Vec::new();
    for (i, dialect) in [Dialect::OpenAi, Dialect::LlamaCpp].into_iter().enumerate() {
        let server = mock(dialect, None).await;
        let gw = gateway(&server, StructuredMode::Auto, TokenLimit::Both).await;
        let path = dir.path().join(format!("t{i}.jsonl"));
        let config = GameConfig {
            game_id: format!("fallback-{i}"),
            seed: 3,
            protocol: ProtocolSettings::thinkthrice(ThinkThriceSettings {
                rounds_before_clues: 1,
                rounds_after_clues: 1,
                initial_questioning: false,
            }),
            agent: AgentConfig {
                modules: "sv=1".parse::<Modules>().expect("modules"),
                ..AgentConfig::default()
            },
            transcript_path: Some(path.clone()),
            // One call at a time: exactly one request meets the refusal.
            call_concurrency: 1,
            ..GameConfig::default()
        };
        let r = game::play(script.clone(), config, gw)
            .await
            .unwrap_or_else(|e| panic!("{dialect:?}: the game completes: {e}"));
        let s = server.stats();
        let refused = u64::from(dialect == Dialect::LlamaCpp);
        assert_eq!(s.refused, refused, "{dialect:?}: {s:?}");
        assert_eq!(
            s.requests,
            s.ok + s.refused,
            "{dialect:?}: no other failure, no retry: {s:?}"
        );
        assert_eq!(r.usage.calls, s.ok, "{dialect:?}");
        assert_eq!(
            r.usage.retries, refused,
            "{dialect:?}: the refused request is one retry"
        );
        assert_eq!(r.usage.parse_failures, 0, "{dialect:?}");
        server.shutdown().await;
        transcripts.push(events(&path));
        results.push((r.winner, r.votes));
    }
    assert_eq!(results[0], results[1], "same winner and votes");
    assert_eq!(
        transcripts[0], transcripts[1],
        "the same game, event by event"
    );
}

/// The command the issue names, with only the provider flags, against a llama.cpp-like server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sleuth_play_with_only_the_provider_flags_completes_against_llama_cpp() {
    let server = mock(Dialect::LlamaCpp, None).await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().join("game");
    let script = common::crate_file("examples/orchard-press.toml");
    let base_url = server.base_url();
    let mut cmd = common::sleuth(dir.path());
    cmd.env("OPENAI_API_KEY", "unused").args([
        "play",
        script.to_str().expect("a UTF-8 path"),
        "--protocol",
        "wellplay",
        "--framework",
        "ocot",
        "--rounds",
        "1",
        "--provider",
        "openai",
        "--base-url",
        &base_url,
        "--model",
        "sim-1",
        "--out",
        out.to_str().expect("a UTF-8 path"),
    ]);
    let output = tokio::task::spawn_blocking(move || common::run(&mut cmd, common::CHILD_TIMEOUT))
        .await
        .expect("the child ran");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "sleuth play failed: {stderr}");
    let result: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("result.json")).expect("result.json"),
    )
    .expect("JSON");
    let s = server.stats();
    assert!(s.refused >= 1, "json_schema was tried first: {s:?}");
    assert!(
        s.refused <= sleuth::agent::DEFAULT_CALL_CONCURRENCY as u64,
        "only the calls in flight before the first refusal meet it: {s:?}"
    );
    assert_eq!(
        s.requests,
        s.ok + s.refused,
        "no retries beyond the fallback: {s:?}"
    );
    assert_eq!(result["usage"]["retries"].as_u64(), Some(s.refused));
    assert_eq!(result["usage"]["calls"].as_u64(), Some(s.ok));
    assert!(
        stderr.contains("json_object"),
        "the fallback is logged at warn: {stderr}"
    );
    server.shutdown().await;
}

#[test]
fn a_bad_structured_mode_is_refused_before_any_call() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let output = common::run(
        common::sleuth(dir.path()).args([
            "play",
            common::night_ferry().to_str().expect("a UTF-8 path"),
            "--structured",
            "json",
        ]),
        common::CHILD_TIMEOUT,
    );
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("json_schema, json_object or prompt"),
        "{stderr}"
    );
}

/// A sweep whose model is a llama.cpp-like server, two games one after the other: the first meets the
/// refusal, the second sends what was learnt (remembered by the route, node-wide), and the ledger's
/// `retry` entries are exactly the refused requests — the ledger still equals the server's count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_learns_once_for_all_its_games_and_its_ledger_equals_the_servers_count() {
    use sleuth::store::{GameState, SqliteStore, Store};
    use sleuth::sweep::{self, RunOptions};

    let server = mock(Dialect::LlamaCpp, None).await;
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let file = tmp.path().join("sweep.toml");
    let body = format!(
        "name = \"t\"\nout = \"{}\"\nscripts = [\"{}\"]\nrepeats = 2\nconcurrency = 1\n[game]\nprotocol = \"wellplay\"\nrounds = 1\nframework = \"ocot\"\nmodel = \"llama\"\n[evaluation]\nrepeats = 1\n[models.llama]\nprovider = \"openai\"\nbase_url = \"{}\"\nmodel = \"sim-1\"\napi_key_env = \"PATH\"\nstructured = \"auto\"\ntoken_limit = \"both\"\n[gateway]\ngame_concurrency = 1\nretry_base_ms = 1\n",
        tmp.path().join("run").display(),
        common::crate_file("examples/night-ferry.toml").display(),
        server.base_url()
    );
    std::fs::write(&file, body).expect("write the sweep file");
    let r = sweep::run(
        &file,
        RunOptions {
            progress: false,
            ..RunOptions::default()
        },
    )
    .await
    .expect("the sweep runs");
    assert_eq!(r.counts.get(GameState::Done), 2, "{r:?}");
    let s = server.stats();
    assert_eq!(s.refused, 1, "one refusal for the whole sweep: {s:?}");
    assert_eq!(s.requests, s.ok + s.refused, "{s:?}");
    let store = SqliteStore::open(&tmp.path().join("run").join("sleuth.db")).expect("the store");
    let totals = store.totals("t").await.expect("totals");
    let calls = |source: &str| -> u64 {
        totals
            .iter()
            .filter(|t| t.source == source)
            .map(|t| t.calls)
            .sum()
    };
    assert_eq!(
        calls("retry"),
        s.refused,
        "the refused request is one retry entry"
    );
    assert_eq!(calls("live"), s.ok, "every answer is one live entry");
    server.shutdown().await;
}
