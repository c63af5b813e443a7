//! The no-play references of ThinkThrice §5 (PROTOCOLS.md §2): they play no game and answer the
//! evaluation questions straight away, through the shared evaluation prompts (`answers.rs`). Under
//! WellPlay they also cast the final vote from what they were handed (PLAYER* §4.1), through the
//! baselines' shared vote (`baseline.rs`, the [`Agent`] default) with their own `vote` prompt: they
//! have no memory of a game.
//!
//! - **PP** (Personal Perspective) answers from its own script alone, like any character.
//! - **OP** (Omniscient Perspective) answers from every character's script: it is the one agent built
//!   with an [`OmniscientView`], and only its system prompt shows what that view holds.
//!
//! That system prompt is all that tells them apart, so both are one [`Reference`] agent.

use super::context::Context;
use super::interface::Agent;
use super::prompts::PromptError;
use super::view::OmniscientView;

/// The prompts of the no-play references: their system prompt and the vote; everything else is the
/// shared evaluation prompts.
pub const PURPOSES: &[&str] = &["system", "vote"];

/// A no-play reference: the Personal Perspective by default, the Omniscient Perspective when built
/// with every character's script ([`Reference::omniscient`]).
#[derive(Debug, Default)]
pub struct Reference {
    /// What the omniscient reference sees besides its own script; `None` for the personal one.
    omniscient: Option<OmniscientView>,
}

impl Reference {
    /// The Omniscient Perspective reference.
    pub fn omniscient(view: OmniscientView) -> Reference {
        Reference {
            omniscient: Some(view),
        }
    }
}

impl Agent for Reference {
    /// The omniscient reference's system prompt also holds every character's script (`everyone`).
    fn system_prompt(&self, cx: &Context) -> Result<String, PromptError> {
        match &self.omniscient {
            Some(view) => cx.render_system(minijinja::context! { everyone => view.everyone() }),
            None => cx.render_system(minijinja::context! {}),
        }
    }
}
