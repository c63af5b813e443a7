//! `sleuth worker`: plays a cluster's games. It registers with the coordinator, then reads game
//! entries from the work queue up to its free capacity, plays each as `sleuth sweep run` would (the
//! same plan, prompts, layered gateway and game code), writes the result with its transcript to the
//! store, and only then acknowledges the entry.
//!
//! What a worker shares with the others lives in Redis: the cache (a game replayed elsewhere pays
//! nothing for the calls already made), the ledger, each model's limits and the sweep's budget. What
//! it keeps to itself is only a cache of planned sweeps and scratch files, so killing it costs the
//! games it had in flight, which other workers claim after the idle timeout.
//!
//! An entry is acknowledged once its game is settled — done, failed, interrupted by the budget, or
//! skipped because the sweep no longer runs or the game is already done. A game whose actors crashed
//! goes back to the queue once; a second crash fails it, as on one node.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::auth::Token;
use super::client;
use super::gate::{RedisLimits, Refusal};
use super::models::WorkerModels;
use super::proto as pb;
use super::queue::{Delivery, WorkQueue};
use super::{submission, ClusterError};
use sleuth_base::shutdown::Shutdown;
use sleuth_base::telemetry as tm;
use sleuth_llm::Ledger;
use sleuth_store::{GameState, RedisStore, RunRecord, Store, SweepStatus};
use sleuth_sweep::models;
use sleuth_sweep::node::{self, NodeHandle, NodeSetup};
use sleuth_sweep::runtime::{load_prompts, RuntimeParts, SweepRuntime};
use sleuth_sweep::scheduler::GameOutcome;

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// The coordinator's URL (`http://` or `https://`).
    pub coordinator: String,
    /// The CA certificate (PEM) an `https://` coordinator's certificate is checked against.
    pub tls_ca: Option<PathBuf>,
    /// The Redis URL (the coordinator's Redis, as this worker reaches it).
    pub redis: String,
    /// Games played at once at most.
    pub capacity: usize,
    pub token: Token,
    /// Where this worker's `/metrics` are served (recorded with the coordinator for `sleuth workers`).
    pub metrics_addr: Option<SocketAddr>,
    /// Scratch space for the games' files before they are written to the store.
    pub work_dir: PathBuf,
    /// The models this worker serves (`--models`): their endpoints and key variables are the only
    /// ones it sends requests to and reads keys from.
    pub models: WorkerModels,
}

/// How long a worker holds an entry of a model it does not serve before putting it back.
const NOT_SERVED_PAUSE: Duration = Duration::from_secs(1);

/// What a worker did, when it stops.
#[derive(Debug, Clone, Default)]
pub struct WorkerReport {
    pub worker_id: String,
    pub games_done: u64,
    pub claimed: u64,
}

/// A planned sweep, ready to play any of its games.
struct PlayableSweep {
    runtime: SweepRuntime,
    node: NodeHandle,
    ledger: Ledger,
    limits: Arc<RedisLimits>,
    /// Whether this worker already marked the sweep budget-stopped.
    marked_stopped: AtomicBool,
    run_id: String,
}

/// A sweep as this worker can play it.
enum Runtime {
    Ready(Box<PlayableSweep>),
    /// This worker cannot play the sweep's games at all (a model's API key or the prompts directory
    /// is missing here): each of them fails with this reason rather than going round the queue.
    Unplayable(String),
    /// The games use a model this worker does not serve (at the endpoint the sweep has): their
    /// entries go back to the queue for a worker that does.
    NotServed(String),
}

/// What every task of the worker shares.
struct Worker {
    id: String,
    store: RedisStore,
    /// The queue for everything but blocking reads (acknowledge, touch, claim).
    queue: WorkQueue,
    namespace: String,
    work_dir: PathBuf,
    models: WorkerModels,
    rpc: client::Workers,
    runtimes: tokio::sync::Mutex<HashMap<String, Arc<Runtime>>>,
    /// Entries being played, by entry id: what the heartbeat touches.
    in_flight: Mutex<HashSet<String>>,
    /// Woken when a game ends (a slot is free).
    freed: Notify,
    games_done: AtomicU64,
}

