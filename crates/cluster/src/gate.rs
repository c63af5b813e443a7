//! The gateway's shared limits over the cluster's Redis: what makes N workers' gateways together
//! respect a model's `rpm`, `tpm` and `max_concurrency` and the sweep's budget (issue 12, item 5).
//!
//! [`RedisLimits`] implements the gateway's [`SharedLimits`] with [`ClusterLimits`] (GCRA rates and
//! slot leases) and [`ClusterBudget`] (reservations settled to the real cost). The gateway calls it
//! after its own, local layers (`llm/gateway/pipeline.rs`); this module adds what a live call needs
//! around the Lua scripts:
//!
//! - **Leases that outlive their time to live while the call runs.** A slot or a reservation is taken
//!   for `lease_ttl`; a task renews it every third of that until the guard drops, so a call slower
//!   than the TTL keeps what it holds, and a killed worker's leases lapse within one TTL. The renewal
//!   task is aborted and the release spawned when the guard drops, whatever path ended the call.
//! - **Ids unique per call**: `<holder>:<process nonce>:<counter>`. The nonce keeps a worker that
//!   restarts under the same id from taking over leases its previous life left to lapse.
//! - **Redis blips are retried, then fail the call.** A transient error (connection lost or refused,
//!   timeout, a server loading or failing over) is tried again with a jittered doubling backoff
//!   ([`RedisRetry`]); when the retries run out the call fails with `LlmError::Shared` and is not
//!   made: a call made unchecked could pass a limit the other workers keep. Every step is safe to send
//!   twice (a slot is held by id, a reservation is keyed by id, a settle counts once), so a retry
//!   after a lost reply changes nothing.
//! - **The first refusal.** [`RedisLimits::refused`] reports the first budget refusal this process
//!   meets, and whether it was the sweep's first (Redis decides that atomically), so the worker stops
//!   starting the sweep's games and exactly one worker marks the sweep budget-stopped.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use redis::aio::ConnectionManager;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::budget::{BudgetError, ClusterBudget, Reserve};
use super::limits::{ClusterLimits, LimitError};
use sleuth_base::backoff::Backoff;
use sleuth_llm::{
    BudgetExceeded, BudgetLimits, LimitSettings, Settle, SharedError, SharedLimits,
    SharedReservation, SharedSlot, Spent,
};

/// How long a slot or a reservation is held without renewal: how long a killed worker's calls keep
/// their share of the limits. Renewed every third of it while the call runs.
pub const LEASE_TTL: Duration = Duration::from_secs(30);

/// How a Redis operation that failed transiently is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RedisRetry {
    /// Tries in all, the first included.
    pub attempts: u32,
    /// The ceiling of the first pause; doubles per try up to `max`, each pause drawn in the upper
    /// half of its ceiling (equal jitter, [`sleuth_base::backoff`]).
    pub base: Duration,
    pub max: Duration,
}

impl Default for RedisRetry {
    /// Six tries over about three seconds: longer than a reconnect, a restart of a local Redis or a
    /// replica's promotion usually takes, short enough that a call does not hang on a Redis that is
    /// gone.
    fn default() -> Self {
        RedisRetry {
            attempts: 6,
            base: Duration::from_millis(100),
            max: Duration::from_secs(2),
        }
    }
}

/// The first budget refusal this process met.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The sweep's first refusal, cluster-wide: the one whose worker marks the sweep budget-stopped.
    pub first: bool,
    /// What the sweep had spent (settled calls, every worker's) when it was refused.
    pub spent: Spent,
    /// The limit the call would have passed, as the local budget names it (`max_usd = 5`).
    pub limit: String,
}

/// [`SharedLimits`] over a cluster's Redis (see the module documentation).
pub struct RedisLimits {
    limits: ClusterLimits,
    budget: ClusterBudget,
    /// `<worker id>:<process nonce>`: the prefix of every call's id.
    holder: String,
    next: AtomicU64,
    sweep: String,
    caps: BudgetLimits,
    models: BTreeMap<String, LimitSettings>,
    ttl: Duration,
    retry: RedisRetry,
    refused: watch::Sender<Option<Refusal>>,
}

