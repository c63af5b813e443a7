//! Reading OpenAI request bodies leniently: any JSON the OpenAI API accepts, unknown fields ignored,
//! only what the simulated model needs validated.

use axum::http::StatusCode;
use serde_json::{json, Map, Value};

use super::error::ApiError;
use crate::llm::{ChatRequest, ChatRole, Message, ResponseSchema};

/// Defaults that a request may leave out, as OpenAI documents them.
const DEFAULT_TEMPERATURE: f32 = 1.0;
const DEFAULT_TOP_P: f32 = 1.0;
const DEFAULT_MAX_TOKENS: u32 = 512;

/// Maps an OpenAI chat request body to sleuth's [`ChatRequest`], leniently.
pub(super) fn parse_chat_request(body: &[u8]) -> Result<ChatRequest, ApiError> {
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
        cache_key: None,
    })
}

/// The body as a JSON object, or OpenAI's answer to anything else.
pub(super) fn parse_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
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

/// A model the server answers to, or OpenAI's 404 `model_not_found`.
pub(super) fn check_model(models: &[String], model: &str) -> Result<(), ApiError> {
    if models.iter().any(|m| m == model) {
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
