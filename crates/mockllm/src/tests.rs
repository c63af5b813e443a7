//! The server end to end over HTTP, and the real `openai` provider against it.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use sleuth_base::text;
use sleuth_llm::{
    simulated, tokens, ChatRequest, Message, OpenAiProvider, OpenAiSettings, Provider,
    ProviderError,
};

const SYSTEM: &str = "You are Ben.\n### Your script\nAt 10 pm I saw Ada near the brandy decanter.";
const QUESTION: &str = "Question: Who was near the brandy decanter?";

async fn server(config: MockConfig) -> MockServer {
    let listen: SocketAddr = "127.0.0.1:0".parse().unwrap();
    MockServer::start(listen, config).await.unwrap()
}

fn client() -> reqwest::Client {
    sleuth_base::tls::install_crypto_provider();
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .unwrap()
}

fn chat_body(model: &str) -> Value {
    json!({
        "model": model,
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": QUESTION},
        ],
        "temperature": 0.0,
        "seed": 7,
    })
}

async fn post(s: &MockServer, path: &str, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}{path}", s.base_url()))
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn get_stats(s: &MockServer) -> MockStats {
    client()
        .get(format!("http://{}/stats", s.addr))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn chat_answers_from_the_prompt_with_honest_usage() {
    let s = server(MockConfig::default()).await;
    let resp = post(&s, "/chat/completions", &chat_body("sim-1")).await;
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(v["model"], "sim-1");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert!(v["choices"][0]["logprobs"].is_null());
    let content = v["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(content.contains("Ada"), "{content}");

    let usage = &v["usage"];
    let stats = get_stats(&s).await;
    assert_eq!(stats, s.stats());
    assert_eq!(usage["prompt_tokens"].as_u64(), Some(stats.prompt_tokens));
    assert_eq!(
        usage["completion_tokens"].as_u64(),
        Some(stats.completion_tokens)
    );
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(stats.prompt_tokens + stats.completion_tokens)
    );
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 0);
    assert!(stats.prompt_tokens > 0 && stats.completion_tokens > 0);
    assert_eq!((stats.requests, stats.ok), (1, 1));
    s.shutdown().await;
}

