//! The gateway end to end, against a provider that answers from a script of outcomes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::{Gateway, GatewayConfig, LlmError};
use crate::pricing::Pricing;
use crate::provider::{EmbedResponse, Provider, ProviderError};
use crate::sections::sections_schema_line;
use crate::tokens;
use crate::types::{
    CallTags, ChatRequest, ChatResponse, ChatRole, Message, Phase, ResponseSchema, TokenUsage,
};

/// Answers from a script of outcomes, one per attempt, and records the requests it saw.
struct Scripted {
    outcomes: Mutex<Vec<Result<ChatResponse, ProviderError>>>,
    seen: Mutex<Vec<ChatRequest>>,
}

impl Provider for Scripted {
    fn name(&self) -> &'static str {
        "scripted"
    }
    fn chat<'a>(
        &'a self,
        req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            self.seen.lock().expect("lock").push(req.clone());
            self.outcomes.lock().expect("lock").remove(0)
        })
    }
    fn embed<'a>(
        &'a self,
        _m: &'a str,
        _i: &'a [String],
    ) -> BoxFuture<'a, Result<EmbedResponse, ProviderError>> {
        Box::pin(async { Err(ProviderError::Decode("no embeddings here".into())) })
    }
}

fn ok(content: &str, usage: Option<TokenUsage>) -> Result<ChatResponse, ProviderError> {
    Ok(ChatResponse {
        content: content.into(),
        usage,
        logprobs: None,
        notes: Default::default(),
    })
}

fn request(schema: Option<Value>) -> ChatRequest {
    ChatRequest {
        model: "m".into(),
        messages: vec![
            Message::system("sys"),
            Message::user("Context.\n\nQuestion: who?"),
        ],
        temperature: 0.8,
        top_p: 1.0,
        max_tokens: 50,
        schema: schema.map(|s| ResponseSchema::json("vote", s)),
        logprobs: false,
        sample: 1,
        cache_key: None,
    }
}

fn tags() -> CallTags {
    CallTags {
        game: "g".into(),
        agent: "a".into(),
        framework: "f".into(),
        phase: Phase::Gameplay,
        purpose: "vote".into(),
    }
}

async fn gateway(outcomes: Vec<Result<ChatResponse, ProviderError>>) -> (Gateway, Arc<Scripted>) {
    let p = Arc::new(Scripted {
        outcomes: Mutex::new(outcomes),
        seen: Mutex::new(Vec::new()),
    });
    let config = GatewayConfig {
        backoff_base: Duration::from_millis(1),
        backoff_max: Duration::from_millis(5),
        ..Default::default()
    };
    (
        Gateway::start(p.clone(), Pricing::default(), config)
            .await
            .expect("gateway starts"),
        p,
    )
}

#[tokio::test]
async fn unparseable_output_is_counted_and_re_asked_with_the_question_last() {
    let u = Some(TokenUsage {
        prompt_tokens: 10,
        completion_tokens: 3,
        cached_tokens: 0,
    });
    let (gw, p) = gateway(vec![ok("I think Ada", u), ok("{\"vote\": \"Ada\"}", u)]).await;
    let schema = json!({"type": "object", "properties": {"vote": {"type": "string", "enum": ["Ada", "Ben"]}}, "required": ["vote"]});
    let out = gw
        .chat(request(Some(schema)), tags())
        .await
        .expect("second attempt parses");
    assert_eq!(out.json, Some(json!({"vote": "Ada"})));
    assert_eq!(
        (
            out.usage.calls,
            out.usage.parse_failures,
            out.usage.prompt_tokens
        ),
        (2, 1, 20)
    );
    let seen = p.seen.lock().expect("lock");
    let rerun = &seen[1].messages;
    assert_eq!(rerun[2].role, ChatRole::Assistant);
    assert_eq!(&*rerun[2].content, "I think Ada");
    assert!(
        rerun[3].content.ends_with("Question: who?"),
        "{}",
        rerun[3].content
    );
    assert_ne!(seen[0].sample, seen[1].sample, "a rerun samples afresh");
}

fn vote_schema() -> Value {
    json!({"type": "object", "properties": {"vote": {"type": "string", "enum": ["Ada", "Ben"]}, "confidence": {"type": "integer", "minimum": 0, "maximum": 2}}, "required": ["vote"]})
}

