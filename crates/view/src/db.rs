//! Reading a sweep's store (`sleuth.db`, schema in `docs/sweeps.md`) for the pages: read-only
//! connections, so a viewer never blocks a sweep that is running (WAL mode: readers and the writer do
//! not wait for each other) and cannot change what it shows.
//!
//! Every list is one query with `LIMIT`/`OFFSET` over an indexed column (`games_by_sweep`,
//! `ledger_by_game`, the cache's and the kept requests' primary keys), so a page costs the same on a
//! sweep of ten games and of ten thousand.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use serde::Serialize;

use super::ViewError;
use sleuth_llm::requests::{self, KeptRequest};

/// Read connections kept open between requests.
const POOL: usize = 4;

/// The store, read-only, with a small pool of connections.
pub struct Db {
    path: PathBuf,
    pool: Mutex<Vec<Connection>>,
}

fn open_ro(path: &Path) -> rusqlite::Result<Connection> {
    let c = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    c.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(c)
}

impl Db {
    /// Opens the store and checks that it reads as one (its `sweeps` table answers).
    pub fn open(path: &Path) -> Result<Db, ViewError> {
        let err = |e: rusqlite::Error| ViewError::Store {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let c = open_ro(path).map_err(err)?;
        c.query_row("SELECT COUNT(*) FROM sweeps", [], |r| r.get::<_, i64>(0))
            .map_err(err)?;
        Ok(Db {
            path: path.to_path_buf(),
            pool: Mutex::new(vec![c]),
        })
    }

    /// Runs `f` on a pooled connection on a blocking thread.
    pub async fn read<T: Send + 'static>(
        self: &std::sync::Arc<Self>,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, ReadError> {
        let db = self.clone();
        tokio::task::spawn_blocking(move || {
            let pooled = db.pool.lock().ok().and_then(|mut p| p.pop());
            let conn = match pooled {
                Some(c) => c,
                None => open_ro(&db.path)?,
            };
            let out = f(&conn).map_err(ReadError::from);
            if let Ok(mut p) = db.pool.lock() {
                if p.len() < POOL {
                    p.push(conn);
                }
            }
            out
        })
        .await
        .map_err(|e| ReadError::Task(e.to_string()))?
    }
}

/// Why a read of the store failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("reading the store: {0}")]
    Store(#[from] rusqlite::Error),
    /// The blocking task that read it panicked or was cancelled.
    #[error("store reader: {0}")]
    Task(String),
}

/// A sweep as the pages list it.
#[derive(Debug, Clone, Serialize)]
pub struct SweepInfo {
    pub id: String,
    pub name: String,
    pub file: String,
    pub created_at: String,
    pub status: String,
    pub note: Option<String>,
    pub max_usd: Option<f64>,
}

/// Every sweep, oldest first.
pub fn sweeps(c: &Connection) -> rusqlite::Result<Vec<SweepInfo>> {
    let mut st = c.prepare(
        "SELECT id, name, file, created_at, status, note, max_usd FROM sweeps ORDER BY created_at, id",
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
}

/// One sweep.
pub fn sweep(c: &Connection, id: &str) -> rusqlite::Result<Option<SweepInfo>> {
    Ok(sweeps(c)?.into_iter().find(|s| s.id == id))
}

/// Games by sweep and state.
pub fn state_counts(c: &Connection) -> rusqlite::Result<BTreeMap<String, BTreeMap<String, u64>>> {
    let mut st = c.prepare("SELECT sweep, state, COUNT(*) FROM games GROUP BY sweep, state")?;
    let mut out: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let rows = st.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, i64>(2)?,
        ))
    })?;
    for row in rows {
        let (sweep, state, n) = row?;
        out.entry(sweep).or_default().insert(state, n.max(0) as u64);
    }
    Ok(out)
}

/// A game's row as the lists show it.
#[derive(Debug, Clone, Serialize)]
pub struct GameInfo {
    pub id: String,
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
    pub updated_at: String,
}

