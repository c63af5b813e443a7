//! The records a store holds. Plain data: every backend stores and returns exactly these.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Where a sweep stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepStatus {
    /// Some process is (or was, until it was killed) running it.
    Running,
    /// Every game is done or failed.
    Finished,
    /// Stopped by the user (Ctrl-C); running it again continues.
    Stopped,
    /// Stopped because the next call would have passed the budget.
    BudgetStopped,
    /// Cancelled (cluster): its remaining games are not played.
    Cancelled,
}

/// A game's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GameState {
    /// Not started, or to be started again.
    Pending,
    /// Started by a run (which may since have died: a new run takes it over).
    Running,
    /// Its result is written.
    Done,
    /// Gave up on, with a reason and a stage (`--retry-failed` plays it again).
    Failed,
    /// Stopped before the end by Ctrl-C or the budget; the next run continues it from the cache.
    Interrupted,
    /// Played; its evaluation waits on a batch (`llm::batch`): no actors, a few rows of the run's
    /// batch journal. Played again from the cache when the batch is back.
    EvaluatingBatch,
}

macro_rules! names {
    ($t:ty { $($v:ident => $s:literal),+ $(,)? }) => {
        impl $t {
            /// The name stored and printed.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$v => $s),+ }
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($s => Ok(Self::$v),)+
                    other => Err(format!("unknown {} `{other}`", stringify!($t))),
                }
            }
        }
    };
}

names!(SweepStatus {
    Running => "running",
    Finished => "finished",
    Stopped => "stopped",
    BudgetStopped => "budget_stopped",
    Cancelled => "cancelled",
});

names!(GameState {
    Pending => "pending",
    Running => "running",
    Done => "done",
    Failed => "failed",
    Interrupted => "interrupted",
    EvaluatingBatch => "evaluating_batch",
});

/// How a call in the ledger was served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallSource {
    /// Answered by the provider (billed).
    Live,
    /// An attempt that failed and was tried again (429, 5xx, timeout); providers bill none of these.
    Retry,
    /// Served from the cache: no tokens billed, $0.
    Cache,
    /// Answered in a provider's batch (billed at the batch price).
    Batch,
}

names!(CallSource {
    Live => "live",
    Retry => "retry",
    Cache => "cache",
    Batch => "batch",
});

/// What a cache entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheKind {
    Chat,
    Embedding,
}

names!(CacheKind {
    Chat => "chat",
    Embedding => "embedding",
});

/// A sweep as the store records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRecord {
    /// sha256 of the sweep's plan (its games' ids), hex: the same file planned the same way is the
    /// same sweep.
    pub id: String,
    pub name: String,
    /// The sweep file as the user named it.
    pub file: String,
    /// The sweep file's text when the sweep was first recorded.
    pub text: String,
    /// RFC 3339.
    pub created_at: String,
    pub status: SweepStatus,
    /// Why it stopped, what was spent.
    pub note: Option<String>,
    /// Budget: at most this many US dollars…
    pub max_usd: Option<f64>,
    /// …and this many tokens (prompt + completion).
    pub max_tokens: Option<u64>,
}

/// One process's run of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: String,
    pub sweep: String,
    /// RFC 3339.
    pub started_at: String,
    pub ended_at: Option<String>,
    /// `finished`, `stopped`, `budget_stopped`, `error: …`; `None` while running or when the process
    /// was killed.
    pub outcome: Option<String>,
    pub pid: u32,
    pub host: String,
}

/// One game of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GameRow {
    /// A hash of the game's spec and repeat (`sweep::plan`): the same game has the same id in every run.
    pub id: String,
    pub sweep: String,
    /// The arm's id (a hash of its settings) and its readable label.
    pub arm: String,
    pub arm_label: String,
    pub script: String,
    pub repeat: u32,
    pub seed: u64,
    /// The game's `GameSpec` as JSON.
    pub spec: String,
    pub state: GameState,
    /// Times a run started it.
    pub attempts: u32,
    /// Times its actors crashed.
    pub crashes: u32,
    /// Why it failed or was interrupted.
    pub reason: Option<String>,
    /// The stage it was in then.
    pub stage: Option<String>,
    /// RFC 3339, the last state change.
    pub updated_at: String,
}

/// Games of a sweep by state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateCounts(pub BTreeMap<GameState, u64>);

impl StateCounts {
    /// Games in `state`.
    pub fn get(&self, state: GameState) -> u64 {
        self.0.get(&state).copied().unwrap_or(0)
    }

    /// All games.
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }
}

/// One model call (or one failed attempt) in the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// The run that made it.
    pub run: String,
    pub sweep: String,
    pub game: String,
    pub arm: String,
    pub model: String,
    /// `gameplay`, `evaluation`, `generation`.
    pub phase: String,
    pub framework: String,
    pub purpose: String,
    pub source: CallSource,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Prompt tokens the provider served from its own prompt cache.
    pub cached_tokens: u64,
    /// What was paid: 0 for cache hits and retries.
    pub cost_usd: f64,
    /// The cache key (hex), tying a live call of one run to the cache hit of the next.
    pub key: Option<String>,
    /// How long the answered attempt of a live call took, from the request leaving to its answer
    /// read (ms); waits for a slot, the budget or the rate limit are not in it. `None` for what had
    /// no attempt of its own: cache hits, batch results and failed attempts (`retry` rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    /// Failed attempts retried before this call was answered (each is also a `retry` row of its
    /// own, as providers bill none of them), so that a call's row says what it took to get.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u32,
    /// A random name given when the entry is made, so that writing it again records it once. A
    /// write to Redis can be applied and its answer lost (the server stopping between the two); the
    /// writer then cannot tell it from a failed write and writes again, and the Redis store keeps
    /// each run's entry names to refuse the second. `None` where nothing can repeat (entries read
    /// back from SQLite, which does not keep the name, and entries made by hand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The ledger summed over one combination of model, phase, framework, arm and source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TotalsRow {
    pub model: String,
    pub phase: String,
    pub framework: String,
    pub arm: String,
    pub source: String,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
    pub cost_usd: f64,
}

/// A sweep's ledger summed by how calls were served: what was paid for and what the cache gave
/// back for free (a cluster's progress, a sweep's closing note).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SourceTotals {
    pub live_calls: u64,
    pub cache_hits: u64,
    /// Prompt and completion tokens of live calls.
    pub live_tokens: u64,
    pub live_usd: f64,
}

impl SourceTotals {
    /// The sums of `rows`.
    pub fn of(rows: &[TotalsRow]) -> SourceTotals {
        let mut t = SourceTotals::default();
        for r in rows {
            if r.source == CallSource::Live.as_str() {
                t.live_calls += r.calls;
                t.live_tokens += r.prompt_tokens + r.completion_tokens;
                t.live_usd += r.cost_usd;
            } else if r.source == CallSource::Cache.as_str() {
                t.cache_hits += r.calls;
            }
        }
        t
    }
}

/// One message of a request kept for readers ([`crate::Store::put_request`]), in the request's order.
/// Messages repeat from call to call (a character's script goes out with each of its calls), so a
/// message the store has kept before is named by the row the store answered for it, and only a new
/// one carries its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeptMessage {
    /// A message kept before: its row, as a `put_request` of this store answered it.
    Row(i64),
    /// A message not kept before: its SHA-256 and its compressed text.
    New([u8; 32], Vec<u8>),
    /// The same message as the one at this earlier position of the request.
    Same(usize),
}
