//! The LLM gateway: the one road from any agent, judge or generator to any model.
//!
//! A node-wide actor. Each request is handed to its own task, so a slow model never blocks the mailbox;
//! the task runs the request's [`pipeline`] through the layers in order: the model router
//! ([`router`]: each model to its endpoint), the content-addressed cache ([`cache`], with single
//! flight), then per attempt the model's concurrency limit ([`limits`], fair between arms, adapting
//! to the endpoint: [`adaptive`]), the budget ([`budget`], reserved when the request is about to go
//! out), the model's RPM/TPM — each followed, in a cluster, by its counterpart shared with the other
//! workers ([`shared`]) — then the provider under the per-attempt timeout, retried on transient
//! failures with a doubling backoff, equal jitter and the server's Retry-After up to a bound
//! ([`retry`], [`sleuth_base::backoff`]); on the way back token counting and pricing
//! ([`accounting`]), the ledger ([`ledger`]) and parsing and re-asking of structured output
//! ([`structured`]). The caller gets the answer with its [`Usage`], which it attaches to the
//! transcript event the call produced: summing events gives the game's own cost at list price, the
//! same whether its calls were live or replayed from the cache. What a sweep actually paid — cache
//! hits at $0, retries apart — is the store's ledger.

mod accounting;
mod adaptive;
mod budget;
mod cache;
mod error;
mod fair;
mod ledger;
mod limits;
mod live;
mod pipeline;
mod prefix;
pub mod requests;
mod retry;
mod router;
mod shared;
mod structured;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde_json::Value;
use tokio::sync::watch;

pub use accounting::count_batch_answer;
pub use budget::{Budget, BudgetExceeded, BudgetLimits, Reservation, Spent};
pub use cache::{chat_key, embed_key, StoredChat};
pub use error::LlmError;
pub use fair::FairSemaphore;
pub use ledger::{CallScope, CallTally, Ledger, LedgerOptions};
pub use limits::{LimitSettings, ModelLimits};
pub use prefix::{GamePromptCache, PromptCacheTally};
pub use retry::backoff;
pub use router::{Route, Router};
pub use shared::{Settle, SharedError, SharedLimits, SharedReservation, SharedSlot};

use super::pricing::Pricing;
use super::provider::SharedProvider;
use super::types::{CallTags, ChatRequest, ChatResponse, Usage};
use sleuth_base::telemetry as tm;
use sleuth_store::Store;

/// Retry and rerun policy.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// Attempts after the first for transient failures (429, 5xx, timeouts, connection errors).
    pub max_retries: u32,
    /// Ceiling of the first backoff; doubles per attempt up to `backoff_max`. Each wait is drawn
    /// in the upper half of its ceiling (equal jitter, [`sleuth_base::backoff`]).
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// The longest a server's Retry-After is honoured: a server asking for an hour gets this, then
    /// the call is tried again (and the retry budget decides).
    pub max_retry_after: Duration,
    /// Per-attempt timeout of the provider's request, from when it is sent (waits for slots, the
    /// budget and RPM/TPM are not part of it).
    pub timeout: Duration,
    /// Re-asks after an unparseable structured output.
    pub max_reruns: u32,
    /// Whether the cache keeps each live call's request beside its answer, for the viewer and the
    /// export (`requests.rs`). Keeping them is about a fifth of the gateway's CPU per call and over
    /// half of the store's bytes in a sweep of short games (docs/performance.md, section 9), and a
    /// game plays and replays the same without them, so a very large sweep may go without.
    pub keep_requests: bool,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            max_retries: 8,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            timeout: Duration::from_secs(120),
            max_reruns: 2,
            keep_requests: true,
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
///
/// The request and its tags travel behind `Arc`s: the caller keeps them to send again if the actor
/// dies, and the request task reads them, so one copy of a prompt (often the character's whole
/// script) serves both while the call waits for its slot — with thousands of games in flight, that
/// wait is most of a call's life.
pub enum GatewayMsg {
    Chat {
        req: Arc<ChatRequest>,
        tags: Arc<CallTags>,
        scope: Option<Arc<CallScope>>,
        reply: RpcReplyPort<Result<ChatOutcome, LlmError>>,
    },
    Embed {
        model: String,
        inputs: Arc<[String]>,
        tags: Arc<CallTags>,
        scope: Option<Arc<CallScope>>,
        reply: RpcReplyPort<Result<EmbedOutcome, LlmError>>,
    },
    /// A model's context window, if known (`Route::context_window`).
    ContextWindow {
        model: String,
        reply: RpcReplyPort<Result<Option<u32>, LlmError>>,
    },
    /// A game's cacheable prompt tallies and bytes tokenized, taken (and forgotten) once the game is
    /// over.
    PromptCache {
        game: String,
        reply: RpcReplyPort<Result<GamePromptCache, LlmError>>,
    },
    /// Test hook: the actor panics, so that its supervisor's restart can be tested.
    #[cfg(feature = "test-hooks")]
    Crash,
}

