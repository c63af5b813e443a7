//! `sleuth sweep status DIR`: where a sweep stands, read from its run directory alone — while it runs
//! (the store is in WAL mode, so reading never blocks the run) or after.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::SweepError;
use sleuth_store::{
    GameRow, GameState, RunDir, RunRecord, SqliteStore, Store, SweepRecord, TotalsRow,
};

/// A sweep's state, as `sweep status` prints it.
#[derive(Debug, Clone)]
pub struct SweepStatusReport {
    pub sweep: SweepRecord,
    /// Whether a process holds the run directory now.
    pub running: bool,
    pub runs: Vec<RunRecord>,
    pub games: Vec<GameRow>,
    pub totals: Vec<TotalsRow>,
    /// The batch journal's counts, when the sweep batches evaluation.
    pub batch: Option<sleuth_llm::batch::JournalCounts>,
    /// Why the batch journal could not be read (it names the file and what to do): printed as a
    /// line of the report, because the store's progress is still worth reading without it.
    pub journal_problem: Option<String>,
    /// What the calls answered in batches would have cost live (the sweep's prices).
    pub batch_live_usd: f64,
}

/// Reads the status of the sweep in `dir` (the only one there, or the last one recorded).
pub async fn status(dir: &Path) -> Result<SweepStatusReport, SweepError> {
    let dir = RunDir::new(dir);
    let db = dir.store();
    if !db.is_file() {
        return Err(SweepError::Io(format!(
            "{} is not a sweep's run directory (no {})",
            dir.root().display(),
            RunDir::STORE_FILE
        )));
    }
    let store = SqliteStore::open(&db)?;
    let sweep = store
        .sweeps()
        .await?
        .pop()
        .ok_or_else(|| SweepError::Io(format!("{} records no sweep", db.display())))?;
    let running = dir.is_locked();
    let (batch, journal_problem) = match journal_counts(&dir.journal()).await {
        Ok(counts) => (counts, None),
        Err(e) => (None, Some(e.to_string())),
    };
    let totals = store.totals(&sweep.id).await?;
    let batch_live_usd = live_price_of_batches(&sweep, &totals);
    Ok(SweepStatusReport {
        runs: store.runs(&sweep.id).await?,
        games: store.games(&sweep.id).await?,
        totals,
        sweep,
        running,
        batch,
        journal_problem,
        batch_live_usd,
    })
}

/// The batch journal's counts, if the run directory has one. Read-only: `status` runs beside a
/// `sweep run` that writes the journal, and a reader must neither change the file (its journal
/// mode, its schema) nor take a write lock on it.
async fn journal_counts(
    path: &Path,
) -> Result<Option<sleuth_llm::batch::JournalCounts>, sleuth_llm::batch::BatchError> {
    if !path.is_file() {
        return Ok(None);
    }
    let journal = sleuth_llm::batch::Journal::open_read_only(path)?;
    Ok(Some(journal.counts().await?))
}

/// What the ledger's batch answers would have cost as live calls, at the prices the sweep's file
/// gives (its models table over the built-in table): the saving is this less what they cost.
fn live_price_of_batches(sweep: &SweepRecord, totals: &[TotalsRow]) -> f64 {
    let pricing = super::models::prices_of_text(Some(&sweep.text));
    totals
        .iter()
        .filter(|t| t.source == "batch")
        .map(|t| {
            pricing.cost(
                &t.model,
                &sleuth_llm::TokenUsage {
                    prompt_tokens: t.prompt_tokens,
                    completion_tokens: t.completion_tokens,
                    cached_tokens: t.cached_tokens,
                },
            )
        })
        .fold(0.0, |s, c| s + c)
}

/// Sums of the ledger.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sums {
    pub live: u64,
    /// Calls answered in a provider's batch (paid, at the batch price).
    pub batch: u64,
    pub cache: u64,
    pub retries: u64,
    pub prompt: u64,
    pub completion: u64,
    pub cached: u64,
    pub usd: f64,
}

impl Sums {
    fn add(&mut self, t: &TotalsRow) {
        match t.source.as_str() {
            "live" => {
                self.live += t.calls;
                self.prompt += t.prompt_tokens;
                self.completion += t.completion_tokens;
                self.cached += t.cached_tokens;
                self.usd += t.cost_usd;
            }
            "batch" => {
                self.batch += t.calls;
                self.prompt += t.prompt_tokens;
                self.completion += t.completion_tokens;
                self.cached += t.cached_tokens;
                self.usd += t.cost_usd;
            }
            "cache" => self.cache += t.calls,
            _ => self.retries += t.calls,
        }
    }
}

impl SweepStatusReport {
    /// The ledger summed, in all and by model.
    pub fn sums(&self) -> (Sums, BTreeMap<String, Sums>) {
        let mut all = Sums::default();
        let mut by_model: BTreeMap<String, Sums> = BTreeMap::new();
        for t in &self.totals {
            all.add(t);
            by_model.entry(t.model.clone()).or_default().add(t);
        }
        (all, by_model)
    }

