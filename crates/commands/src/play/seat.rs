//! `sleuth play --human CHARACTER`: the character is given to a person, who plays it in the browser
//! (`docs/seat.md`). The seat page and the hub its moves wait in are the viewer's (`sleuth_view::seat`),
//! a crate above this one: the root crate's CLI hands this command the viewer's opener
//! ([`set_seat_opener`]) before it runs, so that a build without the viewer still plays, and says
//! why `--human` cannot.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{anyhow, bail, Result};
use futures::future::BoxFuture;

use super::PlayArgs;
use sleuth_game::agent::HumanSeat;
use sleuth_game::game::{GameConfig, GameSpec, Protocol};
use sleuth_script::Script;

/// What the viewer's opener gives back: the seat for the game, the player's link (printed once; the
/// store keeps only the token's SHA-256), and what to call when the game is over.
pub type OpenedSeat = (HumanSeat, String, Box<dyn FnOnce() + Send>);

/// Opens a seat: (the run's store file, the game's id, the character, the player's name, where to
/// serve the page).
pub type SeatOpener = fn(
    PathBuf,
    String,
    String,
    String,
    SocketAddr,
) -> BoxFuture<'static, anyhow::Result<OpenedSeat>>;

static OPENER: OnceLock<SeatOpener> = OnceLock::new();

/// Installs the viewer's seat opener (the root crate's CLI does, when built with the viewer).
pub fn set_seat_opener(opener: SeatOpener) {
    let _ = OPENER.set(opener);
}

/// Gives `character` to the person named by `--human-name`: checks the game can seat them, opens the
/// seat in the run's store, serves its page, prints the link and puts the seat in `config`. Returns
/// what ends the seat when the game is over.
pub(super) async fn open(
    a: &PlayArgs,
    character: &str,
    spec: &GameSpec,
    script: &Script,
    out: &Path,
    config: &mut GameConfig,
) -> Result<Box<dyn FnOnce() + Send>> {
    if spec.protocol.protocol != Protocol::ThinkThrice {
        bail!(
            "--human: only the thinkthrice protocol seats a person so far (this game plays {}; docs/seat.md)",
            spec.protocol.protocol
        );
    }
    if a.batch_eval {
        bail!("--human cannot be combined with --batch-eval yet");
    }
    if !script.characters.iter().any(|c| c.name == character) {
        let names: Vec<&str> = script.characters.iter().map(|c| c.name.as_str()).collect();
        bail!(
            "--human: `{character}` is not a character of {} (its characters: {})",
            script.title,
            names.join(", ")
        );
    }
    if !config.framework_of(script, character).plays() {
        bail!("--human: the no-play references (pp, op) have no game to sit at");
    }
    let name = a.human_name.trim();
    if name.is_empty() || name.chars().any(|c| c.is_control()) {
        bail!("--human-name must be a non-empty name without control characters");
    }
    let opener = OPENER.get().ok_or_else(|| {
        anyhow!("--human needs the viewer's seat page: this sleuth was built without the `view` feature")
    })?;
    let store = sleuth_store::RunDir::new(out).store();
    let (seat, link, finish) = opener(
        store,
        config.game_id.clone(),
        character.to_string(),
        name.to_string(),
        a.seat_addr,
    )
    .await?;
    eprintln!("{character} is played by {name}: the seat is open at");
    eprintln!("seat: {link}");
    config.seats.insert(character.to_string(), seat);
    Ok(finish)
}
