//! What a live call leaves behind, written before its answer goes back: the answer in the cache,
//! its ledger entry and, for a chat call, its request for readers (`requests.rs`), all in one durable
//! write (issue 32: keeping the request in a second write of its own, which first looked up the
//! ledger row the answer's write had just made, cost a sweep ~8 % of its CPU per call).

use std::sync::Arc;
use std::time::Duration;

use super::cache::{self, Flight};
use super::ledger::CallScope;
use super::{requests, Layers};
use crate::types::{CallTags, ChatRequest, TokenUsage};
use sleuth_store::{CacheKind, CallSource, LedgerEntry};

/// What a live call's answer took: its tokens and price, the answered attempt's time and the failed
/// attempts before it (its ledger entry's figures).
pub(super) struct Paid {
    pub(super) tokens: TokenUsage,
    pub(super) cost: f64,
    pub(super) latency: Duration,
    pub(super) retries: u64,
}

impl Paid {
    fn entry(
        &self,
        scope: &CallScope,
        tags: &CallTags,
        model: &str,
        key: Option<&cache::Key>,
    ) -> LedgerEntry {
        let mut e = scope.entry(tags, model, CallSource::Live, self.tokens, self.cost, key);
        e.latency_ms = Some(u64::try_from(self.latency.as_millis()).unwrap_or(u64::MAX));
        e.retries = u32::try_from(self.retries).unwrap_or(u32::MAX);
        e
    }
}

/// A live call's answer into the cache, with its ledger entry and (for a chat call) its request
/// `kept`, in one durable write before the answer goes back; without a cache, the entry alone. A cache
/// that cannot be written is warned about and the answer still goes back: losing a replay is better
/// than losing the game.
#[allow(clippy::too_many_arguments)]
pub(super) async fn record_live(
    shared: &Layers,
    model: &str,
    tags: &CallTags,
    scope: &CallScope,
    paid: Paid,
    flight: Option<Flight>,
    kind: CacheKind,
    value: impl FnOnce() -> Vec<u8>,
    kept: Option<requests::Kept>,
) {
    match (&shared.cache, flight) {
        (Some(c), Some(mut flight)) => {
            let entry = paid.entry(scope, tags, model, Some(flight.key()));
            let entries = match &shared.ledger {
                Some(l) => {
                    l.count(&entry);
                    vec![entry]
                }
                None => Vec::new(),
            };
            let written = match &kept {
                Some(k) => {
                    c.store
                        .cache_put_kept(
                            flight.key(),
                            kind,
                            model,
                            &value(),
                            &entries,
                            &k.record,
                            &k.messages,
                        )
                        .await
                }
                None => c
                    .store
                    .cache_put(flight.key(), kind, model, &value(), &entries)
                    .await
                    .map(|()| None),
            };
            match written {
                Ok(rows) => {
                    if let (Some(k), Some(rows)) = (&kept, rows) {
                        c.kept.remember_kept(k, &rows);
                    }
                    flight.land()
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cache write failed; the answer is not replayable");
                    // The call was paid for: its ledger entry goes the ledger's own way, which
                    // retries while the store is away.
                    if let Some(l) = &shared.ledger {
                        for entry in entries {
                            l.write_counted(entry);
                        }
                    }
                }
            }
            // Dropping the flight wakes callers waiting for this key: the entry is there now.
            drop(flight);
        }
        _ => {
            if let Some(l) = &shared.ledger {
                l.record(paid.entry(scope, tags, model, None));
            }
        }
    }
}

/// What to keep of a call's request for readers (`requests.rs`): `None` when the sweep says
/// `[gateway] keep_requests = false` or the store keeps no requests (the cluster's Redis), so that
/// nothing is compressed for nothing.
pub(super) fn kept_request(
    shared: &Layers,
    cache: &cache::Cache,
    req: &ChatRequest,
) -> Option<requests::Kept> {
    if !shared.config.keep_requests || !cache.store.keeps_requests() {
        return None;
    }
    requests::keep(req, &cache.kept)
}

/// Keeps a batch call's request when it enters the journal, before it has an answer to be written
/// with. The caller does not wait: a request lost to a kill or a failed write loses only something
/// to read.
pub(super) fn keep_request(
    shared: &Layers,
    cache: &Arc<cache::Cache>,
    key: cache::Key,
    req: &ChatRequest,
) {
    let Some(kept) = kept_request(shared, cache, req) else {
        return;
    };
    let cache = Arc::clone(cache);
    tokio::spawn(async move {
        match cache
            .store
            .put_request(&key, &kept.record, &kept.messages)
            .await
        {
            Ok(rows) => cache.kept.remember_kept(&kept, &rows),
            Err(e) => tracing::debug!(error = %e, "a call's request was not kept"),
        }
    });
}
