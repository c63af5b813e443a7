//! The `Character` actor: one per player, holding exactly one agent (its framework's) and the shared
//! [`Context`] it plays through.
//!
//! A character answers the host's and other players' requests one at a time (turns are synchronous).
//! Each request becomes one call on the agent; the reply is a [`Turn`]: the public text plus the
//! private module steps that produced it. The actor knows no framework: the registry builds the agent.
//!
//! Evaluation is one request, [`CharacterMsg::Evaluate`], holding every question the character is asked:
//! the answers do not depend on one another, so the character answers them together, each through a
//! forked [`Context`] (see `context.rs`), and replies with one turn per question, in the batch's order.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use super::bound::{together, CallBound};
use super::config::{AgentConfig, AgentError};
use super::context::{Context, ContextArgs};
use super::framework::Framework;
use super::human::{Human, HumanSeat};
use super::interface::{ClueChoice, DynAgent, EvalKind};
use super::prompts::Prompts;
use super::registry;
use super::turn::Turn;
use super::view::{CharacterView, OmniscientView};
use crate::memory::MemoryMsg;
use sleuth_llm::Gateway;
use sleuth_script::rules::{Protocol, ProtocolSettings};

/// The reply port of every request.
type Reply<T = Turn> = RpcReplyPort<Result<T, AgentError>>;

/// Requests a character handles.
pub enum CharacterMsg {
    /// Self-introduction on the host's request.
    Introduce { host_line: String, reply: Reply },
    /// Ask someone a question: `target` if given (initial questioning), else a player of the character's
    /// choosing among `candidates`. `round` is the open-questioning round (0 during introductions), so a
    /// framework that works per round (PLAYER*'s sensors and pruner) knows when a new one starts.
    Ask {
        target: Option<String>,
        candidates: Vec<String>,
        round: u32,
        reply: Reply,
    },
    /// The next act or stage of the character's script is handed out (acts are 1-based).
    Release { act: u32, reply: Reply },
    /// MIRAGE open conversation: one speech turn.
    Converse {
        host_line: String,
        iteration: u32,
        reply: Reply,
    },
    /// MIRAGE interaction: ask one of `candidates` a question or investigate one of `clues`. The turn's
    /// `data` says which: `{"action": "ask", "target", "question"}` or `{"action": "investigate", "clue"}`.
    Interact {
        candidates: Vec<String>,
        clues: Vec<ClueChoice>,
        reply: Reply,
    },
    /// MIRAGE trust and suspicion: score every one of `others`. The turn's `data` holds
    /// `{"trust": {name: score}, "suspicion": {name: score}}`, scores in 0..=1.
    Score { others: Vec<String>, reply: Reply },
    /// MIRAGE accusation: name one of `candidates` as the culprit.
    Accuse {
        candidates: Vec<String>,
        reply: Reply,
    },
    /// Answer `asker`'s question.
    Answer {
        asker: String,
        question: String,
        reply: Reply,
    },
    /// Vote for one of `candidates`.
    Vote {
        vote_call: String,
        candidates: Vec<String>,
        reply: Reply,
    },
    /// Evaluation: every question of `items`, answered together; one turn per item, in order.
    Evaluate {
        items: Vec<EvalItem>,
        reply: RpcReplyPort<Vec<Result<Turn, AgentError>>>,
    },
}

/// One evaluation question of a character's batch.
#[derive(Debug, Clone)]
pub struct EvalItem {
    /// The question's name, unique within the character (`factual/3`, `inferential/0`, `choice/2/17`):
    /// an answer whose number of calls is not fixed draws its sample indices from a sequence of this
    /// name (`{character}#{unit}`), so they do not depend on the answers before it.
    pub unit: String,
    pub question: EvalQuestion,
}

/// What an evaluation question asks.
#[derive(Debug, Clone)]
pub enum EvalQuestion {
    /// A factual question, answered briefly.
    Factual { question: String },
    /// An inferential multiple-choice question: the turn's `choice` is the letter, its text the
    /// rationale.
    Inferential {
        question: String,
        options: Vec<String>,
    },
    /// A WellPlay multiple-choice question; with `multiple`, several letters may be chosen (`picks` of
    /// them when the question says how many), returned as the turn's `choices`.
    Choice {
        question: String,
        options: Vec<String>,
        multiple: bool,
        picks: Option<u32>,
    },
}

