//! The `characters` table: one row per game and character — role, seat, vote, and the character's
//! own metrics under each protocol. `result.json` holds the per-character WellPlay and MIRAGE
//! numbers; ThinkThrice's per-character accuracies are not in it, so they are counted here from the
//! character's answer events in the transcript (the same verdicts the game-level numbers sum).
//! Columns and their papers: `docs/data.md`, *characters*.

use std::collections::{BTreeMap, BTreeSet};

use sleuth_game::game::{ChoiceTally, Event, GameResult};
use sleuth_report::GameRecord;

use crate::flatten as f;
use crate::table::{col, Column, Row, Type::*, Value};

pub const COLUMNS: &[Column] = &[
    col("game", Text),
    col("character", Text),
    col("player", Bool),
    col("murderer", Bool),
    col("seat", Text),
    col("framework", Text),
    col("model", Text),
    col("voted_for", Text),
    col("votes_received", Int),
    col("accused", Text),
    col("factual_own", Float),
    col("factual_cq", Float),
    col("factual_mq", Float),
    col("factual_others", Float),
    col("factual_questions", Int),
    col("inferential_accuracy", Float),
    col("informed_accuracy", Float),
    col("rationale_score", Float),
    col("inferential_questions", Int),
    col("choice_score", Float),
    col("choice_accuracy", Float),
    col("choice_points", Int),
    col("choice_possible", Int),
    col("choice_correct", Int),
    col("choice_questions", Int),
    col("clues_investigated", Int),
    col("tii_trust_share", Float),
    col("tii_suspicion_share", Float),
    col("ici", Float),
    col("sci", Float),
    col("role_play", Float),
    col("reconstruction_rouge_l", Float),
    col("ability_reasoning", Float),
    col("ability_communication", Float),
    col("ability_detail", Float),
    col("ability_creativity", Float),
];

/// One character's ThinkThrice answers, counted from the transcript.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Tally {
    /// Category (`own`, `cq`, `mq`) → (correct, answered).
    factual: BTreeMap<String, (u64, u64)>,
    inferential: (u64, u64),
    informed: u64,
    rationale_sum: f64,
    rationale_n: u64,
}

impl Tally {
    fn share(&self, categories: &[&str]) -> Option<f64> {
        let (right, n) = categories
            .iter()
            .filter_map(|c| self.factual.get(*c))
            .fold((0, 0), |a, x| (a.0 + x.0, a.1 + x.1));
        (n > 0).then(|| right as f64 / n as f64)
    }
}

/// Each speaker's factual and inferential verdicts, from the answer events.
pub fn tallies(events: &[Event]) -> BTreeMap<String, Tally> {
    let mut out: BTreeMap<String, Tally> = BTreeMap::new();
    for e in events {
        let d = e.data.as_ref();
        let correct = d.and_then(|d| d.get("correct")).and_then(|v| v.as_bool());
        match e.kind.as_str() {
            "factual_answer" => {
                let category = d
                    .and_then(|d| d.get("category"))
                    .and_then(|v| v.as_str())
                    .unwrap_or("other");
                let t = out.entry(e.speaker.clone()).or_default();
                let c = t.factual.entry(category.to_string()).or_default();
                c.0 += u64::from(correct == Some(true));
                c.1 += 1;
            }
            "inferential_answer" => {
                let t = out.entry(e.speaker.clone()).or_default();
                t.inferential.0 += u64::from(correct == Some(true));
                t.inferential.1 += 1;
                let informed = d.and_then(|d| d.get("informed")).and_then(|v| v.as_bool());
                t.informed += u64::from(informed == Some(true));
                if let Some(s) = d
                    .and_then(|d| d.get("rationale_score"))
                    .and_then(|v| v.as_f64())
                {
                    t.rationale_sum += s;
                    t.rationale_n += 1;
                }
            }
            _ => {}
        }
    }
    out
}

