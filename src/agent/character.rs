//! The `Character` actor and the ThinkThrice agent (Memory Retrieval, Self-Refinement, Self-Verification).
//!
//! A character answers the host's and other players' requests one at a time (turns are synchronous).
//! Each reply is a [`Turn`]: the public text plus the private module steps that produced it (recalled
//! memories, sub-questions, verification attempts). Every LLM call's usage is attributed to exactly one
//! of those steps or to the turn itself, so the transcript adds up to the bill.

use std::sync::Arc;

use minijinja::context;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::framework::Framework;
use super::modules::Modules;
use super::prompts::{PromptError, Prompts};
use super::{answers, mirage, ocot, player, werewolf};
use crate::game::{Draft, ProtocolSettings};
use crate::llm::{
    CallTags, ChatRequest, Gateway, LlmError, Message, Phase, ResponseSchema, TokenLogprob, Usage,
};
use crate::memory::{MemoryError, MemoryMsg};
use crate::script::Script;
use crate::text::{self, Bm25};

/// The default framework's name.
pub const FRAMEWORK: &str = "thinkthrice";

/// Every prompt the ThinkThrice agent renders; loaded (and checked) before the game starts.
pub const PURPOSES: &[&str] = &[
    "system",
    "memory",
    "introduce",
    "ask",
    "answer",
    "sr_decompose",
    "sr_refine",
    "sv_check",
    "vote",
    "eval_factual",
    "eval_inferential",
];

/// Token budget of the baselines' vote reasons.
const BASELINE_VOTE_TOKENS: u32 = 150;
/// Facts kept per sub-question in Self-Refinement.
const SR_FACTS_PER_SUBQUESTION: usize = 2;
/// Facts checked per Self-Verification attempt; longer answers are checked on their first sentences.
const SV_MAX_FACTS: usize = 6;
/// An answer passes verification with at least this many supported facts (or all, if it has fewer)…
pub const SV_MIN_SUPPORTED: usize = 2;
/// …and at least this share of its facts supported.
pub const SV_MIN_RATIO: f64 = 0.6;

/// How an agent talks to its model.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub modules: Modules,
    /// Records recalled per prompt when MR is on.
    pub top_k: usize,
    pub model: String,
    pub temperature: f32,
    pub top_p: f32,
    /// Token budget of in-game answers and introductions.
    pub max_tokens: u32,
    /// Token budget of evaluation answers (short answers are what the factual judge compares).
    pub eval_max_tokens: u32,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            modules: Modules {
                mr: true,
                sr: true,
                sv: Some(3),
            },
            top_k: 8,
            model: crate::llm::simulated::MODEL.to_string(),
            temperature: 0.8,
            top_p: 1.0,
            max_tokens: 300,
            eval_max_tokens: 48,
        }
    }
}

/// Why a character could not act.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error("memory: {0}")]
    Memory(#[from] MemoryError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    /// The protocol asked for something the framework does not do (the CLI refuses such pairs first).
    #[error("the {framework} framework cannot {request}")]
    Unsupported {
        framework: &'static str,
        request: &'static str,
    },
}

impl AgentError {
    /// Usage spent by the failed action.
    pub fn usage(&self) -> Usage {
        match self {
            AgentError::Llm(e) => e.usage(),
            _ => Usage::default(),
        }
    }
}

/// A character's reply to one request.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    /// What the character says (an introduction, a question, an answer) or a vote's reason.
    pub text: String,
    /// For questions and votes: whom.
    pub target: Option<String>,
    /// For multiple-choice answers: the letter.
    pub choice: Option<String>,
    /// For multiple-choice questions with several answers: every letter chosen.
    pub choices: Vec<String>,
    /// Structured results: an interaction (`{"action": "ask"|"investigate", …}`), trust and suspicion
    /// scores, sensor readings.
    pub data: Option<Value>,
    /// Private module steps, in order, each with the usage of the calls it made.
    pub steps: Vec<Draft>,
    /// Usage of calls not attributed to a step.
    pub usage: Usage,
}