impl EvalQuestion {
    fn kind(&self) -> EvalKind {
        match self {
            EvalQuestion::Factual { .. } => EvalKind::Factual,
            EvalQuestion::Inferential { .. } => EvalKind::Inferential,
            EvalQuestion::Choice { .. } => EvalKind::Choice,
        }
    }
}

/// Everything a character needs to start.
pub struct CharacterArgs {
    /// The framework this character plays with (murderers may have their own).
    pub framework: Framework,
    pub protocol: ProtocolSettings,
    /// What the character's player may know; the character's name is the view's.
    pub view: CharacterView,
    /// Every character's script, for the omniscient reference (OP) only; other frameworks never get it.
    pub omniscient: Option<OmniscientView>,
    pub config: AgentConfig,
    pub gateway: Gateway,
    pub memory: ActorRef<MemoryMsg>,
    pub prompts: Arc<Prompts>,
    pub game_id: String,
    pub seed: u64,
    /// The game's bound on model calls in flight, shared with the other characters and the evaluator.
    pub bound: CallBound,
    /// A person plays this character (`human/`): their seat replaces the framework's agent.
    pub seat: Option<HumanSeat>,
    /// Test hook: panic while handling this request number (0-based), to exercise supervision. Only
    /// with the `test-hooks` feature (the test suite's); user builds carry no fault injection.
    #[cfg(feature = "test-hooks")]
    pub panic_on_request: Option<u64>,
}

/// The actor.
pub struct Character;

/// A character's state: its agent, the context it plays through, and the request counter of the test
/// hook.
pub struct State {
    agent: Box<dyn DynAgent>,
    cx: Context,
    #[cfg(feature = "test-hooks")]
    requests: u64,
    #[cfg(feature = "test-hooks")]
    panic_on_request: Option<u64>,
}

impl Actor for Character {
    type Msg = CharacterMsg;
    type State = State;
    type Arguments = CharacterArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<Self::Msg>,
        args: CharacterArgs,
    ) -> Result<State, ActorProcessingErr> {
        let agent: Box<dyn DynAgent> = match args.seat {
            Some(seat) => Box::new(Human::new(seat)),
            None => registry::build(args.framework, args.omniscient)?,
        };
        let mut cx = Context::new(ContextArgs {
            framework: args.framework,
            protocol: args.protocol,
            view: args.view,
            config: args.config,
            gateway: args.gateway,
            memory: args.memory,
            prompts: args.prompts,
            game_id: args.game_id,
            seed: args.seed,
            bound: args.bound,
        });
        // The no-play references see the whole script at once; playing characters get act 1 now and
        // later acts when the host hands them out. The ThinkThrice protocol hands out everything.
        if !args.framework.plays() || args.protocol.protocol == Protocol::ThinkThrice {
            cx.release_all();
        }
        let system = agent.system_prompt(&cx)?;
        cx.set_system(system);
        Ok(State {
            agent,
            cx,
            #[cfg(feature = "test-hooks")]
            requests: 0,
            #[cfg(feature = "test-hooks")]
            panic_on_request: args.panic_on_request,
        })
    }

    async fn handle(
        &self,
        _me: ActorRef<Self::Msg>,
        msg: CharacterMsg,
        st: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        #[cfg(feature = "test-hooks")]
        {
            let n = st.requests;
            st.requests += 1;
            if st.panic_on_request == Some(n) {
                panic!(
                    "injected fault: character {} crashed on request {n}",
                    st.cx.name()
                );
            }
        }
        let (agent, cx) = (&mut st.agent, &mut st.cx);
        cx.begin_turn();
        match msg {
            CharacterMsg::Introduce { host_line, reply } => {
                let r = agent.introduce(cx, &host_line).await;
                let _ = reply.send(r.map(|text| cx.finish_turn(text)));
            }
            CharacterMsg::Ask {
                target,
                candidates,
                round,
                reply,
            } => {
                let r = agent.ask(cx, target, &candidates, round).await;
                let _ = reply.send(r.map(|(target, q)| Turn {
                    target: Some(target),
                    ..cx.finish_turn(q)
                }));
            }
            CharacterMsg::Answer {
                asker,
                question,
                reply,
            } => {
                let r = agent.answer(cx, &asker, &question).await;
                let _ = reply.send(r.map(|text| cx.finish_turn(text)));
            }
            CharacterMsg::Vote {
                vote_call,
                candidates,
                reply,
            } => {
                let r = agent.vote(cx, &vote_call, &candidates).await;
                let _ = reply.send(r.map(|(target, reason)| Turn {
                    target: Some(target),
                    ..cx.finish_turn(reason)
                }));
            }
            CharacterMsg::Release { act, reply } => {
                let r = release(agent.as_mut(), cx, act).await;
                let _ = reply.send(r.map(|()| cx.finish_turn(String::new())));
            }
            CharacterMsg::Converse {
                host_line,
                iteration,
                reply,
            } => {
                let r = agent.converse(cx, &host_line, iteration).await;
                let _ = reply.send(r.map(|text| cx.finish_turn(text)));
            }
            CharacterMsg::Interact {
                candidates,
                clues,
                reply,
            } => {
                let r = agent.interact(cx, &candidates, &clues).await;
                let _ = reply.send(r.map(|(text, data)| {
                    let target = data["target"].as_str().map(str::to_string);
                    Turn {
                        target,
                        data: Some(data),
                        ..cx.finish_turn(text)
                    }
                }));
            }
            CharacterMsg::Score { others, reply } => {
                let r = agent.score(cx, &others).await;
                let _ = reply.send(r.map(|(text, data)| Turn {
                    data: Some(data),
                    ..cx.finish_turn(text)
                }));
            }
            CharacterMsg::Accuse { candidates, reply } => {
                let r = agent.accuse(cx, &candidates).await;
                let _ = reply.send(r.map(|(target, reason)| Turn {
                    target: Some(target),
                    ..cx.finish_turn(reason)
                }));
            }
            CharacterMsg::Evaluate { items, reply } => {
                let _ = reply.send(evaluate(agent.as_ref(), cx, items).await);
            }
        }
        Ok(())
    }
}

