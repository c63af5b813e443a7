//! The seats of `sleuth play --human`: opened in the run's store, served on loopback beside the game,
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
use sleuth_script::Language;
use sleuth_store::seats::SeatBook;

/// How long the server stays up after the game ends for the pages to learn that it has (less when
/// every page has been told sooner).
const LINGER: Duration = Duration::from_secs(3);

use sleuth_sweep::seats::{FinishSeats as Finish, OpenedSeats as Opened, SeatOpenError};

/// Opens the seats of `game` in the store file `store`, one per (character, player) — each with a new
/// token, so an older link to the same seat stops working — and serves their pages on `addr`: one
/// hub and one server for the game, whose sessions each open one seat. The pages speak `lang` (the
/// game's language) from the start.
pub fn open_for_play(
    store: PathBuf,
    game: String,
    seats: Vec<(String, String)>,
    lang: Language,
    addr: SocketAddr,
) -> BoxFuture<'static, Result<Opened, SeatOpenError>> {
    Box::pin(async move {
        let book = Arc::new(SeatBook::open(&store)?);
        let mut tokens = Vec::with_capacity(seats.len());
        for (character, player) in &seats {
            let token = new_token();
            book.open_seat(&game, character, player, &token)?;
            tokens.push(token);
        }
        let hub = SeatHub::new(&game, book);
        for (character, _) in &seats {
            hub.set_language(character, lang.code());
        }
        let (stop, stopped) = oneshot::channel::<()>();
        let server = serve(hub.clone(), addr, async move {
            let _ = stopped.await;
        })
        .await?;
        let opened: Vec<(String, HumanSeat, String)> = seats
            .into_iter()
            .zip(tokens)
            .map(|((character, player), token)| {
                let link = format!("http://{}/seat?token={token}", server.addr);
                let desk = hub.clone();
                (character, HumanSeat { player, desk }, link)
            })
            .collect();
        let characters: Vec<String> = opened.iter().map(|(c, _, _)| c.clone()).collect();
        let finish: Finish = Box::new(move || {
            hub.finish();
            Box::pin(async move {
                // The process ends when this returns: a page still waiting must first be answered
                // that the game is over, or it would wait on a server that is gone.
                let deadline = tokio::time::Instant::now() + LINGER;
                while !hub.all_told_over(&characters) && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                let _ = stop.send(());
                let _ = tokio::time::timeout(LINGER, server.task).await;
            })
        });
        Ok((opened, finish))
    })
}
