//! Statistics over games and repeats: means, standard deviations, PLAYER\*'s weighted mean and
//! standard deviation, and percentile-bootstrap confidence intervals (one arm, or two arms paired by
//! game).
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
/// because PLAYER\* Appendix B.3 defines it that way.
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
fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
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
