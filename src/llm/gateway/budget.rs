//! The budget: a sweep's ceiling on US dollars and tokens, checked before every live call.
//!
//! A call reserves an upper bound of what it can cost before it goes out — its prompt's bytes as
//! tokens (a BPE token is at least one byte, so this never under-counts) plus its `max_tokens` of
//! completion, priced — and settles to what it really cost when it comes back. A call whose
//! reservation would take spent + reserved past a limit is refused, so the limits are never passed,
//! even by the calls in flight together. The first refusal marks the budget as exhausted, which the
//! scheduler watches to start no new game; games in flight go on until one of their own calls is
//! refused ("stop at the hard cap").
//!
//! Cache hits cost nothing and never touch the budget. What was spent before this process (an earlier
//! run of the same sweep) is passed in at the start, from the ledger.

use std::sync::Mutex;

use tokio::sync::watch;

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

    /// Reserves `est` for one call, or refuses it (and marks the budget exhausted).
    pub fn reserve(&self, est: Spent) -> Result<Reservation<'_>, BudgetExceeded> {
        let Ok(mut st) = self.state.lock() else {
            return Err(self.refusal(
                "the budget's lock was poisoned".into(),
                est,
                Spent::default(),
            ));
        };
        let committed = Spent {
            usd: st.spent.usd + st.reserved.usd,
            tokens: st.spent.tokens + st.reserved.tokens,
        };
        if let Some(limit) = Budget::over(&self.limits, committed, est) {
            let spent = st.spent;
            drop(st);
            self.exhausted.send_replace(true);
            return Err(self.refusal(limit, est, spent));
        }
        st.reserved.usd += est.usd;
        st.reserved.tokens += est.tokens;
        Ok(Reservation {
            budget: self,
            held: est,
            settled: false,
        })
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

    #[test]
    fn reservations_in_flight_count_against_the_limit() {
        let b = Budget::new(
            BudgetLimits {
                max_usd: Some(1.0),
                max_tokens: None,
            },
            s(0.2, 0),
        );
        let r1 = b.reserve(s(0.5, 10)).expect("fits");
        // 0.2 spent + 0.5 reserved + 0.5 would pass 1.0.
        let err = b.reserve(s(0.5, 10)).err().expect("refused");
        assert!(err.limit.contains("max_usd"), "{err}");
        assert!(
            *b.exhausted().borrow(),
            "a refusal marks the budget exhausted"
        );
        r1.settle(s(0.1, 5));
        assert_eq!(b.spent(), s(0.30000000000000004, 5));
        // The reservation was released on settling: a call of up to 0.5 fits again.
        b.reserve(s(0.5, 1))
            .expect("fits after settling")
            .settle(s(0.5, 1));
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
            let _r = b.reserve(s(0.0, 80)).expect("fits");
            assert!(b.reserve(s(0.0, 30)).is_err());
        }
        b.reserve(s(0.0, 30))
            .expect("released on drop")
            .settle(s(0.0, 30));
        assert_eq!(b.spent().tokens, 30);
    }

    #[test]
    fn a_budget_spent_by_earlier_runs_starts_exhausted() {
        let b = Budget::new(
            BudgetLimits {
                max_usd: Some(1.0),
                max_tokens: None,
            },
            s(1.5, 0),
        );
        assert!(*b.exhausted().borrow());
    }
}
