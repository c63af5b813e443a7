//! What a call spent: tokens (the provider's count, or tiktoken's when it reports none), their price,
//! and the metrics of every call, token and dollar.
//!
//! The caller's [`Usage`] is the ledger: the transcript event a call produced carries it, so summing
//! events gives a run's total. Metrics here use low-cardinality labels only (model, phase, purpose).

use std::time::Duration;

use super::ledger::CallScope;
use super::prefix::PrefixTracker;
use crate::pricing::Pricing;
use crate::provider::EmbedResponse;
use crate::tokens;
use crate::types::{CallTags, ChatRequest, ChatResponse, TokenUsage, Usage};
use sleuth_base::telemetry as tm;

/// The tokens of a chat answer: as the provider reported them, else counted locally (the prompt as the
/// window check counted it, a long script found by its hash rather than counted again).
pub(super) fn chat_tokens(req: &ChatRequest, resp: &ChatResponse) -> TokenUsage {
    resp.usage.unwrap_or_else(|| TokenUsage {
        prompt_tokens: crate::window::prompt_tokens(&req.messages),
        completion_tokens: tokens::count(&resp.content),
        cached_tokens: 0,
    })
}

/// The tokens of an embedding call: as the provider reported them, else counted locally.
pub(super) fn embed_tokens(inputs: &[String], resp: &EmbedResponse) -> TokenUsage {
    let prompt = resp
        .prompt_tokens
        .unwrap_or_else(|| inputs.iter().map(|t| tokens::count(t)).sum());
    TokenUsage {
        prompt_tokens: prompt,
        completion_tokens: 0,
        cached_tokens: 0,
    }
}

/// Adds one answered attempt to the call's usage, priced, and to the token and cost metrics (live:
/// paid for).
pub(super) fn account(
    pricing: &Pricing,
    model: &str,
    tags: &CallTags,
    scope: &CallScope,
    tu: TokenUsage,
    usage: &mut Usage,
) {
    let cost = pricing.cost(model, &tu);
    usage.calls += 1;
    usage.prompt_tokens += tu.prompt_tokens;
    usage.completion_tokens += tu.completion_tokens;
    usage.cached_tokens += tu.cached_tokens;
    usage.cost_usd += cost;
    count_tokens(model, tags, scope, tu, "live");
    // The metrics facade has integer counters only: cost is counted in micro-dollars.
    metrics::counter!(tm::LLM_COST, "model" => model.to_string(), "phase" => tags.phase.as_str(), "framework" => tags.framework.clone(), "arm" => scope.arm.clone())
        .increment((cost * 1e6).round() as u64);
}

/// Tokens by model, phase, framework, arm, kind (prompt, completion, cached) and source (live, cache).
fn count_tokens(
    model: &str,
    tags: &CallTags,
    scope: &CallScope,
    tu: TokenUsage,
    source: &'static str,
) {
    for (kind, n) in [
        ("prompt", tu.prompt_tokens),
        ("completion", tu.completion_tokens),
        ("cached", tu.cached_tokens),
    ] {
        metrics::counter!(tm::LLM_TOKENS, "model" => model.to_string(), "phase" => tags.phase.as_str(), "framework" => tags.framework.clone(), "arm" => scope.arm.clone(), "kind" => kind, "source" => source).increment(n);
    }
}

/// An answer landed from a batch: its tokens under source `batch` and its cost, at the batch price.
pub fn count_batch_answer(
    model: &str,
    tags: &CallTags,
    scope: &CallScope,
    tu: TokenUsage,
    cost: f64,
) {
    count_tokens(model, tags, scope, tu, "batch");
    metrics::counter!(tm::LLM_COST, "model" => model.to_string(), "phase" => tags.phase.as_str(), "framework" => tags.framework.clone(), "arm" => scope.arm.clone())
        .increment((cost * 1e6).round() as u64);
}

/// A call served from the cache: its tokens under source `cache`, and a hit; it cost nothing.
pub(super) fn count_cache_hit(model: &str, tags: &CallTags, scope: &CallScope, tu: TokenUsage) {
    count_tokens(model, tags, scope, tu, "cache");
    metrics::counter!(tm::LLM_CACHE_HITS, "model" => model.to_string(), "phase" => tags.phase.as_str(), "framework" => tags.framework.clone(), "arm" => scope.arm.clone()).increment(1);
}

/// The provider's answer time of a chat attempt that succeeded.
pub(super) fn record_latency(model: &str, tags: &CallTags, latency: Duration) {
    metrics::histogram!(tm::LLM_LATENCY, "model" => model.to_string(), "phase" => tags.phase.as_str())
        .record(latency.as_secs_f64());
}

/// An answer that did not fit its schema: it cost tokens and will be re-asked or given up on.
pub(super) fn count_parse_failure(model: &str, tags: &CallTags, usage: &mut Usage) {
    usage.parse_failures += 1;
    count_call(tags, model, "parse_failure");
    metrics::counter!(tm::LLM_PARSE_FAILURES, "model" => model.to_string(), "purpose" => tags.purpose.clone()).increment(1);
}

/// One call's outcome, by model, phase and purpose.
pub(super) fn count_call(tags: &CallTags, model: &str, outcome: &'static str) {
    metrics::counter!(tm::LLM_CALLS, "model" => model.to_string(), "phase" => tags.phase.as_str(), "purpose" => tags.purpose.clone(), "outcome" => outcome)
        .increment(1);
}

/// Records a request's prompt with the prefix tracker (the cacheable share, `prefix.rs`) and counts its
/// prompt and cacheable tokens by model, phase, framework and arm. Every request is recorded, live or
/// answered from the cache: the share describes the prompts' layout, which replaying does not change.
pub(super) fn observe_prompt(
    prefixes: &PrefixTracker,
    req: &ChatRequest,
    tags: &CallTags,
    scope: &CallScope,
) {
    let tally = prefixes.observe(req, tags, scope);
    tracing::debug!(
        game = %tags.game,
        agent = %tags.agent,
        purpose = %tags.purpose,
        prompt_tokens = tally.prompt_tokens,
        cacheable_tokens = tally.cacheable_tokens,
        "prompt prefix"
    );
    for (kind, n) in [
        ("prompt", tally.prompt_tokens),
        ("cacheable", tally.cacheable_tokens),
    ] {
        metrics::counter!(tm::LLM_PROMPT_CACHE, "model" => req.model.clone(), "phase" => tags.phase.as_str(), "framework" => tags.framework.clone(), "arm" => scope.arm.clone(), "kind" => kind).increment(n);
    }
}
