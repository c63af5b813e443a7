//! The embedded store: one SQLite file in the run directory (`sleuth.db`).
//!
//! **Writes** go through one writer thread that owns the only writing connection and commits in
//! groups: it takes every job waiting in its queue (and, under load, those that arrive within a few
//! milliseconds: [`next_batch`]), runs them in one transaction, commits, and only then answers each
//! job. Thousands of games each writing a cache entry per call therefore cost one
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
//!
//! Here: the connections, the writer thread and the schema; `rows.rs` turns rows into records and
//! back; `ops.rs` is the [`super::Store`] implementation; `read.rs` is the read-only reader the
//! viewer and the report open beside a running sweep (every query of the schema is in this module).

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, OptionalExtension};
use tokio::sync::oneshot;

use crate::error::StoreError;

pub mod annotations;
pub mod bulk;
mod known;
mod ops;
pub mod read;
mod rows;
pub mod seats;

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
    created_at TEXT NOT NULL, request INTEGER
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS requests (
    key BLOB PRIMARY KEY, value BLOB NOT NULL, messages BLOB
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS messages (
    hash BLOB PRIMARY KEY, text BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kept_messages (
    id INTEGER PRIMARY KEY, hash BLOB NOT NULL, text BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS kept_requests (
    id INTEGER PRIMARY KEY, value BLOB NOT NULL, messages BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger (
    id INTEGER PRIMARY KEY, run TEXT NOT NULL, sweep TEXT NOT NULL, game TEXT NOT NULL,
    arm TEXT NOT NULL, model TEXT NOT NULL, phase TEXT NOT NULL, framework TEXT NOT NULL,
    purpose TEXT NOT NULL, source TEXT NOT NULL, prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL,
    key TEXT, latency_ms INTEGER, retries INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS ledger_by_sweep ON ledger (sweep);
CREATE INDEX IF NOT EXISTS ledger_by_run ON ledger (run);
CREATE INDEX IF NOT EXISTS ledger_by_game ON ledger (game, id);
";

/// The columns added after version 1 was fixed, with their tables and definitions: a file made
/// before them gains them when a writer opens it (`ALTER TABLE … ADD COLUMN`, which SQLite does
/// without rewriting the table). Additive, so the schema's version stays: an older sleuth names the
/// columns it writes and reads, and never sees these.
///
/// - The ledger's timing (`latency_ms`, `retries`).
/// - `cache.request`: the ledger row of the live call that stored the answer, which is also the id
///   its request is kept under in `kept_requests` (see [`Store::put_request`](crate::Store)). A row
///   of an older sleuth has none, and its request is found under its key in `requests`.
/// - `requests.messages`: for a request kept under its key by this sleuth (no ledger row to append it
///   under, as a batch call queued before its answer), its messages' rows in `kept_messages`.
const ADDED: [(&str, &str, &str); 4] = [
    ("ledger", "latency_ms", "INTEGER"),
    ("ledger", "retries", "INTEGER NOT NULL DEFAULT 0"),
    ("cache", "request", "INTEGER"),
    ("requests", "messages", "BLOB"),
];

/// Whether the file has `table`.
pub(crate) fn table_exists(c: &Connection, table: &str) -> rusqlite::Result<bool> {
    c.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
        [table],
        |r| r.get(0),
    )
}

/// Whether `table` of the file has `column`.
pub(crate) fn has_column(c: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    let mut st = c.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let names = st.query_map([table], |r| r.get::<_, String>(0))?;
    for name in names {
        if name? == column {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Adds the [`ADDED`] columns a file made by an older sleuth lacks.
fn add_columns(c: &Connection) -> rusqlite::Result<()> {
    for (table, column, definition) in ADDED {
        if !has_column(c, table, column)? {
            c.execute_batch(&format!(
                "ALTER TABLE {table} ADD COLUMN {column} {definition}"
            ))?;
        }
    }
    Ok(())
}

/// Jobs committed together at most; bounds the time one batch holds its waiters.
const MAX_BATCH: usize = 1_024;
/// How long a batch may wait for more jobs after its first, under load (see [`next_batch`]).
const LINGER: Duration = Duration::from_millis(5);
/// The previous batch's size from which the next one lingers: that many callers waiting on one
/// commit means jobs are arriving faster than commits, and a single game's calls one after another
/// (one job per batch) never wait.
const LINGER_FROM: usize = 4;
/// Read connections kept open.
const READERS: usize = 4;
/// A read connection's page cache (KiB, as a negative `cache_size`) and mapping of the main file.
const READER_PRAGMAS: &str = "PRAGMA cache_size = -256; PRAGMA mmap_size = 268435456;";

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
    /// The cache keys the file may hold (`known.rs`): a lookup of any other key reads nothing.
    known: Arc<Mutex<known::KnownKeys>>,
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
        add_columns(&conn).map_err(|e| open_err(&e))?;
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
        let known = known::for_file(path, || {
            let mut known = known::KnownKeys::default();
            let mut st = conn
                .prepare("SELECT key FROM cache")
                .map_err(|e| e.to_string())?;
            let mut rows = st.query([]).map_err(|e| e.to_string())?;
            while let Some(row) = rows.next().map_err(|e| e.to_string())? {
                let key: Vec<u8> = row.get(0).map_err(|e| e.to_string())?;
                if let Ok(key) = <[u8; 32]>::try_from(key.as_slice()) {
                    known.insert(&key);
                }
            }
            Ok(known)
        })
        .map_err(|e| open_err(&e))?;
        // Room for every statement the writer runs (its savepoints and each job's writes), so that
        // none is parsed again after the cache's default 16 have filled it.
        conn.set_prepared_statement_cache_capacity(64);
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
                known,
            }),
        })
    }

    /// Whether the cache may hold `key`; false only when it certainly does not.
    fn may_hold(&self, key: &[u8; 32]) -> bool {
        self.inner.known.lock().map_or(true, |k| k.may_hold(key))
    }

    /// Notes a key about to be stored, before its write is queued (see `known.rs`).
    fn will_hold(&self, key: &[u8; 32]) {
        if let Ok(mut k) = self.inner.known.lock() {
            k.insert(key);
        }
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
                    // Every read after the writer's next commit starts with an empty page cache
                    // (SQLite drops a connection's cache when another connection has written), and a
                    // sweep commits many times a second: a small cache is cleared cheaply, and pages
                    // of the main file come from the mapping instead of a read into the cache.
                    c.execute_batch(READER_PRAGMAS).map_err(backend)?;
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

/// Runs one of the writer's fixed statements through the connection's statement cache.
fn statement(c: &Connection, sql: &str) -> Result<(), String> {
    c.prepare_cached(sql)
        .and_then(|mut st| st.execute([]))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The jobs of the next batch, `first` and those behind it: every job already queued and, when the
/// previous batch held `last` ≥ [`LINGER_FROM`] jobs, those that arrive within `linger` ([`LINGER`])
/// of the first, until the batch is as large as the previous one.
///
/// Why wait: much of a commit's cost is per commit, not per job — the wake-up of this thread, the
/// transaction's begin and end, the WAL's header and the checkpoint check — and a page that several
/// jobs of one batch change (the ledger's last leaf, the kept requests' last leaf, an index's inner
/// pages) is written once. At a thousand calls a second the batches grow from ~3 jobs to ~16, and the
/// sweep's CPU per call falls by about a tenth (`docs/performance.md`, section 9, the fourteenth
/// piece), for at most 5 ms more before a call's answer reaches its game, against model calls of a
/// second. PostgreSQL's `commit_delay` and `commit_siblings` are the same trade, made the same way:
/// wait only when others are committing too.
fn next_batch(first: Job, rx: &mpsc::Receiver<Job>, last: usize, linger: Duration) -> Vec<Job> {
    let mut jobs = vec![first];
    let deadline = (last >= LINGER_FROM).then(|| Instant::now() + linger);
    let want = if deadline.is_some() { last } else { 1 };
    while jobs.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(j) => jobs.push(j),
            Err(mpsc::TryRecvError::Disconnected) => break,
            Err(mpsc::TryRecvError::Empty) => {
                let Some(deadline) = deadline.filter(|_| jobs.len() < want) else {
                    break;
                };
                let left = deadline.saturating_duration_since(Instant::now());
                match rx.recv_timeout(left) {
                    Ok(j) => jobs.push(j),
                    Err(_) => break,
                }
            }
        }
    }
    jobs
}

/// The writer thread: batches of jobs, one transaction each, every job in its own savepoint (a
/// failed job's changes are rolled back alone), answered after the commit.
fn write_loop(mut conn: Connection, rx: mpsc::Receiver<Job>) {
    let mut last = 1;
    while let Ok(first) = rx.recv() {
        let jobs = next_batch(first, &rx, last, LINGER);
        last = jobs.len();
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
            // Prepared once per connection: a sweep runs these a few thousand times a second, and
            // `execute_batch` would parse them each time.
            let opened = statement(&tx, "SAVEPOINT job");
            let (ok, d) = job(opened.as_ref().map(|_| &*tx).map_err(Clone::clone));
            if opened.is_ok() {
                let closed = if ok {
                    statement(&tx, "RELEASE job")
                } else {
                    statement(&tx, "ROLLBACK TO job").and_then(|()| statement(&tx, "RELEASE job"))
                };
                if let Err(e) = closed {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::StoreReader;

    /// A job that does nothing, numbered by what it answers.
    fn job(n: u32, answered: mpsc::Sender<u32>) -> Job {
        Box::new(move |_| {
            let done: Done = Box::new(move |_| {
                let _ = answered.send(n);
            });
            (true, done)
        })
    }

    /// Batches as the writer forms them: a lone caller's job never waits for company, every job
    /// already queued joins the batch whatever the previous one held, jobs that arrive while a batch
    /// lingers join it, and a lingering batch ends when its senders are gone instead of waiting on
    /// them. The linger is an hour here, so that a batch that waited when it should not would hang
    /// the test rather than pass it.
    #[test]
    fn batches_take_what_is_queued_and_wait_only_under_load() {
        const HOUR: Duration = Duration::from_secs(3600);
        let (answered, _seen) = mpsc::channel();
        let (tx, rx) = mpsc::channel::<Job>();
        // One job at a time, as a single game sends them: the batch is that job, at once.
        assert_eq!(next_batch(job(0, answered.clone()), &rx, 1, HOUR).len(), 1);
        // Twenty queued behind a batch of eight: all of them, not eight.
        for n in 1..=20 {
            tx.send(job(n, answered.clone())).expect("send");
        }
        assert_eq!(next_batch(job(0, answered.clone()), &rx, 8, HOUR).len(), 21);
        // Under load, two queued and two more sent while the batch waits for its fifth: all five.
        for n in 1..=2 {
            tx.send(job(n, answered.clone())).expect("send");
        }
        let late = {
            let (tx, answered) = (tx.clone(), answered.clone());
            std::thread::spawn(move || {
                for n in 3..=4 {
                    tx.send(job(n, answered.clone())).expect("send");
                }
            })
        };
        assert_eq!(next_batch(job(0, answered.clone()), &rx, 5, HOUR).len(), 5);
        late.join().expect("sender");
        // Under load with two queued and nobody left to send: the three, at once.
        for n in 1..=2 {
            tx.send(job(n, answered.clone())).expect("send");
        }
        drop(tx);
        assert_eq!(next_batch(job(0, answered), &rx, 8, HOUR).len(), 3);
    }

    /// A ledger as version 1 first made it, before its timing columns, with one call.
    fn untimed_file(path: &Path) {
        let c = Connection::open(path).expect("open");
        c.execute_batch(
            "CREATE TABLE ledger (
                 id INTEGER PRIMARY KEY, run TEXT NOT NULL, sweep TEXT NOT NULL, game TEXT NOT NULL,
                 arm TEXT NOT NULL, model TEXT NOT NULL, phase TEXT NOT NULL,
                 framework TEXT NOT NULL, purpose TEXT NOT NULL, source TEXT NOT NULL,
                 prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
                 cached_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL, key TEXT);
             INSERT INTO ledger VALUES
                 (1, 'r', 's', 'g', 'a', 'm', 'gameplay', 'f', 'talk', 'live', 5, 2, 0, 0.1, NULL);",
        )
        .expect("an old ledger");
    }

    #[test]
    fn a_ledger_made_before_the_timing_columns_reads_and_gains_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sleuth.db");
        untimed_file(&path);

        // A reader (which never writes) reads the old calls with no latency and no retries.
        let reader = StoreReader::open(&path).expect("reader");
        let calls = reader.calls("g", 10, 0).expect("calls of an old file");
        assert_eq!(calls.len(), 1);
        assert_eq!((calls[0].latency_ms, calls[0].retries), (None, 0));
        drop(reader);

        // A writer adds the columns and keeps the row; its new rows carry their timing.
        let store = SqliteStore::open(&path).expect("a writer opens the old file");
        let c = Connection::open(&path).expect("open");
        assert!(has_column(&c, "ledger", "latency_ms").expect("pragma"));
        assert!(has_column(&c, "ledger", "retries").expect("pragma"));
        drop(store);
        let store = SqliteStore::open(&path).expect("opening again adds nothing twice");
        drop(store);
        let reader = StoreReader::open(&path).expect("reader");
        let calls = reader.calls("g", 10, 0).expect("calls");
        assert_eq!(
            (
                calls[0].latency_ms,
                calls[0].retries,
                calls[0].prompt_tokens
            ),
            (None, 0, 5)
        );
    }
}
