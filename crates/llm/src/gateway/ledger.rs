//! Where every call's record goes: the store's ledger, by sweep, run, game, arm, model, phase,
//! framework and source (live, retry, cache).
//!
//! A live call's entry is written together with its cache entry (one durable write, see
//! `cache.rs`), so a process killed right after a call never loses what it paid. Everything else —
//! cache hits, failed attempts, and live calls when the cache is off — goes through [`Ledger`], a
//! task that writes in batches and is flushed when the run ends. Losing its last batch to a SIGKILL
//! loses only records of calls that cost nothing (hits and retries) or, with the cache off, whose
//! answers are lost anyway. A live call whose write with its cache entry fails (a cluster's Redis
//! restarting) is handed to [`Ledger`] instead.
//!
//! **A store that does not answer.** The writer retries a batch with the one backoff
//! ([`sleuth_base::backoff`]) while the store's error is transient, for [`LedgerOptions::give_up_after`]
//! (60 s by default). Then it does not drop the batch: it appends it to a local spill file (JSON
//! lines, [`LedgerOptions::spill`]), and while that file holds entries, later batches that fail go
//! there at once (the store is known to be away). Every [`LedgerOptions::replay_every`], after every
//! batch the store takes, and before answering a flush (unless the flush's own batch has just failed),
//! the writer replays the file into the store and empties it; a replay cut short by a new failure
//! keeps what was not written, and the next timed replay waits the one backoff (up to 5 s) so that a
//! store that is away is not asked again and again while records and flushes wait behind it; queued
//! records and flushes always go before a timed replay. The file is
//! replayed when a ledger starts too, so entries left by a run killed during an outage reach the store
//! with the next run of the sweep (a sweep's runner keeps its file in the sweep's output directory).
//! [`Ledger::flush`] says how many entries are still only in the file, so the end of a run can say so
//! instead of losing them silently.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use sleuth_store::{CallSource, LedgerEntry, Store};

pub use crate::types::CallScope;

/// Running totals of the calls a gateway made, for a live display: live calls, cache hits, failed
/// attempts, tokens and dollars paid.
#[derive(Debug, Default)]
pub struct CallTally {
    pub live: AtomicU64,
    pub cache: AtomicU64,
    pub retries: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub completion_tokens: AtomicU64,
    /// Paid, in micro-dollars.
    pub cost_microusd: AtomicU64,
    /// Answers landed from batches (their tokens and cost are counted above, at the batch price).
    pub batch: AtomicU64,
}

impl CallTally {
    /// Counts one ledger entry.
    pub fn count(&self, e: &LedgerEntry) {
        let n = match e.source {
            CallSource::Live => &self.live,
            CallSource::Cache => &self.cache,
            CallSource::Retry => &self.retries,
            CallSource::Batch => &self.batch,
        };
        n.fetch_add(1, Ordering::Relaxed);
        if matches!(e.source, CallSource::Live | CallSource::Batch) {
            self.prompt_tokens
                .fetch_add(e.prompt_tokens, Ordering::Relaxed);
            self.completion_tokens
                .fetch_add(e.completion_tokens, Ordering::Relaxed);
            self.cost_microusd
                .fetch_add((e.cost_usd * 1e6).round() as u64, Ordering::Relaxed);
        }
    }

    /// Paid so far, in US dollars.
    pub fn usd(&self) -> f64 {
        self.cost_microusd.load(Ordering::Relaxed) as f64 / 1e6
    }
}

enum Msg {
    Record(Box<LedgerEntry>),
    /// Answered with the entries still only in the spill file.
    Flush(oneshot::Sender<usize>),
}

/// How the ledger's writer deals with a store that does not answer (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerOptions {
    /// How long a batch is retried while the store's error is transient before it is spilled.
    pub give_up_after: Duration,
    /// Where entries the store did not take wait (JSON lines), replayed when it answers.
    pub spill: PathBuf,
    /// How often spilled entries are tried again.
    pub replay_every: Duration,
}

impl LedgerOptions {
    /// The defaults with the spill file at `spill`.
    pub fn spilling_to(spill: PathBuf) -> LedgerOptions {
        LedgerOptions {
            give_up_after: Duration::from_secs(60),
            spill,
            replay_every: Duration::from_secs(5),
        }
    }
}

impl Default for LedgerOptions {
    /// A spill file of this process in the temporary directory: replayed while the process lives.
    fn default() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("sleuth-ledger-{}-{n}.spill.jsonl", std::process::id());
        LedgerOptions::spilling_to(std::env::temp_dir().join(name))
    }
}

/// A handle to the ledger writer task.
#[derive(Clone)]
pub struct Ledger {
    tx: mpsc::UnboundedSender<Msg>,
    store: Arc<dyn Store>,
    tally: Arc<CallTally>,
}

