//! What a caller gets back when a call gives no usable answer.

use crate::provider::ProviderError;
use crate::types::Usage;

/// Why a call gave no usable answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    #[error("{purpose}: {provider} gave up after {attempts} attempts: {last}")]
    Exhausted {
        purpose: String,
        provider: &'static str,
        attempts: u32,
        last: ProviderError,
        usage: Usage,
    },
    #[error("{purpose}: {provider} refused the request: {error}")]
    Refused {
        purpose: String,
        provider: &'static str,
        error: ProviderError,
        usage: Usage,
    },
    #[error(
        "{purpose}: output could not be parsed as `{schema}` after {attempts} attempts: {reason}"
    )]
    Unparseable {
        purpose: String,
        schema: String,
        attempts: u32,
        reason: String,
        usage: Usage,
    },
    #[error("the LLM gateway is not running")]
    Unavailable,
    /// The model has no route: the sweep's models table does not list it.
    #[error("no endpoint for model `{0}` (the sweep's models table does not list it)")]
    UnknownModel(String),
    /// The call would have passed the sweep's budget.
    #[error("{purpose}: {error}")]
    Budget {
        purpose: String,
        error: super::budget::BudgetExceeded,
    },
    /// The limits shared with other processes (a cluster's Redis) could not be checked, even after
    /// retries: the call was not made, because making it unchecked could pass a limit the others keep.
    #[error("{purpose}: {message}")]
    Shared { purpose: String, message: String },
    /// The prompt and the reply's `max_tokens` do not fit the model's context window, even with every
    /// part a framework may leave out left out (`llm/window.rs`): refused before it was sent.
    #[error(
        "{purpose}: the prompt ({prompt_tokens} tokens, counted with cl100k, with every dialogue line and memory chunk left out) and a reply of up to {max_tokens} tokens do not fit the {window}-token context window of model `{model}`"
    )]
    ContextWindow {
        purpose: String,
        model: String,
        prompt_tokens: u64,
        max_tokens: u32,
        window: u32,
        usage: Usage,
    },
    /// An evaluation call of a `batch` model was put in a batch instead of being sent: the game
    /// waits for it without its actors (`llm::batch`). Not a failure of the game.
    #[error("{purpose}: evaluation call of model `{model}` waits on a batch")]
    Deferred { purpose: String, model: String },
    /// The batch journal could not be read or written.
    #[error("{purpose}: {message}")]
    Batch { purpose: String, message: String },
}

impl LlmError {
    /// What was spent before the call failed (failed parses still cost tokens).
    pub fn usage(&self) -> Usage {
        match self {
            LlmError::Exhausted { usage, .. }
            | LlmError::Refused { usage, .. }
            | LlmError::Unparseable { usage, .. }
            | LlmError::ContextWindow { usage, .. } => *usage,
            LlmError::Unavailable
            | LlmError::UnknownModel(_)
            | LlmError::Budget { .. }
            | LlmError::Shared { .. }
            | LlmError::Deferred { .. }
            | LlmError::Batch { .. } => Usage::default(),
        }
    }
}
