//! Bearer tokens on the public API and the worker protocol.
//!
//! The token comes from the environment (`SLEUTH_TOKEN` by default), never from a flag, so it does not
//! show in `ps` or shell history, and it is never logged. A server compares what a request carries
//! with its token in constant time — over SHA-256 digests of both, so not even the length leaks — and
//! refuses with `UNAUTHENTICATED` naming nothing but the header it expected.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tonic::metadata::MetadataValue;
use tonic::service::Interceptor;
use tonic::{Request, Status};

/// The environment variable that holds the cluster's token unless a command names another.
pub const TOKEN_ENV: &str = "SLEUTH_TOKEN";

/// Why a token could not be had.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("environment variable {var} is not set: the cluster's bearer token is read from it")]
    Missing { var: String },
    #[error(
        "environment variable {var} is empty or not valid in an HTTP header (visible ASCII only)"
    )]
    Invalid { var: String },
}

/// A secret bearer token. Its `Debug` shows nothing of it.
#[derive(Clone)]
pub struct Token {
    header: MetadataValue<tonic::metadata::Ascii>,
    digest: [u8; 32],
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    /// The token in the environment variable `var`.
    pub fn from_env(var: &str) -> Result<Self, AuthError> {
        let value = std::env::var(var).map_err(|_| AuthError::Missing { var: var.into() })?;
        Self::new(&value).ok_or_else(|| AuthError::Invalid { var: var.into() })
    }

    /// A token from its text; `None` when it is empty or cannot travel in a header.
    pub fn new(secret: &str) -> Option<Self> {
        let secret = secret.trim();
        if secret.is_empty() {
            return None;
        }
        let mut header: MetadataValue<_> = format!("Bearer {secret}").parse().ok()?;
        header.set_sensitive(true);
        Some(Self {
            header,
            digest: Sha256::digest(secret.as_bytes()).into(),
        })
    }

    /// Whether an `authorization` header value carries this token.
    fn admits(&self, header: Option<&[u8]>) -> bool {
        let Some(given) = header.and_then(|h| h.strip_prefix(b"Bearer ")) else {
            return false;
        };
        let digest: [u8; 32] = Sha256::digest(given.trim_ascii()).into();
        digest.ct_eq(&self.digest).into()
    }
}

/// Server side: refuses every request without the token.
#[derive(Clone, Debug)]
pub struct RequireToken(pub Token);

impl Interceptor for RequireToken {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let header = request
            .metadata()
            .get("authorization")
            .map(|v| v.as_bytes());
        if self.0.admits(header) {
            Ok(request)
        } else {
            Err(Status::unauthenticated(
                "missing or wrong bearer token (authorization: Bearer <token>)",
            ))
        }
    }
}

/// Client side: adds the token to every request.
#[derive(Clone, Debug)]
pub struct WithToken(pub Token);

impl Interceptor for WithToken {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        request
            .metadata_mut()
            .insert("authorization", self.0.header.clone());
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_header(value: Option<&str>) -> Request<()> {
        let mut r = Request::new(());
        if let Some(v) = value {
            r.metadata_mut()
                .insert("authorization", v.parse().expect("ascii header"));
        }
        r
    }

    #[test]
    fn only_the_right_token_passes() {
        let token = Token::new("s3cret-token").expect("a valid token");
        let mut server = RequireToken(token.clone());
        assert!(server
            .call(with_header(Some("Bearer s3cret-token")))
            .is_ok());
        for bad in [
            None,
            Some("Bearer s3cret-tokeN"),
            Some("Bearer s3cret"),
            Some("s3cret-token"),
            Some("Basic s3cret-token"),
            Some("Bearer "),
        ] {
            let err = server.call(with_header(bad)).expect_err("refused");
            assert_eq!(err.code(), tonic::Code::Unauthenticated, "{bad:?}");
            assert!(!err.message().contains("s3cret"), "{}", err.message());
        }
        // What a client sends is what a server admits.
        let sent = WithToken(token)
            .call(Request::new(()))
            .expect("adds a header");
        assert!(server.call(sent).is_ok());
    }

    #[test]
    fn a_token_never_shows_in_debug_output() {
        let token = Token::new("s3cret-token").expect("a valid token");
        assert!(!format!("{token:?} {:?}", RequireToken(token.clone())).contains("s3cret"));
        assert!(Token::new("  ").is_none());
        assert!(Token::new("bad\ntoken").is_none());
    }
}
