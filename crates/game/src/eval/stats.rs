//! Statistics over games and repeats: means, standard deviations, PLAYER\*'s weighted mean and
//! standard deviation (over scripts, and over evaluation runs), means over scripts as MIRAGE pools
//! its detail tables, and percentile-bootstrap confidence intervals (one arm, a mean over scripts, or
//! two arms paired by game).
//!
//! Everything here is a pure function of its inputs (and of a seed, for the bootstrap), so a report
//! computed twice from the same results is byte-for-byte the same. Sums run in index order: float
//! addition is not associative, and a different order would change the last digits.
//!
//! The formulas, and the choices sleuth made where the papers are silent, are also written down in
//! `docs/metrics.md` ("Evaluation metrics").

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Bootstrap resamples used unless a caller asks otherwise. 10,000 keeps the Monte-Carlo error of a
/// 95% percentile bound well below the precision results are printed with (three decimals), and costs
/// about n·10⁴ random draws — milliseconds for the few hundred games of a sweep arm.
pub const DEFAULT_RESAMPLES: usize = 10_000;

/// Confidence level of intervals unless a caller asks otherwise.
pub const DEFAULT_LEVEL: f64 = 0.95;

/// Why an interval could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// There is nothing to average.
    #[error("no observations")]
    Empty,
    /// Paired arms must cover the same games, index by index.
    #[error("paired arms differ in length: {a} games in the first arm, {b} in the second")]
    LengthMismatch { a: usize, b: usize },
    /// A NaN or infinite observation (index into the input, or into the differences when paired).
    #[error("observation {index} is not a finite number")]
    NonFinite { index: usize },
    /// The confidence level must lie strictly between 0 and 1.
    #[error("confidence level {0} is not strictly between 0 and 1")]
    InvalidLevel(f64),
    /// A bootstrap needs at least one resample.
    #[error("the bootstrap needs at least one resample")]
    NoResamples,
}

/// A point estimate with a confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The statistic on the observed data (here always a mean).
    pub estimate: f64,
    /// Lower bound of the interval.
    pub low: f64,
    /// Upper bound of the interval.
    pub high: f64,
    /// Number of observations (games, or pairs of games) the interval is computed from.
    pub n: usize,
    /// Confidence level, e.g. 0.95.
    pub level: f64,
}

/// Arithmetic mean; `None` for an empty slice.
pub fn mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    Some(xs.iter().sum::<f64>() / xs.len() as f64)
}

/// Sample standard deviation, s = √(Σ (xᵢ − x̄)² / (n − 1)); `Some(0.0)` for one value, `None` for none.
///
/// This is the spread sleuth reports as "mean ± std over repeats" (e.g. PLAYER\* evaluates each game
/// three times and reports mean ± std; ThinkThrice averages over games). The papers do not say which
/// estimator they use. We take the n − 1 (Bessel-corrected) form because the repeats are a *sample* of
/// what the model would do, and with three repeats the population form (÷ n) understates the spread by
/// a factor √(2/3) ≈ 0.82. PLAYER\*'s per-script table (Table A3) agrees for the question-category
/// rows: e.g. Objective ".233 ± .058" over three runs is {0.2, 0.2, 0.3}, whose n − 1 std is 0.0577
/// (the ÷ n std would be 0.047); its Voting rows (".333 ± .471" = {0, 0, 1} ÷ n) use the other form,
/// so the paper is not consistent and we follow its majority. Note that [`weighted_mean_std`] deliberately uses the ÷ Σw form,
/// because PLAYER\* Appendix B.3 defines it that way; across scripts, Table A3's Voting rows are the
/// n − 1 form again (".074 ± .117" over its twelve scripts).
pub fn std_dev(xs: &[f64]) -> Option<f64> {
    let m = mean(xs)?;
    if xs.len() == 1 {
        return Some(0.0);
    }
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    Some((ss / (xs.len() - 1) as f64).sqrt())
}

