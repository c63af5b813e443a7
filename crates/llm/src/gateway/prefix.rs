//! The cacheable share of prompts: how much of each call's prompt a provider's prefix cache could have
//! served, under OpenAI's rule (issue 19).
//!
//! OpenAI caches the longest prefix a prompt shares with an earlier request of the same model, once
//! it is at least 1,024 tokens long, in steps of 128 tokens; vLLM's automatic prefix caching and
//! llama.cpp's slot cache reuse shared prefixes the same way. sleuth computes the same figure for every
//! chat call whatever the provider (the simulated one included), so that a prompt layout can be judged
//! offline, before anyone pays for it.
//!
//! **How.** The prompt is tokenized as sent ([`tokens::encode_messages`]: the messages in order, each
//! its role marker and its content under cl100k), cut into whole 128-token blocks, and each block is
//! hashed together with the hash of the block before it — a chain, like vLLM's block hashes, so equal
//! hashes mean equal prefixes. The tracker keeps the set of chain hashes seen per model in the run;
//! a new prompt's blocks are walked until one's chain hash is unseen, and the blocks before it are the
//! shared prefix. Every chain hash of the prompt is then added, so the set holds every prefix of every
//! prompt sent (it is closed under prefixes).
//!
//! **The run.** In a sweep (a call with a sweep scope) it is the process: every game of the node sends
//! to the same provider cache. In `sleuth play` (no scope) it is the game, whose set is dropped when its
//! tally is taken ([`PrefixTracker::take`]).
//!
//! **Per game, not per event.** A game's calls that run together (sensor readings, ballots, evaluation
//! answers) reach the tracker in any order, and which one of them finds the shared prefix first
//! depends on that order. Shared prefix lengths form an ultrametric (lcp(a,c) ≥ min(lcp(a,b),
//! lcp(b,c))), so the multiset of "longest prefix shared with an earlier prompt" over a set of prompts
//! is the same in every order, and so is the game's total; only which call gets which figure changes.
//! The total is therefore kept per game here and written to `result.json`, never on transcript
//! events, which stay the same at every call bound.
//!
//! **Bounded memory.** A run's set keeps at most two generations of [`GENERATION`] hashes each (8 bytes
//! and the set's overhead apiece: about 20 MB per model at the bound): when the current generation is
//! full it becomes the previous one and the one before is dropped; a hash found in the previous
//! generation is carried into the current one. That is an approximate least-recently-used eviction, as
//! providers' caches evict prefixes unused for minutes. Each prompt's hashes land in one generation
//! together, so the set stays closed under prefixes.
//!
//! **A prompt's head once.** A call's first message is most of its prompt (the character's script,
//! the same with each of its calls), and its blocks are the same every time: the first message's
//! whole blocks' chain hashes and the tokens after them are kept by the message's content hash
//! ([`Head`]), so a call encodes and hashes only what follows them. Issue 32: encoding and hashing
//! the whole prompt with every call was per-call work proportional to the script.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use sleuth_base::memo::{self, Memo};

use super::ledger::CallScope;
use crate::tokens;
use crate::types::{CallTags, ChatRequest, Message, Phase};

/// Tokens per block: the step in which OpenAI's cached prefix grows.
pub const BLOCK_TOKENS: usize = 128;
/// The shortest prefix OpenAI caches.
pub const MIN_CACHEABLE_TOKENS: u64 = 1024;
/// Chain hashes per generation of a run's set (see the module documentation).
const GENERATION: usize = 1 << 19;
/// First messages at least this long are kept as [`Head`]s; a shorter one is a block or two.
const HEAD_BYTES: usize = 4096;
/// Weight (in 8-byte words) of the heads kept per generation: 4 MiB, 8 for both generations when
/// full; a 32k-token script's head is ~260 words.
const HEAD_WORDS: usize = 1 << 19;

/// The chain hashes of a token sequence's whole blocks: block i's hash covers blocks 0..=i. XXH3
/// of each block's bytes seeded with the previous hash: every call's prompt is hashed whole, so the
/// hash should run at memory speed (std's SipHash is several times slower per byte).
pub fn chain_hashes(tokens: &[u32]) -> Vec<u64> {
    chain_hashes_after(0, tokens)
}

