//! The records' vectors, stored flat, and the top-k search over them.
//!
//! All vectors of a game live in one buffer rather than one allocation per record: no per-record header
//! and allocator overhead, and a scan that walks memory in order. Large vectors (remote embedding models:
//! 512 dimensions and up) are stored quantised to `i8` ([`super::int8`]): 4× smaller, and at 2,000 × 1,536
//! about 4.5× faster to search than `f32` (under 100 µs), at a recall@8 against exact search of 0.99 on
//! random and clustered vectors (`docs/benchmarks.md`). Small ones — the default hashing embedder's 256 —
//! stay exact `f32`, searched by the same [`dot`] as before, so games with the default embedder recall
//! exactly what they always did.
//!
//! Why not keep `f32` beside the codes and rescore a candidate set exactly: that would make a record
//! 7.5 KiB at 1,536 dims, more than the 6 KiB it was, against the goal of ≤ 1 MiB per game; the 0.99
//! recall did not seem worth 5× the memory.

use super::int8;
use super::topk::Best;

/// Why a vector could not be stored or searched with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VectorError {
    #[error("embedding has {got} dimensions, the memory holds {expected}-dimension vectors")]
    Dims { expected: usize, got: usize },
    #[error("embedding has no dimensions")]
    EmptyVector,
    #[error("embedding has a non-finite value at dimension {at}")]
    NonFinite { at: usize },
    #[error("{dims} dimensions is more than quantised storage supports ({max})")]
    TooManyDims { dims: usize, max: usize },
    #[error("record {0} is not in the memory")]
    UnknownRecord(u32),
    #[error("the memory is full (2^32 records)")]
    Full,
    #[error("{texts} texts but {vectors} embedding vectors")]
    Count { texts: usize, vectors: usize },
}

/// From this many dimensions up, [`Storage::Auto`] quantises. Below it the exact search is already cheap
/// (2,000 × 256 dims: ~75 µs, 1 KiB a record) and the hashing embedder's sparse vectors, full of near-ties,
/// keep exactly the rankings the golden games pinned.
pub const QUANTISE_MIN_DIMS: usize = 512;

/// Dot product, written with eight accumulators so the compiler vectorises it.
///
/// The summation order is fixed (lane `i` sums elements `i`, `i + 8`, …; then the lanes, then the tail),
/// which makes the result the same on every machine: exact search's rankings depend on it.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Indices of the `k` candidates most similar to `query` (unit vectors: dot = cosine), best first, ties to
/// the lower index. Exact, over one `Vec` per record: the reference the stored search is measured against
/// (recall in tests, speed in `benches/memory.rs`). Panics on a candidate outside `vectors`.
pub fn top_k(query: &[f32], vectors: &[Vec<f32>], candidates: &[u32], k: usize) -> Vec<(u32, f32)> {
    let mut scored: Vec<(u32, f32)> = candidates
        .iter()
        .map(|&i| (i, dot(query, &vectors[i as usize])))
        .collect();
    let by_score = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if scored.len() > k && k > 0 {
        scored.select_nth_unstable_by(k - 1, by_score);
        scored.truncate(k);
    }
    scored.sort_by(by_score);
    scored.truncate(k);
    scored
}

/// How well a search found what exact search finds, averaged over queries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recall {
    /// Recall@k by id: the share of the exact top `k` records that the search also returned.
    pub ids: f64,
    /// The same, but a returned record also counts when its exact score equals the exact k-th score:
    /// with many exact ties at the boundary (hashing vectors of short sentences) exact search keeps the
    /// lower ids, and another of the tied records is an equally good answer.
    pub with_ties: f64,
}

/// [`Recall`] of `store`'s search against exact search ([`top_k`] over `exact`, the same vectors in
/// `f32`) at `k`, over `queries`, every record a candidate. For tests and `benches/memory.rs`.
pub fn recall_at_k(
    store: &Vectors,
    exact: &[Vec<f32>],
    queries: &[Vec<f32>],
    k: usize,
) -> Result<Recall, VectorError> {
    let all: Vec<u32> = (0..exact.len() as u32).collect();
    let (mut by_id, mut with_ties, mut wanted) = (0usize, 0usize, 0usize);
    for q in queries {
        let want = top_k(q, exact, &all, k);
        let got = store.top_k(q, &all, k)?;
        let Some(&(_, kth)) = want.last() else {
            continue;
        };
        wanted += want.len();
        by_id += want
            .iter()
            .filter(|(id, _)| got.iter().any(|(g, _)| g == id))
            .count();
        with_ties += got
            .iter()
            .filter(|(g, _)| dot(q, &exact[*g as usize]) >= kth)
            .count()
            .min(want.len());
    }
    let share = |n: usize| {
        if wanted == 0 {
            1.0
        } else {
            n as f64 / wanted as f64
        }
    };
    Ok(Recall {
        ids: share(by_id),
        with_ties: share(with_ties),
    })
}

