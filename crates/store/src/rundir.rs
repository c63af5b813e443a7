//! The run directory: the one place that knows which files a sweep's output holds and where.
//!
//! ```text
//! DIR/sleuth.db               the embedded store (sweeps, games, results, cache, ledger, requests)
//! DIR/.lock                   held by the one process running the directory's sweeps
//! DIR/.running                held by that process too: what readers probe (never `.lock`)
//! DIR/batches.db              the batch journal, when a model's evaluation goes through batches
//! DIR/ledger.spill.jsonl      ledger entries the store did not take during an outage
//! DIR/games/<id>/transcript.jsonl
//! DIR/games/<id>/result.json
//! DIR/report/                 what `sleuth report` writes
//! ```
//!
//! `sleuth play --out DIR` writes one game's `transcript.jsonl` and `result.json` straight into `DIR`
//! ([`RunDir::game_files`] of a single game). Sweeps, the report, the viewer and the cluster's CLI
//! find every file through this module, so its layout can change in one place.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::StoreError;

/// A game's transcript file name.
pub const TRANSCRIPT_FILE: &str = "transcript.jsonl";
/// A game's result file name.
pub const RESULT_FILE: &str = "result.json";

/// A run directory (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDir {
    root: PathBuf,
}

/// Where one game's files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameFiles {
    pub dir: PathBuf,
    pub transcript: PathBuf,
    pub result: PathBuf,
}

impl GameFiles {
    /// The files of a game written straight into `dir` (`sleuth play --out DIR`).
    pub fn in_dir(dir: &Path) -> GameFiles {
        GameFiles {
            dir: dir.to_path_buf(),
            transcript: dir.join(TRANSCRIPT_FILE),
            result: dir.join(RESULT_FILE),
        }
    }
}

impl RunDir {
    pub const STORE_FILE: &'static str = "sleuth.db";
    pub const LOCK_FILE: &'static str = ".lock";
    pub const RUNNING_FILE: &'static str = ".running";
    pub const JOURNAL_FILE: &'static str = "batches.db";
    pub const SPILL_FILE: &'static str = "ledger.spill.jsonl";
    pub const GAMES_DIR: &'static str = "games";
    pub const REPORT_DIR: &'static str = "report";

    pub fn new(root: impl Into<PathBuf>) -> RunDir {
        RunDir { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The embedded store's file.
    pub fn store(&self) -> PathBuf {
        self.root.join(Self::STORE_FILE)
    }

    /// Whether the directory has a store (is a sweep's output, not only a game's).
    pub fn has_store(&self) -> bool {
        self.store().is_file()
    }

    /// The writers' lock: only a process that runs the directory's sweeps ever locks it.
    pub fn lock_file(&self) -> PathBuf {
        self.root.join(Self::LOCK_FILE)
    }

    /// The file whose lock says "a writer is running": held exclusively by the process holding
    /// [`RunDir::lock_file`], probed by readers ([`RunDir::is_locked`]).
    pub fn running_file(&self) -> PathBuf {
        self.root.join(Self::RUNNING_FILE)
    }

    /// The batch journal's file.
    pub fn journal(&self) -> PathBuf {
        self.root.join(Self::JOURNAL_FILE)
    }

    /// Where ledger entries wait while the store does not take them.
    pub fn ledger_spill(&self) -> PathBuf {
        self.root.join(Self::SPILL_FILE)
    }

    /// The directory holding every game's directory.
    pub fn games(&self) -> PathBuf {
        self.root.join(Self::GAMES_DIR)
    }

    /// The files of the game with this id. Ids come from the plan or the store; a reader that takes
    /// one from outside checks it first ([`is_game_id`]).
    pub fn game(&self, id: &str) -> GameFiles {
        GameFiles::in_dir(&self.games().join(id))
    }

    /// Where `sleuth report` writes by default.
    pub fn report(&self) -> PathBuf {
        self.root.join(Self::REPORT_DIR)
    }

    /// Creates the directory if needed and takes its lock: one process at a time runs a
    /// directory's sweeps. The lock is released when the returned value is dropped, or when the
    /// process dies (which is why a lock on a file, not a PID file).
    ///
    /// Two files, because readers must never make a writer fail. `.lock` is the writers' own: a
    /// non-blocking exclusive lock, refused ([`StoreError::Locked`]) only when another writer holds
    /// it. A reader that asked "is a writer running?" by trying that lock would hold it for the
    /// instant of its question, and a `sweep run` starting in that instant would be refused (the
    /// viewer asks every second). So the writer also holds `.running` exclusively, and readers
    /// probe only that file with a shared lock ([`RunDir::is_locked`]). A probe can still hold
    /// `.running` for an instant; the writer — already alone, by `.lock` — waits that instant out
    /// (a few retries, [`RUNNING_WAIT`] at most) instead of failing, and if a reader were to hold it
    /// longer (stopped mid-probe), the writer runs anyway and readers see it as not running: a
    /// wrong status line, never a refused run.
    pub fn lock(&self) -> Result<DirLock, StoreError> {
        std::fs::create_dir_all(&self.root).map_err(|e| StoreError::Io {
            path: self.root.display().to_string(),
            message: format!("cannot create: {e}"),
        })?;
        let path = self.lock_file();
        let file = open_lock_file(&path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(StoreError::Locked {
                    dir: self.root.display().to_string(),
                    lock: path.display().to_string(),
                })
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(StoreError::Io {
                    path: path.display().to_string(),
                    message: format!("cannot lock: {e}"),
                })
            }
        }
        let running = self.hold_running();
        Ok(DirLock {
            _running: running,
            _file: file,
        })
    }

    /// Takes `.running` exclusively for the writer that holds `.lock`, waiting out readers' probes
    /// (see [`RunDir::lock`]); `None` if it cannot, which only hides the run from readers.
    fn hold_running(&self) -> Option<File> {
        let path = self.running_file();
        let file = match open_lock_file(&path) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!("{e}: readers will not see this run as running");
                return None;
            }
        };
        let deadline = std::time::Instant::now() + RUNNING_WAIT;
        loop {
            match file.try_lock() {
                Ok(()) => return Some(file),
                Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Err(e) => {
                    tracing::warn!(
                        "{}: cannot lock ({e}): readers will not see this run as running",
                        path.display()
                    );
                    return None;
                }
            }
        }
    }

    /// Whether a process runs the directory's sweeps now. Readers (`sweep status`, the viewer, every
    /// second) ask this; it never touches the writers' `.lock`: it tries a shared lock on
    /// `.running`, which the writer holds exclusively while it runs, and lets go at once. The file is
    /// opened read-only, so a reader needs no write access to the directory.
    pub fn is_locked(&self) -> bool {
        File::open(self.running_file())
            .ok()
            .is_some_and(|f| matches!(f.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock)))
    }
}

