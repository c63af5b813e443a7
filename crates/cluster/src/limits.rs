//! Per-model limits shared by every worker of a cluster: requests and tokens per minute, and calls in
//! flight, kept in Redis and changed only by Lua scripts, so N workers together respect what the
//! endpoint allows (issue 12, item 5).
//!
//! - **Rates** use GCRA (the generic cell rate algorithm, as `governor` does on one node): one key per
//!   model and quantity holds the theoretical arrival time (TAT) in milliseconds of Redis's own clock
//!   (`TIME`, so workers' clocks do not matter). A request of cost `n` at time `now` with emission
//!   interval `T = 60,000 / limit` ms is admitted when `max(TAT, now) + n·T − now ≤ 60,000` — bursts of
//!   up to one minute's quota, as the node's limiter allows — and moves the TAT there. Requests and
//!   tokens are checked in one script: a request refused for tokens takes no request either.
//! - **Calls in flight** are leases: a sorted set per model of holder ids scored by their expiry. A
//!   slot is taken when the set, cleared of expired leases, holds fewer than the limit. A worker renews
//!   its leases while their calls run; a killed worker's leases lapse after their time to live, so a
//!   dead worker cannot hold slots for ever.
//!
//! Waiting is the caller's: a refused rate says how long until it would pass; a refused slot is asked
//! for again after a short, jittered pause.

use std::time::Duration;

use redis::aio::ConnectionManager;

/// Why a limit could not be checked.
#[derive(Debug, thiserror::Error)]
pub enum LimitError {
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error(
        "a call of {tokens} tokens can never pass model {model}'s limit of {tpm} tokens per minute"
    )]
    TooLarge {
        model: String,
        tokens: u64,
        tpm: u64,
    },
}

/// KEYS[1] requests TAT, KEYS[2] tokens TAT; ARGV[1] rpm (0 = none), ARGV[2] tpm (0 = none),
/// ARGV[3] tokens. Returns 0 when admitted, else the milliseconds to wait.
const RATE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = 60000
local function next_tat(key, limit, cost)
  local tat = tonumber(redis.call('GET', key) or '0')
  if tat < now then tat = now end
  return tat + cost * window / limit
end
local rpm, tpm, tokens = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local wait = 0
local r_tat, t_tat
if rpm > 0 then
  r_tat = next_tat(KEYS[1], rpm, 1)
  wait = math.max(wait, r_tat - now - window)
end
if tpm > 0 and tokens > 0 then
  t_tat = next_tat(KEYS[2], tpm, tokens)
  wait = math.max(wait, t_tat - now - window)
end
if wait > 0 then return math.ceil(wait) end
if r_tat then redis.call('SET', KEYS[1], tostring(r_tat), 'PX', window * 2) end
if t_tat then redis.call('SET', KEYS[2], tostring(t_tat), 'PX', window * 2) end
return 0
";

/// KEYS[1] the model's lease set; ARGV[1] limit, ARGV[2] holder, ARGV[3] time to live (ms).
/// Returns 1 when the slot is taken (or already held), else 0.
const ACQUIRE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
  return 1
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 2)
return 1
";

/// KEYS[1] the lease set; ARGV[1] ttl (ms), ARGV[2..] holders. Extends the leases still held.
const RENEW: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = 0
for i = 2, #ARGV do
  local s = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if s and tonumber(s) > now then
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[i])
    n = n + 1
  end
end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]) * 2)
return n
";

/// The limits of one cluster (namespace).
#[derive(Clone)]
pub struct ClusterLimits {
    conn: ConnectionManager,
    ns: String,
    rate: redis::Script,
    acquire: redis::Script,
    renew: redis::Script,
}

impl std::fmt::Debug for ClusterLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterLimits")
            .field("ns", &self.ns)
            .finish()
    }
}

impl ClusterLimits {
    /// The limits of `namespace` over `conn`.
    pub fn new(conn: ConnectionManager, namespace: &str) -> Self {
        Self {
            conn,
            ns: namespace.to_string(),
            rate: redis::Script::new(RATE),
            acquire: redis::Script::new(ACQUIRE),
            renew: redis::Script::new(RENEW),
        }
    }