/// How vectors are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Storage {
    /// Exact below [`QUANTISE_MIN_DIMS`] dimensions, quantised from there up to
    /// [`MAX_QUANTISED_DIMS`], exact beyond.
    #[default]
    Auto,
    /// `f32`, 4 bytes a dimension, exact search.
    Exact,
    /// `i8` with a scale per record, about 1 byte a dimension; ranks by the quantised dot product.
    Quantised,
}

/// The most dimensions [`Storage::Quantised`] accepts.
pub const MAX_QUANTISED_DIMS: usize = int8::MAX_DIMS;

enum Repr {
    Exact(Vec<f32>),
    Quantised {
        /// Rows of `stride` codes, zero-padded after `dims`.
        codes: Vec<i8>,
        scales: Vec<f32>,
        stride: usize,
    },
}

/// Vectors of one dimension count, one flat buffer for all records; record ids are push order.
pub struct Vectors {
    dims: usize,
    len: usize,
    repr: Repr,
}

impl Vectors {
    /// An empty store for `dims`-dimensional vectors.
    pub fn new(dims: usize, storage: Storage) -> Result<Self, VectorError> {
        if dims == 0 {
            return Err(VectorError::EmptyVector);
        }
        let quantise = match storage {
            Storage::Auto => (QUANTISE_MIN_DIMS..=MAX_QUANTISED_DIMS).contains(&dims),
            Storage::Exact => false,
            Storage::Quantised if dims > MAX_QUANTISED_DIMS => {
                return Err(VectorError::TooManyDims {
                    dims,
                    max: MAX_QUANTISED_DIMS,
                })
            }
            Storage::Quantised => true,
        };
        let repr = if quantise {
            Repr::Quantised {
                codes: Vec::new(),
                scales: Vec::new(),
                stride: int8::stride(dims),
            }
        } else {
            Repr::Exact(Vec::new())
        };
        Ok(Vectors { dims, len: 0, repr })
    }

    /// Dimensions of every stored vector.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Number of stored vectors.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True when stored as `i8`.
    pub fn is_quantised(&self) -> bool {
        matches!(self.repr, Repr::Quantised { .. })
    }

    /// Bytes one record's vector takes in the buffers (not counting unused capacity).
    pub fn bytes_per_record(&self) -> usize {
        match &self.repr {
            Repr::Exact(_) => self.dims * std::mem::size_of::<f32>(),
            Repr::Quantised { stride, .. } => stride + std::mem::size_of::<f32>(),
        }
    }

    /// Checks a vector's length and values: a wrong length would silently score against part of a
    /// record, and a NaN or infinity would make every score meaningless.
    pub fn check(&self, v: &[f32]) -> Result<(), VectorError> {
        if v.len() != self.dims {
            return Err(VectorError::Dims {
                expected: self.dims,
                got: v.len(),
            });
        }
        match v.iter().position(|x| !x.is_finite()) {
            Some(at) => Err(VectorError::NonFinite { at }),
            None => Ok(()),
        }
    }

    /// Makes room for exactly `records` more vectors. A game's index grows by a few records an event
    /// and then holds them through its evaluation, when every game of a sweep may be at its peak at
    /// once: grown by doubling, the buffer would carry up to as much unused room as it holds.
    pub fn reserve_exact(&mut self, records: usize) {
        match &mut self.repr {
            Repr::Exact(data) => data.reserve_exact(records * self.dims),
            Repr::Quantised {
                codes,
                scales,
                stride,
            } => {
                codes.reserve_exact(records * *stride);
                scales.reserve_exact(records);
            }
        }
    }

