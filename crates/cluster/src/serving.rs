//! How the coordinator serves gRPC: the limits tonic leaves unset by default (issue 33). Without
//! them a client that opens a connection and sends nothing holds it — and a file descriptor — for
//! ever, a peer that vanished is noticed only when something is written to it, one handler stuck on
//! a wedged dependency holds its request for ever, and nothing bounds how many connections are open
//! at once (with `ulimit -n 64`, 80 silent connections left no descriptor for real clients).
//!
//! - **A first request within [`FIRST_REQUEST_TIMEOUT`]** of the accept, TLS and HTTP/2 handshakes
//!   included, or the connection is closed. hyper's HTTP/2 keepalive starts only after the
//!   handshake, so without this a connection that never finishes the handshake (a half-open one, or
//!   one that trickles the preface) is held for ever — and holds up a graceful shutdown too, which
//!   waits for every connection to close.
//! - **HTTP/2 keepalive** after that: a ping every [`HTTP2_KEEPALIVE_INTERVAL`] of silence, and the
//!   connection closed when one goes unanswered for [`HTTP2_KEEPALIVE_TIMEOUT`]. A live client
//!   answers pings whether or not it has calls in flight, so an idle worker or a long `Watch`
//!   stream is never cut; a peer whose host died or whose network went away is.
//! - **TCP keepalive** ([`TCP_KEEPALIVE`]): the kernel's own probe of a silent peer, under the HTTP/2
//!   pings, for the moments HTTP/2 cannot ping (a connection whose sends are stuck in a full buffer).
//! - **A time limit per call** ([`REQUEST_TIMEOUT`]), answered with `CANCELLED` status when it
//!   passes. It bounds the time to a call's answer, or to the start of a streamed answer: the
//!   streams themselves (`Watch`, `Results`, `Transcript`) run as long as the client reads them.
//! - **Calls at once per connection** ([`CONCURRENCY_LIMIT_PER_CONNECTION`]): more wait their turn
//!   (they are not refused), so one client cannot occupy every handler; and at most
//!   [`MAX_CONCURRENT_STREAMS`] streams open per connection (HTTP/2's own setting, which tonic
//!   leaves unlimited).
//! - **Connections at once** ([`MAX_CONNECTIONS`], and never more than half the descriptors the
//!   process may open: `sleuth_base::http::connection_bound`, the viewer's rule). Past the bound the
//!   coordinator stops accepting: new connections wait in the kernel's backlog, holding no
//!   descriptor of the process, and are taken as others close (the silent ones within
//!   [`FIRST_REQUEST_TIMEOUT`]).
//!
//! What these do not cover: a client that made one request and then keeps answering pings holds a
//! connection as long as it likes — the bound caps how many such connections there can be. Health
//! checks need no token, so anyone who reaches the port can do that; keep the port on a network
//! that only the cluster and its users reach (`docs/cluster.md`, *Security*).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;
use tonic::codegen::http;
use tonic::transport::server::{Connected, TcpConnectInfo, TcpIncoming, TlsConnectInfo};
use tonic::transport::{Identity, Server, ServerTlsConfig};
use tower::layer::util::{Identity as NoLayer, Stack};
use tower::util::MapRequestLayer;

use super::ClusterError;

/// Time from the accept to a connection's first request. A client on any network sends its first
/// call within milliseconds of connecting (a tonic channel connects *for* a call); 10 s is the
/// viewer's time to send a request's head too.
pub const FIRST_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Silence after which the coordinator pings a connection. Short enough that a dead peer is found
/// in well under a minute, long enough that the pings cost nothing (one frame each way).
pub const HTTP2_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);

/// Time a ping has to be answered before the connection is closed: a loaded client on a slow link
/// answers in milliseconds; 10 s leaves room for a pause of its process.
pub const HTTP2_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// Idle time before the kernel probes a connection, then every [`TCP_KEEPALIVE_INTERVAL`], giving up
/// after [`TCP_KEEPALIVE_RETRIES`] probes: a vanished peer is dropped within two minutes even where
/// HTTP/2 cannot ping. The clients use 30 s (`client.rs`); either side finding the peer gone is
/// enough.
pub const TCP_KEEPALIVE: Duration = Duration::from_secs(60);
pub const TCP_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(15);
pub const TCP_KEEPALIVE_RETRIES: u32 = 4;

/// The longest a call may take to answer (or to start streaming its answer). `Submit` is the
/// slowest call by design — it plans a sweep of up to `--max-games-per-sweep` (100,000) games,
/// writes every game to Redis and queues them — and Redis's own reply timeout is 60 s; five
/// minutes is far beyond both, so it cuts only a handler that is stuck. A submission cut short is
/// safe to send again: submitting is idempotent (`docs/cluster.md`).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// Calls one connection has in its handlers at once; more wait for a turn. A worker has two or three
/// (heartbeat, report, a registration), the viewer's mirror a handful; 32 leaves ample room and
/// keeps one connection from taking every handler of the coordinator.
pub const CONCURRENCY_LIMIT_PER_CONNECTION: usize = 32;

