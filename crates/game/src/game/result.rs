//! The vote, its outcome, and `result.json`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use sleuth_llm::{GamePromptCache, PromptCacheTally, Usage};

pub use crate::eval::scores::{
    choice_correct, detection_accuracy, reciprocal_rank, suspicion_minus_trust, vote_order,
    vote_rank, ChoiceScores, ChoiceTally, FactualScores, MirageCharacterScores, MirageOutcome,
    MirageScores,
};

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

/// Votes received per suspect (suspects with no vote included, at 0). `suspects` are the script's
/// [`Script::suspect_names`](sleuth_script::Script::suspect_names): the players, unless the script lists
/// its suspects.
pub fn tally<'a>(
    suspects: impl IntoIterator<Item = &'a str>,
    votes: &BTreeMap<String, String>,
) -> BTreeMap<String, u32> {
    let mut counts: BTreeMap<String, u32> =
        suspects.into_iter().map(|p| (p.to_string(), 0)).collect();
    for target in votes.values() {
        *counts.entry(target.clone()).or_insert(0) += 1;
    }
    counts
}

/// ThinkThrice rule 9: the civilians win if the suspect with the most votes is a culprit. A tie at the
/// top between a culprit and an innocent suspect is not "the murderer got the most votes", so it goes to
/// the culprits; a tie between culprits only (scripts with several) is a civilian win, since whoever of
/// them is taken, a culprit is. `culprits` is [`Script::culprits`](sleuth_script::Script::culprits):
/// murderer players and non-player suspects alike, since the rule is about who did it, not who plays.
pub fn thinkthrice_winner(counts: &BTreeMap<String, u32>, culprits: &[String]) -> Winner {
    let top = counts.values().copied().max().unwrap_or(0);
    let leaders: Vec<&String> = counts
        .iter()
        .filter(|(_, &n)| n == top && n > 0)
        .map(|(p, _)| p)
        .collect();
    if !leaders.is_empty() && leaders.iter().all(|l| culprits.contains(l)) {
        Winner::Civilians
    } else {
        Winner::Murderer
    }
}

/// Whom a player may vote for (or accuse): every suspect but themselves. Under the WellPlay rule
/// murderers never vote for themselves; sleuth applies the same to every voter (a self-vote is never
/// informative). `suspects` keeps its order, so ballots list the candidates as the script does (cast
/// order when the players are the suspects). A voter who is not a suspect (a detective among the
/// players) may choose any suspect.
pub fn vote_candidates(voter: &str, suspects: &[String]) -> Vec<String> {
    suspects.iter().filter(|p| *p != voter).cloned().collect()
}

/// The WellPlay vote (PLAYER* Appendix A): every player votes; a suspect with at least half of the
/// votes cast is eliminated; the civilians win if an eliminated suspect is a culprit. The plurality
/// outcome (ThinkThrice's rule) is reported beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MajorityOutcome {
    /// Suspects with ≥ 50% of the votes (two at most; none when the votes are spread).
    pub eliminated: Vec<String>,
    /// The winner under the elimination rule.
    pub majority_winner: Winner,
    /// The winner under the plurality rule (a unique top vote-getter who is a culprit).
    pub plurality_winner: Winner,
    /// One vote per victim, for scripts whose `truth.culprits` lists several victims (PLAYER* rule 6:
    /// "cast their vote for who they think is the murderer in each case"); empty when the game held one
    /// vote, so one-victim results read as before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cases: Vec<CaseVote>,
    /// PLAYER*'s Voting value of the game with several cases: cases whose culprit was eliminated /
    /// victims. `None` with one vote, where it is 1 for a civilian win and 0 otherwise
    /// ([`MajorityOutcome::voting`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voting: Option<f64>,
}

impl MajorityOutcome {
    /// PLAYER*'s Voting value of this game (Table A3 "Voting", averaged over runs there): the share of
    /// victims whose culprit the vote eliminated; with one vote, 1 for a civilian win, else 0.
    pub fn voting(&self) -> f64 {
        self.voting.unwrap_or(match self.majority_winner {
            Winner::Civilians => 1.0,
            Winner::Murderer => 0.0,
        })
    }

