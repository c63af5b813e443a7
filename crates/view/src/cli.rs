//! `sleuth view PATH`: serves the viewer over a run directory until Ctrl-C; `sleuth view
//! --coordinator URL`: the same pages over a cluster's sweeps, through a local mirror of them.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use sleuth_base::shutdown::Shutdown;

use crate::mirror::{self, MirrorConfig};
use crate::{Listen, ViewConfig};
use sleuth_cluster::auth::{READ_TOKEN_ENV, TOKEN_ENV};

/// Flags of `sleuth view`.
#[derive(Debug, Args)]
pub struct ViewArgs {
    /// A sweep's run directory (it holds sleuth.db) or a folder of game directories (result.json,
    /// transcript.jsonl).
    #[arg(
        required_unless_present = "coordinator",
        conflicts_with = "coordinator"
    )]
    pub path: Option<PathBuf>,
    /// Where to listen. Any address but a loopback one needs SLEUTH_TOKEN, and every request must then
    /// carry it (a bearer header, or open a page once with ?token=… for a session cookie); it also
    /// needs --tls-cert and --tls-key, or --no-tls.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// A host name the viewer answers to, besides IP addresses and localhost (repeat for more). Any
    /// other `Host` is refused, so that a web page cannot point its own name at the viewer.
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_hosts: Vec<String>,
    /// Serve TLS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Off loopback, serve plain HTTP: only behind a proxy that terminates TLS for the viewer.
    #[arg(long, conflicts_with = "tls_cert")]
    pub no_tls: bool,
    /// View a cluster's sweeps through its coordinator (`https://` for TLS), with the read-only token
    /// in SLEUTH_READ_TOKEN (or the full one in SLEUTH_TOKEN, with a warning), instead of a run
    /// directory: they are mirrored locally and the mirror is served.
    #[arg(long, value_name = "URL")]
    pub coordinator: Option<String>,
    /// The CA certificate (PEM) to check an `https://` coordinator against.
    #[arg(long, value_name = "PEM", requires = "coordinator")]
    pub tls_ca: Option<PathBuf>,
    /// Where to keep the mirror of the cluster's sweeps (kept, and continued next time); by default a
    /// temporary directory removed at exit.
    #[arg(long, value_name = "DIR", requires = "coordinator")]
    pub mirror: Option<PathBuf>,
    /// Write the pages of the run as static files into DIR (they open from file:// or any static
    /// web host) instead of serving them. DIR must be new, empty, or a bundle written before.
    #[arg(long, value_name = "DIR", conflicts_with = "coordinator")]
    pub bundle: Option<PathBuf>,
    /// With --bundle: write each game's model calls in too (their messages and replies can be
    /// most of a sweep's bytes; left out by default).
    #[arg(long, requires = "bundle")]
    pub bundle_calls: bool,
}

/// `--bundle DIR`: writes the static bundle and says what it wrote.
async fn bundle(
    path: &std::path::Path,
    dir: &std::path::Path,
    calls: bool,
    shutdown: Shutdown,
) -> Result<()> {
    let opts = crate::bundle::BundleOptions {
        root: path.to_path_buf(),
        out: dir.to_path_buf(),
        calls,
    };
    let s = crate::bundle::write(&opts, shutdown).await?;
    for url in &s.failed {
        eprintln!("warning: the viewer answered {url} with an error: its page says so");
    }
    let calls = if calls {
        "model calls included"
    } else {
        "model calls left out (--bundle-calls includes them)"
    };
    println!(
        "sleuth view: wrote the bundle of {} to {}: {} games, {} files, {:.1} MB in {:.1} s; {calls}; open {}",
        path.display(),
        dir.display(),
        s.games,
        s.files,
        s.bytes as f64 / 1e6,
        s.seconds,
        dir.join("index.html").display()
    );
    Ok(())
}

/// Starts the viewer, prints its address, serves until Ctrl-C.
pub fn run(a: ViewArgs, shutdown: Shutdown) -> futures::future::BoxFuture<'static, Result<()>> {
    // Boxed here, so that the command's future is compiled in this crate, not in the root crate that
    // dispatches to it (see `sleuth_commands`).
    Box::pin(serve(a, shutdown))
}

async fn serve(a: ViewArgs, shutdown: Shutdown) -> Result<()> {
    if let (Some(dir), Some(path)) = (&a.bundle, &a.path) {
        return bundle(path, dir, a.bundle_calls, shutdown).await;
    }
    let listen = Listen {
        addr: a.listen,
        token: std::env::var(TOKEN_ENV).ok(),
        allowed_hosts: a.allow_hosts.clone(),
        tls: a.tls_cert.clone().zip(a.tls_key.clone()),
        no_tls: a.no_tls,
    };
    let scheme = if listen.tls.is_some() {
        "https"
    } else {
        "http"
    };
    // Held until the viewer stops: dropping it removes the temporary mirror.
    let mut temporary = None;
    let (server, what) = match (&a.coordinator, &a.path) {
        (Some(url), _) => {
            // The read-only token when there is one: the viewer only lists and reads, and its
            // browser sessions should never hold a token that can submit paid work.
            let picked = sleuth_cluster::auth::viewer_token().with_context(|| {
                format!(
                    "the coordinator's token: set {READ_TOKEN_ENV} (read-only) or {TOKEN_ENV}, as for `sleuth results`"
                )
            })?;
            if let Some(w) = picked.warning() {
                eprintln!("warning: {w}");
            }
            let cluster_token = picked.token;
            let dir = match &a.mirror {
                Some(d) => d.clone(),
                None => {
                    let t = tempfile::Builder::new()
                        .prefix("sleuth-view-")
                        .tempdir()
                        .context("a temporary directory for the mirror")?;
                    let p = t.path().to_path_buf();
                    temporary = Some(t);
                    p
                }
            };
            let cfg = MirrorConfig {
                coordinator: url.clone(),
                tls_ca: a.tls_ca.clone(),
                token: cluster_token,
                dir: dir.clone(),
            };
            let server = mirror::start(cfg, listen, shutdown.clone()).await?;
            (server, format!("{url} (mirrored in {})", dir.display()))
        }
        (None, Some(path)) => {
            let server = crate::start(
                ViewConfig {
                    root: path.clone(),
                    listen,
                },
                shutdown.clone(),
            )
            .await?;
            (server, path.display().to_string())
        }
        (None, None) => anyhow::bail!("give a run directory or --coordinator URL"),
    };
    let how = if a.listen.ip().is_loopback() {
        String::new()
    } else {
        format!(" (open it once with ?token=<{TOKEN_ENV}>)")
    };
    // One line on stdout, flushed: scripts and tests read the address from it (with --listen
    // 127.0.0.1:0 the port is chosen by the system).
    {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "sleuth view: {what} at {scheme}://{}/{how}",
            server.addr
        )?;
        out.flush()?;
    }
    // Ends when the shutdown (Ctrl-C or SIGTERM, listened for since the process started, so one
    // sent as soon as the address is read is not lost) has drained the connections; either way the
    // temporary mirror is removed.
    let served = server
        .task
        .await
        .context("the viewer's task ended")
        .and_then(|r| r.map_err(Into::into));
    drop(temporary);
    served
}
