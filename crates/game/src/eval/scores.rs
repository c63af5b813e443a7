//! What the evaluator computes: vote-based scores (rank, reciprocal rank, detection accuracy), factual
//! QA accuracy, WellPlay multiple-choice tallies and MIRAGE's metrics, plus the MIRAGE outcome they are
//! computed from.
//!
//! These types live in `eval`, not in `game`, because the evaluator builds them and `eval` sits below
//! `game`: the game's result (`game::GameResult`) holds them, and `game` re-exports them so their old
//! paths keep working.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The scale of MIRAGE's reference trust and suspicion scores (0, 1 or 2 per judgement), onto which
/// [`standing_score`] puts sleuth's recorded scores (0..=1, `docs/metrics.md`) so that a vote weighs
/// against them as it does in the reference.
pub const REFERENCE_SCORE_MAX: f64 = 2.0;

/// A suspect's score in the final standing, as MIRAGE's reference code keeps it (`ScriptEnvs/BaseEnv.py`:
/// every suspicion judgement adds its value to the suspect's score during the game, every trust
/// judgement subtracts its value, and each vote adds N, the number of characters; the ranking sorts
/// that one sum). `votes` is the suspect's tally, `voters` the ballots cast — N, since every MIRAGE
/// character votes exactly once — and `suspicion_minus_trust` the suspect's summed scores in
/// `result.json`'s units (0..=1 per judgement, [`suspicion_minus_trust`]), put on the reference's 0-2
/// scale here.
///
/// One vote is therefore worth N/2 of the most suspicious judgements: a suspect the table distrusted
/// all game can stand above one with a vote more, which ranking by votes first never allowed.
pub fn standing_score(votes: u32, voters: u32, suspicion_minus_trust: f64) -> f64 {
    f64::from(voters) * f64::from(votes) + REFERENCE_SCORE_MAX * suspicion_minus_trust
}

/// The suspects in the order of the final standing, first the highest [`standing_score`]: votes × N
/// plus the summed suspicion − trust `scores` (a suspect missing from them counts 0), N the ballots
/// in `counts`. Equal scores go by name (byte order, ascending), so every suspect gets a whole rank,
/// as every Victory value MIRAGE publishes is the reciprocal of one. The reference breaks equal
/// scores by the order of its characters (a stable sort); sleuth uses the name because `vote_counts`
/// in `result.json` is keyed by name, so the standing can be recomputed from the result alone.
pub fn vote_order(counts: &BTreeMap<String, u32>, scores: &BTreeMap<String, f64>) -> Vec<String> {
    let voters: u32 = counts.values().sum();
    let mut order: Vec<(&String, f64)> = counts
        .iter()
        .map(|(p, &n)| {
            let s = scores.get(p).copied().unwrap_or(0.0);
            (p, standing_score(n, voters, s))
        })
        .collect();
    // BTreeMap iteration is already in name order and the sort is stable, so equal scores keep it.
    order.sort_by(|a, b| b.1.total_cmp(&a.1));
    order.into_iter().map(|(p, _)| p.clone()).collect()
}

/// A suspect's whole rank in the standing of [`vote_order`], 1 for the first; `None` for a name not in
/// the tally.
pub fn vote_rank(
    counts: &BTreeMap<String, u32>,
    scores: &BTreeMap<String, f64>,
    suspect: &str,
) -> Option<usize> {
    vote_order(counts, scores)
        .iter()
        .position(|p| p == suspect)
        .map(|i| i + 1)
}

/// MIRAGE Victory for one game: the reciprocal rank of the best-ranked culprit in the standing of
/// [`vote_order`] (with one culprit, simply 1 / its rank). Averaged over games it is the MRR the paper
/// reports. `counts` is the tally of every suspect (players or not), so an outside culprit is ranked
/// among the same candidates the players voted on; `scores` is normally [`suspicion_minus_trust`].
pub fn reciprocal_rank(
    counts: &BTreeMap<String, u32>,
    culprits: &[String],
    scores: &BTreeMap<String, f64>,
) -> f64 {
    // Only innocent suspects above the first culprit count against it: another culprit ahead is not a
    // miss (the usual reciprocal rank of the first relevant item).
    // The first culprit in the standing has only innocents ahead of it, so its index is their number.
    vote_order(counts, scores)
        .iter()
        .position(|p| culprits.contains(p))
        .map_or(0.0, |innocents_above| 1.0 / (innocents_above + 1) as f64)
}

