//! Behaving like another OpenAI-compatible server, so that sleuth's handling of servers that differ is
//! tested over HTTP without a real model (`--dialect`), and a context window (`--context-window`).
//!
//! [`Dialect::LlamaCpp`] is what llama.cpp's Python server (llama-cpp-python 0.3.16, SmolLM2) did with
//! what sleuth sends, as measured against it:
//! - `response_format` may only be `text` or `json_object` (whose `schema` field, if any, constrains
//!   the reply); anything else — `json_schema` — is answered with HTTP 500 and pydantic's validation
//!   message naming `response_format` (`1 validation error: {'type': 'literal_error', 'loc': ('body',
//!   'response_format', 'type'), 'msg': "Input should be 'text' or 'json_object'", …}`);
//! - the completion limit is `max_tokens` only: `max_completion_tokens` is ignored, and a request
//!   without `max_tokens` generates to the end of the context (measured: 473 tokens in 23 s with a
//!   512-token context, against 5 tokens in 0.1 s with `max_tokens`) — here, a free-text reply padded
//!   to [`UNBOUNDED_REPLY_TOKENS`];
//! - a prompt that does not fit the context window is answered with HTTP 400 and OpenAI's
//!   `context_length_exceeded` message, as OpenAI does.
//!
//! In every dialect, a schema stated in the prompt's last paragraph (the line
//! [`sleuth_llm::PROMPT_SCHEMA_MARKER`], which sleuth writes when it cannot use `json_schema`) is
//! read as the reply's schema and the paragraph removed before the simulated model reads the prompt,
//! the way the Sections schema line is: so the answers are the same whichever way the schema travels.

use std::str::FromStr;
use std::sync::atomic::Ordering;

use axum::http::StatusCode;
use serde_json::{json, Map, Value};

use super::error::ApiError;
use super::MockState;
use sleuth_llm::PROMPT_SCHEMA_MARKER;
use sleuth_llm::{tokens, ChatRequest, ChatResponse, ChatRole, Message, ResponseSchema};

/// Which server the mock behaves like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// OpenAI's API: `json_schema`, either limit field.
    #[default]
    OpenAi,
    /// llama.cpp's Python server (see the module documentation).
    LlamaCpp,
    /// OpenAI's reasoning models: `max_tokens` refused with HTTP 400 ("Unsupported parameter …
    /// Use 'max_completion_tokens' instead."), otherwise OpenAI's API.
    OpenAiReasoning,
}

impl FromStr for Dialect {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "openai" => Ok(Dialect::OpenAi),
            "llama-cpp" => Ok(Dialect::LlamaCpp),
            "openai-reasoning" => Ok(Dialect::OpenAiReasoning),
            other => Err(format!(
                "unknown dialect `{other}` (expected openai, openai-reasoning or llama-cpp)"
            )),
        }
    }
}

/// How long a reply runs when nothing limits it: the end of a small model's context.
pub const UNBOUNDED_REPLY_TOKENS: u64 = 2048;

/// The limit used when a request sends none the dialect reads, for the answer itself (the padding
/// comes after).
const DEFAULT_MAX_TOKENS: u32 = 512;

/// The schema `response_format` asks for, or the dialect's refusal of it.
pub(super) fn response_format(
    obj: &Map<String, Value>,
    dialect: Dialect,
) -> Result<Option<ResponseSchema>, ApiError> {
    let Some(rf) = obj.get("response_format") else {
        return Ok(None);
    };
    let kind = rf.get("type").and_then(Value::as_str).unwrap_or("");
    match (dialect, kind) {
        (Dialect::OpenAi | Dialect::OpenAiReasoning, "json_schema") => {
            let js = rf.get("json_schema");
            let name = js
                .and_then(|j| j.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("response");
            // OpenAI allows the schema to be omitted; an empty object schema then yields `{}`.
            let schema = js
                .and_then(|j| j.get("schema"))
                .cloned()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
            Ok(Some(ResponseSchema::json(name, schema)))
        }
        (_, "json_object") => Ok(rf
            .get("schema")
            .filter(|s| s.is_object())
            .map(|s| ResponseSchema::json("response", s.clone()))),
        (Dialect::LlamaCpp, "text") | (Dialect::OpenAi | Dialect::OpenAiReasoning, _) => Ok(None),
        (Dialect::LlamaCpp, other) => Err(ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: "internal_server_error",
            message: format!(
                "1 validation error:\n  {{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': '{other}', 'ctx': {{'expected': \"'text' or 'json_object'\"}}}}\n\n    POST /v1/chat/completions"
            ),
            param: None,
            code: None,
            retry_after_ms: None,
        }),
    }
}

/// The completion limit the dialect reads: OpenAI's either field, llama.cpp's `max_tokens` only.
/// `None`: the request sets no limit this server reads, and it generates to the end of the context.
/// A reasoning model refuses `max_tokens` in OpenAI's words.
pub(super) fn max_tokens(
    obj: &Map<String, Value>,
    dialect: Dialect,
) -> Result<Option<u32>, ApiError> {
    let field = |k: &str| {
        obj.get(k)
            .and_then(Value::as_u64)
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
    };
    if dialect == Dialect::OpenAiReasoning && obj.contains_key("max_tokens") {
        return Err(ApiError {
            code: Some("unsupported_parameter"),
            ..ApiError::invalid(
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
                Some("max_tokens"),
            )
        });
    }
    Ok(match dialect {
        Dialect::OpenAi | Dialect::OpenAiReasoning => Some(
            field("max_completion_tokens")
                .or_else(|| field("max_tokens"))
                .unwrap_or(DEFAULT_MAX_TOKENS),
        ),
        Dialect::LlamaCpp => field("max_tokens"),
    })
}

