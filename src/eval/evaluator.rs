//! The evaluator actor: asks every agent the script's questions after the game and grades the answers.
//!
//! Factual questions are split by whose script they come from (ThinkThrice Table 4): the agent's own
//! (Own), another civilian's (CQ) or the murderer's (MQ). Accuracies are micro-averages over all answers
//! of a category across agents. Every answer and verdict is a transcript event (private to the agent),
//! so a report can always be traced back to what was said.

use std::collections::BTreeMap;
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde_json::json;

use super::formulas::informed_correct;
use super::judge::judge_failed;
use super::judge::Judges;
use super::scores::{ChoiceScores, ChoiceTally, FactualScores, MirageOutcome, MirageScores};
use super::EvalError;
use crate::agent::{request_turn, CharacterMsg};
use crate::llm::SampleCounter;
use crate::script::{option_letter, Script};
use crate::transcript::{Draft, Transcript};

/// What evaluation found.
#[derive(Debug, Clone, Default)]
pub struct EvalReport {
    pub factual: FactualScores,
    pub inferential_accuracy: Option<f64>,
    /// Right option and a rationale scored at or above the threshold.
    pub informed_accuracy: Option<f64>,
    /// Mean rationale score (1-5).
    pub rationale_score: Option<f64>,
    /// WellPlay multiple choice, when the script has questions for the players.
    pub choice: Option<ChoiceScores>,
    /// MIRAGE's metrics, for MIRAGE games.
    pub mirage: Option<MirageScores>,
}

/// Messages to the evaluator.
pub enum EvaluatorMsg {
    /// Evaluate every agent, appending to the transcript (returned even on failure).
    Evaluate {
        transcript: Transcript,
        /// What the MIRAGE protocol recorded (trust, suspicion, investigations), for its metrics.
        mirage: Option<MirageOutcome>,
        reply: RpcReplyPort<(Transcript, Result<EvalReport, EvalError>)>,
    },
}

/// What the evaluator needs.
pub struct EvaluatorArgs {
    pub script: Arc<Script>,
    pub characters: Vec<(String, ActorRef<CharacterMsg>)>,
    pub judges: Judges,
    /// Times each multiple-choice question is asked.
    pub choice_repeats: u32,
    /// Minimum rationale score for informed accuracy.
    pub rationale_threshold: u8,
    pub game_id: String,
    /// The judge's sample indices: (game seed, `judge`, the judge's own call counter), so a replay
    /// meets the same indices whatever else changed in the transcript.
    pub judge_samples: SampleCounter,
    pub progress: Option<indicatif::ProgressBar>,
}

/// The evaluator actor.
pub struct Evaluator;

impl Actor for Evaluator {
    type Msg = EvaluatorMsg;
    type State = EvaluatorArgs;
    type Arguments = EvaluatorArgs;

    async fn pre_start(
        &self,
        _me: ActorRef<Self::Msg>,
        args: EvaluatorArgs,
    ) -> Result<EvaluatorArgs, ActorProcessingErr> {
        Ok(args)
    }

    async fn handle(
        &self,
        _me: ActorRef<Self::Msg>,
        msg: EvaluatorMsg,
        st: &mut EvaluatorArgs,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            EvaluatorMsg::Evaluate {
                mut transcript,
                mirage,
                reply,
            } => {
                let r = evaluate(st, &mut transcript, mirage.as_ref()).await;
                let r = r.and_then(|rep| transcript.flush().map(|_| rep).map_err(EvalError::from));
                let _ = reply.send((transcript, r));
            }
        }
        Ok(())
    }
}

const STAGE: &str = "evaluation";

fn push(st: &EvaluatorArgs, t: &mut Transcript, d: Draft) -> Result<u64, EvalError> {
    if let Some(pb) = &st.progress {
        pb.inc(1);
    }
    Ok(t.push(STAGE, d)?)
}

