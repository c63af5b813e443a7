//! A player's browser session: the annotators' scheme (`annotate/session.rs`) with a cookie of its
//! own. The link's token starts a session whose random secret lives in a cookie scoped to `/seat`
//! (only its SHA-256 is stored, in `seat_sessions`); a POST must carry the page's proof (a hash of
//! the secret) in a header and, when the browser says where it came from, be same-origin. The
//! cookie is neither an annotator's nor the owner's, so it opens no other page of the viewer.

use axum::http::{header, HeaderMap};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub use crate::annotate::session::{new_secret, same_origin, PROOF_HEADER};

/// The cookie a player's session lives in.
pub const COOKIE: &str = "sleuth_seat";
/// A game with a person lasts hours, not weeks; the link starts a new session any time.
const MAX_AGE_SECS: u64 = 7 * 24 * 3600;

/// The `Set-Cookie` value of a session: the seat's routes only, no script, no other site.
pub fn set_cookie(secret: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!(
        "{COOKIE}={secret}; HttpOnly; SameSite=Strict; Path=/seat; Max-Age={MAX_AGE_SECS}{secure}"
    )
}

/// The session secret a request carries in its cookie.
pub fn secret(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
}

/// The proof a page of this session carries (not the secret itself).
pub fn proof(secret: &str) -> String {
    hex::encode(Sha256::digest(
        format!("sleuth seat proof\n{secret}").as_bytes(),
    ))
}

/// Whether the request carries this session's proof, compared in constant time.
pub fn proof_ok(headers: &HeaderMap, secret: &str) -> bool {
    let Some(given) = headers.get(PROOF_HEADER).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    given.as_bytes().ct_eq(proof(secret).as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn a_seat_cookie_is_its_own() {
        let s = new_secret();
        let c = set_cookie(&s, false);
        assert!(c.contains("Path=/seat;") && c.contains("HttpOnly"), "{c}");
        let mut h = HeaderMap::new();
        let cookie = format!("sleuth_annotator=x; {COOKIE}={s}");
        h.insert(
            header::COOKIE,
            HeaderValue::from_str(&cookie).expect("ascii"),
        );
        assert_eq!(secret(&h), Some(s.as_str()));
        assert_ne!(proof(&s), crate::annotate::session::proof(&s));
    }
}