/// Requests a character handles.
pub enum CharacterMsg {
    /// Self-introduction on the host's request.
    Introduce {
        host_line: String,
        reply: RpcReplyPort<Result<Turn, AgentError>>,
    },
    /// Ask someone a question: `target` if given (initial questioning), else a player of the character's
    /// choosing among `candidates`. `round` is the open-questioning round (0 during introductions), so a
    /// framework that works per round (PLAYER*'s sensors and pruner) knows when a new one starts.
    Ask {
        target: Option<String>,
        candidates: Vec<String>,
        round: u32,
        reply: RpcReplyPort<Result<Turn, AgentError>>,
    },
    /// The next act or stage of the character's script is handed out (acts are 1-based).
    Release {
        act: u32,
        reply: RpcReplyPort<Result<Turn, AgentError>>,
    },
    /// MIRAGE open conversation: one speech turn.
    Converse {
        host_line: String,
        iteration: u32,
        reply: RpcReplyPort<Result<Turn, AgentError>>,
    },
    /// MIRAGE interaction: ask one of `candidates` a question or investigate one of `clues`. The turn's
    /// `data` says which: `{"action": "ask", "target", "question"}` or `{"action": "investigate", "clue"}`.
    Interact {
        candidates: Vec<String>,
        clues: Vec<ClueChoice>,
        reply: RpcReplyPort<Result<Turn, AgentError>>,
    },
    /// MIRAGE trust and suspicion: score every one of `others`. The turn's `data` holds
    /// `{"trust": {name: score}, "suspicion": {name: score}}`, scores in 0..=1.
    Score {
        others: Vec<String>,
        reply: RpcReplyPort<Result<Turn, AgentError>>,
    },
    /// MIRAGE accusation: name one of `candidates` as the culprit.
    Accuse {
        candidates: Vec<String>,
        reply: RpcReplyPort<Result<Turn, AgentError>>,
    },
    /// Answer `asker`'s question.
    Answer {
        asker: String,
        question: String,
        reply: RpcReplyPort<Result<Turn, AgentError>>,
    },
    /// Vote for one of `candidates`.
    Vote {
        vote_call: String,
        candidates: Vec<String>,
        reply: RpcReplyPort<Result<Turn, AgentError>>,
    },
    /// Evaluation: a factual question, answered briefly.
    AnswerFactual {
        question: String,
        reply: RpcReplyPort<Result<Turn, AgentError>>,
    },
    /// Evaluation: a multiple-choice question.
    AnswerInferential {
        question: String,
        options: Vec<String>,
        reply: RpcReplyPort<Result<Turn, AgentError>>,
    },
    /// Evaluation: a WellPlay multiple-choice question; with `multiple`, every right letter must be
    /// chosen (the turn's `choices`).
    AnswerChoice {
        question: String,
        options: Vec<String>,
        multiple: bool,
        reply: RpcReplyPort<Result<Turn, AgentError>>,
    },
}

/// A clue a MIRAGE character may investigate.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ClueChoice {
    pub id: String,
    /// Where or about whom it is found: what the character chooses by.
    pub place: String,
}

/// Everything a character needs to start.
pub struct CharacterArgs {
    pub name: String,
    /// The framework this character plays with (murderers may have their own).
    pub framework: Framework,
    pub protocol: ProtocolSettings,
    pub script: Arc<Script>,
    pub config: AgentConfig,
    pub gateway: Gateway,
    pub memory: ActorRef<MemoryMsg>,
    pub prompts: Arc<Prompts>,
    pub game_id: String,
    pub seed: u64,
    /// Test hook: panic while handling this request number (0-based), to exercise supervision.
    pub panic_on_request: Option<u64>,
}

/// The actor.
pub struct Character;

