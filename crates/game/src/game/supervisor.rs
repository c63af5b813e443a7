//! The `Game` actor: supervises one game's host, characters, memory index and evaluator.
//!
//! It starts its children linked, runs play then evaluation, and turns any child's failure (an error or
//! a panic) into a failed game with a reason. Only the game fails: the node, its gateway and other
//! games carry on.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::oneshot;

use super::host::{Host, HostArgs, HostMsg};
use super::result::{detection_accuracy, GameResult, PhaseUsage};
use super::Protocol;
use super::{GameConfig, GameError};
use crate::agent::{
    CallBound, Character, CharacterArgs, CharacterMsg, CharacterView, Framework, OmniscientView,
    Prompts,
};
use crate::eval::{Evaluator, EvaluatorArgs, EvaluatorMsg};
use crate::memory::{MemoryIndex, SharedEmbedder};
use crate::transcript::Transcript;
use sleuth_base::telemetry as tm;
use sleuth_llm::{Gateway, Phase, SampleCounter, Usage};
use sleuth_script::Script;

/// What the game actor starts from.
pub struct GameArgs {
    pub script: Arc<Script>,
    pub config: GameConfig,
    pub gateway: Gateway,
    /// Prompts by framework name.
    pub prompts: BTreeMap<&'static str, Arc<Prompts>>,
    pub judge: super::Judges,
    pub embedder: SharedEmbedder,
    pub transcript: Transcript,
    pub reply: oneshot::Sender<Result<GameResult, GameError>>,
}

/// Messages to the game actor.
pub enum GameMsg {
    Run,
}

/// The game supervisor.
pub struct GameActor;

/// Its state: the children and, until the game ends, the caller's reply channel.
pub struct GameTree {
    args: Option<GameArgs>,
    host: ActorRef<HostMsg>,
    evaluator: ActorRef<EvaluatorMsg>,
    children: Vec<ActorCell>,
    /// Child name by actor id, to say who failed.
    names: BTreeMap<ractor::ActorId, String>,
    started: Instant,
}

impl Actor for GameActor {
    type Msg = GameMsg;
    type State = GameTree;
    type Arguments = GameArgs;

    async fn pre_start(
        &self,
        me: ActorRef<Self::Msg>,
        args: GameArgs,
    ) -> Result<GameTree, ActorProcessingErr> {
        let cell = me.get_cell();
        let mut names = BTreeMap::new();
        let mut children = Vec::new();
        let (memory, _) =
            Actor::spawn_linked(None, MemoryIndex, args.embedder.clone(), cell.clone()).await?;
        names.insert(memory.get_id(), "memory index".to_string());
        children.push(memory.get_cell());
        let mut characters: Vec<(String, ActorRef<CharacterMsg>)> = Vec::new();
        // One bound on model calls in flight for the whole game: characters, evaluator and judge.
        let bound = CallBound::new(args.config.call_concurrency);
        // Forced exposure makes the murderer players confess; when every culprit is a non-player there
        // is nobody to do so, and the characters must not be told that someone did.
        let mut protocol = args.config.protocol;
        if args.script.murderers().is_empty() {
            protocol.mirage.force_expose = false;
        }
        for c in &args.script.characters {
            #[cfg(feature = "test-hooks")]
            let panic_on_request = args
                .config
                .inject_panic
                .as_ref()
                .filter(|(who, _)| *who == c.name)
                .map(|(_, n)| *n);
            let framework = args.config.framework_of(&args.script, &c.name);
            let prompts = args
                .prompts
                .get(framework.as_str())
                .cloned()
                .ok_or_else(|| format!("no prompts loaded for framework {framework}"))?;
            let cargs = CharacterArgs {
                framework,
                protocol,
                view: CharacterView::of(&args.script, &c.name)?,
                omniscient: (framework == Framework::Op).then(|| OmniscientView::of(&args.script)),
                config: args.config.agent_of(&args.script, &c.name),
                gateway: args.gateway.clone(),
                memory: memory.clone(),
                prompts,
                game_id: args.config.game_id.clone(),
                seed: args.config.seed,
                bound: bound.clone(),
                seat: args.config.seats.get(&c.name).cloned(),
                #[cfg(feature = "test-hooks")]
                panic_on_request,
            };
            let (a, _) = Actor::spawn_linked(None, Character, cargs, cell.clone()).await?;
            names.insert(a.get_id(), format!("character {}", c.name));
            children.push(a.get_cell());
            characters.push((c.name.clone(), a));
        }
        let host_args = HostArgs {
            script: args.script.clone(),
            characters: characters.clone(),
            memory,
            protocol: args.config.protocol,
            plays: args.config.frameworks().iter().all(|f| f.plays()),
            game_id: args.config.game_id.clone(),
            progress: args.config.progress.clone(),
            bound: bound.clone(),
        };
        let (host, _) = Actor::spawn_linked(None, Host, host_args, cell.clone()).await?;
        names.insert(host.get_id(), "host".to_string());
        children.push(host.get_cell());
        let eval_args = EvaluatorArgs {
            script: args.script.clone(),
            characters,
            judges: args.judge.clone(),
            choice_repeats: args.config.eval_repeats.max(1),
            rationale_threshold: args.config.rationale_threshold,
            game_id: args.config.game_id.clone(),
            judge_samples: SampleCounter::new(args.config.seed, "judge"),
            bound,
            progress: args.config.progress.clone(),
        };
        let (evaluator, _) = Actor::spawn_linked(None, Evaluator, eval_args, cell.clone()).await?;
        names.insert(evaluator.get_id(), "evaluator".to_string());
        children.push(evaluator.get_cell());
        me.send_message(GameMsg::Run)?;
        metrics::gauge!(tm::GAMES_IN_FLIGHT).increment(1.0);
        Ok(GameTree {
            args: Some(args),
            host,
            evaluator,
            children,
            names,
            started: Instant::now(),
        })
    }

