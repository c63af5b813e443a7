//! Asking a character actor for a turn, with the two ways it can fail: the agent answered with an
//! error, or the actor is gone. It lives in `agent` (not in `game`) because it needs only the
//! character's own types, and both the game's drivers and the evaluator (which sits below `game`) ask
//! characters for turns.

use ractor::{ActorRef, RpcReplyPort};

use super::character::{CharacterMsg, EvalItem};
use super::config::AgentError;
use super::turn::Turn;

/// Why a request to a character (or to the judge, which fails the same way) got no turn.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The agent answered with an error.
    #[error("{agent}: {error}")]
    Agent {
        agent: String,
        error: Box<AgentError>,
    },
    /// The actor is gone (it crashed).
    #[error("{0} stopped unexpectedly (it crashed; see the log above)")]
    ActorLost(String),
}

/// Sends a character a request and waits for its turn. A character that answers with an error fails
/// with that error; one that is gone (it crashed) fails as lost.
pub async fn request_turn(
    actor: &ActorRef<CharacterMsg>,
    who: &str,
    make: impl FnOnce(RpcReplyPort<Result<Turn, AgentError>>) -> CharacterMsg,
) -> Result<Turn, RequestError> {
    match actor.call(make, None).await {
        Ok(ractor::rpc::CallResult::Success(Ok(t))) => Ok(t),
        Ok(ractor::rpc::CallResult::Success(Err(e))) => Err(RequestError::Agent {
            agent: who.to_string(),
            error: Box::new(e),
        }),
        _ => Err(RequestError::ActorLost(format!("character {who}"))),
    }
}

/// Sends a character a batch of evaluation questions and waits for all the answers: one result per
/// item, in the batch's order. A character that is gone (it crashed) fails every item as lost.
pub async fn request_batch(
    actor: &ActorRef<CharacterMsg>,
    who: &str,
    items: Vec<EvalItem>,
) -> Vec<Result<Turn, RequestError>> {
    let n = items.len();
    match actor
        .call(|reply| CharacterMsg::Evaluate { items, reply }, None)
        .await
    {
        Ok(ractor::rpc::CallResult::Success(turns)) if turns.len() == n => turns
            .into_iter()
            .map(|t| {
                t.map_err(|e| RequestError::Agent {
                    agent: who.to_string(),
                    error: Box::new(e),
                })
            })
            .collect(),
        _ => (0..n)
            .map(|_| Err(RequestError::ActorLost(format!("character {who}"))))
            .collect(),
    }
}
