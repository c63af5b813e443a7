//! The `events` table: every event of every exported game's transcript — who said what to whom, in
//! which stage, seen by whom, at what cost. The text is most of a transcript's bytes, so it is
//! written only with `--with-text`; its length always is. Columns: `docs/data.md`, *events*.

use sleuth_game::game::{Event, Visibility};

use crate::table::{col, Column, Row, Type::*, Value};

pub const COLUMNS: &[Column] = &[
    col("game", Text),
    col("seq", Int),
    col("ts", Time),
    col("stage", Text),
    col("kind", Text),
    col("speaker", Text),
    col("addressee", Text),
    col("visible_to", TextList),
    col("calls", Int),
    col("prompt_tokens", Int),
    col("completion_tokens", Int),
    col("cached_tokens", Int),
    col("cost_usd", Float),
    col("data_json", Text),
    col("text_chars", Int),
    col("text", Text),
];

/// The rows of one game's events.
pub fn rows(game: &str, events: &[Event], with_text: bool) -> Vec<Row> {
    events.iter().map(|e| row(game, e, with_text)).collect()
}

fn row(game: &str, e: &Event, with_text: bool) -> Row {
    let u = e.usage.as_ref();
    let n = |f: fn(&sleuth_llm::Usage) -> u64| u.map_or(Value::Null, |u| Value::count(f(u)));
    let mut row = Row::new();
    row.set("game", Value::Text(game.to_string()))
        .set("seq", Value::count(e.seq))
        .set("ts", Value::time(&e.ts))
        .set("stage", Value::Text(e.stage.clone()))
        .set("kind", Value::Text(e.kind.clone()))
        .set("speaker", Value::Text(e.speaker.clone()))
        .set("addressee", Value::text(e.addressee.as_deref()))
        .set(
            "visible_to",
            match &e.visible_to {
                // Null: everyone (a list would have to name the cast, which the event does not).
                Visibility::All => Value::Null,
                Visibility::Only(who) => Value::TextList(who.clone()),
            },
        )
        .set("calls", n(|u| u.calls))
        .set("prompt_tokens", n(|u| u.prompt_tokens))
        .set("completion_tokens", n(|u| u.completion_tokens))
        .set("cached_tokens", n(|u| u.cached_tokens))
        .set("cost_usd", Value::float(u.map(|u| u.cost_usd)))
        .set(
            "data_json",
            Value::text(e.data.as_ref().map(|d| d.to_string()).as_deref()),
        )
        .set("text_chars", Value::count(e.text.chars().count() as u64))
        .set(
            "text",
            if with_text {
                Value::Text(e.text.clone())
            } else {
                Value::Null
            },
        );
    row
}
