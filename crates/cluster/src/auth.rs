//! Bearer tokens on the public API and the worker protocol.
//!
//! The token comes from the environment (`SLEUTH_TOKEN` by default), never from a flag, so it does not
//! show in `ps` or shell history, and it is never logged. A server compares what a request carries
//! with its tokens in constant time — over SHA-256 digests, so not even the length leaks — and
//! refuses with `UNAUTHENTICATED` naming nothing but the header it expected.
//!
//! **Two kinds of token** (issue 33). The cluster's token (`SLEUTH_TOKEN`) may do anything: submit
//! paid work, cancel it, register a worker. A coordinator may also be given a read-only token
//! (`SLEUTH_READ_TOKEN`), admitted only for the calls listed in [`READ_METHODS`] — listing sweeps and
//! workers, watching progress, fetching results and transcripts — and refused with
//! `PERMISSION_DENIED` for everything else. It is the token for a process whose secret is more
//! exposed than a worker's: `sleuth view --coordinator` serves browsers, and a browser session must
//! not be able to spend money ([`viewer_token`] picks it). The check is by the call's gRPC path,
//! and what is not listed needs the full token: an RPC added later is closed to read-only tokens
//! until someone decides it only reads (the tests make every RPC of the `.proto` files be listed in
//! [`READ_METHODS`] or [`FULL_METHODS`]).

use std::future::Ready;
use std::task::{Context, Poll};

use futures::future::Either;
use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};
use tonic::codegen::{http, Service};
use tonic::metadata::MetadataValue;
use tonic::server::NamedService;
use tonic::service::Interceptor;
use tonic::{Request, Status};

/// The environment variable that holds the cluster's token unless a command names another.
pub const TOKEN_ENV: &str = "SLEUTH_TOKEN";

/// The environment variable that holds the coordinator's read-only token, when it has one. Never a
/// flag, for the same reason as [`TOKEN_ENV`].
pub const READ_TOKEN_ENV: &str = "SLEUTH_READ_TOKEN";

/// The calls a read-only token may make, by gRPC path: those that only read the cluster's state.
pub const READ_METHODS: &[&str] = &[
    "/sleuth.v1.Sweeps/Watch",
    "/sleuth.v1.Sweeps/ListWorkers",
    "/sleuth.v1.Sweeps/Results",
    "/sleuth.v1.Sweeps/ListSweeps",
    "/sleuth.v1.Sweeps/Transcript",
];

/// The calls that need the cluster's full token: they spend money (`Submit`), stop work (`Cancel`)
/// or change what the coordinator believes about its workers (the worker protocol). Listed for the
/// record and the test that classifies every RPC; the server refuses read-only tokens for any call
/// not in [`READ_METHODS`], listed here or not.
pub const FULL_METHODS: &[&str] = &[
    "/sleuth.v1.Sweeps/Submit",
    "/sleuth.v1.Sweeps/Cancel",
    "/sleuth.v1.Workers/Register",
    "/sleuth.v1.Workers/Heartbeat",
    "/sleuth.v1.Workers/Report",
];

/// Why a token could not be had.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("environment variable {var} is not set: the cluster's bearer token is read from it")]
    Missing { var: String },
    #[error(
        "environment variable {var} is empty or not valid in an HTTP header (visible ASCII only)"
    )]
    Invalid { var: String },
    /// A read-only token equal to the full one would make the "read-only" process hold full rights.
    #[error(
        "{read} holds the same secret as {full}: a read-only token must be a secret of its own \
         (generate one with `openssl rand -hex 32`)"
    )]
    ReadSameAsFull { read: String, full: String },
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

    /// Whether two tokens hold the same secret (compared in constant time, as requests are).
    pub fn same_secret(&self, other: &Token) -> bool {
        self.digest.ct_eq(&other.digest).into()
    }
}

/// The digest of the token an `authorization` header value presents (`Bearer <token>`).
fn presented(header: Option<&[u8]>) -> Option<[u8; 32]> {
    let given = header.and_then(|h| h.strip_prefix(b"Bearer "))?;
    Some(Sha256::digest(given.trim_ascii()).into())
}

/// What a request's token allows. A request the server admitted carries it in its extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The cluster's token: every call.
    Full,
    /// The read-only token: the calls of [`READ_METHODS`].
    Read,
}

