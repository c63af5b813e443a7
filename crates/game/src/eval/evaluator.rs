//! The evaluator actor: asks every agent the script's questions after the game and grades the answers.
//!
//! Factual questions are split by whose script they come from (ThinkThrice Table 4): the agent's own
//! (Own), another civilian's (CQ) or the murderer's (MQ). Accuracies are micro-averages over all answers
//! of a category across agents. Every answer and verdict is a transcript event (private to the agent),
//! so a report can always be traced back to what was said.
//!
//! **Everything at once, recorded in order.** No answer depends on another (evaluation adds nothing to
//! memory), so every character gets one batch with all its questions (factual, inferential, and the
//! multiple-choice set once per repeat) and answers them together; each answer is graded as soon as
//! its character's batch is in, and MIRAGE's judge scores the game meanwhile. The judge's sample
//! indices are assigned before anything is asked, in the order questions were once asked one by one
//! (every character's factual then inferential answers, then MIRAGE's judgements), and events are
//! appended in that same fixed order afterwards — so the transcript does not depend on which call
//! finished first. Every judge call takes a place under the game's bound like any other call.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde_json::json;

use super::formulas::informed_correct;
use super::judge::{judge_failed, Judge, Judges, RationaleVerdict, Verdict};
use super::scores::{ChoiceScores, ChoiceTally, FactualScores, MirageOutcome, MirageScores};
use super::EvalError;
use crate::agent::{
    request_batch, together, CallBound, CharacterMsg, EvalItem, EvalQuestion, RequestError, Turn,
};
use crate::transcript::{Draft, Transcript};
use sleuth_llm::{LlmError, SampleCounter};
use sleuth_script::{option_letter, Script};

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
    /// The game's bound on model calls in flight, shared with the characters.
    pub bound: CallBound,
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

/// Which factual category a question about `about` falls in for the character `name`.
fn category(script: &Script, name: &str, about: &str) -> &'static str {
    if about == name {
        "own"
    } else if script.is_murderer(about) {
        "mq"
    } else {
        "cq"
    }
}

/// The multiple-choice questions written for `name`'s character (indices into the script's list).
fn choice_questions_of(script: &Script, name: &str) -> Vec<usize> {
    script
        .choice
        .iter()
        .enumerate()
        .filter(|(_, q)| !q.unscored && q.character.as_deref() == Some(name))
        .map(|(qi, _)| qi)
        .collect()
}

/// One character's batch, in the order the character once drew its sample indices answering one
/// question at a time: every factual question, every inferential question, then its multiple-choice
/// questions once per repeat.
fn batch(st: &EvaluatorArgs, name: &str) -> Vec<EvalItem> {
    let s = &st.script;
    let mut items = Vec::new();
    for (qi, q) in s.factual.iter().enumerate() {
        items.push(EvalItem {
            unit: format!("factual/{qi}"),
            question: EvalQuestion::Factual {
                question: q.question.clone(),
            },
        });
    }
    for (qi, q) in s.inferential.iter().enumerate() {
        items.push(EvalItem {
            unit: format!("inferential/{qi}"),
            question: EvalQuestion::Inferential {
                question: q.question.clone(),
                options: q.options.clone(),
            },
        });
    }
    let mine = choice_questions_of(s, name);
    for repeat in 0..st.choice_repeats {
        for &qi in &mine {
            let q = &s.choice[qi];
            items.push(EvalItem {
                unit: format!("choice/{}/{qi}", repeat + 1),
                question: EvalQuestion::Choice {
                    question: q.question.clone(),
                    options: q.options.clone(),
                    multiple: q.multiple,
                    picks: q.picks,
                },
            });
        }
    }
    items
}

/// The judge's sample indices of one character's graded answers: one per factual, then one per
/// inferential question.
struct JudgeSeqs {
    factual: Vec<u64>,
    inferential: Vec<u64>,
}

/// One character's answers and the judge's grades of its factual and inferential answers (`None`
/// where the answer itself failed), each taken in batch order as the events are appended.
struct Answered {
    name: String,
    turns: VecDeque<Result<Turn, RequestError>>,
    factual: VecDeque<Option<Result<Verdict, LlmError>>>,
    rationale: VecDeque<Option<Result<RationaleVerdict, LlmError>>>,
}

