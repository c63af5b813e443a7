//! What every handler of the viewer shares, and how a request answers: the state, the error a page
//! fails with, and the fragments that continue a list (see `routes.rs` for the routes).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use minijinja::Environment;

use super::auth::Token;
use super::db::ReadError;
use super::source::Source;
use super::tables::ReportView;
use super::totals::{Live, SharedLive};

/// The header a list fragment names its continuation in.
pub const NEXT: &str = "x-next";
/// The header a running game's timeline names where to ask again for events not yet written (the
/// script polls it every few seconds until it is absent: the game has stopped).
pub const FOLLOW: &str = "x-follow";

/// The last report built per key (a sweep, or the folder), with the number of finished games it was
/// built on.
pub type Reports = Arc<Mutex<HashMap<String, (u64, Arc<ReportView>)>>>;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub source: Source,
    pub token: Token,
    pub live: SharedLive,
    /// The templates, or why they did not compile (a bug in the build, which a unit test catches:
    /// every page then answers with it rather than the server panicking).
    pub env: Arc<Result<Environment<'static>, String>>,
    /// The last report built per key (a sweep, or the folder) with the number of finished games it
    /// was built on: rebuilt only when more games have finished. One entry per sweep.
    pub reports: Reports,
    /// Held while a report is built, so that only one is built at a time.
    pub building: Arc<tokio::sync::Mutex<()>>,
    /// The run's annotation campaigns (`annotate`), opened when first asked for.
    pub campaigns: super::annotate::campaigns::Campaigns,
}

impl AppState {
    pub fn new(source: Source, token: Token) -> AppState {
        AppState {
            source,
            token,
            live: Arc::new(RwLock::new(Arc::new(Live::default()))),
            env: Arc::new(super::templates::environment().map_err(|e| format!("{e:#}"))),
            reports: Arc::new(Mutex::new(HashMap::new())),
            building: Arc::new(tokio::sync::Mutex::new(())),
            campaigns: super::annotate::campaigns::Campaigns::default(),
        }
    }

    /// The live snapshot.
    pub fn live(&self) -> Arc<Live> {
        self.live
            .read()
            .map(|l| l.clone())
            .unwrap_or_else(|_| Arc::new(Live::default()))
    }

    /// Renders a template with `ctx` (plus the run directory as `root`).
    pub fn render(&self, name: &str, ctx: minijinja::Value) -> Result<String, PageError> {
        let ctx = minijinja::context! { root => self.source.root.display().to_string(), ..ctx };
        let env = self
            .env
            .as_ref()
            .as_ref()
            .map_err(|e| PageError::Internal(format!("the templates do not compile: {e}")))?;
        env.get_template(name)
            .and_then(|t| t.render(ctx))
            .map_err(|e| PageError::Internal(format!("rendering {name}: {e:#}")))
    }
}

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("not found: {0}")]
    NotFound(String),
    #[error("bad request: {0}")]
    BadRequest(String),
    #[error("{0}")]
    Internal(String),
}

impl PageError {
    /// A failed read of the store, worded as every page words it (`db::ReadError`).
    pub fn store(e: sleuth_store::StoreError) -> PageError {
        ReadError::from(e).into()
    }
}

impl From<ReadError> for PageError {
    fn from(e: ReadError) -> PageError {
        PageError::Internal(e.to_string())
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let status = match &self {
            PageError::NotFound(_) => StatusCode::NOT_FOUND,
            PageError::BadRequest(_) => StatusCode::BAD_REQUEST,
            PageError::Internal(e) => {
                tracing::warn!(error = %e, "viewer: a request failed");
                StatusCode::INTERNAL_SERVER_ERROR
            }
        };
        (status, format!("{self}\n")).into_response()
    }
}

/// An HTML fragment that goes on at `next`.
pub fn fragment(html: String, next: Option<String>) -> Response {
    let mut resp = Html(html).into_response();
    if let Some(v) = next.and_then(|n| HeaderValue::from_str(&n).ok()) {
        resp.headers_mut().insert(HeaderName::from_static(NEXT), v);
    }
    resp
}

/// One of a page's compiled-in assets, from a table of (name, MIME type, body), with the given
/// `Cache-Control`; an unknown name is a 404.
pub fn asset(assets: &[(&str, &str, &'static str)], file: &str, cache: &'static str) -> Response {
    match assets.iter().find(|(name, _, _)| *name == file) {
        Some((_, mime, body)) => (
            [
                (axum::http::header::CONTENT_TYPE, *mime),
                (axum::http::header::CACHE_CONTROL, cache),
            ],
            *body,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no such asset\n").into_response(),
    }
}
