//! What the person at a seat sees with each move: exactly what the character's agent may see — the
//! character's script as released so far ([`CharacterView`](crate::agent::CharacterView), the same
//! fields every framework's system prompt is rendered from, `context::system_vars`), and the
//! dialogue and clues visible to the character, in order (the memory's history of the character,
//! which is what agents recall from). Never another character's script.

use serde_json::{json, Value};

use super::super::config::AgentError;
use super::super::context::Context;

/// The character's view and visible history, as the seat page shows them.
pub(super) async fn of(cx: &Context) -> Result<Value, AgentError> {
    let v = cx.view();
    let seen: Vec<Value> = cx
        .history(None)
        .await?
        .into_iter()
        .map(|r| json!({ "event": r.event, "text": r.text }))
        .collect();
    Ok(json!({
        "name": v.name(),
        "title": v.title(),
        "murderer": v.is_murderer(),
        "premise": v.premise(),
        "victims": v.victims(),
        "cast": v.cast(),
        "suspects": v.suspects(),
        "story": v.story(),
        "acts": v.acts(),
        "timeline": v.timeline(),
        "relationships": v.relationships(),
        "goals": v.goals(),
        "secrets": v.secrets(),
        "performance": v.performance(),
        "abilities": v.abilities(),
        "seen": seen,
    }))
}
