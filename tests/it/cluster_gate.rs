//! The gateway's shared limits on a real Redis, with calls over real HTTP to the in-process mock
//! model: three workers' gateways together keep a model's concurrency limit and the sweep's budget,
//! a call longer than a lease's time to live keeps its slot and its reservation, a finished call
//! gives them back, and a Redis that is gone fails the call instead of letting it through unchecked.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::redis::RedisServer;
use sleuth::cluster::budget::ClusterBudget;
use sleuth::cluster::gate::{RedisLimits, RedisRetry, Refusal};
use sleuth::cluster::limits::ClusterLimits;
use sleuth::llm::{
    BudgetLimits, CallTags, ChatRequest, Gateway, GatewayConfig, GatewayParts, LimitSettings,
    LlmError, Message, ModelLimits, OpenAiProvider, OpenAiSettings, Phase, Pricing, Route, Router,
    SharedLimits, Spent,
};
use sleuth::mockllm::{MockConfig, MockServer};
use tokio::sync::watch;

const MODEL: &str = "sim-1";

async fn conn(server: &RedisServer) -> redis::aio::ConnectionManager {
    let client = redis::Client::open(server.url()).expect("a redis URL");
    // Short timeouts and few reconnects, so a test whose server is gone fails in seconds.
    let config = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(1)))
        .set_response_timeout(Some(Duration::from_secs(2)))
        .set_number_of_retries(1);
    redis::aio::ConnectionManager::new_with_config(client, config)
        .await
        .expect("connect to the test server")
}

async fn mock(max_concurrency: Option<usize>) -> MockServer {
    MockServer::start(
        "127.0.0.1:0".parse().expect("addr"),
        MockConfig {
            latency: Duration::from_millis(25),
            latency_jitter: Duration::from_millis(10),
            max_concurrency,
            retry_after_ms: 5,
            ..MockConfig::default()
        },
    )
    .await
    .expect("mock server starts")
}

/// One worker's gateway: a route to the mock with the model's local limits (as the sweep's models
/// table gives every worker), and the shared ones if any.
async fn worker_gateway(
    server: &MockServer,
    settings: LimitSettings,
    shared: Option<Arc<dyn SharedLimits>>,
) -> Gateway {
    let provider = OpenAiProvider::new(&OpenAiSettings::new(
        server.base_url(),
        "test-key",
        Duration::from_secs(10),
    ))
    .expect("client builds");
    let mut route = Route::new(Arc::new(provider), Some(&server.base_url()));
    route.limits = ModelLimits::new(MODEL, settings).map(Arc::new);
    let mut router = Router::default();
    router.add(MODEL, route);
    Gateway::start_with(GatewayParts {
        router,
        pricing: Pricing::default(),
        config: GatewayConfig {
            max_retries: 30,
            backoff_base: Duration::from_millis(2),
            backoff_max: Duration::from_millis(20),
            ..GatewayConfig::default()
        },
        cache: None,
        budget: None,
        ledger: None,
        shared,
        batch: None,
    })
    .await
    .expect("a gateway starts")
}

fn request(worker: usize, call: usize, max_tokens: u32) -> (ChatRequest, CallTags) {
    // A prompt of ordinary words: its bytes bound its tokens with room for the chat format's own.
    let text = format!(
        "Worker {worker} asks question number {call}: where was the butler at nine o'clock, and \
         who saw him walk from the library to the garden before the lights went out?"
    );
    let req = ChatRequest {
        model: MODEL.into(),
        messages: vec![Message::user(text)],
        temperature: 0.0,
        top_p: 1.0,
        max_tokens,
        schema: None,
        logprobs: false,
        sample: (worker * 1000 + call) as u64,
        cache_key: None,
    };
    let tags = CallTags {
        game: format!("g{worker}"),
        agent: "Ada".into(),
        framework: "mirage".into(),
        phase: Phase::Gameplay,
        purpose: "answer".into(),
    };
    (req, tags)
}

fn limits(max_concurrency: u32) -> (LimitSettings, BTreeMap<String, LimitSettings>) {
    let s = LimitSettings {
        max_concurrency: Some(max_concurrency),
        ..LimitSettings::default()
    };
    (s, BTreeMap::from([(MODEL.to_string(), s)]))
}

