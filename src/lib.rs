//! sleuth plays LLM murder-mystery games (Jubensha) and evaluates the agents.
//!
//! The library holds everything; the `sleuth` binary only parses flags and reports errors. Start at
//! [`game::play`] for one game end to end, and `docs/architecture.md` for how the parts fit.

pub mod agent;
pub mod backoff;
pub mod cli;
pub mod cluster;
pub mod cpu;
pub mod eval;
pub mod game;
pub mod llm;
pub mod memory;
pub mod mockllm;
pub mod questions;
pub mod report;
pub mod rules;
pub mod script;
pub mod store;
pub mod sweep;
pub mod telemetry;
pub mod text;
pub mod tls;
pub mod transcript;
pub mod view;
