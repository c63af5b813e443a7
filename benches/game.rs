//! End-to-end and gateway benchmarks.
//!
//! * `game/night-ferry/{none,mr,sr,sv=3}`: one whole game (play + evaluation) of `examples/night-ferry.toml`
//!   with the simulated provider at zero latency, so what is measured is sleuth's own CPU work (actors,
//!   prompts, memory, simulated model, judging). Throughput is LLM calls per second.
//! * `framework/night-ferry/<protocol>-<framework>`: one whole game per framework under the protocol it
//!   is meant for (WellPlay for the detectives and references, MIRAGE for the MIRAGE agent), default
//!   settings, the same simulated provider: what each framework's decisions cost in CPU and calls.
//! * `gateway/*`: the cost the gateway adds to one call (actor hop, task spawn, accounting, reply), with a
//!   provider that answers at once. Wall time per call, one at a time and 1,000 at once; and the same
//!   measured as process CPU time, which is what the ≤ 50 µs/call design target is about.
//! * `gateway_prometheus/*`: the CPU time again with the Prometheus recorder installed (as with
//!   `--metrics`), so the metrics the gateway records per call are really recorded.
//!
//! Run with `cargo bench --bench game` (or `scripts/bench.sh`). See `docs/benchmarks.md`.

mod support;
use support::{process_cpu_time, InstantProvider};

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use futures::future::join_all;
use sleuth::agent::{AgentConfig, Framework, Modules};
use sleuth::game::{play, GameConfig, ProtocolSettings};
use sleuth::llm::{
    CallTags, ChatRequest, Gateway, GatewayConfig, Message, Phase, Pricing, SimulatedProvider,
};
use sleuth::script::Script;
use tokio::runtime::Runtime;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Benchmarks whole games of `examples/night-ferry.toml`, one benchmark per `(id, config)`: each game is
/// played once first, which checks it finishes and counts its LLM calls (the throughput), then sampled
/// ten times (flat sampling: ten samples of about one game each, rather than the 55 games linear
/// sampling needs).
fn bench_games(c: &mut Criterion, group: &str, games: Vec<(String, GameConfig)>) {
    let rt = runtime();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/night-ferry.toml");
    let script = Arc::new(Script::load(&path).expect("examples/night-ferry.toml loads"));
    let gateway = rt
        .block_on(Gateway::start(
            Arc::new(SimulatedProvider::default()),
            Pricing::builtin(),
            GatewayConfig::default(),
        ))
        .expect("gateway starts");
    let mut g = c.benchmark_group(group);
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    g.warm_up_time(Duration::from_secs(1));
    for (id, config) in games {
        let started = Instant::now();
        let first = rt
            .block_on(play(script.clone(), config.clone(), gateway.clone()))
            .expect("game finishes");
        eprintln!(
            "{group}/night-ferry/{id}: {} LLM calls ({} gameplay), {} events, first game {:.2?}",
            first.usage.calls,
            first.usage_by_phase.gameplay.calls,
            first.events,
            started.elapsed()
        );
        let one = started.elapsed();
        g.measurement_time((one * 12).clamp(Duration::from_secs(5), Duration::from_secs(300)));
        g.throughput(Throughput::Elements(first.usage.calls));
        g.bench_with_input(
            BenchmarkId::new("night-ferry", &id),
            &config,
            |b, config| {
                b.to_async(&rt).iter(|| {
                    let (script, config, gateway) =
                        (script.clone(), config.clone(), gateway.clone());
                    async move { play(script, config, gateway).await.expect("game finishes") }
                })
            },
        );
    }
    g.finish();
    gateway.stop();
}

/// The ThinkThrice protocol with all modules off and all on.
fn bench_game(c: &mut Criterion) {
    let games = ["none", "mr,sr,sv=3"]
        .into_iter()
        .map(|modules| {
            let config = GameConfig {
                game_id: "bench".into(),
                seed: 7,
                agent: AgentConfig {
                    modules: modules.parse::<Modules>().expect("valid modules"),
                    ..Default::default()
                },
                ..Default::default()
            };
            (modules.to_string(), config)
        })
        .collect();
    bench_games(c, "game", games);
}

/// Every framework under the protocol it is meant for (WellPlay for all but MIRAGE's agent).
fn bench_frameworks(c: &mut Criterion) {
    let games = Framework::ALL
        .into_iter()
        .map(|framework| {
            let protocol = framework.protocols()[framework.protocols().len() - 1];
            let config = GameConfig {
                game_id: "bench".into(),
                seed: 7,
                protocol: ProtocolSettings {
                    protocol,
                    ..ProtocolSettings::default()
                },
                framework,
                agent: AgentConfig {
                    modules: "mr".parse::<Modules>().expect("valid modules"),
                    ..Default::default()
                },
                ..Default::default()
            };
            (format!("{protocol}-{framework}"), config)
        })
        .collect();
    bench_games(c, "framework", games);
}

