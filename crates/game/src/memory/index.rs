//! The per-game memory index actor and the store it searches.

use std::collections::HashMap;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use super::embedder::SharedEmbedder;
use super::vectors::{Storage, VectorError, Vectors};
use sleuth_base::telemetry as tm;
use sleuth_llm::{CallTags, LlmError, Usage};

/// Chunks longer than this many characters are split at sentence boundaries: a whole self-introduction
/// as one vector would match everything a little and nothing well.
const CHUNK_CHARS: usize = 320;

/// Why memory could not answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MemoryError {
    #[error("embedding failed: {0}")]
    Embed(#[from] LlmError),
    #[error("the memory index is not running")]
    Unavailable,
    #[error(transparent)]
    Vectors(#[from] VectorError),
}

/// A retrieved record.
#[derive(Debug, Clone, PartialEq)]
pub struct Recalled {
    pub text: String,
    pub score: f32,
    /// Sequence number of the transcript event the record came from.
    pub event: u64,
}

/// Splits an observation into retrievable chunks of whole sentences, each prefixed with `label` (who
/// said it to whom) so a retrieved chunk still says where it came from.
pub fn chunk(label: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for s in sleuth_base::text::sentences(text) {
        if !cur.is_empty() && cur.len() + s.len() > CHUNK_CHARS {
            out.push(format!("{label}{}", cur.trim()));
            cur.clear();
        }
        cur.push_str(&s);
        cur.push(' ');
    }
    if !cur.trim().is_empty() {
        out.push(format!("{label}{}", cur.trim()));
    }
    out
}

/// The index data, separate from the actor so benchmarks and tests can use it directly.
#[derive(Default)]
pub struct MemoryStore {
    texts: Vec<String>,
    events: Vec<u64>,
    /// Created by the first add, which fixes the dimension count (the embedder's).
    vectors: Option<Vectors>,
    storage: Storage,
    visible: HashMap<String, Vec<u32>>,
}

impl MemoryStore {
    /// An empty store whose vectors are kept as `storage` says ([`Storage::Auto`] is the default's).
    pub fn new(storage: Storage) -> Self {
        MemoryStore {
            storage,
            ..MemoryStore::default()
        }
    }

    /// Adds embedded chunks of one event, visible to the named agents. All or nothing: a vector of the
    /// wrong length or with a non-finite value (a misbehaving remote embedder) is refused before anything
    /// is stored.
    pub fn add(
        &mut self,
        event: u64,
        chunks: Vec<String>,
        vectors: Vec<Vec<f32>>,
        visible_to: &[String],
    ) -> Result<(), VectorError> {
        if chunks.len() != vectors.len() {
            return Err(VectorError::Count {
                texts: chunks.len(),
                vectors: vectors.len(),
            });
        }
        let Some(first) = vectors.first() else {
            return Ok(());
        };
        let store = match &mut self.vectors {
            Some(store) => store,
            None => self
                .vectors
                .insert(Vectors::new(first.len(), self.storage)?),
        };
        for v in &vectors {
            store.check(v)?;
        }
        store.reserve_exact(vectors.len());
        for (text, v) in chunks.into_iter().zip(vectors) {
            let id = store.push(&v)?;
            self.texts.push(text);
            self.events.push(event);
            for a in visible_to {
                self.visible.entry(a.clone()).or_default().push(id);
            }
        }
        Ok(())
    }

    /// The agent's `k` most similar records, best first.
    pub fn search(
        &self,
        agent: &str,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<Recalled>, VectorError> {
        let (Some(cands), Some(store)) = (self.visible.get(agent), &self.vectors) else {
            return Ok(Vec::new());
        };
        Ok(store
            .top_k(query, cands, k)?
            .into_iter()
            .map(|(i, score)| Recalled {
                text: self.texts[i as usize].clone(),
                score,
                event: self.events[i as usize],
            })
            .collect())
    }

    /// The stored vectors (none before the first add): their layout and size.
    pub fn vectors(&self) -> Option<&Vectors> {
        self.vectors.as_ref()
    }

    /// Every record the agent can see from events after `after`, in the order they happened: the running
    /// history a framework that reads the whole conversation (MIRAGE) works from.
    pub fn history(&self, agent: &str, after: Option<u64>) -> Vec<Recalled> {
        let Some(ids) = self.visible.get(agent) else {
            return Vec::new();
        };
        ids.iter()
            .map(|&i| i as usize)
            .filter(|&i| after.is_none_or(|a| self.events[i] > a))
            .map(|i| Recalled {
                text: self.texts[i].clone(),
                score: 0.0,
                event: self.events[i],
            })
            .collect()
    }

    /// Number of stored chunks (each stored once, however many agents see it).
    pub fn len(&self) -> usize {
        self.texts.len()
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }
}

/// Messages to a game's memory index.
pub enum MemoryMsg {
    /// Index an event's text for the agents that can see it; replies with the embedding cost.
    Add {
        event: u64,
        label: String,
        text: String,
        visible_to: Vec<String>,
        tags: CallTags,
        reply: RpcReplyPort<Result<Usage, MemoryError>>,
    },
    /// The agent's top-k records for a query, with the cost of embedding the query.
    Query {
        agent: String,
        text: String,
        k: usize,
        tags: CallTags,
        reply: RpcReplyPort<Result<(Vec<Recalled>, Usage), MemoryError>>,
    },
    /// Everything the agent can see from events after `after`, in order (no embedding, no cost).
    History {
        agent: String,
        after: Option<u64>,
        reply: RpcReplyPort<Vec<Recalled>>,
    },
}

/// The memory index actor of one game.
pub struct MemoryIndex;

/// State of a memory index actor.
pub struct MemoryState {
    store: MemoryStore,
    embedder: SharedEmbedder,
}

impl Actor for MemoryIndex {
    type Msg = MemoryMsg;
    type State = MemoryState;
    type Arguments = SharedEmbedder;

    async fn pre_start(
        &self,
        _me: ActorRef<Self::Msg>,
        embedder: SharedEmbedder,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(MemoryState {
            store: MemoryStore::default(),
            embedder,
        })
    }

    async fn handle(
        &self,
        _me: ActorRef<Self::Msg>,
        msg: MemoryMsg,
        st: &mut MemoryState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            MemoryMsg::Add {
                event,
                label,
                text,
                visible_to,
                tags,
                reply,
            } => {
                let chunks = chunk(&label, &text);
                let result = match st.embedder.embed(chunks.clone(), &tags).await {
                    Ok((vectors, usage)) => {
                        let n = chunks.len() as u64;
                        match st.store.add(event, chunks, vectors, &visible_to) {
                            Ok(()) => {
                                metrics::counter!(tm::MEMORY_RECORDS).increment(n);
                                Ok(usage)
                            }
                            Err(e) => Err(e.into()),
                        }
                    }
                    Err(e) => Err(MemoryError::Embed(e)),
                };
                let _ = reply.send(result);
            }
            MemoryMsg::Query {
                agent,
                text,
                k,
                tags,
                reply,
            } => {
                let result = match st.embedder.embed(vec![text], &tags).await {
                    Ok((mut v, usage)) => match v.pop() {
                        Some(q) => match st.store.search(&agent, &q, k) {
                            Ok(r) => Ok((r, usage)),
                            Err(e) => Err(e.into()),
                        },
                        None => Ok((Vec::new(), usage)),
                    },
                    Err(e) => Err(MemoryError::Embed(e)),
                };
                let _ = reply.send(result);
            }
            MemoryMsg::History {
                agent,
                after,
                reply,
            } => {
                let _ = reply.send(st.store.history(&agent, after));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::HashingEmbedder;

    #[test]
    fn one_agents_records_are_invisible_to_another() {
        let e = HashingEmbedder::default();
        for storage in [Storage::Auto, Storage::Exact, Storage::Quantised] {
            let mut m = MemoryStore::new(storage);
            let secret = "Ada whispered that the brandy was poisoned.".to_string();
            m.add(
                1,
                vec![secret.clone()],
                vec![e.embed_one(&secret)],
                &["Ada".into()],
            )
            .expect("added");
            let public = "The host opened the game.".to_string();
            m.add(
                2,
                vec![public.clone()],
                vec![e.embed_one(&public)],
                &["Ada".into(), "Ben".into()],
            )
            .expect("added");
            let q = e.embed_one("brandy poisoned");
            let search = |agent: &str| m.search(agent, &q, 5).expect("searched");
            assert_eq!(search("Ada")[0].text, secret, "{storage:?}");
            let ben = search("Ben");
            assert!(
                ben.iter().all(|r| r.text != secret),
                "Ben must not see Ada's private record"
            );
            assert_eq!(ben.len(), 1);
            assert!(search("Cy").is_empty());
        }
    }

    #[test]
    fn bad_vectors_are_refused_and_store_nothing() {
        let mut m = MemoryStore::default();
        let texts = || vec!["a".to_string(), "b".to_string()];
        let who = ["Ada".to_string()];
        m.add(1, texts(), vec![vec![1.0, 0.0], vec![0.0, 1.0]], &who)
            .expect("added");
        assert!(matches!(
            m.add(2, texts(), vec![vec![1.0, 0.0], vec![1.0, 0.0, 0.0]], &who),
            Err(VectorError::Dims {
                expected: 2,
                got: 3
            })
        ));
        assert!(matches!(
            m.add(2, texts(), vec![vec![1.0, 0.0], vec![f32::NAN, 0.0]], &who),
            Err(VectorError::NonFinite { at: 0 })
        ));
        assert!(matches!(
            m.add(2, texts(), vec![vec![1.0, 0.0]], &who),
            Err(VectorError::Count {
                texts: 2,
                vectors: 1
            })
        ));
        assert_eq!(m.len(), 2, "a refused batch stores none of its chunks");
        assert!(matches!(
            m.search("Ada", &[1.0], 3),
            Err(VectorError::Dims { .. })
        ));
        let got = m.search("Ada", &[1.0, 0.0], 3).expect("searched");
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].text, "a");
    }

    #[test]
    fn long_texts_are_chunked_by_sentence_with_their_label() {
        let long = "One sentence here. ".repeat(40);
        let chunks = chunk("[Ben] ", &long);
        assert!(chunks.len() > 1);
        assert!(chunks
            .iter()
            .all(|c| c.starts_with("[Ben] ") && c.len() <= CHUNK_CHARS + 40));
    }
}
