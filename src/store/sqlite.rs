//! The embedded store: one SQLite file in the run directory (`sleuth.db`).
//!
//! **Writes** go through one writer thread that owns the only writing connection and commits in
//! groups: it takes every job waiting in its queue, runs them in one transaction, commits, and only
//! then answers each job. Thousands of games each writing a cache entry per call therefore cost one
//! commit per batch, not one per call, and "the write commits before the reply reaches the agent"
//! holds for every one of them. A thread rather than an actor because rusqlite's connection is
//! blocking and must stay on one thread; the thread is the actor's mailbox loop in all but name.
//!
//! **Reads** use a small pool of read-only connections on tokio's blocking threads. The file is in WAL
//! mode, so readers never wait for the writer and see every committed write.
//!
//! Durability: `synchronous = NORMAL` in WAL mode survives a killed process (the test kills sweeps with
//! SIGKILL), though not a power cut in the last moments before a checkpoint — the trade SQLite
//! recommends for WAL, and what keeps group commits cheap.
//!
//! The schema is documented in `docs/sweeps.md`; column names are what users see in `sqlite3` and
//! pandas, so they are plain and stable.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Row};
use tokio::sync::oneshot;

use super::types::{
    CacheKind, CallSource, GameRow, GameState, LedgerEntry, RunRecord, StateCounts, SweepRecord,
    SweepStatus, TotalsRow,
};
use super::{Store, StoreError, StoreFuture};

/// The schema's version, in `meta`; a file of another version is refused rather than misread.
const SCHEMA_VERSION: &str = "1";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sweeps (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, file TEXT NOT NULL, text TEXT NOT NULL,
    created_at TEXT NOT NULL, status TEXT NOT NULL, note TEXT,
    max_usd REAL, max_tokens INTEGER
);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, sweep TEXT NOT NULL, started_at TEXT NOT NULL, ended_at TEXT,
    outcome TEXT, pid INTEGER NOT NULL, host TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY, seq INTEGER NOT NULL, sweep TEXT NOT NULL, arm TEXT NOT NULL,
    arm_label TEXT NOT NULL, script TEXT NOT NULL, repeat INTEGER NOT NULL, seed INTEGER NOT NULL,
    spec TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    crashes INTEGER NOT NULL DEFAULT 0, reason TEXT, stage TEXT, updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS games_by_sweep ON games (sweep, seq);
