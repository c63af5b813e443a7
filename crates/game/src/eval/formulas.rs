//! The per-game evaluation formulas of the three papers, as pure functions:
//!
//! - MIRAGE (Appendix B and the detail tables of Appendix C): [`tii_trust_share`] (Eq. 1) and
//!   [`tii_suspicion_share`] (the published direction), [`cic`], [`ici`], [`sci`], and
//!   Victory as [`mean_reciprocal_rank`] of [`crate::eval::scores::reciprocal_rank`];
//! - ThinkThrice (§6.5): [`informed_correct`];
//! - PLAYER\* / WellPlay (§3 "Evaluation Metrics", Appendix B.3): [`wellplay_overall`],
//!   [`wellplay_category`] and [`wellplay_voting`] (pooling over scripts).
//!
//! Scales: ratios (TII, CIC, reciprocal ranks, WellPlay scores) are fractions in [0, 1], like every
//! accuracy in `result.json`; the papers print them ×100. ICI and SCI are on MIRAGE's 0-100 scale,
//! because their inputs (judge scores out of 20) have no natural fraction form.
//!
//! Where our digest (`PROTOCOLS.md`) and a paper differ, or a paper is silent, the function's doc
//! says what sleuth does and why; `docs/metrics.md` collects the same decisions.

use std::collections::BTreeMap;

use super::stats::{mean, std_dev, weighted_runs_mean_std, RunSummary};

/// Maximum score a MIRAGE judge gives one ability (ICI) or role-playing (SCI): the ICI evaluation
/// prompt (MIRAGE Table 23) asks for "an integer of [0, 20]", and Appendix C lists RP, RA, CC, DO and
/// CT as "neutral LLMs score (0-20)".
pub const MIRAGE_JUDGE_MAX: f64 = 20.0;

/// Default pass mark on ThinkThrice's rationale score for [`informed_correct`]: 5 on the 1-5 scale.
///
/// The paper does not state a threshold (nor the scale: "1-5" is read off its examples). Its only
/// evidence is Table 5 and the discussion after it: the rationale scored 3 ("No MR") and the one
/// scored 4 ("MR") are both described as resting on "irrelevant or flawed premises, leading to only
/// tenuous conclusions", while the rationales scored 5 (MR+SR+SV(N=3), "plausible"; Full Script Access,
/// "solid") are the ones with correct reasoning. §6.5 counts an answer towards informed accuracy "only
/// if ... they provide the correct reasoning rationale", so a 4 — a tenuous rationale — must not pass.
/// Callers that want a lenient reading pass 4 explicitly.
pub const DEFAULT_RATIONALE_THRESHOLD: u8 = 5;

/// MIRAGE Trust Inclination Index of `character` as Eq. 1 prints it (Appendix B.1) — the **trust
/// share**:
///
/// TII_c′ = Σ_{c≠c′} P_T(c, c′) / (Σ_{c≠c′} P_S(c, c′) + Σ_{c≠c′} P_T(c, c′)),
///
/// from the scores *other* characters gave it; both maps are scorer → scored → score. A score a
/// character gave itself is ignored (c ≠ c′). The result is a fraction in [0, 1] (the paper prints
/// ×100): 1 = only trusted, 0 = only suspected. MIRAGE's published numbers are the other direction,
/// [`tii_suspicion_share`]; the two names keep the directions apart wherever a TII is stored or shown.
///
/// The paper collects P_S and P_T "after each Open Conversation Phase" (§2.4), on 0-2 scales (Tables
/// 21 and 27); since Eq. 1 is a ratio of sums, pass the scores summed over phases — the result is the
/// paper's. A scorer that gave only one of the two scores contributes that one. The digest's formula
/// agrees with the paper.
///
/// `None` when nobody else scored `character`, when every score is 0 (0/0), or when a score is
/// negative or not finite (the ratio is only meaningful for non-negative scores).
pub fn tii_trust_share(
    trust: &BTreeMap<String, BTreeMap<String, f64>>,
    suspicion: &BTreeMap<String, BTreeMap<String, f64>>,
    character: &str,
) -> Option<f64> {
    let (t, t_any) = received(trust, character)?;
    let (s, s_any) = received(suspicion, character)?;
    let denominator = s + t;
    if !(t_any || s_any) || denominator <= 0.0 {
        return None;
    }
    Some(t / denominator)
}

