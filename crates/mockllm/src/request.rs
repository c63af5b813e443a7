//! Reading OpenAI request bodies leniently: any JSON the OpenAI API accepts, unknown fields ignored,
//! only what the simulated model needs validated.

use axum::http::StatusCode;
use serde_json::{Map, Value};

use super::dialect::{self, Dialect};
use super::error::ApiError;
use sleuth_llm::{ChatRequest, ChatRole, Message, ResponseSchema};

/// Defaults that a request may leave out, as OpenAI documents them.
const DEFAULT_TEMPERATURE: f32 = 1.0;
const DEFAULT_TOP_P: f32 = 1.0;

/// A chat request as the server reads it.
pub(super) struct ParsedChat {
    pub(super) req: ChatRequest,
    /// The completion limit the dialect read; `None`: none it reads, so the reply runs on.
    pub(super) limit: Option<u32>,
}

/// Maps an OpenAI chat request body to sleuth's [`ChatRequest`], leniently, as `dialect` reads it.
pub(super) fn parse_chat_request(body: &[u8], dialect: Dialect) -> Result<ParsedChat, ApiError> {
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
    let mut messages = obj
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
    let limit = dialect::max_tokens(&obj, dialect)?;
    let format = dialect::response_format(&obj, dialect)?;
    // A schema stated in the prompt is always taken out of it; it is the reply's schema when the
    // request asks for none of its own.
    let stated = dialect::schema_in_prompt(&mut messages);
    let schema = format.or_else(|| stated.map(|s| ResponseSchema::json("response", s)));
    // Negative seeds are legal in OpenAI's API; reinterpret their bits so every seed is a distinct sample.
    let sample = match obj.get("seed") {
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_i64().map(|i| i as u64))
            .unwrap_or(0),
        _ => 0,
    };
    let req = ChatRequest {
        model: model.to_string(),
        messages,
        temperature: float("temperature", DEFAULT_TEMPERATURE),
        top_p: float("top_p", DEFAULT_TOP_P),
        max_tokens: dialect::model_limit(limit),
        schema,
        logprobs: obj
            .get("logprobs")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        sample,
        cache_key: None,
    };
    Ok(ParsedChat { req, limit })
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
        content: content_text(m.get("content")).into(),
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
