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

    /// The counter of a unit of work that makes exactly `calls` calls, run alongside other units of the
    /// same caller: it continues this caller's sequence where it stands, and this counter skips past the
    /// `calls` indices it hands over. Units reserved in the order a sequential run would make them get
    /// exactly the indices that run drew, however their calls then interleave.
    pub fn reserve(&mut self, calls: u64) -> SampleCounter {
        let unit = self.clone();
        self.calls += calls;
        unit
    }

    /// The counter of a unit of work whose number of calls is not known beforehand (a ThinkThrice answer
    /// that refines and verifies itself), run alongside other units of the same caller: a sequence of
    /// its own, caller `{caller}#{unit}`, from call 0. Its indices depend on the unit's name alone, not on
    /// how many calls the units before it made; the name must be unique within the caller (evaluation
    /// uses `factual/{question}`; see `docs/parallelism.md`). This counter does not move.
    pub fn fork(&self, unit: &str) -> SampleCounter {
        SampleCounter::new(self.seed, format!("{}#{unit}", self.caller))
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

    #[test]
    fn reserved_units_draw_what_a_sequential_run_draws() {
        let mut sequential = SampleCounter::new(3, "Ada");
        let want: Vec<u64> = (0..5).map(|_| sequential.next_index()).collect();
        let mut ada = SampleCounter::new(3, "Ada");
        let mut first = ada.reserve(2);
        let mut second = ada.reserve(3);
        // The second unit draws before the first: the indices do not care.
        let b: Vec<u64> = (0..3).map(|_| second.next_index()).collect();
        let a: Vec<u64> = (0..2).map(|_| first.next_index()).collect();
        assert_eq!([a, b].concat(), want);
        assert_eq!(
            ada.calls(),
            5,
            "the caller's counter skipped past both units"
        );
        assert_eq!(ada.next_index(), sample_index(3, "Ada", 5));
    }

    #[test]
    fn forked_units_have_sequences_of_their_own() {
        let mut ada = SampleCounter::new(3, "Ada");
        ada.next_index();
        let mut unit = ada.fork("factual/4");
        assert_eq!(unit.caller(), "Ada#factual/4");
        assert_eq!(unit.next_index(), sample_index(3, "Ada#factual/4", 0));
        assert_eq!(ada.calls(), 1, "forking does not move the caller's counter");
        assert_ne!(
            ada.fork("factual/5").next_index(),
            sample_index(3, "Ada#factual/4", 0)
        );
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
