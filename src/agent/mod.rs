//! Agents: one `Character` actor per player, and the frameworks that decide what it says.

mod answers;
mod character;
mod framework;
mod mirage;
mod modules;
mod ocot;
mod player;
mod prompts;
mod werewolf;

pub use character::{
    AgentConfig, AgentError, Character, CharacterArgs, CharacterMsg, ClueChoice, Turn, FRAMEWORK,
    PURPOSES,
};
pub use framework::{Framework, FrameworkError, EVAL_PURPOSES};
pub use modules::{Modules, ModulesError};
pub use prompts::{builtin, PromptError, Prompts};