/// HTTP/2 streams open at once on one connection (streams include long `Watch` and `Results`
/// answers, which the per-connection call limit does not count once they stream). A client over
/// the limit waits for a stream to close, as HTTP/2 clients do; tonic's default is no limit.
pub const MAX_CONCURRENT_STREAMS: u32 = 128;

/// Connections served at once. A cluster holds about one per worker and per client, so this is
/// room for thousands of workers; the process's descriptor limit usually binds first (half of it:
/// raise `ulimit -n` for clusters of more than a few hundred workers).
pub const MAX_CONNECTIONS: usize = 4096;

/// The limits one gRPC server runs with (see the module documentation); [`Default`] is the constants
/// above, and the tests shorten them.
#[derive(Debug, Clone, Copy)]
pub struct ServerLimits {
    pub first_request_timeout: Duration,
    pub request_timeout: Duration,
    pub http2_keepalive_interval: Duration,
    pub http2_keepalive_timeout: Duration,
    /// Before `connection_bound` lowers it to half the process's descriptors.
    pub max_connections: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            first_request_timeout: FIRST_REQUEST_TIMEOUT,
            request_timeout: REQUEST_TIMEOUT,
            http2_keepalive_interval: HTTP2_KEEPALIVE_INTERVAL,
            http2_keepalive_timeout: HTTP2_KEEPALIVE_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
        }
    }
}

/// What marks a connection as having made its first request.
type MarkServed = fn(http::Request<tonic::body::Body>) -> http::Request<tonic::body::Body>;

/// The server [`builder`] returns: tonic's, with the layer that lifts a connection's first-request
/// deadline.
pub type GrpcServer = Server<Stack<MapRequestLayer<MarkServed>, NoLayer>>;

/// A tonic server with the limits set, and TLS with `tls` (a certificate and its key, PEM). Serve
/// it with [`Listener::incoming`] (`serve_with_incoming_shutdown`): the connection bound, the
/// first-request deadline and the TCP keepalive live there.
pub fn builder(
    limits: &ServerLimits,
    tls: Option<&(Vec<u8>, Vec<u8>)>,
) -> Result<GrpcServer, ClusterError> {
    let mut server = Server::builder()
        .timeout(limits.request_timeout)
        .concurrency_limit_per_connection(CONCURRENCY_LIMIT_PER_CONNECTION)
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS)
        .http2_keepalive_interval(Some(limits.http2_keepalive_interval))
        .http2_keepalive_timeout(Some(limits.http2_keepalive_timeout));
    if let Some((cert, key)) = tls {
        let config = ServerTlsConfig::new()
            .identity(Identity::from_pem(cert, key))
            // Also covered by the first-request deadline; this names the cause in tonic's log.
            .timeout(limits.first_request_timeout);
        server = server
            .tls_config(config)
            .map_err(|e| ClusterError::Setup(format!("TLS: {e}")))?;
    }
    Ok(server.layer(MapRequestLayer::new(mark_served as MarkServed)))
}

/// Lifts the first-request deadline of the request's connection.
fn mark_served(req: http::Request<tonic::body::Body>) -> http::Request<tonic::body::Body> {
    let ext = req.extensions();
    let info = ext
        .get::<ConnInfo>()
        .or_else(|| ext.get::<TlsConnectInfo<ConnInfo>>().map(|t| t.get_ref()));
    if let Some(info) = info {
        info.served.store(true, Ordering::Relaxed);
    }
    req
}

/// A bound listening socket: the port accepts connections (into the kernel's backlog) from the
/// moment it exists, before anything serves them.
#[derive(Debug)]
pub struct Listener {
    listener: TcpListener,
    addr: SocketAddr,
    limits: ServerLimits,
}

