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
/// top between a murderer and an innocent player is not "the murderer got the most votes", so it goes to
/// the murderers; a tie between murderers only (scripts with several) is a civilian win, since whoever
/// of them is taken, a murderer is.
pub fn thinkthrice_winner(counts: &BTreeMap<String, u32>, murderers: &[String]) -> Winner {
    let top = counts.values().copied().max().unwrap_or(0);
    let leaders: Vec<&String> = counts
        .iter()
        .filter(|(_, &n)| n == top && n > 0)
        .map(|(p, _)| p)
        .collect();
    if !leaders.is_empty() && leaders.iter().all(|l| murderers.contains(l)) {
        Winner::Civilians
    } else {
        Winner::Murderer
    }
}

/// Whom a player may vote for: everyone but themselves. Under the WellPlay rule murderers never vote
/// for themselves; sleuth applies the same to every voter (a self-vote is never informative).
pub fn vote_candidates(voter: &str, players: &[String]) -> Vec<String> {
    players.iter().filter(|p| *p != voter).cloned().collect()
}

/// The WellPlay vote (PLAYER* Appendix A): every player votes; a player with at least half of the votes
/// cast is eliminated; the civilians win if an eliminated player is a murderer. The plurality outcome
/// (ThinkThrice's rule) is reported beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MajorityOutcome {
    /// Players with ≥ 50% of the votes (two at most; none when the votes are spread).
    pub eliminated: Vec<String>,
    /// The winner under the elimination rule.
    pub majority_winner: Winner,
    /// The winner under the plurality rule (a unique top vote-getter who is a murderer).
    pub plurality_winner: Winner,
}

/// Applies the elimination rule to a tally.
pub fn majority_outcome(counts: &BTreeMap<String, u32>, murderers: &[String]) -> MajorityOutcome {
    let cast: u32 = counts.values().sum();
    let eliminated: Vec<String> = counts
        .iter()
        .filter(|(_, &n)| n > 0 && 2 * n >= cast)
        .map(|(p, _)| p.clone())
        .collect();
    let majority_winner = if eliminated.iter().any(|p| murderers.contains(p)) {
        Winner::Civilians
    } else {
        Winner::Murderer
    };
    MajorityOutcome {
        eliminated,
        majority_winner,
        plurality_winner: thinkthrice_winner(counts, murderers),
    }
}

/// A player's rank in the tally, 1 for the most votes. Tied players share the mean of the ranks they
/// span (fractional ranking), so a tie neither rewards nor punishes the culprit arbitrarily.
pub fn vote_rank(counts: &BTreeMap<String, u32>, player: &str) -> Option<f64> {
    let mine = *counts.get(player)?;
    let above = counts.values().filter(|&&n| n > mine).count();
    let tied = counts.values().filter(|&&n| n == mine).count();
    Some(above as f64 + (tied as f64 + 1.0) / 2.0)
}

/// MIRAGE Victory for one game: the reciprocal rank of the best-ranked culprit in the vote (with one
/// culprit, simply 1 / its rank). Averaged over games it is the MRR the paper reports.
pub fn reciprocal_rank(counts: &BTreeMap<String, u32>, culprits: &[String]) -> f64 {
    culprits
        .iter()
        .filter_map(|c| {
            // Each culprit is ranked against the innocent players only: another culprit above or level
            // with it is not a miss (the usual reciprocal rank of the first relevant item).
            let against: BTreeMap<String, u32> = counts
                .iter()
                .filter(|(p, _)| *p == c || !culprits.contains(p))
                .map(|(p, n)| (p.clone(), *n))
                .collect();
            vote_rank(&against, c)
        })
        .map(|r| 1.0 / r)
        .fold(0.0, f64::max)
}

/// What the MIRAGE simulation produced besides the vote (PROTOCOLS.md §4).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MirageOutcome {
    /// Accuser → the character they accused.
    pub accusations: BTreeMap<String, String>,
    /// Reciprocal rank of the culprit in the vote (Victory; MRR over games).
    pub victory: f64,
    /// Clue ids each character investigated, in order.
    pub investigated: BTreeMap<String, Vec<String>>,
    /// Clues that could be investigated, and the key ones among them.
    pub clues_available: usize,
    pub key_clues_available: usize,
    /// Scorer → scored → trust scores given after each open-conversation phase, in order (0..=1).
    pub trust: BTreeMap<String, BTreeMap<String, Vec<f64>>>,
    /// Scorer → scored → suspicion scores, likewise.
    pub suspicion: BTreeMap<String, BTreeMap<String, Vec<f64>>>,
    /// Whether culprits were made to expose themselves (MIRAGE Table 3).
    pub forced_exposure: bool,
}

