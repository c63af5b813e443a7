//! The cluster's store: [`Store`] on Redis, shared by the coordinator and every worker.
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
//! | `{NS}:sweep:<id>` | hash | a [`SweepRecord`]; absent optional fields are absent |
//! | `{NS}:sweep-runs:<sweep>` | sorted set | the sweep's run ids, scored by `seq` |
//! | `{NS}:run:<id>` | hash | a [`RunRecord`] and its `seq` |
//! | `{NS}:sweep-games:<sweep>` | sorted set | the sweep's game ids, scored by `seq` (the order added) |
//! | `{NS}:sweep-state:<state>:<sweep>` | set | the sweep's game ids in that state |
//! | `{NS}:game:<id>` | hash | a [`GameRow`] and its `seq` |
//! | `{NS}:result:<game>` | hash | `result` (the game's `result.json`), `written_at` |
//! | `{NS}:cache:<key hex>` | hash | `kind`, `model`, `value` (bytes), `created_at` |
//! | `{NS}:cache-count` | counter | entries in the cache |
//! | `{NS}:run-ledger:<run>` | list | the run's ledger entries, JSON, in the order recorded |
//! | `{NS}:sweep-ledger-runs:<sweep>` | set | runs that recorded calls for the sweep |
//! | `{NS}:sweep-totals:<sweep>` | hash | running totals: field `<metric>:<group>`, where group is the JSON array `[model, phase, framework, arm, source]` and metric one of `calls`, `prompt_tokens`, `completion_tokens`, `cached_tokens`, `cost_usd` |
//!
//! The per-state sets make [`Store::state_counts`] five `SCARD`s instead of a scan of the sweep's
//! games, and give the coordinator the games of a state without one. The running totals make
//! [`Store::totals`] one `HGETALL` of (groups × 5) fields, however long the ledger: the trait sums
//! exactly by model, phase, framework, arm and source, so the sums can be kept as the calls come.
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

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use ::redis::{RedisError, RetryMethod, Script};

use super::types::{
    CacheKind, GameRow, GameState, LedgerEntry, RunRecord, StateCounts, SweepRecord, SweepStatus,
    TotalsRow,
};
use super::{Store, StoreError, StoreFuture};

/// The layout's version, in `{NS}:meta`; a namespace written in another layout is refused rather than
/// misread.
const SCHEMA_VERSION: &str = "1";

/// Games added per script: one script blocks the whole server while it runs, so a sweep of 100,000
/// games is added in slices of this many (each atomic; adding is idempotent, so a crash between two
/// slices leaves a prefix that the next run completes).
const GAMES_PER_SCRIPT: usize = 256;
/// Hashes read per pipeline when listing a sweep's games.
const READS_PER_PIPELINE: usize = 1_000;

/// How long to wait for a connection to Redis.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long to wait for a reply. The client's default (500 ms) is shorter than a loaded server can
/// take to answer a slice of `add_games`, and a timed-out write is an ambiguous one (it may have
/// happened); a minute still turns a hung server into an error rather than a hung sweep.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(60);

/// The states a game can be in, for the per-state sets.
const STATES: [GameState; 5] = [
    GameState::Pending,
    GameState::Running,
    GameState::Done,
    GameState::Failed,
    GameState::Interrupted,
];