/// Everything the gateway is built from (see [`Gateway::start_with`]).
pub struct GatewayParts {
    /// Model name → endpoint and limits.
    pub router: Router,
    pub pricing: Pricing,
    pub config: GatewayConfig,
    /// The content-addressed cache's store; `None` turns the cache off.
    pub cache: Option<Arc<dyn Store>>,
    /// The sweep's budget, if it has one.
    pub budget: Option<Arc<Budget>>,
    /// Where call records go, if anywhere.
    pub ledger: Option<Ledger>,
    /// Limits and a budget shared with other processes (a cluster worker's Redis), checked in
    /// addition to the local ones; `None` outside a cluster.
    pub shared: Option<Arc<dyn SharedLimits>>,
    /// Where evaluation calls of `batch` models wait for a batch (`llm::batch`); `None`: every call
    /// is live.
    pub batch: Option<Arc<crate::batch::BatchQueue>>,
}

/// What every request task shares: the layers of the pipeline, in order.
pub(crate) struct Layers {
    router: Router,
    pricing: Pricing,
    config: GatewayConfig,
    cache: Option<Arc<cache::Cache>>,
    budget: Option<Arc<Budget>>,
    ledger: Option<Ledger>,
    shared_limits: Option<Arc<dyn SharedLimits>>,
    batch: Option<Arc<crate::batch::BatchQueue>>,
    /// The prompt prefixes sent, for the cacheable share of each game's prompts.
    prefixes: prefix::PrefixTracker,
}

impl Layers {
    fn new(parts: GatewayParts) -> Arc<Layers> {
        Arc::new(Layers {
            router: parts.router,
            pricing: parts.pricing,
            config: parts.config,
            cache: parts.cache.map(cache::Cache::new),
            budget: parts.budget,
            ledger: parts.ledger,
            shared_limits: parts.shared,
            batch: parts.batch,
            prefixes: prefix::PrefixTracker::default(),
        })
    }
}

/// The gateway actor. Its handler only spawns one task per request, so it holds no state a restart
/// could lose: a supervisor that sees it die starts another over the same [`GatewayState`].
pub struct GatewayActor;

/// The state a gateway actor (and every restart of it) runs over.
#[derive(Clone)]
pub struct GatewayState(Arc<Layers>);

impl GatewayState {
    pub fn new(parts: GatewayParts) -> GatewayState {
        GatewayState(Layers::new(parts))
    }
}

impl Actor for GatewayActor {
    type Msg = GatewayMsg;
    type State = GatewayState;
    type Arguments = GatewayState;

    async fn pre_start(
        &self,
        _me: ActorRef<Self::Msg>,
        args: GatewayState,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(args)
    }

