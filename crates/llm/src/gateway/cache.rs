//! The content-addressed cache: a call's answer stored under a hash of everything that decides it.
//!
//! **Key** = sha256 of a versioned, length-prefixed encoding of: the endpoint (provider and base URL),
//! the model id the endpoint is asked for, every message (role and text), temperature, top-p,
//! max tokens, the response schema (name, style and JSON), whether log-probabilities are asked for, and
//! the sample index. Every part is length-prefixed, so no two different calls encode alike. Embedding
//! calls hash the endpoint, the model and every input. Because the sample index comes from (game seed,
//! caller, call number), a replayed game asks exactly the keys it asked before — a killed game replays
//! at no cost up to where it stopped — and two arms that share a prefix (rounds = 3 and rounds = 5)
//! share its calls.
//!
//! **Value** = the answer with its usage (and log-probabilities), or the vectors with their token count,
//! so a hit is accounted with the tokens the call used — at $0, counted apart from live calls.
//!
//! **Single flight**: two games asking the same key at once (arms sharing a prefix start together) make
//! one live call; the second waits for the first's answer instead of paying for it again.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sleuth_base::memo::{self, Memo};
use tokio::sync::oneshot;

use crate::provider::EmbedResponse;
use crate::types::{ChatRequest, ChatResponse, ChatRole, OutputStyle, TokenLogprob, TokenUsage};
use sleuth_store::Store;

/// Bumped when the encoding below changes, so old entries are never misread as new ones.
const KEY_VERSION: &[u8] = b"sleuth-cache-v1";

/// A cache key.
pub type Key = [u8; 32];

struct KeyHasher(Sha256);

impl KeyHasher {
    fn new(kind: &[u8]) -> KeyHasher {
        let mut h = KeyHasher(Sha256::new());
        h.bytes(KEY_VERSION);
        h.bytes(kind);
        h
    }
    fn bytes(&mut self, b: &[u8]) {
        self.0.update((b.len() as u64).to_le_bytes());
        self.0.update(b);
    }
    fn u64(&mut self, x: u64) {
        self.0.update(x.to_le_bytes());
    }
    fn finish(self) -> Key {
        self.0.finalize().into()
    }
}

fn role_name(role: ChatRole) -> &'static [u8] {
    match role {
        ChatRole::System => b"system",
        ChatRole::User => b"user",
        ChatRole::Assistant => b"assistant",
    }
}

/// A first message at least this long has the hash state after it kept ([`chat_key_start`]).
const LONG_FIRST_MESSAGE: usize = 4096;

/// The key hasher fed with everything up to and including the first message. A character's system
/// prompt, its script in it, opens every one of its calls: the SHA-256 state after it is kept in a
/// bounded memo by a fast hash of what was fed, so a call hashes only what follows its script (issue
/// 32). The key is the same as hashing everything afresh.
fn chat_key_start(endpoint: &str, model: &str, req: &ChatRequest) -> (KeyHasher, usize) {
    let fresh = || {
        let mut h = KeyHasher::new(b"chat");
        h.bytes(endpoint.as_bytes());
        h.bytes(model.as_bytes());
        h.u64(req.messages.len() as u64);
        h
    };
    let Some(first) = req
        .messages
        .first()
        .filter(|m| m.content.len() >= LONG_FIRST_MESSAGE)
    else {
        return (fresh(), 0);
    };
    static STARTS: std::sync::OnceLock<Memo<Sha256>> = std::sync::OnceLock::new();
    let n = (req.messages.len() as u64).to_le_bytes();
    let lens = [endpoint.len(), model.len(), first.content.len()].map(|l| (l as u64).to_le_bytes());
    let memo_key = memo::key_parts(&[
        &lens[0],
        endpoint.as_bytes(),
        &lens[1],
        model.as_bytes(),
        &n,
        role_name(first.role),
        &lens[2],
        first.content.as_bytes(),
    ]);
    // A SHA-256 state is about 200 bytes: 4 MiB keeps some 20,000 characters' starts.
    let state = STARTS
        .get_or_init(|| Memo::new(4 << 20))
        .get_or_insert_with(memo_key, || {
            let mut h = fresh();
            h.bytes(role_name(first.role));
            h.bytes(first.content.as_bytes());
            (h.0, 200)
        });
    (KeyHasher(state), 1)
}

