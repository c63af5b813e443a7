//! The `openai` provider: any OpenAI-compatible endpoint (OpenAI, Azure, vLLM, llama.cpp, Ollama,
//! LiteLLM, `sleuth mock-llm`) through async-openai.
//!
//! async-openai's own retry layer is replaced by a plain tower service, for two reasons: the gateway owns
//! retries (so each is counted and the wait honours Retry-After), and error answers must keep their
//! headers and body, which async-openai's error type drops or fails to parse when a server's error is
//! not in OpenAI's shape. The service turns every non-2xx answer into a typed [`HttpStatusError`] — its
//! status, Retry-After and the first [`ERROR_BODY_LIMIT`] bytes of its body — before async-openai reads
//! it; the provider downcasts it back and classifies it (`classify`).
//!
//! The chat body is sleuth's own (`body`), sent through async-openai's `create_byot`: servers differ in
//! how they take structured output and the completion limit, and the provider sends what the model's
//! settings and the endpoint's refusals so far say it takes (`dialect`), stepping down once on a
//! refusal that names the setting — within the same attempt, so a fallback never spends a retry.

mod batch;
mod body;
mod classify;
mod dialect;

use std::time::Duration;

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use async_openai::types::embeddings::{CreateEmbeddingRequest, EmbeddingInput};
use async_openai::Client;
use futures::future::BoxFuture;

use super::provider::{EmbedResponse, Provider, ProviderError};
use super::tokens;
use super::types::{ChatRequest, ChatResponse, OutputStyle, ReplyNotes};
pub use body::{prompt_schema_paragraph, PROMPT_SCHEMA_MARKER};
pub use classify::ERROR_BODY_LIMIT;
use classify::{classify, Failure};
use dialect::Learnt;
pub use dialect::{StructuredMode, TokenLimit};
use sleuth_base::telemetry as tm;

/// Environment variable holding the API key, unless `--api-key-env` names another.
pub const DEFAULT_KEY_ENV: &str = "OPENAI_API_KEY";

/// Settings of an OpenAI-compatible endpoint. The key itself is read from the environment by the caller
/// and never logged: `Debug` hides it.
#[derive(Clone)]
pub struct OpenAiSettings {
    pub base_url: String,
    pub api_key: String,
    /// Per-attempt timeout.
    pub timeout: Duration,
    /// How structured replies are asked for (default `auto`).
    pub structured: StructuredMode,
    /// Which field(s) carry the completion limit (default both).
    pub token_limit: TokenLimit,
}

impl OpenAiSettings {
    /// Settings with the default structured mode and token limit.
    pub fn new(base_url: impl Into<String>, api_key: impl Into<String>, timeout: Duration) -> Self {
        OpenAiSettings {
            base_url: base_url.into(),
            api_key: api_key.into(),
            timeout,
            structured: StructuredMode::default(),
            token_limit: TokenLimit::default(),
        }
    }
}

impl std::fmt::Debug for OpenAiSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiSettings")
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .field("structured", &self.structured)
            .field("token_limit", &self.token_limit)
            .finish()
    }
}

/// An error answer, kept with the wait the server asked for and the start of its body.
#[derive(Debug, thiserror::Error)]
#[error("HTTP {status}")]
pub struct HttpStatusError {
    pub status: u16,
    pub retry_after: Option<Duration>,
    /// The first [`ERROR_BODY_LIMIT`] bytes of the body, lossily decoded.
    pub body: String,
}

/// The wait a response asks for: `retry-after-ms` (OpenAI, Azure) if present, else `Retry-After` seconds.
pub fn parse_retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
    }
    get("retry-after")
        .and_then(|v| v.parse::<f64>().ok())
        .map(|s| Duration::from_secs_f64(s.max(0.0)))
}

/// The first `limit` bytes of a response's body: a read error ends it early (the status is the
/// error either way).
async fn read_bounded(mut response: reqwest::Response, limit: usize) -> String {
    let mut bytes = Vec::new();
    while bytes.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            _ => break,
        }
    }
    bytes.truncate(limit);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Chat and embeddings over HTTP.
pub struct OpenAiProvider {
    client: Client<OpenAIConfig>,
    timeout: Duration,
    /// What this endpoint takes, as configured and learnt so far: one provider serves one route,
    /// so this is remembered per route, for every game of the node.
    learnt: Learnt,
    /// For the requests async-openai has no call for (the context window a server reports).
    http: reqwest::Client,
    base_url: String,
    /// Never logged.
    api_key: String,
}

