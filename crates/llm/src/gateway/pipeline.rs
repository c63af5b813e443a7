//! The road of one request through the gateway, one function per layer, called in order.
//!
//! A chat request:
//! 1. [`chat`] — routes the model ([`super::router`]) and re-asks until the reply parses;
//! 2. [`answer`] — one answer: from the cache ([`super::cache`]) if it is there; else, as the one
//!    caller making this call (single flight),
//! 3. [`attempts`] — attempts until one is answered, each of them: a slot of the model's
//!    concurrency limit ([`super::limits`], fair between arms, adapting to the endpoint:
//!    `adaptive.rs`) and then a shared slot; the budget's reservation ([`super::budget`], which waits
//!    while requests in flight hold the room it needs) and then the shared budget's
//!    ([`super::shared`]); the model's RPM/TPM (local, then shared); then the provider under the
//!    per-attempt timeout, which starts only now, when the request is sent. A failed attempt gives
//!    back its slots and reservations, teaches the concurrency limit what it saw (a 429 or a timeout
//!    halves it), and is retried after a backoff ([`super::retry`]) under the limit as it is then;
//! 4. [`account_answer`] — tokens (the provider's or tiktoken's), price, token and cost metrics
//!    ([`super::accounting`]); both budgets settle; the answer, the call's ledger entry and its
//!    request (for readers) are stored in one write before the reply goes back ([`super::live`]);
//! 5. [`check_structure`] — a reply to a request with a schema is parsed against it; an unparseable
//!    one is counted and re-asked from 2 ([`super::structured`]);
//! 6. [`finish`] — the call's outcome metric, and the answer with everything it cost.
//!
//! An embedding request runs the same layers without the re-asking.
//!
//! Local layers come first: they bound what this process asks of the shared ones (at most a model's
//! concurrency limit of this process's calls ever wait for a shared slot) and keep their fairness
//! between arms. The shared layers are absent outside a cluster, and then nothing changes. The
//! budget is reserved last, when the request is about to go out: calls queued for a slot hold none
//! of it, so thousands of games waiting on a few slots cannot crowd out a budget they fit in.

use std::future::Future;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::accounting::{self, account, count_call};
use super::adaptive::Outcome;
use super::cache::{self, Lookup, StoredChat};
use super::ledger::CallScope;
use super::limits::Slot;
use super::live::{keep_request, kept_request, record_live, Paid};
use super::retry::{after_failure, timed, Next, Target};
use super::router::Route;
use super::structured;
use super::{
    ChatOutcome, EmbedOutcome, Layers, LlmError, Reservation, SharedError, SharedReservation,
    SharedSlot, Spent,
};
use crate::batch::Deferral;
use crate::provider::ProviderError;
use crate::types::{CallTags, ChatRequest, ChatResponse, Phase, ResponseSchema, TokenUsage, Usage};
use sleuth_store::{CacheKind, CallSource};

/// The scope of calls made without one (a single `sleuth play`): no sweep, no run, no arm.
static NO_SCOPE: std::sync::LazyLock<CallScope> = std::sync::LazyLock::new(CallScope::default);

