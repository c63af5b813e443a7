//! The bottom of the house: what every other crate of sleuth may use, and that knows nothing of
//! games, models or stores. It may not depend on any other sleuth crate.
//!
//! - [`text`]: words, sentences, BM25 and token F1, so that "relevant" means the same to the
//!   simulated model, the embedder and the judges;
//! - [`backoff`]: the one backoff of every retry;
//! - [`fs`]: files written whole or not at all;
//! - [`clock`]: the time and machine name as records write them;
//! - [`shutdown`]: the process's one shutdown signal, passed down from `main`;
//! - [`cpu`]: the bounded pool CPU-heavy work runs on, off the async workers;
//! - [`tls`]: the process's one TLS crypto provider;
//! - [`redact`]: credentials taken out of URLs before they are written down;
//! - [`http`]: the one accept loop the viewer and the mock serve HTTP with, with its timeouts and
//!   connection bound;
//! - [`memo`]: the bounded process-wide memo by content hash that texts seen with every call are
//!   analysed once in;
//! - [`telemetry`]: every metric name and the Prometheus exporter.

pub mod backoff;
pub mod clock;
pub mod cpu;
pub mod fs;
pub mod http;
pub mod memo;
pub mod redact;
pub mod shutdown;
pub mod telemetry;
pub mod text;
pub mod tls;