/// Scored → Σ (suspicion − trust) over every scorer and every scoring phase of a MIRAGE game: what the
/// judgements add to a suspect's standing in [`vote_order`] (MIRAGE's reference code). A character's
/// scores of itself are ignored, as in TII. Players score players only, so a non-player suspect has no
/// entry and counts 0: neither suspected nor trusted, its standing is its votes alone.
pub fn suspicion_minus_trust(outcome: &MirageOutcome) -> BTreeMap<String, f64> {
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    for (scores, sign) in [(&outcome.suspicion, 1.0), (&outcome.trust, -1.0)] {
        for (scorer, row) in scores {
            for (scored, phases) in row.iter().filter(|(s, _)| *s != scorer) {
                *out.entry(scored.clone()).or_insert(0.0) += sign * phases.iter().sum::<f64>();
            }
        }
    }
    out
}

/// What the MIRAGE simulation produced besides the vote (PROTOCOLS.md §4).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MirageOutcome {
    /// Accuser → the suspect they accused.
    pub accusations: BTreeMap<String, String>,
    /// Reciprocal rank of the culprit in the final standing: votes × N plus the summed suspicion −
    /// trust, as MIRAGE's reference ranks ([`vote_order`]), equal standings by name (Victory; MRR over
    /// games).
    pub victory: f64,
    /// Clue ids each character investigated, in order.
    pub investigated: BTreeMap<String, Vec<String>>,
    /// Clues that could be investigated, and the key ones among them.
    pub clues_available: usize,
    pub key_clues_available: usize,
    /// Scorer → scored → trust scores given after each open-conversation phase, in order, in 0..=1
    /// (the MIRAGE agent scores 0-10 and divides by 10; `docs/metrics.md`).
    pub trust: BTreeMap<String, BTreeMap<String, Vec<f64>>>,
    /// Scorer → scored → suspicion scores, likewise.
    pub suspicion: BTreeMap<String, BTreeMap<String, Vec<f64>>>,
    /// Whether culprits were made to expose themselves (MIRAGE Table 3).
    pub forced_exposure: bool,
}

impl MirageOutcome {
    /// Clues investigated by all characters together.
    pub fn investigations(&self) -> usize {
        self.investigated.values().map(Vec::len).sum()
    }

    /// MIRAGE's CIC of this game (Appendix B.2 Eq. 2 as its tables compute it): clues investigated by
    /// all characters / clues that could be investigated. Over several scripts the paper pools the
    /// counts (Σ investigated / Σ available, `docs/metrics.md`), never averaging per-character or
    /// per-game shares. `None` as for [`super::formulas::cic`].
    pub fn cic(&self) -> Option<f64> {
        super::formulas::cic(self.investigations(), self.clues_available)
    }

    /// Trust scores summed over phases: scorer → scored → sum (Eq. 1 is a ratio of sums).
    pub fn trust_sums(&self) -> BTreeMap<String, BTreeMap<String, f64>> {
        summed(&self.trust)
    }

    /// Suspicion scores summed over phases, likewise.
    pub fn suspicion_sums(&self) -> BTreeMap<String, BTreeMap<String, f64>> {
        summed(&self.suspicion)
    }

    /// TII as MIRAGE published it ([`super::formulas::tii_suspicion_share`]): per character, the
    /// suspicion the others gave it / (suspicion + trust), averaged over the characters anybody scored
    /// — the reference code's `fii` and the reading of the paper's tables (a higher value is *more*
    /// suspected; Table 3 calls the one rise under forced exposure "increased suspicion"). Eq. 1 as
    /// printed is the trust share, 1 − this per character ([`MirageCharacterScores::tii_trust_share`]).
    /// Computed from the raw scores, so results of any age give it. `None` when nobody was scored.
    pub fn tii_suspicion_share(&self) -> Option<f64> {
        let (trust, suspicion) = (self.trust_sums(), self.suspicion_sums());
        let scored: std::collections::BTreeSet<&String> = trust
            .values()
            .chain(suspicion.values())
            .flat_map(BTreeMap::keys)
            .collect();
        let shares: Vec<f64> = scored
            .into_iter()
            .filter_map(|c| super::formulas::tii_suspicion_share(&trust, &suspicion, c))
            .collect();
        super::stats::mean(&shares)
    }
}

