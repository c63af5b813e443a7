//! Connecting to a coordinator: the channel the client commands and the workers share, with the
//! bearer token on every request and TLS when the URL is `https://`.

use std::path::Path;
use std::time::Duration;

use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

use super::auth::{Token, WithToken};
use super::proto::sweeps_client::SweepsClient;
use super::proto::workers_client::WorkersClient;
use super::{ClusterError, MAX_MESSAGE_BYTES};

/// The coordinator's address when none is given (`--coordinator`, `SLEUTH_COORDINATOR`).
pub const DEFAULT_COORDINATOR: &str = "http://127.0.0.1:7400";

/// A client of the public API.
pub type Sweeps = SweepsClient<InterceptedService<Channel, WithToken>>;
/// A client of the worker protocol.
pub type Workers = WorkersClient<InterceptedService<Channel, WithToken>>;

/// An endpoint for `url`: TLS (checked against the CA in `tls_ca`, PEM) for `https://`.
fn endpoint(url: &str, tls_ca: Option<&Path>) -> Result<Endpoint, ClusterError> {
    let bad = |message: String| ClusterError::Connect {
        url: url.to_string(),
        message,
    };
    let mut ep = Endpoint::from_shared(url.to_string())
        .map_err(|e| bad(format!("not a URL: {e}")))?
        .connect_timeout(Duration::from_secs(5))
        .tcp_keepalive(Some(Duration::from_secs(30)));
    if url.starts_with("https://") {
        // The system's roots (a publicly signed certificate), and the given CA (a private one).
        let mut tls = ClientTlsConfig::new().with_native_roots();
        if let Some(ca) = tls_ca {
            let pem = std::fs::read(ca)
                .map_err(|e| bad(format!("cannot read the CA file {}: {e}", ca.display())))?;
            tls = tls.ca_certificate(Certificate::from_pem(pem));
        }
        ep = ep.tls_config(tls).map_err(|e| bad(format!("TLS: {e}")))?;
    } else if tls_ca.is_some() {
        return Err(bad("--tls-ca is given but the URL is not https://".into()));
    }
    Ok(ep)
}

/// A channel to the coordinator at `url`, connected lazily: a coordinator that restarts is found
/// again on the next request.
pub fn channel(url: &str, tls_ca: Option<&Path>) -> Result<Channel, ClusterError> {
    Ok(endpoint(url, tls_ca)?.connect_lazy())
}

/// A client of the public API at `url`, sending and taking messages up to [`MAX_MESSAGE_BYTES`] (a
/// submission carries every script of its sweep).
pub fn sweeps(url: &str, tls_ca: Option<&Path>, token: Token) -> Result<Sweeps, ClusterError> {
    Ok(
        SweepsClient::with_interceptor(channel(url, tls_ca)?, WithToken(token))
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES),
    )
}

/// A client of the worker protocol at `url`.
pub fn workers(url: &str, tls_ca: Option<&Path>, token: Token) -> Result<Workers, ClusterError> {
    Ok(WorkersClient::with_interceptor(
        channel(url, tls_ca)?,
        WithToken(token),
    ))
}
