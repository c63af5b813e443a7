//! Agents' memories: what each agent observed, embedded once per game and searchable by similarity.
//!
//! The transcript is the event log (ARCHITECTURE.md 5b); the memory index holds each event's chunks once
//! and, per agent, references to the chunks that agent may see. An agent's query searches its own
//! references only, so one agent can never retrieve what another saw privately.

mod embedder;
mod index;
mod int8;
mod topk;
mod vectors;

pub use embedder::{Embedder, GatewayEmbedder, HashingEmbedder, SharedEmbedder, DEFAULT_DIMS};
pub use index::{chunk, MemoryError, MemoryIndex, MemoryMsg, MemoryStore, Recalled};
pub use vectors::{
    dot, recall_at_k, top_k, Recall, Storage, VectorError, Vectors, MAX_QUANTISED_DIMS,
    QUANTISE_MIN_DIMS,
};
