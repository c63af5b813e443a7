//! The gateway's CPU cost per call as the prompt grows: about 1k, 8k and 32k prompt tokens, every call
//! missing the cache and every call hitting it (issue 32: "CPU per call at 32k prompt tokens within
//! 2× of its 1k figure").
//!
//! `benches/gateway.rs` measures the layers with a two-line prompt, where nothing that grows with the
//! prompt shows. Here the prompt is shaped like a game's: a system message holding a character's
//! script of N tokens — the same text with every call, as a character's calls send it — and a short
//! user message with one marked line of dialogue (`window::dialogue`, as agents mark what was said).
//! Per call, the gateway then does work proportional to the script: the window check counts the
//! prompt, the prefix tracker encodes and hashes it, the cache key hashes it, and a live call keeps
//! its request beside the answer (`llm/gateway/requests.rs`).
//!
//! The gateway is built as `sleuth sweep run` builds it (`sweep::node::assemble`): under the node
//! supervisor, a route with limits (fair concurrency slots, RPM and TPM, set never to wait) and the
//! model's context window, the cache in a real SQLite store (with single flight and request
//! keeping), a budget, and the ledger spilling beside the run as a sweep's does — in front of a
//! provider that answers at once. What it leaves out is what a sweep adds only on request: the
//! Prometheus recorder (`--metrics-addr`), batch models and a cluster's shared limits.
//!
//! * `gateway_prompt/miss_cpu/{1k,8k,32k}`: each call asks a new question (and has a new sample
//!   index), so it misses the cache and is answered live, stored, kept and ledgered.
//! * `gateway_prompt/hit_cpu/{1k,8k,32k}`: the identical request again and again, answered from the
//!   store.
//! * `.../concurrent/100/{size}`: 100 such calls at once.
//!
//! The reported time is the whole process's CPU time (every tokio worker, the blocking pool running
//! store reads, the store's writer thread, the ledger's task) per call. It includes building each
//! request as an agent does: the script shared (`Message::content` is an `Arc<str>`), the user
//! message new.
//!
//! Run with `cargo bench --bench gateway_prompt` (`scripts/bench.sh` runs it too). See
//! `docs/performance.md`.

#[path = "support/cpu.rs"]
mod cpu;
mod support;
use cpu::{cpu_bench, Call};
use support::{process_cpu_time, InstantProvider};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use futures::future::join_all;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sleuth::llm::{
    tokens, window, Budget, BudgetLimits, CallScope, CallTags, ChatRequest, GatewayConfig,
    GatewayParts, GatewayState, Ledger, LedgerOptions, LimitSettings, Message, ModelLimits, Phase,
    Pricing, Route, Router, Spent,
};
use sleuth::store::{SqliteStore, Store};
use sleuth::sweep::node::{Node, NodeHandle};

const MODEL: &str = "gpt-4o-mini";
/// The model's window, as a sweep's models table gives it: every size fits, so the window check
/// counts the prompt and sends it whole.
const WINDOW: u32 = 128_000;
/// Calls at once in the concurrent cases.
const BATCH: usize = 100;
/// The sizes measured: the script's tokens (cl100k), by name.
const SIZES: [(&str, u64); 3] = [("1k", 1_024), ("8k", 8_192), ("32k", 32_768)];

/// A gateway as `sweep run` assembles it (see the module documentation), with its store in `dir`.
/// The node handle keeps the supervisor, and so the gateway, alive.
async fn sweep_gateway(dir: &std::path::Path) -> (NodeHandle, Ledger) {
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(&dir.join("sleuth.db")).expect("the store opens"));
    let mut route = Route::new(
        Arc::new(InstantProvider {
            reply: "Ada was in the saloon at 1 am; the steward saw her there.",
            completion_tokens: 14,
        }),
        Some("http://127.0.0.1:1/v1"),
    );
    route.window = Some(WINDOW);
    route.limits = ModelLimits::new(
        MODEL,
        LimitSettings {
            rpm: Some(u32::MAX),
            tpm: Some(u32::MAX),
            max_concurrency: Some(100_000),
            ..LimitSettings::default()
        },
    )
    .map(Arc::new);
    let mut router = Router::default();
    router.add(MODEL, route);
    let provider = router.provider_name();
    let ledger = Ledger::start_with(
        store.clone(),
        LedgerOptions::spilling_to(dir.join("ledger-spill.jsonl")),
    );
    let budget = Budget::new(
        BudgetLimits {
            max_usd: Some(1e12),
            max_tokens: Some(u64::MAX / 4),
        },
        Spent::default(),
    );
    let state = GatewayState::new(GatewayParts {
        router,
        pricing: Pricing::builtin(),
        config: GatewayConfig::default(),
        cache: Some(store),
        budget: Some(Arc::new(budget)),
        ledger: Some(ledger.clone()),
        shared: None,
        batch: None,
    });
    let mut node = Node::start(state, provider).await.expect("the node starts");
    node.gateway = node.gateway.scoped(Arc::new(CallScope {
        sweep: "bench".into(),
        run: "bench-run".into(),
        arm: "a1b2c3d4e5f6".into(),
    }));
    (node, ledger)
}

