//! Per-model limits: requests per minute, tokens per minute and calls at once, with fairness between
//! the arms of a sweep.
//!
//! RPM and TPM are GCRA rate limiters from `governor` (its "direct" limiter: one bucket per model). A
//! request takes one RPM cell and as many TPM cells as its token estimate; governor's bursts equal
//! one minute's quota, as providers allow.
//!
//! The concurrency limit is the adaptive limit (`adaptive.rs`) over a [`super::fair::FairSemaphore`],
//! fair between the arms of a sweep.

use std::num::NonZeroU32;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

pub use super::adaptive::{Concurrency, Slot};

/// A model's limits as a sweep's models table (or `sleuth play`'s flags) gives them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitSettings {
    pub rpm: Option<u32>,
    pub tpm: Option<u32>,
    /// Calls at once: the most the model is ever sent together (cluster-wide, on a cluster).
    pub max_concurrency: Option<u32>,
    /// Whether the concurrency limit adapts to the endpoint (AIMD, `adaptive.rs`) between 1 and
    /// `max_concurrency`; off, it stays at `max_concurrency`.
    pub adaptive: bool,
    /// Where an adaptive limit starts; `max_concurrency` when absent.
    pub initial_concurrency: Option<u32>,
}

/// Where the concurrency limit of an endpoint sleuth does not know starts, when the user gave none:
/// a workstation's llama.cpp or vLLM may serve one request at a time, and a small start finds that
/// out after a few answers instead of after a storm of timeouts.
pub const UNKNOWN_ENDPOINT_START: u32 = 4;
/// How high that limit may grow while latency holds.
pub const UNKNOWN_ENDPOINT_CEILING: u32 = 64;

impl LimitSettings {
    /// These settings with the defaults of the endpoint `provider` at `base_url`: an OpenAI-compatible
    /// server other than OpenAI's own API, with no `max_concurrency` given, gets an adaptive limit
    /// from [`UNKNOWN_ENDPOINT_START`] up to [`UNKNOWN_ENDPOINT_CEILING`]. OpenAI's API and the
    /// simulated model keep no limit unless one is given.
    pub fn with_endpoint_defaults(self, provider: &str, base_url: Option<&str>) -> LimitSettings {
        let openai_itself = base_url.is_none_or(|u| {
            u.trim_start_matches("https://")
                .trim_start_matches("http://")
                .starts_with("api.openai.com")
        });
        if provider != "openai" || openai_itself || self.max_concurrency.is_some() || !self.adaptive
        {
            return self;
        }
        LimitSettings {
            max_concurrency: Some(UNKNOWN_ENDPOINT_CEILING),
            initial_concurrency: self.initial_concurrency.or(Some(UNKNOWN_ENDPOINT_START)),
            ..self
        }
    }
}

/// The live limiters of one model.
pub struct ModelLimits {
    rpm: Option<DefaultDirectRateLimiter>,
    tpm: Option<(DefaultDirectRateLimiter, NonZeroU32)>,
    concurrency: Option<Concurrency>,
}

impl ModelLimits {
    /// Limiters of `model` for `settings`; `None` when it sets no limit at all.
    pub fn new(model: &str, settings: LimitSettings) -> Option<ModelLimits> {
        let nz = |n: Option<u32>| n.and_then(NonZeroU32::new);
        let (rpm, tpm, conc) = (
            nz(settings.rpm),
            nz(settings.tpm),
            settings.max_concurrency.filter(|&n| n > 0),
        );
        if rpm.is_none() && tpm.is_none() && conc.is_none() {
            return None;
        }
        Some(ModelLimits {
            rpm: rpm.map(|n| RateLimiter::direct(Quota::per_minute(n))),
            tpm: tpm.map(|n| (RateLimiter::direct(Quota::per_minute(n)), n)),
            concurrency: conc.map(|ceiling| {
                let start = if settings.adaptive {
                    settings.initial_concurrency.unwrap_or(ceiling)
                } else {
                    ceiling
                };
                Concurrency::new(model, start, ceiling, settings.adaptive)
            }),
        })
    }

    /// A slot for one attempt of a call of `arm`, held while its request is out. Retries take a
    /// slot again, under the limit as it is then.
    pub async fn slot(&self, arm: &str) -> Option<Slot> {
        match &self.concurrency {
            Some(c) => Some(c.slot(arm).await),
            None => None,
        }
    }

    /// The model's concurrency limit, if it has one: what the adaptive limit learns from.
    pub fn concurrency(&self) -> Option<&Concurrency> {
        self.concurrency.as_ref()
    }

    /// Waits until one more request of about `tokens` tokens fits the model's RPM and TPM. Called per
    /// attempt, so a retry queues again.
    pub async fn admit(&self, tokens: u64) {
        if let Some(rpm) = &self.rpm {
            rpm.until_ready().await;
        }
        if let Some((tpm, burst)) = &self.tpm {
            // A request larger than a whole minute's quota can never fit: it waits for a full bucket.
            let n = u32::try_from(tokens)
                .unwrap_or(u32::MAX)
                .clamp(1, burst.get());
            let n = NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN);
            // `n` ≤ the burst, so the limiter's capacity error cannot happen.
            let _ = tpm.until_n_ready(n).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_endpoint_starts_small_and_a_known_one_is_left_alone() {
        let adaptive = LimitSettings {
            adaptive: true,
            ..LimitSettings::default()
        };
        let llama = adaptive.with_endpoint_defaults("openai", Some("http://127.0.0.1:8080/v1"));
        assert_eq!(
            (llama.initial_concurrency, llama.max_concurrency),
            (Some(UNKNOWN_ENDPOINT_START), Some(UNKNOWN_ENDPOINT_CEILING))
        );
        let openai = adaptive.with_endpoint_defaults("openai", Some("https://api.openai.com/v1"));
        assert_eq!(openai, adaptive);
        assert_eq!(adaptive.with_endpoint_defaults("simulated", None), adaptive);
        let given = LimitSettings {
            max_concurrency: Some(2),
            ..adaptive
        };
        assert_eq!(
            given.with_endpoint_defaults("openai", Some("http://x/v1")),
            given
        );
    }

    #[tokio::test]
    async fn no_settings_no_limits() {
        assert!(ModelLimits::new("m", LimitSettings::default()).is_none());
        let l = ModelLimits::new(
            "m",
            LimitSettings {
                max_concurrency: Some(2),
                ..LimitSettings::default()
            },
        )
        .expect("limits");
        let a = l.slot("x").await;
        let b = l.slot("y").await;
        assert!(a.is_some() && b.is_some());
        l.admit(10).await;
    }
}