/// MIRAGE metrics of one character (MIRAGE Appendix B); ratios in 0..=1, ICI and SCI on 0..=100.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MirageCharacterScores {
    /// Trust Inclination Index: trust others gave this character / (trust + suspicion).
    pub tii: Option<f64>,
    /// Clues this character investigated / clues that could be investigated.
    pub cic: Option<f64>,
    /// The same over key clues only.
    pub cic_key: Option<f64>,
    /// The judge's four ability scores (0-20): reasoning and analysis, communication and cooperation,
    /// detail observation, creative thinking.
    pub abilities: Option<[f64; 4]>,
    /// Interactivity Capability Index: the four abilities normalised to 0-100.
    pub ici: Option<f64>,
    /// The judge's role-play score (0-20).
    pub role_play: Option<f64>,
    /// ROUGE-L F between the character's script and the one the judge reconstructed from its behaviour.
    pub reconstruction_rouge_l: Option<f64>,
    /// Script Compliance Index: mean of role play (as 0-100) and ROUGE-L F (as 0-100).
    pub sci: Option<f64>,
}

/// MIRAGE metrics of a game: per character and averaged over characters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MirageScores {
    pub characters: BTreeMap<String, MirageCharacterScores>,
    pub tii: Option<f64>,
    pub cic: Option<f64>,
    pub cic_key: Option<f64>,
    pub ici: Option<f64>,
    pub sci: Option<f64>,
}

/// WellPlay multiple-choice results of one category (or overall).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChoiceTally {
    pub correct: usize,
    pub questions: usize,
    pub points: u32,
    pub possible: u32,
}

impl ChoiceTally {
    /// Share answered right.
    pub fn accuracy(&self) -> Option<f64> {
        (self.questions > 0).then(|| self.correct as f64 / self.questions as f64)
    }

    /// Awarded points / possible points (PLAYER*'s score).
    pub fn score(&self) -> Option<f64> {
        (self.possible > 0).then(|| f64::from(self.points) / f64::from(self.possible))
    }

    /// Adds one graded question.
    pub fn add(&mut self, correct: bool, points: u32) {
        self.questions += 1;
        self.possible += points;
        if correct {
            self.correct += 1;
            self.points += points;
        }
    }
}

/// WellPlay multiple-choice results of a game (PLAYER* §4): by category and overall, and per agent,
/// summed over the evaluation repeats; and each repeat's own score, for the mean ± std the paper reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChoiceScores {
    /// `objective`, `reasoning`, `relations` → tally over all repeats.
    pub by_category: BTreeMap<String, ChoiceTally>,
    pub overall: ChoiceTally,
    /// Agent → overall tally of that agent's questions.
    pub by_agent: BTreeMap<String, ChoiceTally>,
    /// How many times every question was asked (PLAYER* runs each evaluation 3 times).
    #[serde(default)]
    pub repeats: u32,
    /// Overall score (awarded / possible points) of each repeat.
    #[serde(default)]
    pub repeat_scores: Vec<f64>,
    /// Category → accuracy of each repeat.
    #[serde(default)]
    pub repeat_accuracy: BTreeMap<String, Vec<f64>>,
}

impl ChoiceScores {
    /// Mean and sample standard deviation of the overall score over repeats.
    pub fn score_mean_std(&self) -> Option<(f64, f64)> {
        Some((
            crate::eval::stats::mean(&self.repeat_scores)?,
            crate::eval::stats::std_dev(&self.repeat_scores)?,
        ))
    }

    /// Mean and sample standard deviation of one category's accuracy over repeats.
    pub fn accuracy_mean_std(&self, category: &str) -> Option<(f64, f64)> {
        let xs = self.repeat_accuracy.get(category)?;
        Some((
            crate::eval::stats::mean(xs)?,
            crate::eval::stats::std_dev(xs)?,
        ))
    }
}