/// How long a starting writer waits for readers' probes of `.running` to let go (they hold it for
/// the microseconds of one system call).
pub const RUNNING_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether `id` is a game id as plans make them (ASCII letters, digits, `-` and `_`, at most 128
/// characters), and so names a directory inside `games/`: a reader that takes an id from outside (a
/// URL) checks it with this before it touches a path.
pub fn is_game_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn open_lock_file(path: &Path) -> Result<File, StoreError> {
    File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| StoreError::Io {
            path: path.display().to_string(),
            message: format!("cannot open: {e}"),
        })
}

/// The run directory's lock, held while alive (see [`RunDir::lock`]).
pub struct DirLock {
    /// `.running`, which readers probe; `None` if it could not be taken (see [`RunDir::lock`]).
    /// Declared first so it is let go first: the next writer, once it has `.lock`, finds it free.
    _running: Option<File>,
    _file: File,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_and_seen_from_outside() {
        let dir = tempfile::tempdir().expect("dir");
        let run = RunDir::new(dir.path().join("run"));
        assert!(!run.is_locked());
        let held = run.lock().expect("first lock");
        assert!(run.is_locked());
        let err = run.lock().err().expect("second lock refused");
        assert!(matches!(err, StoreError::Locked { .. }), "{err}");
        drop(held);
        assert!(!run.is_locked());
    }

    /// Readers asking "is a writer running?" as fast as they can never make a writer's lock fail
    /// (they used to try the writers' own lock: a writer starting in that instant was refused).
    #[test]
    fn readers_polling_never_make_a_writer_fail() {
        let dir = tempfile::tempdir().expect("dir");
        let run = RunDir::new(dir.path().join("run"));
        drop(run.lock().expect("creates the files"));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let (run, stop) = (run.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut seen = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    seen += u64::from(run.is_locked());
                }
                seen
            })
        };
        let mut refused = 0;
        for _ in 0..2_000 {
            match run.lock() {
                Ok(held) => {
                    assert!(run.is_locked(), "a held lock is seen");
                    drop(held);
                }
                Err(_) => refused += 1,
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        reader.join().expect("reader");
        assert_eq!(refused, 0, "writers refused while readers polled");
    }

    #[test]
    fn game_ids_cannot_leave_the_games_directory() {
        assert!(is_game_id("papers-thinkthrice-glasshouse-r0"));
        for bad in ["", "..", "../x", "a/b", ".hidden", "a\\b", "é"] {
            assert!(!is_game_id(bad), "{bad:?}");
        }
    }
}
