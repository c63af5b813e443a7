//! Ratings from a tournament: Bradley–Terry strengths fitted by the MM algorithm, with
//! percentile-bootstrap intervals over scripts and games.
//!
//! A tournament game puts one model on the culprit's side against another on the civilians' side,
//! and one side wins. Two models are fitted to the same games:
//!
//! - **overall** — one strength γᵢ per model and one factor θ for the culprit's side, shared by every
//!   game: P(culprit c beats civilians v) = θγ_c / (θγ_c + γ_v). This is Bradley–Terry with a home
//!   advantage (Hunter 2004, §3.2, after Agresti): a murder mystery is not a symmetric game (with the
//!   simulated model the culprit wins most games), and θ takes that out, so γ is what is left, the
//!   model's strength on both sides. A model against itself tells nothing about γ; such games count
//!   for θ only.
//! - **per side** — a culprit strength αᵢ and a civilians strength βᵢ per model:
//!   P(c beats v) = α_c / (α_c + β_v), plain Bradley–Terry between culprit players and civilian
//!   players (games of a model against itself count here: α_i meets β_i).
//!
//! Both are fitted by Hunter's (2004) minorization–maximization updates, one parameter at a time
//! (each update increases the likelihood): for the overall model γᵢ ← Wᵢ / Σ_g ∂ᵢ(g), where Wᵢ is
//! what i won and the sum runs over i's games, θ/(θγ_c + γ_v) for a game i played as culprit and
//! 1/(θγ_c + γ_v) as civilians; θ ← H / Σ_g γ_c/(θγ_c + γ_v), H the culprits' wins. The per-side
//! updates are the same with θ = 1 and α, β in place of γ.
//!
//! **Prior.** Each strength, and θ, also plays two virtual games against a fixed reference of
//! strength 1, winning one and losing one. Without them a model that won (or lost) every game has no
//! finite maximum-likelihood strength, which happens in small tournaments and in bootstrap resamples
//! alike; with them the estimate is the posterior mode under a weak prior centred on "no difference",
//! worth two games against a few dozen real ones.
//!
//! **Scale.** Ratings are printed as Elo points, 1000 + 400·log₁₀(γᵢ / ḡ), ḡ the geometric mean of
//! the strengths fitted (the per-side ratings share one ḡ over both sides, so a culprit rating and a
//! civilians rating can be compared directly): a gap of d points is odds of 10^(d/400) to 1 of
//! winning, 100 points ≈ 64 %, 200 ≈ 76 %.
//!
//! **Intervals.** The two-stage bootstrap of [`super::stats::bootstrap_over_groups`] applied to the
//! fit: each resample draws as many scripts as there are with replacement, then each drawn script's
//! games with replacement, and refits; bounds are the percentiles of the refitted ratings.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::stats::{quantile_sorted, Interval};

/// One game of a tournament.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Match {
    /// Index of the model that played the culprit's side.
    pub culprit: usize,
    /// Index of the model that played the civilians.
    pub civilians: usize,
    pub culprit_won: bool,
}

/// Ratings on the Elo scale, one per model; `None` for a model that played no game that informs it
/// (no game against another model for `overall`, none on that side for `culprit` and `civilians`).
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    pub overall: Vec<Option<f64>>,
    pub culprit: Vec<Option<f64>>,
    pub civilians: Vec<Option<f64>>,
    /// θ in Elo points, 400·log₁₀ θ: what being the culprit is worth.
    pub culprit_advantage: f64,
}

/// [`Fit`] with an interval around every rating.
#[derive(Debug, Clone, PartialEq)]
pub struct FitIntervals {
    pub overall: Vec<Option<Interval>>,
    pub culprit: Vec<Option<Interval>>,
    pub civilians: Vec<Option<Interval>>,
    pub culprit_advantage: Interval,
}

/// Virtual games each strength plays against the reference, half won (see the module documentation).
const PRIOR_GAMES: f64 = 2.0;
/// Largest change of any log-strength between two sweeps at which the fit has converged: 10⁻⁹ is
/// about 2·10⁻⁷ Elo points.
const TOLERANCE: f64 = 1e-9;
/// Sweeps at most (the MM updates converge linearly; with the prior, well within this).
const MAX_SWEEPS: usize = 100_000;

