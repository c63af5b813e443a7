//! The store: everything a sweep keeps that must outlive the process — the sweep, its games and their
//! states, results, the content-addressed cache of model calls, and the ledger of every call.
//!
//! Layer 1 (docs/architecture.md, *Crates*): it depends on no sleuth crate; it knows rows and
//! files, never games, models or sweeps as types.
//!
//! One trait, [`Store`], with one implementation per place a sweep can live: [`SqliteStore`], a
//! SQLite file in the run directory (one node; users open it with `sqlite3` or pandas — the schema is
//! in `docs/sweeps.md`), and `RedisStore`, the shared state of a cluster (its key layout is in
//! `docs/cluster.md`). Both pass the same conformance suite
//! ([`conformance`]), so the scheduler, the gateway's cache and `sleuth sweep status` never know which
//! one they talk to. `RedisStore` is behind the `redis` feature (off by default; the cluster's crate
//! turns it on), so a build without the cluster compiles no Redis client.
//!
//! Every query of the SQLite file's schema is in this crate: the store's own operations, and
//! [`read`], the read-only [`StoreReader`] the viewer and the report open beside a running sweep.
//!
//! Writes are idempotent where a retry or a second delivery could repeat them: a result is written
//! once per game id (the first write wins and later ones report that it was already there), a cache
//! entry once per key, games once per id. That is what lets a killed sweep simply run again.

#[cfg(any(test, feature = "test-hooks"))]
pub mod conformance;
mod error;
#[cfg(feature = "redis")]
pub mod redis;
pub mod rundir;
mod sqlite;
mod types;

use futures::future::BoxFuture;

#[cfg(feature = "redis")]
pub use self::redis::RedisStore;
pub use error::StoreError;
pub use rundir::RunDir;
pub use sqlite::annotations;
pub use sqlite::bulk;
pub use sqlite::read;
pub use sqlite::read::StoreReader;
pub use sqlite::seats;
pub use sqlite::SqliteStore;
pub use types::{
    CacheKind, CallSource, GameRow, GameState, KeptMessage, LedgerEntry, RunRecord, SourceTotals,
    StateCounts, SweepRecord, SweepStatus, TotalsRow,
};

/// What a store operation resolves to.
pub type StoreFuture<'a, T> = BoxFuture<'a, Result<T, StoreError>>;

