//! The batch journal: every evaluation call sent (or to be sent) through a batch, every batch, and
//! which game waits on which call — a SQLite file beside the run's store (`batches.db`).
//!
//! It is what makes batching exactly once across kills: a line is written before it can be put in a
//! file, a batch is written (`submitting`) before it is uploaded and marked `submitted` with the
//! provider's id once created, and a line is marked answered only after its answer is in the cache.
//! A run that starts over reads it back and polls what was submitted instead of submitting again
//! (`worker.rs`). It is also what a waiting game is, in memory and on disk: a few rows here and none
//! of its actors.
//!
//! A separate file from `sleuth.db` because batching is this node's business: the store's schema is
//! shared with the cluster's Redis through one trait and a conformance suite, and the journal needs
//! neither. One connection behind a mutex, used on tokio's blocking threads: the journal sees a few
//! writes per evaluation call, against thousands per game in the store.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};

use super::BatchError;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS batch_lines (
    key TEXT PRIMARY KEY, route TEXT NOT NULL, model TEXT NOT NULL, body TEXT NOT NULL,
    meta TEXT NOT NULL, state TEXT NOT NULL, batch TEXT, attempts INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0, error TEXT, queued_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS batch_lines_by_state ON batch_lines (state, route);
CREATE INDEX IF NOT EXISTS batch_lines_by_batch ON batch_lines (batch);
CREATE TABLE IF NOT EXISTS batches (
    id TEXT PRIMARY KEY, route TEXT NOT NULL, model TEXT NOT NULL, remote TEXT, input_file TEXT,
    state TEXT NOT NULL, status TEXT, lines INTEGER NOT NULL, created_at TEXT NOT NULL,
    ended_at TEXT
);
CREATE TABLE IF NOT EXISTS batch_waits (
    game TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (game, key)
) WITHOUT ROWID;
";

/// Where a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineState {
    /// Waiting to be put in a batch.
    Queued,
    /// In a batch the provider has (or is being given).
    Submitted,
    /// Its answer is in the cache.
    Answered,
    /// Its batch failed it (a per-line error, an expired or failed batch); the next call of it is
    /// retried as the settings say.
    Failed,
    /// Given up on as a batch line: the call is made live.
    Live,
}

impl LineState {
    fn as_str(self) -> &'static str {
        match self {
            LineState::Queued => "queued",
            LineState::Submitted => "submitted",
            LineState::Answered => "answered",
            LineState::Failed => "failed",
            LineState::Live => "live",
        }
    }
    fn parse(s: &str) -> Option<LineState> {
        Some(match s {
            "queued" => LineState::Queued,
            "submitted" => LineState::Submitted,
            "answered" => LineState::Answered,
            "failed" => LineState::Failed,
            "live" => LineState::Live,
            _ => return None,
        })
    }
}

/// One line as the journal holds it.
#[derive(Debug, Clone)]
pub struct Line {
    /// The call's cache key in hex: the line's `custom_id`.
    pub key: String,
    /// `endpoint|model id`: a batch holds lines of one route only.
    pub route: String,
    /// The model's name in the sweep (its pricing and ledger name).
    pub model: String,
    /// The request body as it goes in the file.
    pub body: String,
    /// The call's tags and scope (`super::LineMeta`), as JSON.
    pub meta: String,
    pub state: LineState,
    pub batch: Option<String>,
    /// Batches it has been put in.
    pub attempts: u32,
}

/// A batch as the journal holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchRow {
    /// Ours, sent as the batch's `sleuth_batch` metadata so a run that died before it learnt the
    /// provider's id can find it.
    pub id: String,
    pub route: String,
    pub model: String,
    /// The provider's id, once the batch is created.
    pub remote: Option<String>,
    /// `submitting`, `submitted` or `ended`.
    pub state: String,
    /// The provider's last status (`validating`, `in_progress`, `completed`, `expired`, …).
    pub status: Option<String>,
    pub lines: u64,
}

/// Counts for `sweep status` and the tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JournalCounts {
    pub queued: u64,
    pub submitted: u64,
    pub answered: u64,
    pub failed: u64,
    pub live: u64,
    /// Lines that failed in a batch at least once (retried live or in another batch).
    pub line_failures: u64,
    /// Batches not ended yet, and all batches.
    pub open_batches: u64,
    pub batches: u64,
    /// Games with calls still waiting.
    pub waiting_games: u64,
}