/// [`chain_hashes`] of blocks that follow a block whose chain hash is `prev` (0: none).
fn chain_hashes_after(mut prev: u64, tokens: &[u32]) -> Vec<u64> {
    let mut bytes = [0u8; BLOCK_TOKENS * 4];
    tokens
        .chunks_exact(BLOCK_TOKENS)
        .map(|block| {
            for (out, t) in bytes.chunks_exact_mut(4).zip(block) {
                out.copy_from_slice(&t.to_le_bytes());
            }
            prev = xxhash_rust::xxh3::xxh3_64_with_seed(&bytes, prev);
            prev
        })
        .collect()
}

/// The cacheable tokens of a prompt whose first `blocks` blocks were seen before: the shared prefix
/// when it reaches the minimum, else nothing.
pub fn cacheable_tokens(blocks: usize) -> u64 {
    let tokens = (blocks * BLOCK_TOKENS) as u64;
    if tokens >= MIN_CACHEABLE_TOKENS {
        tokens
    } else {
        0
    }
}

/// Prompt tokens sent and how many of them a prefix cache could have served.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptCacheTally {
    /// Prompt tokens as the tracker counts them (cl100k, one marker per message).
    pub prompt_tokens: u64,
    /// Of those, the tokens of prefixes shared with an earlier request of the same model in the run.
    pub cacheable_tokens: u64,
}

impl PromptCacheTally {
    /// The cacheable share of the prompt tokens; `None` when nothing was sent.
    pub fn share(&self) -> Option<f64> {
        (self.prompt_tokens > 0).then(|| self.cacheable_tokens as f64 / self.prompt_tokens as f64)
    }
}

impl std::ops::AddAssign for PromptCacheTally {
    fn add_assign(&mut self, o: Self) {
        self.prompt_tokens += o.prompt_tokens;
        self.cacheable_tokens += o.cacheable_tokens;
    }
}

/// A game's tallies by phase, and the bytes its calls had the tokenizer read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GamePromptCache {
    pub gameplay: PromptCacheTally,
    pub evaluation: PromptCacheTally,
    pub generation: PromptCacheTally,
    /// Bytes of text the gateway's calls for this game handed to the BPE (`tokens::metered`): texts
    /// the process's memo did not hold yet. Not a tally of the prompts: a game that only repeats what
    /// the process has seen tokenizes nothing.
    pub bytes_tokenized: u64,
}

impl GamePromptCache {
    /// Every phase together.
    pub fn total(&self) -> PromptCacheTally {
        let mut t = self.gameplay;
        t += self.evaluation;
        t += self.generation;
        t
    }

    fn phase_mut(&mut self, phase: Phase) -> &mut PromptCacheTally {
        match phase {
            Phase::Gameplay => &mut self.gameplay,
            Phase::Evaluation => &mut self.evaluation,
            Phase::Generation => &mut self.generation,
        }
    }
}

/// A first message's part of every prompt it starts (see the module documentation): the chain hashes
/// of its whole blocks (its role marker included), the tokens after them, and its length in tokens.
struct Head {
    chain: Vec<u64>,
    tail: Vec<u32>,
    tokens: u64,
}

impl Head {
    fn of(first: &Message) -> Head {
        let ids = tokens::encode_messages(std::slice::from_ref(first));
        let whole = ids.len() / BLOCK_TOKENS * BLOCK_TOKENS;
        Head {
            chain: chain_hashes(&ids[..whole]),
            tail: ids[whole..].to_vec(),
            tokens: ids.len() as u64,
        }
    }

    /// Its weight in the memo, in 8-byte words.
    fn words(&self) -> usize {
        self.chain.len() + self.tail.len() / 2 + 4
    }
}

