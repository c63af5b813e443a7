//! A model's concurrency limit, adapting to what the endpoint shows (AIMD, as TCP's congestion
//! window and inspect_ai's adaptive connections do).
//!
//! One [`Concurrency`] per model per process: every game of the process shares it (the gateway is
//! node-wide). It starts at the model's initial limit and moves between 1 and its ceiling
//! (`max_concurrency`):
//!
//! - **Additive increase** while latency holds: each answer adds `1 / limit` (one slot per window
//!   of `limit` answers), but only while callers are waiting for a slot (a limit nobody reaches is
//!   not raised) and while the smoothed latency stays within twice its baseline (the fastest
//!   answers seen lately).
//! - **Multiplicative decrease** on the endpoint's signs of overload: a 429 or a timed-out attempt
//!   halves the limit; an answer slower than half the per-attempt timeout (latency growing towards
//!   a timeout, as it does while requests queue at a saturated server) takes a quarter off.
//!   Only attempts sent after the last decrease can decrease it again — one cut per window, as in
//!   TCP — so the many requests that were already queued behind the overload do not drive the limit
//!   to 1 by themselves.
//!
//! Latency growth is measured against half the timeout rather than against the baseline alone,
//! because a model's latency varies tenfold with the length of its answers: a latency signal
//! relative to the fastest answer would throttle a healthy endpoint. The baseline only stops
//! increases.
//!
//! The current limit is the gauge `sleuth_llm_concurrency_limit{model}`. A limit that does not
//! adapt (`adaptive = false`) is a plain fair semaphore of `max_concurrency` slots.

use std::sync::Mutex;
use std::time::Duration;

use super::fair::{FairSemaphore, Permit};
use sleuth_base::telemetry as tm;

/// What decreases take off: a refusal or a timeout halves the limit, a slow answer a quarter.
const OVERLOAD_FACTOR: f64 = 0.5;
const SLOW_FACTOR: f64 = 0.75;
/// Increases stop while the smoothed latency is above this multiple of its baseline.
const LATENCY_HOLD: f64 = 2.0;
/// Weight of a new latency in the smoothed one.
const EWMA_WEIGHT: f64 = 0.3;
/// How fast the baseline forgets a lucky fast answer (the share of the gap closed per answer).
const BASELINE_DRIFT: f64 = 0.02;

/// What one attempt showed of the endpoint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Outcome {
    /// Answered after this long (measured from when the request was sent).
    Answered(Duration),
    /// Refused for load (HTTP 429) or timed out: the endpoint has more than it can take.
    Overloaded,
    /// Any other failure: says nothing about load.
    Failed,
}

struct State {
    limit: f64,
    /// Bumped by every decrease; a slot remembers the epoch it was taken in.
    epoch: u64,
    /// Seconds.
    baseline: Option<f64>,
    smoothed: Option<f64>,
}

/// The concurrency limit of one model (see the module documentation).
pub struct Concurrency {
    model: String,
    sem: FairSemaphore,
    ceiling: u32,
    adaptive: bool,
    state: Mutex<State>,
}

/// One slot of a model's limit, held while one attempt's request is out.
pub struct Slot {
    _permit: Permit,
    epoch: u64,
}

impl Concurrency {
    /// A limit of `model` starting at `start` slots, never above `ceiling`; fixed at `ceiling`
    /// unless `adaptive`.
    pub fn new(model: &str, start: u32, ceiling: u32, adaptive: bool) -> Concurrency {
        let ceiling = ceiling.max(1);
        let start = if adaptive {
            start.clamp(1, ceiling)
        } else {
            ceiling
        };
        let c = Concurrency {
            model: model.to_string(),
            sem: FairSemaphore::new(start as usize),
            ceiling,
            adaptive,
            state: Mutex::new(State {
                limit: f64::from(start),
                epoch: 0,
                baseline: None,
                smoothed: None,
            }),
        };
        c.publish(start);
        c
    }

    /// A slot for one attempt of a call of `arm` (fair between arms), waiting while the limit is
    /// reached.
    pub async fn slot(&self, arm: &str) -> Slot {
        let permit = self.sem.acquire(arm).await;
        let epoch = self.state.lock().map(|s| s.epoch).unwrap_or(0);
        Slot {
            _permit: permit,
            epoch,
        }
    }

    /// The limit now.
    pub fn limit(&self) -> u32 {
        self.state
            .lock()
            .map(|s| s.limit.floor() as u32)
            .unwrap_or(self.ceiling)
            .max(1)
    }

    /// The highest the limit can go.
    pub fn ceiling(&self) -> u32 {
        self.ceiling
    }