    async fn handle(
        &self,
        _me: ActorRef<Self::Msg>,
        msg: GatewayMsg,
        state: &mut GatewayState,
    ) -> Result<(), ActorProcessingErr> {
        let shared = state.0.clone();
        match msg {
            GatewayMsg::Chat {
                req,
                tags,
                scope,
                reply,
            } => {
                tokio::spawn(async move {
                    metrics::gauge!(tm::LLM_IN_FLIGHT).increment(1.0);
                    let (out, bytes) = crate::tokens::metered(pipeline::chat(
                        &shared,
                        &req,
                        &tags,
                        scope.as_deref(),
                    ))
                    .await;
                    // Counted before the reply goes: a game takes its tallies after its last call.
                    shared.prefixes.add_tokenized(&tags.game, bytes);
                    metrics::gauge!(tm::LLM_IN_FLIGHT).decrement(1.0);
                    // The caller may have gone (its game failed); nothing to do then.
                    let _ = reply.send(out);
                });
            }
            GatewayMsg::Embed {
                model,
                inputs,
                tags,
                scope,
                reply,
            } => {
                tokio::spawn(async move {
                    let (out, bytes) = crate::tokens::metered(pipeline::embed(
                        &shared,
                        &model,
                        &inputs,
                        &tags,
                        scope.as_deref(),
                    ))
                    .await;
                    shared.prefixes.add_tokenized(&tags.game, bytes);
                    let _ = reply.send(out);
                });
            }
            GatewayMsg::ContextWindow { model, reply } => {
                // Asking the endpoint may take a moment, once per route: never on the actor.
                tokio::spawn(async move {
                    let out = match shared.router.route(&model) {
                        Some(route) => Ok(route.context_window(&model).await),
                        None => Err(LlmError::UnknownModel(model)),
                    };
                    let _ = reply.send(out);
                });
            }
            GatewayMsg::PromptCache { game, reply } => {
                let _ = reply.send(Ok(shared.prefixes.take(&game)));
            }
            #[cfg(feature = "test-hooks")]
            GatewayMsg::Crash => panic!("test hook: the gateway actor was asked to crash"),
        }
        Ok(())
    }
}

/// How long a caller waits for a dead gateway's successor before giving up with `Unavailable`.
const RESTART_WAIT: Duration = Duration::from_secs(30);

/// A cheap, clonable handle to the gateway actor.
///
/// The handle follows the actor through restarts: it reads the current actor from a watch channel
/// that the node supervisor updates when it starts a new one, and a call whose actor died before
/// answering is sent again to the successor (calls are idempotent: the same request meets the same
/// cache entry), so a crashed gateway costs its callers a moment, never an `Unavailable`.
#[derive(Clone)]
pub struct Gateway {
    actor: watch::Receiver<Option<ActorRef<GatewayMsg>>>,
    /// Keeps the channel open for a gateway nobody supervises.
    _owner: Option<Arc<watch::Sender<Option<ActorRef<GatewayMsg>>>>>,
    provider: &'static str,
    scope: Option<Arc<CallScope>>,
}

impl Gateway {
    /// Starts the node's gateway actor with one provider for every model, no cache, no budget and no
    /// limits: what a single `sleuth play` uses.
    pub async fn start(
        provider: SharedProvider,
        pricing: Pricing,
        config: GatewayConfig,
    ) -> Result<Gateway, ractor::SpawnErr> {
        Gateway::start_with(GatewayParts {
            router: Router::single(Route::new(provider, None)),
            pricing,
            config,
            cache: None,
            budget: None,
            ledger: None,
            shared: None,
            batch: None,
        })
        .await
    }

    /// Starts an unsupervised gateway actor from its parts.
    pub async fn start_with(parts: GatewayParts) -> Result<Gateway, ractor::SpawnErr> {
        let name = parts.router.provider_name();
        let (actor, _join) = Actor::spawn(None, GatewayActor, GatewayState::new(parts)).await?;
        let (tx, rx) = watch::channel(Some(actor));
        Ok(Gateway {
            actor: rx,
            _owner: Some(Arc::new(tx)),
            provider: name,
            scope: None,
        })
    }

    /// A handle that follows the actor a supervisor publishes on `actor`.
    pub fn supervised(
        actor: watch::Receiver<Option<ActorRef<GatewayMsg>>>,
        provider: &'static str,
    ) -> Gateway {
        Gateway {
            actor,
            _owner: None,
            provider,
            scope: None,
        }
    }

