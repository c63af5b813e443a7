//! The MIRAGE protocol (MIRAGE §2.2, PROTOCOLS.md §4) as a stage machine.
//!
//! Script distribution; with `force_expose`, every culprit announces itself first (MIRAGE Table 3);
//! self-introductions; then `iterations` times (A) an open conversation — one speech per character —
//! followed by every character's trust and suspicion scores of every other one, and (B) an interaction —
//! each character asks someone a question (answered at once) or investigates a clue, which is disclosed
//! to everyone. Multi-stage scripts hand out their next stage between iterations. Finally (C) every
//! character accuses one other, everyone votes among the accused, and the tally is revealed.
//!
//! Visibility follows the paper: everything a character says or finds is public; module outputs (THOUGHT,
//! scores, summaries) are private to their author, and ballots are private as in every sleuth protocol.
//!
//! Decisions where the paper is silent:
//! - **Who can be accused**: the suspects minus the accuser — the players, or the script's `suspects`
//!   list, which may name people who do not play (MIRAGE "The Final Performance of a Big Star": two
//!   detectives accuse among seven non-players).
//! - **Who can be voted for**: the accused, minus the voter. A voter who is the only accused would have
//!   nobody left; such a voter chooses among all the other suspects instead, so every character votes
//!   exactly once and nobody votes for themselves.
//! - **Who can be asked**: players only, suspects or not: a non-player has no voice. What is known about
//!   a non-player comes from the clues (investigated by clue, wherever they lie) and what players say.
//! - **Trust and suspicion** are given to the other players only, as in MIRAGE, where they measure how a
//!   character's conduct in the game is received (TII); a non-player does nothing to be trusted for.
//! - **Forced exposure** makes the murderer players speak; a culprit who does not play cannot, so with
//!   only outside culprits there is nobody to expose and the characters are not told of an exposure.
//! - **Winner**: the civilians win when a culprit has the most votes alone (a tie at the top goes to the
//!   culprits, as in sleuth's ThinkThrice rule). Since only the accused receive votes, a culprit on top
//!   was necessarily accused — the paper's "accused and most voted".
//! - **Victory** is the reciprocal rank of the best-ranked culprit among every suspect, so averaging it
//!   over games gives the paper's MRR. The standing is the reference code's one sum: votes × the number
//!   of characters, plus the suspicion and minus the trust the players gave each suspect (a non-player,
//!   never scored, stands by its votes); equal sums go by name, so ranks are whole as in the published
//!   values (`eval::scores::vote_order`).
//! - **Clues**: a clue can be investigated once; it is available from its act (stage) on, or from the
//!   start when it has none. `clues_available` counts the clues available by the end of the game.

use std::collections::{BTreeMap, BTreeSet};

use futures::future::BoxFuture;
use serde_json::json;

use crate::agent::{CharacterMsg, ClueChoice, Turn};
use crate::game::driver::{Driver, PlayOutcome};
use crate::game::result::{
    reciprocal_rank, suspicion_minus_trust, tally, thinkthrice_winner, vote_candidates,
    MirageOutcome,
};
use crate::game::run::Run;
use crate::game::steps;
use crate::game::{GameError, HostLines, MirageSettings};
use crate::transcript::Draft;
use sleuth_script::Clue;

/// The MIRAGE driver with its knobs.
pub(crate) struct Mirage(pub MirageSettings);

impl Driver for Mirage {
    fn play<'r>(&'r self, run: &'r mut Run<'_>) -> BoxFuture<'r, Result<PlayOutcome, GameError>> {
        Box::pin(play(self.0, run))
    }
}

