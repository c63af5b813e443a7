//! The flags that choose a model and how to reach it, shared by every command that calls one.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use clap::Args;

use sleuth_game::game::ProviderSpec;
use sleuth_llm::{
    Gateway, GatewayConfig, GatewayParts, LimitSettings, ModelLimits, OpenAiProvider,
    OpenAiSettings, Pricing, Route, Router, SharedProvider, SimulatedProvider, StructuredMode,
    TokenLimit,
};

/// Which model to reach and how: shared by every command that calls a model.
#[derive(Debug, Args)]
pub struct LlmArgs {
    /// `simulated` (in-process, no key) or `openai` (any OpenAI-compatible endpoint).
    #[arg(long, default_value = "simulated")]
    pub provider: String,
    /// Model name; default `sim-1` for simulated, `gpt-4o-mini` for openai.
    #[arg(long)]
    pub model: Option<String>,
    /// Base URL of the OpenAI-compatible API.
    #[arg(long, default_value = "https://api.openai.com/v1")]
    pub base_url: String,
    /// Environment variable that holds the API key (never pass the key itself on the command line).
    #[arg(long, default_value = sleuth_llm::DEFAULT_KEY_ENV)]
    pub api_key_env: String,
    /// Pricing table (USD per million tokens per model); the built-in one otherwise.
    #[arg(long)]
    pub pricing: Option<PathBuf>,
    /// Added latency of the simulated provider, in milliseconds.
    #[arg(long, default_value_t = 0)]
    pub sim_latency_ms: u64,
    /// Retries of a failed call (429, 5xx, timeout) before the game fails.
    #[arg(long, default_value_t = 8)]
    pub max_retries: u32,
    /// First retry backoff in milliseconds (doubles per retry, with jitter; Retry-After wins if longer).
    #[arg(long, default_value_t = 500)]
    pub retry_base_ms: u64,
    /// Per-attempt timeout in seconds, from when the request is sent.
    #[arg(long, default_value_t = 120)]
    pub timeout_secs: u64,
    /// Requests sent to the model at once, at most. The limit adapts below it (halved on 429s and
    /// timeouts, grown back while latency holds); without it, an OpenAI-compatible server other than
    /// OpenAI's starts at 4 and may grow to 64, and OpenAI's API and the simulated model have none.
    #[arg(long)]
    pub max_concurrency: Option<u32>,
    /// Keep the concurrency limit at --max-concurrency instead of adapting it.
    #[arg(long)]
    pub fixed_concurrency: bool,
    /// How structured replies are asked for (openai): auto, json_schema, json_object or prompt.
    /// `auto` tries `json_schema`, then on a refusal naming `response_format` `json_object` with the
    /// schema, then the schema in the prompt.
    #[arg(long, default_value = "auto", value_parser = str::parse::<StructuredMode>)]
    pub structured: StructuredMode,
    /// Which request field(s) carry the completion limit (openai): both, max_tokens or
    /// max_completion_tokens. `both` steps down to the one a refusal leaves.
    #[arg(long, default_value = "both", value_parser = str::parse::<TokenLimit>)]
    pub token_limit: TokenLimit,
    /// Tokens the model reads in one request, prompt and reply together: prompts are shortened to fit
    /// (dialogue, then memory chunks; MIRAGE's script summary). Without it the endpoint is asked (vLLM,
    /// llama.cpp report theirs), then the built-in table of known models.
    #[arg(long, value_parser = clap::value_parser!(u32).range(256..))]
    pub context_window: Option<u32>,
}

impl LlmArgs {
    /// The model `--model` names, or the provider's default.
    pub(super) fn model(&self) -> String {
        match (&self.model, self.provider.as_str()) {
            (Some(m), _) => m.clone(),
            (None, "openai") => "gpt-4o-mini".to_string(),
            (None, _) => sleuth_llm::simulated::MODEL.to_string(),
        }
    }

    /// The endpoint the flags name, as a spec records it: the base URL only where one is used.
    pub(super) fn endpoint(&self) -> ProviderSpec {
        ProviderSpec {
            name: self.provider.clone(),
            base_url: (self.provider == "openai").then(|| self.base_url.clone()),
        }
    }
}

/// The provider, the model name and the pricing table the flags ask for. Everything is checked here —
/// the key's presence too — so that bad flags fail before any call.
pub(super) fn provider_from(a: &LlmArgs) -> Result<(SharedProvider, String, Pricing)> {
    let pricing = pricing(a)?;
    Ok((provider(&a.endpoint(), a)?, a.model(), pricing))
}