impl std::fmt::Debug for RedisLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLimits")
            .field("holder", &self.holder)
            .field("sweep", &self.sweep)
            .field("caps", &self.caps)
            .field("models", &self.models)
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl RedisLimits {
    /// The limits of `namespace` for worker `holder` playing `sweep`: the sweep's budget `caps` and
    /// the per-model limits of its models table (by the model names calls use). Leases last
    /// [`LEASE_TTL`] and Redis errors are retried as [`RedisRetry::default`] says.
    pub fn new(
        conn: ConnectionManager,
        namespace: &str,
        holder: &str,
        sweep: &str,
        caps: BudgetLimits,
        models: BTreeMap<String, LimitSettings>,
    ) -> RedisLimits {
        let nonce: u32 = rand::random();
        RedisLimits {
            limits: ClusterLimits::new(conn.clone(), namespace),
            budget: ClusterBudget::new(conn, namespace),
            holder: format!("{holder}:{nonce:08x}"),
            next: AtomicU64::new(0),
            sweep: sweep.to_string(),
            caps,
            models,
            ttl: LEASE_TTL,
            retry: RedisRetry::default(),
            refused: watch::Sender::new(None),
        }
    }

    /// The same with leases of `ttl` (renewed every third of it).
    pub fn with_lease_ttl(mut self, ttl: Duration) -> RedisLimits {
        self.ttl = ttl.max(Duration::from_millis(30));
        self
    }

    /// The same with Redis errors retried as `retry` says.
    pub fn with_retry(mut self, retry: RedisRetry) -> RedisLimits {
        self.retry = retry;
        self
    }

    /// The first budget refusal this process met (`None` until there is one). The worker stops
    /// starting games of the sweep when it is set, and marks the sweep budget-stopped only when its
    /// `first` is true.
    pub fn refused(&self) -> watch::Receiver<Option<Refusal>> {
        self.refused.subscribe()
    }

    /// A new call's id.
    fn call_id(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{}:{n}", self.holder)
    }

    fn settings(&self, model: &str) -> LimitSettings {
        self.models.get(model).copied().unwrap_or_default()
    }

    async fn reserve_call(&self, est: Spent) -> Result<SharedReservation, SharedError> {
        // A sweep without a budget needs no reservation: nothing could refuse it.
        if self.caps.max_usd.is_none() && self.caps.max_tokens.is_none() {
            return Ok(SharedReservation::none());
        }
        let id = self.call_id();
        let mut n = 0;
        loop {
            let answer = retrying(self.retry, "reserve budget", || {
                self.budget
                    .reserve(&self.sweep, &id, est.usd, est.tokens, self.caps, self.ttl)
            })
            .await?;
            match answer {
                // Crowded out by calls in flight (on any worker), which usually settle to less
                // than they hold: ask again. This ends: with nothing in flight a reservation is
                // granted or refused.
                Reserve::Busy { .. } => {
                    tokio::time::sleep(BUDGET_POLL.delay(n)).await;
                    n += 1;
                }
                Reserve::Granted => {
                    let renewal = spawn_renewal(self.ttl, {
                        let (budget, sweep, id, ttl) = (
                            self.budget.clone(),
                            self.sweep.clone(),
                            id.clone(),
                            self.ttl,
                        );
                        move || {
                            let (budget, sweep, id) = (budget.clone(), sweep.clone(), id.clone());
                            async move { budget.renew(&sweep, &id, ttl).await.map_err(budget_cause) }
                        }
                    });
                    return Ok(SharedReservation::new(HeldBudget {
                        budget: self.budget.clone(),
                        sweep: self.sweep.clone(),
                        id,
                        retry: self.retry,
                        renewal,
                    }));
                }
                Reserve::Refused { spent, first } => {
                    let limit = passed_limit(self.caps, spent, est);
                    self.note_refusal(Refusal {
                        first,
                        spent,
                        limit: limit.clone(),
                    });
                    return Err(SharedError::Budget(BudgetExceeded {
                        limit,
                        est_usd: est.usd,
                        est_tokens: est.tokens,
                        spent_usd: spent.usd,
                        spent_tokens: spent.tokens,
                    }));
                }
            }
        }
    }

    /// Keeps the first refusal; a later one replaces it only to say that it was the sweep's first
    /// (which cannot happen in order, but costs nothing to get right).
    fn note_refusal(&self, r: Refusal) {
        if r.first {
            tracing::warn!(sweep = %self.sweep, limit = %r.limit, "the sweep's budget is spent: first refusal");
        }
        self.refused.send_if_modified(|cur| match cur {
            Some(c) if c.first || !r.first => false,
            _ => {
                *cur = Some(r);
                true
            }
        });
    }

    async fn take_slot(&self, model: &str, share: f64) -> Result<Option<SharedSlot>, SharedError> {
        let Some(max) = self.settings(model).max_concurrency.filter(|&n| n > 0) else {
            return Ok(None);
        };
        let max = scaled(max, share);
        let id = self.call_id();
        // No queue in Redis: a refused slot is asked for again after a pause that doubles up to
        // 200 ms. At most a model's local limit of this process's calls wait here.
        let mut n = 0;
        while !retrying(self.retry, "take a slot", || {
            self.limits.try_slot(model, max, &id, self.ttl)
        })
        .await?
        {
            tokio::time::sleep(SLOT_POLL.delay(n)).await;
            n += 1;
        }
        let renewal = spawn_renewal(self.ttl, {
            let (limits, model, id, ttl) =
                (self.limits.clone(), model.to_string(), id.clone(), self.ttl);
            move || {
                let (limits, model, id) = (limits.clone(), model.clone(), id.clone());
                async move {
                    let n = limits
                        .renew(&model, std::slice::from_ref(&id), ttl)
                        .await
                        .map_err(limit_cause)?;
                    Ok(n == 1)
                }
            }
        });
        Ok(Some(SharedSlot::new(HeldSlot {
            limits: self.limits.clone(),
            model: model.to_string(),
            id,
            retry: self.retry,
            renewal,
        })))
    }

    async fn admit_call(&self, model: &str, tokens: u64) -> Result<(), SharedError> {
        let s = self.settings(model);
        let rpm = s.rpm.filter(|&n| n > 0);
        let tpm = s.tpm.filter(|&n| n > 0).map(u64::from);
        if rpm.is_none() && tpm.is_none() {
            return Ok(());
        }
        // A call larger than a whole minute's token quota could never pass: it waits for a full
        // bucket instead, as the node's limiter does.
        let tokens = tpm.map_or(tokens, |t| tokens.min(t));
        loop {
            let wait = retrying(self.retry, "admit a request", || {
                self.limits.try_rate(model, rpm, tpm, tokens)
            })
            .await?;
            match wait {
                None => return Ok(()),
                Some(w) => tokio::time::sleep(w).await,
            }
        }
    }
}

