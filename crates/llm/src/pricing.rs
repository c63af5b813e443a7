//! Cost of calls from a pricing table file (USD per million tokens, per model).
//!
//! Prices change and differ per deployment, so they are data: the built-in table (`pricing.toml` beside
//! this file) is a starting point and `--pricing FILE` replaces it. A model missing from the table costs 0
//! and is reported once as a warning, never guessed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::types::TokenUsage;

const BUILTIN: &str = include_str!("pricing.toml");

/// Prices of one model in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    pub input: f64,
    /// Prompt tokens served from the provider's cache; defaults to the input price.
    pub cached_input: Option<f64>,
    pub output: f64,
    /// Prices through the provider's batch interface; default [`BATCH_DISCOUNT`] of the live ones.
    pub batch_input: Option<f64>,
    pub batch_output: Option<f64>,
}

/// What a batch costs of the live price when the table does not say: OpenAI's and Anthropic's
/// batch interfaces both bill half.
pub const BATCH_DISCOUNT: f64 = 0.5;

/// A pricing table could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PricingError {
    #[error("{path}: cannot read pricing table")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: malformed pricing table: {message} (expected [models.\"NAME\"] tables with input, output and optional cached_input in USD per million tokens)")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: field `models.\"{model}\".{field}`: expected a price ≥ 0, got {value}")]
    Negative {
        path: PathBuf,
        model: String,
        field: &'static str,
        value: f64,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PricingFile {
    models: BTreeMap<String, ModelPrice>,
}

/// Model name → price.
#[derive(Debug, Clone, Default)]
pub struct Pricing {
    models: BTreeMap<String, ModelPrice>,
}

impl Pricing {
    /// The table compiled into the binary.
    pub fn builtin() -> Pricing {
        Pricing::parse(BUILTIN, Path::new("<built-in pricing.toml>"))
            .expect("built-in pricing table is valid")
    }

    /// Reads a pricing table file.
    pub fn load(path: &Path) -> Result<Pricing, PricingError> {
        let text = std::fs::read_to_string(path).map_err(|source| PricingError::Read {
            path: path.into(),
            source,
        })?;
        Pricing::parse(&text, path)
    }

    fn parse(text: &str, path: &Path) -> Result<Pricing, PricingError> {
        let f: PricingFile = toml::from_str(text).map_err(|e| PricingError::Parse {
            path: path.into(),
            message: e.message().to_string(),
        })?;
        for (model, p) in &f.models {
            for (field, value) in [
                ("input", p.input),
                ("output", p.output),
                ("cached_input", p.cached_input.unwrap_or(0.0)),
                ("batch_input", p.batch_input.unwrap_or(0.0)),
                ("batch_output", p.batch_output.unwrap_or(0.0)),
            ] {
                if value.is_nan() || value < 0.0 {
                    return Err(PricingError::Negative {
                        path: path.into(),
                        model: model.clone(),
                        field,
                        value,
                    });
                }
            }
        }
        Ok(Pricing { models: f.models })
    }

    /// Sets (or replaces) the price of `model`: a sweep's models table prices its own models.
    pub fn set(&mut self, model: impl Into<String>, price: ModelPrice) {
        self.models.insert(model.into(), price);
    }

    /// The price of a model, if the table has it.
    pub fn price(&self, model: &str) -> Option<ModelPrice> {
        self.models.get(model).copied()
    }

    /// USD for one call's tokens. Cached prompt tokens are billed at the cached rate, the rest at input.
    pub fn cost(&self, model: &str, u: &TokenUsage) -> f64 {
        let Some(p) = self.price(model) else {
            return 0.0;
        };
        let cached = u.cached_tokens.min(u.prompt_tokens);
        let fresh = u.prompt_tokens - cached;
        (fresh as f64 * p.input
            + cached as f64 * p.cached_input.unwrap_or(p.input)
            + u.completion_tokens as f64 * p.output)
            / 1_000_000.0
    }

    /// USD for one call's tokens answered in a batch: the table's batch prices, else
    /// [`BATCH_DISCOUNT`] of the live ones (cached prompt tokens too).
    pub fn batch_cost(&self, model: &str, u: &TokenUsage) -> f64 {
        let Some(p) = self.price(model) else {
            return 0.0;
        };
        let input = p.batch_input.unwrap_or(p.input * BATCH_DISCOUNT);
        let cached_input =
            p.cached_input.unwrap_or(p.input) * (input / p.input.max(f64::MIN_POSITIVE));
        let cached = u.cached_tokens.min(u.prompt_tokens);
        let fresh = u.prompt_tokens - cached;
        (fresh as f64 * input
            + cached as f64 * if p.input > 0.0 { cached_input } else { 0.0 }
            + u.completion_tokens as f64 * p.batch_output.unwrap_or(p.output * BATCH_DISCOUNT))
            / 1_000_000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_prices_cached_tokens_lower() {
        let p = Pricing::builtin();
        let u = TokenUsage {
            prompt_tokens: 1_000_000,
            completion_tokens: 0,
            cached_tokens: 500_000,
        };
        let price = p
            .price("gpt-4o-mini")
            .expect("gpt-4o-mini is in the built-in table");
        let expect = 0.5 * price.input + 0.5 * price.cached_input.unwrap_or(price.input);
        assert!((p.cost("gpt-4o-mini", &u) - expect).abs() < 1e-12);
        assert_eq!(p.cost("no-such-model", &u), 0.0);
    }

    #[test]
    fn negative_price_is_refused_with_its_field() {
        let err = Pricing::parse(
            "[models.\"m\"]\ninput = -1\noutput = 1\n",
            Path::new("p.toml"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("models.\"m\".input"), "{err}");
    }
}