/// One chat request, re-asked until its reply parses or the re-asks run out.
pub(super) async fn chat(
    shared: &Layers,
    original: &ChatRequest,
    tags: &CallTags,
    scope: Option<&CallScope>,
) -> Result<ChatOutcome, LlmError> {
    let scope = scope.unwrap_or(&NO_SCOPE);
    let Some(route) = shared.router.route(&original.model) else {
        return Err(LlmError::UnknownModel(original.model.clone()));
    };
    let mut usage = Usage::default();
    // Layer 0: the prompt made to fit the model's window, its marks taken out (`llm/window.rs`).
    let window = route.context_window(&original.model).await;
    let fitted = fit_window(original, window, tags)
        .map_err(|o| too_long(original, tags, o.prompt_tokens, o.window, usage))?;
    let original = fitted.as_ref().map_or(original, |f| &f.req);
    if let Some(f) = &fitted {
        usage.shortened = f.shortened;
    }
    // The re-ask being made, if any: the original is shared with the caller and never copied unless
    // a reply fails to parse.
    let mut reask: Option<ChatRequest> = None;
    let mut reruns = 0;
    loop {
        let req = reask.as_ref().unwrap_or(original);
        let response = answer(shared, route, req, tags, scope, &mut usage).await?;
        let Some(schema) = &req.schema else {
            return Ok(finish(&req.model, tags, response, None, usage));
        };
        let reason = match check_structure(schema, &req.model, &response, tags, &mut usage) {
            Ok(json) => return Ok(finish(&req.model, tags, response, Some(json), usage)),
            Err(reason) => reason,
        };
        if reruns >= shared.config.max_reruns {
            if let Some(json) = structured::last_resort(&response.content, schema) {
                tracing::debug!(purpose = %tags.purpose, "free-text reply without its sections taken whole");
                return Ok(finish(&req.model, tags, response, Some(json), usage));
            }
            return Err(LlmError::Unparseable {
                purpose: tags.purpose.clone(),
                schema: schema.name.clone(),
                attempts: reruns + 1,
                reason,
                usage,
            });
        }
        reruns += 1;
        let next = ChatRequest {
            model: req.model.clone(),
            messages: structured::reask(schema, &original.messages, &response.content, &reason),
            temperature: req.temperature,
            top_p: req.top_p,
            max_tokens: req.max_tokens,
            schema: req.schema.clone(),
            logprobs: req.logprobs,
            sample: structured::resample(req.sample),
            cache_key: req.cache_key.clone(),
        };
        // The re-ask carries the reply and the correction too: it must fit as well.
        if let Some(w) = window {
            let prompt = crate::window::prompt_tokens(&next.messages);
            if prompt + u64::from(next.max_tokens) > u64::from(w) {
                return Err(too_long(&next, tags, prompt, w, usage));
            }
        }
        reask = Some(next);
    }
}

/// A fitted request carries what its shortening left out, for the caller's usage.
struct FittedRequest {
    req: ChatRequest,
    shortened: crate::window::Shortening,
}

/// `req` with its marks taken out and, for a model with a window, shortened to fit it; `None` when it
/// goes as it is. A prompt that cannot fit is refused here, before any layer spends anything on it.
fn fit_window(
    req: &ChatRequest,
    window: Option<u32>,
    tags: &CallTags,
) -> Result<Option<FittedRequest>, crate::window::Overflow> {
    match crate::window::fit(&req.messages, req.max_tokens, window) {
        Ok(None) => Ok(None),
        Ok(Some(f)) => {
            if !f.shortening.is_empty() {
                metrics::counter!(sleuth_base::telemetry::LLM_SHORTENED, "model" => req.model.clone(), "purpose" => tags.purpose.clone())
                    .increment(1);
            }
            // Field by field: `..req.clone()` would copy the messages too (a character's whole
            // script) only to drop them.
            Ok(Some(FittedRequest {
                req: ChatRequest {
                    model: req.model.clone(),
                    messages: f.messages,
                    temperature: req.temperature,
                    top_p: req.top_p,
                    max_tokens: req.max_tokens,
                    schema: req.schema.clone(),
                    logprobs: req.logprobs,
                    sample: req.sample,
                    cache_key: req.cache_key.clone(),
                },
                shortened: f.shortening,
            }))
        }
        Err(o) => Err(o),
    }
}

fn too_long(
    req: &ChatRequest,
    tags: &CallTags,
    prompt: u64,
    window: u32,
    usage: Usage,
) -> LlmError {
    LlmError::ContextWindow {
        purpose: tags.purpose.clone(),
        model: req.model.clone(),
        prompt_tokens: prompt,
        max_tokens: req.max_tokens,
        window,
        usage,
    }
}