impl OpenAiProvider {
    /// Builds the client. TCP_NODELAY is set: a Nagle stall adds tens of milliseconds to every request.
    pub fn new(settings: &OpenAiSettings) -> Result<Self, ProviderError> {
        // reqwest has no provider of its own here: it uses the process default (ring, src/tls.rs).
        sleuth_base::tls::install_crypto_provider();
        let http = reqwest::Client::builder()
            .tcp_nodelay(true)
            .timeout(settings.timeout)
            .pool_max_idle_per_host(1024)
            .build()
            .map_err(|e| ProviderError::Connect(e.to_string()))?;
        let plain = http.clone();
        let service = tower::service_fn(move |factory: HttpRequestFactory| {
            let http = http.clone();
            async move {
                let request = factory.build().await?;
                let response = http.execute(request).await.map_err(OpenAIError::Reqwest)?;
                let status = response.status();
                if !status.is_success() {
                    let retry_after = parse_retry_after(response.headers());
                    let body = read_bounded(response, ERROR_BODY_LIMIT).await;
                    let err = HttpStatusError {
                        status: status.as_u16(),
                        retry_after,
                        body,
                    };
                    return Err(OpenAIError::Boxed(Box::new(err)));
                }
                Ok::<_, OpenAIError>(response)
            }
        });
        let config = OpenAIConfig::new()
            .with_api_base(settings.base_url.trim_end_matches('/'))
            .with_api_key(&settings.api_key);
        Ok(OpenAiProvider {
            client: Client::with_config(config).with_http_service(service),
            timeout: settings.timeout,
            learnt: Learnt::new(settings.structured, settings.token_limit),
            http: plain,
            base_url: settings.base_url.trim_end_matches('/').to_string(),
            api_key: settings.api_key.clone(),
        })
    }

    /// A JSON document the endpoint serves at `url`, or `None` for anything else (a server that does
    /// not have the route, an error, a timeout): only ever a hint.
    async fn get_json(&self, url: &str) -> Option<serde_json::Value> {
        let mut req = self.http.get(url).timeout(WINDOW_ASK_TIMEOUT);
        if !self.api_key.is_empty() {
            req = req.bearer_auth(&self.api_key);
        }
        let resp = req.send().await.ok()?;
        if !resp.status().is_success() {
            return None;
        }
        resp.json().await.ok()
    }

    fn failure(&self, e: OpenAIError) -> Failure {
        failure_of(e, self.timeout)
    }

    /// One request of `req` in the settings learnt so far, and the settings it was sent with.
    async fn send(
        &self,
        req: &ChatRequest,
    ) -> (
        Result<body::Completion, OpenAIError>,
        StructuredMode,
        TokenLimit,
    ) {
        let mode = self.learnt.structured();
        let limit = self.learnt.token_limit();
        let sent = self
            .client
            .chat()
            .create_byot::<_, body::Completion>(body::chat_body(req, mode, limit))
            .await;
        (sent, mode, limit)
    }
}

/// What an async-openai error means, for chat and the batch interface alike.
fn failure_of(e: OpenAIError, timeout: Duration) -> Failure {
    match e {
        OpenAIError::Boxed(b) => match b.downcast::<HttpStatusError>() {
            Ok(h) => classify(h.status, h.retry_after, &h.body),
            Err(other) => Failure::Other(classify_transport(&other.to_string(), timeout)),
        },
        OpenAIError::Reqwest(r) if r.is_timeout() => {
            Failure::Other(ProviderError::Timeout(timeout))
        }
        OpenAIError::Reqwest(r) => Failure::Other(classify_transport(&r.to_string(), timeout)),
        // Not reached with the service above (it answers every non-2xx itself); kept for safety.
        OpenAIError::ApiError(a) => Failure::Other(ProviderError::Refused {
            status: a.status_code.as_u16(),
            message: a.api_error.message,
        }),
        OpenAIError::JSONDeserialize(e, _) => Failure::Other(ProviderError::Decode(e.to_string())),
        other => Failure::Other(ProviderError::Decode(other.to_string())),
    }
}