#[tokio::test]
async fn content_parts_are_joined_and_match_the_in_process_model() {
    let s = server(MockConfig::default()).await;
    let body = json!({
        "model": "sim-1",
        "messages": [
            {"role": "developer", "content": [{"type": "text", "text": SYSTEM}]},
            {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
        ],
        "max_tokens": 40,
        "seed": 3,
    });
    let v: Value = post(&s, "/chat/completions", &body)
        .await
        .json()
        .await
        .unwrap();
    let expected = simulated::respond(&ChatRequest {
        model: "sim-1".into(),
        messages: vec![Message::system(SYSTEM), Message::user(QUESTION)],
        temperature: 1.0,
        top_p: 1.0,
        max_tokens: 40,
        schema: None,
        logprobs: false,
        sample: 3,
        cache_key: None,
    });
    assert_eq!(v["choices"][0]["message"]["content"], expected.content);
    s.shutdown().await;
}

#[tokio::test]
async fn json_schema_requests_get_schema_shaped_json_and_logprobs() {
    let s = server(MockConfig::default()).await;
    let mut body = chat_body("sim-1");
    body["response_format"] = json!({"type": "json_schema", "json_schema": {
        "name": "vote",
        "strict": true,
        "schema": {"type": "object", "properties": {
            "suspect": {"type": "string", "enum": ["Ada", "Cook"]},
            "reason": {"type": "string"},
        }, "required": ["suspect", "reason"], "additionalProperties": false},
    }});
    body["logprobs"] = json!(true);
    body["top_logprobs"] = json!(5);
    let v: Value = post(&s, "/chat/completions", &body)
        .await
        .json()
        .await
        .unwrap();
    let content = v["choices"][0]["message"]["content"].as_str().unwrap();
    let answer: Value = serde_json::from_str(content).unwrap();
    let suspect = answer["suspect"].as_str().unwrap();
    assert!(["Ada", "Cook"].contains(&suspect), "{answer}");
    assert!(answer["reason"].is_string());

    let lps = v["choices"][0]["logprobs"]["content"].as_array().unwrap();
    assert_eq!(lps.len(), 1);
    assert_eq!(lps[0]["token"], suspect);
    assert!(lps[0]["logprob"].as_f64().unwrap() <= 0.0);
    assert!(lps[0]["bytes"].is_null());
    let top = lps[0]["top_logprobs"].as_array().unwrap();
    let tokens: Vec<&str> = top.iter().map(|t| t["token"].as_str().unwrap()).collect();
    assert_eq!(tokens, ["Ada", "Cook"]);
    s.shutdown().await;
}

#[tokio::test]
async fn injected_errors_are_retryable_and_carry_retry_after() {
    let s = server(MockConfig {
        error_rate: 1.0,
        retry_after_ms: 1500,
        ..MockConfig::default()
    })
    .await;
    let mut statuses = std::collections::BTreeSet::new();
    for _ in 0..40 {
        let resp = post(&s, "/chat/completions", &chat_body("sim-1")).await;
        let status = resp.status().as_u16();
        assert!(status == 429 || status == 500, "{status}");
        statuses.insert(status);
        assert_eq!(resp.headers()["retry-after-ms"], "1500");
        assert_eq!(resp.headers()["retry-after"], "2");
        let v: Value = resp.json().await.unwrap();
        let kind = v["error"]["type"].as_str().unwrap();
        let expected = if status == 429 {
            "rate_limit_error"
        } else {
            "server_error"
        };
        assert_eq!(kind, expected);
    }
    assert_eq!(statuses.into_iter().collect::<Vec<_>>(), [429, 500]);
    let stats = s.stats();
    assert_eq!(stats.requests, 40);
    assert_eq!(stats.ok, 0);
    assert_eq!(stats.rate_limited + stats.server_errors, 40);
    assert_eq!((stats.prompt_tokens, stats.completion_tokens), (0, 0));
    s.shutdown().await;
}

#[tokio::test]
async fn the_first_completions_can_be_made_malformed() {
    let s = server(MockConfig {
        malformed_first: 2,
        ..MockConfig::default()
    })
    .await;
    let mut contents = Vec::new();
    for _ in 0..3 {
        let resp = post(&s, "/chat/completions", &chat_body("sim-1")).await;
        assert_eq!(resp.status(), 200);
        let v: Value = resp.json().await.unwrap();
        contents.push(
            v["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    assert_eq!(contents[0], MALFORMED_REPLY);
    assert_eq!(contents[1], MALFORMED_REPLY);
    assert!(contents[2].contains("Ada"), "{}", contents[2]);
    let stats = get_stats(&s).await;
    assert_eq!((stats.ok, stats.malformed), (3, 2), "{stats:?}");
    s.shutdown().await;
}

#[tokio::test]
async fn a_prompt_asking_for_sections_gets_sections_over_http() {
    // What the openai provider sends for a Sections schema: no response_format, the format in the
    // prompt.
    let s = server(MockConfig::default()).await;
    let schema = json!({"type": "object", "properties": {"who": {"type": "string", "enum": ["Ada", "Cook"]}}, "required": ["who"]});
    let user = format!(
        "{QUESTION}\n\n### Reply format\nTwo sections.\n{}",
        simulated::sections_schema_line(&schema)
    );
    let body = json!({
        "model": "sim-1",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
        "seed": 3,
    });
    let v: Value = post(&s, "/chat/completions", &body)
        .await
        .json()
        .await
        .unwrap();
    let content = v["choices"][0]["message"]["content"].as_str().unwrap();
    let parsed = simulated::parse_sections(content, &schema).expect("two sections");
    assert_eq!(parsed["who"], "Ada", "{content}");
    s.shutdown().await;
}

#[tokio::test]
async fn requests_over_the_concurrency_limit_get_429_at_once() {
    let s = server(MockConfig {
        max_concurrency: Some(1),
        latency: Duration::from_millis(200),
        ..MockConfig::default()
    })
    .await;
    let body = chat_body("sim-1");
    let (a, b) = tokio::join!(
        post(&s, "/chat/completions", &body),
        post(&s, "/chat/completions", &body)
    );
    let mut statuses = [a.status().as_u16(), b.status().as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 429]);
    let limited = if a.status() == 429 { &a } else { &b };
    assert_eq!(limited.headers()["retry-after-ms"], "50");
    assert_eq!(limited.headers()["retry-after"], "1");
    let stats = s.stats();
    assert_eq!(
        (stats.requests, stats.ok, stats.rate_limited),
        (2, 1, 1),
        "{stats:?}"
    );
    // The permit is released after the answer: a later request succeeds.
    assert_eq!(post(&s, "/chat/completions", &body).await.status(), 200);
    s.shutdown().await;
}

#[tokio::test]
async fn with_queue_requests_over_the_limit_wait_and_an_abandoned_one_still_holds_its_slot() {
    let s = server(MockConfig {
        max_concurrency: Some(1),
        queue: true,
        latency: Duration::from_millis(300),
        ..MockConfig::default()
    })
    .await;
    let body = chat_body("sim-1");
    let started = std::time::Instant::now();
    let (a, b) = tokio::join!(
        post(&s, "/chat/completions", &body),
        post(&s, "/chat/completions", &body)
    );
    assert_eq!((a.status().as_u16(), b.status().as_u16()), (200, 200));
    assert!(
        started.elapsed() >= Duration::from_millis(600),
        "one at a time: {:?}",
        started.elapsed()
    );
    // A client that gives up after 50 ms: its request runs on, and the next one waits behind it.
    let gave_up = tokio::time::timeout(
        Duration::from_millis(50),
        post(&s, "/chat/completions", &body),
    )
    .await;
    assert!(gave_up.is_err());
    let next = std::time::Instant::now();
    assert_eq!(post(&s, "/chat/completions", &body).await.status(), 200);
    assert!(
        next.elapsed() >= Duration::from_millis(500),
        "the abandoned request kept its slot: {:?}",
        next.elapsed()
    );
    assert_eq!(s.stats().rate_limited, 0);
    s.shutdown().await;
}

#[tokio::test]
async fn bad_requests_get_openai_error_bodies() {
    let s = server(MockConfig::default()).await;
    let resp = post(&s, "/chat/completions", &chat_body("gpt-nonexistent")).await;
    assert_eq!(resp.status(), 404);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert_eq!(v["error"]["param"], "model");
    assert_eq!(v["error"]["code"], "model_not_found");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("gpt-nonexistent"));

    let no_messages = json!({"model": "sim-1", "messages": []});
    let resp = post(&s, "/chat/completions", &no_messages).await;
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert_eq!(v["error"]["param"], "messages");

    let resp = client()
        .post(format!("{}/chat/completions", s.base_url()))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error");

    let resp = client()
        .get(format!("{}/nowhere", s.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["code"], "unknown_url");

    let stats = s.stats();
    assert_eq!((stats.requests, stats.ok), (3, 0));
    s.shutdown().await;
}

#[tokio::test]
async fn models_are_listed() {
    let s = server(MockConfig::default()).await;
    let v: Value = client()
        .get(format!("{}/models", s.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["object"], "list");
    assert_eq!(v["data"][0]["id"], "sim-1");
    assert_eq!(v["data"][0]["object"], "model");
    assert_eq!(v["data"][0]["owned_by"], "sleuth");
    assert_eq!(v["data"].as_array().unwrap().len(), 1);
    s.shutdown().await;
}

#[tokio::test]
async fn embeddings_are_hashing_vectors_with_honest_usage() {
    let s = server(MockConfig::default()).await;
    let texts = [
        "Ada was near the brandy decanter.",
        "The cook left at 8 pm.",
    ];
    let body = json!({"model": "text-embedding-3-small", "input": texts});
    let v: Value = post(&s, "/embeddings", &body).await.json().await.unwrap();
    assert_eq!(v["object"], "list");
    assert_eq!(v["model"], "text-embedding-3-small");
    let data = v["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    for (i, d) in data.iter().enumerate() {
        assert_eq!(d["object"], "embedding");
        assert_eq!(d["index"], i);
        let vec: Vec<f32> = serde_json::from_value(d["embedding"].clone()).unwrap();
        assert_eq!(vec.len(), text::HASHED_DIMS);
        assert_eq!(vec, text::hashed_vector(texts[i], text::HASHED_DIMS));
    }
    let tokens: u64 = texts.iter().map(|t| tokens::count(t)).sum();
    assert_eq!(v["usage"]["prompt_tokens"].as_u64(), Some(tokens));
    assert_eq!(v["usage"]["total_tokens"].as_u64(), Some(tokens));

    // A single string, base64-encoded as the Python client asks by default.
    let body = json!({"model": "x", "input": texts[0], "encoding_format": "base64"});
    let v: Value = post(&s, "/embeddings", &body).await.json().await.unwrap();
    let expected = routes::base64_f32_le(&text::hashed_vector(texts[0], text::HASHED_DIMS));
    assert_eq!(v["data"][0]["embedding"], expected);

    let stats = s.stats();
    assert_eq!((stats.requests, stats.ok), (2, 2));
    assert_eq!(stats.prompt_tokens, tokens + tokens::count(texts[0]));
    assert_eq!(stats.completion_tokens, 0);
    s.shutdown().await;
}

#[tokio::test]
async fn embeddings_have_the_configured_or_requested_dimensions() {
    let s = server(MockConfig {
        embedding_dims: 1536,
        ..MockConfig::default()
    })
    .await;
    let text = "Ada was near the brandy decanter.";
    let dims = |v: &Value| v["data"][0]["embedding"].as_array().map(Vec::len);
    let body = json!({"model": "m", "input": text});
    let v: Value = post(&s, "/embeddings", &body).await.json().await.unwrap();
    assert_eq!(dims(&v), Some(1536));
    let vec: Vec<f32> = serde_json::from_value(v["data"][0]["embedding"].clone()).unwrap();
    assert_eq!(vec, text::hashed_vector(text, 1536));
    // OpenAI's `dimensions` wins over the server's default.
    let body = json!({"model": "m", "input": text, "dimensions": 64});
    let v: Value = post(&s, "/embeddings", &body).await.json().await.unwrap();
    assert_eq!(dims(&v), Some(64));
    let body = json!({"model": "m", "input": text, "dimensions": 0});
    let r = post(&s, "/embeddings", &body).await;
    assert_eq!(r.status(), 400);
    s.shutdown().await;
    let bad = MockServer::start(
        "127.0.0.1:0".parse().unwrap(),
        MockConfig {
            embedding_dims: 0,
            ..MockConfig::default()
        },
    )
    .await;
    assert!(matches!(bad, Err(MockError::Config(_))));
}

#[tokio::test]
async fn rejects_an_error_rate_outside_zero_to_one() {
    let listen: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let config = MockConfig {
        error_rate: 1.5,
        ..MockConfig::default()
    };
    let err = MockServer::start(listen, config).await.unwrap_err();
    assert!(matches!(err, MockError::Config(_)), "{err}");
}

fn sleuth_request() -> ChatRequest {
    ChatRequest {
        model: simulated::MODEL.into(),
        messages: vec![Message::system(SYSTEM), Message::user(QUESTION)],
        temperature: 0.0,
        top_p: 1.0,
        max_tokens: 64,
        schema: None,
        logprobs: false,
        sample: 1,
        cache_key: None,
    }
}

fn provider(s: &MockServer) -> OpenAiProvider {
    OpenAiProvider::new(&OpenAiSettings::new(
        s.base_url(),
        "test",
        Duration::from_secs(5),
    ))
    .unwrap()
}

#[tokio::test]
async fn the_real_openai_provider_reads_answers_usage_and_retry_after() {
    let s = server(MockConfig::default()).await;
    let p = provider(&s);
    let req = sleuth_request();
    let resp = Provider::chat(&p, &req).await.unwrap();
    assert!(resp.content.contains("Ada"), "{}", resp.content);
    // Over HTTP the answer is exactly the in-process model's.
    assert_eq!(resp.content, simulated::respond(&req).content);
    let usage = resp.usage.expect("mock-llm reports usage");
    let stats = s.stats();
    assert_eq!(usage.prompt_tokens, stats.prompt_tokens);
    assert_eq!(usage.completion_tokens, stats.completion_tokens);
    assert_eq!(usage.cached_tokens, 0);

    let inputs = vec!["Ada was near the brandy decanter.".to_string()];
    let emb = Provider::embed(&p, "text-embedding-3-small", &inputs)
        .await
        .unwrap();
    assert_eq!(emb.vectors.len(), 1);
    assert_eq!(emb.vectors[0].len(), sleuth_game::memory::DEFAULT_DIMS);
    assert_eq!(emb.prompt_tokens, Some(tokens::count(&inputs[0])));
    s.shutdown().await;

    let s = server(MockConfig {
        error_rate: 1.0,
        ..MockConfig::default()
    })
    .await;
    let p = provider(&s);
    let wait = Some(Duration::from_millis(50));
    for _ in 0..8 {
        match Provider::chat(&p, &req).await {
            Err(ProviderError::RateLimited { retry_after }) => assert_eq!(retry_after, wait),
            Err(ProviderError::Server {
                status,
                retry_after,
            }) => {
                assert_eq!(status, 500);
                assert_eq!(retry_after, wait);
            }
            other => panic!("expected an injected error, got {other:?}"),
        }
    }
    // async-openai made exactly one attempt per call: the gateway owns retries.
    assert_eq!(s.stats().requests, 8);
    s.shutdown().await;
}

/// A multipart upload of `bytes` bytes as a batch file (the form written out by hand: the test's
/// reqwest has no multipart feature).
async fn upload(s: &MockServer, bytes: usize) -> reqwest::Response {
    const B: &str = "sleuth-test-boundary";
    let mut body = format!(
        "--{B}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n\
         --{B}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n\
         Content-Type: application/jsonl\r\n\r\n"
    )
    .into_bytes();
    body.resize(body.len() + bytes, b'x');
    body.extend_from_slice(format!("\r\n--{B}--\r\n").as_bytes());
    client()
        .post(format!("{}/files", s.base_url()))
        .header("content-type", format!("multipart/form-data; boundary={B}"))
        .body(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn files_are_capped_and_can_be_deleted_and_an_oversized_upload_gets_413() {
    let s = server(MockConfig {
        max_stored_bytes: 3_000_000,
        ..MockConfig::default()
    })
    .await;
    let first = upload(&s, 2_000_000).await;
    assert_eq!(first.status(), 200);
    let id = first.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Past what the mock holds: 413, naming the limit and the way out.
    let full = upload(&s, 2_000_000).await;
    assert_eq!(full.status(), 413);
    let msg = full.json::<Value>().await.unwrap()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(msg.contains("3000000") && msg.contains("DELETE"), "{msg}");
    // Deleted, the room is back; deleted again, it is not found.
    let url = format!("{}/files/{id}", s.base_url());
    let deleted = client().delete(&url).send().await.unwrap();
    assert_eq!(deleted.status(), 200);
    assert_eq!(deleted.json::<Value>().await.unwrap()["deleted"], true);
    assert_eq!(client().delete(&url).send().await.unwrap().status(), 404);
    assert_eq!(upload(&s, 2_000_000).await.status(), 200);
    // One request past the body limit: 413 naming it, not a 400 about multipart parsing.
    let huge = upload(&s, BODY_LIMIT + 1).await;
    assert_eq!(huge.status(), 413);
    let msg = huge.text().await.unwrap();
    assert!(msg.contains(&BODY_LIMIT.to_string()), "{msg}");
    s.shutdown().await;
}

#[tokio::test]
async fn an_embedding_request_is_capped_in_proportion_to_what_a_real_client_sends() {
    let s = server(MockConfig::default()).await;
    // 300 inputs of 16,384 dimensions: 1.5 KB asking for 4.9 M numbers.
    let inputs: Vec<String> = (0..300).map(|i| format!("t{i}")).collect();
    let r = post(
        &s,
        "/embeddings",
        &json!({"model": "m", "input": inputs, "dimensions": 16_384}),
    )
    .await;
    assert_eq!(r.status(), 400);
    let msg = r.json::<Value>().await.unwrap()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(msg.contains(&MAX_EMBEDDING_VALUES.to_string()), "{msg}");
    let many: Vec<String> = (0..MAX_EMBEDDING_INPUTS + 1)
        .map(|i| format!("t{i}"))
        .collect();
    let r = post(
        &s,
        "/embeddings",
        &json!({"model": "m", "input": many, "dimensions": 8}),
    )
    .await;
    assert_eq!(r.status(), 400);
    // What sleuth sends passes.
    let r = post(
        &s,
        "/embeddings",
        &json!({"model": "m", "input": inputs, "dimensions": 1_536}),
    )
    .await;
    assert_eq!(r.status(), 200);
    s.shutdown().await;
}

#[tokio::test]
async fn a_half_sent_request_does_not_hold_the_mock_forever() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = server(MockConfig::default()).await;
    let mut half = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    half.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // Still served beside it.
    assert_eq!(
        post(&s, "/chat/completions", &chat_body(simulated::MODEL))
            .await
            .status(),
        200
    );
    // The server closes it after its head-read timeout; a stop waits for it at most the drain
    // time (10 s), then closes it.
    let stopped = tokio::time::timeout(Duration::from_secs(20), s.shutdown()).await;
    assert!(
        stopped.is_ok(),
        "the mock's stop waited on a half-sent request past its drain"
    );
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(5), half.read(&mut buf))
        .await
        .expect("closed, not hanging")
        .unwrap_or(0);
    assert!(n == 0 || buf.starts_with(b"HTTP/1.1 408"));
}
