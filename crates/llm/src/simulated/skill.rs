//! Weaker settings of the simulated model, for tests and demos that need two models of different
//! strength (a tournament's ratings, a comparison that must come out one way).
//!
//! A model name ending in `:` and a number, such as `sim-1:0.3`, selects that *skill* (clamped to
//! [0, 1]); every other name is skill 1, the model as it always answers. At skill s each decision the
//! model makes — an enum value (a vote, an option letter), a free-text answer, a string, a boolean, a
//! number — is, with probability 1 − s, a *lapse*: a value drawn uniformly (enum values, booleans,
//! numbers within their bounds), or up to two sentences drawn from the whole context, secrets
//! included, instead of the relevant ones (a weak model neither stays on topic nor keeps a secret).
//!
//! Lapses are drawn from their own ChaCha8 stream, seeded from the request's seed (messages, schema,
//! sample index) and the skill: the same request to the same model always lapses the same way, and at
//! skill 1 no draw is made at all, so the default model's answers do not move.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};

/// The skill `model` names: the number after its last `:`, clamped to [0, 1]; 1 when the name
/// carries none.
pub fn skill(model: &str) -> f64 {
    model
        .rsplit_once(':')
        .and_then(|(_, s)| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite())
        .map_or(1.0, |s| s.clamp(0.0, 1.0))
}

/// The lapses of one request.
pub(super) struct Lapses {
    /// Probability that a decision lapses: 1 − skill.
    p: f64,
    rng: ChaCha8Rng,
}

impl Lapses {
    /// The lapses of a request to `model` whose seed is `seed`; `None` at skill 1.
    pub(super) fn of(model: &str, seed: &[u8; 32]) -> Option<Lapses> {
        let s = skill(model);
        if s >= 1.0 {
            return None;
        }
        let mut h = Sha256::new();
        h.update(b"sleuth-simulated-lapses");
        h.update(seed);
        h.update(s.to_le_bytes());
        Some(Lapses {
            p: 1.0 - s,
            rng: ChaCha8Rng::from_seed(h.finalize().into()),
        })
    }

    /// Whether the next decision lapses.
    pub(super) fn lapse(&mut self) -> bool {
        self.rng.gen::<f64>() < self.p
    }

    /// A uniform draw from [0, 1).
    pub(super) fn unit(&mut self) -> f64 {
        self.rng.gen()
    }

    /// Up to `k` distinct indices of `0..n`, in random order.
    pub(super) fn pick(&mut self, n: usize, k: usize) -> Vec<usize> {
        let mut all: Vec<usize> = (0..n).collect();
        all.shuffle(&mut self.rng);
        all.truncate(k);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_selects_its_skill() {
        assert_eq!(skill("sim-1"), 1.0);
        assert_eq!(skill("sim-1:0.3"), 0.3);
        assert_eq!(skill("weak:0"), 0.0);
        assert_eq!(skill("sim:7"), 1.0, "clamped");
        assert_eq!(skill("llama3:8b"), 1.0, "a tag that is no number is a name");
        assert!(Lapses::of("sim-1", &[0; 32]).is_none());
        assert!(Lapses::of("sim-1:1", &[0; 32]).is_none());
    }

    #[test]
    fn skill_zero_always_lapses_and_draws_are_seeded() {
        let mut a = Lapses::of("m:0", &[1; 32]).expect("lapses");
        assert!((0..100).all(|_| a.lapse()));
        let draws = |seed: [u8; 32]| {
            let mut l = Lapses::of("m:0.5", &seed).expect("lapses");
            (0..20).map(|_| l.pick(10, 3)).collect::<Vec<_>>()
        };
        assert_eq!(draws([2; 32]), draws([2; 32]));
        assert_ne!(draws([2; 32]), draws([3; 32]));
    }
}
