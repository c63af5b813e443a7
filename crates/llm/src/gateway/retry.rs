//! Transient failures: the per-attempt timeout, retries with backoff and the server's Retry-After.
//!
//! The retry loop itself is the pipeline's (`pipeline::attempts`), because each attempt first
//! waits for its slot, its budget and its rate — waits that are not the provider's and must never
//! count against the per-attempt timeout nor become a retry. This module holds what the loop asks
//! after a failed attempt: whether to try again and after how long (the one [`sleuth_base::backoff`],
//! equal jitter, with the server's Retry-After honoured up to [`GatewayConfig::max_retry_after`]),
//! and the error a call ends with. Every retry is counted in the call's [`Usage`] and in metrics,
//! and every wait is visible here: providers never retry on their own.

use std::future::Future;
use std::time::Duration;

use super::{GatewayConfig, LlmError};
use crate::provider::ProviderError;
use crate::types::{CallTags, Usage};
use sleuth_base::backoff::Backoff;
use sleuth_base::telemetry as tm;

/// The wait before retry number `attempt` (0-based): equal jitter over a doubling ceiling
/// ([`sleuth_base::backoff`]), but never less than what the server asked for, up to the config's bound.
pub fn backoff(config: &GatewayConfig, attempt: u32, retry_after: Option<Duration>) -> Duration {
    Backoff::new(config.backoff_base, config.backoff_max).honour(
        attempt,
        retry_after,
        config.max_retry_after,
    )
}

/// Who is being called, for the error and the metrics of a failed attempt.
pub(super) struct Target<'a> {
    pub provider: &'static str,
    pub model: &'a str,
    pub tags: &'a CallTags,
}

/// The provider's part of one attempt under the per-attempt timeout, which starts here: when the
/// request is sent, after every local and shared wait.
pub(super) async fn timed<T>(
    config: &GatewayConfig,
    request: impl Future<Output = Result<T, ProviderError>>,
) -> Result<T, ProviderError> {
    match tokio::time::timeout(config.timeout, request).await {
        Ok(r) => r,
        Err(_) => Err(ProviderError::Timeout(config.timeout)),
    }
}

/// What follows a failed attempt.
pub(super) enum Next {
    /// Try again after this wait.
    Retry(Duration),
    /// The call ends with this error.
    Fail(LlmError),
}

/// Decides what follows failed attempt number `n` (0-based): a retry (counted in `usage` and in
/// metrics) while the error is transient and retries are left, else the call's error, carrying
/// everything `usage` holds by then.
pub(super) fn after_failure(
    config: &GatewayConfig,
    target: &Target<'_>,
    usage: &mut Usage,
    n: u32,
    e: ProviderError,
) -> Next {
    if e.retryable() && n < config.max_retries {
        usage.retries += 1;
        metrics::counter!(tm::LLM_RETRIES, "model" => target.model.to_string(), "reason" => e.reason()).increment(1);
        tracing::debug!(purpose = %target.tags.purpose, attempt = n, error = %e, "retrying LLM call");
        return Next::Retry(backoff(config, n, e.retry_after()));
    }
    if e.retryable() {
        return Next::Fail(LlmError::Exhausted {
            purpose: target.tags.purpose.clone(),
            provider: target.provider,
            attempts: n + 1,
            last: e,
            usage: *usage,
        });
    }
    Next::Fail(LlmError::Refused {
        purpose: target.tags.purpose.clone(),
        provider: target.provider,
        error: e,
        usage: *usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_honours_retry_after_up_to_its_bound_and_caps() {
        let c = GatewayConfig {
            backoff_base: Duration::from_millis(100),
            backoff_max: Duration::from_millis(400),
            max_retry_after: Duration::from_secs(5),
            ..Default::default()
        };
        for attempt in 0..10 {
            let d = backoff(&c, attempt, None);
            assert!(d <= Duration::from_millis(400), "{d:?}");
        }
        assert!(backoff(&c, 0, Some(Duration::from_secs(3))) >= Duration::from_secs(3));
        assert_eq!(
            backoff(&c, 0, Some(Duration::from_secs(3600))),
            Duration::from_secs(5),
            "a server asking for an hour waits the bound"
        );
    }
}
