//! `sleuth mock-llm`: an OpenAI-compatible HTTP server in front of the simulated model.
//!
//! Layer 3 (docs/architecture.md, *Crates*): it may use base, llm (the simulated model) and game;
//! nothing of sleuth runs it but tests, benchmarks and `sleuth mock-llm`.
//!
//! Why it exists: the in-process [`sleuth_llm::SimulatedProvider`] skips everything between sleuth and a
//! real endpoint — async-openai's request building and response decoding, connection pooling, HTTP error
//! statuses and their Retry-After headers, the gateway's retry loop. Integration and load tests point the
//! real `openai` provider at this server instead, so that whole path runs on one machine, with no key, at
//! no cost, and with answers identical to the in-process model (both call
//! [`sleuth_llm::simulated::respond`]).
//!
//! Endpoints (under `/v1`, as OpenAI serves them):
//! - `POST /v1/chat/completions` — the simulated model's answer as a `chat.completion`, with honest usage
//!   and, when asked for, log-probabilities. `stream`, `n`, tools and audio are not supported.
//! - `POST /v1/embeddings` — [`sleuth_base::text::hashed_vector`]s, as floats or base64, of the request's
//!   `dimensions` or else [`MockConfig::embedding_dims`] (256 by default; 1,536 to load-test memory at a
//!   hosted model's size).
//! - `GET /v1/models` — the configured model names.
//! - `POST /v1/files`, `GET /v1/files/{id}[/content]`, `POST|GET /v1/batches`, `GET
//!   /v1/batches/{id}`, `POST /v1/batches/{id}/cancel` — OpenAI's Batch API over the same model, with
//!   a completion delay, per-line failures and expiry (`batches`).
//! - `GET /stats` — sleuth's own addition, not OpenAI's: the [`MockStats`] totals as JSON, so a test can
//!   check that the usage a client accounted is exactly what the server handed out.
//!
//! Faults are injected on the two POST endpoints, in this order, to exercise retry and back-off code:
//! 1. a concurrency limit (`max_concurrency`): a request over the limit gets 429 at once, the way a
//!    provider's concurrent-request limit answers — or, with `queue`, waits for a slot, the way a
//!    llama.cpp or vLLM server does (and runs to its end even when its client has gone);
//! 2. a fixed `latency` before every answer, errors included (a real error costs a round trip too),
//!    plus a random `latency_jitter` drawn from the seeded RNG;
//! 3. random errors at `error_rate`, half 429 and half 500, drawn from a seeded RNG so a load test's
//!    fault sequence is reproducible;
//! 4. malformed output: the first `malformed_first` chat completions that get through are answered
//!    with a polite refusal in place of the model's reply — valid HTTP, honest usage, but neither JSON
//!    nor the two-section format — to exercise the gateway's re-asking of unparseable structured output.
//!
//! Under `--dialect llama-cpp` the server behaves like llama.cpp's Python server where it differs from
//! OpenAI (`dialect`: `json_schema` refused with a 500 naming `response_format`, only `max_tokens`
//! read, a reply without it running on), and `--context-window N` refuses prompts that do not fit.
//!
//! Every error uses OpenAI's error body (`{"error":{"message","type","param","code"}}`), and 429/500 carry
//! both `retry-after-ms` (what OpenAI and Azure send) and `retry-after` in whole seconds.
//!
//! Request parsing is deliberately lenient (any JSON the OpenAI API accepts, from any client): the body is
//! read as a [`serde_json::Value`] rather than a strict type, unknown fields are ignored, and only what the
//! simulated model needs is validated.
//!
//! Layout: this module holds the configuration and the server's life (start, shutdown); `routes` the
//! handlers, `request` the lenient reading of OpenAI request bodies, `faults` the injected faults,
//! `stats` the totals and `error` OpenAI's error answers.

mod batches;
mod cheap;
/// `sleuth mock-llm`: its flags and the command.
pub mod cli;
mod completion;
mod dialect;
mod error;
mod faults;
mod request;
mod routes;
mod stats;
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, Semaphore};
use tokio::task::JoinHandle;

pub use cheap::{Replies, UnknownReplies};
pub use dialect::{Dialect, UNBOUNDED_REPLY_TOKENS};
use sleuth_llm::simulated;
use stats::Counters;
pub use stats::MockStats;

