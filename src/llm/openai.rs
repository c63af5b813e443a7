//! The `openai` provider: any OpenAI-compatible endpoint (OpenAI, Azure, vLLM, Ollama, LiteLLM, `sleuth
//! mock-llm`) through async-openai.
//!
//! async-openai's own retry layer is replaced by a plain tower service, for two reasons: the gateway owns
//! retries (so each is counted and the wait honours Retry-After), and error statuses must keep their
//! headers, which async-openai's error type drops. The service turns a 429/5xx into a typed
//! [`HttpStatusError`] before async-openai reads the body; the provider downcasts it back.

use std::time::Duration;

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use async_openai::types::chat::{
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestMessage,
    ChatCompletionRequestSystemMessage, ChatCompletionRequestUserMessage,
    CreateChatCompletionRequest, ResponseFormat, ResponseFormatJsonSchema,
};
use async_openai::types::embeddings::{CreateEmbeddingRequest, EmbeddingInput};
use async_openai::Client;
use futures::future::BoxFuture;

use super::provider::{EmbedResponse, Provider, ProviderError};
use super::types::{ChatRequest, ChatResponse, ChatRole, OutputStyle, TokenLogprob, TokenUsage};

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
}

impl std::fmt::Debug for OpenAiSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiSettings")
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .finish()
    }
}

