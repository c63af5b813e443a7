//! The gateway's CPU cost per call with every layer a sweep turns on: the router, the
//! content-addressed cache in a real SQLite store (with single flight), the budget, the model's
//! limits (fair concurrency slots, RPM and TPM from governor) and the ledger writing to the same
//! store. `benches/game.rs` measures the bare gateway (no layers); this is the figure issue 11's
//! "≤ 50 µs CPU per call with all layers on" is about.
//!
//! * `gateway_layers/miss_cpu/{sequential,concurrent/1000}`: every call has a new sample index, so it
//!   misses the cache: a read on the store's reader pool, the flight, the budget's reservation, a
//!   concurrency slot and the rate limiters, the provider (which answers at once), accounting, and the
//!   answer with its ledger entry committed by the store's writer thread before the reply.
//! * `gateway_layers/hit_cpu/{sequential,concurrent/1000}`: the same calls asked again: a store read,
//!   the stored answer decoded, and a ledger entry queued for the ledger's batch writer.
//!
//! The reported time is the whole process's CPU time (all threads: tokio workers, the blocking pool
//! running store reads, the store's writer thread), divided per call by criterion's throughput. Limits
//! are set high enough never to make a call wait: what is measured is their bookkeeping.
//!
//! Run with `cargo bench --bench gateway` (`scripts/bench.sh` runs it too). See `docs/performance.md`.

#[path = "support/cpu.rs"]
mod cpu;
mod support;
use cpu::{cpu_bench, Call};
use support::{process_cpu_time, InstantProvider};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use futures::future::{join_all, BoxFuture};
use sleuth::llm::{
    Budget, BudgetLimits, CallScope, CallTags, ChatRequest, Gateway, GatewayConfig, GatewayParts,
    Ledger, LimitSettings, Message, ModelLimits, Phase, Pricing, Route, Router, Spent,
};
use sleuth::store::{SqliteStore, Store};

const MODEL: &str = "gpt-4o-mini";
const BATCH: usize = 1_000;
/// Distinct calls stored before the hit benchmarks, asked again in turn.
const STORED: u64 = 2_000;

/// A gateway with every layer on, over a store in `dir`, handing out calls for one arm of a sweep.
async fn layered_gateway(dir: &std::path::Path) -> (Gateway, Ledger) {
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(&dir.join("sleuth.db")).expect("the store opens"));
    let mut route = Route::new(
        Arc::new(InstantProvider {
            reply: "Ada was in the saloon at 1 am; the steward saw her there.",
            completion_tokens: 14,
        }),
        Some("http://127.0.0.1:1/v1"),
    );
    route.limits = ModelLimits::new(
        MODEL,
        LimitSettings {
            rpm: Some(u32::MAX),
            tpm: Some(u32::MAX),
            max_concurrency: Some(100_000),
            ..LimitSettings::default()
        },
    )
    .map(Arc::new);
    let mut router = Router::default();
    router.add(MODEL, route);
    let ledger = Ledger::start(store.clone());
    let budget = Budget::new(
        BudgetLimits {
            max_usd: Some(1e12),
            max_tokens: Some(u64::MAX / 4),
        },
        Spent::default(),
    );
    let gateway = Gateway::start_with(GatewayParts {
        router,
        pricing: Pricing::builtin(),
        config: GatewayConfig::default(),
        cache: Some(store),
        budget: Some(Arc::new(budget)),
        ledger: Some(ledger.clone()),
        shared: None,
        batch: None,
    })
    .await
    .expect("the gateway starts");
    let scope = Arc::new(CallScope {
        sweep: "bench".into(),
        run: "bench-run".into(),
        arm: "a1b2c3d4e5f6".into(),
    });
    (gateway.scoped(scope), ledger)
}

fn request(sample: u64) -> ChatRequest {
    ChatRequest {
        model: MODEL.into(),
        messages: vec![
            Message::system(
                "You are Ada Finch, the stewardess of the night ferry. Answer as your character, \
                 from your script and what you remember of the game.",
            ),
            Message::user("Where were you at 1 am, and who saw you there?"),
        ],
        temperature: 0.8,
        top_p: 1.0,
        max_tokens: 300,
        schema: None,
        logprobs: false,
        sample,
        cache_key: None,
    }
}

fn tags() -> CallTags {
    CallTags {
        game: "0123456789abcdef0123456789abcdef".into(),
        agent: "Ada".into(),
        framework: "thinkthrice".into(),
        phase: Phase::Gameplay,
        purpose: "answer".into(),
    }
}

/// A chat call through `gateway` whose sample index `next` picks.
fn call(
    gateway: &Gateway,
    tags: &CallTags,
    next: impl Fn() -> u64 + Send + Sync + 'static,
) -> Call {
    let (gateway, tags) = (gateway.clone(), tags.clone());
    Arc::new(move || {
        let (gateway, tags, sample) = (gateway.clone(), tags.clone(), next());
        Box::pin(async move {
            let out = gateway.chat(request(sample), tags).await;
            std::hint::black_box(out.expect("the call is answered"));
        })
    })
}

fn bench_layers(c: &mut Criterion) {
    if process_cpu_time().is_none() {
        eprintln!("gateway_layers skipped: no process CPU clock on this platform");
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (gateway, ledger) = rt.block_on(layered_gateway(dir.path()));
    let tags = tags();

    // Misses: a sample index never asked before (above the stored range).
    let fresh = Arc::new(AtomicU64::new(STORED));
    let miss = call(&gateway, &tags, move || {
        fresh.fetch_add(1, Ordering::Relaxed)
    });
    // Hits: the stored calls, asked again in turn.
    rt.block_on(join_all((0..STORED).map(|s| {
        let (gateway, tags) = (gateway.clone(), tags.clone());
        async move { gateway.chat(request(s), tags).await.expect("stored") }
    })));
    let turn = Arc::new(AtomicU64::new(0));
    let hit = call(&gateway, &tags, move || {
        turn.fetch_add(1, Ordering::Relaxed) % STORED
    });

    let mut g = c.benchmark_group("gateway_layers");
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(5));
    for (name, one) in [("miss_cpu", miss), ("hit_cpu", hit)] {
        let id = BenchmarkId::new(name, "sequential");
        cpu_bench(&rt, &mut g, id, 1, one.clone());
        let id = BenchmarkId::new(format!("{name}/concurrent"), BATCH);
        let many = move || {
            let one = one.clone();
            Box::pin(async move {
                join_all((0..BATCH).map(|_| one())).await;
            }) as BoxFuture<'static, ()>
        };
        cpu_bench(&rt, &mut g, id, BATCH as u64, Arc::new(many));
    }
    g.finish();
    rt.block_on(ledger.flush());
    let tally = ledger.tally();
    eprintln!(
        "gateway_layers: {} live calls, {} cache hits recorded",
        tally.live.load(Ordering::Relaxed),
        tally.cache.load(Ordering::Relaxed)
    );
    gateway.stop();
}

criterion_group! {
    name = benches;
    config = support::criterion_config();
    targets = bench_layers
}
criterion_main!(benches);