/// The read-only token in [`READ_TOKEN_ENV`]; `None` when the variable is unset or empty (an empty
/// value is what a compose file's `${SLEUTH_READ_TOKEN:-}` passes when none is configured). A value
/// that cannot travel in a header is an error, not a silent "none".
pub fn read_token_from_env() -> Result<Option<Token>, AuthError> {
    read_token_from(|v| std::env::var(v).ok())
}

fn read_token_from(get: impl Fn(&str) -> Option<String>) -> Result<Option<Token>, AuthError> {
    match get(READ_TOKEN_ENV) {
        None => Ok(None),
        Some(v) if v.trim().is_empty() => Ok(None),
        Some(v) => Token::new(&v).map(Some).ok_or_else(|| AuthError::Invalid {
            var: READ_TOKEN_ENV.into(),
        }),
    }
}

/// The tokens a coordinator admits: its full token and, optionally, a read-only one.
#[derive(Clone, Debug)]
pub struct ServerTokens {
    full: Token,
    read: Option<Token>,
}

impl ServerTokens {
    /// The full token and the read-only one; refused when both hold the same secret.
    pub fn new(full: Token, read: Option<Token>) -> Result<Self, AuthError> {
        if read.as_ref().is_some_and(|r| r.same_secret(&full)) {
            return Err(AuthError::ReadSameAsFull {
                read: READ_TOKEN_ENV.into(),
                full: TOKEN_ENV.into(),
            });
        }
        Ok(ServerTokens { full, read })
    }

    /// What an `authorization` header value admits, if anything. The presented token is compared
    /// with both tokens, always, in constant time.
    pub fn access(&self, header: Option<&[u8]>) -> Option<Access> {
        let given = presented(header)?;
        let full = given.ct_eq(&self.full.digest);
        let read = match &self.read {
            Some(r) => given.ct_eq(&r.digest),
            None => Choice::from(0),
        };
        if bool::from(full) {
            Some(Access::Full)
        } else if bool::from(read) {
            Some(Access::Read)
        } else {
            None
        }
    }

    /// Whether a request to the gRPC `path` with this `authorization` header may go on: its access,
    /// or `UNAUTHENTICATED` (no token, or a wrong one) or `PERMISSION_DENIED` (a read-only token on
    /// a call that is not in [`READ_METHODS`]). The statuses name the call, never a token.
    pub fn authorize(&self, header: Option<&[u8]>, path: &str) -> Result<Access, Status> {
        match self.access(header) {
            None => Err(Status::unauthenticated(
                "missing or wrong bearer token (authorization: Bearer <token>)",
            )),
            Some(Access::Full) => Ok(Access::Full),
            Some(Access::Read) if READ_METHODS.contains(&path) => Ok(Access::Read),
            Some(Access::Read) => Err(Status::permission_denied(format!(
                "{path} needs the cluster's token ({TOKEN_ENV}); the token given is read-only \
                 ({READ_TOKEN_ENV}): it may list, watch and fetch, not submit, cancel or register"
            ))),
        }
    }
}

/// Server side: a service (the generated `SweepsServer` or `WorkersServer`) behind the tokens. A
/// tower service rather than a tonic interceptor because the decision needs the call's path, which
/// an interceptor does not see. An admitted request carries its [`Access`] in its extensions.
#[derive(Clone, Debug)]
pub struct Authorized<S> {
    inner: S,
    tokens: ServerTokens,
}

impl<S> Authorized<S> {
    pub fn new(inner: S, tokens: ServerTokens) -> Self {
        Authorized { inner, tokens }
    }
}

impl<S, B> Service<http::Request<B>> for Authorized<S>
where
    S: Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = Either<S::Future, Ready<Result<Self::Response, S::Error>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<B>) -> Self::Future {
        let header = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .map(|v| v.as_bytes());
        match self.tokens.authorize(header, req.uri().path()) {
            Ok(access) => {
                req.extensions_mut().insert(access);
                Either::Left(self.inner.call(req))
            }
            Err(status) => Either::Right(std::future::ready(Ok(status.into_http()))),
        }
    }
}

