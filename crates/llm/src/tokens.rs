//! Local token counting, for providers that report no usage and for the simulated model's honest usage,
//! and the token ids the gateway's prefix tracker compares.
//!
//! Uses the cl100k BPE that `bpe-openai` builds into the binary, so nothing is downloaded at run time.
//! It gives the ids of OpenAI's tiktoken (the tests check it against tiktoken-rs on every awkward case
//! of the pre-tokenizer) at about twice the speed, and builds its tables in a third of the time at start
//! (docs/performance.md, section 9).
//!
//! **Each distinct text is tokenized once per process.** A character's system prompt and script go
//! out with every one of its calls, and each call is counted for the window check, encoded for the
//! prefix tracker and (without reported usage) counted again for accounting: tokenizing all of that
//! every time was most of sleuth's CPU per call (issue 32). So a text is cut into chunks at places
//! where cl100k's pre-tokenizer always cuts too ([`chunks`]), and each chunk's token ids are kept in a
//! bounded, process-wide memo ([`memo`]) keyed by a 128-bit hash of its bytes. A text seen before
//! costs a hash and a lookup per chunk; a dialogue that grows by a few lines costs the new lines
//! (and the old last chunk) only. The ids are exactly those of encoding the whole text at once: cl100k
//! splits text into pieces by a regular expression before any merge, and no piece spans a chunk's end.
//!
//! The bytes actually handed to the BPE are counted, so that the memo is held to its promise by a
//! counter, not a stopwatch: process-wide ([`bytes_tokenized`], and the
//! `sleuth_llm_bytes_tokenized_total` metric) and for one piece of work ([`metered`]: the gateway
//! meters each call, and a game's `result.json` carries the sum as `usage.bytes_tokenized`).

mod memo;

use std::cell::Cell;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::types::Message;

/// Bytes handed to the BPE since the process started (texts the memo did not hold).
static BYTES_TOKENIZED: AtomicU64 = AtomicU64::new(0);

tokio::task_local! {
    /// Bytes handed to the BPE by the piece of work [`metered`] runs: a task-local, so calls that run
    /// at once on the same threads are each counted alone.
    static METER: Cell<u64>;
}

/// Bytes of text tokenized by the BPE so far in this process: what the memo did not save.
pub fn bytes_tokenized() -> u64 {
    BYTES_TOKENIZED.load(Ordering::Relaxed)
}

/// Runs `work` and returns what it gives with the bytes it had the BPE tokenize (texts the memo did
/// not hold). Nested, the inner meter counts alone.
pub async fn metered<F: Future>(work: F) -> (F::Output, u64) {
    METER
        .scope(Cell::new(0), async move {
            let out = work.await;
            (out, METER.with(Cell::get))
        })
        .await
}

/// [`metered`] for synchronous work.
pub fn metered_sync<R>(work: impl FnOnce() -> R) -> (R, u64) {
    METER.sync_scope(Cell::new(0), || {
        let out = work();
        (out, METER.with(Cell::get))
    })
}

/// Tokens in a piece of text under cl100k.
pub fn count(text: &str) -> u64 {
    let by_chunks = |text: &str| chunks(text).map(|c| chunk_ids(c).len() as u64).sum();
    if text.len() >= LONG_TEXT {
        memo::count_of(text, by_chunks)
    } else {
        by_chunks(text)
    }
}

/// Texts at least this long have their whole count kept too ([`memo::count_of`]), not only their
/// chunks' ids.
const LONG_TEXT: usize = 4096;

/// Prompt tokens of a chat, with OpenAI's per-message framing overhead (3 per message, 3 to prime the reply).
pub fn count_messages(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| 3 + count(&m.content) + 1)
        .sum::<u64>()
        + 3
}

/// The token ids of `text` under cl100k, as `encode_ordinary` gives them for the whole text.
pub fn encode(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for c in chunks(text) {
        out.extend_from_slice(&chunk_ids(c));
    }
    out
}

/// The token ids of a chat as a provider's prompt cache sees them: the messages in the order sent, each
/// a marker of its role (an id outside cl100k's vocabulary, standing for the chat template's role
/// tokens) followed by its content's tokens. Two requests share a cacheable prefix exactly as far as
/// these sequences agree (`llm::gateway`'s prefix tracker hashes them in blocks).
pub fn encode_messages(messages: &[Message]) -> Vec<u32> {
    let mut out = Vec::new();
    for m in messages {
        out.push(ROLE_MARKER + m.role as u32);
        for c in chunks(&m.content) {
            out.extend_from_slice(&chunk_ids(c));
        }
    }
    out
}

/// The first of the role markers of [`encode_messages`]: above every cl100k id (~100k).
const ROLE_MARKER: u32 = 1 << 30;