/// The journal (see the module documentation).
#[derive(Clone)]
pub struct Journal {
    /// The file, named in every error: a user who meets one must know which file it is about.
    path: Arc<PathBuf>,
    conn: Arc<Mutex<Connection>>,
    /// One operation at a time reaches a blocking thread: the connection serves one anyway, and a
    /// game's evaluation defers hundreds of calls at once — without the gate each would hold a
    /// blocking thread waiting for the mutex, and tokio would start hundreds of them.
    gate: Arc<tokio::sync::Semaphore>,
}

/// A failed journal operation as the user must read it: the file named, and — when SQLite says the
/// file is damaged or not a database — [`BatchError::Unreadable`], which says how to go on.
fn error_at(path: &Path, e: rusqlite::Error) -> BatchError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => BatchError::Unreadable {
            path: path.to_path_buf(),
            detail: e.to_string(),
        },
        _ => BatchError::Journal(format!("{}: {e}", path.display())),
    }
}

impl Journal {
    /// Opens (or creates) the journal at `path` for a run that writes it, and checks that the whole
    /// file reads (`PRAGMA quick_check`): a damaged journal is refused here, before the run queues
    /// or spends anything, with [`BatchError::Unreadable`] — not halfway through a run at the first
    /// damaged page. The check reads the file once (a fraction of a second for a journal of a
    /// hundred thousand lines).
    pub fn open(path: &Path) -> Result<Journal, BatchError> {
        let err = |e| error_at(path, e);
        let conn = Connection::open(path).map_err(err)?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 10000;",
        )
        .map_err(err)?;
        let check: String = conn
            .query_row("PRAGMA quick_check(1)", [], |r| r.get(0))
            .map_err(err)?;
        if check != "ok" {
            return Err(BatchError::Unreadable {
                path: path.to_path_buf(),
                detail: format!("integrity check: {check}"),
            });
        }
        conn.execute_batch(SCHEMA).map_err(err)?;
        Ok(Journal::with_connection(path, conn))
    }

    /// Opens the journal at `path` to read it only (`sweep status`): read-only, so no schema is
    /// written, the journal mode is left as it is, and a run writing the journal meanwhile is never
    /// disturbed. Its damage shows when a query reads the damaged page ([`BatchError::Unreadable`]).
    pub fn open_read_only(path: &Path) -> Result<Journal, BatchError> {
        let err = |e| error_at(path, e);
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(err)?;
        Ok(Journal::with_connection(path, conn))
    }

    fn with_connection(path: &Path, conn: Connection) -> Journal {
        Journal {
            path: Arc::new(path.to_path_buf()),
            conn: Arc::new(Mutex::new(conn)),
            gate: Arc::new(tokio::sync::Semaphore::new(1)),
        }
    }

    /// The journal's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the connection on a blocking thread.
    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, rusqlite::Error> + Send + 'static,
    ) -> Result<T, BatchError> {
        let conn = self.conn.clone();
        let path = self.path.clone();
        // Never closed; without a permit the operation still runs, only unqueued.
        let _permit = self.gate.acquire().await.ok();
        tokio::task::spawn_blocking(move || {
            let mut c = conn.lock().map_err(|_| {
                BatchError::Journal(format!(
                    "{}: the journal's lock is poisoned",
                    path.display()
                ))
            })?;
            f(&mut c).map_err(|e| error_at(&path, e))
        })
        .await
        .map_err(|e| BatchError::Journal(format!("{}: journal task: {e}", self.path.display())))?
    }

    /// The line of `key`, if the journal has it.
    pub async fn line(&self, key: String) -> Result<Option<Line>, BatchError> {
        self.with(move |c| {
            c.query_row(
                "SELECT key, route, model, body, meta, state, batch, attempts FROM batch_lines WHERE key = ?1",
                params![key],
                read_line,
            )
            .optional()
        })
        .await
    }

    /// Queues `line` for the next batch of its route unless the journal has it already, and records
    /// that `game` waits on it. Returns the line's state after (a line already there keeps its own).
    pub async fn enqueue(&self, line: Line, game: String) -> Result<LineState, BatchError> {
        self.with(move |c| {
            let tx = c.transaction()?;
            tx.execute(
                "INSERT OR IGNORE INTO batch_lines (key, route, model, body, meta, state, queued_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'queued', ?6)",
                params![line.key, line.route, line.model, line.body, line.meta, unix_now()],
            )?;
            tx.execute(
                "INSERT OR IGNORE INTO batch_waits (game, key) VALUES (?1, ?2)",
                params![game, line.key],
            )?;
            let state: String = tx.query_row(
                "SELECT state FROM batch_lines WHERE key = ?1",
                params![line.key],
                |r| r.get(0),
            )?;
            tx.commit()?;
            Ok(LineState::parse(&state).unwrap_or(LineState::Queued))
        })
        .await
    }

    /// A failed line goes back in the queue for another batch; `game` waits on it.
    pub async fn requeue(&self, key: String, game: String) -> Result<(), BatchError> {
        self.with(move |c| {
            let tx = c.transaction()?;
            tx.execute(
                "UPDATE batch_lines SET state = 'queued', batch = NULL, queued_at = ?2 WHERE key = ?1 AND state = 'failed'",
                params![key, unix_now()],
            )?;
            tx.execute(
                "INSERT OR IGNORE INTO batch_waits (game, key) VALUES (?1, ?2)",
                params![game, key],
            )?;
            tx.commit()
        })
        .await
    }

    /// Sets a line's state (`live` when it is given up on as a batch line).
    pub async fn set_line_state(&self, key: String, state: LineState) -> Result<(), BatchError> {
        self.with(move |c| {
            c.execute(
                "UPDATE batch_lines SET state = ?2 WHERE key = ?1",
                params![key, state.as_str()],
            )
            .map(|_| ())
        })
        .await
    }

    /// Forgets what `game` waited on: it is being played again, and what it still needs it will ask
    /// for again.
    pub async fn clear_waits(&self, game: String) -> Result<(), BatchError> {
        self.with(move |c| {
            c.execute("DELETE FROM batch_waits WHERE game = ?1", params![game])
                .map(|_| ())
        })
        .await
    }

    /// Whether `game` waits on any call.
    pub async fn waits(&self, game: String) -> Result<bool, BatchError> {
        self.with(move |c| {
            c.query_row(
                "SELECT 1 FROM batch_waits WHERE game = ?1 LIMIT 1",
                params![game],
                |_| Ok(()),
            )
            .optional()
            .map(|o| o.is_some())
        })
        .await
    }

    /// Games that wait only on calls no longer in a batch (answered, failed or given up on): they can
    /// be played again.
    pub async fn ready_games(&self) -> Result<Vec<String>, BatchError> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT w.game FROM batch_waits w JOIN batch_lines l ON l.key = w.key
                 GROUP BY w.game HAVING SUM(l.state IN ('queued', 'submitted')) = 0",
            )?;
            let rows = st.query_map([], |r| r.get::<_, String>(0))?;
            rows.collect()
        })
        .await
    }

    /// The routes with queued lines: how many each, and the unix time of the oldest.
    pub async fn queued_by_route(&self) -> Result<Vec<(String, u64, f64)>, BatchError> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT route, COUNT(*), MIN(queued_at) FROM batch_lines WHERE state = 'queued' GROUP BY route",
            )?;
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64, r.get(2)?)))?;
            rows.collect()
        })
        .await
    }

    /// The queued lines of `route`, oldest first.
    pub async fn queued_lines(&self, route: String) -> Result<Vec<Line>, BatchError> {
        self.with(move |c| {
            let mut st = c.prepare(
                "SELECT key, route, model, body, meta, state, batch, attempts FROM batch_lines
                 WHERE state = 'queued' AND route = ?1 ORDER BY queued_at, key",
            )?;
            let rows = st.query_map(params![route], read_line)?;
            rows.collect()
        })
        .await
    }

    /// Records a batch about to be uploaded, with its lines, in one transaction: from here on a
    /// restart finds it (`submitting`) and looks for it at the provider before sending it again.
    pub async fn begin_batch(&self, batch: BatchRow, keys: Vec<String>) -> Result<(), BatchError> {
        self.with(move |c| {
            let tx = c.transaction()?;
            tx.execute(
                "INSERT INTO batches (id, route, model, state, lines, created_at) VALUES (?1, ?2, ?3, 'submitting', ?4, ?5)",
                params![batch.id, batch.route, batch.model, batch.lines as i64, chrono::Utc::now().to_rfc3339()],
            )?;
            {
                let mut up = tx.prepare(
                    "UPDATE batch_lines SET state = 'submitted', batch = ?2, attempts = attempts + 1 WHERE key = ?1",
                )?;
                for k in &keys {
                    up.execute(params![k, batch.id])?;
                }
            }
            tx.commit()
        })
        .await
    }

    /// The provider has the batch: its id and status.
    pub async fn submitted(
        &self,
        id: String,
        remote: String,
        input_file: String,
        status: String,
    ) -> Result<(), BatchError> {
        self.with(move |c| {
            c.execute(
                "UPDATE batches SET state = 'submitted', remote = ?2, input_file = ?3, status = ?4 WHERE id = ?1",
                params![id, remote, input_file, status],
            )
            .map(|_| ())
        })
        .await
    }

    /// The provider's latest status of a batch still open.
    pub async fn set_status(&self, id: String, status: String) -> Result<(), BatchError> {
        self.with(move |c| {
            c.execute(
                "UPDATE batches SET status = ?2 WHERE id = ?1",
                params![id, status],
            )
            .map(|_| ())
        })
        .await
    }

    /// Batches not ended, oldest first.
    pub async fn open_batches(&self) -> Result<Vec<BatchRow>, BatchError> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT id, route, model, remote, state, status, lines FROM batches
                 WHERE state != 'ended' ORDER BY created_at, id",
            )?;
            let rows = st.query_map([], |r| {
                Ok(BatchRow {
                    id: r.get(0)?,
                    route: r.get(1)?,
                    model: r.get(2)?,
                    remote: r.get(3)?,
                    state: r.get(4)?,
                    status: r.get(5)?,
                    lines: r.get::<_, i64>(6)? as u64,
                })
            })?;
            rows.collect()
        })
        .await
    }

    /// The lines of a batch still marked submitted.
    pub async fn lines_of(&self, batch: String) -> Result<Vec<Line>, BatchError> {
        self.with(move |c| {
            let mut st = c.prepare(
                "SELECT key, route, model, body, meta, state, batch, attempts FROM batch_lines
                 WHERE batch = ?1 AND state = 'submitted' ORDER BY key",
            )?;
            let rows = st.query_map(params![batch], read_line)?;
            rows.collect()
        })
        .await
    }

    /// A line's answer is in the cache.
    pub async fn answered(&self, key: String) -> Result<(), BatchError> {
        self.with(move |c| {
            c.execute(
                "UPDATE batch_lines SET state = 'answered', error = NULL WHERE key = ?1 AND state = 'submitted'",
                params![key],
            )
            .map(|_| ())
        })
        .await
    }

    /// A line its batch did not answer, and why.
    pub async fn failed(&self, key: String, error: String) -> Result<(), BatchError> {
        self.with(move |c| {
            c.execute(
                "UPDATE batch_lines SET state = 'failed', failures = failures + 1, error = ?2 WHERE key = ?1 AND state = 'submitted'",
                params![key, error],
            )
            .map(|_| ())
        })
        .await
    }

    /// A batch is over (its lines are answered or failed).
    pub async fn end_batch(&self, id: String, status: String) -> Result<(), BatchError> {
        self.with(move |c| {
            c.execute(
                "UPDATE batches SET state = 'ended', status = ?2, ended_at = ?3 WHERE id = ?1",
                params![id, status, chrono::Utc::now().to_rfc3339()],
            )
            .map(|_| ())
        })
        .await
    }

    /// Every count `sweep status` shows.
    pub async fn counts(&self) -> Result<JournalCounts, BatchError> {
        self.with(|c| {
            let mut n = JournalCounts::default();
            let mut st = c.prepare("SELECT state, COUNT(*) FROM batch_lines GROUP BY state")?;
            let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
            for row in rows {
                let (state, count) = row?;
                let count = count as u64;
                match LineState::parse(&state) {
                    Some(LineState::Queued) => n.queued = count,
                    Some(LineState::Submitted) => n.submitted = count,
                    Some(LineState::Answered) => n.answered = count,
                    Some(LineState::Failed) => n.failed = count,
                    Some(LineState::Live) => n.live = count,
                    None => {}
                }
            }
            n.line_failures = c.query_row(
                "SELECT COUNT(*) FROM batch_lines WHERE failures > 0",
                [],
                |r| r.get::<_, i64>(0),
            )? as u64;
            n.batches =
                c.query_row("SELECT COUNT(*) FROM batches", [], |r| r.get::<_, i64>(0))? as u64;
            n.open_batches = c.query_row(
                "SELECT COUNT(*) FROM batches WHERE state != 'ended'",
                [],
                |r| r.get::<_, i64>(0),
            )? as u64;
            n.waiting_games =
                c.query_row("SELECT COUNT(DISTINCT game) FROM batch_waits", [], |r| {
                    r.get::<_, i64>(0)
                })? as u64;
            Ok(n)
        })
        .await
    }
}