/// A completion read into sleuth's reply: the first choice, its usage and log-probabilities, cut to
/// `max_tokens` when the server sent more.
fn reply_of(
    resp: body::Completion,
    model: &str,
    max_tokens: u32,
    mut notes: ReplyNotes,
) -> Result<ChatResponse, ProviderError> {
    let choice = resp
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| ProviderError::Decode("no choices in response".into()))?;
    let usage = resp.usage.map(|u| u.tokens());
    let mut content = choice.message.and_then(|m| m.content).unwrap_or_default();
    let reported = usage.map(|u| u.completion_tokens);
    if cut_to_limit(&mut content, reported, max_tokens) {
        notes.truncated = true;
        metrics::counter!(tm::LLM_TRUNCATED, "model" => model.to_string()).increment(1);
        tracing::debug!(
            model,
            max_tokens,
            reported,
            "reply longer than max_tokens cut to it"
        );
    }
    Ok(ChatResponse {
        content,
        usage,
        logprobs: choice.logprobs.and_then(|l| l.tokens()),
        notes,
    })
}

fn classify_transport(msg: &str, timeout: Duration) -> ProviderError {
    if msg.contains("timed out") {
        ProviderError::Timeout(timeout)
    } else {
        ProviderError::Connect(msg.to_string())
    }
}

/// How long the endpoint is given to say what its context window is.
const WINDOW_ASK_TIMEOUT: Duration = Duration::from_secs(5);

/// The context window of `model` in a `/v1/models` listing, where the server says (vLLM's
/// `max_model_len`); a listing of one model answers for it whatever its id.
fn models_window(listing: &serde_json::Value, model: &str) -> Option<u32> {
    let data = listing.get("data")?.as_array()?;
    let entry = data
        .iter()
        .find(|m| m.get("id").and_then(|i| i.as_str()) == Some(model))
        .or_else(|| (data.len() == 1).then(|| &data[0]))?;
    entry
        .get("max_model_len")
        .and_then(|n| n.as_u64())
        .and_then(|n| u32::try_from(n).ok())
}

/// The context window in llama.cpp's `/props` (the slots' `n_ctx`).
fn props_window(props: &serde_json::Value) -> Option<u32> {
    props
        .pointer("/default_generation_settings/n_ctx")
        .or_else(|| props.get("n_ctx"))
        .and_then(|n| n.as_u64())
        .and_then(|n| u32::try_from(n).ok())
}

/// The most fallbacks one call can take: two structured-output steps and one token-limit step.
const MAX_FALLBACKS: u32 = 3;

