//! What every response of the viewer passes through, before the token rule (`auth.rs`): the `Host`
//! check against DNS rebinding, and the headers that keep the pages in their own origin.
//!
//! **DNS rebinding.** A page on `attacker.example` can point its own name at 127.0.0.1 and then read
//! the viewer as same-origin, with whatever the viewer shows: transcripts, prompts, replies, costs.
//! The browser still sends `Host: attacker.example:PORT`, so the viewer answers only requests whose
//! host is an IP address (a rebinding needs a name), `localhost`, or a name the user listed with
//! `--allow-host`; anything else gets a 403 that says how to list it. This is the rule of Jupyter
//! and of webpack's dev server (`allowedHosts: "auto"`).
//!
//! **Headers.** Every response, error pages and assets included, says: run only our own script and
//! style (`Content-Security-Policy`; the pages have no inline script or style), never in a frame
//! (`frame-ancestors 'none'` and `X-Frame-Options: DENY` for older browsers), never sniff a type
//! (`X-Content-Type-Options: nosniff`), and send no `Referer` elsewhere (`Referrer-Policy`).

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The policy of every page: scripts, styles and fetches from the viewer itself only; images from it
/// or inline `data:` (none today, kept for charts); no plugins, no `<base>`, no frames.
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

/// The host names a viewer answers to besides IP addresses and `localhost`.
#[derive(Debug, Clone, Default)]
pub struct Hosts {
    names: Arc<Vec<String>>,
}

impl Hosts {
    /// `names` as the user gave them (`--allow-host`), compared without case and port.
    pub fn new(names: &[String]) -> Hosts {
        Hosts {
            names: Arc::new(
                names
                    .iter()
                    .map(|n| n.trim().trim_end_matches('.').to_ascii_lowercase())
                    .filter(|n| !n.is_empty())
                    .collect(),
            ),
        }
    }

    /// Whether a request with this `Host` header value is for us.
    pub fn admits(&self, host: &str) -> bool {
        let name = host_name(host).to_ascii_lowercase();
        let name = name.trim_end_matches('.');
        name.parse::<IpAddr>().is_ok()
            || name == "localhost"
            || self.names.iter().any(|n| n == name)
    }
}

/// The name part of a `Host` value: without its port, and an IPv6 literal without its brackets.
fn host_name(host: &str) -> &str {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// The middleware: refuses a request for another host, and puts the security headers on every
/// response, refusals included.
pub async fn check(State(hosts): State<Hosts>, req: Request, next: Next) -> Response {
    // HTTP/1.1 requires a Host; a request without one comes from no browser, so no page can have
    // sent it, and it is judged by the token rule alone.
    let host = req
        .headers()
        .get(header::HOST)
        .map(|h| h.to_str().unwrap_or("\u{FFFD}").to_string());
    let mut resp = match host {
        Some(h) if !hosts.admits(&h) => (
            StatusCode::FORBIDDEN,
            "this viewer does not answer to that host name (a page that points its own name at \
             this machine could read it otherwise); open it by its address or `localhost`, or start \
             it with `--allow-host NAME`\n",
        )
            .into_response(),
        _ => next.run(req).await,
    };
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_localhost_and_listed_names_only() {
        let h = Hosts::new(&["Viewer.Lab.example".into()]);
        for ok in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "[::1]:8080",
            "10.1.2.3:80",
            "localhost:8080",
            "LOCALHOST",
            "viewer.lab.example:8080",
            "viewer.lab.example.",
        ] {
            assert!(h.admits(ok), "{ok}");
        }
        for no in [
            "attacker.example:8080",
            "127.0.0.1.attacker.example",
            "localhost.attacker.example",
            "lab.example",
            "",
        ] {
            assert!(!h.admits(no), "{no}");
        }
    }
}
