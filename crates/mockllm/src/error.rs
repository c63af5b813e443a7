//! Error answers in OpenAI's shape, with the Retry-After headers clients read.

use axum::extract::rejection::BytesRejection;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// An error answer in OpenAI's shape.
#[derive(Debug, thiserror::Error)]
#[error("HTTP {status}: {message}")]
pub(super) struct ApiError {
    pub(super) status: StatusCode,
    /// OpenAI's `type`: `invalid_request_error`, `rate_limit_error`, `server_error`.
    pub(super) kind: &'static str,
    pub(super) message: String,
    pub(super) param: Option<&'static str>,
    pub(super) code: Option<&'static str>,
    /// Set on retryable errors: becomes the `retry-after-ms` and `retry-after` headers.
    pub(super) retry_after_ms: Option<u64>,
}

impl ApiError {
    pub(super) fn invalid(message: impl Into<String>, param: Option<&'static str>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            message: message.into(),
            param,
            code: None,
            retry_after_ms: None,
        }
    }

    pub(super) fn rate_limited(message: String, retry_after_ms: u64) -> Self {
        ApiError {
            status: StatusCode::TOO_MANY_REQUESTS,
            kind: "rate_limit_error",
            message,
            param: None,
            code: Some("rate_limit_exceeded"),
            retry_after_ms: Some(retry_after_ms),
        }
    }

    pub(super) fn server_error(message: String, retry_after_ms: u64) -> Self {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: "server_error",
            message,
            param: None,
            code: None,
            retry_after_ms: Some(retry_after_ms),
        }
    }

    pub(super) fn from_body_rejection(r: BytesRejection) -> Self {
        ApiError {
            status: r.status(),
            ..ApiError::invalid(r.body_text(), None)
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }});
        let mut resp = (self.status, Json(body)).into_response();
        if let Some(ms) = self.retry_after_ms {
            let headers = resp.headers_mut();
            headers.insert("retry-after-ms", HeaderValue::from(ms));
            // Clients that only read the standard header get whole seconds, rounded up and at least 1.
            headers.insert(
                header::RETRY_AFTER,
                HeaderValue::from(ms.div_ceil(1000).max(1)),
            );
        }
        resp
    }
}
