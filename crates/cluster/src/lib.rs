//! The cluster: one sweep over many nodes (issue 12, `docs/cluster.md`).
//!
//! Layer 5 (docs/architecture.md, *Crates*): it may use base, store, llm, sweep and proto; it knows
//! nothing of the viewer or the report, and the gateway knows it only through the `SharedLimits`
//! trait.
//!
//! The public API and the worker protocol are gRPC services generated from `proto/sleuth/v1/`
//! ([`proto`]), served with timeouts and bounds ([`serving`]); every request carries a bearer token
//! ([`auth`]): the cluster's, or a read-only one that may only read. The work itself and everything
//! durable live in Redis, so losing any process costs only time: the [`coordinator`] answers the
//! API and keeps nothing of its own; [`worker`]s read game entries from the [`queue`], play them
//! with the shared cache, models' [`limits`] and the sweep's [`budget`] (which a worker's gateway
//! checks through [`gate`]), and write results to the Redis store. A model's endpoint and key come from the workers'
//! declarations ([`models`]), never from a submission.

pub mod auth;
pub mod budget;
pub mod client;
pub mod coordinator;
pub mod gate;
pub mod limits;
pub mod models;
pub mod queue;
pub mod serving;
pub mod submission;
pub mod transcript;
pub mod worker;

/// The generated gRPC code, from its own crate (`sleuth-proto`) so that a change here does not rebuild it.
pub use sleuth_proto as proto;

use sleuth_store::StoreError;

/// The largest gRPC message the coordinator and its clients take (tonic's default is 4 MiB). A
/// submission — the sweep file with the text of every script it names — is the one message that is
/// large by design; it is bounded by this, and `sleuth submit` refuses a larger one with a message
/// before sending it.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// The most of a transcript one `Results` message carries: a long game's transcript (several MB with
/// a real model) goes in pieces of this size.
pub const TRANSCRIPT_CHUNK: usize = 1024 * 1024;

/// The environment variable that holds Redis' URL for the coordinator and the workers. The
/// environment, not the `--redis` flag, is where a URL with a password belongs: a process's command
/// line is visible to every user of the machine (`ps`, `/proc/PID/cmdline`).
pub const REDIS_ENV: &str = "SLEUTH_REDIS";

/// Whether a Redis URL carries a password, as the Redis client reads it (`redis://:pw@host`,
/// `redis://user:pw@host`, `redis+unix:///path?pass=pw`). A URL the client cannot read is taken to
/// carry one if it could: it has an `@` or a `pass=`.
pub fn redis_url_has_password(url: &str) -> bool {
    use redis::IntoConnectionInfo as _;
    match url.into_connection_info() {
        Ok(info) => info.redis_settings().password().is_some(),
        Err(_) => url.contains('@') || url.contains("pass="),
    }
}

/// Why a cluster process could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The coordinator's URL or TLS settings are unusable.
    #[error("coordinator at {url}: {message}")]
    Connect { url: String, message: String },
    /// The coordinator refused or failed a request.
    #[error("coordinator: {0}")]
    Rpc(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("work queue: {0}")]
    Queue(#[from] queue::QueueError),
    /// The sweep cannot be planned or set up.
    #[error("{0}")]
    Sweep(String),
    #[error("{0}")]
    Setup(String),
}

impl From<sleuth_sweep::SweepError> for ClusterError {
    fn from(e: sleuth_sweep::SweepError) -> Self {
        ClusterError::Sweep(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_password_in_a_redis_url_is_seen_as_the_client_sees_it() {
        for with in [
            "redis://:pw@127.0.0.1:6379/0",
            "redis://user:pw@host",
            "rediss://:p%40ss@host:6380",
            "redis+unix:///tmp/redis.sock?pass=pw",
            "not a url but:secret@host",
        ] {
            assert!(super::redis_url_has_password(with), "{with}");
        }
        for without in [
            "redis://127.0.0.1:6379/0",
            "redis://user@host",
            "rediss://host",
        ] {
            assert!(!super::redis_url_has_password(without), "{without}");
        }
    }
}
