//! The viewer's own answers, asked in-process: each address goes through the router the server
//! builds (`routes::router`), with no socket, so a bundle's pages are the live pages byte for byte
//! before they are made static. And what a live page loads after it opens (`data-load`: the report,
//! the model calls; `data-src`: the evaluation's answers, a model call's reply) written into it.

use axum::body::Body;
use axum::http::Request;
use axum::Router;
use tower::ServiceExt;

use super::links::{self, Kind};
use super::rewrite::{attr, element, next_link, unescape};
use super::BundleError;
use crate::state::NEXT;

/// One answer of the viewer.
pub struct Fetched {
    pub status: u16,
    pub body: Vec<u8>,
    /// Where its list goes on (`X-Next`), if it does.
    pub next: Option<String>,
}

impl Fetched {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// GET `url` (a path from `/` with its query) of the viewer.
pub async fn fetch(app: &Router, url: &str) -> Result<Fetched, BundleError> {
    let render = |message: String| BundleError::Render {
        url: url.to_string(),
        message,
    };
    let req = Request::get(url)
        .body(Body::empty())
        .map_err(|e| render(e.to_string()))?;
    let resp = match app.clone().oneshot(req).await {
        Ok(r) => r,
        Err(never) => match never {},
    };
    let status = resp.status().as_u16();
    let next = resp
        .headers()
        .get(NEXT)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .map_err(|e| render(e.to_string()))?
        .to_vec();
    Ok(Fetched { status, body, next })
}

/// What stands where a game's model calls were when they are left out.
const NO_CALLS: &str = "<p class=\"muted\" id=\"no-calls\">Left out of this bundle: a sweep's \
                        model calls can be most of its bytes (<code>sleuth view --bundle DIR \
                        --bundle-calls</code> writes them in).</p>";

/// What the page says where a part could not be loaded.
fn failed(status: u16, body: &str) -> String {
    format!(
        "<span class=\"error\">Not in this bundle: the viewer answered {status}: {}</span>",
        super::rewrite::escape(body.trim())
    )
}

/// Every `data-load` and `data-src` part of `html` loaded and written in, with a link to the next
/// page of its list when it has one; a game's model calls replaced by a note unless `calls`. Parts
/// that hold parts (a page of model calls, each opening its reply) are loaded in turn.
pub async fn inline(app: &Router, html: String, calls: bool) -> Result<String, BundleError> {
    let mut html = html;
    let mut from = 0;
    loop {
        let found = ["data-load=\"", "data-src=\""]
            .iter()
            .filter_map(|p| html[from..].find(p).map(|i| from + i))
            .min();
        let Some(at) = found else {
            return Ok(html);
        };
        let Some(start) = html[..at].rfind('<') else {
            return Ok(html);
        };
        let Some((open_end, end)) = element(&html, start) else {
            return Ok(html);
        };
        let open = html[start..open_end].to_string();
        let (name, lazy_details) = if open.contains(" data-load=\"") {
            ("data-load", false)
        } else {
            ("data-src", true)
        };
        let url = unescape(attr(&open, name).unwrap_or(""));
        let is_calls = url.starts_with("/game/calls");
        if is_calls && !calls {
            html.replace_range(start..end, NO_CALLS);
            from = start + NO_CALLS.len();
            continue;
        }
        let opened = super::rewrite::strip_attr(&open, name);
        // Where the loaded part goes: the element itself (`data-load`), or the `Loading…` body of
        // a `<details>` (`data-src`).
        let (body_start, body_end, in_list) = if lazy_details {
            let Some(l) = html[open_end..end].find("Loading…").map(|i| open_end + i) else {
                html.replace_range(start..open_end, &opened);
                from = start + opened.len();
                continue;
            };
            let tag = html[..l].rfind('<').map(|i| &html[i..l]).unwrap_or("");
            (l, l + "Loading…".len(), tag.starts_with("<ol"))
        } else {
            let close = html[..end].rfind("</").unwrap_or(end);
            (
                open_end,
                close,
                open.starts_with("<ol") || open.starts_with("<ul"),
            )
        };
        let f = fetch(app, &url).await?;
        let mut part = if f.status == 200 {
            f.text()
        } else {
            failed(f.status, &f.text())
        };
        if let Some(next) = f.next.as_deref() {
            // Only a list with a file of its own goes on: a page of model calls without them does not.
            if links::target(next, calls).is_some_and(|t| t.kind != Kind::Page) {
                part.push_str(&next_link(next, in_list));
            }
        }
        html.replace_range(body_start..body_end, &part);
        html.replace_range(start..open_end, &opened);
        // Go on inside what was just written: it may hold parts of its own.
        from = start + opened.len();
    }
}
