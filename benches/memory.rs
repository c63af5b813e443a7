//! Memory retrieval micro-benchmarks: exact and quantised top-k, the hashing embedder and a per-agent
//! store search. Before timing, prints the quantised search's recall@8 against exact search and the bytes
//! per record of each storage, so speed and quality come from the same run.
//!
//! Run with `cargo bench --bench memory` (or `scripts/bench.sh`). See `docs/benchmarks.md`.

mod support;

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sleuth::memory::{recall_at_k, top_k, HashingEmbedder, MemoryStore, Storage, Vectors};

/// Records in the index: a long game with every agent's observations chunked.
const RECORDS: usize = 2_000;
/// Records recalled per prompt (the agents' default `top_k`).
const K: usize = 8;
/// Dimensions of a typical remote embedding model (e.g. `text-embedding-3-small`).
const REMOTE_DIMS: usize = 1_536;
/// Queries the recall figures average over.
const RECALL_QUERIES: usize = 200;

/// A random unit vector (uniform in the cube, then normalised: fine for timing).
fn unit_vector(rng: &mut ChaCha8Rng, dims: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dims).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

const NAMES: &[&str] = &[
    "Ada",
    "Ben",
    "Clara",
    "Gideon",
    "Marsh",
    "Ormsby",
    "purser",
    "stewardess",
];
const VERBS: &[&str] = &[
    "saw",
    "heard",
    "followed",
    "argued with",
    "met",
    "avoided",
    "warned",
    "questioned",
];
const PLACES: &[&str] = &[
    "cabin 7",
    "the saloon",
    "B deck",
    "the car deck",
    "the bridge",
    "the galley",
    "the promenade",
    "the radio room",
];
const TIMES: &[&str] = &[
    "10 pm",
    "half past eleven",
    "midnight",
    "12:40 am",
    "1 am",
    "1:12 am",
    "2 am",
    "dawn",
];
const OBJECTS: &[&str] = &[
    "the master key",
    "a brass spanner",
    "the brandy decanter",
    "a torn letter",
    "the ledger",
    "a wet raincoat",
    "the cabin lamp",
    "a pocket watch",
];

/// A generated observation of a dozen to twenty words, like one chunk of what a player said.
fn sentence(rng: &mut ChaCha8Rng) -> String {
    let pick = |rng: &mut ChaCha8Rng, xs: &[&'static str]| *xs.choose(rng).expect("non-empty");
    format!(
        "[{}] I {} {} near {} at {}, and {} was carrying {} while the ship rolled.",
        pick(rng, NAMES),
        pick(rng, VERBS),
        pick(rng, NAMES),
        pick(rng, PLACES),
        pick(rng, TIMES),
        pick(rng, NAMES),
        pick(rng, OBJECTS),
    )
}

/// The same vectors in a flat store.
fn stored(vectors: &[Vec<f32>], storage: Storage) -> Vectors {
    let mut s = Vectors::new(vectors[0].len(), storage).expect("valid dimensions");
    for v in vectors {
        s.push(v).expect("valid vector");
    }
    s
}

/// Clustered unit vectors, like real embeddings: 50 topics, each record its topic's centre plus noise of
/// the same length (cosine to the centre ≈ 0.7).
fn clustered(rng: &mut ChaCha8Rng, n: usize, dims: usize) -> Vec<Vec<f32>> {
    let centres: Vec<Vec<f32>> = (0..50).map(|_| unit_vector(rng, dims)).collect();
    (0..n)
        .map(|_| {
            let c = centres.choose(rng).expect("non-empty");
            let noise = unit_vector(rng, dims);
            let mut v: Vec<f32> = c.iter().zip(&noise).map(|(a, b)| a + b).collect();
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= n);
            v
        })
        .collect()
}

/// Prints recall@8 of quantised against exact search, over `RECALL_QUERIES` queries, on three sets of
/// 2,000 × 1,536: the random timing set, clustered vectors, and the hashing embedder's vectors of
/// generated sentences (at 1,536 dims, where `Storage::Auto` quantises). Queries come from the set's own
/// distribution (for hashing: other generated sentences).
fn print_recall() {
    let e = HashingEmbedder { dims: REMOTE_DIMS };
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let sets: [(&str, Vec<Vec<f32>>); 3] = [
        (
            "random unit",
            (0..RECORDS + RECALL_QUERIES)
                .map(|_| unit_vector(&mut rng, REMOTE_DIMS))
                .collect(),
        ),
        (
            "clustered",
            clustered(&mut rng, RECORDS + RECALL_QUERIES, REMOTE_DIMS),
        ),
        (
            "hashing sentences",
            (0..RECORDS + RECALL_QUERIES)
                .map(|_| e.embed_one(&sentence(&mut rng)))
                .collect(),
        ),
    ];
    for (name, mut all) in sets {
        let queries = all.split_off(RECORDS);
        let store = stored(&all, Storage::Quantised);
        let r = recall_at_k(&store, &all, &queries, K).expect("searchable");
        eprintln!(
            "recall@{K} quantised vs exact, {name}, {RECORDS}x{REMOTE_DIMS}, {RECALL_QUERIES} queries: \
             {:.4} by id, {:.4} counting ties",
            r.ids, r.with_ties
        );
    }
    for storage in [Storage::Exact, Storage::Quantised] {
        let s = Vectors::new(REMOTE_DIMS, storage).expect("valid dimensions");
        eprintln!(
            "bytes per record at {REMOTE_DIMS} dims, {storage:?}: {} (flat; one Vec<f32> per record was {} + its 24-byte header + allocator overhead)",
            s.bytes_per_record(),
            REMOTE_DIMS * 4
        );
    }
}

