//! `sleuth view`: a web UI over a run directory — the sweeps in it with live progress and cost, each
//! sweep's grid of arms and scripts with the report's tables, and each game's story as every character
//! saw it, with its evaluation and its model calls (`docs/viewer.md`).
//!
//! Layer 6 (docs/architecture.md, *Crates*): it may use every crate below it but the mock server;
//! only the root crate's CLI sits above it.
//!
//! Server-rendered HTML (minijinja templates compiled into the binary) with one small script of our own
//! for the three things a page does after it loads: polling the counters, loading the next page of a
//! list, and opening a model call. Nothing is fetched from elsewhere at run time.
//!
//! Built to stay fast on sweeps of thousands of games: every list is a SQL query with `LIMIT`/`OFFSET`
//! on an indexed column or a page of a transcript read from a byte offset; the only state the server
//! keeps is a fixed-size summary per sweep ([`totals`]), so its memory does not grow with the games
//! viewed.
//!
//! Here: the configuration, the errors and the server's start; [`source`] finds what a run directory
//! holds, [`mirror`] keeps a cluster's sweeps as one (`sleuth view --coordinator`), [`db`] reads the
//! store, [`totals`] folds the ledger, [`timeline`] pages transcripts, [`auth`] is the token rule,
//! [`routes`] the pages and endpoints, `compare` two games side by side, [`tables`] the report's
//! tables,
//! `chart` the suspicion and trust charts.

pub mod auth;
mod chart;
/// `sleuth view`: its flags and the command.
pub mod cli;
mod compare;
pub mod db;
pub mod mirror;
mod pages;
mod remote;
pub mod routes;
pub mod source;
pub mod state;
mod tables;
mod templates;
pub mod timeline;
pub mod totals;

use std::net::SocketAddr;
use std::path::PathBuf;

use sleuth_base::shutdown::Shutdown;

/// Why the viewer could not start.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("{path} does not exist or is not a directory")]
    NotADirectory { path: PathBuf },
    #[error("{path}: holds neither a sweep store (sleuth.db) nor any game (result.json or transcript.jsonl)")]
    Empty { path: PathBuf },
    #[error("cannot read the store {path}: {message}")]
    Store { path: PathBuf, message: String },
    #[error("listening on {addr}, which is not a loopback address, needs a token: set SLEUTH_TOKEN (every request must then carry it)")]
    TokenRequired { addr: SocketAddr },
    #[error("SLEUTH_TOKEN is set but empty or not visible ASCII")]
    BadToken,
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// `--coordinator`: the coordinator could not be reached or refused the first listing.
    #[error("following the coordinator at {coordinator}: {message}")]
    Mirror {
        coordinator: String,
        message: String,
    },
    #[error("the server stopped")]
    Serve(#[source] std::io::Error),
}

/// What to serve and where.
#[derive(Debug, Clone)]
pub struct ViewConfig {
    /// A sweep's run directory, or a folder of game directories.
    pub root: PathBuf,
    pub listen: SocketAddr,
    /// The bearer token every request must carry; required when `listen` is not a loopback address.
    pub token: Option<String>,
}

/// A started viewer: its address and the task serving it, which ends when the shutdown it was
/// started with drains it (no new connection; requests in flight answered; idle connections closed).
pub struct Server {
    pub addr: SocketAddr,
    pub task: tokio::task::JoinHandle<Result<(), ViewError>>,
}

/// Checks the configuration, opens the run directory, binds and starts serving on the current tokio
/// runtime. Errors here (no such directory, a non-loopback address without a token, a port in use)
/// come before anything is served.
pub async fn start(cfg: ViewConfig, shutdown: Shutdown) -> Result<Server, ViewError> {
    let token = auth::Token::for_listen(cfg.listen, cfg.token.as_deref())?;
    let source = source::Source::open(&cfg.root)?;
    serve(source, cfg.listen, token, shutdown).await
}

/// Binds `listen` and serves `source` (a run directory, or a cluster's mirror of one).
async fn serve(
    source: source::Source,
    listen: SocketAddr,
    token: auth::Token,
    shutdown: Shutdown,
) -> Result<Server, ViewError> {
    let state = routes::AppState::new(source, token);
    let app = routes::router(state.clone());
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|source| ViewError::Bind {
            addr: listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ViewError::Bind {
        addr: listen,
        source,
    })?;
    totals::spawn_refresh(state.source.clone(), state.live.clone(), shutdown.clone());
    tokio::spawn(pages::warm_report(state.clone()));
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { shutdown.draining().await })
            .await
            .map_err(ViewError::Serve)
    });
    Ok(Server { addr, task })
}
