//! `sleuth play --human CHARACTER[=NAME]` (repeatable): each character is given to a person, who
//! plays it in the browser (`docs/seat.md`). The seat page and the hub its moves wait in are the viewer's (`sleuth_view::seat`),
//! a crate above this one: the root crate's CLI hands this command the viewer's opener
//! ([`set_seat_opener`]) before it runs, so that a build without the viewer still plays, and says
//! why `--human` cannot.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::OnceLock;

use anyhow::{anyhow, bail, Result};

use super::PlayArgs;
use sleuth_game::game::GameConfig;
use sleuth_script::Script;

pub use sleuth_sweep::seats::{FinishSeats, OpenedSeats, SeatOpener};

static OPENER: OnceLock<SeatOpener> = OnceLock::new();

/// Installs the viewer's seat opener (the root crate's CLI does, when built with the viewer).
pub fn set_seat_opener(opener: SeatOpener) {
    let _ = OPENER.set(opener);
}

/// How `sleuth sweep run` seats the people its arms ask for: the viewer's opener, when this build
/// has it, serving each game's seat pages at `addr`.
pub fn seating(addr: SocketAddr) -> Option<sleuth_sweep::seats::Seating> {
    OPENER
        .get()
        .map(|&opener| sleuth_sweep::seats::Seating { opener, addr })
}

/// Reads one `--human`: `CHARACTER` (played by `--human-name`) or `CHARACTER=NAME`. A value that is
/// a character's whole name is that character, so a name holding `=` still reads as itself.
fn seat_arg<'a>(
    value: &'a str,
    script: &Script,
    default_name: &'a str,
) -> Result<(&'a str, &'a str)> {
    let is_character = |n: &str| script.characters.iter().any(|c| c.name == n);
    if is_character(value) {
        return Ok((value, default_name));
    }
    if let Some((character, name)) = value.rsplit_once('=') {
        if is_character(character.trim()) {
            return Ok((character.trim(), name.trim()));
        }
    }
    let names: Vec<&str> = script.characters.iter().map(|c| c.name.as_str()).collect();
    bail!(
        "--human: `{value}` is not a character of {} (its characters: {}), nor CHARACTER=NAME",
        script.title,
        names.join(", ")
    )
}

/// Gives each `--human` character to its person: checks the game can seat them, opens the seats in
/// the run's store, serves their pages, prints each link and puts the seats in `config`. Returns
/// what ends the seats when the game is over.
pub(super) async fn open(
    a: &PlayArgs,
    script: &Script,
    out: &Path,
    config: &mut GameConfig,
) -> Result<FinishSeats> {
    if a.batch_eval {
        bail!("--human cannot be combined with --batch-eval yet");
    }
    let mut seats: Vec<(String, String)> = Vec::with_capacity(a.human.len());
    for value in &a.human {
        let (character, name) = seat_arg(value, script, &a.human_name)?;
        if seats.iter().any(|(c, _)| c == character) {
            bail!("--human: `{character}` is given to a person twice");
        }
        if !config.framework_of(script, character).plays() {
            bail!("--human: the no-play references (pp, op) have no game to sit at");
        }
        if name.trim().is_empty() || name.chars().any(|c| c.is_control()) {
            bail!(
                "--human: the name of `{character}`'s player must be non-empty, without control characters"
            );
        }
        seats.push((character.to_string(), name.trim().to_string()));
    }
    let opener = OPENER.get().ok_or_else(|| {
        anyhow!("--human needs the viewer's seat page: this sleuth was built without the `view` feature")
    })?;
    let store = sleuth_store::RunDir::new(out).store();
    let lang = config.language.unwrap_or(script.language);
    let (opened, finish) = opener(store, config.game_id.clone(), seats, lang, a.seat_addr)
        .await
        .map_err(|e| anyhow!(e))?;
    for (character, seat, link) in opened {
        eprintln!(
            "{character} is played by {}: the seat is open at",
            seat.player
        );
        eprintln!("seat: {link}");
        config.seats.insert(character, seat);
    }
    Ok(finish)
}
