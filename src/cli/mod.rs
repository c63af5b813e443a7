//! The command line: one module per subcommand, and the model flags they share (`llm`).
//!
//! Everything a run needs is checked before the first LLM call (script, framework, modules, provider
//! key, pricing table, prompts), so bad input costs nothing. Library errors become one-line messages at
//! this edge (anyhow).

#[cfg(feature = "cluster")]
mod cluster;
mod import;
mod llm;
#[cfg(feature = "mock-llm")]
mod mock_llm;
mod play;
mod questions;
mod replay;
mod report;
mod script;
mod stats;
mod summary;
mod sweep;
#[cfg(feature = "view")]
mod view;

use anyhow::Result;
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use sleuth_base::shutdown::Shutdown;

pub use import::ImportCommand;
pub use llm::LlmArgs;
#[cfg(feature = "mock-llm")]
pub use mock_llm::MockArgs;
pub use play::PlayArgs;
pub use questions::{GenerateArgs, QuestionsCommand};
pub use report::ReportArgs;
pub use script::{summary, ScriptCommand};
pub use sweep::SweepCommand;
#[cfg(feature = "view")]
pub use view::ViewArgs;

/// sleuth: plays LLM murder-mystery games (Jubensha) and evaluates the agents.
#[derive(Debug, Parser)]
#[command(name = "sleuth", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Play one game end to end and evaluate the agents.
    Play(Box<PlayArgs>),
    /// Serve the simulated model over an OpenAI-compatible HTTP API (for tests and load tests).
    #[cfg(feature = "mock-llm")]
    MockLlm(MockArgs),
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
    /// Browse a run directory in a web browser: sweeps with live progress and cost, each game's
    /// transcript as every character saw it, its evaluation and its model calls.
    #[cfg(feature = "view")]
    View(ViewArgs),
}

impl Cli {
    /// Parses the process's arguments (printing help, or a usage error and exiting, as clap does).
    /// `play` also learns which flags were typed rather than left at their defaults: `--spec` replays a
    /// recorded game and refuses any flag that would change it.
    pub fn parse_args() -> Cli {
        let mut command = Cli::command();
        let matches = command.get_matches_mut();
        let mut cli =
            Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut command).exit());
        if let (Command::Play(args), Some(m), Some(play)) = (
            &mut cli.command,
            matches.subcommand_matches("play"),
            command.find_subcommand("play"),
        ) {
            args.typed = play
                .get_arguments()
                .filter(|a| m.value_source(a.get_id().as_str()) == Some(ValueSource::CommandLine))
                .map(|a| match a.get_long() {
                    Some(long) => format!("--{long}"),
                    None => a.get_id().as_str().to_uppercase(),
                })
                .collect();
        }
        cli
    }
}

/// Runs the parsed command to its end on `runtime`: what the binary calls.
///
/// Not `runtime.block_on(run(cli))` in `main.rs`: an async fn's state machine is compiled in the crate
/// that polls it, so blocking there compiled every command's futures a second time, in the binary (75
/// CPU-seconds of a cold release build, on its serial tail; `docs/benchmarks.md`, *First build*). Called
/// here, they are compiled once, in the library.
///
/// The process's one [`Shutdown`] is made here: SIGINT and SIGTERM become its drain (first) and
/// "now" (second). A command that keeps state across a stop (a sweep, a worker, a server) is handed
/// it and ends itself; any other command is dropped at the first signal. After "now", a command gets
/// [`Shutdown::GRACE`] to finish its checkpoints before the process gives up on it.
pub fn run_on(runtime: &tokio::runtime::Runtime, cli: Cli) -> Result<()> {
    runtime.block_on(async move {
        let shutdown = Shutdown::new();
        let hint = cli.command.on_first_signal();
        let listener = shutdown.listen_for_signals(hint.unwrap_or(""));
        let outcome = tokio::select! {
            outcome = run(cli, shutdown.clone()) => outcome,
            stopped = stopped_outside(&shutdown, hint.is_some()) => Err(stopped),
        };
        // Ends the listener (the command is over either way).
        shutdown.now();
        let _ = listener.await;
        outcome
    })
}

/// Resolves when the process must stop without the command's own ending: at the first signal for a
/// command that does not watch the shutdown, or [`Shutdown::GRACE`] after "now" for one that does.
async fn stopped_outside(shutdown: &Shutdown, watched: bool) -> anyhow::Error {
    if !watched {
        shutdown.draining().await;
        return anyhow::anyhow!("interrupted");
    }
    shutdown.stopping_now().await;
    tokio::time::sleep(Shutdown::GRACE).await;
    anyhow::anyhow!(
        "did not stop within {} s of the second signal; exiting without its last checkpoint",
        Shutdown::GRACE.as_secs()
    )
}

impl Command {
    /// For a command that watches the process's shutdown, what its first signal does (printed when
    /// it comes); `None` for one that is simply stopped.
    fn on_first_signal(&self) -> Option<&'static str> {
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
            #[cfg(feature = "view")]
            Command::View(_) => Some(""),
            #[cfg(feature = "mock-llm")]
            Command::MockLlm(_) => Some(""),
            _ => None,
        }
    }
}

/// Runs the parsed command; `shutdown` stops the commands that watch it (see [`run_on`]).
pub async fn run(cli: Cli, shutdown: Shutdown) -> Result<()> {
    match cli.command {
        Command::Play(args) => play::run(*args).await,
        #[cfg(feature = "mock-llm")]
        Command::MockLlm(args) => mock_llm::run(args, shutdown).await,
        Command::Script(cmd) => cmd.run(),
        Command::Questions(QuestionsCommand::Generate(args)) => questions::generate(*args).await,
        Command::Import(cmd) => import::run(cmd),
        Command::Report(args) => report::run(&args),
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
        #[cfg(feature = "view")]
        Command::View(a) => view::run(a, shutdown).await,
    }
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
