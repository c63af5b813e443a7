//! Why one attempt at a request failed, classified for the gateway's retry policy.

use std::time::Duration;

/// Why one attempt failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProviderError {
    /// HTTP 429: slow down. `retry_after` is what the server asked for, if anything.
    #[error("rate limited (HTTP 429)")]
    RateLimited { retry_after: Option<Duration> },
    /// HTTP 5xx (or 408, 409, 425): the server failed or was busy; trying again may work. A 5xx whose
    /// body is a validation error about the request is [`ProviderError::Refused`] instead.
    #[error("server error (HTTP {status})")]
    Server {
        status: u16,
        retry_after: Option<Duration>,
    },
    /// No answer within the request timeout.
    #[error("request timed out after {0:?}")]
    Timeout(Duration),
    /// The connection could not be made or broke.
    #[error("connection failed: {0}")]
    Connect(String),
    /// The server refused the request for good (bad key, unknown model, malformed request, a
    /// setting it does not take): 400/401/403/404/422, validation messages at any status.
    #[error("request refused (HTTP {status}): {message}")]
    Refused { status: u16, message: String },
    /// The prompt and the completion limit do not fit the model's context window: the same request
    /// will never fit, so it is final, whatever status the server chose for it.
    #[error("request exceeds the model's context window (HTTP {status}): {message}")]
    ContextLength { status: u16, message: String },
    /// The server answered with something that is not a chat completion.
    #[error("unreadable response: {0}")]
    Decode(String),
}

impl ProviderError {
    /// Whether the gateway should try again.
    pub fn retryable(&self) -> bool {
        matches!(
            self,
            Self::RateLimited { .. } | Self::Server { .. } | Self::Timeout(_) | Self::Connect(_)
        )
    }

    /// The wait the server asked for.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after } | Self::Server { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Low-cardinality reason for metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::RateLimited { .. } => "rate_limited",
            Self::Server { .. } => "server_error",
            Self::Timeout(_) => "timeout",
            Self::Connect(_) => "connect",
            Self::Refused { .. } => "refused",
            Self::ContextLength { .. } => "context_length",
            Self::Decode(_) => "decode",
        }
    }
}