CREATE TABLE IF NOT EXISTS results (
    game TEXT PRIMARY KEY, result TEXT NOT NULL, written_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cache (
    key BLOB PRIMARY KEY, kind TEXT NOT NULL, model TEXT NOT NULL, value BLOB NOT NULL,
    created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ledger (
    id INTEGER PRIMARY KEY, run TEXT NOT NULL, sweep TEXT NOT NULL, game TEXT NOT NULL,
    arm TEXT NOT NULL, model TEXT NOT NULL, phase TEXT NOT NULL, framework TEXT NOT NULL,
    purpose TEXT NOT NULL, source TEXT NOT NULL, prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL,
    key TEXT
);
CREATE INDEX IF NOT EXISTS ledger_by_sweep ON ledger (sweep);
CREATE INDEX IF NOT EXISTS ledger_by_run ON ledger (run);
";

/// Jobs committed together at most; bounds the time one batch holds its waiters.
const MAX_BATCH: usize = 1_024;
/// Read connections kept open.
const READERS: usize = 4;

/// What to tell a job's caller once its batch has committed (or failed to).
type Done = Box<dyn FnOnce(Result<(), String>) + Send>;
/// A write: runs inside the batch's transaction (or learns that none could be opened) and says
/// whether it succeeded, so that a failed job's partial changes are rolled back alone.
type Job = Box<dyn FnOnce(Result<&Connection, String>) -> (bool, Done) + Send>;

/// The SQLite store (see the module documentation). Cheap to clone.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    writer: mpsc::Sender<Job>,
    readers: Mutex<Vec<Connection>>,
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`, checks its schema version and starts the
    /// writer thread.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let open_err = |e: &dyn std::fmt::Display| StoreError::Open {
            at: path.display().to_string(),
            message: e.to_string(),
        };
        let conn = Connection::open(path).map_err(|e| open_err(&e))?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 10000;",
        )
        .map_err(|e| open_err(&e))?;
        conn.execute_batch(SCHEMA).map_err(|e| open_err(&e))?;
        let version: Option<String> = conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| open_err(&e))?;
        match version.as_deref() {
            None => {
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)",
                    [SCHEMA_VERSION],
                )
                .map_err(|e| open_err(&e))?;
            }
            Some(SCHEMA_VERSION) => {}
            Some(other) => {
                return Err(open_err(&format!(
                    "schema version {other}, this sleuth reads version {SCHEMA_VERSION}"
                )))
            }
        }
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("sleuth-store-writer".into())
            .spawn(move || write_loop(conn, rx))
            .map_err(|e| open_err(&e))?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                writer: tx,
                readers: Mutex::new(Vec::new()),
            }),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `f` in the next write batch and returns its value once the batch has committed.
    async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (tx, rx) = oneshot::channel::<Result<T, StoreError>>();
        let job: Job = Box::new(move |conn| match conn {
            Err(why) => {
                let done: Done = Box::new(move |_| {
                    let _ = tx.send(Err(StoreError::Backend(why)));
                });
                (false, done)
            }
            Ok(conn) => {
                let out = f(conn);
                let ok = out.is_ok();
                let done: Done = Box::new(move |committed| {
                    let r = match (out, committed) {
                        (Ok(v), Ok(())) => Ok(v),
                        (Err(e), _) => Err(backend(e)),
                        (Ok(_), Err(e)) => Err(StoreError::Backend(e)),
                    };
                    let _ = tx.send(r);
                });
                (ok, done)
            }
        });
        self.inner
            .writer
            .send(job)
            .map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// Runs `f` on a read connection, on a blocking thread.
    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let conn = {
                let mut pool = inner.readers.lock().map_err(|_| StoreError::Closed)?;
                pool.pop()
            };
            let conn = match conn {
                Some(c) => c,
                None => {
                    let c = Connection::open_with_flags(
                        &inner.path,
                        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                    )
                    .map_err(backend)?;
                    c.busy_timeout(std::time::Duration::from_secs(10))
                        .map_err(backend)?;
                    c
                }
            };
            let out = f(&conn);
            if let Ok(mut pool) = inner.readers.lock() {
                if pool.len() < READERS {
                    pool.push(conn);
                }
            }
            out
        })
        .await
        .map_err(|e| StoreError::Backend(format!("store reader: {e}")))?
    }
}

/// The writer thread: batches of jobs, one transaction each, every job in its own savepoint (a
/// failed job's changes are rolled back alone), answered after the commit.
fn write_loop(mut conn: Connection, rx: mpsc::Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        let mut jobs = vec![first];
        while jobs.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        let tx = match conn.transaction() {
            Ok(tx) => tx,
            Err(e) => {
                for job in jobs {
                    let (_, done) = job(Err(e.to_string()));
                    done(Err(e.to_string()));
                }
                continue;
            }
        };
        let mut done = Vec::with_capacity(jobs.len());
        for job in jobs {
            let opened = tx.execute_batch("SAVEPOINT job").map_err(|e| e.to_string());
            let (ok, d) = job(opened.as_ref().map(|_| &*tx).map_err(Clone::clone));
            if opened.is_ok() {
                let close = if ok {
                    "RELEASE job"
                } else {
                    "ROLLBACK TO job; RELEASE job"
                };
                if let Err(e) = tx.execute_batch(close) {
                    tracing::warn!(error = %e, "store: closing a job's savepoint failed");
                }
            }
            done.push(d);
        }
        let committed = tx.commit().map_err(|e| e.to_string());
        for d in done {
            d(committed.clone());
        }
    }
}

fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        what: what.to_string(),
        message: e.to_string(),
    }
}

fn parse<T: std::str::FromStr<Err = String>>(what: &str, s: &str) -> Result<T, StoreError> {
    s.parse().map_err(|e: String| corrupt(what, e))
}

fn sweep_from(r: &Row) -> rusqlite::Result<(SweepRecord, String)> {
    let max_tokens: Option<i64> = r.get(8)?;
    Ok((
        SweepRecord {
            id: r.get(0)?,
            name: r.get(1)?,
            file: r.get(2)?,
            text: r.get(3)?,
            created_at: r.get(4)?,
            status: SweepStatus::Running,
            note: r.get(6)?,
            max_usd: r.get(7)?,
            max_tokens: max_tokens.map(|t| t as u64),
        },
        r.get(5)?,
    ))
}

fn sweep_row(row: (SweepRecord, String)) -> Result<SweepRecord, StoreError> {
    let (mut s, status) = row;
    s.status = parse("sweep status", &status)?;
    Ok(s)
}

const SWEEP_COLUMNS: &str = "id, name, file, text, created_at, status, note, max_usd, max_tokens";

const GAME_COLUMNS: &str =
    "id, sweep, arm, arm_label, script, repeat, seed, spec, state, attempts, \
     crashes, reason, stage, updated_at";

fn game_from(r: &Row) -> rusqlite::Result<(GameRow, String)> {
    let seed: i64 = r.get(6)?;
    Ok((
        GameRow {
            id: r.get(0)?,
            sweep: r.get(1)?,
            arm: r.get(2)?,
            arm_label: r.get(3)?,
            script: r.get(4)?,
            repeat: r.get(5)?,
            // Seeds are u64; SQLite integers are i64, so the bits are stored as they are.
            seed: seed as u64,
            spec: r.get(7)?,
            state: GameState::Pending,
            attempts: r.get(9)?,
            crashes: r.get(10)?,
            reason: r.get(11)?,
            stage: r.get(12)?,
            updated_at: r.get(13)?,
        },
        r.get(8)?,
    ))
}

fn game_row(row: (GameRow, String)) -> Result<GameRow, StoreError> {
    let (mut g, state) = row;
    g.state = parse("game state", &state)?;
    Ok(g)
}

fn run_from(r: &Row) -> rusqlite::Result<RunRecord> {
    Ok(RunRecord {
        id: r.get(0)?,
        sweep: r.get(1)?,
        started_at: r.get(2)?,
        ended_at: r.get(3)?,
        outcome: r.get(4)?,
        pid: r.get(5)?,
        host: r.get(6)?,
    })
}

fn ledger_from(r: &Row) -> rusqlite::Result<(LedgerEntry, String)> {
    let tokens = |i| r.get::<_, i64>(i).map(|t| t as u64);
    Ok((
        LedgerEntry {
            run: r.get(0)?,
            sweep: r.get(1)?,
            game: r.get(2)?,
            arm: r.get(3)?,
            model: r.get(4)?,
            phase: r.get(5)?,
            framework: r.get(6)?,
            purpose: r.get(7)?,
            source: CallSource::Live,
            prompt_tokens: tokens(9)?,
            completion_tokens: tokens(10)?,
            cached_tokens: tokens(11)?,
            cost_usd: r.get(12)?,
            key: r.get(13)?,
        },
        r.get(8)?,
    ))
}

fn insert_ledger(c: &Connection, entries: &[LedgerEntry]) -> rusqlite::Result<()> {
    let mut st = c.prepare_cached(
        "INSERT INTO ledger (run, sweep, game, arm, model, phase, framework, purpose, source, \
         prompt_tokens, completion_tokens, cached_tokens, cost_usd, key) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    )?;
    for e in entries {
        st.execute(params![
            e.run,
            e.sweep,
            e.game,
            e.arm,
            e.model,
            e.phase,
            e.framework,
            e.purpose,
            e.source.as_str(),
            e.prompt_tokens as i64,
            e.completion_tokens as i64,
            e.cached_tokens as i64,
            e.cost_usd,
            e.key
        ])?;
    }
    Ok(())
}

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
        Box::pin(async move {
            self.write(move |c| {
                let mut st = c.prepare_cached(
                    "INSERT OR IGNORE INTO cache (key, kind, model, value, created_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )?;
                st.execute(params![&key[..], kind.as_str(), model, value, now()])?;
                insert_ledger(c, &entries)
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
                     prompt_tokens, completion_tokens, cached_tokens, cost_usd, key FROM ledger \
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
