//! The host's run handle: one play-through's cast and the transcript being written.
//!
//! Drivers and the shared steps act on the game only through a [`Run`]: it asks characters for turns,
//! publishes events (indexing the memorable ones into the players' memories before the next agent
//! acts) and times stages. Keeping every write behind this handle is what keeps the host the
//! transcript's only writer during play, and a game reproducible.

use std::sync::Arc;
use std::time::Instant;

use ractor::{ActorRef, RpcReplyPort};

use super::{GameError, HostLines, ProtocolSettings};
use crate::agent::{together, AgentError, CallBound, CharacterMsg, Turn};
use crate::memory::MemoryMsg;
use crate::transcript::{Draft, Transcript, Visibility};
use sleuth_base::telemetry as tm;
use sleuth_llm::{CallTags, Phase};
use sleuth_script::Script;

/// Everything the host needs.
pub struct HostArgs {
    pub script: Arc<Script>,
    pub characters: Vec<(String, ActorRef<CharacterMsg>)>,
    pub memory: ActorRef<MemoryMsg>,
    pub protocol: ProtocolSettings,
    /// False for the no-play references: the host hands out the scripts and stops.
    pub plays: bool,
    pub game_id: String,
    pub progress: Option<indicatif::ProgressBar>,
    /// The game's bound on model calls in flight: the host asks no more characters at once than it
    /// admits, since each asked character builds its prompt at once.
    pub bound: CallBound,
}

/// One play-through: the host's settings and the transcript being written.
pub(crate) struct Run<'a> {
    pub(super) args: &'a HostArgs,
    pub(super) transcript: Transcript,
}

fn owned(names: Vec<&str>) -> Vec<String> {
    names.into_iter().map(str::to_string).collect()
}

/// Event kinds players remember: what players said and the clue cards. The host's procedural lines
/// carry no facts (the premise is in every agent's script), and the reveal must not reach evaluation.
/// MIRAGE's speeches, investigations, accusations and forced exposures are as much part of the
/// conversation (MIRAGE: all generated information is visible to all participants).
const MEMORABLE: &[&str] = &[
    "introduction",
    "question",
    "answer",
    "clue",
    "speech",
    "investigation",
    "accusation",
    "exposure",
];