impl SharedLimits for RedisLimits {
    fn reserve(&self, est: Spent) -> BoxFuture<'_, Result<SharedReservation, SharedError>> {
        Box::pin(self.reserve_call(est))
    }

    fn slot<'a>(
        &'a self,
        model: &'a str,
        share: f64,
    ) -> BoxFuture<'a, Result<Option<SharedSlot>, SharedError>> {
        Box::pin(self.take_slot(model, share))
    }

    fn admit<'a>(&'a self, model: &'a str, tokens: u64) -> BoxFuture<'a, Result<(), SharedError>> {
        Box::pin(self.admit_call(model, tokens))
    }
}

/// The limit a refused call would have passed. Redis says only that spent + reserved + the call's
/// bound passes a limit; when spent + bound alone passes neither, the room was taken by calls in
/// flight.
fn passed_limit(caps: BudgetLimits, spent: Spent, est: Spent) -> String {
    let usd = caps.max_usd.map(|m| format!("max_usd = {m}"));
    let tokens = caps.max_tokens.map(|m| format!("max_tokens = {m}"));
    if let Some(max) = caps.max_usd {
        if spent.usd + est.usd > max {
            return format!("max_usd = {max}");
        }
    }
    if let Some(max) = caps.max_tokens {
        if spent.tokens + est.tokens > max {
            return format!("max_tokens = {max}");
        }
    }
    let named: Vec<String> = usd.into_iter().chain(tokens).collect();
    format!("{}, with the calls in flight", named.join(" or "))
}

