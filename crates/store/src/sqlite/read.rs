//! Reading a run's store from outside the sweep that writes it: the viewer's pages and live figures,
//! the report's note of what was paid. Every query of the store's schema lives in this crate (issue
//! 31), so a change of a table is a change here and nowhere above.
//!
//! A [`StoreReader`] is one **read-only** connection: it opens the file with SQLite's read-only flag,
//! never creates it, never migrates it and cannot write to it, so a viewer or a report over a sweep
//! that is running neither blocks it (WAL mode: readers and the writer do not wait for each other) nor
//! changes what it holds. Queries are blocking; an async caller runs them on a blocking thread, and
//! pools readers if it reads often (the viewer keeps a few).
//!
//! What comes back are rows, typed: the store knows tables and files, never pages or notes. States,
//! statuses and sources are the strings stored (a reader of a file written by a newer sleuth shows a
//! state it does not know rather than failing), unlike the [`crate::Store`] trait's records.
//!
//! Every list is one query with `LIMIT`/`OFFSET` over an indexed column (`games_by_sweep`,
//! `ledger_by_game`, the cache's and the kept requests' primary keys), so a page costs the same on a
//! sweep of ten games and of ten thousand.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Row};
use serde::Serialize;

use crate::error::StoreError;

mod kept;

/// How long a read waits for a lock SQLite holds briefly (a checkpoint, a recovery) before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// One read-only connection to a run's store (see the module documentation).
pub struct StoreReader {
    path: PathBuf,
    /// Shared with `bulk.rs`, the export's whole-table reads over the same connection.
    pub(super) conn: Connection,
    /// [`CALL_COLUMNS`], or its stand-in for a ledger made before the timing columns.
    call_columns: &'static str,
}

/// A sweep as a reader lists it: its record without the sweep file's text, its status as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepInfo {
    pub id: String,
    pub name: String,
    pub file: String,
    /// RFC 3339.
    pub created_at: String,
    pub status: String,
    /// Why it stopped, what was spent.
    pub note: Option<String>,
    pub max_usd: Option<f64>,
}

/// A game's row without its spec: what a list of games shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GameInfo {
    pub id: String,
    /// Its place in the sweep's plan.
    pub seq: i64,
    pub sweep: String,
    pub arm: String,
    pub arm_label: String,
    pub script: String,
    pub repeat: i64,
    pub seed: u64,
    pub state: String,
    pub attempts: i64,
    pub reason: Option<String>,
    pub stage: Option<String>,
    /// RFC 3339, the last state change.
    pub updated_at: String,
}

/// How many of a sweep's games of one arm and script are in one state (a grid of arms × scripts is
/// made of these).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArmScriptState {
    pub arm: String,
    pub arm_label: String,
    pub script: String,
    pub state: String,
    pub games: u64,
}

/// One model call (or failed attempt) of the ledger, with its row id (the order it was recorded in).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LedgerCall {
    pub id: i64,
    pub model: String,
    pub phase: String,
    pub framework: String,
    pub purpose: String,
    pub source: String,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cached_tokens: i64,
    pub cost_usd: f64,
    /// The cache key (hex) of the call's reply.
    pub key: Option<String>,
    /// The answered attempt's time (ms), for live calls; see [`crate::LedgerEntry::latency_ms`].
    pub latency_ms: Option<i64>,
    /// Failed attempts retried before the answer.
    pub retries: i64,
}

/// A cache entry as stored: its kind (`chat`, `embedding`), the value the gateway wrote and when.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheEntry {
    pub kind: String,
    pub value: Vec<u8>,
    /// RFC 3339, when the live call that produced it was stored.
    pub created_at: String,
}

/// The ledger's rows summed over one sweep, arm, phase and source (the viewer's live figures).
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerSums {
    pub sweep: String,
    pub arm: String,
    pub phase: String,
    pub source: String,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
    pub cost_usd: f64,
}

/// The whole ledger summed over one source and model (what a run directory paid, for the report).
#[derive(Debug, Clone, PartialEq)]
pub struct SpendRow {
    pub source: String,
    pub model: String,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
    pub cost_usd: f64,
}

pub(super) const GAME_COLUMNS: &str =
    "id, seq, sweep, arm, arm_label, script, repeat, seed, state, attempts, reason, stage, updated_at";

