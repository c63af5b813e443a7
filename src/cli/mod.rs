//! The command line: parses the flags and hands each command to the crate that runs it
//! (`sleuth_commands` for most, `sleuth_view::cli` and `sleuth_mockllm::cli` for the viewer and the
//! mock server).
//!
//! Nothing here is compiled per command: every command comes back as a boxed future built in its own
//! crate, so this crate — rebuilt whenever any crate below it changes — stays a few seconds of work
//! (`docs/benchmarks.md`, *The workspace*).

use anyhow::Result;
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use futures::future::BoxFuture;
use sleuth_base::shutdown::Shutdown;

pub use sleuth_commands::{
    summary, GenerateArgs, ImportCommand, LlmArgs, PlayArgs, QuestionsCommand, ReportArgs,
    ScriptCommand, SweepCommand,
};
#[cfg(feature = "mock-llm")]
pub use sleuth_mockllm::cli::MockArgs;
#[cfg(feature = "view")]
pub use sleuth_view::cli::ViewArgs;

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
    /// `play`, `script`, `questions`, `import`, `report`, `sweep` and the cluster's commands.
    #[command(flatten)]
    Core(sleuth_commands::Command),
    /// Serve the simulated model over an OpenAI-compatible HTTP API (for tests and load tests).
    #[cfg(feature = "mock-llm")]
    MockLlm(MockArgs),
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
        if let (Command::Core(sleuth_commands::Command::Play(args)), Some(m), Some(play)) = (
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
            Command::Core(c) => c.on_first_signal(),
            #[cfg(feature = "view")]
            Command::View(_) => Some(""),
            #[cfg(feature = "mock-llm")]
            Command::MockLlm(_) => Some(""),
        }
    }
}

/// Runs the parsed command; `shutdown` stops the commands that watch it (see [`run_on`]).
pub fn run(cli: Cli, shutdown: Shutdown) -> BoxFuture<'static, Result<()>> {
    // `sleuth play --human` serves the viewer's seat page (docs/seat.md).
    #[cfg(feature = "view")]
    sleuth_commands::set_seat_opener(sleuth_view::seat::open_for_play);
    match cli.command {
        Command::Core(c) => sleuth_commands::run(c, shutdown),
        #[cfg(feature = "mock-llm")]
        Command::MockLlm(a) => sleuth_mockllm::cli::run(a, shutdown),
        #[cfg(feature = "view")]
        Command::View(a) => sleuth_view::cli::run(a, shutdown),
    }
}