impl Listener {
    /// Binds `addr` (port 0: one the system picks; see [`Listener::local_addr`]).
    pub async fn bind(addr: SocketAddr, limits: ServerLimits) -> Result<Listener, ClusterError> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| ClusterError::Setup(format!("cannot listen on {addr}: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| ClusterError::Setup(format!("cannot listen on {addr}: {e}")))?;
        Ok(Listener {
            listener,
            addr,
            limits,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The accepted connections, at most the bound at once, each with its first-request deadline and
    /// TCP keepalive. Never ends on its own: an accept that fails (out of descriptors, a connection
    /// reset before it was taken) is logged and retried after a short pause, so an exhausted
    /// process does not spin.
    pub fn incoming(self) -> impl Stream<Item = Result<Conn, io::Error>> + Send {
        let bound = sleuth_base::http::connection_bound(self.limits.max_connections);
        tracing::debug!(bound, "connections served at once");
        let permits = Arc::new(Semaphore::new(bound));
        let tcp = TcpIncoming::from(self.listener)
            .with_nodelay(Some(true))
            .with_keepalive(Some(TCP_KEEPALIVE))
            .with_keepalive_interval(Some(TCP_KEEPALIVE_INTERVAL))
            .with_keepalive_retries(Some(TCP_KEEPALIVE_RETRIES));
        let deadline = self.limits.first_request_timeout;
        futures::stream::unfold((tcp, permits), move |(mut tcp, permits)| async move {
            // A permit first: past the bound, connections wait in the backlog, not in our
            // descriptors.
            let permit = permits.clone().acquire_owned().await.ok()?;
            loop {
                match tcp.next().await? {
                    Ok(stream) => {
                        let conn = Conn::new(stream, permit, deadline);
                        return Some((Ok(conn), (tcp, permits)));
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        })
    }
}

/// What tonic puts in the extensions of every request of a connection: its addresses and the flag
/// its first request sets.
#[derive(Debug, Clone)]
pub struct ConnInfo {
    pub tcp: TcpConnectInfo,
    served: Arc<AtomicBool>,
}

/// An accepted connection: holds one permit of the bound until it closes, and fails its reads and
/// writes once its first-request deadline passes without a request.
#[derive(Debug)]
pub struct Conn {
    io: TcpStream,
    _permit: OwnedSemaphorePermit,
    served: Arc<AtomicBool>,
    /// Until the first request; then dropped.
    deadline: Option<Pin<Box<Sleep>>>,
    after: Duration,
}

impl Conn {
    fn new(io: TcpStream, permit: OwnedSemaphorePermit, after: Duration) -> Conn {
        Conn {
            io,
            _permit: permit,
            served: Arc::default(),
            deadline: Some(Box::pin(tokio::time::sleep(after))),
            after,
        }
    }

    /// An error once the deadline has passed with no request; registers for the deadline otherwise,
    /// so a connection waiting for bytes that never come is woken and closed.
    fn check(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        let Some(deadline) = self.deadline.as_mut() else {
            return Ok(());
        };
        if self.served.load(Ordering::Relaxed) {
            self.deadline = None;
            return Ok(());
        }
        match deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no request within {:?} of connecting", self.after),
            )),
            Poll::Pending => Ok(()),
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Err(e) = this.check(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Err(e) = this.check(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut this.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Err(e) = this.check(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut this.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

impl Connected for Conn {
    type ConnectInfo = ConnInfo;

    fn connect_info(&self) -> ConnInfo {
        ConnInfo {
            tcp: self.io.connect_info(),
            served: self.served.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A connection's reads fail once its deadline passes with no request, and not after a request
    /// has lifted it; the permit goes back when the connection is dropped.
    #[tokio::test]
    async fn the_first_request_deadline_closes_only_silent_connections() {
        let limits = ServerLimits {
            first_request_timeout: Duration::from_millis(200),
            max_connections: 4,
            ..ServerLimits::default()
        };
        let listener = Listener::bind("127.0.0.1:0".parse().expect("an address"), limits)
            .await
            .expect("bind");
        let addr = listener.local_addr();
        let mut incoming = Box::pin(listener.incoming());

        let mut silent_client = TcpStream::connect(addr).await.expect("connect");
        let mut silent = incoming.next().await.expect("a connection").expect("ok");
        let mut busy_client = TcpStream::connect(addr).await.expect("connect");
        let mut busy = incoming.next().await.expect("a connection").expect("ok");
        // What the marking layer does for a request of `busy`.
        let mut req = http::Request::new(tonic::body::Body::empty());
        req.extensions_mut().insert(busy.connect_info());
        let _ = mark_served(req);

        let mut buf = [0u8; 8];
        let err = tokio::time::timeout(Duration::from_secs(5), silent.read(&mut buf))
            .await
            .expect("the deadline ends the read")
            .expect_err("a timeout");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        drop(silent);
        let n = silent_client.read(&mut buf).await.unwrap_or(0);
        assert_eq!(n, 0, "the silent client sees the connection closed");

        tokio::time::sleep(Duration::from_millis(300)).await;
        busy_client.write_all(b"ping").await.expect("write");
        let n = tokio::time::timeout(Duration::from_secs(5), busy.read(&mut buf))
            .await
            .expect("read")
            .expect("no timeout after a request");
        assert_eq!(&buf[..n], b"ping");
    }
}
