//! The viewer's routes (its shared state and how a failed request answers are in `state.rs`).
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
//! | `POST /game/seat` | *Take a seat*: plays the game again with the owner at one character (`sleuth play --spec … --human …`, same origin and the page's proof only); redirects to the seat |
//! | `GET /compare?a=&b=&as=` | two games side by side, aligned by stage, the first difference marked |
//! | `GET /compare/events?a=&b=&after_a=&after_b=&n=&stage=&rows=&as=` | the next rows of two games side by side (HTML) |
//! | `GET /folder/games?offset=` | the next rows of a folder's games (HTML) |
//! | `GET /assets/{file}` | the stylesheet and the script, compiled in |
//! | `GET /campaigns` | the run's annotation campaigns, and the *New campaign* form |
//! | `POST /campaigns/new` | makes a campaign from the form (same origin and the page's proof only); shows each annotator's link once |
//! | `GET /campaign?id=` | a campaign: each annotator's progress, each item's answers, the commands |
//! | `GET /annotate?token=` | an annotator's link: starts their session (cookie), redirects to `/annotate` |
//! | `GET /annotate[?n=]` | the annotator's queue: their `n`-th item (default: the first unanswered), or its end |
//! | `POST /annotate/answer` | one answer, JSON `{"item", "answer"}`, checked and stored at once |
//! | `GET /annotate/assets/{file}` | the annotation pages' stylesheets and script |
//!
//! Every route but the last four is behind the owner's token rule (`auth.rs`). The `/annotate`
//! routes are outside it and need an annotator's session instead (`annotate/session.rs`), which
//! opens nothing else: an annotator who holds only their link cannot read a sweep, a game or a
//! campaign page, and the owner's session is no annotator's.
//!
//! Fragments that continue a list say where the list goes on in an `X-Next` header (absent at its
//! end), so the script never parses HTML to page. A running game's timeline, once it has caught up
//! with its transcript, says where to look for new events in `X-Follow` instead.

use axum::extract::Path as UrlPath;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;

pub use super::state::{fragment, AppState, PageError, Reports, FOLLOW, NEXT};
use super::{annotate, auth, compare, guard, pages, seat};

/// Every route behind the token rule but an annotator's (which check their own session), and all of
/// them behind the host check and the security headers (`guard.rs`), so that refusals carry the
/// headers too.
pub fn router(state: AppState, hosts: guard::Hosts) -> Router {
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
        .route("/game/seat", post(seat::take::take))
        .route("/compare", get(compare::compare))
        .route("/compare/events", get(compare::compare_events))
        .route("/folder/games", get(pages::folder_games))
        .route("/assets/{file}", get(asset))
        .route("/campaigns", get(annotate::campaigns))
        .route("/campaigns/new", post(annotate::new_campaign))
        .route("/campaign", get(annotate::campaign))
        .layer(axum::middleware::from_fn_with_state(
            state.token.clone(),
            auth::require,
        ))
        .merge(annotate::annotator_routes())
        .layer(axum::middleware::from_fn_with_state(hosts, guard::check))
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
    super::state::asset(&ASSETS, &file, "public, max-age=3600")
}