async fn play(s: MirageSettings, run: &mut Run<'_>) -> Result<PlayOutcome, GameError> {
    let names = run.names();
    let mut out = MirageOutcome {
        forced_exposure: s.force_expose,
        investigated: names.iter().map(|n| (n.clone(), Vec::new())).collect(),
        ..MirageOutcome::default()
    };
    steps::distribute(run).await?;
    if s.force_expose {
        exposure(run).await?;
    }
    // Self-introductions without initial questioning (a MIRAGE character introduces itself with
    // its conversation prompt, iteration 0).
    steps::introductions(run, false).await?;
    let releases = s.stage_releases(run.script().acts);
    let mut stage = 1;
    for iteration in 1..=s.iterations {
        conversation(run, iteration).await?;
        scoring(run, iteration, &mut out).await?;
        interaction(run, iteration, stage, &mut out).await?;
        for _ in releases.iter().filter(|&&at| at == iteration) {
            stage += 1;
            release(run, stage).await?;
        }
    }
    let available: Vec<&Clue> = run
        .script()
        .clues
        .iter()
        .filter(|c| available_in(c, stage))
        .collect();
    out.clues_available = available.len();
    out.key_clues_available = available.iter().filter(|c| c.key).count();
    out.accusations = accusations(run).await?;
    let votes = vote(run, &out.accusations).await?;
    let culprits = run.culprits();
    let counts = tally(run.suspects().iter().map(String::as_str), &votes);
    let winner = thinkthrice_winner(&counts, &culprits);
    out.victory = reciprocal_rank(&counts, &culprits, &suspicion_minus_trust(&out));
    steps::reveal(run, &counts, winner).await?;
    Ok(PlayOutcome {
        votes,
        counts,
        winner: Some(winner),
        majority: None,
        mirage: Some(out),
    })
}

/// Whether a clue can be found during stage `stage`.
fn available_in(clue: &Clue, stage: u32) -> bool {
    clue.act.is_none_or(|a| a <= stage)
}

/// Forced exposure: each murderer player's announcement, in their name, before anyone else speaks (a
/// culprit who does not play has no voice to confess with).
async fn exposure(run: &mut Run<'_>) -> Result<(), GameError> {
    let t = run.stage_started("exposure");
    let victims = run.victims();
    for culprit in run.murderers() {
        let text = run.lines().mirage_exposure(&culprit, &victims);
        let d = Draft::public("exposure", &culprit, None, text)
            .with_data(json!({ "forced": true, "culprit": culprit }));
        run.publish("exposure", d).await?;
    }
    run.stage_done("exposure", t);
    Ok(())
}

/// (A) Open conversation: one speech per character, in turn order.
async fn conversation(run: &mut Run<'_>, iteration: u32) -> Result<(), GameError> {
    let stage = format!("conversation_{iteration}");
    let t = run.stage_started(&stage);
    let line = run.lines().mirage_conversation(iteration);
    run.host_says(&stage, None, line.clone()).await?;
    for name in run.names() {
        let host_line = line.clone();
        let mut turn = run
            .request(&name, |reply| CharacterMsg::Converse {
                host_line,
                iteration,
                reply,
            })
            .await?;
        let d = Draft::public("speech", &name, None, turn.text.clone())
            .with_data(json!({ "iteration": iteration }));
        run.publish_turn(&stage, &mut turn, d).await?;
    }
    run.stage_done(&stage, t);
    Ok(())
}

/// The Trust and Suspicion modules after an open conversation: every character scores every other one;
/// the scores are private to the scorer.
async fn scoring(
    run: &mut Run<'_>,
    iteration: u32,
    out: &mut MirageOutcome,
) -> Result<(), GameError> {
    let stage = format!("trust_suspicion_{iteration}");
    let t = run.stage_started(&stage);
    let names = run.names();
    // Scores are private and never remembered: every character scores at once, published in turn
    // order.
    let turns = run
        .request_each(names.iter().map(|scorer| {
            let others = vote_candidates(scorer, &names);
            (scorer.clone(), move |reply| CharacterMsg::Score {
                others,
                reply,
            })
        }))
        .await;
    for (scorer, turn) in names.iter().zip(turns) {
        let mut turn = turn?;
        let others = vote_candidates(scorer, &names);
        let data = turn.data.clone().unwrap_or_default();
        for (module, into) in [("trust", &mut out.trust), ("suspicion", &mut out.suspicion)] {
            let row = into.entry(scorer.clone()).or_default();
            for other in &others {
                let score = data[module][other.as_str()].as_f64().ok_or_else(|| {
                    GameError::Protocol(format!("{scorer} gave no {module} score for {other}"))
                })?;
                row.entry(other.clone())
                    .or_default()
                    .push(score.clamp(0.0, 1.0));
            }
        }
        let mut data = data;
        data["iteration"] = json!(iteration);
        let d =
            Draft::private("trust_suspicion", scorer, &[scorer], turn.text.clone()).with_data(data);
        run.publish_turn(&stage, &mut turn, d).await?;
    }
    run.stage_done(&stage, t);
    Ok(())
}