/// Served under the wrapped service's name, so the router sends it that service's calls.
impl<S: NamedService> NamedService for Authorized<S> {
    const NAME: &'static str = S::NAME;
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

/// The token `sleuth view --coordinator` presents to the coordinator, and what it allows.
#[derive(Clone, Debug)]
pub struct ViewerToken {
    pub token: Token,
    pub access: Access,
}

impl ViewerToken {
    /// What the viewer should print when it holds the full token: a browser-facing process then
    /// holds a secret that can submit paid work. `None` with the read-only token.
    pub fn warning(&self) -> Option<String> {
        match self.access {
            Access::Read => None,
            Access::Full => Some(format!(
                "{READ_TOKEN_ENV} is not set, so the viewer talks to the coordinator with \
                 {TOKEN_ENV}, the cluster's full token, which can submit and cancel sweeps; give \
                 the coordinator a read-only token ({READ_TOKEN_ENV}) and the viewer the same"
            )),
        }
    }
}

/// The token a viewer should use towards a coordinator: the read-only one in [`READ_TOKEN_ENV`]
/// when it is set, else the full one in [`TOKEN_ENV`] — then [`ViewerToken::warning`] says so and
/// the caller prints it.
pub fn viewer_token() -> Result<ViewerToken, AuthError> {
    viewer_token_from(|v| std::env::var(v).ok())
}

fn viewer_token_from(get: impl Fn(&str) -> Option<String>) -> Result<ViewerToken, AuthError> {
    if let Some(token) = read_token_from(&get)? {
        return Ok(ViewerToken {
            token,
            access: Access::Read,
        });
    }
    let full = get(TOKEN_ENV).ok_or_else(|| AuthError::Missing {
        var: TOKEN_ENV.into(),
    })?;
    let token = Token::new(&full).ok_or_else(|| AuthError::Invalid {
        var: TOKEN_ENV.into(),
    })?;
    Ok(ViewerToken {
        token,
        access: Access::Full,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::BTreeSet;

    use prost::Message as _;

    fn header(value: Option<&str>) -> Option<Vec<u8>> {
        value.map(|v| v.as_bytes().to_vec())
    }

    fn tokens(read: Option<&str>) -> ServerTokens {
        ServerTokens::new(
            Token::new("s3cret-token").expect("a valid token"),
            read.map(|r| Token::new(r).expect("a valid token")),
        )
        .expect("distinct tokens")
    }

    #[test]
    fn only_the_right_token_passes() {
        let server = tokens(None);
        let path = "/sleuth.v1.Sweeps/Submit";
        assert_eq!(
            server
                .authorize(header(Some("Bearer s3cret-token")).as_deref(), path)
                .expect("admitted"),
            Access::Full
        );
        for bad in [
            None,
            Some("Bearer s3cret-tokeN"),
            Some("Bearer s3cret"),
            Some("s3cret-token"),
            Some("Basic s3cret-token"),
            Some("Bearer "),
        ] {
            let err = server
                .authorize(header(bad).as_deref(), path)
                .expect_err("refused");
            assert_eq!(err.code(), tonic::Code::Unauthenticated, "{bad:?}");
            assert!(!err.message().contains("s3cret"), "{}", err.message());
        }
        // What a client sends is what a server admits.
        let sent = WithToken(Token::new("s3cret-token").expect("a valid token"))
            .call(Request::new(()))
            .expect("adds a header");
        let value = sent.metadata().get("authorization").map(|v| v.as_bytes());
        assert_eq!(server.access(value), Some(Access::Full));
    }

    #[test]
    fn a_read_only_token_reads_and_nothing_else() {
        let server = tokens(Some("reader-token"));
        let read = header(Some("Bearer reader-token"));
        for path in READ_METHODS {
            assert_eq!(
                server.authorize(read.as_deref(), path).expect("may read"),
                Access::Read,
                "{path}"
            );
        }
        for path in FULL_METHODS
            .iter()
            .chain(&["/sleuth.v1.Sweeps/Unknown", ""])
        {
            let err = server
                .authorize(read.as_deref(), path)
                .expect_err("refused");
            assert_eq!(err.code(), tonic::Code::PermissionDenied, "{path}");
            assert!(err.message().contains("read-only"), "{}", err.message());
            assert!(!err.message().contains("reader-token"), "{}", err.message());
            // The full token may do all of it.
            let full = header(Some("Bearer s3cret-token"));
            assert_eq!(server.access(full.as_deref()), Some(Access::Full));
        }
        // Without a read-only token configured, the same header is just a wrong token.
        let err = tokens(None)
            .authorize(read.as_deref(), READ_METHODS[0])
            .expect_err("unknown token");
        assert_eq!(err.code(), tonic::Code::Unauthenticated);
    }

    #[test]
    fn a_read_only_token_equal_to_the_full_one_is_refused() {
        let full = Token::new("same").expect("a valid token");
        let err = ServerTokens::new(full.clone(), Some(Token::new(" same ").expect("valid")))
            .expect_err("refused");
        assert!(err.to_string().contains(READ_TOKEN_ENV), "{err}");
        assert!(!err.to_string().contains("same secret as same"), "{err}");
        assert!(ServerTokens::new(full, Some(Token::new("other").expect("valid"))).is_ok());
    }

    /// Every RPC of the `.proto` files is either a read or needs the full token: a new RPC fails this
    /// test until it is put in one of the two lists.
    #[test]
    fn every_rpc_is_classified() {
        let set = prost_types::FileDescriptorSet::decode(crate::proto::FILE_DESCRIPTOR_SET)
            .expect("the descriptor set decodes");
        let mut rpcs = BTreeSet::new();
        for file in &set.file {
            for service in &file.service {
                for method in &service.method {
                    rpcs.insert(format!(
                        "/{}.{}/{}",
                        file.package(),
                        service.name(),
                        method.name()
                    ));
                }
            }
        }
        let listed: BTreeSet<String> = READ_METHODS
            .iter()
            .chain(FULL_METHODS)
            .map(|m| m.to_string())
            .collect();
        assert_eq!(listed.len(), READ_METHODS.len() + FULL_METHODS.len());
        assert_eq!(rpcs, listed, "classify every RPC in auth.rs");
    }

    #[test]
    fn the_viewer_prefers_the_read_only_token_and_warns_without_it() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |v: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == v)
                    .map(|(_, val)| val.to_string())
            }
        };
        let both = viewer_token_from(env(&[(TOKEN_ENV, "full"), (READ_TOKEN_ENV, "reader")]))
            .expect("a token");
        assert_eq!(both.access, Access::Read);
        assert!(both
            .token
            .same_secret(&Token::new("reader").expect("valid")));
        assert!(both.warning().is_none());