/// How an entry is settled.
enum Settle {
    /// Acknowledged and gone.
    Finish,
    /// Back at the end of the queue.
    Requeue,
}

impl Worker {
    fn in_flight(&self) -> Vec<String> {
        self.in_flight
            .lock()
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The sweep's runtime, planned from its submission on first use.
    async fn runtime(&self, sweep: &str) -> Result<Arc<Runtime>, ClusterError> {
        let mut runtimes = self.runtimes.lock().await;
        if let Some(rt) = runtimes.get(sweep) {
            return Ok(rt.clone());
        }
        let rt = Arc::new(self.load(sweep).await?);
        runtimes.insert(sweep.to_string(), rt.clone());
        Ok(rt)
    }

    async fn load(&self, sweep: &str) -> Result<Runtime, ClusterError> {
        let bytes = self
            .store
            .blob(&submission::key(sweep))
            .await?
            .ok_or_else(|| ClusterError::Setup(format!("sweep `{sweep}` has no submission")))?;
        let req = submission::decode(&bytes)
            .map_err(|e| ClusterError::Setup(format!("sweep `{sweep}`: submission: {e}")))?;
        // What only this worker's machine decides — its API keys, a prompts directory on its disk —
        // makes the sweep unplayable here, not a reason to pass the entry round the queue for ever.
        let unplayable = |e: sleuth_sweep::SweepError| {
            let reason = format!("worker {}: {e}", self.id);
            tracing::warn!(%sweep, %reason, "cannot play the sweep");
            Runtime::Unplayable(reason)
        };
        // Planned on the blocking pool: a large sweep takes a while to expand, and this worker's
        // heartbeats and games go on meanwhile.
        let planned = tokio::task::spawn_blocking(move || submission::plan(&req))
            .await
            .map_err(|e| ClusterError::Setup(format!("sweep `{sweep}`: planning stopped: {e}")))?;
        let mut plan = match planned {
            Ok(p) => p,
            Err(e) => return Ok(unplayable(e)),
        };
        // The cluster's limits are the sweep's; this worker's own endpoint, key variable and limits
        // are its declaration's.
        let shared_limits = models::limit_settings(&plan);
        if let Err(reason) = self.models.apply(&mut plan) {
            tracing::info!(%sweep, %reason, "leaving the sweep's games to other workers");
            return Ok(Runtime::NotServed(reason));
        }
        let plan = Arc::new(plan);
        if let Err(e) = models::check_keys(&plan) {
            return Ok(unplayable(e));
        }
        let prompts = match load_prompts(&plan) {
            Ok(p) => p,
            Err(e) => return Ok(unplayable(e)),
        };
        let file = &plan.sweep.file;
        let store: Arc<dyn Store> = Arc::new(self.store.clone());
        let limits = Arc::new(RedisLimits::new(
            self.store.connection(),
            &self.namespace,
            &self.id,
            sweep,
            sleuth_llm::BudgetLimits {
                max_usd: file.budget.max_usd,
                max_tokens: file.budget.max_tokens,
            },
            shared_limits,
        ));
        let setup = NodeSetup {
            store: store.clone(),
            // The sweep's budget is the cluster's, kept in Redis (`limits`).
            budget: None,
            shared: Some(limits.clone()),
            // A cluster refuses sweeps with batch models at submission.
            batch: None,
            ledger_spill: None,
        };
        let node = match node::assemble(&plan, setup).await {
            Ok(n) => n,
            Err(e) => return Ok(unplayable(e)),
        };
        let run_id = format!("{}:{sweep}", self.id);
        self.store
            .start_run(&RunRecord {
                id: run_id.clone(),
                sweep: sweep.to_string(),
                started_at: sleuth_base::clock::now(),
                ended_at: None,
                outcome: None,
                pid: std::process::id(),
                host: sleuth_base::clock::hostname(),
            })
            .await?;
        let runtime = SweepRuntime::new(RuntimeParts {
            plan: plan.clone(),
            prompts,
            store,
            gateway: node.handle.gateway.clone(),
            // Game ids are unique across sweeps: one scratch directory serves them all.
            out: self.work_dir.clone(),
            sweep: sweep.to_string(),
            run: run_id.clone(),
            call_concurrency: file.gateway.game_concurrency,
            batch: None,
            // A worker serves no page: a game with a person at the table fails with the reason.
            seating: None,
        });
        tracing::info!(%sweep, games = plan.games.len(), "sweep planned");
        Ok(Runtime::Ready(Box::new(PlayableSweep {
            runtime,
            node: node.handle,
            ledger: node.ledger,
            limits,
            marked_stopped: AtomicBool::new(false),
            run_id,
        })))
    }

    /// Tells the coordinator what a game did (for its log); a lost report costs nothing.
    fn report(&self, d: &Delivery, kind: &str, reason: &str, stage: &str) {
        let mut rpc = self.rpc.clone();
        let req = pb::ReportRequest {
            worker_id: self.id.clone(),
            events: vec![pb::GameEvent {
                sweep_id: d.sweep.clone(),
                game_id: d.game.clone(),
                kind: kind.into(),
                reason: reason.into(),
                stage: stage.into(),
            }],
        };
        tokio::spawn(async move {
            let _ = rpc.report(req).await;
        });
    }

    /// Plays (or skips) one entry's game; says how to settle the entry.
    async fn play(&self, d: &Delivery) -> Result<Settle, ClusterError> {
        let Some(sweep) = self.store.sweep(&d.sweep).await? else {
            tracing::warn!(sweep = %d.sweep, game = %d.game, "entry of an unknown sweep; dropped");
            return Ok(Settle::Finish);
        };
        if sweep.status != SweepStatus::Running {
            // Cancelled or budget-stopped: the game is not played; submitting the sweep again
            // queues it again.
            return Ok(Settle::Finish);
        }
        match self.store.game(&d.game).await? {
            None => return Ok(Settle::Finish),
            // A second delivery of a settled game (its first worker died before acknowledging).
            Some(g) if matches!(g.state, GameState::Done | GameState::Failed) => {
                return Ok(Settle::Finish)
            }
            Some(_) => {}
        }
        let loaded = self.runtime(&d.sweep).await?;
        let rt = match &*loaded {
            Runtime::Ready(rt) => rt,
            Runtime::Unplayable(reason) => {
                self.store
                    .set_game_state(&d.game, GameState::Failed, Some(reason.clone()), None)
                    .await?;
                self.report(d, "failed", reason, "");
                return Ok(Settle::Finish);
            }
            Runtime::NotServed(reason) => {
                tracing::debug!(game = %d.game, %reason, "not served here: back to the queue");
                // Not at once: another worker that serves the model should take it first.
                tokio::time::sleep(NOT_SERVED_PAUSE).await;
                return Ok(Settle::Requeue);
            }
        };
        if rt.limits.refused().borrow().is_some() {
            // The budget is spent: nothing more of this sweep starts here.
            return Ok(Settle::Finish);
        }
        let Some(index) = rt.runtime.game_index(&d.game) else {
            let reason = "the game is not in the sweep's plan".to_string();
            self.store
                .set_game_state(&d.game, GameState::Failed, Some(reason.clone()), None)
                .await?;
            return Ok(Settle::Finish);
        };
        self.report(d, "started", "", "");
        let outcome = rt.runtime.play(index).await;
        let _ = std::fs::remove_dir_all(rt.runtime.game_dir(&d.game));
        let settle = match outcome {
            GameOutcome::Done => {
                self.games_done.fetch_add(1, Ordering::Relaxed);
                self.report(d, "done", "", "");
                Settle::Finish
            }
            // A cluster refuses sweeps with batch models at submission (its workers have no batch
            // journal), so nothing here defers a call; were one to, it fails rather than hangs.
            GameOutcome::Waiting => {
                let reason =
                    "evaluation deferred to a batch, which a cluster does not run".to_string();
                self.report(d, "failed", &reason, "evaluation");
                self.store
                    .set_game_state(
                        &d.game,
                        GameState::Failed,
                        Some(reason),
                        Some("evaluation".into()),
                    )
                    .await?;
                Settle::Finish
            }
            GameOutcome::Unrecorded { reason } => {
                // Redis is away: the entry stays pending (not touched any more) and is claimed
                // again once the idle timeout passes; replaying costs nothing the cache holds.
                return Err(ClusterError::Sweep(reason));
            }
            GameOutcome::Failed { reason, stage } => {
                tracing::warn!(game = %d.game, %reason, "game failed");
                self.report(d, "failed", &reason, stage.as_deref().unwrap_or(""));
                self.store
                    .set_game_state(&d.game, GameState::Failed, Some(reason), stage)
                    .await?;
                Settle::Finish
            }
            GameOutcome::Interrupted { reason, stage } => {
                self.report(d, "interrupted", &reason, stage.as_deref().unwrap_or(""));
                self.store
                    .set_game_state(&d.game, GameState::Interrupted, Some(reason), stage)
                    .await?;
                self.mark_budget_stopped(rt, &d.sweep).await?;
                Settle::Finish
            }
            GameOutcome::Crashed { reason, stage } => {
                self.report(d, "crashed", &reason, stage.as_deref().unwrap_or(""));
                let crashes = self.store.count_crash(&d.game).await?;
                if crashes >= 2 {
                    self.store
                        .set_game_state(
                            &d.game,
                            GameState::Failed,
                            Some(format!("crashed twice: {reason}")),
                            stage,
                        )
                        .await?;
                    Settle::Finish
                } else {
                    self.store
                        .set_game_state(&d.game, GameState::Pending, Some(reason), stage)
                        .await?;
                    Settle::Requeue
                }
            }
        };
        Ok(settle)
    }

    /// The first worker refused by the sweep's budget marks the sweep budget-stopped, once.
    async fn mark_budget_stopped(
        &self,
        rt: &PlayableSweep,
        sweep: &str,
    ) -> Result<(), ClusterError> {
        let refusal: Option<Refusal> = rt.limits.refused().borrow().clone();
        let Some(r) = refusal else { return Ok(()) };
        if !r.first || rt.marked_stopped.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let note = format!(
            "budget_stopped: the next call would have passed {}; spent ${:.4} and {} tokens in all",
            r.limit, r.spent.usd, r.spent.tokens
        );
        tracing::warn!(%sweep, %note, "sweep budget-stopped");
        self.store
            .set_sweep_status(sweep, SweepStatus::BudgetStopped, Some(note))
            .await?;
        Ok(())
    }

    /// Plays an entry and settles it. A store or queue error leaves the entry pending: it is
    /// claimed again after the idle timeout (by this worker or another), and playing it again is
    /// idempotent.
    async fn handle(self: Arc<Self>, d: Delivery) {
        let settled = match self.play(&d).await {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!(sweep = %d.sweep, game = %d.game, error = %e, "cannot play the entry; it will be claimed again");
                None
            }
        };
        if let Some(s) = settled {
            let pause = sleuth_base::backoff::Backoff::new(
                Duration::from_millis(200),
                Duration::from_secs(5),
            );
            for attempt in 0..6 {
                let r = match s {
                    Settle::Finish => self.queue.finish(&d).await,
                    Settle::Requeue => self.queue.requeue(&d).await,
                };
                match r {
                    Ok(()) => break,
                    Err(e) if attempt < 5 => {
                        tracing::warn!(error = %e, "cannot acknowledge the entry; retrying");
                        tokio::time::sleep(pause.delay(attempt)).await;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot acknowledge the entry; it will be delivered again");
                    }
                }
            }
        }
        if let Ok(mut f) = self.in_flight.lock() {
            f.remove(&d.entry);
        }
        self.freed.notify_one();
    }
}

