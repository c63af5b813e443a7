//! The one interface every framework implements. The character actor turns each request into one call
//! of these methods on its agent; a framework overrides what it does, and the defaults refuse the rest
//! (the CLI refuses unsupported protocol/framework pairs before any call) or, where most frameworks do
//! the same, do that: the vote is the baselines' (`baseline.rs`), and evaluation answers go through the
//! shared evaluation prompts (`answers.rs`).
//!
//! Frameworks implement [`Agent`] with plain `async fn`s and keep only what differs between them. A
//! trait with `async fn`s cannot be a trait object, so the actor holds its agent as
//! `Box<dyn DynAgent>`: [`DynAgent`] is [`Agent`] with boxed futures, implemented once below for every
//! agent, which is the only place the boxing is written.
//!
//! The evaluation answers take `&self`: they read the agent's state but never change it (the papers ask
//! every question of the same finished game), so one character answers its questions together, each
//! through a forked [`Context`], while the agent is shared between them. Hence `Agent: Sync`.

use std::future::{ready, Future, Ready};

use futures::future::BoxFuture;
use serde_json::Value;

use super::answers;
use super::baseline;
use super::config::AgentError;
use super::context::Context;
use super::prompts::PromptError;

/// A clue a MIRAGE character may investigate.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ClueChoice {
    pub id: String,
    /// Where or about whom it is found: what the character chooses by.
    pub place: String,
}

/// What an agent's request resolves to: a future of its result that may move between threads (the
/// actor's handler may resume on any of the runtime's). Frameworks never name it: an `async fn` of the
/// right output is one, and the compiler checks that it is `Send`.
pub trait Reply<T>: Future<Output = Result<T, AgentError>> + Send {}

impl<T, F: Future<Output = Result<T, AgentError>> + Send> Reply<T> for F {}

/// A refusal, as a reply.
fn refuse<T>(cx: &Context, request: &'static str) -> Ready<Result<T, AgentError>> {
    ready(Err(cx.unsupported(request)))
}

/// The kinds of evaluation question (the character's `Evaluate` batch holds any mix of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalKind {
    Factual,
    Inferential,
    Choice,
}

/// One framework's decisions for one character; its own state lives in the implementing type.
pub trait Agent: Send + Sync {
    /// The system prompt for the character's script as released so far. The omniscient reference
    /// overrides this to add every character's script.
    fn system_prompt(&self, cx: &Context) -> Result<String, PromptError> {
        cx.render_system(minijinja::context! {})
    }

    /// Self-introduction on the host's request.
    fn introduce(&mut self, cx: &mut Context, host_line: &str) -> impl Reply<String> {
        let _ = host_line;
        refuse(cx, "introduce itself")
    }

    /// A question: to `target` if given, else to one of `candidates`. Returns (target, question).
    fn ask(
        &mut self,
        cx: &mut Context,
        target: Option<String>,
        candidates: &[String],
        round: u32,
    ) -> impl Reply<(String, String)> {
        let _ = (target, candidates, round);
        refuse(cx, "ask questions")
    }

    /// An answer to `asker`'s question.
    fn answer(&mut self, cx: &mut Context, asker: &str, question: &str) -> impl Reply<String> {
        let _ = (asker, question);
        refuse(cx, "answer in the game")
    }

    /// A vote among `candidates`. Returns (target, reason). By default the baselines' vote
    /// (`baseline.rs`): one choice from the top-k memories about the crime, with the framework's own
    /// `vote` prompt. Werewolf, O-CoT and the no-play references vote so; every other framework
    /// overrides it.
    fn vote(
        &mut self,
        cx: &mut Context,
        vote_call: &str,
        candidates: &[String],
    ) -> impl Reply<(String, String)> {
        baseline::vote(cx, vote_call, candidates)
    }

    /// Act `act` was handed out; the view and the system prompt already hold it.
    fn released(&mut self, cx: &mut Context, act: u32) -> impl Reply<()> {
        let _ = (cx, act);
        ready(Ok(()))
    }

    /// MIRAGE open conversation: one speech turn.
    fn converse(
        &mut self,
        cx: &mut Context,
        host_line: &str,
        iteration: u32,
    ) -> impl Reply<String> {
        let _ = (host_line, iteration);
        refuse(cx, "hold an open conversation")
    }

