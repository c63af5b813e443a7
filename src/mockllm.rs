//! `sleuth mock-llm`: an OpenAI-compatible HTTP server in front of the simulated model.
//!
//! Why it exists: the in-process [`crate::llm::SimulatedProvider`] skips everything between sleuth and a
//! real endpoint — async-openai's request building and response decoding, connection pooling, HTTP error
//! statuses and their Retry-After headers, the gateway's retry loop. Integration and load tests point the
//! real `openai` provider at this server instead, so that whole path runs on one machine, with no key, at
//! no cost, and with answers identical to the in-process model (both call
//! [`crate::llm::simulated::respond`]).
//!
//! Endpoints (under `/v1`, as OpenAI serves them):
//! - `POST /v1/chat/completions` — the simulated model's answer as a `chat.completion`, with honest usage
//!   and, when asked for, log-probabilities. `stream`, `n`, tools and audio are not supported.
//! - `POST /v1/embeddings` — [`crate::memory::HashingEmbedder`] vectors, as floats or base64.
//! - `GET /v1/models` — the configured model names.
//! - `GET /stats` — sleuth's own addition, not OpenAI's: the [`MockStats`] totals as JSON, so a test can
//!   check that the usage a client accounted is exactly what the server handed out.
//!
//! Faults are injected on the two POST endpoints, in this order, to exercise retry and back-off code:
//! 1. a concurrency limit (`max_concurrency`): a request over the limit gets 429 at once, the way a
//!    provider's concurrent-request limit answers;
//! 2. a fixed `latency` before every answer, errors included (a real error costs a round trip too);
//! 3. random errors at `error_rate`, half 429 and half 500, drawn from a seeded RNG so a load test's
//!    fault sequence is reproducible;
//! 4. malformed output: the first `malformed_first` chat completions that get through are answered
//!    with a polite refusal in place of the model's reply — valid HTTP, honest usage, but neither JSON
//!    nor the two-section format — to exercise the gateway's re-asking of unparseable structured output.
//!
//! Every error uses OpenAI's error body (`{"error":{"message","type","param","code"}}`), and 429/500 carry
//! both `retry-after-ms` (what OpenAI and Azure send) and `retry-after` in whole seconds.
//!
//! Request parsing is deliberately lenient (any JSON the OpenAI API accepts, from any client): the body is
//! read as a [`serde_json::Value`] rather than a strict type, unknown fields are ignored, and only what the
//! simulated model needs is validated.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::{Json, Router};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tokio::net::TcpListener;
use tokio::sync::{oneshot, Semaphore, SemaphorePermit};
use tokio::task::JoinHandle;

use crate::llm::{
    simulated, tokens, ChatRequest, ChatRole, Message, ResponseSchema, TokenLogprob, TokenUsage,
};
use crate::memory::HashingEmbedder;

/// Largest request body accepted. axum's default (2 MB) is enough for a prompt, but a load test may send
/// large embedding batches; the server is local, so there is no abuse to guard against.
const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// Defaults that a request may leave out, as OpenAI documents them.
const DEFAULT_TEMPERATURE: f32 = 1.0;
const DEFAULT_TOP_P: f32 = 1.0;
const DEFAULT_MAX_TOKENS: u32 = 512;

/// How the server behaves: which models it answers to and which faults it injects.
#[derive(Debug, Clone, PartialEq)]
pub struct MockConfig {
    /// Wait before every answer to a POST request (success or injected error).
    pub latency: Duration,
    /// Probability in `0..=1` that a POST request fails with 429 or 500 (half each).
    pub error_rate: f64,
    /// Requests served at once; more get 429 immediately. `None`: no limit.
    pub max_concurrency: Option<usize>,
    /// Seed of the fault RNG: the same seed gives the same sequence of injected errors.
    pub fault_seed: u64,
    /// Wait the 429/500 answers ask for, in milliseconds.
    pub retry_after_ms: u64,
    /// Model names chat completions accept; any other gets 404 `model_not_found`.
    pub models: Vec<String>,
    /// The first this many successful chat completions carry [`MALFORMED_REPLY`] instead of the model's
    /// answer.
    pub malformed_first: u64,
}

/// What a malformed completion says: plausible model prose that no structured-output parser accepts.
pub const MALFORMED_REPLY: &str =
    "I am sorry, but I would rather not answer in the requested format right now.";

