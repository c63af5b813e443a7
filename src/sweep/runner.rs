//! `sleuth sweep run`: a sweep end to end on this node.
//!
//! 1. The file is planned and checked, keys and prompt templates included — nothing runs, and nothing
//!    is spent, until everything that can be checked has been.
//! 2. The run directory is locked (one process per directory) and its store opened; the plan's games
//!    are added to it (existing ones keep their state).
//! 3. The queue is every game not done — pending, interrupted, or left `running` by a process that
//!    died — and, with `--retry-failed`, the failed ones.
//! 4. A node supervisor starts the layered gateway (cache in the store, budget with what earlier runs
//!    spent, limits, ledger) and the scheduler plays the queue.
//! 5. At the end the ledger is flushed and the sweep's status set: finished, stopped or
//!    budget-stopped, with what was spent.
//!
//! A game's files are `DIR/games/<id>/transcript.jsonl` and `result.json` (written to a temporary file
//! and renamed, so a result is whole or absent), and its result is also in the store.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use ractor::Actor;
use tokio::sync::oneshot;

use super::file::LoadedSweep;
use super::models;
use super::node::{self, Node};
use super::plan::Plan;
use super::progress::Progress;
use super::scheduler::{
    Counters, GameOutcome, GamePlayer, RunEnd, Scheduler, SchedulerArgs, SchedulerMsg, StopReason,
};
use super::SweepError;
use crate::agent::{AgentError, Prompts};
use crate::game::{self, GameConfig, GameError};
use crate::llm::batch::{spawn_worker, BatchQueue, WorkerParts, JOURNAL_FILE};
use crate::llm::{
    Budget, BudgetLimits, CallScope, Gateway, GatewayConfig, GatewayParts, GatewayState, Ledger,
    LlmError, Spent,
};
use crate::store::{
    CallSource, GameRow, GameState, RunRecord, SqliteStore, StateCounts, Store, SweepRecord,
    SweepStatus,
};
use crate::telemetry as tm;

/// The store's file in a run directory.
pub const STORE_FILE: &str = "sleuth.db";
/// The lock file in a run directory.
pub const LOCK_FILE: &str = ".lock";

/// How to run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Games in flight; the file's `concurrency`, else 64.
    pub concurrency: Option<usize>,
    /// Play failed games again.
    pub retry_failed: bool,
    /// Show a live progress display (on a terminal) or log lines (otherwise).
    pub progress: bool,
    /// Stop on Ctrl-C (the CLI); tests stop runs through [`RunControl`].
    pub handle_ctrl_c: bool,
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

/// Stops a run from outside (what Ctrl-C does).
#[derive(Clone)]
pub struct RunControl {
    tx: tokio::sync::mpsc::UnboundedSender<bool>,
}

impl RunControl {
    /// Stops starting games; with `now`, also gives up on those in flight.
    pub fn stop(&self, now: bool) {
        let _ = self.tx.send(now);
    }
}

/// Holds the run directory: an exclusive lock on `DIR/.lock`, released when dropped (or when the
/// process dies, which is why a lock file and not a PID file).
struct DirLock {
    _file: File,
}

fn lock_dir(out: &Path) -> Result<DirLock, SweepError> {
    let path = out.join(LOCK_FILE);
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| SweepError::Io(format!("cannot open {}: {e}", path.display())))?;
    match file.try_lock() {
        Ok(()) => Ok(DirLock { _file: file }),
        Err(std::fs::TryLockError::WouldBlock) => Err(crate::store::StoreError::Locked {
            dir: out.display().to_string(),
            lock: path.display().to_string(),
        }
        .into()),
        Err(std::fs::TryLockError::Error(e)) => Err(SweepError::Io(format!(
            "cannot lock {}: {e}",
            path.display()
        ))),
    }
}

pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A game's prompt templates, by framework.
pub(crate) type GamePrompts = Arc<BTreeMap<&'static str, Arc<Prompts>>>;

