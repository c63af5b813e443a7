//! The token rule: a viewer on a loopback address answers anyone on the machine (as `sweep status`
//! reads the same files); on any other address it needs `SLEUTH_TOKEN` and every request must carry
//! it — as `Authorization: Bearer …`, or as the cookie a browser gets by opening any page once with
//! `?token=…` (the token is then taken out of the address bar by a redirect, so it stays out of
//! history and `Referer` headers). Tokens are compared in constant time over their SHA-256 digests,
//! as the cluster's API does, so not even the length leaks.

use std::net::SocketAddr;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::ViewError;

/// The cookie a browser keeps the token in.
pub const COOKIE: &str = "sleuth_token";

/// The token requests must carry, if any. Its `Debug` shows nothing of it.
#[derive(Clone, Default)]
pub struct Token {
    digest: Option<[u8; 32]>,
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
        Ok(Token {
            digest: Some(Sha256::digest(t.as_bytes()).into()),
        })
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
}

/// The token a request carries in its header or cookie.
fn carried(req: &Request) -> Option<String> {
    let h = req.headers();
    if let Some(b) = h
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    {
        return Some(b.to_string());
    }
    h.get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_string())
}

/// The middleware: passes a request that carries the token, turns `?token=` into the cookie, and
/// refuses the rest with 401.
pub async fn require(State(token): State<Token>, req: Request, next: Next) -> Response {
    if !token.required() {
        return next.run(req).await;
    }
    if carried(&req).is_some_and(|t| token.admits(&t)) {
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
            let cookie = format!("{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", t.trim());
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
    }
}