/// What a failed Redis step says, and whether trying it again can help.
struct Cause {
    transient: bool,
    message: String,
}

fn limit_cause(e: LimitError) -> Cause {
    let transient = match &e {
        LimitError::Redis(r) => sleuth_store::redis::transient(r),
        LimitError::TooLarge { .. } => false,
    };
    Cause {
        transient,
        message: e.to_string(),
    }
}

fn budget_cause(e: BudgetError) -> Cause {
    let BudgetError::Redis(r) = &e;
    Cause {
        transient: sleuth_store::redis::transient(r),
        message: e.to_string(),
    }
}

impl From<LimitError> for Cause {
    fn from(e: LimitError) -> Self {
        limit_cause(e)
    }
}

impl From<BudgetError> for Cause {
    fn from(e: BudgetError) -> Self {
        budget_cause(e)
    }
}

/// The pause before try number `n + 1`: the one backoff ([`sleuth_base::backoff`]), doubling from
/// `base` up to `max` with equal jitter.
fn pause(retry: RedisRetry, n: u32) -> Duration {
    Backoff::new(retry.base, retry.max).delay(n)
}

/// How a refused shared slot is asked for again: from 5 ms, doubling up to 200 ms.
const SLOT_POLL: Backoff = Backoff::new(Duration::from_millis(5), Duration::from_millis(200));

/// How a reservation crowded out by calls in flight (on any worker) is asked for again: from 20 ms,
/// doubling up to one second. Nothing in Redis wakes it when they settle.
const BUDGET_POLL: Backoff = Backoff::new(Duration::from_millis(20), Duration::from_secs(1));

/// A cluster-wide limit of `max` scaled by this process's adaptive share, never below 1.
fn scaled(max: u32, share: f64) -> u32 {
    let share = if share.is_finite() {
        share.clamp(0.0, 1.0)
    } else {
        1.0
    };
    ((f64::from(max) * share).ceil() as u32).clamp(1, max)
}

/// Runs `op` until it succeeds, fails for good, or `retry`'s tries run out; `what` names the step in
/// the error.
async fn retrying<T, E, F, Fut>(
    retry: RedisRetry,
    what: &'static str,
    mut op: F,
) -> Result<T, SharedError>
where
    E: Into<Cause>,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut n = 0;
    loop {
        let cause: Cause = match op().await {
            Ok(v) => return Ok(v),
            Err(e) => e.into(),
        };
        n += 1;
        if !cause.transient || n >= retry.attempts.max(1) {
            let message = if cause.transient {
                format!("{} (gave up after {n} tries)", cause.message)
            } else {
                cause.message
            };
            tracing::warn!(what, %message, "cluster limits: giving up");
            return Err(SharedError::Unavailable { what, message });
        }
        tracing::debug!(what, try_ = n, error = %cause.message, "cluster limits: retrying");
        tokio::time::sleep(pause(retry, n - 1)).await;
    }
}

/// A task that renews a lease every third of `ttl` until aborted. A renewal that finds the lease
/// gone (it lapsed while Redis was unreachable for longer than the TTL) stops: the call goes on, but
/// no longer counts against the limit, which the warning says. A failed renewal is tried again at the
/// next tick, two of which fall inside the TTL.
fn spawn_renewal<F, Fut>(ttl: Duration, mut renew: F) -> JoinHandle<()>
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = Result<bool, Cause>> + Send + 'static,
{
    tokio::spawn(async move {
        let every = ttl / 3;
        loop {
            tokio::time::sleep(every).await;
            match renew().await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::warn!("cluster limits: a lease lapsed before it was renewed; the call goes on without it");
                    return;
                }
                Err(c) => {
                    tracing::warn!(error = %c.message, "cluster limits: renewing a lease failed; trying again")
                }
            }
        }
    })
}