pub(super) fn game_from(r: &Row<'_>) -> rusqlite::Result<GameInfo> {
    Ok(GameInfo {
        id: r.get(0)?,
        seq: r.get(1)?,
        sweep: r.get(2)?,
        arm: r.get(3)?,
        arm_label: r.get(4)?,
        script: r.get(5)?,
        repeat: r.get(6)?,
        // Stored as the u64's bits in a signed integer (docs/sweeps.md).
        seed: r.get::<_, i64>(7)? as u64,
        state: r.get(8)?,
        attempts: r.get(9)?,
        reason: r.get(10)?,
        stage: r.get(11)?,
        updated_at: r.get(12)?,
    })
}

/// The columns [`call_from`] reads, of a ledger that has every column.
const CALL_COLUMNS: &str = "id, model, phase, framework, purpose, source, prompt_tokens, \
                            completion_tokens, cached_tokens, cost_usd, key, latency_ms, retries";
/// The same of a file made before `latency_ms` and `retries` (which only a writer adds): unknown
/// latencies and no retries counted, read as such.
const CALL_COLUMNS_UNTIMED: &str = "id, model, phase, framework, purpose, source, prompt_tokens, \
                            completion_tokens, cached_tokens, cost_usd, key, NULL, 0";

pub(super) fn call_from(r: &Row<'_>) -> rusqlite::Result<LedgerCall> {
    Ok(LedgerCall {
        id: r.get(0)?,
        model: r.get(1)?,
        phase: r.get(2)?,
        framework: r.get(3)?,
        purpose: r.get(4)?,
        source: r.get(5)?,
        prompt_tokens: r.get(6)?,
        completion_tokens: r.get(7)?,
        cached_tokens: r.get(8)?,
        cost_usd: r.get(9)?,
        key: r.get(10)?,
        latency_ms: r.get(11)?,
        retries: r.get(12)?,
    })
}

/// A page's offset as SQLite takes it (past `i64::MAX` is past every row anyway).
fn offset_of(offset: u64) -> i64 {
    offset.min(i64::MAX as u64) as i64
}

impl StoreReader {
    /// Opens the store at `path` read-only. Fails when there is no file (a reader never creates one)
    /// or SQLite cannot open it; whether it holds a store is [`StoreReader::check`]'s question.
    pub fn open(path: &Path) -> Result<StoreReader, StoreError> {
        let open_err = |e: rusqlite::Error| StoreError::Open {
            at: path.display().to_string(),
            message: e.to_string(),
        };
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(open_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        // A file without a ledger yet gets one with every column when a writer makes it.
        let timed = !super::table_exists(&conn, "ledger").map_err(open_err)?
            || super::has_column(&conn, "ledger", "latency_ms").map_err(open_err)?;
        Ok(StoreReader {
            path: path.to_path_buf(),
            conn,
            call_columns: if timed {
                CALL_COLUMNS
            } else {
                CALL_COLUMNS_UNTIMED
            },
        })
    }

    /// The select list of a call, as this file's ledger can answer it (read by [`call_from`]).
    pub(super) fn call_columns(&self) -> &'static str {
        self.call_columns
    }

    /// The file read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A failed query, with SQLite's own words and the file it was on.
    pub(super) fn err(&self, e: rusqlite::Error) -> StoreError {
        StoreError::Read {
            at: self.path.display().to_string(),
            message: e.to_string(),
        }
    }

