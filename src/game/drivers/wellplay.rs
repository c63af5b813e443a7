//! The WellPlay protocol (PLAYER* Appendix A) as a stage machine.
//!
//! Script distribution (act 1), self-introductions, then for each act: the act handed out (from act 2),
//! `n` rounds in which every player asks `m` questions of players of its choice, each answered at once;
//! then a vote of every player for someone else. A player with at least half of the votes is eliminated
//! and the civilians win if an eliminated player is a murderer; the plurality outcome is reported too.
//!
//! With a script that lists its suspects, "player" in the vote reads "suspect": ballots offer the
//! suspects (non-players included, never the voter), and eliminating a non-player culprit wins. Players
//! still question players only, since a non-player suspect cannot answer.
//!
//! Decision: with several acts, the `n` rounds are played after every act (the WellPlay data gives
//! discussion settings per stage), so a 2-act script plays `2n` rounds.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use serde_json::json;

use crate::game::driver::{Driver, PlayOutcome};
use crate::game::result::{majority_outcome, tally, MajorityOutcome, Winner};
use crate::game::run::Run;
use crate::game::steps;
use crate::game::{GameError, HostLines, WellPlaySettings};
use crate::transcript::Draft;

/// The WellPlay driver with its knobs.
pub(crate) struct WellPlay(pub WellPlaySettings);

impl Driver for WellPlay {
    fn play<'r>(&'r self, run: &'r mut Run<'_>) -> BoxFuture<'r, Result<PlayOutcome, GameError>> {
        Box::pin(play(self.0, run))
    }
}

async fn play(s: WellPlaySettings, run: &mut Run<'_>) -> Result<PlayOutcome, GameError> {
    steps::distribute(run).await?;
    // Self-introductions without the ThinkThrice initial questioning.
    steps::introductions(run, false).await?;
    let acts = run.script().acts.max(1);
    let mut round = 0;
    for act in 1..=acts {
        if act > 1 {
            let announcement = run.lines().act_released(act);
            steps::release(
                run,
                &format!("act_{act}"),
                act,
                announcement,
                HostLines::act_handed,
            )
            .await?;
        }
        for _ in 0..s.rounds {
            round += 1;
            questioning_round(run, round, s.questions_per_round).await?;
        }
    }
    let votes = steps::vote(run).await?;
    let culprits = run.culprits();
    let counts = tally(run.suspects().iter().map(String::as_str), &votes);
    let majority = majority_outcome(&counts, &culprits);
    reveal(run, &counts, &majority).await?;
    Ok(PlayOutcome {
        votes,
        counts,
        winner: Some(majority.majority_winner),
        majority: Some(majority),
        mirage: None,
    })
}

/// One round: every player asks `m` questions, in turn order; each is answered before the next.
async fn questioning_round(run: &mut Run<'_>, round: u32, m: u32) -> Result<(), GameError> {
    let stage = format!("questioning_{round}");
    let t = run.stage_started(&stage);
    run.host_says(&stage, None, run.lines().questioning_round(round, m))
        .await?;
    for asker in run.names() {
        for _ in 0..m {
            steps::exchange(run, &stage, &asker, None, round).await?;
        }
    }
    run.stage_done(&stage, t);
    Ok(())
}

/// The outcome read out under the elimination rule.
async fn reveal(
    run: &mut Run<'_>,
    counts: &BTreeMap<String, u32>,
    majority: &MajorityOutcome,
) -> Result<(), GameError> {
    let t = run.stage_started("reveal");
    let murderers = run.culprits();
    let m: Vec<&str> = murderers.iter().map(String::as_str).collect();
    let e: Vec<&str> = majority.eliminated.iter().map(String::as_str).collect();
    let lines = run.lines();
    let text = lines.eliminated(
        &lines.join(&e),
        &lines.join(&m),
        majority.majority_winner == Winner::Civilians,
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
