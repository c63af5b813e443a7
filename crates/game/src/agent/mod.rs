//! Agents: one `Character` actor per player, holding the one agent of its framework.
//!
//! - `character`: the actor, its requests and their replies ([`Turn`]); it knows no framework.
//! - `registry`: which agent plays each framework (the one place to register a new one).
//! - `interface`: the [`Agent`](interface::Agent) trait every framework implements (in `async fn`s),
//!   and its boxed form [`DynAgent`](interface::DynAgent) that the actor holds.
//! - `request`: asking a character actor for a turn ([`request_turn`]), for the game and the evaluator.
//! - `context`: what every framework shares: calling the model, recalling memory, picking an option,
//!   recording the turn's private steps, sample indices and call tags.
//! - `view`: what a character may know ([`CharacterView`]); the omniscient reference's
//!   [`OmniscientView`]. Agents never get the script.
//! - Frameworks: `thinkthrice/` (MR → SR → SV), `player/` (PLAYER*), `werewolf`, `ocot`, `mirage`,
//!   `reference` (PP and OP); `baseline` (what Werewolf and O-CoT share) and `answers` (the shared
//!   evaluation answers).

mod answers;
mod baseline;
mod bound;
mod character;
mod config;
mod context;
mod framework;
mod human;
mod interface;
mod mirage;
mod modules;
mod ocot;
mod player;
mod prompts;
mod reference;
mod registry;
mod request;
mod thinkthrice;
mod turn;
mod view;
mod werewolf;

pub use bound::{together, CallBound, DEFAULT_CALL_CONCURRENCY};
pub use character::{Character, CharacterArgs, CharacterMsg, EvalItem, EvalQuestion};
pub use config::{AgentConfig, AgentError, SamplePlanError};
pub use framework::{Framework, FrameworkError, EVAL_PURPOSES};
pub use human::{HumanSeat, Move, MoveAnswer, MoveKind, SeatDesk, SeatError, Seats};
pub use interface::ClueChoice;
pub use modules::{Modules, ModulesError};
pub use prompts::{builtin, PromptError, Prompts};
pub use request::{request_batch, request_turn, RequestError};
pub use thinkthrice::PURPOSES;
pub use turn::Turn;
pub use view::{
    CastMember, CharacterView, OmniscientView, ScriptCard, SuspectCard, VictimCard, ViewError,
};

/// The default framework's name.
pub const FRAMEWORK: &str = "thinkthrice";
