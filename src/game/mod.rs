//! Games: the host's protocol, the game supervisor, the transcript and the result.

mod host;
mod lines;
mod result;
mod supervisor;
mod transcript;

use std::path::PathBuf;
use std::sync::Arc;

use ractor::Actor;
use tokio::sync::oneshot;

pub use host::{PlayOutcome, ThinkThriceSettings};
pub use lines::HostLines;
pub use result::{
    detection_accuracy, tally, thinkthrice_winner, FactualScores, GameResult, PhaseUsage, Winner,
};
pub use transcript::{Draft, Event, Transcript, TranscriptError, Visibility};

use crate::agent::{
    AgentConfig, AgentError, CharacterMsg, PromptError, Prompts, Turn, FRAMEWORK, PURPOSES,
};
use crate::eval::Judge;
use crate::llm::Gateway;
use crate::memory::{GatewayEmbedder, HashingEmbedder, SharedEmbedder};
use crate::script::Script;
use supervisor::{GameActor, GameArgs};

/// Why a game did not finish.
#[derive(Debug, thiserror::Error)]
pub enum GameError {
    #[error("{agent}: {error}")]
    Agent {
        agent: String,
        error: Box<AgentError>,
    },
    #[error("{0} stopped unexpectedly (it crashed; see the log above)")]
    ActorLost(String),
    #[error("{child} failed: {reason}")]
    ChildFailed { child: String, reason: String },
    #[error("memory index: {0}")]
    Memory(String),
    #[error("protocol error: {0}")]
    Protocol(String),
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error("could not start the game's actors: {0}")]
    Spawn(String),
}

/// Which embedder the memory index uses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum EmbedderChoice {
    /// The local hashing embedder (no network).
    #[default]
    Hashing,
    /// An embedding model through the gateway.
    Remote(String),
}

/// How factual answers are judged.
#[derive(Debug, Clone, PartialEq)]
pub enum JudgeChoice {
    /// Lexical window-F1 with this pass mark.
    Lexical { threshold: f64 },
    /// An LLM judge with this model.
    Llm(String),
}

impl Default for JudgeChoice {
    fn default() -> Self {
        JudgeChoice::Lexical {
            threshold: crate::eval::DEFAULT_LEXICAL_THRESHOLD,
        }
    }
}

/// Everything one game needs besides the script and the gateway.
#[derive(Debug, Clone, Default)]
pub struct GameConfig {
    pub game_id: String,
    pub seed: u64,
    pub settings: ThinkThriceSettings,
    pub agent: AgentConfig,
    pub judge: JudgeChoice,
    pub embedder: EmbedderChoice,
    /// Where `transcript.jsonl` goes; in memory only when `None`.
    pub transcript_path: Option<PathBuf>,
    /// Replaces the built-in prompts (`DIR/<framework>/<lang>/<purpose>.j2`).
    pub prompts_dir: Option<PathBuf>,
    /// Prompt language; the script's own when `None`.
    pub language: Option<crate::script::Language>,
    pub progress: Option<indicatif::ProgressBar>,
    /// Test hook: (character, request number) at which that character panics.
    #[doc(hidden)]
    pub inject_panic: Option<(String, u64)>,
}

/// Sends a character a request and waits for its turn. A character that answers with an error fails
/// the game with that error; one that is gone (it crashed) fails it as lost.
pub async fn request_turn(
    actor: &ractor::ActorRef<CharacterMsg>,
    who: &str,
    make: impl FnOnce(ractor::RpcReplyPort<Result<Turn, AgentError>>) -> CharacterMsg,
) -> Result<Turn, GameError> {
    match actor.call(make, None).await {
        Ok(ractor::rpc::CallResult::Success(Ok(t))) => Ok(t),
        Ok(ractor::rpc::CallResult::Success(Err(e))) => Err(GameError::Agent {
            agent: who.to_string(),
            error: Box::new(e),
        }),
        _ => Err(GameError::ActorLost(format!("character {who}"))),
    }
}

/// Loads the prompts a game will use, so that a missing or broken template fails before any call.
pub fn load_prompts(script: &Script, config: &GameConfig) -> Result<Prompts, PromptError> {
    Prompts::load(
        FRAMEWORK,
        config.language.unwrap_or(script.language),
        config.prompts_dir.as_deref(),
        PURPOSES,
    )
}

/// Plays one game end to end — play, then evaluation — under a fresh supervision tree.
pub async fn play(
    script: Arc<Script>,
    config: GameConfig,
    gateway: Gateway,
) -> Result<GameResult, GameError> {
    let prompts = Arc::new(load_prompts(&script, &config)?);
    let transcript = match &config.transcript_path {
        Some(p) => Transcript::to_file(p)?,
        None => Transcript::in_memory(),
    };
    let judge = match &config.judge {
        JudgeChoice::Lexical { threshold } => Judge::Lexical {
            threshold: *threshold,
        },
        JudgeChoice::Llm(model) => Judge::Llm {
            gateway: gateway.clone(),
            model: model.clone(),
            prompts: prompts.clone(),
            lang: config.language.unwrap_or(script.language),
        },
    };
    let embedder: SharedEmbedder = match &config.embedder {
        EmbedderChoice::Hashing => Arc::new(HashingEmbedder::default()),
        EmbedderChoice::Remote(model) => Arc::new(GatewayEmbedder {
            gateway: gateway.clone(),
            model: model.clone(),
        }),
    };
    let (tx, rx) = oneshot::channel();
    let args = GameArgs {
        script,
        config,
        gateway,
        prompts,
        judge,
        embedder,
        transcript,
        reply: tx,
    };
    let (_game, join) = Actor::spawn(None, GameActor, args)
        .await
        .map_err(|e| GameError::Spawn(e.to_string()))?;
    let result = rx
        .await
        .unwrap_or_else(|_| Err(GameError::ActorLost("game supervisor".into())));
    // Wait for the supervision tree to wind down so nothing of this game outlives the call.
    let _ = join.await;
    result
}