#[tokio::test]
async fn unparseable_sections_are_re_asked_in_the_section_format() {
    let (gw, p) = gateway(vec![
        ok("{\"vote\": \"Ada\"}", None),
        ok("### THOUGHT: fine\n### RESPONSE: {\"vote\": \"Ada\"}", None),
    ])
    .await;
    let schema = vote_schema();
    let mut req = request(None);
    let format = format!(
        "### Reply format\nTwo sections, please.\n{}",
        sections_schema_line(&schema)
    );
    req.messages[1].content = format!("Context.\n\nQuestion: who?\n\n{format}").into();
    req.schema = Some(ResponseSchema::sections("vote", schema));
    let out = gw.chat(req, tags()).await.expect("the rerun parses");
    assert_eq!(out.json, Some(json!({"vote": "Ada"})));
    assert_eq!(out.usage.parse_failures, 1);
    let seen = p.seen.lock().expect("lock");
    let rerun = &seen[1].messages[3].content;
    assert!(rerun.contains("### RESPONSE:"), "{rerun}");
    assert!(!rerun.contains("only a JSON object"), "{rerun}");
    assert!(
        rerun.ends_with(&format),
        "the format paragraph comes last: {rerun}"
    );
    assert!(
        rerun.contains("Question: who?\n\n### Reply format"),
        "{rerun}"
    );
}

#[tokio::test]
async fn transient_errors_are_retried_after_the_servers_wait() {
    let wait = Some(Duration::from_millis(40));
    let (gw, p) = gateway(vec![
        Err(ProviderError::RateLimited { retry_after: wait }),
        Err(ProviderError::Server {
            status: 503,
            retry_after: wait,
        }),
        ok("fine", None),
    ])
    .await;
    let started = std::time::Instant::now();
    let out = gw
        .chat(request(None), tags())
        .await
        .expect("third attempt succeeds");
    assert!(
        started.elapsed() >= Duration::from_millis(80),
        "honoured Retry-After twice: {:?}",
        started.elapsed()
    );
    assert_eq!((out.usage.calls, out.usage.retries), (1, 2));
    // No usage reported: counted locally with tiktoken.
    assert_eq!(out.usage.completion_tokens, tokens::count("fine"));
    assert_eq!(
        out.usage.prompt_tokens,
        tokens::count_messages(&p.seen.lock().expect("lock")[2].messages)
    );
}

#[tokio::test]
async fn refusals_are_not_retried() {
    let (gw, p) = gateway(vec![
        Err(ProviderError::Refused {
            status: 401,
            message: "bad key".into(),
        }),
        ok("never", None),
    ])
    .await;
    let err = gw
        .chat(request(None), tags())
        .await
        .expect_err("401 is final");
    assert!(matches!(err, LlmError::Refused { .. }), "{err:?}");
    assert_eq!(p.seen.lock().expect("lock").len(), 1);
}

/// A gateway over `p` with the cache in a fresh SQLite store, a ledger, and optionally a budget.
async fn layered(
    p: Arc<Scripted>,
    budget: Option<Arc<super::Budget>>,
) -> (Gateway, super::Ledger, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn sleuth_store::Store> =
        Arc::new(sleuth_store::SqliteStore::open(&dir.path().join("s.db")).expect("store"));
    let mut pricing = Pricing::default();
    pricing.set(
        "m",
        crate::ModelPrice {
            input: 1.0,
            cached_input: None,
            output: 1.0,
            batch_input: None,
            batch_output: None,
        },
    );
    let ledger = super::Ledger::start(store.clone());
    let gw = Gateway::start_with(super::GatewayParts {
        router: super::Router::single(super::Route::new(p, Some("http://x/v1"))),
        pricing,
        config: GatewayConfig {
            backoff_base: Duration::from_millis(1),
            backoff_max: Duration::from_millis(5),
            ..Default::default()
        },
        cache: Some(store),
        budget,
        ledger: Some(ledger.clone()),
        shared: None,
        batch: None,
    })
    .await
    .expect("gateway starts");
    (gw, ledger, dir)
}

fn scripted(outcomes: Vec<Result<ChatResponse, ProviderError>>) -> Arc<Scripted> {
    Arc::new(Scripted {
        outcomes: Mutex::new(outcomes),
        seen: Mutex::new(Vec::new()),
    })
}

