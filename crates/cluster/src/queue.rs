//! The cluster's work queue: one Redis Stream of game entries, read through one consumer group.
//!
//! A proven part instead of a home-made lease layer (ARCHITECTURE.md decision 7):
//!
//! - the coordinator appends one entry per game to play (`XADD`): `sweep`, `game`;
//! - a worker reads up to its free capacity (`XREADGROUP … >`); Redis records each delivered entry in
//!   the group's pending list under that worker's name until it is acknowledged;
//! - a worker acknowledges an entry (`XACK`, then `XDEL` to keep the stream short) only once the
//!   game's result is durable in the store — never before;
//! - a live worker touches its pending entries on every heartbeat (`XCLAIM … 0 JUSTID` to itself),
//!   which resets their idle time: a game may take much longer than the claim timeout;
//! - any worker periodically takes over entries idle longer than the claim timeout (`XAUTOCLAIM`):
//!   those of a worker that stopped heartbeating — killed, partitioned, frozen.
//!
//! Delivery is therefore at least once: a worker that dies after writing a result but before `XACK`
//! has its entry played again elsewhere, and a frozen worker that wakes up may finish a game that was
//! claimed meanwhile. Results stay exactly once because writing one is idempotent by game id (the
//! store's `put_result` keeps the first), a redelivered entry whose game is done is acknowledged
//! without playing, and a replayed game pays nothing for the calls already made (the shared cache).

use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::streams::{
    StreamAutoClaimOptions, StreamAutoClaimReply, StreamId, StreamReadOptions, StreamReadReply,
};
use redis::AsyncCommands;

/// KEYS[1] the stream; ARGV[1] the group, ARGV[2] the consumer, ARGV[3..] entry ids. Claims (with a
/// minimum idle time of 0, which resets the idle time) each entry still pending with the consumer;
/// returns how many.
const TOUCH: &str = r"
local n = 0
for i = 3, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if p[1] and p[1][2] == ARGV[2] then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
    n = n + 1
  end
end
return n
";

/// KEYS[1] the stream, KEYS[2] the set of games with a live entry; ARGV pairs of (sweep, game).
/// Appends an entry for each game not in the set and adds it there; returns how many were appended.
const PUSH_NEW: &str = r"
local n = 0
for i = 1, #ARGV, 2 do
  if redis.call('SADD', KEYS[2], ARGV[i + 1]) == 1 then
    redis.call('XADD', KEYS[1], '*', 'sweep', ARGV[i], 'game', ARGV[i + 1])
    n = n + 1
  end
end
return n
";

/// Why the queue failed.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("work queue entry {id}: field `{field}` is missing or not text")]
    BadEntry { id: String, field: &'static str },
}

/// One game to play, as delivered to a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The stream entry's id: what is acknowledged.
    pub entry: String,
    pub sweep: String,
    pub game: String,
}

/// What the coordinator queues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameEntry {
    pub sweep: String,
    pub game: String,
}

/// The work queue of one namespace (one cluster).
#[derive(Clone)]
pub struct WorkQueue {
    conn: ConnectionManager,
    stream: String,
    group: String,
    /// The set of games that have an entry not yet finished (`{ns}:queued`).
    queued: String,
}

impl std::fmt::Debug for WorkQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkQueue")
            .field("stream", &self.stream)
            .field("group", &self.group)
            .finish()
    }
}

fn text(entry: &StreamId, field: &'static str) -> Result<String, QueueError> {
    entry
        .get::<String>(field)
        .ok_or_else(|| QueueError::BadEntry {
            id: entry.id.clone(),
            field,
        })
}

fn delivery(entry: &StreamId) -> Result<Delivery, QueueError> {
    Ok(Delivery {
        entry: entry.id.clone(),
        sweep: text(entry, "sweep")?,
        game: text(entry, "game")?,
    })
}