/// The longest prefix of `text` that fits in `budget` tokens, cut at a token boundary.
pub fn truncate(text: &str, budget: u64) -> String {
    let toks = encode(text);
    if toks.len() as u64 <= budget {
        return text.to_string();
    }
    // Decoding a cut in the middle of a multi-byte character fails; back off until it decodes.
    let bpe = bpe_openai::cl100k_base();
    let mut n = budget as usize;
    while n > 0 {
        if let Some(s) = bpe.decode(&toks[..n]) {
            return s;
        }
        n -= 1;
    }
    String::new()
}

/// The token ids of one chunk: from the memo, or encoded now and kept.
fn chunk_ids(chunk: &str) -> Arc<[u32]> {
    memo::get_or_insert(chunk, |c| {
        let n = c.len() as u64;
        BYTES_TOKENIZED.fetch_add(n, Ordering::Relaxed);
        let _ = METER.try_with(|m| m.set(m.get() + n));
        metrics::counter!(sleuth_base::telemetry::LLM_BYTES_TOKENIZED).increment(n);
        bpe_encode(c).into()
    })
}

/// cl100k's ids of `text`, as `bpe_openai`'s `encode` gives them, with tiktoken's shortcut: a
/// pre-tokenized piece that is itself a token (most words with their leading space) is looked up
/// whole. `encode` builds a backtracking encoder — two allocations and an automaton's search — for
/// every piece, and that was a third of all the allocations of a sweep (issue 32). Byte-pair merges
/// of a token's bytes end in the token (bpe checks it of every token when it builds its tables, and
/// tiktoken, whose ids these are, takes the same shortcut), so the ids are the same.
fn bpe_encode(text: &str) -> Vec<u32> {
    let cl100k = bpe_openai::cl100k_base();
    let whole = whole_tokens();
    let mut out = Vec::with_capacity(text.len() / 4 + 1);
    for piece in cl100k.split(text) {
        match whole.get(piece.as_bytes()) {
            Some(&id) => out.push(id),
            None => out.extend(cl100k.bpe.encode_via_backtracking(piece.as_bytes())),
        }
    }
    out
}

/// Every cl100k token by its bytes (~100k entries, a few MB, built at first use).
fn whole_tokens() -> &'static WholeTokens {
    static WHOLE: std::sync::OnceLock<WholeTokens> = std::sync::OnceLock::new();
    WHOLE.get_or_init(|| {
        let bpe = &bpe_openai::cl100k_base().bpe;
        let n = bpe.num_tokens();
        let mut map = WholeTokens::with_capacity_and_hasher(n, Default::default());
        for id in 0..n as u32 {
            map.insert(bpe.token_bytes(id), id);
        }
        map
    })
}

/// Keyed by foldhash, the hasher of hashbrown: a piece is a few bytes, and a streaming hash with a
/// buffer (XXH3's) cost as much as the lookup saved.
type WholeTokens = std::collections::HashMap<&'static [u8], u32, foldhash::fast::FixedState>;

/// A chunk ends at the first safe cut at or after this many bytes: long enough that a 15k-token
/// script is a few hundred lookups, short enough that what a call re-encodes of a grown text (its last
/// chunk, which the new lines change) is small. Safe cuts are only where a line starts, so a chunk
/// often runs well past this: at 1 KB a sweep's calls re-encoded ~580 bytes each of text seen before,
/// at 256 ~70 (issue 32, `docs/performance.md` section 9, the fourteenth piece).
const CHUNK_BYTES: usize = 256;

/// Cuts `text` into chunks that tokenize independently: each ends just after a run of line breaks
/// that the next character (not whitespace) follows. cl100k's pieces never span such a place — the
/// only pieces that hold a line break are runs of whitespace and punctuation with its trailing breaks,
/// and neither continues into a letter, digit or mark after the breaks — so the ids of the chunks,
/// concatenated, are the ids of the whole text. Text without such places is one chunk.
fn chunks(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = safe_cut(rest, CHUNK_BYTES).unwrap_or(rest.len());
        let (chunk, tail) = rest.split_at(end);
        rest = tail;
        Some(chunk)
    })
}

