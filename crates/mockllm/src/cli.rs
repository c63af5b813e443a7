//! `sleuth mock-llm`: the simulated model over an OpenAI-compatible HTTP API.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::Args;
use sleuth_base::shutdown::Shutdown;

use crate::MockConfig;

/// Flags of `sleuth mock-llm`.
#[derive(Debug, Args)]
pub struct MockArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8089")]
    pub listen: SocketAddr,
    /// Latency added to every request.
    #[arg(long, default_value_t = 0)]
    pub latency_ms: u64,
    /// A random extra latency per request, uniform in 0..=N ms (seeded by --fault-seed).
    #[arg(long, default_value_t = 0)]
    pub latency_jitter_ms: u64,
    /// Share of requests answered with an injected 429 or 500 (with Retry-After).
    #[arg(long, default_value_t = 0.0)]
    pub error_rate: f64,
    /// Requests beyond this many at once get 429 (or wait, with --queue).
    #[arg(long)]
    pub max_concurrency: Option<usize>,
    /// Requests beyond --max-concurrency wait for a slot instead of getting 429, and run to their end
    /// even when the client has gone (as llama.cpp's server does).
    #[arg(long)]
    pub queue: bool,
    /// Seed of the fault injector.
    #[arg(long, default_value_t = 0)]
    pub fault_seed: u64,
    /// Retry-After sent with injected errors, in milliseconds.
    #[arg(long, default_value_t = 50)]
    pub retry_after_ms: u64,
    /// Model names served (repeatable).
    #[arg(long = "model", default_value = sleuth_llm::simulated::MODEL)]
    pub models: Vec<String>,
    /// Answer the first N chat completions with malformed output (tests the re-asking of unparseable
    /// structured replies).
    #[arg(long, default_value_t = 0)]
    pub malformed_first: u64,
    /// Dimensions of the embeddings served when a request does not ask (e.g. 1536, the size of
    /// text-embedding-3-small; default: the hashing embedder's 256).
    #[arg(long, default_value_t = sleuth_base::text::HASHED_DIMS)]
    pub embedding_dims: usize,
    /// Behave like another server: `openai`; `openai-reasoning` (max_tokens refused with HTTP 400);
    /// `llama-cpp` (llama.cpp's Python server: json_schema refused with HTTP 500, only max_tokens
    /// read, a reply without it running on).
    #[arg(long, default_value = "openai", value_parser = str::parse::<crate::Dialect>)]
    pub dialect: crate::Dialect,
    /// Refuse chat requests whose prompt plus completion limit pass this many tokens, as a
    /// context-length error in the dialect's way.
    #[arg(long)]
    pub context_window: Option<u64>,
    /// Batch API: milliseconds a batch stays in progress before it is answered.
    #[arg(long, default_value_t = 0)]
    pub batch_delay_ms: u64,
    /// Batch API: probability that a batch line fails (a 500 in the batch's error file).
    #[arg(long, default_value_t = 0.0)]
    pub batch_failure_rate: f64,
    /// Batch API: the first N batches expire with half their lines answered.
    #[arg(long, default_value_t = 0)]
    pub batch_expire_first: u64,
    /// How chat completions are answered: `simulated` (the simulated model, reading the prompt) or
    /// `cheap` (valid for the reply shape asked, without reading or tokenizing the prompt; usage and
    /// --context-window estimated as bytes / 4 — for load benchmarks, where the mock's CPU must not
    /// count).
    #[arg(long, default_value = "simulated", value_parser = str::parse::<crate::Replies>)]
    pub replies: crate::Replies,
}

/// Serves until ctrl-c.
pub fn run(a: MockArgs, shutdown: Shutdown) -> futures::future::BoxFuture<'static, Result<()>> {
    // Boxed here, so that the command's future is compiled in this crate, not in the root crate that
    // dispatches to it (see `sleuth_commands`).
    Box::pin(serve(a, shutdown))
}

async fn serve(a: MockArgs, shutdown: Shutdown) -> Result<()> {
    if !(0.0..=1.0).contains(&a.error_rate) {
        bail!("--error-rate must be between 0 and 1, got {}", a.error_rate);
    }
    let config = MockConfig {
        latency: Duration::from_millis(a.latency_ms),
        latency_jitter: Duration::from_millis(a.latency_jitter_ms),
        error_rate: a.error_rate,
        max_concurrency: a.max_concurrency,
        queue: a.queue,
        fault_seed: a.fault_seed,
        retry_after_ms: a.retry_after_ms,
        models: a.models,
        malformed_first: a.malformed_first,
        embedding_dims: a.embedding_dims,
        dialect: a.dialect,
        context_window: a.context_window,
        batch_delay: Duration::from_millis(a.batch_delay_ms),
        batch_failure_rate: a.batch_failure_rate,
        batch_expire_first: a.batch_expire_first,
        max_stored_bytes: crate::MockConfig::default().max_stored_bytes,
        replies: a.replies,
    };
    let models = config.models.clone();
    let server = crate::MockServer::start(a.listen, config).await?;
    // The bound address, not the requested one: with port 0 the OS picks it and scripts read it here.
    println!(
        "sleuth mock-llm: serving {models:?} on {} (ctrl-c to stop)",
        server.base_url()
    );
    shutdown.draining().await;
    server.shutdown().await;
    Ok(())
}