impl Default for MockConfig {
    fn default() -> Self {
        MockConfig {
            latency: Duration::ZERO,
            error_rate: 0.0,
            max_concurrency: None,
            fault_seed: 0,
            retry_after_ms: 50,
            models: vec![simulated::MODEL.to_string()],
            malformed_first: 0,
        }
    }
}

impl MockConfig {
    fn validate(&self) -> Result<(), MockError> {
        if !(0.0..=1.0).contains(&self.error_rate) {
            return Err(MockError::Config(format!(
                "error rate must be between 0 and 1, got {}",
                self.error_rate
            )));
        }
        if let Some(n) = self.max_concurrency {
            if n > Semaphore::MAX_PERMITS {
                return Err(MockError::Config(format!(
                    "max concurrency {n} exceeds the limit of {}",
                    Semaphore::MAX_PERMITS
                )));
            }
        }
        Ok(())
    }
}

/// Totals since the server started. `requests` counts every request to the two POST endpoints; `ok`
/// counts the successful ones; token totals come from successful answers only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MockStats {
    pub requests: u64,
    pub ok: u64,
    pub rate_limited: u64,
    pub server_errors: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Successful chat completions answered with [`MALFORMED_REPLY`].
    #[serde(default)]
    pub malformed: u64,
}

/// Why the server could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    #[error("invalid mock-llm configuration: {0}")]
    Config(String),
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("mock-llm server failed: {0}")]
    Serve(#[source] std::io::Error),
    #[error("mock-llm server task ended abnormally: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error("cannot wait for ctrl-c: {0}")]
    Signal(#[source] std::io::Error),
}

/// A running server. Dropping it without [`MockServer::shutdown`] also stops it (the shutdown channel
/// closes), but only `shutdown` waits for in-flight requests to finish.
pub struct MockServer {
    /// The bound address (the real port when started on port 0).
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .field("config", &self.shared.config)
            .finish()
    }
}

impl MockServer {
    /// Binds and starts serving in a background tokio task.
    pub async fn start(listen: SocketAddr, config: MockConfig) -> Result<MockServer, MockError> {
        config.validate()?;
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|source| MockError::Bind {
                addr: listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| MockError::Bind {
            addr: listen,
            source,
        })?;
        let shared = Arc::new(Shared::new(config));
        let app = router(Arc::clone(&shared));
        let (stop, stopped) = oneshot::channel::<()>();
        // TCP_NODELAY on every accepted socket: with Nagle's algorithm a small response can wait for the
        // client's delayed ACK, adding tens of milliseconds per request and poisoning every benchmark.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    // A send or a dropped sender both mean "stop".
                    let _ = stopped.await;
                })
                .await
        });
        Ok(MockServer {
            addr,
            shared,
            stop,
            task,
        })
    }

    /// Totals so far.
    pub fn stats(&self) -> MockStats {
        self.shared.counters.snapshot()
    }

    /// The base URL an OpenAI client needs: `http://ADDR/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Stops accepting connections and waits for in-flight requests to finish.
    pub async fn shutdown(self) {
        let _ = self.stop.send(());
        match self.task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "mock-llm server stopped with an error"),
            Err(e) => tracing::warn!(error = %e, "mock-llm server task failed"),
        }
    }
}

/// Serve until ctrl-c (used by `sleuth mock-llm`); prints nothing itself.
pub async fn serve_until_ctrl_c(listen: SocketAddr, config: MockConfig) -> Result<(), MockError> {
    let mut server = MockServer::start(listen, config).await?;
    let signal = tokio::select! {
        signal = tokio::signal::ctrl_c() => signal,
        // The server only ends by itself on a failure.
        ended = &mut server.task => {
            return match ended {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(MockError::Serve(e)),
                Err(e) => Err(MockError::Task(e)),
            };
        }
    };
    server.shutdown().await;
    signal.map_err(MockError::Signal)
}

/// State shared by all handlers.
struct Shared {
    config: MockConfig,
    counters: Counters,
    /// A std mutex is the right lock here: the critical section is one or two RNG draws and is never
    /// held across an await, so an async mutex would only add overhead.
    faults: Mutex<ChaCha8Rng>,
    limiter: Option<Semaphore>,
    next_id: AtomicU64,
}

/// An injected failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    RateLimited,
    ServerError,
}

impl Shared {
    fn new(config: MockConfig) -> Self {
        Shared {
            counters: Counters::default(),
            faults: Mutex::new(ChaCha8Rng::seed_from_u64(config.fault_seed)),
            limiter: config.max_concurrency.map(Semaphore::new),
            next_id: AtomicU64::new(1),
            config,
        }
    }

