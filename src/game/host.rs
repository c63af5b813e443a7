//! The host: a non-player that drives the game with pre-set lines (ThinkThrice rule 5).
//!
//! This file holds the host actor, the steps every protocol shares (publishing events, a question and
//! its answer, a round of votes) and the ThinkThrice protocol as a stage machine (PROTOCOLS.md §2):
//! script distribution, self-introductions with initial questioning, N open rounds, clue cards, M open
//! rounds, an anonymous vote, the reveal. The WellPlay and MIRAGE protocols live in `wellplay.rs` and
//! `mirage.rs`. The host is the transcript's only writer during play: it publishes every event in order
//! and feeds the memory index before the next agent acts, which is what makes a game reproducible.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::result::{tally, thinkthrice_winner, MajorityOutcome, MirageOutcome, Winner};
use super::transcript::{Draft, Transcript, Visibility};
use super::{GameError, HostLines, Protocol, ProtocolSettings};
use crate::agent::{AgentError, CharacterMsg, Turn};
use crate::llm::{CallTags, Phase};
use crate::memory::MemoryMsg;
use crate::script::Script;
use crate::telemetry as tm;

/// The knobs of the ThinkThrice procedure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThinkThriceSettings {
    /// Open-questioning rounds before the clue cards (paper: 2).
    pub rounds_before_clues: u32,
    /// Open-questioning rounds after the clue cards (paper: 3).
    pub rounds_after_clues: u32,
    /// After each self-introduction, every other player asks the speaker one question.
    pub initial_questioning: bool,
}

impl Default for ThinkThriceSettings {
    fn default() -> Self {
        ThinkThriceSettings {
            rounds_before_clues: 2,
            rounds_after_clues: 3,
            initial_questioning: true,
        }
    }
}

/// What the host hands back after the vote.
#[derive(Debug, Clone, Default)]
pub struct PlayOutcome {
    pub votes: BTreeMap<String, String>,
    pub counts: BTreeMap<String, u32>,
    /// `None` when nothing was played (PP and OP).
    pub winner: Option<Winner>,
    pub majority: Option<MajorityOutcome>,
    pub mirage: Option<MirageOutcome>,
}

/// Messages to the host.
pub enum HostMsg {
    /// Play the whole game, writing into the transcript; the transcript comes back even on failure, so
    /// nothing already played is lost.
    Play {
        transcript: Transcript,
        reply: RpcReplyPort<(Transcript, Result<PlayOutcome, GameError>)>,
    },
}

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
                let mut run = Run {
                    args: st,
                    transcript,
                };
                let outcome = run.play().await;
                let _ = reply.send((run.transcript, outcome));
            }
        }
        Ok(())
    }
}

/// One play-through: the host's settings and the transcript being written. Protocols are written as
/// functions over a `Run`.
pub(crate) struct Run<'a> {
    pub(super) args: &'a HostArgs,
    pub(super) transcript: Transcript,
}

