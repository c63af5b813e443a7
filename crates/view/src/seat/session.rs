//! A player's browser session: the annotators' scheme (`annotate/session.rs`) with a cookie of its
//! own. The link's token starts a session whose random secret lives in a cookie scoped to `/seat`
//! (only its SHA-256 is stored, in `seat_sessions`); a POST must carry the page's proof (a hash of
//! the secret) in a header and, when the browser says where it came from, be same-origin. The
//! cookie is neither an annotator's nor the owner's, so it opens no other page of the viewer.

use axum::http::HeaderMap;

use crate::annotate::session::SessionKind;
pub use crate::annotate::session::{new_secret, same_origin, PROOF_HEADER};

/// The cookie a player's session lives in.
pub const COOKIE: &str = "sleuth_seat";

/// A player's session: the seat's routes only; a game with a person lasts hours, not weeks, and the
/// link starts a new session any time.
const SEAT: SessionKind = SessionKind {
    cookie: COOKIE,
    path: "/seat",
    max_age_secs: 7 * 24 * 3600,
    purpose: "seat",
};

/// [`SessionKind::set_cookie`] of a player's session.
pub fn set_cookie(secret: &str, secure: bool) -> String {
    SEAT.set_cookie(secret, secure)
}

/// [`SessionKind::secret`] of a player's session.
pub fn secret(headers: &HeaderMap) -> Option<&str> {
    SEAT.secret(headers)
}

/// [`SessionKind::proof`] of a player's session (not the secret itself).
pub fn proof(secret: &str) -> String {
    SEAT.proof(secret)
}

/// [`SessionKind::proof_ok`] of a player's session.
pub fn proof_ok(headers: &HeaderMap, secret: &str) -> bool {
    SEAT.proof_ok(headers, secret)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{header, HeaderValue};

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
