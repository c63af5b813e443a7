//! The ThinkThrice protocol (PROTOCOLS.md §2) as a stage machine: script distribution,
//! self-introductions with initial questioning, N open rounds, clue cards, M open rounds, an anonymous
//! vote, the reveal.
//!
//! With a script that lists its suspects, the vote is among the suspects (non-players included) and the
//! civilians win when a culprit, player or not, has the most votes alone; questions go to players only,
//! since only they can answer.

use futures::future::BoxFuture;
use serde_json::json;

use crate::game::driver::{Driver, PlayOutcome};
use crate::game::result::{tally, thinkthrice_winner};
use crate::game::run::Run;
use crate::game::steps;
use crate::game::{GameError, ThinkThriceSettings};
use crate::transcript::Draft;

/// The ThinkThrice driver with its knobs.
pub(crate) struct ThinkThrice(pub ThinkThriceSettings);

impl Driver for ThinkThrice {
    fn play<'r>(&'r self, run: &'r mut Run<'_>) -> BoxFuture<'r, Result<PlayOutcome, GameError>> {
        Box::pin(play(self.0, run))
    }
}

async fn play(s: ThinkThriceSettings, run: &mut Run<'_>) -> Result<PlayOutcome, GameError> {
    steps::distribute(run).await?;
    steps::introductions(run, s.initial_questioning).await?;
    for r in 1..=s.rounds_before_clues {
        open_round(run, r).await?;
    }
    clues(run).await?;
    for r in 1..=s.rounds_after_clues {
        open_round(run, s.rounds_before_clues + r).await?;
    }
    let votes = steps::vote(run).await?;
    let culprits = run.culprits();
    let counts = tally(run.suspects().iter().map(String::as_str), &votes);
    let winner = thinkthrice_winner(&counts, &culprits);
    steps::reveal(run, &counts, winner).await?;
    Ok(PlayOutcome {
        votes,
        counts,
        winner: Some(winner),
        ..PlayOutcome::default()
    })
}

/// An open round: every player, in turn order, questions one other player of its choice.
async fn open_round(run: &mut Run<'_>, round: u32) -> Result<(), GameError> {
    let stage = format!("open_questioning_{round}");
    let t = run.stage_started(&stage);
    run.host_says(&stage, None, run.lines().open_round(round))
        .await?;
    for asker in run.names() {
        steps::exchange(run, &stage, &asker, None, round).await?;
    }
    run.stage_done(&stage, t);
    Ok(())
}

/// The clue cards, read out to everyone at once.
async fn clues(run: &mut Run<'_>) -> Result<(), GameError> {
    let t = run.stage_started("clues");
    let announcement = run.script().host().clue_announcement;
    run.host_says("clues", None, announcement).await?;
    for clue in run.script().clues.clone() {
        let d = Draft::public(
            "clue",
            "host",
            None,
            run.lines().clue(&clue.title, &clue.text),
        )
        .with_data(json!({ "clue": clue.id, "about": clue.about }));
        run.publish("clues", d).await?;
    }
    run.stage_done("clues", t);
    Ok(())
}
