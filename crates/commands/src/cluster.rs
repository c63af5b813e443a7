//! The cluster's commands: `coordinator` and `worker` (the processes), and `submit`, `watch`,
//! `cancel`, `workers`, `results` (the client of the public API). Every one of them needs the bearer
//! token in `SLEUTH_TOKEN`; it is read here and never printed. The coordinator also takes a read-only
//! token from `SLEUTH_READ_TOKEN` (for `sleuth view --coordinator`), and Redis' URL — with its
//! password — belongs in `SLEUTH_REDIS`, not on the command line.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use sleuth_base::shutdown::Shutdown;

use sleuth_cluster::auth::{self, Token, TOKEN_ENV};
use sleuth_cluster::client::{self, DEFAULT_COORDINATOR};
use sleuth_cluster::coordinator::{self, Coordinator, CoordinatorConfig};
use sleuth_cluster::proto as pb;
use sleuth_cluster::transcript::TranscriptSink;
use sleuth_cluster::REDIS_ENV;
use sleuth_cluster::{submission, worker};

/// Where the coordinator is, for the client commands.
#[derive(Debug, Clone, Args)]
pub struct Target {
    /// The coordinator's URL (`https://` for TLS).
    #[arg(long, env = "SLEUTH_COORDINATOR", default_value = DEFAULT_COORDINATOR)]
    pub coordinator: String,
    /// The CA certificate (PEM) to check an `https://` coordinator against.
    #[arg(long, value_name = "PEM")]
    pub tls_ca: Option<PathBuf>,
}

/// `sleuth coordinator`.
#[derive(Debug, Args)]
pub struct CoordinatorArgs {
    /// Redis' URL: set SLEUTH_REDIS rather than this flag, since a password on the command line is
    /// visible to every user of the machine (`ps`). `redis://[:password@]host:port[/db]`, or
    /// `rediss://` for TLS.
    // `hide_env_values`: the help would print the variable's value, password and all.
    #[arg(long, env = "SLEUTH_REDIS", hide_env_values = true, value_name = "URL")]
    pub redis: Option<String>,
    /// The address the gRPC API is served on.
    #[arg(long, default_value = "127.0.0.1:7400")]
    pub listen: SocketAddr,
    /// The prefix of the cluster's keys in Redis (several clusters can share one Redis).
    #[arg(long, default_value = "sleuth")]
    pub namespace: String,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<SocketAddr>,
    /// Serve TLS with this certificate (PEM); needs --tls-key.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// After how many seconds without a heartbeat a worker's games are claimed by others: at least
    /// three heartbeats.
    #[arg(long, default_value_t = 15)]
    pub claim_idle_secs: u64,
    /// How often workers heartbeat, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    pub heartbeat_ms: u64,
    /// The most games one sweep may plan; a larger submission is refused before anything is queued.
    #[arg(long, default_value_t = coordinator::DEFAULT_MAX_GAMES)]
    pub max_games_per_sweep: u64,
}

/// `sleuth worker`.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    #[command(flatten)]
    pub target: Target,
    /// Redis' URL as this worker reaches the coordinator's Redis: set SLEUTH_REDIS rather than this
    /// flag, since a password on the command line is visible to every user of the machine (`ps`).
    #[arg(long, env = "SLEUTH_REDIS", hide_env_values = true, value_name = "URL")]
    pub redis: Option<String>,
    /// Games played at once at most.
    #[arg(long)]
    pub capacity: usize,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<SocketAddr>,
    /// Scratch space for games' files until they are in the store (default: the system's temporary
    /// directory).
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// The models this worker serves (TOML: `[models.NAME]` with `provider`, `base_url`,
    /// `api_key_env` and this worker's own `rpm`, `tpm`, `max_concurrency`). A cluster's sweeps use
    /// a model's endpoint and key as its workers declare them here, never as a submission says;
    /// without this file a worker serves only the simulated model.
    #[arg(long, value_name = "FILE", env = "SLEUTH_WORKER_MODELS")]
    pub models: Option<PathBuf>,
}

/// `sleuth submit`.
#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The sweep file (docs/sweeps.md); the scripts it lists are sent with it.
    pub file: PathBuf,
    #[command(flatten)]
    pub target: Target,
    /// Then follow the sweep until it ends (as `sleuth watch`).
    #[arg(long)]
    pub watch: bool,
}