/// MIRAGE's TII as its reference code computes it and its tables publish it — the **suspicion share**,
/// Σ P_S / (Σ P_S + Σ P_T) of the scores the others gave `character` (the reference's
/// `query / (query + belief)`): 1 − [`tii_trust_share`] wherever that is defined, and `None` where it
/// is not. Higher means more suspected (Table 3 reads a rise as "increased suspicion").
pub fn tii_suspicion_share(
    trust: &BTreeMap<String, BTreeMap<String, f64>>,
    suspicion: &BTreeMap<String, BTreeMap<String, f64>>,
    character: &str,
) -> Option<f64> {
    // The same ratio with the roles swapped: the numerator is the suspicion received.
    tii_trust_share(suspicion, trust, character)
}

/// Sum of the scores `character` received from others, and whether there was any; `None` for a
/// negative or non-finite score.
fn received(
    scores: &BTreeMap<String, BTreeMap<String, f64>>,
    character: &str,
) -> Option<(f64, bool)> {
    let mut sum = 0.0;
    let mut any = false;
    for (scorer, given) in scores {
        if scorer == character {
            continue;
        }
        if let Some(&v) = given.get(character) {
            if !v.is_finite() || v < 0.0 {
                return None;
            }
            sum += v;
            any = true;
        }
    }
    Some((sum, any))
}

/// MIRAGE Clue Investigation Capability (Appendix B.2, Eq. 2): clues investigated / clues that can
/// be investigated, a fraction in [0, 1] (the paper prints ×100). Also used for key clues only, with
/// key-clue counts (MIRAGE Figure 2).
///
/// The paper's Eq. 2 reads CIC_c = Σ_{c∈C} CN_c / CA — the sum runs over the same index as the
/// subscript, so taken literally it is the share of all clues the whole table investigated, the same
/// for every character; the text calls it "a Character's effort" and the digest reads CN_c / CA per
/// character. This function computes the ratio; pass one character's count for the per-character
/// reading, or the sum over a model's characters for the paper's per-model Table 2 numbers (there each
/// model plays every character, so the two readings of the sum coincide).
///
/// `None` when no clue can be investigated (0/0) or `investigated > available` (a counting bug: in
/// MIRAGE an investigated clue is removed from the pool, so the same clue cannot count twice).
pub fn cic(investigated: usize, available: usize) -> Option<f64> {
    if available == 0 || investigated > available {
        return None;
    }
    Some(investigated as f64 / available as f64)
}

/// Mean reciprocal rank over games: MRR = (1/|G|) Σ_g 1/rank_g, MIRAGE's Victory (Table 2, printed
/// ×100). Takes the reciprocal ranks themselves (one per game, from
/// [`crate::eval::scores::reciprocal_rank`]: whole ranks in the reference's combined standing, equal
/// standings broken by name, never shared); a game where the culprit was not ranked at all
/// contributes 0, the usual MRR convention.
///
/// `None` for no games, or a value outside [0, 1] (not a reciprocal rank).
pub fn mean_reciprocal_rank(reciprocal_ranks: &[f64]) -> Option<f64> {
    if reciprocal_ranks.is_empty() || reciprocal_ranks.iter().any(|rr| !(0.0..=1.0).contains(rr)) {
        return None;
    }
    Some(reciprocal_ranks.iter().sum::<f64>() / reciprocal_ranks.len() as f64)
}

/// ThinkThrice informed accuracy, for one inferential question (§6.5): the answer counts only if the
/// chosen option is correct *and* the rationale is correct, i.e. the judge's score of the rationale
/// against the ground-truth rationale (1-5, Table 5 "GPT Eval Score") is at least `threshold`
/// (normally [`DEFAULT_RATIONALE_THRESHOLD`]). Informed accuracy is the share of questions for which
/// this holds; overall accuracy counts `choice_correct` alone.
pub fn informed_correct(choice_correct: bool, rationale_score: u8, threshold: u8) -> bool {
    choice_correct && rationale_score >= threshold
}