impl<'a> Run<'a> {
    pub(super) fn new(args: &'a HostArgs, transcript: Transcript) -> Run<'a> {
        Run { args, transcript }
    }

    /// The script; the host, unlike a character, may read all of it.
    pub(super) fn script(&self) -> &Script {
        &self.args.script
    }

    /// The players in turn order.
    pub(super) fn names(&self) -> Vec<String> {
        self.args
            .characters
            .iter()
            .map(|(n, _)| n.clone())
            .collect()
    }

    fn actor(&self, name: &str) -> Result<&ActorRef<CharacterMsg>, GameError> {
        self.args
            .characters
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, a)| a)
            .ok_or_else(|| GameError::Protocol(format!("no player named {name}")))
    }

    pub(super) fn lines(&self) -> HostLines {
        HostLines(self.args.script.language)
    }

    /// The victims' names joined for a host line.
    pub(super) fn victims(&self) -> String {
        let names: Vec<&str> = self
            .args
            .script
            .victims
            .iter()
            .map(|v| v.name.as_str())
            .collect();
        self.lines().join(&names)
    }

    /// The murderer players: those who play a culprit (MIRAGE's forced exposure makes them speak). Who
    /// did it, for votes and winners, is [`Run::culprits`].
    pub(super) fn murderers(&self) -> Vec<String> {
        owned(self.args.script.murderers())
    }

    /// Who did it: the murderer players, then any non-player suspects marked as culprits.
    pub(super) fn culprits(&self) -> Vec<String> {
        owned(self.args.script.culprits())
    }

    /// Whom votes and accusations are among, in the script's order: the `suspects` list, or the players
    /// in cast order when the script has none (so existing scripts' ballots are unchanged). Questions
    /// still go to players only ([`Run::names`]): a non-player suspect cannot answer.
    pub(super) fn suspects(&self) -> Vec<String> {
        owned(self.args.script.suspect_names())
    }

    /// Appends an event; observations players can remember are indexed into their memories first.
    pub(super) async fn publish(&mut self, stage: &str, mut d: Draft) -> Result<u64, GameError> {
        if MEMORABLE.contains(&d.kind.as_str()) {
            let visible_to: Vec<String> = match &d.visible_to {
                Visibility::All => self.names(),
                Visibility::Only(v) => v.clone(),
            };
            let label = self
                .lines()
                .memory_label(&d.kind, &d.speaker, d.addressee.as_deref());
            let tags = CallTags {
                game: self.args.game_id.clone(),
                agent: "memory".into(),
                framework: "memory".into(),
                phase: Phase::Gameplay,
                purpose: "memory_index".into(),
            };
            let event = self.transcript.len();
            let text = d.text.clone();
            let r = self
                .args
                .memory
                .call(
                    |reply| MemoryMsg::Add {
                        event,
                        label,
                        text,
                        visible_to,
                        tags,
                        reply,
                    },
                    None,
                )
                .await;
            match r {
                Ok(ractor::rpc::CallResult::Success(Ok(u))) => d.usage += u,
                Ok(ractor::rpc::CallResult::Success(Err(e))) => {
                    return Err(GameError::Memory(e.to_string()))
                }
                _ => return Err(GameError::ActorLost("memory index".into())),
            }
        }
        if let Some(pb) = &self.args.progress {
            pb.inc(1);
        }
        Ok(self.transcript.push(stage, d)?)
    }

    /// Publishes a character's private module steps, then the public event built from its turn.
    pub(super) async fn publish_turn(
        &mut self,
        stage: &str,
        turn: &mut Turn,
        public: Draft,
    ) -> Result<(), GameError> {
        for step in std::mem::take(&mut turn.steps) {
            self.publish(stage, step).await?;
        }
        self.publish(stage, public.with_usage(turn.usage)).await?;
        Ok(())
    }

    /// Asks several characters for a turn each, together, and returns the turns in the order asked.
    /// Only for turns that cannot hear one another: the caller publishes them afterwards, in that
    /// order, so nothing asked here may depend on what the others publish (see `steps.rs`).
    pub(super) async fn request_each<F>(
        &self,
        asks: impl IntoIterator<Item = (String, F)>,
    ) -> Vec<Result<Turn, GameError>>
    where
        F: FnOnce(RpcReplyPort<Result<Turn, AgentError>>) -> CharacterMsg,
    {
        let mut work = Vec::new();
        for (who, make) in asks {
            work.push(self.request_owned(who, make));
        }
        together(&self.args.bound, work).await
    }

    async fn request_owned(
        &self,
        who: String,
        make: impl FnOnce(RpcReplyPort<Result<Turn, AgentError>>) -> CharacterMsg,
    ) -> Result<Turn, GameError> {
        self.request(&who, make).await
    }

    /// Asks one character for a turn and waits for it.
    pub(super) async fn request(
        &self,
        who: &str,
        make: impl FnOnce(RpcReplyPort<Result<Turn, AgentError>>) -> CharacterMsg,
    ) -> Result<Turn, GameError> {
        super::request_turn(self.actor(who)?, who, make).await
    }

    /// A pre-set host line, public, addressed to `to` or to everyone.
    pub(super) async fn host_says(
        &mut self,
        stage: &str,
        to: Option<&str>,
        text: String,
    ) -> Result<(), GameError> {
        self.publish(stage, Draft::public("host", "host", to, text))
            .await
            .map(|_| ())
    }

    pub(super) fn stage_started(&self, stage: &str) -> Instant {
        if let Some(pb) = &self.args.progress {
            pb.set_message(stage.to_string());
        }
        Instant::now()
    }

    /// Records the stage's duration under its name without the round number (`open_questioning`).
    pub(super) fn stage_done(&self, stage: &str, started: Instant) {
        let stage_label = stage
            .trim_end_matches(|c: char| c.is_ascii_digit() || c == '_')
            .to_string();
        metrics::histogram!(tm::STAGE_DURATION, "protocol" => self.args.protocol.protocol.as_str(), "stage" => stage_label).record(started.elapsed().as_secs_f64());
    }
}
