//! Sample indices: the one scheme every caller of a model uses.
//!
//! A request's sample index picks which of the model's possible answers it gets (the simulated model
//! seeds its tie-breaking from it; the cache of the sweeps issue keys on it). For a replay to meet the
//! same answers, an index must depend only on what a replay reproduces: the game seed, the caller's
//! identity (a character's name, `judge`, `generate_factual/<character>`) and that caller's own call
//! counter — never on shared positions such as the transcript's length, which change when anything
//! else in the game changes (a module toggled, a step added, calls made concurrently).

use sha2::{Digest, Sha256};

/// The sample index of call number `call` (0-based) of `caller` in a game seeded with `seed`: the
/// first 8 bytes of sha256(seed as little-endian bytes ‖ caller ‖ call as little-endian bytes).
pub fn sample_index(seed: u64, caller: &str, call: u64) -> u64 {
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    h.update(caller.as_bytes());
    h.update(call.to_le_bytes());
    let d = h.finalize();
    u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

/// One caller's sequence of sample indices: each caller owns one, so its indices do not depend on
/// what other callers do or in which order their calls interleave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleCounter {
    seed: u64,
    caller: String,
    calls: u64,
}

impl SampleCounter {
    /// The counter of `caller` in a game seeded with `seed`, before its first call.
    pub fn new(seed: u64, caller: impl Into<String>) -> SampleCounter {
        SampleCounter {
            seed,
            caller: caller.into(),
            calls: 0,
        }
    }

    /// The sample index of the next call, counting it.
    pub fn next_index(&mut self) -> u64 {
        let s = sample_index(self.seed, &self.caller, self.calls);
        self.calls += 1;
        s
    }

    /// Calls counted so far.
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// Whose counter this is.
    pub fn caller(&self) -> &str {
        &self.caller
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_follow_seed_caller_and_own_counter_only() {
        let mut a = SampleCounter::new(7, "Ada");
        let mut b = SampleCounter::new(7, "Ada");
        let first = a.next_index();
        // Another caller's calls in between change nothing for Ada.
        let mut other = SampleCounter::new(7, "judge");
        other.next_index();
        assert_eq!(first, b.next_index());
        assert_eq!(a.next_index(), b.next_index());
        assert_eq!(a.calls(), 2);
        assert_ne!(sample_index(7, "Ada", 0), sample_index(7, "Ada", 1));
        assert_ne!(sample_index(7, "Ada", 0), sample_index(7, "Ben", 0));
        assert_ne!(sample_index(7, "Ada", 0), sample_index(8, "Ada", 0));
    }

    /// The characters' indices predate this module; the golden games pin them, and this pins the
    /// formula they follow.
    #[test]
    fn formula_is_sha256_of_seed_caller_call() {
        let mut h = Sha256::new();
        h.update(5u64.to_le_bytes());
        h.update("Mara".as_bytes());
        h.update(3u64.to_le_bytes());
        let d = h.finalize();
        let want = u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]);
        assert_eq!(sample_index(5, "Mara", 3), want);
    }
}
