//! The process-wide memo of token ids by text (see the parent module for why).
//!
//! Keyed by the 128-bit XXH3 hash of a chunk's bytes (a collision among even billions of distinct
//! chunks is vanishingly unlikely, and would cost a wrong count, not a crash), sharded so that the
//! games of a sweep, on every worker thread, rarely wait for each other.
//!
//! Bounded by two generations per shard: entries go into the current one; when it holds its share of
//! [`CAPACITY_TOKENS`], it becomes the previous one and the one before is dropped. A hit in the
//! previous generation moves the entry back into the current one, so what every call uses (a
//! character's script, the rules) stays, and what one call used once (a dialogue's last lines) ages
//! out. That is the least-recently-used policy, kept coarsely, in a few lines: a cache crate (moka,
//! quick_cache) would add its build to every build for a policy this simple.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use xxhash_rust::xxh3::xxh3_128;

/// Token ids the memo keeps at most per generation, over all shards (4 bytes each: 32 MiB for both
/// generations when full). A 15k-token MIRAGE script is 0.2 % of it.
const CAPACITY_TOKENS: usize = 4 << 20;

const SHARDS: usize = 16;

#[derive(Default)]
struct Shard {
    current: HashMap<u128, Arc<[u32]>>,
    previous: HashMap<u128, Arc<[u32]>>,
    /// Token ids held by `current`.
    tokens: usize,
}

impl Shard {
    fn get(&mut self, key: u128) -> Option<Arc<[u32]>> {
        if let Some(ids) = self.current.get(&key) {
            return Some(ids.clone());
        }
        let ids = self.previous.remove(&key)?;
        self.insert(key, ids.clone());
        Some(ids)
    }

    fn insert(&mut self, key: u128, ids: Arc<[u32]>) {
        if self.tokens + ids.len() > CAPACITY_TOKENS / SHARDS && !self.current.is_empty() {
            self.previous = std::mem::take(&mut self.current);
            self.tokens = 0;
        }
        self.tokens += ids.len();
        self.current.insert(key, ids);
    }
}

fn shards() -> &'static [Mutex<Shard>; SHARDS] {
    static MEMO: OnceLock<[Mutex<Shard>; SHARDS]> = OnceLock::new();
    MEMO.get_or_init(Default::default)
}

/// The ids of `text`: the memo's, or `encode(text)`'s, which the memo then keeps. `encode` runs
/// outside the lock (it is the expensive part); two threads missing the same text at once both
/// encode it, and the second insert replaces the first with equal ids.
pub(super) fn get_or_insert(text: &str, encode: impl FnOnce(&str) -> Arc<[u32]>) -> Arc<[u32]> {
    let key = xxh3_128(text.as_bytes());
    let shard = &shards()[(key as usize) % SHARDS];
    if let Some(ids) = lock(shard).get(key) {
        return ids;
    }
    let ids = encode(text);
    lock(shard).insert(key, ids.clone());
    ids
}

/// A poisoned shard still holds valid entries (a panic elsewhere cannot leave a half-written one).
fn lock(shard: &Mutex<Shard>) -> std::sync::MutexGuard<'_, Shard> {
    shard
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_keeps_what_is_used_and_drops_what_is_not() {
        let mut shard = Shard::default();
        let share = CAPACITY_TOKENS / SHARDS;
        let big: Arc<[u32]> = vec![0; share / 2].into();
        shard.insert(1, big.clone()); // used throughout
        shard.insert(2, big.clone()); // used once
        shard.insert(3, big.clone()); // fills the generation: 1 and 2 become the previous one
        assert!(
            shard.get(1).is_some(),
            "a hit in the previous generation is kept"
        );
        // The next turn: 3 and 1 become the previous generation, and 2, unused, is dropped.
        shard.insert(4, big.clone());
        assert!(
            shard.get(2).is_none(),
            "an entry not used for two generations is gone"
        );
        assert!(shard.tokens <= share);
    }
}
