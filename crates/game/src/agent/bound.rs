//! The per-game bound on model calls in flight.
//!
//! A game issues its independent calls together (a stage's sensor readings, every ballot, every
//! evaluation answer), which can be a hundred calls at once. One bound per game, shared by its
//! characters, its evaluator and its judge, keeps a single game from flooding the endpoint (and a
//! node of many games fair between them). Each holder takes a permit around one gateway call and
//! nothing else, so no holder ever waits for a permit while holding one: the bound cannot deadlock.
//! The bound changes when calls are made, never what they answer: the transcript is the same at any
//! bound, and a bound of 1 makes calls one at a time, as the game did before calls were issued together.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{Semaphore, SemaphorePermit};

/// Runs units of work that do not depend on one another and returns their results in the order given,
/// whatever order they finish in. Every place a game issues independent calls together goes through
/// here; callers then record the results in that order, which is what keeps the transcript the same.
///
/// The units run concurrently within the calling task (no task is spawned, so they may borrow from
/// the caller); their model calls wait for places under the game's [`CallBound`].
pub async fn together<F: Future>(units: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    futures::future::join_all(units).await
}

/// The bound's default: enough to overlap a stage's sensor readings or a wave of ballots, small enough
/// that one game leaves room on an endpoint's concurrency limit for others.
pub const DEFAULT_CALL_CONCURRENCY: usize = 16;

/// A game's bound on model calls in flight (a cheap handle; clones share the bound).
#[derive(Debug, Clone)]
pub struct CallBound(Arc<Semaphore>);

impl CallBound {
    /// At most `calls` at once; 0 is read as 1 and anything above the semaphore's limit as that limit
    /// (in effect unbounded).
    pub fn new(calls: usize) -> CallBound {
        CallBound(Arc::new(Semaphore::new(
            calls.clamp(1, Semaphore::MAX_PERMITS),
        )))
    }

    /// Waits for a permit to make one call; the call may proceed while the permit lives. The semaphore is
    /// never closed, so `None` (no permit) cannot happen in practice; the call then proceeds unbounded
    /// rather than not at all.
    pub async fn enter(&self) -> Option<SemaphorePermit<'_>> {
        self.0.acquire().await.ok()
    }
}

impl Default for CallBound {
    fn default() -> Self {
        CallBound::new(DEFAULT_CALL_CONCURRENCY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_bound_admits_that_many_calls_at_once() {
        let bound = CallBound::new(2);
        let a = bound.enter().await;
        let b = bound.enter().await;
        assert!(a.is_some() && b.is_some());
        let third = tokio::time::timeout(std::time::Duration::from_millis(20), bound.enter()).await;
        assert!(third.is_err(), "a third call waits");
        drop(a);
        assert!(
            bound.enter().await.is_some(),
            "a finished call frees a place"
        );
        assert!(CallBound::new(0).enter().await.is_some(), "0 is read as 1");
    }
}