    /// The same gateway, with the calls made through the returned handle recorded under `scope`.
    pub fn scoped(&self, scope: Arc<CallScope>) -> Gateway {
        Gateway {
            scope: Some(scope),
            ..self.clone()
        }
    }

    /// The provider's name.
    pub fn provider(&self) -> &'static str {
        self.provider
    }

    /// Stops the actor; in-flight request tasks finish on their own.
    pub fn stop(&self) {
        if let Some(a) = self.actor.borrow().as_ref() {
            a.stop(None);
        }
    }

    /// Test hook: makes the current actor panic.
    #[cfg(feature = "test-hooks")]
    pub fn crash(&self) {
        if let Some(a) = self.actor.borrow().as_ref() {
            let _ = a.cast(GatewayMsg::Crash);
        }
    }

    /// Sends a request built by `make` to the current actor and waits for its answer; when the actor
    /// is dead (or dies before answering), waits for its successor and sends it again.
    async fn ask<T, F>(&self, mut make: F) -> Result<T, LlmError>
    where
        T: Send + 'static,
        F: FnMut(RpcReplyPort<Result<T, LlmError>>) -> GatewayMsg,
    {
        let mut rx = self.actor.clone();
        loop {
            let current = rx.borrow_and_update().clone();
            if let Some(actor) = current {
                if let Ok(ractor::rpc::CallResult::Success(out)) = actor.call(&mut make, None).await
                {
                    return out;
                }
                // Dead before or while handling it: wait for a successor.
                // Nobody restarts an unsupervised gateway: it stays gone.
                if self._owner.is_some() {
                    return Err(LlmError::Unavailable);
                }
                // A successor may already be published.
                if rx
                    .borrow()
                    .as_ref()
                    .is_some_and(|a| a.get_id() != actor.get_id())
                {
                    continue;
                }
            }
            match tokio::time::timeout(RESTART_WAIT, rx.changed()).await {
                Ok(Ok(())) => continue,
                _ => return Err(LlmError::Unavailable),
            }
        }
    }

    /// One chat call. With a schema in the request, `json` of the outcome holds the parsed reply.
    pub async fn chat(&self, req: ChatRequest, tags: CallTags) -> Result<ChatOutcome, LlmError> {
        let (req, tags) = (Arc::new(req), Arc::new(tags));
        let scope = self.scope.clone();
        self.ask(|reply| GatewayMsg::Chat {
            req: req.clone(),
            tags: tags.clone(),
            scope: scope.clone(),
            reply,
        })
        .await
    }

    /// The context window of `model`, if it has one: what the MIRAGE agent sizes its summaries by,
    /// and what decides whether a call must be sent the script's summary.
    pub async fn context_window(&self, model: &str) -> Result<Option<u32>, LlmError> {
        self.ask(|reply| GatewayMsg::ContextWindow {
            model: model.to_string(),
            reply,
        })
        .await
    }

    /// The cacheable share of a finished game's prompts (the prefix tracker's tallies, by phase); the
    /// gateway forgets them, so they are taken once.
    pub async fn take_prompt_cache(&self, game: &str) -> Result<GamePromptCache, LlmError> {
        self.ask(|reply| GatewayMsg::PromptCache {
            game: game.to_string(),
            reply,
        })
        .await
    }

    /// Embeds a batch of texts.
    pub async fn embed(
        &self,
        model: &str,
        inputs: Vec<String>,
        tags: CallTags,
    ) -> Result<EmbedOutcome, LlmError> {
        let (inputs, tags): (Arc<[String]>, _) = (inputs.into(), Arc::new(tags));
        let scope = self.scope.clone();
        self.ask(|reply| GatewayMsg::Embed {
            model: model.to_string(),
            inputs: inputs.clone(),
            tags: tags.clone(),
            scope: scope.clone(),
            reply,
        })
        .await
    }
}
