//! The budget: a sweep's ceiling on US dollars and tokens, checked before every live request.
//!
//! A request reserves an upper bound of what it can cost when it is about to go out — after its
//! concurrency slots, so that calls queued for a slot hold nothing — its prompt's bytes as tokens (a
//! BPE token is at least one byte, so this never under-counts) plus its `max_tokens` of completion,
//! priced; it settles to what it really cost when it comes back, and a request that ends any other
//! way (an error, a timeout, a cancelled caller) releases its reservation when the guard drops.
//! Spent + reserved never passes a limit, even with many requests in flight together.
//!
//! A request that does not fit is one of two cases:
//! - **busy**: it would fit beside what was spent, but the room is held by requests in flight. It
//!   waits for them to settle (they usually cost far less than their bound) and tries again; this
//!   ends, because a request with nothing else in flight either fits or is refused.
//! - **refused**: spent + its bound already passes a limit. It is refused, and the first refusal
//!   marks the budget as exhausted, which the scheduler watches to start no new game; games in flight
//!   go on until one of their own requests is refused ("stop at the hard cap").
//!
//! Cache hits cost nothing and never touch the budget. What was spent before this process (an earlier
//! run of the same sweep) is passed in at the start, from the ledger.

use std::sync::Mutex;

use tokio::sync::{watch, Notify};

/// A sweep's limits.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BudgetLimits {
    pub max_usd: Option<f64>,
    /// Prompt + completion tokens.
    pub max_tokens: Option<u64>,
}

/// Spent and reserved so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    pub usd: f64,
    pub tokens: u64,
}

/// Why a call was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("budget: the next call (up to ${est_usd:.4}, {est_tokens} tokens) would pass the limit ({limit}); spent ${spent_usd:.4} and {spent_tokens} tokens")]
pub struct BudgetExceeded {
    pub limit: String,
    pub est_usd: f64,
    pub est_tokens: u64,
    pub spent_usd: f64,
    pub spent_tokens: u64,
}

struct State {
    spent: Spent,
    reserved: Spent,
}

/// The budget of one sweep in this process.
pub struct Budget {
    limits: BudgetLimits,
    state: Mutex<State>,
    exhausted: watch::Sender<bool>,
    /// Woken whenever a reservation is settled or released: busy requests try again.
    released: Notify,
}

/// What one call holds of the budget until it settles; dropped unsettled (the call failed before an
/// answer), it is released.
pub struct Reservation<'a> {
    budget: &'a Budget,
    held: Spent,
    settled: bool,
}

impl Budget {
    /// A budget with `limits`, of which `already` was spent by earlier runs.
    pub fn new(limits: BudgetLimits, already: Spent) -> Budget {
        let over = Budget::over(&limits, already, Spent::default());
        Budget {
            limits,
            state: Mutex::new(State {
                spent: already,
                reserved: Spent::default(),
            }),
            exhausted: watch::Sender::new(over.is_some()),
            released: Notify::new(),
        }
    }

    /// The limit `spent + extra` passes, if any.
    fn over(limits: &BudgetLimits, spent: Spent, extra: Spent) -> Option<String> {
        if let Some(max) = limits.max_usd {
            if spent.usd + extra.usd > max {
                return Some(format!("max_usd = {max}"));
            }
        }
        if let Some(max) = limits.max_tokens {
            if spent.tokens + extra.tokens > max {
                return Some(format!("max_tokens = {max}"));
            }
        }
        None
    }

    /// Reserves `est` for one request, waiting while requests in flight hold the room it needs;
    /// refuses it (and marks the budget exhausted) when it would pass a limit beside what was spent.
    pub async fn reserve(&self, est: Spent) -> Result<Reservation<'_>, BudgetExceeded> {
        loop {
            // Registered before the check, so a release between the check and the wait wakes it.
            let released = self.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            if let Some(r) = self.try_reserve(est)? {
                return Ok(r);
            }
            released.await;
        }
    }

    /// Reserves `est` for one request now: `Ok(None)` when it is busy (it fits beside what was
    /// spent, but not beside what requests in flight hold), a refusal when it would pass a limit
    /// beside what was spent (and then the budget is marked exhausted).
    pub fn try_reserve(&self, est: Spent) -> Result<Option<Reservation<'_>>, BudgetExceeded> {
        let Ok(mut st) = self.state.lock() else {
            return Err(self.refusal(
                "the budget's lock was poisoned".into(),
                est,
                Spent::default(),
            ));
        };
        if let Some(limit) = Budget::over(&self.limits, st.spent, est) {
            let spent = st.spent;
            drop(st);
            self.exhausted.send_replace(true);
            return Err(self.refusal(limit, est, spent));
        }
        let committed = Spent {
            usd: st.spent.usd + st.reserved.usd,
            tokens: st.spent.tokens + st.reserved.tokens,
        };
        if Budget::over(&self.limits, committed, est).is_some() {
            return Ok(None);
        }
        st.reserved.usd += est.usd;
        st.reserved.tokens += est.tokens;
        Ok(Some(Reservation {
            budget: self,
            held: est,
            settled: false,
        }))
    }

    fn refusal(&self, limit: String, est: Spent, spent: Spent) -> BudgetExceeded {
        BudgetExceeded {
            limit,
            est_usd: est.usd,
            est_tokens: est.tokens,
            spent_usd: spent.usd,
            spent_tokens: spent.tokens,
        }
    }

    fn release(&self, held: Spent, actual: Option<Spent>) {
        if let Ok(mut st) = self.state.lock() {
            st.reserved.usd = (st.reserved.usd - held.usd).max(0.0);
            st.reserved.tokens = st.reserved.tokens.saturating_sub(held.tokens);
            if let Some(a) = actual {
                st.spent.usd += a.usd;
                st.spent.tokens += a.tokens;
            }
        }
        self.released.notify_waiters();
    }

    /// Adds what was spent without a reservation (a batch's answers, paid when it lands): over a
    /// limit, the budget is marked exhausted.
    pub fn charge(&self, actual: Spent) {
        let over = match self.state.lock() {
            Ok(mut st) => {
                st.spent.usd += actual.usd;
                st.spent.tokens += actual.tokens;
                Budget::over(&self.limits, st.spent, Spent::default()).is_some()
            }
            Err(_) => false,
        };
        if over {
            self.exhausted.send_replace(true);
        }
    }

    /// What was spent (settled calls, earlier runs included).
    pub fn spent(&self) -> Spent {
        self.state.lock().map(|s| s.spent).unwrap_or_default()
    }

    /// Whether a call has been refused: no new game should start.
    pub fn exhausted(&self) -> watch::Receiver<bool> {
        self.exhausted.subscribe()
    }

    pub fn limits(&self) -> BudgetLimits {
        self.limits
    }
}

