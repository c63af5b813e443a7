//! People at a sweep's tables (`docs/seat.md`, *In a sweep*): an arm whose `human` setting gives
//! characters to people plays each of its games with those seats open. The seat page and the hub the
//! moves wait in are the viewer's (`sleuth_view::seat`), a crate above this one, so the node is
//! handed the viewer's opener ([`Seating`]) by whoever starts the run: `sleuth sweep run` built with
//! the viewer. A node without one (a cluster worker) fails such a game with the reason, before any
//! call is made.

use std::net::SocketAddr;
use std::path::PathBuf;

use futures::future::BoxFuture;

use sleuth_game::agent::HumanSeat;
use sleuth_script::Language;

/// What ends a game's seats when it is over: awaited before the game is recorded, so each page is
/// told the game is over before its server goes.
pub type FinishSeats = Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>;

/// What an opener gives back: each seat as (character, seat, the player's link — printed once; the
/// store keeps only the token's SHA-256), and what ends the seats.
pub type OpenedSeats = (Vec<(String, HumanSeat, String)>, FinishSeats);

/// Why seats could not be opened (the store, the address), in the opener's words.
pub type SeatOpenError = Box<dyn std::error::Error + Send + Sync>;

/// Opens seats: (the run's store file, the game's id, (character, player) of each seat, the game's
/// language (the seat page's words), where to serve the pages).
pub type SeatOpener = fn(
    PathBuf,
    String,
    Vec<(String, String)>,
    Language,
    SocketAddr,
) -> BoxFuture<'static, Result<OpenedSeats, SeatOpenError>>;

/// How a node seats people: the viewer's opener, and where each game's seat pages are served
/// (loopback; port 0 gives each game a free port, so several games can wait for people at once).
#[derive(Debug, Clone, Copy)]
pub struct Seating {
    pub opener: SeatOpener,
    pub addr: SocketAddr,
}

impl Seating {
    /// Opens the seats of game `game` in the run directory `out`, prints each player's link on
    /// stderr (as `sleuth play --human` does: the operator hands it on), and returns the seats with
    /// what ends them.
    pub async fn open(
        &self,
        out: &std::path::Path,
        game: &str,
        seats: &std::collections::BTreeMap<String, String>,
        lang: Language,
    ) -> Result<OpenedSeats, SeatOpenError> {
        let store = sleuth_store::RunDir::new(out).store();
        let asked: Vec<(String, String)> =
            seats.iter().map(|(c, p)| (c.clone(), p.clone())).collect();
        let (opened, finish) =
            (self.opener)(store, game.to_string(), asked, lang, self.addr).await?;
        for (character, seat, link) in &opened {
            eprintln!(
                "game {game}: {character} is played by {}: the seat is open at",
                seat.player
            );
            eprintln!("seat: {link}");
        }
        Ok((opened, finish))
    }
}

/// Why a game with people cannot be played on a node that cannot seat them.
pub const NO_SEATING: &str = "this game gives a character to a person (the arm's `human`), and this \
     node cannot serve the seat page: play it with `sleuth sweep run` on one machine, built with the \
     viewer";