const BATCH: usize = 1_000;

fn bench_gateway(c: &mut Criterion) {
    gateway_benches(c, "gateway", true);
}

/// The gateway's CPU cost per call with the Prometheus recorder installed, as `sleuth --metrics` runs.
/// Runs last: a global recorder cannot be removed, and it would otherwise be counted in the other benches.
fn bench_gateway_prometheus(c: &mut Criterion) {
    // Mirrors the latency buckets `sleuth::telemetry::serve_metrics` sets (no HTTP listener here).
    const LATENCY_BUCKETS: &[f64] = &[
        0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    ];
    let installed = metrics_exporter_prometheus::PrometheusBuilder::new()
        .set_buckets_for_metric(
            metrics_exporter_prometheus::Matcher::Full(sleuth::telemetry::LLM_LATENCY.into()),
            LATENCY_BUCKETS,
        )
        .and_then(|b| b.install_recorder());
    match installed {
        Ok(_handle) => gateway_benches(c, "gateway_prometheus", false),
        Err(e) => eprintln!("gateway_prometheus skipped: cannot install the recorder: {e}"),
    }
}

fn gateway_benches(c: &mut Criterion, group: &str, wall: bool) {
    let rt = runtime();
    let gateway = rt
        .block_on(Gateway::start(
            Arc::new(InstantProvider {
                reply: "ok",
                completion_tokens: 1,
            }),
            Pricing::builtin(),
            GatewayConfig::default(),
        ))
        .expect("gateway starts");
    let req = ChatRequest {
        model: "gpt-4o-mini".into(),
        messages: vec![
            Message::system("You are Ada Finch, the stewardess."),
            Message::user("Where were you at 1 am?"),
        ],
        temperature: 0.8,
        top_p: 1.0,
        max_tokens: 300,
        schema: None,
        logprobs: false,
        sample: 7,
        cache_key: None,
    };
    let tags = CallTags {
        game: "bench".into(),
        agent: "Ada".into(),
        framework: "thinkthrice".into(),
        phase: Phase::Gameplay,
        purpose: "answer".into(),
    };
    let call = {
        let (gateway, req, tags) = (gateway.clone(), req.clone(), tags.clone());
        move || {
            let (gateway, req, tags) = (gateway.clone(), req.clone(), tags.clone());
            async move {
                gateway
                    .chat(req, tags)
                    .await
                    .expect("instant provider answers")
            }
        }
    };
    let batch = {
        let call = call.clone();
        move || join_all((0..BATCH).map(|_| call()))
    };

    let mut g = c.benchmark_group(group);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(5));

    if wall {
        // Wall time: one call at a time (the round trip through the actor and a spawned task)...
        g.throughput(Throughput::Elements(1));
        g.bench_function("chat_wall/sequential", |b| b.to_async(&rt).iter(&call));
        // ...and 1,000 calls at once (per-call cost when the mailbox and the workers are busy).
        g.throughput(Throughput::Elements(BATCH as u64));
        g.bench_function(BenchmarkId::new("chat_wall/concurrent", BATCH), |b| {
            b.to_async(&rt).iter(&batch)
        });
    }

    // The same, but the reported "time" is process CPU time (all threads), the design target's unit.
    if process_cpu_time().is_some() {
        let cpu = |d: Option<Duration>| d.expect("process CPU clock");
        g.throughput(Throughput::Elements(1));
        g.bench_function("chat_cpu/sequential", |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let call = call.clone();
                async move {
                    let t0 = cpu(process_cpu_time());
                    for _ in 0..iters {
                        std::hint::black_box(call().await);
                    }
                    cpu(process_cpu_time()) - t0
                }
            })
        });
        g.throughput(Throughput::Elements(BATCH as u64));
        g.bench_function(BenchmarkId::new("chat_cpu/concurrent", BATCH), |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let batch = batch.clone();
                async move {
                    let t0 = cpu(process_cpu_time());
                    for _ in 0..iters {
                        std::hint::black_box(batch().await);
                    }
                    cpu(process_cpu_time()) - t0
                }
            })
        });
    }
    g.finish();
    gateway.stop();
}

criterion_group! {
    name = benches;
    config = support::criterion_config();
    targets = bench_gateway, bench_game, bench_frameworks, bench_gateway_prometheus
}
criterion_main!(benches);
