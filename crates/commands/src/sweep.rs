//! `sleuth sweep plan|run|status`: a sweep file's grid and estimate, running it, and where it stands.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use sleuth_base::shutdown::Shutdown;

use sleuth_store::GameState;
use sleuth_sweep::{self as sweep, estimate, LoadedSweep, Plan, RunOptions};

/// Subcommands of `sleuth sweep`.
#[derive(Debug, Subcommand)]
pub enum SweepCommand {
    /// Show the grid (arms × scripts × repeats = games) and an estimate of calls, tokens and USD.
    Plan(PlanArgs),
    /// Run the sweep (again: it continues where it stopped).
    Run(RunArgs),
    /// Where a sweep stands: games by state, calls, cache hits, tokens and USD by model.
    Status(StatusArgs),
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The sweep file (TOML; see docs/sweeps.md and examples/sweeps/).
    pub file: PathBuf,
    /// Skip the estimate (which plays one simulated game per distinct structure).
    #[arg(long)]
    pub no_estimate: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The sweep file.
    pub file: PathBuf,
    /// Games in flight at once (default: the file's `concurrency`, else 64).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Play the games that failed in earlier runs again.
    #[arg(long)]
    pub retry_failed: bool,
    /// Serve Prometheus metrics at http://ADDR/metrics while the sweep runs.
    #[arg(long)]
    pub metrics_addr: Option<SocketAddr>,
    /// No progress display or log lines.
    #[arg(long)]
    pub quiet: bool,
    /// Keep the metrics endpoint up this many seconds after the sweep (for a final scrape; the
    /// dashboards' end-to-end test reads a finished sweep's last values through Prometheus).
    #[arg(long, default_value_t = 0, hide = true)]
    pub linger_secs: u64,
    /// Where the seat pages of games with a person at the table (an arm's `human`) are served:
    /// loopback only; port 0 gives each such game a free port.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub seat_addr: SocketAddr,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The sweep's run directory.
    pub dir: PathBuf,
}

/// Runs a `sweep` subcommand.
pub async fn run(cmd: SweepCommand, shutdown: Shutdown) -> Result<()> {
    match cmd {
        SweepCommand::Plan(a) => plan(a).await,
        SweepCommand::Run(a) => run_sweep(a, shutdown).await,
        SweepCommand::Status(a) => {
            print!("{}", sweep::status::status(&a.dir).await?.render());
            Ok(())
        }
    }
}

async fn plan(a: PlanArgs) -> Result<()> {
    let plan = Plan::build(LoadedSweep::load(&a.file)?)?;
    let seeds = plan.sweep.seeds();
    println!(
        "sweep {}: {} arms × {} scripts × {} repeats = {} games → {}",
        plan.sweep.file.name,
        plan.arms.len(),
        plan.scripts.len(),
        seeds.len(),
        plan.games.len(),
        plan.sweep.out_dir().display()
    );
    println!("\narms:");
    for arm in &plan.arms {
        println!("  {}  {}", arm.id, arm.label);
    }
    println!("\nscripts:");
    for s in &plan.scripts {
        println!("  {} ({})", s.script.title, s.path.display());
    }
    println!("\nseeds by repeat: {seeds:?}");
    if let Err(e) = sweep::models::check_keys(&plan) {
        println!("\nwarning: {e}");
    }
    if a.no_estimate {
        return Ok(());
    }
    let parallel = std::thread::available_parallelism().map_or(2, |n| n.get());
    let est = estimate::estimate(&plan, parallel * 2).await?;
    println!(
        "\nestimate (upper bound on completions; {} simulated games measured, see docs/sweeps.md):",
        est.measured
    );
    let batch = plan.uses_batch();
    println!(
        "  {:<24} {:>10} {:>14} {:>14} {:>12}{}",
        "model",
        "calls",
        "prompt tok",
        "completion ≤",
        "USD ≤ live",
        if batch { "  USD ≤ batch eval" } else { "" }
    );
    let row = |name: &str, e: &sweep::estimate::ModelEstimate| {
        println!(
            "  {:<24} {:>10} {:>14} {:>14} {:>12.4}{}",
            name,
            e.calls,
            e.prompt_tokens,
            e.completion_tokens,
            e.usd,
            if batch {
                format!("  {:>17.4}", e.usd_batched)
            } else {
                String::new()
            }
        );
    };
    for (m, e) in &est.by_model {
        row(m, e);
    }
    let t = est.total();
    row("total", &t);
    if batch {
        println!(
            "  evaluation through batches saves ≤ ${:.4} of ${:.4}",
            t.usd - t.usd_batched,
            t.usd
        );
    }
    let b = plan.sweep.file.budget;
    if let Some(max) = b.max_usd {
        if t.usd_batched > max {
            println!("\nnote: the estimate passes the budget (max_usd = {max}): the sweep will stop when it is spent");
        }
    }
    Ok(())
}

async fn run_sweep(a: RunArgs, shutdown: Shutdown) -> Result<()> {
    if let Some(addr) = a.metrics_addr {
        sleuth_base::telemetry::serve_metrics(addr)?;
    }
    let report = sweep::runner::run_with(
        &a.file,
        RunOptions {
            concurrency: a.concurrency,
            retry_failed: a.retry_failed,
            progress: !a.quiet,
            seating: crate::play::seat::seating(a.seat_addr),
        },
        shutdown,
    )
    .await?;
    let c = &report.counts;
    println!(
        "sweep {} ({}): {:?} — {} done, {} failed, {} interrupted, {} pending of {}",
        report.sweep,
        report.out.display(),
        report.end,
        c.get(GameState::Done),
        c.get(GameState::Failed),
        c.get(GameState::Interrupted),
        c.get(GameState::Pending) + c.get(GameState::Running),
        c.total()
    );
    println!(
        "this run: {} games queued, {} live calls, {} cache hits, {} retries; the sweep has spent ${:.4} and {} tokens",
        report.queued, report.live_calls, report.cache_hits, report.retries, report.spent.usd, report.spent.tokens
    );
    if c.get(GameState::Failed) > 0 {
        println!(
            "failed games: `sleuth sweep status {}` lists them; `sleuth sweep run {} --retry-failed` plays them again",
            report.out.display(),
            a.file.display()
        );
    }
    if a.linger_secs > 0 {
        tokio::time::sleep(std::time::Duration::from_secs(a.linger_secs)).await;
    }
    if let sweep::scheduler::RunEnd::Stopped(_) = report.end {
        bail!(
            "the sweep stopped before its end ({:?}); run it again to continue",
            report.end
        );
    }
    Ok(())
}