/// PLAYER\* weighted mean and weighted standard deviation (Appendix B.3) of (value, weight) pairs:
///
/// x̄_w = Σ wᵢ xᵢ / Σ wᵢ,   s_w² = Σ wᵢ (xᵢ − x̄_w)² / Σ wᵢ,   s_w = √s_w².
///
/// The variance divides by Σw, exactly as the paper writes it (a "population" weighted variance, no
/// small-sample correction) so that sleuth's WellPlay numbers are comparable with the paper's.
/// Zero weights are allowed and contribute nothing. `None` when the slice is empty, Σw = 0, any
/// weight is negative, or any value or weight is not finite — in each case the formula has no
/// meaning, and a silent 0 would look like a real score.
pub fn weighted_mean_std(xs: &[(f64, f64)]) -> Option<(f64, f64)> {
    if xs
        .iter()
        .any(|&(x, w)| !x.is_finite() || !w.is_finite() || w < 0.0)
    {
        return None;
    }
    let total: f64 = xs.iter().map(|&(_, w)| w).sum();
    if total <= 0.0 {
        return None;
    }
    let m = xs.iter().map(|&(x, w)| w * x).sum::<f64>() / total;
    // Two passes (mean first, then squared deviations) rather than Σwx² − x̄²: no cancellation, and
    // the variance can never come out negative.
    let var = xs.iter().map(|&(x, w)| w * (x - m) * (x - m)).sum::<f64>() / total;
    Some((m, var.sqrt()))
}

/// One evaluation run set of a script, summarised: the mean and sample standard deviation
/// ([`std_dev`], n − 1) of its runs, and how many runs there were. This is what a per-script row of
/// PLAYER\* Table A3 prints ("mean ± std" over the three evaluation runs), so the weighted rows can
/// be computed from the per-script rows alone ([`weighted_runs_mean_std`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunSummary {
    pub mean: f64,
    /// Sample standard deviation of the runs (0 for one run).
    pub std: f64,
    pub runs: usize,
}

impl RunSummary {
    /// The summary of some runs; `None` for none.
    pub fn of(xs: &[f64]) -> Option<RunSummary> {
        Some(RunSummary {
            mean: mean(xs)?,
            std: std_dev(xs)?,
            runs: xs.len(),
        })
    }
}

/// PLAYER\* Appendix B.3 over evaluation runs: the weighted mean and weighted standard deviation of
/// every run of every script, each script carrying its weight wᵢ (question count of the category, or
/// possible points for Overall) shared equally among its kᵢ runs:
///
/// x̄_w = Σᵢ wᵢ x̄ᵢ / Σᵢ wᵢ,   s_w² = Σᵢ wᵢ [(x̄ᵢ − x̄_w)² + sᵢ² (kᵢ − 1)/kᵢ] / Σᵢ wᵢ,
///
/// with x̄ᵢ and sᵢ the script's mean and sample std over its runs ((kᵢ − 1)/kᵢ turns sᵢ² back into the
/// runs' ÷ kᵢ spread). This is B.3's formula, [`weighted_mean_std`], applied to the runs rather than
/// to the per-script means — see `docs/metrics.md`: it is the reading that reproduces the paper's
/// printed weighted std (Table A3, Overall rows of PP and OP: .057 and .072), which the per-script
/// means alone (.053, .067) do not.
///
/// Why shared weights: B.3 weights a *script* by its question count; a script played in more games
/// (more runs) is measured more precisely, not more important. The mean is therefore the weighted
/// mean of the per-script means whatever the number of runs. With one run per script it is exactly
/// [`weighted_mean_std`] of the per-script values.
///
/// `None` as for [`weighted_mean_std`]: no scripts, Σw = 0, a negative weight, a script without runs,
/// or a non-finite entry.
pub fn weighted_runs_mean_std(scripts: &[(RunSummary, f64)]) -> Option<(f64, f64)> {
    if scripts.iter().any(|&(s, w)| {
        !s.mean.is_finite() || !s.std.is_finite() || s.runs == 0 || !w.is_finite() || w < 0.0
    }) {
        return None;
    }
    let total: f64 = scripts.iter().map(|&(_, w)| w).sum();
    if total <= 0.0 {
        return None;
    }
    let m = scripts.iter().map(|&(s, w)| w * s.mean).sum::<f64>() / total;
    let var = scripts
        .iter()
        .map(|&(s, w)| {
            let k = s.runs as f64;
            w * ((s.mean - m) * (s.mean - m) + s.std * s.std * (k - 1.0) / k)
        })
        .sum::<f64>()
        / total;
    Some((m, var.sqrt()))
}