/// Entries written per batch at most.
const BATCH: usize = 4_096;

impl Ledger {
    /// Starts the writer task on `store`, spilling to a file of this process in the temporary
    /// directory ([`LedgerOptions::default`]).
    pub fn start(store: Arc<dyn Store>) -> Ledger {
        Ledger::start_with(store, LedgerOptions::default())
    }

    /// Starts the writer task on `store` with `options`; entries a spill file already holds (a run
    /// killed during an outage) are replayed first.
    pub fn start_with(store: Arc<dyn Store>, options: LedgerOptions) -> Ledger {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(write_loop(store.clone(), options, rx));
        Ledger {
            tx,
            store,
            tally: Arc::default(),
        }
    }

    /// Queues an entry (and counts it).
    pub fn record(&self, entry: LedgerEntry) {
        self.tally.count(&entry);
        let _ = self.tx.send(Msg::Record(Box::new(entry)));
    }

    /// Counts an entry written elsewhere (with its cache entry).
    pub fn count(&self, entry: &LedgerEntry) {
        self.tally.count(entry);
    }

    /// Queues an entry already counted: one whose write with its cache entry failed, so that a call
    /// paid for still reaches the ledger once the store answers again.
    pub fn write_counted(&self, entry: LedgerEntry) {
        let _ = self.tx.send(Msg::Record(Box::new(entry)));
    }

    /// The running totals.
    pub fn tally(&self) -> &Arc<CallTally> {
        &self.tally
    }

    /// Waits until everything queued so far is written to the store or spilled to the local file;
    /// returns how many entries are only in the file (0: all in the store). The wait is bounded by
    /// the give-up time of a batch; a writer that still does not answer is warned about.
    pub async fn flush(&self) -> usize {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Msg::Flush(tx)).is_err() {
            return 0;
        }
        match tokio::time::timeout(FLUSH_WAIT, rx).await {
            Ok(Ok(spilled)) => {
                if spilled > 0 {
                    tracing::warn!(entries = spilled, "ledger: the store did not take every entry; they wait in the spill file and are replayed when it answers (or by the next run)");
                }
                spilled
            }
            Ok(Err(_)) => 0,
            Err(_) => {
                tracing::warn!("ledger: the writer did not finish within {FLUSH_WAIT:?}; entries queued now may be unwritten");
                0
            }
        }
    }

    /// The store it writes to.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }
}

/// The longest [`Ledger::flush`] waits: a batch's default give-up time and a margin.
const FLUSH_WAIT: Duration = Duration::from_secs(180);

/// The pause between tries of a batch: the one backoff, from 100 ms up to 5 s.
const PAUSE: sleuth_base::backoff::Backoff =
    sleuth_base::backoff::Backoff::new(Duration::from_millis(100), Duration::from_secs(5));

/// Writes a batch, retrying while the store's error is transient, for at most `give_up_after`
/// (zero: one try); `false` when the store did not take it.
async fn write_batch(store: &dyn Store, batch: &[LedgerEntry], give_up_after: Duration) -> bool {
    let started = std::time::Instant::now();
    let mut n = 0;
    loop {
        match store.record_calls(batch).await {
            Ok(()) => return true,
            Err(sleuth_store::StoreError::Redis {
                transient: true, ..
            }) if started.elapsed() < give_up_after => {
                tokio::time::sleep(PAUSE.delay(n)).await;
                n += 1;
            }
            Err(e) => {
                tracing::warn!(error = %e, entries = batch.len(), "ledger: the store did not take a batch; it goes to the spill file");
                return false;
            }
        }
    }
}

/// The spill file and how many entries it holds.
struct Spill {
    path: PathBuf,
    pending: usize,
}

impl Spill {
    /// The file at `path`, counting what an earlier run left in it.
    fn open(path: PathBuf) -> Spill {
        let pending = read_spill(&path).len();
        Spill { path, pending }
    }

