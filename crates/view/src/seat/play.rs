//! The seat of `sleuth play --human`: opened in the run's store, served on loopback beside the game,
//! closed when the game ends. The play command (a crate below this one) gets this as its opener
//! from the root crate's CLI (`sleuth_commands::set_seat_opener`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::oneshot;

use super::{new_token, serve, SeatHub};
use sleuth_game::agent::HumanSeat;
use sleuth_store::seats::SeatBook;

/// How long the page may still ask after the game ends, to learn that it has.
const LINGER: Duration = Duration::from_secs(2);

/// The seat, the player's link, and what ends the seat when the game is over.
pub type Opened = (HumanSeat, String, Box<dyn FnOnce() + Send>);

/// Opens `character`'s seat of `game` in the store file `store` for `player` (a new token: an older
/// link to the same seat stops working) and serves its page on `addr`.
pub fn open_for_play(
    store: PathBuf,
    game: String,
    character: String,
    player: String,
    addr: SocketAddr,
) -> BoxFuture<'static, anyhow::Result<Opened>> {
    Box::pin(async move {
        let book = Arc::new(SeatBook::open(&store)?);
        let token = new_token();
        book.open_seat(&game, &character, &player, &token)?;
        let hub = SeatHub::new(&game, book);
        let (stop, stopped) = oneshot::channel::<()>();
        let server = serve(hub.clone(), addr, async move {
            let _ = stopped.await;
        })
        .await?;
        let link = format!("http://{}/seat?token={token}", server.addr);
        let desk = hub.clone();
        let finish: Box<dyn FnOnce() + Send> = Box::new(move || {
            hub.finish();
            tokio::spawn(async move {
                tokio::time::sleep(LINGER).await;
                let _ = stop.send(());
            });
        });
        Ok((HumanSeat { player, desk }, link, finish))
    })
}
