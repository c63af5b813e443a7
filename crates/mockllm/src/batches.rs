//! OpenAI's Batch API on the mock: `/v1/files` (upload, metadata, content) and `/v1/batches`
//! (create, retrieve, list, cancel), so sleuth's batch evaluation runs its whole path over HTTP.
//!
//! A batch is `in_progress` until `batch_delay` has passed since its creation; the first retrieve
//! after that answers every line with the simulated model (the same answers as live requests) and
//! writes the output and error files. Faults, for the tests of what sleuth does with them:
//! `batch_failure_rate` fails lines at random (seeded) with a 500 in the error file, and the first
//! `batch_expire_first` batches expire with only their first half answered, the rest in the error
//! file as `batch_expired` — as OpenAI reports both. `/stats` counts batches, lines answered and
//! failed, and any line answered twice under one `custom_id` across batches (a resubmission).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Multipart, Path, State};
use axum::http::StatusCode;
use axum::Json;
use rand::Rng;
use serde_json::{json, Value};

use super::completion::{complete, unix_now};
use super::error::ApiError;
use super::MockState;

/// The most bytes of files the mock holds at once by default (`MockConfig::max_stored_bytes`; uploads
/// count, the batches' own output and error files do not):
/// enough for a few large batches in flight; a client that never deletes what it is done with gets a
/// 413 naming this limit, as OpenAI refuses uploads past an organisation's storage.
pub(super) const MAX_STORED_BYTES: usize = 512 * 1024 * 1024;

/// The batches and files the mock holds (in memory, until deleted with `DELETE /v1/files/{id}`).
#[derive(Default)]
pub(super) struct BatchState {
    files: HashMap<String, Vec<u8>>,
    batches: Vec<MockBatch>,
    /// `custom_id`s answered so far, across batches.
    answered: HashSet<String>,
}

struct MockBatch {
    id: String,
    input_file_id: String,
    status: &'static str,
    created: Instant,
    created_at: u64,
    metadata: Value,
    output_file_id: Option<String>,
    error_file_id: Option<String>,
    /// Lines, completed and failed.
    counts: (u64, u64, u64),
}

impl MockBatch {
    fn json(&self) -> Value {
        json!({
            "id": self.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "errors": null,
            "input_file_id": self.input_file_id,
            "completion_window": "24h",
            "status": self.status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": self.created_at,
            "metadata": self.metadata,
            "request_counts": {"total": self.counts.0, "completed": self.counts.1, "failed": self.counts.2},
        })
    }
}

fn not_found(what: &str, id: &str) -> ApiError {
    ApiError {
        status: StatusCode::NOT_FOUND,
        code: Some("not_found"),
        ..ApiError::invalid(format!("no {what} with id {id}"), None)
    }
}

/// `POST /v1/files` (multipart: `file`, `purpose`).
pub(super) async fn upload(
    State(shared): State<Arc<MockState>>,
    mut form: Multipart,
) -> Result<Json<Value>, ApiError> {
    let mut bytes = None;
    let mut name = String::from("upload.jsonl");
    let mut purpose = String::new();
    while let Some(field) = form.next_field().await.map_err(multipart_error)? {
        match field.name() {
            Some("file") => {
                if let Some(n) = field.file_name() {
                    name = n.to_string();
                }
                bytes = Some(field.bytes().await.map_err(multipart_error)?);
            }
            Some("purpose") => {
                purpose = field.text().await.unwrap_or_default();
            }
            _ => {}
        }
    }
    let bytes = bytes.ok_or_else(|| ApiError::invalid("no file in the form", Some("file")))?;
    if purpose != "batch" {
        return Err(ApiError::invalid(
            format!("the mock takes files of purpose `batch`, not `{purpose}`"),
            Some("purpose"),
        ));
    }
    let id = format!("file-{}", shared.next_id.fetch_add(1, Ordering::Relaxed));
    let size = bytes.len();
    let mut st = shared.batches.lock().map_err(|_| poisoned())?;
    let held: usize = st.files.values().map(Vec::len).sum();
    let most = shared.config.max_stored_bytes;
    if held + size > most {
        return Err(ApiError {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            ..ApiError::invalid(
                format!(
                    "the mock holds {held} bytes of files and keeps at most {most}: delete \
                     files you are done with (DELETE /v1/files/ID) before uploading {size} more"
                ),
                Some("file"),
            )
        });
    }
    st.files.insert(id.clone(), bytes.to_vec());
    shared.counters.files.fetch_add(1, Ordering::Relaxed);
    Ok(Json(json!({
        "id": id, "object": "file", "bytes": size, "created_at": unix_now(),
        "filename": name, "purpose": "batch",
    })))
}