impl Run<'_> {
    pub(super) fn names(&self) -> Vec<String> {
        self.args
            .characters
            .iter()
            .map(|(n, _)| n.clone())
            .collect()
    }

    pub(super) fn actor(&self, name: &str) -> Result<&ActorRef<CharacterMsg>, GameError> {
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

    /// Appends an event; observations players can remember are indexed into their memories first.
    pub(super) async fn publish(&mut self, stage: &str, mut d: Draft) -> Result<u64, GameError> {
        // Agents remember what players said and the clue cards. The host's procedural lines carry no
        // facts (the premise is in every agent's script), and the reveal must not reach evaluation.
        // MIRAGE's speeches, investigations, accusations and forced exposures are as much part of the
        // conversation (MIRAGE: all generated information is visible to all participants).
        let memorable = matches!(
            d.kind.as_str(),
            "introduction"
                | "question"
                | "answer"
                | "clue"
                | "speech"
                | "investigation"
                | "accusation"
                | "exposure"
        );
        if memorable {
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
            let event = self.transcript.events().len() as u64;
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

    pub(super) async fn request(
        &self,
        who: &str,
        make: impl FnOnce(RpcReplyPort<Result<Turn, AgentError>>) -> CharacterMsg,
    ) -> Result<Turn, GameError> {
        super::request_turn(self.actor(who)?, who, make).await
    }

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

    pub(super) fn stage_done(&self, stage: &str, started: Instant) {
        let stage_label = stage
            .trim_end_matches(|c: char| c.is_ascii_digit() || c == '_')
            .to_string();
        metrics::histogram!(tm::STAGE_DURATION, "protocol" => self.args.protocol.protocol.as_str(), "stage" => stage_label).record(started.elapsed().as_secs_f64());
    }

    async fn play(&mut self) -> Result<PlayOutcome, GameError> {
        if !self.args.plays {
            // PP and OP: the scripts are handed out and the game goes straight to evaluation.
            self.distribute().await?;
            self.transcript.flush()?;
            return Ok(PlayOutcome::default());
        }
        let outcome = match self.args.protocol.protocol {
            Protocol::ThinkThrice => self.play_thinkthrice().await?,
            Protocol::WellPlay => super::wellplay::play(self).await?,
            Protocol::Mirage => super::mirage::play(self).await?,
        };
        self.transcript.flush()?;
        Ok(outcome)
    }

    async fn play_thinkthrice(&mut self) -> Result<PlayOutcome, GameError> {
        let s = self.args.protocol.thinkthrice;
        self.distribute().await?;
        self.introductions(s.initial_questioning).await?;
        for r in 1..=s.rounds_before_clues {
            self.open_round(r).await?;
        }
        self.clues().await?;
        for r in 1..=s.rounds_after_clues {
            self.open_round(s.rounds_before_clues + r).await?;
        }
        let votes = self.vote().await?;
        let murderers = self.murderers();
        let counts = tally(self.names().iter().map(String::as_str), &votes);
        let winner = thinkthrice_winner(&counts, &murderers);
        self.reveal(&counts, winner).await?;
        Ok(PlayOutcome {
            votes,
            counts,
            winner: Some(winner),
            ..PlayOutcome::default()
        })
    }

    pub(super) fn murderers(&self) -> Vec<String> {
        self.args
            .script
            .murderers()
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    pub(super) async fn distribute(&mut self) -> Result<(), GameError> {
        let t = self.stage_started("distribution");
        let opening = self.args.script.host().opening;
        self.host_says("distribution", None, opening).await?;
        for name in self.names() {
            let line = self.lines().script_handed(&name);
            self.publish(
                "distribution",
                Draft::private("script", "host", &[&name], line),
            )
            .await?;
        }
        self.stage_done("distribution", t);
        Ok(())
    }

    /// Self-introductions on the host's request, each followed (ThinkThrice) by initial questioning.
    pub(super) async fn introductions(
        &mut self,
        initial_questioning: bool,
    ) -> Result<(), GameError> {
        let t = self.stage_started("introduction");
        let victims = self.victims();
        for name in self.names() {
            let line = self.lines().introduce(&name, &victims);
            self.host_says("introduction", Some(&name), line.clone())
                .await?;
            let mut turn = self
                .request(&name, |reply| CharacterMsg::Introduce {
                    host_line: line,
                    reply,
                })
                .await?;
            let text = turn.text.clone();
            self.publish_turn(
                "introduction",
                &mut turn,
                Draft::public("introduction", &name, Some("host"), text),
            )
            .await?;
            if initial_questioning {
                for asker in self.names().into_iter().filter(|n| *n != name) {
                    self.exchange("initial_questioning", &asker, Some(name.clone()), 0)
                        .await?;
                }
            }
        }
        self.stage_done("introduction", t);
        Ok(())
    }

    /// One question and its answer. `target` forces whom the asker questions; `round` is the open round
    /// (0 outside them).
    pub(super) async fn exchange(
        &mut self,
        stage: &str,
        asker: &str,
        target: Option<String>,
        round: u32,
    ) -> Result<(), GameError> {
        let candidates: Vec<String> = self.names().into_iter().filter(|n| n != asker).collect();
        let mut q = self
            .request(asker, |reply| CharacterMsg::Ask {
                target,
                candidates,
                round,
                reply,
            })
            .await?;
        let to = q
            .target
            .clone()
            .ok_or_else(|| GameError::Protocol(format!("{asker} asked nobody")))?;
        let question = q.text.clone();
        self.publish_turn(
            stage,
            &mut q,
            Draft::public("question", asker, Some(&to), question.clone()),
        )
        .await?;
        let asker_name = asker.to_string();
        let mut a = self
            .request(&to, |reply| CharacterMsg::Answer {
                asker: asker_name,
                question,
                reply,
            })
            .await?;
        let text = a.text.clone();
        self.publish_turn(
            stage,
            &mut a,
            Draft::public("answer", &to, Some(asker), text),
        )
        .await
    }

    async fn open_round(&mut self, round: u32) -> Result<(), GameError> {
        let stage = format!("open_questioning_{round}");
        let t = self.stage_started(&stage);
        self.host_says(&stage, None, self.lines().open_round(round))
            .await?;
        for asker in self.names() {
            self.exchange(&stage, &asker, None, round).await?;
        }
        self.stage_done(&stage, t);
        Ok(())
    }

    async fn clues(&mut self) -> Result<(), GameError> {
        let t = self.stage_started("clues");
        let announcement = self.args.script.host().clue_announcement;
        self.host_says("clues", None, announcement).await?;
        for clue in self.args.script.clues.clone() {
            let d = Draft::public(
                "clue",
                "host",
                None,
                self.lines().clue(&clue.title, &clue.text),
            )
            .with_data(json!({ "clue": clue.id, "about": clue.about }));
            self.publish("clues", d).await?;
        }
        self.stage_done("clues", t);
        Ok(())
    }

    /// The anonymous vote: every player votes for one of the others (ballots are private events).
    pub(super) async fn vote(&mut self) -> Result<BTreeMap<String, String>, GameError> {
        let t = self.stage_started("vote");
        let call = self.args.script.host().vote_call;
        self.host_says("vote", None, call.clone()).await?;
        let names = self.names();
        let mut votes = BTreeMap::new();
        for voter in names.clone() {
            let candidates = super::result::vote_candidates(&voter, &names);
            let target = self.ballot("vote", &voter, &call, candidates).await?;
            votes.insert(voter, target);
        }
        self.stage_done("vote", t);
        Ok(votes)
    }

    /// One player's ballot among `candidates`, published as a private event.
    pub(super) async fn ballot(
        &mut self,
        stage: &str,
        voter: &str,
        vote_call: &str,
        candidates: Vec<String>,
    ) -> Result<String, GameError> {
        let vote_call = vote_call.to_string();
        let mut turn = self
            .request(voter, |reply| CharacterMsg::Vote {
                vote_call,
                candidates,
                reply,
            })
            .await?;
        let target = turn
            .target
            .clone()
            .ok_or_else(|| GameError::Protocol(format!("{voter} cast no vote")))?;
        // Anonymous: only the voter (and the host) see a ballot.
        let ballot = Draft::private("vote", voter, &[voter], turn.text.clone())
            .with_data(json!({ "vote": target }));
        self.publish_turn(stage, &mut turn, ballot).await?;
        Ok(target)
    }

    /// The outcome read out: the tally, the murderers, who won.
    pub(super) async fn reveal(
        &mut self,
        counts: &BTreeMap<String, u32>,
        winner: Winner,
    ) -> Result<(), GameError> {
        let t = self.stage_started("reveal");
        let murderers = self.murderers();
        let tally_list: Vec<(String, u32)> = counts.iter().map(|(p, n)| (p.clone(), *n)).collect();
        let names: Vec<&str> = murderers.iter().map(String::as_str).collect();
        let text = self.lines().reveal(
            &tally_list,
            &self.lines().join(&names),
            winner == Winner::Civilians,
        );
        self.publish(
            "reveal",
            Draft::public("reveal", "host", None, text)
                .with_data(json!({ "counts": counts, "winner": winner })),
        )
        .await?;
        self.stage_done("reveal", t);
        Ok(())
    }
}
