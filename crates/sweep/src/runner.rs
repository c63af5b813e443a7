//! `sleuth sweep run`: a sweep end to end on this node.
//!
//! 1. The file is planned and checked, keys and prompt templates included — nothing runs, and nothing
//!    is spent, until everything that can be checked has been.
//! 2. The run directory is locked (one process per directory) and its store opened; the plan's games
//!    are added to it (existing ones keep their state).
//! 3. The queue is every game not done — pending, interrupted, or left `running` by a process that
//!    died — and, with `--retry-failed`, the failed ones.
//! 4. A node is assembled (`node::assemble`: the layered gateway with its cache in the store, a
//!    budget that counts what earlier runs spent, limits, ledger) and the scheduler plays the queue.
//! 5. At the end the ledger is flushed and the sweep's status set: finished, stopped or
//!    budget-stopped, with what was spent.
//!
//! A shutdown ([`Shutdown`], Ctrl-C or SIGTERM in the CLI) drains the run: no new game starts and
//! those in flight finish; asked for "now", those in flight are marked interrupted (they continue
//! from the cache next run). Either way the run then ends as above, with its ledger flushed.
//!
//! A game's files are in the run directory (`sleuth_store::rundir`), its result also in the store.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures::future::BoxFuture;
use ractor::{Actor, ActorRef};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::file::{LoadedSweep, SweepFile};
use super::models;
use super::node::{self, AssembledNode, NodeSetup};
use super::plan::Plan;
use super::progress::Progress;
use super::runtime::{load_prompts, RuntimeParts, SweepRuntime};
use super::scheduler::{
    Counters, GameOutcome, GamePlayer, RunEnd, Scheduler, SchedulerArgs, SchedulerMsg, StopReason,
};
use super::SweepError;
use sleuth_base::shutdown::Shutdown;
use sleuth_base::telemetry as tm;
use sleuth_llm::batch::BatchQueue;
use sleuth_llm::{Budget, BudgetLimits, Ledger, Spent};
use sleuth_store::{
    CallSource, GameState, RunDir, RunRecord, SqliteStore, StateCounts, Store, SweepStatus,
};

/// How to run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Games in flight; the file's `concurrency`, else 64.
    pub concurrency: Option<usize>,
    /// Play failed games again.
    pub retry_failed: bool,
    /// Show a live progress display (on a terminal) or log lines (otherwise).
    pub progress: bool,
    /// How to seat the people an arm's `human` asks for (`seats.rs`); `None`: such games fail with
    /// the reason.
    pub seating: Option<crate::seats::Seating>,
}

/// How a run ended, with the sweep's state after it.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub out: PathBuf,
    pub sweep: String,
    pub run: String,
    pub end: RunEnd,
    /// Games queued by this run.
    pub queued: usize,
    /// The sweep's games by state after the run.
    pub counts: StateCounts,
    /// What the whole sweep has paid so far (live calls of every run).
    pub spent: Spent,
    /// Live calls, cache hits and failed attempts of this run.
    pub live_calls: u64,
    pub cache_hits: u64,
    pub retries: u64,
    pub gateway_restarts: u64,
}

/// Plays the plan's games for the scheduler.
struct Player(Arc<SweepRuntime>);

impl GamePlayer for Player {
    fn play(&self, game: usize) -> BoxFuture<'static, GameOutcome> {
        let rt = self.0.clone();
        Box::pin(async move { rt.play(game).await })
    }
    fn id(&self, game: usize) -> &str {
        &self.0.plan().games[game].id
    }
}

/// Runs the sweep in `path` to its end (see the module documentation).
pub async fn run(path: &Path, opts: RunOptions) -> Result<RunReport, SweepError> {
    run_with(path, opts, Shutdown::new()).await
}

