//! Agreement statistics for the human evaluation (issue 30): how far human annotators agree with an
//! LLM judge, and with each other.
//!
//! Two published tables need these numbers. MIRAGE (Table 7) reports Kendall's tau between the
//! ranking of characters by human annotators and the ranking produced by the LLM; ThinkThrice
//! (Appendix A) has several annotators score responses on 1-5 scales, whose inter-annotator
//! reliability is what Krippendorff's alpha measures.
//!
//! Choices made:
//! - Kendall's **tau-b**, not tau-a: rankings of a handful of characters routinely tie (two suspects
//!   judged equally likely, two scores of 3), and tau-a would then never reach ±1 even for identical
//!   rankings. tau-b corrects for ties on both sides; it is also what `scipy.stats.kendalltau`
//!   computes by default, so results compare directly with the usual Python tooling.
//! - Krippendorff's **alpha**, not Cohen's or Fleiss' kappa: annotators with partial queues leave
//!   holes in the data (not every annotator rates every item), and alpha handles missing values
//!   natively, works for any number of coders, and supports nominal, ordinal and interval scales.
//!   It follows the coincidence-matrix formulation of Krippendorff (2011), "Computing
//!   Krippendorff's Alpha-Reliability".
//!
//! Everything is a pure function of its inputs; the O(n²) pair loops are fine for the sizes involved
//! (rankings of 5-10 characters, a few hundred rated items). Non-finite inputs are rejected rather
//! than silently ordered.

/// Why an agreement statistic could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AgreementError {
    /// Kendall's tau compares two paired sequences, which must have one value each per observation.
    #[error("x has {x} values and y has {y}: tau needs one pair per observation")]
    LengthMismatch { x: usize, y: usize },
    /// Kendall's tau needs at least one pair of observations.
    #[error("Kendall's tau needs at least 2 observations, got {0}")]
    TooFewObservations(usize),
    /// A NaN or infinite value in `x` or `y` (named by `side`), at `index`.
    #[error("{side}[{index}] is not a finite number")]
    NonFiniteValue { side: &'static str, index: usize },
    /// Every value of one side is the same, so the tau-b denominator is 0.
    #[error("every value of {side} is tied with every other, so tau-b is undefined")]
    AllTied { side: &'static str },
    /// A NaN or infinite rating in the reliability data.
    #[error("the rating of unit {unit} by coder {coder} is not a finite number")]
    NonFiniteRating { unit: usize, coder: usize },
    /// No unit was rated by at least 2 coders, so there is nothing to compare.
    #[error("no unit has ratings from at least 2 coders, so there are no pairable values")]
    NoPairableValues,
    /// All pairable ratings are the same value: expected disagreement is 0 and alpha is undefined.
    #[error(
        "all pairable ratings are the same value: expected disagreement is 0, alpha undefined"
    )]
    NoVariation,
}

/// Kendall's tau-b between two paired sequences: +1 when they order every pair the same way, -1
/// when they order every pair oppositely, with ties on either side corrected for.
///
/// Use it to compare two rankings of the same items, e.g. the human and the LLM ranking of the
/// characters of one script (MIRAGE Table 7). Larger numbers mean "ranked higher"; only the order
/// matters, so ranks and raw scores give the same result.
///
/// tau-b = (P - Q) / sqrt((n0 - n1)(n0 - n2)), where P and Q count concordant and discordant pairs,
/// n0 = n(n-1)/2, and n1, n2 count the pairs tied in `x` and in `y`.
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Result<f64, AgreementError> {
    if x.len() != y.len() {
        return Err(AgreementError::LengthMismatch {
            x: x.len(),
            y: y.len(),
        });
    }
    let n = x.len();
    if n < 2 {
        return Err(AgreementError::TooFewObservations(n));
    }
    for (side, values) in [("x", x), ("y", y)] {
        if let Some(index) = values.iter().position(|v| !v.is_finite()) {
            return Err(AgreementError::NonFiniteValue { side, index });
        }
    }

    let (mut concordant, mut discordant) = (0u64, 0u64);
    let (mut tied_x, mut tied_y) = (0u64, 0u64);
    for i in 0..n {
        for j in (i + 1)..n {
            let dx = x[i] - x[j];
            let dy = y[i] - y[j];
            if dx == 0.0 {
                tied_x += 1;
            }
            if dy == 0.0 {
                tied_y += 1;
            }
            let product = dx * dy;
            if product > 0.0 {
                concordant += 1;
            } else if product < 0.0 {
                discordant += 1;
            }
        }
    }

    let pairs = (n as u64) * (n as u64 - 1) / 2;
    if tied_x == pairs {
        return Err(AgreementError::AllTied { side: "x" });
    }
    if tied_y == pairs {
        return Err(AgreementError::AllTied { side: "y" });
    }
    let numerator = concordant as f64 - discordant as f64;
    let denominator = ((pairs - tied_x) as f64 * (pairs - tied_y) as f64).sqrt();
    Ok(numerator / denominator)
}