/// The prompts of every distinct (script, frameworks, language, templates) of the plan, loaded before
/// anything runs so a broken template fails first; by game.
pub(crate) fn load_prompts(plan: &Plan) -> Result<Vec<GamePrompts>, SweepError> {
    let mut loaded: HashMap<String, GamePrompts> = HashMap::new();
    let mut out = Vec::with_capacity(plan.games.len());
    for g in &plan.games {
        let script = &plan.scripts[g.script].script;
        let config = g.spec.config();
        let key = format!(
            "{}|{:?}|{:?}|{:?}",
            g.script,
            config.frameworks(),
            config.language,
            config.prompts_dir
        );
        let p = match loaded.get(&key) {
            Some(p) => p.clone(),
            None => {
                let p = Arc::new(game::load_all_prompts(script, &config).map_err(|e| {
                    SweepError::Setup(format!(
                        "{}: prompts for {}: {e}",
                        plan.sweep.path.display(),
                        plan.scripts[g.script].path.display()
                    ))
                })?);
                loaded.insert(key, p.clone());
                p
            }
        };
        out.push(p);
    }
    Ok(out)
}

/// What every game's task needs.
pub(crate) struct Inner {
    pub(crate) plan: Arc<Plan>,
    pub(crate) prompts: Vec<GamePrompts>,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) gateway: Gateway,
    /// Where games write their transcript and result (`games/<id>/`).
    pub(crate) out: PathBuf,
    pub(crate) sweep: String,
    pub(crate) run: String,
    /// Model calls one game may have in flight (`gateway.game_concurrency`).
    pub(crate) call_concurrency: Option<usize>,
    /// A cluster's store, where the transcript is written with the result (no shared disk).
    pub(crate) transcripts: Option<crate::store::RedisStore>,
    /// The run's batch queue, when a model's evaluation goes through batches.
    pub(crate) batch: Option<Arc<BatchQueue>>,
}

/// Plays the plan's games for the scheduler.
struct Player(Arc<Inner>);

impl GamePlayer for Player {
    fn play(&self, game: usize) -> BoxFuture<'static, GameOutcome> {
        Box::pin(play_game(self.0.clone(), game))
    }
    fn id(&self, game: usize) -> &str {
        &self.0.plan.games[game].id
    }
}

/// The stage of the transcript's last event: where a failed game was.
fn last_stage(transcript: &Path) -> Option<String> {
    let text = std::fs::read_to_string(transcript).ok()?;
    let last = text.lines().rev().find(|l| !l.trim().is_empty())?;
    let v: serde_json::Value = serde_json::from_str(last).ok()?;
    v.get("stage")?.as_str().map(str::to_string)
}

/// Writes `text` to `path` whole or not at all: a temporary file beside it, then a rename.
pub(crate) fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// What a failed game's error means for the sweep.
pub(crate) fn classify(e: &GameError, stage: Option<String>) -> GameOutcome {
    let reason = e.to_string();
    match e {
        GameError::ActorLost(_) | GameError::ChildFailed { .. } => {
            GameOutcome::Crashed { reason, stage }
        }
        GameError::Agent { error, .. } => match error.as_ref() {
            AgentError::Llm(LlmError::Budget { .. }) => GameOutcome::Interrupted { reason, stage },
            // The gateway was gone longer than a restart takes: play the game again.
            AgentError::Llm(LlmError::Unavailable) => GameOutcome::Crashed { reason, stage },
            // The cluster's shared limits were unreachable through every retry (a Redis outage):
            // nothing is wrong with the game, so it is played again (its calls replay from the cache).
            AgentError::Llm(LlmError::Shared { .. }) => GameOutcome::Crashed { reason, stage },
            _ => GameOutcome::Failed { reason, stage },
        },
        _ => GameOutcome::Failed { reason, stage },
    }
}

