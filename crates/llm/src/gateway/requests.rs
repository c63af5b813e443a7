//! The requests kept beside the cache, so that a reader (the viewer) can show what a call asked.
//!
//! The cache keys a chat call by a hash of its request (`cache.rs`) and stores only the answer: that
//! is all a replay needs. A researcher reading a game needs the messages too, so a live call's request
//! is kept under the same key — content-addressed twice over, because prompts repeat: a character's
//! script, the rules and the same question come back call after call. Each message is kept once under
//! the SHA-256 of its text (compressed with zstd), and a request is a small JSON record of its
//! parameters and its messages' hashes. On the viewer test's sweep (706 calls) the requests' messages
//! are 7.2 MB of text in 288 distinct messages (0.8 MB); kept this way they take 0.53 MB of the store
//! (records 0.20 MB, messages 0.33 MB), where compressing each request whole took 2.8 MB.
//!
//! A live call's request is kept in the answer's own write (`live.rs`, `Store::cache_put_kept`): one
//! job for the store's writer, not two, the second of which looked up the ledger row the first had
//! just made (issue 32). It is kept on a best-effort basis all the same: a request that cannot be
//! written is rolled back alone, and losing one loses something to read, never a call's answer or its
//! cost. A batch call's request is kept when the call enters the journal, in a write of its own that
//! nobody waits for.
//!
//! **Compressed once.** A message the store already holds is named by its row and not compressed
//! again: [`KeptMessages`] remembers (bounded) the hashes this gateway has stored with the rows the
//! store answered, and only the others are compressed (issue 32: compressing a character's script
//! again with each of its calls was per-call work proportional to the prompt). A hash is remembered
//! only once its write has committed, so a message lost to a failed write is compressed and sent
//! again next time.
//!
//! **Appended, not inserted by hash.** The embedded store appends new messages and the request under
//! new rows (`Store::put_request`) instead of inserting them into b-trees keyed by their hashes: a
//! random key dirties a random leaf, read, written to the WAL and copied at the checkpoint, and a
//! sweep's profile put a quarter of its CPU per call there (issue 32, docs/performance.md section 9).
//! The price is that the store finds a message by row, not by hash: a message this gateway has
//! forgotten, or that another process kept, is stored again. The record still names messages by
//! hash, so a reader matches texts to the record's messages as before.
//!
//! **Hashed once.** Finding that a message is kept needs its SHA-256, and a script's SHA-256 with
//! every call was a seventh of a 32k-token call's CPU (issue 32). So a long message's SHA-256 is kept
//! by its XXH3-128 content hash ([`sleuth_base::memo`]), which is several times cheaper to compute:
//! the names stored are the same SHA-256s (a collision of the 128-bit hash among even billions of
//! texts is vanishingly unlikely, as for the token memo).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sleuth_base::memo::{self, Memo};
use sleuth_store::KeptMessage;

use crate::types::{ChatRequest, ChatRole, Message, OutputStyle};

/// zstd's level: 3 is its default, fast enough to run on every live call.
const LEVEL: i32 = 3;
/// The largest message a reader decompresses: a corrupt row cannot ask for a huge buffer.
const MAX_MESSAGE: usize = 64 * 1024 * 1024;

/// A message's address: the SHA-256 of its text.
pub type MessageHash = [u8; 32];

/// What one call's request leaves in the store: its record and its messages in order, each the
/// store's row of one kept before or a new one's hash and compressed text; and the new ones' hashes
/// by position, to remember with the rows the store answers.
#[derive(Debug, Clone)]
pub struct Kept {
    pub record: Vec<u8>,
    pub messages: Vec<KeptMessage>,
    pub new: Vec<(usize, MessageHash)>,
}

/// A request as kept: everything but the messages' texts, which are named by their hashes.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    model: String,
    messages: Vec<(ChatRole, String)>,
    temperature: f32,
    top_p: f32,
    max_tokens: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    schema: Option<(String, OutputStyle)>,
    logprobs: bool,
    sample: u64,
}

/// A request as a reader gets it back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeptRequest {
    pub model: String,
    /// Each message with its text; `None` where the text is missing (a kill between the writes).
    pub messages: Vec<(ChatRole, Option<String>)>,
    pub temperature: f32,
    pub top_p: f32,
    pub max_tokens: u32,
    /// The reply's schema: its name and how the reply is written.
    pub schema: Option<(String, OutputStyle)>,
    pub logprobs: bool,
    pub sample: u64,
}

/// The hash a message is kept under.
pub fn message_hash(text: &str) -> MessageHash {
    Sha256::digest(text.as_bytes()).into()
}

/// Hashes per generation of [`KeptMessages`]: two generations of 2^18 hashes are ~20 MB at most,
/// and a sweep's distinct messages (scripts, rules, questions) are far fewer.
const KEPT_GENERATION: usize = 1 << 18;
/// Messages at least this long have their SHA-256 kept by content hash; hashing a shorter one costs
/// about as much as looking it up.
const DIGESTED_BYTES: usize = 4096;
/// Long messages' SHA-256s kept per generation (~60 bytes each: 8 MB for both generations when full).
const DIGESTS: usize = 1 << 16;