/// The place a clue is offered by: its location, else the character it is about, else its title.
fn place(clue: &Clue) -> String {
    clue.location
        .clone()
        .or_else(|| clue.about.clone())
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| clue.title.clone())
}

/// (B) Interaction: each character asks or investigates, in turn order; answers and clues are public
/// at once, so later characters in the same phase can build on them.
async fn interaction(
    run: &mut Run<'_>,
    iteration: u32,
    stage_no: u32,
    out: &mut MirageOutcome,
) -> Result<(), GameError> {
    let stage = format!("interaction_{iteration}");
    let t = run.stage_started(&stage);
    run.host_says(&stage, None, run.lines().mirage_interaction(iteration))
        .await?;
    let names = run.names();
    for actor in &names {
        let found: BTreeSet<&String> = out.investigated.values().flatten().collect();
        let clues: Vec<ClueChoice> = run
            .script()
            .clues
            .iter()
            .filter(|c| available_in(c, stage_no) && !found.contains(&c.id))
            .map(|c| ClueChoice {
                id: c.id.clone(),
                place: place(c),
            })
            .collect();
        let candidates = vote_candidates(actor, &names);
        let offered = clues.clone();
        let mut turn = run
            .request(actor, |reply| CharacterMsg::Interact {
                candidates: candidates.clone(),
                clues: offered,
                reply,
            })
            .await?;
        let data = turn.data.clone().unwrap_or_default();
        match data["action"].as_str() {
            Some("ask") => {
                let target = turn
                    .target
                    .clone()
                    .filter(|t| candidates.contains(t))
                    .ok_or_else(|| {
                        GameError::Protocol(format!("{actor} asked someone not in the game"))
                    })?;
                ask(run, &stage, actor, &target, &mut turn, data).await?;
            }
            Some("investigate") => {
                let id = data["clue"].as_str().unwrap_or_default().to_string();
                if !clues.iter().any(|c| c.id == id) {
                    return Err(GameError::Protocol(format!(
                        "{actor} investigated clue `{id}`, which was not on offer"
                    )));
                }
                investigate(run, &stage, actor, &id, &mut turn, data).await?;
                if let Some(list) = out.investigated.get_mut(actor) {
                    list.push(id);
                }
            }
            other => {
                return Err(GameError::Protocol(format!(
                    "{actor} chose no interaction ({other:?})"
                )))
            }
        }
    }
    run.stage_done(&stage, t);
    Ok(())
}

/// An Ask: the question (public), then the asked character's answer (public), at once.
async fn ask(
    run: &mut Run<'_>,
    stage: &str,
    asker: &str,
    target: &str,
    turn: &mut Turn,
    data: serde_json::Value,
) -> Result<(), GameError> {
    let question = turn.text.clone();
    run.publish_turn(
        stage,
        turn,
        Draft::public("question", asker, Some(target), question.clone()).with_data(data),
    )
    .await?;
    steps::answer(run, stage, asker, target, question).await
}

/// An Investigate: what the investigator says while searching (public), then the clue disclosed to all.
async fn investigate(
    run: &mut Run<'_>,
    stage: &str,
    investigator: &str,
    id: &str,
    turn: &mut Turn,
    data: serde_json::Value,
) -> Result<(), GameError> {
    let clue = run
        .script()
        .clues
        .iter()
        .find(|c| c.id == id)
        .cloned()
        .ok_or_else(|| GameError::Protocol(format!("no clue `{id}` in the script")))?;
    let said = turn.text.clone();
    run.publish_turn(
        stage,
        turn,
        Draft::public("investigation", investigator, None, said).with_data(data),
    )
    .await?;
    let text = run
        .lines()
        .mirage_clue_found(investigator, &place(&clue), &clue.text);
    let d = Draft::public("clue", "host", None, text).with_data(json!({
        "clue": clue.id,
        "investigator": investigator,
        "key": clue.key,
        "about": clue.about,
        "location": clue.location,
    }));
    run.publish(stage, d).await.map(|_| ())
}