    /// Games by state.
    pub fn count(&self, state: GameState) -> usize {
        self.games.iter().filter(|g| g.state == state).count()
    }

    /// The report as text.
    pub fn render(&self) -> String {
        let mut o = String::new();
        let s = &self.sweep;
        let state = if self.running {
            "running now".to_string()
        } else if s.status == sleuth_store::SweepStatus::Running {
            "not running (its last run ended without a word: killed?) — `sweep run` continues it"
                .to_string()
        } else {
            s.status.to_string()
        };
        let _ = writeln!(o, "sweep {} — {state}", s.name);
        if let Some(note) = &s.note {
            let _ = writeln!(o, "  last: {note}");
        }
        if let Some(r) = self.runs.last() {
            let _ = writeln!(
                o,
                "  runs: {} (last {} on {}, pid {}, started {}{})",
                self.runs.len(),
                r.id,
                r.host,
                r.pid,
                r.started_at,
                r.outcome
                    .as_ref()
                    .map(|x| format!(", {x}"))
                    .unwrap_or_default()
            );
        }
        let waiting = match self.count(GameState::EvaluatingBatch) {
            0 => String::new(),
            n => format!(" · {n} evaluating (batch)"),
        };
        let _ = writeln!(
            o,
            "games: {} · {} done · {} failed · {} running · {} interrupted · {} pending{waiting}",
            self.games.len(),
            self.count(GameState::Done),
            self.count(GameState::Failed),
            self.count(GameState::Running),
            self.count(GameState::Interrupted),
            self.count(GameState::Pending),
        );
        let (all, by_model) = self.sums();
        let calls = all.live + all.cache;
        let share = if calls > 0 {
            100.0 * all.cache as f64 / calls as f64
        } else {
            0.0
        };
        let _ = writeln!(
            o,
            "calls: {} live · {} from the cache ({share:.1}%) · {} failed attempts retried",
            all.live, all.cache, all.retries
        );
        let _ = writeln!(
            o,
            "tokens paid: {} prompt ({} provider-cached) · {} completion",
            all.prompt, all.cached, all.completion
        );
        let budget = match (s.max_usd, s.max_tokens) {
            (None, None) => String::new(),
            (u, t) => format!(
                " (budget:{}{})",
                u.map(|u| format!(" ${u}")).unwrap_or_default(),
                t.map(|t| format!(" {t} tokens")).unwrap_or_default()
            ),
        };
        let _ = writeln!(o, "spent: ${:.4}{budget}", all.usd);
        if let Some(b) = &self.batch {
            let batch_usd: f64 = self
                .totals
                .iter()
                .filter(|t| t.source == "batch")
                .fold(0.0, |s, t| s + t.cost_usd);
            let _ = writeln!(
                o,
                "batches: {} submitted ({} open) · lines: {} answered, {} waiting ({} queued), {} failed in a batch and retried · {} games waiting",
                b.batches,
                b.open_batches,
                b.answered,
                b.queued + b.submitted,
                b.queued,
                b.line_failures,
                b.waiting_games,
            );
            let _ = writeln!(
                o,
                "batch answers: {} calls, ${batch_usd:.4} paid, ${:.4} live — saved ${:.4}",
                all.batch,
                self.batch_live_usd,
                self.batch_live_usd - batch_usd
            );
        }
        if let Some(problem) = &self.journal_problem {
            let _ = writeln!(o, "batches: not shown — {problem}");
        }
        if !by_model.is_empty() {
            let _ = writeln!(
                o,
                "\n{:<24} {:>9} {:>9} {:>9} {:>8} {:>12} {:>12} {:>10}",
                "model", "live", "batch", "cache", "retries", "prompt", "completion", "USD"
            );
            for (m, x) in &by_model {
                let _ = writeln!(
                    o,
                    "{:<24} {:>9} {:>9} {:>9} {:>8} {:>12} {:>12} {:>10.4}",
                    m, x.live, x.batch, x.cache, x.retries, x.prompt, x.completion, x.usd
                );
            }
        }
        let failed: Vec<&GameRow> = self
            .games
            .iter()
            .filter(|g| g.state == GameState::Failed)
            .collect();
        if !failed.is_empty() {
            let _ = writeln!(
                o,
                "\nfailed games (`sweep run --retry-failed` plays them again):"
            );
            for g in failed {
                let _ = writeln!(
                    o,
                    "  {} [{}] {} repeat {}: {} (stage {})",
                    &g.id[..12.min(g.id.len())],
                    g.arm_label,
                    g.script,
                    g.repeat,
                    g.reason.as_deref().unwrap_or("-"),
                    g.stage.as_deref().unwrap_or("-")
                );
            }
        }
        o
    }
}
