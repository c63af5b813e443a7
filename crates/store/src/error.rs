//! Why the store could not do what was asked: one error type for every backend, so callers tell a
//! lost connection from a corrupt row the same way whichever store they hold.

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store's file or server could not be opened.
    #[error("cannot open the store at {at}: {message}")]
    Open { at: String, message: String },
    /// The backend refused an operation (a disk full, a broken file, a lost connection).
    #[error("store: {0}")]
    Backend(String),
    /// A read-only reader's query failed (`sqlite::read`: the viewer, the report): a table missing
    /// from a file that is not a store, a lock held past the busy timeout, a broken page. `at` is the
    /// file and `message` SQLite's own words, kept apart so a caller can show them in its own terms.
    #[error("reading the store at {at}: {message}")]
    Read { at: String, message: String },
    /// A row the store holds does not read back (a value written by a newer sleuth, a hand edit).
    #[error("store: unreadable {what}: {message}")]
    Corrupt { what: String, message: String },
    /// The store was shut down (its writer stopped) while a request was pending.
    #[error("store: closed")]
    Closed,
    /// A Redis server refused an operation or could not be reached. `at` is its URL and `message`
    /// the client's error, both with the password replaced by `***`: store errors end up on
    /// terminals and in logs, credentials must not. `transient` says whether trying again later can
    /// succeed (a lost connection, a timeout, a server loading or failing over), so a worker can tell
    /// a blip from a misconfiguration.
    #[error("store: redis at {at}: {message}")]
    Redis {
        at: String,
        message: String,
        transient: bool,
    },
    /// A file of the run directory could not be created, opened or locked.
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    /// What was to be created exists already (an annotation campaign of the same id): refused
    /// rather than overwritten, since what it holds may be people's work.
    #[error("{0}")]
    Conflict(String),
    /// What was named does not exist (a campaign, an item, an annotator): the caller's mistake, not
    /// the store's, so it can be shown to whoever named it.
    #[error("{0}")]
    NotFound(String),
    /// Another process holds the run directory.
    #[error("the run directory {dir} is in use by another sleuth process (lock file {lock})")]
    Locked { dir: String, lock: String },
}
