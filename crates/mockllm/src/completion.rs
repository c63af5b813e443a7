//! What the model — the simulated one, or the cheap replies of `--replies cheap` — answers to a chat
//! completion request body: the same for a live request (`routes.rs`) and a batch line (`batches.rs`).

use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::dialect;
use super::error::ApiError;
use super::request::{check_model, parse_chat_request, ParsedChat};
use super::{cheap, MockState, Replies};
use sleuth_llm::{simulated, tokens, TokenLogprob, TokenUsage};

/// The model's `chat.completion` for a request body, and its usage: what a live request and a batch
/// line are both answered with. The model is the simulated one, or with `--replies cheap` the cheap
/// replies of `cheap.rs`, which neither tokenize nor read the prompt (their usage and the context
/// window are estimated from bytes).
pub(super) fn complete(shared: &MockState, body: &[u8]) -> Result<(Value, TokenUsage), ApiError> {
    let ParsedChat { req, limit } = parse_chat_request(body, shared.config.dialect)
        .and_then(|p| check_model(&shared.config.models, &p.req.model).map(|()| p))
        .inspect_err(|_| shared.count_refused())?;
    let cheap = shared.config.replies == Replies::Cheap;
    // A cheap mock with a window still tokenizes nothing: its prompt size is the bytes estimate.
    let count: fn(&[sleuth_llm::Message]) -> u64 = if cheap {
        cheap::estimate_messages
    } else {
        tokens::count_messages
    };
    shared.check_context(&req, limit, count)?;

    // The simulated model is pure CPU work of well under a millisecond for sleuth's prompts: cheap
    // enough to run on the async worker instead of paying a hop to the blocking pool.
    let resp = if cheap {
        cheap::respond(&req)
    } else {
        simulated::respond(&req)
    };
    let resp = shared.malformed(&req).unwrap_or(resp);
    let resp = match limit {
        Some(_) => resp,
        None => dialect::run_on(&req, resp),
    };
    // Cheap replies are estimated here, after the faults and the dialect changed the content (a
    // malformed reply's usage, counted by the tokenizer, is replaced too). The simulated model always
    // reports usage; count locally if that ever changes.
    let usage = match resp.usage {
        _ if cheap => TokenUsage {
            prompt_tokens: cheap::estimate_messages(&req.messages),
            completion_tokens: cheap::estimate(&resp.content),
            cached_tokens: 0,
        },
        Some(u) => u,
        None => TokenUsage {
            prompt_tokens: tokens::count_messages(&req.messages),
            completion_tokens: tokens::count(&resp.content),
            cached_tokens: 0,
        },
    };
    let logprobs = resp.logprobs.as_deref().map(|lps| {
        json!({
            "content": lps.iter().map(token_logprob_json).collect::<Vec<_>>(),
            "refusal": null,
        })
    });
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let answer = json!({
        "id": format!("chatcmpl-{id}"),
        "object": "chat.completion",
        "created": unix_now(),
        "model": req.model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": resp.content, "refusal": null},
            "finish_reason": "stop",
            "logprobs": logprobs,
        }],
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
        },
    });
    Ok((answer, usage))
}

/// One output token's log-probability in OpenAI's shape. All of the simulated model's alternatives are
/// returned (the request's `top_logprobs` count is not applied), so answers over HTTP stay identical to
/// the in-process provider's.
fn token_logprob_json(t: &TokenLogprob) -> Value {
    json!({
        "token": t.token,
        "logprob": t.logprob,
        "bytes": null,
        "top_logprobs": t
            .top
            .iter()
            .map(|(token, logprob)| json!({"token": token, "logprob": logprob, "bytes": null}))
            .collect::<Vec<_>>(),
    })
}

/// Seconds since the Unix epoch, for the `created` field.
pub(super) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