/// The metrics of a totals group, as named in `{NS}:sweep-totals:<sweep>`.
const METRICS: [&str; 5] = [
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

    /// [`Store::put_result`] with the game's transcript (JSONL), written in the same atomic step and
    /// only with the first result: a cluster has no shared disk, so the transcript lives beside the
    /// result, and a game played twice keeps the transcript of the play whose result was kept.
    pub async fn put_result_with_transcript(
        &self,
        game: &str,
        result_json: &str,
        transcript: &str,
    ) -> Result<bool, StoreError> {
        let key = self.key(&format!("result:{game}"));
        let inserted: i64 = self
            .eval(&PUT_RESULT, &key, |inv| {
                inv.arg(game).arg(result_json).arg(now()).arg(transcript);
            })
            .await?;
        Ok(inserted == 1)
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
pub(crate) fn transient(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || matches!(e.retry_method(), RetryMethod::WaitAndRetry)
}

/// `url` as it may be shown — the password (of the authority, or a `pass`/`password` query
/// parameter, as `redis+unix://` URLs carry it) replaced by `***` — and the secrets to scrub from any
/// message: the password as written and percent-decoded. Deliberately simple and conservative:
/// everything before the last `@` of the authority is user information, whatever it contains.
fn redact(url: &str) -> (String, Vec<String>) {
    let mut secrets = Vec::new();
    let mut add_secret = |s: &str| {
        if !s.is_empty() {
            secrets.push(s.to_string());
            let decoded = percent_decode(s);
            if decoded != s && !decoded.is_empty() {
                secrets.push(decoded);
            }
        }
    };
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    let mut out = String::with_capacity(url.len());
    if let Some(scheme) = scheme {
        out.push_str(scheme);
        out.push_str("://");
    }
    match before_query.rsplit_once('@') {
        Some((userinfo, host)) => {
            match userinfo.split_once(':') {
                Some((user, pass)) => {
                    add_secret(pass);
                    out.push_str(user);
                    out.push_str(":***");
                }
                None => out.push_str(userinfo),
            }
            out.push('@');
            out.push_str(host);
        }
        None => out.push_str(before_query),
    }
    if let Some(query) = query {
        out.push('?');
        let (query, fragment) = match query.split_once('#') {
            Some((q, f)) => (q, Some(f)),
            None => (query, None),
        };
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, v)) if k == "pass" || k == "password" => {
                    add_secret(v);
                    // Query values are form-encoded: `+` is a space there.
                    add_secret(&v.replace('+', " "));
                    format!("{k}=***")
                }
                _ => pair.to_string(),
            })
            .collect();
        out.push_str(&pairs.join("&"));
        if let Some(f) = fragment {
            out.push('#');
            out.push_str(f);
        }
    }
    // Longest first, so that a secret containing another is replaced whole.
    secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    secrets.dedup();
    (out, secrets)
}

