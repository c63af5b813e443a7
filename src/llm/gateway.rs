//! The LLM gateway: the one road from any agent, judge or generator to any model.
//!
//! A node-wide actor. Each request is handed to its own task, so a slow model never blocks the mailbox;
//! the task retries transient failures with exponential backoff, full jitter and the server's
//! Retry-After, re-asks when a structured output cannot be parsed, counts tokens (locally when the
//! provider reports none), prices the call, and records metrics. The caller gets the answer with its
//! [`Usage`], which it attaches to the transcript event the call produced: summing events gives the run's
//! total without a second ledger.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use rand::Rng;
use serde_json::Value;

use super::pricing::Pricing;
use super::provider::{ProviderError, SharedProvider};
use super::tokens;
use super::types::{CallTags, ChatRequest, ChatResponse, Message, TokenUsage, Usage};
use crate::telemetry as tm;

/// Retry and rerun policy.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// Attempts after the first for transient failures (429, 5xx, timeouts, connection errors).
    pub max_retries: u32,
    /// First backoff; doubles per attempt up to `backoff_max`, with full jitter.
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// Per-attempt timeout.
    pub timeout: Duration,
    /// Re-asks after an unparseable structured output.
    pub max_reruns: u32,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            max_retries: 8,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            timeout: Duration::from_secs(120),
            max_reruns: 2,
        }
    }
}

/// Why a call gave no usable answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    #[error("{purpose}: {provider} gave up after {attempts} attempts: {last}")]
    Exhausted {
        purpose: String,
        provider: &'static str,
        attempts: u32,
        last: ProviderError,
        usage: Usage,
    },
    #[error("{purpose}: {provider} refused the request: {error}")]
    Refused {
        purpose: String,
        provider: &'static str,
        error: ProviderError,
        usage: Usage,
    },
    #[error(
        "{purpose}: output could not be parsed as `{schema}` after {attempts} attempts: {reason}"
    )]
    Unparseable {
        purpose: String,
        schema: String,
        attempts: u32,
        reason: String,
        usage: Usage,
    },
    #[error("the LLM gateway is not running")]
    Unavailable,
}

impl LlmError {
    /// What was spent before the call failed (failed parses still cost tokens).
    pub fn usage(&self) -> Usage {
        match self {
            LlmError::Exhausted { usage, .. }
            | LlmError::Refused { usage, .. }
            | LlmError::Unparseable { usage, .. } => *usage,
            LlmError::Unavailable => Usage::default(),
        }
    }
}

/// A successful chat call.
#[derive(Debug, Clone)]
pub struct ChatOutcome {
    pub response: ChatResponse,
    /// The parsed JSON, for requests with a schema.
    pub json: Option<Value>,
    pub usage: Usage,
}

/// A successful embedding call.
#[derive(Debug, Clone)]
pub struct EmbedOutcome {
    pub vectors: Vec<Vec<f32>>,
    pub usage: Usage,
}

/// Messages the gateway actor takes.
pub enum GatewayMsg {
    Chat {
        req: ChatRequest,
        tags: CallTags,
        reply: RpcReplyPort<Result<ChatOutcome, LlmError>>,
    },
    Embed {
        model: String,
        inputs: Vec<String>,
        tags: CallTags,
        reply: RpcReplyPort<Result<EmbedOutcome, LlmError>>,
    },
}

/// What every request task shares.
struct Shared {
    provider: SharedProvider,
    pricing: Pricing,
    config: GatewayConfig,
}

struct GatewayActor;

impl Actor for GatewayActor {
    type Msg = GatewayMsg;
    type State = Arc<Shared>;
    type Arguments = Arc<Shared>;

    async fn pre_start(
        &self,
        _me: ActorRef<Self::Msg>,
        args: Arc<Shared>,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(args)
    }

