//! The steps protocols share: handing out scripts and later acts, self-introductions, a question and
//! its answer, ballots and the vote, the reveal.
//!
//! Drivers compose these; a step publishes its events in a fixed order through the [`Run`], so two
//! protocols that share a step also share its transcript shape (and the golden digests pin it).
//!
//! **Which turns run together.** A turn may run alongside others only when none of them could hear
//! another: its output must be private to its author and never remembered (not a `MEMORABLE` kind of
//! `run.rs`), so no character's turn can recall it. Ballots and the re-reading of a released act are
//! such turns: they are requested from every character at once ([`Run::request_each`]) and published
//! in turn order afterwards. Introductions, questions and answers are public and remembered — each
//! hears the ones before — so they stay one at a time, in turn order.

use std::collections::BTreeMap;

use serde_json::json;

use super::result::{vote_candidates, Winner};
use super::run::Run;
use super::GameError;
use crate::agent::{CharacterMsg, Turn};
use crate::transcript::Draft;
use sleuth_script::rules::HostLines;

/// The opening line, then every player's script handed over privately.
pub(super) async fn distribute(run: &mut Run<'_>) -> Result<(), GameError> {
    let t = run.stage_started("distribution");
    let opening = run.script().host().opening;
    run.host_says("distribution", None, opening).await?;
    for name in run.names() {
        let line = run.lines().script_handed(&name);
        run.publish(
            "distribution",
            Draft::private("script", "host", &[&name], line),
        )
        .await?;
    }
    run.stage_done("distribution", t);
    Ok(())
}

/// Self-introductions on the host's request, each followed (ThinkThrice) by initial questioning.
pub(super) async fn introductions(
    run: &mut Run<'_>,
    initial_questioning: bool,
) -> Result<(), GameError> {
    let t = run.stage_started("introduction");
    let victims = run.victims();
    for name in run.names() {
        let line = run.lines().introduce(&name, &victims);
        run.host_says("introduction", Some(&name), line.clone())
            .await?;
        let mut turn = run
            .request(&name, |reply| CharacterMsg::Introduce {
                host_line: line,
                reply,
            })
            .await?;
        let text = turn.text.clone();
        run.publish_turn(
            "introduction",
            &mut turn,
            Draft::public("introduction", &name, Some("host"), text),
        )
        .await?;
        if initial_questioning {
            for asker in run.names().into_iter().filter(|n| *n != name) {
                exchange(run, "initial_questioning", &asker, Some(name.clone()), 0).await?;
            }
        }
    }
    run.stage_done("introduction", t);
    Ok(())
}

/// One question and its answer. `target` forces whom the asker questions; `round` is the open round
/// (0 outside them). Only players are asked, suspects or not: a non-player suspect has no voice.
pub(super) async fn exchange(
    run: &mut Run<'_>,
    stage: &str,
    asker: &str,
    target: Option<String>,
    round: u32,
) -> Result<(), GameError> {
    let candidates: Vec<String> = run.names().into_iter().filter(|n| n != asker).collect();
    let mut q = run
        .request(asker, |reply| CharacterMsg::Ask {
            target,
            candidates,
            round,
            reply,
        })
        .await?;
    let to = q
        .target
        .clone()
        .ok_or_else(|| GameError::Protocol(format!("{asker} asked nobody")))?;
    let question = q.text.clone();
    run.publish_turn(
        stage,
        &mut q,
        Draft::public("question", asker, Some(&to), question.clone()),
    )
    .await?;
    answer(run, stage, asker, &to, question).await
}

/// `target` answers `asker`'s question, publicly and at once.
pub(super) async fn answer(
    run: &mut Run<'_>,
    stage: &str,
    asker: &str,
    target: &str,
    question: String,
) -> Result<(), GameError> {
    let asker_name = asker.to_string();
    let mut a = run
        .request(target, |reply| CharacterMsg::Answer {
            asker: asker_name,
            question,
            reply,
        })
        .await?;
    let text = a.text.clone();
    run.publish_turn(
        stage,
        &mut a,
        Draft::public("answer", target, Some(asker), text),
    )
    .await
}

