//! What one game contributes to each metric, and a metric summarised over games.
//!
//! Every metric here is one number per game (or none, when the game did not measure it — a PP
//! reference has no vote, a WellPlay script no factual questions). Tables average these over the games
//! of an arm or a condition, so each game weighs the same and the bootstrap can resample games.

use sleuth_game::eval::stats::{self, Group, Interval};
use sleuth_game::game::{GameResult, Winner};

/// A per-game metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// 1 when the civilians won (ThinkThrice's rule, or WellPlay's elimination rule), else 0.
    CivilianWin,
    /// PLAYER*'s Voting (Table A3): victims whose culprit the vote eliminated / victims
    /// ([`sleuth_game::game::MajorityOutcome::voting`]). It differs from [`Metric::CivilianWin`] on scripts
    /// with several victims, where a game can find one murderer of three (1/3) or lose while finding
    /// two; with one victim the two agree.
    Voting,
    /// Votes received by murderers / votes cast (ThinkThrice §6).
    Detection,
    /// Factual QA accuracy on own-script questions, other civilians', the murderer's, and CQ ∪ MQ.
    Own,
    Cq,
    Mq,
    Others,
    /// WellPlay multiple-choice accuracy in one category.
    Objective,
    Reasoning,
    Relations,
    /// WellPlay score: awarded points / possible points.
    ChoiceScore,
    /// MIRAGE Victory: reciprocal rank of the culprit in the vote.
    Victory,
    /// MIRAGE CIC of one game: clues investigated by all characters / clues that could be
    /// investigated. Pooled over scripts as counts, not averaged ([`sleuth_game::eval::stats::Group`]).
    Cic,
}

impl Metric {
    /// Column heading.
    pub fn name(self) -> &'static str {
        match self {
            Metric::CivilianWin => "Civilian win rate",
            Metric::Voting => "Voting",
            Metric::Detection => "Murderer detection",
            Metric::Own => "Own",
            Metric::Cq => "CQ",
            Metric::Mq => "MQ",
            Metric::Others => "Others",
            Metric::Objective => "Objective",
            Metric::Reasoning => "Reasoning",
            Metric::Relations => "Relations",
            Metric::ChoiceScore => "Overall score",
            Metric::Victory => "Victory",
            Metric::Cic => "CIC",
        }
    }

    /// The game's value, if it measured this.
    pub fn of(self, r: &GameResult) -> Option<f64> {
        match self {
            Metric::CivilianWin => r
                .winner
                .map(|w| f64::from(u8::from(w == Winner::Civilians))),
            // A game under another protocol (no elimination outcome) held one vote on the culprits:
            // its Voting is whether the civilians won it.
            Metric::Voting => r
                .majority
                .as_ref()
                .map(|m| m.voting())
                .or_else(|| Metric::CivilianWin.of(r)),
            // Without a vote the recorded accuracy is a placeholder 0, not a measurement.
            Metric::Detection => (!r.votes.is_empty()).then_some(r.murderer_detection_accuracy),
            Metric::Own => r.factual.own,
            Metric::Cq => r.factual.cq,
            Metric::Mq => r.factual.mq,
            Metric::Others => r.factual.others,
            Metric::Objective => category(r, "objective").and_then(|t| t.accuracy()),
            Metric::Reasoning => category(r, "reasoning").and_then(|t| t.accuracy()),
            Metric::Relations => category(r, "relations").and_then(|t| t.accuracy()),
            Metric::ChoiceScore => r.choice.as_ref().and_then(|c| c.overall.score()),
            Metric::Victory => r.mirage.as_ref().map(|m| m.victory),
            Metric::Cic => r.mirage.as_ref().and_then(|m| m.cic()),
        }
    }
}

/// A WellPlay category's tally.
pub fn category<'a>(r: &'a GameResult, name: &str) -> Option<&'a sleuth_game::game::ChoiceTally> {
    r.choice.as_ref().and_then(|c| c.by_category.get(name))
}

/// Values of a metric over games, skipping games that did not measure it.
pub fn values<'a>(metric: Metric, games: impl IntoIterator<Item = &'a GameResult>) -> Vec<f64> {
    games.into_iter().filter_map(|r| metric.of(r)).collect()
}

/// How intervals are computed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bootstrap {
    pub resamples: usize,
    pub level: f64,
    pub seed: u64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Bootstrap {
            resamples: stats::DEFAULT_RESAMPLES,
            level: stats::DEFAULT_LEVEL,
            seed: 0,
        }
    }
}

impl Bootstrap {
    /// Mean of `xs` with its percentile-bootstrap interval; `None` for no values.
    pub fn mean(&self, xs: &[f64]) -> Option<Interval> {
        stats::bootstrap_mean(xs, self.resamples, self.level, self.seed)
    }

    /// Weighted mean over scripts of their mean over games, with its two-stage bootstrap interval
    /// ([`stats::bootstrap_over_groups`]); `None` when no script has a value.
    pub fn over_scripts(&self, groups: &[Group]) -> Option<Interval> {
        stats::bootstrap_over_groups(groups, self.resamples, self.level, self.seed)
    }
}

/// Mean and population standard deviation, √(Σ (xᵢ − x̄)² / n): PLAYER* Tables A3 and A4 print every
/// spread in this one form, B.3's (`tables::choice` says why); 0 for one value, `None` for none or
/// for a value that is not finite.
pub fn mean_std_population(xs: &[f64]) -> Option<(f64, f64)> {
    let weighted: Vec<(f64, f64)> = xs.iter().map(|&x| (x, 1.0)).collect();
    stats::weighted_mean_std(&weighted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_population_spread_divides_by_n() {
        // {0, 0, 1}: mean 1/3, variance (1/9 + 1/9 + 4/9) / 3 = 2/9 → .471 (÷ 2 would give .577).
        let (m, s) = mean_std_population(&[0.0, 0.0, 1.0]).unwrap();
        assert!((m - 1.0 / 3.0).abs() < 1e-12 && (s - (2.0f64 / 9.0).sqrt()).abs() < 1e-12);
        assert_eq!(mean_std_population(&[0.4]), Some((0.4, 0.0)));
        assert_eq!(mean_std_population(&[]), None);
    }

    #[test]
    fn a_game_without_votes_measures_no_detection() {
        let mut r = super::super::tests::result("S", "pp", 1);
        r.votes.clear();
        r.winner = None;
        assert_eq!(Metric::Detection.of(&r), None);
        assert_eq!(Metric::CivilianWin.of(&r), None);
    }
}