    /// Stores a vector and returns its record id.
    pub fn push(&mut self, v: &[f32]) -> Result<u32, VectorError> {
        self.check(v)?;
        let id = u32::try_from(self.len).map_err(|_| VectorError::Full)?;
        match &mut self.repr {
            Repr::Exact(data) => data.extend_from_slice(v),
            Repr::Quantised {
                codes,
                scales,
                stride,
            } => {
                let start = codes.len();
                codes.resize(start + *stride, 0);
                scales.push(int8::quantise_record(v, &mut codes[start..]));
            }
        }
        self.len += 1;
        Ok(id)
    }

    /// The `k` candidates most similar to `query`, best first, ties to the lower id, with their scores
    /// (the cosine for unit vectors; for quantised storage, the quantised estimate of it). Candidates
    /// must be ids this store returned.
    pub fn top_k(
        &self,
        query: &[f32],
        candidates: &[u32],
        k: usize,
    ) -> Result<Vec<(u32, f32)>, VectorError> {
        self.check(query)?;
        if let Some(&id) = candidates.iter().find(|&&i| i as usize >= self.len) {
            return Err(VectorError::UnknownRecord(id));
        }
        match &self.repr {
            Repr::Exact(data) => {
                let mut best = Best::new(k);
                for &id in candidates {
                    let i = id as usize;
                    best.offer(id, dot(query, &data[i * self.dims..(i + 1) * self.dims]));
                }
                Ok(best.into_sorted())
            }
            Repr::Quantised {
                codes,
                scales,
                stride,
            } => {
                let (q, q_scale) = int8::quantise_query(query, *stride);
                let mut best = Best::new(k);
                int8::Scan {
                    query: &q,
                    codes,
                    scales,
                    stride: *stride,
                    candidates,
                }
                .run(&mut best);
                let q_scale = f64::from(q_scale);
                Ok(best
                    .into_sorted()
                    .into_iter()
                    .map(|(id, key)| (id, (key * q_scale) as f32))
                    .collect())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::HashingEmbedder;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn unit(mut v: Vec<f32>) -> Vec<f32> {
        sleuth_base::text::normalize_l2(&mut v);
        v
    }

    fn random_unit(rng: &mut ChaCha8Rng, dims: usize) -> Vec<f32> {
        unit((0..dims).map(|_| rng.gen_range(-1.0f32..1.0)).collect())
    }

    fn filled(storage: Storage, vs: &[Vec<f32>]) -> Vectors {
        let mut s = Vectors::new(vs[0].len(), storage).expect("valid dims");
        for v in vs {
            s.push(v).expect("valid vector");
        }
        s
    }

    #[test]
    fn top_k_is_exact_and_ordered() {
        let vs = vec![
            vec![1.0, 0.0],
            vec![0.6, 0.8],
            vec![0.0, 1.0],
            vec![0.8, 0.6],
        ];
        let got = top_k(&[1.0, 0.0], &vs, &[0, 1, 2, 3], 2);
        assert_eq!(got.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0, 3]);
        assert_eq!(top_k(&[1.0, 0.0], &vs, &[2], 5).len(), 1);
        let flat = filled(Storage::Exact, &vs);
        assert_eq!(flat.top_k(&[1.0, 0.0], &[0, 1, 2, 3], 2).expect("ok"), got);
    }

    /// The default embedder's vectors stay exact, and the flat store returns bit for bit what the
    /// per-record reference does — ids, order and scores — for any candidate subset: the golden games'
    /// recalls cannot move.
    #[test]
    fn exact_storage_reproduces_the_reference_on_hashing_vectors() {
        let e = HashingEmbedder::default();
        let words = [
            "Ada", "brandy", "cabin", "key", "midnight", "saw", "deck", "letter", "the",
        ];
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut sentence = |n: usize| {
            (0..n)
                .map(|_| words[rng.gen_range(0..words.len())])
                .collect::<Vec<_>>()
                .join(" ")
        };
        // Short sentences over few words: many exact ties, which must fall to the lower id.
        let vs: Vec<Vec<f32>> = (0..400)
            .map(|i| e.embed_one(&sentence(2 + i % 5)))
            .collect();
        let queries: Vec<Vec<f32>> = (0..20).map(|_| e.embed_one(&sentence(3))).collect();
        let store = filled(Storage::Auto, &vs);
        assert!(!store.is_quantised());
        let every_third: Vec<u32> = (0..vs.len() as u32).filter(|i| i % 3 != 1).collect();
        for q in &queries {
            for k in [1, 8, 50] {
                let want = top_k(q, &vs, &every_third, k);
                let got = store.top_k(q, &every_third, k).expect("ok");
                assert_eq!(got.len(), want.len());
                for (g, w) in got.iter().zip(&want) {
                    assert_eq!(g.0, w.0);
                    assert_eq!(g.1.to_bits(), w.1.to_bits());
                }
            }
        }
    }

    /// Recall@8 of the quantised search against exact search, on seeded sets: random unit vectors (the
    /// hard case — every cosine near 0, the top ones a few thousandths apart) and clustered vectors (like
    /// real embeddings: a query's neighbours are clearly closer than the rest). A behaviour check, with
    /// margin below the figures in `docs/benchmarks.md`.
    #[test]
    fn quantised_search_recalls_what_exact_search_finds() {
        let dims = 1_536;
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let random: Vec<Vec<f32>> = (0..1_000).map(|_| random_unit(&mut rng, dims)).collect();
        let queries: Vec<Vec<f32>> = (0..20).map(|_| random_unit(&mut rng, dims)).collect();
        let store = filled(Storage::Auto, &random);
        assert!(store.is_quantised());
        let r = recall_at_k(&store, &random, &queries, 8).expect("ok");
        assert!(r.ids >= 0.95, "recall@8 on random vectors {r:?}");

        let centres: Vec<Vec<f32>> = (0..20).map(|_| random_unit(&mut rng, dims)).collect();
        let near = |rng: &mut ChaCha8Rng, c: &[f32]| {
            let noise = random_unit(rng, dims);
            unit(c.iter().zip(&noise).map(|(a, b)| a + 0.8 * b).collect())
        };
        let clustered: Vec<Vec<f32>> = (0..1_000)
            .map(|i| near(&mut rng, &centres[i % centres.len()]))
            .collect();
        let queries: Vec<Vec<f32>> = (0..20)
            .map(|i| near(&mut rng, &centres[(i * 7) % centres.len()]))
            .collect();
        let store = filled(Storage::Quantised, &clustered);
        let r = recall_at_k(&store, &clustered, &queries, 8).expect("ok");
        assert!(r.ids >= 0.95, "recall@8 on clustered vectors {r:?}");

        // Same inputs, same answer, and scores close to the exact cosines.
        let all: Vec<u32> = (0..clustered.len() as u32).collect();
        let a = store.top_k(&queries[0], &all, 8).expect("ok");
        assert_eq!(a, store.top_k(&queries[0], &all, 8).expect("ok"));
        for (id, s) in &a {
            assert!((s - dot(&queries[0], &clustered[*id as usize])).abs() < 2e-3);
        }
    }

    #[test]
    fn storage_is_chosen_by_dimensions() {
        let auto = |d| Vectors::new(d, Storage::Auto).expect("ok");
        assert!(!auto(256).is_quantised());
        assert!(auto(QUANTISE_MIN_DIMS).is_quantised());
        assert!(auto(1_536).is_quantised());
        assert!(!auto(MAX_QUANTISED_DIMS + 1).is_quantised());
        assert_eq!(auto(256).bytes_per_record(), 1_024);
        assert_eq!(auto(1_536).bytes_per_record(), 1_540);
        assert!(matches!(
            Vectors::new(MAX_QUANTISED_DIMS + 1, Storage::Quantised),
            Err(VectorError::TooManyDims { .. })
        ));
        assert!(matches!(
            Vectors::new(0, Storage::Auto),
            Err(VectorError::EmptyVector)
        ));
    }

    #[test]
    fn unknown_candidates_and_zero_vectors() {
        let mut s = Vectors::new(600, Storage::Auto).expect("ok");
        s.push(&[0.0; 600]).expect("the zero vector is stored");
        let mut one = vec![0.0; 600];
        one[3] = 1.0;
        s.push(&one).expect("ok");
        assert!(matches!(
            s.top_k(&one, &[0, 2], 1),
            Err(VectorError::UnknownRecord(2))
        ));
        let got = s.top_k(&one, &[0, 1], 2).expect("ok");
        assert_eq!((got[0].0, got[1]), (1, (0, 0.0)));
        assert!((got[0].1 - 1.0).abs() < 1e-6);
        assert_eq!(
            s.top_k(&[0.0; 600], &[0, 1], 2).expect("ok"),
            vec![(0, 0.0), (1, 0.0)]
        );
    }
}