/// A 429 or 5xx answer, kept with the wait the server asked for.
#[derive(Debug, thiserror::Error)]
#[error("HTTP {status}")]
pub struct HttpStatusError {
    pub status: u16,
    pub retry_after: Option<Duration>,
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

/// Chat and embeddings over HTTP.
pub struct OpenAiProvider {
    client: Client<OpenAIConfig>,
    timeout: Duration,
}

impl OpenAiProvider {
    /// Builds the client. TCP_NODELAY is set: a Nagle stall adds tens of milliseconds to every request.
    pub fn new(settings: &OpenAiSettings) -> Result<Self, ProviderError> {
        let http = reqwest::Client::builder()
            .tcp_nodelay(true)
            .timeout(settings.timeout)
            .pool_max_idle_per_host(1024)
            .build()
            .map_err(|e| ProviderError::Connect(e.to_string()))?;
        let service = tower::service_fn(move |factory: HttpRequestFactory| {
            let http = http.clone();
            async move {
                let request = factory.build().await?;
                let response = http.execute(request).await.map_err(OpenAIError::Reqwest)?;
                let status = response.status();
                if status.as_u16() == 429 || status.is_server_error() {
                    let retry_after = parse_retry_after(response.headers());
                    let err = HttpStatusError {
                        status: status.as_u16(),
                        retry_after,
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
        })
    }

    fn classify(&self, e: OpenAIError) -> ProviderError {
        match e {
            OpenAIError::Boxed(b) => match b.downcast::<HttpStatusError>() {
                Ok(h) if h.status == 429 => ProviderError::RateLimited {
                    retry_after: h.retry_after,
                },
                Ok(h) => ProviderError::Server {
                    status: h.status,
                    retry_after: h.retry_after,
                },
                Err(other) => classify_transport(&other.to_string(), self.timeout),
            },
            OpenAIError::Reqwest(r) if r.is_timeout() => ProviderError::Timeout(self.timeout),
            OpenAIError::Reqwest(r) => classify_transport(&r.to_string(), self.timeout),
            OpenAIError::ApiError(a) => ProviderError::Refused {
                status: a.status_code.as_u16(),
                message: a.api_error.message,
            },
            OpenAIError::JSONDeserialize(e, _) => ProviderError::Decode(e.to_string()),
            other => ProviderError::Decode(other.to_string()),
        }
    }
}

fn classify_transport(msg: &str, timeout: Duration) -> ProviderError {
    if msg.contains("timed out") {
        ProviderError::Timeout(timeout)
    } else {
        ProviderError::Connect(msg.to_string())
    }
}

// `seed` is deprecated by OpenAI but still honoured by most compatible servers (vLLM, Ollama, mock-llm),
// and it is how the sample index reaches them.
#[allow(deprecated)]
fn to_openai_request(req: &ChatRequest) -> CreateChatCompletionRequest {
    let messages = req
        .messages
        .iter()
        .map(|m| match m.role {
            ChatRole::System => ChatCompletionRequestMessage::from(
                ChatCompletionRequestSystemMessage::from(m.content.as_str()),
            ),
            ChatRole::User => ChatCompletionRequestMessage::from(
                ChatCompletionRequestUserMessage::from(m.content.as_str()),
            ),
            ChatRole::Assistant => ChatCompletionRequestMessage::from(
                ChatCompletionRequestAssistantMessage::from(m.content.as_str()),
            ),
        })
        .collect();
    CreateChatCompletionRequest {
        model: req.model.clone(),
        messages,
        temperature: Some(req.temperature),
        top_p: Some(req.top_p),
        max_completion_tokens: Some(req.max_tokens),
        seed: Some((req.sample & (i64::MAX as u64)) as i64),
        logprobs: req.logprobs.then_some(true),
        top_logprobs: req.logprobs.then_some(5),
        // Sections replies are free text whose format the prompt describes: asking the endpoint for a
        // JSON object would forbid the THOUGHT section.
        response_format: req
            .schema
            .as_ref()
            .filter(|s| s.style == OutputStyle::Json)
            .map(|s| ResponseFormat::JsonSchema {
                json_schema: ResponseFormatJsonSchema {
                    description: None,
                    name: s.name.clone(),
                    schema: s.schema.clone(),
                    strict: Some(true),
                },
            }),
        ..Default::default()
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn chat<'a>(
        &'a self,
        req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let resp = self
                .client
                .chat()
                .create(to_openai_request(req))
                .await
                .map_err(|e| self.classify(e))?;
            let choice = resp
                .choices
                .into_iter()
                .next()
                .ok_or_else(|| ProviderError::Decode("no choices in response".into()))?;
            let usage = resp.usage.map(|u| TokenUsage {
                prompt_tokens: u64::from(u.prompt_tokens),
                completion_tokens: u64::from(u.completion_tokens),
                cached_tokens: u
                    .prompt_tokens_details
                    .and_then(|d| d.cached_tokens)
                    .map(u64::from)
                    .unwrap_or(0),
            });
            let logprobs = choice.logprobs.and_then(|l| l.content).map(|toks| {
                toks.into_iter()
                    .map(|t| TokenLogprob {
                        token: t.token,
                        logprob: f64::from(t.logprob),
                        top: t
                            .top_logprobs
                            .into_iter()
                            .map(|x| (x.token, f64::from(x.logprob)))
                            .collect(),
                    })
                    .collect()
            });
            Ok(ChatResponse {
                content: choice.message.content.unwrap_or_default(),
                usage,
                logprobs,
            })
        })
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
                .map_err(|e| self.classify(e))?;
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

    #[test]
    fn retry_after_prefers_milliseconds() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_millis(150)));
    }

    #[test]
    fn sections_requests_carry_no_response_format() {
        let schema =
            serde_json::json!({"type": "object", "properties": {"vote": {"type": "string"}}});
        let mut req = ChatRequest {
            model: "m".into(),
            messages: vec![crate::llm::Message::user("Who?")],
            temperature: 0.8,
            top_p: 1.0,
            max_tokens: 10,
            schema: Some(crate::llm::ResponseSchema::json("vote", schema.clone())),
            logprobs: false,
            sample: 1,
            cache_key: None,
        };
        assert!(to_openai_request(&req).response_format.is_some());
        req.schema = Some(crate::llm::ResponseSchema::sections("vote", schema));
        assert!(to_openai_request(&req).response_format.is_none());
    }

    #[test]
    fn settings_debug_hides_the_key() {
        let s = OpenAiSettings {
            base_url: "http://x".into(),
            api_key: "sk-secret".into(),
            timeout: Duration::from_secs(1),
        };
        assert!(!format!("{s:?}").contains("sk-secret"));
    }
}
