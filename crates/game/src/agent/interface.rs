//! The one interface every framework implements. The character actor turns each request into one call
//! of these methods on its agent; a framework overrides what it does, and the defaults refuse the rest
//! (the CLI refuses unsupported protocol/framework pairs before any call) or, for evaluation, answer
//! through the shared evaluation prompts (`answers.rs`).
//!
//! The methods return boxed futures so that the actor can hold any framework as `Box<dyn Agent>`.
//!
//! The evaluation answers take `&self`: they read the agent's state but never change it (the papers ask
//! every question of the same finished game), so one character answers its questions together, each
//! through a forked [`Context`], while the agent is shared between them. Hence `Agent: Sync`.

use futures::future::BoxFuture;
use serde_json::Value;

use super::answers;
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

/// What an agent's request resolves to.
pub type AgentFuture<'a, T> = BoxFuture<'a, Result<T, AgentError>>;

/// A refusal, as a future.
fn refuse<'a, T: Send + 'a>(cx: &Context, request: &'static str) -> AgentFuture<'a, T> {
    let e = cx.unsupported(request);
    Box::pin(async move { Err(e) })
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
    fn introduce<'a>(
        &'a mut self,
        cx: &'a mut Context,
        host_line: &'a str,
    ) -> AgentFuture<'a, String> {
        let _ = host_line;
        refuse(cx, "introduce itself")
    }

    /// A question: to `target` if given, else to one of `candidates`. Returns (target, question).
    fn ask<'a>(
        &'a mut self,
        cx: &'a mut Context,
        target: Option<String>,
        candidates: &'a [String],
        round: u32,
    ) -> AgentFuture<'a, (String, String)> {
        let _ = (target, candidates, round);
        refuse(cx, "ask questions")
    }

    /// An answer to `asker`'s question.
    fn answer<'a>(
        &'a mut self,
        cx: &'a mut Context,
        asker: &'a str,
        question: &'a str,
    ) -> AgentFuture<'a, String> {
        let _ = (asker, question);
        refuse(cx, "answer in the game")
    }

    /// A vote among `candidates`. Returns (target, reason).
    fn vote<'a>(
        &'a mut self,
        cx: &'a mut Context,
        vote_call: &'a str,
        candidates: &'a [String],
    ) -> AgentFuture<'a, (String, String)> {
        let _ = (vote_call, candidates);
        refuse(cx, "vote")
    }

    /// Act `act` was handed out; the view and the system prompt already hold it.
    fn released<'a>(&'a mut self, cx: &'a mut Context, act: u32) -> AgentFuture<'a, ()> {
        let _ = (cx, act);
        Box::pin(async { Ok(()) })
    }

    /// MIRAGE open conversation: one speech turn.
    fn converse<'a>(
        &'a mut self,
        cx: &'a mut Context,
        host_line: &'a str,
        iteration: u32,
    ) -> AgentFuture<'a, String> {
        let _ = (host_line, iteration);
        refuse(cx, "hold an open conversation")
    }

    /// MIRAGE interaction. Returns what the character says and the action's data.
    fn interact<'a>(
        &'a mut self,
        cx: &'a mut Context,
        candidates: &'a [String],
        clues: &'a [ClueChoice],
    ) -> AgentFuture<'a, (String, Value)> {
        let _ = (candidates, clues);
        refuse(cx, "interact with the environment")
    }

    /// MIRAGE trust and suspicion scores of `others`.
    fn score<'a>(
        &'a mut self,
        cx: &'a mut Context,
        others: &'a [String],
    ) -> AgentFuture<'a, (String, Value)> {
        let _ = others;
        refuse(cx, "score trust and suspicion")
    }

    /// MIRAGE accusation. Returns (accused, reason).
    fn accuse<'a>(
        &'a mut self,
        cx: &'a mut Context,
        candidates: &'a [String],
    ) -> AgentFuture<'a, (String, String)> {
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
    fn answer_factual<'a>(
        &'a self,
        cx: &'a mut Context,
        question: &'a str,
    ) -> AgentFuture<'a, String> {
        Box::pin(answers::factual(cx, question))
    }

    /// Evaluation: an inferential multiple-choice question. Returns (letter, rationale).
    fn answer_inferential<'a>(
        &'a self,
        cx: &'a mut Context,
        question: &'a str,
        options: &'a [String],
    ) -> AgentFuture<'a, (String, String)> {
        Box::pin(answers::inferential(cx, question, options))
    }

    /// Evaluation: a WellPlay multiple-choice question (with `multiple`, `picks` letters when the
    /// question says how many). Returns (letters, reason).
    fn answer_choice<'a>(
        &'a self,
        cx: &'a mut Context,
        question: &'a str,
        options: &'a [String],
        multiple: bool,
        picks: Option<u32>,
    ) -> AgentFuture<'a, (Vec<String>, String)> {
        Box::pin(answers::choice(cx, question, options, multiple, picks))
    }
}