/// A multipart body that could not be read: a 413 naming the limit when it was too large (axum's
/// own message says only "Error parsing multipart"), else a 400.
fn multipart_error(e: axum::extract::multipart::MultipartError) -> ApiError {
    let status = e.status();
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError {
            status,
            ..ApiError::invalid(
                format!(
                    "the upload is larger than the mock accepts ({} bytes per request)",
                    super::BODY_LIMIT
                ),
                Some("file"),
            )
        };
    }
    ApiError {
        status,
        ..ApiError::invalid(
            format!("bad multipart body: {}", e.body_text()),
            Some("file"),
        )
    }
}

/// `DELETE /v1/files/{id}`: as OpenAI answers it.
pub(super) async fn delete_file(
    State(shared): State<Arc<MockState>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let mut st = shared.batches.lock().map_err(|_| poisoned())?;
    st.files.remove(&id).ok_or_else(|| not_found("file", &id))?;
    Ok(Json(json!({"id": id, "object": "file", "deleted": true})))
}

fn poisoned() -> ApiError {
    ApiError::server_error("the mock's batch state is poisoned".into(), 0)
}

/// `GET /v1/files/{id}`.
pub(super) async fn file(
    State(shared): State<Arc<MockState>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let st = shared.batches.lock().map_err(|_| poisoned())?;
    let f = st.files.get(&id).ok_or_else(|| not_found("file", &id))?;
    Ok(Json(
        json!({"id": id, "object": "file", "bytes": f.len(), "purpose": "batch"}),
    ))
}

/// `GET /v1/files/{id}/content`.
pub(super) async fn content(
    State(shared): State<Arc<MockState>>,
    Path(id): Path<String>,
) -> Result<Vec<u8>, ApiError> {
    let st = shared.batches.lock().map_err(|_| poisoned())?;
    st.files
        .get(&id)
        .cloned()
        .ok_or_else(|| not_found("file", &id))
}

/// `POST /v1/batches`.
pub(super) async fn create(
    State(shared): State<Arc<MockState>>,
    Json(body): Json<Value>,
) -> Result<Json<Value>, ApiError> {
    let input = body
        .get("input_file_id")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::invalid("input_file_id is required", Some("input_file_id")))?
        .to_string();
    if body.get("endpoint").and_then(Value::as_str) != Some("/v1/chat/completions") {
        return Err(ApiError::invalid(
            "the mock batches /v1/chat/completions only",
            Some("endpoint"),
        ));
    }
    let mut st = shared.batches.lock().map_err(|_| poisoned())?;
    let lines = st
        .files
        .get(&input)
        .ok_or_else(|| not_found("file", &input))?
        .split(|b| *b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .count() as u64;
    let id = format!("batch_{}", shared.next_id.fetch_add(1, Ordering::Relaxed));
    let b = MockBatch {
        id,
        input_file_id: input,
        status: "in_progress",
        created: Instant::now(),
        created_at: unix_now(),
        metadata: body.get("metadata").cloned().unwrap_or(Value::Null),
        output_file_id: None,
        error_file_id: None,
        counts: (lines, 0, 0),
    };
    let out = b.json();
    st.batches.push(b);
    shared.counters.batches.fetch_add(1, Ordering::Relaxed);
    Ok(Json(out))
}

/// `GET /v1/batches/{id}`: runs the batch first if its delay has passed.
pub(super) async fn retrieve(
    State(shared): State<Arc<MockState>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let mut st = shared.batches.lock().map_err(|_| poisoned())?;
    let i = st
        .batches
        .iter()
        .position(|b| b.id == id)
        .ok_or_else(|| not_found("batch", &id))?;
    if st.batches[i].status == "in_progress"
        && st.batches[i].created.elapsed() >= shared.config.batch_delay
    {
        run(&shared, &mut st, i);
    }
    Ok(Json(st.batches[i].json()))
}

/// `GET /v1/batches`: every batch, newest first, in one page.
pub(super) async fn list(State(shared): State<Arc<MockState>>) -> Result<Json<Value>, ApiError> {
    let st = shared.batches.lock().map_err(|_| poisoned())?;
    let data: Vec<Value> = st.batches.iter().rev().map(MockBatch::json).collect();
    Ok(Json(
        json!({"object": "list", "data": data, "has_more": false}),
    ))
}