    async fn handle(
        &self,
        _me: ActorRef<Self::Msg>,
        msg: GatewayMsg,
        shared: &mut Arc<Shared>,
    ) -> Result<(), ActorProcessingErr> {
        let shared = shared.clone();
        match msg {
            GatewayMsg::Chat { req, tags, reply } => {
                tokio::spawn(async move {
                    metrics::gauge!(tm::LLM_IN_FLIGHT).increment(1.0);
                    let out = chat_with_reruns(&shared, req, &tags).await;
                    metrics::gauge!(tm::LLM_IN_FLIGHT).decrement(1.0);
                    // The caller may have gone (its game failed); nothing to do then.
                    let _ = reply.send(out);
                });
            }
            GatewayMsg::Embed {
                model,
                inputs,
                tags,
                reply,
            } => {
                tokio::spawn(async move {
                    let out = embed(&shared, &model, &inputs, &tags).await;
                    let _ = reply.send(out);
                });
            }
        }
        Ok(())
    }
}

/// A cheap, clonable handle to the gateway actor.
#[derive(Clone)]
pub struct Gateway {
    actor: ActorRef<GatewayMsg>,
    provider: &'static str,
}

impl Gateway {
    /// Starts the node's gateway actor.
    pub async fn start(
        provider: SharedProvider,
        pricing: Pricing,
        config: GatewayConfig,
    ) -> Result<Gateway, ractor::SpawnErr> {
        let name = provider.name();
        let shared = Arc::new(Shared {
            provider,
            pricing,
            config,
        });
        let (actor, _join) = Actor::spawn(None, GatewayActor, shared).await?;
        Ok(Gateway {
            actor,
            provider: name,
        })
    }

    /// The provider's name.
    pub fn provider(&self) -> &'static str {
        self.provider
    }

    /// Stops the actor; in-flight request tasks finish on their own.
    pub fn stop(&self) {
        self.actor.stop(None);
    }

    /// One chat call. With a schema in the request, `json` of the outcome holds the parsed reply.
    pub async fn chat(&self, req: ChatRequest, tags: CallTags) -> Result<ChatOutcome, LlmError> {
        let r = self
            .actor
            .call(|reply| GatewayMsg::Chat { req, tags, reply }, None)
            .await;
        match r {
            Ok(ractor::rpc::CallResult::Success(out)) => out,
            _ => Err(LlmError::Unavailable),
        }
    }

    /// Embeds a batch of texts.
    pub async fn embed(
        &self,
        model: &str,
        inputs: Vec<String>,
        tags: CallTags,
    ) -> Result<EmbedOutcome, LlmError> {
        let model = model.to_string();
        let r = self
            .actor
            .call(
                |reply| GatewayMsg::Embed {
                    model,
                    inputs,
                    tags,
                    reply,
                },
                None,
            )
            .await;
        match r {
            Ok(ractor::rpc::CallResult::Success(out)) => out,
            _ => Err(LlmError::Unavailable),
        }
    }
}

/// The wait before retry number `attempt` (0-based): full jitter over an exponential ceiling, but never
/// less than what the server asked for.
pub fn backoff(config: &GatewayConfig, attempt: u32, retry_after: Option<Duration>) -> Duration {
    let ceiling = config
        .backoff_base
        .saturating_mul(1u32 << attempt.min(16))
        .min(config.backoff_max);
    let jittered = ceiling.mul_f64(rand::thread_rng().gen_range(0.5..=1.0));
    match retry_after {
        Some(ra) => jittered.max(ra),
        None => jittered,
    }
}