/// `%XX` sequences decoded (invalid ones left as they are); `+` is left alone, as URLs' user
/// information does.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && bytes[i + 1].is_ascii_hexdigit()
            && bytes[i + 2].is_ascii_hexdigit()
        {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `message` with every secret replaced by `***`.
fn scrub(message: &str, secrets: &[String]) -> String {
    secrets
        .iter()
        .fold(message.to_string(), |m, s| m.replace(s.as_str(), "***"))
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn corrupt(what: &str, message: impl fmt::Display) -> StoreError {
    StoreError::Corrupt {
        what: what.to_string(),
        message: message.to_string(),
    }
}

/// A row read back: the fields of one hash, named for error messages.
struct Fields<'a> {
    what: &'a str,
    map: HashMap<String, String>,
}

impl<'a> Fields<'a> {
    fn new(what: &'a str, map: HashMap<String, String>) -> Self {
        Fields { what, map }
    }

    fn take(&mut self, field: &str) -> Result<String, StoreError> {
        self.map
            .remove(field)
            .ok_or_else(|| corrupt(self.what, format!("field `{field}` is missing")))
    }

    fn opt(&mut self, field: &str) -> Option<String> {
        self.map.remove(field)
    }

    fn parse<T: std::str::FromStr>(&mut self, field: &str) -> Result<T, StoreError>
    where
        T::Err: fmt::Display,
    {
        let raw = self.take(field)?;
        raw.parse()
            .map_err(|e| corrupt(self.what, format!("field `{field}` = `{raw}`: {e}")))
    }

    fn parse_opt<T: std::str::FromStr>(&mut self, field: &str) -> Result<Option<T>, StoreError>
    where
        T::Err: fmt::Display,
    {
        match self.opt(field) {
            None => Ok(None),
            Some(raw) => raw
                .parse()
                .map(Some)
                .map_err(|e| corrupt(self.what, format!("field `{field}` = `{raw}`: {e}"))),
        }
    }
}

fn sweep_from(map: HashMap<String, String>) -> Result<SweepRecord, StoreError> {
    let mut f = Fields::new("sweep", map);
    Ok(SweepRecord {
        id: f.take("id")?,
        name: f.take("name")?,
        file: f.take("file")?,
        text: f.take("text")?,
        created_at: f.take("created_at")?,
        status: f.parse::<SweepStatus>("status")?,
        note: f.opt("note"),
        max_usd: f.parse_opt("max_usd")?,
        max_tokens: f.parse_opt("max_tokens")?,
    })
}

fn run_from(map: HashMap<String, String>) -> Result<(RunRecord, u64), StoreError> {
    let mut f = Fields::new("run", map);
    let run = RunRecord {
        id: f.take("id")?,
        sweep: f.take("sweep")?,
        started_at: f.take("started_at")?,
        ended_at: f.opt("ended_at"),
        outcome: f.opt("outcome"),
        pid: f.parse("pid")?,
        host: f.take("host")?,
    };
    Ok((run, f.parse("seq")?))
}

fn game_from(map: HashMap<String, String>) -> Result<GameRow, StoreError> {
    let mut f = Fields::new("game", map);
    Ok(GameRow {
        id: f.take("id")?,
        sweep: f.take("sweep")?,
        arm: f.take("arm")?,
        arm_label: f.take("arm_label")?,
        script: f.take("script")?,
        repeat: f.parse("repeat")?,
        seed: f.parse("seed")?,
        spec: f.take("spec")?,
        state: f.parse::<GameState>("state")?,
        attempts: f.parse("attempts")?,
        crashes: f.parse("crashes")?,
        reason: f.opt("reason"),
        stage: f.opt("stage"),
        updated_at: f.take("updated_at")?,
    })
}

/// The totals group of an entry, as it appears in the totals hash's field names: a JSON array, so
/// that no value (an arm label with a colon, say) can run into another.
fn group_of(e: &LedgerEntry) -> String {
    serde_json::Value::from(vec![
        e.model.as_str(),
        e.phase.as_str(),
        e.framework.as_str(),
        e.arm.as_str(),
        e.source.as_str(),
    ])
    .to_string()
}

/// The arguments one ledger entry passes to [`LEDGER_LUA`]'s `record`: run, sweep, group, the three
/// token counts, the cost and the entry as JSON. Refuses what would make a command inside the script
/// fail half-way (Redis would not roll the script's earlier writes back).
fn ledger_args(entries: &[LedgerEntry]) -> Result<Vec<Vec<u8>>, StoreError> {
    let mut args = Vec::with_capacity(entries.len() * 8);
    for e in entries {
        let bad =
            |why: &str| StoreError::Backend(format!("ledger entry of game {}: {why}", e.game));
        if !e.cost_usd.is_finite() {
            return Err(bad("its cost is not a finite number"));
        }
        for n in [e.prompt_tokens, e.completion_tokens, e.cached_tokens] {
            if n > i64::MAX as u64 {
                return Err(bad("a token count past 2^63"));
            }
        }
        let json = serde_json::to_string(e).map_err(|err| bad(&err.to_string()))?;
        args.push(e.run.clone().into_bytes());
        args.push(e.sweep.clone().into_bytes());
        args.push(group_of(e).into_bytes());
        args.push(e.prompt_tokens.to_string().into_bytes());
        args.push(e.completion_tokens.to_string().into_bytes());
        args.push(e.cached_tokens.to_string().into_bytes());
        // Rust prints an f64 in full decimal (no exponent), which HINCRBYFLOAT reads exactly.
        args.push(e.cost_usd.to_string().into_bytes());
        args.push(json.into_bytes());
    }
    Ok(args)
}

/// The ledger's append, shared by `cache_put` and `record_calls` (a script cannot call another, so
/// both include this text). Each entry is pushed to its run's list, its run joins the sweep's
/// ledger runs, and its group's running totals grow, all in the calling script's one step.
macro_rules! ledger_lua {
    () => {
        "
local function record(P, from)
  for i = from, #ARGV, 8 do
    local run, sweep, group = ARGV[i], ARGV[i + 1], ARGV[i + 2]
    redis.call('RPUSH', P .. 'run-ledger:' .. run, ARGV[i + 7])
    redis.call('SADD', P .. 'sweep-ledger-runs:' .. sweep, run)
    local t = P .. 'sweep-totals:' .. sweep
    redis.call('HINCRBY', t, 'calls:' .. group, 1)
    redis.call('HINCRBY', t, 'prompt_tokens:' .. group, ARGV[i + 3])
    redis.call('HINCRBY', t, 'completion_tokens:' .. group, ARGV[i + 4])
    redis.call('HINCRBY', t, 'cached_tokens:' .. group, ARGV[i + 5])
    redis.call('HINCRBYFLOAT', t, 'cost_usd:' .. group, ARGV[i + 6])
  end
end
"
    };
}

/// KEYS[1] = the sweep; ARGV = prefix, id, then the record's fields and values. Writes the sweep only
/// if it is new; returns it as stored.
static OPEN_SWEEP: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "
local key = KEYS[1]
if redis.call('EXISTS', key) == 0 then
  redis.call('HSET', key, unpack(ARGV, 3))
  redis.call('SADD', ARGV[1] .. 'sweeps', ARGV[2])
end
return redis.call('HGETALL', key)
",
    )
});

/// KEYS[1] = the sweep; ARGV = prefix, status, has note (`1`/`0`), note.
static SET_SWEEP_STATUS: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "
local key = KEYS[1]
if redis.call('EXISTS', key) == 1 then
  redis.call('HSET', key, 'status', ARGV[2])
  if ARGV[3] == '1' then
    redis.call('HSET', key, 'note', ARGV[4])
  else
    redis.call('HDEL', key, 'note')
  end
