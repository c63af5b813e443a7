//! The no-play references (PP and OP): the scripts are handed out and the game goes straight to its
//! end. Under the WellPlay protocol they then make their final decision, the vote (PLAYER* §4.1 and
//! Table A3 report their Voting), from their scripts alone; under the other protocols they go straight
//! to evaluation (ThinkThrice §5 scores only their answers).

use futures::future::BoxFuture;

use crate::game::driver::{Driver, PlayOutcome};
use crate::game::run::Run;
use crate::game::steps;
use crate::game::GameError;

/// Hands out the scripts, then holds WellPlay's vote if `vote`.
pub(crate) struct Handout {
    pub vote: bool,
}

impl Driver for Handout {
    fn play<'r>(&'r self, run: &'r mut Run<'_>) -> BoxFuture<'r, Result<PlayOutcome, GameError>> {
        Box::pin(async move {
            steps::distribute(run).await?;
            if self.vote {
                return super::wellplay::decide(run).await;
            }
            Ok(PlayOutcome::default())
        })
    }
}