/// `sleuth watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The sweep's id (its name).
    pub id: String,
    #[command(flatten)]
    pub target: Target,
}

/// `sleuth cancel`.
#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The sweep's id (its name).
    pub id: String,
    #[command(flatten)]
    pub target: Target,
}

/// `sleuth workers`.
#[derive(Debug, Args)]
pub struct WorkersArgs {
    #[command(flatten)]
    pub target: Target,
}

/// `sleuth results`.
#[derive(Debug, Args)]
pub struct ResultsArgs {
    /// The sweep's id (its name).
    pub id: String,
    /// Where to write `games/<id>/result.json` and `transcript.jsonl` (then `sleuth report DIR`).
    #[arg(long)]
    pub out: PathBuf,
    /// Leave the transcripts out (smaller; the report's clue and dialogue figures need them).
    #[arg(long)]
    pub no_transcripts: bool,
    #[command(flatten)]
    pub target: Target,
}

fn token() -> Result<Token> {
    Token::from_env(TOKEN_ENV).map_err(anyhow::Error::from)
}

fn read_pem(path: &Path, what: &str) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read the TLS {what} {}", path.display()))
}

/// The value of `--redis` as this process's command line holds it (`--redis URL` or `--redis=URL`),
/// when it does: `None` when the URL came from `SLEUTH_REDIS`.
fn redis_flag(args: &[String]) -> Option<&str> {
    let mut it = args.iter().skip(1);
    while let Some(arg) = it.next() {
        if arg == "--" {
            return None;
        }
        if arg == "--redis" {
            return it.next().map(String::as_str);
        }
        if let Some(v) = arg.strip_prefix("--redis=") {
            return Some(v);
        }
    }
    None
}

/// Redis' URL from `--redis` or `SLEUTH_REDIS`, with a warning (never the password) when the command
/// line holds a password.
fn redis_url(given: Option<String>) -> Result<String> {
    let Some(url) = given else {
        bail!(
            "no Redis URL: set {REDIS_ENV}=redis://[:password@]host:port (the environment keeps a \
             password out of `ps`; --redis URL works too, for a Redis without one)"
        );
    };
    // `args_os`: `args` panics on an argument that is not UTF-8.
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if redis_flag(&args).is_some_and(sleuth_cluster::redis_url_has_password) {
        eprintln!(
            "warning: --redis puts Redis' password on the command line, where every user of this \
             machine can read it (`ps`); put the URL in {REDIS_ENV} instead"
        );
    }
    Ok(url)
}

pub async fn coordinator(a: CoordinatorArgs, shutdown: Shutdown) -> Result<()> {
    let token = token()?;
    let read_token = auth::read_token_from_env()?;
    let redis = redis_url(a.redis)?;
    if let Some(addr) = a.metrics_addr {
        sleuth_base::telemetry::serve_metrics(addr)?;
    }
    let mut cfg = CoordinatorConfig::new(redis, a.listen, a.namespace, token);
    cfg.read_token = read_token;
    cfg.claim_idle = Duration::from_secs(a.claim_idle_secs);
    cfg.heartbeat = Duration::from_millis(a.heartbeat_ms);
    cfg.max_games = a.max_games_per_sweep;
    // Refused here, before anything is served.
    cfg.check()?;
    if let (Some(cert), Some(key)) = (&a.tls_cert, &a.tls_key) {
        cfg.tls = Some((read_pem(cert, "certificate")?, read_pem(key, "key")?));
    }
    // Redis answered and the port is bound: only now is "serving" true, and scripts (and the compose
    // file's users) that wait for this line may connect at once.
    let started = Coordinator::start(cfg).await?;
    {
        let mut err = std::io::stderr().lock();
        writeln!(
            err,
            "sleuth coordinator: serving on {}",
            started.local_addr()
        )?;
        err.flush()?;
    }
    started.serve(shutdown).await?;
    Ok(())
}

pub async fn worker(a: WorkerArgs, shutdown: Shutdown) -> Result<()> {
    let token = token()?;
    if let Some(addr) = a.metrics_addr {
        sleuth_base::telemetry::serve_metrics(addr)?;
    }
    let models = match &a.models {
        Some(p) => sleuth_cluster::models::WorkerModels::load(p)?,
        None => Default::default(),
    };
    let cfg = worker::WorkerConfig {
        coordinator: a.target.coordinator,
        tls_ca: a.target.tls_ca,
        redis: redis_url(a.redis)?,
        capacity: a.capacity,
        token,
        metrics_addr: a.metrics_addr,
        work_dir: a
            .work_dir
            .unwrap_or_else(|| std::env::temp_dir().join("sleuth-worker")),
        models,
    };
    let report = worker::run(cfg, shutdown).await?;
    eprintln!(
        "sleuth worker {}: stopped after {} games ({} claimed from silent workers)",
        report.worker_id, report.games_done, report.claimed
    );
    Ok(())
}