async fn chat_with_reruns(
    shared: &Shared,
    mut req: ChatRequest,
    tags: &CallTags,
) -> Result<ChatOutcome, LlmError> {
    let mut usage = Usage::default();
    let original_messages = req.messages.clone();
    let mut attempt = 0;
    loop {
        let response = match chat_with_retries(shared, &req, tags, &mut usage).await {
            Ok(r) => r,
            Err(e) => return Err(with_usage(e, usage)),
        };
        let Some(schema) = &req.schema else {
            count_call(tags, &req.model, "ok");
            return Ok(ChatOutcome {
                response,
                json: None,
                usage,
            });
        };
        match parse_structured(&response.content, &schema.schema) {
            Ok(json) => {
                count_call(tags, &req.model, "ok");
                return Ok(ChatOutcome {
                    response,
                    json: Some(json),
                    usage,
                });
            }
            Err(reason) => {
                usage.parse_failures += 1;
                count_call(tags, &req.model, "parse_failure");
                metrics::counter!(tm::LLM_PARSE_FAILURES, "model" => req.model.clone(), "purpose" => tags.purpose.clone()).increment(1);
                if attempt >= shared.config.max_reruns {
                    return Err(LlmError::Unparseable {
                        purpose: tags.purpose.clone(),
                        schema: schema.name.clone(),
                        attempts: attempt + 1,
                        reason,
                        usage,
                    });
                }
                attempt += 1;
                req.messages = rerun_messages(&original_messages, &response.content, &reason);
                req.sample = req.sample.wrapping_add(0x9E37_79B9_7F4A_7C15);
            }
        }
    }
}

/// The re-ask: the bad output and what was wrong with it, then the original final instruction again so
/// that the question stays the last thing the model reads.
fn rerun_messages(original: &[Message], bad: &str, reason: &str) -> Vec<Message> {
    let mut msgs = original.to_vec();
    let last_paragraph = original
        .iter()
        .rev()
        .find(|m| m.role == super::types::ChatRole::User)
        .and_then(|m| {
            m.content
                .split("\n\n")
                .filter(|p| !p.trim().is_empty())
                .last()
        })
        .unwrap_or("")
        .to_string();
    msgs.push(Message {
        role: super::types::ChatRole::Assistant,
        content: bad.to_string(),
    });
    msgs.push(Message::user(format!(
        "Your previous reply could not be used ({reason}). Reply again with only a JSON object that follows the required schema.\n\n{last_paragraph}"
    )));
    msgs
}

fn with_usage(e: LlmError, usage: Usage) -> LlmError {
    match e {
        LlmError::Exhausted {
            purpose,
            provider,
            attempts,
            last,
            ..
        } => LlmError::Exhausted {
            purpose,
            provider,
            attempts,
            last,
            usage,
        },
        LlmError::Refused {
            purpose,
            provider,
            error,
            ..
        } => LlmError::Refused {
            purpose,
            provider,
            error,
            usage,
        },
        other => other,
    }
}

fn count_call(tags: &CallTags, model: &str, outcome: &'static str) {
    metrics::counter!(tm::LLM_CALLS, "model" => model.to_string(), "phase" => tags.phase.as_str(), "purpose" => tags.purpose.clone(), "outcome" => outcome)
        .increment(1);
}

async fn chat_with_retries(
    shared: &Shared,
    req: &ChatRequest,
    tags: &CallTags,
    usage: &mut Usage,
) -> Result<ChatResponse, LlmError> {
    let mut attempt = 0;
    loop {
        let started = Instant::now();
        let result =
            match tokio::time::timeout(shared.config.timeout, shared.provider.chat(req)).await {
                Ok(r) => r,
                Err(_) => Err(ProviderError::Timeout(shared.config.timeout)),
            };
        match result {
            Ok(resp) => {
                metrics::histogram!(tm::LLM_LATENCY, "model" => req.model.clone(), "phase" => tags.phase.as_str())
                    .record(started.elapsed().as_secs_f64());
                let tu = resp.usage.unwrap_or_else(|| TokenUsage {
                    prompt_tokens: tokens::count_messages(&req.messages),
                    completion_tokens: tokens::count(&resp.content),
                    cached_tokens: 0,
                });
                account(shared, &req.model, tags, tu, usage);
                return Ok(resp);
            }
            Err(e) if e.retryable() && attempt < shared.config.max_retries => {
                usage.retries += 1;
                metrics::counter!(tm::LLM_RETRIES, "model" => req.model.clone(), "reason" => e.reason()).increment(1);
                tracing::debug!(purpose = %tags.purpose, attempt, error = %e, "retrying LLM call");
                tokio::time::sleep(backoff(&shared.config, attempt, e.retry_after())).await;
                attempt += 1;
            }
            Err(e) if e.retryable() => {
                return Err(LlmError::Exhausted {
                    purpose: tags.purpose.clone(),
                    provider: shared.provider.name(),
                    attempts: attempt + 1,
                    last: e,
                    usage: Usage::default(),
                });
            }
            Err(e) => {
                return Err(LlmError::Refused {
                    purpose: tags.purpose.clone(),
                    provider: shared.provider.name(),
                    error: e,
                    usage: Usage::default(),
                })
            }
        }
    }
}