/// Games and culprit wins per ordered pair (culprit, civilians), row-major.
#[derive(Debug, Clone)]
struct Counts {
    k: usize,
    games: Vec<f64>,
    culprit_wins: Vec<f64>,
}

impl Counts {
    fn new(k: usize) -> Counts {
        Counts {
            k,
            games: vec![0.0; k * k],
            culprit_wins: vec![0.0; k * k],
        }
    }

    fn add(&mut self, m: &Match) {
        let at = m.culprit * self.k + m.civilians;
        self.games[at] += 1.0;
        if m.culprit_won {
            self.culprit_wins[at] += 1.0;
        }
    }

    fn n(&self, c: usize, v: usize) -> f64 {
        self.games[c * self.k + v]
    }

    fn w(&self, c: usize, v: usize) -> f64 {
        self.culprit_wins[c * self.k + v]
    }

    /// Games model `i` played against another model; as culprit; as civilians.
    fn played(&self, i: usize) -> (f64, f64, f64) {
        let k = self.k;
        let others = (0..k)
            .filter(|&j| j != i)
            .map(|j| self.n(i, j) + self.n(j, i))
            .sum();
        let culprit = (0..k).map(|j| self.n(i, j)).sum();
        let civilians = (0..k).map(|j| self.n(j, i)).sum();
        (others, culprit, civilians)
    }
}

/// Raw strengths (not yet on the Elo scale).
#[derive(Debug, Clone)]
struct Strengths {
    gamma: Vec<f64>,
    theta: f64,
    alpha: Vec<f64>,
    beta: Vec<f64>,
}

impl Strengths {
    fn even(k: usize) -> Strengths {
        Strengths {
            gamma: vec![1.0; k],
            theta: 1.0,
            alpha: vec![1.0; k],
            beta: vec![1.0; k],
        }
    }
}

/// The overall fit, from `s` (a warm start) to convergence.
fn fit_overall(c: &Counts, s: &mut Strengths) {
    let k = c.k;
    let half = PRIOR_GAMES / 2.0;
    let mut wins = vec![half; k];
    let mut h = half;
    for a in 0..k {
        for b in 0..k {
            h += c.w(a, b);
            if a != b {
                wins[a] += c.w(a, b);
                wins[b] += c.n(a, b) - c.w(a, b);
            }
        }
    }
    let (g, theta) = (&mut s.gamma, &mut s.theta);
    for _ in 0..MAX_SWEEPS {
        let mut change: f64 = 0.0;
        for i in 0..k {
            let mut d = PRIOR_GAMES / (g[i] + 1.0);
            for j in (0..k).filter(|&j| j != i) {
                let (as_culprit, as_civilians) = (c.n(i, j), c.n(j, i));
                if as_culprit > 0.0 {
                    d += as_culprit * *theta / (*theta * g[i] + g[j]);
                }
                if as_civilians > 0.0 {
                    d += as_civilians / (*theta * g[j] + g[i]);
                }
            }
            let new = wins[i] / d;
            change = change.max((new / g[i]).ln().abs());
            g[i] = new;
        }
        let mut d = PRIOR_GAMES / (*theta + 1.0);
        for a in 0..k {
            for b in 0..k {
                let n = c.n(a, b);
                if n > 0.0 {
                    d += n * g[a] / (*theta * g[a] + g[b]);
                }
            }
        }
        let new = h / d;
        change = change.max((new / *theta).ln().abs());
        *theta = new;
        if change < TOLERANCE {
            break;
        }
    }
}

/// One MM sweep over the strengths `x` of one side against the strengths `y` they met:
/// xᵢ ← winsᵢ / (prior + Σⱼ n(i, j) / (xᵢ + yⱼ)), n(i, j) the games between xᵢ and yⱼ. Returns the
/// largest change of a log-strength.
fn sweep_side(x: &mut [f64], y: &[f64], wins: &[f64], n: impl Fn(usize, usize) -> f64) -> f64 {
    let mut change: f64 = 0.0;
    for (i, (xi, won)) in x.iter_mut().zip(wins).enumerate() {
        let mut d = PRIOR_GAMES / (*xi + 1.0);
        for (j, yj) in y.iter().enumerate() {
            let games = n(i, j);
            if games > 0.0 {
                d += games / (*xi + yj);
            }
        }
        let new = won / d;
        change = change.max((new / *xi).ln().abs());
        *xi = new;
    }
    change
}

