//! `sleuth play --spec FILE`: replaying a recorded game from its spec alone.

use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};

use sleuth_game::game::{GameSpec, ScriptRef};
use sleuth_script::Script;

/// The flags a replay accepts: where to write, and which variable holds the API key. Anything else
/// would make the replay a different game.
///
/// `--human`, `--human-name` and `--seat-addr` give characters to people (`docs/seat.md`): the game
/// is then the recorded one with people at those seats, and its result's spec says which.
const REPLAY_FLAGS: &[&str] = &[
    "--spec",
    "--out",
    "--api-key-env",
    "--call-concurrency",
    "--human",
    "--human-name",
    "--seat-addr",
];

/// The spec in `file` (a result.json or a bare spec) and the script it names. Refuses any other typed
/// flag, and a script whose content changed since the game was recorded.
pub(super) fn load(file: &Path, typed: &[String]) -> Result<(GameSpec, Arc<Script>)> {
    if let Some(flag) = typed.iter().find(|f| !REPLAY_FLAGS.contains(&f.as_str())) {
        bail!(
            "{flag} cannot be given with --spec: a replay plays exactly the recorded game (only --out, --api-key-env and --call-concurrency, which change no answer, and --human, --human-name and --seat-addr, which seat people, are allowed)"
        );
    }
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let spec = GameSpec::from_json(&text).with_context(|| file.display().to_string())?;
    crate::check_ranges(&spec).with_context(|| file.display().to_string())?;
    let path = spec.script.path.as_deref().ok_or_else(|| {
        anyhow!(
            "{}: the spec names no script file (the game was played from memory), so it cannot be replayed alone",
            file.display()
        )
    })?;
    let script = Script::load(Path::new(path))?;
    let digest = ScriptRef::digest_of(&script);
    if digest != spec.script.digest {
        bail!(
            "{path} has changed since the game was recorded: its digest is {digest}, the spec in {} recorded {}",
            file.display(),
            spec.script.digest
        );
    }
    Ok((spec, Arc::new(script)))
}
