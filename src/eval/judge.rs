//! Judges of factual answers: lexical by default, an LLM when `--judge-model` is given.

use std::sync::Arc;

use minijinja::context;
use serde_json::json;

use crate::agent::Prompts;
use crate::llm::{CallTags, ChatRequest, Gateway, LlmError, Message, Phase, ResponseSchema, Usage};
use crate::text;

/// Default pass mark of the lexical judge on [`text::window_f1`].
pub const DEFAULT_LEXICAL_THRESHOLD: f64 = 0.5;

/// How factual answers are graded.
#[derive(Clone)]
pub enum Judge {
    /// Correct when the best reference-sized window of the answer has token F1 ≥ threshold.
    Lexical { threshold: f64 },
    /// An LLM decides, through the gateway, under the evaluation phase.
    Llm {
        gateway: Gateway,
        model: String,
        prompts: Arc<Prompts>,
        /// Language of the judge's own system line (the template is already per language).
        lang: crate::script::Language,
    },
}

/// One graded answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub correct: bool,
    /// Window F1 for the lexical judge; 1.0/0.0 for an LLM judge.
    pub score: f64,
    pub usage: Usage,
}

impl Judge {
    /// How the judge is described in results.
    pub fn describe(&self) -> String {
        match self {
            Judge::Lexical { threshold } => format!("lexical window-F1 >= {threshold}"),
            Judge::Llm { model, .. } => format!("llm:{model}"),
        }
    }

    /// Grades `candidate` against `reference`.
    pub async fn grade(
        &self,
        game: &str,
        seq: u64,
        question: &str,
        reference: &str,
        candidate: &str,
    ) -> Result<Verdict, LlmError> {
        match self {
            Judge::Lexical { threshold } => {
                let score = text::window_f1(candidate, reference);
                Ok(Verdict {
                    correct: score >= *threshold,
                    score,
                    usage: Usage::default(),
                })
            }
            Judge::Llm {
                gateway,
                model,
                prompts,
                lang,
            } => {
                let user = prompts
                    .render("judge_factual", context! { question => question, reference => reference, candidate => candidate })
                    .map_err(|e| LlmError::Unparseable { purpose: "judge_factual".into(), schema: "judgement".into(), attempts: 0, reason: e.to_string(), usage: Usage::default() })?;
                let req = ChatRequest {
                    model: model.clone(),
                    messages: vec![
                        Message::system(crate::game::HostLines(*lang).judge_persona()),
                        Message::user(user),
                    ],
                    temperature: 0.0,
                    top_p: 1.0,
                    max_tokens: 20,
                    schema: Some(ResponseSchema::json(
                        "judgement",
                        json!({"type": "object", "properties": {"correct": {"type": "boolean"}}, "required": ["correct"], "additionalProperties": false}),
                    )),
                    logprobs: false,
                    sample: seq,
                };
                let tags = CallTags {
                    game: game.into(),
                    agent: "judge".into(),
                    framework: "judge".into(),
                    phase: Phase::Evaluation,
                    purpose: "judge_factual".into(),
                };
                let out = gateway.chat(req, tags).await?;
                let correct = out
                    .json
                    .as_ref()
                    .and_then(|v| v["correct"].as_bool())
                    .unwrap_or(false);
                Ok(Verdict {
                    correct,
                    score: if correct { 1.0 } else { 0.0 },
                    usage: out.usage,
                })
            }
        }
    }
}