    /// MIRAGE interaction. Returns what the character says and the action's data.
    fn interact(
        &mut self,
        cx: &mut Context,
        candidates: &[String],
        clues: &[ClueChoice],
    ) -> impl Reply<(String, Value)> {
        let _ = (candidates, clues);
        refuse(cx, "interact with the environment")
    }

    /// MIRAGE trust and suspicion scores of `others`.
    fn score(&mut self, cx: &mut Context, others: &[String]) -> impl Reply<(String, Value)> {
        let _ = others;
        refuse(cx, "score trust and suspicion")
    }

    /// MIRAGE accusation. Returns (accused, reason).
    fn accuse(&mut self, cx: &mut Context, candidates: &[String]) -> impl Reply<(String, String)> {
        let _ = candidates;
        refuse(cx, "accuse")
    }

    /// How many model calls one evaluation answer of `kind` makes, when that number is fixed (`None`
    /// when it depends on the answers, as with ThinkThrice's Self-Refinement and Self-Verification).
    /// The character runs a batch of evaluation answers together: an answer of fixed size takes the
    /// character's next sample indices, as it would have answering alone; any other gets a sample
    /// sequence of its own (`llm::SampleCounter::fork`). The shared evaluation answers (`answers.rs`)
    /// make one call each.
    fn eval_calls(&self, cx: &Context, kind: EvalKind) -> Option<u64> {
        let _ = (cx, kind);
        Some(1)
    }

    /// Evaluation: a factual question, answered briefly.
    fn answer_factual(&self, cx: &mut Context, question: &str) -> impl Reply<String> {
        answers::factual(cx, question)
    }

    /// Evaluation: an inferential multiple-choice question. Returns (letter, rationale).
    fn answer_inferential(
        &self,
        cx: &mut Context,
        question: &str,
        options: &[String],
    ) -> impl Reply<(String, String)> {
        answers::inferential(cx, question, options)
    }

    /// Evaluation: a WellPlay multiple-choice question (with `multiple`, `picks` letters when the
    /// question says how many). Returns (letters, reason).
    fn answer_choice(
        &self,
        cx: &mut Context,
        question: &str,
        options: &[String],
        multiple: bool,
        picks: Option<u32>,
    ) -> impl Reply<(Vec<String>, String)> {
        answers::choice(cx, question, options, multiple, picks)
    }
}

/// A boxed [`Reply`], the form a trait object can return.
pub type AgentFuture<'a, T> = BoxFuture<'a, Result<T, AgentError>>;

/// [`Agent`] as a trait object, so that the actor can hold any framework's agent as
/// `Box<dyn DynAgent>`: each method boxes the reply of the [`Agent`] method of the same name. It is
/// implemented for every agent below and nowhere else; frameworks implement [`Agent`].
pub trait DynAgent: Send + Sync {
    fn system_prompt(&self, cx: &Context) -> Result<String, PromptError>;
    fn introduce<'a>(
        &'a mut self,
        cx: &'a mut Context,
        host_line: &'a str,
    ) -> AgentFuture<'a, String>;
    fn ask<'a>(
        &'a mut self,
        cx: &'a mut Context,
        target: Option<String>,
        candidates: &'a [String],
        round: u32,
    ) -> AgentFuture<'a, (String, String)>;
    fn answer<'a>(
        &'a mut self,
        cx: &'a mut Context,
        asker: &'a str,
        question: &'a str,
    ) -> AgentFuture<'a, String>;
    fn vote<'a>(
        &'a mut self,
        cx: &'a mut Context,
        vote_call: &'a str,
        candidates: &'a [String],
    ) -> AgentFuture<'a, (String, String)>;
    fn released<'a>(&'a mut self, cx: &'a mut Context, act: u32) -> AgentFuture<'a, ()>;
    fn converse<'a>(
        &'a mut self,
        cx: &'a mut Context,
        host_line: &'a str,
        iteration: u32,
    ) -> AgentFuture<'a, String>;
    fn interact<'a>(
        &'a mut self,
        cx: &'a mut Context,
        candidates: &'a [String],
        clues: &'a [ClueChoice],
    ) -> AgentFuture<'a, (String, Value)>;
    fn score<'a>(
        &'a mut self,
        cx: &'a mut Context,
        others: &'a [String],
    ) -> AgentFuture<'a, (String, Value)>;
    fn accuse<'a>(
        &'a mut self,
        cx: &'a mut Context,
        candidates: &'a [String],
    ) -> AgentFuture<'a, (String, String)>;
    fn eval_calls(&self, cx: &Context, kind: EvalKind) -> Option<u64>;
    fn answer_factual<'a>(
        &'a self,
        cx: &'a mut Context,
        question: &'a str,
    ) -> AgentFuture<'a, String>;
    fn answer_inferential<'a>(
        &'a self,
        cx: &'a mut Context,
        question: &'a str,
        options: &'a [String],
    ) -> AgentFuture<'a, (String, String)>;
    fn answer_choice<'a>(
        &'a self,
        cx: &'a mut Context,
        question: &'a str,
        options: &'a [String],
        multiple: bool,
        picks: Option<u32>,
    ) -> AgentFuture<'a, (Vec<String>, String)>;
}

