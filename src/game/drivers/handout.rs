//! The no-play references (PP and OP): the scripts are handed out and the game goes straight to
//! evaluation, whatever the protocol.

use futures::future::BoxFuture;

use crate::game::driver::{Driver, PlayOutcome};
use crate::game::run::Run;
use crate::game::steps;
use crate::game::GameError;

/// Hands out the scripts and plays nothing.
pub(crate) struct Handout;

impl Driver for Handout {
    fn play<'r>(&'r self, run: &'r mut Run<'_>) -> BoxFuture<'r, Result<PlayOutcome, GameError>> {
        Box::pin(async move {
            steps::distribute(run).await?;
            Ok(PlayOutcome::default())
        })
    }
}