impl Reservation<'_> {
    /// The call came back having cost `actual`.
    pub fn settle(mut self, actual: Spent) {
        self.settled = true;
        self.budget.release(self.held, Some(actual));
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.budget.release(self.held, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(usd: f64, tokens: u64) -> Spent {
        Spent { usd, tokens }
    }

    fn usd(max: f64) -> BudgetLimits {
        BudgetLimits {
            max_usd: Some(max),
            max_tokens: None,
        }
    }

    #[test]
    fn a_request_that_cannot_fit_beside_what_was_spent_is_refused_for_good() {
        let b = Budget::new(usd(1.0), s(0.2, 0));
        let r1 = b.try_reserve(s(0.5, 10)).expect("fits").expect("granted");
        // 0.2 spent + 0.9 passes 1.0 whatever is in flight.
        let err = b.try_reserve(s(0.9, 10)).err().expect("refused");
        assert!(err.limit.contains("max_usd"), "{err}");
        assert!(
            *b.exhausted().borrow(),
            "a refusal marks the budget exhausted"
        );
        r1.settle(s(0.1, 5));
        assert_eq!(b.spent(), s(0.30000000000000004, 5));
    }

    #[test]
    fn a_request_crowded_out_by_requests_in_flight_is_busy_not_refused() {
        let b = Budget::new(usd(1.0), s(0.2, 0));
        let r1 = b.try_reserve(s(0.5, 10)).expect("fits").expect("granted");
        // 0.2 spent + 0.5 held + 0.5 would pass 1.0, but 0.2 + 0.5 alone does not.
        assert!(b.try_reserve(s(0.5, 10)).expect("not refused").is_none());
        assert!(!*b.exhausted().borrow(), "being busy ends nothing");
        r1.settle(s(0.1, 5));
        b.try_reserve(s(0.5, 1))
            .expect("fits")
            .expect("granted after the first settled")
            .settle(s(0.5, 1));
    }

    #[tokio::test]
    async fn a_busy_request_waits_for_the_room_and_gets_it() {
        let b = std::sync::Arc::new(Budget::new(usd(1.0), Spent::default()));
        let r1 = b.try_reserve(s(0.8, 0)).expect("fits").expect("granted");
        let waiting = tokio::spawn({
            let b = b.clone();
            async move { b.reserve(s(0.8, 0)).await.map(|r| r.settle(s(0.3, 0))) }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "it waits while the room is held");
        r1.settle(s(0.2, 0));
        waiting
            .await
            .expect("task")
            .expect("granted once the first settled");
        assert!((b.spent().usd - 0.5).abs() < 1e-9);
        assert!(!*b.exhausted().borrow());
    }

    #[test]
    fn an_unsettled_reservation_is_released() {
        let b = Budget::new(
            BudgetLimits {
                max_usd: None,
                max_tokens: Some(100),
            },
            Spent::default(),
        );
        {
            let _r = b.try_reserve(s(0.0, 80)).expect("fits");
            assert!(b.try_reserve(s(0.0, 30)).expect("busy").is_none());
        }
        b.try_reserve(s(0.0, 30))
            .expect("fits")
            .expect("released on drop")
            .settle(s(0.0, 30));
        assert_eq!(b.spent().tokens, 30);
    }

    #[test]
    fn a_budget_spent_by_earlier_runs_starts_exhausted() {
        let b = Budget::new(usd(1.0), s(1.5, 0));
        assert!(*b.exhausted().borrow());
    }
}