end
return 0
",
    )
});

/// KEYS[1] = the run; ARGV = prefix, id, sweep, then fields and values. Replaces a run of the same id
/// (as SQLite's `INSERT OR REPLACE` does), moving it to the end of its sweep's runs.
static START_RUN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "
local P, id, sweep = ARGV[1], ARGV[2], ARGV[3]
local key = KEYS[1]
local old = redis.call('HGET', key, 'sweep')
if old then
  redis.call('ZREM', P .. 'sweep-runs:' .. old, id)
end
redis.call('DEL', key)
local seq = redis.call('INCR', P .. 'seq')
redis.call('HSET', key, 'seq', seq, unpack(ARGV, 4))
redis.call('ZADD', P .. 'sweep-runs:' .. sweep, seq, id)
return 0
",
    )
});

/// KEYS[1] = the run; ARGV = prefix, ended_at, outcome.
static END_RUN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'ended_at', ARGV[2], 'outcome', ARGV[3])
end
return 0
",
    )
});

/// KEYS[1] = the first game's sweep's game index; ARGV = prefix, now, then 8 per game: id, sweep,
/// arm, arm_label, script, repeat, seed, spec. Adds the games not there yet as pending; returns how
/// many were new.
static ADD_GAMES: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "
local P, now = ARGV[1], ARGV[2]
local added = 0
for i = 3, #ARGV, 8 do
  local id, sweep = ARGV[i], ARGV[i + 1]
  local key = P .. 'game:' .. id
  if redis.call('EXISTS', key) == 0 then
    local seq = redis.call('INCR', P .. 'seq')
    redis.call('HSET', key, 'id', id, 'seq', seq, 'sweep', sweep, 'arm', ARGV[i + 2],
      'arm_label', ARGV[i + 3], 'script', ARGV[i + 4], 'repeat', ARGV[i + 5], 'seed', ARGV[i + 6],
      'spec', ARGV[i + 7], 'state', 'pending', 'attempts', 0, 'crashes', 0, 'updated_at', now)
    redis.call('ZADD', P .. 'sweep-games:' .. sweep, seq, id)
    redis.call('SADD', P .. 'sweep-state:pending:' .. sweep, id)
    added = added + 1
  end
end
return added
",
    )
});

/// KEYS[1] = the game; ARGV = prefix, id, state, now, counts an attempt (`1`/`0`), has reason,
/// reason, has stage, stage. Nothing happens to a missing game or a done one.
static SET_GAME_STATE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "
local P, id, new = ARGV[1], ARGV[2], ARGV[3]
local g = KEYS[1]
local cur = redis.call('HGET', g, 'state')
if (not cur) or cur == 'done' then
  return 0
end
local sweep = redis.call('HGET', g, 'sweep')
if cur ~= new then
  redis.call('SREM', P .. 'sweep-state:' .. cur .. ':' .. sweep, id)
  redis.call('SADD', P .. 'sweep-state:' .. new .. ':' .. sweep, id)
end
redis.call('HSET', g, 'state', new, 'updated_at', ARGV[4])
if ARGV[5] == '1' then
  redis.call('HINCRBY', g, 'attempts', 1)
end
if ARGV[6] == '1' then
  redis.call('HSET', g, 'reason', ARGV[7])
else
  redis.call('HDEL', g, 'reason')
end
if ARGV[8] == '1' then
  redis.call('HSET', g, 'stage', ARGV[9])
else
  redis.call('HDEL', g, 'stage')
end
return 1
",
    )
});

/// KEYS[1] = the game; ARGV = prefix. The new crash count, or -1 for a missing game.
static COUNT_CRASH: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
return redis.call('HINCRBY', KEYS[1], 'crashes', 1)
",
    )
});

/// KEYS[1] = the result; ARGV = prefix, game, result, now. The first result of a game is kept; the
/// game (if the store has it) is done either way. Returns 1 if this call wrote the result.
static PUT_RESULT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        "
local P, id, now = ARGV[1], ARGV[2], ARGV[4]
local inserted = redis.call('HSETNX', KEYS[1], 'result', ARGV[3])
if inserted == 1 then
  redis.call('HSET', KEYS[1], 'written_at', now)
  if ARGV[5] then
    redis.call('HSET', KEYS[1], 'transcript', ARGV[5])
  end