/// The next stage of a multi-stage script: announced publicly, handed to each character privately (the
/// character re-reads its script and, when it is too long, re-summarizes it).
async fn release(run: &mut Run<'_>, stage_no: u32) -> Result<(), GameError> {
    let announcement = run.lines().mirage_stage_released(stage_no);
    steps::release(
        run,
        &format!("stage_{stage_no}"),
        stage_no,
        announcement,
        HostLines::mirage_stage_handed,
    )
    .await
}

/// (C) Accusations: every character names one suspect other than itself as the culprit, publicly, with
/// a reason.
async fn accusations(run: &mut Run<'_>) -> Result<BTreeMap<String, String>, GameError> {
    let t = run.stage_started("accusation");
    run.host_says("accusation", None, run.lines().mirage_accusation_call())
        .await?;
    let names = run.names();
    let suspects = run.suspects();
    let mut accused = BTreeMap::new();
    for accuser in &names {
        let candidates = vote_candidates(accuser, &suspects);
        let offered = candidates.clone();
        let mut turn = run
            .request(accuser, |reply| CharacterMsg::Accuse {
                candidates: offered,
                reply,
            })
            .await?;
        let target = turn
            .target
            .clone()
            .filter(|t| candidates.contains(t))
            .ok_or_else(|| GameError::Protocol(format!("{accuser} accused nobody in the game")))?;
        let d = Draft::public("accusation", accuser, Some(&target), turn.text.clone())
            .with_data(json!({ "accused": target }));
        run.publish_turn("accusation", &mut turn, d).await?;
        accused.insert(accuser.clone(), target);
    }
    run.stage_done("accusation", t);
    Ok(accused)
}

/// The vote on the accusations (anonymous ballots, as in every sleuth protocol).
async fn vote(
    run: &mut Run<'_>,
    accusations: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, GameError> {
    let t = run.stage_started("vote");
    let names = run.names();
    let suspects = run.suspects();
    // The accused in the suspects' order (turn order when the players are the suspects), each once.
    let accused: Vec<String> = suspects
        .iter()
        .filter(|n| accusations.values().any(|a| a == *n))
        .cloned()
        .collect();
    let call = run.script().host().vote_call;
    let list: Vec<&str> = accused.iter().map(String::as_str).collect();
    let lines = run.lines();
    let text = format!(
        "{}\n{}",
        call.trim(),
        lines.mirage_accused(&lines.join(&list))
    );
    run.publish(
        "vote",
        Draft::public("host", "host", None, text).with_data(json!({ "accused": accused })),
    )
    .await?;
    let voters = names
        .iter()
        .map(|voter| {
            let mut candidates: Vec<String> =
                accused.iter().filter(|a| *a != voter).cloned().collect();
            if candidates.is_empty() {
                // The voter is the only accused: it chooses among every other suspect (see the module
                // doc).
                candidates = vote_candidates(voter, &suspects);
            }
            (voter.clone(), candidates)
        })
        .collect();
    let votes = steps::ballots(run, "vote", &call, voters).await?;
    run.stage_done("vote", t);
    Ok(votes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clue(act: Option<u32>) -> Clue {
        Clue {
            id: "c1".into(),
            title: "Card".into(),
            text: "A torn ledger page.".into(),
            about: None,
            location: None,
            key: true,
            act,
        }
    }

    #[test]
    fn clues_open_from_their_stage_on() {
        assert!(available_in(&clue(None), 1));
        assert!(!available_in(&clue(Some(2)), 1));
        assert!(available_in(&clue(Some(2)), 2));
        assert!(available_in(&clue(Some(2)), 3));
    }

    #[test]
    fn a_clue_is_offered_by_its_place() {
        let mut c = clue(None);
        assert_eq!(place(&c), "Card", "the title when nothing else is known");
        c.about = Some("Ada".into());
        assert_eq!(place(&c), "Ada");
        c.location = Some("Warehouse".into());
        assert_eq!(place(&c), "Warehouse");
    }
}