    fn key(&self, what: &str, model: &str) -> String {
        // The namespace in braces: a hash tag, so one cluster's keys share a Redis Cluster slot.
        format!("{{{}}}:limit:{what}:{model}", self.ns)
    }

    /// Takes one request and `tokens` tokens of `model`'s per-minute limits (`None` = unlimited), or
    /// says how long to wait before asking again (nothing is taken then).
    pub async fn try_rate(
        &self,
        model: &str,
        rpm: Option<u32>,
        tpm: Option<u64>,
        tokens: u64,
    ) -> Result<Option<Duration>, LimitError> {
        if let Some(tpm) = tpm {
            if tokens > tpm {
                return Err(LimitError::TooLarge {
                    model: model.into(),
                    tokens,
                    tpm,
                });
            }
        }
        let mut c = self.conn.clone();
        let wait: u64 = self
            .rate
            .key(self.key("rpm", model))
            .key(self.key("tpm", model))
            .arg(rpm.unwrap_or(0))
            .arg(tpm.unwrap_or(0))
            .arg(tokens)
            .invoke_async(&mut c)
            .await?;
        Ok((wait > 0).then(|| Duration::from_millis(wait)))
    }

    /// [`ClusterLimits::try_rate`], waiting until it passes.
    pub async fn rate(
        &self,
        model: &str,
        rpm: Option<u32>,
        tpm: Option<u64>,
        tokens: u64,
    ) -> Result<(), LimitError> {
        while let Some(wait) = self.try_rate(model, rpm, tpm, tokens).await? {
            tokio::time::sleep(wait).await;
        }
        Ok(())
    }

    /// Takes one of `model`'s `max` call slots for `holder` (a unique id per call) for `ttl`, if one is
    /// free; `true` when it is held.
    pub async fn try_slot(
        &self,
        model: &str,
        max: u32,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, LimitError> {
        let mut c = self.conn.clone();
        let got: u32 = self
            .acquire
            .key(self.key("slots", model))
            .arg(max)
            .arg(holder)
            .arg(ttl.as_millis() as u64)
            .invoke_async(&mut c)
            .await?;
        Ok(got == 1)
    }

    /// [`ClusterLimits::try_slot`], asking again after a short pause ([`sleuth_base::backoff`]) until a slot
    /// is free.
    pub async fn slot(
        &self,
        model: &str,
        max: u32,
        holder: &str,
        ttl: Duration,
    ) -> Result<(), LimitError> {
        let poll = sleuth_base::backoff::Backoff::new(
            Duration::from_millis(5),
            Duration::from_millis(200),
        );
        let mut n = 0;
        while !self.try_slot(model, max, holder, ttl).await? {
            tokio::time::sleep(poll.delay(n)).await;
            n += 1;
        }
        Ok(())
    }

    /// Extends the leases of `holders` that are still held; how many were.
    pub async fn renew(
        &self,
        model: &str,
        holders: &[String],
        ttl: Duration,
    ) -> Result<usize, LimitError> {
        if holders.is_empty() {
            return Ok(0);
        }
        let mut c = self.conn.clone();
        let key = self.key("slots", model);
        let mut inv = self.renew.key(&key);
        inv.arg(ttl.as_millis() as u64);
        for h in holders {
            inv.arg(h);
        }
        Ok(inv.invoke_async(&mut c).await?)
    }

    /// Gives a slot back.
    pub async fn release(&self, model: &str, holder: &str) -> Result<(), LimitError> {
        let mut c = self.conn.clone();
        let _: i64 = redis::cmd("ZREM")
            .arg(self.key("slots", model))
            .arg(holder)
            .query_async(&mut c)
            .await?;
        Ok(())
    }

    /// Slots of `model` held now (expired leases not counted).
    pub async fn held(&self, model: &str) -> Result<u64, LimitError> {
        let mut c = self.conn.clone();
        let t: (u64, u64) = redis::cmd("TIME").query_async(&mut c).await?;
        let now = t.0 * 1000 + t.1 / 1000;
        Ok(redis::cmd("ZCOUNT")
            .arg(self.key("slots", model))
            .arg(format!("({now}"))
            .arg("+inf")
            .query_async(&mut c)
            .await?)
    }
}
