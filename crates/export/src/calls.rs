//! The `calls` table: every row of the store's ledger — one model call (live, from the cache, or
//! through a batch) or one failed attempt (`retry`) — with its tokens, cost, and for a live call
//! the answered attempt's latency and the retries before it. Columns: `docs/data.md`, *calls*.

use sleuth_store::bulk::LedgerRow;

use crate::table::{col, Column, Row, Type::*, Value};

pub const COLUMNS: &[Column] = &[
    col("call", Int),
    col("run", Text),
    col("sweep", Text),
    col("game", Text),
    col("arm", Text),
    col("model", Text),
    col("phase", Text),
    col("framework", Text),
    col("purpose", Text),
    col("source", Text),
    col("live", Bool),
    col("prompt_tokens", Int),
    col("completion_tokens", Int),
    col("cached_tokens", Int),
    col("cost_usd", Float),
    col("cache_key", Text),
    col("latency_ms", Int),
    col("retries", Int),
];

pub fn row(c: &LedgerRow) -> Row {
    let mut row = Row::new();
    row.set("call", Value::Int(c.call.id))
        .set("run", Value::Text(c.run.clone()))
        .set("sweep", Value::Text(c.sweep.clone()))
        .set("game", Value::Text(c.game.clone()))
        .set("arm", Value::Text(c.arm.clone()))
        .set("model", Value::Text(c.call.model.clone()))
        .set("phase", Value::Text(c.call.phase.clone()))
        .set("framework", Value::Text(c.call.framework.clone()))
        .set("purpose", Value::Text(c.call.purpose.clone()))
        .set("source", Value::Text(c.call.source.clone()))
        .set("live", Value::Bool(c.call.source == "live"))
        .set("prompt_tokens", Value::Int(c.call.prompt_tokens))
        .set("completion_tokens", Value::Int(c.call.completion_tokens))
        .set("cached_tokens", Value::Int(c.call.cached_tokens))
        .set("cost_usd", Value::float(Some(c.call.cost_usd)))
        .set("cache_key", Value::text(c.call.key.as_deref()))
        .set(
            "latency_ms",
            c.call.latency_ms.map_or(Value::Null, Value::Int),
        )
        .set("retries", Value::Int(c.call.retries));
    row
}
