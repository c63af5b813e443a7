//! The introduction and the vote the PLAYER* baselines (Werewolf, O-CoT) share: one call each, from the
//! script (in the system prompt) and the top-k memories about the request. The vote is also the no-play
//! references' (PP, OP), so it is the [`Agent`](super::interface::Agent)'s default vote.

use minijinja::context;

use super::config::AgentError;
use super::context::Context;
use sleuth_llm::Phase;

/// A free-text reply to the host's line from the top-k memories about it, rendered with the
/// framework's `introduce` template (memory, host_line, murderer).
pub async fn introduce(cx: &mut Context, host_line: &str) -> Result<String, AgentError> {
    let memory = cx.recall_texts(host_line, Phase::Gameplay).await?;
    let user = cx.prompts().render(
        "introduce",
        context! { memory => memory, host_line => host_line, murderer => cx.murderer() },
    )?;
    let budget = cx.config().max_tokens;
    let (text, _) = cx
        .call("introduce", user, budget, None, Phase::Gameplay)
        .await?;
    Ok(text.trim().to_string())
}

/// A vote among `candidates` from the top-k memories about the crime, rendered with the framework's
/// `vote` template (memory, vote_call, candidates, victim_names, murderer, and the non-player suspects,
/// so that the template can say "suspect" rather than "player" when it must).
pub async fn vote(
    cx: &mut Context,
    vote_call: &str,
    candidates: &[String],
) -> Result<(String, String), AgentError> {
    let victims = cx.victim_names();
    let query = cx.lines().query_vote(&victims);
    let memory = cx.recall_texts(&query, Phase::Gameplay).await?;
    let user = cx.prompts().render(
        "vote",
        context! {
            memory => memory, vote_call => vote_call, candidates => candidates,
            victim_names => victims, murderer => cx.murderer(), suspects => cx.view().suspects(),
        },
    )?;
    cx.pick_vote(user, candidates).await
}
