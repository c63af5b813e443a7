//! An annotator's browser session: a cookie that holds a random secret (never the annotator's
//! token), the proof a page carries that a POST came from it (CSRF), and the origin check.
//!
//! **Why a secret of its own.** The token is the annotator's link: it is shown once, may sit in a
//! mail or a chat, and opens the campaign from any browser. The cookie is drawn per browser when the
//! link is opened, so a leaked cookie is one session, and the link's token never stays in the
//! address bar, the history or a `Referer`. Only the secret's SHA-256 is stored (in the run's store,
//! `campaign_sessions`), so the session survives a restart of `sleuth view` and a copy of the store
//! holds no usable cookie.
//!
//! **Why three checks on a POST.** `SameSite=Strict` keeps the cookie off cross-site requests in
//! today's browsers; the page's proof (a hash of the secret, in the page, sent back in a custom
//! header) makes a request from elsewhere fail even where the cookie is sent, since another site can
//! neither read the page nor send a custom header without a preflight the viewer never answers; and
//! `Sec-Fetch-Site`/`Origin`, when the browser sends them, must say the request is same-origin.

use axum::http::{header, HeaderMap};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The header a page's POST carries its proof in.
pub const PROOF_HEADER: &str = "x-sleuth-proof";

/// A kind of browser session started from a link (an annotator's, a player's seat): its cookie, the
/// routes the cookie is sent to, how long a browser keeps it, and the word its proofs are hashed
/// with, so that no kind's cookie or proof passes for another's.
pub struct SessionKind {
    pub cookie: &'static str,
    pub path: &'static str,
    pub max_age_secs: u64,
    pub purpose: &'static str,
}

impl SessionKind {
    /// The `Set-Cookie` value of a session: only this kind's routes see it, no script reads it, no
    /// other site's request carries it, and under TLS it never goes out in clear.
    pub fn set_cookie(&self, secret: &str, secure: bool) -> String {
        let secure = if secure { "; Secure" } else { "" };
        format!(
            "{}={secret}; HttpOnly; SameSite=Strict; Path={}; Max-Age={}{secure}",
            self.cookie, self.path, self.max_age_secs
        )
    }

    /// The session secret a request carries in this kind's cookie.
    pub fn secret<'h>(&self, headers: &'h HeaderMap) -> Option<&'h str> {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .find(|(k, _)| *k == self.cookie)
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
    }

    /// The proof a page of this session carries: a hash of the secret, so the page holds no secret
    /// a script could turn into a cookie.
    pub fn proof(&self, secret: &str) -> String {
        hex::encode(Sha256::digest(
            format!("sleuth {} proof\n{secret}", self.purpose).as_bytes(),
        ))
    }

    /// Whether the request carries this session's proof, compared in constant time.
    pub fn proof_ok(&self, headers: &HeaderMap, secret: &str) -> bool {
        let Some(given) = headers.get(PROOF_HEADER).and_then(|v| v.to_str().ok()) else {
            return false;
        };
        given.as_bytes().ct_eq(self.proof(secret).as_bytes()).into()
    }
}

/// An annotator's session: not the owner's cookie (`auth::COOKIE`), so that neither passes for the
/// other; a campaign takes days, and the link starts a new session any time.
pub const ANNOTATOR: SessionKind = SessionKind {
    cookie: COOKIE,
    path: "/annotate",
    max_age_secs: 30 * 24 * 3600,
    purpose: "annotate",
};

/// The cookie an annotator's session lives in.
pub const COOKIE: &str = "sleuth_annotator";

/// A new session secret: 32 random bytes, hex.
pub fn new_secret() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

/// [`SessionKind::set_cookie`] of an annotator's session.
pub fn set_cookie(secret: &str, secure: bool) -> String {
    ANNOTATOR.set_cookie(secret, secure)
}

/// [`SessionKind::secret`] of an annotator's session.
pub fn secret(headers: &HeaderMap) -> Option<&str> {
    ANNOTATOR.secret(headers)
}

/// [`SessionKind::proof`] of an annotator's session.
pub fn proof(secret: &str) -> String {
    ANNOTATOR.proof(secret)
}

/// [`SessionKind::proof_ok`] of an annotator's session.
pub fn proof_ok(headers: &HeaderMap, secret: &str) -> bool {
    ANNOTATOR.proof_ok(headers, secret)
}

/// Refuses a request a browser says came from another site or origin; one without either header
/// (not a browser's fetch) is left to the proof.
pub fn same_origin(headers: &HeaderMap) -> Result<(), &'static str> {
    let text = |name| headers.get(name).map(|v| v.to_str().unwrap_or(""));
    if let Some(site) = text(header::HeaderName::from_static("sec-fetch-site")) {
        if site != "same-origin" {
            return Err("the request came from another site");
        }
    }
    if let Some(origin) = text(header::ORIGIN) {
        let host = text(header::HOST).unwrap_or("");
        let origin_host = url::Url::parse(origin).ok().and_then(|u| {
            let name = u.host_str()?.to_string();
            Some(match u.port() {
                Some(p) => format!("{name}:{p}"),
                None => name,
            })
        });
        if origin_host.as_deref() != Some(host) || host.is_empty() {
            return Err("the request came from another origin");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).expect("value"));
        }
        h
    }

    #[test]
    fn the_cookie_is_scoped_and_read_back() {
        let s = new_secret();
        assert_eq!(s.len(), 64);
        let c = set_cookie(&s, false);
        assert!(
            c.contains("HttpOnly") && c.contains("SameSite=Strict"),
            "{c}"
        );
        assert!(c.contains("Path=/annotate") && !c.contains("Secure"), "{c}");
        assert!(set_cookie(&s, true).ends_with("; Secure"));
        let h = headers(&[("cookie", &format!("sleuth_session=x; {COOKIE}={s}"))]);
        assert_eq!(secret(&h), Some(s.as_str()));
        assert_eq!(secret(&headers(&[("cookie", "sleuth_session=x")])), None);
    }

    #[test]
    fn the_proof_is_the_sessions_and_not_its_secret() {
        let s = new_secret();
        let p = proof(&s);
        assert_ne!(p, s);
        assert!(proof_ok(&headers(&[(PROOF_HEADER, &p)]), &s));
        assert!(!proof_ok(&headers(&[(PROOF_HEADER, &s)]), &s));
        assert!(!proof_ok(&headers(&[]), &s));
        assert!(!proof_ok(&headers(&[(PROOF_HEADER, &p)]), &new_secret()));
    }

    #[test]
    fn only_same_origin_requests_pass() {
        let host = ("host", "127.0.0.1:8080");
        assert!(same_origin(&headers(&[host])).is_ok());
        let same = [
            host,
            ("origin", "http://127.0.0.1:8080"),
            ("sec-fetch-site", "same-origin"),
        ];
        assert!(same_origin(&headers(&same)).is_ok());
        for bad in [
            [
                host,
                ("origin", "http://evil.example"),
                ("sec-fetch-site", "same-origin"),
            ],
            [
                host,
                ("origin", "http://127.0.0.1:8080"),
                ("sec-fetch-site", "cross-site"),
            ],
            [host, ("origin", "null"), ("sec-fetch-site", "same-origin")],
            [
                host,
                ("origin", "http://127.0.0.1:9999"),
                ("sec-fetch-site", "same-site"),
            ],
        ] {
            assert!(same_origin(&headers(&bad)).is_err(), "{bad:?}");
        }
    }
}