fn read_line(r: &rusqlite::Row<'_>) -> Result<Line, rusqlite::Error> {
    let state: String = r.get(5)?;
    Ok(Line {
        key: r.get(0)?,
        route: r.get(1)?,
        model: r.get(2)?,
        body: r.get(3)?,
        meta: r.get(4)?,
        state: LineState::parse(&state).unwrap_or(LineState::Queued),
        batch: r.get(6)?,
        attempts: r.get::<_, i64>(7)? as u32,
    })
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Seconds since the epoch, for the flush policy's age of the oldest queued line.
pub(crate) fn now_secs() -> f64 {
    unix_now()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(key: &str) -> Line {
        Line {
            key: key.into(),
            route: "r".into(),
            model: "m".into(),
            body: "x".repeat(2_000),
            meta: "{}".into(),
            state: LineState::Queued,
            batch: None,
            attempts: 0,
        }
    }

    /// A journal of a few pages, closed (its WAL checkpointed into the file).
    async fn written(path: &Path) {
        let j = Journal::open(path).expect("open");
        for i in 0..20 {
            j.enqueue(line(&format!("k{i}")), "g".into())
                .await
                .expect("enqueue");
        }
        drop(j);
    }

    /// Overwrites every page after the first: the schema still reads, the tables do not.
    fn damage(path: &Path) {
        let mut bytes = std::fs::read(path).expect("read");
        assert!(bytes.len() > 8_192, "more than two pages: {}", bytes.len());
        for (i, b) in bytes.iter_mut().enumerate().skip(4_096) {
            *b = (i % 251) as u8;
        }
        std::fs::write(path, bytes).expect("write");
    }

    #[tokio::test]
    async fn a_damaged_journal_is_refused_at_open_naming_the_file_and_the_way_out() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("batches.db");
        written(&path).await;
        damage(&path);
        let err = Journal::open(&path).err().expect("refused");
        assert!(matches!(err, BatchError::Unreadable { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains("move it aside"), "{msg}");
        // Not a database at all: the same.
        std::fs::write(&path, b"this is not a database, not even close ..........").expect("w");
        let err = Journal::open(&path).err().expect("refused");
        assert!(matches!(err, BatchError::Unreadable { .. }), "{err}");
    }

    #[tokio::test]
    async fn a_read_only_journal_reads_without_writing_and_names_damage_when_read() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("batches.db");
        written(&path).await;
        // A journal left in rollback mode: a reader must not turn it to WAL.
        Connection::open(&path)
            .and_then(|c| c.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(())))
            .expect("rollback mode");
        let before = std::fs::read(&path).expect("read");
        let counts = Journal::open_read_only(&path)
            .expect("open")
            .counts()
            .await
            .expect("counts");
        assert_eq!(counts.queued, 20);
        assert_eq!(std::fs::read(&path).expect("read"), before, "unchanged");
        damage(&path);
        let err = Journal::open_read_only(&path)
            .expect("opening reads no table")
            .counts()
            .await
            .expect_err("damage seen");
        assert!(matches!(err, BatchError::Unreadable { .. }), "{err}");
    }
}
