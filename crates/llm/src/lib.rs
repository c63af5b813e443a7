//! Everything between sleuth and a language model: request types, providers, the gateway, token
//! counting and pricing.
//!
//! Layer 2 (docs/architecture.md, *Crates*): it may use base and store; it knows nothing of games,
//! sweeps or clusters (a cluster's limits plug in through `SharedLimits`).

pub mod batch;
pub mod batch_worker;
mod gateway;
mod openai;
mod pricing;
mod provider;
mod sample;
mod schema;
mod sections;
pub mod simulated;
pub mod tokens;
mod types;
pub mod window;

pub use gateway::{
    backoff, chat_key, embed_key, requests, Budget, BudgetExceeded, BudgetLimits, CallScope,
    CallTally, ChatOutcome, EmbedOutcome, FairSemaphore, GamePromptCache, Gateway, GatewayActor,
    GatewayConfig, GatewayMsg, GatewayParts, GatewayState, Ledger, LedgerOptions, LimitSettings,
    LlmError, ModelLimits, PromptCacheTally, Route, Router, Settle, SharedError, SharedLimits,
    SharedReservation, SharedSlot, Spent,
};
pub use openai::{
    parse_retry_after, prompt_schema_paragraph, HttpStatusError, OpenAiProvider, OpenAiSettings,
    StructuredMode, TokenLimit, DEFAULT_KEY_ENV, ERROR_BODY_LIMIT, PROMPT_SCHEMA_MARKER,
};
pub use pricing::{ModelPrice, Pricing, PricingError};
pub use provider::{EmbedResponse, Provider, ProviderError, SharedProvider, SimulatedProvider};
pub use sample::{sample_index, SampleCounter};
pub use schema::parse_structured;
pub use sections::{
    parse_sections, sections_schema_line, split_sections, Sections, SECTIONS_SCHEMA_MARKER,
};
pub use types::{
    CallTags, ChatRequest, ChatResponse, ChatRole, Message, OutputStyle, Phase, ReplyNotes,
    ResponseSchema, TokenLogprob, TokenUsage, Usage,
};