/// MIRAGE Interactivity Capability Index: the judge's four ability scores — Reasoning and Analysis,
/// Communication and Cooperation, Detail Observation, Creative Thinking — each 0-20, summed and
/// normalised to 0-100: ICI = (RA + CC + DO + CT) / 80 × 100.
///
/// The paper gives no formula (Appendix B covers only TII and CIC); the digest says "normalised to
/// 100". The detail tables confirm this exact form: on 237 of the 240 rows of Tables 12-19, the ICI
/// column equals (RA + CC + DO + CT)/80 × 100 (e.g. 14 + 13 + 13 + 16 = 56 → 70.00). In Table 12 the
/// ICI and SCI column headers are swapped; the values are as above.
///
/// Each score is clamped to [0, 20] (a judge that answers 25 is read as 20); NaN counts as 0, as a
/// judge reply without a score gives no points.
pub fn ici(scores: [f64; 4]) -> f64 {
    let sum: f64 = scores.iter().map(|&s| judge_score(s)).sum();
    sum / (4.0 * MIRAGE_JUDGE_MAX) * 100.0
}

/// MIRAGE Script Compliance Index on 0-100: the mean of (a) the judge's role-playing score against
/// the input script and (b) ROUGE-L F between the original script and one the judge reconstructs
/// from the character's behaviour (§2.4), both first put on 0-100:
///
/// SCI = (RP / 20 × 100 + F × 100) / 2,
///
/// with `role_play_score` = RP on the judge's 0-20 scale (Appendix C: "neutral LLMs score (0-20):
/// Role-Playing (RP)") and `rouge_l_f` = F in [0, 1] ([`crate::eval::rouge::rouge_l`]).
///
/// The paper says only "the average of two evaluations"; putting both on 0-100 before averaging is
/// our reading, and the detail tables support it: with it, every row's SCI implies a ROUGE-L F of
/// 0.06-0.19 (e.g. Table 13, RP 18 and SCI 53.39 → F = 2·53.39 − 90 = 16.78 on 0-100), a plausible
/// range for a reconstructed script, whereas averaging RP on 0-20 with F on 0-1 could not reach the
/// reported values near 50.
///
/// Inputs are clamped to their ranges; NaN counts as 0.
pub fn sci(role_play_score: f64, rouge_l_f: f64) -> f64 {
    let rp = judge_score(role_play_score) / MIRAGE_JUDGE_MAX * 100.0;
    let f = if rouge_l_f.is_nan() {
        0.0
    } else {
        rouge_l_f.clamp(0.0, 1.0)
    } * 100.0;
    (rp + f) / 2.0
}

/// A MIRAGE judge score clamped to [0, 20], NaN as 0.
fn judge_score(s: f64) -> f64 {
    if s.is_nan() {
        0.0
    } else {
        s.clamp(0.0, MIRAGE_JUDGE_MAX)
    }
}

/// PLAYER\* overall WellPlay score over scripts (Appendix B.3): the weighted mean and weighted
/// standard deviation of the scores (awarded points / possible points, §3), each script weighted by
/// its total possible points. Input: per script, its evaluation runs summarised (mean ± sample std
/// over the runs, as Table A3's per-script rows print them) and its possible points.
///
/// Weighting by possible points makes the mean equal total awarded / total possible over all scripts,
/// so a 184-point script counts more than a 40-point one; Table A3 confirms it (its PP Overall
/// .386 ± .057 comes out of the per-script rows with these weights, not with question counts:
/// .389). The spread is B.3's over the runs ([`weighted_runs_mean_std`]). `None` as there (no
/// scripts, no points, a negative or non-finite entry).
pub fn wellplay_overall(per_script: &[(RunSummary, f64)]) -> Option<(f64, f64)> {
    weighted_runs_mean_std(per_script)
}