const GAME_COLUMNS: &str =
    "id, seq, sweep, arm, arm_label, script, repeat, seed, state, attempts, reason, stage, updated_at";

fn game_from(r: &rusqlite::Row<'_>) -> rusqlite::Result<GameInfo> {
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

/// A page of a sweep's games in plan order, of one state or all.
pub fn games(
    c: &Connection,
    sweep: &str,
    state: Option<&str>,
    limit: u32,
    offset: u64,
) -> rusqlite::Result<Vec<GameInfo>> {
    let sql = format!(
        "SELECT {GAME_COLUMNS} FROM games WHERE sweep = ?1 AND (?2 IS NULL OR state = ?2) \
         ORDER BY seq LIMIT ?3 OFFSET ?4"
    );
    let mut st = c.prepare(&sql)?;
    let rows = st.query_map(
        params![
            sweep,
            state,
            limit as i64,
            offset.min(i64::MAX as u64) as i64
        ],
        game_from,
    )?;
    rows.collect()
}

/// One game.
pub fn game(c: &Connection, id: &str) -> rusqlite::Result<Option<GameInfo>> {
    c.query_row(
        &format!("SELECT {GAME_COLUMNS} FROM games WHERE id = ?1"),
        [id],
        game_from,
    )
    .optional()
}

/// The games of `game`'s sweep that play the same script and repeat (so the same seed) in the other
/// arms, in plan order: what the game page offers to compare it with, side by side. One lookup by id
/// and one query over `games_by_sweep`.
pub fn counterparts(c: &Connection, game: &str) -> rusqlite::Result<Vec<GameInfo>> {
    let sql = format!(
        "SELECT {GAME_COLUMNS} FROM games WHERE sweep = (SELECT sweep FROM games WHERE id = ?1) \
         AND script = (SELECT script FROM games WHERE id = ?1) \
         AND repeat = (SELECT repeat FROM games WHERE id = ?1) AND id <> ?1 ORDER BY seq"
    );
    let mut st = c.prepare(&sql)?;
    let rows = st.query_map([game], game_from)?;
    rows.collect()
}

/// A game's `result.json` as the store holds it.
pub fn result(c: &Connection, game: &str) -> rusqlite::Result<Option<String>> {
    c.query_row("SELECT result FROM results WHERE game = ?1", [game], |r| {
        r.get(0)
    })
    .optional()
}

/// One cell of the arms × scripts grid: how many of its games are in each state.
#[derive(Debug, Clone, Serialize)]
pub struct GridCell {
    pub arm: String,
    pub arm_label: String,
    pub script: String,
    pub states: BTreeMap<String, u64>,
    pub total: u64,
}

/// The grid of a sweep: one cell per arm and script.
pub fn grid(c: &Connection, sweep: &str) -> rusqlite::Result<Vec<GridCell>> {
    let mut st = c.prepare(
        "SELECT arm, arm_label, script, state, COUNT(*) FROM games WHERE sweep = ?1 \
         GROUP BY arm, script, state ORDER BY MIN(seq)",
    )?;
    let rows = st.query_map([sweep], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, i64>(4)?,
        ))
    })?;
    let mut cells: Vec<GridCell> = Vec::new();
    for row in rows {
        let (arm, arm_label, script, state, n) = row?;
        let n = n.max(0) as u64;
        match cells
            .iter_mut()
            .find(|c| c.arm == arm && c.script == script)
        {
            Some(cell) => {
                *cell.states.entry(state).or_default() += n;
                cell.total += n;
            }
            None => cells.push(GridCell {
                arm,
                arm_label,
                script,
                states: [(state, n)].into(),
                total: n,
            }),
        }
    }
    Ok(cells)
}

/// One model call (or failed attempt) of the ledger.
#[derive(Debug, Clone, Serialize)]
pub struct Call {
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
    pub key: Option<String>,
}

const CALL_COLUMNS: &str = "id, model, phase, framework, purpose, source, prompt_tokens, \
                            completion_tokens, cached_tokens, cost_usd, key";

