//! Transient failures: the per-attempt timeout, retries with backoff and the server's Retry-After.
//!
//! One loop serves chat and embedding calls alike. Every retry is counted in the call's [`Usage`] and in
//! metrics, and every wait is visible here: providers never retry on their own.

use std::future::Future;
use std::time::Duration;

use rand::Rng;

use super::{GatewayConfig, LlmError};
use crate::llm::provider::ProviderError;
use crate::llm::types::{CallTags, Usage};
use crate::telemetry as tm;

/// The wait before retry number `attempt` (0-based): full jitter over an exponential ceiling, but never
/// less than what the server asked for.
pub fn backoff(config: &GatewayConfig, attempt: u32, retry_after: Option<Duration>) -> Duration {
    let ceiling = config
        .backoff_base
        .saturating_mul(1u32 << attempt.min(16))
        .min(config.backoff_max);
    let jittered = ceiling.mul_f64(rand::thread_rng().gen_range(0.5..=1.0));
    match retry_after {
        Some(ra) => jittered.max(ra),
        None => jittered,
    }
}

/// Who is being called, for the error and the metrics of a failed attempt.
pub(super) struct Target<'a> {
    pub provider: &'static str,
    pub model: &'a str,
    pub tags: &'a CallTags,
}

/// Why one attempt failed.
pub(super) enum AttemptError {
    /// The provider's failure: retried when transient.
    Provider(ProviderError),
    /// The gateway's own (the shared limits could not be checked): it already retried what it could,
    /// so the call ends with it.
    Gateway(LlmError),
}

impl From<ProviderError> for AttemptError {
    fn from(e: ProviderError) -> Self {
        AttemptError::Provider(e)
    }
}

/// Runs `attempt` under the per-attempt timeout until it succeeds, fails for good (a refusal, or the
/// gateway's own error), or the retries run out. A failure's error carries everything `usage` holds
/// by then.
pub(super) async fn with_retries<T, F, Fut>(
    config: &GatewayConfig,
    target: Target<'_>,
    usage: &mut Usage,
    mut attempt: F,
) -> Result<T, LlmError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, AttemptError>>,
{
    let mut n = 0;
    loop {
        let result = match tokio::time::timeout(config.timeout, attempt()).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(AttemptError::Provider(e))) => Err(e),
            Ok(Err(AttemptError::Gateway(e))) => return Err(e),
            Err(_) => Err(ProviderError::Timeout(config.timeout)),
        };
        match result {
            Ok(v) => return Ok(v),
            Err(e) if e.retryable() && n < config.max_retries => {
                usage.retries += 1;
                metrics::counter!(tm::LLM_RETRIES, "model" => target.model.to_string(), "reason" => e.reason()).increment(1);
                tracing::debug!(purpose = %target.tags.purpose, attempt = n, error = %e, "retrying LLM call");
                tokio::time::sleep(backoff(config, n, e.retry_after())).await;
                n += 1;
            }
            Err(e) if e.retryable() => {
                return Err(LlmError::Exhausted {
                    purpose: target.tags.purpose.clone(),
                    provider: target.provider,
                    attempts: n + 1,
                    last: e,
                    usage: *usage,
                });
            }
            Err(e) => {
                return Err(LlmError::Refused {
                    purpose: target.tags.purpose.clone(),
                    provider: target.provider,
                    error: e,
                    usage: *usage,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_honours_retry_after_and_caps() {
        let c = GatewayConfig {
            backoff_base: Duration::from_millis(100),
            backoff_max: Duration::from_millis(400),
            ..Default::default()
        };
        for attempt in 0..10 {
            let d = backoff(&c, attempt, None);
            assert!(d <= Duration::from_millis(400), "{d:?}");
        }
        assert!(backoff(&c, 0, Some(Duration::from_secs(3))) >= Duration::from_secs(3));
    }
}
