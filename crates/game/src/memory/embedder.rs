//! Text → vector. The default is a local hashing embedder, so memory works with no key and no network;
//! `--embedder openai:MODEL` sends texts through the gateway instead (accounted like any call).

use std::sync::Arc;

use futures::future::BoxFuture;

use sleuth_base::text;
use sleuth_llm::{CallTags, Gateway, LlmError, Usage};

/// Dimensions of the hashing embedder: those of the text module's hashed vectors, which say why.
pub const DEFAULT_DIMS: usize = text::HASHED_DIMS;

/// The local embedder: [`text::hashed_vector`], which needs no key and no network.
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
        text::hashed_vector(input, self.dims)
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
            vs.iter_mut().for_each(|v| text::normalize_l2(v));
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