/// Words a script's sentences are made of (invented here, so no dataset's text is copied).
const NAMES: &[&str] = &[
    "Ada Finch",
    "the steward",
    "Captain Morrow",
    "Mrs Pell",
    "young Tobias",
    "the cook",
    "Doctor Hale",
    "the purser",
    "Miss Verity Lane",
    "the deckhand",
    "Mr Oswin",
    "the cardsharp",
];
const PLACES: &[&str] = &[
    "the saloon",
    "the upper deck",
    "the purser's office",
    "the galley",
    "cabin seven",
    "the engine room",
    "the starboard rail",
    "the chart room",
    "the lower corridor",
    "the smoking lounge",
    "the luggage hold",
    "the wheelhouse",
];
const TIMES: &[&str] = &[
    "a little after eleven",
    "at midnight",
    "just before one",
    "at a quarter past one",
    "around half past nine",
    "when the bell rang twice",
    "as the fog came in",
    "shortly after dinner",
    "before the lamps were trimmed",
    "at ten o'clock",
];
const THINGS: &[&str] = &[
    "a brass key",
    "a torn letter",
    "the silver flask",
    "a wet umbrella",
    "the ledger",
    "a pair of gloves",
    "a lantern",
    "the captain's watch",
    "a folded map",
    "a bottle of laudanum",
    "a pearl button",
    "the ship's manifest",
];
const DEEDS: &[&str] = &[
    "saw {name} leave {place} in a hurry",
    "heard raised voices coming from {place}",
    "found {thing} lying near {place}",
    "noticed that {name} was carrying {thing}",
    "spoke with {name} about the debt you both remember too well",
    "waited in {place} for someone who never came",
    "hid {thing} where nobody would think to look",
    "followed {name} as far as {place} and then lost sight of them",
    "lent {thing} to {name}, who promised to return it by morning",
    "argued with {name} over the money owed since the spring",
];
const FEELINGS: &[&str] = &[
    "You did not tell anyone, and you are not sure you should.",
    "It struck you as odd, though you could not say why at the time.",
    "You would rather the others did not learn of it.",
    "Looking back, you think it matters more than it seemed.",
    "You are certain of the hour, because you had just checked your watch.",
    "Nobody else was there to see it, as far as you know.",
    "If asked, you may say so, but do not volunteer it.",
];
const HEADINGS: &[&str] = &[
    "## Your background",
    "## What you did that evening",
    "## What you know about the others",
    "## Your secrets",
    "## What you must not reveal",
    "## Your goal in this game",
];

