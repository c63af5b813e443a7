//! The WellPlay protocol (PLAYER* Appendix A) as a stage machine.
//!
//! Script distribution (act 1), self-introductions, then for each act: the act handed out (from act 2),
//! `n` rounds in which every player asks `m` questions of players of its choice, each answered at once;
//! then a vote of every player for someone else. A player with at least half of the votes is eliminated
//! and the civilians win if an eliminated player is a murderer; the plurality outcome is reported too.
//!
//! Decision: with several acts, the `n` rounds are played after every act (the WellPlay data gives
//! discussion settings per stage), so a 2-act script plays `2n` rounds.

use serde_json::json;

use super::host::{PlayOutcome, Run};
use super::result::{majority_outcome, tally};
use super::transcript::Draft;
use super::GameError;
use crate::agent::CharacterMsg;

/// Plays the WellPlay protocol to the reveal.
pub(crate) async fn play(run: &mut Run<'_>) -> Result<PlayOutcome, GameError> {
    let s = run.args.protocol.wellplay;
    run.distribute().await?;
    // Self-introductions without the ThinkThrice initial questioning.
    run.introductions(false).await?;
    let acts = run.args.script.acts.max(1);
    let mut round = 0;
    for act in 1..=acts {
        if act > 1 {
            release(run, act).await?;
        }
        for _ in 0..s.rounds {
            round += 1;
            questioning_round(run, round, s.questions_per_round).await?;
        }
    }
    let votes = run.vote().await?;
    let murderers = run.murderers();
    let counts = tally(run.names().iter().map(String::as_str), &votes);
    let majority = majority_outcome(&counts, &murderers);
    reveal(run, &counts, &majority).await?;
    Ok(PlayOutcome {
        votes,
        counts,
        winner: Some(majority.majority_winner),
        majority: Some(majority),
        mirage: None,
    })
}

/// Act `act` handed out: a public announcement, then each player's private hand-over.
pub(crate) async fn release(run: &mut Run<'_>, act: u32) -> Result<(), GameError> {
    let stage = format!("act_{act}");
    let t = run.stage_started(&stage);
    run.host_says(&stage, None, run.lines().act_released(act))
        .await?;
    for name in run.names() {
        let mut turn = run
            .request(&name, |reply| CharacterMsg::Release { act, reply })
            .await?;
        let line = run.lines().act_handed(&name, act);
        run.publish_turn(
            &stage,
            &mut turn,
            Draft::private("script", "host", &[&name], line).with_data(json!({ "act": act })),
        )
        .await?;
    }
    run.stage_done(&stage, t);
    Ok(())
}

/// One round: every player asks `m` questions, in turn order; each is answered before the next.
async fn questioning_round(run: &mut Run<'_>, round: u32, m: u32) -> Result<(), GameError> {
    let stage = format!("questioning_{round}");
    let t = run.stage_started(&stage);
    run.host_says(&stage, None, run.lines().questioning_round(round, m))
        .await?;
    for asker in run.names() {
        for _ in 0..m {
            run.exchange(&stage, &asker, None, round).await?;
        }
    }
    run.stage_done(&stage, t);
    Ok(())
}

async fn reveal(
    run: &mut Run<'_>,
    counts: &std::collections::BTreeMap<String, u32>,
    majority: &super::MajorityOutcome,
) -> Result<(), GameError> {
    let t = run.stage_started("reveal");
    let murderers = run.murderers();
    let m: Vec<&str> = murderers.iter().map(String::as_str).collect();
    let e: Vec<&str> = majority.eliminated.iter().map(String::as_str).collect();
    let lines = run.lines();
    let text = lines.eliminated(
        &lines.join(&e),
        &lines.join(&m),
        majority.majority_winner == super::Winner::Civilians,
    );
    run.publish(
        "reveal",
        Draft::public("reveal", "host", None, text).with_data(json!({
            "counts": counts,
            "eliminated": majority.eliminated,
            "winner": majority.majority_winner,
            "plurality_winner": majority.plurality_winner,
        })),
    )
    .await?;
    run.stage_done("reveal", t);
    Ok(())
}
