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
use super::types::{
    CallTags, ChatRequest, ChatResponse, Message, OutputStyle, ResponseSchema, TokenUsage, Usage,
};
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
        match parse_reply(&response.content, schema) {
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
                req.messages = match schema.style {
                    OutputStyle::Json => {
                        rerun_messages(&original_messages, &response.content, &reason)
                    }
                    OutputStyle::Sections => rerun_sections_messages(
                        &original_messages,
                        &response.content,
                        &reason,
                        &schema.schema,
                    ),
                };
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

/// The Sections re-ask. Asking for "only a JSON object" would contradict the format the prompt asked
/// for, so the re-ask restates the two sections: the bad output and what was wrong, then the original
/// question paragraph and the original format paragraph (in the prompt's own language), so that the
/// question stays last but one and the format, with its schema line, last. A prompt without a format
/// paragraph gets one written here from the schema.
fn rerun_sections_messages(
    original: &[Message],
    bad: &str,
    reason: &str,
    schema: &Value,
) -> Vec<Message> {
    let last_user = original
        .iter()
        .rev()
        .find(|m| m.role == super::types::ChatRole::User)
        .map(|m| m.content.as_str())
        .unwrap_or("");
    let paragraphs: Vec<&str> = last_user
        .split("\n\n")
        .filter(|p| !p.trim().is_empty())
        .collect();
    let is_format = |p: &&str| {
        p.lines()
            .any(|l| l.trim_start().starts_with(SECTIONS_SCHEMA_MARKER))
    };
    let format = paragraphs
        .iter()
        .rev()
        .find(|p| is_format(p))
        .map(|p| p.to_string())
        .unwrap_or_else(|| default_sections_format(schema));
    let question = paragraphs
        .iter()
        .rev()
        .find(|p| !is_format(p))
        .copied()
        .unwrap_or("");
    let mut msgs = original.to_vec();
    msgs.push(Message {
        role: super::types::ChatRole::Assistant,
        content: bad.to_string(),
    });
    msgs.push(Message::user(format!(
        "### Instructions\nYour previous reply could not be used ({reason}). Reply again in exactly two sections: `### THOUGHT:` with your reasoning, then `### RESPONSE:` with nothing but the response the format below asks for.\n\n{question}\n\n{format}"
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

/// Parses a structured reply in the style its schema asks for.
fn parse_reply(content: &str, schema: &ResponseSchema) -> Result<Value, String> {
    match schema.style {
        OutputStyle::Json => parse_structured(content, &schema.schema),
        OutputStyle::Sections => parse_sections(content, &schema.schema),
    }
}

/// The fixed marker of the line that carries the RESPONSE's JSON schema in a Sections prompt. It is
/// ASCII and the same in every language, so that a model served over HTTP (where no schema travels with
/// the request) can still find the schema — the simulated model reads it — and so that the re-ask can
/// find the format paragraph it must restate.
pub const SECTIONS_SCHEMA_MARKER: &str = "RESPONSE JSON schema:";

/// The schema line a Sections prompt ends with: the marker, then the schema as one line of JSON.
pub fn sections_schema_line(schema: &Value) -> String {
    format!("{SECTIONS_SCHEMA_MARKER} {schema}")
}

/// A format paragraph in English, for prompts that carry none.
fn default_sections_format(schema: &Value) -> String {
    let what = if schema_type(schema) == "string" {
        "the text itself"
    } else {
        "one JSON object that follows the schema below"
    };
    format!(
        "### Reply format\nWrite `### THOUGHT:` followed by your reasoning, then `### RESPONSE:` followed by {what}.\n{}",
        sections_schema_line(schema)
    )
}

fn schema_type(schema: &Value) -> &str {
    schema.get("type").and_then(|t| t.as_str()).unwrap_or("")
}

/// A reply split into its two sections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sections {
    /// The reasoning; empty when the reply has no THOUGHT header.
    pub thought: String,
    /// Everything after the RESPONSE header.
    pub response: String,
}

/// Finds the headers of a `### THOUGHT:` / `### RESPONSE:` reply. Lenient in what models actually write:
/// any number of `#`, bold markers, any letter case, an ASCII or a full-width colon (Chinese replies use
/// `：`), and both sections on one line (the paper's own example). A word "response" inside the thought is
/// not a header: a header is at a line start or after `#`/`*`, and is followed by a colon.
pub fn split_sections(content: &str) -> Result<Sections, String> {
    let response = find_header(content, "response")
        .ok_or_else(|| "the reply has no `### RESPONSE:` section".to_string())?;
    let body = content[response.1..].trim();
    let thought = match find_header(&content[..response.0], "thought") {
        Some((_, end)) => content[end..response.0].trim(),
        None => "",
    };
    Ok(Sections {
        thought: thought.to_string(),
        response: body.to_string(),
    })
}

/// `(start, end)` of the first header `word` in `content`: start of its leading markup, end after the
/// colon.
fn find_header(content: &str, word: &str) -> Option<(usize, usize)> {
    let lower = content.to_lowercase();
    // Lower-casing can change byte lengths outside ASCII; fall back to an exact-case search then.
    let hay = if lower.len() == content.len() {
        lower.as_str()
    } else {
        content
    };
    let mut from = 0;
    while let Some(rel) = find_word(&hay[from..], word) {
        let at = from + rel;
        from = at + word.len();
        let before = &content[..at];
        let prefix = before.trim_end_matches([' ', '*', '\t']);
        let marked = prefix.ends_with('#');
        let line_start = prefix.is_empty() || prefix.ends_with('\n');
        if !(marked || line_start) {
            continue;
        }
        let after = &content[at + word.len()..];
        let rest = after.trim_start_matches([' ', '*', '\t']);
        let colon = if rest.starts_with(':') {
            1
        } else if rest.starts_with('：') {
            '：'.len_utf8()
        } else {
            continue;
        };
        let end = content.len() - rest.len() + colon;
        // Include trailing bold markers after the colon (`**RESPONSE:**`).
        let end = end + content[end..].len() - content[end..].trim_start_matches('*').len();
        let start = prefix.trim_end_matches('#').len();
        return Some((start, end));
    }
    None
}

/// Case-insensitive search of an ASCII word, in a haystack already lower-cased when possible.
fn find_word(hay: &str, word: &str) -> Option<usize> {
    hay.find(word)
        .or_else(|| hay.find(word.to_uppercase().as_str()))
}

/// Parses a Sections reply: the RESPONSE section is the value, checked against `schema`. A string
/// schema takes the section's text as it is (a speech, an answer, a summary); any other schema wants
/// JSON, tolerating a code fence and text around the object. Numeric bounds are checked too: nothing
/// but the prompt enforces this format, so the gateway checks all that agents rely on.
pub fn parse_sections(content: &str, schema: &Value) -> Result<Value, String> {
    let sections = split_sections(content)?;
    let body = sections.response.as_str();
    if body.is_empty() {
        return Err("the RESPONSE section is empty".into());
    }
    if schema_type(schema) == "string" {
        return Ok(Value::String(body.to_string()));
    }
    let v = match parse_structured(body, schema) {
        Ok(v) => v,
        Err(first) => {
            let (Some(a), Some(b)) = (body.find('{'), body.rfind('}')) else {
                return Err(format!("RESPONSE is {first}"));
            };
            if b < a {
                return Err(format!("RESPONSE is {first}"));
            }
            parse_structured(&body[a..=b], schema).map_err(|e| format!("RESPONSE: {e}"))?
        }
    };
    check_bounds(&v, schema, "$").map_err(|e| format!("RESPONSE: {e}"))?;
    Ok(v)
}

/// `minimum`/`maximum` of numeric fields, recursively through objects and arrays.
fn check_bounds(v: &Value, schema: &Value, path: &str) -> Result<(), String> {
    if let Some(x) = v.as_f64() {
        if let Some(lo) = schema.get("minimum").and_then(Value::as_f64) {
            if x < lo {
                return Err(format!("{path} is {x}, below the minimum {lo}"));
            }
        }
        if let Some(hi) = schema.get("maximum").and_then(Value::as_f64) {
            if x > hi {
                return Err(format!("{path} is {x}, above the maximum {hi}"));
            }
        }
    }
    if let (Some(obj), Some(props)) = (
        v.as_object(),
        schema.get("properties").and_then(|p| p.as_object()),
    ) {
        for (k, sub) in props {
            if let Some(x) = obj.get(k) {
                check_bounds(x, sub, &format!("{path}.{k}"))?;
            }
        }
    }
    if let (Some(arr), Some(items)) = (v.as_array(), schema.get("items")) {
        for (i, x) in arr.iter().enumerate() {
            check_bounds(x, items, &format!("{path}[{i}]"))?;
        }
    }
    Ok(())
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

    fn vote_schema() -> Value {
        json!({"type": "object", "properties": {"vote": {"type": "string", "enum": ["Ada", "Ben"]}, "confidence": {"type": "integer", "minimum": 0, "maximum": 2}}, "required": ["vote"]})
    }

    #[test]
    fn sections_are_parsed_into_the_response_value() {
        let reply = "### THOUGHT: Ada lied about 10 pm.\n### RESPONSE: {\"vote\": \"Ada\", \"confidence\": 2}";
        assert_eq!(
            parse_sections(reply, &vote_schema()),
            Ok(json!({"vote": "Ada", "confidence": 2}))
        );
        let s = split_sections(reply).expect("splits");
        assert_eq!(s.thought, "Ada lied about 10 pm.");
        // The paper's one-line example, bold headers, lower case and a fenced, commented object.
        let one_line = "### THOUGHT: hmm ### RESPONSE: {\"vote\": \"Ben\"}";
        assert_eq!(
            parse_sections(one_line, &vote_schema()),
            Ok(json!({"vote": "Ben"}))
        );
        let fenced = "**Thought:** the response of Ben was odd\n**Response:**\n```json\n{\"vote\": \"Ben\"}\n```\nThat is my vote.";
        assert_eq!(
            parse_sections(fenced, &vote_schema()),
            Ok(json!({"vote": "Ben"}))
        );
        assert_eq!(
            split_sections(fenced).expect("splits").thought,
            "the response of Ben was odd"
        );
        // A string schema takes the text as it is.
        let speech = "### THOUGHT: be brief\n### RESPONSE: I was on deck at ten.";
        assert_eq!(
            parse_sections(speech, &json!({"type": "string"})),
            Ok(json!("I was on deck at ten."))
        );
    }

    #[test]
    fn sections_without_a_response_or_against_the_schema_are_refused() {
        let no_response = "### THOUGHT: I think it is Ada. {\"vote\": \"Ada\"}";
        assert!(parse_sections(no_response, &vote_schema())
            .expect_err("no RESPONSE")
            .contains("RESPONSE"));
        let bad_enum = "### THOUGHT: x\n### RESPONSE: {\"vote\": \"Cy\"}";
        assert!(parse_sections(bad_enum, &vote_schema())
            .expect_err("not an option")
            .contains("expected one of"));
        let missing = "### THOUGHT: x\n### RESPONSE: {\"confidence\": 1}";
        assert!(parse_sections(missing, &vote_schema())
            .expect_err("vote missing")
            .contains("missing"));
        let out_of_range = "### THOUGHT: x\n### RESPONSE: {\"vote\": \"Ada\", \"confidence\": 7}";
        assert!(parse_sections(out_of_range, &vote_schema())
            .expect_err("above the maximum")
            .contains("maximum"));
        let not_json = "### THOUGHT: x\n### RESPONSE: Ada, obviously";
        assert!(parse_sections(not_json, &vote_schema())
            .expect_err("not JSON")
            .contains("not JSON"));
        let empty = "### THOUGHT: x\n### RESPONSE:   ";
        assert!(parse_sections(empty, &json!({"type": "string"})).is_err());
    }

    #[test]
    fn sections_accept_the_full_width_colon() {
        let reply = "### THOUGHT：阿达在十点说了谎。\n### RESPONSE：{\"vote\": \"Ada\"}";
        assert_eq!(
            parse_sections(reply, &vote_schema()),
            Ok(json!({"vote": "Ada"}))
        );
        assert_eq!(
            split_sections(reply).expect("splits").thought,
            "阿达在十点说了谎。"
        );
        let zh = "### 思考：无\n### RESPONSE： 我十点在甲板上。";
        assert_eq!(
            parse_sections(zh, &json!({"type": "string"})),
            Ok(json!("我十点在甲板上。"))
        );
    }

    #[tokio::test]
    async fn unparseable_sections_are_re_asked_in_the_section_format() {
        let (gw, p) = gateway(vec![
            ok("{\"vote\": \"Ada\"}", None),
            ok("### THOUGHT: fine\n### RESPONSE: {\"vote\": \"Ada\"}", None),
        ])
        .await;
        let schema = vote_schema();
        let mut req = request(None);
        let format = format!(
            "### Reply format\nTwo sections, please.\n{}",
            sections_schema_line(&schema)
        );
        req.messages[1].content = format!("Context.\n\nQuestion: who?\n\n{format}");
        req.schema = Some(ResponseSchema::sections("vote", schema));
        let out = gw.chat(req, tags()).await.expect("the rerun parses");
        assert_eq!(out.json, Some(json!({"vote": "Ada"})));
        assert_eq!(out.usage.parse_failures, 1);
        let seen = p.seen.lock().expect("lock");
        let rerun = &seen[1].messages[3].content;
        assert!(rerun.contains("### RESPONSE:"), "{rerun}");
        assert!(!rerun.contains("only a JSON object"), "{rerun}");
        assert!(
            rerun.ends_with(&format),
            "the format paragraph comes last: {rerun}"
        );
        assert!(
            rerun.contains("Question: who?\n\n### Reply format"),
            "{rerun}"
        );
    }

    #[test]
    fn a_sections_re_ask_without_a_format_paragraph_writes_one() {
        let schema = vote_schema();
        let msgs = rerun_sections_messages(
            &[Message::user("Context.\n\nQuestion: who?")],
            "Ada",
            "no RESPONSE",
            &schema,
        );
        let last = &msgs[2].content;
        assert!(
            last.contains("Question: who?\n\n### Reply format"),
            "{last}"
        );
        assert!(last.ends_with(&sections_schema_line(&schema)), "{last}");
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
