//! Where every call's record goes: the store's ledger, by sweep, run, game, arm, model, phase,
//! framework and source (live, retry, cache).
//!
//! A live call's entry is written together with its cache entry (one durable write, see
//! `cache.rs`), so a process killed right after a call never loses what it paid. Everything else —
//! cache hits, failed attempts, and live calls when the cache is off — goes through [`Ledger`], a
//! task that writes in batches and is flushed when the run ends. Losing its last batch to a SIGKILL
//! loses only records of calls that cost nothing (hits and retries) or, with the cache off, whose
//! answers are lost anyway. A live call whose write with its cache entry fails (a cluster's Redis
//! restarting) is handed to [`Ledger`] instead, whose writer retries a batch while the store's error
//! is transient: a call paid for reaches the ledger once the store answers again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::llm::types::{CallTags, TokenUsage};
use crate::store::{CallSource, LedgerEntry, Store};

/// Who a gateway handle calls for: the sweep, the run and the arm of a game. Attached to the handle a
/// game gets ([`super::Gateway::scoped`]), so agents and judges need not know about sweeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallScope {
    pub sweep: String,
    pub run: String,
    pub arm: String,
}

impl CallScope {
    /// The ledger entry of one call.
    pub fn entry(
        &self,
        tags: &CallTags,
        model: &str,
        source: CallSource,
        tokens: TokenUsage,
        cost_usd: f64,
        key: Option<&[u8; 32]>,
    ) -> LedgerEntry {
        LedgerEntry {
            run: self.run.clone(),
            sweep: self.sweep.clone(),
            game: tags.game.clone(),
            arm: self.arm.clone(),
            model: model.to_string(),
            phase: tags.phase.as_str().to_string(),
            framework: tags.framework.clone(),
            purpose: tags.purpose.clone(),
            source,
            prompt_tokens: tokens.prompt_tokens,
            completion_tokens: tokens.completion_tokens,
            cached_tokens: tokens.cached_tokens,
            cost_usd,
            key: key.map(hex::encode),
        }
    }
}

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
}

impl CallTally {
    /// Counts one ledger entry.
    pub fn count(&self, e: &LedgerEntry) {
        let n = match e.source {
            CallSource::Live => &self.live,
            CallSource::Cache => &self.cache,
            CallSource::Retry => &self.retries,
        };
        n.fetch_add(1, Ordering::Relaxed);
        if e.source == CallSource::Live {
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
    Flush(oneshot::Sender<()>),
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
    /// Starts the writer task on `store`.
    pub fn start(store: Arc<dyn Store>) -> Ledger {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(write_loop(store.clone(), rx));
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

    /// Waits until everything queued so far is written.
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Msg::Flush(tx)).is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(30), rx).await;
        }
    }

    /// The store it writes to.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }
}

/// How long a batch is retried while the store is unreachable (a Redis restart) before it is given up.
const RETRY_FOR: Duration = Duration::from_secs(60);

/// Writes a batch, retrying with a doubling pause while the store's error is transient: the calls
/// in it were paid for, and a cluster's Redis may be restarting.
async fn write_batch(store: &dyn Store, batch: &[LedgerEntry]) {
    let started = std::time::Instant::now();
    let mut wait = Duration::from_millis(100);
    loop {
        match store.record_calls(batch).await {
            Ok(()) => return,
            Err(crate::store::StoreError::Redis {
                transient: true, ..
            }) if started.elapsed() < RETRY_FOR => {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(5));
            }
            Err(e) => {
                tracing::warn!(error = %e, entries = batch.len(), "ledger: could not record calls");
                return;
            }
        }
    }
}

async fn write_loop(store: Arc<dyn Store>, mut rx: mpsc::UnboundedReceiver<Msg>) {
    let mut batch = Vec::new();
    let mut flushes = Vec::new();
    while let Some(first) = rx.recv().await {
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
        if !batch.is_empty() {
            write_batch(store.as_ref(), &batch).await;
            batch.clear();
        }
        for done in flushes.drain(..) {
            let _ = done.send(());
        }
    }
}
