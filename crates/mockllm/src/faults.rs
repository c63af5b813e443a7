//! The faults the server injects, in the order a request meets them: the concurrency limit, the
//! latency, random 429/500 errors from a seeded RNG, and malformed replies.
//!
//! The concurrency limit refuses what is over it (429), as a hosted provider does, or — with
//! `queue` — makes it wait for a slot, as llama.cpp's server and vLLM do. A queued request whose
//! client gave up (a timeout) still runs to its end and holds its slot meanwhile, as those servers'
//! requests do: what a client abandons still delays everything queued behind it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use tokio::sync::SemaphorePermit;

use super::error::ApiError;
use super::{MockState, MALFORMED_REPLY};
use sleuth_llm::{tokens, ChatRequest, ChatResponse, TokenUsage};

/// An injected failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fault {
    RateLimited,
    ServerError,
}

impl MockState {
    /// Fault 1: the concurrency limit. The permit (if any) must be held until the answer is built.
    pub(super) fn admit(&self) -> Result<Option<SemaphorePermit<'_>>, ApiError> {
        let Some(limiter) = &self.limiter else {
            return Ok(None);
        };
        match limiter.try_acquire() {
            Ok(permit) => Ok(Some(permit)),
            Err(_) => {
                self.counters.rate_limited.fetch_add(1, Ordering::Relaxed);
                Err(ApiError::rate_limited(
                    format!(
                        "Rate limit reached: at most {} concurrent requests",
                        self.config.max_concurrency.unwrap_or(0)
                    ),
                    self.config.retry_after_ms,
                ))
            }
        }
    }

    /// Faults 1 to 3 in order. Over the limit, a request gets 429 at once, or with `queue` waits for
    /// a slot in a task of its own that runs to its end even if the client goes away (the permit
    /// returned is then `None`: the slot was held, and given back, by that task).
    pub(super) async fn admit_then_delay(
        self: &Arc<Self>,
    ) -> Result<Option<SemaphorePermit<'_>>, ApiError> {
        if !(self.config.queue && self.limiter.is_some()) {
            let permit = self.admit()?;
            self.delay_then_maybe_fail().await?;
            return Ok(permit);
        }
        let me = Arc::clone(self);
        let job = tokio::spawn(async move {
            let _slot = match &me.limiter {
                Some(l) => l.acquire().await.ok(),
                None => None,
            };
            me.delay_then_maybe_fail().await
        });
        match job.await {
            Ok(done) => done.map(|()| None),
            Err(e) => Err(ApiError::server_error(
                format!("sleuth mock-llm: a queued request failed: {e}"),
                self.config.retry_after_ms,
            )),
        }
    }

    /// Faults 2 and 3: the latency (with its jitter), then a random error.
    pub(super) async fn delay_then_maybe_fail(&self) -> Result<(), ApiError> {
        let wait = self.config.latency + self.draw_jitter();
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        match self.draw_fault() {
            None => Ok(()),
            Some(Fault::RateLimited) => {
                self.counters.rate_limited.fetch_add(1, Ordering::Relaxed);
                Err(ApiError::rate_limited(
                    "Rate limit reached (injected by sleuth mock-llm)".into(),
                    self.config.retry_after_ms,
                ))
            }
            Some(Fault::ServerError) => {
                self.counters.server_errors.fetch_add(1, Ordering::Relaxed);
                Err(ApiError::server_error(
                    "The server had an error while processing your request (injected by sleuth mock-llm)"
                        .into(),
                    self.config.retry_after_ms,
                ))
            }
        }
    }

    /// The extra wait of one request: uniform in `0..=latency_jitter` (microsecond steps), from the fault
    /// RNG. No draw without jitter, so the fault sequence of a seed stays what it was.
    fn draw_jitter(&self) -> Duration {
        let most = u64::try_from(self.config.latency_jitter.as_micros()).unwrap_or(u64::MAX);
        if most == 0 {
            return Duration::ZERO;
        }
        let mut rng = match self.faults.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        Duration::from_micros(rng.gen_range(0..=most))
    }

    /// One draw decides whether the request fails, a second which way. Synchronous on purpose: the lock
    /// guard cannot live across an await.
    fn draw_fault(&self) -> Option<Fault> {
        // Nothing can panic while the lock is held, so poisoning cannot happen; recover rather than unwrap.
        let mut rng = match self.faults.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        if rng.gen::<f64>() >= self.config.error_rate {
            return None;
        }
        Some(if rng.gen::<bool>() {
            Fault::RateLimited
        } else {
            Fault::ServerError
        })
    }

    /// Fault 4: the first `malformed_first` answers are replaced (the counter only ever grows, so
    /// concurrent requests still get exactly that many). Called once per chat completion that reached
    /// the model.
    pub(super) fn malformed(&self, req: &ChatRequest) -> Option<ChatResponse> {
        let served = self
            .counters
            .malformed_slots
            .fetch_add(1, Ordering::Relaxed);
        if served >= self.config.malformed_first {
            return None;
        }
        self.counters.malformed.fetch_add(1, Ordering::Relaxed);
        Some(ChatResponse {
            content: MALFORMED_REPLY.to_string(),
            usage: Some(TokenUsage {
                prompt_tokens: tokens::count_messages(&req.messages),
                completion_tokens: tokens::count(MALFORMED_REPLY),
                cached_tokens: 0,
            }),
            logprobs: None,
            notes: Default::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MockConfig;

    #[test]
    fn the_same_fault_seed_gives_the_same_faults() {
        let config = MockConfig {
            error_rate: 0.5,
            fault_seed: 11,
            ..MockConfig::default()
        };
        let draws = |shared: &MockState| (0..64).map(|_| shared.draw_fault()).collect::<Vec<_>>();
        let a = draws(&MockState::new(config.clone()));
        assert_eq!(a, draws(&MockState::new(config)));
        assert!(a.contains(&None) && a.contains(&Some(Fault::RateLimited)));
        assert!(a.contains(&Some(Fault::ServerError)));
    }

    #[test]
    fn jitter_is_seeded_and_within_its_bound() {
        let config = MockConfig {
            latency_jitter: Duration::from_millis(30),
            fault_seed: 5,
            ..MockConfig::default()
        };
        let draws = |shared: &MockState| (0..64).map(|_| shared.draw_jitter()).collect::<Vec<_>>();
        let a = draws(&MockState::new(config.clone()));
        assert_eq!(a, draws(&MockState::new(config)), "same seed, same waits");
        assert!(a.iter().all(|d| *d <= Duration::from_millis(30)));
        assert!(a.iter().any(|d| *d != a[0]), "the waits vary");
        let none = MockState::new(MockConfig::default());
        assert_eq!(none.draw_jitter(), Duration::ZERO);
    }
}
