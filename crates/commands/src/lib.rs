//! The command line's edge for everything but the viewer and the mock server: the flags of `play`,
//! `script`, `questions`, `import`, `report`, `export`, `sweep` and the cluster's commands, and what
//! each does with them. Library errors become one-line messages here (anyhow), never below.
//!
//! Layer 7 (docs/architecture.md, *Crates*): it may use every crate that plays, sweeps, reports,
//! exports and runs a cluster; it knows nothing of the viewer and the mock server, whose commands
//! live in their own crates (`sleuth_view::cli`, `sleuth_mockllm::cli`). The `sleuth` root crate
//! only parses and dispatches.
//!
//! Why a crate of its own: every command's future is compiled where it is defined. In the root crate,
//! they were recompiled whenever any crate changed (the root is above all of them) — 72 s of a
//! one-file viewer edit's release rebuild (`docs/benchmarks.md`, *The workspace*). Here they are
//! recompiled only when a crate they use changes, and the root gets each as a boxed future
//! ([`run`]), whose code is compiled here.
//!
//! Everything a run needs is checked before the first LLM call (script, framework, modules, provider
//! key, pricing table, prompts), so bad input costs nothing.

mod annotate;
#[cfg(feature = "cluster")]
pub mod cluster;
mod export;
mod import;
mod llm;
mod play;
mod questions;
mod replay;
mod report;
mod script;
mod stats;
mod summary;
mod sweep;

use anyhow::Result;
use clap::Subcommand;
use futures::future::BoxFuture;
use futures::FutureExt;
use sleuth_base::shutdown::Shutdown;

pub use annotate::AnnotateCommand;
pub use export::ExportArgs;
pub use import::ImportCommand;
pub use llm::LlmArgs;
pub use play::seat::{set_seat_opener, FinishSeats, OpenedSeats, SeatOpener};
pub use play::PlayArgs;
pub use questions::{GenerateArgs, QuestionsCommand};
pub use report::ReportArgs;
pub use script::{summary, ScriptCommand};
pub use sweep::SweepCommand;

/// The subcommands of this crate (the root's `Command` adds `view` and `mock-llm`).
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Play one game end to end and evaluate the agents.
    Play(Box<PlayArgs>),
    /// Work with script files.
    #[command(subcommand)]
    Script(ScriptCommand),
    /// Evaluation questions.
    #[command(subcommand)]
    Questions(QuestionsCommand),
    /// Convert a public dataset's script into sleuth's format.
    #[command(subcommand)]
    Import(ImportCommand),
    /// Tables and figures of the papers (Markdown, HTML, CSV, PNG, SVG) from finished games.
    Report(ReportArgs),
    /// A run's games, characters, answers, calls, events and annotations as Parquet or CSV tables
    /// for pandas, polars and DuckDB; run again, it adds only what is new (`docs/data.md`).
    Export(ExportArgs),
    /// The papers' human studies over a run: annotation campaigns (`docs/humans.md`).
    #[command(subcommand)]
    Annotate(AnnotateCommand),
    /// Many games from one sweep file: plan it, run it (resumably), see where it stands.
    #[command(subcommand)]
    Sweep(SweepCommand),
    /// Serve a cluster's API and coordinate its workers (state in Redis).
    #[cfg(feature = "cluster")]
    Coordinator(cluster::CoordinatorArgs),
    /// Play a cluster's games: register with the coordinator and take work from its queue.
    #[cfg(feature = "cluster")]
    Worker(cluster::WorkerArgs),
    /// Send a sweep file (and the scripts it lists) to a cluster; prints the sweep's id.
    #[cfg(feature = "cluster")]
    Submit(cluster::SubmitArgs),
    /// Follow a cluster's sweep until it ends.
    #[cfg(feature = "cluster")]
    Watch(cluster::WatchArgs),
    /// Cancel a cluster's sweep: no game of it starts again.
    #[cfg(feature = "cluster")]
    Cancel(cluster::CancelArgs),
    /// The workers of a cluster: capacity, load, last heartbeat.
    #[cfg(feature = "cluster")]
    Workers(cluster::WorkersArgs),
    /// Download a cluster sweep's results to a directory `sleuth report` reads.
    #[cfg(feature = "cluster")]
    Results(cluster::ResultsArgs),
}

impl Command {
    /// For a command that watches the process's shutdown, what its first signal does (printed when
    /// it comes); `None` for one that is simply stopped.
    pub fn on_first_signal(&self) -> Option<&'static str> {
        match self {
            Command::Sweep(SweepCommand::Run(_)) => Some(
                "stopping: starting no new games; the games in flight finish \
                 (Ctrl-C again to stop them now — they continue from the cache next run)",
            ),
            #[cfg(feature = "cluster")]
            Command::Worker(_) => Some(
                "stopping: taking no new game; the games in flight finish \
                 (Ctrl-C again to stop now — other workers claim them)",
            ),
            #[cfg(feature = "cluster")]
            Command::Coordinator(_) => Some(""),
            _ => None,
        }
    }
}

/// Runs the parsed command; `shutdown` stops the commands that watch it. Boxed here, so that the
/// command's future is compiled in this crate and the root crate only polls a `dyn Future`.
pub fn run(command: Command, shutdown: Shutdown) -> BoxFuture<'static, Result<()>> {
    async move {
        match command {
            Command::Play(args) => play::run(*args).await,
            Command::Script(cmd) => cmd.run(),
            Command::Questions(QuestionsCommand::Generate(args)) => {
                questions::generate(*args).await
            }
            Command::Import(cmd) => import::run(cmd),
            Command::Report(args) => report::run(&args),
            Command::Export(args) => export::run(&args),
            Command::Annotate(cmd) => annotate::run(cmd),
            Command::Sweep(cmd) => sweep::run(cmd, shutdown).await,
            #[cfg(feature = "cluster")]
            Command::Coordinator(a) => cluster::coordinator(a, shutdown).await,
            #[cfg(feature = "cluster")]
            Command::Worker(a) => cluster::worker(a, shutdown).await,
            #[cfg(feature = "cluster")]
            Command::Submit(a) => cluster::submit(a).await,
            #[cfg(feature = "cluster")]
            Command::Watch(a) => cluster::watch_cmd(a).await,
            #[cfg(feature = "cluster")]
            Command::Cancel(a) => cluster::cancel(a).await,
            #[cfg(feature = "cluster")]
            Command::Workers(a) => cluster::workers(a).await,
            #[cfg(feature = "cluster")]
            Command::Results(a) => cluster::results(a).await,
        }
    }
    .boxed()
}

/// The numeric settings the types do not bound, named by their flags (a spec file holds the same).
/// Here, not in `play` or `replay`, because both check a spec with it: one built from flags, one read
/// from a file.
fn check_ranges(spec: &sleuth_game::game::GameSpec) -> Result<()> {
    if spec.protocol.wellplay.questions_per_round == 0 {
        anyhow::bail!("--questions-per-round must be at least 1");
    }
    if spec.eval_repeats == 0 {
        anyhow::bail!("--eval-repeats must be at least 1");
    }
    if !(1..=5).contains(&spec.rationale_threshold) {
        anyhow::bail!(
            "--rationale-threshold must be between 1 and 5, got {}",
            spec.rationale_threshold
        );
    }
    if let sleuth_game::game::JudgeChoice::Lexical { threshold } = spec.judge {
        if !(0.0..=1.0).contains(&threshold) {
            anyhow::bail!("--judge-threshold must be between 0 and 1, got {threshold}");
        }
    }
    Ok(())
}