async fn evaluate(
    st: &mut EvaluatorArgs,
    t: &mut Transcript,
    mirage: Option<&MirageOutcome>,
) -> Result<EvalReport, EvalError> {
    if let Some(pb) = &st.progress {
        pb.set_message("evaluation");
    }
    // category → (correct, answered)
    let mut tallies: BTreeMap<&'static str, (usize, usize)> = BTreeMap::new();
    let (mut inf_correct, mut inf_total, mut informed) = (0usize, 0usize, 0usize);
    let mut rationale_scores: Vec<f64> = Vec::new();
    for (name, actor) in &st.characters {
        for (qi, q) in st.script.factual.iter().enumerate() {
            let category = if q.character == *name {
                "own"
            } else if st.script.is_murderer(&q.character) {
                "mq"
            } else {
                "cq"
            };
            let question = q.question.clone();
            let mut turn = request_turn(actor, name, |reply| CharacterMsg::AnswerFactual {
                question,
                reply,
            })
            .await?;
            for step in std::mem::take(&mut turn.steps) {
                push(st, t, step)?;
            }
            let seq = st.judge_samples.next_index();
            let verdict = st
                .judges
                .factual
                .grade(&st.game_id, seq, &q.question, &q.answer, &turn.text)
                .await
                .map_err(judge_failed)?;
            let entry = tallies.entry(category).or_default();
            entry.0 += usize::from(verdict.correct);
            entry.1 += 1;
            let data = json!({
                "question": qi, "about": q.character, "category": category, "text": q.question,
                "reference": q.answer, "correct": verdict.correct, "score": verdict.score,
            });
            let d = Draft::private("factual_answer", name, &[name], turn.text.clone())
                .with_usage(turn.usage)
                .with_data(data);
            push(st, t, d)?;
            if !verdict.usage.is_empty() {
                let j = Draft::private(
                    "judgement",
                    "judge",
                    &[name],
                    format!("correct: {}", verdict.correct),
                )
                .with_usage(verdict.usage);
                push(st, t, j)?;
            }
        }
        for (qi, q) in st.script.inferential.iter().enumerate() {
            let (question, options) = (q.question.clone(), q.options.clone());
            let mut turn = request_turn(actor, name, |reply| CharacterMsg::AnswerInferential {
                question,
                options,
                reply,
            })
            .await?;
            for step in std::mem::take(&mut turn.steps) {
                push(st, t, step)?;
            }
            let choice = turn.choice.clone().unwrap_or_default();
            let correct = q.answer_index().is_some_and(|i| option_letter(i) == choice);
            let seq = st.judge_samples.next_index();
            let rationale = st
                .judges
                .rationale
                .grade_rationale(&st.game_id, seq, &q.question, &q.rationale, &turn.text)
                .await
                .map_err(judge_failed)?;
            let is_informed = informed_correct(correct, rationale.score, st.rationale_threshold);
            inf_correct += usize::from(correct);
            informed += usize::from(is_informed);
            inf_total += 1;
            rationale_scores.push(f64::from(rationale.score));
            let data = json!({
                "question": qi, "choice": choice, "answer": q.answer, "correct": correct,
                "rationale_score": rationale.score, "informed": is_informed,
            });
            push(
                st,
                t,
                Draft::private("inferential_answer", name, &[name], turn.text.clone())
                    .with_usage(turn.usage)
                    .with_data(data),
            )?;
            if !rationale.usage.is_empty() {
                let j = Draft::private(
                    "judgement",
                    "judge",
                    &[name],
                    format!("rationale score: {}", rationale.score),
                )
                .with_usage(rationale.usage);
                push(st, t, j)?;
            }
        }
    }
    let choice = choice_questions(st, t).await?;
    let acc = |c: &str| {
        tallies
            .get(c)
            .filter(|x| x.1 > 0)
            .map(|x| x.0 as f64 / x.1 as f64)
    };
    let others = {
        let (c, n) = ["cq", "mq"]
            .iter()
            .filter_map(|k| tallies.get(k))
            .fold((0, 0), |a, x| (a.0 + x.0, a.1 + x.1));
        (n > 0).then(|| c as f64 / n as f64)
    };
    let factual = FactualScores {
        own: acc("own"),
        cq: acc("cq"),
        mq: acc("mq"),
        others,
        counts: tallies.iter().map(|(k, v)| (k.to_string(), v.1)).collect(),
        judge: st.judges.factual.describe(),
    };
    Ok(EvalReport {
        factual,
        inferential_accuracy: (inf_total > 0).then(|| inf_correct as f64 / inf_total as f64),
        informed_accuracy: (inf_total > 0).then(|| informed as f64 / inf_total as f64),
        rationale_score: super::stats::mean(&rationale_scores),
        choice,
        mirage: match mirage {
            Some(outcome) => Some(
                super::mirage::score(
                    &st.script,
                    &st.judges.mirage,
                    &st.game_id,
                    &mut st.judge_samples,
                    t,
                    outcome,
                )
                .await?,
            ),
            None => None,
        },
    })
}