/// One script's games for a mean over scripts: a value per game and the script's weight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Group<'a> {
    pub values: &'a [f64],
    pub weight: f64,
}

impl<'a> Group<'a> {
    /// A group of weight 1 (a plain mean over scripts).
    pub fn unweighted(values: &'a [f64]) -> Group<'a> {
        Group {
            values,
            weight: 1.0,
        }
    }
}

/// The mean over scripts of each script's mean over its games, weighted: Σₛ wₛ x̄ₛ / Σₛ wₛ.
///
/// This is how MIRAGE pools its detail tables into the overall row (Table 11 → Table 2: every
/// column is the mean of the eight per-script values, CIC the clues investigated over the clues of
/// all scripts), so a script played in three games weighs as much as one played once — unlike a mean
/// over games, which would let the most-played script dominate. Weights are 1 for a plain mean over
/// scripts; CIC passes each script's clue count, which makes the result Σₛ CNₛ / Σₛ CAₛ
/// (`docs/metrics.md`).
///
/// Scripts without values (none of their games measured it) and scripts of weight 0 do not count.
/// `None` when no script counts, or for a negative or non-finite weight or value.
pub fn mean_over_groups(groups: &[Group]) -> Option<f64> {
    let groups = counting(groups)?;
    let total: f64 = groups.iter().map(|g| g.weight).sum();
    let sum: f64 = groups
        .iter()
        .map(|g| g.weight * g.values.iter().sum::<f64>() / g.values.len() as f64)
        .sum();
    Some(sum / total)
}

/// [`mean_over_groups`] with a percentile-bootstrap interval: a two-stage (cluster) bootstrap that
/// draws as many scripts as there are, with replacement, then each drawn script's games with
/// replacement, and takes the weighted mean of the drawn scripts' means; bounds as in
/// [`bootstrap_mean`].
///
/// Why two stages: the estimate is a mean over scripts, so its uncertainty comes both from which
/// scripts were played and from how their games fell. Resampling games alone would make a report of
/// eight scripts played once each look exact; resampling scripts alone would ignore repeats. With one
/// script it is the plain bootstrap over that script's games; with one game per script and equal
/// weights, the plain bootstrap over scripts. `n` is the number of games. `None` as for
/// [`mean_over_groups`], or for `resamples` 0 or a `level` not strictly between 0 and 1.
pub fn bootstrap_over_groups(
    groups: &[Group],
    resamples: usize,
    level: f64,
    seed: u64,
) -> Option<Interval> {
    let estimate = mean_over_groups(groups)?;
    if resamples == 0 || !(level > 0.0 && level < 1.0) {
        return None;
    }
    let groups = counting(groups)?;
    let n: usize = groups.iter().map(|g| g.values.len()).sum();
    if n == 1 {
        return Some(Interval {
            estimate,
            low: estimate,
            high: estimate,
            n,
            level,
        });
    }
    let s = groups.len();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| {
            let (mut sum, mut total) = (0.0, 0.0);
            for _ in 0..s {
                let g = &groups[rng.gen_range(0..s)];
                let k = g.values.len();
                let drawn: f64 = (0..k).map(|_| g.values[rng.gen_range(0..k)]).sum();
                sum += g.weight * drawn / k as f64;
                total += g.weight;
            }
            sum / total
        })
        .collect();
    means.sort_by(f64::total_cmp);
    let alpha = 1.0 - level;
    Some(Interval {
        estimate,
        low: quantile_sorted(&means, alpha / 2.0),
        high: quantile_sorted(&means, 1.0 - alpha / 2.0),
        n,
        level,
    })
}

