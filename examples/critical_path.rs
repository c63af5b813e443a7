//! Measures one game's critical path and wall time (`docs/parallelism.md`).
//!
//! ```sh
//! # the critical path: the in-process simulated model at 200 ms a call, no bound on calls in flight
//! cargo run --release --example critical_path -- /tmp/ds.toml --protocol wellplay --framework player
//! # wall time against `sleuth mock-llm --latency-ms 200`, at a given bound (1 = one call at a time)
//! cargo run --release --example critical_path -- /tmp/ds.toml --protocol wellplay --framework player \
//!     --base-url http://127.0.0.1:8089/v1 --bound 16
//! ```
//!
//! Every chat call's start and end are recorded at the provider. The critical path is the longest
//! chain of calls each of which starts after the one before it ended: the most calls the game had to
//! make one after another. Calls that run together overlap in time and count once; the CPU time
//! between calls does not count at all. With a model that takes the same time for every call and no
//! bound, that chain is the game's number of dependent call waves — what a paused tokio clock would
//! measure as virtual time / latency, without needing tokio's `test-util`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use clap::Parser;
use futures::future::BoxFuture;
use sleuth::agent::Framework;
use sleuth::game::{self, GameConfig, Protocol, ProtocolSettings};
use sleuth::llm::{
    ChatRequest, ChatResponse, EmbedResponse, Gateway, GatewayConfig, OpenAiProvider,
    OpenAiSettings, Pricing, Provider, ProviderError, SharedProvider, SimulatedProvider,
};
use sleuth::script::Script;

/// Flags.
#[derive(Debug, Parser)]
struct Args {
    /// The script (TOML).
    script: PathBuf,
    #[arg(long, default_value = "wellplay")]
    protocol: Protocol,
    #[arg(long, default_value = "player")]
    framework: Framework,
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Latency of the in-process simulated model (ignored with --base-url).
    #[arg(long, default_value_t = 200)]
    latency_ms: u64,
    /// An OpenAI-compatible endpoint (e.g. `sleuth mock-llm`) instead of the in-process model.
    #[arg(long)]
    base_url: Option<String>,
    /// The game's bound on calls in flight; none when absent.
    #[arg(long)]
    bound: Option<usize>,
}

/// One call's start and end.
type Span = (Instant, Instant);

/// A provider that records when each chat call starts and ends, and the peak of calls in flight.
struct Recording {
    inner: SharedProvider,
    spans: Mutex<Vec<Span>>,
    flight: Mutex<(usize, usize)>,
}

impl Recording {
    fn enter(&self) {
        if let Ok(mut f) = self.flight.lock() {
            f.0 += 1;
            f.1 = f.1.max(f.0);
        }
    }

    fn leave(&self, span: Span) {
        if let Ok(mut f) = self.flight.lock() {
            f.0 -= 1;
        }
        if let Ok(mut s) = self.spans.lock() {
            s.push(span);
        }
    }
}

impl Provider for Recording {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn chat<'a>(
        &'a self,
        req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let start = Instant::now();
            self.enter();
            let r = self.inner.chat(req).await;
            self.leave((start, Instant::now()));
            r
        })
    }

    fn embed<'a>(
        &'a self,
        model: &'a str,
        inputs: &'a [String],
    ) -> BoxFuture<'a, Result<EmbedResponse, ProviderError>> {
        self.inner.embed(model, inputs)
    }
}

/// The longest chain of spans each starting at or after the end of the one before: the greedy choice
/// of the earliest-ending span that fits is optimal for non-overlapping intervals.
fn longest_chain(mut spans: Vec<Span>) -> usize {
    spans.sort_by_key(|s| s.1);
    let mut chain = 0;
    let mut free_from: Option<Instant> = None;
    for (start, end) in spans {
        if free_from.is_none_or(|f| start >= f) {
            chain += 1;
            free_from = Some(end);
        }
    }
    chain
}

#[tokio::main]
async fn main() -> Result<()> {
    let a = Args::parse();
    let script = Arc::new(
        Script::load(&a.script).with_context(|| format!("loading {}", a.script.display()))?,
    );
    let inner: SharedProvider = match &a.base_url {
        Some(url) => Arc::new(OpenAiProvider::new(&OpenAiSettings::new(
            url.clone(),
            "measure",
            Duration::from_secs(120),
        ))?),
        None => Arc::new(SimulatedProvider {
            latency: Duration::from_millis(a.latency_ms),
        }),
    };
    let recording = Arc::new(Recording {
        inner,
        spans: Mutex::new(Vec::new()),
        flight: Mutex::new((0, 0)),
    });
    let provider: SharedProvider = recording.clone();
    let gateway = Gateway::start(provider, Pricing::builtin(), GatewayConfig::default()).await?;
    let config = GameConfig {
        game_id: "critical-path".into(),
        seed: a.seed,
        protocol: ProtocolSettings {
            protocol: a.protocol,
            ..ProtocolSettings::default()
        },
        framework: a.framework,
        call_concurrency: a.bound.unwrap_or(usize::MAX),
        base_url: a.base_url.clone(),
        ..GameConfig::default()
    };
    let started = Instant::now();
    let result = game::play(script, config, gateway.clone()).await?;
    let wall = started.elapsed();
    gateway.stop();
    let spans = recording
        .spans
        .lock()
        .map(|s| s.clone())
        .unwrap_or_default();
    let peak = recording.flight.lock().map(|f| f.1).unwrap_or_default();
    let calls = spans.len();
    let chain = longest_chain(spans);
    let bound = a.bound.map_or("none".to_string(), |b| b.to_string());
    println!(
        "{} · {}/{} · seed {} · bound {bound}: {calls} calls (result.json: {}), wall {:.2} s, \
         longest chain of dependent calls {chain}, peak in flight {peak}",
        result.script,
        a.protocol,
        a.framework,
        a.seed,
        result.usage.calls,
        wall.as_secs_f64(),
    );
    if a.base_url.is_none() {
        let per_call = Duration::from_millis(a.latency_ms);
        let path = per_call * chain as u32;
        println!(
            "critical path: {chain} × {} ms = {:.2} s; wall / critical path = {:.2}",
            a.latency_ms,
            path.as_secs_f64(),
            wall.as_secs_f64() / path.as_secs_f64().max(f64::EPSILON),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_calls_count_once_and_dependent_ones_each() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // Two waves of three calls together, then one call: a chain of three.
        let spans = vec![
            (at(0), at(200)),
            (at(1), at(201)),
            (at(2), at(205)),
            (at(206), at(406)),
            (at(207), at(410)),
            (at(208), at(409)),
            (at(420), at(620)),
        ];
        assert_eq!(longest_chain(spans), 3);
        assert_eq!(longest_chain(Vec::new()), 0);
    }
}