/// A multiple-choice answer is right only when it names exactly the true letters: with several truths,
/// every one must be chosen and nothing else (a partial answer is wrong).
pub fn choice_correct(chosen: &[String], truth: &[String]) -> bool {
    let norm = |v: &[String]| {
        let mut v: Vec<String> = v.iter().map(|x| x.trim().to_ascii_uppercase()).collect();
        v.sort();
        v.dedup();
        v
    };
    !truth.is_empty() && norm(chosen) == norm(truth)
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
    /// The murderers' framework when it differs from everyone else's (PLAYER* fixes it across arms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub murderer_framework: Option<String>,
    pub modules: String,
    pub seed: u64,
    pub provider: String,
    pub model: String,
    /// `None` when nothing was played (the PP and OP references).
    pub winner: Option<Winner>,
    pub murderers: Vec<String>,
    /// Voter → the player they voted for.
    pub votes: BTreeMap<String, String>,
    pub vote_counts: BTreeMap<String, u32>,
    pub murderer_detection_accuracy: f64,
    /// The WellPlay elimination rule's outcome (protocol `wellplay`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub majority: Option<MajorityOutcome>,
    /// Accusations, investigations, trust and suspicion, Victory (protocol `mirage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirage: Option<MirageOutcome>,
    pub factual: FactualScores,
    pub inferential_accuracy: Option<f64>,
    /// Inferential questions with the right option AND a rationale the judge scored at or above the
    /// threshold (ThinkThrice informed accuracy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub informed_accuracy: Option<f64>,
    /// Mean judge score (1-5) of the inferential rationales.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale_score: Option<f64>,
    /// MIRAGE's per-character metrics (TII, CIC, ICI, SCI), for the mirage protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirage_scores: Option<MirageScores>,
    /// Which judge graded each metric (`lexical …` or `llm:MODEL`), so a table says what it rests on.
    #[serde(default)]
    pub judges: BTreeMap<String, String>,
    /// WellPlay multiple-choice scores, for scripts that have such questions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<ChoiceScores>,
    pub usage: Usage,
    pub usage_by_phase: PhaseUsage,
    /// Protocol settings the game ran with.
    pub settings: serde_json::Value,
    pub events: usize,
    pub duration_seconds: f64,
    /// What the game was played from: `sleuth play --spec result.json` replays it. Last, so that the
    /// fields above keep their places; absent from results written before games recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<super::GameSpec>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn votes(v: &[(&str, &str)]) -> BTreeMap<String, String> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn half_the_votes_eliminates_and_civilians_win_on_an_eliminated_murderer() {
        let players = ["Ada", "Ben", "Cy", "Dee"];
        let m = names(&["Ada"]);
        // 2 of 4 is 50%: eliminated.
        let v = votes(&[("Ben", "Ada"), ("Cy", "Ada"), ("Dee", "Cy"), ("Ada", "Dee")]);
        let o = majority_outcome(&tally(players, &v), &m);
        assert_eq!(o.eliminated, names(&["Ada"]));
        assert_eq!(o.majority_winner, Winner::Civilians);
        assert_eq!(o.plurality_winner, Winner::Civilians);
        // A 2-2 tie eliminates both: the elimination rule lets the civilians win, plurality does not.
        let v = votes(&[("Ben", "Ada"), ("Cy", "Ada"), ("Dee", "Cy"), ("Ada", "Cy")]);
        let o = majority_outcome(&tally(players, &v), &m);
        assert_eq!(o.eliminated, names(&["Ada", "Cy"]));
        assert_eq!(o.majority_winner, Winner::Civilians);
        assert_eq!(o.plurality_winner, Winner::Murderer);
        // 1 of 4 each for three players, 1 spare: nobody reaches half, murderers win under both rules.
        let v = votes(&[("Ben", "Cy"), ("Cy", "Dee"), ("Dee", "Ben"), ("Ada", "Ben")]);
        let o = majority_outcome(&tally(players, &v), &m);
        assert_eq!(o.eliminated, names(&["Ben"]), "2 of 4 is exactly half");
        assert_eq!(o.majority_winner, Winner::Murderer);
        // Five voters: 2 of 5 is under half.
        let five = ["Ada", "Ben", "Cy", "Dee", "Eve"];
        let v = votes(&[
            ("Ben", "Ada"),
            ("Cy", "Ada"),
            ("Dee", "Cy"),
            ("Eve", "Cy"),
            ("Ada", "Eve"),
        ]);
        let o = majority_outcome(&tally(five, &v), &m);
        assert!(o.eliminated.is_empty());
        assert_eq!(o.majority_winner, Winner::Murderer);
        // No votes at all: nobody is eliminated.
        let o = majority_outcome(&tally(players, &BTreeMap::new()), &m);
        assert!(o.eliminated.is_empty());
    }

    #[test]
    fn several_murderers_any_eliminated_one_is_enough() {
        let players = ["Ada", "Ben", "Cy", "Dee", "Eve", "Fay"];
        let m = names(&["Ada", "Eve"]);
        let v = votes(&[
            ("Ben", "Eve"),
            ("Cy", "Eve"),
            ("Dee", "Eve"),
            ("Fay", "Ada"),
            ("Ada", "Ben"),
            ("Eve", "Ben"),
        ]);
        let c = tally(players, &v);
        let o = majority_outcome(&c, &m);
        assert_eq!(o.eliminated, names(&["Eve"]));
        assert_eq!(o.majority_winner, Winner::Civilians);
        assert_eq!(thinkthrice_winner(&c, &m), Winner::Civilians);
        assert!((detection_accuracy(&v, &m) - 4.0 / 6.0).abs() < 1e-12);
        // The best-ranked culprit counts for Victory: Eve is first.
        assert!((reciprocal_rank(&c, &m) - 1.0).abs() < 1e-12);
        // Two culprits tied at the top: whichever is taken is a culprit — a civilian win, Victory 1.
        let four = ["Ada", "Ben", "Cy", "Dee"];
        let both = names(&["Ada", "Ben"]);
        let v = votes(&[
            ("Ada", "Ben"),
            ("Ben", "Ada"),
            ("Cy", "Ada"),
            ("Dee", "Ben"),
        ]);
        let c = tally(four, &v);
        assert_eq!(thinkthrice_winner(&c, &both), Winner::Civilians);
        assert!((reciprocal_rank(&c, &both) - 1.0).abs() < 1e-12);
        // A culprit tied with an innocent player at the top still loses under plurality.
        let v = votes(&[("Ada", "Cy"), ("Ben", "Ada"), ("Cy", "Ada"), ("Dee", "Cy")]);
        assert_eq!(
            thinkthrice_winner(&tally(four, &v), &both),
            Winner::Murderer
        );
    }

    #[test]
    fn nobody_may_vote_for_themselves() {
        let players = names(&["Ada", "Ben", "Cy"]);
        for p in &players {
            let c = vote_candidates(p, &players);
            assert!(!c.contains(p), "{p} may vote for themselves");
            assert_eq!(c.len(), 2);
        }
    }

    #[test]
    fn reciprocal_rank_shares_tied_ranks() {
        let players = ["Ada", "Ben", "Cy", "Dee"];
        let m = names(&["Ada"]);
        // Ada first alone: 1.
        let v = votes(&[("Ben", "Ada"), ("Cy", "Ada"), ("Dee", "Cy"), ("Ada", "Cy")]);
        let c = tally(players, &v);
        // Ada and Cy tie for first with 2 each: ranks 1 and 2 shared → 1.5.
        assert_eq!(vote_rank(&c, "Ada"), Some(1.5));
        assert!((reciprocal_rank(&c, &m) - 1.0 / 1.5).abs() < 1e-12);
        // Ben and Dee tie last with 0: ranks 3 and 4 → 3.5.
        assert_eq!(vote_rank(&c, "Dee"), Some(3.5));
        let v = votes(&[("Ben", "Cy"), ("Cy", "Dee"), ("Dee", "Cy"), ("Ada", "Cy")]);
        let c = tally(players, &v);
        // Ada has 0 with Ben: ranks 3 and 4 → 3.5; Victory 1/3.5.
        assert!((reciprocal_rank(&c, &m) - 1.0 / 3.5).abs() < 1e-12);
        assert_eq!(reciprocal_rank(&c, &names(&["Nobody"])), 0.0);
    }

    #[test]
    fn a_partial_multiple_choice_answer_is_wrong() {
        let t = names(&["A", "C"]);
        assert!(choice_correct(&names(&["C", "A"]), &t));
        assert!(choice_correct(&names(&["a", "c", "C"]), &t));
        assert!(!choice_correct(&names(&["A"]), &t), "partial");
        assert!(!choice_correct(&names(&["A", "B", "C"]), &t), "extra");
        assert!(!choice_correct(&[], &[]));
        let mut tally = ChoiceTally::default();
        tally.add(true, 10);
        tally.add(false, 5);
        tally.add(true, 2);
        assert_eq!(tally.score(), Some(12.0 / 17.0));
        assert_eq!(tally.accuracy(), Some(2.0 / 3.0));
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
