//! The `annotations` table: every answer people gave in the run's annotation campaigns
//! (`docs/humans.md`) — ThinkThrice's 1–5 response ratings (`responses`), MIRAGE's rankings
//! (`rankings`), question reviews (`questions`) — with what each item was about. Answers can be
//! changed, so unlike the other tables this one is a snapshot, rewritten whole when it changed
//! ([`fingerprint`]). Columns: `docs/data.md`, *annotations*.

use sleuth_store::bulk::AnnotationRow;

use crate::table::{col, Column, Row, Type::*, Value};

pub const COLUMNS: &[Column] = &[
    col("campaign", Text),
    col("kind", Text),
    col("item", Int),
    col("annotator", Text),
    col("answer_json", Text),
    col("answered_at", Time),
    col("item_json", Text),
];

pub fn row(a: &AnnotationRow) -> Row {
    let mut row = Row::new();
    row.set("campaign", Value::Text(a.campaign.clone()))
        .set("kind", Value::Text(a.kind.clone()))
        .set("item", Value::Int(a.item))
        .set("annotator", Value::Text(a.annotator.clone()))
        .set("answer_json", Value::Text(a.answer.clone()))
        .set("answered_at", Value::time(&a.answered_at))
        .set("item_json", Value::text(a.item_hidden.as_deref()));
    row
}

/// What changes whenever an answer is added or given again: the count and the latest time (a
/// changed answer gets a new `answered_at`), and the answers' total length. Kept in the manifest.
pub fn fingerprint(rows: &[AnnotationRow]) -> String {
    let latest = rows
        .iter()
        .map(|a| a.answered_at.as_str())
        .max()
        .unwrap_or("");
    let bytes: usize = rows.iter().map(|a| a.answer.len()).sum();
    format!("{} answers, latest {latest}, {bytes} bytes", rows.len())
}