/// A prompt's tokens and its chain hashes, as [`tokens::encode_messages`] and [`chain_hashes`] give
/// them, with a long first message taken from `heads`.
fn prompt_chain(heads: &Memo<Arc<Head>>, messages: &[Message]) -> (u64, Vec<u64>) {
    let Some((first, rest)) = messages
        .split_first()
        .filter(|(first, _)| first.content.len() >= HEAD_BYTES)
    else {
        let ids = tokens::encode_messages(messages);
        return (ids.len() as u64, chain_hashes(&ids));
    };
    let key = memo::key_parts(&[&[first.role as u8], first.content.as_bytes()]);
    let head = heads.get_or_insert_with(key, || {
        let head = Head::of(first);
        let words = head.words();
        (Arc::new(head), words)
    });
    // The head's last, partial block continues into the next messages.
    let mut after = head.tail.clone();
    after.extend(tokens::encode_messages(rest));
    let mut chain = Vec::with_capacity(head.chain.len() + after.len() / BLOCK_TOKENS);
    chain.extend_from_slice(&head.chain);
    let prev = head.chain.last().copied().unwrap_or(0);
    chain.extend(chain_hashes_after(prev, &after));
    let tokens = head.tokens + (after.len() - head.tail.len()) as u64;
    (tokens, chain)
}

/// Hashes the chain hashes' set with: they are XXH3 outputs already, so the value is its own hash
/// (std's SipHash would hash each of a 32k-token prompt's 256 blocks again).
#[derive(Default)]
struct ChainHasher(u64);

impl Hasher for ChainHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only `u64`s are hashed here; any other input is folded in all the same.
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = x;
    }
}

type ChainSet = HashSet<u64, BuildHasherDefault<ChainHasher>>;

/// The chain hashes one run has sent to one model, in two generations.
#[derive(Default)]
struct Seen {
    current: ChainSet,
    previous: ChainSet,
}

impl Seen {
    /// How many leading blocks of `chain` were seen before; then remembers all of them. The blocks
    /// found in the current generation (most of a prompt that repeats a script) are not inserted
    /// again.
    fn observe(&mut self, chain: &[u64]) -> usize {
        let mut carried = Vec::new();
        let mut seen = 0;
        for h in chain {
            let current = self.current.contains(h);
            if !current && !self.previous.contains(h) {
                break;
            }
            if !current {
                carried.push(*h);
            }
            seen += 1;
        }
        if self.current.len() + chain.len() > GENERATION {
            self.previous = std::mem::take(&mut self.current);
            self.current.extend(chain.iter().copied());
        } else {
            self.current.extend(carried);
            self.current.extend(chain[seen..].iter().copied());
        }
        seen
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.current.len() + self.previous.len()
    }
}

#[derive(Default)]
struct Inner {
    /// (run, model) → the chain hashes sent.
    runs: HashMap<(String, String), Seen>,
    /// Game id → its tallies so far.
    games: HashMap<String, GamePromptCache>,
}

/// The gateway's record of the prompt prefixes sent, per run and model, and of each game's cacheable
/// share (see the module documentation).
pub struct PrefixTracker {
    inner: Mutex<Inner>,
    /// Long first messages' heads, by content hash.
    heads: Memo<Arc<Head>>,
}

impl Default for PrefixTracker {
    fn default() -> Self {
        PrefixTracker {
            inner: Mutex::default(),
            heads: Memo::new(HEAD_WORDS),
        }
    }
}

impl PrefixTracker {
    /// Records one request's prompt and returns its tally: its tokens and the cacheable part.
    pub fn observe(
        &self,
        req: &ChatRequest,
        tags: &CallTags,
        scope: &CallScope,
    ) -> PromptCacheTally {
        // Tokenizing is the expensive part: done outside the lock.
        let (prompt_tokens, chain) = prompt_chain(&self.heads, &req.messages);
        let run = if scope.sweep.is_empty() {
            tags.game.clone()
        } else {
            String::new()
        };
        let mut inner = match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let seen = inner
            .runs
            .entry((run, req.model.clone()))
            .or_default()
            .observe(&chain);
        let tally = PromptCacheTally {
            prompt_tokens,
            cacheable_tokens: cacheable_tokens(seen),
        };
        tracing::trace!(
            agent = %tags.agent, purpose = %tags.purpose, prompt = tally.prompt_tokens,
            cacheable = tally.cacheable_tokens, "prefix cache"
        );
        *inner
            .games
            .entry(tags.game.clone())
            .or_default()
            .phase_mut(tags.phase) += tally;
        tally
    }

