//! Which cache keys the file may hold, in memory: a lookup of a key the file cannot hold is answered
//! without a read.
//!
//! **Why.** Every live call of a sweep first looks its key up in the cache, and in a new sweep nearly
//! every lookup misses. A miss through SQLite costs a blocking thread woken, a read transaction, and
//! (because the writer commits many times a second) a page cache rebuilt from the file: a profile of
//! the sweep at 1,000 calls a second put a tenth of its CPU there. A filter that says "certainly not
//! here" for those keys saves all of it; a key it cannot rule out is read as before, so an answer is
//! never wrong, only sometimes slower.
//!
//! **How.** A Bloom filter that grows: layers of bits, each twice the size of the one before, a key
//! set in the newest layer and looked for in all. The keys are SHA-256 digests, already uniform, so
//! the probes are taken from the key's own bytes (double hashing, Kirsch and Mitzenmacher 2006)
//! instead of hashing again. About 10 bits and 7 probes a key give under 1 % false positives per
//! layer. A crate was considered (`fastbloom`, `growable-bloom-filter`); they hash their input again
//! and either do not grow or do so with their own hashers, for ~40 lines of code here.
//!
//! **What it knows.** The keys in the file when the store opened (read once, at open) and every key
//! this process puts afterwards, set *before* the write is queued, so that a key is never ruled out
//! while its write is on the way. Another process writing the same file is the one case it would miss:
//! a run directory is held by one process at a time (`sweep status` says which), and every store of
//! one file within a process shares one filter (`for_file`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

/// Keys the first layer is made for; each later layer is made for twice the keys of the one before.
const FIRST_CAPACITY: u64 = 1 << 14;
/// Bits a key gets in a layer, and probes a key sets: under 1 % false positives at capacity.
const BITS_PER_KEY: u64 = 10;
const PROBES: u64 = 7;

/// One layer: its bits and the keys set in it.
struct Layer {
    bits: Vec<u64>,
    capacity: u64,
    keys: u64,
}

impl Layer {
    fn new(capacity: u64) -> Layer {
        let words = (capacity * BITS_PER_KEY).div_ceil(64) as usize;
        Layer {
            bits: vec![0; words],
            capacity,
            keys: 0,
        }
    }

    fn set(&mut self, key: &[u8; 32]) {
        for p in probes(key, self.bits.len() as u64 * 64) {
            self.bits[(p / 64) as usize] |= 1 << (p % 64);
        }
        self.keys += 1;
    }

    fn may_hold(&self, key: &[u8; 32]) -> bool {
        probes(key, self.bits.len() as u64 * 64)
            .all(|p| self.bits[(p / 64) as usize] & (1 << (p % 64)) != 0)
    }
}

/// The bit positions of `key` among `m` bits: h1 + i·h2, h1 and h2 taken from the key's own bytes.
fn probes(key: &[u8; 32], m: u64) -> impl Iterator<Item = u64> {
    let word = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&key[i * 8..i * 8 + 8]);
        u64::from_le_bytes(b)
    };
    let (h1, h2) = (word(0), word(1) | 1);
    (0..PROBES).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) % m)
}

/// The cache keys a file may hold (see the module documentation).
pub struct KnownKeys {
    layers: Vec<Layer>,
}

impl Default for KnownKeys {
    fn default() -> KnownKeys {
        KnownKeys {
            layers: vec![Layer::new(FIRST_CAPACITY)],
        }
    }
}

impl KnownKeys {
    /// Notes that the file holds (or is about to hold) `key`.
    pub fn insert(&mut self, key: &[u8; 32]) {
        let full = self.layers.last().is_none_or(|l| l.keys >= l.capacity);
        if full {
            let capacity = self
                .layers
                .last()
                .map_or(FIRST_CAPACITY, |l| l.capacity * 2);
            self.layers.push(Layer::new(capacity));
        }
        if let Some(layer) = self.layers.last_mut() {
            layer.set(key);
        }
    }

    /// False when the file certainly does not hold `key`; true when it may.
    pub fn may_hold(&self, key: &[u8; 32]) -> bool {
        self.layers.iter().any(|l| l.may_hold(key))
    }
}

/// The filter every store of one file in this process shares, made by `fill` the first time (with
/// the keys the file holds) and again once no store of the file is open.
pub fn for_file(
    path: &Path,
    fill: impl FnOnce() -> Result<KnownKeys, String>,
) -> Result<Arc<Mutex<KnownKeys>>, String> {
    static OPEN: Mutex<Option<HashMap<PathBuf, Weak<Mutex<KnownKeys>>>>> = Mutex::new(None);
    let name = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut open = OPEN
        .lock()
        .map_err(|_| "the filters' registry".to_string())?;
    let open = open.get_or_insert_with(HashMap::new);
    open.retain(|_, w| w.strong_count() > 0);
    if let Some(known) = open.get(&name).and_then(Weak::upgrade) {
        return Ok(known);
    }
    let known = Arc::new(Mutex::new(fill()?));
    open.insert(name, Arc::downgrade(&known));
    Ok(known)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    fn key(i: u64) -> [u8; 32] {
        Sha256::digest(i.to_le_bytes()).into()
    }

    #[test]
    fn every_key_put_is_held_and_few_others_seem_so() {
        let mut known = KnownKeys::default();
        let n = 100_000u64;
        for i in 0..n {
            known.insert(&key(i));
        }
        assert!((0..n).all(|i| known.may_hold(&key(i))), "no false negative");
        // It grew to hold them: 16k, 32k, 64k keys' layers.
        assert_eq!(known.layers.len(), 3);
        let false_positives = (n..2 * n).filter(|&i| known.may_hold(&key(i))).count();
        // Under 1 % a layer, three layers.
        assert!(
            false_positives < (3 * n / 100) as usize,
            "{false_positives} false positives in {n}"
        );
    }

    #[test]
    fn an_empty_filter_holds_nothing() {
        let known = KnownKeys::default();
        assert!((0..1000).all(|i| !known.may_hold(&key(i))));
    }

    #[test]
    fn stores_of_one_file_share_a_filter() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("s.db");
        std::fs::write(&path, b"").expect("file");
        let a = for_file(&path, || Ok(KnownKeys::default())).expect("a");
        let b = for_file(&path, || Err("filled again".into())).expect("shared");
        a.lock().expect("a").insert(&key(1));
        assert!(b.lock().expect("b").may_hold(&key(1)));
        drop((a, b));
        // Once none is open, the next open reads the file again.
        assert!(for_file(&path, || Err("filled again".into())).is_err());
    }
}
