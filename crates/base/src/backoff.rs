//! The one backoff every retry loop of sleuth uses: a doubling ceiling with **equal jitter**, and
//! a bound on how long a server may ask us to wait.
//!
//! Retry number `n` (0-based) waits a uniform draw in `[c/2, c]`, where `c = base × 2ⁿ` capped at
//! `max`. That is "equal jitter" (half the ceiling fixed, half random), not "full jitter"
//! (`[0, c]`): the fixed half keeps a retry from coming back at once to a server that just said no,
//! the random half keeps many callers that failed together from retrying together.
//!
//! A server's `Retry-After` wins when it is longer than the draw, but only up to
//! [`Backoff::honour`]'s bound: a server asking for an hour must not stall a game for an hour. The
//! call is tried again after the bound; if the server still refuses, it says so again and the retry
//! budget decides.
//!
//! Why not the `backon` crate (already in the tree through a dependency): its jitter adds `0..c` on
//! top of the step (waits of `c..2c`), it has no notion of a server-requested wait per attempt, and
//! the loops here decide per error whether to go on (transient or not, a deadline, a shutdown
//! signal), which they do better with a plain counter. What they share is only this arithmetic.

use std::time::Duration;

use rand::Rng;

/// A doubling backoff with equal jitter (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The ceiling of the first retry's wait.
    pub base: Duration,
    /// The ceiling never passes this.
    pub max: Duration,
}

impl Backoff {
    pub const fn new(base: Duration, max: Duration) -> Backoff {
        Backoff { base, max }
    }

    /// The ceiling of retry `attempt` (0-based): `base × 2^attempt`, at most `max`.
    pub fn ceiling(&self, attempt: u32) -> Duration {
        self.base
            .saturating_mul(1u32 << attempt.min(20))
            .min(self.max)
    }

    /// The wait before retry `attempt` (0-based): uniform in `[ceiling / 2, ceiling]`.
    pub fn delay(&self, attempt: u32) -> Duration {
        equal_jitter(self.ceiling(attempt))
    }

    /// The wait before retry `attempt` when the server asked for `retry_after`: the longer of the
    /// two, with the server's wish cut to `bound`.
    pub fn honour(&self, attempt: u32, retry_after: Option<Duration>, bound: Duration) -> Duration {
        let own = self.delay(attempt);
        match retry_after {
            Some(ra) => own.max(ra.min(bound)),
            None => own,
        }
    }
}

/// A uniform draw in `[ceiling / 2, ceiling]`.
pub fn equal_jitter(ceiling: Duration) -> Duration {
    ceiling.mul_f64(rand::thread_rng().gen_range(0.5..=1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn waits_double_stay_in_the_upper_half_of_their_ceiling_and_are_capped() {
        let b = Backoff::new(100 * MS, 400 * MS);
        assert_eq!(
            (0..4).map(|n| b.ceiling(n)).collect::<Vec<_>>(),
            vec![100 * MS, 200 * MS, 400 * MS, 400 * MS]
        );
        for n in 0..40 {
            let d = b.delay(n);
            let c = b.ceiling(n);
            assert!(
                d >= c / 2 && d <= c,
                "retry {n}: {d:?} outside [{:?}, {c:?}]",
                c / 2
            );
        }
    }

    #[test]
    fn retry_after_wins_when_longer_but_only_up_to_the_bound() {
        let b = Backoff::new(10 * MS, 20 * MS);
        let minute = Duration::from_secs(60);
        assert_eq!(
            b.honour(0, Some(Duration::from_secs(3)), minute),
            Duration::from_secs(3)
        );
        // A server asking for an hour gets the bound.
        assert_eq!(b.honour(0, Some(Duration::from_secs(3600)), minute), minute);
        // A shorter wish than our own draw changes nothing.
        assert!(b.honour(0, Some(MS / 2), minute) >= 5 * MS);
    }
}
