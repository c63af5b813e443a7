//! *questions* campaigns: ThinkThrice §5.1's human review of generated factual questions, which the
//! paper's annotators "reviewed and improved" before they were asked.
//!
//! The candidates are what `sleuth questions generate --review` kept from the model (grounded in the
//! character's script, not repeating a question the script has), one item each, *before* they reach
//! the script file. An annotator sees the question, its reference answer, the sentence of the script
//! it rests on with the script around it, and the character it is about — never the model or the
//! file — and accepts it, rejects it (a reason is welcome) or edits its question and answer. An edit
//! is held to what a generated question is held to ([`sleuth_game::questions::missing_fields`]); the
//! source is the script's own sentence and is not edited (a wrong one is a reason to reject).
//!
//! [`decide`] is the rule that turns several annotators' answers into one outcome (documented in
//! `docs/humans.md`): kept when more of those who answered keep it (accept or edit) than reject it, a
//! tie rejected; an edit wins over a plain accept, and among different edits the one most of them
//! gave (the earliest on a tie). Unanswered items are neither kept nor rejected.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::answers::HumansError;
use super::{Item, Kind};
use sleuth_base::text;
use sleuth_script::{FactualQuestion, Reviewer, Script};

/// Sentences of the character's script shown before and after the source sentence.
const CONTEXT_SENTENCES: usize = 2;

/// How a *questions* campaign was made: stored as the campaign's `settings`, never shown to an
/// annotator. `script` is the file the kept questions go into.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionSettings {
    pub kind: Kind,
    pub script: String,
    pub model: String,
    pub per_character: usize,
    pub batch: usize,
    /// As given (0.8, not the f32's 0.800000011920929).
    pub temperature: f64,
    pub seed: u64,
}

/// A candidate question as an item's `hidden` holds it: the question as generated and the script
/// file it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    /// The script file's path (absolute when the campaign was made).
    pub script: String,
    pub character: String,
    pub question: String,
    pub answer: String,
    pub source: String,
}

/// The campaign's items: one per candidate, in the order generation kept them (grouped by
/// character). `shown` has the script's title, the character, the question, answer and source, and
/// the character's script around the source (`context.before` + source + `context.after` is a
/// contiguous passage of it); `hidden` is the [`Candidate`].
pub fn items(script: &Script, path: &str, candidates: &[FactualQuestion]) -> Vec<Item> {
    candidates
        .iter()
        .map(|q| {
            let own = script
                .character(&q.character)
                .map(|c| c.script_text())
                .unwrap_or_default();
            let (before, after) = context(&own, &q.source);
            let hidden = Candidate {
                script: path.to_string(),
                character: q.character.clone(),
                question: q.question.clone(),
                answer: q.answer.clone(),
                source: q.source.clone(),
            };
            Item {
                shown: json!({
                    "script": script.title,
                    "character": q.character,
                    "question": q.question,
                    "answer": q.answer,
                    "source": q.source,
                    "context": {"before": before, "after": after},
                }),
                hidden: serde_json::to_value(&hidden).unwrap_or(Value::Null),
            }
        })
        .collect()
}

/// The text of `own` just before and just after `source` (up to [`CONTEXT_SENTENCES`] sentences
/// each way), so that an annotator can judge the question without reading the whole script. Empty
/// when the source does not occur in it.
fn context(own: &str, source: &str) -> (String, String) {
    let Some(at) = own.find(source).filter(|_| !source.is_empty()) else {
        return (String::new(), String::new());
    };
    // Byte spans of the sentences: `text::sentences` cuts contiguous trimmed pieces, in order.
    let mut spans = Vec::new();
    let mut cursor = 0;
    for s in text::sentences(own) {
        if let Some(off) = own[cursor..].find(s.as_str()) {
            let start = cursor + off;
            spans.push((start, start + s.len()));
            cursor = start + s.len();
        }
    }
    let end = at + source.len();
    let first = spans
        .iter()
        .position(|&(_, e)| e > at)
        .unwrap_or(spans.len());
    let last = spans.iter().rposition(|&(s, _)| s < end).unwrap_or(0);
    let from = spans
        .get(first.saturating_sub(CONTEXT_SENTENCES))
        .map_or(at, |&(s, _)| s.min(at));
    let to = spans
        .get((last + CONTEXT_SENTENCES).min(spans.len().saturating_sub(1)))
        .map_or(end, |&(_, e)| e.max(end));
    (own[from..at].to_string(), own[end..to].to_string())
}