end
local g = P .. 'game:' .. id
local cur = redis.call('HGET', g, 'state')
if cur then
  if cur ~= 'done' then
    local sweep = redis.call('HGET', g, 'sweep')
    redis.call('SREM', P .. 'sweep-state:' .. cur .. ':' .. sweep, id)
    redis.call('SADD', P .. 'sweep-state:done:' .. sweep, id)
  end
  redis.call('HSET', g, 'state', 'done', 'updated_at', now)
  redis.call('HDEL', g, 'reason', 'stage')
end
return inserted
",
    )
});

/// KEYS[1] = the cache entry; ARGV = prefix, kind, model, value, now, then the ledger's 8 per entry.
/// The first value of a key stays; the entries are recorded either way.
static CACHE_PUT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        ledger_lua!(),
        "
local P = ARGV[1]
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'kind', ARGV[2], 'model', ARGV[3], 'value', ARGV[4],
    'created_at', ARGV[5])
  redis.call('INCR', P .. 'cache-count')
end
record(P, 6)
return 0
"
    ))
});

/// KEYS[1] = the first entry's run's ledger; ARGV = prefix, then the ledger's 8 per entry.
static RECORD_CALLS: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        ledger_lua!(),
        "
record(ARGV[1], 2)
return 0
"
    ))
});

/// A flag and a value for an optional string argument (Lua cannot tell `None` from an empty string).
fn opt_args(v: &Option<String>) -> (&'static str, &str) {
    match v {
        Some(s) => ("1", s.as_str()),
        None => ("0", ""),
    }
}

impl Store for RedisStore {
    fn open_sweep<'a>(&'a self, sweep: &'a SweepRecord) -> StoreFuture<'a, SweepRecord> {
        Box::pin(async move {
            let mut fields: Vec<(&str, String)> = vec![
                ("id", sweep.id.clone()),
                ("name", sweep.name.clone()),
                ("file", sweep.file.clone()),
                ("text", sweep.text.clone()),
                ("created_at", sweep.created_at.clone()),
                ("status", sweep.status.as_str().to_string()),
            ];
            if let Some(note) = &sweep.note {
                fields.push(("note", note.clone()));
            }
            if let Some(usd) = sweep.max_usd {
                fields.push(("max_usd", usd.to_string()));
            }
            if let Some(tokens) = sweep.max_tokens {
                fields.push(("max_tokens", tokens.to_string()));
            }
            let key = self.key(&format!("sweep:{}", sweep.id));
            let stored: HashMap<String, String> = self
                .eval(&OPEN_SWEEP, &key, |inv| {
                    inv.arg(&sweep.id);
                    for (k, v) in &fields {
                        inv.arg(*k).arg(v);
                    }
                })
                .await?;
            sweep_from(stored)
        })
    }

    fn sweep<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SweepRecord>> {
        Box::pin(async move {
            let map = self.hgetall(self.key(&format!("sweep:{id}"))).await?;
            if map.is_empty() {
                return Ok(None);
            }
            sweep_from(map).map(Some)
        })
    }

