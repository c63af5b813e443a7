//! The road of one request through the gateway, one function per stage, called in order.
//!
//! A chat request:
//! 1. [`call_provider`] — the provider under the per-attempt timeout, retried on transient failures
//!    ([`super::retry`]);
//! 2. [`account_answer`] — tokens (the provider's or tiktoken's), price, token and cost metrics
//!    ([`super::accounting`]);
//! 3. [`check_structure`] — a reply to a request with a schema is parsed against it; an unparseable
//!    one is counted and re-asked from stage 1 ([`super::structured`]);
//! 4. [`finish`] — the call's outcome metric, and the answer with everything it cost.
//!
//! An embedding request runs stages 1, 2 and 4.
//!
//! Where the layers of the next issue go, so each stays one function: the content-addressed cache
//! looks up before stage 1 in [`answer`] (a hit skips stages 1–2 and costs nothing) and writes after
//! stage 2; the rate limiter (RPM/TPM per model) waits right before the provider in [`call_provider`],
//! inside the retry loop so a retry queues again; the budget check goes before stage 1 and its charge
//! after stage 2, beside the accounting it reads.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::accounting::{self, account, count_call};
use super::retry::{with_retries, Target};
use super::structured;
use super::{ChatOutcome, EmbedOutcome, LlmError, Shared};
use crate::llm::types::{CallTags, ChatRequest, ChatResponse, ResponseSchema, Usage};

/// One chat request, re-asked until its reply parses or the re-asks run out.
pub(super) async fn chat(
    shared: &Shared,
    mut req: ChatRequest,
    tags: &CallTags,
) -> Result<ChatOutcome, LlmError> {
    let mut usage = Usage::default();
    let original_messages = req.messages.clone();
    let mut reruns = 0;
    loop {
        let response = answer(shared, &req, tags, &mut usage).await?;
        let Some(schema) = &req.schema else {
            return Ok(finish(&req.model, tags, response, None, usage));
        };
        let reason = match check_structure(schema, &req.model, &response, tags, &mut usage) {
            Ok(json) => return Ok(finish(&req.model, tags, response, Some(json), usage)),
            Err(reason) => reason,
        };
        if reruns >= shared.config.max_reruns {
            return Err(LlmError::Unparseable {
                purpose: tags.purpose.clone(),
                schema: schema.name.clone(),
                attempts: reruns + 1,
                reason,
                usage,
            });
        }
        reruns += 1;
        req.messages = structured::reask(schema, &original_messages, &response.content, &reason);
        req.sample = structured::resample(req.sample);
    }
}

/// One answer from the model, accounted: stages 1 and 2.
async fn answer(
    shared: &Shared,
    req: &ChatRequest,
    tags: &CallTags,
    usage: &mut Usage,
) -> Result<ChatResponse, LlmError> {
    let (response, latency) = call_provider(shared, req, tags, usage).await?;
    account_answer(shared, req, &response, latency, tags, usage);
    Ok(response)
}

/// Stage 1: the provider's answer and how long the successful attempt took.
async fn call_provider(
    shared: &Shared,
    req: &ChatRequest,
    tags: &CallTags,
    usage: &mut Usage,
) -> Result<(ChatResponse, Duration), LlmError> {
    let target = Target {
        provider: shared.provider.name(),
        model: &req.model,
        tags,
    };
    with_retries(&shared.config, target, usage, || async {
        let started = Instant::now();
        let response = shared.provider.chat(req).await?;
        Ok((response, started.elapsed()))
    })
    .await
}

/// Stage 2: what the answer cost, added to the call's usage and to metrics.
fn account_answer(
    shared: &Shared,
    req: &ChatRequest,
    response: &ChatResponse,
    latency: Duration,
    tags: &CallTags,
    usage: &mut Usage,
) {
    accounting::record_latency(&req.model, tags, latency);
    let tokens = accounting::chat_tokens(req, response);
    account(&shared.pricing, &req.model, tags, tokens, usage);
}

/// Stage 3: the reply's value under its schema, or why it does not fit.
fn check_structure(
    schema: &ResponseSchema,
    model: &str,
    response: &ChatResponse,
    tags: &CallTags,
    usage: &mut Usage,
) -> Result<Value, String> {
    structured::parse(&response.content, schema)
        .inspect_err(|_| accounting::count_parse_failure(model, tags, usage))
}

/// Stage 4: the call succeeded.
fn finish(
    model: &str,
    tags: &CallTags,
    response: ChatResponse,
    json: Option<Value>,
    usage: Usage,
) -> ChatOutcome {
    count_call(tags, model, "ok");
    ChatOutcome {
        response,
        json,
        usage,
    }
}

/// One embedding request: stages 1, 2 and 4.
pub(super) async fn embed(
    shared: &Shared,
    model: &str,
    inputs: &[String],
    tags: &CallTags,
) -> Result<EmbedOutcome, LlmError> {
    let mut usage = Usage::default();
    let target = Target {
        provider: shared.provider.name(),
        model,
        tags,
    };
    let response = with_retries(&shared.config, target, &mut usage, || {
        shared.provider.embed(model, inputs)
    })
    .await?;
    let tokens = accounting::embed_tokens(inputs, &response);
    account(&shared.pricing, model, tags, tokens, &mut usage);
    count_call(tags, model, "ok");
    Ok(EmbedOutcome {
        vectors: response.vectors,
        usage,
    })
}