/// The next part of every script: `announcement` publicly, then each character re-reads its script
/// (and, for frameworks that summarise, re-summarises it) and is handed part `act` privately with the
/// line `handed` writes.
pub(super) async fn release(
    run: &mut Run<'_>,
    stage: &str,
    act: u32,
    announcement: String,
    handed: fn(&HostLines, &str, u32) -> String,
) -> Result<(), GameError> {
    let t = run.stage_started(stage);
    run.host_says(stage, None, announcement).await?;
    // Re-reading one's own script (and re-summarising it) is private and unremembered: everyone at once.
    let names = run.names();
    let turns = run
        .request_each(
            names
                .iter()
                .map(|n| (n.clone(), move |reply| CharacterMsg::Release { act, reply })),
        )
        .await;
    for (name, turn) in names.into_iter().zip(turns) {
        let mut turn = turn?;
        let line = handed(&run.lines(), &name, act);
        run.publish_turn(
            stage,
            &mut turn,
            Draft::private("script", "host", &[&name], line).with_data(json!({ "act": act })),
        )
        .await?;
    }
    run.stage_done(stage, t);
    Ok(())
}

/// The anonymous vote: every player votes for one of the suspects other than themselves (ballots are
/// private events).
pub(super) async fn vote(run: &mut Run<'_>) -> Result<BTreeMap<String, String>, GameError> {
    let call = run.script().host().vote_call;
    vote_on(run, "vote", call).await
}

/// [`vote`] with its own stage name and call: WellPlay's per-victim votes hold one per victim, each
/// call naming the victim.
pub(super) async fn vote_on(
    run: &mut Run<'_>,
    stage: &str,
    call: String,
) -> Result<BTreeMap<String, String>, GameError> {
    let t = run.stage_started(stage);
    run.host_says(stage, None, call.clone()).await?;
    let suspects = run.suspects();
    let voters = run
        .names()
        .into_iter()
        .map(|voter| {
            let candidates = vote_candidates(&voter, &suspects);
            (voter, candidates)
        })
        .collect();
    let votes = ballots(run, stage, &call, voters).await?;
    run.stage_done(stage, t);
    Ok(votes)
}

/// Every voter's ballot among their candidates. Ballots are private and never remembered, so no voter
/// can be swayed by another's: all are requested at once and published in the voters' order (a
/// simultaneous secret ballot, as the papers' anonymous vote is).
pub(super) async fn ballots(
    run: &mut Run<'_>,
    stage: &str,
    vote_call: &str,
    voters: Vec<(String, Vec<String>)>,
) -> Result<BTreeMap<String, String>, GameError> {
    let turns = run
        .request_each(voters.iter().map(|(voter, candidates)| {
            let (vote_call, candidates) = (vote_call.to_string(), candidates.clone());
            (voter.clone(), move |reply| CharacterMsg::Vote {
                vote_call,
                candidates,
                reply,
            })
        }))
        .await;
    let mut votes = BTreeMap::new();
    for ((voter, candidates), turn) in voters.into_iter().zip(turns) {
        let target = ballot(run, stage, &voter, candidates, turn?).await?;
        votes.insert(voter, target);
    }
    Ok(votes)
}

/// One player's ballot among `candidates`, published as a private event. A ballot for anyone else (a
/// name the agent made up, or itself) fails the game rather than skewing the tally.
async fn ballot(
    run: &mut Run<'_>,
    stage: &str,
    voter: &str,
    candidates: Vec<String>,
    mut turn: Turn,
) -> Result<String, GameError> {
    let target = turn
        .target
        .clone()
        .ok_or_else(|| GameError::Protocol(format!("{voter} cast no vote")))?;
    if !candidates.contains(&target) {
        return Err(GameError::Protocol(format!(
            "{voter} voted for {target}, who was not on the ballot ({})",
            candidates.join(", ")
        )));
    }
    // Anonymous: only the voter (and the host) see a ballot.
    let ballot = Draft::private("vote", voter, &[voter], turn.text.clone())
        .with_data(json!({ "vote": target }));
    run.publish_turn(stage, &mut turn, ballot).await?;
    Ok(target)
}

/// The outcome read out under the most-votes rule: the tally, the culprits, who won.
pub(super) async fn reveal(
    run: &mut Run<'_>,
    counts: &BTreeMap<String, u32>,
    winner: Winner,
) -> Result<(), GameError> {
    let t = run.stage_started("reveal");
    let murderers = run.culprits();
    let tally_list: Vec<(String, u32)> = counts.iter().map(|(p, n)| (p.clone(), *n)).collect();
    let names: Vec<&str> = murderers.iter().map(String::as_str).collect();
    let text = run.lines().reveal(
        &tally_list,
        &run.lines().join(&names),
        winner == Winner::Civilians,
    );
    run.publish(
        "reveal",
        Draft::public("reveal", "host", None, text)
            .with_data(json!({ "counts": counts, "winner": winner })),
    )
    .await?;
    run.stage_done("reveal", t);
    Ok(())
}