/// How the server behaves: which models it answers to and which faults it injects.
#[derive(Debug, Clone, PartialEq)]
pub struct MockConfig {
    /// Wait before every answer to a POST request (success or injected error).
    pub latency: Duration,
    /// A uniform random extra wait in `0..=latency_jitter` on top of `latency`, per request, drawn from
    /// the fault RNG (so calls issued together finish in a shuffled order).
    pub latency_jitter: Duration,
    /// Probability in `0..=1` that a POST request fails with 429 or 500 (half each).
    pub error_rate: f64,
    /// Requests served at once; more get 429 immediately (or wait, with `queue`). `None`: no limit.
    pub max_concurrency: Option<usize>,
    /// Requests beyond `max_concurrency` wait for a slot instead of getting 429, and a request whose
    /// client went away still runs to its end, as llama.cpp's server does.
    pub queue: bool,
    /// Seed of the fault RNG: the same seed gives the same sequence of injected errors.
    pub fault_seed: u64,
    /// Wait the 429/500 answers ask for, in milliseconds.
    pub retry_after_ms: u64,
    /// Model names chat completions accept; any other gets 404 `model_not_found`.
    pub models: Vec<String>,
    /// The first this many successful chat completions carry [`MALFORMED_REPLY`] instead of the model's
    /// answer.
    pub malformed_first: u64,
    /// Dimensions of the vectors `/v1/embeddings` returns when the request does not ask for a number
    /// (OpenAI's `dimensions`). The default is the local hashing embedder's; 1,536 is what
    /// `text-embedding-3-small` returns, so memory and load figures can be measured at a hosted
    /// model's size without one.
    pub embedding_dims: usize,
    /// Which server the mock behaves like (`dialect`): OpenAI's API, or llama.cpp's Python server,
    /// which refuses `json_schema` with a 500 and reads only `max_tokens`.
    pub dialect: Dialect,
    /// Prompt plus completion limit, in tokens, a chat request may have; more is refused as a
    /// context-length error in the dialect's way. `None`: no limit.
    pub context_window: Option<u64>,
    /// Batch API: how long a batch stays `in_progress` before it is answered (`batches.rs`).
    pub batch_delay: Duration,
    /// Probability in `0..=1` that a batch line fails (a 500 in the error file).
    pub batch_failure_rate: f64,
    /// The first this many batches expire with half their lines answered.
    pub batch_expire_first: u64,
    /// The most bytes of files held at once; an upload past it gets a 413 (`batches.rs`).
    pub max_stored_bytes: usize,
    /// How chat completions (live and batch lines) are answered: by the simulated model (the
    /// default: answers read from the prompt, identical to the in-process provider's), or `Cheap`ly —
    /// valid for the reply shape asked, with estimated usage, without tokenizing or reading the
    /// prompt — so that a load benchmark measures sleuth rather than the mock (`cheap.rs`).
    pub replies: Replies,
}

/// The most dimensions an embedding may have: OpenAI's largest model returns 3,072, and a bound
/// keeps a typo from allocating gigabytes per request.
pub const MAX_EMBEDDING_DIMS: usize = 16_384;

/// Largest request body accepted: axum's default (2 MB) is enough for a prompt, but a batch file of
/// thousands of evaluation lines is tens of megabytes. Past it the answer is a 413 naming the limit.
pub const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// The most inputs one embedding request may carry: OpenAI's own limit.
pub const MAX_EMBEDDING_INPUTS: usize = 2_048;

/// The most numbers one embedding reply may hold (inputs × dimensions): what a real client asks for
/// at the most (2,048 inputs of 1,536 dimensions, ~3 M), so that a request of 1.5 KB cannot make the
/// mock build a reply of gigabytes.
pub const MAX_EMBEDDING_VALUES: usize = 2_048 * 1_536;

/// The server's connection limits: a head-read and idle timeout of two minutes, longer than a pooled
/// client (reqwest: 90 s) keeps a connection idle, so the mock never closes one a client is about to
/// reuse; and up to 8,192 connections (a load test keeps thousands open), at most half the process's
/// descriptors.
const MOCK_LIMITS: sleuth_base::http::Limits = sleuth_base::http::Limits {
    header_read_timeout: Duration::from_secs(120),
    max_connections: 8_192,
    drain: Duration::from_secs(10),
};

/// What a malformed completion says: plausible model prose that no structured-output parser accepts.
pub const MALFORMED_REPLY: &str =
    "I am sorry, but I would rather not answer in the requested format right now.";

impl Default for MockConfig {
    fn default() -> Self {
        MockConfig {
            latency: Duration::ZERO,
            latency_jitter: Duration::ZERO,
            error_rate: 0.0,
            max_concurrency: None,
            queue: false,
            fault_seed: 0,
            retry_after_ms: 50,
            models: vec![simulated::MODEL.to_string()],
            malformed_first: 0,
            embedding_dims: sleuth_base::text::HASHED_DIMS,
            dialect: Dialect::default(),
            context_window: None,
            batch_delay: Duration::ZERO,
            batch_failure_rate: 0.0,
            batch_expire_first: 0,
            max_stored_bytes: batches::MAX_STORED_BYTES,
            replies: Replies::default(),
        }
    }
}

