//! What sleuth needs of a provider's batch interface, and the files it exchanges with it.
//!
//! The interface is OpenAI's Batch API (`/v1/files` and `/v1/batches`), which vLLM, Azure and
//! several hosts copy; [`BatchEndpoint`] is the part of it sleuth uses, implemented over async-openai
//! in `llm/openai/batch.rs` (and served by `sleuth mock-llm` for tests). The files are JSON Lines:
//! one request per line in, one result per line out, tied together by `custom_id` — here the call's
//! cache key, so an answer lands in the cache under the key a live call would have used.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use super::error::ProviderError;

/// The metadata key naming sleuth's own id of a batch.
pub const BATCH_TAG: &str = "sleuth_batch";

/// The endpoint every line of sleuth's batches goes to.
pub const CHAT_URL: &str = "/v1/chat/completions";

/// A batch as the provider reports it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RemoteBatch {
    pub id: String,
    /// `validating`, `in_progress`, `finalizing`, `completed`, `failed`, `expired`, `cancelling`,
    /// `cancelled`.
    pub status: String,
    pub output_file_id: Option<String>,
    pub error_file_id: Option<String>,
    pub metadata: BTreeMap<String, String>,
    /// What the provider said about a batch that failed as a whole (validation errors).
    pub errors: Option<String>,
}

impl RemoteBatch {
    /// Whether the provider is done with it (its files, if any, are final).
    pub fn is_over(&self) -> bool {
        matches!(
            self.status.as_str(),
            "completed" | "failed" | "expired" | "cancelled"
        )
    }

    /// Reads a batch object leniently (unknown fields ignored, metadata values as strings).
    pub fn from_json(v: &Value) -> Option<RemoteBatch> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let metadata = v
            .get("metadata")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                        (k.clone(), v)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let errors = v
            .get("errors")
            .and_then(|e| e.get("data"))
            .and_then(Value::as_array)
            .map(|d| {
                d.iter()
                    .filter_map(|e| e.get("message").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .filter(|s| !s.is_empty());
        Some(RemoteBatch {
            id: s("id")?,
            status: s("status")?,
            output_file_id: s("output_file_id"),
            error_file_id: s("error_file_id"),
            metadata,
            errors,
        })
    }
}

/// The part of a provider's batch interface sleuth uses. Every call is one HTTP request, not retried
/// here: the batch worker polls again on its next round.
pub trait BatchEndpoint: Send + Sync {
    /// Uploads a JSONL file of requests (purpose `batch`); returns the file's id.
    fn upload<'a>(
        &'a self,
        name: String,
        jsonl: Vec<u8>,
    ) -> BoxFuture<'a, Result<String, ProviderError>>;
    /// Creates a batch of the file's requests, to finish within 24 hours.
    fn create<'a>(
        &'a self,
        input_file: &'a str,
        metadata: BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<RemoteBatch, ProviderError>>;
    /// A batch's current state.
    fn retrieve<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<RemoteBatch, ProviderError>>;
    /// Recent batches (the newest few hundred), to find one whose creation a killed run never
    /// heard back from.
    fn list(&self) -> BoxFuture<'_, Result<Vec<RemoteBatch>, ProviderError>>;
    /// A file's content (an output or error file).
    fn content<'a>(&'a self, file_id: &'a str) -> BoxFuture<'a, Result<Vec<u8>, ProviderError>>;
}

/// One line of an input file: the request `body` (JSON text, as built for a live call) to `url`,
/// named by `custom_id`.
pub fn input_line(custom_id: &str, body: &str) -> String {
    // The body is already JSON; only the id needs quoting.
    let id = Value::String(custom_id.to_string());
    format!(r#"{{"custom_id":{id},"method":"POST","url":"{CHAT_URL}","body":{body}}}"#)
}

/// What one line of an output or error file says about one request.
#[derive(Debug, Clone, PartialEq)]
pub enum LineOutcome {
    /// The endpoint's answer (a chat completion body).
    Answer(Value),
    /// The request failed inside the batch, with the provider's reason.
    Failed(String),
}

#[derive(Deserialize)]
struct OutputLine {
    custom_id: String,
    #[serde(default)]
    response: Option<OutputResponse>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct OutputResponse {
    status_code: u16,
    #[serde(default)]
    body: Value,
}

fn message_of(v: &Value) -> String {
    v.get("message")
        .and_then(Value::as_str)
        .or_else(|| v.pointer("/error/message").and_then(Value::as_str))
        .map_or_else(|| v.to_string(), str::to_string)
}

/// Reads an output or error file: each line's `custom_id` and what became of it. A line that is not
/// JSON, or names no request, is skipped and counted in the second value (its request stays
/// unanswered and is handled as a failure of the batch).
pub fn read_output(bytes: &[u8]) -> (Vec<(String, LineOutcome)>, usize) {
    let mut out = Vec::new();
    let mut unreadable = 0;
    for line in bytes.split(|b| *b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(l) = serde_json::from_slice::<OutputLine>(line) else {
            unreadable += 1;
            continue;
        };
        let outcome = match (l.response, l.error) {
            (_, Some(e)) if !e.is_null() => LineOutcome::Failed(message_of(&e)),
            (Some(r), _) if (200..300).contains(&r.status_code) => LineOutcome::Answer(r.body),
            (Some(r), _) => {
                LineOutcome::Failed(format!("HTTP {}: {}", r.status_code, message_of(&r.body)))
            }
            (None, _) => LineOutcome::Failed("no response and no error".into()),
        };
        out.push((l.custom_id, outcome));
    }
    (out, unreadable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_line_is_openai_batch_format() {
        let line = input_line("k\"1", r#"{"model":"m","messages":[]}"#);
        let v: Value = serde_json::from_str(&line).expect("json");
        assert_eq!(v["custom_id"], "k\"1");
        assert_eq!(v["method"], "POST");
        assert_eq!(v["url"], CHAT_URL);
        assert_eq!(v["body"]["model"], "m");
    }

    #[test]
    fn output_and_error_lines_are_told_apart() {
        let file = concat!(
            r#"{"id":"r1","custom_id":"a","response":{"status_code":200,"body":{"choices":[]}},"error":null}"#,
            "\n",
            r#"{"id":"r2","custom_id":"b","response":{"status_code":500,"body":{"error":{"message":"boom"}}},"error":null}"#,
            "\n",
            r#"{"id":"r3","custom_id":"c","response":null,"error":{"code":"batch_expired","message":"This request could not be executed before the completion window expired."}}"#,
            "\nnot json\n"
        );
        let (lines, bad) = read_output(file.as_bytes());
        assert_eq!(bad, 1);
        assert_eq!(
            lines[0],
            (
                "a".into(),
                LineOutcome::Answer(serde_json::json!({"choices": []}))
            )
        );
        assert_eq!(
            lines[1],
            ("b".into(), LineOutcome::Failed("HTTP 500: boom".into()))
        );
        assert!(
            matches!(&lines[2], (k, LineOutcome::Failed(m)) if k == "c" && m.contains("expired"))
        );
    }

    #[test]
    fn a_batch_object_is_read_leniently() {
        let v = serde_json::json!({
            "id": "batch_1", "object": "batch", "status": "failed", "extra": 1,
            "metadata": {"sleuth_batch": "b-1"},
            "errors": {"data": [{"code": "invalid", "message": "line 3 is bad"}]}
        });
        let b = RemoteBatch::from_json(&v).expect("a batch");
        assert_eq!(b.metadata.get(BATCH_TAG).map(String::as_str), Some("b-1"));
        assert_eq!(b.errors.as_deref(), Some("line 3 is bad"));
        assert!(b.is_over());
    }
}
