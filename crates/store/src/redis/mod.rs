//! The cluster's store: [`Store`](super::Store) on Redis, shared by the coordinator and every worker.
//!
//! The coordinator keeps nothing that is not here, so it can be restarted (or moved) at any time; a
//! worker keeps nothing it cannot lose. It behaves exactly as [`SqliteStore`](super::SqliteStore)
//! does — both pass [`conformance`](super::conformance) — so the scheduler, the gateway's cache and
//! `sleuth sweep status` do not care which one they talk to.
//!
//! # Key layout
//!
//! Every key starts with the namespace's prefix `{NS}:` (braces included). Several sweeps, tests or
//! clusters can share one Redis under different namespaces, and the braces are a Redis Cluster hash
//! tag: every key of a namespace lands in one slot, which is what lets one Lua script touch several
//! of them. Ids come last in every key, after a fixed word, so no id can make two keys collide.
//!
//! | key | type | holds |
//! |---|---|---|
//! | `{NS}:meta` | hash | `schema_version` (a namespace of another version is refused) |
//! | `{NS}:seq` | counter | the last sequence number given to a game or a run (their order) |
//! | `{NS}:sweeps` | set | every sweep id |
//! | `{NS}:sweep:<id>` | hash | a [`SweepRecord`](super::SweepRecord); absent optional fields are absent |
//! | `{NS}:sweep-runs:<sweep>` | sorted set | the sweep's run ids, scored by `seq` |
//! | `{NS}:run:<id>` | hash | a [`RunRecord`](super::RunRecord) and its `seq` |
//! | `{NS}:sweep-games:<sweep>` | sorted set | the sweep's game ids, scored by `seq` (the order added) |
//! | `{NS}:sweep-state:<state>:<sweep>` | set | the sweep's game ids in that state |
//! | `{NS}:game:<id>` | hash | a [`GameRow`](super::GameRow) and its `seq` |
//! | `{NS}:result:<game>` | hash | `result` (the game's `result.json`), `written_at` |
//! | `{NS}:cache:<key hex>` | hash | `kind`, `model`, `value` (bytes), `created_at` |
//! | `{NS}:cache-count` | counter | entries in the cache |
//! | `{NS}:run-ledger:<run>` | list | the run's ledger entries, JSON, in the order recorded |
//! | `{NS}:run-ledger-ids:<run>` | set | the names ([`LedgerEntry::id`](super::LedgerEntry::id)) of the run's entries: a write made again after its answer was lost records nothing |
//! | `{NS}:sweep-ledger-runs:<sweep>` | set | runs that recorded calls for the sweep |
//! | `{NS}:sweep-totals:<sweep>` | hash | running totals: field `<metric>:<group>`, where group is the JSON array `[model, phase, framework, arm, source]` and metric one of `calls`, `prompt_tokens`, `completion_tokens`, `cached_tokens`, `cost_usd` |
//!
//! The per-state sets make [`Store::state_counts`](super::Store::state_counts) five `SCARD`s instead of a scan of the sweep's
//! games, and give the coordinator the games of a state without one. The running totals make
//! [`Store::totals`](super::Store::totals) one `HGETALL` of (groups × 5) fields, however long the ledger: the trait sums
//! exactly by model, phase, framework, arm and source, so the sums can be kept as the calls come.
//!
//! **Requests are not kept.** The embedded store keeps every live call's request beside its answer
//! for readers (`Store::put_request`); this one does not (`Store::keeps_requests` is false, so the
//! gateway does not compress them for it either): Redis holds what the workers share in memory,
//! requests are several times larger than answers, and nothing plays from them.
//!
//! # Atomicity
//!
//! Every write that touches more than one key, or reads before it writes, is one Lua script, which
//! Redis runs with nothing else in between: `put_result` writes the result and marks the game done
//! exactly once however many workers deliver it; `cache_put` keeps the first value of a key and
//! records the call's ledger entries in the same step; a game's state moves between its state sets
//! and its hash together, and never out of `done`. `MULTI`/`EXEC` cannot do these (a transaction
//! cannot branch on what it read) and `WATCH` retry loops would make racing workers spin. Redis does
//! not roll back a script that fails half-way, so the inputs that could make a command inside fail
//! (a non-finite cost, a token count past `i64`) are refused before the script is sent.
//!
//! The scripts build their keys from the prefix they are given, rather than receiving every key in
//! `KEYS`, because some keys depend on what they read (a game's sweep); the hash tag keeps that legal
//! on a Redis Cluster too.
//!
//! # Durability
//!
//! A write returns once Redis has applied it, so a worker killed at any point loses nothing it was
//! told was written. What survives Redis itself is Redis's configuration: run it with `appendonly yes`
//! (`appendfsync everysec` loses at most about a second of writes to a crash of the Redis host,
//! `always` none) and `maxmemory-policy noeviction` — an evicting Redis would silently drop games and
//! results. See `docs/cluster.md`.
//!
//! # Files
//!
//! This file connects and holds the helpers every operation uses; [`ops`] is the [`Store`](super::Store)
//! implementation, [`scripts`] its Lua scripts, [`rows`] how hashes read back into records (and
//! ledger entries become script arguments), and [`redact`] how the URL is shown without its password.

