//! What an error answer means: transient (retry), final (do not), or a refusal of one of the settings
//! [`super::dialect`] can step down.
//!
//! The status alone is not enough. llama-cpp-python answers a request it cannot validate with HTTP
//! 500 and pydantic's message, which no retry will change; a context-length error arrives as 400 from
//! OpenAI, vLLM and llama-cpp-python, but may arrive as 500 from a server or proxy that does not map
//! it, and is never transient either. So the
//! body (its first [`ERROR_BODY_LIMIT`] bytes) is read and classified, in this order:
//! 1. a context-length error ("context length", "maximum context", "n_ctx", "too many tokens", …) —
//!    final, whatever the status;
//! 2. a refusal naming `response_format` — the structured-output fallback (final where none is left);
//! 3. a refusal naming the completion-limit fields — the token-limit fallback (likewise);
//! 4. by status: 429 rate limited; 408, 409 and 425 transient; any other 4xx final; a 5xx whose body
//!    is a validation error about the request final; any other 5xx transient.

use std::time::Duration;

use super::dialect::TokenLimit;
use crate::provider::ProviderError;

/// How much of an error body is read: enough for any validation message, bounded against a server
/// that streams an HTML page or worse.
pub const ERROR_BODY_LIMIT: usize = 4096;

/// Phrases of context-length errors (lower case): OpenAI and vLLM ("This model's maximum context
/// length is …", `context_length_exceeded`), llama.cpp ("exceeds the available context size",
/// "Requested tokens (…) exceed context window of …", `n_ctx`), Anthropic-style proxies ("prompt is too
/// long"), TGI ("must be <= … tokens" comes with "input validation", not listed: final anyway).
const CONTEXT_PHRASES: &[&str] = &[
    "context length",
    "context_length",
    "maximum context",
    "context window",
    "context size",
    "n_ctx",
    "too many tokens",
    "prompt is too long",
];

/// Phrases of a validation error about the request (lower case): pydantic (llama-cpp-python, vLLM),
/// FastAPI, OpenAI's error type.
const VALIDATION_PHRASES: &[&str] = &[
    "validation error",
    "input should be",
    "field required",
    "extra inputs are not permitted",
    "invalid_request_error",
    "unprocessable",
];

/// What one error answer means for the request that got it.
#[derive(Debug, Clone)]
pub(super) enum Failure {
    /// The endpoint does not take the request's `response_format`.
    ResponseFormat { status: u16, message: String },
    /// The endpoint takes only one of the completion-limit fields: `wants` is the one it leaves.
    TokenLimit {
        wants: TokenLimit,
        status: u16,
        message: String,
    },
    /// Anything else, classified for the gateway's retry policy.
    Other(ProviderError),
}

impl Failure {
    /// The error the gateway sees when no fallback is left: a refusal, final.
    pub(super) fn into_error(self) -> ProviderError {
        match self {
            Failure::ResponseFormat { status, message }
            | Failure::TokenLimit {
                status, message, ..
            } => ProviderError::Refused { status, message },
            Failure::Other(e) => e,
        }
    }
}

/// Classifies an error answer of `status` whose body starts with `body`.
pub(super) fn classify(status: u16, retry_after: Option<Duration>, body: &str) -> Failure {
    let message = message_of(body);
    let lower = body.to_lowercase();
    if CONTEXT_PHRASES.iter().any(|p| lower.contains(p)) {
        return Failure::Other(ProviderError::ContextLength { status, message });
    }
    if lower.contains("response_format") {
        return Failure::ResponseFormat { status, message };
    }
    if let Some(wants) = token_limit_wanted(&lower) {
        return Failure::TokenLimit {
            wants,
            status,
            message,
        };
    }
    Failure::Other(match status {
        429 => ProviderError::RateLimited { retry_after },
        408 | 409 | 425 => ProviderError::Server {
            status,
            retry_after,
        },
        400..=499 => ProviderError::Refused { status, message },
        _ if VALIDATION_PHRASES.iter().any(|p| lower.contains(p)) => {
            ProviderError::Refused { status, message }
        }
        _ => ProviderError::Server {
            status,
            retry_after,
        },
    })
}

/// The limit field a refusal leaves, if it names the limit fields: OpenAI's "Unsupported parameter:
/// 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead." and
/// "Setting 'max_tokens' and 'max_completion_tokens' at the same time is not supported." both leave
/// `max_completion_tokens`; a server that does not know `max_completion_tokens` ("Extra inputs are
/// not permitted") leaves `max_tokens`. (`max_tokens` is not a substring of `max_completion_tokens`.)
fn token_limit_wanted(lower: &str) -> Option<TokenLimit> {
    match (
        lower.contains("max_tokens"),
        lower.contains("max_completion_tokens"),
    ) {
        (true, true) => Some(TokenLimit::MaxCompletionTokens),
        (true, false) if lower.contains("not supported") || lower.contains("unsupported") => {
            Some(TokenLimit::MaxCompletionTokens)
        }
        (false, true) => Some(TokenLimit::MaxTokens),
        _ => None,
    }
}

