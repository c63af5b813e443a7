//! The [`Store`] implementation of the SQLite store: each operation one job for the writer thread or
//! one read on the pool.

use rusqlite::{params, OptionalExtension};

use super::super::types::{
    CacheKind, GameRow, GameState, KeptMessage, LedgerEntry, RunRecord, StateCounts, SweepRecord,
    SweepStatus, TotalsRow,
};
use super::super::{Store, StoreError, StoreFuture};
use super::rows::*;
use super::*;

impl Store for SqliteStore {
    /// Its pool of reading connections: a read past them opens (and closes) a connection of its own,
    /// paying for opening the file, reading the schema and preparing the statement again.
    fn max_parallel_lookups(&self) -> usize {
        READERS
    }

    fn open_sweep<'a>(&'a self, sweep: &'a SweepRecord) -> StoreFuture<'a, SweepRecord> {
        let s = sweep.clone();
        Box::pin(async move {
            let id = s.id.clone();
            self.write(move |c| {
                c.execute(
                    "INSERT OR IGNORE INTO sweeps (id, name, file, text, created_at, status, note, \
                     max_usd, max_tokens) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    params![
                        s.id,
                        s.name,
                        s.file,
                        s.text,
                        s.created_at,
                        s.status.as_str(),
                        s.note,
                        s.max_usd,
                        s.max_tokens.map(|t| t as i64)
                    ],
                )
            })
            .await?;
            self.sweep(&id)
                .await?
                .ok_or_else(|| StoreError::Backend(format!("sweep {id} vanished after insert")))
        })
    }

    fn sweep<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SweepRecord>> {
        let id = id.to_string();
        Box::pin(self.read(move |c| {
            let row = c
                .query_row(
                    &format!("SELECT {SWEEP_COLUMNS} FROM sweeps WHERE id = ?1"),
                    [&id],
                    sweep_from,
                )
                .optional()
                .map_err(backend)?;
            row.map(sweep_row).transpose()
        }))
    }

    fn sweeps(&self) -> StoreFuture<'_, Vec<SweepRecord>> {
        Box::pin(self.read(|c| {
            let mut st = c
                .prepare(&format!(
                    "SELECT {SWEEP_COLUMNS} FROM sweeps ORDER BY created_at, id"
                ))
                .map_err(backend)?;
            let rows = st
                .query_map([], sweep_from)
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)?;
            rows.into_iter().map(sweep_row).collect()
        }))
    }

    fn set_sweep_status<'a>(
        &'a self,
        id: &'a str,
        status: SweepStatus,
        note: Option<String>,
    ) -> StoreFuture<'a, ()> {
        let id = id.to_string();
        Box::pin(async move {
            self.write(move |c| {
                c.execute(
                    "UPDATE sweeps SET status = ?2, note = ?3 WHERE id = ?1",
                    params![id, status.as_str(), note],
                )
                .map(|_| ())
            })
            .await
        })
    }

    fn start_run<'a>(&'a self, run: &'a RunRecord) -> StoreFuture<'a, ()> {
        let r = run.clone();
        Box::pin(async move {
            self.write(move |c| {
                c.execute(
                    "INSERT OR REPLACE INTO runs (id, sweep, started_at, ended_at, outcome, pid, host) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![r.id, r.sweep, r.started_at, r.ended_at, r.outcome, r.pid, r.host],
                )
                .map(|_| ())
            })
            .await
        })
    }

    fn end_run<'a>(&'a self, run: &'a str, outcome: &'a str) -> StoreFuture<'a, ()> {
        let (run, outcome) = (run.to_string(), outcome.to_string());
        Box::pin(async move {
            self.write(move |c| {
                c.execute(
                    "UPDATE runs SET ended_at = ?2, outcome = ?3 WHERE id = ?1",
                    params![run, now(), outcome],
                )
                .map(|_| ())
            })
            .await
        })
    }

    fn runs<'a>(&'a self, sweep: &'a str) -> StoreFuture<'a, Vec<RunRecord>> {
        let sweep = sweep.to_string();
        Box::pin(self.read(move |c| {
            let mut st = c
                .prepare(
                    "SELECT id, sweep, started_at, ended_at, outcome, pid, host FROM runs \
                     WHERE sweep = ?1 ORDER BY started_at, rowid",
                )
                .map_err(backend)?;
            let rows = st
                .query_map([&sweep], run_from)
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend);
            rows
        }))
    }

    fn add_games<'a>(&'a self, games: &'a [GameRow]) -> StoreFuture<'a, usize> {
        let games = games.to_vec();
        Box::pin(async move {
            self.write(move |c| {
                let mut seq: i64 =
                    c.query_row("SELECT COALESCE(MAX(seq), 0) FROM games", [], |r| r.get(0))?;
                let mut st = c.prepare(
                    "INSERT OR IGNORE INTO games (id, seq, sweep, arm, arm_label, script, repeat, \
                     seed, spec, state, attempts, crashes, reason, stage, updated_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'pending', 0, 0, NULL, NULL, ?10)",
                )?;
                let mut added = 0;
                let at = now();
                for g in &games {
                    seq += 1;
                    added += st.execute(params![
                        g.id,
                        seq,
                        g.sweep,
                        g.arm,
                        g.arm_label,
                        g.script,
                        g.repeat,
                        g.seed as i64,
                        g.spec,
                        at
                    ])?;
                }
                Ok(added)
            })
            .await
        })
    }

    fn games<'a>(&'a self, sweep: &'a str) -> StoreFuture<'a, Vec<GameRow>> {
        let sweep = sweep.to_string();
        Box::pin(self.read(move |c| {
            let mut st = c
                .prepare(&format!(
                    "SELECT {GAME_COLUMNS} FROM games WHERE sweep = ?1 ORDER BY seq"
                ))
                .map_err(backend)?;
            let rows = st
                .query_map([&sweep], game_from)
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)?;
            rows.into_iter().map(game_row).collect()
        }))
    }

    fn game<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<GameRow>> {
        let id = id.to_string();
        Box::pin(self.read(move |c| {
            let row = c
                .query_row(
                    &format!("SELECT {GAME_COLUMNS} FROM games WHERE id = ?1"),
                    [&id],
                    game_from,
                )
                .optional()
                .map_err(backend)?;
            row.map(game_row).transpose()
        }))
    }

    fn set_game_state<'a>(
        &'a self,
        id: &'a str,
        state: GameState,
        reason: Option<String>,
        stage: Option<String>,
    ) -> StoreFuture<'a, ()> {
        let id = id.to_string();
        Box::pin(async move {
            self.write(move |c| {
                let attempt = i64::from(state == GameState::Running);
                c.execute(
                    "UPDATE games SET state = ?2, reason = ?3, stage = ?4, \
                     attempts = attempts + ?5, updated_at = ?6 \
                     WHERE id = ?1 AND state != 'done'",
                    params![id, state.as_str(), reason, stage, attempt, now()],
                )
                .map(|_| ())
            })
            .await
        })
    }

    fn count_crash<'a>(&'a self, id: &'a str) -> StoreFuture<'a, u32> {
        let id = id.to_string();
        Box::pin(async move {
            self.write(move |c| {
                c.execute(
                    "UPDATE games SET crashes = crashes + 1 WHERE id = ?1",
                    [&id],
                )?;
                c.query_row("SELECT crashes FROM games WHERE id = ?1", [&id], |r| {
                    r.get(0)
                })
            })
            .await
        })
    }

    fn state_counts<'a>(&'a self, sweep: &'a str) -> StoreFuture<'a, StateCounts> {
        let sweep = sweep.to_string();
        Box::pin(self.read(move |c| {
            let mut st = c
                .prepare("SELECT state, COUNT(*) FROM games WHERE sweep = ?1 GROUP BY state")
                .map_err(backend)?;
            let rows = st
                .query_map([&sweep], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
                })
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)?;
            let mut counts = StateCounts::default();
            for (state, n) in rows {
                counts.0.insert(parse("game state", &state)?, n as u64);
            }
            Ok(counts)
        }))
    }

    fn put_result<'a>(&'a self, game: &'a str, result_json: &'a str) -> StoreFuture<'a, bool> {
        let (game, result) = (game.to_string(), result_json.to_string());
        Box::pin(async move {
            self.write(move |c| {
                let at = now();
                let inserted = c.execute(
                    "INSERT OR IGNORE INTO results (game, result, written_at) VALUES (?1, ?2, ?3)",
                    params![game, result, at],
                )?;
                c.execute(
                    "UPDATE games SET state = 'done', reason = NULL, stage = NULL, updated_at = ?2 \
                     WHERE id = ?1",
                    params![game, at],
                )?;
                Ok(inserted == 1)
            })
            .await
        })
    }

    fn result<'a>(&'a self, game: &'a str) -> StoreFuture<'a, Option<String>> {
        let game = game.to_string();
        Box::pin(self.read(move |c| {
            c.query_row("SELECT result FROM results WHERE game = ?1", [&game], |r| {
                r.get(0)
            })
            .optional()
            .map_err(backend)
        }))
    }

    fn cache_get<'a>(&'a self, key: &'a [u8; 32]) -> StoreFuture<'a, Option<Vec<u8>>> {
        let key = *key;
        if !self.may_hold(&key) {
            return Box::pin(std::future::ready(Ok(None)));
        }
        Box::pin(self.read(move |c| {
            let mut st = c
                .prepare_cached("SELECT value FROM cache WHERE key = ?1")
                .map_err(backend)?;
            st.query_row([&key[..]], |r| r.get(0))
                .optional()
                .map_err(backend)
        }))
    }

    fn cache_put<'a>(
        &'a self,
        key: &'a [u8; 32],
        kind: CacheKind,
        model: &'a str,
        value: &'a [u8],
        ledger: &'a [LedgerEntry],
    ) -> StoreFuture<'a, ()> {
        let (key, model, value, entries) =
            (*key, model.to_string(), value.to_vec(), ledger.to_vec());
        self.will_hold(&key);
        Box::pin(async move {
            self.write(move |c| {
                put_answer(c, &key, kind, &model, &value, &entries)?;
                Ok(())
            })
            .await
        })
    }

    fn keeps_requests(&self) -> bool {
        true
    }

    fn put_request<'a>(
        &'a self,
        key: &'a [u8; 32],
        record: &'a [u8],
        messages: &'a [KeptMessage],
    ) -> StoreFuture<'a, Vec<i64>> {
        let (key, record, messages) = (*key, record.to_vec(), messages.to_vec());
        Box::pin(async move {
            check_repeats(&messages).map_err(StoreError::Backend)?;
            self.write(move |c| {
                let call: Option<i64> = c
                    .prepare_cached("SELECT request FROM cache WHERE key = ?1")?
                    .query_row([&key[..]], |r| r.get(0))
                    .optional()?
                    .flatten();
                insert_request(c, call, &key, &record, &messages)
            })
            .await
        })
    }

    fn cache_put_kept<'a>(
        &'a self,
        key: &'a [u8; 32],
        kind: CacheKind,
        model: &'a str,
        value: &'a [u8],
        ledger: &'a [LedgerEntry],
        record: &'a [u8],
        messages: &'a [KeptMessage],
    ) -> StoreFuture<'a, Option<Vec<i64>>> {
        let (key, model, value, entries) =
            (*key, model.to_string(), value.to_vec(), ledger.to_vec());
        // A malformed request is not kept; the answer is stored all the same.
        let request = match check_repeats(messages) {
            Ok(()) => Some((record.to_vec(), messages.to_vec())),
            Err(why) => {
                tracing::debug!(error = %why, "a call's request was not kept");
                None
            }
        };
        self.will_hold(&key);
        Box::pin(async move {
            self.write(move |c| {
                let call = put_answer(c, &key, kind, &model, &value, &entries)?;
                let Some((record, messages)) = request else {
                    return Ok(None);
                };
                // In a savepoint of its own: a request that cannot be written is rolled back alone,
                // and the answer and its ledger rows commit with the batch.
                c.prepare_cached("SAVEPOINT request")?.execute([])?;
                match insert_request(c, call, &key, &record, &messages) {
                    Ok(rows) => {
                        c.prepare_cached("RELEASE request")?.execute([])?;
                        Ok(Some(rows))
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "a call's request was not kept");
                        c.prepare_cached("ROLLBACK TO request")?.execute([])?;
                        c.prepare_cached("RELEASE request")?.execute([])?;
                        Ok(None)
                    }
                }
            })
            .await
        })
    }

    fn cache_len(&self) -> StoreFuture<'_, u64> {
        Box::pin(self.read(|c| {
            c.query_row("SELECT COUNT(*) FROM cache", [], |r| r.get::<_, i64>(0))
                .map(|n| n as u64)
                .map_err(backend)
        }))
    }

    fn record_calls<'a>(&'a self, entries: &'a [LedgerEntry]) -> StoreFuture<'a, ()> {
        let entries = entries.to_vec();
        Box::pin(async move {
            if entries.is_empty() {
                return Ok(());
            }
            self.write(move |c| insert_ledger(c, &entries)).await
        })
    }

    fn totals<'a>(&'a self, sweep: &'a str) -> StoreFuture<'a, Vec<TotalsRow>> {
        let sweep = sweep.to_string();
        Box::pin(self.read(move |c| {
            let mut st = c
                .prepare(
                    "SELECT model, phase, framework, arm, source, COUNT(*), SUM(prompt_tokens), \
                     SUM(completion_tokens), SUM(cached_tokens), SUM(cost_usd) FROM ledger \
                     WHERE sweep = ?1 GROUP BY model, phase, framework, arm, source \
                     ORDER BY model, phase, framework, arm, source",
                )
                .map_err(backend)?;
            let rows = st
                .query_map([&sweep], |r| {
                    let n = |i| r.get::<_, i64>(i).map(|x| x as u64);
                    Ok(TotalsRow {
                        model: r.get(0)?,
                        phase: r.get(1)?,
                        framework: r.get(2)?,
                        arm: r.get(3)?,
                        source: r.get(4)?,
                        calls: n(5)?,
                        prompt_tokens: n(6)?,
                        completion_tokens: n(7)?,
                        cached_tokens: n(8)?,
                        cost_usd: r.get(9)?,
                    })
                })
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend);
            rows
        }))
    }

    fn ledger<'a>(&'a self, run: &'a str) -> StoreFuture<'a, Vec<LedgerEntry>> {
        let run = run.to_string();
        Box::pin(self.read(move |c| {
            let mut st = c
                .prepare(
                    "SELECT run, sweep, game, arm, model, phase, framework, purpose, source, \
                     prompt_tokens, completion_tokens, cached_tokens, cost_usd, key, latency_ms, \
                     retries FROM ledger \
                     WHERE run = ?1 ORDER BY id",
                )
                .map_err(backend)?;
            let rows = st
                .query_map([&run], ledger_from)
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)?;
            rows.into_iter()
                .map(|(mut e, source)| {
                    e.source = parse("ledger source", &source)?;
                    Ok(e)
                })
                .collect()
        }))
    }
}

