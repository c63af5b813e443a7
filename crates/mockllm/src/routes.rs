//! The HTTP handlers: each counts the request, meets the faults in order, then answers from the
//! simulated model (chat) or the hashed vectors (embeddings).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::completion::complete;
use super::dialect;
use super::error::ApiError;
use super::request::parse_object;
use super::{MockState, MockStats};
use sleuth_base::text;
use sleuth_llm::tokens;

pub(super) fn router(shared: Arc<MockState>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/embeddings", post(embeddings))
        .route("/v1/models", get(list_models))
        .route("/v1/files", post(super::batches::upload))
        .route(
            "/v1/files/{id}",
            get(super::batches::file).delete(super::batches::delete_file),
        )
        .route("/v1/files/{id}/content", get(super::batches::content))
        .route(
            "/v1/batches",
            post(super::batches::create).get(super::batches::list),
        )
        .route("/v1/batches/{id}", get(super::batches::retrieve))
        .route("/v1/batches/{id}/cancel", post(super::batches::cancel))
        .route("/stats", get(stats))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(super::BODY_LIMIT))
        .with_state(shared)
}

async fn chat_completions(
    State(shared): State<Arc<MockState>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    shared.counters.requests.fetch_add(1, Ordering::Relaxed);
    let _permit = shared.admit_then_delay().await?;
    let body = body.map_err(ApiError::from_body_rejection)?;
    let (answer, usage) = complete(&shared, &body)?;
    let c = &shared.counters;
    c.ok.fetch_add(1, Ordering::Relaxed);
    c.prompt_tokens
        .fetch_add(usage.prompt_tokens, Ordering::Relaxed);
    c.completion_tokens
        .fetch_add(usage.completion_tokens, Ordering::Relaxed);
    Ok(Json(answer))
}

async fn embeddings(
    State(shared): State<Arc<MockState>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    shared.counters.requests.fetch_add(1, Ordering::Relaxed);
    let _permit = shared.admit_then_delay().await?;
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
    // OpenAI's `dimensions` (text-embedding-3-*) shortens the vectors; without it the server's
    // configured size.
    let dims = match obj.get("dimensions") {
        None | Some(Value::Null) => shared.config.embedding_dims,
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| (1..=super::MAX_EMBEDDING_DIMS).contains(n))
            .ok_or_else(|| {
                ApiError::invalid(
                    format!(
                        "'dimensions' must be an integer between 1 and {}",
                        super::MAX_EMBEDDING_DIMS
                    ),
                    Some("dimensions"),
                )
            })?,
    };
    if inputs.len() > super::MAX_EMBEDDING_INPUTS {
        return Err(ApiError::invalid(
            format!(
                "at most {} inputs per request, got {}",
                super::MAX_EMBEDDING_INPUTS,
                inputs.len()
            ),
            Some("input"),
        ));
    }
    if inputs.len().saturating_mul(dims) > super::MAX_EMBEDDING_VALUES {
        return Err(ApiError::invalid(
            format!(
                "{} inputs of {dims} dimensions are {} numbers; the mock answers at most {} per request",
                inputs.len(),
                inputs.len().saturating_mul(dims),
                super::MAX_EMBEDDING_VALUES
            ),
            Some("input"),
        ));
    }
    // Any model name is accepted: hashed vectors are the only embeddings there are.
    let model = obj
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("sleuth-hashing");

    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, input)| {
            let v = text::hashed_vector(input, dims);
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

async fn list_models(State(shared): State<Arc<MockState>>) -> Json<Value> {
    let data: Vec<Value> = shared
        .config
        .models
        .iter()
        .map(|id| {
            let mut m = json!({"id": id, "object": "model", "created": 0, "owned_by": "sleuth"});
            // A window is reported as vLLM reports it, so a client can learn it from the listing;
            // llama.cpp's Python server reports none, and neither does the mock in its dialect.
            if let (Some(w), false) = (
                shared.config.context_window,
                matches!(shared.config.dialect, dialect::Dialect::LlamaCpp),
            ) {
                m["max_model_len"] = json!(w);
            }
            m
        })
        .collect();
    Json(json!({"object": "list", "data": data}))
}

/// Sleuth's own endpoint (not part of OpenAI's API): the totals so far.
async fn stats(State(shared): State<Arc<MockState>>) -> Json<MockStats> {
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

/// Standard base64 (with padding) of the vector's little-endian f32 bytes: OpenAI's `base64` encoding.
/// Written out here rather than adding a dependency for twenty lines.
pub(super) fn base64_f32_le(v: &[f32]) -> String {
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

    #[test]
    fn base64_matches_the_standard_encoding() {
        // 1.0f32 is 00 00 80 3f little-endian.
        assert_eq!(base64_f32_le(&[1.0]), "AACAPw==");
        assert_eq!(base64_f32_le(&[1.0, 1.0, 1.0]), "AACAPwAAgD8AAIA/");
        assert_eq!(base64_f32_le(&[]), "");
    }
}
