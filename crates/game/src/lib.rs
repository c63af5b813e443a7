//! One game, end to end: the transcript (its event log), the memory index, the agents of every
//! framework, the evaluation and the game's supervision tree; and question generation, which uses the
//! agents' prompts.
//!
//! Layer 3 (docs/architecture.md, *Crates*): it may use base, script and llm; it knows nothing of
//! sweeps, stores, clusters or the viewer — a game is played the same by `sleuth play`, a sweep and
//! a worker.
//!
//! Start at [`game::play`]. Inside, modules import downwards only: `transcript` and `memory` at the
//! bottom, then `agent` (never `eval` or `game`), then `eval` (never `game`), then `game`; `questions`
//! beside `eval`. This crate may not know sweeps, stores of runs, the cluster, the report or the viewer.

pub mod agent;
pub mod eval;
pub mod game;
pub mod memory;
pub mod questions;
pub mod transcript;
