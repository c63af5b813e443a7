//! The first layer: which endpoint answers a model name.
//!
//! A sweep's models table gives every model its own endpoint (provider, base URL, the model id the
//! endpoint knows it by) and its own limits; a single `sleuth play` sends every model name to the one
//! provider its flags name. Each route carries the endpoint's identity — provider, base URL and model
//! id — because that, not the name a sweep file gives the model, is what decides an answer: two
//! aliases of one endpoint share cache entries, one alias moved to another server does not.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::limits::ModelLimits;
use crate::provider::SharedProvider;

/// Where one model's calls go.
pub struct Route {
    /// The route's own provider instance: what it learns about its endpoint (an `openai` provider's
    /// structured-output and token-limit fallbacks) is remembered per route, by every game of the node.
    pub provider: SharedProvider,
    /// The model id sent to the endpoint; `None` keeps the name the caller used.
    pub model: Option<String>,
    /// `provider|base URL` (the base URL empty for the in-process simulated model): with the model id,
    /// the endpoint part of a cache key.
    pub endpoint: String,
    /// Rate and concurrency limits of this model, if it has any.
    pub limits: Option<Arc<ModelLimits>>,
    /// The model's context window as configured (a sweep's models table, `--context-window`); `None`
    /// asks the endpoint once, then the built-in table ([`Route::context_window`]).
    pub window: Option<u32>,
    /// Evaluation calls go through the provider's batch interface (`llm::batch`).
    pub batch: bool,
    /// What the endpoint reported, asked on the first call.
    discovered: tokio::sync::OnceCell<Option<u32>>,
}

impl Route {
    /// A route to `provider` at `base_url`, with no alias and no limits.
    pub fn new(provider: SharedProvider, base_url: Option<&str>) -> Route {
        let endpoint = format!("{}|{}", provider.name(), base_url.unwrap_or(""));
        Route {
            provider,
            model: None,
            endpoint,
            limits: None,
            window: None,
            batch: false,
            discovered: tokio::sync::OnceCell::new(),
        }
    }

    /// The context window of `requested` on this route: as configured; else as the endpoint reports
    /// it (vLLM, llama.cpp; asked once per route); else from the built-in table of known models
    /// (`llm/window.rs`); else unknown, and nothing is shortened.
    pub async fn context_window(&self, requested: &str) -> Option<u32> {
        if self.window.is_some() {
            return self.window;
        }
        let id = self.model_id(requested);
        let reported = *self
            .discovered
            .get_or_init(|| self.provider.context_window(id))
            .await;
        reported.or_else(|| crate::window::known(id))
    }

    /// The model id the endpoint is asked for when the caller names `requested`.
    pub fn model_id<'a>(&'a self, requested: &'a str) -> &'a str {
        self.model.as_deref().unwrap_or(requested)
    }
}

/// Model name → route, with an optional route for every other name.
#[derive(Clone, Default)]
pub struct Router {
    routes: BTreeMap<String, Arc<Route>>,
    fallback: Option<Arc<Route>>,
}

impl Router {
    /// Every model to one route (what `sleuth play` does).
    pub fn single(route: Route) -> Router {
        Router {
            routes: BTreeMap::new(),
            fallback: Some(Arc::new(route)),
        }
    }

    /// Adds (or replaces) the route of `model`.
    pub fn add(&mut self, model: impl Into<String>, route: Route) {
        self.routes.insert(model.into(), Arc::new(route));
    }

    /// Sends names with no route of their own to `route`.
    pub fn set_fallback(&mut self, route: Route) {
        self.fallback = Some(Arc::new(route));
    }

    /// The route of `model`, if it has one.
    pub fn route(&self, model: &str) -> Option<&Arc<Route>> {
        self.routes.get(model).or(self.fallback.as_ref())
    }

    /// The provider answering names without a route of their own, or the first route's.
    pub fn provider_name(&self) -> &'static str {
        self.fallback
            .as_ref()
            .or_else(|| self.routes.values().next())
            .map(|r| r.provider.name())
            .unwrap_or("none")
    }
}
