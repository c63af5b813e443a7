//! Which agent plays each framework, and which prompts it renders.
//!
//! **Adding a framework** takes its module (one new file under `agent/`, with a type implementing
//! [`Agent`] and its `PURPOSES`), its name in [`Framework`] (`framework.rs`), and one line in
//! [`entry`] below. Nothing else dispatches on the framework.

use super::framework::Framework;
use super::interface::{Agent, DynAgent};
use super::view::OmniscientView;
use super::{mirage, ocot, player, reference, thinkthrice, werewolf};

/// The omniscient reference was started without every character's script.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the op framework needs every character's script (an omniscient view)")]
pub(super) struct NotOmniscient;

/// Builds a framework's agent; only the omniscient reference takes the omniscient view.
type Build = fn(Option<OmniscientView>) -> Result<Box<dyn DynAgent>, NotOmniscient>;

/// A framework's gameplay prompts (`prompts/<framework>/<lang>/<purpose>.j2`) and its agent.
fn entry(f: Framework) -> (&'static [&'static str], Build) {
    match f {
        Framework::ThinkThrice => (thinkthrice::PURPOSES, plain::<thinkthrice::ThinkThrice>),
        Framework::Player => (player::PURPOSES, plain::<player::Player>),
        Framework::Werewolf => (werewolf::PURPOSES, plain::<werewolf::Werewolf>),
        Framework::Ocot => (ocot::PURPOSES, plain::<ocot::Ocot>),
        Framework::Pp => (reference::PURPOSES, plain::<reference::Reference>),
        Framework::Op => (reference::PURPOSES, omniscient),
        Framework::Mirage => (mirage::PURPOSES, plain::<mirage::Mirage>),
    }
}

/// An agent that starts from its default state and sees only its character's view.
fn plain<A: Agent + Default + 'static>(
    _: Option<OmniscientView>,
) -> Result<Box<dyn DynAgent>, NotOmniscient> {
    Ok(Box::<A>::default())
}

fn omniscient(view: Option<OmniscientView>) -> Result<Box<dyn DynAgent>, NotOmniscient> {
    let view = view.ok_or(NotOmniscient)?;
    Ok(Box::new(reference::Reference::omniscient(view)))
}

/// The agent of `framework`, built with `omniscient` only if it is the omniscient reference.
pub(super) fn build(
    framework: Framework,
    omniscient: Option<OmniscientView>,
) -> Result<Box<dyn DynAgent>, NotOmniscient> {
    (entry(framework).1)(omniscient)
}

impl Framework {
    /// The gameplay prompts of this framework (`prompts/<framework>/<lang>/<purpose>.j2`).
    pub fn purposes(self) -> &'static [&'static str] {
        entry(self).0
    }
}
