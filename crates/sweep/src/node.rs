//! The node supervisor: the one actor above everything node-wide — the LLM gateway and the local
//! scheduler — that decides what a failure of either costs.
//!
//! - **The gateway** holds no state a restart could lose (its layers — router, cache, budget, limits,
//!   ledger — live in a shared [`GatewayState`] that outlives it; its request tasks run on their own),
//!   so a gateway that dies is started again over the same state at once, and the new actor is
//!   published on a watch channel that every [`Gateway`] handle follows: calls in flight or sent in
//!   the meantime reach the successor instead of failing with `Unavailable`.
//! - **The scheduler** holds the run's queue; if it dies the run cannot go on, so the node reports it
//!   (the run ends with an error) and everything it had written stays in the store for the next run.
//!
//! The store's writer is a thread owned by the store (see `store::sqlite`), not an actor: a failure
//! there surfaces as an error on the write that hit it.

use std::path::PathBuf;
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::{oneshot, watch};

use sleuth_base::telemetry as tm;
use sleuth_llm::batch::BatchQueue;
use sleuth_llm::batch_worker::{spawn_worker, BatchWorker, WorkerParts};
use sleuth_llm::{
    Budget, Gateway, GatewayActor, GatewayConfig, GatewayMsg, GatewayParts, GatewayState, Ledger,
    LedgerOptions, SharedLimits,
};
use sleuth_store::Store;

use super::file::GatewaySettings;
use super::models;
use super::plan::Plan;
use super::SweepError;

/// Messages to the node.
pub enum NodeMsg {
    /// Restarts of the gateway so far.
    Restarts(ractor::RpcReplyPort<u64>),
}

/// The node's state.
pub struct NodeState {
    gateway_state: GatewayState,
    publish: watch::Sender<Option<ActorRef<GatewayMsg>>>,
    gateway: Option<ActorRef<GatewayMsg>>,
    restarts: u64,
    scheduler_lost: Option<oneshot::Sender<String>>,
}

/// What the node starts from.
pub struct NodeArgs {
    pub gateway: GatewayState,
    pub publish: watch::Sender<Option<ActorRef<GatewayMsg>>>,
    pub scheduler_lost: oneshot::Sender<String>,
}

/// The node supervisor actor.
pub struct Node;

/// A running node: its actor, the gateway handle its games use, and word of a lost scheduler.
pub struct NodeHandle {
    pub actor: ActorRef<NodeMsg>,
    pub gateway: Gateway,
    pub scheduler_lost: oneshot::Receiver<String>,
}

impl Node {
    /// Starts a node over `gateway` (the layered gateway's state).
    pub async fn start(
        gateway: GatewayState,
        provider: &'static str,
    ) -> Result<NodeHandle, ractor::SpawnErr> {
        let (publish, rx) = watch::channel(None);
        let (lost_tx, lost_rx) = oneshot::channel();
        let (actor, _join) = Actor::spawn(
            None,
            Node,
            NodeArgs {
                gateway,
                publish,
                scheduler_lost: lost_tx,
            },
        )
        .await?;
        Ok(NodeHandle {
            actor,
            gateway: Gateway::supervised(rx, provider),
            scheduler_lost: lost_rx,
        })
    }
}

async fn spawn_gateway(
    me: &ActorRef<NodeMsg>,
    st: &GatewayState,
) -> Result<ActorRef<GatewayMsg>, ActorProcessingErr> {
    let (g, _) = Actor::spawn_linked(None, GatewayActor, st.clone(), me.get_cell()).await?;
    Ok(g)
}

impl Actor for Node {
    type Msg = NodeMsg;
    type State = NodeState;
    type Arguments = NodeArgs;

    async fn pre_start(
        &self,
        me: ActorRef<Self::Msg>,
        args: NodeArgs,
    ) -> Result<NodeState, ActorProcessingErr> {
        let gateway = spawn_gateway(&me, &args.gateway).await?;
        args.publish.send_replace(Some(gateway.clone()));
        Ok(NodeState {
            gateway_state: args.gateway,
            publish: args.publish,
            gateway: Some(gateway),
            restarts: 0,
            scheduler_lost: Some(args.scheduler_lost),
        })
    }

    async fn post_stop(
        &self,
        _me: ActorRef<Self::Msg>,
        st: &mut NodeState,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(g) = st.gateway.take() {
            g.stop(None);
        }
        st.publish.send_replace(None);
        Ok(())
    }

