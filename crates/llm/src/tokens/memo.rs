//! The process-wide memo of token ids by text (see the parent module for why): a
//! [`sleuth_base::memo::Memo`] weighed in token ids.

use std::sync::{Arc, OnceLock};

use sleuth_base::memo::{self, Memo};

/// Token ids the memo keeps at most per generation, over all shards (4 bytes each: 32 MiB for both
/// generations when full). A 15k-token MIRAGE script is 0.2 % of it.
const CAPACITY_TOKENS: usize = 4 << 20;
/// What an entry costs besides its ids (its key and slot in the shard's map, the `Arc`'s pointer,
/// length and counts: ~64 bytes), in 4-byte ids, so that the bound holds for chunks of a few dozen
/// ids as for long ones.
const ENTRY_IDS: usize = 16;

/// The ids of `text`: the memo's, or `encode(text)`'s, which the memo then keeps. `encode` runs
/// outside the lock (it is the expensive part); two threads missing the same text at once both
/// encode it, and the second insert replaces the first with equal ids.
pub(super) fn get_or_insert(text: &str, encode: impl FnOnce(&str) -> Arc<[u32]>) -> Arc<[u32]> {
    static MEMO: OnceLock<Memo<Arc<[u32]>>> = OnceLock::new();
    MEMO.get_or_init(|| Memo::new(CAPACITY_TOKENS))
        .get_or_insert_with(memo::key(text.as_bytes()), || {
            let ids = encode(text);
            let n = ids.len() + ENTRY_IDS;
            (ids, n)
        })
}

/// Whole texts' token counts kept at most per generation (an entry is ~64 bytes: 8 MiB for both
/// generations when full).
const CAPACITY_COUNTS: usize = 1 << 16;

/// The token count of a long `text`: the memo's, or `count(text)`'s, which the memo then keeps. A
/// long text that goes out again and again (a script, a 200 KB premise) is then one hash and one
/// lookup per count instead of one per chunk: at chunks of 256 bytes a 200 KB premise is ~800.
pub(super) fn count_of(text: &str, count: impl FnOnce(&str) -> u64) -> u64 {
    static MEMO: OnceLock<Memo<u64>> = OnceLock::new();
    MEMO.get_or_init(|| Memo::new(CAPACITY_COUNTS))
        .get_or_insert_with(memo::key(text.as_bytes()), || (count(text), 1))
}