/// The groups that count towards a mean over groups (with values and a positive weight); `None` if
/// any entry is meaningless or none counts.
fn counting<'a>(groups: &[Group<'a>]) -> Option<Vec<Group<'a>>> {
    if groups
        .iter()
        .any(|g| !g.weight.is_finite() || g.weight < 0.0 || g.values.iter().any(|x| !x.is_finite()))
    {
        return None;
    }
    let kept: Vec<Group> = groups
        .iter()
        .filter(|g| !g.values.is_empty() && g.weight > 0.0)
        .copied()
        .collect();
    (!kept.is_empty()).then_some(kept)
}

/// Percentile-bootstrap confidence interval of the mean of `xs` (one observation per game).
///
/// Method (Efron's percentile bootstrap): draw `resamples` samples of size n with replacement from
/// `xs`, take each sample's mean, and report the (1 − level)/2 and (1 + level)/2 quantiles of those
/// means. Quantiles interpolate linearly between order statistics (Hyndman & Fan type 7, the default
/// of R and NumPy). The estimate is the plain mean of `xs`.
///
/// Why this method: game outcomes are bounded and often skewed (a win rate near 0 or 1), where a
/// normal-approximation interval can leave [0, 1]; percentile bounds are always values the mean can
/// take. It assumes games are independent — true for different seeds and scripts.
///
/// Deterministic for a `seed`: the resampling stream is ChaCha8 seeded with `seed`. One value gives
/// the degenerate interval [x, x]. `None` when `xs` is empty or holds a non-finite value, when
/// `resamples` is 0, or when `level` is not strictly between 0 and 1 ([`bootstrap_mean_checked`]
/// says which).
pub fn bootstrap_mean(xs: &[f64], resamples: usize, level: f64, seed: u64) -> Option<Interval> {
    bootstrap_mean_checked(xs, resamples, level, seed).ok()
}