/// The pricing table of `--pricing`, or the built-in one.
pub(super) fn pricing(a: &LlmArgs) -> Result<Pricing> {
    Ok(match &a.pricing {
        Some(p) => Pricing::load(p)?,
        None => Pricing::builtin(),
    })
}

/// The provider of `endpoint` (from the flags, or from a recorded spec), with the client settings and
/// the key's variable of the flags; a missing key fails here, before any call.
pub(super) fn provider(endpoint: &ProviderSpec, a: &LlmArgs) -> Result<SharedProvider> {
    Ok(match endpoint.name.as_str() {
        "simulated" => Arc::new(SimulatedProvider {
            latency: Duration::from_millis(a.sim_latency_ms),
        }),
        "openai" => {
            let key = std::env::var(&a.api_key_env).map_err(|_| {
                anyhow!(
                    "--provider openai needs an API key in the environment variable {} (set it, or name another with --api-key-env)",
                    a.api_key_env
                )
            })?;
            let base_url = endpoint
                .base_url
                .clone()
                .unwrap_or_else(|| a.base_url.clone());
            let settings = OpenAiSettings {
                structured: a.structured,
                token_limit: a.token_limit,
                ..OpenAiSettings::new(base_url, key, Duration::from_secs(a.timeout_secs))
            };
            Arc::new(OpenAiProvider::new(&settings)?)
        }
        other => {
            bail!("unknown provider `{other}` in --provider (expected `simulated` or `openai`)")
        }
    })
}

/// Retries, backoff and timeout of the flags.
pub(super) fn gateway_config(a: &LlmArgs) -> GatewayConfig {
    GatewayConfig {
        max_retries: a.max_retries,
        backoff_base: Duration::from_millis(a.retry_base_ms),
        timeout: Duration::from_secs(a.timeout_secs),
        ..GatewayConfig::default()
    }
}

/// The gateway of one game (`play`, `questions`): every model name to `provider` at `endpoint`, with
/// the concurrency limit of the flags and the endpoint's defaults (adaptive, node-wide: every call
/// of the process shares it).
pub(super) async fn start_gateway(
    a: &LlmArgs,
    endpoint: &ProviderSpec,
    provider: SharedProvider,
    pricing: Pricing,
) -> Result<Gateway> {
    start_gateway_with(a, endpoint, provider, pricing, None).await
}

/// What `sleuth play --batch-eval` adds to a game's gateway: the cache its batch answers land in,
/// and the batch queue its evaluation calls wait in (with its worker).
pub(super) struct BatchParts {
    pub store: Arc<dyn sleuth_store::Store>,
    pub queue: Arc<sleuth_llm::batch::BatchQueue>,
}

/// [`start_gateway`], with evaluation through batches when `batch` is given (its worker runs for
/// the rest of the process).
pub(super) async fn start_gateway_with(
    a: &LlmArgs,
    endpoint: &ProviderSpec,
    provider: SharedProvider,
    pricing: Pricing,
    batch: Option<BatchParts>,
) -> Result<Gateway> {
    let settings = LimitSettings {
        max_concurrency: a.max_concurrency.filter(|&n| n > 0),
        adaptive: !a.fixed_concurrency,
        ..LimitSettings::default()
    }
    .with_endpoint_defaults(&endpoint.name, endpoint.base_url.as_deref());
    let mut route = Route::new(
        provider,
        endpoint.base_url.as_deref().filter(|_| batch.is_some()),
    );
    route.limits = ModelLimits::new(&a.model(), settings).map(Arc::new);
    route.window = a.context_window;
    route.batch = batch.is_some();
    let router = Router::single(route);
    let (cache, queue) = match batch {
        Some(b) => {
            sleuth_llm::batch_worker::spawn_worker(
                b.queue.clone(),
                sleuth_llm::batch_worker::WorkerParts {
                    router: router.clone(),
                    pricing: pricing.clone(),
                    store: b.store.clone(),
                    budget: None,
                },
            );
            (Some(b.store), Some(b.queue))
        }
        None => (None, None),
    };
    Ok(Gateway::start_with(GatewayParts {
        router,
        pricing,
        config: gateway_config(a),
        cache,
        budget: None,
        ledger: None,
        shared: None,
        batch: queue,
    })
    .await?)
}