/// Answers a batch of evaluation questions together. Each answer gets a forked context, planned in the
/// batch's order before any is asked: an answer of fixed size takes the character's next sample indices
/// (exactly those it drew when questions were asked one at a time), any other a sequence of its own
/// named by its unit. The turns come back in the batch's order, whatever order they finished in.
async fn evaluate(
    agent: &dyn DynAgent,
    cx: &mut Context,
    items: Vec<EvalItem>,
) -> Vec<Result<Turn, AgentError>> {
    let units: Vec<(EvalQuestion, Context)> = items
        .into_iter()
        .map(|item| {
            let unit = match agent.eval_calls(cx, item.question.kind()) {
                Some(calls) => cx.fork_calls(calls),
                None => cx.fork_unit(&item.unit),
            };
            (item.question, unit)
        })
        .collect();
    let bound = cx.bound().clone();
    let mut work = Vec::with_capacity(units.len());
    for (question, unit) in units {
        work.push(answer(agent, unit, question));
    }
    together(&bound, work).await
}

/// One evaluation answer in its own context, as a turn.
async fn answer(
    agent: &dyn DynAgent,
    mut cx: Context,
    q: EvalQuestion,
) -> Result<Turn, AgentError> {
    let turn = match q {
        EvalQuestion::Factual { question } => {
            let text = agent.answer_factual(&mut cx, &question).await?;
            cx.finish_turn(text)
        }
        EvalQuestion::Inferential { question, options } => {
            let (letter, rationale) = agent
                .answer_inferential(&mut cx, &question, &options)
                .await?;
            Turn {
                choice: Some(letter),
                ..cx.finish_turn(rationale)
            }
        }
        EvalQuestion::Choice {
            question,
            options,
            multiple,
            picks,
        } => {
            let picks = multiple.then_some(picks).flatten();
            let (letters, reason) = agent
                .answer_choice(&mut cx, &question, &options, multiple, picks)
                .await?;
            Turn {
                choice: letters.first().cloned(),
                choices: letters,
                ..cx.finish_turn(reason)
            }
        }
    };
    cx.check_plan()?;
    Ok(turn)
}

/// Act `act` is handed out: the view and the system prompt now include it, then the agent reacts
/// (MIRAGE re-summarizes).
async fn release(agent: &mut dyn DynAgent, cx: &mut Context, act: u32) -> Result<(), AgentError> {
    cx.release(act);
    let system = agent.system_prompt(cx)?;
    cx.set_system(system);
    agent.released(cx, act).await
}