    /// Adds the bytes one call of `game` had the tokenizer read.
    pub fn add_tokenized(&self, game: &str, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let mut inner = match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        inner
            .games
            .entry(game.to_string())
            .or_default()
            .bytes_tokenized += bytes;
    }

    /// A game's tallies, forgotten here; a game played without a sweep scope takes its run's sets
    /// with it.
    pub fn take(&self, game: &str) -> GamePromptCache {
        let mut inner = match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        inner.runs.retain(|(run, _), _| run != game);
        inner.games.remove(game).unwrap_or_default()
    }

    /// Chain hashes held across all runs (for tests of the bound).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.inner
            .lock()
            .map(|i| i.runs.values().map(Seen::len).sum())
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Message;

    fn req(model: &str, system: &str, user: &str) -> ChatRequest {
        ChatRequest {
            model: model.into(),
            messages: vec![Message::system(system), Message::user(user)],
            temperature: 0.0,
            top_p: 1.0,
            max_tokens: 10,
            schema: None,
            logprobs: false,
            sample: 0,
            cache_key: None,
        }
    }

    fn tags(game: &str, phase: Phase) -> CallTags {
        CallTags {
            game: game.into(),
            agent: "Ada".into(),
            framework: "player".into(),
            phase,
            purpose: "ask".into(),
        }
    }

    /// A text of exactly `n` cl100k tokens (" a" is one token).
    fn words(n: usize, word: &str) -> String {
        let s = format!(" {word}").repeat(n);
        assert_eq!(tokens::count(&s), n as u64);
        s
    }

    #[test]
    fn a_shared_prefix_counts_in_whole_blocks_from_1024_tokens() {
        let t = PrefixTracker::default();
        let scope = CallScope::default();
        // 1 marker + 1,500 tokens of system prompt: 11 whole blocks (1,408 tokens) are shared.
        let system = words(1500, "a");
        let first = t.observe(
            &req("m", &system, "one"),
            &tags("g", Phase::Gameplay),
            &scope,
        );
        assert_eq!(first.cacheable_tokens, 0, "nothing was sent before");
        let second = t.observe(
            &req("m", &system, "two"),
            &tags("g", Phase::Gameplay),
            &scope,
        );
        assert_eq!(second.cacheable_tokens, 11 * 128);
        assert_eq!(second.prompt_tokens, 1 + 1500 + 1 + 1);
        // Another model shares nothing.
        let other = t.observe(
            &req("n", &system, "two"),
            &tags("g", Phase::Gameplay),
            &scope,
        );
        assert_eq!(other.cacheable_tokens, 0);
        // A prefix of 7 blocks (896 tokens) is below the minimum.
        let short = words(900, "a");
        let s = t.observe(
            &req("m", &short, "x"),
            &tags("g", Phase::Evaluation),
            &scope,
        );
        assert_eq!(s.cacheable_tokens, 0);
        let g = t.take("g");
        assert_eq!(g.gameplay.cacheable_tokens, 11 * 128);
        assert_eq!(g.evaluation.cacheable_tokens, 0);
        assert_eq!(g.total().prompt_tokens, 3 * 1503 + 903);
        assert_eq!(t.held(), 0, "a game without a sweep takes its sets with it");
    }

    #[test]
    fn a_difference_early_in_the_prompt_breaks_the_prefix_there() {
        let t = PrefixTracker::default();
        let scope = CallScope::default();
        let g = tags("g", Phase::Gameplay);
        t.observe(&req("m", &words(2000, "a"), "q"), &g, &scope);
        // Same length, but the 300th token differs: only the first two blocks match.
        let changed = format!("{}{}{}", words(299, "a"), words(1, "b"), words(1700, "a"));
        let c = t.observe(&req("m", &changed, "q"), &g, &scope);
        assert_eq!(c.cacheable_tokens, 0, "2 blocks are below the minimum");
        // The role of the first message is part of the prefix too.
        let as_user = ChatRequest {
            messages: vec![Message::user(words(2000, "a"))],
            ..req("m", "", "")
        };
        assert_eq!(t.observe(&as_user, &g, &scope).cacheable_tokens, 0);
    }

