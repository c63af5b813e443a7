//! `sleuth coordinator`: the cluster's front door. It serves the public API (submit, watch, cancel,
//! list workers and sweeps, results, a game's transcript) and the worker protocol (register, heartbeat, report) over gRPC, and keeps
//! nothing that is not in Redis: a sweep's submission, games, states and results are in the store, the
//! games to play are entries of the work queue, the workers are a hash. Restarting it mid-sweep loses
//! nothing, and the workers go on playing meanwhile (the work flows through Redis, not through it).
//!
//! Besides answering requests it runs one loop ([`reconcile`]): it marks a sweep finished when no game
//! is left to play, makes sure every unfinished game of a running sweep has an entry in the queue
//! (`push_new` queues nothing twice), and exports the cluster's gauges.
//!
//! Here: the configuration, the shared state, the public service and the loop; [`reading`] answers the
//! calls that read a sweep back (`Results`, `ListSweeps`, `Transcript`), [`workers`] the worker
//! protocol.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::Stream;
use serde::{Deserialize, Serialize};
use tonic::{Request, Response, Status};

use super::auth::{Authorized, ServerTokens, Token};
use super::models::{self as declared, Declarations, Declared, Refusal};
use super::proto::sweeps_server::{Sweeps, SweepsServer};
use super::proto::workers_server::WorkersServer;
use super::proto::{self as pb};
use super::queue::{GameEntry, WorkQueue};
use super::serving::{self, Listener, ServerLimits};
use super::{submission, ClusterError, MAX_MESSAGE_BYTES};
use sleuth_store::{
    GameState, RedisStore, SourceTotals, Store, StoreError, SweepRecord, SweepStatus, TotalsRow,
};

mod reading;
mod workers;
use sleuth_base::shutdown::Shutdown;
use sleuth_base::telemetry as tm;

/// How a coordinator runs.
#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    /// The Redis URL (`redis://` or `rediss://`, password included when there is one).
    pub redis: String,
    pub listen: SocketAddr,
    /// The prefix of every key in Redis: one cluster per namespace.
    pub namespace: String,
    /// The cluster's token: every call.
    pub token: Token,
    /// A read-only token (`SLEUTH_READ_TOKEN`): only the calls that read (`auth::READ_METHODS`),
    /// for processes that must not spend money, such as `sleuth view --coordinator`.
    pub read_token: Option<Token>,
    /// A certificate and its key (PEM) to serve TLS with.
    pub tls: Option<(Vec<u8>, Vec<u8>)>,
    /// How often workers heartbeat.
    pub heartbeat: Duration,
    /// After how long without a touch a worker's entries are claimed by others: at least
    /// [`MIN_HEARTBEATS_PER_CLAIM`] heartbeats ([`CoordinatorConfig::check`]).
    pub claim_idle: Duration,
    /// The most games one sweep may plan; a larger submission is refused before anything is
    /// planned or queued.
    pub max_games: u64,
    /// The gRPC server's timeouts and bounds (`serving`).
    pub limits: ServerLimits,
}

/// The games per sweep a coordinator takes by default: every game is a hash in Redis, an entry in
/// the queue and, on every worker that plays one of them, a spec in memory.
pub const DEFAULT_MAX_GAMES: u64 = 100_000;

/// A worker's entries may be claimed only after this many heartbeats were missed: one late
/// heartbeat of a loaded worker must not hand its games to others while it still plays them.
pub const MIN_HEARTBEATS_PER_CLAIM: u32 = 3;

impl CoordinatorConfig {
    /// The settings a deployment rarely changes: heartbeats every 2 s, entries claimed after 15 s of
    /// silence (several missed heartbeats, so a loaded worker is not robbed).
    pub fn new(redis: String, listen: SocketAddr, namespace: String, token: Token) -> Self {
        CoordinatorConfig {
            redis,
            listen,
            namespace,
            token,
            read_token: None,
            tls: None,
            heartbeat: Duration::from_secs(2),
            claim_idle: Duration::from_secs(15),
            max_games: DEFAULT_MAX_GAMES,
            limits: ServerLimits::default(),
        }
    }

