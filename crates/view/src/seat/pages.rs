//! The seat's routes: the player's link, their page, the moves it waits for, and their replies.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::extract::{Path as UrlPath, State};
use axum::http::Uri;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use minijinja::{context, Environment};
use serde::Deserialize;
use serde_json::json;

use super::hub::{ReplyError, SeatHub};
use super::session;
use crate::pages::{param, query};
use sleuth_game::agent::MoveAnswer;
use sleuth_store::seats::SeatRow;

/// How long a long-poll of the moves waits for a change before answering "nothing new".
const LONG_POLL: Duration = Duration::from_secs(20);

/// What the seat's handlers share.
#[derive(Clone)]
pub struct SeatState {
    pub hub: Arc<SeatHub>,
    /// Served over TLS: the cookie is `Secure`.
    pub secure: bool,
}

/// The seat page's template, in an environment of its own (auto-escaping, as every `.html`).
fn env() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        if let Err(e) = env.add_template("seat.html", include_str!("../templates/seat.html")) {
            tracing::error!(error = %e, "the seat page's template does not compile");
        }
        env
    })
}

fn no_store(status: StatusCode, content_type: &'static str, body: String) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

fn refused(status: StatusCode, message: &str) -> Response {
    no_store(status, "text/plain; charset=utf-8", format!("{message}\n"))
}

fn failed(e: impl std::fmt::Display) -> Response {
    tracing::warn!(error = %e, "seat: store error");
    refused(
        StatusCode::INTERNAL_SERVER_ERROR,
        "the seat's store failed; try again",
    )
}

/// The seat of the request's session, if it has one for this game.
fn seat(
    s: &SeatState,
    headers: &HeaderMap,
) -> Result<Option<(SeatRow, String)>, sleuth_store::StoreError> {
    let Some(secret) = session::secret(headers) else {
        return Ok(None);
    };
    let row = s.hub.book().seat_of_session(secret)?;
    Ok(row
        .filter(|r| r.game == s.hub.game())
        .map(|r| (r, secret.to_string())))
}

const NO_SESSION: &str = "no seat here: open the link you were given";

/// `GET /seat?token=`: starts the player's session and sends them to `/seat` (the token leaves the
/// address bar); `GET /seat`: the player's page.
pub async fn page(State(s): State<SeatState>, uri: Uri, headers: HeaderMap) -> Response {
    if let Some(token) = param(&query(&uri), "token") {
        return start(&s, token);
    }
    let (row, secret) = match seat(&s, &headers) {
        Ok(Some(x)) => x,
        Ok(None) => return refused(StatusCode::FORBIDDEN, NO_SESSION),
        Err(e) => return failed(e),
    };
    // The seat's language is known from the game's first move for it; a page opened before that
    // starts in English and seat.js switches its words when a state says otherwise.
    let lang = s.hub.language(&row.character).unwrap_or("en");
    let page = env().get_template("seat.html").and_then(|t| {
        t.render(context! {
            character => row.character, player => row.player, proof => session::proof(&secret),
            lang => lang,
        })
    });
    match page {
        Ok(html) => no_store(StatusCode::OK, "text/html; charset=utf-8", html),
        Err(e) => failed(e),
    }
}

fn start(s: &SeatState, token: &str) -> Response {
    let row = match s.hub.book().seat_of_token(token) {
        Ok(Some(r)) if r.game == s.hub.game() => r,
        Ok(_) => {
            return refused(
                StatusCode::FORBIDDEN,
                "this link opens no seat of this game",
            )
        }
        Err(e) => return failed(e),
    };
    let secret = session::new_secret();
    if let Err(e) = s.hub.book().start_session(&secret, &row) {
        return failed(e);
    }
    (
        StatusCode::SEE_OTHER,
        [
            (header::LOCATION, "/seat".to_string()),
            (header::SET_COOKIE, session::set_cookie(&secret, s.secure)),
            (header::CACHE_CONTROL, "no-store".to_string()),
        ],
    )
        .into_response()
}

/// `GET /seat/state?after=V`: the seat's open moves, its view, its language (`en`, `zh`, or null
/// before the game's first move for it) and whether the game is over, once the hub's version differs
/// from `V` (at once without `V`; after [`LONG_POLL`] at the latest).
pub async fn state(State(s): State<SeatState>, uri: Uri, headers: HeaderMap) -> Response {
    let after: Option<u64> = param(&query(&uri), "after").and_then(|v| v.parse().ok());
    let row = match seat(&s, &headers) {
        Ok(Some((row, _))) => row,
        Ok(None) => return refused(StatusCode::FORBIDDEN, NO_SESSION),
        Err(e) => return failed(e),
    };
    let mut rx = s.hub.subscribe();
    if after.is_some_and(|v| v == *rx.borrow_and_update()) {
        let _ = tokio::time::timeout(LONG_POLL, rx.changed()).await;
    }
    let version = *rx.borrow();
    let (moves, shown, finished) = s.hub.snapshot(&row.character);
    if finished {
        s.hub.told_over(&row.character);
    }
    let body = json!({
        "version": version, "finished": finished, "character": row.character,
        "player": row.player, "moves": moves, "shown": shown,
        "lang": s.hub.language(&row.character),
    });
    no_store(StatusCode::OK, "application/json", body.to_string())
}

/// A reply, as the page posts it.
#[derive(Deserialize)]
pub struct Reply {
    key: String,
    attempt: u32,
    #[serde(flatten)]
    answer: MoveAnswer,
}

/// `POST /seat/move`: one reply, JSON `{"key", "attempt", "target", "text", "choices"}`, saved and
/// handed to the game. Whether the game takes it is the next state's business: a refused reply
/// comes back as the same move, one attempt later, with the refusal's message.
pub async fn reply(State(s): State<SeatState>, headers: HeaderMap, body: Json<Reply>) -> Response {
    if let Err(why) = session::same_origin(&headers) {
        return refused(StatusCode::FORBIDDEN, why);
    }
    let row = match seat(&s, &headers) {
        Ok(Some((row, secret))) if session::proof_ok(&headers, &secret) => row,
        Ok(Some(_)) => {
            return refused(
                StatusCode::FORBIDDEN,
                "the request carries no proof of the page",
            )
        }
        Ok(None) => return refused(StatusCode::FORBIDDEN, NO_SESSION),
        Err(e) => return failed(e),
    };
    let Json(r) = body;
    match s.hub.reply(&row.character, &r.key, r.attempt, r.answer) {
        Ok(()) => (StatusCode::OK, Json(json!({"ok": true}))).into_response(),
        Err(e @ ReplyError::NotOpen) => {
            (StatusCode::CONFLICT, Json(json!({"error": e.to_string()}))).into_response()
        }
        Err(e) => failed(e),
    }
}

/// The seat page's script and stylesheet.
const ASSETS: [(&str, &str, &str); 2] = [
    (
        "seat.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/seat.js"),
    ),
    (
        "seat.css",
        "text/css; charset=utf-8",
        include_str!("../assets/seat.css"),
    ),
];

pub async fn asset(UrlPath(file): UrlPath<String>) -> Response {
    crate::state::asset(&ASSETS, &file, "no-cache")
}