    /// Appends `batch`; an entry that cannot be written even here is warned about (it is lost).
    fn append(&mut self, batch: &[LedgerEntry]) {
        let written = (|| -> std::io::Result<()> {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)?;
            let mut text = String::new();
            for e in batch {
                text.push_str(&serde_json::to_string(e).map_err(std::io::Error::other)?);
                text.push('\n');
            }
            f.write_all(text.as_bytes())?;
            f.sync_data()
        })();
        match written {
            Ok(()) => {
                self.pending += batch.len();
                tracing::warn!(entries = batch.len(), file = %self.path.display(), "ledger: entries spilled to the local file until the store answers");
            }
            Err(e) => {
                tracing::error!(error = %e, entries = batch.len(), file = %self.path.display(), "ledger: cannot write the spill file; these calls are missing from the ledger")
            }
        }
    }

    /// Writes what the file holds to the store, one try per batch; keeps what was not written.
    /// `false` when the store refused a batch (it is still away).
    async fn replay(&mut self, store: &dyn Store) -> bool {
        if self.pending == 0 {
            return true;
        }
        let entries = read_spill(&self.path);
        let mut done = 0;
        let mut answered = true;
        for chunk in entries.chunks(BATCH) {
            if store.record_calls(chunk).await.is_err() {
                answered = false;
                break;
            }
            done += chunk.len();
        }
        if done == 0 && !entries.is_empty() {
            return answered;
        }
        let left = &entries[done..];
        let kept = if left.is_empty() {
            std::fs::remove_file(&self.path).or_else(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    Ok(())
                } else {
                    Err(e)
                }
            })
        } else {
            rewrite_spill(&self.path, left)
        };
        match kept {
            Ok(()) => {
                tracing::info!(
                    written = done,
                    left = left.len(),
                    "ledger: spilled entries replayed into the store"
                );
                self.pending = left.len();
            }
            // The store has them now; a file that cannot be emptied would replay them twice.
            Err(e) => {
                tracing::error!(error = %e, file = %self.path.display(), "ledger: replayed entries could not be removed from the spill file; remove it by hand");
                self.pending = 0;
            }
        }
        answered
    }
}

/// When the next timed replay of the spill file is due: `every` after one the store took, the one
/// backoff (at least `every`) after one it refused, so a store that is away is not retried back to
/// back while records and flushes queue behind the writer.
struct ReplayClock {
    every: Duration,
    refused: u32,
    next: tokio::time::Instant,
}

impl ReplayClock {
    fn new(every: Duration) -> ReplayClock {
        ReplayClock {
            every,
            refused: 0,
            next: tokio::time::Instant::now() + every,
        }
    }

    /// Sets the next replay after one that the store `answered` (or not).
    fn after(&mut self, answered: bool) {
        let wait = if answered {
            self.refused = 0;
            self.every
        } else {
            self.refused = self.refused.saturating_add(1);
            self.every.max(PAUSE.delay(self.refused - 1))
        };
        self.next = tokio::time::Instant::now() + wait;
    }
}

/// The entries of a spill file (none when it is missing); unreadable lines are warned about.
fn read_spill(path: &Path) -> Vec<LedgerEntry> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| match serde_json::from_str(l) {
            Ok(e) => Some(e),
            Err(e) => {
                tracing::warn!(error = %e, file = %path.display(), "ledger: an unreadable line of the spill file is skipped");
                None
            }
        })
        .collect()
}

/// Replaces the spill file with `entries`, whole or not at all.
fn rewrite_spill(path: &Path, entries: &[LedgerEntry]) -> std::io::Result<()> {
    let mut text = String::new();
    for e in entries {
        text.push_str(&serde_json::to_string(e).map_err(std::io::Error::other)?);
        text.push('\n');
    }
    sleuth_base::fs::write_atomic(path, text.as_bytes())
}

async fn write_loop(
    store: Arc<dyn Store>,
    options: LedgerOptions,
    mut rx: mpsc::UnboundedReceiver<Msg>,
) {
    let mut spill = Spill::open(options.spill.clone());
    let mut clock = ReplayClock::new(options.replay_every);
    clock.after(spill.replay(store.as_ref()).await);
    let mut batch = Vec::new();
    let mut flushes = Vec::new();
    loop {
        let first = tokio::select! {
            // What is queued goes before a timed replay.
            biased;
            m = rx.recv() => match m {
                Some(m) => m,
                None => break,
            },
            _ = tokio::time::sleep_until(clock.next), if spill.pending > 0 => {
                clock.after(spill.replay(store.as_ref()).await);
                continue;
            }
        };
        let mut next = Some(first);
        while let Some(m) = next.take() {
            match m {
                Msg::Record(e) => batch.push(*e),
                Msg::Flush(done) => flushes.push(done),
            }
            if batch.len() >= BATCH {
                break;
            }
            next = rx.try_recv().ok();
        }
        // Whether the store has just refused this batch: a flush then answers without asking again.
        let mut refused = false;
        if !batch.is_empty() {
            // While entries wait in the file the store is known to be away: one try, then there.
            let patience = if spill.pending > 0 {
                Duration::ZERO
            } else {
                options.give_up_after
            };
            if write_batch(store.as_ref(), &batch, patience).await {
                clock.after(spill.replay(store.as_ref()).await);
            } else {
                spill.append(&batch);
                clock.after(false);
                refused = true;
            }
            batch.clear();
        }
        if !flushes.is_empty() && !refused {
            clock.after(spill.replay(store.as_ref()).await);
        }
        for done in flushes.drain(..) {
            let _ = done.send(spill.pending);
        }
    }
    spill.replay(store.as_ref()).await;
}
