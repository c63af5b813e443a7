//! Games: the host's protocol drivers, the game supervisor, the spec and the result. The top layer: it
//! spawns the characters (`agent`) and the evaluator (`eval`), and re-exports the transcript
//! (`crate::transcript`), the rules (`sleuth_script::rules`) and the scores (`crate::eval::scores`) under their
//! old `game::` paths.

mod config;
mod driver;
mod drivers;
mod host;
mod result;
mod run;
mod spec;
mod steps;
mod supervisor;

use std::sync::Arc;

use ractor::Actor;
use tokio::sync::oneshot;

pub use crate::transcript::{Draft, Event, Transcript, TranscriptError, Visibility};
pub use config::{EmbedderChoice, GameConfig, JudgeChoice, JUDGED_METRICS};
pub use driver::PlayOutcome;
pub use result::{
    case_vote, cases_outcome, choice_correct, detection_accuracy, majority_outcome,
    reciprocal_rank, suspicion_minus_trust, tally, thinkthrice_winner, vote_candidates, vote_cases,
    vote_order, vote_rank, CaseVote, ChoiceScores, ChoiceTally, FactualScores, GameResult,
    MajorityOutcome, MirageCharacterScores, MirageOutcome, MirageScores, PhaseUsage, Winner,
};
pub use sleuth_script::rules::HostLines;
pub use sleuth_script::rules::{
    MirageSettings, Protocol, ProtocolError, ProtocolSettings, ThinkThriceSettings,
    WellPlaySettings,
};
pub use spec::{EndpointSpec, GameSpec, ProviderSpec, ScriptRef, SpecError};

use crate::agent::{AgentError, CharacterMsg, Framework, PromptError, Prompts, RequestError, Turn};
pub use crate::eval::Judges;
use crate::eval::{EvalError, Judge, LlmJudge};
use crate::memory::{GatewayEmbedder, HashingEmbedder, SharedEmbedder};
use sleuth_llm::Gateway;
use sleuth_script::Script;
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
    #[error("{0}")]
    Config(String),
}

impl From<RequestError> for GameError {
    /// Keeps the variant: a failed or lost character fails the game the same way wherever it was asked.
    fn from(e: RequestError) -> Self {
        match e {
            RequestError::Agent { agent, error } => GameError::Agent { agent, error },
            RequestError::ActorLost(who) => GameError::ActorLost(who),
        }
    }
}

impl From<EvalError> for GameError {
    /// Keeps the variant, so an evaluation failure reads and matches as it did when the evaluator
    /// returned game errors itself.
    fn from(e: EvalError) -> Self {
        match e {
            EvalError::Request(e) => e.into(),
            EvalError::Transcript(e) => GameError::Transcript(e),
        }
    }
}

/// Sends a character a request and waits for its turn ([`crate::agent::request_turn`], with the failure
/// as a game error). A character that answers with an error fails the game with that error; one that is
/// gone (it crashed) fails it as lost.
pub async fn request_turn(
    actor: &ractor::ActorRef<CharacterMsg>,
    who: &str,
    make: impl FnOnce(ractor::RpcReplyPort<Result<Turn, AgentError>>) -> CharacterMsg,
) -> Result<Turn, GameError> {
    Ok(crate::agent::request_turn(actor, who, make).await?)
}

/// Loads the prompts of one framework (its gameplay prompts and the shared evaluation prompts), so that
/// a missing or broken template fails before any call.
pub fn load_prompts(
    script: &Script,
    config: &GameConfig,
    framework: Framework,
) -> Result<Prompts, PromptError> {
    Prompts::load_groups(
        config.language.unwrap_or(script.language),
        config.prompts_dir.as_deref(),
        &[
            (framework.as_str(), framework.purposes()),
            ("eval", framework.eval_purposes()),
        ],
    )
}

/// The prompts of every framework in the game, by framework.
pub fn load_all_prompts(
    script: &Script,
    config: &GameConfig,
) -> Result<std::collections::BTreeMap<&'static str, Arc<Prompts>>, PromptError> {
    let mut out = std::collections::BTreeMap::new();
    for f in config.frameworks() {
        out.insert(f.as_str(), Arc::new(load_prompts(script, config, f)?));
    }
    Ok(out)
}

/// The LLM judge's prompts.
pub fn load_judge_prompts(script: &Script, config: &GameConfig) -> Result<Prompts, PromptError> {
    Prompts::load(
        "judge",
        config.language.unwrap_or(script.language),
        config.prompts_dir.as_deref(),
        crate::eval::JUDGE_PURPOSES,
    )
}

/// Plays one game end to end — play, then evaluation — under a fresh supervision tree.
pub async fn play(
    script: Arc<Script>,
    config: GameConfig,
    gateway: Gateway,
) -> Result<GameResult, GameError> {
    config.check()?;
    let prompts = load_all_prompts(&script, &config)?;
    play_with_prompts(script, config, gateway, prompts).await
}

/// Plays one game with prompts loaded beforehand ([`load_all_prompts`]): a sweep compiles the templates
/// once for all its games, and a test can check afterwards which templates were rendered.
pub async fn play_with_prompts(
    script: Arc<Script>,
    config: GameConfig,
    gateway: Gateway,
    prompts: std::collections::BTreeMap<&'static str, Arc<Prompts>>,
) -> Result<GameResult, GameError> {
    config.check()?;
    // The judge's templates are needed (and checked) only when some metric has an LLM judge, so a
    // `--prompts-dir` without `judge/` works with the lexical judges.
    let needs_judge_prompts = JUDGED_METRICS
        .iter()
        .any(|m| matches!(config.judge_for(m), JudgeChoice::Llm(_)));
    let judge_prompts = if needs_judge_prompts {
        Some(Arc::new(load_judge_prompts(&script, &config)?))
    } else {
        None
    };
    let transcript = match &config.transcript_path {
        // Once written, only what evaluation reads again stays in memory.
        Some(p) => Transcript::to_file(p)?
            .retaining(crate::eval::retained_after_play(config.protocol.protocol)),
        None => Transcript::in_memory(),
    };
    let make = |choice: &JudgeChoice, prompts: &Option<Arc<Prompts>>| match (choice, prompts) {
        (JudgeChoice::Llm(model), Some(prompts)) => Judge::Llm(LlmJudge {
            gateway: gateway.clone(),
            model: model.clone(),
            prompts: prompts.clone(),
            lang: config.language.unwrap_or(script.language),
        }),
        // Judge prompts are loaded whenever some metric has an LLM judge, so an LLM choice always
        // finds them; the lexical judge needs none.
        (JudgeChoice::Llm(_), None) | (JudgeChoice::Lexical { .. }, _) => Judge::Lexical {
            threshold: match choice {
                JudgeChoice::Lexical { threshold } => *threshold,
                JudgeChoice::Llm(_) => crate::eval::DEFAULT_LEXICAL_THRESHOLD,
            },
        },
    };
    let judge = Judges {
        factual: make(&config.judge_for("factual"), &judge_prompts),
        rationale: make(&config.judge_for("rationale"), &judge_prompts),
        mirage: make(&config.judge_for("mirage"), &judge_prompts),
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