/// The first byte offset at or after `from` where `text` may be cut (see [`chunks`]), if any.
fn safe_cut(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = from.min(bytes.len());
    while i < bytes.len() {
        let at = i + bytes[i..].iter().position(|&b| b == b'\n' || b == b'\r')?;
        // The end of this run of line breaks.
        let mut end = at;
        while end < bytes.len() && (bytes[end] == b'\n' || bytes[end] == b'\r') {
            end += 1;
        }
        // A run of line breaks that ends the text is no cut; one followed by whitespace may belong
        // to a longer whitespace piece.
        match text[end..].chars().next() {
            Some(c) if !c.is_whitespace() => return Some(end),
            Some(_) => i = end,
            None => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(text: &str) -> Vec<u32> {
        tiktoken_rs::cl100k_base_singleton()
            .encode_ordinary(text)
            .into_iter()
            .collect()
    }

    #[test]
    fn counts_and_truncates() {
        assert_eq!(count("hello world"), 2);
        let t = truncate("one two three four five", 2);
        assert_eq!(count(&t), 2);
        assert!("one two three four five".starts_with(&t));
        assert_eq!(
            count_messages(&[Message::user("hello world")]),
            3 + 2 + 1 + 3
        );
    }

    #[test]
    fn encoded_messages_mark_roles_and_keep_order() {
        let a = encode_messages(&[Message::system("rules"), Message::user("hello world")]);
        let b = encode_messages(&[Message::user("rules"), Message::user("hello world")]);
        assert_eq!(a.len(), 1 + count("rules") as usize + 1 + 2);
        assert_ne!(a[0], b[0], "the role is part of the prefix");
        assert_eq!(a[1..], b[1..]);
    }

    #[test]
    fn truncation_keeps_whole_chinese_characters() {
        let t = truncate("他在晚上九点离开了图书馆。", 3);
        assert!("他在晚上九点离开了图书馆。".starts_with(&t));
    }

    /// Texts whose line breaks sit next to everything the pre-tokenizer treats specially: spaces
    /// before and after breaks, punctuation followed by breaks, CRLF, digits, contractions, Chinese.
    fn awkward_texts() -> Vec<String> {
        let parts = [
            "Alice said: \"I was in the library.\"",
            "\n",
            "\n\n",
            "\r\n",
            "  \n",
            "\n  indented",
            ".\n",
            "...\n\n",
            "1234567",
            "they'll",
            "'s",
            "他在晚上九点离开了图书馆。",
            "\n。",
            " \t\n",
            "word",
            "-\n-",
            "\u{3000}\n",
        ];
        let mut out = Vec::new();
        let mut seed: u64 = 0x5eed;
        for len in [1usize, 2, 5, 40, 400, 3000] {
            for _ in 0..20 {
                let mut s = String::new();
                for _ in 0..len {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    s.push_str(parts[(seed >> 33) as usize % parts.len()]);
                }
                out.push(s);
            }
        }
        out
    }

    #[test]
    fn chunked_ids_equal_the_whole_texts_ids() {
        for text in awkward_texts() {
            assert_eq!(encode(&text), whole(&text), "{text:?}");
            assert_eq!(count(&text), whole(&text).len() as u64);
            assert_eq!(chunks(&text).collect::<String>(), text);
        }
    }

    #[test]
    fn whole_token_shortcut_gives_the_ids_of_tiktoken_and_of_bpe() {
        // A real script, in English and Chinese, and the awkward texts: every piece either looked up
        // whole or merged, and the ids those of both encoders without the shortcut.
        let mut texts = awkward_texts();
        texts.push(include_str!("../../../examples/orchard-press.toml").to_string());
        texts.push(include_str!("../../../examples/zh-teahouse.toml").to_string());
        texts.push("Inspector Thistlewood's 1,234.56 receipts: naïve café — 🙂 x=42;".to_string());
        let cl100k = bpe_openai::cl100k_base();
        for text in texts {
            let ids = bpe_encode(&text);
            assert_eq!(ids, whole(&text), "{text:?}");
            assert_eq!(ids, cl100k.encode(text.as_str()), "{text:?}");
        }
    }

    #[test]
    fn chunks_end_only_where_a_line_break_run_meets_text() {
        let text = format!("{}\n\nnext", "a".repeat(CHUNK_BYTES));
        let cut: Vec<&str> = chunks(&text).collect();
        assert_eq!(cut.len(), 2);
        assert!(cut[0].ends_with("\n\n"));
        assert_eq!(cut[1], "next");
        // A break followed by a space is no cut; nor is a break that ends the text.
        let spaced = format!("{}\n next\n", "a".repeat(CHUNK_BYTES));
        assert_eq!(chunks(&spaced).count(), 1);
    }

    #[test]
    fn a_text_seen_before_is_not_tokenized_again() {
        // A text no other test uses.
        let script = format!(
            "{}\n",
            (0..400)
                .map(|i| format!("Line {i} of the memo test's script."))
                .collect::<Vec<_>>()
                .join("\n")
        );
        let (first, first_bytes) = metered_sync(|| count(&script));
        assert_eq!(first_bytes, script.len() as u64);
        // Seen again, and again with a line appended: only the last chunk and the new line are new.
        let grown = format!("{script}Alice: I saw the butler at nine.\n");
        let ((again, grown_count), extra) = metered_sync(|| (count(&script), count(&grown)));
        assert_eq!(again, first);
        assert_eq!(grown_count, whole(&grown).len() as u64);
        assert!(
            extra < 2 * CHUNK_BYTES as u64 + 64,
            "re-tokenized {extra} bytes of a {}-byte text",
            grown.len()
        );
    }
}