/// Runs `release` on the current runtime, if there still is one; without one the lease lapses.
fn spawn_release(release: impl Future<Output = ()> + Send + 'static) {
    match tokio::runtime::Handle::try_current() {
        Ok(h) => {
            h.spawn(release);
        }
        Err(_) => tracing::debug!("cluster limits: no runtime to release a lease; it lapses"),
    }
}

/// A slot lease: renewed while it lives, released when it drops.
struct HeldSlot {
    limits: ClusterLimits,
    model: String,
    id: String,
    retry: RedisRetry,
    renewal: JoinHandle<()>,
}

impl Drop for HeldSlot {
    fn drop(&mut self) {
        self.renewal.abort();
        let (limits, model, id, retry) = (
            self.limits.clone(),
            std::mem::take(&mut self.model),
            std::mem::take(&mut self.id),
            self.retry,
        );
        spawn_release(async move {
            // Unreleased, the slot lapses after its TTL: the error is logged inside.
            let _ = retrying(retry, "release a slot", || limits.release(&model, &id)).await;
        });
    }
}

/// A budget reservation: renewed while it lives, settled (or released) once.
struct HeldBudget {
    budget: ClusterBudget,
    sweep: String,
    id: String,
    retry: RedisRetry,
    renewal: JoinHandle<()>,
}

impl Settle for HeldBudget {
    fn settle(mut self: Box<Self>, actual: Option<Spent>) {
        // A call that failed before an answer was not billed: settling to nothing releases it.
        let actual = actual.unwrap_or_default();
        let (budget, sweep, id, retry) = (
            self.budget.clone(),
            std::mem::take(&mut self.sweep),
            std::mem::take(&mut self.id),
            self.retry,
        );
        spawn_release(async move {
            // Unsettled, the reservation lapses after its TTL and the call's cost is missing from
            // the shared total (the ledger still has it): the error is logged inside.
            let _ = retrying(retry, "settle budget", || {
                budget.settle(&sweep, &id, actual.usd, actual.tokens)
            })
            .await;
        });
        // Dropping self aborts the renewal.
    }
}

impl Drop for HeldBudget {
    fn drop(&mut self) {
        self.renewal.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_limit_it_passes() {
        let caps = BudgetLimits {
            max_usd: Some(1.0),
            max_tokens: Some(100),
        };
        let s = |usd, tokens| Spent { usd, tokens };
        assert_eq!(passed_limit(caps, s(0.9, 0), s(0.2, 1)), "max_usd = 1");
        assert_eq!(
            passed_limit(caps, s(0.0, 90), s(0.0, 20)),
            "max_tokens = 100"
        );
        assert_eq!(
            passed_limit(caps, s(0.0, 0), s(0.1, 1)),
            "max_usd = 1 or max_tokens = 100, with the calls in flight"
        );
    }

    #[test]
    fn the_shared_limit_scales_with_the_local_share_and_never_reaches_zero() {
        assert_eq!(scaled(10, 1.0), 10);
        assert_eq!(scaled(10, 0.25), 3);
        assert_eq!(scaled(10, 0.0), 1);
        assert_eq!(scaled(10, f64::NAN), 10);
        assert_eq!(scaled(1, 0.5), 1);
    }

    #[test]
    fn pauses_double_and_stay_under_the_ceiling() {
        let r = RedisRetry {
            attempts: 10,
            base: Duration::from_millis(100),
            max: Duration::from_millis(400),
        };
        for n in 0..10 {
            assert!(pause(r, n) <= Duration::from_millis(400));
        }
        assert!(pause(r, 0) >= Duration::from_millis(50));
    }
}