/// The key of a chat call to `model` at `endpoint`.
pub fn chat_key(endpoint: &str, model: &str, req: &ChatRequest) -> Key {
    let (mut h, done) = chat_key_start(endpoint, model, req);
    for m in &req.messages[done..] {
        h.bytes(role_name(m.role));
        h.bytes(m.content.as_bytes());
    }
    h.u64(u64::from(req.temperature.to_bits()));
    h.u64(u64::from(req.top_p.to_bits()));
    h.u64(u64::from(req.max_tokens));
    match &req.schema {
        None => h.u64(0),
        Some(s) => {
            h.u64(1);
            h.bytes(s.name.as_bytes());
            h.bytes(match s.style {
                OutputStyle::Json => b"json",
                OutputStyle::Sections => b"sections",
            });
            // serde_json writes object keys in insertion order (preserve_order); schemas are built by
            // code, so the same call builds the same text.
            h.bytes(s.schema.to_string().as_bytes());
        }
    }
    h.u64(u64::from(req.logprobs));
    h.u64(req.sample);
    h.finish()
}

/// The key of an embedding call.
pub fn embed_key(endpoint: &str, model: &str, inputs: &[String]) -> Key {
    let mut h = KeyHasher::new(b"embedding");
    h.bytes(endpoint.as_bytes());
    h.bytes(model.as_bytes());
    h.u64(inputs.len() as u64);
    for i in inputs {
        h.bytes(i.as_bytes());
    }
    h.finish()
}

/// A chat answer as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredChat {
    pub content: String,
    pub usage: TokenUsage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Vec<TokenLogprob>>,
    /// How long the live call that produced it took, from sending the request to its answer (the
    /// successful attempt; waits for slots, budget and rate limits excluded). Kept with the answer so
    /// a reader sees it however the call was later served; `None` for answers that came in a batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
}

impl StoredChat {
    pub fn encode(&self) -> Vec<u8> {
        // A struct of strings and numbers always serialises.
        serde_json::to_vec(self).unwrap_or_default()
    }
    pub fn decode(bytes: &[u8]) -> Option<StoredChat> {
        serde_json::from_slice(bytes).ok()
    }
    pub fn response(self) -> ChatResponse {
        ChatResponse {
            content: self.content,
            usage: Some(self.usage),
            logprobs: self.logprobs,
            notes: Default::default(),
        }
    }
}

