//! How sleuth serves HTTP: the viewer and the mock server run this one accept loop, with the limits a
//! server needs once a browser page or a load test can reach it and that `axum::serve` leaves unset
//! (issue 33):
//!
//! - a client gets [`Limits::header_read_timeout`] to send a request's head. hyper starts the same
//!   timer whenever a connection waits for its next request, so it is also the idle timeout of a
//!   kept-alive connection: a half-sent request or a silent connection is closed, never held;
//! - at most [`Limits::max_connections`] connections are served at once, and never more than half the
//!   file descriptors the process may open ([`connection_bound`]). Past the bound the loop stops
//!   accepting: new connections wait in the kernel's backlog, holding no descriptor of the process,
//!   and are taken as others close;
//! - TLS, when the caller gives an acceptor; a handshake gets the header timeout too;
//! - on the stop signal, no new connection; requests in flight finish (idle connections close at
//!   once) for at most [`Limits::drain`]; then whatever is still open (a request still being sent)
//!   is closed, and the loop returns.
//!
//! The service is any tower service (an axum `Router`), so the pages and their middleware stay in
//! the crates that own them.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

pub use tokio_rustls::TlsAcceptor;

/// The limits of one server (see the module documentation).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Time to send a request's head, and the longest a kept-alive connection may sit idle.
    pub header_read_timeout: Duration,
    /// Connections served at once, before [`connection_bound`] lowers it.
    pub max_connections: usize,
    /// How long requests in flight may take to finish once the server is stopped.
    pub drain: Duration,
}

impl Limits {
    /// A server for a browser and a few scripts (the viewer): 10 s to send a head — a browser sends
    /// it in one packet, and reopens an idle connection it finds closed — and 256 connections, dozens
    /// of tabs' worth.
    pub const INTERACTIVE: Limits = Limits {
        header_read_timeout: Duration::from_secs(10),
        max_connections: 256,
        drain: Duration::from_secs(10),
    };

    /// The mock model server under a load test: thousands of games keep connections open to it, and
    /// a pooled client leaves them idle between calls for up to the mock's latency, so the idle limit
    /// is longer than any latency a benchmark sets.
    pub const LOAD_TEST: Limits = Limits {
        header_read_timeout: Duration::from_secs(90),
        max_connections: 8_192,
        drain: Duration::from_secs(10),
    };
}

/// Why a certificate and key could not make a TLS server.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("the certificate file holds no PEM certificate: {0}")]
    Certificate(String),
    #[error("the key file holds no PEM private key: {0}")]
    Key(String),
    #[error("the certificate and key do not make a TLS server: {0}")]
    Config(#[from] rustls::Error),
}

/// A TLS acceptor for HTTP/1.1 from a PEM certificate chain and its PEM private key.
pub fn tls_acceptor(cert_pem: &[u8], key_pem: &[u8]) -> Result<TlsAcceptor, TlsError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Certificate(e.to_string()))?;
    if certs.is_empty() {
        return Err(TlsError::Certificate("none found".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsError::Key(e.to_string()))?;
    crate::tls::install_crypto_provider();
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// `wanted` connections, but no more than half of the file descriptors this process may open (its
/// soft `RLIMIT_NOFILE`): the rest stay for the store, transcripts and outgoing connections. At
/// least 4, so that a tiny limit still serves.
pub fn connection_bound(wanted: usize) -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given and reads nothing else.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
    let half = if ok && lim.rlim_cur != libc::RLIM_INFINITY {
        usize::try_from(lim.rlim_cur / 2).unwrap_or(usize::MAX)
    } else {
        usize::MAX
    };
    wanted.min(half).max(4)
}

/// Serves `service` on `listener` until `stop` resolves (see the module documentation). Returns when
/// the connections have drained or [`Limits::drain`] has passed.
pub async fn serve<S, B>(
    listener: TcpListener,
    service: S,
    limits: Limits,
    tls: Option<TlsAcceptor>,
    stop: impl Future<Output = ()>,
) where
    S: tower_service::Service<Request<Incoming>, Response = Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let permits = Arc::new(Semaphore::new(connection_bound(limits.max_connections)));
    let graceful = GracefulShutdown::new();
    // Every connection's task, so that those still open after the drain can be closed.
    let mut conns = tokio::task::JoinSet::new();
    tokio::pin!(stop);
    loop {
        while conns.try_join_next().is_some() {}
        // A permit first: past the bound, connections wait in the backlog, not in our descriptors.
        let permit = tokio::select! {
            () = &mut stop => break,
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let (tcp, _) = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors or a connection reset before it was taken: not the
                    // server's end. A short pause keeps an exhausted process from spinning.
                    tracing::debug!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout);
        let hyper_service = TowerToHyperService::new(service.clone());
        let watcher = graceful.watcher();
        let tls = tls.clone();
        let handshake = limits.header_read_timeout;
        conns.spawn(async move {
            let _permit = permit;
            let result = match tls {
                None => {
                    let conn = http.serve_connection(TokioIo::new(tcp), hyper_service);
                    watcher.watch(conn).await
                }
                Some(acceptor) => {
                    let stream = match tokio::time::timeout(handshake, acceptor.accept(tcp)).await {
                        Ok(Ok(s)) => s,
                        Ok(Err(e)) => {
                            tracing::debug!(error = %e, "TLS handshake failed");
                            return;
                        }
                        Err(_) => {
                            tracing::debug!("TLS handshake timed out");
                            return;
                        }
                    };
                    let conn = http.serve_connection(TokioIo::new(stream), hyper_service);
                    watcher.watch(conn).await
                }
            };
            if let Err(e) = result {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.drain, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::debug!("connections still open after the drain time; closing them");
    }
    conns.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_leaves_half_the_descriptors() {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: as in `connection_bound`.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        let bound = connection_bound(usize::MAX);
        if lim.rlim_cur != libc::RLIM_INFINITY {
            assert_eq!(bound as u64, (lim.rlim_cur / 2).max(4));
        }
        assert_eq!(connection_bound(3), 4, "never below 4");
    }
}