/// One answer to `req`: from the cache, or live (layers 2–4).
async fn answer(
    shared: &Layers,
    route: &Route,
    req: &ChatRequest,
    tags: &CallTags,
    scope: &CallScope,
    usage: &mut Usage,
) -> Result<ChatResponse, LlmError> {
    accounting::observe_prompt(&shared.prefixes, req, tags, scope);
    let model_id = route.model_id(&req.model);
    let flight = match &shared.cache {
        None => None,
        Some(c) => match c
            .lookup(cache::chat_key(&route.endpoint, model_id, req))
            .await
        {
            Lookup::Hit(key, bytes) => match StoredChat::decode(&bytes) {
                Some(stored) => {
                    let key = Some(&key);
                    served_from_cache(shared, &req.model, tags, scope, stored.usage, usage, key);
                    return Ok(stored.response());
                }
                // An entry this sleuth cannot read is answered live (and not overwritten: the
                // first value of a key stays).
                None => None,
            },
            Lookup::Lead(f) => Some(f),
        },
    };
    // An evaluation call of a batch model waits for a batch rather than going out now (`llm::batch`).
    if let (true, Some(batch), Some(f)) = (
        route.batch && tags.phase == Phase::Evaluation,
        &shared.batch,
        &flight,
    ) {
        let key = *f.key();
        let deferral = batch
            .defer(
                route.provider.as_ref(),
                &route.endpoint,
                model_id,
                req,
                tags,
                scope,
                &key,
            )
            .await
            .map_err(|e| LlmError::Batch {
                purpose: tags.purpose.clone(),
                message: e.to_string(),
            })?;
        if deferral != Deferral::Live {
            // Kept once, when the call first enters the journal, not at every replay that waits.
            if let (Deferral::Queued, Some(c)) = (deferral, &shared.cache) {
                keep_request(shared, c, key, req);
            }
            return Err(LlmError::Deferred {
                purpose: tags.purpose.clone(),
                model: req.model.clone(),
            });
        }
    }
    let est = estimate(&shared.pricing, req, prompt_bytes(req));
    let retries_before = usage.retries;
    let outcome = call_provider(shared, route, req, model_id, tags, scope, est, usage).await;
    if let Ok((response, _, _)) = &outcome {
        structured::note_reply(&response.notes, usage);
    }
    let retries = usage.retries - retries_before;
    record_retries(shared, &req.model, tags, scope, retries);
    let (response, latency, held) = outcome?;
    let tokens = account_answer(shared, req, &response, latency, tags, scope, usage);
    let cost = shared.pricing.cost(&req.model, &tokens);
    held.settle(tokens, cost);
    let stored = StoredChat {
        content: response.content.clone(),
        usage: tokens,
        logprobs: response.logprobs.clone(),
        latency_ms: Some(u64::try_from(latency.as_millis()).unwrap_or(u64::MAX)),
    };
    // The request is kept in the answer's own write (`requests.rs`).
    let kept = match (&shared.cache, &flight) {
        (Some(c), Some(_)) => kept_request(shared, c, req),
        _ => None,
    };
    record_live(
        shared,
        &req.model,
        tags,
        scope,
        Paid {
            tokens,
            cost,
            latency,
            retries,
        },
        flight,
        CacheKind::Chat,
        || stored.encode(),
        kept,
    )
    .await;
    Ok(ChatResponse {
        usage: Some(tokens),
        ..response
    })
}

/// An upper bound of a prompt's tokens: its bytes (a BPE token covers at least one byte).
fn prompt_bytes(req: &ChatRequest) -> u64 {
    req.messages.iter().map(|m| m.content.len() as u64).sum()
}