    /// Refuses settings that would make the cluster misbehave: a claim timeout shorter than
    /// [`MIN_HEARTBEATS_PER_CLAIM`] heartbeats, a zero heartbeat or a zero game cap, a read-only
    /// token that is the full token.
    pub fn check(&self) -> Result<(), ClusterError> {
        self.tokens()?;
        if self.heartbeat.is_zero() {
            return Err(ClusterError::Setup(
                "the heartbeat interval must be longer than 0".into(),
            ));
        }
        let least = self.heartbeat * MIN_HEARTBEATS_PER_CLAIM;
        if self.claim_idle < least {
            return Err(ClusterError::Setup(format!(
                "--claim-idle-secs {} is shorter than {MIN_HEARTBEATS_PER_CLAIM} heartbeats \
                 ({MIN_HEARTBEATS_PER_CLAIM} × {:?} = {:?}): a busy worker whose heartbeat is late \
                 would have its games claimed by others while it still plays them; give at least {}",
                self.claim_idle.as_secs_f64(),
                self.heartbeat,
                least,
                least.as_secs_f64().ceil()
            )));
        }
        if self.max_games == 0 {
            return Err(ClusterError::Setup(
                "--max-games-per-sweep must be at least 1".into(),
            ));
        }
        Ok(())
    }

    /// The tokens the API admits.
    fn tokens(&self) -> Result<ServerTokens, ClusterError> {
        ServerTokens::new(self.token.clone(), self.read_token.clone())
            .map_err(|e| ClusterError::Setup(e.to_string()))
    }
}

/// A worker as the registry (`{ns}:workers`) records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct WorkerRecord {
    host: String,
    pid: u32,
    capacity: u32,
    in_flight: u32,
    games_done: u64,
    metrics_addr: String,
    /// Unix milliseconds of its registration and its last heartbeat, by the coordinator's clock.
    registered_ms: u64,
    last_ms: u64,
    /// The models it serves (`sleuth worker --models`), by name; a record of an older coordinator
    /// has none.
    #[serde(default)]
    models: BTreeMap<String, Declared>,
}

/// A worker silent this long is forgotten (its games were claimed by others long before).
const FORGET_AFTER: Duration = Duration::from_secs(3600);
/// How often [`reconcile`] runs, and how often `Watch` looks for changes.
const RECONCILE_EVERY: Duration = Duration::from_secs(2);
const WATCH_EVERY: Duration = Duration::from_millis(300);

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// What both services share: handles on Redis, nothing else.
#[derive(Clone)]
struct RedisHandles {
    store: RedisStore,
    queue: WorkQueue,
    workers_key: String,
    namespace: String,
    heartbeat: Duration,
    claim_idle: Duration,
    max_games: u64,
    /// The cancelled sweeps as the loop last read them from the store: what heartbeats answer with,
    /// so that a heartbeat (every worker, every 2 s) costs no read of every sweep.
    cancelled: Arc<RwLock<Vec<String>>>,
}

/// At most this much of an error goes into a log line or a status: a Redis error can quote a whole
/// value, and a status travels in an HTTP/2 header.
const MAX_ERROR: usize = 400;