/// A worker id (host name included) as a directory name.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Heartbeats: touches the entries being played (so nobody claims them) and tells the coordinator
/// this worker lives. Touching goes straight to Redis, so a coordinator that is down or restarting
/// costs nothing but the coordinator's view of the worker.
async fn heartbeat_loop(
    w: Arc<Worker>,
    every: Duration,
    register: pb::RegisterRequest,
    stop: Shutdown,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.draining() => return,
        }
        let entries = w.in_flight();
        if let Err(e) = w.queue.touch(&w.id, &entries).await {
            tracing::warn!(error = %e, "cannot touch the entries in flight");
        }
        let mut rpc = w.rpc.clone();
        let beat = pb::HeartbeatRequest {
            worker_id: w.id.clone(),
            in_flight: entries.len() as u32,
            games_done: w.games_done.load(Ordering::Relaxed),
        };
        match rpc.heartbeat(beat).await {
            Ok(r) if !r.get_ref().known => {
                let again = pb::RegisterRequest {
                    worker_id: w.id.clone(),
                    ..register.clone()
                };
                if let Err(e) = rpc.register(again).await {
                    tracing::warn!(error = %e.message(), "cannot register again");
                }
            }
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e.message(), "heartbeat failed"),
        }
    }
}

/// Runs a worker until `shutdown` drains it (then it takes no new game and lets those in flight
/// finish) or stops it now (then it stops at once: its entries are claimed by others).
pub async fn run(cfg: WorkerConfig, shutdown: Shutdown) -> Result<WorkerReport, ClusterError> {
    if cfg.capacity == 0 {
        return Err(ClusterError::Setup("--capacity must be at least 1".into()));
    }
    let mut rpc = client::workers(&cfg.coordinator, cfg.tls_ca.as_deref(), cfg.token.clone())?;
    let register = pb::RegisterRequest {
        host: sleuth_base::clock::hostname(),
        pid: std::process::id(),
        capacity: cfg.capacity as u32,
        metrics_addr: cfg.metrics_addr.map(|a| a.to_string()).unwrap_or_default(),
        worker_id: String::new(),
        models: cfg.models.to_proto(),
    };
    for (name, (d, _)) in &cfg.models.models {
        if d.provider != "simulated" && std::env::var_os(&d.api_key_env).is_none() {
            tracing::warn!(model = %name, var = %d.api_key_env, "the key variable of a declared model is not set: its games fail here");
        }
    }
    let reg = register_with_retries(&mut rpc, &register, &shutdown).await?;
    let store = RedisStore::connect(&cfg.redis, &reg.namespace).await?;
    // The store already opened this URL, so it parses; the error (which could quote the URL and its
    // password) is not shown.
    let client = redis::Client::open(cfg.redis.as_str())
        .map_err(|_| ClusterError::Setup("the Redis URL is not valid".into()))?;
    let block = Duration::from_secs(1);
    let reader = WorkQueue::connect(client, &reg.namespace, block).await?;
    let queue = WorkQueue::open(store.connection(), &reg.namespace).await?;
    let claim_idle = Duration::from_millis(reg.claim_idle_ms.max(1000));
    let heartbeat = Duration::from_millis(reg.heartbeat_ms.max(100));
    metrics::gauge!(tm::WORKER_CAPACITY).set(cfg.capacity as f64);
    // Exported from the start, so a dashboard shows 0 claims rather than no data.
    metrics::counter!(tm::CLUSTER_CLAIMED).increment(0);
    tracing::info!(worker = %reg.worker_id, capacity = cfg.capacity, "worker registered");

    let w = Arc::new(Worker {
        id: reg.worker_id.clone(),
        store,
        queue,
        namespace: reg.namespace.clone(),
        work_dir: cfg.work_dir.join(sanitize(&reg.worker_id)),
        models: cfg.models.clone(),
        rpc,
        runtimes: tokio::sync::Mutex::new(HashMap::new()),
        in_flight: Mutex::new(HashSet::new()),
        freed: Notify::new(),
        games_done: AtomicU64::new(0),
    });
    let beats_stop = Shutdown::new();
    let beats = tokio::spawn(heartbeat_loop(
        w.clone(),
        heartbeat,
        register,
        beats_stop.clone(),
    ));

    let mut claimed = 0u64;
    // Claim at once on start: a worker restarted after a crash picks up what it left.
    let mut last_claim: Option<Instant> = None;
    while !shutdown.is_draining() {
        let free = cfg
            .capacity
            .saturating_sub(w.in_flight.lock().map(|f| f.len()).unwrap_or(0));
        if free == 0 {
            tokio::select! {
                _ = w.freed.notified() => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = shutdown.draining() => {}
            }
            continue;
        }
        let mut got = Vec::new();
        if last_claim.is_none_or(|t| t.elapsed() >= claim_idle / 2) {
            match w.queue.claim_idle(&w.id, claim_idle, free).await {
                Ok(c) => {
                    if !c.is_empty() {
                        tracing::info!(entries = c.len(), "claimed entries of a silent worker");
                        metrics::counter!(tm::CLUSTER_CLAIMED).increment(c.len() as u64);
                        claimed += c.len() as u64;
                    }
                    got = c;
                }
                Err(e) => tracing::warn!(error = %e, "cannot claim idle entries"),
            }
            last_claim = Some(Instant::now());
        }
        if got.len() < free {
            tokio::select! {
                taken = reader.take(&w.id, free - got.len(), block) => match taken {
                    Ok(t) => got.extend(t),
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot read the work queue; retrying");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                },
                _ = shutdown.draining() => {}
            }
        }
        for d in got {
            let fresh = w
                .in_flight
                .lock()
                .map(|mut f| f.insert(d.entry.clone()))
                .unwrap_or(false);
            if fresh {
                tokio::spawn(w.clone().handle(d));
            }
        }
    }

    // Draining: no new game; the games in flight finish unless a second signal comes.
    tracing::info!("stopping: taking no new game; the games in flight finish");
    while !shutdown.is_stopping_now() && !w.in_flight().is_empty() {
        tokio::select! {
            _ = w.freed.notified() => {}
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            _ = shutdown.stopping_now() => {}
        }
    }
    beats_stop.drain();
    let _ = beats.await;
    let runtimes: Vec<Arc<Runtime>> = w.runtimes.lock().await.values().cloned().collect();
    for loaded in runtimes {
        let Runtime::Ready(rt) = &*loaded else {
            continue;
        };
        rt.ledger.flush().await;
        let _ = w.store.end_run(&rt.run_id, "stopped").await;
        rt.node.actor.stop(None);
    }
    Ok(WorkerReport {
        worker_id: w.id.clone(),
        games_done: w.games_done.load(Ordering::Relaxed),
        claimed,
    })
}

/// Registers, waiting for a coordinator that is not up yet (a deployment starts everything at once).
async fn register_with_retries(
    rpc: &mut client::Workers,
    req: &pb::RegisterRequest,
    shutdown: &Shutdown,
) -> Result<pb::RegisterResponse, ClusterError> {
    let pause =
        sleuth_base::backoff::Backoff::new(Duration::from_millis(250), Duration::from_secs(5));
    let mut n = 0;
    let started = Instant::now();
    loop {
        match rpc.register(req.clone()).await {
            Ok(r) => return Ok(r.into_inner()),
            // A wrong token is not going to get better.
            Err(s) if s.code() == tonic::Code::Unauthenticated => {
                return Err(ClusterError::Rpc(s.message().to_string()))
            }
            Err(s) if started.elapsed() > Duration::from_secs(120) => {
                return Err(ClusterError::Rpc(format!(
                    "cannot register with the coordinator: {}",
                    s.message()
                )))
            }
            Err(s) => {
                tracing::info!(error = %s.message(), "coordinator not reachable yet; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(pause.delay(n)) => {}
                    _ = shutdown.draining() => return Err(ClusterError::Setup("stopped before registering".into())),
                }
                n += 1;
            }
        }
    }
}