pub(crate) async fn play_game(inner: Arc<Inner>, index: usize) -> GameOutcome {
    let g = &inner.plan.games[index];
    let dir = inner.out.join("games").join(&g.id);
    let transcript = dir.join("transcript.jsonl");
    let fail = |reason: String| GameOutcome::Failed {
        reason,
        stage: None,
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return fail(format!("cannot create {}: {e}", dir.display()));
    }
    if let Err(e) = inner
        .store
        .set_game_state(&g.id, GameState::Running, None, None)
        .await
    {
        return GameOutcome::Unrecorded {
            reason: format!("store: {e}"),
        };
    }
    let mut config = GameConfig {
        game_id: g.id.clone(),
        transcript_path: Some(transcript.clone()),
        ..g.spec.config()
    };
    if let Some(n) = inner.call_concurrency {
        config.call_concurrency = n;
    }
    let scope = Arc::new(CallScope {
        sweep: inner.sweep.clone(),
        run: inner.run.clone(),
        arm: inner.plan.arms[g.arm].id.clone(),
    });
    let gateway = inner.gateway.scoped(scope);
    let script = inner.plan.scripts[g.script].script.clone();
    let prompts = (*inner.prompts[index]).clone();
    if let Some(b) = &inner.batch {
        // What the game waited on, it asks for again as it replays.
        if let Err(e) = b.journal().clear_waits(g.id.clone()).await {
            return fail(e.to_string());
        }
    }
    let played = game::play_with_prompts(script, config, gateway, prompts).await;
    if let Some(b) = &inner.batch {
        // A game that deferred a call has no result yet, whatever its evaluation made of the
        // missing answer.
        match b.journal().waits(g.id.clone()).await {
            Ok(true) => return GameOutcome::Waiting,
            Ok(false) => {}
            Err(e) => return fail(e.to_string()),
        }
    }
    match played {
        Ok(mut result) => {
            result.spec = Some(g.spec.clone());
            let json = match serde_json::to_string_pretty(&result) {
                Ok(j) => j + "\n",
                Err(e) => return fail(format!("cannot serialise the result: {e}")),
            };
            if let Err(e) = write_atomic(&dir.join("result.json"), &json) {
                return fail(format!(
                    "cannot write {}: {e}",
                    dir.join("result.json").display()
                ));
            }
            let written = match &inner.transcripts {
                Some(redis) => {
                    let text = match std::fs::read_to_string(&transcript) {
                        Ok(t) => t,
                        Err(e) => {
                            return fail(format!("cannot read {}: {e}", transcript.display()))
                        }
                    };
                    redis.put_result_with_transcript(&g.id, &json, &text).await
                }
                None => inner.store.put_result(&g.id, &json).await,
            };
            match written {
                Ok(_) => GameOutcome::Done,
                Err(e) => GameOutcome::Unrecorded {
                    reason: format!("store: {e}"),
                },
            }
        }
        Err(e) => classify(&e, last_stage(&transcript)),
    }
}

/// Runs the sweep in `path` (see the module documentation).
pub async fn run(path: &Path, opts: RunOptions) -> Result<RunReport, SweepError> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    run_with(path, opts, RunControl { tx }, rx).await
}

/// A run controlled from outside: the returned control stops it (tests, embedding programs).
pub fn controlled() -> (RunControl, tokio::sync::mpsc::UnboundedReceiver<bool>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    (RunControl { tx }, rx)
}

