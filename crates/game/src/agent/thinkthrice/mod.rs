//! The ThinkThrice agent: every answer goes through Memory Retrieval, Self-Refinement and
//! Self-Verification (MR → SR → SV(N)), each toggled by `--modules`.
//!
//! Introductions, in-game answers and factual evaluation answers run the whole pipeline
//! ([`respond`]); questions, votes and inferential answers are one structured choice from the recalled
//! memories. Multiple choice goes through the shared evaluation prompts like every other framework.

mod refine;
mod verify;

use minijinja::context;

use super::answers;
use super::context::Context;
use super::interface::{Agent, EvalKind};
use super::AgentError;
use sleuth_llm::Phase;

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

/// The ThinkThrice agent; the pipeline keeps no state between requests.
#[derive(Debug, Default)]
pub struct ThinkThrice;

impl Agent for ThinkThrice {
    async fn introduce(&mut self, cx: &mut Context, host_line: &str) -> Result<String, AgentError> {
        respond(cx, "introduce", host_line, "host", Phase::Gameplay).await
    }

    /// One structured choice of whom to ask and what, from the memories about the target (or about the
    /// suspects, when the agent chooses).
    async fn ask(
        &mut self,
        cx: &mut Context,
        target: Option<String>,
        candidates: &[String],
        _round: u32,
    ) -> Result<(String, String), AgentError> {
        let victims = cx.victim_names();
        let query = match &target {
            Some(t) => cx.lines().query_about(t, &victims),
            None => cx.lines().query_suspects(&victims),
        };
        let memory = recall(cx, &query, Phase::Gameplay).await?;
        let choices: Vec<String> = match &target {
            Some(t) => vec![t.clone()],
            None => candidates.to_vec(),
        };
        let user = cx.prompts().render(
            "ask",
            context! { memory => memory, target => target, candidates => candidates, victim_names => victims },
        )?;
        cx.pick(
            "ask",
            user,
            ("target", &choices),
            "question",
            150,
            Phase::Gameplay,
        )
        .await
    }

    async fn answer(
        &mut self,
        cx: &mut Context,
        asker: &str,
        question: &str,
    ) -> Result<String, AgentError> {
        respond(cx, "answer", question, asker, Phase::Gameplay).await
    }

    /// One structured choice among `candidates`, from the memories about the crime.
    async fn vote(
        &mut self,
        cx: &mut Context,
        vote_call: &str,
        candidates: &[String],
    ) -> Result<(String, String), AgentError> {
        let victims = cx.victim_names();
        let query = cx.lines().query_vote(&victims);
        let memory = recall(cx, &query, Phase::Gameplay).await?;
        let user = cx.prompts().render(
            "vote",
            context! {
                memory => memory, vote_call => vote_call, candidates => candidates, victim_names => victims,
                suspects => cx.view().suspects(),
            },
        )?;
        cx.pick_vote(user, candidates).await
    }

    /// A factual answer goes through SR and SV when they are on, whose calls depend on the answers; an
    /// inferential answer is one choice.
    fn eval_calls(&self, cx: &Context, kind: EvalKind) -> Option<u64> {
        let m = cx.config().modules;
        match kind {
            EvalKind::Factual if m.sr || m.sv.is_some() => None,
            _ => Some(1),
        }
    }

    async fn answer_factual(&self, cx: &mut Context, question: &str) -> Result<String, AgentError> {
        respond(cx, "eval_factual", question, "evaluator", Phase::Evaluation).await
    }

    /// One structured choice of a letter, from the memories about the question and its options.
    async fn answer_inferential(
        &self,
        cx: &mut Context,
        question: &str,
        options: &[String],
    ) -> Result<(String, String), AgentError> {
        let query = format!("{question} {}", options.join(" "));
        let memory = recall(cx, &query, Phase::Evaluation).await?;
        let (letters, opts) = answers::lettered(options);
        let user = cx.prompts().render(
            "eval_inferential",
            context! { memory => memory, options => opts, question => question },
        )?;
        answers::pick_letter(cx, "eval_inferential", user, &letters).await
    }
}

/// With MR on: the agent's top-k memories for `query`, rendered as a prompt block, and a private
/// `memory_recall` step. With MR off: an empty block (the agent is memoryless).
async fn recall(cx: &mut Context, query: &str, phase: Phase) -> Result<String, AgentError> {
    if !cx.config().modules.mr {
        return Ok(String::new());
    }
    let texts = cx.recall_texts(query, phase).await?;
    Ok(cx
        .prompts()
        .render("memory", context! { records => texts })?)
}

/// Answers a question through the ThinkThrice pipeline: draft (with memory), then Self-Refinement,
/// then Self-Verification with up to N attempts, keeping the best attempt.
async fn respond(
    cx: &mut Context,
    purpose: &str,
    question: &str,
    asker: &str,
    phase: Phase,
) -> Result<String, AgentError> {
    let memory = recall(cx, question, phase).await?;
    let attempts = cx.config().modules.sv.unwrap_or(1);
    let mut best: Option<(f64, String)> = None;
    for attempt in 0..attempts {
        let answer = refine::draft_and_refine(cx, purpose, question, asker, &memory, phase).await?;
        let Some(_) = cx.config().modules.sv else {
            return Ok(answer);
        };
        let (score, passed) = verify::verify(cx, &answer, attempt, phase).await?;
        if best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((score, answer));
        }
        if passed {
            break;
        }
    }
    Ok(best.map(|b| b.1).unwrap_or_default())
}
