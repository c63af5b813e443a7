//! Per-model limits: requests per minute, tokens per minute and calls at once, with fairness between
//! the arms of a sweep.
//!
//! RPM and TPM are GCRA rate limiters from `governor` (its "direct" limiter: one bucket per model). A
//! request takes one RPM cell and as many TPM cells as its token estimate; governor's bursts equal
//! one minute's quota, as providers allow.
//!
//! The concurrency limit is [`FairSemaphore`], written here because no well-kept crate offers a
//! semaphore that is fair *between groups*: tokio's semaphore is first-come-first-served, so an arm
//! with 900 games in flight would take 90 % of a model's slots from an arm with 100. Waiters queue
//! per arm, and a released slot goes to the next arm in turn (round robin), so each arm that wants a
//! slot gets an equal share whatever its number of games. Its number of slots can change while
//! it is in use: the adaptive limit (`adaptive.rs`) moves it with what the endpoint shows.

use std::collections::{BTreeMap, VecDeque};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::sync::oneshot;

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

/// A counting semaphore whose waiters are served round robin by group (see the module
/// documentation), and whose number of slots can change while it is in use (the adaptive limit).
#[derive(Clone)]
pub struct FairSemaphore {
    inner: Arc<Mutex<FairState>>,
}

struct FairState {
    /// Slots in all; lowering it below `in_use` takes effect as slots come back.
    limit: usize,
    in_use: usize,
    /// Group → its waiters in arrival order.
    queues: BTreeMap<Arc<str>, VecDeque<oneshot::Sender<Permit>>>,
    /// The group served last; the next slot goes to the first group after it.
    last: Option<Arc<str>>,
}

/// One slot of a [`FairSemaphore`]; dropping it hands the slot on.
pub struct Permit {
    sem: Option<Arc<Mutex<FairState>>>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(sem) = self.sem.take() {
            if let Ok(mut st) = sem.lock() {
                st.in_use = st.in_use.saturating_sub(1);
                dispatch(&sem, &mut st);
            }
        }
    }
}

/// Hands free slots to waiting groups in turn while there are both.
fn dispatch(sem: &Arc<Mutex<FairState>>, st: &mut FairState) {
    while st.in_use < st.limit {
        let next = {
            let after = st.last.clone();
            let first = st.queues.keys().next().cloned();
            match after {
                Some(a) => st
                    .queues
                    .range::<str, _>((std::ops::Bound::Excluded(&*a), std::ops::Bound::Unbounded))
                    .next()
                    .map(|(k, _)| k.clone())
                    .or(first),
                None => first,
            }
        };
        let Some(group) = next else { return };
        let waiter = st.queues.get_mut(&group).and_then(VecDeque::pop_front);
        if st.queues.get(&group).is_some_and(VecDeque::is_empty) {
            st.queues.remove(&group);
        }
        st.last = Some(group);
        if let Some(tx) = waiter {
            st.in_use += 1;
            let permit = Permit {
                sem: Some(sem.clone()),
            };
            if let Err(mut p) = tx.send(permit) {
                // The waiter gave up. The permit came back inside the error: forget it without
                // running its drop (which would take this lock again) and try the next waiter.
                p.sem = None;
                st.in_use -= 1;
            }
        }
    }
}

impl FairSemaphore {
    pub fn new(permits: usize) -> FairSemaphore {
        FairSemaphore {
            inner: Arc::new(Mutex::new(FairState {
                limit: permits,
                in_use: 0,
                queues: BTreeMap::new(),
                last: None,
            })),
        }
    }

    /// A slot for `group`, waiting for its turn when none is free.
    pub async fn acquire(&self, group: &str) -> Permit {
        let rx = {
            let Ok(mut st) = self.inner.lock() else {
                // A poisoned lock means a thread panicked inside it; without limits the run goes on.
                return Permit { sem: None };
            };
            if st.in_use < st.limit && st.queues.is_empty() {
                st.in_use += 1;
                return Permit {
                    sem: Some(self.inner.clone()),
                };
            }
            let (tx, rx) = oneshot::channel();
            st.queues.entry(Arc::from(group)).or_default().push_back(tx);
            rx
        };
        // A slot is always sent before its sender is dropped, unless the semaphore itself is gone.
        rx.await.unwrap_or(Permit { sem: None })
    }

    /// Changes the number of slots: more wake waiters at once; fewer take effect as slots come back
    /// (a call in flight is never cut short).
    pub fn set_limit(&self, permits: usize) {
        if let Ok(mut st) = self.inner.lock() {
            st.limit = permits;
            dispatch(&self.inner, &mut st);
        }
    }

    /// Slots free now (for tests and status).
    pub fn available(&self) -> usize {
        self.inner
            .lock()
            .map(|s| s.limit.saturating_sub(s.in_use))
            .unwrap_or(0)
    }

    /// Calls waiting for a slot now.
    pub fn waiting(&self) -> usize {
        self.inner
            .lock()
            .map(|s| s.queues.values().map(VecDeque::len).sum())
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn slots_go_round_robin_between_groups() {
        let sem = FairSemaphore::new(1);
        let first = sem.acquire("a").await;
        // Group a queues five waiters before group b queues one: b must not wait behind all of a.
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (i, g) in ["a", "a", "a", "a", "a", "b"].into_iter().enumerate() {
            let (sem, order) = (sem.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let p = sem.acquire(g).await;
                order.lock().expect("lock").push(format!("{g}{i}"));
                tokio::task::yield_now().await;
                drop(p);
            }));
            tokio::task::yield_now().await;
        }
        drop(first);
        for t in tasks {
            t.await.expect("task");
        }
        let order = order.lock().expect("lock").clone();
        let b = order.iter().position(|x| x == "b5").expect("b served");
        assert!(b <= 1, "b was served at position {b}: {order:?}");
        assert_eq!(sem.available(), 1, "every slot came back");
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_does_not_keep_its_slot() {
        let sem = FairSemaphore::new(1);
        let held = sem.acquire("a").await;
        let waiting = sem.acquire("b");
        let gave_up = tokio::time::timeout(std::time::Duration::from_millis(10), waiting).await;
        assert!(gave_up.is_err());
        drop(held);
        assert_eq!(sem.available(), 1);
        let _again = sem.acquire("c").await;
        assert_eq!(sem.available(), 0);
    }

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