    /// Fault 1: the concurrency limit. The permit (if any) must be held until the answer is built.
    fn admit(&self) -> Result<Option<SemaphorePermit<'_>>, ApiError> {
        let Some(limiter) = &self.limiter else {
            return Ok(None);
        };
        match limiter.try_acquire() {
            Ok(permit) => Ok(Some(permit)),
            Err(_) => {
                self.counters.rate_limited.fetch_add(1, Ordering::Relaxed);
                Err(ApiError::rate_limited(
                    format!(
                        "Rate limit reached: at most {} concurrent requests",
                        self.config.max_concurrency.unwrap_or(0)
                    ),
                    self.config.retry_after_ms,
                ))
            }
        }
    }

    /// Faults 2 and 3: the latency, then a random error.
    async fn delay_then_maybe_fail(&self) -> Result<(), ApiError> {
        if !self.config.latency.is_zero() {
            tokio::time::sleep(self.config.latency).await;
        }
        match self.draw_fault() {
            None => Ok(()),
            Some(Fault::RateLimited) => {
                self.counters.rate_limited.fetch_add(1, Ordering::Relaxed);
                Err(ApiError::rate_limited(
                    "Rate limit reached (injected by sleuth mock-llm)".into(),
                    self.config.retry_after_ms,
                ))
            }
            Some(Fault::ServerError) => {
                self.counters.server_errors.fetch_add(1, Ordering::Relaxed);
                Err(ApiError::server_error(
                    "The server had an error while processing your request (injected by sleuth mock-llm)"
                        .into(),
                    self.config.retry_after_ms,
                ))
            }
        }
    }

    /// One draw decides whether the request fails, a second which way. Synchronous on purpose: the lock
    /// guard cannot live across an await.
    fn draw_fault(&self) -> Option<Fault> {
        // Nothing can panic while the lock is held, so poisoning cannot happen; recover rather than unwrap.
        let mut rng = match self.faults.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        if rng.gen::<f64>() >= self.config.error_rate {
            return None;
        }
        Some(if rng.gen::<bool>() {
            Fault::RateLimited
        } else {
            Fault::ServerError
        })
    }

    fn check_model(&self, model: &str) -> Result<(), ApiError> {
        if self.config.models.iter().any(|m| m == model) {
            return Ok(());
        }
        Err(ApiError {
            status: StatusCode::NOT_FOUND,
            kind: "invalid_request_error",
            message: format!("The model `{model}` does not exist or you do not have access to it."),
            param: Some("model"),
            code: Some("model_not_found"),
            retry_after_ms: None,
        })
    }
}

/// Live totals; atomics so concurrent requests never contend on a lock for bookkeeping.
#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    ok: AtomicU64,
    rate_limited: AtomicU64,
    server_errors: AtomicU64,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
    malformed: AtomicU64,
    /// Chat completions that reached the model so far (the malformed-output fault counts these).
    malformed_slots: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> MockStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        MockStats {
            requests: get(&self.requests),
            ok: get(&self.ok),
            rate_limited: get(&self.rate_limited),
            server_errors: get(&self.server_errors),
            prompt_tokens: get(&self.prompt_tokens),
            completion_tokens: get(&self.completion_tokens),
            malformed: get(&self.malformed),
        }
    }
}

/// An error answer in OpenAI's shape.
#[derive(Debug, thiserror::Error)]
#[error("HTTP {status}: {message}")]
struct ApiError {
    status: StatusCode,
    /// OpenAI's `type`: `invalid_request_error`, `rate_limit_error`, `server_error`.
    kind: &'static str,
    message: String,
    param: Option<&'static str>,
    code: Option<&'static str>,
    /// Set on retryable errors: becomes the `retry-after-ms` and `retry-after` headers.
    retry_after_ms: Option<u64>,
}

