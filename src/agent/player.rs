//! The player framework (being written).

use super::character::{State, TurnBuilder};
use super::AgentError;

/// Gameplay prompts of this framework.
pub const PURPOSES: &[&str] = &["system"];

/// Per-character state of the framework.
#[derive(Debug, Default)]
pub struct PlayerState {}

fn todo() -> AgentError {
    AgentError::Unsupported {
        framework: "player",
        request: "play yet",
    }
}

pub(super) async fn introduce(
    _st: &mut State,
    _turn: &mut TurnBuilder,
    _host_line: &str,
) -> Result<String, AgentError> {
    Err(todo())
}

pub(super) async fn ask(
    _st: &mut State,
    _turn: &mut TurnBuilder,
    _target: Option<String>,
    _candidates: &[String],
    _round: u32,
) -> Result<(String, String), AgentError> {
    Err(todo())
}

pub(super) async fn answer(
    _st: &mut State,
    _turn: &mut TurnBuilder,
    _asker: &str,
    _question: &str,
) -> Result<String, AgentError> {
    Err(todo())
}

pub(super) async fn vote(
    _st: &mut State,
    _turn: &mut TurnBuilder,
    _vote_call: &str,
    _candidates: &[String],
) -> Result<(String, String), AgentError> {
    Err(todo())
}