/// PLAYER\* per-category WellPlay accuracy over scripts (Appendix B.3): the weighted mean and
/// weighted standard deviation of the accuracy on one question category (Objective, Reasoning or
/// Relations), each script weighted by its number of questions of that category. Input: per script,
/// its runs' accuracy summarised and its question count. A script without questions of the category
/// has weight 0 and does not count. `None` when no script has any.
pub fn wellplay_category(per_script: &[(RunSummary, usize)]) -> Option<(f64, f64)> {
    let weighted: Vec<(RunSummary, f64)> = per_script
        .iter()
        .map(|&(accuracy, questions)| (accuracy, questions as f64))
        .collect();
    weighted_runs_mean_std(&weighted)
}

/// PLAYER\* Voting over scripts (Table A3's Overall Voting row): the plain mean of the per-script win
/// rates and their sample standard deviation ([`std_dev`], n − 1). B.3 weights only the question
/// categories and the score; the published row is unweighted, and its spread is the n − 1 form
/// (".074 ± .117" over the twelve scripts of the PP column; ÷ n would give .112). `None` for no
/// scripts.
pub fn wellplay_voting(per_script: &[f64]) -> Option<(f64, f64)> {
    Some((mean(per_script)?, std_dev(per_script)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    fn scores(rows: &[(&str, &str, f64)]) -> BTreeMap<String, BTreeMap<String, f64>> {
        let mut m: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
        for &(scorer, scored, v) in rows {
            m.entry(scorer.into()).or_default().insert(scored.into(), v);
        }
        m
    }

    #[test]
    fn tii_hand_case() {
        // Ada is scored by Ben (trust 2, suspicion 0) and Cy (trust 1, suspicion 1); her own scores
        // (trust 2, suspicion 0 of herself) are ignored: ΣT = 3, ΣS = 1, TII = 3 / (1 + 3) = 0.75.
        let trust = scores(&[
            ("Ben", "Ada", 2.0),
            ("Cy", "Ada", 1.0),
            ("Ada", "Ada", 2.0),
            ("Ada", "Ben", 0.0),
        ]);
        let suspicion = scores(&[("Ben", "Ada", 0.0), ("Cy", "Ada", 1.0), ("Ada", "Ada", 0.0)]);
        assert!(close(
            tii_trust_share(&trust, &suspicion, "Ada").unwrap(),
            0.75
        ));
        // The published direction: ΣS / (ΣS + ΣT) = 1 / 4.
        assert!(close(
            tii_suspicion_share(&trust, &suspicion, "Ada").unwrap(),
            0.25
        ));
        assert_eq!(tii_suspicion_share(&trust, &suspicion, "Ben"), None);
        // Ben: trusted 0 by Ada, never suspected: ΣT = 0, ΣS = 0 → 0/0 → None.
        assert_eq!(tii_trust_share(&trust, &suspicion, "Ben"), None);
        // Nobody scored Dee.
        assert_eq!(tii_trust_share(&trust, &suspicion, "Dee"), None);
    }

    #[test]
    fn tii_counts_one_sided_scores_and_rejects_negative_ones() {
        // Only suspicion: ΣT = 0, ΣS = 2 → 0 / 2 = 0.
        let none = BTreeMap::new();
        let suspicion = scores(&[("Ben", "Ada", 2.0)]);
        assert_eq!(tii_trust_share(&none, &suspicion, "Ada"), Some(0.0));
        let trust = scores(&[("Ben", "Ada", -1.0)]);
        assert_eq!(tii_trust_share(&trust, &suspicion, "Ada"), None);
    }

    #[test]
    fn cic_is_a_ratio() {
        // 3 of 12 clues = 0.25; the 0/0 and over-count cases have no value.
        assert_eq!(cic(3, 12), Some(0.25));
        assert_eq!(cic(0, 12), Some(0.0));
        assert_eq!(cic(0, 0), None);
        assert_eq!(cic(13, 12), None);
    }

    #[test]
    fn reciprocal_rank_and_mrr() {
        // Three games with ranks 1, 2, 4: MRR = (1 + 1/2 + 1/4)/3 = 1.75/3 = 0.58333…
        assert!(close(
            mean_reciprocal_rank(&[1.0, 0.5, 0.25]).unwrap(),
            1.75 / 3.0
        ));
        assert_eq!(mean_reciprocal_rank(&[]), None);
        assert_eq!(mean_reciprocal_rank(&[1.0, 2.0]), None);
        assert_eq!(mean_reciprocal_rank(&[0.0, 1.0]), Some(0.5));
    }

    #[test]
    fn informed_accuracy_needs_both() {
        let t = DEFAULT_RATIONALE_THRESHOLD;
        assert_eq!(t, 5);
        assert!(informed_correct(true, 5, t));
        // Table 5's "MR" rationale (score 4, tenuous) does not pass by default, but does at 4.
        assert!(!informed_correct(true, 4, t));
        assert!(informed_correct(true, 4, 4));
        // A wrong choice never counts, whatever the rationale.
        assert!(!informed_correct(false, 5, t));
    }

    #[test]
    fn ici_normalises_four_scores_to_100() {
        // MIRAGE Table 12, GPT-3.5 as Ling Yun: RA 14, CC 13, DO 13, CT 16 → 56/80 × 100 = 70.
        assert!(close(ici([14.0, 13.0, 13.0, 16.0]), 70.0));
        assert!(close(ici([20.0; 4]), 100.0));
        // Clamped: 25 → 20, −3 → 0, NaN → 0: (20 + 0 + 0 + 20)/80 × 100 = 50.
        assert!(close(ici([25.0, -3.0, f64::NAN, 20.0]), 50.0));
    }

    #[test]
    fn sci_averages_role_play_and_rouge_on_0_100() {
        // RP 18/20 → 90, F 0.1678 → 16.78: (90 + 16.78)/2 = 53.39 (MIRAGE Table 13, GPT-3.5).
        assert!((sci(18.0, 0.1678) - 53.39).abs() < 1e-9);
        assert!(close(sci(20.0, 1.0), 100.0));
        assert!(close(sci(0.0, 0.0), 0.0));
        // Clamped: RP 30 → 20 → 100, F 1.5 → 1 → 100.
        assert!(close(sci(30.0, 1.5), 100.0));
        assert!(close(sci(10.0, f64::NAN), 25.0));
    }

    /// One run per script: the per-script value itself.
    fn one(x: f64) -> RunSummary {
        RunSummary {
            mean: x,
            std: 0.0,
            runs: 1,
        }
    }

    #[test]
    fn wellplay_overall_weights_by_possible_points() {
        // Script 1: 0.5 of 100 points; script 2: 0.8 of 50 points.
        // Mean = (100·0.5 + 50·0.8)/150 = 90/150 = 0.6 (= 90 awarded of 150 possible);
        // var = (100·0.01 + 50·0.04)/150 = 3/150 = 0.02.
        let (m, s) = wellplay_overall(&[(one(0.5), 100.0), (one(0.8), 50.0)]).unwrap();
        assert!(close(m, 0.6));
        assert!(close(s * s, 0.02));
        assert_eq!(wellplay_overall(&[]), None);
    }

    #[test]
    fn wellplay_category_weights_by_question_count() {
        // Objective accuracy 0.5 on a script with 2 objective questions, 0.8 with 1, and a script
        // with none (weight 0, ignored): mean 0.6, var 0.02 as in the stats hand case.
        let (m, s) = wellplay_category(&[(one(0.5), 2), (one(0.8), 1), (one(0.0), 0)]).unwrap();
        assert!(close(m, 0.6));
        assert!(close(s * s, 0.02));
        assert_eq!(wellplay_category(&[(one(0.3), 0)]), None);
    }

    #[test]
    fn wellplay_voting_is_unweighted_with_the_sample_std() {
        // 0, 0, 1: mean 1/3, s² = (1/9 + 1/9 + 4/9)/2 = 1/3.
        let (m, s) = wellplay_voting(&[0.0, 0.0, 1.0]).unwrap();
        assert!(close(m, 1.0 / 3.0));
        assert!(close(s * s, 1.0 / 3.0));
        assert_eq!(wellplay_voting(&[]), None);
    }
}