fn account(shared: &Shared, model: &str, tags: &CallTags, tu: TokenUsage, usage: &mut Usage) {
    let cost = shared.pricing.cost(model, &tu);
    usage.calls += 1;
    usage.prompt_tokens += tu.prompt_tokens;
    usage.completion_tokens += tu.completion_tokens;
    usage.cached_tokens += tu.cached_tokens;
    usage.cost_usd += cost;
    let phase = tags.phase.as_str();
    for (kind, n) in [
        ("prompt", tu.prompt_tokens),
        ("completion", tu.completion_tokens),
        ("cached", tu.cached_tokens),
    ] {
        metrics::counter!(tm::LLM_TOKENS, "model" => model.to_string(), "phase" => phase, "kind" => kind).increment(n);
    }
    // The metrics facade has integer counters only: cost is counted in micro-dollars.
    metrics::counter!(tm::LLM_COST, "model" => model.to_string(), "phase" => phase)
        .increment((cost * 1e6).round() as u64);
}

async fn embed(
    shared: &Shared,
    model: &str,
    inputs: &[String],
    tags: &CallTags,
) -> Result<EmbedOutcome, LlmError> {
    let mut usage = Usage::default();
    let mut attempt = 0;
    loop {
        let result =
            match tokio::time::timeout(shared.config.timeout, shared.provider.embed(model, inputs))
                .await
            {
                Ok(r) => r,
                Err(_) => Err(ProviderError::Timeout(shared.config.timeout)),
            };
        match result {
            Ok(r) => {
                let prompt = r
                    .prompt_tokens
                    .unwrap_or_else(|| inputs.iter().map(|t| tokens::count(t)).sum());
                account(
                    shared,
                    model,
                    tags,
                    TokenUsage {
                        prompt_tokens: prompt,
                        completion_tokens: 0,
                        cached_tokens: 0,
                    },
                    &mut usage,
                );
                count_call(tags, model, "ok");
                return Ok(EmbedOutcome {
                    vectors: r.vectors,
                    usage,
                });
            }
            Err(e) if e.retryable() && attempt < shared.config.max_retries => {
                usage.retries += 1;
                metrics::counter!(tm::LLM_RETRIES, "model" => model.to_string(), "reason" => e.reason()).increment(1);
                tokio::time::sleep(backoff(&shared.config, attempt, e.retry_after())).await;
                attempt += 1;
            }
            Err(e) if e.retryable() => {
                return Err(LlmError::Exhausted {
                    purpose: tags.purpose.clone(),
                    provider: shared.provider.name(),
                    attempts: attempt + 1,
                    last: e,
                    usage,
                })
            }
            Err(e) => {
                return Err(LlmError::Refused {
                    purpose: tags.purpose.clone(),
                    provider: shared.provider.name(),
                    error: e,
                    usage,
                })
            }
        }
    }
}

/// Parses a structured reply and checks it against the parts of the schema agents rely on: the reply is an
/// object, required properties are present, enum values are allowed and types match. Models sometimes
/// wrap JSON in a code fence; that is tolerated.
pub fn parse_structured(content: &str, schema: &Value) -> Result<Value, String> {
    let trimmed = content.trim();
    let body = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|s| s.strip_suffix("```"))
        .unwrap_or(trimmed);
    let v: Value = serde_json::from_str(body.trim()).map_err(|e| format!("not JSON: {e}"))?;
    check(&v, schema, "$")?;
    Ok(v)
}

