//! The viewer's routes, its shared state and how a failed request answers.
//!
//! | route | what |
//! |---|---|
//! | `GET /` | the runs page (a folder of games: its games and the report) |
//! | `GET /api/runs` | the runs' live figures as JSON (what the pages poll) |
//! | `GET /sweep?id=&state=` | a sweep |
//! | `GET /sweep/games?id=&state=&offset=` | the next rows of a sweep's games (HTML) |
//! | `GET /report[?sweep=]` | the report's tables (HTML, loaded after the page) |
//! | `GET /game?id=&as=` | a game, its transcript as seen by a character or by everyone |
//! | `GET /game/events?id=&after=&as=&view=answers` | the next page of a transcript (HTML) |
//! | `GET /game/calls?id=&offset=` | the next page of a game's model calls (HTML) |
//! | `GET /game/call?id=&call=` | one model call with its reply (HTML) |
//! | `GET /compare?a=&b=&as=` | two games side by side, aligned by stage, the first difference marked |
//! | `GET /compare/events?a=&b=&after_a=&after_b=&n=&stage=&rows=&as=` | the next rows of two games side by side (HTML) |
//! | `GET /folder/games?offset=` | the next rows of a folder's games (HTML) |
//! | `GET /assets/{file}` | the stylesheet and the script, compiled in |
//!
//! Fragments that continue a list say where the list goes on in an `X-Next` header (absent at its
//! end), so the script never parses HTML to page. A running game's timeline, once it has caught up
//! with its transcript, says where to look for new events in `X-Follow` instead.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use axum::extract::Path as UrlPath;
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use minijinja::Environment;

use super::auth::{self, Token};
use super::source::Source;
use super::tables::ReportView;
use super::totals::{Live, Shared};
use super::{compare, pages};

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
    pub live: Shared,
    /// The templates, or why they did not compile (a bug in the build, which a unit test catches:
    /// every page then answers with it rather than the server panicking).
    pub env: Arc<Result<Environment<'static>, String>>,
    /// The last report built per key (a sweep, or the folder) with the number of finished games it
    /// was built on: rebuilt only when more games have finished. One entry per sweep.
    pub reports: Reports,
    /// Held while a report is built, so that only one is built at a time.
    pub building: Arc<tokio::sync::Mutex<()>>,
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
    pub fn store(e: rusqlite::Error) -> PageError {
        PageError::Internal(format!("reading the store: {e}"))
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

/// Every route, behind the token rule.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(pages::runs))
        .route("/api/runs", get(pages::api_runs))
        .route("/sweep", get(pages::sweep))
        .route("/sweep/games", get(pages::sweep_games))
        .route("/report", get(pages::report))
        .route("/game", get(pages::game))
        .route("/game/events", get(pages::game_events))
        .route("/game/calls", get(pages::game_calls))
        .route("/game/call", get(pages::game_call))
        .route("/compare", get(compare::compare))
        .route("/compare/events", get(compare::compare_events))
        .route("/folder/games", get(pages::folder_games))
        .route("/assets/{file}", get(asset))
        .layer(axum::middleware::from_fn_with_state(
            state.token.clone(),
            auth::require,
        ))
        .with_state(state)
}

/// The stylesheet and the script.
const ASSETS: [(&str, &str, &str); 2] = [
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("assets/app.css"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/app.js"),
    ),
];

async fn asset(UrlPath(file): UrlPath<String>) -> Response {
    match ASSETS.iter().find(|(name, _, _)| *name == file) {
        Some((_, mime, body)) => (
            [
                (header::CONTENT_TYPE, *mime),
                (header::CACHE_CONTROL, "public, max-age=3600"),
            ],
            *body,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no such asset\n").into_response(),
    }
}