/// The messages this gateway has stored, each with the row the store keeps it under (see the module
/// documentation), and how many bytes it has compressed: the counter a test holds to "each message
/// compressed once". Bounded: a message it has forgotten is stored again under a new row, so the
/// store holds each message a few times at most, not once; a request names whichever row it was given.
pub struct KeptMessages {
    seen: Mutex<(HashMap<MessageHash, i64>, HashMap<MessageHash, i64>)>,
    /// Long messages' SHA-256s by XXH3-128 (see the module documentation).
    digests: Memo<MessageHash>,
    compressed: AtomicU64,
    hashed: AtomicU64,
}

impl Default for KeptMessages {
    fn default() -> Self {
        KeptMessages {
            seen: Mutex::default(),
            digests: Memo::new(DIGESTS),
            compressed: AtomicU64::new(0),
            hashed: AtomicU64::new(0),
        }
    }
}

impl KeptMessages {
    /// [`message_hash`] of `text`: a long one's from the memo when it has been hashed before.
    fn message_hash(&self, text: &str) -> MessageHash {
        let hash = || {
            self.hashed.fetch_add(text.len() as u64, Ordering::Relaxed);
            message_hash(text)
        };
        if text.len() < DIGESTED_BYTES {
            return hash();
        }
        self.digests
            .get_or_insert_with(memo::key(text.as_bytes()), || (hash(), 1))
    }

    /// The row a message is kept under, when this gateway remembers it.
    fn row(&self, hash: &MessageHash) -> Option<i64> {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.0.get(hash).or_else(|| seen.1.get(hash)).copied()
    }

    /// Remembers messages whose write has committed, with their rows.
    pub fn remember(&self, rows: impl IntoIterator<Item = (MessageHash, i64)>) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        for (h, row) in rows {
            if seen.0.len() >= KEPT_GENERATION {
                seen.1 = std::mem::take(&mut seen.0);
            }
            seen.0.insert(h, row);
        }
    }

    /// Remembers the new messages of `kept`, given the rows the store answered for its messages.
    pub fn remember_kept(&self, kept: &Kept, rows: &[i64]) {
        self.remember(
            kept.new
                .iter()
                .filter_map(|(at, h)| rows.get(*at).map(|row| (*h, *row))),
        );
    }

    /// Bytes of message text compressed so far.
    pub fn bytes_compressed(&self) -> u64 {
        self.compressed.load(Ordering::Relaxed)
    }

    /// Bytes of message text hashed with SHA-256 so far.
    pub fn bytes_hashed(&self) -> u64 {
        self.hashed.load(Ordering::Relaxed)
    }
}

thread_local! {
    /// One compression context per thread, reused: `zstd::bulk::compress` makes a context for every
    /// message (a megabyte of tables at level 3, allocated, set up and freed each time), which a profile
    /// of a 1,000-call-a-second sweep showed as ~4 % of its CPU in context set-up and the allocator.
    static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// `text` compressed at [`LEVEL`] with this thread's context; the same bytes as
/// `zstd::bulk::compress`.
fn compress(text: &[u8]) -> Option<Vec<u8>> {
    COMPRESSOR.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            *slot = Some(zstd::bulk::Compressor::new(LEVEL).ok()?);
        }
        slot.as_mut()?.compress(text).ok()
    })
}

/// What to store for `req`: its record, and the messages `kept` does not hold yet, compressed.
pub fn keep(req: &ChatRequest, kept: &KeptMessages) -> Option<Kept> {
    let mut messages = Vec::with_capacity(req.messages.len());
    let mut names = Vec::with_capacity(req.messages.len());
    let mut new: Vec<(usize, MessageHash)> = Vec::new();
    for (at, m) in req.messages.iter().enumerate() {
        let hash = kept.message_hash(&m.content);
        names.push((m.role, hex::encode(hash)));
        let message = if let Some(row) = kept.row(&hash) {
            KeptMessage::Row(row)
        } else if let Some((earlier, _)) = new.iter().find(|(_, h)| *h == hash) {
            KeptMessage::Same(*earlier)
        } else {
            kept.compressed
                .fetch_add(m.content.len() as u64, Ordering::Relaxed);
            new.push((at, hash));
            KeptMessage::New(hash, compress(m.content.as_bytes())?)
        };
        messages.push(message);
    }
    let record = Record {
        model: req.model.clone(),
        messages: names,
        temperature: req.temperature,
        top_p: req.top_p,
        max_tokens: req.max_tokens,
        schema: req.schema.as_ref().map(|s| (s.name.clone(), s.style)),
        logprobs: req.logprobs,
        sample: req.sample,
    };
    Some(Kept {
        record: serde_json::to_vec(&record).ok()?,
        messages,
        new,
    })
}