fn call_from(r: &rusqlite::Row<'_>) -> rusqlite::Result<Call> {
    Ok(Call {
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
    })
}

/// A page of a game's calls in the order they were recorded.
pub fn calls(c: &Connection, game: &str, limit: u32, offset: u64) -> rusqlite::Result<Vec<Call>> {
    let mut st = c.prepare(&format!(
        "SELECT {CALL_COLUMNS} FROM ledger WHERE game = ?1 ORDER BY id LIMIT ?2 OFFSET ?3"
    ))?;
    let rows = st.query_map(
        params![game, limit as i64, offset.min(i64::MAX as u64) as i64],
        call_from,
    )?;
    rows.collect()
}

/// A call with what the cache kept of its answer.
#[derive(Debug, Clone, Serialize)]
pub struct CallDetail {
    pub call: Call,
    /// The reply's text, when the cache holds it (a chat call made with the cache on).
    pub reply: Option<String>,
    /// The usage the provider reported with the reply.
    pub reply_usage: Option<serde_json::Value>,
    /// When the reply was stored (its live call's time).
    pub cached_at: Option<String>,
    pub kind: Option<String>,
    /// How long the live call that produced the reply took, in milliseconds.
    pub latency_ms: Option<u64>,
    /// What the call asked, when the store kept it (`llm::gateway::requests`).
    pub request: Option<KeptRequest>,
}

/// One call of one game, with its cached reply.
pub fn call(c: &Connection, game: &str, id: i64) -> rusqlite::Result<Option<CallDetail>> {
    let call = c
        .query_row(
            &format!("SELECT {CALL_COLUMNS} FROM ledger WHERE id = ?1 AND game = ?2"),
            params![id, game],
            call_from,
        )
        .optional()?;
    let Some(call) = call else {
        return Ok(None);
    };
    let mut detail = CallDetail {
        call,
        reply: None,
        reply_usage: None,
        cached_at: None,
        kind: None,
        latency_ms: None,
        request: None,
    };
    let key = detail.call.key.as_deref().and_then(|k| hex::decode(k).ok());
    if let Some(key) = key {
        let row = c
            .query_row(
                "SELECT kind, value, created_at FROM cache WHERE key = ?1",
                [&key],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, Vec<u8>>(1)?,
                        r.get::<_, String>(2)?,
                    ))
                },
            )
            .optional()?;
        if let Some((kind, value, created_at)) = row {
            if kind == "chat" {
                let v: Option<serde_json::Value> = serde_json::from_slice(&value).ok();
                detail.reply = v
                    .as_ref()
                    .and_then(|v| v.get("content"))
                    .and_then(|c| c.as_str())
                    .map(str::to_string);
                detail.reply_usage = v.as_ref().and_then(|v| v.get("usage").cloned());
                detail.latency_ms = v.and_then(|v| v.get("latency_ms")?.as_u64());
            }
            detail.kind = Some(kind);
            detail.cached_at = Some(created_at);
        }
        detail.request = request(c, &key)?;
    }
    Ok(Some(detail))
}

/// The request kept under a cache key; `None` when none was kept (an embedding, a store written
/// before requests were kept, whose file has no `requests` table, or the cluster's store).
fn request(c: &Connection, key: &[u8]) -> rusqlite::Result<Option<KeptRequest>> {
    let has_tables: i64 = c.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('requests', 'messages')",
        [],
        |r| r.get(0),
    )?;
    if has_tables < 2 {
        return Ok(None);
    }
    let record: Option<Vec<u8>> = c
        .query_row("SELECT value FROM requests WHERE key = ?1", [key], |r| {
            r.get(0)
        })
        .optional()?;
    let Some(record) = record else {
        return Ok(None);
    };
    let mut text = c.prepare_cached("SELECT text FROM messages WHERE hash = ?1")?;
    Ok(requests::read(&record, |h| {
        text.query_row([&h[..]], |r| r.get::<_, Vec<u8>>(0))
            .optional()
            .ok()
            .flatten()
    }))
}
