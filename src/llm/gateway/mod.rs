//! The LLM gateway: the one road from any agent, judge or generator to any model.
//!
//! A node-wide actor. Each request is handed to its own task, so a slow model never blocks the mailbox;
//! the task runs the request's [`pipeline`]: retries of transient failures with exponential backoff,
//! full jitter and the server's Retry-After ([`retry`]), token counting and pricing ([`accounting`]),
//! parsing and re-asking of structured output ([`structured`]). The caller gets the answer with its
//! [`Usage`], which it attaches to the transcript event the call produced: summing events gives the run's
//! total without a second ledger.

mod accounting;
mod error;
mod pipeline;
mod retry;
mod structured;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde_json::Value;

pub use error::LlmError;
pub use retry::backoff;

use super::pricing::Pricing;
use super::provider::SharedProvider;
use super::types::{CallTags, ChatRequest, ChatResponse, Usage};
use crate::telemetry as tm;

/// Retry and rerun policy.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// Attempts after the first for transient failures (429, 5xx, timeouts, connection errors).
    pub max_retries: u32,
    /// First backoff; doubles per attempt up to `backoff_max`, with full jitter.
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// Per-attempt timeout.
    pub timeout: Duration,
    /// Re-asks after an unparseable structured output.
    pub max_reruns: u32,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            max_retries: 8,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            timeout: Duration::from_secs(120),
            max_reruns: 2,
        }
    }
}

/// A successful chat call.
#[derive(Debug, Clone)]
pub struct ChatOutcome {
    pub response: ChatResponse,
    /// The parsed JSON, for requests with a schema.
    pub json: Option<Value>,
    pub usage: Usage,
}

/// A successful embedding call.
#[derive(Debug, Clone)]
pub struct EmbedOutcome {
    pub vectors: Vec<Vec<f32>>,
    pub usage: Usage,
}

/// Messages the gateway actor takes.
pub enum GatewayMsg {
    Chat {
        req: ChatRequest,
        tags: CallTags,
        reply: RpcReplyPort<Result<ChatOutcome, LlmError>>,
    },
    Embed {
        model: String,
        inputs: Vec<String>,
        tags: CallTags,
        reply: RpcReplyPort<Result<EmbedOutcome, LlmError>>,
    },
}

/// What every request task shares.
struct Shared {
    provider: SharedProvider,
    pricing: Pricing,
    config: GatewayConfig,
}

struct GatewayActor;

impl Actor for GatewayActor {
    type Msg = GatewayMsg;
    type State = Arc<Shared>;
    type Arguments = Arc<Shared>;

    async fn pre_start(
        &self,
        _me: ActorRef<Self::Msg>,
        args: Arc<Shared>,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(args)
    }

    async fn handle(
        &self,
        _me: ActorRef<Self::Msg>,
        msg: GatewayMsg,
        shared: &mut Arc<Shared>,
    ) -> Result<(), ActorProcessingErr> {
        let shared = shared.clone();
        match msg {
            GatewayMsg::Chat { req, tags, reply } => {
                tokio::spawn(async move {
                    metrics::gauge!(tm::LLM_IN_FLIGHT).increment(1.0);
                    let out = pipeline::chat(&shared, req, &tags).await;
                    metrics::gauge!(tm::LLM_IN_FLIGHT).decrement(1.0);
                    // The caller may have gone (its game failed); nothing to do then.
                    let _ = reply.send(out);
                });
            }
            GatewayMsg::Embed {
                model,
                inputs,
                tags,
                reply,
            } => {
                tokio::spawn(async move {
                    let out = pipeline::embed(&shared, &model, &inputs, &tags).await;
                    let _ = reply.send(out);
                });
            }
        }
        Ok(())
    }
}

/// A cheap, clonable handle to the gateway actor.
#[derive(Clone)]
pub struct Gateway {
    actor: ActorRef<GatewayMsg>,
    provider: &'static str,
}

impl Gateway {
    /// Starts the node's gateway actor.
    pub async fn start(
        provider: SharedProvider,
        pricing: Pricing,
        config: GatewayConfig,
    ) -> Result<Gateway, ractor::SpawnErr> {
        let name = provider.name();
        let shared = Arc::new(Shared {
            provider,
            pricing,
            config,
        });
        let (actor, _join) = Actor::spawn(None, GatewayActor, shared).await?;
        Ok(Gateway {
            actor,
            provider: name,
        })
    }

    /// The provider's name.
    pub fn provider(&self) -> &'static str {
        self.provider
    }

    /// Stops the actor; in-flight request tasks finish on their own.
    pub fn stop(&self) {
        self.actor.stop(None);
    }

    /// One chat call. With a schema in the request, `json` of the outcome holds the parsed reply.
    pub async fn chat(&self, req: ChatRequest, tags: CallTags) -> Result<ChatOutcome, LlmError> {
        let r = self
            .actor
            .call(|reply| GatewayMsg::Chat { req, tags, reply }, None)
            .await;
        match r {
            Ok(ractor::rpc::CallResult::Success(out)) => out,
            _ => Err(LlmError::Unavailable),
        }
    }

    /// Embeds a batch of texts.
    pub async fn embed(
        &self,
        model: &str,
        inputs: Vec<String>,
        tags: CallTags,
    ) -> Result<EmbedOutcome, LlmError> {
        let model = model.to_string();
        let r = self
            .actor
            .call(
                |reply| GatewayMsg::Embed {
                    model,
                    inputs,
                    tags,
                    reply,
                },
                None,
            )
            .await;
        match r {
            Ok(ractor::rpc::CallResult::Success(out)) => out,
            _ => Err(LlmError::Unavailable),
        }
    }
}