/// [`run`], stopped by `shutdown` (the CLI's Ctrl-C and SIGTERM; tests and embedding programs).
pub async fn run_with(
    path: &Path,
    opts: RunOptions,
    shutdown: Shutdown,
) -> Result<RunReport, SweepError> {
    let plan = Arc::new(Plan::build(LoadedSweep::load(path)?)?);
    models::check_keys(&plan)?;
    let prompts = load_prompts(&plan)?;
    let dir = RunDir::new(plan.sweep.out_dir());
    let _lock = dir.lock()?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&dir.store())?);
    let sweep_id = plan.sweep.file.name.clone();
    let states = register(&plan, store.as_ref()).await?;
    // Evaluation through batches: the journal beside the store, opened before anything is queued.
    let batch = match plan.uses_batch() {
        true => Some(
            BatchQueue::open(&dir.journal(), plan.sweep.file.batch.settings())
                .map_err(|e| SweepError::Setup(e.to_string()))?,
        ),
        false => None,
    };
    let (queue, waiting) = queue_games(
        &plan,
        &states,
        batch.as_ref().map(|(q, _)| q),
        opts.retry_failed,
    )
    .await;
    let queued = queue.len() + waiting.len();
    let run_id = start_run(store.as_ref(), &sweep_id).await?;
    let concurrency = opts
        .concurrency
        .or(plan.sweep.file.concurrency)
        .unwrap_or(64)
        .max(1);
    let (already, budget) = sweep_budget(&plan, store.as_ref(), &sweep_id).await?;
    let (batch_queue, ready) = batch.unzip();
    let node = node::assemble(
        &plan,
        NodeSetup {
            store: store.clone(),
            budget: budget.clone(),
            shared: None,
            batch: batch_queue.clone(),
            // Entries the store does not take during an outage wait beside the sweep's output, and
            // are replayed when it answers again — or by the next run of the sweep.
            ledger_spill: Some(dir.ledger_spill()),
        },
    )
    .await?;
    let runtime = Arc::new(SweepRuntime::new(RuntimeParts {
        plan: plan.clone(),
        prompts,
        store: store.clone(),
        gateway: node.handle.gateway.clone(),
        out: dir.root().to_path_buf(),
        sweep: sweep_id.clone(),
        run: run_id.clone(),
        call_concurrency: game_call_bound(&plan.sweep.file, concurrency),
        batch: batch_queue.clone(),
        seating: opts.seating,
    }));
    let counters = Arc::new(Counters::default());
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let (scheduler, _) = Actor::spawn_linked(
        None,
        Scheduler,
        SchedulerArgs {
            queue,
            concurrency,
            player: Arc::new(Player(runtime.clone())),
            store: store.clone(),
            counters: counters.clone(),
            budget: budget.as_ref().map(|b| b.exhausted()),
            done: done_tx,
            waiting,
            batch: batch_queue,
        },
        node.handle.actor.get_cell(),
    )
    .await
    .map_err(|e| SweepError::Setup(format!("cannot start the scheduler: {e}")))?;

    // The run's own helpers end with it (`ended`), never by abort.
    let ended = Shutdown::new();
    let helpers = [
        ready.map(|r| forward_ready(r, runtime, scheduler.clone(), ended.clone())),
        Some(stop_on_shutdown(
            shutdown.clone(),
            scheduler.clone(),
            ended.clone(),
        )),
    ];
    let progress = Progress::start(
        sweep_id.clone(),
        queued as u64,
        counters.clone(),
        node.ledger.tally().clone(),
        opts.progress,
    );
    let AssembledNode {
        handle,
        ledger,
        batch_worker,
    } = node;
    let end = tokio::select! {
        end = done_rx => end.map_err(|_| SweepError::Setup("the scheduler stopped without a word".into())),
        lost = handle.scheduler_lost => Err(SweepError::Setup(format!(
            "the scheduler died: {}",
            lost.unwrap_or_else(|_| "unknown".into())
        ))),
    };
    progress.finish();
    ended.now();
    for h in helpers.into_iter().flatten() {
        let _ = h.await;
    }
    // The batch worker finishes its round and closes; the ledger writes what it holds.
    if let Some(w) = batch_worker {
        w.stop().await;
    }
    ledger.flush().await;
    let gateway_restarts = node::restarts(&handle.actor).await;
    handle.actor.stop(None);

    let counts = store.state_counts(&sweep_id).await?;
    let spent = budget
        .as_ref()
        .map(|b| b.spent())
        .unwrap_or_else(|| spent_with(already, &ledger));
    record_end(store.as_ref(), &sweep_id, &run_id, &end, &counts, spent).await?;
    let end = end?;
    let t = ledger.tally();
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    Ok(RunReport {
        out: dir.root().to_path_buf(),
        sweep: sweep_id,
        run: run_id,
        end,
        queued,
        counts,
        spent,
        live_calls: load(&t.live),
        cache_hits: load(&t.cache),
        retries: load(&t.retries),
        gateway_restarts,
    })
}

/// Records the sweep (running) and its games in the store, and reads back every game's state: a
/// sweep run again continues the one it started.
async fn register(
    plan: &Plan,
    store: &dyn Store,
) -> Result<HashMap<String, GameState>, SweepError> {
    let sweep_id = &plan.sweep.file.name;
    store.open_sweep(&plan.sweep_record()).await?;
    store
        .set_sweep_status(sweep_id, SweepStatus::Running, None)
        .await?;
    store.add_games(&plan.game_rows(sweep_id)).await?;
    Ok(store
        .games(sweep_id)
        .await?
        .into_iter()
        .map(|g| (g.id, g.state))
        .collect())
}