fn rpc_error(s: tonic::Status) -> anyhow::Error {
    anyhow::anyhow!("{} ({:?})", s.message(), s.code())
}

pub async fn submit(a: SubmitArgs) -> Result<()> {
    let token = token()?;
    // Read and shape-checked here, planned (and refused with the same messages as a local run)
    // by the coordinator; nothing is queued unless all of it plans.
    let req = submission::read(&a.file)?;
    let bytes = prost::Message::encoded_len(&req);
    if bytes > sleuth_cluster::MAX_MESSAGE_BYTES {
        bail!(
            "{}: the sweep file with its scripts is {:.1} MiB, more than the {} MiB a submission may be; \
             split it into smaller sweeps",
            a.file.display(),
            bytes as f64 / (1024.0 * 1024.0),
            sleuth_cluster::MAX_MESSAGE_BYTES / (1024 * 1024)
        );
    }
    let mut api = client::sweeps(&a.target.coordinator, a.target.tls_ca.as_deref(), token)?;
    let r = api.submit(req).await.map_err(rpc_error)?.into_inner();
    println!("{}", r.sweep_id);
    eprintln!(
        "submitted `{}`: {} games in {} arms, {} queued now",
        r.sweep_id, r.games, r.arms, r.queued
    );
    if a.watch {
        follow(&mut api, &r.sweep_id).await?;
    }
    Ok(())
}

fn progress_line(p: &pb::Progress) -> String {
    format!(
        "{} [{}] {}/{} done, {} running, {} pending, {} failed, {} interrupted · {} calls, {} cached, {} tokens, ${:.4}",
        p.sweep_id,
        p.status,
        p.done,
        p.total,
        p.running,
        p.pending,
        p.failed,
        p.interrupted,
        p.live_calls,
        p.cache_hits,
        p.tokens,
        p.usd
    )
}

async fn follow(api: &mut client::Sweeps, id: &str) -> Result<()> {
    let mut stream = api
        .watch(pb::WatchRequest {
            sweep_id: id.to_string(),
        })
        .await
        .map_err(rpc_error)?
        .into_inner();
    let mut last = None;
    while let Some(p) = stream.message().await.map_err(rpc_error)? {
        println!("{}", progress_line(&p));
        let ended = p.ended;
        last = Some(p);
        if ended {
            break;
        }
    }
    match last {
        Some(p) if p.ended => Ok(()),
        _ => bail!("the coordinator closed the watch before the sweep ended; run `sleuth watch {id}` again"),
    }
}

pub async fn watch_cmd(a: WatchArgs) -> Result<()> {
    let mut api = client::sweeps(&a.target.coordinator, a.target.tls_ca.as_deref(), token()?)?;
    follow(&mut api, &a.id).await
}

pub async fn cancel(a: CancelArgs) -> Result<()> {
    let mut api = client::sweeps(&a.target.coordinator, a.target.tls_ca.as_deref(), token()?)?;
    let r = api
        .cancel(pb::CancelRequest {
            sweep_id: a.id.clone(),
        })
        .await
        .map_err(rpc_error)?
        .into_inner();
    println!(
        "cancelled `{}`: {} games will not be played; games in flight finish",
        a.id, r.dropped
    );
    Ok(())
}

pub async fn workers(a: WorkersArgs) -> Result<()> {
    let mut api = client::sweeps(&a.target.coordinator, a.target.tls_ca.as_deref(), token()?)?;
    let r = api
        .list_workers(pb::ListWorkersRequest {})
        .await
        .map_err(rpc_error)?
        .into_inner();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<32} {:<6} {:>8} {:>9} {:>10} {:>10}  metrics",
        "worker", "state", "capacity", "in flight", "games done", "silent"
    )?;
    for w in r.workers {
        writeln!(
            out,
            "{:<32} {:<6} {:>8} {:>9} {:>10} {:>9.1}s  {}",
            w.worker_id,
            if w.alive { "alive" } else { "silent" },
            w.capacity,
            w.in_flight,
            w.games_done,
            w.silent_ms as f64 / 1000.0,
            if w.metrics_addr.is_empty() {
                "-"
            } else {
                &w.metrics_addr
            }
        )?;
    }
    Ok(())
}

