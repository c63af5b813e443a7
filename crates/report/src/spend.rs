//! What a run directory's ledger says was paid, for the report's notes: live and batch calls, and
//! what batching saved (the batch answers at the live price, less what they cost).
//!
//! The tables report each game's own cost at list price, the same whether its calls were live,
//! cached or batched (`result.json`); what was actually paid is the ledger's, in `sleuth.db` beside
//! the games of a sweep. Read here with one query, read-only, so a report of a running sweep never
//! blocks it.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use sleuth_llm::TokenUsage;

/// The ledger's line for the report, or `None` when `dir` holds no sweep store (a folder of games
/// played one by one) or nothing was paid.
pub fn ledger_note(dir: &Path) -> Option<String> {
    let db = sleuth_store::RunDir::new(dir).store();
    if !db.is_file() {
        return None;
    }
    let conn = Connection::open_with_flags(&db, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
    let text: Option<String> = conn
        .query_row(
            "SELECT text FROM sweeps ORDER BY created_at DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .ok();
    let pricing = sleuth_sweep::models::prices_of_text(text.as_deref());
    let mut st = conn
        .prepare(
            "SELECT source, model, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens),
                    SUM(cached_tokens), SUM(cost_usd) FROM ledger GROUP BY source, model",
        )
        .ok()?;
    let rows = st
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)? as u64,
                r.get::<_, i64>(3)? as u64,
                r.get::<_, i64>(4)? as u64,
                r.get::<_, i64>(5)? as u64,
                r.get::<_, f64>(6)?,
            ))
        })
        .ok()?;
    let (mut live, mut live_usd, mut batch, mut batch_usd, mut batch_at_live) =
        (0u64, 0.0, 0u64, 0.0, 0.0);
    for row in rows.flatten() {
        let (source, model, calls, prompt, completion, cached, usd) = row;
        match source.as_str() {
            "live" => {
                live += calls;
                live_usd += usd;
            }
            "batch" => {
                batch += calls;
                batch_usd += usd;
                batch_at_live += pricing.cost(
                    &model,
                    &TokenUsage {
                        prompt_tokens: prompt,
                        completion_tokens: completion,
                        cached_tokens: cached,
                    },
                );
            }
            _ => {}
        }
    }
    if live + batch == 0 {
        return None;
    }
    let mut note = format!("Paid, from the sweep's ledger: {live} live calls ${live_usd:.4}");
    if batch > 0 {
        note.push_str(&format!(
            "; {batch} calls answered in batches ${batch_usd:.4} (${batch_at_live:.4} at the live price: batching saved ${:.4})",
            batch_at_live - batch_usd
        ));
    }
    note.push_str(
        ". The tables' costs are each game's calls at the list price, however they were served.",
    );
    Some(note)
}