mod ops;
mod redact;
mod rows;
mod scripts;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use ::redis::{RedisError, RetryMethod, Script};

use self::redact::{redact, scrub};
use super::types::GameState;
use crate::error::StoreError;

/// The layout's version, in `{NS}:meta`; a namespace written in another layout is refused rather than
/// misread.
const SCHEMA_VERSION: &str = "1";

/// Games added per script: one script blocks the whole server while it runs, so a sweep of 100,000
/// games is added in slices of this many (each atomic; adding is idempotent, so a crash between two
/// slices leaves a prefix that the next run completes).
pub(super) const GAMES_PER_SCRIPT: usize = 256;
/// Hashes read per pipeline when listing a sweep's games.
const READS_PER_PIPELINE: usize = 1_000;

/// Cache reads the gateway sends at once ([`Store::max_parallel_lookups`](super::Store::max_parallel_lookups)).
const MAX_PARALLEL_LOOKUPS: usize = 64;

/// How long to wait for a connection to Redis.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long to wait for a reply. The client's default (500 ms) is shorter than a loaded server can
/// take to answer a slice of `add_games`, and a timed-out write is an ambiguous one (it may have
/// happened); a minute still turns a hung server into an error rather than a hung sweep.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(60);

/// The states a game can be in, for the per-state sets.
pub(super) const STATES: [GameState; 6] = [
    GameState::Pending,
    GameState::Running,
    GameState::Done,
    GameState::Failed,
    GameState::Interrupted,
    GameState::EvaluatingBatch,
];

/// The metrics of a totals group, as named in `{NS}:sweep-totals:<sweep>`.
pub(super) const METRICS: [&str; 5] = [
    "calls",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cost_usd",
];

/// The Redis store (see the module documentation). Cheap to clone: clones share one multiplexed
/// connection, which reconnects by itself after the server or the network comes back.
#[derive(Clone)]
pub struct RedisStore {
    inner: Arc<Inner>,
}

struct Inner {
    con: ConnectionManager,
    /// `{NS}:`.
    prefix: String,
    /// The URL with its password replaced: what errors and logs may show.
    at: String,
    /// What must never appear in a message (the password, raw and percent-decoded).
    secrets: Vec<String>,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("at", &self.inner.at)
            .field("prefix", &self.inner.prefix)
            .finish()
    }
}

