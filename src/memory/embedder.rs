//! Text → vector. The default is a local hashing embedder, so memory works with no key and no network;
//! `--embedder openai:MODEL` sends texts through the gateway instead (accounted like any call).

use std::sync::Arc;

use futures::future::BoxFuture;
use sha2::{Digest, Sha256};

use crate::llm::{CallTags, Gateway, LlmError, Usage};
use crate::text;

/// Dimensions of the hashing embedder. 256 keeps a 4-player game's memory small while leaving few
/// collisions among the few thousand distinct terms a script uses.
pub const DEFAULT_DIMS: usize = 256;

/// Deterministic feature hashing of words, word pairs and CJK character n-grams, L2-normalised.
/// Similar texts share terms, so cosine similarity approximates lexical overlap — a fair stand-in for a
/// neural embedder when the memory's job is to find what was said about a name, place or time.
#[derive(Debug, Clone, Copy)]
pub struct HashingEmbedder {
    pub dims: usize,
}

impl Default for HashingEmbedder {
    fn default() -> Self {
        HashingEmbedder { dims: DEFAULT_DIMS }
    }
}

impl HashingEmbedder {
    /// The vector of one text.
    pub fn embed_one(&self, input: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dims.max(1)];
        let terms = text::terms(input);
        let mut add = |feature: &str, weight: f32| {
            let h = Sha256::digest(feature.as_bytes());
            let idx = u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]) as usize
                % v.len();
            let sign = if h[8] & 1 == 0 { 1.0 } else { -1.0 };
            v[idx] += sign * weight;
        };
        for t in &terms {
            add(t, 1.0);
        }
        for w in terms.windows(2) {
            add(&format!("{} {}", w[0], w[1]), 0.5);
        }
        normalize(&mut v);
        v
    }
}

/// Scales a vector to unit length (leaves the zero vector alone).
pub fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// What an embedding call resolves to: unit vectors in input order, and the call's usage.
pub type EmbedFuture<'a> = BoxFuture<'a, Result<(Vec<Vec<f32>>, Usage), LlmError>>;

/// Text → unit vectors, with what the call cost. A trait so a game can use the local hashing embedder
/// or any embedding model behind the gateway, and tests or benchmarks their own.
pub trait Embedder: Send + Sync {
    /// Vectors (unit length) for the texts, in order, and the usage of the call that made them.
    fn embed<'a>(&'a self, texts: Vec<String>, tags: &'a CallTags) -> EmbedFuture<'a>;
}

/// A shared embedder.
pub type SharedEmbedder = Arc<dyn Embedder>;

impl Embedder for HashingEmbedder {
    fn embed<'a>(&'a self, texts: Vec<String>, _tags: &'a CallTags) -> EmbedFuture<'a> {
        Box::pin(async move {
            Ok((
                texts.iter().map(|t| self.embed_one(t)).collect(),
                Usage::default(),
            ))
        })
    }
}

/// An embedding model behind the gateway, e.g. `text-embedding-3-small`: retried, accounted and priced
/// like any other call.
#[derive(Clone)]
pub struct GatewayEmbedder {
    pub gateway: Gateway,
    pub model: String,
}

impl Embedder for GatewayEmbedder {
    fn embed<'a>(&'a self, texts: Vec<String>, tags: &'a CallTags) -> EmbedFuture<'a> {
        Box::pin(async move {
            if texts.is_empty() {
                return Ok((Vec::new(), Usage::default()));
            }
            let out = self.gateway.embed(&self.model, texts, tags.clone()).await?;
            let mut vs = out.vectors;
            vs.iter_mut().for_each(|v| normalize(v));
            Ok((vs, out.usage))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::dot;

    #[test]
    fn similar_texts_are_closer() {
        let e = HashingEmbedder::default();
        let a = e.embed_one("Ben saw Ada near the brandy decanter at 10 pm.");
        let b = e.embed_one("Who was near the brandy decanter?");
        let c = e.embed_one("The cook served fish soup.");
        assert!(dot(&a, &b) > dot(&a, &c));
        assert!((dot(&a, &a) - 1.0).abs() < 1e-5);
        assert_eq!(e.embed_one("same"), e.embed_one("same"));
    }

    #[test]
    fn chinese_is_embedded_by_characters() {
        let e = HashingEmbedder::default();
        let a = e.embed_one("阿达在白兰地酒瓶旁边。");
        let b = e.embed_one("谁在白兰地酒瓶旁边？");
        let c = e.embed_one("厨师做了鱼汤。");
        assert!(dot(&a, &b) > dot(&a, &c));
    }
}