/// Times exact `top_k` and the quantised store's search on the same set and query alternately, one call
/// each per round, and prints the median and fastest of each and their ratio. On a shared, noisy machine
/// criterion's benchmarks run one after the other and the load can change between them; alternating puts
/// both under the same load, so the ratio holds even when the absolute times do not.
fn print_paired_ratio(query: &[f32], vectors: &[Vec<f32>], candidates: &[u32]) {
    const ROUNDS: usize = 400;
    let store = stored(vectors, Storage::Quantised);
    let time = |f: &dyn Fn()| {
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64() * 1e6
    };
    let (mut old, mut new) = (Vec::with_capacity(ROUNDS), Vec::with_capacity(ROUNDS));
    for _ in 0..ROUNDS {
        old.push(time(&|| {
            black_box(top_k(black_box(query), vectors, candidates, K));
        }));
        new.push(time(&|| {
            black_box(
                store
                    .top_k(black_box(query), candidates, K)
                    .expect("searchable"),
            );
        }));
    }
    let stats = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[0])
    };
    let ((old_med, old_min), (new_med, new_min)) = (stats(&mut old), stats(&mut new));
    eprintln!(
        "paired, {ROUNDS} rounds, {RECORDS}x{REMOTE_DIMS}: exact top_k median {old_med:.1} µs (fastest \
         {old_min:.1}), quantised median {new_med:.1} µs (fastest {new_min:.1}); old/new {:.2}× by \
         median, {:.2}× by fastest",
        old_med / new_med,
        old_min / new_min
    );
}

fn bench_top_k(c: &mut Criterion) {
    print_recall();
    let mut g = c.benchmark_group("top_k");
    g.throughput(Throughput::Elements(RECORDS as u64));
    let candidates: Vec<u32> = (0..RECORDS as u32).collect();

    // (a) 2,000 random unit vectors of 1,536 dims.
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let vectors: Vec<Vec<f32>> = (0..RECORDS)
        .map(|_| unit_vector(&mut rng, REMOTE_DIMS))
        .collect();
    let query = unit_vector(&mut rng, REMOTE_DIMS);
    print_paired_ratio(&query, &vectors, &candidates);
    g.bench_function(
        BenchmarkId::new("random_unit", format!("{RECORDS}x{REMOTE_DIMS}")),
        |b| b.iter(|| top_k(black_box(&query), black_box(&vectors), &candidates, K)),
    );
    // The same set and query in the memory's flat stores: exact `f32`, and `i8` (what `Storage::Auto`
    // picks at 1,536 dims).
    for storage in [Storage::Exact, Storage::Quantised] {
        let store = stored(&vectors, storage);
        let name = format!("random_unit_{storage:?}").to_lowercase();
        g.bench_function(
            BenchmarkId::new(name, format!("{RECORDS}x{REMOTE_DIMS}")),
            |b| {
                b.iter(|| {
                    store
                        .top_k(black_box(&query), &candidates, K)
                        .expect("searchable")
                })
            },
        );
    }

    // (b) 2,000 hashing-embedder vectors of 256 dims over generated sentences.
    let e = HashingEmbedder::default();
    let mut rng = ChaCha8Rng::seed_from_u64(43);
    let vectors: Vec<Vec<f32>> = (0..RECORDS)
        .map(|_| e.embed_one(&sentence(&mut rng)))
        .collect();
    let query = e.embed_one("Who was near cabin 7 with the brass spanner at 1 am?");
    g.bench_function(
        BenchmarkId::new("hashing", format!("{RECORDS}x{}", e.dims)),
        |b| b.iter(|| top_k(black_box(&query), black_box(&vectors), &candidates, K)),
    );
    g.finish();
}

fn bench_embed(c: &mut Criterion) {
    let e = HashingEmbedder::default();
    // 30 words.
    let text = "At half past eleven I saw Ada leave the saloon with the purser's master key \
                in her hand, and she went down the stairs towards cabin 7 on B deck.";
    assert_eq!(text.split_whitespace().count(), 30);
    c.bench_function("hashing_embedder/embed_one_30_words", |b| {
        b.iter(|| e.embed_one(black_box(text)))
    });
}

fn bench_store_search(c: &mut Criterion) {
    let mut g = c.benchmark_group("memory_store");
    g.throughput(Throughput::Elements((RECORDS / 2) as u64));
    // The default embedder (exact storage), and a remote model's size (quantised storage).
    for dims in [256, REMOTE_DIMS] {
        let e = HashingEmbedder { dims };
        let mut rng = ChaCha8Rng::seed_from_u64(44);
        let mut store = MemoryStore::default();
        let everyone: Vec<String> = ["Ada", "Ben", "Clara", "Dev"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for i in 0..RECORDS {
            let text = sentence(&mut rng);
            let v = e.embed_one(&text);
            // Ada sees every other record (public speech); the rest went to other players privately.
            let visible: &[String] = if i % 2 == 0 {
                &everyone
            } else {
                &everyone[1..]
            };
            store
                .add(i as u64, vec![text], vec![v], visible)
                .expect("valid vectors");
        }
        assert_eq!(store.len(), RECORDS);
        let query = e.embed_one("Who was near cabin 7 with the brass spanner at 1 am?");
        assert_eq!(store.search("Ada", &query, K).expect("searchable").len(), K);
        g.bench_function(
            BenchmarkId::new(
                "search_one_agent",
                format!("{}of{RECORDS}x{dims}", RECORDS / 2),
            ),
            |b| b.iter(|| store.search(black_box("Ada"), black_box(&query), K)),
        );
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = support::criterion_config();
    targets = bench_top_k, bench_embed, bench_store_search
}
criterion_main!(benches);