    async fn handle(
        &self,
        me: ActorRef<Self::Msg>,
        msg: GameMsg,
        st: &mut GameTree,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            GameMsg::Run => {
                let Some(mut args) = st.args.take() else {
                    return Ok(());
                };
                let transcript = std::mem::replace(&mut args.transcript, Transcript::in_memory());
                let mut result = run(st, &args, transcript).await;
                // The game's prompts are all sent now: its cacheable share is complete (taken on
                // failure too, so the gateway forgets it).
                let cache = args.gateway.take_prompt_cache(&args.config.game_id).await;
                if let (Ok(r), Ok(cache)) = (&mut result, cache) {
                    r.set_prompt_cache(&cache);
                }
                finish(
                    args.config.protocol.protocol,
                    &args.config.game_id,
                    args.reply,
                    result,
                );
                stop_all(st, &me);
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        me: ActorRef<Self::Msg>,
        evt: SupervisionEvent,
        st: &mut GameTree,
    ) -> Result<(), ActorProcessingErr> {
        if let SupervisionEvent::ActorFailed(who, err) = evt {
            let name = st
                .names
                .get(&who.get_id())
                .cloned()
                .unwrap_or_else(|| "a child".into());
            tracing::warn!(child = %name, error = %err, "game child failed; failing the game");
            // If the game is still waiting to run, fail it now; otherwise the run itself has already
            // seen the child's absence and reported it.
            if let Some(args) = st.args.take() {
                finish(
                    args.config.protocol.protocol,
                    &args.config.game_id,
                    args.reply,
                    Err(GameError::ChildFailed {
                        child: name,
                        reason: err.to_string(),
                    }),
                );
            }
            stop_all(st, &me);
        }
        Ok(())
    }
}

fn stop_all(st: &GameTree, me: &ActorRef<GameMsg>) {
    for c in &st.children {
        c.stop(None);
    }
    me.stop(None);
}

fn finish(
    protocol: Protocol,
    game_id: &str,
    reply: oneshot::Sender<Result<GameResult, GameError>>,
    result: Result<GameResult, GameError>,
) {
    let outcome = match &result {
        Ok(r) => r.winner.map(|w| w.as_str()).unwrap_or("not_played"),
        Err(_) => "failed",
    };
    metrics::counter!(tm::GAMES, "protocol" => protocol.as_str(), "outcome" => outcome)
        .increment(1);
    metrics::gauge!(tm::GAMES_IN_FLIGHT).decrement(1.0);
    if reply.send(result).is_err() {
        tracing::debug!(game = game_id, "nobody waited for the game's result");
    }
}

async fn run(
    st: &GameTree,
    args: &GameArgs,
    transcript: Transcript,
) -> Result<GameResult, GameError> {
    let (transcript, played) = match st
        .host
        .call(|reply| HostMsg::Play { transcript, reply }, None)
        .await
    {
        Ok(ractor::rpc::CallResult::Success(x)) => x,
        _ => return Err(GameError::ActorLost("host".into())),
    };
    let played = match played {
        Ok(p) => p,
        Err(e) => return Err(e),
    };
    let (transcript, report) = match st
        .evaluator
        .call(
            |reply| EvaluatorMsg::Evaluate {
                transcript,
                mirage: played.mirage.clone(),
                reply,
            },
            None,
        )
        .await
    {
        Ok(ractor::rpc::CallResult::Success(x)) => x,
        _ => return Err(GameError::ActorLost("evaluator".into())),
    };
    let report = report?;
    // Who did it, players or not: detection accuracy and the result's list are about the culprits.
    let murderers: Vec<String> = args
        .script
        .culprits()
        .into_iter()
        .map(str::to_string)
        .collect();
    let (evaluation, gameplay) = transcript.usage_by_stage();
    let by_phase = PhaseUsage {
        gameplay,
        evaluation,
    };
    let usage: Usage = transcript.usage();
    let c = &args.config;
    let p = &c.protocol;
    let settings = match p.protocol {
        Protocol::ThinkThrice => serde_json::json!({
            "rounds_before_clues": p.thinkthrice.rounds_before_clues,
            "rounds_after_clues": p.thinkthrice.rounds_after_clues,
            "initial_questioning": p.thinkthrice.initial_questioning,
        }),
        Protocol::WellPlay => serde_json::json!({
            "rounds": p.wellplay.rounds,
            "questions_per_round": p.wellplay.questions_per_round,
        }),
        Protocol::Mirage => serde_json::json!({
            "iterations": p.mirage.iterations,
            "force_expose": p.mirage.force_expose,
            "script_summary_tokens": p.mirage.script_summary_tokens,
            "history_tokens": p.mirage.history_tokens,
            "stage_every": p.mirage.stage_every,
        }),
    };
    let mut settings = settings;
    if let Some(obj) = settings.as_object_mut() {
        for (k, v) in [
            ("top_k", serde_json::json!(c.agent.top_k)),
            (
                "temperature",
                serde_json::json!(short_float(c.agent.temperature)),
            ),
            ("top_p", serde_json::json!(short_float(c.agent.top_p))),
            ("max_tokens", serde_json::json!(c.agent.max_tokens)),
            ("eval_repeats", serde_json::json!(c.eval_repeats.max(1))),
            (
                "rationale_threshold",
                serde_json::json!(c.rationale_threshold),
            ),
            (
                "phase_of_judge_calls",
                serde_json::json!(Phase::Evaluation.as_str()),
            ),
        ] {
            obj.insert(k.to_string(), v);
        }
    }
    Ok(GameResult {
        game_id: c.game_id.clone(),
        script: args.script.title.clone(),
        protocol: p.protocol.as_str().into(),
        framework: c.framework.as_str().into(),
        murderer_framework: c
            .murderer_framework
            .filter(|m| *m != c.framework)
            .map(|m| m.as_str().to_string()),
        modules: if c
            .frameworks()
            .contains(&crate::agent::Framework::ThinkThrice)
        {
            c.agent.modules.to_string()
        } else {
            String::new()
        },
        seed: c.seed,
        provider: args.gateway.provider().into(),
        model: c.agent.model.clone(),
        winner: played.winner,
        // Per-victim votes (WellPlay, several victims) score every ballot against its own victim.
        murderer_detection_accuracy: played
            .majority
            .as_ref()
            .and_then(|m| m.ballot_accuracy())
            .unwrap_or_else(|| detection_accuracy(&played.votes, &murderers)),
        murderers,
        seats: c
            .seats
            .iter()
            .map(|(who, s)| (who.clone(), s.label()))
            .collect(),
        votes: played.votes,
        vote_counts: played.counts,
        majority: played.majority,
        mirage: played.mirage,
        factual: report.factual,
        inferential_accuracy: report.inferential_accuracy,
        informed_accuracy: report.informed_accuracy,
        rationale_score: report.rationale_score,
        mirage_scores: report.mirage,
        judges: args.judge.describe(),
        choice: report.choice,
        usage,
        usage_by_phase: by_phase,
        settings,
        events: transcript.len() as usize,
        duration_seconds: st.started.elapsed().as_secs_f64(),
        spec: Some(c.spec(&args.script, args.gateway.provider())),
    })
}

/// An f32 setting as the decimal the user typed (0.8, not 0.800000011920929) for result.json.
fn short_float(x: f32) -> f64 {
    (f64::from(x) * 1e6).round() / 1e6
}
