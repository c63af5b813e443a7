//! The vote, its outcome, and `result.json`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::llm::Usage;

/// Who won.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Winner {
    Civilians,
    Murderer,
}

impl Winner {
    /// Label value for metrics and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Winner::Civilians => "civilians",
            Winner::Murderer => "murderer",
        }
    }
}

/// Votes received per player (players with no vote included, at 0).
pub fn tally<'a>(
    players: impl IntoIterator<Item = &'a str>,
    votes: &BTreeMap<String, String>,
) -> BTreeMap<String, u32> {
    let mut counts: BTreeMap<String, u32> =
        players.into_iter().map(|p| (p.to_string(), 0)).collect();
    for target in votes.values() {
        *counts.entry(target.clone()).or_insert(0) += 1;
    }
    counts
}

/// ThinkThrice rule 9: the civilians win if the player with the most votes is a murderer. A tie at the
/// top is not "the player with the most votes", so it goes to the murderers.
pub fn thinkthrice_winner(counts: &BTreeMap<String, u32>, murderers: &[String]) -> Winner {
    let top = counts.values().copied().max().unwrap_or(0);
    let leaders: Vec<&String> = counts
        .iter()
        .filter(|(_, &n)| n == top && n > 0)
        .map(|(p, _)| p)
        .collect();
    if leaders.len() == 1 && murderers.contains(leaders[0]) {
        Winner::Civilians
    } else {
        Winner::Murderer
    }
}

/// Votes received by murderers / votes cast (ThinkThrice §6).
pub fn detection_accuracy(votes: &BTreeMap<String, String>, murderers: &[String]) -> f64 {
    if votes.is_empty() {
        return 0.0;
    }
    votes.values().filter(|t| murderers.contains(t)).count() as f64 / votes.len() as f64
}

/// Factual QA accuracy by whose script the question comes from (ThinkThrice Table 4).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FactualScores {
    /// Questions about the answering agent's own script.
    pub own: Option<f64>,
    /// Questions about other civilians' scripts.
    pub cq: Option<f64>,
    /// Questions about the murderer's script (asked of everyone but the murderer).
    pub mq: Option<f64>,
    /// CQ and MQ together.
    pub others: Option<f64>,
    /// Questions answered in each category.
    pub counts: BTreeMap<String, usize>,
    /// How answers were judged, e.g. `lexical window-F1 >= 0.5` or `llm:gpt-4o-mini`.
    pub judge: String,
}

/// Calls and cost per phase (PLAYER* Table A5).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseUsage {
    pub gameplay: Usage,
    pub evaluation: Usage,
}

/// Everything `result.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GameResult {
    pub game_id: String,
    pub script: String,
    pub protocol: String,
    pub framework: String,
    pub modules: String,
    pub seed: u64,
    pub provider: String,
    pub model: String,
    pub winner: Winner,
    pub murderers: Vec<String>,
    /// Voter → the player they voted for.
    pub votes: BTreeMap<String, String>,
    pub vote_counts: BTreeMap<String, u32>,
    pub murderer_detection_accuracy: f64,
    pub factual: FactualScores,
    pub inferential_accuracy: Option<f64>,
    pub usage: Usage,
    pub usage_by_phase: PhaseUsage,
    /// Protocol settings the game ran with.
    pub settings: serde_json::Value,
    pub events: usize,
    pub duration_seconds: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn votes(v: &[(&str, &str)]) -> BTreeMap<String, String> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn plurality_on_the_murderer_wins_and_ties_lose() {
        let m = vec!["Ada".to_string()];
        let players = ["Ada", "Ben", "Cy", "Dee"];
        let v = votes(&[("Ben", "Ada"), ("Cy", "Ada"), ("Dee", "Cy"), ("Ada", "Cy")]);
        let c = tally(players, &v);
        assert_eq!(c["Ada"], 2);
        assert_eq!(c["Ben"], 0);
        assert_eq!(
            thinkthrice_winner(&c, &m),
            Winner::Murderer,
            "a 2-2 tie is not a win"
        );
        let v = votes(&[("Ben", "Ada"), ("Cy", "Ada"), ("Dee", "Cy"), ("Ada", "Dee")]);
        assert_eq!(
            thinkthrice_winner(&tally(players, &v), &m),
            Winner::Civilians
        );
        assert!((detection_accuracy(&v, &m) - 0.5).abs() < 1e-12);
        assert_eq!(
            thinkthrice_winner(&tally(players, &BTreeMap::new()), &m),
            Winner::Murderer
        );
    }
}