pub async fn results(a: ResultsArgs) -> Result<()> {
    let mut api = client::sweeps(&a.target.coordinator, a.target.tls_ca.as_deref(), token()?)?;
    let mut stream = api
        .results(pb::ResultsRequest {
            sweep_id: a.id.clone(),
            transcripts: !a.no_transcripts,
            ..Default::default()
        })
        .await
        .map_err(rpc_error)?
        .into_inner();
    let run_dir = sleuth_store::RunDir::new(&a.out);
    let games = run_dir.games();
    std::fs::create_dir_all(&games)
        .with_context(|| format!("cannot create {}", games.display()))?;
    let (mut written, mut total) = (0u64, 0u64);
    let mut not_done: std::collections::BTreeMap<String, u64> = Default::default();
    // The game whose result was written last (its transcript's pieces follow it), and the transcript
    // being written.
    let mut last_game: Option<(String, PathBuf)> = None;
    let mut transcript: Option<TranscriptSink> = None;
    while let Some(part) = stream.message().await.map_err(rpc_error)? {
        match part.part {
            Some(pb::results_part::Part::Game(g)) => {
                if let Some(t) = transcript.take() {
                    bail!(
                        "the coordinator cut the transcript of game {} short",
                        t.game()
                    );
                }
                last_game = None;
                total += 1;
                if g.result_json.is_empty() {
                    *not_done.entry(g.state).or_default() += 1;
                    continue;
                }
                // Game ids are hex digests; anything else would be a path trick.
                if g.game_id.is_empty() || !g.game_id.chars().all(|c| c.is_ascii_alphanumeric()) {
                    bail!(
                        "the coordinator sent a game id that is not a digest: {:?}",
                        g.game_id
                    );
                }
                let dir = run_dir.game(&g.game_id).dir;
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
                let p = sleuth_store::rundir::GameFiles::in_dir(&dir).result;
                sleuth_base::fs::write_atomic(&p, g.result_json.as_bytes())
                    .with_context(|| format!("cannot write {}", p.display()))?;
                written += 1;
                last_game = Some((g.game_id, dir));
            }
            Some(pb::results_part::Part::Transcript(c)) => {
                let t = match transcript.as_mut() {
                    Some(t) => t,
                    None => match &last_game {
                        Some((id, dir)) if *id == c.game_id => {
                            transcript.insert(TranscriptSink::new(
                                id,
                                &sleuth_store::rundir::GameFiles::in_dir(dir).transcript,
                            ))
                        }
                        _ => bail!(
                            "the coordinator sent a transcript piece of game {:?} out of order",
                            c.game_id
                        ),
                    },
                };
                t.write(&c).context("the coordinator's transcript")?;
                if t.is_done() {
                    if let Some(t) = transcript.take() {
                        t.finish().context("the coordinator's transcript")?;
                    }
                    last_game = None;
                }
            }
            None => {}
        }
    }
    if let Some(t) = transcript {
        bail!(
            "the coordinator cut the transcript of game {} short",
            t.game()
        );
    }
    let rest: Vec<String> = not_done.iter().map(|(s, n)| format!("{n} {s}")).collect();
    eprintln!(
        "wrote {written} of {total} games to {}{}",
        a.out.display(),
        if rest.is_empty() {
            String::new()
        } else {
            format!(" (not done: {})", rest.join(", "))
        }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::redis_flag;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_redis_flag_is_found_in_both_spellings_and_only_before_a_double_dash() {
        let url = "redis://:pw@h:6379";
        for cmd in [
            args(&["sleuth", "coordinator", "--redis", url]),
            args(&["sleuth", "coordinator", &format!("--redis={url}")]),
            args(&["sleuth", "worker", "--capacity", "2", "--redis", url, "-v"]),
        ] {
            assert_eq!(redis_flag(&cmd), Some(url), "{cmd:?}");
        }
        for cmd in [
            args(&["sleuth", "coordinator"]),
            args(&["sleuth", "coordinator", "--", "--redis", url]),
            args(&["sleuth", "coordinator", "--redisx", url]),
        ] {
            assert_eq!(redis_flag(&cmd), None, "{cmd:?}");
        }
    }
}
