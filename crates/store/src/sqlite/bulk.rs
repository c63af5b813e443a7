//! Whole-table reads for `sleuth export` (`crates/export`): the games in one state across every
//! sweep, the ledger from a row id on, and the annotation campaigns' answers. Here, beside the
//! viewer's paged queries in `read.rs`, because every query of the store's schema lives in this crate
//! (issue 31); the export only turns these rows into tables.
//!
//! The ledger is read in chunks of its primary key (`id > after ORDER BY id LIMIT n`), so an export
//! of a sweep of millions of calls holds one chunk at a time, and an export run again starts where
//! the last one stopped.

use rusqlite::params;

use super::read::{call_from, game_from, GameInfo, LedgerCall, StoreReader, GAME_COLUMNS};
use crate::error::StoreError;

/// One ledger row with every column the table has: the call as the viewer reads it
/// ([`LedgerCall`]) and where it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerRow {
    /// The call: its id (the order calls were recorded in, never reused), model, purpose, source,
    /// tokens, cost and cache key.
    pub call: LedgerCall,
    /// The `sweep run` process that made the call (`runs.id`).
    pub run: String,
    pub sweep: String,
    pub game: String,
    pub arm: String,
}

/// One annotator's answer to one item of a campaign, with what the item was about.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnotationRow {
    pub campaign: String,
    /// The campaign's kind (`responses`, `rankings`, `questions`).
    pub kind: String,
    pub item: i64,
    pub annotator: String,
    /// The answer as stored (JSON text).
    pub answer: String,
    /// RFC 3339: the last time it was given.
    pub answered_at: String,
    /// The item's hidden half (JSON text): which game, character or condition it was drawn from;
    /// `None` when the item row is missing.
    pub item_hidden: Option<String>,
}

