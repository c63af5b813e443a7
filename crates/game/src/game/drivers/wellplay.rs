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
//! With several victims listed in `truth.culprits`, every player votes once per victim ("who killed
//! V?", PLAYER* rule 6 "in each case"); the elimination rule is applied to each victim's ballots and
//! the civilians win only if every victim who has a culprit in the cast had one eliminated
//! (`docs/metrics.md`). A script with one victim (or one `truth.murderer`) holds the single vote as
//! before.
//!
//! Decision: with several acts, the `n` rounds are played after every act (the WellPlay data gives
//! discussion settings per stage), so a 2-act script plays `2n` rounds.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use serde_json::json;

use crate::game::driver::{Driver, PlayOutcome};
use crate::game::result::{
    case_vote, cases_outcome, majority_outcome, tally, vote_cases, MajorityOutcome, Winner,
};
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
    decide(run).await
}

/// The decision that ends a WellPlay game: one vote per victim when the script names several (else one
/// vote), the elimination rule, and the reveal. The no-play references (PP and OP) hold it too, right
/// after the hand-out (PLAYER* §4.1: they "make their final decisions").
pub(super) async fn decide(run: &mut Run<'_>) -> Result<PlayOutcome, GameError> {
    let cases = vote_cases(run.script());
    if !cases.is_empty() {
        return per_victim_votes(run, cases).await;
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

/// One vote per victim (PLAYER* rule 6, "in each case"; its Voting values step by 1/(3 × victims)).
/// A victim with no culprit in the cast gets no ballot. The game's `votes` are the first ballot round
/// held (every round is in `majority.cases`), and its `vote_counts` pool every round's ballots.
async fn per_victim_votes(
    run: &mut Run<'_>,
    cases: Vec<(String, Vec<String>)>,
) -> Result<PlayOutcome, GameError> {
    let suspects = run.suspects();
    let call = run.script().host().vote_call;
    let mut held = Vec::with_capacity(cases.len());
    for (k, (victim, culprits)) in cases.iter().enumerate() {
        let votes = if culprits.is_empty() {
            BTreeMap::new()
        } else {
            let line = format!("{call} {}", run.lines().vote_case(victim));
            steps::vote_on(run, &format!("vote_{}", k + 1), line).await?
        };
        held.push(case_vote(
            victim,
            culprits,
            suspects.iter().map(String::as_str),
            votes,
        ));
    }
    let mut counts = tally(suspects.iter().map(String::as_str), &BTreeMap::new());
    for c in &held {
        for (p, n) in &c.vote_counts {
            *counts.entry(p.clone()).or_insert(0) += n;
        }
    }
    let votes = held
        .iter()
        .find(|c| !c.votes.is_empty())
        .map(|c| c.votes.clone())
        .unwrap_or_default();
    let majority = cases_outcome(held);
    reveal_cases(run, &majority).await?;
    Ok(PlayOutcome {
        votes,
        counts,
        winner: Some(majority.majority_winner),
        majority: Some(majority),
        mirage: None,
    })
}

/// Each case's outcome, then the verdict, as one public event.
async fn reveal_cases(run: &mut Run<'_>, majority: &MajorityOutcome) -> Result<(), GameError> {
    let t = run.stage_started("reveal");
    let lines = run.lines();
    let mut text: Vec<String> = majority
        .cases
        .iter()
        .map(|c| {
            let e: Vec<&str> = c.eliminated.iter().map(String::as_str).collect();
            let m: Vec<&str> = c.culprits.iter().map(String::as_str).collect();
            lines.case_outcome(&c.victim, &lines.join(&e), &lines.join(&m))
        })
        .collect();
    text.push(
        lines
            .cases_verdict(majority.majority_winner == Winner::Civilians)
            .to_string(),
    );
    let cases: Vec<_> = majority
        .cases
        .iter()
        .map(|c| {
            json!({
                "victim": c.victim,
                "counts": c.vote_counts,
                "eliminated": c.eliminated,
                "identified": c.identified,
            })
        })
        .collect();
    run.publish(
        "reveal",
        Draft::public("reveal", "host", None, text.join("\n")).with_data(json!({
            "cases": cases,
            "eliminated": majority.eliminated,
            "winner": majority.majority_winner,
            "plurality_winner": majority.plurality_winner,
            "voting": majority.voting,
        })),
    )
    .await?;
    run.stage_done("reveal", t);
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
