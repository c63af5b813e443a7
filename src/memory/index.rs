//! The per-game memory index actor and its exact top-k search.

use std::collections::HashMap;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use super::embedder::SharedEmbedder;
use crate::llm::{CallTags, LlmError, Usage};
use crate::telemetry as tm;

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
}

/// A retrieved record.
#[derive(Debug, Clone, PartialEq)]
pub struct Recalled {
    pub text: String,
    pub score: f32,
    /// Sequence number of the transcript event the record came from.
    pub event: u64,
}

/// Dot product, written with eight accumulators so the compiler vectorises it.
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

/// Indices of the `k` candidates most similar to `query` (unit vectors: dot = cosine), best first.
/// Exact: a partial selection over all candidates, then a sort of the k winners.
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

/// Splits an observation into retrievable chunks of whole sentences, each prefixed with `label` (who
/// said it to whom) so a retrieved chunk still says where it came from.
pub fn chunk(label: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for s in crate::text::sentences(text) {
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
    vectors: Vec<Vec<f32>>,
    visible: HashMap<String, Vec<u32>>,
}

impl MemoryStore {
    /// Adds embedded chunks of one event, visible to the named agents.
    pub fn add(
        &mut self,
        event: u64,
        chunks: Vec<String>,
        vectors: Vec<Vec<f32>>,
        visible_to: &[String],
    ) {
        for (text, v) in chunks.into_iter().zip(vectors) {
            let id = self.vectors.len() as u32;
            self.texts.push(text);
            self.events.push(event);
            self.vectors.push(v);
            for a in visible_to {
                self.visible.entry(a.clone()).or_default().push(id);
            }
        }
    }

    /// The agent's `k` most similar records.
    pub fn search(&self, agent: &str, query: &[f32], k: usize) -> Vec<Recalled> {
        let Some(cands) = self.visible.get(agent) else {
            return Vec::new();
        };
        top_k(query, &self.vectors, cands, k)
            .into_iter()
            .map(|(i, score)| Recalled {
                text: self.texts[i as usize].clone(),
                score,
                event: self.events[i as usize],
            })
            .collect()
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
        self.vectors.len()
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
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
                        metrics::counter!(tm::MEMORY_RECORDS).increment(chunks.len() as u64);
                        st.store.add(event, chunks, vectors, &visible_to);
                        Ok(usage)
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
                        Some(q) => Ok((st.store.search(&agent, &q, k), usage)),
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
    }

    #[test]
    fn one_agents_records_are_invisible_to_another() {
        let e = HashingEmbedder::default();
        let mut m = MemoryStore::default();
        let secret = "Ada whispered that the brandy was poisoned.".to_string();
        m.add(
            1,
            vec![secret.clone()],
            vec![e.embed_one(&secret)],
            &["Ada".into()],
        );
        let public = "The host opened the game.".to_string();
        m.add(
            2,
            vec![public.clone()],
            vec![e.embed_one(&public)],
            &["Ada".into(), "Ben".into()],
        );
        let q = e.embed_one("brandy poisoned");
        assert_eq!(m.search("Ada", &q, 5)[0].text, secret);
        let ben = m.search("Ben", &q, 5);
        assert!(
            ben.iter().all(|r| r.text != secret),
            "Ben must not see Ada's private record"
        );
        assert_eq!(ben.len(), 1);
        assert!(m.search("Cy", &q, 5).is_empty());
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
