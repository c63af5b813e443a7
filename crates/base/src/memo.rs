//! A bounded, process-wide memo keyed by a content hash: what the token counter and the simulated
//! model keep of texts they have seen, so that a character's script, which goes out with every one of
//! its calls, is analysed once per process rather than once per call.
//!
//! Keys are 128-bit content hashes ([`key`], XXH3-128: a collision among even billions of distinct
//! texts is vanishingly unlikely, and would cost a wrong answer for one text, not a crash). The memo is
//! sharded so that the games of a sweep, on every worker thread, rarely wait for each other.
//!
//! Bounded by two generations per shard: entries go into the current one; when it holds its share of
//! the capacity, it becomes the previous one and the one before is dropped. A hit in the previous
//! generation moves the entry back into the current one, so what every call uses (a character's
//! script, the rules) stays, and what one call used once (a dialogue's last lines) ages out. That is
//! the least-recently-used policy, kept coarsely, in a few lines: a cache crate (moka, quick_cache)
//! would add its build to every build for a policy this simple.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use xxhash_rust::xxh3::{xxh3_128, Xxh3};

const SHARDS: usize = 16;

/// The memo's key for some bytes.
pub fn key(bytes: &[u8]) -> u128 {
    xxh3_128(bytes)
}

/// The memo's key for the parts' bytes run together, without copying them into one buffer.
pub fn key_parts(parts: &[&[u8]]) -> u128 {
    let mut h = Xxh3::new();
    for p in parts {
        h.update(p);
    }
    h.digest128()
}

/// A bounded map from content hashes to values that are cheap to clone (an `Arc`, usually), each with
/// a weight in whatever unit the capacity is given in (tokens, bytes).
pub struct Memo<V> {
    shards: [Mutex<Shard<V>>; SHARDS],
    /// Weight a shard's current generation may hold.
    share: usize,
}

struct Shard<V> {
    current: HashMap<u128, (V, usize)>,
    previous: HashMap<u128, (V, usize)>,
    /// Weight held by `current`.
    weight: usize,
}

impl<V> Default for Shard<V> {
    fn default() -> Self {
        Shard {
            current: HashMap::new(),
            previous: HashMap::new(),
            weight: 0,
        }
    }
}

impl<V: Clone> Shard<V> {
    fn get(&mut self, key: u128, share: usize) -> Option<V> {
        if let Some((v, _)) = self.current.get(&key) {
            return Some(v.clone());
        }
        let (v, weight) = self.previous.remove(&key)?;
        self.insert(key, v.clone(), weight, share);
        Some(v)
    }

    fn insert(&mut self, key: u128, v: V, weight: usize, share: usize) {
        if self.weight + weight > share && !self.current.is_empty() {
            self.previous = std::mem::take(&mut self.current);
            self.weight = 0;
        }
        self.weight += weight;
        self.current.insert(key, (v, weight));
    }
}

impl<V: Clone> Memo<V> {
    /// A memo holding at most `capacity` weight per generation (twice that when both are full).
    pub fn new(capacity: usize) -> Self {
        Memo {
            shards: std::array::from_fn(|_| Mutex::new(Shard::default())),
            share: (capacity / SHARDS).max(1),
        }
    }

    /// The value kept for `key`, or `compute()`'s (a value and its weight), which the memo then keeps.
    /// `compute` runs outside the lock (it is the expensive part); two threads missing the same key at
    /// once both compute, and the second insert replaces the first with an equal value.
    pub fn get_or_insert_with(&self, key: u128, compute: impl FnOnce() -> (V, usize)) -> V {
        let shard = &self.shards[(key as usize) % SHARDS];
        if let Some(v) = lock(shard).get(key, self.share) {
            return v;
        }
        let (v, weight) = compute();
        lock(shard).insert(key, v.clone(), weight, self.share);
        v
    }
}

/// Bytes of texts [`shared_text`] keeps per generation.
const SHARED_TEXT_BYTES: usize = 16 << 20;

/// One copy of a long text that many games build alike, shared by all of them.
///
/// The games of a sweep mostly play the same scripts with the same frameworks, and each character's
/// system prompt (its persona and its whole script, 5–15 KB) was built, and kept for the game's
/// life, once per game: 1,000 games in flight held 1,000 equal copies of every character's prompt
/// (heaptrack, issue 32). The text is hashed once when built (a prompt is rebuilt only when an act is
/// released); equal texts come back as one `Arc`. Bounded like every memo here: what no game has built
/// for two generations is dropped from the memo (the games holding it keep their `Arc`).
pub fn shared_text(text: String) -> Arc<str> {
    static TEXTS: LazyLock<Memo<Arc<str>>> = LazyLock::new(|| Memo::new(SHARED_TEXT_BYTES));
    let weight = text.len();
    TEXTS.get_or_insert_with(key(text.as_bytes()), move || (Arc::from(text), weight))
}

/// A poisoned shard still holds valid entries (a panic elsewhere cannot leave a half-written one).
fn lock<V>(shard: &Mutex<Shard<V>>) -> MutexGuard<'_, Shard<V>> {
    shard
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_keeps_what_is_used_and_drops_what_is_not() {
        let share = 100;
        let mut shard: Shard<u32> = Shard::default();
        shard.insert(1, 1, share / 2, share); // used throughout
        shard.insert(2, 2, share / 2, share); // used once
        shard.insert(3, 3, share / 2, share); // fills the generation: 1 and 2 become the previous one
        assert_eq!(
            shard.get(1, share),
            Some(1),
            "a hit in the previous generation is kept"
        );
        // The next turn: 3 and 1 become the previous generation, and 2, unused, is dropped.
        shard.insert(4, 4, share / 2, share);
        assert_eq!(
            shard.get(2, share),
            None,
            "an entry not used for two generations is gone"
        );
        assert!(shard.weight <= share);
    }

    #[test]
    fn equal_texts_built_apart_are_one_copy() {
        let a = shared_text(format!("persona {}", "script ".repeat(100)));
        let b = shared_text(format!("persona {}", "script ".repeat(100)));
        assert!(
            Arc::ptr_eq(&a, &b),
            "the second build shares the first's copy"
        );
        let c = shared_text("another character's prompt".to_string());
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(&*c, "another character's prompt");
    }

    #[test]
    fn a_value_is_computed_once_while_it_is_kept() {
        let memo: Memo<u64> = Memo::new(1 << 20);
        let mut computed = 0;
        for _ in 0..3 {
            let v = memo.get_or_insert_with(key(b"script"), || {
                computed += 1;
                (7, 6)
            });
            assert_eq!(v, 7);
        }
        assert_eq!(computed, 1);
        assert_eq!(key_parts(&[b"scr", b"ipt"]), key(b"script"));
    }
}
