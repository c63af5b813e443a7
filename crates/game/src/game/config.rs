//! What one game is played with: the settings of its spec plus the runtime handles of one run.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{GameError, ProtocolSettings};
use crate::agent::{AgentConfig, Framework};
use sleuth_script::Script;

/// Which embedder the memory index uses.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderChoice {
    /// The local hashing embedder (no network).
    #[default]
    Hashing,
    /// An embedding model through the gateway.
    Remote(String),
}

/// How factual answers are judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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

/// Metrics whose judge can be chosen separately (`--judge METRIC=MODEL`).
pub const JUDGED_METRICS: &[&str] = &["factual", "rationale", "mirage"];

/// Everything one game needs besides the script and the gateway: the settings its
/// [`GameSpec`](super::GameSpec) records, then the handles of this one run (`game_id`,
/// `transcript_path`, `progress`, the test hook), which the spec leaves out.
///
/// It stays one flat struct, rather than a spec and a runtime side by side, because every game in the
/// tests and benches is written as `GameConfig { seed, protocol, .., ..GameConfig::default() }` and the
/// actors read `config.agent`, `config.seed`: the spec is derived from it when the result is written
/// ([`GameConfig::spec`]) and turned back into one for a replay ([`GameSpec::config`](super::GameSpec::config)).
/// Both conversions name every field, so a new setting does not compile until the spec records it.
#[derive(Debug, Clone)]
pub struct GameConfig {
    /// The game's label in tags, metrics and `result.json`; not part of the spec (a sweep derives it
    /// from the spec's digest, the CLI from the script, arm and seed).
    pub game_id: String,
    pub seed: u64,
    /// The protocol and its knobs.
    pub protocol: ProtocolSettings,
    /// Everyone's framework…
    pub framework: Framework,
    /// …except the murderers', when set (PLAYER* keeps the murderer's framework fixed across arms).
    pub murderer_framework: Option<Framework>,
    pub agent: AgentConfig,
    /// The murderers' model, when it differs from everyone else's (`agent.model`).
    pub murderer_model: Option<String>,
    /// Model name → the endpoint that answers it, for games whose models live at different
    /// endpoints (a sweep's models table); empty when one provider answers every model.
    pub endpoints: BTreeMap<String, super::EndpointSpec>,
    /// The default judge of every metric.
    pub judge: JudgeChoice,
    /// Metric (`factual`, `rationale`, `mirage`) → LLM judge model, replacing the default for it.
    pub judge_overrides: BTreeMap<String, String>,
    /// Times each WellPlay multiple-choice question is asked (PLAYER*: 3), for mean ± std.
    pub eval_repeats: u32,
    /// Minimum judge score (1-5) of a rationale for informed accuracy.
    pub rationale_threshold: u8,
    pub embedder: EmbedderChoice,
    /// Where `transcript.jsonl` goes; in memory only when `None`.
    pub transcript_path: Option<PathBuf>,
    /// Replaces the built-in prompts (`DIR/<framework>/<lang>/<purpose>.j2`).
    pub prompts_dir: Option<PathBuf>,
    /// Prompt language; the script's own when `None`.
    pub language: Option<sleuth_script::Language>,
    /// The script file as the user named it, recorded in the spec so the game can be replayed; the
    /// game itself plays the script it is given.
    pub script_path: Option<PathBuf>,
    /// The OpenAI-compatible endpoint the gateway's provider talks to, recorded in the spec (a
    /// different server may answer differently); `None` for the in-process simulated model.
    pub base_url: Option<String>,
    pub progress: Option<indicatif::ProgressBar>,
    /// Model calls of this game in flight at once, at most: characters, evaluator and judge share the
    /// bound (`docs/parallelism.md`). A runtime setting, not part of the spec: it changes when calls are
    /// made, never what they answer, so the transcript is the same at any value; 1 makes calls one at a
    /// time.
    pub call_concurrency: usize,
    /// Characters played by people (`agent/human/`, `docs/seat.md`): a runtime handle, not part of
    /// the spec (a replay without the person's moves is not the same game).
    pub seats: crate::agent::Seats,
    /// Test hook: (character, request number) at which that character panics. Exists only with the
    /// `test-hooks` feature, which the test suite enables and no user build does.
    #[cfg(feature = "test-hooks")]
    pub inject_panic: Option<(String, u64)>,
}

impl Default for GameConfig {
    fn default() -> Self {
        GameConfig {
            game_id: String::new(),
            seed: 0,
            protocol: ProtocolSettings::default(),
            framework: Framework::ThinkThrice,
            murderer_framework: None,
            agent: AgentConfig::default(),
            murderer_model: None,
            endpoints: BTreeMap::new(),
            judge: JudgeChoice::default(),
            judge_overrides: Default::default(),
            eval_repeats: 3,
            rationale_threshold: crate::eval::formulas::DEFAULT_RATIONALE_THRESHOLD,
            embedder: EmbedderChoice::default(),
            transcript_path: None,
            prompts_dir: None,
            language: None,
            script_path: None,
            base_url: None,
            progress: None,
            call_concurrency: crate::agent::DEFAULT_CALL_CONCURRENCY,
            seats: Default::default(),
            #[cfg(feature = "test-hooks")]
            inject_panic: None,
        }
    }
}

impl GameConfig {
    /// The judge of one metric: its override if any, else the default judge.
    pub fn judge_for(&self, metric: &str) -> JudgeChoice {
        match self.judge_overrides.get(metric) {
            Some(model) => JudgeChoice::Llm(model.clone()),
            None => self.judge.clone(),
        }
    }

    /// The framework a character plays with.
    pub fn framework_of(&self, script: &Script, character: &str) -> Framework {
        match self.murderer_framework {
            Some(f) if script.is_murderer(character) => f,
            _ => self.framework,
        }
    }

    /// A character's agent settings: everyone's, with the murderers' model for a murderer.
    pub fn agent_of(&self, script: &Script, character: &str) -> AgentConfig {
        match &self.murderer_model {
            Some(m) if script.is_murderer(character) => AgentConfig {
                model: m.clone(),
                ..self.agent.clone()
            },
            _ => self.agent.clone(),
        }
    }

    /// Every framework in the game, without repeats.
    pub fn frameworks(&self) -> Vec<Framework> {
        let mut v = vec![self.framework];
        if let Some(m) = self.murderer_framework.filter(|m| *m != self.framework) {
            v.push(m);
        }
        v
    }

    /// Checks the combination before anything runs: each framework must be built for the protocol,
    /// and the no-play references (PP, OP) cannot share a game with playing agents.
    pub fn check(&self) -> Result<(), GameError> {
        let protocol = self.protocol.protocol;
        for f in self.frameworks() {
            if !f.supports(protocol) {
                let meant: Vec<&str> = f.protocols().iter().map(|p| p.as_str()).collect();
                return Err(GameError::Config(format!(
                    "framework `{f}` does not play the `{protocol}` protocol (it is meant for: {})",
                    meant.join(", ")
                )));
            }
        }
        let plays: Vec<bool> = self.frameworks().iter().map(|f| f.plays()).collect();
        if plays.contains(&true) && plays.contains(&false) {
            return Err(GameError::Config(
                "--murderer-framework: the no-play references pp and op cannot be mixed with playing frameworks".into(),
            ));
        }
        Ok(())
    }
}