impl<A: Agent> DynAgent for A {
    fn system_prompt(&self, cx: &Context) -> Result<String, PromptError> {
        Agent::system_prompt(self, cx)
    }

    fn introduce<'a>(
        &'a mut self,
        cx: &'a mut Context,
        host_line: &'a str,
    ) -> AgentFuture<'a, String> {
        Box::pin(Agent::introduce(self, cx, host_line))
    }

    fn ask<'a>(
        &'a mut self,
        cx: &'a mut Context,
        target: Option<String>,
        candidates: &'a [String],
        round: u32,
    ) -> AgentFuture<'a, (String, String)> {
        Box::pin(Agent::ask(self, cx, target, candidates, round))
    }

    fn answer<'a>(
        &'a mut self,
        cx: &'a mut Context,
        asker: &'a str,
        question: &'a str,
    ) -> AgentFuture<'a, String> {
        Box::pin(Agent::answer(self, cx, asker, question))
    }

    fn vote<'a>(
        &'a mut self,
        cx: &'a mut Context,
        vote_call: &'a str,
        candidates: &'a [String],
    ) -> AgentFuture<'a, (String, String)> {
        Box::pin(Agent::vote(self, cx, vote_call, candidates))
    }

    fn released<'a>(&'a mut self, cx: &'a mut Context, act: u32) -> AgentFuture<'a, ()> {
        Box::pin(Agent::released(self, cx, act))
    }

    fn converse<'a>(
        &'a mut self,
        cx: &'a mut Context,
        host_line: &'a str,
        iteration: u32,
    ) -> AgentFuture<'a, String> {
        Box::pin(Agent::converse(self, cx, host_line, iteration))
    }

    fn interact<'a>(
        &'a mut self,
        cx: &'a mut Context,
        candidates: &'a [String],
        clues: &'a [ClueChoice],
    ) -> AgentFuture<'a, (String, Value)> {
        Box::pin(Agent::interact(self, cx, candidates, clues))
    }

    fn score<'a>(
        &'a mut self,
        cx: &'a mut Context,
        others: &'a [String],
    ) -> AgentFuture<'a, (String, Value)> {
        Box::pin(Agent::score(self, cx, others))
    }

    fn accuse<'a>(
        &'a mut self,
        cx: &'a mut Context,
        candidates: &'a [String],
    ) -> AgentFuture<'a, (String, String)> {
        Box::pin(Agent::accuse(self, cx, candidates))
    }

    fn eval_calls(&self, cx: &Context, kind: EvalKind) -> Option<u64> {
        Agent::eval_calls(self, cx, kind)
    }

    fn answer_factual<'a>(
        &'a self,
        cx: &'a mut Context,
        question: &'a str,
    ) -> AgentFuture<'a, String> {
        Box::pin(Agent::answer_factual(self, cx, question))
    }

    fn answer_inferential<'a>(
        &'a self,
        cx: &'a mut Context,
        question: &'a str,
        options: &'a [String],
    ) -> AgentFuture<'a, (String, String)> {
        Box::pin(Agent::answer_inferential(self, cx, question, options))
    }

    fn answer_choice<'a>(
        &'a self,
        cx: &'a mut Context,
        question: &'a str,
        options: &'a [String],
        multiple: bool,
        picks: Option<u32>,
    ) -> AgentFuture<'a, (Vec<String>, String)> {
        Box::pin(Agent::answer_choice(
            self, cx, question, options, multiple, picks,
        ))
    }
}
