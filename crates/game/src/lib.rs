//! One game, end to end: the transcript (its event log), the memory index, the agents of every
//! framework, the evaluation and the game's supervision tree; and question generation, which uses the
//! agents' prompts.
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