/// A kept request read back: `record` as stored, each message's compressed text from `text`.
/// `None` for a record that is not one (a corrupt row).
pub fn read(
    record: &[u8],
    mut text: impl FnMut(&MessageHash) -> Option<Vec<u8>>,
) -> Option<KeptRequest> {
    let r: Record = serde_json::from_slice(record).ok()?;
    let messages = r
        .messages
        .into_iter()
        .map(|(role, name)| {
            let hash: Option<MessageHash> = hex::decode(name).ok().and_then(|h| h.try_into().ok());
            let body = hash.and_then(|h| text(&h)).and_then(|b| {
                let raw = zstd::bulk::decompress(&b, MAX_MESSAGE).ok()?;
                String::from_utf8(raw).ok()
            });
            (role, body)
        })
        .collect();
    Some(KeptRequest {
        model: r.model,
        messages,
        temperature: r.temperature,
        top_p: r.top_p,
        max_tokens: r.max_tokens,
        schema: r.schema,
        logprobs: r.logprobs,
        sample: r.sample,
    })
}

impl KeptRequest {
    /// The messages whose texts were found.
    pub fn texts(&self) -> Vec<Message> {
        self.messages
            .iter()
            .filter_map(|(role, t)| {
                t.as_ref().map(|t| Message {
                    role: *role,
                    content: t.as_str().into(),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn the_reused_context_compresses_as_a_fresh_one() {
        // The second text after a longer first: a reused context must not carry anything over.
        for text in [
            "the pantry at nine ".repeat(500),
            "a short line".to_string(),
        ] {
            let ours = compress(text.as_bytes()).expect("compressed");
            let fresh = zstd::bulk::compress(text.as_bytes(), LEVEL).expect("compressed");
            assert_eq!(ours, fresh);
            assert_eq!(
                zstd::bulk::decompress(&ours, MAX_MESSAGE).expect("decoded"),
                text.as_bytes()
            );
        }
    }

    fn request(question: &str, sample: u64) -> ChatRequest {
        ChatRequest {
            model: "sim".into(),
            messages: vec![
                Message::system("You are the butler. At nine you were in the pantry. ".repeat(200)),
                Message {
                    role: ChatRole::User,
                    content: question.into(),
                },
            ],
            temperature: 0.7,
            top_p: 1.0,
            max_tokens: 256,
            schema: None,
            logprobs: false,
            sample,
            cache_key: None,
        }
    }

    #[test]
    fn requests_come_back_as_sent_and_share_their_repeated_messages() {
        let mut store: HashMap<MessageHash, Vec<u8>> = HashMap::new();
        let mut records = Vec::new();
        let memory = KeptMessages::default();
        let mut rows: Vec<(MessageHash, Vec<u8>)> = Vec::new();
        for (i, q) in ["Who had the key?", "Where were you at nine?"]
            .iter()
            .enumerate()
        {
            let kept = keep(&request(q, i as u64), &memory).expect("kept");
            // As the store does: a new message gets the next row, a kept one is named by its row.
            let mut answered = Vec::new();
            for m in &kept.messages {
                let row = match m {
                    KeptMessage::Row(row) => *row,
                    KeptMessage::New(h, b) => {
                        rows.push((*h, b.clone()));
                        rows.len() as i64 - 1
                    }
                    KeptMessage::Same(at) => answered[*at],
                };
                answered.push(row);
            }
            memory.remember_kept(&kept, &answered);
            for row in answered {
                let (h, b) = &rows[row as usize];
                store.entry(*h).or_insert(b.clone());
            }
            records.push(kept.record);
        }
        // The script was compressed once, for the first request; the second compressed its
        // question only.
        let script_len = request("", 0).messages[0].content.len() as u64;
        let questions = ("Who had the key?".len() + "Where were you at nine?".len()) as u64;
        assert_eq!(memory.bytes_compressed(), script_len + questions);
        // And hashed once: the second request found the script's SHA-256 by its content hash.
        assert_eq!(memory.bytes_hashed(), script_len + questions);
        // The script is stored once, compressed; the two questions once each.
        assert_eq!((store.len(), rows.len()), (3, 3));
        let script_len = request("", 0).messages[0].content.len();
        let stored: usize = store.values().map(Vec::len).sum();
        assert!(stored * 5 < script_len, "{stored} bytes stored");
        let back = read(&records[1], |h| store.get(h).cloned()).expect("a request");
        assert_eq!(back.texts(), request("Where were you at nine?", 1).messages);
        assert_eq!((back.sample, back.max_tokens), (1, 256));
        // A message whose text is missing is named as missing, not dropped silently.
        let first = records[0].clone();
        let partial = read(&first, |_| None).expect("the record alone");
        assert_eq!(partial.messages.len(), 2);
        assert!(partial.messages.iter().all(|(_, t)| t.is_none()));
        assert!(read(b"not json", |_| None).is_none());
    }
}