fn tu(p: u64, c: u64) -> Option<TokenUsage> {
    Some(TokenUsage {
        prompt_tokens: p,
        completion_tokens: c,
        cached_tokens: 0,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_call_is_served_from_the_cache_with_the_same_usage_at_no_cost() {
    let p = scripted(vec![ok("Ada was on deck.", tu(100, 5))]);
    let (gw, ledger, _dir) = layered(p.clone(), None).await;
    let scope = Arc::new(super::CallScope {
        sweep: "s".into(),
        run: "r".into(),
        arm: "a1".into(),
    });
    let gw = gw.scoped(scope);
    let first = gw.chat(request(None), tags()).await.expect("live");
    let second = gw.chat(request(None), tags()).await.expect("cached");
    assert_eq!(
        p.seen.lock().expect("lock").len(),
        1,
        "the provider answered once"
    );
    assert_eq!(first.response.content, second.response.content);
    // The game's usage is the same either way (its cost does not depend on a replay)…
    assert_eq!(first.usage, second.usage);
    // …the ledger says what was paid: one live call, one hit at $0.
    ledger.flush().await;
    let totals = ledger.store().totals("s").await.expect("totals");
    let live = totals
        .iter()
        .find(|t| t.source == "live")
        .expect("live row");
    let hit = totals
        .iter()
        .find(|t| t.source == "cache")
        .expect("cache row");
    assert_eq!((live.calls, live.prompt_tokens), (1, 100));
    assert!((live.cost_usd - 105e-6).abs() < 1e-12);
    assert_eq!((hit.calls, hit.cost_usd), (1, 0.0));
    assert_eq!(hit.arm, "a1");
    // Another sample index is another call.
    let mut other = request(None);
    other.sample = 2;
    assert!(
        gw.chat(other, tags()).await.is_err(),
        "the script had one answer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_identical_calls_make_one_live_call() {
    /// Answers after a pause, counting calls.
    struct Slow(std::sync::atomic::AtomicU32);
    impl Provider for Slow {
        fn name(&self) -> &'static str {
            "slow"
        }
        fn chat<'a>(
            &'a self,
            _req: &'a ChatRequest,
        ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
            Box::pin(async move {
                self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(50)).await;
                ok("Ben.", tu(10, 1))
            })
        }
        fn embed<'a>(
            &'a self,
            _m: &'a str,
            _i: &'a [String],
        ) -> BoxFuture<'a, Result<EmbedResponse, ProviderError>> {
            Box::pin(async { Err(ProviderError::Decode("none".into())) })
        }
    }
    let slow = Arc::new(Slow(Default::default()));
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn sleuth_store::Store> =
        Arc::new(sleuth_store::SqliteStore::open(&dir.path().join("s.db")).expect("store"));
    let gw = Gateway::start_with(super::GatewayParts {
        router: super::Router::single(super::Route::new(slow.clone(), None)),
        pricing: Pricing::default(),
        config: GatewayConfig::default(),
        cache: Some(store),
        budget: None,
        ledger: None,
        shared: None,
        batch: None,
    })
    .await
    .expect("gateway");
    let outs = futures::future::join_all((0..8).map(|_| gw.chat(request(None), tags()))).await;
    for o in outs {
        assert_eq!(o.expect("answered").response.content, "Ben.");
    }
    assert_eq!(slow.0.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_would_pass_the_budget_is_refused_before_it_is_made() {
    let budget = Arc::new(super::Budget::new(
        super::BudgetLimits {
            max_usd: None,
            max_tokens: Some(500),
        },
        super::Spent::default(),
    ));
    let p = scripted(vec![ok("Ada.", tu(40, 5)), ok("Ben.", tu(40, 5))]);
    let (gw, _ledger, _dir) = layered(p.clone(), Some(budget.clone())).await;
    // The request's bound is its bytes (≈ 30) + max_tokens (50): the first fits, then 45 are spent.
    gw.chat(request(None), tags()).await.expect("fits");
    let mut big = request(None);
    big.max_tokens = 480;
    big.sample = 9;
    let err = gw.chat(big, tags()).await.expect_err("refused");
    assert!(matches!(err, LlmError::Budget { .. }), "{err}");
    assert_eq!(
        p.seen.lock().expect("lock").len(),
        1,
        "the refused call was never made"
    );
    assert!(*budget.exhausted().borrow());
    assert_eq!(budget.spent().tokens, 45);
}

#[tokio::test]
async fn a_model_without_a_route_is_an_error() {
    let gw = Gateway::start_with(super::GatewayParts {
        router: super::Router::default(),
        pricing: Pricing::default(),
        config: GatewayConfig::default(),
        cache: None,
        budget: None,
        ledger: None,
        shared: None,
        batch: None,
    })
    .await
    .expect("gateway");
    let err = gw.chat(request(None), tags()).await.expect_err("refused");
    assert!(
        err.to_string().contains("no endpoint for model `m`"),
        "{err}"
    );
}

/// An endpoint that answers every request with the same usage after `latency`: at once (a healthy
/// hosted model), or — with `one_slot` — one request at a time, queueing the rest, as a workstation's
/// llama.cpp server does. A queued request runs to its end even when its caller gave up on it.
struct Endpoint {
    latency: Duration,
    one_slot: Option<Arc<tokio::sync::Mutex<()>>>,
    calls: std::sync::atomic::AtomicU32,
}

impl Endpoint {
    fn new(latency: Duration, one_slot: bool) -> Arc<Endpoint> {
        Arc::new(Endpoint {
            latency,
            one_slot: one_slot.then(Arc::default),
            calls: Default::default(),
        })
    }
}

impl Provider for Endpoint {
    fn name(&self) -> &'static str {
        "endpoint"
    }
    fn chat<'a>(
        &'a self,
        _req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let latency = self.latency;
            match &self.one_slot {
                Some(slot) => {
                    let slot = slot.clone();
                    let _ = tokio::spawn(async move {
                        let _held = slot.lock().await;
                        tokio::time::sleep(latency).await;
                    })
                    .await;
                }
                None => tokio::time::sleep(latency).await,
            }
            ok("Ada.", tu(40, 5))
        })
    }
    fn embed<'a>(
        &'a self,
        _m: &'a str,
        _i: &'a [String],
    ) -> BoxFuture<'a, Result<EmbedResponse, ProviderError>> {
        Box::pin(async { Err(ProviderError::Decode("none".into())) })
    }
}

