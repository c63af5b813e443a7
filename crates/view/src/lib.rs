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
//! `chart` the suspicion and trust charts, [`annotate`] the annotation campaigns' pages (an annotator's
//! queue, and the owner's view of who has done what), [`bundle`] the pages written as static files
//! (`sleuth view --bundle`).

pub mod annotate;
pub mod auth;
/// `sleuth view RUN --bundle DIR`: the pages as static files.
pub mod bundle;
mod chart;
/// `sleuth view`: its flags and the command.
pub mod cli;
mod compare;
pub mod db;
pub mod guard;
pub mod mirror;
mod pages;
mod remote;
pub mod routes;
pub mod seat;
pub mod source;
pub mod state;
mod tables;
mod templates;
pub mod timeline;
pub mod totals;

use std::net::SocketAddr;
use std::path::PathBuf;

use sleuth_base::http::{Limits, TlsAcceptor};
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
    #[error("listening on {addr}, which is not a loopback address, needs TLS: give --tls-cert and --tls-key (PEM), or --no-tls when a proxy in front of the viewer terminates TLS")]
    TlsRequired { addr: SocketAddr },
    #[error("{path}: {message}")]
    Tls { path: PathBuf, message: String },
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
}

/// What to serve.
#[derive(Debug, Clone)]
pub struct ViewConfig {
    /// A sweep's run directory, or a folder of game directories.
    pub root: PathBuf,
    pub listen: Listen,
}

/// How the viewer listens: where, with which token, for which host names, and over TLS or not.
/// Off loopback it needs a token and TLS (or `--no-tls` behind a proxy that terminates it): the
/// session cookie and the pages (prompts, replies, costs) would otherwise cross the network in clear.
#[derive(Debug, Clone)]
pub struct Listen {
    pub addr: SocketAddr,
    /// The bearer token every request must carry; required off loopback.
    pub token: Option<String>,
    /// Host names the viewer answers to besides IP addresses and `localhost` (`guard.rs`).
    pub allowed_hosts: Vec<String>,
    /// The certificate chain and private key (PEM files) to serve TLS with.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Off loopback without TLS: a proxy in front terminates it (`--no-tls`).
    pub no_tls: bool,
}

impl Listen {
    /// Plain HTTP on `addr` with no token and no listed host names: a viewer on loopback.
    pub fn plain(addr: SocketAddr) -> Listen {
        Listen {
            addr,
            token: None,
            allowed_hosts: Vec::new(),
            tls: None,
            no_tls: false,
        }
    }

    /// The token rule and the TLS acceptor for this address, checked before anything is opened or
    /// served: a bad token, a missing certificate or an unreadable one stops the start here.
    fn check(&self) -> Result<(auth::Token, Option<TlsAcceptor>), ViewError> {
        let token = auth::Token::for_listen(self.addr, self.token.as_deref())?;
        let Some((cert, key)) = &self.tls else {
            if !self.addr.ip().is_loopback() && !self.no_tls {
                return Err(ViewError::TlsRequired { addr: self.addr });
            }
            return Ok((token, None));
        };
        let read = |p: &PathBuf| {
            std::fs::read(p).map_err(|e| ViewError::Tls {
                path: p.clone(),
                message: e.to_string(),
            })
        };
        let (cert_pem, key_pem) = (read(cert)?, read(key)?);
        let acceptor = sleuth_base::http::tls_acceptor(&cert_pem, &key_pem).map_err(|e| {
            let path = match e {
                sleuth_base::http::TlsError::Key(_) => key.clone(),
                _ => cert.clone(),
            };
            ViewError::Tls {
                path,
                message: e.to_string(),
            }
        })?;
        Ok((token.secure(), Some(acceptor)))
    }
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
    let checked = cfg.listen.check()?;
    let source = source::Source::open(&cfg.root)?;
    serve(source, &cfg.listen, checked, shutdown).await
}

/// Binds `listen` and serves `source` (a run directory, or a cluster's mirror of one) with the
/// token rule and TLS `listen.check()` gave, through the one accept loop of `sleuth_base::http`
/// (header-read and idle timeouts, a connection bound).
async fn serve(
    source: source::Source,
    listen: &Listen,
    (token, tls): (auth::Token, Option<TlsAcceptor>),
    shutdown: Shutdown,
) -> Result<Server, ViewError> {
    let state = routes::AppState::new(source, token);
    let app = routes::router(state.clone(), guard::Hosts::new(&listen.allowed_hosts));
    let listener = tokio::net::TcpListener::bind(listen.addr)
        .await
        .map_err(|source| ViewError::Bind {
            addr: listen.addr,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ViewError::Bind {
        addr: listen.addr,
        source,
    })?;
    totals::spawn_refresh(state.source.clone(), state.live.clone(), shutdown.clone());
    tokio::spawn(pages::warm_report(state.clone()));
    let task = tokio::spawn(async move {
        sleuth_base::http::serve(listener, app, Limits::INTERACTIVE, tls, async move {
            shutdown.draining().await
        })
        .await;
        Ok(())
    });
    Ok(Server { addr, task })
}