impl ApiError {
    fn invalid(message: impl Into<String>, param: Option<&'static str>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            message: message.into(),
            param,
            code: None,
            retry_after_ms: None,
        }
    }

    fn rate_limited(message: String, retry_after_ms: u64) -> Self {
        ApiError {
            status: StatusCode::TOO_MANY_REQUESTS,
            kind: "rate_limit_error",
            message,
            param: None,
            code: Some("rate_limit_exceeded"),
            retry_after_ms: Some(retry_after_ms),
        }
    }

    fn server_error(message: String, retry_after_ms: u64) -> Self {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: "server_error",
            message,
            param: None,
            code: None,
            retry_after_ms: Some(retry_after_ms),
        }
    }

    fn from_body_rejection(r: BytesRejection) -> Self {
        ApiError {
            status: r.status(),
            ..ApiError::invalid(r.body_text(), None)
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }});
        let mut resp = (self.status, Json(body)).into_response();
        if let Some(ms) = self.retry_after_ms {
            let headers = resp.headers_mut();
            headers.insert("retry-after-ms", HeaderValue::from(ms));
            // Clients that only read the standard header get whole seconds, rounded up and at least 1.
            headers.insert(
                header::RETRY_AFTER,
                HeaderValue::from(ms.div_ceil(1000).max(1)),
            );
        }
        resp
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/embeddings", post(embeddings))
        .route("/v1/models", get(list_models))
        .route("/stats", get(stats))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(shared)
}

async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    shared.counters.requests.fetch_add(1, Ordering::Relaxed);
    let _permit = shared.admit()?;
    shared.delay_then_maybe_fail().await?;
    let body = body.map_err(ApiError::from_body_rejection)?;
    let req = parse_chat_request(&body)?;
    shared.check_model(&req.model)?;

    // The simulated model is pure CPU work of well under a millisecond for sleuth's prompts: cheap
    // enough to run on the async worker instead of paying a hop to the blocking pool.
    let mut resp = simulated::respond(&req);
    // Fault 4: the first `malformed_first` answers are replaced (the counter only ever grows, so
    // concurrent requests still get exactly that many).
    let served = shared
        .counters
        .malformed_slots
        .fetch_add(1, Ordering::Relaxed);
    if served < shared.config.malformed_first {
        shared.counters.malformed.fetch_add(1, Ordering::Relaxed);
        resp = crate::llm::ChatResponse {
            content: MALFORMED_REPLY.to_string(),
            usage: Some(TokenUsage {
                prompt_tokens: tokens::count_messages(&req.messages),
                completion_tokens: tokens::count(MALFORMED_REPLY),
                cached_tokens: 0,
            }),
            logprobs: None,
        };
    }
    // The simulated model always reports usage; count locally if that ever changes.
    let usage = resp.usage.unwrap_or_else(|| TokenUsage {
        prompt_tokens: tokens::count_messages(&req.messages),
        completion_tokens: tokens::count(&resp.content),
        cached_tokens: 0,
    });
    let logprobs = resp.logprobs.as_deref().map(|lps| {
        json!({
            "content": lps.iter().map(token_logprob_json).collect::<Vec<_>>(),
            "refusal": null,
        })
    });
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let answer = json!({
        "id": format!("chatcmpl-{id}"),
        "object": "chat.completion",
        "created": unix_now(),
        "model": req.model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": resp.content, "refusal": null},
            "finish_reason": "stop",
            "logprobs": logprobs,
        }],
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
        },
    });

    let c = &shared.counters;
    c.ok.fetch_add(1, Ordering::Relaxed);
    c.prompt_tokens
        .fetch_add(usage.prompt_tokens, Ordering::Relaxed);
    c.completion_tokens
        .fetch_add(usage.completion_tokens, Ordering::Relaxed);
    Ok(Json(answer))
}

/// One output token's log-probability in OpenAI's shape. All of the simulated model's alternatives are
/// returned (the request's `top_logprobs` count is not applied), so answers over HTTP stay identical to
/// the in-process provider's.
fn token_logprob_json(t: &TokenLogprob) -> Value {
    json!({
        "token": t.token,
        "logprob": t.logprob,
        "bytes": null,
        "top_logprobs": t
            .top
            .iter()
            .map(|(token, logprob)| json!({"token": token, "logprob": logprob, "bytes": null}))
            .collect::<Vec<_>>(),
    })
}