/// A gateway over `p` with the model's `limits`, an optional budget and `config`; no cache.
async fn limited(
    p: Arc<dyn Provider>,
    limits: super::LimitSettings,
    budget: Option<Arc<super::Budget>>,
    config: GatewayConfig,
) -> (Gateway, Arc<super::ModelLimits>) {
    let limits = Arc::new(super::ModelLimits::new("m", limits).expect("limits"));
    let mut route = super::Route::new(p, Some("http://x/v1"));
    route.limits = Some(limits.clone());
    let gw = Gateway::start_with(super::GatewayParts {
        router: super::Router::single(route),
        pricing: Pricing::default(),
        config,
        cache: None,
        budget,
        ledger: None,
        shared: None,
        batch: None,
    })
    .await
    .expect("gateway starts");
    (gw, limits)
}

fn quick_retries() -> GatewayConfig {
    GatewayConfig {
        backoff_base: Duration::from_millis(1),
        backoff_max: Duration::from_millis(5),
        ..Default::default()
    }
}

/// Issue 23, item 1: thousands of calls queued behind a few slots, with a budget the whole load fits
/// in. Calls waiting for a slot must hold no budget, and a call crowded out by calls in flight must
/// wait, not end the sweep: every call is answered, and the spend stays under the cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_calls_behind_few_slots_all_fit_a_budget_sized_for_them() {
    const CALLS: u64 = 3_000;
    // The request's bound: its bytes (27) as tokens + max_tokens (50); it really costs 40 + 5.
    let (bound, cost) = (27 + 50, 45);
    let cap = CALLS * cost + bound;
    let budget = Arc::new(super::Budget::new(
        super::BudgetLimits {
            max_usd: None,
            max_tokens: Some(cap),
        },
        super::Spent::default(),
    ));
    let limits = super::LimitSettings {
        max_concurrency: Some(50),
        ..Default::default()
    };
    let p = Endpoint::new(Duration::from_millis(1), false);
    let (gw, _) = limited(p.clone(), limits, Some(budget.clone()), quick_retries()).await;
    let calls = (0..CALLS).map(|i| {
        let gw = gw.clone();
        tokio::spawn(async move {
            let mut req = request(None);
            req.sample = i;
            gw.chat(req, tags()).await
        })
    });
    let outs = futures::future::join_all(calls).await;
    let refused = outs.iter().filter(|o| !matches!(o, Ok(Ok(_)))).count();
    assert_eq!(refused, 0, "every call fits the budget");
    assert!(!*budget.exhausted().borrow(), "the budget was never spent");
    assert_eq!(budget.spent().tokens, CALLS * cost);
    assert!(budget.spent().tokens <= cap);
    assert_eq!(
        u64::from(p.calls.load(std::sync::atomic::Ordering::SeqCst)),
        CALLS
    );
}