/// The per-side fit, from `s` (a warm start) to convergence.
fn fit_sides(c: &Counts, s: &mut Strengths) {
    let k = c.k;
    let half = PRIOR_GAMES / 2.0;
    let culprit_wins: Vec<f64> = (0..k)
        .map(|a| half + (0..k).map(|b| c.w(a, b)).sum::<f64>())
        .collect();
    let civilian_wins: Vec<f64> = (0..k)
        .map(|b| half + (0..k).map(|a| c.n(a, b) - c.w(a, b)).sum::<f64>())
        .collect();
    let (alpha, beta) = (&mut s.alpha, &mut s.beta);
    for _ in 0..MAX_SWEEPS {
        let culprits = sweep_side(alpha, beta, &culprit_wins, |a, b| c.n(a, b));
        let civilians = sweep_side(beta, alpha, &civilian_wins, |b, a| c.n(a, b));
        if culprits.max(civilians) < TOLERANCE {
            break;
        }
    }
}

/// Elo points of each strength against the geometric mean of the strengths `counted` keeps.
fn elo(strengths: &[f64], counted: &[bool]) -> Vec<f64> {
    let logs: Vec<f64> = strengths
        .iter()
        .zip(counted)
        .filter(|(_, &c)| c)
        .map(|(s, _)| s.log10())
        .collect();
    let centre = if logs.is_empty() {
        0.0
    } else {
        logs.iter().sum::<f64>() / logs.len() as f64
    };
    strengths
        .iter()
        .map(|s| 1000.0 + 400.0 * (s.log10() - centre))
        .collect()
}

/// The ratings of fitted strengths; `None` where a model played nothing that informs the rating.
fn ratings(c: &Counts, s: &Strengths) -> Fit {
    let k = c.k;
    let played: Vec<(f64, f64, f64)> = (0..k).map(|i| c.played(i)).collect();
    let in_overall: Vec<bool> = played.iter().map(|p| p.0 > 0.0).collect();
    let overall = elo(&s.gamma, &in_overall);
    // One centre for both sides: the culprit and civilians ratings are on one scale.
    let both: Vec<f64> = s.alpha.iter().chain(&s.beta).copied().collect();
    let counted: Vec<bool> = played
        .iter()
        .map(|p| p.1 > 0.0)
        .chain(played.iter().map(|p| p.2 > 0.0))
        .collect();
    let sides = elo(&both, &counted);
    let keep = |v: &[f64], keep: &[bool]| -> Vec<Option<f64>> {
        v.iter().zip(keep).map(|(x, &k)| k.then_some(*x)).collect()
    };
    Fit {
        overall: keep(&overall, &in_overall),
        culprit: keep(&sides[..k], &counted[..k]),
        civilians: keep(&sides[k..], &counted[k..]),
        culprit_advantage: 400.0 * s.theta.log10(),
    }
}

fn count(k: usize, games: &[Match]) -> Counts {
    let mut c = Counts::new(k);
    for m in games {
        c.add(m);
    }
    c
}

/// Fits `models` models to `games` (see the module documentation). Indices in `games` must be below
/// `models`.
pub fn fit(models: usize, games: &[Match]) -> Fit {
    let c = count(models, games);
    let mut s = Strengths::even(models);
    fit_overall(&c, &mut s);
    fit_sides(&c, &mut s);
    ratings(&c, &s)
}

