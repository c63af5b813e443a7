//! The provider trait: one attempt at one request, with errors classified for the gateway's retry policy.
//!
//! Providers never retry by themselves; the gateway does, so that every retry is counted and every wait
//! honours the server's Retry-After.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::simulated;
use super::types::{ChatRequest, ChatResponse, TokenUsage};
use sleuth_base::text;

pub mod batch;
mod error;

pub use batch::{BatchEndpoint, RemoteBatch};
pub use error::ProviderError;

/// Vectors for a batch of texts, with the tokens the provider billed.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbedResponse {
    pub vectors: Vec<Vec<f32>>,
    pub prompt_tokens: Option<u64>,
}

/// A model endpoint.
pub trait Provider: Send + Sync {
    /// Name for logs and errors (`simulated`, `openai`).
    fn name(&self) -> &'static str;
    /// One attempt at a chat completion.
    fn chat<'a>(
        &'a self,
        req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>>;
    /// One attempt at embedding a batch of texts.
    fn embed<'a>(
        &'a self,
        model: &'a str,
        inputs: &'a [String],
    ) -> BoxFuture<'a, Result<EmbedResponse, ProviderError>>;
    /// The model's context window as the endpoint reports it, if it does (vLLM, llama.cpp): asked once
    /// per route, on its first call, and never an error (an endpoint that does not say is unknown).
    fn context_window<'a>(&'a self, _model: &'a str) -> BoxFuture<'a, Option<u32>> {
        Box::pin(async { None })
    }
    /// The body `req` would be sent with, for a batch file's line (`llm::batch`); `None` when the
    /// endpoint has no batch interface (the in-process simulated model).
    fn batch_body(&self, _req: &ChatRequest) -> Option<serde_json::Value> {
        None
    }
    /// A chat completion from a batch's output file, read as a live reply to a request with
    /// `max_tokens` would be.
    fn batch_reply(
        &self,
        _max_tokens: u32,
        _body: serde_json::Value,
    ) -> Result<ChatResponse, ProviderError> {
        Err(ProviderError::Decode(
            "this provider has no batch interface".into(),
        ))
    }
    /// The endpoint's batch interface, if it has one.
    fn batch_api(&self) -> Option<Arc<dyn BatchEndpoint>> {
        None
    }
}

/// A shared provider.
pub type SharedProvider = Arc<dyn Provider>;

/// The in-process simulated model, optionally with a fixed latency per call.
///
/// The model is pure CPU work (milliseconds for a long prompt), so it answers on the bounded blocking
/// pool of [`sleuth_base::cpu`], never on an async worker: a game issues dozens of calls at once, and their
/// answers must not stall the timers and sockets of every other task meanwhile. The answer's usage is
/// counted there too, so the gateway never falls back to counting tokens on its own worker.
#[derive(Debug, Clone, Default)]
pub struct SimulatedProvider {
    pub latency: Duration,
}

/// The simulated model's answer to `req`, with its usage (counted here if the model left it out).
fn simulate(req: &ChatRequest) -> ChatResponse {
    let mut resp = simulated::respond(req);
    if resp.usage.is_none() {
        resp.usage = Some(TokenUsage {
            prompt_tokens: super::tokens::count_messages(&req.messages),
            completion_tokens: super::tokens::count(&resp.content),
            cached_tokens: 0,
        });
    }
    resp
}

impl Provider for SimulatedProvider {
    fn name(&self) -> &'static str {
        "simulated"
    }

    fn chat<'a>(
        &'a self,
        req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            if !self.latency.is_zero() {
                tokio::time::sleep(self.latency).await;
            }
            let req = req.clone();
            // A panic in the model is a bug, not a transient failure: reported as an unusable answer,
            // which the gateway does not retry.
            sleuth_base::cpu::run(move || simulate(&req))
                .await
                .map_err(|e| ProviderError::Decode(format!("simulated model: {e}")))
        })
    }

    fn embed<'a>(
        &'a self,
        _model: &'a str,
        inputs: &'a [String],
    ) -> BoxFuture<'a, Result<EmbedResponse, ProviderError>> {
        Box::pin(async move {
            let tokens = inputs.iter().map(|t| super::tokens::count(t)).sum();
            Ok(EmbedResponse {
                vectors: inputs
                    .iter()
                    .map(|t| text::hashed_vector(t, text::HASHED_DIMS))
                    .collect(),
                prompt_tokens: Some(tokens),
            })
        })
    }
}
