//! Agent frameworks: who decides what a character says (PROTOCOLS.md §2-§4).
//!
//! Every framework plays through the same `Character` actor and the same gateway, so a comparison of
//! frameworks differs only in the decisions, never in the accounting. Each framework's agent and
//! prompts are registered in `registry.rs` (which also defines [`Framework::purposes`]).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use sleuth_script::rules::Protocol;

/// An agent framework.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Framework {
    /// ThinkThrice: Memory Retrieval, Self-Refinement, Self-Verification.
    ThinkThrice,
    /// PLAYER*: sensors, suspicion states, questioning by suspect and a pruner.
    Player,
    /// The Werewolf agent of Xu et al. as adapted by PLAYER*: predefined questions, answer-reflect-answer.
    Werewolf,
    /// O-CoT: objective-guided reflection, then a question.
    Ocot,
    /// Personal Perspective: no play; answers from its own script only.
    Pp,
    /// Omniscient Perspective: no play; answers from every character's script.
    Op,
    /// MIRAGE's agent: THOUGHT/RESPONSE, trust and suspicion, summarization.
    Mirage,
}

impl Framework {
    pub const ALL: [Framework; 7] = [
        Framework::ThinkThrice,
        Framework::Player,
        Framework::Werewolf,
        Framework::Ocot,
        Framework::Pp,
        Framework::Op,
        Framework::Mirage,
    ];

    /// The name on the command line, in results, in call tags and in `prompts/<name>/`.
    pub fn as_str(self) -> &'static str {
        match self {
            Framework::ThinkThrice => "thinkthrice",
            Framework::Player => "player",
            Framework::Werewolf => "werewolf",
            Framework::Ocot => "ocot",
            Framework::Pp => "pp",
            Framework::Op => "op",
            Framework::Mirage => "mirage",
        }
    }

    /// False for the no-play references (PP, OP), which go straight to evaluation.
    pub fn plays(self) -> bool {
        !matches!(self, Framework::Pp | Framework::Op)
    }

    /// The protocols this framework is built for.
    pub fn protocols(self) -> &'static [Protocol] {
        match self {
            Framework::Mirage => &[Protocol::Mirage],
            _ => &[Protocol::ThinkThrice, Protocol::WellPlay],
        }
    }

    /// The shared evaluation prompts it uses: ThinkThrice answers factual and inferential questions
    /// through its own MR/SR/SV pipeline and prompts, and multiple choice like everyone else.
    pub fn eval_purposes(self) -> &'static [&'static str] {
        match self {
            Framework::ThinkThrice => &["answer_choice"],
            _ => EVAL_PURPOSES,
        }
    }

    /// Whether it can play under `protocol`.
    pub fn supports(self, protocol: Protocol) -> bool {
        self.protocols().contains(&protocol)
    }
}

impl fmt::Display for Framework {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A framework name that is not one of ours.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown framework `{0}` (expected one of: thinkthrice, player, werewolf, ocot, pp, op, mirage)")]
pub struct FrameworkError(pub String);

impl FromStr for Framework {
    type Err = FrameworkError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Framework::ALL
            .into_iter()
            .find(|f| f.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| FrameworkError(s.to_string()))
    }
}

/// Shared evaluation prompts (`prompts/eval/<lang>/`): every framework answers the same questions in the
/// same form, as the papers evaluate all arms alike.
pub const EVAL_PURPOSES: &[&str] = &["answer_factual", "answer_inferential", "answer_choice"];