/// A character's state: its script, its settings, and its call counter (which, with the game seed,
/// makes every sample index reproducible).
pub struct State {
    pub(super) args: CharacterArgs,
    /// The system prompt: the framework's persona and the character's script as released so far.
    pub(super) system: String,
    pub(super) murderer: bool,
    /// Sentences the character may draw on when refining (the murderer's secrets excluded).
    pub(super) facts: Vec<String>,
    calls: u64,
    requests: u64,
    /// Acts (stages) of the script handed out so far.
    pub(super) acts_released: u32,
    /// Per-framework state; only the character's own framework's is used.
    pub(super) player: player::PlayerState,
    pub(super) werewolf: werewolf::WerewolfState,
    pub(super) ocot: ocot::OcotState,
    pub(super) mirage: mirage::MirageState,
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
        let s = &args.script;
        let c = s
            .character(&args.name)
            .ok_or_else(|| format!("no character named {}", args.name))?;
        // The no-play references see the whole script at once; playing characters get act 1 now and
        // later acts when the host hands them out. The ThinkThrice protocol hands out everything.
        let acts_released = if !args.framework.plays()
            || args.protocol.protocol == crate::game::Protocol::ThinkThrice
        {
            s.acts.max(1)
        } else {
            1
        };
        let system = render_system(&args, acts_released)?;
        let facts = script_facts_until(c, acts_released);
        Ok(State {
            murderer: c.is_murderer(),
            args,
            system,
            facts,
            calls: 0,
            requests: 0,
            acts_released,
            player: Default::default(),
            werewolf: Default::default(),
            ocot: Default::default(),
            mirage: Default::default(),
        })
    }

    async fn handle(
        &self,
        _me: ActorRef<Self::Msg>,
        msg: CharacterMsg,
        st: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        let n = st.requests;
        st.requests += 1;
        if st.args.panic_on_request == Some(n) {
            panic!(
                "injected fault: character {} crashed on request {n}",
                st.args.name
            );
        }
        let mut turn = TurnBuilder::default();
        match msg {
            CharacterMsg::Introduce { host_line, reply } => {
                let r = st.introduce(&mut turn, &host_line).await;
                let _ = reply.send(r.map(|text| turn.finish(text)));
            }
            CharacterMsg::Ask {
                target,
                candidates,
                round,
                reply,
            } => {
                let r = st.ask_dispatch(&mut turn, target, &candidates, round).await;
                let _ = reply.send(r.map(|(target, q)| Turn {
                    target: Some(target),
                    ..turn.finish(q)
                }));
            }
            CharacterMsg::Answer {
                asker,
                question,
                reply,
            } => {
                let r = st.answer(&mut turn, &asker, &question).await;
                let _ = reply.send(r.map(|text| turn.finish(text)));
            }
            CharacterMsg::Vote {
                vote_call,
                candidates,
                reply,
            } => {
                let r = st.vote_dispatch(&mut turn, &vote_call, &candidates).await;
                let _ = reply.send(r.map(|(target, reason)| Turn {
                    target: Some(target),
                    ..turn.finish(reason)
                }));
            }
            CharacterMsg::Release { act, reply } => {
                let r = st.release(&mut turn, act).await;
                let _ = reply.send(r.map(|()| turn.finish(String::new())));
            }
            CharacterMsg::Converse {
                host_line,
                iteration,
                reply,
            } => {
                let r = match st.args.framework {
                    Framework::Mirage => {
                        mirage::converse(st, &mut turn, &host_line, iteration).await
                    }
                    f => Err(unsupported(f, "hold an open conversation")),
                };
                let _ = reply.send(r.map(|text| turn.finish(text)));
            }
            CharacterMsg::Interact {
                candidates,
                clues,
                reply,
            } => {
                let r = match st.args.framework {
                    Framework::Mirage => mirage::interact(st, &mut turn, &candidates, &clues).await,
                    f => Err(unsupported(f, "interact with the environment")),
                };
                let _ = reply.send(r.map(|(text, data)| {
                    let target = data["target"].as_str().map(str::to_string);
                    Turn {
                        target,
                        data: Some(data),
                        ..turn.finish(text)
                    }
                }));
            }
            CharacterMsg::Score { others, reply } => {
                let r = match st.args.framework {
                    Framework::Mirage => mirage::score(st, &mut turn, &others).await,
                    f => Err(unsupported(f, "score trust and suspicion")),
                };
                let _ = reply.send(r.map(|(text, data)| Turn {
                    data: Some(data),
                    ..turn.finish(text)
                }));
            }
            CharacterMsg::Accuse { candidates, reply } => {
                let r = match st.args.framework {
                    Framework::Mirage => mirage::accuse(st, &mut turn, &candidates).await,
                    f => Err(unsupported(f, "accuse")),
                };
                let _ = reply.send(r.map(|(target, reason)| Turn {
                    target: Some(target),
                    ..turn.finish(reason)
                }));
            }
            CharacterMsg::AnswerFactual { question, reply } => {
                let r = match st.args.framework {
                    Framework::ThinkThrice => {
                        st.respond(
                            &mut turn,
                            "eval_factual",
                            &question,
                            "evaluator",
                            Phase::Evaluation,
                        )
                        .await
                    }
                    _ => answers::factual(st, &mut turn, &question).await,
                };
                let _ = reply.send(r.map(|text| turn.finish(text)));
            }
            CharacterMsg::AnswerInferential {
                question,
                options,
                reply,
            } => {
                let r = match st.args.framework {
                    Framework::ThinkThrice => st.inferential(&mut turn, &question, &options).await,
                    _ => answers::inferential(st, &mut turn, &question, &options).await,
                };
                let _ = reply.send(r.map(|(letter, rationale)| Turn {
                    choice: Some(letter),
                    ..turn.finish(rationale)
                }));
            }
            CharacterMsg::AnswerChoice {
                question,
                options,
                multiple,
                reply,
            } => {
                let r = answers::choice(st, &mut turn, &question, &options, multiple).await;
                let _ = reply.send(r.map(|(letters, reason)| Turn {
                    choice: letters.first().cloned(),
                    choices: letters,
                    ..turn.finish(reason)
                }));
            }
        }
        Ok(())
    }
}