/// The games this run plays, by plan index, and those that wait on their batches.
async fn queue_games(
    plan: &Plan,
    states: &HashMap<String, GameState>,
    batch: Option<&Arc<BatchQueue>>,
    retry_failed: bool,
) -> (VecDeque<usize>, Vec<usize>) {
    let mut queue = VecDeque::new();
    let mut waiting = Vec::new();
    for (i, g) in plan.games.iter().enumerate() {
        match states.get(&g.id) {
            Some(GameState::Done) => {}
            Some(GameState::Failed) if !retry_failed => {}
            // A game a killed run left waiting goes on waiting (its batches are polled, not sent
            // again); one whose journal rows are gone is played again.
            Some(GameState::EvaluatingBatch) => match batch {
                Some(q) if q.journal().waits(g.id.clone()).await.unwrap_or(false) => {
                    waiting.push(i)
                }
                _ => queue.push_back(i),
            },
            _ => queue.push_back(i),
        }
    }
    (queue, waiting)
}

/// Records this run of the sweep; returns its id.
async fn start_run(store: &dyn Store, sweep_id: &str) -> Result<String, SweepError> {
    let run_id = format!(
        "{}-{}",
        chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ"),
        std::process::id()
    );
    store
        .start_run(&RunRecord {
            id: run_id.clone(),
            sweep: sweep_id.to_string(),
            started_at: sleuth_base::clock::now(),
            ended_at: None,
            outcome: None,
            pid: std::process::id(),
            host: sleuth_base::clock::hostname(),
        })
        .await?;
    Ok(run_id)
}

/// What earlier runs of the sweep paid, and the sweep's budget counting it (if the file sets one).
async fn sweep_budget(
    plan: &Plan,
    store: &dyn Store,
    sweep_id: &str,
) -> Result<(Spent, Option<Arc<Budget>>), SweepError> {
    let already = store
        .totals(sweep_id)
        .await?
        .iter()
        .filter(|t| t.source == CallSource::Live.as_str())
        .fold(Spent::default(), |s, t| Spent {
            usd: s.usd + t.cost_usd,
            tokens: s.tokens + t.prompt_tokens + t.completion_tokens,
        });
    let file = &plan.sweep.file;
    let limits = BudgetLimits {
        max_usd: file.budget.max_usd,
        max_tokens: file.budget.max_tokens,
    };
    let budget = (limits.max_usd.is_some() || limits.max_tokens.is_some())
        .then(|| Arc::new(Budget::new(limits, already)));
    if let Some(usd) = limits.max_usd {
        metrics::gauge!(tm::SWEEP_BUDGET_USD).set(usd);
    }
    Ok((already, budget))
}

/// Passes games whose batch calls are back to the scheduler, until the run ends.
fn forward_ready(
    mut ready: mpsc::UnboundedReceiver<String>,
    runtime: Arc<SweepRuntime>,
    scheduler: ActorRef<SchedulerMsg>,
    ended: Shutdown,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let id = tokio::select! {
                id = ready.recv() => id,
                _ = ended.draining() => None,
            };
            let Some(id) = id else { return };
            if let Some(game) = runtime.game_index(&id) {
                let _ = scheduler.send_message(SchedulerMsg::Ready { game });
            }
        }
    })
}

/// Turns the shutdown's drain and "now" into the scheduler's stops, until the run ends.
fn stop_on_shutdown(
    shutdown: Shutdown,
    scheduler: ActorRef<SchedulerMsg>,
    ended: Shutdown,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let stop = |now| {
            let _ = scheduler.send_message(SchedulerMsg::Stop {
                reason: StopReason::User,
                now,
            });
        };
        tokio::select! {
            _ = shutdown.draining() => stop(false),
            _ = ended.draining() => return,
        }
        tokio::select! {
            _ = shutdown.stopping_now() => stop(true),
            _ = ended.draining() => {}
        }
    })
}

