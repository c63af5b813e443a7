//! The no-play references of ThinkThrice §5 (PROTOCOLS.md §2): they play no game and answer the
//! evaluation questions straight away, through the shared evaluation prompts (`answers.rs`). Under
//! WellPlay they also cast the final vote from what they were handed (PLAYER* §4.1), through the
//! baselines' shared vote (`baseline.rs`) with their own `vote` prompt: they have no memory of a game.
//!
//! - **PP** (Personal Perspective) answers from its own script alone, like any character.
//! - **OP** (Omniscient Perspective) answers from every character's script: it is the one agent built
//!   with an [`OmniscientView`], and only its system prompt shows what that view holds.

use super::baseline;
use super::context::Context;
use super::interface::{Agent, AgentFuture};
use super::prompts::PromptError;
use super::view::OmniscientView;

/// The prompts of the no-play references: their system prompt and the vote; everything else is the
/// shared evaluation prompts.
pub const PURPOSES: &[&str] = &["system", "vote"];

/// The Personal Perspective reference.
#[derive(Debug, Default)]
pub struct Personal;

impl Agent for Personal {
    fn vote<'a>(
        &'a mut self,
        cx: &'a mut Context,
        vote_call: &'a str,
        candidates: &'a [String],
    ) -> AgentFuture<'a, (String, String)> {
        Box::pin(baseline::vote(cx, vote_call, candidates))
    }
}

/// The Omniscient Perspective reference.
#[derive(Debug)]
pub struct Omniscient {
    view: OmniscientView,
}

impl Omniscient {
    pub fn new(view: OmniscientView) -> Omniscient {
        Omniscient { view }
    }
}

impl Agent for Omniscient {
    /// The system prompt also holds every character's script (`everyone`).
    fn system_prompt(&self, cx: &Context) -> Result<String, PromptError> {
        cx.render_system(minijinja::context! { everyone => self.view.everyone() })
    }

    fn vote<'a>(
        &'a mut self,
        cx: &'a mut Context,
        vote_call: &'a str,
        candidates: &'a [String],
    ) -> AgentFuture<'a, (String, String)> {
        Box::pin(baseline::vote(cx, vote_call, candidates))
    }
}
