//! The faults the server injects, in the order a request meets them: the concurrency limit, the
//! latency, random 429/500 errors from a seeded RNG, and malformed replies.

use std::sync::atomic::Ordering;

use rand::Rng;
use tokio::sync::SemaphorePermit;

use super::error::ApiError;
use super::{Shared, MALFORMED_REPLY};
use crate::llm::{tokens, ChatRequest, ChatResponse, TokenUsage};

/// An injected failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fault {
    RateLimited,
    ServerError,
}

impl Shared {
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

    /// Faults 2 and 3: the latency, then a random error.
    pub(super) async fn delay_then_maybe_fail(&self) -> Result<(), ApiError> {
        if !self.config.latency.is_zero() {
            tokio::time::sleep(self.config.latency).await;
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
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mockllm::MockConfig;

    #[test]
    fn the_same_fault_seed_gives_the_same_faults() {
        let config = MockConfig {
            error_rate: 0.5,
            fault_seed: 11,
            ..MockConfig::default()
        };
        let draws = |shared: &Shared| (0..64).map(|_| shared.draw_fault()).collect::<Vec<_>>();
        let a = draws(&Shared::new(config.clone()));
        assert_eq!(a, draws(&Shared::new(config)));
        assert!(a.contains(&None) && a.contains(&Some(Fault::RateLimited)));
        assert!(a.contains(&Some(Fault::ServerError)));
    }
}