    fn sweeps(&self) -> StoreFuture<'_, Vec<SweepRecord>> {
        Box::pin(async move {
            let mut con = self.con();
            let ids: Vec<String> = ::redis::cmd("SMEMBERS")
                .arg(self.key("sweeps"))
                .query_async(&mut con)
                .await
                .map_err(|e| self.err(e))?;
            let rows = self
                .hgetall_many(ids.iter().map(|id| self.key(&format!("sweep:{id}"))))
                .await?;
            let mut sweeps = rows
                .into_iter()
                .filter(|m| !m.is_empty())
                .map(sweep_from)
                .collect::<Result<Vec<_>, _>>()?;
            // The order SQLite lists them in.
            sweeps.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
            Ok(sweeps)
        })
    }

    fn set_sweep_status<'a>(
        &'a self,
        id: &'a str,
        status: SweepStatus,
        note: Option<String>,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let key = self.key(&format!("sweep:{id}"));
            let (has_note, note) = opt_args(&note);
            self.eval::<i64>(&SET_SWEEP_STATUS, &key, |inv| {
                inv.arg(status.as_str()).arg(has_note).arg(note);
            })
            .await
            .map(|_| ())
        })
    }

    fn start_run<'a>(&'a self, run: &'a RunRecord) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut fields: Vec<(&str, String)> = vec![
                ("id", run.id.clone()),
                ("sweep", run.sweep.clone()),
                ("started_at", run.started_at.clone()),
                ("pid", run.pid.to_string()),
                ("host", run.host.clone()),
            ];
            if let Some(ended) = &run.ended_at {
                fields.push(("ended_at", ended.clone()));
            }
            if let Some(outcome) = &run.outcome {
                fields.push(("outcome", outcome.clone()));
            }
            let key = self.key(&format!("run:{}", run.id));
            self.eval::<i64>(&START_RUN, &key, |inv| {
                inv.arg(&run.id).arg(&run.sweep);
                for (k, v) in &fields {
                    inv.arg(*k).arg(v);
                }
            })
            .await
            .map(|_| ())
        })
    }

    fn end_run<'a>(&'a self, run: &'a str, outcome: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let key = self.key(&format!("run:{run}"));
            self.eval::<i64>(&END_RUN, &key, |inv| {
                inv.arg(now()).arg(outcome);
            })
            .await
            .map(|_| ())
        })
    }

    fn runs<'a>(&'a self, sweep: &'a str) -> StoreFuture<'a, Vec<RunRecord>> {
        Box::pin(async move {
            let ids = self
                .zrange(self.key(&format!("sweep-runs:{sweep}")))
                .await?;
            let rows = self
                .hgetall_many(ids.iter().map(|id| self.key(&format!("run:{id}"))))
                .await?;
            let mut runs = rows
                .into_iter()
                .filter(|m| !m.is_empty())
                .map(run_from)
                .collect::<Result<Vec<_>, _>>()?;
            // SQLite's order: by start time, then the order recorded.
            runs.sort_by(|(a, sa), (b, sb)| (&a.started_at, sa).cmp(&(&b.started_at, sb)));
            Ok(runs.into_iter().map(|(r, _)| r).collect())
        })
    }

    fn add_games<'a>(&'a self, games: &'a [GameRow]) -> StoreFuture<'a, usize> {
        Box::pin(async move {
            let mut added = 0usize;
            let at = now();
            for slice in games.chunks(GAMES_PER_SCRIPT) {
                let Some(first) = slice.first() else { continue };
                let key = self.key(&format!("sweep-games:{}", first.sweep));
                let n: i64 = self
                    .eval(&ADD_GAMES, &key, |inv| {
                        inv.arg(&at);
                        for g in slice {
                            inv.arg(&g.id)
                                .arg(&g.sweep)
                                .arg(&g.arm)
                                .arg(&g.arm_label)
                                .arg(&g.script)
                                .arg(g.repeat)
                                .arg(g.seed)
                                .arg(&g.spec);
                        }
                    })
                    .await?;
                added += usize::try_from(n).unwrap_or(0);
            }
            Ok(added)
        })
    }

    fn games<'a>(&'a self, sweep: &'a str) -> StoreFuture<'a, Vec<GameRow>> {
        Box::pin(async move {
            let ids = self
                .zrange(self.key(&format!("sweep-games:{sweep}")))
                .await?;
            let rows = self
                .hgetall_many(ids.iter().map(|id| self.key(&format!("game:{id}"))))
                .await?;
            rows.into_iter()
                .filter(|m| !m.is_empty())
                .map(game_from)
                .collect()
        })
    }

    fn game<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<GameRow>> {
        Box::pin(async move {
            let map = self.hgetall(self.key(&format!("game:{id}"))).await?;
            if map.is_empty() {
                return Ok(None);
            }
            game_from(map).map(Some)
        })
    }

    fn set_game_state<'a>(
        &'a self,
        id: &'a str,
        state: GameState,
        reason: Option<String>,
        stage: Option<String>,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let key = self.key(&format!("game:{id}"));
            let attempt = if state == GameState::Running {
                "1"
            } else {
                "0"
            };
            let (has_reason, reason) = opt_args(&reason);
            let (has_stage, stage) = opt_args(&stage);
            self.eval::<i64>(&SET_GAME_STATE, &key, |inv| {
                inv.arg(id)
                    .arg(state.as_str())
                    .arg(now())
                    .arg(attempt)
                    .arg(has_reason)
                    .arg(reason)
                    .arg(has_stage)
                    .arg(stage);
            })
            .await
            .map(|_| ())
        })
    }

    fn count_crash<'a>(&'a self, id: &'a str) -> StoreFuture<'a, u32> {
        Box::pin(async move {
            let key = self.key(&format!("game:{id}"));
            let n: i64 = self.eval(&COUNT_CRASH, &key, |_| {}).await?;
            u32::try_from(n)
                .map_err(|_| StoreError::Backend(format!("count a crash: no game {id}")))
        })
    }

    fn state_counts<'a>(&'a self, sweep: &'a str) -> StoreFuture<'a, StateCounts> {
        Box::pin(async move {
            let mut pipe = ::redis::pipe();
            for s in STATES {
                pipe.cmd("SCARD")
                    .arg(self.key(&format!("sweep-state:{}:{sweep}", s.as_str())));
            }
            let mut con = self.con();
            let counts: Vec<u64> = pipe.query_async(&mut con).await.map_err(|e| self.err(e))?;
            let mut out = StateCounts::default();
            for (s, n) in STATES.into_iter().zip(counts) {
                // As SQLite's GROUP BY: only the states some game is in.
                if n > 0 {
                    out.0.insert(s, n);
                }
            }
            Ok(out)
        })
    }

    fn put_result<'a>(&'a self, game: &'a str, result_json: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let key = self.key(&format!("result:{game}"));
            let inserted: i64 = self
                .eval(&PUT_RESULT, &key, |inv| {
                    inv.arg(game).arg(result_json).arg(now());
                })
                .await?;
            Ok(inserted == 1)
        })
    }

    fn result<'a>(&'a self, game: &'a str) -> StoreFuture<'a, Option<String>> {
        Box::pin(async move {
            let mut con = self.con();
            ::redis::cmd("HGET")
                .arg(self.key(&format!("result:{game}")))
                .arg("result")
                .query_async(&mut con)
                .await
                .map_err(|e| self.err(e))
        })
    }

    fn cache_get<'a>(&'a self, key: &'a [u8; 32]) -> StoreFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move {
            let mut con = self.con();
            ::redis::cmd("HGET")
                .arg(self.key(&format!("cache:{}", hex::encode(key))))
                .arg("value")
                .query_async(&mut con)
                .await
                .map_err(|e| self.err(e))
        })
    }

    fn cache_put<'a>(
        &'a self,
        key: &'a [u8; 32],
        kind: CacheKind,
        model: &'a str,
        value: &'a [u8],
        ledger: &'a [LedgerEntry],
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let entries = ledger_args(ledger)?;
            let k = self.key(&format!("cache:{}", hex::encode(key)));
            self.eval::<i64>(&CACHE_PUT, &k, |inv| {
                inv.arg(kind.as_str()).arg(model).arg(value).arg(now());
                for a in &entries {
                    inv.arg(a.as_slice());
                }
            })
            .await
            .map(|_| ())
        })
    }

    fn cache_len(&self) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            let mut con = self.con();
            let n: Option<u64> = ::redis::cmd("GET")
                .arg(self.key("cache-count"))
                .query_async(&mut con)
                .await
                .map_err(|e| self.err(e))?;
            Ok(n.unwrap_or(0))
        })
    }

    fn record_calls<'a>(&'a self, entries: &'a [LedgerEntry]) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let Some(first) = entries.first() else {
                return Ok(());
            };
            let args = ledger_args(entries)?;
            let key = self.key(&format!("run-ledger:{}", first.run));
            self.eval::<i64>(&RECORD_CALLS, &key, |inv| {
                for a in &args {
                    inv.arg(a.as_slice());
                }
            })
            .await
            .map(|_| ())
        })
    }

    fn totals<'a>(&'a self, sweep: &'a str) -> StoreFuture<'a, Vec<TotalsRow>> {
        Box::pin(async move {
            let fields = self
                .hgetall(self.key(&format!("sweep-totals:{sweep}")))
                .await?;
            totals_from(fields)
        })
    }

    fn ledger<'a>(&'a self, run: &'a str) -> StoreFuture<'a, Vec<LedgerEntry>> {
        Box::pin(async move {
            let mut con = self.con();
            let rows: Vec<String> = ::redis::cmd("LRANGE")
                .arg(self.key(&format!("run-ledger:{run}")))
                .arg(0)
                .arg(-1)
                .query_async(&mut con)
                .await
                .map_err(|e| self.err(e))?;
            rows.iter()
                .map(|r| serde_json::from_str(r).map_err(|e| corrupt("ledger entry", e)))
                .collect()
        })
    }
}