/// Everyone the result names: suspects in the tally (players or not), voters, people's seats, and
/// whoever has a score or answered a question.
fn characters(
    r: &GameResult,
    tallies: &BTreeMap<String, Tally>,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut players: BTreeSet<String> = r.votes.keys().cloned().collect();
    players.extend(r.seats.keys().cloned());
    players.extend(tallies.keys().cloned());
    if let Some(c) = &r.choice {
        players.extend(c.by_agent.keys().cloned());
    }
    if let Some(m) = &r.mirage_scores {
        players.extend(m.characters.keys().cloned());
    }
    if let Some(m) = &r.mirage {
        players.extend(m.investigated.keys().cloned());
        players.extend(m.accusations.keys().cloned());
    }
    let mut all = players.clone();
    all.extend(r.vote_counts.keys().cloned());
    all.extend(r.murderers.iter().cloned());
    (all, players)
}

/// The rows of one game's characters; `tallies` from [`tallies`] over its transcript (empty when it
/// has none, which leaves the ThinkThrice columns null).
pub fn rows(game: &str, rec: &GameRecord, tallies: &BTreeMap<String, Tally>) -> Vec<Row> {
    let r = &rec.result;
    let spec = r.spec.as_ref().and_then(|s| serde_json::to_value(s).ok());
    let murderer_model = f::text(spec.as_ref(), "/murderer_model");
    let (all, players) = characters(r, tallies);
    let empty = Tally::default();
    all.into_iter()
        .map(|name| {
            let murderer = r.murderers.contains(&name);
            let t = tallies.get(&name).unwrap_or(&empty);
            let framework = match (&r.murderer_framework, murderer) {
                (Some(fw), true) => fw.clone(),
                _ => r.framework.clone(),
            };
            let model = match (&murderer_model, murderer) {
                (Value::Text(m), true) => m.clone(),
                _ => r.model.clone(),
            };
            let mut row = Row::new();
            row.set("game", Value::Text(game.to_string()))
                .set("character", Value::Text(name.clone()))
                .set("player", Value::Bool(players.contains(&name)))
                .set("murderer", Value::Bool(murderer))
                .set("seat", Value::text(r.seats.get(&name).map(String::as_str)))
                .set("framework", Value::Text(framework))
                .set("model", Value::Text(model))
                .set(
                    "voted_for",
                    Value::text(r.votes.get(&name).map(String::as_str)),
                )
                .set(
                    "votes_received",
                    r.vote_counts
                        .get(&name)
                        .map_or(Value::Null, |n| Value::Int(i64::from(*n))),
                )
                .set(
                    "accused",
                    Value::text(
                        r.mirage
                            .as_ref()
                            .and_then(|m| m.accusations.get(&name))
                            .map(String::as_str),
                    ),
                );
            thinkthrice(&mut row, t);
            wellplay_and_mirage(&mut row, r, &name);
            row
        })
        .collect()
}

fn thinkthrice(row: &mut Row, t: &Tally) {
    let answered: u64 = t.factual.values().map(|x| x.1).sum();
    let (right, n) = t.inferential;
    row.set("factual_own", Value::float(t.share(&["own"])))
        .set("factual_cq", Value::float(t.share(&["cq"])))
        .set("factual_mq", Value::float(t.share(&["mq"])))
        .set("factual_others", Value::float(t.share(&["cq", "mq"])))
        .set("factual_questions", nonzero(answered))
        .set(
            "inferential_accuracy",
            Value::float((n > 0).then(|| right as f64 / n as f64)),
        )
        .set(
            "informed_accuracy",
            Value::float((n > 0).then(|| t.informed as f64 / n as f64)),
        )
        .set(
            "rationale_score",
            Value::float((t.rationale_n > 0).then(|| t.rationale_sum / t.rationale_n as f64)),
        )
        .set("inferential_questions", nonzero(n));
}