impl WorkQueue {
    /// The queue of `namespace` on its own connection. A blocking read holds a connection until it
    /// returns (Redis answers a client's later commands after it), so the queue never shares one; and
    /// its replies may take as long as the longest `block` given to [`WorkQueue::take`], `max_block`.
    pub async fn connect(
        client: redis::Client,
        namespace: &str,
        max_block: Duration,
    ) -> Result<Self, QueueError> {
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_response_timeout(Some(max_block + Duration::from_secs(5)));
        let conn = ConnectionManager::new_with_config(client, config).await?;
        Self::open(conn, namespace).await
    }

    /// The stream `{namespace}:games` (braces included) and its group `workers`, created if missing, on `conn`.
    pub async fn open(conn: ConnectionManager, namespace: &str) -> Result<Self, QueueError> {
        let q = Self {
            conn,
            // Braces: a hash tag, as the store's keys (one cluster's keys in one Redis Cluster slot).
            stream: format!("{{{namespace}}}:games"),
            group: "workers".into(),
            queued: format!("{{{namespace}}}:queued"),
        };
        q.ensure_group().await?;
        Ok(q)
    }

    /// Creates the stream and its group unless they exist.
    async fn ensure_group(&self) -> Result<(), QueueError> {
        let mut c = self.conn.clone();
        let created: Result<(), _> = c
            .xgroup_create_mkstream(&self.stream, &self.group, "0")
            .await;
        match created {
            Ok(()) => Ok(()),
            // The group exists: another process created it first.
            Err(e) if e.code() == Some("BUSYGROUP") => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// After an error: when the group is gone — Redis came back empty (no persistence, a flush),
    /// or lost the stream — it is created again, so workers go on reading what the coordinator
    /// queues again instead of failing for ever.
    async fn recover(&self, e: redis::RedisError) -> QueueError {
        if e.code() == Some("NOGROUP") {
            if let Err(again) = self.ensure_group().await {
                return again;
            }
        }
        e.into()
    }

    /// The stream's key (for docs and tests).
    pub fn stream(&self) -> &str {
        &self.stream
    }

    /// Appends entries, in one round trip.
    pub async fn push(&self, entries: &[GameEntry]) -> Result<(), QueueError> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for e in entries {
            pipe.xadd(
                &self.stream,
                "*",
                &[("sweep", e.sweep.as_str()), ("game", e.game.as_str())],
            )
            .ignore();
        }
        let mut c = self.conn.clone();
        pipe.query_async::<()>(&mut c).await?;
        Ok(())
    }

    /// Appends an entry for each game that has none yet (the set `{ns}:queued` records which do), in
    /// one atomic step; returns how many were appended. This is what makes submitting a sweep again —
    /// or the coordinator's periodic check that every unfinished game has an entry — queue nothing
    /// twice.
    pub async fn push_new(&self, entries: &[GameEntry]) -> Result<usize, QueueError> {
        let mut n = 0;
        // Chunks keep one script's run short: Redis serves nobody else while it runs.
        for chunk in entries.chunks(500) {
            let script = redis::Script::new(PUSH_NEW);
            let mut inv = script.key(&self.stream);
            inv.key(&self.queued);
            for e in chunk {
                inv.arg(&e.sweep).arg(&e.game);
            }
            let mut c = self.conn.clone();
            n += inv.invoke_async::<usize>(&mut c).await?;
        }
        Ok(n)
    }

    /// Acknowledges a played (or skipped) entry, removes it from the stream and its game from the set
    /// of queued games, atomically.
    pub async fn finish(&self, d: &Delivery) -> Result<(), QueueError> {
        let mut c = self.conn.clone();
        redis::pipe()
            .atomic()
            .xack(&self.stream, &self.group, &[&d.entry])
            .ignore()
            .xdel(&self.stream, &[&d.entry])
            .ignore()
            .srem(&self.queued, &d.game)
            .ignore()
            .query_async::<()>(&mut c)
            .await?;
        Ok(())
    }

    /// Puts a game back at the end of the queue (its actors crashed): a new entry, and the old one
    /// acknowledged, atomically; the game stays in the set of queued games.
    pub async fn requeue(&self, d: &Delivery) -> Result<(), QueueError> {
        let mut c = self.conn.clone();
        redis::pipe()
            .atomic()
            .xadd(
                &self.stream,
                "*",
                &[("sweep", d.sweep.as_str()), ("game", d.game.as_str())],
            )
            .ignore()
            .xack(&self.stream, &self.group, &[&d.entry])
            .ignore()
            .xdel(&self.stream, &[&d.entry])
            .ignore()
            .query_async::<()>(&mut c)
            .await?;
        Ok(())
    }

    /// Up to `n` entries never delivered before, waiting up to `block` for the first.
    pub async fn take(
        &self,
        consumer: &str,
        n: usize,
        block: Duration,
    ) -> Result<Vec<Delivery>, QueueError> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let opts = StreamReadOptions::default()
            .group(&self.group, consumer)
            .count(n)
            .block(block.as_millis().max(1) as usize);
        let mut c = self.conn.clone();
        let reply: Option<StreamReadReply> =
            match c.xread_options(&[&self.stream], &[">"], &opts).await {
                Ok(r) => r,
                Err(e) => return Err(self.recover(e).await),
            };
        reply
            .into_iter()
            .flat_map(|r| r.keys)
            .flat_map(|k| k.ids)
            .map(|e| delivery(&e))
            .collect()
    }