/// Where a sweep keeps its state (see the module documentation).
///
/// Every method is a single round trip that either happens completely or not at all, so a process
/// killed between two calls leaves a state the next run can read.
pub trait Store: Send + Sync {
    /// Records a sweep, or — when one with its id exists — leaves it as it is and returns it: a sweep
    /// run again continues the one it started.
    fn open_sweep<'a>(&'a self, sweep: &'a SweepRecord) -> StoreFuture<'a, SweepRecord>;
    /// The sweep with this id.
    fn sweep<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SweepRecord>>;
    /// Every sweep, oldest first.
    fn sweeps(&self) -> StoreFuture<'_, Vec<SweepRecord>>;
    /// Sets a sweep's status and note (why it stopped, what was spent).
    fn set_sweep_status<'a>(
        &'a self,
        id: &'a str,
        status: SweepStatus,
        note: Option<String>,
    ) -> StoreFuture<'a, ()>;

    /// Records one invocation of a sweep (a `sweep run` process, or a worker's lease of it).
    fn start_run<'a>(&'a self, run: &'a RunRecord) -> StoreFuture<'a, ()>;
    /// Marks a run finished with how it ended.
    fn end_run<'a>(&'a self, run: &'a str, outcome: &'a str) -> StoreFuture<'a, ()>;
    /// The runs of a sweep, oldest first.
    fn runs<'a>(&'a self, sweep: &'a str) -> StoreFuture<'a, Vec<RunRecord>>;

    /// Adds games that are not there yet (by id) as pending; returns how many were new.
    fn add_games<'a>(&'a self, games: &'a [GameRow]) -> StoreFuture<'a, usize>;
    /// The games of a sweep, in the order they were added.
    fn games<'a>(&'a self, sweep: &'a str) -> StoreFuture<'a, Vec<GameRow>>;
    /// One game.
    fn game<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<GameRow>>;
    /// Moves a game to `state`, with the failure's reason and stage when it failed or was interrupted.
    /// Starting a game (`Running`) counts an attempt. A game that is `Done` stays done: its result is
    /// written, and nothing may take that back.
    fn set_game_state<'a>(
        &'a self,
        id: &'a str,
        state: GameState,
        reason: Option<String>,
        stage: Option<String>,
    ) -> StoreFuture<'a, ()>;
    /// Counts a crash of the game's actors (the scheduler fails a game on its second).
    fn count_crash<'a>(&'a self, id: &'a str) -> StoreFuture<'a, u32>;
    /// Games of a sweep by state.
    fn state_counts<'a>(&'a self, sweep: &'a str) -> StoreFuture<'a, StateCounts>;

    /// Writes a game's result (its `result.json`) and marks the game done, atomically. Idempotent by
    /// game id: the first write wins; `false` means a result was already there and nothing changed.
    fn put_result<'a>(&'a self, game: &'a str, result_json: &'a str) -> StoreFuture<'a, bool>;
    /// Whether a game's transcript is written into the store with its result
    /// ([`Store::put_result_with_transcript`]): a store that nodes share without a shared disk (a
    /// cluster's Redis) keeps it; the embedded store leaves transcripts as files in the run directory.
    fn keeps_transcripts(&self) -> bool {
        false
    }
    /// [`Store::put_result`] with the game's transcript (JSONL), for stores that keep transcripts: written in
    /// the same atomic step and only with the first result, so a game played twice keeps the
    /// transcript of the play whose result was kept. Other stores write the result alone.
    fn put_result_with_transcript<'a>(
        &'a self,
        game: &'a str,
        result_json: &'a str,
        transcript: &'a str,
    ) -> StoreFuture<'a, bool> {
        let _ = transcript;
        self.put_result(game, result_json)
    }
    /// A game's result.
    fn result<'a>(&'a self, game: &'a str) -> StoreFuture<'a, Option<String>>;

    /// A cached reply by key (the sha256 of the call, see `llm::gateway::cache`).
    fn cache_get<'a>(&'a self, key: &'a [u8; 32]) -> StoreFuture<'a, Option<Vec<u8>>>;
    /// Stores a reply under its key together with the ledger entries of the call that produced it, in
    /// one write, durably before it returns: a reply never reaches an agent before it can be replayed,
    /// and a call paid for is never missing from the ledger of a process killed just after. Idempotent
    /// for the cache: a key already present keeps its first value (the entries are still recorded).
    fn cache_put<'a>(
        &'a self,
        key: &'a [u8; 32],
        kind: CacheKind,
        model: &'a str,
        value: &'a [u8],
        ledger: &'a [LedgerEntry],
    ) -> StoreFuture<'a, ()>;
    /// Whether [`Store::put_request`] keeps anything: a caller asks before it compresses a request's
    /// messages for a store that would drop them.
    fn keeps_requests(&self) -> bool {
        false
    }
    /// Keeps a chat call's request, for readers: its record, and its messages, each either the row of
    /// one kept before or a new one's hash and compressed text (`llm::gateway::requests`). Answers the
    /// rows of the request's messages, in order, so that the caller names them by row next time. A
    /// request already kept keeps its first record. Stores that keep no requests answer no rows
    /// without writing: the request is never needed to play or replay a game. The embedded store keeps
    /// them; the cluster's Redis store does not (see its module documentation).
    ///
    /// The embedded store appends: the request under the ledger row of the call that stored the
    /// answer under `key` (`cache_put` notes it), the new messages under new rows, so that a call's
    /// writes land in the tables' last pages rather than in random leaves of b-trees keyed by hashes
    /// (issue 32: keeping requests that way was a quarter of a sweep's CPU per call). A request with
    /// no such row (a batch call kept when it is queued, before its answer) is kept under its key.
    fn put_request<'a>(
        &'a self,
        key: &'a [u8; 32],
        record: &'a [u8],
        messages: &'a [KeptMessage],
    ) -> StoreFuture<'a, Vec<i64>> {
        let _ = (key, record, messages);
        Box::pin(async { Ok(Vec::new()) })
    }
    /// [`Store::cache_put`] and [`Store::put_request`] of one live call, in one write where the store
    /// can: the answer, its ledger entries and the call's request, committed together before it
    /// returns. The request is kept on a best-effort basis: one that cannot be written is left out
    /// (`None`) and the answer is stored all the same; `Some` holds its messages' rows, as
    /// `put_request` answers them. An error means the answer was not stored.
    ///
    /// Why one write: a sweep's calls each wrote twice, the second write only to find the ledger row
    /// the first had just made (issue 32). By default the two writes are made one after the other.
    #[allow(clippy::too_many_arguments)]
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
        Box::pin(async move {
            self.cache_put(key, kind, model, value, ledger).await?;
            Ok(self.put_request(key, record, messages).await.ok())
        })
    }
    /// Entries in the cache.
    fn cache_len(&self) -> StoreFuture<'_, u64>;

    /// Appends calls to the ledger.
    fn record_calls<'a>(&'a self, entries: &'a [LedgerEntry]) -> StoreFuture<'a, ()>;
    /// The ledger of a sweep summed by model, phase, framework, arm and source.
    fn totals<'a>(&'a self, sweep: &'a str) -> StoreFuture<'a, Vec<TotalsRow>>;
    /// The ledger entries of one run (what one process paid for and what it was served).
    fn ledger<'a>(&'a self, run: &'a str) -> StoreFuture<'a, Vec<LedgerEntry>>;

    /// How many reads the gateway's cache should send this store at once: more wait their turn as
    /// cheap futures. A store whose reads past some number cost more than they gain (SQLite opens a
    /// connection for each read past its pool) says so here; a server that answers many clients at
    /// once (Redis, over one multiplexed connection) takes many.
    fn max_parallel_lookups(&self) -> usize;
}