/// One sentence of a character's script.
fn sentence(rng: &mut ChaCha8Rng) -> String {
    let pick = |rng: &mut ChaCha8Rng, from: &[&'static str]| *from.choose(rng).expect("a word");
    let deed = pick(rng, DEEDS)
        .replace("{name}", pick(rng, NAMES))
        .replace("{place}", pick(rng, PLACES))
        .replace("{thing}", pick(rng, THINGS));
    let time = pick(rng, TIMES);
    let mut s = match rng.gen_range(0..3) {
        0 => format!("{} you {deed}.", capitalize(time)),
        1 => format!("You {deed} {time}."),
        _ => format!(
            "{} says you {deed} {time}, and that is true.",
            capitalize(pick(rng, NAMES))
        ),
    };
    if rng.gen_bool(0.3) {
        s.push(' ');
        s.push_str(pick(rng, FEELINGS));
    }
    s
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// A character's script of about `target` tokens (cl100k, counted with the project's tokenizer):
/// headed sections of paragraphs, generated from a seed so every run measures the same text. Grows a
/// paragraph at a time and stops at the first paragraph that reaches `target`.
fn script(target: u64, seed: u64) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = String::from(
        "You are Ada Finch, the stewardess of the night ferry. Play your character from the script \
         below: answer as she would, keep her secrets unless the rules say otherwise, and never \
         claim to know what she could not.\n\n",
    );
    let mut counted = tokens::count(&out);
    let mut paragraphs = 0usize;
    while counted < target {
        let mut p = String::new();
        if paragraphs.is_multiple_of(6) {
            p.push_str(HEADINGS[(paragraphs / 6) % HEADINGS.len()]);
            p.push_str("\n\n");
        }
        for i in 0..rng.gen_range(3..8) {
            if i > 0 {
                p.push(' ');
            }
            p.push_str(&sentence(&mut rng));
        }
        p.push_str("\n\n");
        // Paragraphs start with a letter after a blank line, where cl100k always cuts: their counts add.
        counted += tokens::count(&p);
        out.push_str(&p);
        paragraphs += 1;
    }
    out
}

/// The call a character makes with `script` as its system prompt; `n` picks the question and the
/// sample index (one per call, as in a game).
fn request(script: &Arc<str>, n: u64) -> ChatRequest {
    let said = window::dialogue(&format!(
        "Captain Morrow: I heard the purser's door close at {} past one.",
        n % 60
    ));
    ChatRequest {
        model: MODEL.into(),
        messages: vec![
            Message::system(Arc::clone(script)),
            Message::user(format!(
                "### What was said\n- {said}\n### Instructions\nQuestion {n}: where were you at \
                 1 am, and who saw you there? Answer in two sentences."
            )),
        ],
        temperature: 0.8,
        top_p: 1.0,
        max_tokens: 300,
        schema: None,
        logprobs: false,
        sample: n,
        cache_key: Some("0123456789abcdef/Ada".into()),
    }
}

fn tags() -> CallTags {
    CallTags {
        game: "0123456789abcdef0123456789abcdef".into(),
        agent: "Ada".into(),
        framework: "thinkthrice".into(),
        phase: Phase::Gameplay,
        purpose: "answer".into(),
    }
}

/// A chat call through `node`'s gateway with `script`, whose question `next` picks.
fn call(
    node: &NodeHandle,
    script: &Arc<str>,
    next: impl Fn() -> u64 + Send + Sync + 'static,
) -> Call {
    let (gateway, tags, script) = (node.gateway.clone(), tags(), script.clone());
    Arc::new(move || {
        let (gateway, tags) = (gateway.clone(), tags.clone());
        let req = request(&script, next());
        Box::pin(async move {
            let out = gateway.chat(req, tags).await;
            std::hint::black_box(out.expect("the call is answered"));
        })
    })
}

/// `one`, `BATCH` times at once.
fn concurrent(one: Call) -> Call {
    Arc::new(move || {
        let one = one.clone();
        Box::pin(async move {
            join_all((0..BATCH).map(|_| one())).await;
        })
    })
}

/// The scripts, one per size, with their measured sizes printed.
fn scripts() -> Vec<(&'static str, Arc<str>)> {
    SIZES
        .iter()
        .enumerate()
        .map(|(i, &(name, target))| {
            let text: Arc<str> = script(target, 0x5c21_9700 + i as u64).into();
            let req = request(&text, 0);
            eprintln!(
                "gateway_prompt/{name}: script {} tokens ({} bytes), prompt {} tokens with the chat \
                 framing (cl100k, sleuth_llm::tokens)",
                tokens::count(&text),
                text.len(),
                tokens::count_messages(&req.messages),
            );
            (name, text)
        })
        .collect()
}

fn bench_prompt_sizes(c: &mut Criterion) {
    if process_cpu_time().is_none() {
        eprintln!("gateway_prompt skipped: no process CPU clock on this platform");
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (node, ledger) = rt.block_on(sweep_gateway(dir.path()));
    // Misses: a question never asked before, across every size.
    let fresh = Arc::new(AtomicU64::new(1_000));
    let mut g = c.benchmark_group("gateway_prompt");
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(5));
    for (size, script) in scripts() {
        let fresh = fresh.clone();
        let miss = call(&node, &script, move || {
            fresh.fetch_add(1, Ordering::Relaxed)
        });
        // Hits: question 0, stored once before it is measured.
        let hit = call(&node, &script, || 0);
        rt.block_on(hit());
        for (name, one) in [("miss_cpu", miss), ("hit_cpu", hit)] {
            cpu_bench(&rt, &mut g, BenchmarkId::new(name, size), 1, one.clone());
            let id = BenchmarkId::new(format!("{name}/concurrent/{BATCH}"), size);
            cpu_bench(&rt, &mut g, id, BATCH as u64, concurrent(one));
        }
    }
    g.finish();
    rt.block_on(ledger.flush());
    let tally = ledger.tally();
    eprintln!(
        "gateway_prompt: {} live calls, {} cache hits recorded",
        tally.live.load(Ordering::Relaxed),
        tally.cache.load(Ordering::Relaxed)
    );
    node.gateway.stop();
    node.actor.stop(None);
}

criterion_group! {
    name = benches;
    config = support::criterion_config();
    targets = bench_prompt_sizes
}
criterion_main!(benches);