        // An empty read-only variable (compose's `${SLEUTH_READ_TOKEN:-}`) is none: the full
        // token, with the warning, which names both variables and neither secret.
        let pairs: [&'static [(&str, &str)]; 3] = [
            &[(TOKEN_ENV, "full-secret"), (READ_TOKEN_ENV, "")],
            &[(TOKEN_ENV, "full-secret"), (READ_TOKEN_ENV, "  ")],
            &[(TOKEN_ENV, "full-secret")],
        ];
        for pairs in pairs {
            let full = viewer_token_from(env(pairs)).expect("a token");
            assert_eq!(full.access, Access::Full);
            let warning = full.warning().expect("a warning");
            assert!(
                warning.contains(READ_TOKEN_ENV) && warning.contains(TOKEN_ENV),
                "{warning}"
            );
            assert!(!warning.contains("full-secret"), "{warning}");
        }
        let none = viewer_token_from(env(&[])).expect_err("no token");
        assert!(none.to_string().contains(TOKEN_ENV), "{none}");
        let bad = viewer_token_from(env(&[(READ_TOKEN_ENV, "bad\ntoken")])).expect_err("invalid");
        assert!(bad.to_string().contains(READ_TOKEN_ENV), "{bad}");
    }

    #[test]
    fn a_token_never_shows_in_debug_output() {
        let token = Token::new("s3cret-token").expect("a valid token");
        let server = ServerTokens::new(token.clone(), Some(Token::new("r3ad").expect("valid")))
            .expect("distinct");
        let shown = format!(
            "{token:?} {server:?} {:?}",
            Authorized::new((), server.clone())
        );
        assert!(
            !shown.contains("s3cret") && !shown.contains("r3ad"),
            "{shown}"
        );
        assert!(Token::new("  ").is_none());
        assert!(Token::new("bad\ntoken").is_none());
    }
}
