//! Judges: of factual answers and of inferential rationales (lexical by default, an LLM when a judge
//! model is given), and of MIRAGE's abilities and script reconstructions (an LLM only: there is no
//! honest lexical stand-in for "how well did this player reason").
//!
//! Every judge call goes through the gateway under the evaluation phase, tagged `agent = judge`, so the
//! judging bill is separate from the gameplay bill.

use std::sync::Arc;

use minijinja::context;
use serde::Serialize;
use serde_json::{json, Value};

use super::EvalError;
use crate::agent::Prompts;
use crate::agent::RequestError;
use sleuth_base::text;
use sleuth_llm::{CallTags, ChatRequest, Gateway, LlmError, Message, Phase, ResponseSchema, Usage};

/// Default pass mark of the lexical judge on [`text::window_f1`].
pub const DEFAULT_LEXICAL_THRESHOLD: f64 = 0.5;

/// Judge prompt purposes (`prompts/judge/<lang>/`).
pub const JUDGE_PURPOSES: &[&str] = &["factual", "rationale", "ability", "reconstruct"];

/// A judge call that failed fails the evaluation, reported as the judge's (not a player's) error.
pub(super) fn judge_failed(e: LlmError) -> EvalError {
    EvalError::Request(RequestError::Agent {
        agent: "judge".into(),
        error: Box::new(e.into()),
    })
}

/// The judge of each metric: factual answers, inferential rationales, MIRAGE's ICI and SCI.
#[derive(Clone)]
pub struct Judges {
    pub factual: Judge,
    pub rationale: Judge,
    pub mirage: Judge,
}

impl Judges {
    /// Metric → how it was judged, for `result.json` and reports. MIRAGE's ICI and SCI need an LLM
    /// judge; without one they are not computed, and the description says so.
    pub fn describe(&self) -> std::collections::BTreeMap<String, String> {
        let mirage = match &self.mirage {
            Judge::Lexical { .. } => "none (ICI and SCI need --judge-model)".to_string(),
            j => j.describe(),
        };
        let rationale = match &self.rationale {
            Judge::Lexical { .. } => "lexical 1 + 4 x ROUGE-L F".to_string(),
            j => j.describe(),
        };
        [
            ("factual".to_string(), self.factual.describe()),
            ("rationale".to_string(), rationale),
            ("mirage".to_string(), mirage),
        ]
        .into_iter()
        .collect()
    }
}

/// How a metric is graded.
#[derive(Clone)]
pub enum Judge {
    /// Correct when the best reference-sized window of the answer has token F1 ≥ threshold.
    Lexical { threshold: f64 },
    /// An LLM decides, through the gateway, under the evaluation phase.
    Llm(LlmJudge),
}

/// A neutral LLM judge: a model reached through the gateway, with the judge prompts of one language.
#[derive(Clone)]
pub struct LlmJudge {
    pub gateway: Gateway,
    pub model: String,
    pub prompts: Arc<Prompts>,
    /// Language of the judge's own system line (the templates are already per language).
    pub lang: sleuth_script::Language,
}

impl LlmJudge {
    /// One judge call: the template `purpose` rendered with `vars`, a neutral persona, temperature 0,
    /// a JSON reply following `schema`, billed to the evaluation phase as `judge_<purpose>`.
    async fn ask<S: Serialize>(
        &self,
        game: &str,
        sample: u64,
        purpose: &str,
        vars: S,
        schema: Value,
        max_tokens: u32,
    ) -> Result<(Value, Usage), LlmError> {
        let call = format!("judge_{purpose}");
        // A template that fails to render is reported like an unusable reply of that purpose: the
        // evaluation cannot go on, and the message names the template.
        let user = self
            .prompts
            .render(purpose, vars)
            .map_err(|e| LlmError::Unparseable {
                purpose: call.clone(),
                schema: purpose.into(),
                attempts: 0,
                reason: e.to_string(),
                usage: Usage::default(),
            })?;
        let req = ChatRequest {
            model: self.model.clone(),
            messages: vec![
                Message::system(sleuth_script::rules::HostLines(self.lang).judge_persona()),
                Message::user(user),
            ],
            temperature: 0.0,
            top_p: 1.0,
            max_tokens,
            schema: Some(ResponseSchema::json(&call, schema)),
            logprobs: false,
            sample,
            cache_key: None,
        };
        let tags = CallTags {
            game: game.into(),
            agent: "judge".into(),
            framework: "judge".into(),
            phase: Phase::Evaluation,
            purpose: call,
        };
        let out = self.gateway.chat(req, tags).await?;
        Ok((out.json.unwrap_or(Value::Null), out.usage))
    }
}

/// One graded answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub correct: bool,
    /// Window F1 for the lexical judge; 1.0/0.0 for an LLM judge.
    pub score: f64,
    pub usage: Usage,
}

/// A rationale's score on ThinkThrice's 1-5 scale (Table 5), with the cost of getting it.
#[derive(Debug, Clone, PartialEq)]
pub struct RationaleVerdict {
    pub score: u8,
    pub usage: Usage,
}

/// What a MIRAGE judge sees of one character: the truth, the cast, the character's script, the whole
/// public history and the character's own actions.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CharacterView<'a> {
    pub name: &'a str,
    pub truth: &'a str,
    pub cast: Vec<String>,
    pub script: String,
    pub history: Vec<String>,
    pub actions: Vec<String>,
}

