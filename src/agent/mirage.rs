//! The MIRAGE agent (being written).

use serde_json::Value;

use super::character::{ClueChoice, State, TurnBuilder};
use super::AgentError;

/// Gameplay prompts of this framework.
pub const PURPOSES: &[&str] = &["system"];

/// Per-character state of the framework.
#[derive(Debug, Default)]
pub struct MirageState {}

fn todo() -> AgentError {
    AgentError::Unsupported {
        framework: "mirage",
        request: "play yet",
    }
}

pub(super) async fn converse(
    _st: &mut State,
    _turn: &mut TurnBuilder,
    _host_line: &str,
    _iteration: u32,
) -> Result<String, AgentError> {
    Err(todo())
}

pub(super) async fn interact(
    _st: &mut State,
    _turn: &mut TurnBuilder,
    _candidates: &[String],
    _clues: &[ClueChoice],
) -> Result<(String, Value), AgentError> {
    Err(todo())
}

pub(super) async fn score(
    _st: &mut State,
    _turn: &mut TurnBuilder,
    _others: &[String],
) -> Result<(String, Value), AgentError> {
    Err(todo())
}

pub(super) async fn accuse(
    _st: &mut State,
    _turn: &mut TurnBuilder,
    _candidates: &[String],
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

pub(super) async fn released(
    _st: &mut State,
    _turn: &mut TurnBuilder,
    _act: u32,
) -> Result<(), AgentError> {
    Ok(())
}