/// The most a call of at most `prompt` prompt tokens and the request's `max_tokens` can cost: what
/// both budgets reserve for it.
fn estimate(pricing: &crate::pricing::Pricing, req: &ChatRequest, prompt: u64) -> Spent {
    let est = TokenUsage {
        prompt_tokens: prompt,
        completion_tokens: u64::from(req.max_tokens),
        cached_tokens: 0,
    };
    Spent {
        usd: pricing.cost(&req.model, &est),
        tokens: est.prompt_tokens + est.completion_tokens,
    }
}

/// What one attempt holds while its request is out, taken in this order: the model's slot (local,
/// then shared), then the budget's reservation (local, then shared). Dropped, it gives everything
/// back — on every path: an error, a timeout, a cancelled caller.
struct Held<'s> {
    slot: Option<Slot>,
    _shared_slot: Option<SharedSlot>,
    reservation: Option<Reservation<'s>>,
    shared_reservation: Option<SharedReservation>,
}

impl Held<'_> {
    /// Both budgets learn what the call really cost; the slots go back.
    fn settle(self, tokens: TokenUsage, cost: f64) {
        let actual = Spent {
            usd: cost,
            tokens: tokens.prompt_tokens + tokens.completion_tokens,
        };
        if let Some(r) = self.reservation {
            r.settle(actual);
        }
        if let Some(r) = self.shared_reservation {
            r.settle(actual);
        }
    }
}

/// Waits for everything one attempt needs before its request goes out (see [`Held`]).
async fn hold<'s>(
    shared: &'s Layers,
    route: &Route,
    model: &str,
    tags: &CallTags,
    scope: &CallScope,
    est: Spent,
) -> Result<Held<'s>, LlmError> {
    let slot = match &route.limits {
        Some(l) => l.slot(&scope.arm).await,
        None => None,
    };
    // The shared limit shrinks with the local one: a cluster asks less of an endpoint that every
    // worker sees overloaded.
    let share = route
        .limits
        .as_ref()
        .and_then(|l| l.concurrency())
        .map_or(1.0, |c| c.share());
    let shared_slot = match &shared.shared_limits {
        Some(s) => s
            .slot(model, share)
            .await
            .map_err(|e| shared_error(tags, e))?,
        None => None,
    };
    let reservation = match shared.budget.as_deref() {
        Some(b) => Some(b.reserve(est).await.map_err(|error| LlmError::Budget {
            purpose: tags.purpose.clone(),
            error,
        })?),
        None => None,
    };
    let shared_reservation = match &shared.shared_limits {
        Some(s) => Some(s.reserve(est).await.map_err(|e| shared_error(tags, e))?),
        None => None,
    };
    Ok(Held {
        slot,
        _shared_slot: shared_slot,
        reservation,
        shared_reservation,
    })
}

/// Waits for `model`'s shared RPM/TPM, if there are shared limits; an error ends the call.
async fn admit_shared(
    shared: &Layers,
    model: &str,
    tokens: u64,
    tags: &CallTags,
) -> Result<(), LlmError> {
    let Some(s) = &shared.shared_limits else {
        return Ok(());
    };
    s.admit(model, tokens)
        .await
        .map_err(|e| shared_error(tags, e))
}

/// Stage 3: attempts until one is answered, the retries run out or an error is final (see the
/// module documentation). Returns the answer, how long its request took from when it was sent, and
/// what it holds until it settles. `rate_tokens` is the request's estimate for the TPM limit.
#[allow(clippy::too_many_arguments)]
async fn attempts<'s, T, F, Fut>(
    shared: &'s Layers,
    route: &Route,
    model: &str,
    tags: &CallTags,
    scope: &CallScope,
    (est, rate_tokens): (Spent, u64),
    usage: &mut Usage,
    mut request: F,
) -> Result<(T, Duration, Held<'s>), LlmError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let target = Target {
        provider: route.provider.name(),
        model,
        tags,
    };
    let mut n = 0;
    loop {
        let held = hold(shared, route, model, tags, scope, est).await?;
        if let Some(l) = &route.limits {
            l.admit(rate_tokens).await;
        }
        admit_shared(shared, model, rate_tokens, tags).await?;
        // The per-attempt timeout starts here: slots, budget and rate waits are not the provider's.
        let started = Instant::now();
        let result = timed(&shared.config, request()).await;
        let latency = started.elapsed();
        learn(route, &held, &result, latency, shared.config.timeout);
        let e = match result {
            Ok(v) => return Ok((v, latency, held)),
            Err(e) => e,
        };
        // The backoff waits without a slot or a reservation: others may use them meanwhile.
        drop(held);
        match after_failure(&shared.config, &target, usage, n, e) {
            Next::Retry(wait) => tokio::time::sleep(wait).await,
            Next::Fail(err) => return Err(err),
        }
        n += 1;
    }
}