    /// Takes over up to `n` entries that have been pending with any consumer for at least
    /// `min_idle`: the games of workers that stopped touching them.
    pub async fn claim_idle(
        &self,
        consumer: &str,
        min_idle: Duration,
        n: usize,
    ) -> Result<Vec<Delivery>, QueueError> {
        let mut out = Vec::new();
        let mut start = "0-0".to_string();
        let mut c = self.conn.clone();
        while out.len() < n {
            let reply: StreamAutoClaimReply = match c
                .xautoclaim_options(
                    &self.stream,
                    &self.group,
                    consumer,
                    min_idle.as_millis() as usize,
                    &start,
                    StreamAutoClaimOptions::default().count(n - out.len()),
                )
                .await
            {
                Ok(r) => r,
                Err(e) => return Err(self.recover(e).await),
            };
            for e in &reply.claimed {
                out.push(delivery(e)?);
            }
            // The scan of the pending list wrapped around.
            if reply.next_stream_id == "0-0" {
                break;
            }
            start = reply.next_stream_id;
        }
        Ok(out)
    }

    /// Resets the idle time of entries this consumer still holds (its heartbeat), so nobody claims
    /// games it is still playing. `XCLAIM` alone would take an entry from whoever holds it, so a Lua
    /// script checks the holder and claims in one atomic step: an entry another worker has taken over
    /// meanwhile stays with it.
    pub async fn touch(&self, consumer: &str, entries: &[String]) -> Result<usize, QueueError> {
        if entries.is_empty() {
            return Ok(0);
        }
        let script = redis::Script::new(TOUCH);
        let mut inv = script.key(&self.stream);
        inv.arg(&self.group).arg(consumer);
        for e in entries {
            inv.arg(e);
        }
        let mut c = self.conn.clone();
        Ok(inv.invoke_async::<usize>(&mut c).await?)
    }

    /// Acknowledges a played entry and removes it from the stream.
    pub async fn ack(&self, entry: &str) -> Result<(), QueueError> {
        let mut c = self.conn.clone();
        redis::pipe()
            .xack(&self.stream, &self.group, &[entry])
            .ignore()
            .xdel(&self.stream, &[entry])
            .ignore()
            .query_async::<()>(&mut c)
            .await?;
        Ok(())
    }

    /// Entries delivered and not yet acknowledged, over all consumers.
    pub async fn pending(&self) -> Result<u64, QueueError> {
        let mut c = self.conn.clone();
        let reply: redis::Value = redis::cmd("XPENDING")
            .arg(&self.stream)
            .arg(&self.group)
            .query_async(&mut c)
            .await?;
        match reply {
            redis::Value::Array(v) => Ok(v
                .first()
                .and_then(|n| redis::from_redis_value::<u64>(n.clone()).ok())
                .unwrap_or(0)),
            _ => Ok(0),
        }
    }

    /// Entries in the stream (queued or pending): the work not yet done.
    pub async fn entries(&self) -> Result<u64, QueueError> {
        let mut c = self.conn.clone();
        Ok(c.xlen(&self.stream).await?)
    }
}
