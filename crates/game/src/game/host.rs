//! The host: a non-player that drives the game with pre-set lines (ThinkThrice rule 5).
//!
//! The host actor takes the transcript, picks the protocol's driver from the registry and lets it play
//! through a [`Run`], then hands the transcript back. It is the transcript's only writer during play:
//! every event is published in order and fed to the memory index before the next agent acts, which is
//! what makes a game reproducible. The protocols themselves live in `drivers/`, the steps they share in
//! `steps.rs`.

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use super::driver::PlayOutcome;
use super::drivers::driver;
pub use super::run::HostArgs;
use super::run::Run;
use super::GameError;
use crate::transcript::Transcript;

/// Messages to the host.
pub enum HostMsg {
    /// Play the whole game, writing into the transcript; the transcript comes back even on failure, so
    /// nothing already played is lost.
    Play {
        transcript: Transcript,
        reply: RpcReplyPort<(Transcript, Result<PlayOutcome, GameError>)>,
    },
}

/// The host actor.
pub struct Host;

impl Actor for Host {
    type Msg = HostMsg;
    type State = HostArgs;
    type Arguments = HostArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<Self::Msg>,
        args: HostArgs,
    ) -> Result<HostArgs, ActorProcessingErr> {
        Ok(args)
    }

    async fn handle(
        &self,
        _me: ActorRef<Self::Msg>,
        msg: HostMsg,
        st: &mut HostArgs,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            HostMsg::Play { transcript, reply } => {
                let mut run = Run::new(st, transcript);
                let outcome = play(&mut run).await;
                let _ = reply.send((run.transcript, outcome));
            }
        }
        Ok(())
    }
}

async fn play(run: &mut Run<'_>) -> Result<PlayOutcome, GameError> {
    let outcome = driver(&run.args.protocol, run.args.plays).play(run).await?;
    run.transcript.flush()?;
    Ok(outcome)
}
