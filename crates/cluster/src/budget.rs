//! A sweep's budget shared by every worker of a cluster (issue 12, item 5): what was spent and what
//! calls in flight have reserved, in Redis, changed only by Lua scripts, so N workers together stop at
//! the limit and the sweep is marked stopped once.
//!
//! It follows the node's budget (`llm::gateway::budget`): before a call, reserve an upper bound on its
//! cost and tokens; refuse it when spent + bound would pass a limit, and answer "busy" (ask again)
//! when only the reservations of calls in flight stand in the way; after it, settle the
//! reservation to what the call really cost. Amounts are integers (nano-dollars and tokens) so that
//! sums in Redis are exact. Reservations are leases: those of a worker killed mid-call lapse after
//! their time to live instead of holding budget for ever.

use std::time::Duration;

use redis::aio::ConnectionManager;

/// The node's types: a sweep's limits (`None` is unlimited) and what it has spent, by every worker.
pub use sleuth_llm::{BudgetLimits as Caps, Spent};

/// Why a reservation failed.
#[derive(Debug, thiserror::Error)]
pub enum BudgetError {
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
}

/// The answer to a reservation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reserve {
    /// Reserved; settle it when the call ends.
    Granted,
    /// It would pass a limit beside what was spent. `first` is true for exactly one refusal of the
    /// sweep: the one whose caller marks the sweep budget-stopped.
    Refused { spent: Spent, first: bool },
    /// It would fit beside what was spent, but not beside what calls in flight hold: ask again when
    /// they have settled (nothing is reserved, nothing is marked).
    Busy { spent: Spent },
}

const NANO: f64 = 1e9;

fn nano(usd: f64) -> i64 {
    (usd.max(0.0) * NANO).round() as i64
}

/// KEYS[1] the sweep's budget hash, KEYS[2] its reservations hash. ARGV: id, usd bound (nano),
/// tokens bound, max usd (nano, -1 none), max tokens (-1 none), ttl ms. Returns {answer (1 granted,
/// 0 refused: spent + bound passes a cap; 2 busy: it would fit but for the reservations held), spent
/// nano, spent tokens, first refusal (0/1)}.
const RESERVE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local held_usd, held_tok = 0, 0
local all = redis.call('HGETALL', KEYS[2])
for i = 1, #all, 2 do
  local usd, tok, exp = string.match(all[i + 1], '^(%-?%d+) (%d+) (%d+)$')
  if tonumber(exp) <= now then
    redis.call('HDEL', KEYS[2], all[i])
  else
    held_usd = held_usd + tonumber(usd)
    held_tok = held_tok + tonumber(tok)
  end
end
local spent_usd = tonumber(redis.call('HGET', KEYS[1], 'usd') or '0')
local spent_tok = tonumber(redis.call('HGET', KEYS[1], 'tokens') or '0')
local usd, tok = tonumber(ARGV[2]), tonumber(ARGV[3])
local max_usd, max_tok = tonumber(ARGV[4]), tonumber(ARGV[5])
if (max_usd >= 0 and spent_usd + usd > max_usd)
   or (max_tok >= 0 and spent_tok + tok > max_tok) then
  -- The flag holds the id of the first refusal, so a retried reservation (its reply was lost) is
  -- told it was first again instead of no one being first.
  local first = redis.call('HSETNX', KEYS[1], 'stopped', ARGV[1])
  if first == 0 and redis.call('HGET', KEYS[1], 'stopped') == ARGV[1] then first = 1 end
  return {0, spent_usd, spent_tok, first}
end
if (max_usd >= 0 and spent_usd + held_usd + usd > max_usd)
   or (max_tok >= 0 and spent_tok + held_tok + tok > max_tok) then
  return {2, spent_usd, spent_tok, 0}
end
redis.call('HSET', KEYS[2], ARGV[1], usd .. ' ' .. tok .. ' ' .. (now + tonumber(ARGV[6])))
return {1, spent_usd, spent_tok, 0}
";

/// KEYS as RESERVE, then KEYS[3] the reservation's settled marker; ARGV: id, real cost (nano), real
/// tokens. Adds the real amounts and drops the reservation (if it lapsed meanwhile the real amounts
/// still count: they were paid). Once per id: the marker makes a settle sent again after a lost
/// reply count nothing twice.
const SETTLE: &str = r"
if redis.call('SET', KEYS[3], '1', 'NX', 'PX', 600000) == false then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HINCRBY', KEYS[1], 'usd', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'tokens', ARGV[3])
return 1
";