impl Answered {
    /// The character did not answer (its batch came back short, or a grade is missing for an answer
    /// given): it is reported as gone, which it must be.
    fn lost(&self) -> EvalError {
        EvalError::Request(RequestError::ActorLost(format!("character {}", self.name)))
    }

    fn next_turn(&mut self) -> Result<Turn, EvalError> {
        match self.turns.pop_front() {
            Some(t) => Ok(t?),
            None => Err(self.lost()),
        }
    }

    fn next_factual(&mut self) -> Result<Verdict, EvalError> {
        match self.factual.pop_front().flatten() {
            Some(v) => v.map_err(judge_failed),
            None => Err(self.lost()),
        }
    }

    fn next_rationale(&mut self) -> Result<RationaleVerdict, EvalError> {
        match self.rationale.pop_front().flatten() {
            Some(v) => v.map_err(judge_failed),
            None => Err(self.lost()),
        }
    }
}

/// A judge call under the game's bound: a place is taken only when the judge calls a model.
async fn bounded<T>(
    bound: &CallBound,
    judge: &Judge,
    call: impl std::future::Future<Output = T>,
) -> T {
    let _permit = match judge.makes_calls() {
        true => bound.enter().await,
        false => None,
    };
    call.await
}

/// Asks one character its whole batch, then grades what it answered.
async fn answer_and_grade(
    st: &EvaluatorArgs,
    (name, actor): &(String, ActorRef<CharacterMsg>),
    seqs: &JudgeSeqs,
) -> Answered {
    let s = &st.script;
    let turns = request_batch(actor, name, batch(st, name)).await;
    let text = |i: usize| match &turns[i] {
        Ok(t) => Some(t.text.clone()),
        Err(_) => None,
    };
    let mut factual = Vec::with_capacity(s.factual.len());
    for (qi, q) in s.factual.iter().enumerate() {
        let judge = &st.judges.factual;
        let answer = text(qi);
        let seq = seqs.factual[qi];
        factual.push(async move {
            match answer {
                Some(a) => {
                    let grading = judge.grade(&st.game_id, seq, &q.question, &q.answer, &a);
                    Some(bounded(&st.bound, judge, grading).await)
                }
                None => None,
            }
        });
    }
    let mut rationale = Vec::with_capacity(s.inferential.len());
    for (qi, q) in s.inferential.iter().enumerate() {
        let judge = &st.judges.rationale;
        let answer = text(s.factual.len() + qi);
        let seq = seqs.inferential[qi];
        rationale.push(async move {
            match answer {
                Some(a) => {
                    let grading =
                        judge.grade_rationale(&st.game_id, seq, &q.question, &q.rationale, &a);
                    Some(bounded(&st.bound, judge, grading).await)
                }
                None => None,
            }
        });
    }
    let (factual, rationale) =
        futures::join!(together(&st.bound, factual), together(&st.bound, rationale));
    Answered {
        name: name.clone(),
        turns: turns.into(),
        factual: factual.into(),
        rationale: rationale.into(),
    }
}

async fn evaluate(
    st: &mut EvaluatorArgs,
    t: &mut Transcript,
    mirage: Option<&MirageOutcome>,
) -> Result<EvalReport, EvalError> {
    if let Some(pb) = &st.progress {
        pb.set_message("evaluation");
    }
    // Every judge index first, in the order of the one-question-at-a-time evaluation.
    let seqs: Vec<JudgeSeqs> = st
        .characters
        .iter()
        .map(|_| JudgeSeqs {
            factual: st
                .script
                .factual
                .iter()
                .map(|_| st.judge_samples.next_index())
                .collect(),
            inferential: st
                .script
                .inferential
                .iter()
                .map(|_| st.judge_samples.next_index())
                .collect(),
        })
        .collect();
    let mirage_plan = mirage.map(|outcome| {
        super::mirage::plan(
            &st.script,
            &st.judges.mirage,
            &mut st.judge_samples,
            t,
            outcome,
        )
    });
    let st = &*st;
    let mut characters = Vec::with_capacity(st.characters.len());
    for (c, seqs) in st.characters.iter().zip(&seqs) {
        characters.push(answer_and_grade(st, c, seqs));
    }
    let mirage_judging = async {
        match &mirage_plan {
            Some(plan) => {
                Some(super::mirage::judge(plan, &st.judges.mirage, &st.game_id, &st.bound).await)
            }
            None => None,
        }
    };
    let (mut answered, mirage_judged) =
        futures::join!(together(&st.bound, characters), mirage_judging);
    let (factual, inferential) = record_answers(st, t, &mut answered)?;
    let choice = record_choices(st, t, &mut answered)?;
    let mirage = match (mirage_plan, mirage_judged) {
        (Some(plan), Some(judged)) => Some(super::mirage::record(plan, judged, t)?),
        _ => None,
    };
    Ok(EvalReport {
        factual,
        inferential_accuracy: inferential.accuracy,
        informed_accuracy: inferential.informed,
        rationale_score: inferential.rationale,
        choice,
        mirage,
    })
}