impl Judge {
    /// Whether grading calls a model (an LLM judge), and so takes a place under the game's bound.
    pub fn makes_calls(&self) -> bool {
        matches!(self, Judge::Llm(_))
    }

    /// How the judge is described in results.
    pub fn describe(&self) -> String {
        match self {
            Judge::Lexical { threshold } => format!("lexical window-F1 >= {threshold}"),
            Judge::Llm(j) => format!("llm:{}", j.model),
        }
    }

    /// Grades a factual answer `candidate` against `reference`.
    pub async fn grade(
        &self,
        game: &str,
        sample: u64,
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
            Judge::Llm(j) => {
                let schema = json!({"type": "object", "properties": {"correct": {"type": "boolean"}}, "required": ["correct"], "additionalProperties": false});
                let vars = context! { question => question, reference => reference, candidate => candidate };
                let (v, usage) = j.ask(game, sample, "factual", vars, schema, 20).await?;
                let correct = v["correct"].as_bool().unwrap_or(false);
                Ok(Verdict {
                    correct,
                    score: if correct { 1.0 } else { 0.0 },
                    usage,
                })
            }
        }
    }

    /// Scores an inferential answer's rationale against the ground-truth rationale on the 1-5 scale.
    /// The lexical judge maps ROUGE-L F of the two rationales onto the scale (1 + 4F, rounded): a
    /// rationale sharing no premise with the reference scores 1, one that restates it scores 5. It is a
    /// documented stand-in, not the paper's GPT judge; `result.json`'s `judges` says which was used.
    pub async fn grade_rationale(
        &self,
        game: &str,
        sample: u64,
        question: &str,
        reference: &str,
        candidate: &str,
    ) -> Result<RationaleVerdict, LlmError> {
        match self {
            Judge::Lexical { .. } => Ok(RationaleVerdict {
                score: lexical_rationale_score(super::rouge::rouge_l(reference, candidate).f),
                usage: Usage::default(),
            }),
            Judge::Llm(j) => {
                let schema = json!({"type": "object", "properties": {
                    "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
                    "reason": {"type": "string"}
                }, "required": ["score", "reason"], "additionalProperties": false});
                let vars = context! { question => question, reference => reference, candidate => candidate };
                let (v, usage) = j.ask(game, sample, "rationale", vars, schema, 150).await?;
                let score = v["score"]
                    .as_u64()
                    .map(|s| s.clamp(1, 5) as u8)
                    .unwrap_or(1);
                Ok(RationaleVerdict { score, usage })
            }
        }
    }

    /// MIRAGE ICI and SCI: one ability of one character scored 0-20 by a neutral LLM judge (MIRAGE
    /// Appendix, "Prompt of ICI evaluation"). `None` for the lexical judge.
    pub async fn score_ability(
        &self,
        game: &str,
        sample: u64,
        view: &CharacterView<'_>,
        ability: &str,
    ) -> Result<Option<(f64, Usage)>, LlmError> {
        let Judge::Llm(j) = self else {
            return Ok(None);
        };
        let schema = json!({"type": "object", "properties": {
            "analysis": {"type": "string"},
            "score": {"type": "integer", "minimum": 0, "maximum": 20}
        }, "required": ["analysis", "score"], "additionalProperties": false});
        let vars = context! { ability => ability, ..minijinja::Value::from_serialize(view) };
        let (v, usage) = j.ask(game, sample, "ability", vars, schema, 300).await?;
        let score = v["score"].as_f64().unwrap_or(0.0).clamp(0.0, 20.0);
        Ok(Some((score, usage)))
    }

    /// MIRAGE SCI: the judge writes one part of the character's script (`part`: `story`, `script`,
    /// `relationship`, `performance`, `purpose`, `ability`, or `all` for the whole) as it can be deduced
    /// from their behaviour alone (MIRAGE Appendix, "Prompt of SCI evaluation"; the reference asks for
    /// each part of the script separately); compared with the original by ROUGE-L. `None` for the
    /// lexical judge.
    pub async fn reconstruct_script(
        &self,
        game: &str,
        sample: u64,
        view: &CharacterView<'_>,
        part: &str,
    ) -> Result<Option<(String, Usage)>, LlmError> {
        let Judge::Llm(j) = self else {
            return Ok(None);
        };
        let schema = json!({"type": "object", "properties": {
            "reasoning": {"type": "string"},
            "script": {"type": "string"}
        }, "required": ["reasoning", "script"], "additionalProperties": false});
        let vars = context! { part => part, ..minijinja::Value::from_serialize(view) };
        let (v, usage) = j
            .ask(game, sample, "reconstruct", vars, schema, 600)
            .await?;
        let script = v["script"].as_str().unwrap_or_default().to_string();
        Ok(Some((script, usage)))
    }
}

/// The lexical stand-in for the 1-5 rationale score: 1 + 4 × ROUGE-L F, rounded.
pub fn lexical_rationale_score(rouge_l_f: f64) -> u8 {
    (1.0 + 4.0 * rouge_l_f.clamp(0.0, 1.0)).round() as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_rationale_scores_span_the_scale() {
        assert_eq!(lexical_rationale_score(0.0), 1);
        assert_eq!(lexical_rationale_score(0.1), 1);
        assert_eq!(lexical_rationale_score(0.5), 3);
        assert_eq!(lexical_rationale_score(0.9), 5);
        assert_eq!(lexical_rationale_score(1.0), 5);
    }
}
