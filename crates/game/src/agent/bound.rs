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

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::{Semaphore, SemaphorePermit};

/// Runs units of work that do not depend on one another and returns their results in the order given,
/// whatever order they finish in. Every place a game issues independent calls together goes through
/// here; callers then record the results in that order, which is what keeps the transcript the same.
///
/// The units run concurrently within the calling task (no task is spawned, so they may borrow from
/// the caller), but no more of them are started at once than `bound` admits calls: a unit builds its
/// prompt when it starts, so a batch larger than the bound (an evaluation asks every question of every
/// character at once) would otherwise hold every prompt, and a request task for each, while most of
/// them wait for a place. A unit is started as soon as any running one finishes. The bound's permits
/// are taken by the calls inside the units, never here, so nesting batches cannot deadlock.
pub async fn together<F: Future>(
    bound: &CallBound,
    units: impl IntoIterator<Item = F>,
) -> Vec<F::Output> {
    let mut units = units.into_iter().enumerate();
    let mut out: Vec<(usize, F::Output)> = Vec::with_capacity(units.size_hint().0);
    let mut running = FuturesUnordered::new();
    for (i, unit) in units.by_ref().take(bound.calls) {
        running.push(indexed(i, unit));
    }
    while let Some(done) = running.next().await {
        out.push(done);
        if let Some((i, unit)) = units.next() {
            running.push(indexed(i, unit));
        }
    }
    out.sort_unstable_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, o)| o).collect()
}

/// A unit's result with its place in the batch.
async fn indexed<F: Future>(i: usize, unit: F) -> (usize, F::Output) {
    (i, unit.await)
}

/// The bound's default: enough to overlap a stage's sensor readings or a wave of ballots, small enough
/// that one game leaves room on an endpoint's concurrency limit for others.
pub const DEFAULT_CALL_CONCURRENCY: usize = 16;

/// A game's bound on model calls in flight (a cheap handle; clones share the bound).
#[derive(Debug, Clone)]
pub struct CallBound {
    permits: Arc<Semaphore>,
    /// How many calls the bound admits at once (the semaphore's size).
    calls: usize,
}

impl CallBound {
    /// At most `calls` at once; 0 is read as 1 and anything above the semaphore's limit as that limit
    /// (in effect unbounded).
    pub fn new(calls: usize) -> CallBound {
        let calls = calls.clamp(1, Semaphore::MAX_PERMITS);
        CallBound {
            permits: Arc::new(Semaphore::new(calls)),
            calls,
        }
    }

    /// Waits for a permit to make one call; the call may proceed while the permit lives. The semaphore is
    /// never closed, so `None` (no permit) cannot happen in practice; the call then proceeds unbounded
    /// rather than not at all.
    pub async fn enter(&self) -> Option<SemaphorePermit<'_>> {
        self.permits.acquire().await.ok()
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

    #[tokio::test]
    async fn a_batch_starts_no_more_units_than_the_bound_admits_and_keeps_their_order() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let bound = CallBound::new(3);
        let (running, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let units = (0..10u64).map(|i| {
            let (running, most) = (&running, &most);
            async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                // Later units finish first, so the results come back out of order.
                tokio::time::sleep(std::time::Duration::from_millis(10 * (10 - i))).await;
                running.fetch_sub(1, Ordering::SeqCst);
                i * i
            }
        });
        let out = together(&bound, units).await;
        assert_eq!(out, (0..10u64).map(|i| i * i).collect::<Vec<_>>());
        assert_eq!(
            most.load(Ordering::SeqCst),
            3,
            "three units at a time, never more"
        );
    }
}
