//! What a run directory's ledger says was paid, for the report's notes: live and batch calls, and
//! what batching saved (the batch answers at the live price, less what they cost).
//!
//! The tables report each game's own cost at list price, the same whether its calls were live,
//! cached or batched (`result.json`); what was actually paid is the ledger's, in `sleuth.db` beside
//! the games of a sweep. Read here through the store's read-only reader (`sleuth_store::read`, where
//! the query is), so a report of a running sweep never blocks it.

use std::path::Path;

use sleuth_llm::TokenUsage;
use sleuth_store::StoreReader;

/// The ledger's line for the report, or `None` when `dir` holds no sweep store (a folder of games
/// played one by one), the store cannot be read, or nothing was paid.
pub fn ledger_note(dir: &Path) -> Option<String> {
    let db = sleuth_store::RunDir::new(dir).store();
    if !db.is_file() {
        return None;
    }
    let reader = StoreReader::open(&db).ok()?;
    let text = reader.latest_sweep_text().ok().flatten();
    let pricing = sleuth_sweep::models::prices_of_text(text.as_deref());
    let rows = reader.spend().ok()?;
    let (mut live, mut live_usd, mut batch, mut batch_usd, mut batch_at_live) =
        (0u64, 0.0, 0u64, 0.0, 0.0);
    for row in rows {
        match row.source.as_str() {
            "live" => {
                live += row.calls;
                live_usd += row.cost_usd;
            }
            "batch" => {
                batch += row.calls;
                batch_usd += row.cost_usd;
                batch_at_live += pricing.cost(
                    &row.model,
                    &TokenUsage {
                        prompt_tokens: row.prompt_tokens,
                        completion_tokens: row.completion_tokens,
                        cached_tokens: row.cached_tokens,
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
