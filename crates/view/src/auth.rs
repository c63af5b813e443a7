//! The token rule: a viewer on a loopback address answers anyone on the machine (as `sweep status`
//! reads the same files); on any other address it needs `SLEUTH_TOKEN` and every request must carry
//! it as `Authorization: Bearer …`, or carry the session cookie a browser gets by opening any page
//! once with `?token=…` (the token is then taken out of the address bar by a redirect, so it stays
//! out of history and `Referer` headers). Tokens are compared in constant time over their SHA-256
//! digests, as the cluster's API does, so not even the length leaks.
//!
//! **The cookie is a session, never the token.** Its value is a random secret the viewer draws when
//! it starts: a browser that leaks its cookie leaks a session of this viewer process, not the token
//! (which, with `--coordinator`, may open a cluster). Sessions end when the viewer stops. The cookie
//! is `HttpOnly`, `SameSite=Strict`, and `Secure` when the viewer serves TLS.

use std::net::SocketAddr;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::ViewError;

/// The cookie a browser keeps its session in.
pub const COOKIE: &str = "sleuth_session";

/// The token requests must carry, if any, and the session secret of this viewer. Its `Debug` shows
/// nothing of either.
#[derive(Clone, Default)]
pub struct Token {
    digest: Option<[u8; 32]>,
    /// The session cookie's value (hex of 32 random bytes) and its digest; drawn with the token.
    session: Option<(String, [u8; 32])>,
    /// Whether the cookie is marked `Secure` (the viewer serves TLS).
    secure: bool,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.digest.is_some() {
            "Token(<redacted>)"
        } else {
            "Token(none)"
        })
    }
}

impl Token {
    /// The rule for a server on `addr` given the token in the environment: none needed on a loopback
    /// address; required elsewhere.
    pub fn for_listen(addr: SocketAddr, token: Option<&str>) -> Result<Token, ViewError> {
        if addr.ip().is_loopback() {
            return Ok(Token::default());
        }
        let Some(t) = token else {
            return Err(ViewError::TokenRequired { addr });
        };
        let t = t.trim();
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(ViewError::BadToken);
        }
        let secret: [u8; 32] = rand::random();
        let session = hex::encode(secret);
        let session_digest = Sha256::digest(session.as_bytes()).into();
        Ok(Token {
            digest: Some(Sha256::digest(t.as_bytes()).into()),
            session: Some((session, session_digest)),
            secure: false,
        })
    }

    /// The same rule with the session cookie marked `Secure`, for a viewer that serves TLS.
    pub fn secure(self) -> Token {
        Token {
            secure: true,
            ..self
        }
    }

    /// Whether the viewer serves TLS, so that its cookies (an annotator's too) are marked `Secure`.
    pub fn is_secure(&self) -> bool {
        self.secure
    }

    /// Whether requests need a token at all.
    pub fn required(&self) -> bool {
        self.digest.is_some()
    }

    fn admits(&self, given: &str) -> bool {
        let Some(want) = &self.digest else {
            return true;
        };
        let got: [u8; 32] = Sha256::digest(given.trim().as_bytes()).into();
        got.ct_eq(want).into()
    }

    /// Whether `given` is this viewer's session.
    fn admits_session(&self, given: &str) -> bool {
        let Some((_, want)) = &self.session else {
            return self.digest.is_none();
        };
        let got: [u8; 32] = Sha256::digest(given.trim().as_bytes()).into();
        got.ct_eq(want).into()
    }

    /// Whether a request carries the token (bearer header) or a session (cookie).
    fn passes(&self, req: &Request) -> bool {
        bearer(req).is_some_and(|t| self.admits(t))
            || session(req).is_some_and(|s| self.admits_session(s))
    }

    /// The `Set-Cookie` value that starts a session.
    fn cookie(&self) -> Option<String> {
        let (value, _) = self.session.as_ref()?;
        let secure = if self.secure { "; Secure" } else { "" };
        Some(format!(
            "{COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/{secure}"
        ))
    }
}

/// The token a request carries in its `Authorization` header.
fn bearer(req: &Request) -> Option<&str> {
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
}

/// The session a request carries in its cookie.
fn session(req: &Request) -> Option<&str> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v)
}

/// The middleware: passes a request that carries the token, turns `?token=` into the cookie, and
/// refuses the rest with 401.
pub async fn require(State(token): State<Token>, req: Request, next: Next) -> Response {
    if !token.required() {
        return next.run(req).await;
    }
    if token.passes(&req) {
        return next.run(req).await;
    }
    let query = req.uri().query().unwrap_or("");
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    if let Some((_, t)) = pairs.iter().find(|(k, _)| k == "token") {
        if token.admits(t) {
            let rest: Vec<&(String, String)> = pairs.iter().filter(|(k, _)| k != "token").collect();
            let mut to = req.uri().path().to_string();
            if !rest.is_empty() {
                let q = url::form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(rest.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                    .finish();
                to = format!("{to}?{q}");
            }
            let cookie = token.cookie().unwrap_or_default();
            let mut resp = (StatusCode::SEE_OTHER, "").into_response();
            if let (Ok(loc), Ok(c)) = (HeaderValue::from_str(&to), HeaderValue::from_str(&cookie)) {
                resp.headers_mut().insert(header::LOCATION, loc);
                resp.headers_mut().insert(header::SET_COOKIE, c);
                return resp;
            }
        }
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "this viewer needs its token: send `Authorization: Bearer <SLEUTH_TOKEN>`, or open any page once with ?token=<SLEUTH_TOKEN>\n",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_needs_no_token_and_other_addresses_need_one() {
        let lo: SocketAddr = "127.0.0.1:8080".parse().expect("addr");
        let any: SocketAddr = "0.0.0.0:8080".parse().expect("addr");
        assert!(!Token::for_listen(lo, None).expect("loopback").required());
        assert!(matches!(
            Token::for_listen(any, None),
            Err(ViewError::TokenRequired { .. })
        ));
        assert!(matches!(
            Token::for_listen(any, Some("  ")),
            Err(ViewError::BadToken)
        ));
        let t = Token::for_listen(any, Some("s3cret")).expect("token");
        assert!(t.required());
        assert!(t.admits("s3cret"));
        assert!(!t.admits("s3cre"));
        assert!(!format!("{t:?}").contains("s3cret"));
        // The cookie starts a session: never the token, and another viewer's session is refused.
        let cookie = t.cookie().expect("a cookie");
        assert!(
            !cookie.contains("s3cret") && !cookie.contains("Secure"),
            "{cookie}"
        );
        let value = cookie
            .strip_prefix("sleuth_session=")
            .and_then(|c| c.split(';').next())
            .expect("the value");
        assert!(t.admits_session(value));
        assert!(!t.admits_session("s3cret"), "the token is no session");
        let other = Token::for_listen(any, Some("s3cret")).expect("token");
        assert!(
            !other.admits_session(value),
            "sessions are per viewer process"
        );
        assert!(t.secure().cookie().expect("a cookie").ends_with("; Secure"));
    }
}