/// The model's concurrency limit learns from one attempt: an answer and its latency, or a sign of
/// overload (a 429, a timeout).
fn learn<T>(
    route: &Route,
    held: &Held<'_>,
    result: &Result<T, ProviderError>,
    latency: Duration,
    timeout: Duration,
) {
    let (Some(limits), Some(slot)) = (&route.limits, &held.slot) else {
        return;
    };
    let Some(c) = limits.concurrency() else {
        return;
    };
    let outcome = match result {
        Ok(_) => Outcome::Answered(latency),
        Err(ProviderError::RateLimited { .. } | ProviderError::Timeout(_)) => Outcome::Overloaded,
        Err(_) => Outcome::Failed,
    };
    c.learn(slot, outcome, timeout);
}

/// A shared refusal is a budget refusal like the local one (the sweep stops the same way); a shared
/// layer that could not be checked is its own error.
fn shared_error(tags: &CallTags, e: SharedError) -> LlmError {
    match e {
        SharedError::Budget(error) => LlmError::Budget {
            purpose: tags.purpose.clone(),
            error,
        },
        e @ SharedError::Unavailable { .. } => LlmError::Shared {
            purpose: tags.purpose.clone(),
            message: e.to_string(),
        },
    }
}

/// A call answered from the cache: the game's usage gets the call's tokens at list price (a game's
/// cost does not depend on whether it was replayed), the ledger and metrics a $0 hit.
fn served_from_cache(
    shared: &Layers,
    model: &str,
    tags: &CallTags,
    scope: &CallScope,
    tokens: TokenUsage,
    usage: &mut Usage,
    key: Option<&cache::Key>,
) {
    let cost = shared.pricing.cost(model, &tokens);
    usage.calls += 1;
    usage.prompt_tokens += tokens.prompt_tokens;
    usage.completion_tokens += tokens.completion_tokens;
    usage.cached_tokens += tokens.cached_tokens;
    usage.cost_usd += cost;
    accounting::count_cache_hit(model, tags, scope, tokens);
    if let Some(l) = &shared.ledger {
        l.record(scope.entry(tags, model, CallSource::Cache, tokens, 0.0, key));
    }
}

/// Failed attempts that were retried, in the ledger (providers bill none of them).
fn record_retries(shared: &Layers, model: &str, tags: &CallTags, scope: &CallScope, n: u64) {
    if let Some(l) = &shared.ledger {
        for _ in 0..n {
            l.record(scope.entry(
                tags,
                model,
                CallSource::Retry,
                TokenUsage::default(),
                0.0,
                None,
            ));
        }
    }
}