fn clip(text: String) -> String {
    if text.len() <= MAX_ERROR {
        return text;
    }
    let mut end = MAX_ERROR;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn store_status(e: StoreError) -> Status {
    let message = clip(e.to_string());
    tracing::warn!(error = %message, "store error");
    Status::unavailable(message)
}

fn queue_status(e: super::queue::QueueError) -> Status {
    let message = clip(e.to_string());
    tracing::warn!(error = %message, "queue error");
    Status::unavailable(message)
}

impl RedisHandles {
    async fn workers(&self) -> Result<Vec<(String, WorkerRecord)>, Status> {
        let mut con = self.store.connection();
        let all: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&self.workers_key)
            .query_async(&mut con)
            .await
            .map_err(|e| Status::unavailable(format!("redis: {e}")))?;
        let mut out: Vec<(String, WorkerRecord)> = all
            .into_iter()
            .filter_map(|(id, json)| serde_json::from_str(&json).ok().map(|r| (id, r)))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    async fn put_worker(&self, id: &str, r: &WorkerRecord) -> Result<(), Status> {
        let mut con = self.store.connection();
        let json = serde_json::to_string(r).map_err(|e| Status::internal(e.to_string()))?;
        redis::cmd("HSET")
            .arg(&self.workers_key)
            .arg(id)
            .arg(json)
            .query_async::<()>(&mut con)
            .await
            .map_err(|e| Status::unavailable(format!("redis: {e}")))
    }

    async fn worker(&self, id: &str) -> Result<Option<WorkerRecord>, Status> {
        let mut con = self.store.connection();
        let json: Option<String> = redis::cmd("HGET")
            .arg(&self.workers_key)
            .arg(id)
            .query_async(&mut con)
            .await
            .map_err(|e| Status::unavailable(format!("redis: {e}")))?;
        Ok(json.and_then(|j| serde_json::from_str(&j).ok()))
    }

    /// What the live workers (heard from within the claim timeout) declare they serve.
    async fn declarations(&self) -> Result<Declarations, Status> {
        let now = now_ms();
        let idle = self.claim_idle.as_millis() as u64;
        let mut out = Declarations::new();
        for (id, r) in self.workers().await? {
            if now.saturating_sub(r.last_ms) >= idle {
                continue;
            }
            for (name, d) in r.models {
                out.entry(name).or_default().push((id.clone(), d));
            }
        }
        Ok(out)
    }

    /// Where a sweep stands now.
    async fn progress(&self, sweep: &str) -> Result<pb::Progress, Status> {
        let record = self
            .store
            .sweep(sweep)
            .await
            .map_err(store_status)?
            .ok_or_else(|| Status::not_found(format!("no sweep named `{sweep}`")))?;
        Ok(self.progress_of(&record).await?.0)
    }

    /// Where the sweep `record` stands now, with its ledger summed (what `ListSweeps` sends too).
    async fn progress_of(
        &self,
        record: &SweepRecord,
    ) -> Result<(pb::Progress, Vec<TotalsRow>), Status> {
        let sweep = record.id.as_str();
        let counts = self.store.state_counts(sweep).await.map_err(store_status)?;
        let rows = self.store.totals(sweep).await.map_err(store_status)?;
        let totals = SourceTotals::of(&rows);
        let running = counts.get(GameState::Running);
        let progress = pb::Progress {
            sweep_id: sweep.to_string(),
            status: record.status.as_str().to_string(),
            total: counts.total(),
            pending: counts.get(GameState::Pending),
            running,
            done: counts.get(GameState::Done),
            failed: counts.get(GameState::Failed),
            interrupted: counts.get(GameState::Interrupted),
            live_calls: totals.live_calls,
            cache_hits: totals.cache_hits,
            tokens: totals.live_tokens,
            usd: totals.live_usd,
            ended: record.status != SweepStatus::Running && running == 0,
        };
        Ok((progress, rows))
    }
}

struct SweepsService(RedisHandles);
/// The worker protocol (register, heartbeat, report): `workers.rs`.
struct WorkersService(RedisHandles);

type ProgressStream = Pin<Box<dyn Stream<Item = Result<pb::Progress, Status>> + Send>>;
type ResultStream = Pin<Box<dyn Stream<Item = Result<pb::ResultsPart, Status>> + Send>>;
type ChunkStream = Pin<Box<dyn Stream<Item = Result<pb::TranscriptChunk, Status>> + Send>>;

fn refusal_status(r: Refusal) -> Status {
    match r {
        Refusal::Conflict(m) => Status::invalid_argument(m),
        Refusal::Undeclared(m) => Status::failed_precondition(m),
    }
}

/// Plans a submission on tokio's blocking pool: a sweep of many games takes a while to expand, and
/// the coordinator's async threads keep answering heartbeats meanwhile.
async fn plan_off_thread(
    req: pb::SubmitRequest,
) -> Result<(sleuth_sweep::Plan, pb::SubmitRequest), Status> {
    tokio::task::spawn_blocking(move || submission::plan(&req).map(|p| (p, req)))
        .await
        .map_err(|e| Status::internal(format!("planning stopped: {e}")))?
        .map_err(|e| Status::invalid_argument(e.to_string()))
}

#[tonic::async_trait]
impl Sweeps for SweepsService {
    async fn submit(
        &self,
        request: Request<pb::SubmitRequest>,
    ) -> Result<Response<pb::SubmitResponse>, Status> {
        let s = &self.0;
        let mut req = request.into_inner();
        // Measured before it is planned: planning builds every game's spec in memory.
        let size = submission::size(&req).map_err(|e| Status::invalid_argument(e.to_string()))?;
        if size.games > u128::from(s.max_games) {
            return Err(Status::resource_exhausted(format!(
                "{}: the sweep plans {size}, more than the {} games per sweep this coordinator \
                 takes (`sleuth coordinator --max-games-per-sweep`); split it into smaller sweeps",
                req.file_name, s.max_games
            )));
        }
        // Endpoints and keys are the workers' (`cluster::models`): refused if the file sets others,
        // pinned to the declared ones otherwise, so every node plans the same specs and ids.
        let declared = s.declarations().await?;
        req.sweep_toml =
            declared::pin_endpoints(&req.sweep_toml, &declared).map_err(refusal_status)?;
        // Planned exactly as a local run plans it: every check a local run makes, before anything is
        // queued or spent.
        let (plan, req) = plan_off_thread(req).await?;
        declared::check_served(&plan, &declared).map_err(refusal_status)?;
        let sweep_id = plan.sweep.file.name.clone();
        let bytes = submission::encode(&req);
        let kept = s
            .store
            .put_blob_once(&submission::key(&sweep_id), &bytes)
            .await
            .map_err(store_status)?;
        if kept != bytes {
            // Submitted before: the same games (from another directory, say) continue that sweep;
            // other games under the same name would mix two experiments.
            let before = match submission::decode(&kept) {
                Ok(r) => plan_off_thread(r).await.ok().map(|(p, _)| p),
                Err(_) => None,
            };
            let ids = |p: &sleuth_sweep::Plan| -> Vec<String> {
                p.games.iter().map(|g| g.id.clone()).collect()
            };
            let same = before.is_some_and(|b| ids(&b) == ids(&plan));
            if !same {
                return Err(Status::failed_precondition(format!(
                    "a sweep named `{sweep_id}` was submitted before with other games; give the changed file another `name`"
                )));
            }
        }
        s.store
            .open_sweep(&plan.sweep_record())
            .await
            .map_err(store_status)?;
        s.store
            .set_sweep_status(&sweep_id, SweepStatus::Running, None)
            .await
            .map_err(store_status)?;
        let rows = plan.game_rows(&sweep_id);
        s.store.add_games(&rows).await.map_err(store_status)?;
        let queued = queue_unfinished(s, &sweep_id).await?;
        tracing::info!(sweep = %sweep_id, games = plan.games.len(), queued, "sweep submitted");
        Ok(Response::new(pb::SubmitResponse {
            sweep_id,
            games: plan.games.len() as u64,
            queued: queued as u64,
            arms: plan.arms.len() as u64,
        }))
    }

    type WatchStream = ProgressStream;

    async fn watch(
        &self,
        request: Request<pb::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let s = self.0.clone();
        let sweep = request.into_inner().sweep_id;
        // The first answer is an error when the sweep does not exist.
        let first = s.progress(&sweep).await?;
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        tokio::spawn(async move {
            let mut last = first;
            if tx.send(Ok(last.clone())).await.is_err() {
                return;
            }
            while !last.ended {
                tokio::time::sleep(WATCH_EVERY).await;
                match s.progress(&sweep).await {
                    Ok(p) if p != last => {
                        last = p;
                        if tx.send(Ok(last.clone())).await.is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    // Redis is away (restarting): the watcher waits for it rather than giving up.
                    Err(e) if e.code() == tonic::Code::Unavailable => {}
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                }
                if tx.is_closed() {
                    return;
                }
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }

    async fn cancel(
        &self,
        request: Request<pb::CancelRequest>,
    ) -> Result<Response<pb::CancelResponse>, Status> {
        let s = &self.0;
        let sweep = request.into_inner().sweep_id;
        if s.store.sweep(&sweep).await.map_err(store_status)?.is_none() {
            return Err(Status::not_found(format!("no sweep named `{sweep}`")));
        }
        let counts = s.store.state_counts(&sweep).await.map_err(store_status)?;
        s.store
            .set_sweep_status(
                &sweep,
                SweepStatus::Cancelled,
                Some("cancelled: its remaining games are not played".into()),
            )
            .await
            .map_err(store_status)?;
        let dropped = counts.get(GameState::Pending) + counts.get(GameState::Interrupted);
        tracing::info!(%sweep, dropped, "sweep cancelled");
        Ok(Response::new(pb::CancelResponse { dropped }))
    }

    async fn list_workers(
        &self,
        _request: Request<pb::ListWorkersRequest>,
    ) -> Result<Response<pb::ListWorkersResponse>, Status> {
        let now = now_ms();
        let idle = self.0.claim_idle.as_millis() as u64;
        let workers = self
            .0
            .workers()
            .await?
            .into_iter()
            .map(|(id, r)| pb::WorkerInfo {
                alive: now.saturating_sub(r.last_ms) < idle,
                worker_id: id,
                host: r.host,
                pid: r.pid,
                capacity: r.capacity,
                in_flight: r.in_flight,
                games_done: r.games_done,
                silent_ms: now.saturating_sub(r.last_ms),
                metrics_addr: r.metrics_addr,
            })
            .collect();
        Ok(Response::new(pb::ListWorkersResponse { workers }))
    }

    type ResultsStream = ResultStream;

    async fn results(
        &self,
        request: Request<pb::ResultsRequest>,
    ) -> Result<Response<Self::ResultsStream>, Status> {
        reading::results(self.0.clone(), request.into_inner()).await
    }

    async fn list_sweeps(
        &self,
        _request: Request<pb::ListSweepsRequest>,
    ) -> Result<Response<pb::ListSweepsResponse>, Status> {
        reading::list_sweeps(&self.0).await.map(Response::new)
    }

    type TranscriptStream = ChunkStream;

    async fn transcript(
        &self,
        request: Request<pb::TranscriptRequest>,
    ) -> Result<Response<Self::TranscriptStream>, Status> {
        reading::transcript(&self.0, request.into_inner().game_id).await
    }
}

/// Queues every game of `sweep` that is neither done nor failed and has no entry yet.
async fn queue_unfinished(s: &RedisHandles, sweep: &str) -> Result<usize, Status> {
    let entries: Vec<GameEntry> = s
        .store
        .games(sweep)
        .await
        .map_err(store_status)?
        .into_iter()
        .filter(|g| !matches!(g.state, GameState::Done | GameState::Failed))
        .map(|g| GameEntry {
            sweep: sweep.to_string(),
            game: g.id,
        })
        .collect();
    s.queue.push_new(&entries).await.map_err(queue_status)
}

/// One pass of the coordinator's loop (see the module documentation).
async fn reconcile(s: &RedisHandles, tick: u64) -> Result<(), ClusterError> {
    let sweeps = s.store.sweeps().await?;
    let cancelled = sweeps
        .iter()
        .filter(|w| w.status == SweepStatus::Cancelled)
        .map(|w| w.id.clone())
        .collect();
    if let Ok(mut c) = s.cancelled.write() {
        *c = cancelled;
    }
    for sweep in sweeps {
        if sweep.status != SweepStatus::Running {
            continue;
        }
        let counts = s.store.state_counts(&sweep.id).await?;
        let left = counts.get(GameState::Pending)
            + counts.get(GameState::Running)
            + counts.get(GameState::Interrupted);
        if left == 0 {
            let totals = SourceTotals::of(&s.store.totals(&sweep.id).await?);
            let note = format!(
                "finished: spent ${:.4} and {} tokens in all; {} done, {} failed",
                totals.live_usd,
                totals.live_tokens,
                counts.get(GameState::Done),
                counts.get(GameState::Failed),
            );
            s.store
                .set_sweep_status(&sweep.id, SweepStatus::Finished, Some(note))
                .await?;
            tracing::info!(sweep = %sweep.id, "sweep finished");
        } else if tick.is_multiple_of(5) {
            // Insurance: an unfinished game always has an entry (one a worker skipped while the sweep
            // was cancelled, say, before it was submitted again).
            let n = queue_unfinished(s, &sweep.id)
                .await
                .map_err(|e| ClusterError::Setup(e.message().to_string()))?;
            if n > 0 {
                tracing::info!(sweep = %sweep.id, queued = n, "queued games that had no entry");
            }
        }
    }
    let now = now_ms();
    let workers = s
        .workers()
        .await
        .map_err(|e| ClusterError::Setup(e.message().to_string()))?;
    let live = workers
        .iter()
        .filter(|(_, r)| now.saturating_sub(r.last_ms) < s.claim_idle.as_millis() as u64)
        .count();
    metrics::gauge!(tm::CLUSTER_WORKERS).set(live as f64);
    let forget: Vec<&String> = workers
        .iter()
        .filter(|(_, r)| now.saturating_sub(r.last_ms) > FORGET_AFTER.as_millis() as u64)
        .map(|(id, _)| id)
        .collect();
    if !forget.is_empty() {
        let mut con = s.store.connection();
        let mut cmd = redis::cmd("HDEL");
        cmd.arg(&s.workers_key);
        for id in forget {
            cmd.arg(id);
        }
        let _: Result<(), _> = cmd.query_async(&mut con).await;
    }
    let entries = s.queue.entries().await?;
    let delivered = s.queue.pending().await?;
    metrics::gauge!(tm::CLUSTER_QUEUE, "state" => "waiting")
        .set(entries.saturating_sub(delivered) as f64);
    metrics::gauge!(tm::CLUSTER_QUEUE, "state" => "delivered").set(delivered as f64);
    Ok(())
}

/// A coordinator that has reached Redis and bound its port, not yet serving: what `sleuth
/// coordinator` announces as "serving on ADDR" is then true — Redis answered, and the port accepts
/// connections (into the kernel's backlog until [`Coordinator::serve`] takes them, a moment later).
pub struct Coordinator {
    cfg: CoordinatorConfig,
    tokens: ServerTokens,
    shared: RedisHandles,
    listener: Listener,
}

impl Coordinator {
    /// Checks the settings, connects to Redis (answering, with the work queue's group in place) and
    /// binds the listen address — in that order, and nothing is served yet.
    pub async fn start(cfg: CoordinatorConfig) -> Result<Coordinator, ClusterError> {
        cfg.check()?;
        let tokens = cfg.tokens()?;
        let store = RedisStore::connect(&cfg.redis, &cfg.namespace)
            .await
            .map_err(|e| {
                ClusterError::Setup(format!(
                    "{e}; the coordinator keeps everything in Redis and serves nothing until it answers"
                ))
            })?;
        let queue = WorkQueue::open(store.connection(), &cfg.namespace).await?;
        let shared = RedisHandles {
            workers_key: format!("{}workers", store.prefix()),
            store,
            queue,
            namespace: cfg.namespace.clone(),
            heartbeat: cfg.heartbeat,
            claim_idle: cfg.claim_idle,
            max_games: cfg.max_games,
            cancelled: Arc::default(),
        };
        let listener = Listener::bind(cfg.listen, cfg.limits).await?;
        Ok(Coordinator {
            cfg,
            tokens,
            shared,
            listener,
        })
    }

    /// The address it listens on (the system's pick when the configured port is 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` resolves.
    pub async fn serve(self, shutdown: Shutdown) -> Result<(), ClusterError> {
        let Coordinator {
            cfg,
            tokens,
            shared,
            listener,
        } = self;
        let addr = listener.local_addr();

        let looped = shared.clone();
        let stop_loop = Shutdown::new();
        let stopped = stop_loop.clone();
        let reconciler = tokio::spawn(async move {
            let mut tick = 0u64;
            loop {
                if let Err(e) = reconcile(&looped, tick).await {
                    tracing::warn!(error = %e, "coordinator loop (retrying)");
                }
                tick += 1;
                tokio::select! {
                    _ = tokio::time::sleep(RECONCILE_EVERY) => {}
                    _ = stopped.draining() => return,
                }
            }
        });

        let (health, health_service) = tonic_health::server::health_reporter();
        health.set_serving::<SweepsServer<SweepsService>>().await;
        health.set_serving::<WorkersServer<WorkersService>>().await;
        // Both versions of reflection: grpcurl and older tools still ask for v1alpha.
        let reflection = tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(super::proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .build_v1()
            .map_err(|e| ClusterError::Setup(format!("reflection: {e}")))?;
        let reflection_alpha = tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(super::proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .build_v1alpha()
            .map_err(|e| ClusterError::Setup(format!("reflection: {e}")))?;
        let mut builder = serving::builder(&cfg.limits, cfg.tls.as_ref())?;
        tracing::info!(
            %addr,
            namespace = %cfg.namespace,
            read_only_token = cfg.read_token.is_some(),
            "coordinator serving"
        );
        let served = builder
            // Health and reflection answer without the token: probes and `grpcurl list` need no
            // secret, and they reveal nothing but the API's shape.
            .add_service(health_service)
            .add_service(reflection)
            .add_service(reflection_alpha)
            // A submission carries every script of the sweep: larger than tonic's default 4 MiB by
            // design (results stream in pieces, so nothing else needs it).
            .add_service(Authorized::new(
                SweepsServer::new(SweepsService(shared.clone()))
                    .max_decoding_message_size(MAX_MESSAGE_BYTES)
                    .max_encoding_message_size(MAX_MESSAGE_BYTES),
                tokens.clone(),
            ))
            .add_service(Authorized::new(
                WorkersServer::new(WorkersService(shared)),
                tokens,
            ))
            .serve_with_incoming_shutdown(
                listener.incoming(),
                async move { shutdown.draining().await },
            )
            .await;
        // The loop finishes the pass it is in (each of its writes is one atomic step in Redis).
        stop_loop.drain();
        let _ = reconciler.await;
        served.map_err(|e| ClusterError::Setup(format!("cannot serve on {addr}: {e}")))
    }
}

/// Connects, binds and serves until `shutdown` resolves ([`Coordinator::start`], then
/// [`Coordinator::serve`]).
pub async fn serve(cfg: CoordinatorConfig, shutdown: Shutdown) -> Result<(), ClusterError> {
    Coordinator::start(cfg).await?.serve(shutdown).await
}