impl StoreReader {
    /// Every game in `state`, all sweeps, by sweep and then plan order.
    pub fn games_in_state(&self, state: &str) -> Result<Vec<GameInfo>, StoreError> {
        let run = || -> rusqlite::Result<Vec<GameInfo>> {
            let mut st = self.conn.prepare(&format!(
                "SELECT {GAME_COLUMNS} FROM games WHERE state = ?1 ORDER BY sweep, seq"
            ))?;
            let rows = st.query_map([state], game_from)?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }

    /// At most `limit` ledger rows with an id above `after`, in id order.
    pub fn ledger_rows(&self, after: i64, limit: u32) -> Result<Vec<LedgerRow>, StoreError> {
        let run = || -> rusqlite::Result<Vec<LedgerRow>> {
            let columns = self.call_columns();
            let mut st = self.conn.prepare(&format!(
                "SELECT {columns}, run, sweep, game, arm FROM ledger \
                 WHERE id > ?1 ORDER BY id LIMIT ?2"
            ))?;
            // The call's columns first, as `call_from` reads them; then where it was made.
            let rest = columns.split(',').count();
            let rows = st.query_map(params![after, i64::from(limit)], |r| {
                Ok(LedgerRow {
                    call: call_from(r)?,
                    run: r.get(rest)?,
                    sweep: r.get(rest + 1)?,
                    game: r.get(rest + 2)?,
                    arm: r.get(rest + 3)?,
                })
            })?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }

    /// The ledger's row count (what an export of every call must hold).
    pub fn ledger_count(&self) -> Result<u64, StoreError> {
        self.conn
            .query_row("SELECT COUNT(*) FROM ledger", [], |r| r.get::<_, i64>(0))
            .map(|n| n.max(0) as u64)
            .map_err(|e| self.err(e))
    }

    /// Every annotation of every campaign, by campaign, item and annotator. Empty when the run has
    /// no campaign tables: they are made by the first `sleuth annotate`, never by a reader.
    pub fn annotation_rows(&self) -> Result<Vec<AnnotationRow>, StoreError> {
        let run = || -> rusqlite::Result<Vec<AnnotationRow>> {
            let tables: i64 = self.conn.query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' \
                 AND name IN ('campaigns', 'campaign_items', 'annotations')",
                [],
                |r| r.get(0),
            )?;
            if tables < 3 {
                return Ok(Vec::new());
            }
            let mut st = self.conn.prepare(
                "SELECT a.campaign, c.kind, a.item, a.annotator, a.answer, a.answered_at, i.hidden \
                 FROM annotations a JOIN campaigns c ON c.id = a.campaign \
                 LEFT JOIN campaign_items i ON i.campaign = a.campaign AND i.item = a.item \
                 ORDER BY a.campaign, a.item, a.annotator",
            )?;
            let rows = st.query_map([], |r| {
                Ok(AnnotationRow {
                    campaign: r.get(0)?,
                    kind: r.get(1)?,
                    item: r.get(2)?,
                    annotator: r.get(3)?,
                    answer: r.get(4)?,
                    answered_at: r.get(5)?,
                    item_hidden: r.get(6)?,
                })
            })?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CallSource, GameRow, GameState, LedgerEntry, SqliteStore, Store};
    use serde_json::json;

    fn call(game: &str) -> LedgerEntry {
        LedgerEntry {
            run: "r1".into(),
            sweep: "s1".into(),
            game: game.into(),
            arm: "a".into(),
            model: "m".into(),
            phase: "gameplay".into(),
            framework: "player".into(),
            purpose: "talk".into(),
            source: CallSource::Live,
            prompt_tokens: 3,
            completion_tokens: 2,
            cached_tokens: 1,
            cost_usd: 0.5,
            key: None,
            latency_ms: Some(40),
            retries: 0,
            id: None,
        }
    }

    fn game(id: &str, state: GameState) -> GameRow {
        GameRow {
            id: id.into(),
            sweep: "s1".into(),
            arm: "a".into(),
            arm_label: "a".into(),
            script: "Glasshouse".into(),
            repeat: 0,
            seed: 1,
            spec: "{}".into(),
            state,
            attempts: 0,
            crashes: 0,
            reason: None,
            stage: None,
            updated_at: String::new(),
        }
    }

    #[tokio::test]
    async fn the_ledger_reads_in_chunks_after_a_watermark_and_games_by_state() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sleuth.db");
        let store = SqliteStore::open(&path).expect("store");
        store
            .add_games(&[
                game("g1", GameState::Pending),
                game("g2", GameState::Pending),
            ])
            .await
            .expect("games");
        store.put_result("g2", "{}").await.expect("result");
        let calls: Vec<LedgerEntry> = (0..5).map(|_| call("g1")).collect();
        store.record_calls(&calls).await.expect("ledger");

        let r = StoreReader::open(&path).expect("reader");
        assert_eq!(r.ledger_count().expect("count"), 5);
        let first = r.ledger_rows(0, 2).expect("chunk");
        assert_eq!(first.len(), 2);
        let rest = r.ledger_rows(first[1].call.id, 100).expect("rest");
        assert_eq!(rest.len(), 3, "the rows after the watermark, once each");
        assert!(rest
            .iter()
            .all(|c| c.call.id > first[1].call.id && c.game == "g1"));
        let done = r.games_in_state("done").expect("done");
        assert_eq!(
            done.iter().map(|g| g.id.as_str()).collect::<Vec<_>>(),
            ["g2"]
        );
        assert!(
            r.annotation_rows().expect("no campaigns").is_empty(),
            "no campaign tables, no rows"
        );

        let a = crate::annotations::Annotations::open(&path).expect("campaign tables");
        let items = [(json!({"text": "shown"}), json!({"game": "g2"}))];
        let people = [("ann".to_string(), "token-1".to_string())];
        a.create_campaign(&crate::annotations::NewCampaign {
            id: "c1",
            kind: "responses",
            settings: &json!({}),
            annotators: &people,
            items: &items,
        })
        .expect("campaign");
        a.record("c1", 0, "ann", &json!({"scores": [4, 5, 3]}))
            .expect("answer");
        let rows = StoreReader::open(&path)
            .expect("reader")
            .annotation_rows()
            .expect("rows");
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (
                rows[0].kind.as_str(),
                rows[0].annotator.as_str(),
                rows[0].item
            ),
            ("responses", "ann", 0)
        );
        let hidden: serde_json::Value =
            serde_json::from_str(rows[0].item_hidden.as_deref().expect("the item")).expect("json");
        assert_eq!(
            hidden,
            json!({"game": "g2"}),
            "what the item was drawn from"
        );
    }
}