    /// The limit now as a share of its ceiling, in (0, 1]: what a cluster's shared slots are scaled
    /// by, so that the cluster-wide limit shrinks with the endpoint's load as this one does.
    pub fn share(&self) -> f64 {
        f64::from(self.limit()) / f64::from(self.ceiling)
    }

    /// Learns from one attempt made under `slot`; `timeout` is the per-attempt timeout.
    pub fn learn(&self, slot: &Slot, outcome: Outcome, timeout: Duration) {
        if !self.adaptive {
            return;
        }
        let demand = self.sem.waiting() > 0;
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        let before = st.limit.floor() as u32;
        let cut = |st: &mut State, factor: f64, why: &'static str| {
            if slot.epoch == st.epoch {
                st.limit = (st.limit * factor).max(1.0);
                st.epoch += 1;
                tracing::info!(model = %self.model, limit = st.limit.floor(), why, "lowering the model's concurrency limit");
            }
        };
        match outcome {
            Outcome::Failed => return,
            Outcome::Overloaded => cut(
                &mut st,
                OVERLOAD_FACTOR,
                "the endpoint refused or timed out",
            ),
            Outcome::Answered(latency) => {
                let secs = latency.as_secs_f64();
                let baseline = match st.baseline {
                    Some(b) if secs < b => secs,
                    Some(b) => b + (secs - b) * BASELINE_DRIFT,
                    None => secs,
                };
                let smoothed = match st.smoothed {
                    Some(s) => s + (secs - s) * EWMA_WEIGHT,
                    None => secs,
                };
                st.baseline = Some(baseline);
                st.smoothed = Some(smoothed);
                if latency > timeout / 2 {
                    cut(&mut st, SLOW_FACTOR, "answers are nearing the timeout");
                } else if demand && smoothed <= baseline * LATENCY_HOLD {
                    st.limit = (st.limit + 1.0 / st.limit).min(f64::from(self.ceiling));
                }
            }
        }
        let after = st.limit.floor() as u32;
        drop(st);
        if after != before {
            self.sem.set_limit(after as usize);
            self.publish(after);
        }
    }

    fn publish(&self, limit: u32) {
        metrics::gauge!(tm::LLM_CONCURRENCY_LIMIT, "model" => self.model.clone())
            .set(f64::from(limit));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);
    const TIMEOUT: Duration = Duration::from_secs(10);

    #[tokio::test]
    async fn overload_halves_once_per_window_and_the_floor_is_one() {
        let c = Concurrency::new("m", 8, 8, true);
        let (a, b) = (c.slot("x").await, c.slot("x").await);
        c.learn(&a, Outcome::Overloaded, TIMEOUT);
        assert_eq!(c.limit(), 4);
        // Sent before the cut: it says nothing new.
        c.learn(&b, Outcome::Overloaded, TIMEOUT);
        assert_eq!(c.limit(), 4);
        drop((a, b));
        for _ in 0..5 {
            let s = c.slot("x").await;
            c.learn(&s, Outcome::Overloaded, TIMEOUT);
        }
        assert_eq!(c.limit(), 1);
    }

    #[tokio::test]
    async fn it_grows_back_only_while_callers_wait_and_latency_holds() {
        let c = std::sync::Arc::new(Concurrency::new("m", 1, 3, true));
        // Nobody waits: answers do not raise it.
        for _ in 0..5 {
            let s = c.slot("x").await;
            c.learn(&s, Outcome::Answered(S), TIMEOUT);
        }
        assert_eq!(c.limit(), 1);
        let held = c.slot("x").await;
        let waiter = tokio::spawn({
            let c = c.clone();
            async move { c.slot("y").await }
        });
        while c.sem.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        c.learn(&held, Outcome::Answered(S), TIMEOUT);
        assert_eq!(
            c.limit(),
            2,
            "one answer at limit 1 with a waiter adds a slot"
        );
        let _second = waiter.await.expect("the waiter got the new slot");
        // A slow answer (past half the timeout) cuts a quarter, never above the ceiling.
        c.learn(&held, Outcome::Answered(TIMEOUT * 6 / 10), TIMEOUT);
        assert_eq!(c.limit(), 1);
    }

    #[tokio::test]
    async fn a_fixed_limit_never_moves() {
        let c = Concurrency::new("m", 2, 5, false);
        assert_eq!(c.limit(), 5);
        let s = c.slot("x").await;
        c.learn(&s, Outcome::Overloaded, TIMEOUT);
        assert_eq!(c.limit(), 5);
    }
}