/// [`bootstrap_mean`], saying why no interval could be computed.
pub fn bootstrap_mean_checked(
    xs: &[f64],
    resamples: usize,
    level: f64,
    seed: u64,
) -> Result<Interval, StatsError> {
    if xs.is_empty() {
        return Err(StatsError::Empty);
    }
    if let Some(index) = xs.iter().position(|x| !x.is_finite()) {
        return Err(StatsError::NonFinite { index });
    }
    if !(level > 0.0 && level < 1.0) {
        return Err(StatsError::InvalidLevel(level));
    }
    if resamples == 0 {
        return Err(StatsError::NoResamples);
    }
    let n = xs.len();
    let estimate = xs.iter().sum::<f64>() / n as f64;
    if n == 1 {
        // Every resample is the one value: skip the draws.
        return Ok(Interval {
            estimate,
            low: estimate,
            high: estimate,
            n,
            level,
        });
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| {
            let sum: f64 = (0..n).map(|_| xs[rng.gen_range(0..n)]).sum();
            sum / n as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    let alpha = 1.0 - level;
    Ok(Interval {
        estimate,
        low: quantile_sorted(&means, alpha / 2.0),
        high: quantile_sorted(&means, 1.0 - alpha / 2.0),
        n,
        level,
    })
}

/// Difference between two arms played on the same scripts and seeds, paired by index:
/// the mean of dᵢ = aᵢ − bᵢ with a percentile-bootstrap interval over the pairs (see
/// [`bootstrap_mean`] for the method).
///
/// Why paired: games on the same script and seed share most of their variance (the script's
/// difficulty, the same simulated draws), so resampling whole pairs cancels it and gives a much
/// narrower — and still honest — interval than comparing two independent intervals. An interval
/// that excludes 0 says arm `a` differs from arm `b` at that level.
pub fn paired_difference(
    a: &[f64],
    b: &[f64],
    resamples: usize,
    level: f64,
    seed: u64,
) -> Result<Interval, StatsError> {
    if a.len() != b.len() {
        return Err(StatsError::LengthMismatch {
            a: a.len(),
            b: b.len(),
        });
    }
    let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    bootstrap_mean_checked(&diffs, resamples, level, seed)
}

/// Quantile `p` ∈ [0, 1] of an ascending, non-empty slice, linear between order statistics
/// (Hyndman & Fan type 7): h = (n − 1)p, q = x₍⌊h⌋₎ + (h − ⌊h⌋)(x₍⌊h⌋+1₎ − x₍⌊h⌋₎).
pub(crate) fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    let last = sorted.len() - 1;
    let h = last as f64 * p.clamp(0.0, 1.0);
    let lo = (h.floor() as usize).min(last);
    let hi = (lo + 1).min(last);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn mean_of_nothing_is_none() {
        assert_eq!(mean(&[]), None);
        // (1 + 2 + 6) / 3 = 3
        assert_eq!(mean(&[1.0, 2.0, 6.0]), Some(3.0));
    }

    #[test]
    fn std_dev_is_the_sample_form() {
        assert_eq!(std_dev(&[]), None);
        assert_eq!(std_dev(&[0.7]), Some(0.0));
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, Σ(x − 5)² = 9+1+1+1+0+0+4+16 = 32, s² = 32/7.
        let s = std_dev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert!(close(s, (32.0f64 / 7.0).sqrt()));
        // PLAYER* Table A3 "Objective .233 ± .058": {0.2, 0.2, 0.3}, mean 0.7/3,
        // Σ(x − x̄)² = 2·(1/30)² + (2/30)² = 6/900, s² = 3/900, s = 0.0577.
        let s = std_dev(&[0.2, 0.2, 0.3]).unwrap();
        assert!((s - 0.0577).abs() < 5e-5, "{s}");
    }

    #[test]
    fn weighted_mean_std_hand_case() {
        // values 0.5, 0.8 with weights 2, 1: x̄ = (2·0.5 + 1·0.8)/3 = 1.8/3 = 0.6;
        // s² = (2·(0.5 − 0.6)² + 1·(0.8 − 0.6)²)/3 = (2·0.01 + 0.04)/3 = 0.02.
        let (m, s) = weighted_mean_std(&[(0.5, 2.0), (0.8, 1.0)]).unwrap();
        assert!(close(m, 0.6));
        assert!(close(s * s, 0.02));
    }

    #[test]
    fn weighted_with_equal_weights_is_the_population_std() {
        // 1, 2, 3 each weight 5: x̄ = 2, s² = (1 + 0 + 1)/3 = 2/3 (÷ n, not ÷ (n − 1)).
        let (m, s) = weighted_mean_std(&[(1.0, 5.0), (2.0, 5.0), (3.0, 5.0)]).unwrap();
        assert!(close(m, 2.0));
        assert!(close(s * s, 2.0 / 3.0));
    }

    #[test]
    fn weighted_rejects_meaningless_weights() {
        assert_eq!(weighted_mean_std(&[]), None);
        assert_eq!(weighted_mean_std(&[(0.5, 0.0), (0.7, 0.0)]), None);
        assert_eq!(weighted_mean_std(&[(0.5, 2.0), (0.7, -1.0)]), None);
        assert_eq!(weighted_mean_std(&[(f64::NAN, 1.0)]), None);
        // A zero weight alongside a positive one simply does not count.
        // (0·0.5 + 4·0.75)/4 = 0.75, spread 0 (binary fractions: exact).
        assert_eq!(
            weighted_mean_std(&[(0.5, 0.0), (0.75, 4.0)]),
            Some((0.75, 0.0))
        );
    }

    #[test]
    fn weighted_runs_is_b3_over_every_run() {
        // Script A: runs 0.2, 0.4 (mean 0.3, sample s² = 0.02), weight 1; script B: one run 0.6,
        // weight 1. x̄_w = (0.3 + 0.6)/2 = 0.45; s_w² = [(0.3 − 0.45)² + 0.02·½ + (0.6 − 0.45)²]/2
        // = (0.0225 + 0.01 + 0.0225)/2 = 0.0275.
        let a = RunSummary::of(&[0.2, 0.4]).unwrap();
        let b = RunSummary::of(&[0.6]).unwrap();
        let (m, s) = weighted_runs_mean_std(&[(a, 1.0), (b, 1.0)]).unwrap();
        assert!(close(m, 0.45));
        assert!(close(s * s, 0.0275));
        // The same as B.3's formula over the runs, A's weight shared by its two runs.
        let (m2, s2) = weighted_mean_std(&[(0.2, 0.5), (0.4, 0.5), (0.6, 1.0)]).unwrap();
        assert!(close(m, m2) && close(s, s2));
        // One run per script: B.3 over the per-script values.
        let one = |x| RunSummary::of(&[x]).unwrap();
        assert_eq!(
            weighted_runs_mean_std(&[(one(0.5), 2.0), (one(0.8), 1.0)]),
            weighted_mean_std(&[(0.5, 2.0), (0.8, 1.0)])
        );
        assert_eq!(weighted_runs_mean_std(&[]), None);
        assert_eq!(weighted_runs_mean_std(&[(a, -1.0)]), None);
        let none = RunSummary {
            mean: 0.5,
            std: 0.0,
            runs: 0,
        };
        assert_eq!(weighted_runs_mean_std(&[(none, 1.0)]), None);
    }

    #[test]
    fn a_mean_over_scripts_is_not_a_mean_over_games() {
        // Script A won all three of its games, script B lost its only one: over games 3/4, over
        // scripts (1 + 0)/2.
        let a = [1.0, 1.0, 1.0];
        let b = [0.0];
        let groups = [Group::unweighted(&a), Group::unweighted(&b)];
        assert_eq!(mean_over_groups(&groups), Some(0.5));
        assert_eq!(mean(&[1.0, 1.0, 1.0, 0.0]), Some(0.75));
        // Weighted by clue counts: A has 10 clues and its games found 2 and 4 (0.2, 0.4), B has 30
        // and found 3 (0.1): (10·0.3 + 30·0.1)/40 = 0.15 = (mean 3 + 3 found)/(10 + 30 clues).
        let a = [0.2, 0.4];
        let b = [0.1];
        let cic = [
            Group {
                values: &a,
                weight: 10.0,
            },
            Group {
                values: &b,
                weight: 30.0,
            },
        ];
        assert!(close(mean_over_groups(&cic).unwrap(), 0.15));
        // Scripts without values do not count; nothing at all, or a bad weight, has no mean.
        let empty: [f64; 0] = [];
        assert_eq!(
            mean_over_groups(&[Group::unweighted(&empty), Group::unweighted(&b)]),
            Some(0.1)
        );
        assert_eq!(mean_over_groups(&[Group::unweighted(&empty)]), None);
        assert_eq!(
            mean_over_groups(&[Group {
                values: &b,
                weight: -1.0
            }]),
            None
        );
        assert_eq!(mean_over_groups(&[Group::unweighted(&[f64::NAN])]), None);
    }

    #[test]
    fn bootstrap_over_scripts_resamples_scripts_and_games() {
        let a = [1.0, 1.0, 1.0];
        let b = [0.0];
        let groups = [Group::unweighted(&a), Group::unweighted(&b)];
        let iv = bootstrap_over_groups(&groups, 2_000, 0.95, 5).unwrap();
        assert_eq!(iv.estimate, 0.5);
        assert_eq!(iv.n, 4);
        // Drawing A twice gives 1, B twice 0: the interval spans both.
        assert_eq!((iv.low, iv.high), (0.0, 1.0));
        assert_eq!(bootstrap_over_groups(&groups, 2_000, 0.95, 5), Some(iv));
        // One script: only its games are resampled, and every resample mean stays in their range.
        let xs = [0.13, 0.71, 0.29, 0.97];
        let one = bootstrap_over_groups(&[Group::unweighted(&xs)], 2_000, 0.95, 1).unwrap();
        assert!(
            one.low >= 0.13 && one.high <= 0.97 && one.low < one.high,
            "{one:?}"
        );
        // One game per script still has a spread (over scripts); one game in all has none.
        let (p, q) = ([0.2], [0.6]);
        let spread = bootstrap_over_groups(
            &[Group::unweighted(&p), Group::unweighted(&q)],
            2_000,
            0.95,
            1,
        )
        .unwrap();
        assert!(spread.low < spread.high, "{spread:?}");
        let single = bootstrap_over_groups(&[Group::unweighted(&p)], 2_000, 0.95, 1).unwrap();
        assert_eq!((single.low, single.high, single.n), (0.2, 0.2, 1));
        assert_eq!(bootstrap_over_groups(&groups, 0, 0.95, 1), None);
        assert_eq!(bootstrap_over_groups(&groups, 10, 1.0, 1), None);
    }

    #[test]
    fn bootstrap_is_deterministic_for_a_seed() {
        // Distinct values, so the bounds of different resampling streams cannot land on the same
        // grid point by chance (0/1 data can: every resample mean is a multiple of 1/n).
        let xs = [0.13, 0.71, 0.29, 0.97, 0.44, 0.05, 0.62, 0.88, 0.31, 0.56];
        let a = bootstrap_mean(&xs, 500, 0.95, 7).unwrap();
        let b = bootstrap_mean(&xs, 500, 0.95, 7).unwrap();
        assert_eq!(a, b);
        let c = bootstrap_mean(&xs, 500, 0.95, 8).unwrap();
        assert_eq!(a.estimate, c.estimate);
        assert_ne!((a.low, a.high), (c.low, c.high));
    }

    #[test]
    fn bootstrap_interval_contains_the_mean_and_narrows_with_more_data() {
        // Alternating 0/1: mean 0.5, population std 0.5.
        let small: Vec<f64> = (0..10).map(|i| (i % 2) as f64).collect();
        let large: Vec<f64> = (0..1000).map(|i| (i % 2) as f64).collect();
        let s = bootstrap_mean(&small, DEFAULT_RESAMPLES, DEFAULT_LEVEL, 1).unwrap();
        let l = bootstrap_mean(&large, DEFAULT_RESAMPLES, DEFAULT_LEVEL, 1).unwrap();
        for iv in [s, l] {
            assert!(close(iv.estimate, 0.5));
            assert!(iv.low <= iv.estimate && iv.estimate <= iv.high, "{iv:?}");
            assert!(iv.low >= 0.0 && iv.high <= 1.0);
        }
        assert_eq!((s.n, l.n), (10, 1000));
        assert_eq!(s.level, 0.95);
        // Width shrinks like 1/√n: 10× the √n, so roughly a tenth of the width.
        assert!(l.high - l.low < (s.high - s.low) / 5.0, "{s:?} {l:?}");
    }

    #[test]
    fn bootstrap_agrees_with_the_normal_approximation_on_a_large_sample() {
        // 100 alternating 0/1: the standard error of the mean is 0.5/√100 = 0.05 (the bootstrap uses
        // the ÷ n spread), so the 95% interval should be close to 0.5 ± 1.96·0.05 = [0.402, 0.598].
        let xs: Vec<f64> = (0..100).map(|i| (i % 2) as f64).collect();
        let iv = bootstrap_mean(&xs, DEFAULT_RESAMPLES, 0.95, 42).unwrap();
        assert!((iv.low - 0.402).abs() < 0.02, "{iv:?}");
        assert!((iv.high - 0.598).abs() < 0.02, "{iv:?}");
    }

    #[test]
    fn bootstrap_of_one_value_is_degenerate() {
        let iv = bootstrap_mean(&[0.25], 100, 0.9, 0).unwrap();
        assert_eq!(
            iv,
            Interval {
                estimate: 0.25,
                low: 0.25,
                high: 0.25,
                n: 1,
                level: 0.9
            }
        );
    }

    #[test]
    fn bootstrap_rejects_bad_input() {
        assert_eq!(bootstrap_mean(&[], 100, 0.95, 0), None);
        assert_eq!(
            bootstrap_mean_checked(&[], 100, 0.95, 0),
            Err(StatsError::Empty)
        );
        assert_eq!(
            bootstrap_mean_checked(&[1.0], 0, 0.95, 0),
            Err(StatsError::NoResamples)
        );
        assert_eq!(
            bootstrap_mean_checked(&[1.0], 10, 1.0, 0),
            Err(StatsError::InvalidLevel(1.0))
        );
        assert!(matches!(
            bootstrap_mean_checked(&[1.0], 10, f64::NAN, 0),
            Err(StatsError::InvalidLevel(_))
        ));
        assert_eq!(
            bootstrap_mean_checked(&[1.0, f64::INFINITY], 10, 0.95, 0),
            Err(StatsError::NonFinite { index: 1 })
        );
    }

    #[test]
    fn paired_difference_hand_case() {
        // a − b = 0.1, 0.2, 0.3: mean 0.2. Every resample mean is an average of these three, so the
        // interval lies inside [0.1, 0.3] and contains 0.2.
        let a = [0.6, 0.7, 0.8];
        let b = [0.5, 0.5, 0.5];
        let iv = paired_difference(&a, &b, 5_000, 0.95, 3).unwrap();
        assert!((iv.estimate - 0.2).abs() < 1e-12);
        assert!(iv.low >= 0.1 - 1e-12 && iv.high <= 0.3 + 1e-12, "{iv:?}");
        assert!(iv.low < 0.2 && 0.2 < iv.high, "{iv:?}");
        assert_eq!(iv.n, 3);
    }

    #[test]
    fn paired_difference_of_a_constant_shift_is_exact() {
        // b is a shifted by exactly 0.25 on every game (binary fractions, so no rounding):
        // each difference is 0.25, and so is every resample mean.
        let a = [0.5, 0.75, 1.0, 0.25];
        let b = [0.25, 0.5, 0.75, 0.0];
        let iv = paired_difference(&a, &b, 1_000, 0.95, 9).unwrap();
        assert_eq!((iv.estimate, iv.low, iv.high), (0.25, 0.25, 0.25));
    }

    #[test]
    fn paired_difference_errors_are_typed() {
        assert_eq!(
            paired_difference(&[1.0, 2.0], &[1.0], 10, 0.95, 0),
            Err(StatsError::LengthMismatch { a: 2, b: 1 })
        );
        assert_eq!(
            paired_difference(&[], &[], 10, 0.95, 0),
            Err(StatsError::Empty)
        );
        let e = paired_difference(&[1.0, 2.0], &[1.0], 10, 0.95, 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "paired arms differ in length: 2 games in the first arm, 1 in the second"
        );
    }

    #[test]
    fn quantile_interpolates_between_order_statistics() {
        // 0, 10, 20, 30: h = 3p; p = 0.5 → h = 1.5 → 10 + 0.5·10 = 15; p = 0 → 0; p = 1 → 30.
        let xs = [0.0, 10.0, 20.0, 30.0];
        assert!(close(quantile_sorted(&xs, 0.5), 15.0));
        assert_eq!(quantile_sorted(&xs, 0.0), 0.0);
        assert_eq!(quantile_sorted(&xs, 1.0), 30.0);
        assert_eq!(quantile_sorted(&[4.0], 0.3), 4.0);
    }
}
