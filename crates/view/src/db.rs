//! Reading a sweep's store (`sleuth.db`, schema in `docs/sweeps.md`) for the pages, through the
//! store's read-only reader (`sleuth_store::read`, where every query of the schema lives): read-only
//! connections, so a viewer never blocks a sweep that is running (WAL mode: readers and the writer do
//! not wait for each other) and cannot change what it shows.
//!
//! Here: a small pool of readers on blocking threads, the errors the pages show, and what the pages
//! make of the rows (the grid of arms and scripts, a call with its cached reply and kept request).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

use super::ViewError;
use sleuth_llm::requests::{self, KeptRequest};
use sleuth_store::{StoreError, StoreReader};

pub use sleuth_store::read::{GameInfo, LedgerCall as Call, SweepInfo};

/// Read connections kept open between requests.
const POOL: usize = 4;

/// The store, read-only, with a small pool of connections.
pub struct Db {
    path: PathBuf,
    pool: Mutex<Vec<StoreReader>>,
}

/// SQLite's own words for why the store could not be opened or read: what the pages and the
/// viewer's start have always shown after their own prefix.
fn sqlite_words(e: &StoreError) -> String {
    match e {
        StoreError::Open { message, .. } | StoreError::Read { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

impl Db {
    /// Opens the store and checks that it reads as one (its `sweeps` table answers).
    /// Whether the store at `path` holds a sweep (see `StoreReader::holds_sweeps`).
    pub fn holds_sweeps(path: &Path) -> Result<bool, ViewError> {
        let err = |e: StoreError| ViewError::Store {
            path: path.to_path_buf(),
            message: sqlite_words(&e),
        };
        StoreReader::open(path)
            .and_then(|r| r.holds_sweeps())
            .map_err(err)
    }

    pub fn open(path: &Path) -> Result<Db, ViewError> {
        let err = |e: StoreError| ViewError::Store {
            path: path.to_path_buf(),
            message: sqlite_words(&e),
        };
        let reader = StoreReader::open(path).map_err(err)?;
        reader.check().map_err(err)?;
        Ok(Db {
            path: path.to_path_buf(),
            pool: Mutex::new(vec![reader]),
        })
    }

    /// Runs `f` on a pooled reader on a blocking thread.
    pub async fn read<T: Send + 'static>(
        self: &std::sync::Arc<Self>,
        f: impl FnOnce(&StoreReader) -> Result<T, ReadError> + Send + 'static,
    ) -> Result<T, ReadError> {
        let db = self.clone();
        tokio::task::spawn_blocking(move || {
            let pooled = db.pool.lock().ok().and_then(|mut p| p.pop());
            let reader = match pooled {
                Some(r) => r,
                None => StoreReader::open(&db.path)?,
            };
            let out = f(&reader);
            if let Ok(mut p) = db.pool.lock() {
                if p.len() < POOL {
                    p.push(reader);
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
    /// The store could not be opened or queried; shown in SQLite's words after the page's prefix.
    #[error("reading the store: {}", sqlite_words(.0))]
    Store(#[from] StoreError),
    /// The blocking task that read it panicked or was cancelled.
    #[error("store reader: {0}")]
    Task(String),
}

/// Every sweep, oldest first.
pub fn sweeps(c: &StoreReader) -> Result<Vec<SweepInfo>, ReadError> {
    Ok(c.sweeps()?)
}

/// One sweep.
pub fn sweep(c: &StoreReader, id: &str) -> Result<Option<SweepInfo>, ReadError> {
    Ok(sweeps(c)?.into_iter().find(|s| s.id == id))
}

/// Games by sweep and state.
pub fn state_counts(c: &StoreReader) -> Result<BTreeMap<String, BTreeMap<String, u64>>, ReadError> {
    Ok(c.state_counts()?)
}

/// A page of a sweep's games in plan order, of one state or all.
pub fn games(
    c: &StoreReader,
    sweep: &str,
    state: Option<&str>,
    limit: u32,
    offset: u64,
) -> Result<Vec<GameInfo>, ReadError> {
    Ok(c.games(sweep, state, limit, offset)?)
}

/// One game.
pub fn game(c: &StoreReader, id: &str) -> Result<Option<GameInfo>, ReadError> {
    Ok(c.game(id)?)
}

/// The games of `game`'s sweep that play the same script and repeat (so the same seed) in the other
/// arms, in plan order: what the game page offers to compare it with, side by side.
pub fn counterparts(c: &StoreReader, game: &str) -> Result<Vec<GameInfo>, ReadError> {
    Ok(c.counterparts(game)?)
}

/// A game's `result.json` as the store holds it.
pub fn result(c: &StoreReader, game: &str) -> Result<Option<String>, ReadError> {
    Ok(c.result(game)?)
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

/// The grid of a sweep: one cell per arm and script, in the order each first appears in the plan.
pub fn grid(c: &StoreReader, sweep: &str) -> Result<Vec<GridCell>, ReadError> {
    let mut cells: Vec<GridCell> = Vec::new();
    for row in c.arm_script_states(sweep)? {
        let n = row.games;
        match cells
            .iter_mut()
            .find(|c| c.arm == row.arm && c.script == row.script)
        {
            Some(cell) => {
                *cell.states.entry(row.state).or_default() += n;
                cell.total += n;
            }
            None => cells.push(GridCell {
                arm: row.arm,
                arm_label: row.arm_label,
                script: row.script,
                states: [(row.state, n)].into(),
                total: n,
            }),
        }
    }
    Ok(cells)
}

/// A page of a game's calls in the order they were recorded.
pub fn calls(c: &StoreReader, game: &str, limit: u32, offset: u64) -> Result<Vec<Call>, ReadError> {
    Ok(c.calls(game, limit, offset)?)
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
pub fn call(c: &StoreReader, game: &str, id: i64) -> Result<Option<CallDetail>, ReadError> {
    let Some(call) = c.call(game, id)? else {
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
        if let Some(entry) = c.cache_entry(&key)? {
            if entry.kind == "chat" {
                let v: Option<serde_json::Value> = serde_json::from_slice(&entry.value).ok();
                detail.reply = v
                    .as_ref()
                    .and_then(|v| v.get("content"))
                    .and_then(|c| c.as_str())
                    .map(str::to_string);
                detail.reply_usage = v.as_ref().and_then(|v| v.get("usage").cloned());
                detail.latency_ms = v.and_then(|v| v.get("latency_ms")?.as_u64());
            }
            detail.kind = Some(entry.kind);
            detail.cached_at = Some(entry.created_at);
        }
        detail.request = request(c, &key)?;
    }
    Ok(Some(detail))
}

/// The request kept under a cache key; `None` when none was kept (an embedding, a store written
/// before requests were kept, or the cluster's store).
fn request(c: &StoreReader, key: &[u8]) -> Result<Option<KeptRequest>, ReadError> {
    let kept = c.kept_request(key, |record, text| requests::read(record, |h| text(&h[..])))?;
    Ok(kept.flatten())
}