/// The scale the ratings are measured on, which decides how much two different values disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// Categories without order: any two different values disagree equally (e.g. "which suspect").
    Nominal,
    /// Ordered categories whose spacing means nothing (e.g. a 1-5 Likert rating): disagreement grows
    /// with how many ratings lie between the two values.
    Ordinal,
    /// Numbers with meaningful differences: disagreement is the squared difference.
    Interval,
}

/// Krippendorff's alpha for reliability data with missing values: 1 is perfect agreement, 0 is
/// agreement at chance level, negative is systematic disagreement.
///
/// Use it for how consistently several annotators (and/or an LLM judge treated as one more coder)
/// rate the same items, e.g. the 1-5 scores of ThinkThrice Appendix A, when not every annotator
/// rated every item.
///
/// `units[u][c]` is coder `c`'s rating of unit (item) `u`, `None` where that coder did not rate it.
/// Units may have different lengths; only units with at least 2 ratings are pairable and count.
/// alpha = 1 - (n - 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck over the coincidence matrix o (Krippendorff
/// 2011), with δ² chosen by `level`.
pub fn krippendorff_alpha(units: &[Vec<Option<f64>>], level: Level) -> Result<f64, AgreementError> {
    let pairable = pairable_units(units)?;
    // Distinct values, in order; every pairable rating is one of them.
    let mut values: Vec<f64> = pairable.iter().flatten().copied().collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    let index_of = |v: f64| values.partition_point(|&p| p < v);

    // Coincidence matrix: each ordered pair of ratings within a unit adds 1 / (m_u - 1).
    let size = values.len();
    let mut coincidences = vec![vec![0.0; size]; size];
    for unit in &pairable {
        let weight = 1.0 / (unit.len() - 1) as f64;
        for (i, &a) in unit.iter().enumerate() {
            for (j, &b) in unit.iter().enumerate() {
                if i != j {
                    coincidences[index_of(a)][index_of(b)] += weight;
                }
            }
        }
    }
    let marginals: Vec<f64> = coincidences.iter().map(|row| row.iter().sum()).collect();
    let total: f64 = marginals.iter().sum();

    let (mut observed, mut expected) = (0.0, 0.0);
    for c in 0..size {
        for k in 0..size {
            let delta = squared_difference(level, &values, &marginals, c, k);
            observed += coincidences[c][k] * delta;
            expected += marginals[c] * marginals[k] * delta;
        }
    }
    if expected == 0.0 {
        return Err(AgreementError::NoVariation);
    }
    Ok(1.0 - (total - 1.0) * observed / expected)
}

/// The ratings of each unit rated by at least 2 coders, after checking every rating is finite.
/// Negative zero is folded into zero so that it counts as the same value.
fn pairable_units(units: &[Vec<Option<f64>>]) -> Result<Vec<Vec<f64>>, AgreementError> {
    let mut pairable = Vec::new();
    for (unit, ratings) in units.iter().enumerate() {
        let mut present = Vec::with_capacity(ratings.len());
        for (coder, rating) in ratings.iter().enumerate() {
            let Some(value) = *rating else { continue };
            if !value.is_finite() {
                return Err(AgreementError::NonFiniteRating { unit, coder });
            }
            present.push(if value == 0.0 { 0.0 } else { value });
        }
        if present.len() >= 2 {
            pairable.push(present);
        }
    }
    if pairable.is_empty() {
        return Err(AgreementError::NoPairableValues);
    }
    Ok(pairable)
}