fn unsupported(f: Framework, request: &'static str) -> AgentError {
    AgentError::Unsupported {
        framework: f.as_str(),
        request,
    }
}

/// The sentences of a character's script up to act `acts` that Self-Refinement may offer as facts: a
/// later act is never drawn on before it is handed out, and a murderer's secrets never.
fn script_facts_until(c: &crate::script::Character, acts: u32) -> Vec<String> {
    let mut facts = text::sentences(&c.story);
    facts.extend(text::sentences(&c.timeline));
    facts.extend(
        c.acts
            .iter()
            .take(acts.max(1) as usize)
            .flat_map(|a| text::sentences(a)),
    );
    facts.extend(c.relationships.iter().flat_map(|r| text::sentences(r)));
    if !c.is_murderer() {
        facts.extend(c.secrets.iter().flat_map(|r| text::sentences(r)));
    }
    facts
}

/// Renders the framework's system prompt: persona, rules and the character's script up to act `acts`.
/// Every framework's `system.j2` gets the same variables; the omniscient reference (OP) also uses
/// `everyone`, every character's script.
pub(super) fn render_system(args: &CharacterArgs, acts: u32) -> Result<String, PromptError> {
    let s = &args.script;
    let c = s
        .character(&args.name)
        .ok_or_else(|| PromptError::Template {
            name: format!("{}/system.j2", args.framework),
            message: format!("the script has no character named {}", args.name),
        })?;
    let cast: Vec<Value> = s
        .characters
        .iter()
        .map(|c| json!({"name": c.name, "public": c.public}))
        .collect();
    let shown = acts.max(1) as usize;
    let released: Vec<&String> = c.acts.iter().take(shown).collect();
    let everyone: Vec<Value> = s
        .characters
        .iter()
        .map(|o| {
            json!({
                "name": o.name, "public": o.public, "story": o.story, "timeline": o.timeline,
                "acts": o.acts, "secrets": o.secrets, "relationships": o.relationships,
                "murderer": o.is_murderer(),
            })
        })
        .collect();
    args.prompts.render(
        "system",
        context! {
            name => c.name, title => s.title, murderer => c.is_murderer(), premise => s.premise,
            victims => s.victims.iter().map(|v| json!({"name": v.name, "description": v.description})).collect::<Vec<_>>(),
            cast => cast, story => c.story, acts => released, performance => c.performance,
            abilities => c.abilities, timeline => c.timeline, relationships => c.relationships,
            goals => c.goals, secrets => c.secrets, everyone => everyone,
            protocol => args.protocol.protocol.as_str(),
            force_expose => args.protocol.mirage.force_expose,
        },
    )
}

/// Collects a turn's steps and attributes usage: a step takes the usage accrued since the last step.
#[derive(Default)]
pub(super) struct TurnBuilder {
    steps: Vec<Draft>,
    pending: Usage,
}

impl TurnBuilder {
    pub(super) fn spend(&mut self, u: Usage) {
        self.pending += u;
    }

    pub(super) fn step(&mut self, kind: &str, speaker: &str, text: String, data: Option<Value>) {
        let mut d = Draft::private(kind, speaker, &[speaker], text)
            .with_usage(std::mem::take(&mut self.pending));
        d.data = data;
        self.steps.push(d);
    }

    pub(super) fn finish(&mut self, text: String) -> Turn {
        Turn {
            text,
            steps: std::mem::take(&mut self.steps),
            usage: std::mem::take(&mut self.pending),
            ..Turn::default()
        }
    }
}

/// A JSON response schema with a name (the call purpose).
pub(super) fn schema(name: &str, schema: Value) -> ResponseSchema {
    ResponseSchema::json(name, schema)
}

impl State {
    pub(super) fn name(&self) -> &str {
        &self.args.name
    }

    pub(super) fn tags(&self, phase: Phase, purpose: &str) -> CallTags {
        CallTags {
            game: self.args.game_id.clone(),
            agent: self.args.name.clone(),
            framework: self.args.framework.as_str().to_string(),
            phase,
            purpose: purpose.to_string(),
        }
    }

    /// The sample index of the next call: a hash of (game seed, agent, call number).
    pub(super) fn next_sample(&mut self) -> u64 {
        let mut h = Sha256::new();
        h.update(self.args.seed.to_le_bytes());
        h.update(self.args.name.as_bytes());
        h.update(self.calls.to_le_bytes());
        self.calls += 1;
        let d = h.finalize();
        u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
    }

    pub(super) async fn call(
        &mut self,
        turn: &mut TurnBuilder,
        purpose: &str,
        user: String,
        max_tokens: u32,
        schema: Option<ResponseSchema>,
        phase: Phase,
    ) -> Result<(String, Option<Value>), AgentError> {
        self.call_full(turn, purpose, user, max_tokens, schema, phase, false)
            .await
            .map(|(text, json, _)| (text, json))
    }