/// Vectors as stored: count, dimensions and prompt tokens (u64 little-endian each), then the floats
/// (f32 little-endian) row by row. Binary because a JSON float array is five times larger and slow.
pub fn encode_vectors(vectors: &[Vec<f32>], prompt_tokens: u64) -> Vec<u8> {
    let dims = vectors.first().map_or(0, Vec::len);
    let mut out = Vec::with_capacity(24 + 4 * dims * vectors.len());
    out.extend_from_slice(&(vectors.len() as u64).to_le_bytes());
    out.extend_from_slice(&(dims as u64).to_le_bytes());
    out.extend_from_slice(&prompt_tokens.to_le_bytes());
    for v in vectors {
        for x in v {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    out
}

/// The inverse of [`encode_vectors`]; `None` for bytes of another shape (or rows of unequal length,
/// which are never stored).
pub fn decode_vectors(bytes: &[u8]) -> Option<EmbedResponse> {
    let word = |i: usize| -> Option<u64> {
        let b = bytes.get(i * 8..i * 8 + 8)?;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    };
    let (n, dims, tokens) = (
        usize::try_from(word(0)?).ok()?,
        usize::try_from(word(1)?).ok()?,
        word(2)?,
    );
    let body = bytes.get(24..)?;
    if body.len() != n.checked_mul(dims)?.checked_mul(4)? {
        return None;
    }
    let floats: Vec<f32> = body
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let vectors = if dims == 0 {
        vec![Vec::new(); n]
    } else {
        floats.chunks(dims).map(<[f32]>::to_vec).collect()
    };
    Some(EmbedResponse {
        vectors,
        prompt_tokens: Some(tokens),
    })
}

/// Keys landed recently enough that a lookup may have read the store just before their write
/// committed; two generations of this many are kept (see [`Flights`]).
const RECENT_LANDINGS: usize = 4_096;

/// The cache layer's state: the store that holds the entries and the calls in flight by key.
pub struct Cache {
    pub store: Arc<dyn Store>,
    /// The requests' messages this gateway has kept in `store` (`requests.rs`).
    pub kept: super::requests::KeptMessages,
    flights: Mutex<Flights>,
    lookups: tokio::sync::Semaphore,
}

/// Calls in flight, and the keys whose calls landed lately.
///
/// A lookup reads the store, then takes this lock to lead or wait. Between the two, the key's leader
/// may commit its answer and leave: the lookup then finds neither the value nor a flight, and would
/// pay for the same call again (a sweep of arms sharing prefixes measured a few such duplicates per
/// 10,000 calls). So a landing is remembered here, and a lookup that finds no flight but a recent
/// landing reads the store again instead of leading. The window is one store read long; two
/// generations of [`RECENT_LANDINGS`] keys cover it many times over at any rate a node reaches.
#[derive(Default)]
struct Flights {
    calls: HashMap<Key, Vec<oneshot::Sender<()>>>,
    landed: HashSet<Key>,
    landed_before: HashSet<Key>,
}

impl Flights {
    fn landed_lately(&self, key: &Key) -> bool {
        self.landed.contains(key) || self.landed_before.contains(key)
    }

    fn remember_landing(&mut self, key: Key) {
        if self.landed.len() >= RECENT_LANDINGS {
            self.landed_before = std::mem::take(&mut self.landed);
        }
        self.landed.insert(key);
    }
}

/// What a lookup found.
pub enum Lookup {
    /// The value was stored under the key.
    Hit(Key, Vec<u8>),
    /// Nobody has it yet: this caller makes the call, stores it and then [`Flight::land`]s it.
    Lead(Flight),
}

/// A live call others may be waiting for; dropping it — landed once its answer is stored, or not,
/// when the call failed — wakes them, and they look the key up again.
pub struct Flight {
    cache: Arc<Cache>,
    key: Key,
    landed: bool,
}

impl Drop for Flight {
    fn drop(&mut self) {
        let waiters = self
            .cache
            .flights
            .lock()
            .map(|mut f| {
                if self.landed {
                    f.remember_landing(self.key);
                }
                f.calls.remove(&self.key).unwrap_or_default()
            })
            .unwrap_or_default();
        for w in waiters {
            let _ = w.send(());
        }
    }
}

impl Cache {
    pub fn new(store: Arc<dyn Store>) -> Arc<Cache> {
        // As many lookups at once as the store takes well (`Store::max_parallel_lookups`): the
        // SQLite store answers reads from a pool of four connections, and a fifth read at the same
        // moment opens a connection of its own for one query — about three quarters of the CPU of a
        // gateway call when a thousand calls look up at once (`benches/gateway.rs`, profiled);
        // queued as cheap futures, every read stays on a warm connection. Redis answers many reads
        // at once over one connection, so a worker's round trips overlap.
        let lookups = tokio::sync::Semaphore::new(store.max_parallel_lookups().max(1));
        Arc::new(Cache {
            store,
            kept: super::requests::KeptMessages::default(),
            flights: Mutex::new(Flights::default()),
            lookups,
        })
    }

    /// The stored value of `key`, or the lead of its call. When another caller is already making the
    /// call, waits for it and looks again; a store that cannot be read counts as a miss (the call is
    /// made live rather than failing the game).
    pub async fn lookup(self: &Arc<Cache>, key: Key) -> Lookup {
        let mut reread = false;
        loop {
            // A closed semaphore cannot happen (it is never closed); reading without a permit is
            // still correct.
            let permit = self.lookups.acquire().await.ok();
            let found = self.store.cache_get(&key).await;
            drop(permit);
            match found {
                Ok(Some(v)) => return Lookup::Hit(key, v),
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "cache lookup failed; calling live"),
            }
            let lead = || {
                Lookup::Lead(Flight {
                    cache: self.clone(),
                    key,
                    landed: false,
                })
            };
            let wait = {
                let Ok(mut flights) = self.flights.lock() else {
                    return lead();
                };
                if !reread && !flights.calls.contains_key(&key) && flights.landed_lately(&key) {
                    // Stored after our read: read it (once; a store that cannot be read still
                    // ends in a live call).
                    reread = true;
                    continue;
                }
                match flights.calls.get_mut(&key) {
                    Some(waiters) => {
                        let (tx, rx) = oneshot::channel();
                        waiters.push(tx);
                        rx
                    }
                    None => {
                        flights.calls.insert(key, Vec::new());
                        return lead();
                    }
                }
            };
            // Woken when the leader lands its answer (then it is stored) or fails (then one of the
            // waiters leads the next try).
            let _ = wait.await;
        }
    }
}

impl Flight {
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// The answer is stored: lookups that read the store a moment too early read it again rather
    /// than make the call a second time.
    pub fn land(&mut self) {
        self.landed = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Message, ResponseSchema};

    fn req() -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: vec![Message::system("s"), Message::user("u")],
            temperature: 0.8,
            top_p: 1.0,
            max_tokens: 100,
            schema: None,
            logprobs: false,
            sample: 7,
            cache_key: None,
        }
    }

    #[test]
    fn every_part_of_a_call_is_in_its_key() {
        let base = chat_key("openai|http://a/v1", "m", &req());
        assert_eq!(base, chat_key("openai|http://a/v1", "m", &req()));
        let mut variants = vec![
            chat_key("openai|http://b/v1", "m", &req()),
            chat_key("openai|http://a/v1", "m2", &req()),
        ];
        let changes: Vec<fn(&mut ChatRequest)> = vec![
            |r| r.messages[1].content = format!("{}!", r.messages[1].content).into(),
            |r| r.messages.push(Message::user("")),
            |r| r.temperature = 0.7,
            |r| r.top_p = 0.9,
            |r| r.max_tokens = 101,
            |r| r.schema = Some(ResponseSchema::json("x", serde_json::json!({}))),
            |r| r.schema = Some(ResponseSchema::sections("x", serde_json::json!({}))),
            |r| r.logprobs = true,
            |r| r.sample = 8,
            // Moving text between messages changes the key (length prefixes).
            |r| {
                r.messages[0].content = "su".into();
                r.messages[1].content = "".into();
            },
        ];
        for change in changes {
            let mut r = req();
            change(&mut r);
            variants.push(chat_key("openai|http://a/v1", "m", &r));
        }
        for (i, v) in variants.iter().enumerate() {
            assert_ne!(*v, base, "variant {i} has the base key");
        }
        let unique: std::collections::BTreeSet<_> = variants.iter().collect();
        assert_eq!(unique.len(), variants.len());
        // The name the caller used is not part of the key, the model id the endpoint gets is.
        let mut aliased = req();
        aliased.model = "alias".into();
        assert_eq!(chat_key("openai|http://a/v1", "m", &aliased), base);
    }

    #[test]
    fn a_long_first_message_gives_the_key_of_hashing_everything_afresh() {
        // What chat_key computed before the start of a call was kept: one pass over every part.
        let afresh = |endpoint: &str, r: &ChatRequest| {
            let mut h = KeyHasher::new(b"chat");
            h.bytes(endpoint.as_bytes());
            h.bytes(r.model.as_bytes());
            h.u64(r.messages.len() as u64);
            for m in &r.messages {
                h.bytes(role_name(m.role));
                h.bytes(m.content.as_bytes());
            }
            h.u64(u64::from(r.temperature.to_bits()));
            h.u64(u64::from(r.top_p.to_bits()));
            h.u64(u64::from(r.max_tokens));
            h.u64(0);
            h.u64(u64::from(r.logprobs));
            h.u64(r.sample);
            h.finish()
        };
        let script = "A line of a long script.\n".repeat(400);
        let mut r = req();
        r.messages[0].content = script.as_str().into();
        for round in 0..3 {
            // The same start with other questions, then the same start under another model.
            r.messages[1].content = format!("question {round}").into();
            assert_eq!(chat_key("e", "m", &r), afresh("e", &r), "round {round}");
        }
        r.model = "m2".into();
        assert_eq!(chat_key("e", "m2", &r), afresh("e", &r));
        r.messages.push(Message::user("more"));
        assert_eq!(chat_key("e", "m2", &r), afresh("e", &r));
        r.messages[0].content = format!("{}!", r.messages[0].content).into();
        assert_eq!(chat_key("e", "m2", &r), afresh("e", &r));
    }

    #[test]
    fn landings_are_remembered_for_two_generations() {
        let mut f = Flights::default();
        let key = |i: usize| -> Key {
            let mut k = [0u8; 32];
            k[..8].copy_from_slice(&(i as u64).to_le_bytes());
            k
        };
        f.remember_landing(key(0));
        assert!(f.landed_lately(&key(0)));
        assert!(!f.landed_lately(&key(1)));
        // A full generation later the first key is still known; two later it is forgotten, and
        // what is kept stays bounded.
        for i in 1..=RECENT_LANDINGS {
            f.remember_landing(key(i));
        }
        assert!(f.landed_lately(&key(0)));
        for i in RECENT_LANDINGS + 1..=2 * RECENT_LANDINGS {
            f.remember_landing(key(i));
        }
        assert!(!f.landed_lately(&key(0)));
        assert!(f.landed_lately(&key(2 * RECENT_LANDINGS)));
        assert!(f.landed.len() + f.landed_before.len() <= 2 * RECENT_LANDINGS);
    }

    #[test]
    fn vectors_round_trip() {
        let v = vec![vec![0.5f32, -1.25, 3.0], vec![0.0, 1.0, f32::MIN_POSITIVE]];
        let back = decode_vectors(&encode_vectors(&v, 42)).expect("decodes");
        assert_eq!(back.vectors, v);
        assert_eq!(back.prompt_tokens, Some(42));
        assert!(decode_vectors(&[1, 2, 3]).is_none());
        let mut bad = encode_vectors(&v, 42);
        bad.pop();
        assert!(decode_vectors(&bad).is_none());
        assert_ne!(
            embed_key("e", "m", &["a".into(), "b".into()]),
            embed_key("e", "m", &["ab".into()])
        );
    }

    #[test]
    fn a_stored_chat_answer_round_trips() {
        let s = StoredChat {
            content: "Ada did it.".into(),
            usage: TokenUsage {
                prompt_tokens: 10,
                completion_tokens: 3,
                cached_tokens: 2,
            },
            logprobs: None,
            latency_ms: Some(840),
        };
        let back = StoredChat::decode(&s.encode()).expect("decodes");
        assert_eq!(back.content, "Ada did it.");
        assert_eq!(back.usage, s.usage);
        assert_eq!(back.latency_ms, Some(840));
        assert!(StoredChat::decode(b"not json").is_none());
    }
}
