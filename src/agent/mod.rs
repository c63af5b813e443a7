//! Agents: one `Character` actor per player, and the frameworks that decide what it says.

mod character;
mod modules;
mod prompts;

pub use character::{
    AgentConfig, AgentError, Character, CharacterArgs, CharacterMsg, Turn, FRAMEWORK, PURPOSES,
};
pub use modules::{Modules, ModulesError};
pub use prompts::{PromptError, Prompts};