/// The limit the simulated model is given for a request the dialect reads `limit` from.
pub(super) fn model_limit(limit: Option<u32>) -> u32 {
    limit.unwrap_or(DEFAULT_MAX_TOKENS)
}

/// Takes a schema stated in the last user message's last paragraph out of the prompt: the
/// paragraph is removed (exactly as sleuth appended it, so the prompt the model reads is the one it
/// would have read with `json_schema`) and its schema returned.
pub(super) fn schema_in_prompt(messages: &mut [Message]) -> Option<Value> {
    let last = messages
        .iter_mut()
        .rev()
        .find(|m| m.role == ChatRole::User)?;
    let (head, paragraph) = match last.content.rsplit_once("\n\n") {
        Some((h, p)) => (h, p),
        None => ("", &*last.content),
    };
    let line = paragraph
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(PROMPT_SCHEMA_MARKER))?;
    let schema = serde_json::from_str::<Value>(line.trim()).ok()?;
    last.content = head.into();
    Some(schema)
}

/// A free-text reply generated to the end of the context: the answer, then filler up to
/// [`UNBOUNDED_REPLY_TOKENS`], with the usage to match. A JSON reply is left alone (a grammar ends
/// it when the object closes).
pub(super) fn run_on(req: &ChatRequest, mut resp: ChatResponse) -> ChatResponse {
    if req.schema.is_some() {
        return resp;
    }
    const FILLER: &str =
        " And then the talk went on, round and round, about nothing in particular.";
    let per = tokens::count(FILLER).max(1);
    let have = tokens::count(&resp.content);
    let n = UNBOUNDED_REPLY_TOKENS.saturating_sub(have).div_ceil(per);
    resp.content
        .push_str(&FILLER.repeat(usize::try_from(n).unwrap_or(0)));
    if let Some(u) = resp.usage.as_mut() {
        u.completion_tokens = tokens::count(&resp.content);
    }
    resp.logprobs = None;
    resp
}

impl MockState {
    /// The context window: a request whose prompt and completion limit do not fit is refused with
    /// HTTP 400 and OpenAI's `context_length_exceeded` message (llama-cpp-python answers the same).
    /// Counted as refused. `count` gives the prompt's tokens (the tokenizer's count, or the cheap
    /// replies' estimate from bytes).
    pub(super) fn check_context(
        &self,
        req: &ChatRequest,
        limit: Option<u32>,
        count: fn(&[Message]) -> u64,
    ) -> Result<(), ApiError> {
        let Some(window) = self.config.context_window else {
            return Ok(());
        };
        let prompt = count(&req.messages);
        let completion = u64::from(limit.unwrap_or(0));
        self.counters
            .max_request_tokens
            .fetch_max(prompt + completion, Ordering::Relaxed);
        if prompt + completion <= window {
            return Ok(());
        }
        self.counters.refused.fetch_add(1, Ordering::Relaxed);
        Err(ApiError {
            code: Some("context_length_exceeded"),
            ..ApiError::invalid(
                format!(
                    "This model's maximum context length is {window} tokens. However, you requested {} tokens ({prompt} in the messages, {completion} in the completion). Please reduce the length of the messages or completion.",
                    prompt + completion
                ),
                Some("messages"),
            )
        })
    }

    /// Counts a request the dialect refused (its `response_format`).
    pub(super) fn count_refused(&self) {
        self.counters.refused.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sleuth_llm::prompt_schema_paragraph;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn llama_cpp_refuses_json_schema_and_takes_json_object_with_its_schema() {
        let schema = json!({"type": "object", "properties": {"vote": {"type": "string"}}});
        let js = obj(
            json!({"response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": schema}}}),
        );
        let e = response_format(&js, Dialect::LlamaCpp).unwrap_err();
        assert_eq!(e.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(e.message.contains("response_format"), "{}", e.message);
        assert!(response_format(&js, Dialect::OpenAi).unwrap().is_some());
        let jo = obj(json!({"response_format": {"type": "json_object", "schema": schema}}));
        for d in [Dialect::LlamaCpp, Dialect::OpenAi] {
            assert_eq!(
                response_format(&jo, d).unwrap().unwrap().schema.as_ref(),
                &schema
            );
        }
    }

    #[test]
    fn llama_cpp_reads_only_max_tokens() {
        let both = obj(json!({"max_tokens": 30, "max_completion_tokens": 40}));
        assert_eq!(max_tokens(&both, Dialect::LlamaCpp).unwrap(), Some(30));
        assert_eq!(max_tokens(&both, Dialect::OpenAi).unwrap(), Some(40));
        let new = obj(json!({"max_completion_tokens": 40}));
        assert_eq!(max_tokens(&new, Dialect::LlamaCpp).unwrap(), None);
        assert_eq!(
            max_tokens(&new, Dialect::OpenAiReasoning).unwrap(),
            Some(40)
        );
        let e = max_tokens(&both, Dialect::OpenAiReasoning).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
    }

    #[test]
    fn a_schema_in_the_prompt_is_read_and_removed_exactly() {
        let schema = json!({"type": "object", "properties": {"vote": {"type": "string"}}});
        for original in ["Context.\n\nWho?", "Context.\n\nWho?\n", "Who?"] {
            let sent = format!("{original}\n\n{}", prompt_schema_paragraph(&schema));
            let mut msgs = vec![Message::system("sys"), Message::user(sent)];
            assert_eq!(schema_in_prompt(&mut msgs), Some(schema.clone()));
            assert_eq!(&*msgs[1].content, original);
        }
        let mut plain = vec![Message::user("Context.\n\nWho?")];
        assert_eq!(schema_in_prompt(&mut plain), None);
        assert_eq!(&*plain[0].content, "Context.\n\nWho?");
    }
}
