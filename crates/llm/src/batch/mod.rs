//! Evaluation through a provider's batch interface (OpenAI's Batch API), at its discount.
//!
//! Evaluation calls do not depend on the game going on — only on the game that was played — and
//! providers price such calls at half when they may answer within 24 hours. A model with `batch =
//! true` (a sweep's models table, `sleuth play --batch-eval`) has its **evaluation** calls sent that
//! way; play calls stay live.
//!
//! How a game waits without being held: an evaluation call the cache cannot answer is not sent; the
//! gateway writes it to the [`journal`] (its request body, as a live call would have sent it, keyed
//! by its cache key) and answers the caller `LlmError::Deferred`. The game's evaluation fails on
//! it, the game ends `evaluating_batch`, and its actors are gone: what it waits on is a few journal
//! rows. The worker (`batch_worker.rs`) puts queued lines into batch files (by route, when enough wait or the oldest
//! has waited long enough, or at once when no game is left that could add to them), submits them,
//! polls, and lands each answer in the content-addressed cache with its ledger entry (source
//! `batch`, at the batch price). A game whose calls are all answered is played again: its play
//! replays from the cache at no cost, its evaluation finds the answers, and either finishes or
//! defers its next step (ThinkThrice's refine after a draft, a judge after an answer) into the next
//! batch. So each step of evaluation is one batch across every game waiting at that step.
//!
//! Exactly once: the journal holds a batch (`submitting`) before it is uploaded, and sends sleuth's
//! own id as the batch's metadata; a run that died before learning the provider's id finds it in
//! the provider's list instead of submitting again. A line is answered once its answer is in the
//! cache. Lines a batch did not answer (a per-line error, an expired or failed batch) are retried
//! live or in another batch ([`OnFailure`]), and counted; none is dropped.

pub mod journal;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, Notify};

pub use crate::provider::batch as api;
pub use crate::provider::{BatchEndpoint, RemoteBatch};
pub use journal::{Journal, JournalCounts, LineState};

use crate::provider::Provider;
use crate::types::{CallScope, CallTags, ChatRequest};
use sleuth_base::telemetry as tm;

/// Why batching could not go on.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BatchError {
    /// A journal operation failed (the message names the file).
    #[error("batch journal {0}")]
    Journal(String),
    /// SQLite says the journal is damaged or is not a database. The message names the file and the
    /// way out, because a user meeting it can do nothing else with it: the journal holds only this
    /// node's batch bookkeeping, so moving it aside loses no answer (those are in the store's cache)
    /// — only the batches still open at the provider, whose lines are sent again.
    #[error(
        "the batch journal {} is unreadable ({detail}). It holds only this run directory's batch \
         bookkeeping: move it aside (`mv {} {}.damaged`, and its -wal and -shm files if there are \
         any) and run the sweep again. Answers already landed are kept (they are in the store's \
         cache); games waiting on batches are played again from the cache, and their evaluation \
         calls still unanswered go into new batches — batches still open at the provider are not \
         collected, so their lines are sent (and paid) again",
        path.display(),
        path.display(),
        path.display()
    )]
    Unreadable { path: PathBuf, detail: String },
}

/// What becomes of a line its batch did not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// The call is made live the next time the game asks for it (the default: the answer comes
    /// now, at the live price).
    #[default]
    Live,
    /// The call goes into another batch, up to [`BatchSettings::max_attempts`] batches, then live.
    Batch,
}

/// The batching policy (a sweep's `[batch]` section; `docs/sweeps.md`).
#[derive(Debug, Clone, PartialEq)]
pub struct BatchSettings {
    /// A route's queued calls are flushed into a batch when this many wait…
    pub flush_calls: usize,
    /// …or when the oldest has waited this long (or at once when no game is left to add to them).
    pub flush_after: Duration,
    /// How often open batches are asked how they are.
    pub poll_every: Duration,
    /// OpenAI's limits of one input file: requests, and bytes.
    pub max_file_requests: usize,
    pub max_file_bytes: usize,
    pub on_failure: OnFailure,
    /// Batches a line may be in before it is made live.
    pub max_attempts: u32,
}

impl Default for BatchSettings {
    fn default() -> Self {
        BatchSettings {
            flush_calls: 5_000,
            flush_after: Duration::from_secs(60),
            poll_every: Duration::from_secs(30),
            max_file_requests: 50_000,
            // OpenAI's 200 MB, less room for the lines' framing.
            max_file_bytes: 190_000_000,
            on_failure: OnFailure::Live,
            max_attempts: 3,
        }
    }
}

/// What a deferred call records beside its body, to account for its answer when it lands.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LineMeta {
    pub game: String,
    pub agent: String,
    pub framework: String,
    pub phase: String,
    pub purpose: String,
    pub sweep: String,
    pub run: String,
    pub arm: String,
    pub max_tokens: u32,
}

/// What the gateway does with an evaluation call the cache could not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deferral {
    /// It waits in (or for) a batch: the caller is told `LlmError::Deferred`.
    Deferred,
    /// As `Deferred`, and the call entered the journal just now (the first time it was asked; a
    /// waiting game's replays find it already there): what is done once per call is done then.
    Queued,
    /// It is made live now (its batch failed it, and the settings say so).
    Live,
}