/// Fires `per_worker` concurrent calls through each gateway; every call's result.
async fn fire(
    gateways: &[Gateway],
    per_worker: usize,
) -> Vec<Result<sleuth::llm::ChatOutcome, LlmError>> {
    let mut tasks = Vec::new();
    for (w, gw) in gateways.iter().enumerate() {
        for c in 0..per_worker {
            let gw = gw.clone();
            tasks.push(tokio::spawn(async move {
                let (req, tags) = request(w, c, 16);
                gw.chat(req, tags).await
            }));
        }
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.expect("a call task"));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_together_keep_the_endpoints_concurrency_limit() {
    let Some(redis) = RedisServer::start(&[]) else {
        return;
    };
    const C: u32 = 3;
    let (local, models) = limits(C);

    // With the shared limits: the endpoint never sees more than C calls at once.
    let server = mock(Some(C as usize)).await;
    let mut gateways = Vec::new();
    for w in 0..3 {
        let shared = RedisLimits::new(
            conn(&redis).await,
            "gate",
            &format!("w{w}"),
            "s",
            BudgetLimits::default(),
            models.clone(),
        );
        gateways.push(worker_gateway(&server, local, Some(Arc::new(shared))).await);
    }
    let results = fire(&gateways, 20).await;
    let failed: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(failed.is_empty(), "failed calls: {failed:?}");
    let stats = server.stats();
    assert_eq!(stats.ok, 60, "{stats:?}");
    assert_eq!(
        stats.rate_limited, 0,
        "the endpoint refused calls over its limit: {stats:?}"
    );
    let retries: u64 = results
        .iter()
        .map(|r| r.as_ref().map_or(0, |o| o.usage.retries))
        .sum();
    assert_eq!(retries, 0, "no call had to be retried");
    let cl = ClusterLimits::new(conn(&redis).await, "gate");
    wait_for("every slot to come back", || {
        let cl = cl.clone();
        async move { cl.held(MODEL).await.expect("held") == 0 }
    })
    .await;
    for gw in &gateways {
        gw.stop();
    }

    // The control: the same load with each worker's local limit alone is C per worker, 3·C at once.
    let server = mock(Some(C as usize)).await;
    let mut gateways = Vec::new();
    for _ in 0..3 {
        gateways.push(worker_gateway(&server, local, None).await);
    }
    // Some calls may run out of retries: what matters is that the endpoint had to refuse any.
    fire(&gateways, 20).await;
    let stats = server.stats();
    assert!(
        stats.rate_limited > 0,
        "without shared limits three workers overrun the endpoint: {stats:?}"
    );
    for gw in &gateways {
        gw.stop();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_stop_at_the_sweeps_budget_and_one_refusal_is_first() {
    let Some(redis) = RedisServer::start(&[]) else {
        return;
    };
    const CAP: u64 = 4_000;
    let caps = BudgetLimits {
        max_usd: None,
        max_tokens: Some(CAP),
    };
    let server = mock(None).await;
    let mut refused: Vec<watch::Receiver<Option<Refusal>>> = Vec::new();
    let mut tasks = Vec::new();
    let mut gateways = Vec::new();
    for w in 0..3 {
        let shared = RedisLimits::new(
            conn(&redis).await,
            "gate",
            &format!("w{w}"),
            "s",
            caps,
            BTreeMap::new(),
        );
        refused.push(shared.refused());
        let gw = worker_gateway(&server, LimitSettings::default(), Some(Arc::new(shared))).await;
        gateways.push(gw.clone());
        // Each worker plays four games at once; each game calls until the budget refuses it.
        for g in 0..4 {
            let gw = gw.clone();
            tasks.push(tokio::spawn(async move {
                let (mut ok_tokens, mut refusals) = (0u64, 0u64);
                for c in 0..200 {
                    let (req, tags) = request(w, g * 1000 + c, 60);
                    match gw.chat(req, tags).await {
                        Ok(o) => ok_tokens += o.usage.prompt_tokens + o.usage.completion_tokens,
                        Err(LlmError::Budget { error, .. }) => {
                            assert!(
                                error.limit.contains("max_tokens"),
                                "the limit is named: {error}"
                            );
                            refusals += 1;
                            break;
                        }
                        Err(e) => panic!("a call failed for another reason: {e}"),
                    }
                }
                (ok_tokens, refusals)
            }));
        }
    }
    let (mut paid, mut refusals) = (0, 0);
    for t in tasks {
        let (p, r) = t.await.expect("a game");
        paid += p;
        refusals += r;
    }
    assert_eq!(refusals, 12, "every game was stopped by the budget");
    assert!(paid > 0, "calls were made before the budget ran out");

    // Settling happens just after a call returns: wait for the shared total to have every call.
    let budget = ClusterBudget::new(conn(&redis).await, "gate");
    wait_for("the shared total to have every call", || {
        let budget = budget.clone();
        async move { budget.spent("s").await.expect("spent").tokens == paid }
    })
    .await;
    assert!(
        paid <= CAP,
        "the workers together spent {paid} tokens of a cap of {CAP}"
    );

    let seen: Vec<Refusal> = refused
        .iter()
        .map(|r| r.borrow().clone().expect("every worker met a refusal"))
        .collect();
    let firsts = seen.iter().filter(|r| r.first).count();
    assert_eq!(
        firsts, 1,
        "exactly one worker marks the sweep stopped: {seen:?}"
    );
    for gw in &gateways {
        gw.stop();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_held_past_its_ttl_is_renewed_not_stolen_and_comes_back_when_dropped() {
    let Some(redis) = RedisServer::start(&[]) else {
        return;
    };
    // Renewed every third of it: 1 s between renewals leaves 2 s for a loaded machine's pauses.
    let ttl = Duration::from_secs(3);
    let (_, models) = limits(1);
    let a = RedisLimits::new(
        conn(&redis).await,
        "gate",
        "a",
        "s",
        BudgetLimits::default(),
        models.clone(),
    )
    .with_lease_ttl(ttl);
    let b = RedisLimits::new(
        conn(&redis).await,
        "gate",
        "b",
        "s",
        BudgetLimits::default(),
        models,
    )
    .with_lease_ttl(ttl);
    let cl = ClusterLimits::new(conn(&redis).await, "gate");

    let held = a.slot(MODEL, 1.0).await.expect("a slot").expect("a limit");
    // Two TTLs later the lease is still a's: renewed, and no one else can take the only slot.
    tokio::time::sleep(ttl * 2).await;
    assert_eq!(cl.held(MODEL).await.expect("held"), 1);
    assert!(
        !cl.try_slot(MODEL, 1, "thief", ttl).await.expect("try"),
        "a renewed slot is not free"
    );
    let waiting = tokio::time::timeout(ttl, b.slot(MODEL, 1.0)).await;
    assert!(waiting.is_err(), "b waits while a holds the slot");

    drop(held);
    wait_for("the dropped slot to come back", || {
        let cl = cl.clone();
        async move { cl.held(MODEL).await.expect("held") == 0 }
    })
    .await;
    let got = tokio::time::timeout(Duration::from_secs(30), b.slot(MODEL, 1.0))
        .await
        .expect("b gets the slot once a let it go")
        .expect("a slot");
    assert!(got.is_some());
    drop(got);

    // A model without a concurrency limit takes no slot.
    assert!(a.slot("unlimited", 1.0).await.expect("no limit").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_held_past_its_ttl_is_renewed_and_a_dropped_one_is_released() {
    let Some(redis) = RedisServer::start(&[]) else {
        return;
    };
    // Renewed every third of it: 1 s between renewals leaves 2 s for a loaded machine's pauses.
    let ttl = Duration::from_secs(3);
    let caps = BudgetLimits {
        max_usd: None,
        max_tokens: Some(100),
    };
    let tokens = |tokens| Spent { usd: 0.0, tokens };
    let a = RedisLimits::new(conn(&redis).await, "gate", "a", "s", caps, BTreeMap::new())
        .with_lease_ttl(ttl);
    let b = RedisLimits::new(conn(&redis).await, "gate", "b", "s", caps, BTreeMap::new())
        .with_lease_ttl(ttl);

    let long_call = a.reserve(tokens(80)).await.expect("fits");
    // 30 fits beside what was spent (nothing) but not beside the long call's 80: b waits (busy),
    // it is not refused, through several TTLs while the long call's lease is renewed.
    let waiting = tokio::spawn(async move {
        let r = b.reserve(tokens(30)).await;
        (b, r)
    });
    tokio::time::sleep(ttl * 2).await;
    assert!(
        !waiting.is_finished(),
        "the long call still holds its 80 tokens"
    );
    // Dropped unsettled (the call failed): released, nothing spent, and b gets its room.
    drop(long_call);
    let (b, again) = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("b got its reservation once the long call released it")
        .expect("task");
    let again = again.expect("granted, not refused");
    let budget = ClusterBudget::new(conn(&redis).await, "gate");
    again.settle(tokens(25));
    wait_for("the settled call to count", || {
        let budget = budget.clone();
        async move { budget.spent("s").await.expect("spent").tokens == 25 }
    })
    .await;
    // Being crowded out is not a refusal: nothing marks the sweep stopped.
    assert!(b.refused().borrow().is_none());
    assert!(a.refused().borrow().is_none());
    // A call that cannot fit beside what was spent is refused, and it is the sweep's first.
    assert!(b.reserve(tokens(80)).await.is_err());
    let r = b.refused().borrow().clone().expect("b met a refusal");
    assert!(r.first, "{r:?}");
    assert_eq!(r.limit, "max_tokens = 100");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_fails_with_a_clear_error_when_redis_is_gone() {
    let Some(redis) = RedisServer::start(&[]) else {
        return;
    };
    let server = mock(None).await;
    let (local, models) = limits(2);
    let shared = RedisLimits::new(
        conn(&redis).await,
        "gate",
        "w",
        "s",
        BudgetLimits {
            max_usd: None,
            max_tokens: Some(1_000_000),
        },
        models,
    )
    .with_retry(RedisRetry {
        attempts: 3,
        base: Duration::from_millis(20),
        max: Duration::from_millis(100),
    });
    let gw = worker_gateway(&server, local, Some(Arc::new(shared))).await;
    let (req, tags) = request(0, 0, 16);
    gw.chat(req, tags).await.expect("a call while Redis is up");

    drop(redis);
    let (req, tags) = request(0, 1, 16);
    let out = tokio::time::timeout(Duration::from_secs(60), gw.chat(req, tags))
        .await
        .expect("the call ends instead of hanging");
    match out {
        Err(e @ LlmError::Shared { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("answer") && text.contains("shared limits unavailable"),
                "{text}"
            );
        }
        other => panic!("expected LlmError::Shared, got {other:?}"),
    }
    assert_eq!(
        server.stats().requests,
        1,
        "the unchecked call was never sent"
    );
    gw.stop();
}

/// Polls `check` until it holds, for up to ten seconds.
async fn wait_for<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
