//! A person's seat at the table (`docs/seat.md`): the pages that let a person play one character of
//! a game in the browser, and the [`SeatHub`] the game's seat agent
//! (`sleuth_game::agent::HumanSeat`) posts its moves to.
//!
//! | route | what |
//! |---|---|
//! | `GET /seat?token=` | the player's link: starts their session (cookie), redirects to `/seat` |
//! | `GET /seat` | the player's page: the character's view and the moves asked of them |
//! | `GET /seat/state?after=` | the open moves, the view and whether the game is over (JSON, long-poll) |
//! | `POST /seat/move` | one reply, JSON `{"key", "attempt", "target", "text", "choices"}` |
//! | `GET /seat/assets/{file}` | the page's script and stylesheet |
//!
//! `sleuth play --human` serves these routes alone, on loopback, for the one game it plays
//! ([`serve`]): the player's session opens nothing else — no other character's view, no run page.

mod hub;
mod pages;
mod play;
pub mod session;
pub mod take;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;
use sleuth_base::http::Limits;

pub use hub::{ReplyError, SeatHub};
pub use pages::SeatState;
pub use play::open_for_play;

use crate::{guard, ViewError};

/// The seat's routes for one game, behind the host check and the viewer's security headers.
pub fn router(hub: Arc<SeatHub>, secure: bool) -> Router {
    Router::new()
        .route("/seat", get(pages::page))
        .route("/seat/state", get(pages::state))
        .route("/seat/move", post(pages::reply))
        .route("/seat/assets/{file}", get(pages::asset))
        .layer(axum::middleware::from_fn_with_state(
            guard::Hosts::new(&[]),
            guard::check,
        ))
        .with_state(SeatState { hub, secure })
}

/// A new player token: 32 random bytes, hex. Printed once in the link; the store keeps its SHA-256.
pub fn new_token() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

/// A started seat server: where it listens and the task serving it.
pub struct SeatServer {
    pub addr: SocketAddr,
    pub task: tokio::task::JoinHandle<()>,
}

/// Serves `hub`'s seat routes on `addr` until `stop` resolves. Loopback only: off loopback the seat
/// would need the viewer's TLS and host rules, which this first slice does not take yet.
pub async fn serve(
    hub: Arc<SeatHub>,
    addr: SocketAddr,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<SeatServer, ViewError> {
    if !addr.ip().is_loopback() {
        return Err(ViewError::TlsRequired { addr });
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ViewError::Bind { addr, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| ViewError::Bind { addr, source })?;
    let app = router(hub, false);
    let task = tokio::spawn(async move {
        sleuth_base::http::serve(listener, app, Limits::INTERACTIVE, None, stop).await;
    });
    Ok(SeatServer { addr, task })
}
