//! [`Store`] on Redis: each operation one command, pipeline or script.

use std::collections::HashMap;

use super::super::types::{
    CacheKind, GameRow, GameState, LedgerEntry, RunRecord, StateCounts, SweepRecord, SweepStatus,
    TotalsRow,
};
use super::super::{Store, StoreError, StoreFuture};
use super::rows::{game_from, ledger_args, run_from, sweep_from, totals_from};
use super::scripts::*;
use super::{corrupt, now, opt_args, RedisStore, GAMES_PER_SCRIPT, STATES};

impl Store for RedisStore {
    /// Reads are pipelined on one multiplexed connection and take microseconds on the server:
    /// dozens at once keep a worker's round trips overlapping (a worker with 300 games in flight
    /// would otherwise queue its cache reads four at a time, one network round trip each).
    fn max_parallel_lookups(&self) -> usize {
        super::MAX_PARALLEL_LOOKUPS
    }

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

    fn keeps_transcripts(&self) -> bool {
        true
    }

    fn put_result_with_transcript<'a>(
        &'a self,
        game: &'a str,
        result_json: &'a str,
        transcript: &'a str,
    ) -> StoreFuture<'a, bool> {
        // A cluster has no shared disk: the transcript lives beside the result.
        Box::pin(async move {
            let key = self.key(&format!("result:{game}"));
            let inserted: i64 = self
                .eval(&PUT_RESULT, &key, |inv| {
                    inv.arg(game).arg(result_json).arg(now()).arg(transcript);
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