    #[test]
    fn in_a_sweep_the_run_is_the_process_and_in_play_the_game() {
        let system = words(1200, "a");
        let t = PrefixTracker::default();
        let play = CallScope::default();
        t.observe(&req("m", &system, "1"), &tags("g1", Phase::Gameplay), &play);
        let other_game = t.observe(&req("m", &system, "2"), &tags("g2", Phase::Gameplay), &play);
        assert_eq!(
            other_game.cacheable_tokens, 0,
            "games of `play` share nothing"
        );
        let sweep = CallScope {
            sweep: "s".into(),
            ..CallScope::default()
        };
        t.observe(
            &req("m", &system, "1"),
            &tags("g3", Phase::Gameplay),
            &sweep,
        );
        let next = t.observe(
            &req("m", &system, "2"),
            &tags("g4", Phase::Gameplay),
            &sweep,
        );
        assert_eq!(
            next.cacheable_tokens,
            9 * 128,
            "games of a sweep share the node's sets"
        );
        assert_eq!(t.take("g4").gameplay.cacheable_tokens, 9 * 128);
        assert_eq!(t.take("g4"), GamePromptCache::default(), "taken once");
    }

    #[test]
    fn the_game_total_does_not_depend_on_the_order_of_its_calls() {
        let base = words(1100, "a");
        let prompts = [
            req("m", &base, &words(400, "b")),
            req(
                "m",
                &base,
                &format!("{}{}", words(400, "b"), words(300, "c")),
            ),
            req("m", &base, &words(10, "d")),
            req("m", &format!("{}{}", words(600, "a"), words(900, "e")), "x"),
        ];
        let mut totals = Vec::new();
        for order in [[0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2], [2, 0, 3, 1]] {
            let t = PrefixTracker::default();
            for i in order {
                t.observe(
                    &prompts[i],
                    &tags("g", Phase::Gameplay),
                    &CallScope::default(),
                );
            }
            totals.push(t.take("g").total());
        }
        assert!(totals.iter().all(|x| *x == totals[0]), "{totals:?}");
        assert!(totals[0].cacheable_tokens > 0);
    }

    #[test]
    fn a_kept_head_gives_the_chain_of_the_whole_prompt() {
        let heads = Memo::new(HEAD_WORDS);
        // Long first messages ending at several places within a block, then other messages.
        for n in [1100, 1151, 1279, 2000] {
            let system = words(n, "a");
            for user in ["x", &words(300, "b")] {
                let messages = [Message::system(system.clone()), Message::user(user)];
                let ids = tokens::encode_messages(&messages);
                let whole = (ids.len() as u64, chain_hashes(&ids));
                assert_eq!(prompt_chain(&heads, &messages), whole, "first");
                assert_eq!(prompt_chain(&heads, &messages), whole, "from the memo");
            }
        }
        // A short first message, and none.
        let short = [Message::system("rules"), Message::user(words(300, "c"))];
        let ids = tokens::encode_messages(&short);
        assert_eq!(
            prompt_chain(&heads, &short),
            (ids.len() as u64, chain_hashes(&ids))
        );
        assert_eq!(prompt_chain(&heads, &[]), (0, Vec::new()));
    }

    #[test]
    fn the_set_is_bounded_by_two_generations() {
        let mut s = Seen::default();
        let chain: Vec<u64> = (0..GENERATION as u64 + 10).collect();
        for c in chain.chunks(1000) {
            s.observe(c);
        }
        assert!(s.len() <= 2 * GENERATION);
        // A new sequence fills the current generation; the oldest hashes go.
        let fresh: Vec<u64> = (u64::MAX - GENERATION as u64..u64::MAX).collect();
        for c in fresh.chunks(1000) {
            s.observe(c);
        }
        assert!(s.len() <= 2 * GENERATION);
        assert!(!s.current.contains(&0) && !s.previous.contains(&0));
    }
}
