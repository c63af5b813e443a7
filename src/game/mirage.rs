//! The MIRAGE protocol (being written).

use super::host::{PlayOutcome, Run};
use super::GameError;

/// Plays the MIRAGE protocol to the reveal.
pub(crate) async fn play(_run: &mut Run<'_>) -> Result<PlayOutcome, GameError> {
    Err(GameError::Protocol(
        "the mirage protocol is not written yet".into(),
    ))
}