impl RedisStore {
    /// Connects to the Redis at `url` (`redis://[user:password@]host:port[/db]`, `rediss://` for TLS)
    /// and uses the keys under `namespace`, which it creates if needed. A namespace is a name of
    /// letters, digits and `-_.:`; two stores of different namespaces never see each other's keys.
    ///
    /// Fails (with the password redacted) if the URL does not parse, the server cannot be reached or
    /// refuses the credentials, or the namespace was written by a sleuth of another layout version.
    pub async fn connect(url: &str, namespace: &str) -> Result<RedisStore, StoreError> {
        let (at, secrets) = redact(url);
        let open_err = |message: String| StoreError::Open {
            at: at.clone(),
            message: scrub(&message, &secrets),
        };
        if namespace.is_empty()
            || !namespace
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c))
        {
            return Err(open_err(format!(
                "namespace `{namespace}`: expected letters, digits and `-_.:`, at least one"
            )));
        }
        let client = ::redis::Client::open(url).map_err(|e| open_err(e.to_string()))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_number_of_retries(3);
        let con = ConnectionManager::new_with_config(client, config)
            .await
            .map_err(|e| open_err(e.to_string()))?;
        let store = RedisStore {
            inner: Arc::new(Inner {
                con,
                prefix: format!("{{{namespace}}}:"),
                at: at.clone(),
                secrets: secrets.clone(),
            }),
        };
        let mut con = store.con();
        let version: String = ::redis::cmd("EVAL")
            .arg(
                "redis.call('HSETNX', KEYS[1], 'schema_version', ARGV[1]) \
                 return redis.call('HGET', KEYS[1], 'schema_version')",
            )
            .arg(1)
            .arg(store.key("meta"))
            .arg(SCHEMA_VERSION)
            .query_async(&mut con)
            .await
            .map_err(|e| open_err(e.to_string()))?;
        if version != SCHEMA_VERSION {
            return Err(open_err(format!(
                "namespace `{namespace}` has schema version {version}, this sleuth reads version \
                 {SCHEMA_VERSION}"
            )));
        }
        store.warn_if_evicting().await;
        Ok(store)
    }

    /// The URL the store talks to, password redacted.
    pub fn url(&self) -> &str {
        &self.inner.at
    }

    /// The key prefix, `{NS}:`.
    pub fn prefix(&self) -> &str {
        &self.inner.prefix
    }

    /// An evicting Redis drops keys when it is full — games, results, the ledger — without telling
    /// anyone, so say so once at connect time. Managed services often forbid `CONFIG`; then nothing
    /// is known and nothing is said.
    async fn warn_if_evicting(&self) {
        let mut con = self.con();
        let policy: Result<Vec<String>, _> = ::redis::cmd("CONFIG")
            .arg("GET")
            .arg("maxmemory-policy")
            .query_async(&mut con)
            .await;
        if let Ok(pair) = policy {
            if let Some(policy) = pair.get(1) {
                if policy != "noeviction" {
                    tracing::warn!(
                        at = %self.inner.at,
                        %policy,
                        "redis store: maxmemory-policy is not noeviction; a full Redis will drop \
                         sweep state silently"
                    );
                }
            }
        }
    }

    fn con(&self) -> ConnectionManager {
        self.inner.con.clone()
    }

    /// The transcript written with a game's result, if any.
    pub async fn transcript(&self, game: &str) -> Result<Option<String>, StoreError> {
        let mut con = self.con();
        ::redis::cmd("HGET")
            .arg(self.key(&format!("result:{game}")))
            .arg("transcript")
            .query_async(&mut con)
            .await
            .map_err(|e| self.err(e))
    }

    /// A raw value the cluster keeps beside the store (a sweep's submission), under the store's
    /// prefix. `SET NX`: the first value stays; returns the value now there.
    pub async fn put_blob_once(&self, name: &str, value: &[u8]) -> Result<Vec<u8>, StoreError> {
        let mut con = self.con();
        let key = self.key(name);
        let (now,): (Vec<u8>,) = ::redis::pipe()
            .atomic()
            .cmd("SET")
            .arg(&key)
            .arg(value)
            .arg("NX")
            .ignore()
            .cmd("GET")
            .arg(&key)
            .query_async(&mut con)
            .await
            .map_err(|e| self.err(e))?;
        Ok(now)
    }

    /// A value written by [`RedisStore::put_blob_once`].
    pub async fn blob(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let mut con = self.con();
        ::redis::cmd("GET")
            .arg(self.key(name))
            .query_async(&mut con)
            .await
            .map_err(|e| self.err(e))
    }

    /// The store's connection, for the cluster's other parts (queue, limits, worker registry) that
    /// live under the same namespace.
    pub fn connection(&self) -> ConnectionManager {
        self.con()
    }

    fn key(&self, rest: &str) -> String {
        format!("{}{rest}", self.inner.prefix)
    }

    /// A Redis error as the store's, scrubbed of the password.
    fn err(&self, e: RedisError) -> StoreError {
        StoreError::Redis {
            at: self.inner.at.clone(),
            message: scrub(&e.to_string(), &self.inner.secrets),
            transient: transient(&e),
        }
    }

    /// Runs `script` with `key` as its routing key and `{NS}:` as its first argument, then `args`.
    async fn eval<T: ::redis::FromRedisValue>(
        &self,
        script: &Script,
        key: &str,
        args: impl FnOnce(&mut ::redis::ScriptInvocation<'_>),
    ) -> Result<T, StoreError> {
        let mut inv = script.prepare_invoke();
        inv.key(key).arg(&self.inner.prefix);
        args(&mut inv);
        let mut con = self.con();
        inv.invoke_async(&mut con).await.map_err(|e| self.err(e))
    }

    async fn hgetall(&self, key: String) -> Result<HashMap<String, String>, StoreError> {
        let mut con = self.con();
        ::redis::cmd("HGETALL")
            .arg(key)
            .query_async(&mut con)
            .await
            .map_err(|e| self.err(e))
    }

    /// `HGETALL` of many keys, in pipelines of [`READS_PER_PIPELINE`].
    async fn hgetall_many(
        &self,
        keys: impl IntoIterator<Item = String>,
    ) -> Result<Vec<HashMap<String, String>>, StoreError> {
        let keys: Vec<String> = keys.into_iter().collect();
        let mut out = Vec::with_capacity(keys.len());
        let mut con = self.con();
        for chunk in keys.chunks(READS_PER_PIPELINE) {
            let mut pipe = ::redis::pipe();
            for k in chunk {
                pipe.cmd("HGETALL").arg(k);
            }
            let rows: Vec<HashMap<String, String>> =
                pipe.query_async(&mut con).await.map_err(|e| self.err(e))?;
            out.extend(rows);
        }
        Ok(out)
    }

    async fn zrange(&self, key: String) -> Result<Vec<String>, StoreError> {
        let mut con = self.con();
        ::redis::cmd("ZRANGE")
            .arg(key)
            .arg(0)
            .arg(-1)
            .query_async(&mut con)
            .await
            .map_err(|e| self.err(e))
    }
}

/// Whether trying the same operation again later can succeed: the connection was lost or refused,
/// the server timed out, or it asked to be waited for (loading, busy, failing over). The coordinator
/// retries these and gives up on the rest.
pub fn transient(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || matches!(e.retry_method(), RetryMethod::WaitAndRetry)
}

pub(super) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

pub(super) fn corrupt(what: &str, message: impl fmt::Display) -> StoreError {
    StoreError::Corrupt {
        what: what.to_string(),
        message: message.to_string(),
    }
}

/// A flag and a value for an optional string argument (Lua cannot tell `None` from an empty string).
pub(super) fn opt_args(v: &Option<String>) -> (&'static str, &str) {
    match v {
        Some(s) => ("1", s.as_str()),
        None => ("0", ""),
    }
}