/// Inferential QA over every character.
struct Inferential {
    accuracy: Option<f64>,
    informed: Option<f64>,
    rationale: Option<f64>,
}

/// Appends every character's factual and inferential answers with their verdicts, character by
/// character, and scores them.
fn record_answers(
    st: &EvaluatorArgs,
    t: &mut Transcript,
    answered: &mut [Answered],
) -> Result<(FactualScores, Inferential), EvalError> {
    let s = &st.script;
    // category → (correct, answered)
    let mut tallies: BTreeMap<&'static str, (usize, usize)> = BTreeMap::new();
    let (mut inf_correct, mut inf_total, mut informed) = (0usize, 0usize, 0usize);
    let mut rationale_scores: Vec<f64> = Vec::new();
    for ((name, _), a) in st.characters.iter().zip(answered.iter_mut()) {
        for (qi, q) in s.factual.iter().enumerate() {
            let category = category(s, name, &q.character);
            let mut turn = a.next_turn()?;
            for step in std::mem::take(&mut turn.steps) {
                push(st, t, step)?;
            }
            let verdict = a.next_factual()?;
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
        for (qi, q) in s.inferential.iter().enumerate() {
            let mut turn = a.next_turn()?;
            for step in std::mem::take(&mut turn.steps) {
                push(st, t, step)?;
            }
            let choice = turn.choice.clone().unwrap_or_default();
            let correct = q.answer_index().is_some_and(|i| option_letter(i) == choice);
            let rationale = a.next_rationale()?;
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
    let inferential = Inferential {
        accuracy: (inf_total > 0).then(|| inf_correct as f64 / inf_total as f64),
        informed: (inf_total > 0).then(|| informed as f64 / inf_total as f64),
        rationale: super::stats::mean(&rationale_scores),
    };
    Ok((factual, inferential))
}

/// Appends and scores the WellPlay multiple-choice answers (10/5/2 points by category), repeat by
/// repeat, character by character, each by its rule (`super::choice::answer_correct`: WellPlay's
/// multiple-choice rows count when the true letter is among the picks, as PLAYER*'s published numbers
/// were scored). The whole set is asked `choice_repeats` times (PLAYER* runs each evaluation three
/// times); each repeat's answers have sample indices of their own, so at temperature > 0 they vary.
fn record_choices(
    st: &EvaluatorArgs,
    t: &mut Transcript,
    answered: &mut [Answered],
) -> Result<Option<ChoiceScores>, EvalError> {
    let s = &st.script;
    let mut scores = ChoiceScores {
        repeats: st.choice_repeats,
        ..ChoiceScores::default()
    };
    let mine: Vec<Vec<usize>> = st
        .characters
        .iter()
        .map(|(name, _)| choice_questions_of(s, name))
        .collect();
    for repeat in 0..st.choice_repeats {
        let mut this_repeat = ChoiceTally::default();
        let mut this_category: BTreeMap<String, ChoiceTally> = BTreeMap::new();
        for (c, (name, _)) in st.characters.iter().enumerate() {
            for &qi in &mine[c] {
                let q = &s.choice[qi];
                // A character's answers are read in its batch's order: its multiple-choice answers
                // follow its factual and inferential ones, repeat by repeat.
                let mut turn = answered[c].next_turn()?;
                for step in std::mem::take(&mut turn.steps) {
                    scores.usage += step.usage;
                    push(st, t, step)?;
                }
                scores.usage += turn.usage;
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