/// `POST /v1/batches/{id}/cancel`.
pub(super) async fn cancel(
    State(shared): State<Arc<MockState>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let mut st = shared.batches.lock().map_err(|_| poisoned())?;
    let b = st
        .batches
        .iter_mut()
        .find(|b| b.id == id)
        .ok_or_else(|| not_found("batch", &id))?;
    if b.status == "in_progress" {
        b.status = "cancelled";
    }
    Ok(Json(b.json()))
}

/// Answers a batch's lines and writes its files.
fn run(shared: &MockState, st: &mut BatchState, i: usize) {
    let input = st
        .files
        .get(&st.batches[i].input_file_id)
        .cloned()
        .unwrap_or_default();
    let lines: Vec<&[u8]> = input
        .split(|b| *b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .collect();
    let c = &shared.counters;
    let expires = c.batches_run.fetch_add(1, Ordering::Relaxed) < shared.config.batch_expire_first;
    let answer_up_to = if expires {
        lines.len() / 2
    } else {
        lines.len()
    };
    let mut output = String::new();
    let mut errors = String::new();
    let (mut ok, mut failed) = (0u64, 0u64);
    for (n, line) in lines.iter().enumerate() {
        let parsed: Option<Value> = serde_json::from_slice(line).ok();
        let custom_id = parsed
            .as_ref()
            .and_then(|v| v.get("custom_id"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let req_id = format!(
            "batch_req_{}",
            shared.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let error_line = |status: u16, code: &str, message: &str| {
            json!({
                "id": req_id, "custom_id": custom_id,
                "response": {"status_code": status, "request_id": req_id,
                             "body": {"error": {"message": message, "type": "server_error", "code": code}}},
                "error": null,
            })
        };
        let expired_line = || {
            json!({
                "id": req_id, "custom_id": custom_id, "response": null,
                "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."},
            })
        };
        let fail_now = shared.config.batch_failure_rate > 0.0
            && shared
                .faults
                .lock()
                .map(|mut r| r.gen::<f64>() < shared.config.batch_failure_rate)
                .unwrap_or(false);
        let record = if n >= answer_up_to {
            failed += 1;
            errors.push_str(&expired_line().to_string());
            errors.push('\n');
            continue;
        } else if fail_now {
            error_line(
                500,
                "server_error",
                "the mock failed this line (batch_failure_rate)",
            )
        } else {
            let body = parsed
                .as_ref()
                .and_then(|v| v.get("body"))
                .map(Value::to_string)
                .unwrap_or_default();
            match complete(shared, body.as_bytes()) {
                Ok((answer, usage)) => {
                    ok += 1;
                    c.batch_prompt_tokens
                        .fetch_add(usage.prompt_tokens, Ordering::Relaxed);
                    c.batch_completion_tokens
                        .fetch_add(usage.completion_tokens, Ordering::Relaxed);
                    if !st.answered.insert(custom_id.clone()) {
                        c.batch_lines_duplicate.fetch_add(1, Ordering::Relaxed);
                    }
                    output.push_str(
                        &json!({
                            "id": req_id, "custom_id": custom_id,
                            "response": {"status_code": 200, "request_id": req_id, "body": answer},
                            "error": null,
                        })
                        .to_string(),
                    );
                    output.push('\n');
                    continue;
                }
                Err(e) => error_line(e.status.as_u16(), "invalid_request", &e.message),
            }
        };
        failed += 1;
        errors.push_str(&record.to_string());
        errors.push('\n');
    }
    c.batch_lines.fetch_add(ok, Ordering::Relaxed);
    c.batch_line_failures.fetch_add(failed, Ordering::Relaxed);
    let mut put = |text: String| {
        let id = format!("file-{}", shared.next_id.fetch_add(1, Ordering::Relaxed));
        st.files.insert(id.clone(), text.into_bytes());
        id
    };
    let output_file_id = (!output.is_empty()).then(|| put(output));
    let error_file_id = (!errors.is_empty()).then(|| put(errors));
    let b = &mut st.batches[i];
    b.output_file_id = output_file_id;
    b.error_file_id = error_file_id;
    b.counts = (b.counts.0, ok, failed);
    b.status = if expires { "expired" } else { "completed" };
    if expires {
        c.batches_expired.fetch_add(1, Ordering::Relaxed);
    }
}