/// [`run`] with a control channel.
pub async fn run_with(
    path: &Path,
    opts: RunOptions,
    control: RunControl,
    mut stops: tokio::sync::mpsc::UnboundedReceiver<bool>,
) -> Result<RunReport, SweepError> {
    let plan = Arc::new(Plan::build(LoadedSweep::load(path)?)?);
    models::check_keys(&plan)?;
    let prompts = load_prompts(&plan)?;
    let out = plan.sweep.out_dir();
    std::fs::create_dir_all(&out)
        .map_err(|e| SweepError::Io(format!("cannot create {}: {e}", out.display())))?;
    let _lock = lock_dir(&out)?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&out.join(STORE_FILE))?);
    let file = &plan.sweep.file;
    let sweep_id = file.name.clone();
    store.open_sweep(&sweep_record(&plan)).await?;
    store
        .set_sweep_status(&sweep_id, SweepStatus::Running, None)
        .await?;
    let rows = game_rows(&plan, &sweep_id);
    store.add_games(&rows).await?;
    let states: HashMap<String, GameState> = store
        .games(&sweep_id)
        .await?
        .into_iter()
        .map(|g| (g.id, g.state))
        .collect();
    // Evaluation through batches: the journal beside the store, opened before anything is queued.
    let batch = if plan.uses_batch() {
        let (queue, ready) = BatchQueue::open(&out.join(JOURNAL_FILE), file.batch.settings())
            .map_err(|e| SweepError::Setup(e.to_string()))?;
        Some((queue, ready))
    } else {
        None
    };
    let mut queue: VecDeque<usize> = VecDeque::new();
    let mut waiting: Vec<usize> = Vec::new();
    for (i, g) in plan.games.iter().enumerate() {
        match states.get(&g.id) {
            Some(GameState::Done) => {}
            Some(GameState::Failed) if !opts.retry_failed => {}
            // A game a killed run left waiting goes on waiting (its batches are polled, not sent
            // again); one whose journal rows are gone is played again.
            Some(GameState::EvaluatingBatch) => match &batch {
                Some((q, _)) if q.journal().waits(g.id.clone()).await.unwrap_or(false) => {
                    waiting.push(i)
                }
                _ => queue.push_back(i),
            },
            _ => queue.push_back(i),
        }
    }
    let queued = queue.len() + waiting.len();

    let run_id = format!(
        "{}-{}",
        chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ"),
        std::process::id()
    );
    store
        .start_run(&RunRecord {
            id: run_id.clone(),
            sweep: sweep_id.clone(),
            started_at: now(),
            ended_at: None,
            outcome: None,
            pid: std::process::id(),
            host: hostname(),
        })
        .await?;

    // What earlier runs paid counts against the budget.
    let totals = store.totals(&sweep_id).await?;
    let already = totals
        .iter()
        .filter(|t| t.source == CallSource::Live.as_str())
        .fold(Spent::default(), |s, t| Spent {
            usd: s.usd + t.cost_usd,
            tokens: s.tokens + t.prompt_tokens + t.completion_tokens,
        });
    let limits = BudgetLimits {
        max_usd: file.budget.max_usd,
        max_tokens: file.budget.max_tokens,
    };
    let budget = (limits.max_usd.is_some() || limits.max_tokens.is_some())
        .then(|| Arc::new(Budget::new(limits, already)));
    if let Some(usd) = limits.max_usd {
        metrics::gauge!(tm::SWEEP_BUDGET_USD).set(usd);
    }

    let g = &file.gateway;
    let config = gateway_config(&file.gateway);
    let (router, pricing) = models::gateway_routes(&plan, config.timeout)?;
    let provider = router.provider_name();
    let (batch_queue, ready) = match batch {
        Some((q, r)) => (Some(q), Some(r)),
        None => (None, None),
    };
    let batch_worker = batch_queue.as_ref().map(|q| {
        spawn_worker(
            q.clone(),
            WorkerParts {
                router: router.clone(),
                pricing: pricing.clone(),
                store: store.clone(),
                budget: budget.clone(),
            },
        )
    });
    // Entries the store does not take during an outage wait beside the sweep's output, and are
    // replayed when it answers again — or by the next run of the sweep.
    let ledger = Ledger::start_with(
        store.clone(),
        crate::llm::LedgerOptions::spilling_to(out.join("ledger.spill.jsonl")),
    );
    let state = GatewayState::new(GatewayParts {
        router,
        pricing,
        config,
        cache: g.cache.then(|| store.clone()),
        budget: budget.clone(),
        ledger: Some(ledger.clone()),
        shared: None,
        batch: batch_queue.clone(),
    });
    let node = Node::start(state, provider)
        .await
        .map_err(|e| SweepError::Setup(format!("cannot start the node: {e}")))?;

    let counters = Arc::new(Counters::default());
    let inner = Arc::new(Inner {
        plan: plan.clone(),
        prompts,
        store: store.clone(),
        gateway: node.gateway.clone(),
        out: out.clone(),
        sweep: sweep_id.clone(),
        run: run_id.clone(),
        call_concurrency: g.game_concurrency,
        transcripts: None,
        batch: batch_queue.clone(),
    });
    let (done_tx, done_rx) = oneshot::channel();
    let concurrency = opts.concurrency.or(file.concurrency).unwrap_or(64).max(1);
    let (scheduler, _) = Actor::spawn_linked(
        None,
        Scheduler,
        SchedulerArgs {
            queue,
            concurrency,
            player: Arc::new(Player(inner)),
            store: store.clone(),
            counters: counters.clone(),
            budget: budget.as_ref().map(|b| b.exhausted()),
            done: done_tx,
            waiting,
            batch: batch_queue.clone(),
        },
        node.actor.get_cell(),
    )
    .await
    .map_err(|e| SweepError::Setup(format!("cannot start the scheduler: {e}")))?;

    // Games whose batch calls are back, to the scheduler by plan index.
    let forward_ready = ready.map(|mut ready| {
        let sched = scheduler.clone();
        let index: HashMap<String, usize> = plan
            .games
            .iter()
            .enumerate()
            .map(|(i, g)| (g.id.clone(), i))
            .collect();
        tokio::spawn(async move {
            while let Some(id) = ready.recv().await {
                if let Some(&game) = index.get(&id) {
                    let _ = sched.send_message(SchedulerMsg::Ready { game });
                }
            }
        })
    });
    // Stops: from the control channel (Ctrl-C, tests) and from the budget.
    let sched = scheduler.clone();
    let stopper = tokio::spawn(async move {
        while let Some(now) = stops.recv().await {
            let _ = sched.send_message(SchedulerMsg::Stop {
                reason: StopReason::User,
                now,
            });
        }
    });
    let ctrl_c = opts.handle_ctrl_c.then(|| {
        let control = control.clone();
        tokio::spawn(async move {
            let mut presses = 0;
            while tokio::signal::ctrl_c().await.is_ok() {
                presses += 1;
                if presses == 1 {
                    eprintln!("\nCtrl-C: starting no new games; the games in flight finish (Ctrl-C again to stop them now — they continue from the cache next run)");
                }
                control.stop(presses > 1);
            }
        })
    });
    let progress = Progress::start(
        plan.sweep.file.name.clone(),
        queued as u64,
        counters.clone(),
        ledger.tally().clone(),
        opts.progress,
    );

    let end = tokio::select! {
        end = done_rx => end.map_err(|_| SweepError::Setup("the scheduler stopped without a word".into())),
        lost = node.scheduler_lost => Err(SweepError::Setup(format!(
            "the scheduler died: {}",
            lost.unwrap_or_else(|_| "unknown".into())
        ))),
    };
    progress.finish();
    stopper.abort();
    if let Some(t) = forward_ready {
        t.abort();
    }
    if let Some(t) = batch_worker {
        t.abort();
    }
    if let Some(t) = ctrl_c {
        t.abort();
    }
    ledger.flush().await;
    let gateway_restarts = node::restarts(&node.actor).await;
    node.actor.stop(None);

    let counts = store.state_counts(&sweep_id).await?;
    let spent = budget.as_ref().map(|b| b.spent()).unwrap_or_else(|| {
        let t = ledger.tally();
        Spent {
            usd: already.usd + t.usd(),
            tokens: already.tokens
                + t.prompt_tokens.load(std::sync::atomic::Ordering::Relaxed)
                + t.completion_tokens
                    .load(std::sync::atomic::Ordering::Relaxed),
        }
    });
    let (status, outcome) = match &end {
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
    store
        .set_sweep_status(&sweep_id, status, Some(note))
        .await?;
    store.end_run(&run_id, &outcome).await?;
    let end = end?;
    let t = ledger.tally();
    let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    Ok(RunReport {
        out,
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

/// The record of the sweep `plan` expands, as first recorded (running).
pub(crate) fn sweep_record(plan: &Plan) -> SweepRecord {
    let file = &plan.sweep.file;
    SweepRecord {
        id: file.name.clone(),
        name: file.name.clone(),
        file: plan.sweep.path.display().to_string(),
        text: plan.sweep.text.clone(),
        created_at: now(),
        status: SweepStatus::Running,
        note: None,
        max_usd: file.budget.max_usd,
        max_tokens: file.budget.max_tokens,
    }
}

/// The plan's games as the store's rows (pending).
pub(crate) fn game_rows(plan: &Plan, sweep_id: &str) -> Vec<GameRow> {
    plan.games
        .iter()
        .map(|g| GameRow {
            id: g.id.clone(),
            sweep: sweep_id.to_string(),
            arm: plan.arms[g.arm].id.clone(),
            arm_label: plan.arms[g.arm].label.clone(),
            script: plan.scripts[g.script].script.title.clone(),
            repeat: g.repeat,
            seed: g.spec.seed,
            spec: serde_json::to_string(&g.spec).unwrap_or_default(),
            state: GameState::Pending,
            attempts: 0,
            crashes: 0,
            reason: None,
            stage: None,
            updated_at: String::new(),
        })
        .collect()
}

/// The gateway's settings from the sweep file's `[gateway]`.
pub(crate) fn gateway_config(g: &crate::sweep::file::GatewaySettings) -> GatewayConfig {
    GatewayConfig {
        max_retries: g
            .max_retries
            .unwrap_or(GatewayConfig::default().max_retries),
        backoff_base: g
            .retry_base_ms
            .map(Duration::from_millis)
            .unwrap_or(GatewayConfig::default().backoff_base),
        timeout: g
            .timeout_secs
            .map(Duration::from_secs)
            .unwrap_or(GatewayConfig::default().timeout),
        ..GatewayConfig::default()
    }
}

/// This machine's name, for the runs table.
pub(crate) fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "localhost".into())
}
