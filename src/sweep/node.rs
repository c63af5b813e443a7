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

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::{oneshot, watch};

use crate::llm::{Gateway, GatewayActor, GatewayMsg, GatewayState};
use crate::telemetry as tm;

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