impl MockConfig {
    fn validate(&self) -> Result<(), MockError> {
        if !(0.0..=1.0).contains(&self.batch_failure_rate) {
            return Err(MockError::Config(format!(
                "batch failure rate must be between 0 and 1, got {}",
                self.batch_failure_rate
            )));
        }
        if !(0.0..=1.0).contains(&self.error_rate) {
            return Err(MockError::Config(format!(
                "error rate must be between 0 and 1, got {}",
                self.error_rate
            )));
        }
        if !(1..=MAX_EMBEDDING_DIMS).contains(&self.embedding_dims) {
            return Err(MockError::Config(format!(
                "embedding dimensions must be between 1 and {MAX_EMBEDDING_DIMS}, got {}",
                self.embedding_dims
            )));
        }
        if let Some(n) = self.max_concurrency {
            if n > Semaphore::MAX_PERMITS {
                return Err(MockError::Config(format!(
                    "max concurrency {n} exceeds the limit of {}",
                    Semaphore::MAX_PERMITS
                )));
            }
        }
        Ok(())
    }
}

/// Why the server could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    #[error("invalid mock-llm configuration: {0}")]
    Config(String),
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("mock-llm server failed: {0}")]
    Serve(#[source] std::io::Error),
    #[error("mock-llm server task ended abnormally: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error("cannot wait for ctrl-c: {0}")]
    Signal(#[source] std::io::Error),
}

/// A running server. Dropping it without [`MockServer::shutdown`] also stops it (the shutdown channel
/// closes), but only `shutdown` waits for in-flight requests to finish.
pub struct MockServer {
    /// The bound address (the real port when started on port 0).
    pub addr: SocketAddr,
    shared: Arc<MockState>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .field("config", &self.shared.config)
            .finish()
    }
}

impl MockServer {
    /// Binds and starts serving in a background tokio task.
    pub async fn start(listen: SocketAddr, config: MockConfig) -> Result<MockServer, MockError> {
        config.validate()?;
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|source| MockError::Bind {
                addr: listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| MockError::Bind {
            addr: listen,
            source,
        })?;
        let shared = Arc::new(MockState::new(config));
        let app = routes::router(Arc::clone(&shared));
        let (stop, stopped) = oneshot::channel::<()>();
        // The accept loop of `sleuth_base::http`: TCP_NODELAY on every socket (with Nagle's algorithm
        // a small response can wait for the client's delayed ACK, tens of milliseconds that poison a
        // benchmark), a head-read and idle timeout longer than a pooled client keeps an idle
        // connection, and a connection bound from the descriptors the process has.
        let task = tokio::spawn(async move {
            sleuth_base::http::serve(listener, app, MOCK_LIMITS, None, async move {
                // A send or a dropped sender both mean "stop".
                let _ = stopped.await;
            })
            .await;
            Ok::<(), std::io::Error>(())
        });
        Ok(MockServer {
            addr,
            shared,
            stop,
            task,
        })
    }

    /// Totals so far.
    pub fn stats(&self) -> MockStats {
        self.shared.counters.snapshot()
    }

    /// The base URL an OpenAI client needs: `http://ADDR/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Stops accepting connections and waits for in-flight requests to finish.
    pub async fn shutdown(self) {
        let _ = self.stop.send(());
        match self.task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "mock-llm server stopped with an error"),
            Err(e) => tracing::warn!(error = %e, "mock-llm server task failed"),
        }
    }
}

/// State shared by all handlers.
struct MockState {
    config: MockConfig,
    counters: Counters,
    /// A std mutex is the right lock here: the critical section is one or two RNG draws and is never
    /// held across an await, so an async mutex would only add overhead.
    faults: Mutex<ChaCha8Rng>,
    limiter: Option<Semaphore>,
    next_id: AtomicU64,
    batches: Mutex<batches::BatchState>,
}

impl MockState {
    fn new(config: MockConfig) -> Self {
        MockState {
            counters: Counters::default(),
            faults: Mutex::new(ChaCha8Rng::seed_from_u64(config.fault_seed)),
            limiter: config.max_concurrency.map(Semaphore::new),
            next_id: AtomicU64::new(1),
            batches: Mutex::default(),
            config,
        }
    }
}