/// KEYS[1] the reservations hash; ARGV: id, ttl ms. Extends the reservation if it is still held (a
/// lapsed one is not brought back); 1 when it was.
const RENEW: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
local usd, tok, exp = string.match(v, '^(%-?%d+) (%d+) (%d+)$')
if not exp or tonumber(exp) <= now then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], usd .. ' ' .. tok .. ' ' .. (now + tonumber(ARGV[2])))
return 1
";

/// The budgets of one cluster (namespace).
#[derive(Clone)]
pub struct ClusterBudget {
    conn: ConnectionManager,
    ns: String,
    reserve: redis::Script,
    settle: redis::Script,
    renew: redis::Script,
}

impl std::fmt::Debug for ClusterBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterBudget")
            .field("ns", &self.ns)
            .finish()
    }
}

impl ClusterBudget {
    pub fn new(conn: ConnectionManager, namespace: &str) -> Self {
        Self {
            conn,
            ns: namespace.to_string(),
            reserve: redis::Script::new(RESERVE),
            settle: redis::Script::new(SETTLE),
            renew: redis::Script::new(RENEW),
        }
    }

    fn keys(&self, sweep: &str) -> (String, String) {
        let base = format!("{{{}}}:budget:{sweep}", self.ns);
        (base.clone(), format!("{base}:held"))
    }

    /// Reserves `usd` and `tokens` (a call's upper bound) under `id` (unique per call) for `ttl`.
    pub async fn reserve(
        &self,
        sweep: &str,
        id: &str,
        usd: f64,
        tokens: u64,
        caps: Caps,
        ttl: Duration,
    ) -> Result<Reserve, BudgetError> {
        let (budget, held) = self.keys(sweep);
        let mut c = self.conn.clone();
        let (granted, spent_nano, spent_tokens, first): (i64, i64, u64, i64) = self
            .reserve
            .key(budget)
            .key(held)
            .arg(id)
            .arg(nano(usd))
            .arg(tokens)
            .arg(caps.max_usd.map_or(-1, nano))
            .arg(caps.max_tokens.map_or(-1, |t| t as i64))
            .arg(ttl.as_millis() as u64)
            .invoke_async(&mut c)
            .await?;
        let spent = Spent {
            usd: spent_nano as f64 / NANO,
            tokens: spent_tokens,
        };
        Ok(match granted {
            1 => Reserve::Granted,
            2 => Reserve::Busy { spent },
            _ => Reserve::Refused {
                spent,
                first: first == 1,
            },
        })
    }

    /// Settles reservation `id` to what the call really cost (a failed call: 0). Settling an id again
    /// (within ten minutes) changes nothing, so a settle whose reply was lost can be sent again.
    pub async fn settle(
        &self,
        sweep: &str,
        id: &str,
        usd: f64,
        tokens: u64,
    ) -> Result<(), BudgetError> {
        let (budget, held) = self.keys(sweep);
        let mut c = self.conn.clone();
        let settled = format!("{budget}:settled:{id}");
        let _: i64 = self
            .settle
            .key(budget)
            .key(held)
            .key(settled)
            .arg(id)
            .arg(nano(usd))
            .arg(tokens)
            .invoke_async(&mut c)
            .await?;
        Ok(())
    }

    /// Extends reservation `id` by `ttl` from now if it is still held, for a call that outlives the
    /// reservation's first time to live; `false` when it had lapsed (or was settled).
    pub async fn renew(&self, sweep: &str, id: &str, ttl: Duration) -> Result<bool, BudgetError> {
        let (_, held) = self.keys(sweep);
        let mut c = self.conn.clone();
        let renewed: i64 = self
            .renew
            .key(held)
            .arg(id)
            .arg(ttl.as_millis() as u64)
            .invoke_async(&mut c)
            .await?;
        Ok(renewed == 1)
    }

    /// What the sweep has spent.
    pub async fn spent(&self, sweep: &str) -> Result<Spent, BudgetError> {
        let (budget, _) = self.keys(sweep);
        let mut c = self.conn.clone();
        let (usd, tokens): (Option<i64>, Option<u64>) = redis::cmd("HMGET")
            .arg(budget)
            .arg("usd")
            .arg("tokens")
            .query_async(&mut c)
            .await?;
        Ok(Spent {
            usd: usd.unwrap_or(0) as f64 / NANO,
            tokens: tokens.unwrap_or(0),
        })
    }
}