/// A count, null when zero: a character asked no question of a kind has no score for it.
fn nonzero(n: u64) -> Value {
    if n == 0 {
        Value::Null
    } else {
        Value::count(n)
    }
}

fn wellplay_and_mirage(row: &mut Row, r: &GameResult, name: &str) {
    let c = r.choice.as_ref().and_then(|c| c.by_agent.get(name));
    let n = |x: Option<usize>| x.map_or(Value::Null, |x| Value::count(x as u64));
    row.set("choice_score", Value::float(c.and_then(ChoiceTally::score)))
        .set(
            "choice_accuracy",
            Value::float(c.and_then(ChoiceTally::accuracy)),
        )
        .set("choice_points", n(c.map(|t| t.points as usize)))
        .set("choice_possible", n(c.map(|t| t.possible as usize)))
        .set("choice_correct", n(c.map(|t| t.correct)))
        .set("choice_questions", n(c.map(|t| t.questions)));
    let investigated = r
        .mirage
        .as_ref()
        .map(|m| m.investigated.get(name).map_or(0, Vec::len));
    let m = r
        .mirage_scores
        .as_ref()
        .and_then(|m| m.characters.get(name));
    let ability = |i: usize| Value::float(m.and_then(|m| m.abilities).map(|a| a[i]));
    row.set("clues_investigated", n(investigated))
        .set(
            "tii_trust_share",
            Value::float(m.and_then(|m| m.tii_trust_share)),
        )
        .set(
            "tii_suspicion_share",
            Value::float(m.and_then(|m| m.tii_suspicion_share)),
        )
        .set("ici", Value::float(m.and_then(|m| m.ici)))
        .set("sci", Value::float(m.and_then(|m| m.sci)))
        .set("role_play", Value::float(m.and_then(|m| m.role_play)))
        .set(
            "reconstruction_rouge_l",
            Value::float(m.and_then(|m| m.reconstruction_rouge_l)),
        )
        .set("ability_reasoning", ability(0))
        .set("ability_communication", ability(1))
        .set("ability_detail", ability(2))
        .set("ability_creativity", ability(3));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sleuth_game::game::Visibility;

    fn answer(kind: &str, speaker: &str, data: serde_json::Value) -> Event {
        Event {
            seq: 0,
            ts: String::new(),
            stage: "evaluation".into(),
            kind: kind.into(),
            speaker: speaker.into(),
            addressee: None,
            text: String::new(),
            visible_to: Visibility::All,
            usage: None,
            data: Some(data),
        }
    }

    #[test]
    fn a_character_s_accuracies_are_counted_from_its_own_answers() {
        let events = [
            answer(
                "factual_answer",
                "Ada",
                json!({"category": "own", "correct": true}),
            ),
            answer(
                "factual_answer",
                "Ada",
                json!({"category": "own", "correct": false}),
            ),
            answer(
                "factual_answer",
                "Ada",
                json!({"category": "cq", "correct": true}),
            ),
            answer(
                "factual_answer",
                "Ben",
                json!({"category": "mq", "correct": false}),
            ),
            answer(
                "inferential_answer",
                "Ada",
                json!({"correct": true, "informed": false, "rationale_score": 4}),
            ),
            answer("vote", "Ada", json!({"vote": "Ben"})),
        ];
        let t = tallies(&events);
        let ada = &t["Ada"];
        assert_eq!(ada.share(&["own"]), Some(0.5));
        assert_eq!(ada.share(&["cq"]), Some(1.0));
        assert_eq!(ada.share(&["mq"]), None, "Ada was asked no MQ question");
        assert_eq!(ada.share(&["cq", "mq"]), Some(1.0));
        assert_eq!(ada.inferential, (1, 1));
        assert_eq!((ada.informed, ada.rationale_sum), (0, 4.0));
        assert_eq!(t["Ben"].share(&["mq"]), Some(0.0));
        assert_eq!(t.len(), 2, "a vote is no answer");
    }
}