/// Sets the sweep's status and note after a run, and ends the run's record.
async fn record_end(
    store: &dyn Store,
    sweep_id: &str,
    run_id: &str,
    end: &Result<RunEnd, SweepError>,
    counts: &StateCounts,
    spent: Spent,
) -> Result<(), SweepError> {
    let (status, outcome) = match end {
        Ok(RunEnd::Finished) => (SweepStatus::Finished, "finished".to_string()),
        Ok(RunEnd::Stopped(StopReason::User)) => (SweepStatus::Stopped, "stopped".to_string()),
        Ok(RunEnd::Stopped(StopReason::Budget)) => {
            (SweepStatus::BudgetStopped, "budget_stopped".to_string())
        }
        Err(e) => (SweepStatus::Stopped, format!("error: {e}")),
    };
    let waiting_note = match counts.get(GameState::EvaluatingBatch) {
        0 => String::new(),
        n => format!(", {n} evaluating (batch)"),
    };
    let note = format!(
        "{outcome}: spent ${:.4} and {} tokens in all; {} done, {} failed, {} interrupted, {} pending{waiting_note}",
        spent.usd,
        spent.tokens,
        counts.get(GameState::Done),
        counts.get(GameState::Failed),
        counts.get(GameState::Interrupted),
        counts.get(GameState::Pending) + counts.get(GameState::Running),
    );
    store.set_sweep_status(sweep_id, status, Some(note)).await?;
    store.end_run(run_id, &outcome).await?;
    Ok(())
}

/// What the sweep has paid: earlier runs' live calls and this run's.
fn spent_with(already: Spent, ledger: &Ledger) -> Spent {
    let t = ledger.tally();
    Spent {
        usd: already.usd + t.usd(),
        tokens: already.tokens
            + t.prompt_tokens.load(Ordering::Relaxed)
            + t.completion_tokens.load(Ordering::Relaxed),
    }
}

/// The bound on model calls in flight each game of the sweep gets: `[gateway] game_concurrency` when
/// set; otherwise, when every endpoint model has a `max_concurrency`, about twice each game's share
/// of the slots (all of them over the games in flight), between 2 and the game's default.
///
/// A game issues its independent calls together (evaluation asks every question of every character
/// at once), and a call that waits for an endpoint's slot holds its prompt and its request task while
/// it waits. With 5,000 games in flight sharing 1,000 slots a game gets 0.2 slots on average, and the
/// default bound of 16 let each hold a dozen waiting calls at its evaluation (issue 32: 400 KiB per
/// game at the high-water mark against 327 KiB with a bound of 2, the endpoint kept as busy). Two
/// keeps a next call ready whenever one returns. A sweep with an unbounded endpoint (or only the
/// simulated model) keeps the default: nothing waits there.
fn game_call_bound(file: &SweepFile, games_in_flight: usize) -> Option<usize> {
    if let Some(n) = file.gateway.game_concurrency {
        return Some(n);
    }
    let mut slots = 0usize;
    for m in file.models.values().filter(|m| m.provider != "simulated") {
        slots += m.max_concurrency? as usize;
    }
    if slots == 0 {
        return None;
    }
    let share = (2 * slots).div_ceil(games_in_flight.max(1));
    Some(share.clamp(2, sleuth_game::agent::DEFAULT_CALL_CONCURRENCY))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::ModelEntry;

    fn sweep(models: &[(&str, Option<u32>)], set: Option<usize>) -> SweepFile {
        let mut file = SweepFile::default();
        for (provider, max) in models {
            file.models.insert(
                format!("{provider}-{}", file.models.len()),
                ModelEntry {
                    provider: provider.to_string(),
                    max_concurrency: *max,
                    ..ModelEntry::default()
                },
            );
        }
        file.gateway.game_concurrency = set;
        file
    }

    #[test]
    fn a_game_gets_about_twice_its_share_of_the_endpoint_slots() {
        let one = sweep(&[("openai", Some(1000))], None);
        assert_eq!(game_call_bound(&one, 5000), Some(2), "0.2 slots a game: 2");
        assert_eq!(game_call_bound(&one, 300), Some(7), "3.3 slots a game: 7");
        assert_eq!(game_call_bound(&one, 10), Some(16), "capped at the default");
        let two = sweep(&[("openai", Some(300)), ("openai", Some(300))], None);
        assert_eq!(
            game_call_bound(&two, 200),
            Some(6),
            "slots of every endpoint model"
        );
    }

    #[test]
    fn a_set_bound_wins_and_an_unbounded_endpoint_keeps_the_default() {
        let set = sweep(&[("openai", Some(1000))], Some(9));
        assert_eq!(game_call_bound(&set, 5000), Some(9));
        let unbounded = sweep(&[("openai", Some(1000)), ("openai", None)], None);
        assert_eq!(game_call_bound(&unbounded, 5000), None);
        let simulated = sweep(&[("simulated", None)], None);
        assert_eq!(game_call_bound(&simulated, 5000), None);
    }
}