/// Issue 23, item 2: the per-attempt timeout covers the provider's request only. A TPM wait of about
/// a second, with a 100 ms timeout, must be waited out — not turned into timeouts and retries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_rate_limit_wait_is_not_a_timeout() {
    // 60,000 tokens a minute is 1,000 a second with a burst of 60,000. Each request is bounded at
    // 30,500 tokens (27 bytes / 4 + max_tokens): the first passes, the second waits ~1 s.
    let limits = super::LimitSettings {
        tpm: Some(60_000),
        ..Default::default()
    };
    let config = GatewayConfig {
        timeout: Duration::from_millis(100),
        max_retries: 3,
        ..quick_retries()
    };
    let p = Endpoint::new(Duration::ZERO, false);
    let (gw, _) = limited(p.clone(), limits, None, config).await;
    let mut req = request(None);
    req.max_tokens = 30_500 - 6;
    let first = gw
        .chat(req.clone(), tags())
        .await
        .expect("the first passes");
    assert_eq!(first.usage.retries, 0);
    req.sample = 2;
    let started = std::time::Instant::now();
    let second = gw
        .chat(req, tags())
        .await
        .expect("the second waits for its tokens, then is answered");
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "it did wait for the rate: {:?}",
        started.elapsed()
    );
    assert_eq!(second.usage.retries, 0, "the wait was not a timeout");
    assert_eq!(p.calls.load(std::sync::atomic::Ordering::SeqCst), 2);
}

/// Issue 19, item 3: a burst of calls to a server that answers one request at a time and queues the
/// rest, with a timeout shorter than the queue. The adaptive limit must come down (timeouts and slow
/// answers cut it) so that calls stop timing out in the queue: every call is answered, none is
/// retried more than twice, and the limit went below where it started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_against_a_one_slot_queueing_server_lowers_the_limit_and_completes() {
    let limits = super::LimitSettings {
        max_concurrency: Some(16),
        initial_concurrency: Some(4),
        adaptive: true,
        ..Default::default()
    };
    // Four at once queue for 400 ms at the server: longer than the timeout.
    let config = GatewayConfig {
        timeout: Duration::from_millis(350),
        ..quick_retries()
    };
    let p = Endpoint::new(Duration::from_millis(100), true);
    let (gw, limits) = limited(p.clone(), limits, None, config).await;
    let concurrency = limits.concurrency().expect("a concurrency limit");
    assert_eq!(concurrency.limit(), 4);
    let lowest = Arc::new(std::sync::atomic::AtomicU32::new(4));
    let watch = tokio::spawn({
        let (limits, lowest) = (limits.clone(), lowest.clone());
        async move {
            loop {
                if let Some(c) = limits.concurrency() {
                    lowest.fetch_min(c.limit(), std::sync::atomic::Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    });
    let calls = (0..24).map(|i| {
        let gw = gw.clone();
        tokio::spawn(async move {
            let mut req = request(None);
            req.sample = i;
            gw.chat(req, tags()).await
        })
    });
    let outs = futures::future::join_all(calls).await;
    watch.abort();
    for o in outs {
        let out = o.expect("task").expect("every call is answered");
        assert!(
            out.usage.retries <= 2,
            "retried {} times",
            out.usage.retries
        );
    }
    let lowest = lowest.load(std::sync::atomic::Ordering::SeqCst);
    assert!(lowest < 4, "the limit came down (lowest {lowest})");
}