    /// Correct ballots / ballots over all the cases (a ballot is correct when it names a culprit of
    /// the victim it is about); `None` when the game held one vote, whose accuracy is
    /// [`detection_accuracy`] of that vote, or no ballot at all.
    pub fn ballot_accuracy(&self) -> Option<f64> {
        let cast: usize = self.cases.iter().map(|c| c.votes.len()).sum();
        let right: usize = self
            .cases
            .iter()
            .map(|c| c.votes.values().filter(|t| c.culprits.contains(t)).count())
            .sum();
        (cast > 0).then(|| right as f64 / cast as f64)
    }
}

/// The vote about one victim's death ("who killed V?").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseVote {
    pub victim: String,
    /// Who killed this victim. Empty when nobody in the cast did (WellPlay "Ghost Revenge"): no ballot
    /// is held, since no name on it could be right, and the case counts as not identified.
    pub culprits: Vec<String>,
    /// Voter → the suspect they named for this victim.
    pub votes: BTreeMap<String, String>,
    pub vote_counts: BTreeMap<String, u32>,
    /// Suspects with ≥ 50% of this case's ballots.
    pub eliminated: Vec<String>,
    /// Whether one of this victim's culprits was eliminated.
    pub identified: bool,
}

/// The victims voted on one by one: every `truth.culprits` entry (victim, its culprits), when the
/// script lists two or more. Otherwise empty: the game holds a single vote on the script's culprits,
/// exactly as before per-victim votes existed (one victim, or several victims with one `truth.murderer`).
pub fn vote_cases(script: &sleuth_script::Script) -> Vec<(String, Vec<String>)> {
    if script.truth.culprits.len() < 2 {
        return Vec::new();
    }
    script
        .truth
        .culprits
        .iter()
        .map(|c| (c.victim.clone(), c.by.clone()))
        .collect()
}

/// One case's outcome under the elimination rule; `votes` empty for a case with no culprit.
pub fn case_vote<'a>(
    victim: &str,
    culprits: &[String],
    suspects: impl IntoIterator<Item = &'a str>,
    votes: BTreeMap<String, String>,
) -> CaseVote {
    let vote_counts = tally(suspects, &votes);
    let m = majority_outcome(&vote_counts, culprits);
    CaseVote {
        victim: victim.to_string(),
        culprits: culprits.to_vec(),
        identified: !culprits.is_empty() && m.majority_winner == Winner::Civilians,
        votes,
        vote_counts,
        eliminated: m.eliminated,
    }
}

/// Combines per-victim votes. **sleuth:** the civilians win when every victim who has a culprit in the
/// cast had one eliminated (a murderer who got away with one death has won that game); a victim with no
/// culprit in the cast cannot be solved and does not decide the winner, but counts in `voting` as not
/// identified, so Voting steps by 1/victims as PLAYER*'s published values do. `eliminated` lists every
/// case's eliminated suspects (first case first, without repeats); the plurality winner applies the
/// same all-cases rule to each case's plurality outcome.
pub fn cases_outcome(cases: Vec<CaseVote>) -> MajorityOutcome {
    let scored: Vec<&CaseVote> = cases.iter().filter(|c| !c.culprits.is_empty()).collect();
    let all = |won: &dyn Fn(&CaseVote) -> bool| {
        if !scored.is_empty() && scored.iter().all(|c| won(c)) {
            Winner::Civilians
        } else {
            Winner::Murderer
        }
    };
    let majority_winner = all(&|c| c.identified);
    let plurality_winner =
        all(&|c| thinkthrice_winner(&c.vote_counts, &c.culprits) == Winner::Civilians);
    let mut eliminated: Vec<String> = Vec::new();
    for p in cases.iter().flat_map(|c| &c.eliminated) {
        if !eliminated.contains(p) {
            eliminated.push(p.clone());
        }
    }
    let identified = cases.iter().filter(|c| c.identified).count();
    let voting = (!cases.is_empty()).then(|| identified as f64 / cases.len() as f64);
    MajorityOutcome {
        eliminated,
        majority_winner,
        plurality_winner,
        cases,
        voting,
    }
}