/// Stage 3 for a chat request: the provider's answer, how long its request took, and what it holds.
#[allow(clippy::too_many_arguments)]
async fn call_provider<'s>(
    shared: &'s Layers,
    route: &Route,
    req: &ChatRequest,
    model_id: &str,
    tags: &CallTags,
    scope: &CallScope,
    est: Spent,
    usage: &mut Usage,
) -> Result<(ChatResponse, Duration, Held<'s>), LlmError> {
    // The endpoint may know the model by another id than the caller's name.
    let aliased;
    let sent = if model_id == req.model {
        req
    } else {
        aliased = ChatRequest {
            model: model_id.to_string(),
            ..req.clone()
        };
        &aliased
    };
    let rate_tokens = prompt_bytes(req) / 4 + u64::from(req.max_tokens);
    let (model, provider) = (&req.model, &route.provider);
    attempts(
        shared,
        route,
        model,
        tags,
        scope,
        (est, rate_tokens),
        usage,
        || provider.chat(sent),
    )
    .await
}

/// Stage 4: what the answer cost, added to the call's usage and to metrics.
fn account_answer(
    shared: &Layers,
    req: &ChatRequest,
    response: &ChatResponse,
    latency: Duration,
    tags: &CallTags,
    scope: &CallScope,
    usage: &mut Usage,
) -> TokenUsage {
    accounting::record_latency(&req.model, tags, latency);
    let tokens = accounting::chat_tokens(req, response);
    account(&shared.pricing, &req.model, tags, scope, tokens, usage);
    tokens
}

/// Stage 5: the reply's value under its schema, or why it does not fit.
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

/// Stage 6: the call succeeded.
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

/// One embedding request through the same layers.
pub(super) async fn embed(
    shared: &Layers,
    model: &str,
    inputs: &[String],
    tags: &CallTags,
    scope: Option<&CallScope>,
) -> Result<EmbedOutcome, LlmError> {
    let scope = scope.unwrap_or(&NO_SCOPE);
    let Some(route) = shared.router.route(model) else {
        return Err(LlmError::UnknownModel(model.to_string()));
    };
    let model_id = route.model_id(model);
    let mut usage = Usage::default();
    let flight = match &shared.cache {
        None => None,
        Some(c) => match c
            .lookup(cache::embed_key(&route.endpoint, model_id, inputs))
            .await
        {
            Lookup::Hit(key, bytes) => match cache::decode_vectors(&bytes) {
                Some(stored) => {
                    let tokens = accounting::embed_tokens(inputs, &stored);
                    let key = Some(&key);
                    served_from_cache(shared, model, tags, scope, tokens, &mut usage, key);
                    count_call(tags, model, "ok");
                    return Ok(EmbedOutcome {
                        vectors: stored.vectors,
                        usage,
                    });
                }
                None => None,
            },
            Lookup::Lead(f) => Some(f),
        },
    };
    let probe = ChatRequest {
        model: model.to_string(),
        messages: Vec::new(),
        temperature: 0.0,
        top_p: 1.0,
        max_tokens: 0,
        schema: None,
        logprobs: false,
        sample: 0,
        cache_key: None,
    };
    let bytes: u64 = inputs.iter().map(|i| i.len() as u64).sum();
    let est = estimate(&shared.pricing, &probe, bytes);
    let retries_before = usage.retries;
    let provider = &route.provider;
    let outcome = attempts(
        shared,
        route,
        model,
        tags,
        scope,
        (est, bytes / 4),
        &mut usage,
        || provider.embed(model_id, inputs),
    )
    .await;
    let retries = usage.retries - retries_before;
    record_retries(shared, model, tags, scope, retries);
    let (response, latency, held) = outcome?;
    let tokens = accounting::embed_tokens(inputs, &response);
    account(&shared.pricing, model, tags, scope, tokens, &mut usage);
    let cost = shared.pricing.cost(model, &tokens);
    held.settle(tokens, cost);
    record_live(
        shared,
        model,
        tags,
        scope,
        Paid {
            tokens,
            cost,
            latency,
            retries,
        },
        flight,
        CacheKind::Embedding,
        || cache::encode_vectors(&response.vectors, tokens.prompt_tokens),
        None,
    )
    .await;
    count_call(tags, model, "ok");
    Ok(EmbedOutcome {
        vectors: response.vectors,
        usage,
    })
}