/// What an annotator did with a candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewAction {
    Accept,
    Reject {
        reason: Option<String>,
    },
    /// The question and answer as the annotator left them (a field they did not give is the
    /// candidate's), trimmed.
    Edit {
        question: String,
        answer: String,
    },
}

impl ReviewAction {
    /// The action's name in an answer: `accept`, `reject`, `edit`.
    pub fn name(&self) -> &'static str {
        match self {
            ReviewAction::Accept => "accept",
            ReviewAction::Reject { .. } => "reject",
            ReviewAction::Edit { .. } => "edit",
        }
    }
}

/// One annotator's answer to one candidate, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionReview {
    pub item: u32,
    pub annotator: String,
    pub candidate: Candidate,
    pub action: ReviewAction,
}

fn answer_err(item: u32, who: &str, field: &str, problem: impl Into<String>) -> HumansError {
    HumansError::Answer {
        item,
        annotator: who.to_string(),
        field: field.to_string(),
        problem: problem.into(),
    }
}

/// The reviews of a *questions* campaign from (item, `hidden`) and (item, annotator, answer), in the
/// order of `answers`, each answer checked as `docs/humans.md` gives its shape: `{"action":
/// "accept"}`, `{"action": "reject", "reason": "…"}` (reason optional) or `{"action": "edit",
/// "question": "…", "answer": "…"}` (at least one of the two; the edited question must still have a
/// question and an answer). Errors name the item, the annotator and the field.
pub fn question_reviews(
    items: &[(u32, Value)],
    answers: &[(u32, String, Value)],
) -> Result<Vec<QuestionReview>, HumansError> {
    let mut candidates = BTreeMap::new();
    for (item, hidden) in items {
        let c = Candidate::deserialize(hidden).map_err(|e| HumansError::Hidden {
            item: *item,
            problem: e.to_string(),
        })?;
        candidates.insert(*item, c);
    }
    let mut out = Vec::with_capacity(answers.len());
    for (item, who, answer) in answers {
        let Some(candidate) = candidates.get(item) else {
            return Err(HumansError::UnknownItem {
                item: *item,
                annotator: who.clone(),
            });
        };
        let action = action(*item, who, answer, candidate)?;
        out.push(QuestionReview {
            item: *item,
            annotator: who.clone(),
            candidate: candidate.clone(),
            action,
        });
    }
    Ok(out)
}

/// One answer read as an action, or the first thing wrong with it.
fn action(
    item: u32,
    who: &str,
    answer: &Value,
    candidate: &Candidate,
) -> Result<ReviewAction, HumansError> {
    let err = |field: &str, problem: String| answer_err(item, who, field, problem);
    let Some(fields) = answer.as_object() else {
        return Err(err("answer", format!("is {answer}, not an object")));
    };
    let name = match fields.get("action") {
        Some(Value::String(s)) => s.as_str(),
        Some(other) => return Err(err("action", format!("is {other}, not a string"))),
        None => return Err(err("action", "is missing (accept, reject or edit)".into())),
    };
    let allowed: &[&str] = match name {
        "accept" => &[],
        "reject" => &["reason"],
        "edit" => &["question", "answer"],
        other => {
            let problem = format!("is '{other}', not one of accept, reject, edit");
            return Err(err("action", problem));
        }
    };
    for key in fields.keys().filter(|k| *k != "action") {
        if allowed.contains(&key.as_str()) {
            continue;
        }
        let problem = if key == "source" && name == "edit" {
            "cannot be edited: it is the script's own sentence the question rests on (reject \
             the question if it is the wrong one)"
                .to_string()
        } else if allowed.is_empty() {
            format!("is not a field of an answer with action '{name}' (it has only action)")
        } else {
            format!(
                "is not a field of an answer with action '{name}' (it has action, {})",
                allowed.join(", ")
            )
        };
        return Err(err(key, problem));
    }
    match name {
        "accept" => Ok(ReviewAction::Accept),
        "reject" => {
            let reason = optional_text(fields, "reason").map_err(|p| err("reason", p))?;
            let reason = reason.map(str::trim).filter(|r| !r.is_empty());
            Ok(ReviewAction::Reject {
                reason: reason.map(str::to_string),
            })
        }
        _ => edit(fields, candidate).map_err(|(field, p)| err(field, p)),
    }
}