/// The message of an error body: OpenAI's `error.message`, FastAPI's `detail`, a bare `message`, or
/// the body itself; one line, at most 300 characters (it goes into logs and error messages).
pub(super) fn message_of(body: &str) -> String {
    let parsed = serde_json::from_str::<serde_json::Value>(body).ok();
    let text = parsed
        .as_ref()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("detail"))
                .or_else(|| v.get("message"))
                .or_else(|| v.get("error"))
        })
        .map(|m| match m {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_else(|| body.to_string());
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// llama-cpp-python's answer to `response_format: {type: "json_schema"}`: HTTP 500 with pydantic's
    /// message in OpenAI's error shape (as 0.3.16 answered it, the traceback's file path left out).
    const LLAMA_CPP_FORMAT: &str = r#"{"error":{"message":"1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n    POST /v1/chat/completions","type":"internal_server_error","param":null,"code":null}}"#;

    fn other(status: u16, body: &str) -> ProviderError {
        match classify(status, None, body) {
            Failure::Other(e) => e,
            f => panic!("expected a plain error, got {f:?}"),
        }
    }

    #[test]
    fn a_refusal_naming_response_format_is_the_fallback_at_any_status() {
        for status in [400, 422, 500] {
            match classify(status, None, LLAMA_CPP_FORMAT) {
                Failure::ResponseFormat { status: s, message } => {
                    assert_eq!(s, status);
                    assert!(message.starts_with("1 validation error:"), "{message}");
                    assert!(!message.contains('\n'));
                }
                f => panic!("{status}: {f:?}"),
            }
        }
    }

    #[test]
    fn context_length_errors_are_final_whatever_the_status() {
        let bodies = [
            r#"{"error":{"message":"This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (2000 in the messages, 100 in the completion).","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
            "Requested tokens (5000) exceed context window of 2048",
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
            // vLLM names both limit fields in its context error: the context wins.
            r#"{"message":"'max_tokens' or 'max_completion_tokens' is too large: 500. This model's maximum context length is 2048 tokens"}"#,
        ];
        for body in bodies {
            for status in [400, 500, 503] {
                let e = other(status, body);
                assert!(matches!(e, ProviderError::ContextLength { .. }), "{e:?}");
                assert!(!e.retryable(), "{status} {body}");
            }
        }
    }

    #[test]
    fn client_errors_are_final_and_server_errors_transient_unless_they_validate() {
        for status in [400, 401, 403, 404, 422] {
            assert!(
                !other(status, r#"{"error":{"message":"nope"}}"#).retryable(),
                "{status}"
            );
        }
        for status in [408, 409, 425, 429, 500, 502, 503, 504] {
            assert!(other(status, "upstream hiccup").retryable(), "{status}");
        }
        let pydantic =
            "1 validation error for CreateChatCompletionRequest\nmessages\n  Field required";
        let e = other(500, pydantic);
        assert!(
            matches!(e, ProviderError::Refused { status: 500, .. }),
            "{e:?}"
        );
        assert!(matches!(other(429, ""), ProviderError::RateLimited { .. }));
    }

    #[test]
    fn limit_refusals_leave_the_field_the_server_reads() {
        let both = r#"{"error":{"message":"Setting 'max_tokens' and 'max_completion_tokens' at the same time is not supported.","type":"invalid_request_error","param":"max_tokens","code":"invalid_parameter_combination"}}"#;
        let reasoning = r#"{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","param":"max_tokens","code":"unsupported_parameter"}}"#;
        let unknown = "1 validation error\nmax_completion_tokens\n  Extra inputs are not permitted";
        for (body, wants) in [
            (both, TokenLimit::MaxCompletionTokens),
            (reasoning, TokenLimit::MaxCompletionTokens),
            (unknown, TokenLimit::MaxTokens),
        ] {
            match classify(400, None, body) {
                Failure::TokenLimit { wants: w, .. } => assert_eq!(w, wants, "{body}"),
                f => panic!("{body}: {f:?}"),
            }
        }
        // A limit that is merely too large names max_tokens without "supported": final, no fallback.
        let e = other(400, "max_tokens must be at most 4096");
        assert!(matches!(e, ProviderError::Refused { .. }), "{e:?}");
    }

    #[test]
    fn messages_are_one_bounded_line() {
        assert_eq!(message_of(r#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(message_of("plain\ntext"), "plain text");
        let long = "x".repeat(1000);
        assert_eq!(message_of(&long).chars().count(), 301);
    }
}
