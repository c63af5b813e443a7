//! Limits and a budget kept outside this process, so that many processes respect them together.
//!
//! A cluster runs one gateway per worker process. Each keeps its own limits (`limits.rs`) and, when
//! it has one, its own budget (`budget.rs`): those bound what one process does. What the endpoint
//! allows and what the sweep may spend hold for all workers together, so they live where every
//! worker sees them — the cluster's Redis (`cluster::gate::RedisLimits`). This module is the gateway's
//! side of that: a trait the pipeline calls in addition to the local layers, and the guards that hold
//! a reservation or a slot for exactly as long as a call needs it.
//!
//! The guards release from a synchronous `Drop`, because a call can end on any path — an answer, an
//! error, a panic in a caller, a cancelled task — and every one of them must give back what it held.
//! An implementation whose release needs the network spawns it (`Settle`, `SharedSlot::new`); what it
//! cannot release (no runtime left, the store unreachable) must lapse on its own, which is why the
//! cluster's reservations and slots are leases with a time to live.

use futures::future::BoxFuture;

use super::budget::{BudgetExceeded, Spent};

/// Limits and a budget kept outside this process (a cluster's Redis), so that many processes respect
/// them together. The gateway calls them after the local budget, slot and rate limiter of the same
/// call, never instead of them.
pub trait SharedLimits: Send + Sync {
    /// Reserves `est` (an upper bound of one call's cost) of the sweep's budget until the returned
    /// reservation settles or drops; a refusal becomes `LlmError::Budget`.
    fn reserve(&self, est: Spent) -> BoxFuture<'_, Result<SharedReservation, SharedError>>;

    /// A slot of `model`'s cluster-wide concurrency limit, held until the returned guard drops;
    /// `None` when the model has no such limit. Waits while every slot is taken. `share` in (0, 1]
    /// is this process's adaptive limit as a share of its ceiling: the cluster-wide limit it asks
    /// under is scaled by it, so the cluster backs off an endpoint its workers see overloaded.
    fn slot<'a>(
        &'a self,
        model: &'a str,
        share: f64,
    ) -> BoxFuture<'a, Result<Option<SharedSlot>, SharedError>>;

    /// Waits until one more request of about `tokens` tokens fits `model`'s cluster-wide RPM and
    /// TPM, and takes its share. Called per attempt, so a retry queues again.
    fn admit<'a>(&'a self, model: &'a str, tokens: u64) -> BoxFuture<'a, Result<(), SharedError>>;
}

/// Why the shared limits said no.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SharedError {
    /// The sweep's budget has no room for the call (the gateway adds the call's purpose).
    #[error(transparent)]
    Budget(#[from] BudgetExceeded),
    /// The limits could not be checked: the store was unreachable through every retry, or answered
    /// something unusable. The call is not made — making it unchecked could pass a limit that other
    /// processes are keeping.
    #[error("shared limits unavailable ({what}): {message}")]
    Unavailable { what: &'static str, message: String },
}

/// What an implementation does when a reservation's call ends.
pub trait Settle: Send {
    /// The call ended. `actual` is what it cost; `None` when it ended without an answer (nothing was
    /// billed), which releases the reservation. Runs inside `Drop`, so it must not block: anything
    /// that needs the network is spawned.
    fn settle(self: Box<Self>, actual: Option<Spent>);
}

/// What one call holds of the shared budget until it settles; dropped unsettled (the call failed
/// before an answer, or was cancelled), it is released.
#[must_use = "a reservation dropped at once is released at once"]
pub struct SharedReservation {
    inner: Option<Box<dyn Settle>>,
}

impl SharedReservation {
    /// A reservation that `settle` completes.
    pub fn new(settle: impl Settle + 'static) -> SharedReservation {
        SharedReservation {
            inner: Some(Box::new(settle)),
        }
    }

    /// A reservation that holds nothing (a sweep without limits needs no bookkeeping).
    pub fn none() -> SharedReservation {
        SharedReservation { inner: None }
    }

    /// The call came back having cost `actual`.
    pub fn settle(mut self, actual: Spent) {
        if let Some(s) = self.inner.take() {
            s.settle(Some(actual));
        }
    }
}

impl Drop for SharedReservation {
    fn drop(&mut self) {
        if let Some(s) = self.inner.take() {
            s.settle(None);
        }
    }
}

/// One slot of a model's shared concurrency limit, held until dropped.
#[must_use = "a slot dropped at once is released at once"]
pub struct SharedSlot {
    /// Whatever the implementation releases (and stops renewing) in its own `Drop`.
    _lease: Box<dyn Send + Sync>,
}

impl SharedSlot {
    /// A slot that is held while `lease` lives; its `Drop` gives the slot back.
    pub fn new(lease: impl Send + Sync + 'static) -> SharedSlot {
        SharedSlot {
            _lease: Box::new(lease),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    struct Record(Arc<Mutex<Vec<Option<Spent>>>>);

    impl Settle for Record {
        fn settle(self: Box<Self>, actual: Option<Spent>) {
            self.0.lock().expect("lock").push(actual);
        }
    }

    #[test]
    fn a_reservation_settles_once_and_a_dropped_one_releases() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let cost = Spent {
            usd: 0.5,
            tokens: 7,
        };
        SharedReservation::new(Record(seen.clone())).settle(cost);
        drop(SharedReservation::new(Record(seen.clone())));
        drop(SharedReservation::none());
        assert_eq!(*seen.lock().expect("lock"), vec![Some(cost), None]);
    }
}