/// δ²: the squared disagreement between the `c`-th and `k`-th distinct values (in ascending order)
/// at the given level; `marginals` are their frequencies n_g among the pairable values.
fn squared_difference(level: Level, values: &[f64], marginals: &[f64], c: usize, k: usize) -> f64 {
    if c == k {
        return 0.0;
    }
    match level {
        Level::Nominal => 1.0,
        Level::Interval => (values[c] - values[k]).powi(2),
        Level::Ordinal => {
            let (low, high) = (c.min(k), c.max(k));
            let between: f64 = marginals[low..=high].iter().sum();
            (between - (marginals[c] + marginals[k]) / 2.0).powi(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(actual: f64, expected: f64, tolerance: f64) {
        assert!(
            (actual - expected).abs() <= tolerance,
            "got {actual}, expected {expected} (±{tolerance})"
        );
    }

    /// Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 coders x 12
    /// units, values 1-5, `None` = missing. Written as in the paper, one row per coder (A-D), and
    /// transposed into one row per unit.
    fn krippendorff_2011_example() -> Vec<Vec<Option<f64>>> {
        const M: f64 = f64::NAN; // marks a missing rating in the table below
        let coders: [[f64; 12]; 4] = [
            [1., 2., 3., 3., 2., 1., 4., 1., 2., M, M, M],
            [1., 2., 3., 3., 2., 2., 4., 1., 2., 5., M, 3.],
            [M, 3., 3., 3., 2., 3., 4., 2., 2., 5., 1., M],
            [1., 2., 3., 3., 2., 4., 4., 1., 2., 5., 1., M],
        ];
        (0..12)
            .map(|u| {
                coders
                    .iter()
                    .map(|row| Some(row[u]).filter(|v| !v.is_nan()))
                    .collect()
            })
            .collect()
    }

    // Published: Krippendorff (2011) gives alpha = 0.743 (nominal), 0.815 (ordinal) and 0.849
    // (interval) for this data. Reference implementation: the `krippendorff` package 0.9.0 (numpy
    // 2.4.6), `krippendorff.alpha(reliability_data=..., level_of_measurement=...)`, gives
    // 0.743421052631579, 0.8153875037548814 and 0.8491071428571428.
    #[test]
    fn alpha_matches_krippendorff_2011_example() -> Result<(), AgreementError> {
        let data = krippendorff_2011_example();
        let nominal = krippendorff_alpha(&data, Level::Nominal)?;
        let ordinal = krippendorff_alpha(&data, Level::Ordinal)?;
        let interval = krippendorff_alpha(&data, Level::Interval)?;
        close(nominal, 0.743, 0.0005);
        close(ordinal, 0.815, 0.0005);
        close(interval, 0.849, 0.0005);
        close(nominal, 0.743421052631579, 1e-12);
        close(ordinal, 0.8153875037548814, 1e-12);
        close(interval, 0.8491071428571428, 1e-12);
        Ok(())
    }

    #[test]
    fn alpha_ignores_unpairable_units_and_coder_order() -> Result<(), AgreementError> {
        let data = krippendorff_2011_example();
        let mut padded = data.clone();
        padded.push(vec![Some(7.0), None, None, None]); // a single rating pairs with nothing
        padded.push(vec![]);
        let reversed: Vec<Vec<Option<f64>>> = data
            .iter()
            .map(|unit| unit.iter().rev().copied().collect())
            .collect();
        for level in [Level::Nominal, Level::Ordinal, Level::Interval] {
            let base = krippendorff_alpha(&data, level)?;
            close(krippendorff_alpha(&padded, level)?, base, 1e-12);
            close(krippendorff_alpha(&reversed, level)?, base, 1e-12);
        }
        Ok(())
    }

    #[test]
    fn alpha_is_one_for_perfect_agreement() -> Result<(), AgreementError> {
        let data = vec![
            vec![Some(1.0), Some(1.0), None],
            vec![Some(4.0), Some(4.0), Some(4.0)],
            vec![None, Some(2.0), Some(2.0)],
        ];
        for level in [Level::Nominal, Level::Ordinal, Level::Interval] {
            close(krippendorff_alpha(&data, level)?, 1.0, 1e-12);
        }
        Ok(())
    }

    #[test]
    fn alpha_errors() {
        let lonely = vec![vec![Some(1.0), None], vec![None, Some(2.0)]];
        assert_eq!(
            krippendorff_alpha(&lonely, Level::Nominal),
            Err(AgreementError::NoPairableValues)
        );
        assert_eq!(
            krippendorff_alpha(&[], Level::Interval),
            Err(AgreementError::NoPairableValues)
        );
        let constant = vec![vec![Some(3.0), Some(3.0)], vec![Some(3.0), Some(3.0), None]];
        assert_eq!(
            krippendorff_alpha(&constant, Level::Ordinal),
            Err(AgreementError::NoVariation)
        );
        let nan = vec![vec![Some(1.0), Some(2.0)], vec![None, Some(f64::INFINITY)]];
        assert_eq!(
            krippendorff_alpha(&nan, Level::Interval),
            Err(AgreementError::NonFiniteRating { unit: 1, coder: 1 })
        );
    }

    // Reference: scipy 1.17.1, `scipy.stats.kendalltau(x, y).statistic` (tau-b, the default).
    #[test]
    fn tau_b_matches_scipy() -> Result<(), AgreementError> {
        let cases: [(&[f64], &[f64], f64); 5] = [
            // Perfectly reversed order; scipy prints -0.9999999999999999.
            (&[1., 2., 3., 4., 5.], &[5., 4., 3., 2., 1.], -1.0),
            // One adjacent swap.
            (
                &[1., 2., 3., 4., 5.],
                &[1., 2., 3., 5., 4.],
                0.7999999999999999,
            ),
            // Ties on both sides.
            (
                &[1., 2., 2., 3., 4.],
                &[1., 3., 2., 2., 4.],
                0.6666666666666666,
            ),
            (
                &[1., 1., 2., 2., 3., 3.],
                &[2., 1., 2., 3., 3., 3.],
                0.7833494518006403,
            ),
            (
                &[3., 1., 4., 1., 5., 9., 2., 6.],
                &[2., 7., 1., 8., 2., 8., 1., 8.],
                0.16051447078102563,
            ),
        ];
        for (x, y, expected) in cases {
            close(kendall_tau_b(x, y)?, expected, 1e-12);
            close(kendall_tau_b(y, x)?, expected, 1e-12); // symmetric
        }
        close(kendall_tau_b(&[1., 2., 3.], &[10., 20., 30.])?, 1.0, 1e-12);
        Ok(())
    }

    #[test]
    fn tau_b_errors() {
        assert_eq!(
            kendall_tau_b(&[1., 2., 3.], &[1., 2., 3., 4.]),
            Err(AgreementError::LengthMismatch { x: 3, y: 4 })
        );
        assert_eq!(
            kendall_tau_b(&[1.], &[2.]),
            Err(AgreementError::TooFewObservations(1))
        );
        assert_eq!(
            kendall_tau_b(&[], &[]),
            Err(AgreementError::TooFewObservations(0))
        );
        assert_eq!(
            kendall_tau_b(&[2., 2., 2.], &[1., 2., 3.]),
            Err(AgreementError::AllTied { side: "x" })
        );
        assert_eq!(
            kendall_tau_b(&[1., 2., 3.], &[5., 5., 5.]),
            Err(AgreementError::AllTied { side: "y" })
        );
        assert_eq!(
            kendall_tau_b(&[1., 2., 3.], &[1., f64::NAN, 3.]),
            Err(AgreementError::NonFiniteValue {
                side: "y",
                index: 1
            })
        );
        let message = AgreementError::LengthMismatch { x: 3, y: 4 }.to_string();
        assert!(message.contains("x has 3 values and y has 4"), "{message}");
    }
}