/// Asks every agent the WellPlay multiple-choice questions written for its character and scores them
/// (10/5/2 points by category), each by its rule (`super::choice::answer_correct`: WellPlay's
/// multiple-choice rows count when the true letter is among the picks, as PLAYER*'s published numbers
/// were scored). The whole set is asked `choice_repeats` times (PLAYER* runs each evaluation three
/// times); each repeat's calls get fresh sample indices, so at temperature > 0 answers vary.
async fn choice_questions(
    st: &EvaluatorArgs,
    t: &mut Transcript,
) -> Result<Option<ChoiceScores>, EvalError> {
    let mut scores = ChoiceScores {
        repeats: st.choice_repeats,
        ..ChoiceScores::default()
    };
    for repeat in 0..st.choice_repeats {
        let mut this_repeat = ChoiceTally::default();
        let mut this_category: BTreeMap<String, ChoiceTally> = BTreeMap::new();
        for (name, actor) in &st.characters {
            for (qi, q) in st.script.choice.iter().enumerate() {
                if q.unscored || q.character.as_deref() != Some(name.as_str()) {
                    continue;
                }
                let (question, options, multiple, picks) =
                    (q.question.clone(), q.options.clone(), q.multiple, q.picks);
                let mut turn = request_turn(actor, name, |reply| CharacterMsg::AnswerChoice {
                    question,
                    options,
                    multiple,
                    picks,
                    reply,
                })
                .await?;
                for step in std::mem::take(&mut turn.steps) {
                    push(st, t, step)?;
                }
                let correct = super::choice::answer_correct(q.rule, &turn.choices, &q.truth);
                let points = q.category.points();
                scores
                    .by_category
                    .entry(q.category.as_str().to_string())
                    .or_default()
                    .add(correct, points);
                scores.overall.add(correct, points);
                this_repeat.add(correct, points);
                this_category
                    .entry(q.category.as_str().to_string())
                    .or_default()
                    .add(correct, points);
                scores
                    .by_agent
                    .entry(name.clone())
                    .or_default()
                    .add(correct, points);
                let data = json!({
                    "question": qi, "category": q.category.as_str(), "multiple": q.multiple,
                    "rule": q.rule.as_str(), "chosen": turn.choices, "truth": q.truth, "correct": correct,
                    "points": if correct { points } else { 0 }, "possible": points, "repeat": repeat + 1,
                });
                push(
                    st,
                    t,
                    Draft::private("choice_answer", name, &[name], turn.text.clone())
                        .with_usage(turn.usage)
                        .with_data(data),
                )?;
            }
        }
        if let Some(score) = this_repeat.score() {
            scores.repeat_scores.push(score);
        }
        for (cat, tally) in this_category {
            if let Some(acc) = tally.accuracy() {
                scores.repeat_accuracy.entry(cat).or_default().push(acc);
            }
        }
    }
    Ok((scores.overall.questions > 0).then_some(scores))
}