/// A live call's answer under its key with the call's ledger rows, in the writer's transaction;
/// answers the call's ledger row, the id its request is kept under (`kept_requests`), when it has one.
fn put_answer(
    c: &Connection,
    key: &[u8; 32],
    kind: CacheKind,
    model: &str,
    value: &[u8],
    entries: &[LedgerEntry],
) -> rusqlite::Result<Option<i64>> {
    insert_ledger(c, entries)?;
    let request = (!entries.is_empty()).then(|| c.last_insert_rowid());
    let mut st = c.prepare_cached(
        "INSERT OR IGNORE INTO cache (key, kind, model, value, created_at, request) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    st.execute(params![
        &key[..],
        kind.as_str(),
        model,
        value,
        now(),
        request
    ])?;
    Ok(request)
}

/// A repeat names an earlier position: checked before the write, so that the writer never fails a
/// batch's transaction for a malformed request.
fn check_repeats(messages: &[KeptMessage]) -> Result<(), String> {
    for (at, m) in messages.iter().enumerate() {
        if let KeptMessage::Same(earlier) = m {
            if *earlier >= at {
                return Err(format!(
                    "a kept request's message {at} repeats message {earlier}, not an earlier one"
                ));
            }
        }
    }
    Ok(())
}

/// A request's new messages appended to `kept_messages`, and its record appended to `kept_requests`
/// under its call's ledger row `call`, or kept under its cache key when it has none (a batch call
/// queued before its answer, or a sweep without a ledger). Answers its messages' rows.
fn insert_request(
    c: &Connection,
    call: Option<i64>,
    key: &[u8; 32],
    record: &[u8],
    messages: &[KeptMessage],
) -> rusqlite::Result<Vec<i64>> {
    let mut rows = Vec::with_capacity(messages.len());
    let mut text = c.prepare_cached("INSERT INTO kept_messages (hash, text) VALUES (?1, ?2)")?;
    for m in messages {
        let row = match m {
            KeptMessage::Row(row) => *row,
            KeptMessage::New(hash, body) => {
                text.execute(params![&hash[..], body])?;
                c.last_insert_rowid()
            }
            KeptMessage::Same(earlier) => rows[*earlier],
        };
        rows.push(row);
    }
    let names: Vec<u8> = rows.iter().flat_map(|r| r.to_le_bytes()).collect();
    match call {
        Some(id) => c
            .prepare_cached(
                "INSERT OR IGNORE INTO kept_requests (id, value, messages) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![id, record, names])?,
        None => c
            .prepare_cached(
                "INSERT OR IGNORE INTO requests (key, value, messages) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![&key[..], record, names])?,
    };
    Ok(rows)
}
