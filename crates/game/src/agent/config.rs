//! How an agent talks to its model, and why it could not act.

use super::modules::Modules;
use super::prompts::PromptError;
use crate::memory::MemoryError;
use sleuth_llm::{LlmError, Usage};

/// How an agent talks to its model.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub modules: Modules,
    /// Records recalled per prompt when MR is on.
    pub top_k: usize,
    pub model: String,
    pub temperature: f32,
    pub top_p: f32,
    /// Token budget of in-game answers and introductions.
    pub max_tokens: u32,
    /// Token budget of evaluation answers (short answers are what the factual judge compares).
    pub eval_max_tokens: u32,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            modules: Modules {
                mr: true,
                sr: true,
                sv: Some(3),
            },
            top_k: 8,
            model: sleuth_llm::simulated::MODEL.to_string(),
            temperature: 0.8,
            top_p: 1.0,
            max_tokens: 300,
            eval_max_tokens: 48,
        }
    }
}

/// Why a character could not act.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error("memory: {0}")]
    Memory(#[from] MemoryError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    /// The protocol asked for something the framework does not do (the CLI refuses such pairs first).
    #[error("the {framework} framework cannot {request}")]
    Unsupported {
        framework: &'static str,
        request: &'static str,
    },
    #[error(transparent)]
    SamplePlan(#[from] SamplePlanError),
    /// A person's seat could not take or answer a move (its desk's store failed or it shut down).
    #[error("human seat: {0}")]
    Seat(String),
    /// A prompt that cannot fit the model's context window: the game cannot go on with this model.
    /// (The game's error names the character before this.)
    #[error("script \"{script}\": {source}")]
    ContextWindow {
        script: String,
        character: String,
        source: LlmError,
    },
}

/// A unit of work run alongside others was given a number of sample indices and made a different
/// number of calls: a bug in the framework's plan, which would otherwise reuse or skip indices.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{agent}: a unit of work planned for {planned} model call(s) made {made}")]
pub struct SamplePlanError {
    pub agent: String,
    pub planned: u64,
    pub made: u64,
}

impl AgentError {
    /// Usage spent by the failed action.
    pub fn usage(&self) -> Usage {
        match self {
            AgentError::Llm(e) | AgentError::ContextWindow { source: e, .. } => e.usage(),
            _ => Usage::default(),
        }
    }
}