    /// One call through the gateway with the character's system prompt; with `logprobs`, the token
    /// log-probabilities come back too when the provider reports them.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn call_full(
        &mut self,
        turn: &mut TurnBuilder,
        purpose: &str,
        user: String,
        max_tokens: u32,
        schema: Option<ResponseSchema>,
        phase: Phase,
        logprobs: bool,
    ) -> Result<(String, Option<Value>, Option<Vec<TokenLogprob>>), AgentError> {
        let c = &self.args.config;
        let req = ChatRequest {
            model: c.model.clone(),
            messages: vec![Message::system(self.system.clone()), Message::user(user)],
            temperature: c.temperature,
            top_p: c.top_p,
            max_tokens,
            schema,
            logprobs,
            sample: self.next_sample(),
        };
        let tags = self.tags(phase, purpose);
        match self.args.gateway.chat(req, tags).await {
            Ok(out) => {
                turn.spend(out.usage);
                Ok((out.response.content, out.json, out.response.logprobs))
            }
            Err(e) => {
                turn.spend(e.usage());
                Err(e.into())
            }
        }
    }

    /// With MR on: the agent's top-k memories for `query`, rendered as a prompt block, and a private
    /// `memory_recall` step. With MR off: an empty block (the agent is memoryless).
    pub(super) async fn recall(
        &mut self,
        turn: &mut TurnBuilder,
        query: &str,
        phase: Phase,
    ) -> Result<String, AgentError> {
        if !self.args.config.modules.mr {
            return Ok(String::new());
        }
        let texts = self.recall_texts(turn, query, phase).await?;
        Ok(self
            .args
            .prompts
            .render("memory", context! { records => texts })?)
    }

    /// The agent's top-k records for `query` as plain texts, recorded as a private `memory_recall` step.
    /// Empty for a memoryless agent: ThinkThrice without MR, and the no-play references.
    pub(super) async fn recall_texts(
        &mut self,
        turn: &mut TurnBuilder,
        query: &str,
        phase: Phase,
    ) -> Result<Vec<String>, AgentError> {
        let memoryless = match self.args.framework {
            Framework::ThinkThrice => !self.args.config.modules.mr,
            f => !f.plays(),
        };
        if memoryless {
            return Ok(Vec::new());
        }
        let tags = self.tags(phase, "memory_query");
        let name = self.name().to_string();
        let k = self.args.config.top_k;
        let text = query.to_string();
        let r = self
            .args
            .memory
            .call(
                |reply| MemoryMsg::Query {
                    agent: name.clone(),
                    text,
                    k,
                    tags,
                    reply,
                },
                None,
            )
            .await;
        let (records, usage) = match r {
            Ok(ractor::rpc::CallResult::Success(x)) => x?,
            _ => return Err(MemoryError::Unavailable.into()),
        };
        turn.spend(usage);
        let texts: Vec<String> = records.iter().map(|r| r.text.clone()).collect();
        let events: Vec<u64> = records.iter().map(|r| r.event).collect();
        turn.step(
            "memory_recall",
            &name,
            texts.join("\n"),
            Some(json!({ "query": query, "events": events })),
        );
        Ok(texts)
    }

    /// A free-text reply to the host's line from the top-k memories about it, rendered with the
    /// framework's `introduce` template (memory, host_line, murderer): the baselines' introduction.
    pub(super) async fn introduce_from_memory(
        &mut self,
        turn: &mut TurnBuilder,
        host_line: &str,
    ) -> Result<String, AgentError> {
        let memory = self.recall_texts(turn, host_line, Phase::Gameplay).await?;
        let user = self.args.prompts.render(
            "introduce",
            context! { memory => memory, host_line => host_line, murderer => self.murderer },
        )?;
        let budget = self.args.config.max_tokens;
        let (text, _) = self
            .call(turn, "introduce", user, budget, None, Phase::Gameplay)
            .await?;
        Ok(text.trim().to_string())
    }

    /// A vote among `candidates` from the top-k memories about the crime, rendered with the framework's
    /// `vote` template (memory, vote_call, candidates, victim_names, murderer): the baselines' vote.
    pub(super) async fn vote_from_memory(
        &mut self,
        turn: &mut TurnBuilder,
        vote_call: &str,
        candidates: &[String],
        max_tokens: u32,
    ) -> Result<(String, String), AgentError> {
        let victims = self.victim_names();
        let query = self.lines().query_vote(&victims);
        let memory = self.recall_texts(turn, &query, Phase::Gameplay).await?;
        let user = self.args.prompts.render(
            "vote",
            context! {
                memory => memory, vote_call => vote_call, candidates => candidates,
                victim_names => victims, murderer => self.murderer,
            },
        )?;
        self.pick(
            turn,
            "vote",
            user,
            ("vote", candidates),
            "reason",
            max_tokens,
            Phase::Gameplay,
        )
        .await
    }

    /// Everything this character has seen since event `after`, in order (MIRAGE reads the whole
    /// conversation rather than a top-k).
    pub(super) async fn history(
        &self,
        after: Option<u64>,
    ) -> Result<Vec<crate::memory::Recalled>, AgentError> {
        let agent = self.name().to_string();
        match self
            .args
            .memory
            .call(
                |reply| MemoryMsg::History {
                    agent,
                    after,
                    reply,
                },
                None,
            )
            .await
        {
            Ok(ractor::rpc::CallResult::Success(x)) => Ok(x),
            _ => Err(MemoryError::Unavailable.into()),
        }
    }

    /// A self-introduction on the host's request.
    async fn introduce(
        &mut self,
        turn: &mut TurnBuilder,
        host_line: &str,
    ) -> Result<String, AgentError> {
        match self.args.framework {
            Framework::ThinkThrice => {
                self.respond(turn, "introduce", host_line, "host", Phase::Gameplay)
                    .await
            }
            Framework::Player => player::introduce(self, turn, host_line).await,
            // The baselines introduce themselves from their script and memories alone.
            Framework::Werewolf | Framework::Ocot => {
                self.introduce_from_memory(turn, host_line).await
            }
            Framework::Mirage => mirage::converse(self, turn, host_line, 0).await,
            f => Err(unsupported(f, "introduce itself")),
        }
    }

    async fn ask_dispatch(
        &mut self,
        turn: &mut TurnBuilder,
        target: Option<String>,
        candidates: &[String],
        round: u32,
    ) -> Result<(String, String), AgentError> {
        match self.args.framework {
            Framework::ThinkThrice => self.ask(turn, target, candidates).await,
            Framework::Player => player::ask(self, turn, target, candidates, round).await,
            Framework::Werewolf => werewolf::ask(self, turn, target, candidates, round).await,
            Framework::Ocot => ocot::ask(self, turn, target, candidates, round).await,
            f => Err(unsupported(f, "ask questions")),
        }
    }

    async fn answer(
        &mut self,
        turn: &mut TurnBuilder,
        asker: &str,
        question: &str,
    ) -> Result<String, AgentError> {
        match self.args.framework {
            Framework::ThinkThrice => {
                self.respond(turn, "answer", question, asker, Phase::Gameplay)
                    .await
            }
            Framework::Player => player::answer(self, turn, asker, question).await,
            Framework::Werewolf => werewolf::answer(self, turn, asker, question).await,
            Framework::Ocot => ocot::answer(self, turn, asker, question).await,
            Framework::Mirage => mirage::answer(self, turn, asker, question).await,
            f => Err(unsupported(f, "answer in the game")),
        }
    }

    async fn vote_dispatch(
        &mut self,
        turn: &mut TurnBuilder,
        vote_call: &str,
        candidates: &[String],
    ) -> Result<(String, String), AgentError> {
        match self.args.framework {
            Framework::ThinkThrice => self.vote(turn, vote_call, candidates).await,
            Framework::Player => player::vote(self, turn, vote_call, candidates).await,
            Framework::Werewolf | Framework::Ocot => {
                self.vote_from_memory(turn, vote_call, candidates, BASELINE_VOTE_TOKENS)
                    .await
            }
            Framework::Mirage => mirage::vote(self, turn, vote_call, candidates).await,
            f => Err(unsupported(f, "vote")),
        }
    }

    /// Act `act` is handed out: the system prompt now includes it. MIRAGE also re-summarizes.
    async fn release(&mut self, turn: &mut TurnBuilder, act: u32) -> Result<(), AgentError> {
        self.acts_released = self.acts_released.max(act);
        self.system = render_system(&self.args, self.acts_released)?;
        if let Some(c) = self.args.script.character(&self.args.name) {
            self.facts = script_facts_until(c, self.acts_released);
        }
        if self.args.framework == Framework::Mirage {
            mirage::released(self, turn, act).await?;
        }
        Ok(())
    }

    /// Answers a question through the ThinkThrice pipeline: draft (with memory), then Self-Refinement,
    /// then Self-Verification with up to N attempts, keeping the best attempt.
    pub(super) async fn respond(
        &mut self,
        turn: &mut TurnBuilder,
        purpose: &str,
        question: &str,
        asker: &str,
        phase: Phase,
    ) -> Result<String, AgentError> {
        let memory = self.recall(turn, question, phase).await?;
        let attempts = self.args.config.modules.sv.unwrap_or(1);
        let mut best: Option<(f64, String)> = None;
        for attempt in 0..attempts {
            let answer = self
                .draft_and_refine(turn, purpose, question, asker, &memory, phase)
                .await?;
            let Some(_) = self.args.config.modules.sv else {
                return Ok(answer);
            };
            let (score, passed) = self.verify(turn, &answer, attempt, phase).await?;
            if best.as_ref().is_none_or(|(s, _)| score > *s) {
                best = Some((score, answer));
            }
            if passed {
                break;
            }
        }
        Ok(best.map(|b| b.1).unwrap_or_default())
    }

    async fn draft_and_refine(
        &mut self,
        turn: &mut TurnBuilder,
        purpose: &str,
        question: &str,
        asker: &str,
        memory: &str,
        phase: Phase,
    ) -> Result<String, AgentError> {
        let c = &self.args.config;
        let budget = if phase == Phase::Evaluation {
            c.eval_max_tokens
        } else {
            c.max_tokens
        };
        let user = match purpose {
            "introduce" => self.args.prompts.render(
                "introduce",
                context! { memory => memory, host_line => question },
            )?,
            "answer" => self.args.prompts.render(
                "answer",
                context! { memory => memory, asker => asker, question => question },
            )?,
            _ => self.args.prompts.render(
                "eval_factual",
                context! { memory => memory, question => question },
            )?,
        };
        let (draft, _) = self.call(turn, purpose, user, budget, None, phase).await?;
        if !self.args.config.modules.sr {
            return Ok(draft);
        }
        let name = self.name().to_string();
        turn.step("draft", &name, draft.clone(), None);
        // Self-Refinement: sub-questions → facts from the script → an answer that includes them.
        let user = self
            .args
            .prompts
            .render("sr_decompose", context! { question => question })?;
        let s = schema(
            "sub_questions",
            json!({"type": "object", "properties": {"sub_questions": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 4}}, "required": ["sub_questions"], "additionalProperties": false}),
        );
        let (_, v) = self
            .call(turn, "sr_decompose", user, 200, Some(s), phase)
            .await?;
        let subs: Vec<String> = v
            .as_ref()
            .and_then(|v| v["sub_questions"].as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let facts = self.script_facts(question, &subs);
        turn.step(
            "sr_subquestions",
            &name,
            subs.join("\n"),
            Some(json!({ "facts": facts })),
        );
        let missing: Vec<&String> = facts
            .iter()
            .filter(|f| !draft.contains(f.as_str()))
            .collect();
        if missing.is_empty() {
            return Ok(draft);
        }
        let user = self.args.prompts.render(
            "sr_refine",
            context! { draft => draft, facts => missing, question => question, murderer => self.murderer },
        )?;
        let (refined, _) = self
            .call(turn, "sr_refine", user, budget + budget / 2, None, phase)
            .await?;
        Ok(refined)
    }

    /// The script sentences most relevant to the question and each sub-question (lexical retrieval over
    /// the agent's own script; the paper leaves the retriever open).
    pub(super) fn script_facts(&self, question: &str, subs: &[String]) -> Vec<String> {
        let index = Bm25::new(&self.facts);
        let mut out: Vec<String> = Vec::new();
        for q in std::iter::once(question).chain(subs.iter().map(String::as_str)) {
            let scores = index.scores(q);
            let mut order: Vec<usize> = (0..scores.len()).filter(|&i| scores[i] > 0.0).collect();
            order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
            for i in order.into_iter().take(SR_FACTS_PER_SUBQUESTION) {
                if !out.contains(&self.facts[i]) {
                    out.push(self.facts[i].clone());
                }
            }
        }
        out
    }

    /// Self-Verification of one attempt: each fact (sentence) of the answer is checked against the
    /// script. Returns the attempt's score (authenticity first, length as a tie-breaker) and whether it
    /// meets the threshold.
    async fn verify(
        &mut self,
        turn: &mut TurnBuilder,
        answer: &str,
        attempt: u32,
        phase: Phase,
    ) -> Result<(f64, bool), AgentError> {
        let facts: Vec<String> = text::sentences(answer)
            .into_iter()
            .take(SV_MAX_FACTS)
            .collect();
        let s = schema(
            "verification",
            json!({"type": "object", "properties": {"supported": {"type": "boolean"}}, "required": ["supported"], "additionalProperties": false}),
        );
        let mut supported = 0;
        let mut verdicts = Vec::new();
        for f in &facts {
            let user = self
                .args
                .prompts
                .render("sv_check", context! { claim => f })?;
            let (_, v) = self
                .call(turn, "sv_check", user, 20, Some(s.clone()), phase)
                .await?;
            let ok = v
                .as_ref()
                .and_then(|v| v["supported"].as_bool())
                .unwrap_or(false);
            supported += usize::from(ok);
            verdicts.push(ok);
        }
        let n = facts.len();
        let ratio = if n == 0 {
            0.0
        } else {
            supported as f64 / n as f64
        };
        let passed = n > 0 && supported >= SV_MIN_SUPPORTED.min(n) && ratio >= SV_MIN_RATIO;
        let words = answer
            .split_whitespace()
            .count()
            .max(answer.chars().count() / 2);
        let score = ratio + 0.1 * (words.min(150) as f64 / 150.0);
        let name = self.name().to_string();
        turn.step(
            "sv_attempt",
            &name,
            format!("attempt {}: {supported}/{n} facts supported", attempt + 1),
            Some(json!({ "attempt": attempt + 1, "supported": supported, "facts": n, "verdicts": verdicts, "passed": passed, "score": score })),
        );
        Ok((score, passed))
    }

    async fn ask(
        &mut self,
        turn: &mut TurnBuilder,
        target: Option<String>,
        candidates: &[String],
    ) -> Result<(String, String), AgentError> {
        let victims = self.victim_names();
        let query = match &target {
            Some(t) => self.lines().query_about(t, &victims),
            None => self.lines().query_suspects(&victims),
        };
        let memory = self.recall(turn, &query, Phase::Gameplay).await?;
        let choices: Vec<String> = match &target {
            Some(t) => vec![t.clone()],
            None => candidates.to_vec(),
        };
        let user = self.args.prompts.render(
            "ask",
            context! { memory => memory, target => target, candidates => candidates, victim_names => victims },
        )?;
        self.pick(
            turn,
            "ask",
            user,
            ("target", &choices),
            "question",
            150,
            Phase::Gameplay,
        )
        .await
    }

    async fn vote(
        &mut self,
        turn: &mut TurnBuilder,
        vote_call: &str,
        candidates: &[String],
    ) -> Result<(String, String), AgentError> {
        let victims = self.victim_names();
        let memory = self
            .recall(turn, &self.lines().query_vote(&victims), Phase::Gameplay)
            .await?;
        let user = self.args.prompts.render(
            "vote",
            context! { memory => memory, vote_call => vote_call, candidates => candidates, victim_names => victims },
        )?;
        self.pick(
            turn,
            "vote",
            user,
            ("vote", candidates),
            "reason",
            150,
            Phase::Gameplay,
        )
        .await
    }

    async fn inferential(
        &mut self,
        turn: &mut TurnBuilder,
        question: &str,
        options: &[String],
    ) -> Result<(String, String), AgentError> {
        let memory = self
            .recall(
                turn,
                &format!("{question} {}", options.join(" ")),
                Phase::Evaluation,
            )
            .await?;
        let (letters, opts) = answers::lettered(options);
        let user = self.args.prompts.render(
            "eval_inferential",
            context! { memory => memory, options => opts, question => question },
        )?;
        self.pick(
            turn,
            "eval_inferential",
            user,
            ("answer", &letters),
            "rationale",
            200,
            Phase::Evaluation,
        )
        .await
    }

    /// One structured call that chooses one of `choices` (field `key`) and says why (field `text_key`):
    /// the shape of asking, voting and multiple choice. The gateway has already checked the choice is one
    /// of the allowed values.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn pick(
        &mut self,
        turn: &mut TurnBuilder,
        purpose: &str,
        user: String,
        (key, choices): (&str, &[String]),
        text_key: &str,
        max_tokens: u32,
        phase: Phase,
    ) -> Result<(String, String), AgentError> {
        let s = schema(
            purpose,
            json!({"type": "object", "properties": {key: {"type": "string", "enum": choices}, text_key: {"type": "string"}}, "required": [key, text_key], "additionalProperties": false}),
        );
        let (_, v) = self
            .call(turn, purpose, user, max_tokens, Some(s), phase)
            .await?;
        let v = v.unwrap_or(Value::Null);
        let chosen = v[key]
            .as_str()
            .map(str::to_string)
            .or_else(|| choices.first().cloned())
            .unwrap_or_default();
        Ok((chosen, v[text_key].as_str().unwrap_or_default().to_string()))
    }

    pub(super) fn lines(&self) -> crate::game::HostLines {
        crate::game::HostLines(self.args.script.language)
    }

    pub(super) fn victim_names(&self) -> String {
        let names: Vec<&str> = self
            .args
            .script
            .victims
            .iter()
            .map(|v| v.name.as_str())
            .collect();
        self.lines().join(&names)
    }
}