/// Cuts a reply the server made longer than `max_tokens` — a server that ignored every limit field —
/// to the limit. Where the server reported its count, the same share of the text is kept (its
/// tokenizer is not ours), and no more than `max_tokens` tokens by tiktoken's count; where it reported
/// none, tiktoken's count decides. Returns whether it cut.
fn cut_to_limit(content: &mut String, reported: Option<u64>, max_tokens: u32) -> bool {
    let max = u64::from(max_tokens);
    match reported {
        Some(n) if n > max => {
            let chars = content.chars().count() as u64;
            let keep = usize::try_from(chars * max / n).unwrap_or(usize::MAX);
            if let Some((at, _)) = content.char_indices().nth(keep) {
                content.truncate(at);
            }
            *content = tokens::truncate(content, max);
            true
        }
        Some(_) => false,
        None => {
            if tokens::count(content) <= max {
                return false;
            }
            *content = tokens::truncate(content, max);
            true
        }
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn context_window<'a>(&'a self, model: &'a str) -> BoxFuture<'a, Option<u32>> {
        Box::pin(async move {
            let base = &self.base_url;
            if let Some(w) = self
                .get_json(&format!("{base}/models"))
                .await
                .and_then(|v| models_window(&v, model))
            {
                return Some(w);
            }
            let root = base.strip_suffix("/v1").unwrap_or(base);
            let w = self
                .get_json(&format!("{root}/props"))
                .await
                .and_then(|v| props_window(&v));
            if let Some(w) = w {
                tracing::info!(model, window = w, "the endpoint reports its context window");
            }
            w
        })
    }

    fn chat<'a>(
        &'a self,
        req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let mut notes = ReplyNotes::default();
            let structured = req
                .schema
                .as_ref()
                .is_some_and(|s| s.style == OutputStyle::Json);
            let resp = loop {
                let (sent, mode, limit) = self.send(req).await;
                let e = match sent {
                    Ok(resp) => break resp,
                    Err(e) => e,
                };
                let failure = self.failure(e);
                let again = notes.fallback_requests < MAX_FALLBACKS
                    && match &failure {
                        Failure::ResponseFormat { message, .. } => {
                            structured && self.learnt.structured_refused(mode, &req.model, message)
                        }
                        Failure::TokenLimit { wants, message, .. } => self
                            .learnt
                            .token_limit_refused(limit, *wants, &req.model, message),
                        Failure::Other(_) => false,
                    };
                if !again {
                    return Err(failure.into_error());
                }
                notes.fallback_requests += 1;
            };
            reply_of(resp, &req.model, req.max_tokens, notes)
        })
    }

    fn batch_body(&self, req: &ChatRequest) -> Option<serde_json::Value> {
        let body = body::chat_body(req, self.learnt.structured(), self.learnt.token_limit());
        serde_json::to_value(body).ok()
    }

    fn batch_reply(
        &self,
        max_tokens: u32,
        body: serde_json::Value,
    ) -> Result<ChatResponse, ProviderError> {
        let model = body
            .get("model")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string();
        let resp: body::Completion =
            serde_json::from_value(body).map_err(|e| ProviderError::Decode(e.to_string()))?;
        reply_of(resp, &model, max_tokens, ReplyNotes::default())
    }

    fn batch_api(&self) -> Option<std::sync::Arc<dyn crate::provider::BatchEndpoint>> {
        Some(std::sync::Arc::new(batch::OpenAiBatch {
            client: self.client.clone(),
            timeout: self.timeout,
        }))
    }

    fn embed<'a>(
        &'a self,
        model: &'a str,
        inputs: &'a [String],
    ) -> BoxFuture<'a, Result<EmbedResponse, ProviderError>> {
        Box::pin(async move {
            let request = CreateEmbeddingRequest {
                model: model.to_string(),
                input: EmbeddingInput::StringArray(inputs.to_vec()),
                ..Default::default()
            };
            let resp = self
                .client
                .embeddings()
                .create(request)
                .await
                .map_err(|e| self.failure(e).into_error())?;
            let mut data = resp.data;
            data.sort_by_key(|d| d.index);
            Ok(EmbedResponse {
                vectors: data.into_iter().map(|d| d.embedding).collect(),
                prompt_tokens: Some(u64::from(resp.usage.prompt_tokens)),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};
    use serde_json::json;

    #[test]
    fn a_context_window_is_read_where_vllm_and_llama_cpp_report_it() {
        let vllm = json!({"data": [{"id": "a", "max_model_len": 4096}, {"id": "b", "max_model_len": 32768}]});
        assert_eq!(models_window(&vllm, "b"), Some(32768));
        assert_eq!(models_window(&vllm, "c"), None, "two models, neither named");
        let one = json!({"data": [{"id": "served", "max_model_len": 8192}]});
        assert_eq!(models_window(&one, "alias"), Some(8192));
        let openai = json!({"data": [{"id": "gpt-4o", "object": "model"}]});
        assert_eq!(models_window(&openai, "gpt-4o"), None);
        let props = json!({"default_generation_settings": {"n_ctx": 2048}});
        assert_eq!(props_window(&props), Some(2048));
        assert_eq!(props_window(&json!({"n_ctx": 512})), Some(512));
        assert_eq!(props_window(&json!({})), None);
    }

    #[test]
    fn retry_after_prefers_milliseconds() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_millis(150)));
    }

    #[test]
    fn settings_debug_hides_the_key() {
        let s = OpenAiSettings::new("http://x", "sk-secret", Duration::from_secs(1));
        assert!(!format!("{s:?}").contains("sk-secret"));
    }

    #[test]
    fn a_reply_longer_than_asked_is_cut_to_the_limit() {
        // The server's count says 4x the limit: at most a quarter of the text stays, and at most the
        // limit by tiktoken's count.
        let mut c = "abcd ".repeat(20);
        assert!(cut_to_limit(&mut c, Some(40), 10));
        assert!(c.len() <= 25 && !c.is_empty(), "{c:?}");
        assert!(tokens::count(&c) <= 10);
        let mut c = "word ".repeat(100);
        assert!(cut_to_limit(&mut c, Some(101), 100));
        let kept = tokens::count(&c);
        assert!(
            (95..=100).contains(&kept),
            "the server's share, then tiktoken's limit: {kept}"
        );
        // Within the limit by the server's count: untouched, whatever tiktoken would say.
        let mut c = "word ".repeat(50);
        assert!(!cut_to_limit(&mut c, Some(10), 10));
        assert_eq!(c.len(), 250);
        // No count from the server: tiktoken's.
        assert!(cut_to_limit(&mut c, None, 10));
        assert_eq!(tokens::count(&c), 10);
        let mut short = "two words".to_string();
        assert!(!cut_to_limit(&mut short, None, 10));
    }
}