/// A string field that may be left out.
fn optional_text<'a>(fields: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, String> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!("is {other}, not a string")),
    }
}

/// An edit's question and answer, checked as a generated question is checked.
fn edit(
    fields: &Map<String, Value>,
    candidate: &Candidate,
) -> Result<ReviewAction, (&'static str, String)> {
    let question = optional_text(fields, "question").map_err(|p| ("question", p))?;
    let answer = optional_text(fields, "answer").map_err(|p| ("answer", p))?;
    if question.is_none() && answer.is_none() {
        let problem = "is missing: an edit gives the question, the answer or both".to_string();
        return Err(("question", problem));
    }
    let question = question.unwrap_or(&candidate.question).trim();
    let answer = answer.unwrap_or(&candidate.answer).trim();
    let missing = sleuth_game::questions::missing_fields(question, answer, &candidate.source);
    if let Some(&field) = missing.first() {
        let problem =
            "is empty: a factual question needs a question and a reference answer (reject \
                       the question instead of emptying it)";
        return Err((field, problem.to_string()));
    }
    Ok(ReviewAction::Edit {
        question: question.to_string(),
        answer: answer.to_string(),
    })
}

/// One annotator's vote on one candidate, with the time of their answer (RFC 3339).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vote {
    pub annotator: String,
    pub at: String,
    pub action: ReviewAction,
}

/// What the keep rule made of a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Kept,
    Rejected,
    /// No annotator has answered it yet.
    Unanswered,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Kept => "kept",
            Outcome::Rejected => "rejected",
            Outcome::Unanswered => "unanswered",
        }
    }
}

/// The outcome of one candidate under the keep rule, with the text to keep and who did what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub outcome: Outcome,
    /// The text kept: the winning edit, or the candidate's own.
    pub question: String,
    pub answer: String,
    /// Whether `question`/`answer` differ from the candidate's.
    pub edited: bool,
    /// Kept it as generated (an "edit" that changed nothing counts here).
    pub accepted: Vec<Reviewer>,
    /// Edited it, whichever edit won.
    pub edited_by: Vec<Reviewer>,
    pub rejected: Vec<Reviewer>,
}