    /// Checks that the file reads as a store (its `sweeps` table answers), so a reader started on
    /// something else says so at once rather than on its first page.
    /// Whether the file holds a sweep at all: a store can hold only a game's seats or a run's
    /// annotation campaigns (those tables are made on their own), and such a directory is a folder
    /// of games to the viewer, not a sweep.
    pub fn holds_sweeps(&self) -> Result<bool, StoreError> {
        if !super::table_exists(&self.conn, "sweeps").map_err(|e| self.err(e))? {
            return Ok(false);
        }
        self.conn
            .query_row("SELECT EXISTS (SELECT 1 FROM sweeps)", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    pub fn check(&self) -> Result<(), StoreError> {
        self.conn
            .query_row("SELECT COUNT(*) FROM sweeps", [], |r| r.get::<_, i64>(0))
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Every sweep, oldest first.
    pub fn sweeps(&self) -> Result<Vec<SweepInfo>, StoreError> {
        let run = || -> rusqlite::Result<Vec<SweepInfo>> {
            let mut st = self.conn.prepare(
                "SELECT id, name, file, created_at, status, note, max_usd FROM sweeps \
                 ORDER BY created_at, id",
            )?;
            let rows = st.query_map([], |r| {
                Ok(SweepInfo {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    file: r.get(2)?,
                    created_at: r.get(3)?,
                    status: r.get(4)?,
                    note: r.get(5)?,
                    max_usd: r.get(6)?,
                })
            })?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }

    /// The sweep file's text of the sweep recorded last, if any sweep is (the report prices batch
    /// calls at the live price from its `[models]`).
    pub fn latest_sweep_text(&self) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row(
                "SELECT text FROM sweeps ORDER BY created_at DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Games by sweep, then state: sweep → state → games.
    pub fn state_counts(&self) -> Result<BTreeMap<String, BTreeMap<String, u64>>, StoreError> {
        let run = || -> rusqlite::Result<BTreeMap<String, BTreeMap<String, u64>>> {
            let mut st = self
                .conn
                .prepare("SELECT sweep, state, COUNT(*) FROM games GROUP BY sweep, state")?;
            let rows = st.query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })?;
            let mut out: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
            for row in rows {
                let (sweep, state, n) = row?;
                out.entry(sweep).or_default().insert(state, n.max(0) as u64);
            }
            Ok(out)
        };
        run().map_err(|e| self.err(e))
    }

    /// A page of a sweep's games in plan order, of one state or all (over `games_by_sweep`).
    pub fn games(
        &self,
        sweep: &str,
        state: Option<&str>,
        limit: u32,
        offset: u64,
    ) -> Result<Vec<GameInfo>, StoreError> {
        let run = || -> rusqlite::Result<Vec<GameInfo>> {
            let mut st = self.conn.prepare(&format!(
                "SELECT {GAME_COLUMNS} FROM games WHERE sweep = ?1 AND (?2 IS NULL OR state = ?2) \
                 ORDER BY seq LIMIT ?3 OFFSET ?4"
            ))?;
            let args = params![sweep, state, limit as i64, offset_of(offset)];
            let rows = st.query_map(args, game_from)?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }

    /// One game.
    pub fn game(&self, id: &str) -> Result<Option<GameInfo>, StoreError> {
        self.conn
            .query_row(
                &format!("SELECT {GAME_COLUMNS} FROM games WHERE id = ?1"),
                [id],
                game_from,
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// The games of `game`'s sweep that play the same script and repeat (so the same seed) in the
    /// other arms, in plan order: one lookup by id and one query over `games_by_sweep`.
    pub fn counterparts(&self, game: &str) -> Result<Vec<GameInfo>, StoreError> {
        let run = || -> rusqlite::Result<Vec<GameInfo>> {
            let mut st = self.conn.prepare(&format!(
                "SELECT {GAME_COLUMNS} FROM games WHERE sweep = (SELECT sweep FROM games WHERE id = ?1) \
                 AND script = (SELECT script FROM games WHERE id = ?1) \
                 AND repeat = (SELECT repeat FROM games WHERE id = ?1) AND id <> ?1 ORDER BY seq"
            ))?;
            let rows = st.query_map([game], game_from)?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }

    /// A game's `result.json` as the store holds it.
    pub fn result(&self, game: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row("SELECT result FROM results WHERE game = ?1", [game], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.err(e))
    }

    /// A sweep's games counted by arm, script and state, in the order each arm and script first
    /// appears in the plan.
    pub fn arm_script_states(&self, sweep: &str) -> Result<Vec<ArmScriptState>, StoreError> {
        let run = || -> rusqlite::Result<Vec<ArmScriptState>> {
            let mut st = self.conn.prepare(
                "SELECT arm, arm_label, script, state, COUNT(*) FROM games WHERE sweep = ?1 \
                 GROUP BY arm, script, state ORDER BY MIN(seq)",
            )?;
            let rows = st.query_map([sweep], |r| {
                Ok(ArmScriptState {
                    arm: r.get(0)?,
                    arm_label: r.get(1)?,
                    script: r.get(2)?,
                    state: r.get(3)?,
                    games: r.get::<_, i64>(4)?.max(0) as u64,
                })
            })?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }

    /// A page of a game's calls in the order they were recorded (over `ledger_by_game`).
    pub fn calls(
        &self,
        game: &str,
        limit: u32,
        offset: u64,
    ) -> Result<Vec<LedgerCall>, StoreError> {
        let run = || -> rusqlite::Result<Vec<LedgerCall>> {
            let mut st = self.conn.prepare(&format!(
                "SELECT {} FROM ledger WHERE game = ?1 ORDER BY id LIMIT ?2 OFFSET ?3",
                self.call_columns
            ))?;
            let rows = st.query_map(params![game, limit as i64, offset_of(offset)], call_from)?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }

    /// One call of one game by its ledger id (`None` when the id is not one of that game's calls).
    pub fn call(&self, game: &str, id: i64) -> Result<Option<LedgerCall>, StoreError> {
        self.conn
            .query_row(
                &format!(
                    "SELECT {} FROM ledger WHERE id = ?1 AND game = ?2",
                    self.call_columns
                ),
                params![id, game],
                call_from,
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// The cache entry under `key` (the raw sha256, not its hex).
    pub fn cache_entry(&self, key: &[u8]) -> Result<Option<CacheEntry>, StoreError> {
        self.conn
            .query_row(
                "SELECT kind, value, created_at FROM cache WHERE key = ?1",
                [key],
                |r| {
                    Ok(CacheEntry {
                        kind: r.get(0)?,
                        value: r.get(1)?,
                        created_at: r.get(2)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// The ledger's last row id (`None` while it is empty). The ledger is append-only with an
    /// increasing id, so a reader that remembers how far it read reads only what came after.
    pub fn ledger_last_id(&self) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row("SELECT MAX(id) FROM ledger", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    /// The ledger rows with an id in `after + 1 ..= upto` (a range of the primary key), summed by
    /// sweep, arm, phase and source.
    pub fn ledger_sums(&self, after: i64, upto: i64) -> Result<Vec<LedgerSums>, StoreError> {
        let run = || -> rusqlite::Result<Vec<LedgerSums>> {
            let mut st = self.conn.prepare(
                "SELECT sweep, arm, phase, source, COUNT(*), SUM(prompt_tokens), \
                 SUM(completion_tokens), SUM(cached_tokens), SUM(cost_usd) FROM ledger \
                 WHERE id > ?1 AND id <= ?2 GROUP BY sweep, arm, phase, source",
            )?;
            let rows = st.query_map(params![after, upto], |r| {
                let n = |i: usize| {
                    r.get::<_, Option<i64>>(i)
                        .map(|v| v.unwrap_or(0).max(0) as u64)
                };
                Ok(LedgerSums {
                    sweep: r.get(0)?,
                    arm: r.get(1)?,
                    phase: r.get(2)?,
                    source: r.get(3)?,
                    calls: n(4)?,
                    prompt_tokens: n(5)?,
                    completion_tokens: n(6)?,
                    cached_tokens: n(7)?,
                    cost_usd: r.get::<_, Option<f64>>(8)?.unwrap_or(0.0),
                })
            })?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }

    /// The whole ledger (every sweep of the file) summed by source and model.
    pub fn spend(&self) -> Result<Vec<SpendRow>, StoreError> {
        let run = || -> rusqlite::Result<Vec<SpendRow>> {
            let mut st = self.conn.prepare(
                "SELECT source, model, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens),
                        SUM(cached_tokens), SUM(cost_usd) FROM ledger GROUP BY source, model",
            )?;
            let rows = st.query_map([], |r| {
                Ok(SpendRow {
                    source: r.get(0)?,
                    model: r.get(1)?,
                    calls: r.get::<_, i64>(2)? as u64,
                    prompt_tokens: r.get::<_, i64>(3)? as u64,
                    completion_tokens: r.get::<_, i64>(4)? as u64,
                    cached_tokens: r.get::<_, i64>(5)? as u64,
                    cost_usd: r.get(6)?,
                })
            })?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        CacheKind, CallSource, GameRow, GameState, KeptMessage, LedgerEntry, SqliteStore, Store,
        SweepRecord, SweepStatus,
    };

    fn sweep(id: &str, created_at: &str, text: &str) -> SweepRecord {
        SweepRecord {
            id: id.into(),
            name: format!("sweep {id}"),
            file: "sweeps/x.toml".into(),
            text: text.into(),
            created_at: created_at.into(),
            status: SweepStatus::Running,
            note: None,
            max_usd: Some(2.0),
            max_tokens: None,
        }
    }

    fn game(id: &str, arm: &str, repeat: u32) -> GameRow {
        GameRow {
            id: id.into(),
            sweep: "s1".into(),
            arm: arm.into(),
            arm_label: format!("label {arm}"),
            script: "Glasshouse".into(),
            repeat,
            seed: u64::MAX - u64::from(repeat),
            spec: "{}".into(),
            state: GameState::Pending,
            attempts: 0,
            crashes: 0,
            reason: None,
            stage: None,
            updated_at: String::new(),
        }
    }

    fn call(
        game: &str,
        source: CallSource,
        tokens: u64,
        usd: f64,
        key: Option<&str>,
    ) -> LedgerEntry {
        LedgerEntry {
            run: "r1".into(),
            sweep: "s1".into(),
            game: game.into(),
            arm: "a".into(),
            model: "m".into(),
            phase: "gameplay".into(),
            framework: "player".into(),
            purpose: "talk".into(),
            source,
            prompt_tokens: tokens,
            completion_tokens: 2,
            cached_tokens: 1,
            cost_usd: usd,
            key: key.map(str::to_string),
            latency_ms: (source == CallSource::Live).then_some(40),
            retries: 0,
            id: None,
        }
    }

    #[test]
    fn a_reader_never_creates_a_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sleuth.db");
        let err = StoreReader::open(&path).err().expect("no file, no reader");
        assert!(matches!(err, StoreError::Open { .. }), "{err:?}");
        assert!(!path.exists(), "opening read-only created the file");
    }

    #[test]
    fn a_file_that_is_not_a_store_fails_its_check_in_sqlites_words() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sleuth.db");
        std::fs::write(&path, b"").expect("an empty file");
        let reader = StoreReader::open(&path).expect("an empty file opens");
        match reader.check() {
            Err(StoreError::Read { message, .. }) => {
                assert!(message.contains("no such table: sweeps"), "{message}")
            }
            other => panic!("expected a read error, got {other:?}"),
        }
        let kept = reader
            .kept_request(b"k", |_, _| ())
            .expect("no requests table");
        assert!(
            kept.is_none(),
            "a file without the requests table keeps none"
        );
    }

    #[tokio::test]
    async fn a_reader_sees_what_the_store_wrote() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sleuth.db");
        let store = SqliteStore::open(&path).expect("store");
        store
            .open_sweep(&sweep("s0", "2026-01-01T00:00:00.000Z", "old"))
            .await
            .expect("sweep");
        store
            .open_sweep(&sweep("s1", "2026-01-02T00:00:00.000Z", "new"))
            .await
            .expect("sweep");
        let games = [game("g1", "a", 0), game("g2", "b", 0), game("g3", "a", 1)];
        store.add_games(&games).await.expect("games");
        store
            .put_result("g1", "{\"ok\":true}")
            .await
            .expect("result");
        let key = [7u8; 32];
        let hex_key = "07".repeat(32);
        let first = call("g1", CallSource::Live, 10, 0.5, Some(&hex_key));
        store
            .cache_put(
                &key,
                CacheKind::Chat,
                "m",
                b"{\"content\":\"hi\"}",
                &[first],
            )
            .await
            .expect("cache");
        let rows = store
            .put_request(
                &key,
                b"record",
                &[KeptMessage::New([9u8; 32], b"text".to_vec())],
            )
            .await
            .expect("request");
        assert_eq!(rows.len(), 1, "a row for the message");
        // A second call names the message kept before by its row, and repeats a new one. Its answer
        // has no ledger row (as in a gateway without a ledger), so it is kept under its key.
        let key2 = [8u8; 32];
        store
            .cache_put(&key2, CacheKind::Chat, "m", b"{}", &[])
            .await
            .expect("cache");
        let again = [
            KeptMessage::Row(rows[0]),
            KeptMessage::New([5u8; 32], b"new".to_vec()),
            KeptMessage::Same(1),
        ];
        let rows2 = store
            .put_request(&key2, b"record2", &again)
            .await
            .expect("request");
        assert_eq!((rows2[0], rows2[1]), (rows[0], rows2[2]));
        assert!(store
            .put_request(&key2, b"bad", &[KeptMessage::Same(0)])
            .await
            .is_err());
        // A batch call kept when it is queued has no cache row yet: kept under its key.
        let queued = [3u8; 32];
        store
            .put_request(&queued, b"queued", &[KeptMessage::Row(rows[0])])
            .await
            .expect("request");
        let more = [
            call("g1", CallSource::Cache, 0, 0.0, None),
            call("g2", CallSource::Batch, 4, 0.25, None),
        ];
        store.record_calls(&more).await.expect("ledger");

        let r = StoreReader::open(&path).expect("reader");
        r.check().expect("a store");
        let ids: Vec<String> = r
            .sweeps()
            .expect("sweeps")
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(ids, ["s0", "s1"], "oldest first");
        assert_eq!(r.latest_sweep_text().expect("text").as_deref(), Some("new"));
        let counts = r.state_counts().expect("counts");
        assert_eq!(counts["s1"]["done"], 1);
        assert_eq!(counts["s1"]["pending"], 2);

        let page = r.games("s1", None, 2, 1).expect("games");
        assert_eq!(
            page.iter().map(|g| g.id.as_str()).collect::<Vec<_>>(),
            ["g2", "g3"]
        );
        assert_eq!(page[1].seed, u64::MAX - 1, "the seed's bits read back");
        assert_eq!(r.games("s1", Some("done"), 10, 0).expect("done").len(), 1);
        assert_eq!(r.games("s1", None, 10, u64::MAX).expect("past").len(), 0);
        assert_eq!(r.game("g2").expect("game").map(|g| g.arm), Some("b".into()));
        assert!(r.game("nope").expect("no game").is_none());
        let others = r.counterparts("g1").expect("counterparts");
        assert_eq!(
            others.iter().map(|g| g.id.as_str()).collect::<Vec<_>>(),
            ["g2"]
        );
        assert_eq!(
            r.result("g1").expect("result").as_deref(),
            Some("{\"ok\":true}")
        );
        let cells = r.arm_script_states("s1").expect("grid");
        assert_eq!(
            cells.len(),
            3,
            "arm a done, arm b pending, arm a pending: {cells:?}"
        );
        assert_eq!(
            (cells[0].arm.as_str(), cells[0].state.as_str()),
            ("a", "done")
        );

        let calls = r.calls("g1", 10, 0).expect("calls");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].key.as_deref(), Some(hex_key.as_str()));
        let one = r.call("g1", calls[0].id).expect("call").expect("there");
        assert_eq!(one, calls[0]);
        assert!(
            r.call("g2", calls[0].id).expect("call").is_none(),
            "another game's id"
        );
        let entry = r.cache_entry(&key).expect("cache").expect("there");
        assert_eq!(
            (entry.kind.as_str(), entry.value.as_slice()),
            ("chat", &b"{\"content\":\"hi\"}"[..])
        );
        let kept = r
            .kept_request(&key, |record, text| {
                (record.to_vec(), text(&[9u8; 32]), text(&[1u8; 32]))
            })
            .expect("request");
        assert_eq!(
            kept,
            Some((b"record".to_vec(), Some(b"text".to_vec()), None))
        );
        let kept = r
            .kept_request(&key2, |record, text| {
                (record.to_vec(), text(&[9u8; 32]), text(&[5u8; 32]))
            })
            .expect("request");
        assert_eq!(
            kept,
            Some((
                b"record2".to_vec(),
                Some(b"text".to_vec()),
                Some(b"new".to_vec())
            ))
        );
        let kept = r
            .kept_request(&queued, |record, text| (record.to_vec(), text(&[9u8; 32])))
            .expect("request");
        assert_eq!(kept, Some((b"queued".to_vec(), Some(b"text".to_vec()))));
        assert!(r
            .kept_request(&[0u8; 32], |_, _| ())
            .expect("none")
            .is_none());

        let last = r.ledger_last_id().expect("last id").expect("rows");
        let sums = r.ledger_sums(0, last).expect("sums");
        let live = sums.iter().find(|s| s.source == "live").expect("live");
        assert_eq!(
            (live.calls, live.prompt_tokens, live.cost_usd),
            (1, 10, 0.5)
        );
        assert!(r.ledger_sums(last, last).expect("nothing new").is_empty());
        let spend = r.spend().expect("spend");
        let batch = spend.iter().find(|s| s.source == "batch").expect("batch");
        assert_eq!(
            (batch.calls, batch.prompt_tokens, batch.cached_tokens),
            (1, 4, 1)
        );
    }
}