/// The rows of a sweep's totals hash, in SQLite's order (by model, phase, framework, arm, source).
fn totals_from(fields: HashMap<String, String>) -> Result<Vec<TotalsRow>, StoreError> {
    let mut groups: BTreeMap<[String; 5], TotalsRow> = BTreeMap::new();
    for (field, value) in fields {
        let (metric, group) = field
            .split_once(':')
            .ok_or_else(|| corrupt("totals", format!("field `{field}`")))?;
        if !METRICS.contains(&metric) {
            return Err(corrupt("totals", format!("unknown metric in `{field}`")));
        }
        let g: [String; 5] = serde_json::from_str(group)
            .map_err(|e| corrupt("totals", format!("group in `{field}`: {e}")))?;
        let row = groups.entry(g.clone()).or_insert_with(|| {
            let [model, phase, framework, arm, source] = g;
            TotalsRow {
                model,
                phase,
                framework,
                arm,
                source,
                ..TotalsRow::default()
            }
        });
        let int = |v: &str| {
            v.parse::<u64>()
                .map_err(|e| corrupt("totals", format!("`{field}` = `{v}`: {e}")))
        };
        match metric {
            "calls" => row.calls = int(&value)?,
            "prompt_tokens" => row.prompt_tokens = int(&value)?,
            "completion_tokens" => row.completion_tokens = int(&value)?,
            "cached_tokens" => row.cached_tokens = int(&value)?,
            _ => {
                row.cost_usd = value
                    .parse()
                    .map_err(|e| corrupt("totals", format!("`{field}` = `{value}`: {e}")))?
            }
        }
    }
    Ok(groups.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_redacted_from_urls() {
        let (at, secrets) = redact("redis://:hunter2@cache.internal:6379/0");
        assert_eq!(at, "redis://:***@cache.internal:6379/0");
        assert_eq!(secrets, ["hunter2"]);

        let (at, secrets) = redact("rediss://worker:p%40ss@host:6380");
        assert_eq!(at, "rediss://worker:***@host:6380");
        assert!(secrets.contains(&"p%40ss".to_string()));
        assert!(secrets.contains(&"p@ss".to_string()));

        // A raw `@` or `/` in the password: everything up to the last `@` is user information.
        let (at, _) = redact("redis://u:a@b/c@host:1/2");
        assert_eq!(at, "redis://u:***@host:1/2");

        let (at, secrets) = redact("redis+unix:///run/redis.sock?db=1&pass=sekrit");
        assert_eq!(at, "redis+unix:///run/redis.sock?db=1&pass=***");
        assert_eq!(secrets, ["sekrit"]);
        let (_, secrets) = redact("unix:///s.sock?pass=two+words%21");
        assert!(secrets.contains(&"two words!".to_string()), "{secrets:?}");

        let (at, secrets) = redact("redis://127.0.0.1:6379");
        assert_eq!(at, "redis://127.0.0.1:6379");
        assert!(secrets.is_empty());

        let (at, secrets) = redact("redis://user@host");
        assert_eq!(at, "redis://user@host");
        assert!(secrets.is_empty());
    }

    #[test]
    fn secrets_are_scrubbed_from_messages() {
        let (_, secrets) = redact("redis://:p%2Fw@h");
        let m = scrub("auth p/w failed (p%2Fw)", &secrets);
        assert_eq!(m, "auth *** failed (***)");
    }

    #[test]
    fn percent_decoding_leaves_bad_escapes_alone() {
        assert_eq!(percent_decode("a%20b"), "a b");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%+1"), "%+1");
    }

    #[test]
    fn totals_read_back_from_their_fields() {
        let g = r#"["m1","gameplay","player","arm:1","live"]"#;
        let fields: HashMap<String, String> = [
            (format!("calls:{g}"), "2".to_string()),
            (format!("prompt_tokens:{g}"), "200".to_string()),
            (format!("completion_tokens:{g}"), "40".to_string()),
            (format!("cached_tokens:{g}"), "20".to_string()),
            (format!("cost_usd:{g}"), "0.5".to_string()),
        ]
        .into_iter()
        .collect();
        let rows = totals_from(fields).expect("parse");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].arm, "arm:1");
        assert_eq!((rows[0].calls, rows[0].prompt_tokens), (2, 200));
        assert!((rows[0].cost_usd - 0.5).abs() < 1e-12);
        let bad: HashMap<String, String> = [(format!("bogus:{g}"), "1".to_string())]
            .into_iter()
            .collect();
        assert!(matches!(totals_from(bad), Err(StoreError::Corrupt { .. })));
    }

    #[test]
    fn ledger_entries_that_could_fail_half_way_are_refused() {
        let mut e = LedgerEntry {
            run: "r".into(),
            sweep: "s".into(),
            game: "g".into(),
            arm: "a".into(),
            model: "m".into(),
            phase: "gameplay".into(),
            framework: "player".into(),
            purpose: "p".into(),
            source: super::super::CallSource::Live,
            prompt_tokens: 1,
            completion_tokens: 1,
            cached_tokens: 0,
            cost_usd: f64::NAN,
            key: None,
        };
        assert!(ledger_args(std::slice::from_ref(&e)).is_err());
        e.cost_usd = 0.1;
        e.prompt_tokens = u64::MAX;
        assert!(ledger_args(std::slice::from_ref(&e)).is_err());
        e.prompt_tokens = 7;
        assert_eq!(ledger_args(&[e]).expect("valid").len(), 8);
    }
}