    async fn handle(
        &self,
        _me: ActorRef<Self::Msg>,
        msg: NodeMsg,
        st: &mut NodeState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            NodeMsg::Restarts(reply) => {
                let _ = reply.send(st.restarts);
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        me: ActorRef<Self::Msg>,
        evt: SupervisionEvent,
        st: &mut NodeState,
    ) -> Result<(), ActorProcessingErr> {
        let (who, why) = match &evt {
            SupervisionEvent::ActorFailed(who, err) => (who.get_id(), err.to_string()),
            SupervisionEvent::ActorTerminated(who, _, reason) => (
                who.get_id(),
                reason.clone().unwrap_or_else(|| "stopped".into()),
            ),
            _ => return Ok(()),
        };
        if st.gateway.as_ref().is_some_and(|g| g.get_id() == who) {
            tracing::warn!(reason = %why, "the LLM gateway died; starting another");
            st.restarts += 1;
            metrics::counter!(tm::GATEWAY_RESTARTS).increment(1);
            let g = spawn_gateway(&me, &st.gateway_state).await?;
            st.publish.send_replace(Some(g.clone()));
            st.gateway = Some(g);
        } else if let Some(lost) = st.scheduler_lost.take() {
            // Any other child is the scheduler.
            if matches!(evt, SupervisionEvent::ActorFailed(..)) {
                let _ = lost.send(why);
            } else {
                st.scheduler_lost = Some(lost);
            }
        }
        Ok(())
    }
}

/// Restarts of the node's gateway so far.
pub async fn restarts(node: &ActorRef<NodeMsg>) -> u64 {
    match node.call(NodeMsg::Restarts, None).await {
        Ok(ractor::rpc::CallResult::Success(n)) => n,
        _ => 0,
    }
}

/// What a node's gateway is built from besides the plan: the parts in which one node running a sweep
/// alone and a cluster worker differ.
pub struct NodeSetup {
    /// The cache's and the ledger's store.
    pub store: Arc<dyn Store>,
    /// The sweep's budget kept on this node (one node); a cluster keeps it in Redis (`shared`).
    pub budget: Option<Arc<Budget>>,
    /// Limits and budget shared with other workers (a cluster).
    pub shared: Option<Arc<dyn SharedLimits>>,
    /// Where evaluation calls of batch models wait; its worker is started with the node.
    pub batch: Option<Arc<BatchQueue>>,
    /// Where ledger entries wait while the store does not take them, replayed when it answers again.
    pub ledger_spill: Option<PathBuf>,
}

/// A node assembled for a sweep: the supervisor and its gateway, the ledger, and the batch worker if
/// the sweep has batch models.
pub struct AssembledNode {
    pub handle: NodeHandle,
    pub ledger: Ledger,
    /// Stopped by its owner when the run ends ([`BatchWorker::stop`]).
    pub batch_worker: Option<BatchWorker>,
}

/// Builds the layered gateway a plan needs — routes, prices and limits from its models table, the
/// settings of its `[gateway]`, cache, budget, ledger — and starts a node over it. The one place a
/// node is put together, for `sweep run` and for a cluster's workers alike.
pub async fn assemble(plan: &Plan, setup: NodeSetup) -> Result<AssembledNode, SweepError> {
    let settings = &plan.sweep.file.gateway;
    let config = gateway_config(settings);
    let (router, pricing) = models::gateway_routes(plan, config.timeout)?;
    let provider = router.provider_name();
    let batch_worker = setup.batch.as_ref().map(|q| {
        spawn_worker(
            q.clone(),
            WorkerParts {
                router: router.clone(),
                pricing: pricing.clone(),
                store: setup.store.clone(),
                budget: setup.budget.clone(),
            },
        )
    });
    let options = match setup.ledger_spill {
        Some(path) => LedgerOptions::spilling_to(path),
        None => LedgerOptions::default(),
    };
    let ledger = Ledger::start_with(setup.store.clone(), options);
    let state = GatewayState::new(GatewayParts {
        router,
        pricing,
        config,
        cache: settings.cache.then(|| setup.store.clone()),
        budget: setup.budget,
        ledger: Some(ledger.clone()),
        shared: setup.shared,
        batch: setup.batch,
    });
    let handle = Node::start(state, provider)
        .await
        .map_err(|e| SweepError::Setup(format!("cannot start the node: {e}")))?;
    Ok(AssembledNode {
        handle,
        ledger,
        batch_worker,
    })
}

/// The gateway's settings from the sweep file's `[gateway]`.
fn gateway_config(g: &GatewaySettings) -> GatewayConfig {
    let default = GatewayConfig::default();
    GatewayConfig {
        max_retries: g.max_retries.unwrap_or(default.max_retries),
        backoff_base: g
            .retry_base_ms
            .map(std::time::Duration::from_millis)
            .unwrap_or(default.backoff_base),
        timeout: g
            .timeout_secs
            .map(std::time::Duration::from_secs)
            .unwrap_or(default.timeout),
        keep_requests: g.keep_requests,
        ..default
    }
}