/// The keep rule: a candidate is kept when more of the annotators who answered it keep it (accept or
/// edit) than reject it; a tie, and an item nobody answered, is not kept. The kept text is an edit
/// when anyone edited — an edit is a considered improvement, a plain accept only says the original
/// will do — and among different edits the one most annotators gave (trimmed text equal), a tie
/// going to the earliest answer. An annotator counts once, with their last vote in `votes`.
pub fn decide(question: &str, answer: &str, votes: &[Vote]) -> Decision {
    let mut last: BTreeMap<&str, &Vote> = BTreeMap::new();
    for v in votes {
        last.insert(v.annotator.as_str(), v);
    }
    let who = |v: &Vote| Reviewer {
        name: v.annotator.clone(),
        at: v.at.clone(),
    };
    let (mut accepted, mut edited_by, mut rejected) = (Vec::new(), Vec::new(), Vec::new());
    // (question, answer) → (how many gave it, earliest answer).
    let mut edits: BTreeMap<(&str, &str), (usize, &str)> = BTreeMap::new();
    for v in last.values() {
        match &v.action {
            ReviewAction::Accept => accepted.push(who(v)),
            ReviewAction::Reject { .. } => rejected.push(who(v)),
            ReviewAction::Edit {
                question: q,
                answer: a,
            } if q.trim() == question.trim() && a.trim() == answer.trim() => accepted.push(who(v)),
            ReviewAction::Edit {
                question: q,
                answer: a,
            } => {
                edited_by.push(who(v));
                let e = edits
                    .entry((q.trim(), a.trim()))
                    .or_insert((0, v.at.as_str()));
                e.0 += 1;
                e.1 = e.1.min(v.at.as_str());
            }
        }
    }
    let keep = accepted.len() + edited_by.len();
    let outcome = match (keep + rejected.len(), keep > rejected.len()) {
        (0, _) => Outcome::Unanswered,
        (_, true) => Outcome::Kept,
        (_, false) => Outcome::Rejected,
    };
    let winner = edits
        .iter()
        .max_by(|(_, (n, at)), (_, (m, bt))| n.cmp(m).then_with(|| bt.cmp(at)))
        .map(|(text, _)| *text);
    let (q, a) = winner.unwrap_or((question.trim(), answer.trim()));
    Decision {
        outcome,
        question: q.to_string(),
        answer: a.to_string(),
        edited: winner.is_some(),
        accepted,
        edited_by,
        rejected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vote(who: &str, at: &str, action: ReviewAction) -> Vote {
        Vote {
            annotator: who.into(),
            at: at.into(),
            action,
        }
    }

    fn edit(q: &str, a: &str) -> ReviewAction {
        ReviewAction::Edit {
            question: q.into(),
            answer: a.into(),
        }
    }

    fn reject() -> ReviewAction {
        ReviewAction::Reject { reason: None }
    }

    fn names(r: &[Reviewer]) -> Vec<&str> {
        r.iter().map(|r| r.name.as_str()).collect()
    }

    #[test]
    fn a_majority_of_those_who_answered_keeps_and_a_tie_rejects() {
        let d = decide("Q?", "A", &[]);
        assert_eq!(d.outcome, Outcome::Unanswered);
        let one = [vote("ann", "t1", ReviewAction::Accept)];
        assert_eq!(decide("Q?", "A", &one).outcome, Outcome::Kept);
        let tie = [
            vote("ann", "t1", ReviewAction::Accept),
            vote("bob", "t2", reject()),
        ];
        let d = decide("Q?", "A", &tie);
        assert_eq!(d.outcome, Outcome::Rejected);
        assert_eq!(
            (names(&d.accepted), names(&d.rejected)),
            (vec!["ann"], vec!["bob"])
        );
        let two_to_one = [
            vote("ann", "t1", edit("Q2?", "A2")),
            vote("bob", "t2", reject()),
            vote("cat", "t3", ReviewAction::Accept),
        ];
        assert_eq!(decide("Q?", "A", &two_to_one).outcome, Outcome::Kept);
        let one_to_two = [
            vote("ann", "t1", ReviewAction::Accept),
            vote("bob", "t2", reject()),
            vote("cat", "t3", reject()),
        ];
        assert_eq!(decide("Q?", "A", &one_to_two).outcome, Outcome::Rejected);
    }

    #[test]
    fn an_edit_wins_over_an_accept_and_the_commonest_edit_wins() {
        let d = decide(
            "Q?",
            "A",
            &[
                vote("ann", "t1", ReviewAction::Accept),
                vote("bob", "t2", edit("Better Q?", "A")),
            ],
        );
        assert_eq!((d.outcome, d.edited), (Outcome::Kept, true));
        assert_eq!((d.question.as_str(), d.answer.as_str()), ("Better Q?", "A"));
        assert_eq!(
            (names(&d.accepted), names(&d.edited_by)),
            (vec!["ann"], vec!["bob"])
        );
        // Two edits alike beat one other, whatever the times.
        let d = decide(
            "Q?",
            "A",
            &[
                vote("ann", "t1", edit("Q one?", "A")),
                vote("bob", "t3", edit("Q two?", "B")),
                vote("cat", "t2", edit("Q two?", "B")),
            ],
        );
        assert_eq!((d.question.as_str(), d.answer.as_str()), ("Q two?", "B"));
        assert_eq!(names(&d.edited_by), ["ann", "bob", "cat"]);
        // A tie between edits goes to the earliest answer.
        let d = decide(
            "Q?",
            "A",
            &[
                vote("ann", "t5", edit("Q one?", "A")),
                vote("bob", "t4", edit("Q two?", "A")),
            ],
        );
        assert_eq!(d.question, "Q two?");
    }

    #[test]
    fn an_edit_that_changes_nothing_is_an_accept_and_a_later_vote_replaces_an_earlier() {
        let d = decide(
            "Q?",
            "A",
            &[
                vote("ann", "t1", edit(" Q? ", "A")),
                vote("bob", "t2", ReviewAction::Accept),
                vote("bob", "t3", reject()),
            ],
        );
        assert_eq!((d.outcome, d.edited), (Outcome::Rejected, false));
        assert_eq!(
            (names(&d.accepted), names(&d.rejected)),
            (vec!["ann"], vec!["bob"])
        );
        assert_eq!((d.question.as_str(), d.answer.as_str()), ("Q?", "A"));
    }

    fn candidate_items() -> Vec<(u32, Value)> {
        let c = json!({"script": "/s.toml", "character": "Ada", "question": "Where was Ada?",
                       "answer": "the orchid house", "source": "Ada was in the orchid house."});
        vec![(0, c)]
    }

    fn check(answer: Value) -> Result<ReviewAction, String> {
        let r = question_reviews(&candidate_items(), &[(0, "bob".into(), answer)]);
        r.map(|mut v| v.remove(0).action).map_err(|e| e.to_string())
    }

    #[test]
    fn answers_read_as_actions() {
        assert_eq!(check(json!({"action": "accept"})), Ok(ReviewAction::Accept));
        let reason = Some("ambiguous".to_string());
        assert_eq!(
            check(json!({"action": "reject", "reason": " ambiguous "})),
            Ok(ReviewAction::Reject { reason })
        );
        assert_eq!(check(json!({"action": "reject"})), Ok(reject()));
        // A field left out keeps the candidate's.
        assert_eq!(
            check(json!({"action": "edit", "answer": " in the orchid house "})),
            Ok(edit("Where was Ada?", "in the orchid house"))
        );
    }

    #[test]
    fn bad_answers_are_refused_naming_item_annotator_and_field() {
        for (answer, want) in [
            (json!("accept"), "answer is \"accept\", not an object"),
            (json!({}), "action is missing"),
            (json!({"action": "keep"}), "action is 'keep', not one of"),
            (
                json!({"action": "edit"}),
                "question is missing: an edit gives",
            ),
            (
                json!({"action": "edit", "question": "  "}),
                "question is empty",
            ),
            (json!({"action": "edit", "answer": ""}), "answer is empty"),
            (
                json!({"action": "edit", "answer": 3}),
                "answer is 3, not a string",
            ),
            (
                json!({"action": "edit", "source": "x"}),
                "source cannot be edited",
            ),
            (
                json!({"action": "accept", "why": 1}),
                "why is not a field of an answer with action 'accept'",
            ),
            (
                json!({"action": "reject", "reason": 1}),
                "reason is 1, not a string",
            ),
        ] {
            let e = check(answer.clone()).expect_err(&answer.to_string());
            assert!(e.starts_with("item 0, annotator bob: "), "{e}");
            assert!(e.contains(want), "{answer}: {e}");
        }
        let e = question_reviews(&candidate_items(), &[(4, "bob".into(), json!({}))]);
        assert!(e.is_err_and(|e| e.to_string().contains("no such item")));
    }

    #[test]
    fn context_is_the_script_around_the_source() {
        let own = "One. Two. Three. Four. Five. Six. Seven.";
        let (before, after) = context(own, "Four.");
        assert_eq!(
            (before.as_str(), after.as_str()),
            ("Two. Three. ", " Five. Six.")
        );
        let (before, after) = context(own, "One.");
        assert_eq!((before.as_str(), after.as_str()), ("", " Two. Three."));
        let (before, after) = context(own, "Seven.");
        assert_eq!((before.as_str(), after.as_str()), ("Five. Six. ", ""));
        assert_eq!(context(own, "Eight."), (String::new(), String::new()));
        let zh = "第一句。第二句。第三句。";
        assert_eq!(
            context(zh, "第三句。"),
            ("第一句。第二句。".into(), String::new())
        );
    }
}
