//! The `answers` table: every evaluation answer of a game — ThinkThrice's factual and inferential
//! questions, WellPlay's multiple-choice questions, each repeat — with its verdict, read from the
//! answer events the evaluator writes to the transcript (`eval/evaluator.rs`: `factual_answer`,
//! `inferential_answer`, `choice_answer`). Columns and their papers: `docs/data.md`, *answers*.

use sleuth_game::game::Event;

use crate::flatten as f;
use crate::table::{col, Column, Row, Type::*, Value};

pub const COLUMNS: &[Column] = &[
    col("game", Text),
    col("seq", Int),
    col("kind", Text),
    col("character", Text),
    col("question", Int),
    col("repeat", Int),
    col("category", Text),
    col("about", Text),
    col("question_text", Text),
    col("reference", Text),
    col("chosen", TextList),
    col("truth", TextList),
    col("correct", Bool),
    col("points", Int),
    col("possible", Int),
    col("score", Float),
    col("rationale_score", Float),
    col("informed", Bool),
    col("rule", Text),
    col("multiple", Bool),
    col("calls", Int),
    col("prompt_tokens", Int),
    col("completion_tokens", Int),
    col("cost_usd", Float),
    col("response", Text),
];

/// The answer kinds and the name each has in the table.
const KINDS: [(&str, &str); 3] = [
    ("factual_answer", "factual"),
    ("inferential_answer", "inferential"),
    ("choice_answer", "choice"),
];

/// The table's kind for an event kind, if the event is an evaluation answer.
pub fn kind_of(event_kind: &str) -> Option<&'static str> {
    KINDS
        .iter()
        .find(|(k, _)| *k == event_kind)
        .map(|(_, name)| *name)
}

/// The answer rows of one game's events; the answer's own text only `with_text`.
pub fn rows(game: &str, events: &[Event], with_text: bool) -> Vec<Row> {
    events
        .iter()
        .filter_map(|e| kind_of(&e.kind).map(|k| (e, k)))
        .map(|(e, kind)| row(game, e, kind, with_text))
        .collect()
}

fn row(game: &str, e: &Event, kind: &'static str, with_text: bool) -> Row {
    let d = e.data.as_ref();
    // An inferential answer records the letter chosen and the right letter as single strings
    // (`choice`, `answer`); a multiple-choice answer records lists (`chosen`, `truth`).
    let (chosen, truth) = match kind {
        "inferential" => (f::text_list(d, "/choice"), f::text_list(d, "/answer")),
        "choice" => (f::text_list(d, "/chosen"), f::text_list(d, "/truth")),
        _ => (Value::Null, Value::Null),
    };
    // Factual and inferential questions are asked once; multiple-choice ones `repeat` times.
    let repeat = match kind {
        "choice" => f::int(d, "/repeat"),
        _ => Value::Int(1),
    };
    let usage = e.usage.as_ref();
    let mut row = Row::new();
    row.set("game", Value::Text(game.to_string()))
        .set("seq", Value::count(e.seq))
        .set("kind", Value::Text(kind.to_string()))
        .set("character", Value::Text(e.speaker.clone()))
        .set("question", f::int(d, "/question"))
        .set("repeat", repeat)
        .set("category", f::text(d, "/category"))
        .set("about", f::text(d, "/about"))
        .set("question_text", f::text(d, "/text"))
        .set("reference", f::text(d, "/reference"))
        .set("chosen", chosen)
        .set("truth", truth)
        .set("correct", f::boolean(d, "/correct"))
        .set("points", f::int(d, "/points"))
        .set("possible", f::int(d, "/possible"))
        .set("score", f::float(d, "/score"))
        .set("rationale_score", f::float(d, "/rationale_score"))
        .set("informed", f::boolean(d, "/informed"))
        .set("rule", f::text(d, "/rule"))
        .set("multiple", f::boolean(d, "/multiple"))
        .set(
            "calls",
            usage.map_or(Value::Null, |u| Value::count(u.calls)),
        )
        .set(
            "prompt_tokens",
            usage.map_or(Value::Null, |u| Value::count(u.prompt_tokens)),
        )
        .set(
            "completion_tokens",
            usage.map_or(Value::Null, |u| Value::count(u.completion_tokens)),
        )
        .set("cost_usd", Value::float(usage.map(|u| u.cost_usd)))
        .set(
            "response",
            if with_text {
                Value::Text(e.text.clone())
            } else {
                Value::Null
            },
        );
    row
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Table;
    use serde_json::json;
    use sleuth_game::game::Visibility;

    fn event(kind: &str, data: serde_json::Value) -> Event {
        Event {
            seq: 7,
            ts: "2026-01-01T00:00:00Z".into(),
            stage: "evaluation".into(),
            kind: kind.into(),
            speaker: "Ada".into(),
            addressee: None,
            text: "because".into(),
            visible_to: Visibility::Only(vec!["Ada".into()]),
            usage: None,
            data: Some(data),
        }
    }

    #[test]
    fn each_kind_of_answer_becomes_one_row_in_the_schema() {
        let events = [
            event(
                "factual_answer",
                json!({"question": 0, "about": "Ben", "category": "cq", "text": "Q?",
                       "reference": "R", "correct": true, "score": 0.75}),
            ),
            event(
                "inferential_answer",
                json!({"question": 1, "choice": "C", "answer": "D", "correct": false,
                       "rationale_score": 2, "informed": false}),
            ),
            event(
                "choice_answer",
                json!({"question": 6, "category": "relations", "multiple": true, "rule": "exact",
                       "chosen": ["A", "B"], "truth": ["B"], "correct": false, "points": 0,
                       "possible": 2, "repeat": 2}),
            ),
            event("vote", json!({"vote": "Ben"})),
        ];
        let mut t = Table::new("answers", COLUMNS);
        for r in rows("g", &events, false) {
            t.push(r).expect("in the schema");
        }
        assert_eq!(t.len(), 3, "a vote is no answer");
        let at = |row: usize, name: &str| {
            let i = COLUMNS.iter().position(|c| c.name == name).expect("column");
            t.rows()[row][i].clone()
        };
        assert_eq!(at(0, "kind"), Value::Text("factual".into()));
        assert_eq!(at(0, "score"), Value::Float(0.75));
        assert_eq!(at(0, "repeat"), Value::Int(1));
        assert_eq!(at(1, "chosen"), Value::TextList(vec!["C".into()]));
        assert_eq!(at(1, "truth"), Value::TextList(vec!["D".into()]));
        assert_eq!(at(1, "rationale_score"), Value::Float(2.0));
        assert_eq!(at(2, "repeat"), Value::Int(2));
        assert_eq!(
            at(2, "chosen"),
            Value::TextList(vec!["A".into(), "B".into()])
        );
        assert_eq!(at(2, "multiple"), Value::Bool(true));
        assert_eq!(at(2, "response"), Value::Null, "text only when asked for");
        let with_text = rows("g", &events[..1], true);
        let mut t2 = Table::new("answers", COLUMNS);
        t2.push(with_text.into_iter().next().expect("a row"))
            .expect("row");
        assert_eq!(t2.rows()[0].last(), Some(&Value::Text("because".into())));
    }
}
