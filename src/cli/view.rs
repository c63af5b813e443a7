//! `sleuth view PATH`: serves the viewer over a run directory until Ctrl-C.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use crate::cluster::auth::TOKEN_ENV;
use crate::view::{self, ViewConfig};

/// Flags of `sleuth view`.
#[derive(Debug, Args)]
pub struct ViewArgs {
    /// A sweep's run directory (it holds sleuth.db) or a folder of game directories (result.json,
    /// transcript.jsonl).
    pub path: PathBuf,
    /// Where to listen. Any address but a loopback one needs SLEUTH_TOKEN, and every request must then
    /// carry it (a bearer header, or open a page once with ?token=…).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
}

/// Starts the viewer, prints its address, serves until Ctrl-C.
pub(super) async fn run(a: ViewArgs) -> Result<()> {
    let token = std::env::var(TOKEN_ENV).ok();
    let server = view::start(ViewConfig {
        root: a.path.clone(),
        listen: a.listen,
        token,
    })
    .await?;
    let how = if a.listen.ip().is_loopback() {
        String::new()
    } else {
        format!(" (open it once with ?token=<{TOKEN_ENV}>)")
    };
    // One line on stdout, flushed: scripts and tests read the address from it (with --listen
    // 127.0.0.1:0 the port is chosen by the system).
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "sleuth view: {} at http://{}/{how}",
        a.path.display(),
        server.addr
    )?;
    out.flush()?;
    drop(out);
    tokio::select! {
        served = server.task => served.context("the viewer's task ended")??,
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(())
}
