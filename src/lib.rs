//! sleuth plays LLM murder-mystery games (Jubensha) and evaluates the agents.
//!
//! The library of the `sleuth` binary: its subcommands ([`cli`]), and the workspace's crates under the
//! module names they have always had (`sleuth::game`, `sleuth::llm`, …), so that tests, benches and
//! users of the library see one tree. Start at [`game::play`] for one game end to end, and
//! `docs/architecture.md` for how the crates fit.

pub mod cli;

pub use sleuth_base::{backoff, clock, cpu, fs, shutdown, telemetry, text, tls};
#[cfg(feature = "cluster")]
pub use sleuth_cluster as cluster;
pub use sleuth_export as export;
pub use sleuth_game::{agent, eval, game, memory, questions, transcript};
pub use sleuth_llm as llm;
#[cfg(feature = "mock-llm")]
pub use sleuth_mockllm as mockllm;
pub use sleuth_report as report;
pub use sleuth_script as script;
pub use sleuth_script::rules;
pub use sleuth_store as store;
pub use sleuth_sweep as sweep;
#[cfg(feature = "view")]
pub use sleuth_view as view;
