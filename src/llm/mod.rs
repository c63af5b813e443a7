//! Everything between sleuth and a language model: request types, providers, the gateway, token
//! counting and pricing.

mod gateway;
mod openai;
mod pricing;
mod provider;
pub mod simulated;
pub mod tokens;
mod types;

pub use gateway::{
    backoff, parse_sections, parse_structured, sections_schema_line, split_sections, ChatOutcome,
    EmbedOutcome, Gateway, GatewayConfig, LlmError, Sections, SECTIONS_SCHEMA_MARKER,
};
pub use openai::{parse_retry_after, OpenAiProvider, OpenAiSettings, DEFAULT_KEY_ENV};
pub use pricing::{ModelPrice, Pricing, PricingError};
pub use provider::{EmbedResponse, Provider, ProviderError, SharedProvider, SimulatedProvider};
pub use types::{
    CallTags, ChatRequest, ChatResponse, ChatRole, Message, OutputStyle, Phase, ResponseSchema,
    TokenLogprob, TokenUsage, Usage,
};