/// Maps an OpenAI chat request body to sleuth's [`ChatRequest`], leniently.
fn parse_chat_request(body: &[u8]) -> Result<ChatRequest, ApiError> {
    let obj = parse_object(body)?;
    if obj.get("stream").and_then(Value::as_bool) == Some(true) {
        return Err(ApiError::invalid(
            "streaming is not supported by sleuth mock-llm",
            Some("stream"),
        ));
    }
    let model = obj
        .get("model")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::invalid("you must provide a model parameter", Some("model")))?;
    let messages = obj
        .get("messages")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| ApiError::invalid("'messages' must be a non-empty array", Some("messages")))?
        .iter()
        .enumerate()
        .map(|(i, m)| parse_message(i, m))
        .collect::<Result<Vec<_>, _>>()?;
    let float = |key: &str, default: f32| {
        obj.get(key)
            .and_then(Value::as_f64)
            .map_or(default, |x| x as f32)
    };
    let max_tokens = obj
        .get("max_completion_tokens")
        .and_then(Value::as_u64)
        .or_else(|| obj.get("max_tokens").and_then(Value::as_u64))
        .map_or(DEFAULT_MAX_TOKENS, |n| u32::try_from(n).unwrap_or(u32::MAX));
    let schema = match obj.get("response_format") {
        Some(rf) if rf.get("type").and_then(Value::as_str) == Some("json_schema") => {
            let js = rf.get("json_schema");
            let name = js
                .and_then(|j| j.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("response")
                .to_string();
            // OpenAI allows the schema to be omitted; an empty object schema then yields `{}`.
            let schema = js
                .and_then(|j| j.get("schema"))
                .cloned()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
            Some(ResponseSchema::json(&name, schema))
        }
        // `json_object`, `text` or nothing: free text.
        _ => None,
    };
    // Negative seeds are legal in OpenAI's API; reinterpret their bits so every seed is a distinct sample.
    let sample = match obj.get("seed") {
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_i64().map(|i| i as u64))
            .unwrap_or(0),
        _ => 0,
    };
    Ok(ChatRequest {
        model: model.to_string(),
        messages,
        temperature: float("temperature", DEFAULT_TEMPERATURE),
        top_p: float("top_p", DEFAULT_TOP_P),
        max_tokens,
        schema,
        logprobs: obj
            .get("logprobs")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        sample,
    })
}

fn parse_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(obj)) => Ok(obj),
        Ok(_) => Err(ApiError::invalid(
            "the request body must be a JSON object",
            None,
        )),
        Err(e) => Err(ApiError::invalid(
            format!("could not parse the JSON body of your request: {e}"),
            None,
        )),
    }
}

fn parse_message(i: usize, m: &Value) -> Result<Message, ApiError> {
    let role = match m.get("role").and_then(Value::as_str) {
        Some("system" | "developer") => ChatRole::System,
        Some("user") => ChatRole::User,
        Some("assistant") => ChatRole::Assistant,
        // Tool output is input the model reads, like a user turn; sleuth's roles have no closer match.
        Some("tool" | "function") => ChatRole::User,
        Some(other) => {
            return Err(ApiError::invalid(
                format!("messages[{i}].role: unknown role '{other}'"),
                Some("messages"),
            ))
        }
        None => {
            return Err(ApiError::invalid(
                format!("messages[{i}] has no role"),
                Some("messages"),
            ))
        }
    };
    Ok(Message {
        role,
        content: content_text(m.get("content")),
    })
}

/// A message's text: a plain string, or the texts of an array of content parts. Parts are joined as
/// paragraphs because the simulated model takes the last paragraph of the last user message as the
/// question: a client sending context and question as two parts gets the question it meant. Non-text
/// parts (images, audio) are ignored; a missing or null content (an assistant's tool call) is empty.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                _ => p.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => String::new(),
    }
}

async fn embeddings(
    State(shared): State<Arc<Shared>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    shared.counters.requests.fetch_add(1, Ordering::Relaxed);
    let _permit = shared.admit()?;
    shared.delay_then_maybe_fail().await?;
    let body = body.map_err(ApiError::from_body_rejection)?;
    let obj = parse_object(&body)?;
    let inputs: Vec<&str> = match obj.get("input") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(Value::as_str)
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                ApiError::invalid(
                    "sleuth mock-llm accepts 'input' only as a string or an array of strings",
                    Some("input"),
                )
            })?,
        _ => {
            return Err(ApiError::invalid(
                "'input' must be a string or a non-empty array of strings",
                Some("input"),
            ))
        }
    };
    // The official Python client asks for base64 by default, so both encodings are served.
    let base64 = match obj.get("encoding_format").and_then(Value::as_str) {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => {
            return Err(ApiError::invalid(
                format!("encoding_format must be 'float' or 'base64', got '{other}'"),
                Some("encoding_format"),
            ))
        }
    };
    // Any model name is accepted: the hashing embedder is the only one there is.
    let model = obj
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("sleuth-hashing");

    let embedder = HashingEmbedder::default();
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let v = embedder.embed_one(text);
            let embedding = if base64 {
                Value::String(base64_f32_le(&v))
            } else {
                json!(v)
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    let prompt_tokens: u64 = inputs.iter().map(|t| tokens::count(t)).sum();
    let answer = json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
    });

    let c = &shared.counters;
    c.ok.fetch_add(1, Ordering::Relaxed);
    c.prompt_tokens.fetch_add(prompt_tokens, Ordering::Relaxed);
    Ok(Json(answer))
}