/// The batching of one run: the journal, the policy, and the channel on which games whose calls are
/// answered are announced.
pub struct BatchQueue {
    journal: Journal,
    settings: BatchSettings,
    /// Wakes the worker: a line was queued, or the run went idle.
    pub(crate) wake: Notify,
    /// No game is playing: what is queued will not grow, so it is flushed now.
    idle: AtomicBool,
    pub(crate) ready: mpsc::UnboundedSender<String>,
}

/// Games whose calls have all come back, by id.
pub type ReadyGames = mpsc::UnboundedReceiver<String>;

impl BatchQueue {
    /// The queue of the journal at `path`, and where its ready games are announced.
    pub fn open(
        path: &std::path::Path,
        settings: BatchSettings,
    ) -> Result<(Arc<BatchQueue>, ReadyGames), BatchError> {
        let journal = Journal::open(path)?;
        let (tx, rx) = mpsc::unbounded_channel();
        Ok((
            Arc::new(BatchQueue {
                journal,
                settings,
                wake: Notify::new(),
                idle: AtomicBool::new(false),
                ready: tx,
            }),
            rx,
        ))
    }

    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    pub fn settings(&self) -> &BatchSettings {
        &self.settings
    }

    /// Whether the run has no game playing (queued lines are flushed at once while it has none).
    pub fn set_idle(&self, idle: bool) {
        self.idle.store(idle, Ordering::Relaxed);
        if idle {
            self.wake.notify_one();
        }
    }

    pub(crate) fn is_idle(&self) -> bool {
        self.idle.load(Ordering::Relaxed)
    }

    /// Asks the worker to look again now (a game just began to wait: it may be ready already).
    pub fn nudge(&self) {
        self.wake.notify_one();
    }

    /// Decides what becomes of an evaluation call of `route` the cache could not answer (see the
    /// module documentation); `key` is its cache key.
    /// `provider` and `endpoint` are the call's route (`gateway::Route`): the provider builds the
    /// line's body, and the endpoint with `model_id` names the batch it may join ([`route_id`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn defer(
        &self,
        provider: &dyn Provider,
        endpoint: &str,
        model_id: &str,
        req: &ChatRequest,
        tags: &CallTags,
        scope: &CallScope,
        key: &[u8; 32],
    ) -> Result<Deferral, BatchError> {
        let hex = hex::encode(key);
        let game = tags.game.clone();
        match self.journal.line(hex.clone()).await? {
            Some(line) => match line.state {
                LineState::Queued | LineState::Submitted => {
                    self.journal.enqueue(line, game).await?;
                    Ok(Deferral::Deferred)
                }
                LineState::Failed
                    if self.settings.on_failure == OnFailure::Batch
                        && line.attempts < self.settings.max_attempts =>
                {
                    self.journal.requeue(hex, game).await?;
                    metrics::counter!(tm::BATCH_LINES, "model" => req.model.clone(), "outcome" => "retried_batch")
                        .increment(1);
                    self.wake.notify_one();
                    Ok(Deferral::Deferred)
                }
                LineState::Failed => {
                    self.journal.set_line_state(hex, LineState::Live).await?;
                    metrics::counter!(tm::BATCH_LINES, "model" => req.model.clone(), "outcome" => "retried_live")
                        .increment(1);
                    Ok(Deferral::Live)
                }
                // Answered but not in the cache (a store that lost it), or given up on: live.
                LineState::Answered | LineState::Live => Ok(Deferral::Live),
            },
            None => {
                let with_id = ChatRequest {
                    model: model_id.to_string(),
                    ..req.clone()
                };
                let Some(body) = provider.batch_body(&with_id) else {
                    return Ok(Deferral::Live);
                };
                let meta = LineMeta {
                    game: tags.game.clone(),
                    agent: tags.agent.clone(),
                    framework: tags.framework.clone(),
                    phase: tags.phase.as_str().to_string(),
                    purpose: tags.purpose.clone(),
                    sweep: scope.sweep.clone(),
                    run: scope.run.clone(),
                    arm: scope.arm.clone(),
                    max_tokens: req.max_tokens,
                };
                let line = journal::Line {
                    key: hex,
                    route: route_id(endpoint, model_id),
                    model: req.model.clone(),
                    body: body.to_string(),
                    meta: serde_json::to_string(&meta).unwrap_or_default(),
                    state: LineState::Queued,
                    batch: None,
                    attempts: 0,
                };
                self.journal.enqueue(line, game).await?;
                metrics::counter!(tm::BATCH_LINES, "model" => req.model.clone(), "outcome" => "deferred")
                    .increment(1);
                self.wake.notify_one();
                Ok(Deferral::Queued)
            }
        }
    }
}

/// A batch holds the lines of one endpoint and model id: never two models.
pub fn route_id(endpoint: &str, model_id: &str) -> String {
    format!("{endpoint}|{model_id}")
}