/// Applies the elimination rule to a tally; `culprits` as for [`thinkthrice_winner`].
pub fn majority_outcome(counts: &BTreeMap<String, u32>, culprits: &[String]) -> MajorityOutcome {
    let cast: u32 = counts.values().sum();
    let eliminated: Vec<String> = counts
        .iter()
        .filter(|(_, &n)| n > 0 && 2 * n >= cast)
        .map(|(p, _)| p.clone())
        .collect();
    let majority_winner = if eliminated.iter().any(|p| culprits.contains(p)) {
        Winner::Civilians
    } else {
        Winner::Murderer
    };
    MajorityOutcome {
        eliminated,
        majority_winner,
        plurality_winner: thinkthrice_winner(counts, culprits),
        cases: Vec::new(),
        voting: None,
    }
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
    /// Who did it ([`Script::culprits`](sleuth_script::Script::culprits)): the murderer players, then
    /// any non-player suspects marked as culprits. The field keeps its name so older results still read.
    pub murderers: Vec<String>,
    /// Characters played by people → `human:NAME` (`docs/seat.md`); absent when agents played all.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub seats: BTreeMap<String, String>,
    /// Voter → the suspect they voted for.
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

impl GameResult {
    /// Writes the gateway's cacheable-prompt tallies of this game into its usage: the whole game in
    /// `usage`, each phase in `usage_by_phase` (generation calls, which games do not make, count in
    /// the total only); and the bytes its calls tokenized, in `usage` only.
    pub fn set_prompt_cache(&mut self, cache: &GamePromptCache) {
        fn set(u: &mut Usage, t: PromptCacheTally) {
            u.cacheable_prompt_tokens = Some(t.cacheable_tokens);
            u.cacheable_share = t.share().map(|s| (s * 1e4).round() / 1e4);
        }
        set(&mut self.usage, cache.total());
        self.usage.bytes_tokenized = Some(cache.bytes_tokenized);
        set(&mut self.usage_by_phase.gameplay, cache.gameplay);
        set(&mut self.usage_by_phase.evaluation, cache.evaluation);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::scores::standing_score;

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
        assert!((reciprocal_rank(&c, &m, &BTreeMap::new()) - 1.0).abs() < 1e-12);
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
        assert!((reciprocal_rank(&c, &both, &BTreeMap::new()) - 1.0).abs() < 1e-12);
        // A culprit tied with an innocent player at the top still loses under plurality.
        let v = votes(&[("Ada", "Cy"), ("Ben", "Ada"), ("Cy", "Ada"), ("Dee", "Cy")]);
        assert_eq!(
            thinkthrice_winner(&tally(four, &v), &both),
            Winner::Murderer
        );
    }

    /// Two detectives (Ada, Ben, not suspects) and a suspect player (Cy) vote among Cy and two
    /// non-players, Dr Grey (the culprit) and Nell: the rules read the non-player culprit as they read a
    /// murderer player.
    #[test]
    fn a_non_player_culprit_wins_and_loses_like_a_murderer() {
        let suspects = ["Cy", "Dr Grey", "Nell"];
        let grey = names(&["Dr Grey"]);
        let v = votes(&[("Ada", "Dr Grey"), ("Ben", "Dr Grey"), ("Cy", "Nell")]);
        let c = tally(suspects, &v);
        assert_eq!(c.keys().collect::<Vec<_>>(), ["Cy", "Dr Grey", "Nell"]);
        assert_eq!(c["Cy"], 0, "every suspect is in the tally, players or not");
        assert_eq!(thinkthrice_winner(&c, &grey), Winner::Civilians);
        let o = majority_outcome(&c, &grey);
        assert_eq!(o.eliminated, names(&["Dr Grey"]));
        assert_eq!(o.majority_winner, Winner::Civilians);
        assert!((detection_accuracy(&v, &grey) - 2.0 / 3.0).abs() < 1e-12);
        assert!((reciprocal_rank(&c, &grey, &BTreeMap::new()) - 1.0).abs() < 1e-12);
        // Most votes on the innocent non-player: the culprit escapes, ranked among all the suspects
        // (second of three, alone).
        let v = votes(&[("Ada", "Nell"), ("Ben", "Nell"), ("Cy", "Dr Grey")]);
        let c = tally(suspects, &v);
        assert_eq!(thinkthrice_winner(&c, &grey), Winner::Murderer);
        assert_eq!(
            majority_outcome(&c, &grey).majority_winner,
            Winner::Murderer
        );
        assert!((reciprocal_rank(&c, &grey, &BTreeMap::new()) - 0.5).abs() < 1e-12);
        // A tie at the top between the outside culprit and the suspect player goes to the culprit.
        let v = votes(&[("Ada", "Dr Grey"), ("Ben", "Cy"), ("Cy", "Nell")]);
        let c = tally(suspects, &v);
        assert_eq!(thinkthrice_winner(&c, &grey), Winner::Murderer);
        // Nobody voted for: everyone is tied, and name order puts Dr Grey second of three.
        let c = tally(suspects, &BTreeMap::new());
        assert!((reciprocal_rank(&c, &grey, &BTreeMap::new()) - 0.5).abs() < 1e-12);
        assert_eq!(detection_accuracy(&BTreeMap::new(), &grey), 0.0);
    }

    #[test]
    fn the_ballot_offers_the_suspects_but_the_voter() {
        let suspects = names(&["Cy", "Dr Grey", "Nell"]);
        // A detective who is no suspect chooses among them all, in the script's order.
        assert_eq!(vote_candidates("Ada", &suspects), suspects);
        // A suspect player never sees their own name.
        assert_eq!(
            vote_candidates("Cy", &suspects),
            names(&["Dr Grey", "Nell"])
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

    fn scores(v: &[(&str, f64)]) -> BTreeMap<String, f64> {
        v.iter().map(|(p, x)| (p.to_string(), *x)).collect()
    }

    /// MIRAGE publishes only reciprocals of whole ranks: a tie in the standing is broken, never shared.
    #[test]
    fn a_tie_in_votes_gives_whole_ranks() {
        let players = ["Ada", "Ben", "Cy", "Dee"];
        let m = names(&["Ada"]);
        let none = BTreeMap::new();
        // Ada and Cy tie for first with 2 each; Ben and Dee tie last with 0.
        let v = votes(&[("Ben", "Ada"), ("Cy", "Ada"), ("Dee", "Cy"), ("Ada", "Cy")]);
        let c = tally(players, &v);
        // No scores: name order decides, Ada before Cy, Ben before Dee.
        assert_eq!(vote_order(&c, &none), names(&["Ada", "Cy", "Ben", "Dee"]));
        assert_eq!(vote_rank(&c, &none, "Ada"), Some(1));
        assert_eq!(vote_rank(&c, &none, "Dee"), Some(4));
        assert_eq!(vote_rank(&c, &none, "Nobody"), None);
        assert!((reciprocal_rank(&c, &m, &none) - 1.0).abs() < 1e-12);
        // Cy as culprit, tied with Ada: second by name, 1/2 — a whole rank, not 1/1.5.
        assert!((reciprocal_rank(&c, &names(&["Cy"]), &none) - 0.5).abs() < 1e-12);
        // Ada with 0 votes, tied with Ben: ranks 3 and 4, never 3.5.
        let v = votes(&[("Ben", "Cy"), ("Cy", "Dee"), ("Dee", "Cy"), ("Ada", "Cy")]);
        let c = tally(players, &v);
        assert!((reciprocal_rank(&c, &m, &none) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(reciprocal_rank(&c, &names(&["Nobody"]), &none), 0.0);
        // Every reciprocal rank of a tally is 1/k for a whole k.
        for p in players {
            let rr = reciprocal_rank(&c, &names(&[p]), &none);
            assert!(((1.0 / rr) - (1.0 / rr).round()).abs() < 1e-12, "{p}: {rr}");
        }
    }

    #[test]
    fn the_standing_sums_votes_times_players_and_suspicion_minus_trust() {
        let players = ["Ada", "Ben", "Cy", "Dee"];
        // Ada and Cy tie for first with 2 votes each: 4 voters, so 8 points each from the vote.
        let v = votes(&[("Ben", "Ada"), ("Cy", "Ada"), ("Dee", "Cy"), ("Ada", "Cy")]);
        let c = tally(players, &v);
        // The table suspected Cy more than it trusted him: Cy first, Ada (the culprit) second.
        let s = scores(&[("Ada", -1.0), ("Cy", 2.0)]);
        assert_eq!(vote_order(&c, &s), names(&["Cy", "Ada", "Ben", "Dee"]));
        assert!((reciprocal_rank(&c, &names(&["Ada"]), &s) - 0.5).abs() < 1e-12);
        // The other way round: Ada first.
        let s = scores(&[("Ada", 3.0), ("Cy", 2.0)]);
        assert!((reciprocal_rank(&c, &names(&["Ada"]), &s) - 1.0).abs() < 1e-12);
        // The scores are not only a tie-break: Dee, unvoted but suspected all game (9 on sleuth's
        // 0..=1 scale, 18 on the reference's 0-2 scale), passes the two 8-point leaders.
        let s = scores(&[("Dee", 9.0), ("Ben", -9.0)]);
        assert_eq!(vote_order(&c, &s), names(&["Dee", "Ada", "Cy", "Ben"]));
        // A missing score counts 0: Ben unscored (a non-player) stands above a trusted Dee.
        let s = scores(&[("Dee", -1.0)]);
        assert_eq!(vote_order(&c, &s), names(&["Ada", "Cy", "Ben", "Dee"]));

        // The sums come from every scorer and phase, suspicion minus trust, self-scores ignored.
        let row = |v: &[(&str, &[f64])]| -> BTreeMap<String, Vec<f64>> {
            v.iter().map(|(p, x)| (p.to_string(), x.to_vec())).collect()
        };
        let outcome = MirageOutcome {
            suspicion: [
                (
                    "Ada".to_string(),
                    row(&[("Cy", &[1.0, 2.0]), ("Ada", &[5.0])]),
                ),
                (
                    "Ben".to_string(),
                    row(&[("Cy", &[1.0]), ("Ada", &[0.0, 1.0])]),
                ),
            ]
            .into(),
            trust: [
                ("Ada".to_string(), row(&[("Cy", &[0.0, 1.0])])),
                ("Ben".to_string(), row(&[("Ada", &[2.0, 2.0])])),
            ]
            .into(),
            ..MirageOutcome::default()
        };
        let smt = suspicion_minus_trust(&outcome);
        assert_eq!(smt, scores(&[("Ada", 1.0 - 4.0), ("Cy", 4.0 - 1.0)]));
        assert_eq!(vote_order(&c, &smt), names(&["Cy", "Ada", "Ben", "Dee"]));
    }

    /// A hand-made game where ranking by votes first (ties by suspicion − trust) and MIRAGE's one
    /// combined score disagree: Victory follows the combined score.
    #[test]
    fn victory_follows_the_combined_score_not_votes_first() {
        let players = ["Ada", "Ben", "Cy", "Dee"];
        let culprit = names(&["Ada"]);
        // Cy has 2 votes, Ada (the culprit) and Ben 1 each: by votes first, Ada is at best second.
        let v = votes(&[("Ada", "Cy"), ("Ben", "Cy"), ("Cy", "Ada"), ("Dee", "Ben")]);
        let c = tally(players, &v);
        // Over the game the others suspected Ada (Σ suspicion − trust = 2 on the 0..=1 scale, 4 on the
        // reference's 0-2 scale) and trusted Cy on balance (−0.5, so −1). With 4 voters a vote is worth
        // 4: Ada 4·1 + 4 = 8, Cy 4·2 − 1 = 7.
        let s = scores(&[("Ada", 2.0), ("Cy", -0.5)]);
        assert_eq!(standing_score(c["Ada"], 4, s["Ada"]), 8.0);
        assert_eq!(standing_score(c["Cy"], 4, s["Cy"]), 7.0);
        assert_eq!(vote_order(&c, &s), names(&["Ada", "Cy", "Ben", "Dee"]));
        assert_eq!(vote_rank(&c, &s, "Ada"), Some(1));
        // Votes first would have given Cy rank 1 and Ada rank 2 (Victory 1/2); the reference's sum
        // gives Ada rank 1 (Victory 1).
        assert!((reciprocal_rank(&c, &culprit, &s) - 1.0).abs() < 1e-12);
        // The judgements alone decide nothing when they cancel: no scores, Cy first, Ada second
        // (tied with Ben at one vote, first by name).
        assert!((reciprocal_rank(&c, &culprit, &BTreeMap::new()) - 0.5).abs() < 1e-12);
    }

    /// Three victims: Ada killed Vic, Ben killed Wes, nobody in the cast killed Xan (no ballot).
    #[test]
    fn one_vote_per_victim_scores_each_ballot_and_each_case() {
        let players = ["Ada", "Ben", "Cy", "Dee"];
        let vic = case_vote(
            "Vic",
            &names(&["Ada"]),
            players,
            votes(&[("Ada", "Cy"), ("Ben", "Ada"), ("Cy", "Ada"), ("Dee", "Ada")]),
        );
        assert!(vic.identified);
        assert_eq!(vic.eliminated, names(&["Ada"]));
        let wes = case_vote(
            "Wes",
            &names(&["Ben"]),
            players,
            votes(&[("Ada", "Cy"), ("Ben", "Dee"), ("Cy", "Ben"), ("Dee", "Cy")]),
        );
        assert!(!wes.identified, "Cy is eliminated, Ben escapes");
        let xan = case_vote("Xan", &[], players, BTreeMap::new());
        assert!(!xan.identified && xan.eliminated.is_empty());
        let o = cases_outcome(vec![vic.clone(), wes.clone(), xan.clone()]);
        // Voting counts every victim: 1 of 3.
        assert!((o.voting() - 1.0 / 3.0).abs() < 1e-12);
        // Ballots: 3 right of 4 for Vic, 1 of 4 for Wes; Xan had none.
        assert_eq!(o.ballot_accuracy(), Some(4.0 / 8.0));
        assert_eq!(o.eliminated, names(&["Ada", "Cy"]));
        assert_eq!(o.majority_winner, Winner::Murderer, "Ben got away");
        // Both solvable cases solved: the civilians win although Xan's case cannot be.
        let wes = case_vote(
            "Wes",
            &names(&["Ben"]),
            players,
            votes(&[("Ada", "Ben"), ("Ben", "Dee"), ("Cy", "Ben"), ("Dee", "Cy")]),
        );
        let o = cases_outcome(vec![vic, wes, xan.clone()]);
        assert_eq!(o.majority_winner, Winner::Civilians);
        assert!((o.voting() - 2.0 / 3.0).abs() < 1e-12);
        // Nothing solvable: nobody can win for the civilians.
        let o = cases_outcome(vec![xan]);
        assert_eq!(o.majority_winner, Winner::Murderer);
        assert_eq!(o.ballot_accuracy(), None);
        // A single vote keeps its old shape: no cases, Voting read off the winner.
        let one = majority_outcome(&tally(players, &BTreeMap::new()), &names(&["Ada"]));
        assert!(one.cases.is_empty() && one.voting.is_none());
        assert_eq!(one.voting(), 0.0);
        assert_eq!(one.ballot_accuracy(), None);
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
