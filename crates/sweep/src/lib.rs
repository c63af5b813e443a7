//! Sweeps: thousands of games from one file, on one node, surviving interruptions.
//!
//! Layer 4 (docs/architecture.md, *Crates*): it may use base, script, store, llm and game; it knows
//! nothing of the cluster (which builds on it), the report or the viewer.
//!
//! - [`file`]: the sweep file (TOML) and its checks;
//! - [`plan`]: arms × scripts × repeats expanded into games, each a `GameSpec` with a stable id;
//! - [`tournament`]: the `[tournament]` section — models against each other, every ordered pair;
//! - [`estimate`]: an upper bound of calls, tokens and dollars before anything runs;
//! - [`models`]: the models table turned into the gateway's routes, limits and prices;
//! - [`node`]: the node supervisor (the gateway actor, restarted if it dies, and the scheduler), and
//!   the one place a node's gateway is assembled from a plan;
//! - [`scheduler`]: the local scheduler actor — games up to the concurrency, crashes retried once,
//!   the budget and Ctrl-C obeyed;
//! - [`runtime`]: one game of a planned sweep played and recorded, for the scheduler and a cluster's
//!   workers alike;
//! - [`runner`]: `sweep run` end to end — the run directory, its store and lock, resume;
//! - [`status`]: where a sweep stands, from its store alone;
//! - [`progress`]: the live display.
//!
//! Everything a sweep must not lose is in the store (`sleuth_store`), written before it is relied
//! on, so a killed sweep continues where it was when run again: finished games are not played
//! again, interrupted ones replay from the cache up to where they stopped.

pub mod estimate;
pub mod file;
pub mod models;
pub mod node;
pub mod plan;
pub mod progress;
pub mod runner;
pub mod runtime;
pub mod scheduler;
pub mod seats;
pub mod status;

use std::path::PathBuf;

pub use file::{tournament, LoadedSweep, Settings, SweepFile};
pub use plan::{Arm, Plan, PlannedGame};
pub use runner::{run, RunOptions, RunReport};

/// Why a sweep could not be planned or run.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("{path}: cannot read the sweep file: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: `{key}`: {message}")]
    Key {
        path: PathBuf,
        key: String,
        message: String,
    },
    #[error("{path}: script: {message}")]
    Script { path: PathBuf, message: String },
    #[error("{path}: arm `{arm}` on {script}: {message}")]
    Arm {
        path: PathBuf,
        arm: String,
        script: String,
        message: String,
    },
    #[error("{path}: `models.{model}.api_key_env`: the environment variable {var} is not set (the key is read from it; nothing was run)")]
    MissingKey {
        path: PathBuf,
        model: String,
        var: String,
    },
    #[error(transparent)]
    Store(#[from] sleuth_store::StoreError),
    #[error("{0}")]
    Io(String),
    #[error("{0}")]
    Setup(String),
}
