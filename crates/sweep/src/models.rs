//! The models table turned into what the gateway needs: a route per model (its provider instance,
//! endpoint identity and limits) and the prices. Keys are read from the environment here, once, and
//! a missing one fails the sweep before anything runs.

use std::sync::Arc;
use std::time::Duration;

use super::file::ModelEntry;
use super::plan::Plan;
use super::SweepError;
use sleuth_llm::{
    LimitSettings, ModelLimits, OpenAiProvider, OpenAiSettings, Pricing, Route, Router,
    SharedProvider, SimulatedProvider, DEFAULT_KEY_ENV,
};

/// The variable holding a model's key.
fn key_env(entry: &ModelEntry) -> String {
    entry
        .api_key_env
        .clone()
        .unwrap_or_else(|| DEFAULT_KEY_ENV.to_string())
}

/// Fails with the first model the games use whose key is not in the environment.
pub fn check_keys(plan: &Plan) -> Result<(), SweepError> {
    for name in plan.used_models() {
        let entry = &plan.models[&name];
        if entry.provider == "openai" {
            let var = key_env(entry);
            if std::env::var_os(&var).is_none() {
                return Err(SweepError::MissingKey {
                    path: plan.sweep.path.clone(),
                    model: name,
                    var,
                });
            }
        }
    }
    Ok(())
}

/// The built-in pricing table with the models table's prices laid over it.
pub fn prices(plan: &Plan) -> Pricing {
    let mut pricing = Pricing::builtin();
    for (name, entry) in &plan.models {
        if let Some(price) = entry.price() {
            pricing.set(name.clone(), price);
        }
    }
    pricing
}

/// The prices a sweep file's text gives (its models table over the built-in table): what a run
/// directory's ledger is read with after the fact (`sweep status`, the report's ledger note). A text
/// that no longer parses gives the built-in table.
pub fn prices_of_text(sweep_text: Option<&str>) -> Pricing {
    let mut pricing = Pricing::builtin();
    if let Some(file) = sweep_text.and_then(|t| toml::from_str::<super::file::SweepFile>(t).ok()) {
        for (name, m) in &file.models {
            if let Some(p) = m.price() {
                pricing.set(name.clone(), p);
            }
        }
    }
    pricing
}

fn limits_of(entry: &super::file::ModelEntry) -> LimitSettings {
    LimitSettings {
        rpm: entry.rpm,
        tpm: entry.tpm,
        max_concurrency: entry.max_concurrency,
        adaptive: entry.adaptive_concurrency.unwrap_or(true),
        initial_concurrency: None,
    }
}

/// Each model the games use with its limits from the models table: what a cluster's workers
/// enforce together (`cluster::gate`), on top of each worker's own.
pub fn limit_settings(plan: &Plan) -> std::collections::BTreeMap<String, LimitSettings> {
    plan.used_models()
        .into_iter()
        .map(|name| {
            let l = limits_of(&plan.models[&name]);
            (name, l)
        })
        .collect()
}

/// The router (every model the games use, with its limits) and the pricing table (the built-in one
/// with the models table's prices laid over it). `timeout` is the openai client's per-request
/// timeout.
pub fn gateway_routes(plan: &Plan, timeout: Duration) -> Result<(Router, Pricing), SweepError> {
    let mut router = Router::default();
    for name in plan.used_models() {
        let entry = &plan.models[&name];
        let (provider, base_url): (SharedProvider, Option<String>) = match entry.provider.as_str() {
            "openai" => {
                let var = key_env(entry);
                let api_key = std::env::var(&var).map_err(|_| SweepError::MissingKey {
                    path: plan.sweep.path.clone(),
                    model: name.clone(),
                    var,
                })?;
                let base_url = entry
                    .base_url
                    .clone()
                    .unwrap_or_else(|| "https://api.openai.com/v1".to_string());
                let p = OpenAiProvider::new(&OpenAiSettings {
                    structured: entry.structured.unwrap_or_default(),
                    token_limit: entry.token_limit.unwrap_or_default(),
                    ..OpenAiSettings::new(base_url.clone(), api_key, timeout)
                })
                .map_err(|e| SweepError::Setup(format!("models.{name}: {e}")))?;
                (Arc::new(p), Some(base_url))
            }
            _ => (
                Arc::new(SimulatedProvider {
                    latency: Duration::from_millis(entry.latency_ms.unwrap_or(0)),
                }),
                None,
            ),
        };
        let mut route = Route::new(provider, base_url.as_deref());
        route.model = entry.model.clone();
        route.window = entry.context_window;
        route.batch = entry.batch == Some(true);
        // An endpoint sleuth does not know starts at a small adaptive limit (the cluster-wide
        // limits of `limit_settings` keep only what the table says).
        let limits = limits_of(entry).with_endpoint_defaults(&entry.provider, base_url.as_deref());
        route.limits = ModelLimits::new(&name, limits).map(Arc::new);
        router.add(name, route);
    }
    Ok((router, prices(plan)))
}