fn summed(
    m: &BTreeMap<String, BTreeMap<String, Vec<f64>>>,
) -> BTreeMap<String, BTreeMap<String, f64>> {
    m.iter()
        .map(|(scorer, row)| {
            let sums = row
                .iter()
                .map(|(scored, xs)| (scored.clone(), xs.iter().sum::<f64>()))
                .collect();
            (scorer.clone(), sums)
        })
        .collect()
}

/// MIRAGE metrics of one character (MIRAGE Appendix B); ratios in 0..=1, ICI and SCI on 0..=100.
///
/// There is no per-character CIC: MIRAGE's CIC is the clues the whole table investigated over the
/// clues available ([`MirageScores::cic`]); what each character investigated is in
/// [`MirageOutcome::investigated`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MirageCharacterScores {
    /// Trust Inclination Index as Eq. 1 prints it: trust others gave this character / (trust +
    /// suspicion) — the *trust* share. Written as `tii` by results before the two directions had
    /// names of their own, and read from there.
    #[serde(alias = "tii")]
    pub tii_trust_share: Option<f64>,
    /// The TII MIRAGE published (its reference code and tables): suspicion / (suspicion + trust), 1 −
    /// the trust share ([`super::formulas::tii_suspicion_share`], `docs/metrics.md`). Absent from
    /// results written before it was stored.
    #[serde(default)]
    pub tii_suspicion_share: Option<f64>,
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

/// MIRAGE metrics of a game: per character, and for the game.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MirageScores {
    pub characters: BTreeMap<String, MirageCharacterScores>,
    /// Mean over characters of their trust share (Eq. 1); `tii` in results written before the two
    /// directions had names of their own.
    #[serde(alias = "tii")]
    pub tii_trust_share: Option<f64>,
    /// Mean over characters of their suspicion share: the direction of MIRAGE's published TII, the
    /// one the report prints. Absent from older results (the report computes it from `mirage`).
    #[serde(default)]
    pub tii_suspicion_share: Option<f64>,
    /// Clue Investigation Capability as MIRAGE published it: clues investigated by all characters /
    /// clues that could be investigated ([`MirageOutcome::cic`]). Results written before this
    /// definition hold the mean of per-character shares here (the game's value ÷ the number of
    /// characters); the report recomputes CIC from `mirage` instead of reading it.
    pub cic: Option<f64>,
    /// The same over key clues only.
    pub cic_key: Option<f64>,
    /// Means over characters.
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
    /// The calls that answered these questions, every repeat (answers and their refinement and
    /// verification steps): what lets a report split a game's evaluation cost into one evaluation
    /// process (PLAYER* Table A5) when the game also answered questions asked once. Zero in results
    /// recorded before it was kept.
    #[serde(default)]
    pub usage: sleuth_llm::Usage,
}

impl ChoiceScores {
    /// Mean and sample standard deviation of the overall score over repeats.
    pub fn score_mean_std(&self) -> Option<(f64, f64)> {
        Some((
            super::stats::mean(&self.repeat_scores)?,
            super::stats::std_dev(&self.repeat_scores)?,
        ))
    }

    /// Mean and sample standard deviation of one category's accuracy over repeats.
    pub fn accuracy_mean_std(&self, category: &str) -> Option<(f64, f64)> {
        let xs = self.repeat_accuracy.get(category)?;
        Some((super::stats::mean(xs)?, super::stats::std_dev(xs)?))
    }
}

/// A multiple-choice answer under the default rule ([`sleuth_script::ChoiceRule::Exact`]): right only
/// when it names exactly the true letters (a partial answer is wrong). Questions with another rule
/// (WellPlay's) are judged by [`super::choice::answer_correct`].
pub fn choice_correct(chosen: &[String], truth: &[String]) -> bool {
    super::choice::answer_correct(sleuth_script::ChoiceRule::Exact, chosen, truth)
}

/// Votes received by culprits / votes cast (ThinkThrice §6). `culprits` are the script's culprits, murderer
/// players and non-player suspects alike: the metric asks whether the vote found who did it.
pub fn detection_accuracy(votes: &BTreeMap<String, String>, culprits: &[String]) -> f64 {
    if votes.is_empty() {
        return 0.0;
    }
    votes.values().filter(|t| culprits.contains(t)).count() as f64 / votes.len() as f64
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