fn check(v: &Value, schema: &Value, path: &str) -> Result<(), String> {
    if let Some(options) = schema.get("enum").and_then(|e| e.as_array()) {
        if !options.contains(v) {
            return Err(format!(
                "{path} is {v}, expected one of {}",
                Value::Array(options.clone())
            ));
        }
        return Ok(());
    }
    let ty = schema.get("type").and_then(|t| t.as_str()).unwrap_or("");
    let ok = match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        _ => true,
    };
    if !ok {
        return Err(format!("{path} should be {ty}"));
    }
    if let (Some(obj), Some(props)) = (
        v.as_object(),
        schema.get("properties").and_then(|p| p.as_object()),
    ) {
        for req in schema
            .get("required")
            .and_then(|r| r.as_array())
            .into_iter()
            .flatten()
            .filter_map(|r| r.as_str())
        {
            if !obj.contains_key(req) {
                return Err(format!("{path}.{req} is missing"));
            }
        }
        for (k, sub) in props {
            if let Some(x) = obj.get(k) {
                check(x, sub, &format!("{path}.{k}"))?;
            }
        }
    }
    if let (Some(arr), Some(items)) = (v.as_array(), schema.get("items")) {
        for (i, x) in arr.iter().enumerate() {
            check(x, items, &format!("{path}[{i}]"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn backoff_honours_retry_after_and_caps() {
        let c = GatewayConfig {
            backoff_base: Duration::from_millis(100),
            backoff_max: Duration::from_millis(400),
            ..Default::default()
        };
        for attempt in 0..10 {
            let d = backoff(&c, attempt, None);
            assert!(d <= Duration::from_millis(400), "{d:?}");
        }
        assert!(backoff(&c, 0, Some(Duration::from_secs(3))) >= Duration::from_secs(3));
    }

    #[test]
    fn structured_parsing_checks_enums_and_required_fields() {
        let schema = json!({"type": "object", "properties": {"vote": {"type": "string", "enum": ["A", "B"]}}, "required": ["vote"]});
        assert!(parse_structured("```json\n{\"vote\": \"A\"}\n```", &schema).is_ok());
        assert!(parse_structured("{\"vote\": \"C\"}", &schema)
            .unwrap_err()
            .contains("expected one of"));
        assert!(parse_structured("{}", &schema)
            .unwrap_err()
            .contains("missing"));
        assert!(parse_structured("I vote A", &schema)
            .unwrap_err()
            .contains("not JSON"));
    }

    use crate::llm::provider::{EmbedResponse, Provider};
    use crate::llm::types::{ChatRole, Phase, ResponseSchema};
    use futures::future::BoxFuture;
    use std::sync::Mutex;

    /// Answers from a script of outcomes, one per attempt, and records the requests it saw.
    struct Scripted {
        outcomes: Mutex<Vec<Result<ChatResponse, ProviderError>>>,
        seen: Mutex<Vec<ChatRequest>>,
    }

    impl Provider for Scripted {
        fn name(&self) -> &'static str {
            "scripted"
        }
        fn chat<'a>(
            &'a self,
            req: &'a ChatRequest,
        ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
            Box::pin(async move {
                self.seen.lock().expect("lock").push(req.clone());
                self.outcomes.lock().expect("lock").remove(0)
            })
        }
        fn embed<'a>(
            &'a self,
            _m: &'a str,
            _i: &'a [String],
        ) -> BoxFuture<'a, Result<EmbedResponse, ProviderError>> {
            Box::pin(async { Err(ProviderError::Decode("no embeddings here".into())) })
        }
    }

    fn ok(content: &str, usage: Option<TokenUsage>) -> Result<ChatResponse, ProviderError> {
        Ok(ChatResponse {
            content: content.into(),
            usage,
            logprobs: None,
        })
    }

    fn request(schema: Option<Value>) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: vec![
                Message::system("sys"),
                Message::user("Context.\n\nQuestion: who?"),
            ],
            temperature: 0.8,
            top_p: 1.0,
            max_tokens: 50,
            schema: schema.map(|s| ResponseSchema::json("vote", s)),
            logprobs: false,
            sample: 1,
        }
    }

    fn tags() -> CallTags {
        CallTags {
            game: "g".into(),
            agent: "a".into(),
            framework: "f".into(),
            phase: Phase::Gameplay,
            purpose: "vote".into(),
        }
    }

    async fn gateway(
        outcomes: Vec<Result<ChatResponse, ProviderError>>,
    ) -> (Gateway, Arc<Scripted>) {
        let p = Arc::new(Scripted {
            outcomes: Mutex::new(outcomes),
            seen: Mutex::new(Vec::new()),
        });
        let config = GatewayConfig {
            backoff_base: Duration::from_millis(1),
            backoff_max: Duration::from_millis(5),
            ..Default::default()
        };
        (
            Gateway::start(p.clone(), Pricing::default(), config)
                .await
                .expect("gateway starts"),
            p,
        )
    }

    #[tokio::test]
    async fn unparseable_output_is_counted_and_re_asked_with_the_question_last() {
        let u = Some(TokenUsage {
            prompt_tokens: 10,
            completion_tokens: 3,
            cached_tokens: 0,
        });
        let (gw, p) = gateway(vec![ok("I think Ada", u), ok("{\"vote\": \"Ada\"}", u)]).await;
        let schema = json!({"type": "object", "properties": {"vote": {"type": "string", "enum": ["Ada", "Ben"]}}, "required": ["vote"]});
        let out = gw
            .chat(request(Some(schema)), tags())
            .await
            .expect("second attempt parses");
        assert_eq!(out.json, Some(json!({"vote": "Ada"})));
        assert_eq!(
            (
                out.usage.calls,
                out.usage.parse_failures,
                out.usage.prompt_tokens
            ),
            (2, 1, 20)
        );
        let seen = p.seen.lock().expect("lock");
        let rerun = &seen[1].messages;
        assert_eq!(rerun[2].role, ChatRole::Assistant);
        assert_eq!(rerun[2].content, "I think Ada");
        assert!(
            rerun[3].content.ends_with("Question: who?"),
            "{}",
            rerun[3].content
        );
        assert_ne!(seen[0].sample, seen[1].sample, "a rerun samples afresh");
    }

    #[tokio::test]
    async fn transient_errors_are_retried_after_the_servers_wait() {
        let wait = Some(Duration::from_millis(40));
        let (gw, p) = gateway(vec![
            Err(ProviderError::RateLimited { retry_after: wait }),
            Err(ProviderError::Server {
                status: 503,
                retry_after: wait,
            }),
            ok("fine", None),
        ])
        .await;
        let started = std::time::Instant::now();
        let out = gw
            .chat(request(None), tags())
            .await
            .expect("third attempt succeeds");
        assert!(
            started.elapsed() >= Duration::from_millis(80),
            "honoured Retry-After twice: {:?}",
            started.elapsed()
        );
        assert_eq!((out.usage.calls, out.usage.retries), (1, 2));
        // No usage reported: counted locally with tiktoken.
        assert_eq!(out.usage.completion_tokens, tokens::count("fine"));
        assert_eq!(
            out.usage.prompt_tokens,
            tokens::count_messages(&p.seen.lock().expect("lock")[2].messages)
        );
    }

    #[tokio::test]
    async fn refusals_are_not_retried() {
        let (gw, p) = gateway(vec![
            Err(ProviderError::Refused {
                status: 401,
                message: "bad key".into(),
            }),
            ok("never", None),
        ])
        .await;
        let err = gw
            .chat(request(None), tags())
            .await
            .expect_err("401 is final");
        assert!(matches!(err, LlmError::Refused { .. }), "{err:?}");
        assert_eq!(p.seen.lock().expect("lock").len(), 1);
    }
}