async fn list_models(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let data: Vec<Value> = shared
        .config
        .models
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "sleuth"}))
        .collect();
    Json(json!({"object": "list", "data": data}))
}

/// Sleuth's own endpoint (not part of OpenAI's API): the totals so far.
async fn stats(State(shared): State<Arc<Shared>>) -> Json<MockStats> {
    Json(shared.counters.snapshot())
}

async fn not_found() -> ApiError {
    ApiError {
        status: StatusCode::NOT_FOUND,
        code: Some("unknown_url"),
        ..ApiError::invalid(
            "sleuth mock-llm serves /v1/chat/completions, /v1/embeddings, /v1/models and /stats",
            None,
        )
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Standard base64 (with padding) of the vector's little-endian f32 bytes: OpenAI's `base64` encoding.
/// Written out here rather than adding a dependency for twenty lines.
fn base64_f32_le(v: &[f32]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        // A chunk of k bytes yields k + 1 significant characters; the rest of the quad is padding.
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{OpenAiProvider, OpenAiSettings, Provider, ProviderError};

    const SYSTEM: &str =
        "You are Ben.\n### Your script\nAt 10 pm I saw Ada near the brandy decanter.";
    const QUESTION: &str = "Question: Who was near the brandy decanter?";

    async fn server(config: MockConfig) -> MockServer {
        let listen: SocketAddr = "127.0.0.1:0".parse().unwrap();
        MockServer::start(listen, config).await.unwrap()
    }

    fn client() -> reqwest::Client {
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

    #[test]
    fn the_same_fault_seed_gives_the_same_faults() {
        let config = MockConfig {
            error_rate: 0.5,
            fault_seed: 11,
            ..MockConfig::default()
        };
        let draws = |shared: &Shared| (0..64).map(|_| shared.draw_fault()).collect::<Vec<_>>();
        let a = draws(&Shared::new(config.clone()));
        assert_eq!(a, draws(&Shared::new(config)));
        assert!(a.contains(&None) && a.contains(&Some(Fault::RateLimited)));
        assert!(a.contains(&Some(Fault::ServerError)));
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
        let e = HashingEmbedder::default();
        for (i, d) in data.iter().enumerate() {
            assert_eq!(d["object"], "embedding");
            assert_eq!(d["index"], i);
            let vec: Vec<f32> = serde_json::from_value(d["embedding"].clone()).unwrap();
            assert_eq!(vec.len(), crate::memory::DEFAULT_DIMS);
            assert_eq!(vec, e.embed_one(texts[i]));
        }
        let tokens: u64 = texts.iter().map(|t| tokens::count(t)).sum();
        assert_eq!(v["usage"]["prompt_tokens"].as_u64(), Some(tokens));
        assert_eq!(v["usage"]["total_tokens"].as_u64(), Some(tokens));

        // A single string, base64-encoded as the Python client asks by default.
        let body = json!({"model": "x", "input": texts[0], "encoding_format": "base64"});
        let v: Value = post(&s, "/embeddings", &body).await.json().await.unwrap();
        let expected = base64_f32_le(&e.embed_one(texts[0]));
        assert_eq!(v["data"][0]["embedding"], expected);

        let stats = s.stats();
        assert_eq!((stats.requests, stats.ok), (2, 2));
        assert_eq!(stats.prompt_tokens, tokens + tokens::count(texts[0]));
        assert_eq!(stats.completion_tokens, 0);
        s.shutdown().await;
    }

    #[test]
    fn base64_matches_the_standard_encoding() {
        // 1.0f32 is 00 00 80 3f little-endian.
        assert_eq!(base64_f32_le(&[1.0]), "AACAPw==");
        assert_eq!(base64_f32_le(&[1.0, 1.0, 1.0]), "AACAPwAAgD8AAIA/");
        assert_eq!(base64_f32_le(&[]), "");
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
        }
    }

    fn provider(s: &MockServer) -> OpenAiProvider {
        OpenAiProvider::new(&OpenAiSettings {
            base_url: s.base_url(),
            api_key: "test".into(),
            timeout: Duration::from_secs(5),
        })
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
        assert_eq!(emb.vectors[0].len(), crate::memory::DEFAULT_DIMS);
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
}