/// [`fit`] over the games of every script, with percentile-bootstrap intervals over scripts and
/// games (`resamples` refits, drawn from ChaCha8 seeded with `seed`). `None` when there is no game,
/// `resamples` is 0 or `level` is not strictly between 0 and 1. An interval's `n` is the number of
/// games behind the rating: against other models (overall), on that side, or all (θ).
pub fn bootstrap(
    models: usize,
    scripts: &[Vec<Match>],
    resamples: usize,
    level: f64,
    seed: u64,
) -> Option<(Fit, FitIntervals)> {
    let scripts: Vec<&Vec<Match>> = scripts.iter().filter(|s| !s.is_empty()).collect();
    if scripts.is_empty() || resamples == 0 || !(level > 0.0 && level < 1.0) {
        return None;
    }
    let all: Vec<Match> = scripts.iter().flat_map(|s| s.iter().copied()).collect();
    let c = count(models, &all);
    let mut estimate = Strengths::even(models);
    fit_overall(&c, &mut estimate);
    fit_sides(&c, &mut estimate);
    let point = ratings(&c, &estimate);
    // Per resample: overall ratings, culprit, civilians, θ.
    let width = 3 * models + 1;
    let mut draws: Vec<Vec<f64>> = vec![Vec::with_capacity(resamples); width];
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = scripts.len();
    for _ in 0..resamples {
        let mut rc = Counts::new(models);
        for _ in 0..n {
            let games = scripts[rng.gen_range(0..n)];
            for _ in 0..games.len() {
                rc.add(&games[rng.gen_range(0..games.len())]);
            }
        }
        let mut s = estimate.clone();
        fit_overall(&rc, &mut s);
        fit_sides(&rc, &mut s);
        // Every model is rated in every resample (the prior gives a model without games the
        // reference's strength), so the columns stay aligned; only models the full data rate get
        // intervals.
        let overall = elo(&s.gamma, &vec![true; models]);
        let both: Vec<f64> = s.alpha.iter().chain(&s.beta).copied().collect();
        let sides = elo(&both, &vec![true; 2 * models]);
        for (i, x) in overall.iter().chain(&sides).enumerate() {
            draws[i].push(*x);
        }
        draws[width - 1].push(400.0 * s.theta.log10());
    }
    for d in &mut draws {
        d.sort_by(f64::total_cmp);
    }
    let alpha = 1.0 - level;
    let interval = |estimate: f64, sorted: &[f64], n: f64| Interval {
        estimate,
        low: quantile_sorted(sorted, alpha / 2.0),
        high: quantile_sorted(sorted, 1.0 - alpha / 2.0),
        n: n as usize,
        level,
    };
    let played: Vec<(f64, f64, f64)> = (0..models).map(|i| c.played(i)).collect();
    let column = |ratings: &[Option<f64>], offset: usize, n: fn(&(f64, f64, f64)) -> f64| {
        ratings
            .iter()
            .enumerate()
            .map(|(i, r)| r.map(|x| interval(x, &draws[offset + i], n(&played[i]))))
            .collect::<Vec<_>>()
    };
    let intervals = FitIntervals {
        overall: column(&point.overall, 0, |p| p.0),
        culprit: column(&point.culprit, models, |p| p.1),
        civilians: column(&point.civilians, 2 * models, |p| p.2),
        culprit_advantage: interval(point.culprit_advantage, &draws[width - 1], all.len() as f64),
    };
    Some((point, intervals))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn games(culprit: usize, civilians: usize, culprit_wins: usize, of: usize) -> Vec<Match> {
        (0..of)
            .map(|i| Match {
                culprit,
                civilians,
                culprit_won: i < culprit_wins,
            })
            .collect()
    }

    fn p_win(gap: f64) -> f64 {
        1.0 / (1.0 + 10f64.powf(-gap / 400.0))
    }

    #[test]
    fn two_models_balanced_sides_give_the_win_odds() {
        // A beats B 30 times in 40 on each side; no side advantage.
        let mut g = games(0, 1, 30, 40);
        g.extend(games(1, 0, 10, 40));
        let f = fit(2, &g);
        let (a, b) = (f.overall[0].unwrap(), f.overall[1].unwrap());
        assert!((a + b - 2000.0).abs() < 1e-6, "centred on 1000");
        // A won 60 of 80: odds 3, pulled a little towards even by the prior's two virtual games.
        let p = p_win(a - b);
        assert!((p - 0.75).abs() < 0.01, "{p}");
        assert!(f.culprit_advantage.abs() < 1e-6, "{}", f.culprit_advantage);
    }

    #[test]
    fn a_side_advantage_is_taken_out_of_the_strengths() {
        // Culprits win 90 % when A is culprit and 50 % when B is: A is stronger, and the culprit's side
        // is favoured.
        let mut g = games(0, 1, 36, 40);
        g.extend(games(1, 0, 20, 40));
        let f = fit(2, &g);
        assert!(f.overall[0] > f.overall[1]);
        assert!(f.culprit_advantage > 100.0, "{}", f.culprit_advantage);
        // The fit reproduces both pairings' rates: θγ_A/(θγ_A + γ_B) ≈ 0.9, θγ_B/(θγ_B + γ_A) ≈ 0.5.
        let gap = f.overall[0].unwrap() - f.overall[1].unwrap();
        let t = f.culprit_advantage;
        assert!((p_win(t + gap) - 0.9).abs() < 0.03, "{}", p_win(t + gap));
        assert!((p_win(t - gap) - 0.5).abs() < 0.03, "{}", p_win(t - gap));
        // Per side: A's culprit is stronger than B's, A's civilians stronger than B's.
        assert!(f.culprit[0] > f.culprit[1]);
        assert!(f.civilians[0] > f.civilians[1]);
    }

    #[test]
    fn a_clean_sweep_stays_finite_and_self_play_rates_only_sides() {
        let mut g = games(0, 1, 10, 10);
        g.extend(games(1, 0, 0, 10));
        // A model alone against itself: no overall rating, but side ratings.
        g.extend(games(2, 2, 5, 10));
        let f = fit(3, &g);
        let (a, b) = (f.overall[0].unwrap(), f.overall[1].unwrap());
        assert!(a.is_finite() && b.is_finite() && a - b > 300.0, "{a} {b}");
        assert_eq!(f.overall[2], None);
        assert!(f.culprit[2].is_some() && f.civilians[2].is_some());
    }

    #[test]
    fn the_mm_fit_is_the_likelihood_maximum() {
        // Three models, uneven schedule: the gradient of the penalised log-likelihood in each
        // log-strength vanishes at the fit.
        let mut g = games(0, 1, 7, 10);
        g.extend(games(1, 0, 4, 10));
        g.extend(games(1, 2, 6, 8));
        g.extend(games(2, 0, 2, 9));
        g.extend(games(0, 2, 8, 9));
        let c = count(3, &g);
        let mut s = Strengths::even(3);
        fit_overall(&c, &mut s);
        let (gm, th) = (&s.gamma, s.theta);
        for i in 0..3 {
            // ∂/∂log γᵢ = Wᵢ − Σ expected wins of i (prior included).
            let mut grad = 1.0 - 2.0 * gm[i] / (gm[i] + 1.0);
            for j in (0..3).filter(|&j| j != i) {
                let p_ij = th * gm[i] / (th * gm[i] + gm[j]);
                grad += c.w(i, j) - c.n(i, j) * p_ij;
                let p_ji = th * gm[j] / (th * gm[j] + gm[i]);
                grad += (c.n(j, i) - c.w(j, i)) - c.n(j, i) * (1.0 - p_ji);
            }
            assert!(grad.abs() < 1e-6, "model {i}: {grad}");
        }
    }

    #[test]
    fn bootstrap_brackets_the_estimate_and_is_deterministic() {
        let mut s1 = games(0, 1, 8, 10);
        s1.extend(games(1, 0, 3, 10));
        let mut s2 = games(0, 1, 6, 10);
        s2.extend(games(1, 0, 2, 10));
        let scripts = vec![s1, s2];
        let (f, iv) = bootstrap(2, &scripts, 500, 0.95, 7).expect("intervals");
        for (x, i) in f.overall.iter().zip(&iv.overall) {
            let (x, i) = (x.unwrap(), i.unwrap());
            assert!(i.low <= x && x <= i.high, "{i:?}");
            assert_eq!(i.n, 40);
        }
        assert_eq!(iv.culprit[0].unwrap().n, 20);
        assert_eq!(bootstrap(2, &scripts, 500, 0.95, 7), Some((f, iv)));
        assert_eq!(bootstrap(2, &[], 500, 0.95, 7), None);
        assert_eq!(bootstrap(2, &scripts, 0, 0.95, 7), None);
    }
}
