//! A run's annotation campaigns (`docs/humans.md`, "Campaigns"): people judge what a sweep's games
//! produced, blind, and their answers belong beside those games in the run's `sleuth.db`, so a run
//! directory carries its human evaluation with it. The four tables are additive (created here when
//! missing, outside the sweep's schema and its version), so sweep and campaigns share the file.
//!
//! An [`Annotations`] is its own read-write connection, not the sweep's writer thread: a viewer may
//! collect answers while no sweep runs, or while one writes the same file (WAL mode and a busy
//! timeout let both wait their turn). Every answer is committed in its own transaction before
//! [`Annotations::record`] returns, so a killed viewer loses nothing an annotator was told was saved.
//! Only tokens' SHA-256 is stored: a copy of the file does not let anyone answer as an annotator.
//!
//! A fifth table, `campaign_sessions`, keeps the viewer's annotator sessions (the SHA-256 of each
//! browser's session secret, never the secret): in the store rather than in the viewer's memory, so
//! that an annotator's browser stays signed in across a restart of `sleuth view`.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use rusqlite::types::Type;
use rusqlite::Error as E;
use rusqlite::TransactionBehavior::Immediate;
use rusqlite::{params, Connection, OptionalExtension, Params, Row};
use serde::de::DeserializeOwned;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{backend, now};
use crate::error::StoreError;

/// The connection's settings and the campaign tables, run at every open.
const SETUP: &str = "
PRAGMA busy_timeout = 5000; -- ms a statement waits for a sweep writing the same file
PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
CREATE TABLE IF NOT EXISTS campaigns (id TEXT PRIMARY KEY, kind TEXT NOT NULL,
    settings TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS campaign_annotators (campaign TEXT NOT NULL, name TEXT NOT NULL,
    token_sha256 TEXT NOT NULL UNIQUE, PRIMARY KEY (campaign, name));
CREATE TABLE IF NOT EXISTS campaign_items (campaign TEXT NOT NULL, item INTEGER NOT NULL,
    shown TEXT NOT NULL, hidden TEXT NOT NULL, PRIMARY KEY (campaign, item));
CREATE TABLE IF NOT EXISTS annotations (campaign TEXT NOT NULL, item INTEGER NOT NULL,
    annotator TEXT NOT NULL, answer TEXT NOT NULL, answered_at TEXT NOT NULL,
    PRIMARY KEY (campaign, item, annotator));
CREATE TABLE IF NOT EXISTS campaign_sessions (secret_sha256 TEXT PRIMARY KEY,
    campaign TEXT NOT NULL, annotator TEXT NOT NULL, created_at TEXT NOT NULL);
-- An annotator's answers, found without reading every answer of the campaign: each queue page
-- asks which items its annotator has answered (a hundred annotators, a page each).
CREATE INDEX IF NOT EXISTS annotations_by_annotator ON annotations (campaign, annotator, item);
";

/// The lookups behind every page an annotator opens or posts, by key (`the_queue_s_lookups_use_an_index`):
/// one item, one answer, the items one annotator has answered.
const ONE_ITEM: &str =
    "SELECT item, shown, hidden FROM campaign_items WHERE campaign = ?1 AND item = ?2";
const ONE_ANSWER: &str = "SELECT item, annotator, answer, answered_at FROM annotations
     WHERE campaign = ?1 AND item = ?2 AND annotator = ?3";
const ANSWERED: &str =
    "SELECT item FROM annotations WHERE campaign = ?1 AND annotator = ?2 ORDER BY item";

/// A run's annotation campaigns: its own read-write connection to the run's store. Behind a mutex
/// because a connection serves one statement at a time and callers share one per viewer.
pub struct Annotations {
    conn: Mutex<Connection>,
}

/// A campaign to create, all at once: its items are drawn and its tokens handed out by the caller,
/// so that a campaign is never seen half made.
pub struct NewCampaign<'a> {
    pub id: &'a str,
    pub kind: &'a str,
    pub settings: &'a Value,
    /// (name, token). The token is printed once by the caller; only its SHA-256 is kept.
    pub annotators: &'a [(String, String)],
    /// (shown, hidden), numbered 0.. in this order: the order they were drawn in.
    pub items: &'a [(Value, Value)],
}

/// A campaign as listed: what a researcher needs to pick one, without its items.
#[derive(Debug, Clone, PartialEq)]
pub struct CampaignRow {
    pub id: String,
    pub kind: String,
    pub settings: Value,
    /// RFC 3339.
    pub created_at: String,
    pub annotators: Vec<String>,
    /// How many; fetched with [`Annotations::items`] when wanted.
    pub items: u32,
}

/// One item; `hidden` must never reach an annotator.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemRow {
    pub item: u32,
    pub shown: Value,
    pub hidden: Value,
}

/// One annotator's latest answer to one item.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerRow {
    pub item: u32,
    pub annotator: String,
    pub answer: Value,
    /// RFC 3339: the last time it was given.
    pub answered_at: String,
}

/// How far an annotator is, so a researcher knows whom to chase.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub annotator: String,
    pub done: u32,
    pub total: u32,
    pub last_answer_at: Option<String>,
}

/// The hash kept in place of a token: lower-case hex SHA-256.
fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The order in which `annotator` works through a campaign of `items` items: the item numbers
/// sorted by the SHA-256 of (seed, annotator, item), a shuffle seeded by both. A hash rather than a
/// random generator so that the order never changes with a library's version: an annotator who
/// comes back to a half-done campaign finds the items where they left them.
pub fn annotator_order(seed: u64, annotator: &str, items: u32) -> Vec<u32> {
    let mut keyed: Vec<([u8; 32], u32)> = (0..items)
        .map(|i| {
            let key = Sha256::digest(format!("{seed}\n{annotator}\n{i}").as_bytes());
            (key.into(), i)
        })
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// A JSON column, parsed inside the row's closure so that a bad value fails like any other
/// conversion and [`rows`] reports it as corrupt.
fn json_at<T: DeserializeOwned>(r: &Row, i: usize) -> rusqlite::Result<T> {
    let text: String = r.get(i)?;
    serde_json::from_str(&text).map_err(|e| E::FromSqlConversionFailure(i, Type::Text, Box::new(e)))
}

/// Runs a query and reads each row; a value that does not read back is `Corrupt`, naming `what` was
/// being read, rather than a failure of the backend.
fn rows<T>(
    conn: &Connection,
    what: &str,
    sql: &str,
    p: impl Params,
    f: impl FnMut(&Row) -> rusqlite::Result<T>,
) -> Result<Vec<T>, StoreError> {
    let mut stmt = conn.prepare_cached(sql).map_err(backend)?;
    let out = stmt.query_map(p, f).and_then(Iterator::collect);
    out.map_err(|e| match e {
        E::FromSqlConversionFailure(..)
        | E::IntegralValueOutOfRange(..)
        | E::InvalidColumnType(..) => StoreError::Corrupt {
            what: what.to_string(),
            message: e.to_string(),
        },
        e => backend(e),
    })
}

/// A constraint that refused a row means it was there already (an id, a name, a token), and says
/// `what`; anything else is the backend's.
fn conflict(e: E, what: impl FnOnce() -> String) -> StoreError {
    if e.sqlite_error_code() != Some(rusqlite::ErrorCode::ConstraintViolation) {
        return backend(e);
    }
    StoreError::Conflict(format!("{}: {e}", what()))
}

impl Annotations {
    /// Opens the run's store read-write, creating the campaign tables (and the file) if missing;
    /// the sweep's own tables are left to [`super::SqliteStore`].
    pub fn open(db: &Path) -> Result<Annotations, StoreError> {
        let open_err = |e: E| StoreError::Open {
            at: db.display().to_string(),
            message: e.to_string(),
        };
        let conn = Connection::open(db).map_err(open_err)?;
        conn.execute_batch(SETUP).map_err(open_err)?;
        Ok(Annotations { conn: conn.into() })
    }

    /// A panic while the lock was held left no transaction open (rusqlite rolls back on drop), so
    /// the connection is still good.
    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Creates the campaign in one transaction, so it exists whole or not at all; an existing id is
    /// refused, never merged into.
    pub fn create_campaign(&self, c: &NewCampaign) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(Immediate).map_err(backend)?;
        tx.execute(
            "INSERT INTO campaigns (id, kind, settings, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![c.id, c.kind, c.settings.to_string(), now()],
        )
        .map_err(|e| conflict(e, || format!("campaign `{}` already exists", c.id)))?;
        for (name, token) in c.annotators {
            tx.execute(
                "INSERT INTO campaign_annotators (campaign, name, token_sha256) VALUES (?1, ?2, ?3)",
                params![c.id, name, token_hash(token)],
            )
            .map_err(|e| conflict(e, || format!("campaign `{}`: annotator `{name}`", c.id)))?;
        }
        for (n, (shown, hidden)) in (0u32..).zip(c.items) {
            tx.execute(
                "INSERT INTO campaign_items (campaign, item, shown, hidden) VALUES (?1, ?2, ?3, ?4)",
                params![c.id, n, shown.to_string(), hidden.to_string()],
            )
            .map_err(backend)?;
        }
        tx.commit().map_err(backend)
    }

    /// Every campaign, oldest first (ties by id), so a list reads in the order they were made.
    pub fn campaigns(&self) -> Result<Vec<CampaignRow>, StoreError> {
        self.campaign_rows(None)
    }

    /// One campaign; `None` if no campaign has that id.
    pub fn campaign(&self, id: &str) -> Result<Option<CampaignRow>, StoreError> {
        Ok(self.campaign_rows(Some(id))?.into_iter().next())
    }

    fn campaign_rows(&self, id: Option<&str>) -> Result<Vec<CampaignRow>, StoreError> {
        rows(
            &self.conn(),
            "a campaign",
            "SELECT id, kind, settings, created_at,
                    (SELECT COUNT(*) FROM campaign_items i WHERE i.campaign = c.id),
                    (SELECT json_group_array(name ORDER BY name) FROM campaign_annotators a
                     WHERE a.campaign = c.id)
             FROM campaigns c WHERE ?1 IS NULL OR id = ?1 ORDER BY created_at, id",
            [id],
            |r| {
                Ok(CampaignRow {
                    id: r.get(0)?,
                    kind: r.get(1)?,
                    settings: json_at(r, 2)?,
                    created_at: r.get(3)?,
                    items: r.get(4)?,
                    annotators: json_at(r, 5)?,
                })
            },
        )
    }

    /// The campaign's items in the order they were drawn; none for an unknown campaign
    /// ([`Annotations::campaign`] tells whether it exists).
    pub fn items(&self, campaign: &str) -> Result<Vec<ItemRow>, StoreError> {
        self.item_rows(campaign, None)
    }

    /// One item; `None` if the campaign has no such item.
    pub fn item(&self, campaign: &str, item: u32) -> Result<Option<ItemRow>, StoreError> {
        Ok(self.item_rows(campaign, Some(item))?.into_iter().next())
    }

    /// One statement per use rather than `?2 IS NULL OR item = ?2`: SQLite plans a statement
    /// before its parameters are bound, so the `OR` form reads every item of the campaign to find
    /// one, on every page an annotator opens. (Both statements take the same parameters, hence
    /// the list's `?2 IS NULL`, which holds.)
    fn item_rows(&self, campaign: &str, item: Option<u32>) -> Result<Vec<ItemRow>, StoreError> {
        let sql = match item {
            Some(_) => ONE_ITEM,
            None => {
                "SELECT item, shown, hidden FROM campaign_items WHERE campaign = ?1 AND ?2 IS NULL
                 ORDER BY item"
            }
        };
        rows(
            &self.conn(),
            &format!("an item of campaign `{campaign}`"),
            sql,
            params![campaign, item],
            |r| {
                Ok(ItemRow {
                    item: r.get(0)?,
                    shown: json_at(r, 1)?,
                    hidden: json_at(r, 2)?,
                })
            },
        )
    }

    /// Who holds `token`: (campaign, annotator), or `None` for a token nobody was given. Looked up
    /// by hash, since the token itself was never stored.
    pub fn annotator_for_token(&self, token: &str) -> Result<Option<(String, String)>, StoreError> {
        self.conn()
            .query_row(
                "SELECT campaign, name FROM campaign_annotators WHERE token_sha256 = ?1",
                [token_hash(token)],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(backend)
    }

    /// Starts a browser session of `annotator` in `campaign`: keeps the SHA-256 of `secret` (the
    /// value of the browser's cookie, drawn by the caller), so the session outlives the viewer's
    /// process but a copy of the file does not hold a usable cookie. An annotator the campaign does
    /// not have is refused.
    pub fn start_session(
        &self,
        campaign: &str,
        annotator: &str,
        secret: &str,
    ) -> Result<(), StoreError> {
        let n = self
            .conn()
            .execute(
                "INSERT INTO campaign_sessions (secret_sha256, campaign, annotator, created_at)
                 SELECT ?1, campaign, name, ?4 FROM campaign_annotators
                 WHERE campaign = ?2 AND name = ?3",
                params![token_hash(secret), campaign, annotator, now()],
            )
            .map_err(|e| conflict(e, || "a session with this secret".to_string()))?;
        if n == 0 {
            return Err(StoreError::NotFound(format!(
                "campaign `{campaign}` has no annotator `{annotator}`"
            )));
        }
        Ok(())
    }

    /// Whose session `secret` is: (campaign, annotator), or `None` for a secret no session was
    /// started with (or whose annotator is no longer in the campaign).
    pub fn session(&self, secret: &str) -> Result<Option<(String, String)>, StoreError> {
        self.conn()
            .query_row(
                "SELECT s.campaign, s.annotator FROM campaign_sessions s
                 JOIN campaign_annotators a ON a.campaign = s.campaign AND a.name = s.annotator
                 WHERE s.secret_sha256 = ?1",
                [token_hash(secret)],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(backend)
    }

    /// Keeps `annotator`'s answer to `item`, replacing any earlier one, committed before it returns
    /// (see the module documentation). An unknown campaign, item or annotator is refused and named,
    /// so a stale page cannot file an answer nobody will read.
    pub fn record(
        &self,
        campaign: &str,
        item: u32,
        annotator: &str,
        answer: &Value,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(Immediate).map_err(backend)?;
        let (c, a, i): (bool, bool, bool) = tx
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM campaigns WHERE id = ?1),
                  EXISTS (SELECT 1 FROM campaign_annotators WHERE campaign = ?1 AND name = ?3),
                  EXISTS (SELECT 1 FROM campaign_items WHERE campaign = ?1 AND item = ?2)",
                params![campaign, item, annotator],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .map_err(backend)?;
        match (c, a, i) {
            (false, _, _) => Err(format!("no campaign `{campaign}`")),
            (_, false, _) => Err(format!(
                "campaign `{campaign}` has no annotator `{annotator}`"
            )),
            (_, _, false) => Err(format!("campaign `{campaign}` has no item {item}")),
            _ => Ok(()),
        }
        .map_err(StoreError::NotFound)?;
        tx.execute(
            "INSERT INTO annotations (campaign, item, annotator, answer, answered_at)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (campaign, item, annotator)
             DO UPDATE SET answer = excluded.answer, answered_at = excluded.answered_at",
            params![campaign, item, annotator, answer.to_string(), now()],
        )
        .map_err(backend)?;
        tx.commit().map_err(backend)
    }

    /// Every answer of the campaign, by item then annotator: what the report scores.
    pub fn answers(&self, campaign: &str) -> Result<Vec<AnswerRow>, StoreError> {
        self.answer_rows(campaign, None)
    }

    /// One annotator's answer to one item, to show it back when they revisit the item.
    pub fn answer(
        &self,
        campaign: &str,
        item: u32,
        annotator: &str,
    ) -> Result<Option<AnswerRow>, StoreError> {
        let one = self.answer_rows(campaign, Some((item, annotator)))?;
        Ok(one.into_iter().next())
    }

    /// The items `annotator` has answered, ascending: where their queue stands, without reading
    /// the answers themselves.
    pub fn answered(&self, campaign: &str, annotator: &str) -> Result<Vec<u32>, StoreError> {
        rows(
            &self.conn(),
            &format!("an answer of campaign `{campaign}`"),
            ANSWERED,
            params![campaign, annotator],
            |r| r.get(0),
        )
    }

    fn answer_rows(
        &self,
        campaign: &str,
        one: Option<(u32, &str)>,
    ) -> Result<Vec<AnswerRow>, StoreError> {
        let (item, annotator) = one.unzip();
        // As in `item_rows`: one answer is a primary-key lookup, not a pass over the campaign's.
        let sql = match one {
            Some(_) => ONE_ANSWER,
            None => {
                "SELECT item, annotator, answer, answered_at FROM annotations
                 WHERE campaign = ?1 AND ?2 IS NULL AND ?3 IS NULL ORDER BY item, annotator"
            }
        };
        rows(
            &self.conn(),
            &format!("an answer of campaign `{campaign}`"),
            sql,
            params![campaign, item, annotator],
            |r| {
                Ok(AnswerRow {
                    item: r.get(0)?,
                    annotator: r.get(1)?,
                    answer: json_at(r, 2)?,
                    answered_at: r.get(3)?,
                })
            },
        )
    }

    /// Each annotator's progress, by name; none for an unknown campaign. Counts distinct items, so
    /// an answer given again is not counted twice.
    pub fn progress(&self, campaign: &str) -> Result<Vec<Progress>, StoreError> {
        rows(
            &self.conn(),
            &format!("the progress of campaign `{campaign}`"),
            "SELECT a.name, COUNT(DISTINCT n.item), MAX(n.answered_at),
                    (SELECT COUNT(*) FROM campaign_items i WHERE i.campaign = a.campaign)
             FROM campaign_annotators a
             LEFT JOIN annotations n ON n.campaign = a.campaign AND n.annotator = a.name
             WHERE a.campaign = ?1 GROUP BY a.name ORDER BY a.name",
            [campaign],
            |r| {
                Ok(Progress {
                    annotator: r.get(0)?,
                    done: r.get(1)?,
                    last_answer_at: r.get(2)?,
                    total: r.get(3)?,
                })
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::SqliteStore;

    fn people(names: &[&str]) -> Vec<(String, String)> {
        let pair = |n: &&str| (n.to_string(), format!("token-of-{n}-x7"));
        names.iter().map(pair).collect()
    }

    fn items() -> Vec<(Value, Value)> {
        let item = |i: u32| (json!({"label": i}), json!({"arm": i}));
        (0..3).map(item).collect()
    }

    fn create(a: &Annotations, id: &str, people: &[(String, String)]) -> Result<(), StoreError> {
        let (settings, items) = (json!({"seed": id}), items());
        let c = NewCampaign {
            id,
            kind: "responses",
            settings: &settings,
            annotators: people,
            items: &items,
        };
        a.create_campaign(&c)
    }

    fn fresh() -> (tempfile::TempDir, Annotations) {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = Annotations::open(&dir.path().join("sleuth.db")).expect("open");
        (dir, a)
    }

    #[test]
    fn a_campaign_round_trips_and_its_tokens_are_only_hashed() {
        let (_dir, a) = fresh();
        create(&a, "c1", &people(&["bo", "al"])).expect("create");
        let all = a.campaigns().expect("campaigns");
        assert_eq!(all.len(), 1);
        let c = &all[0];
        assert_eq!((c.id.as_str(), c.kind.as_str()), ("c1", "responses"));
        assert_eq!((&c.settings, c.items), (&json!({"seed": "c1"}), 3));
        assert_eq!(c.annotators, vec!["al", "bo"]);
        assert_eq!(a.campaign("c1").expect("campaign").as_ref(), Some(c));
        assert_eq!(a.campaign("nope").expect("campaign"), None);
        let got = a.items("c1").expect("items");
        assert_eq!(got.iter().map(|r| r.item).collect::<Vec<_>>(), [0, 1, 2]);
        let pairs: Vec<_> = got.into_iter().map(|r| (r.shown, r.hidden)).collect();
        assert_eq!(pairs, items());
        let two = a.item("c1", 2).expect("item").expect("some");
        assert_eq!((two.item, two.shown), (2, json!({"label": 2})));
        assert_eq!(a.item("c1", 3).expect("item"), None);
        let sql = "SELECT group_concat(campaign || name || token_sha256) FROM campaign_annotators";
        let stored: String = a.conn().query_row(sql, [], |r| r.get(0)).expect("stored");
        for (_, token) in people(&["bo", "al"]) {
            assert!(!stored.contains(&token), "{stored}");
            assert!(stored.contains(&token_hash(&token)), "{stored}");
        }
        create(&a, "c2", &people(&["cy"])).expect("create");
        let found = |token: &str| a.annotator_for_token(token).expect("lookup");
        assert_eq!(found("token-of-al-x7"), Some(("c1".into(), "al".into())));
        assert_eq!(found("token-of-cy-x7"), Some(("c2".into(), "cy".into())));
        assert_eq!(found("token-of-al"), None);
    }

    #[test]
    fn answers_are_upserted_and_counted() {
        let (_dir, a) = fresh();
        create(&a, "c1", &people(&["bo", "al"])).expect("create");
        for (item, who, v) in [(1, "bo", 1), (0, "bo", 2), (1, "bo", 3), (1, "al", 4)] {
            a.record("c1", item, who, &json!({ "v": v })).expect("ok");
        }
        let got = a.answers("c1").expect("answers").into_iter();
        let got: Vec<_> = got.map(|r| (r.item, r.annotator, r.answer)).collect();
        let want = [(0, "bo", 2), (1, "al", 4), (1, "bo", 3)]
            .map(|(item, who, v)| (item, who.to_string(), json!({ "v": v })));
        assert_eq!(got, want);
        let one = a.answer("c1", 1, "bo").expect("answer").expect("some");
        assert_eq!(one.answer, json!({"v": 3}));
        assert_eq!(a.answer("c1", 2, "bo").expect("answer"), None);
        assert_eq!(a.answered("c1", "bo").expect("answered"), [0, 1]);
        assert!(a.answered("c1", "zed").expect("answered").is_empty());
        let progress = a.progress("c1").expect("progress");
        let counts = progress
            .iter()
            .map(|p| (p.annotator.as_str(), p.done, p.total));
        let counts: Vec<_> = counts.collect();
        assert_eq!(counts, vec![("al", 1, 3), ("bo", 2, 3)]);
        assert_eq!(progress[1].last_answer_at.as_ref(), Some(&one.answered_at));
        for (campaign, item, who, named) in [
            ("c1", 3, "bo", "item 3"),
            ("c1", 0, "zed", "annotator `zed`"),
            ("c9", 0, "bo", "campaign `c9`"),
        ] {
            let err = a.record(campaign, item, who, &json!(1)).unwrap_err();
            assert!(matches!(err, StoreError::NotFound(_)), "{err:?}");
            assert!(err.to_string().contains(named), "{err}");
        }
        assert_eq!(a.answers("c1").expect("answers").len(), 3);
    }

    #[test]
    fn answers_survive_reopening_beside_the_sweep_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sleuth.db");
        drop(SqliteStore::open(&path).expect("the sweep's store first"));
        let a = Annotations::open(&path).expect("open on a store");
        create(&a, "c1", &people(&["al"])).expect("create");
        a.record("c1", 2, "al", &json!({"ici": 1})).expect("ok");
        drop(a);
        drop(SqliteStore::open(&path).expect("the store opens beside the campaigns"));
        let a = Annotations::open(&path).expect("reopen");
        let got = a.answers("c1").expect("answers");
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].item, &got[0].answer), (2, &json!({"ici": 1})));
    }

    #[test]
    fn sessions_are_kept_by_hash_and_survive_reopening() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sleuth.db");
        let a = Annotations::open(&path).expect("open");
        create(&a, "c1", &people(&["al", "bo"])).expect("create");
        a.start_session("c1", "al", "secret-of-al").expect("start");
        let err = a.start_session("c1", "zed", "secret-z").unwrap_err();
        assert!(matches!(err, StoreError::NotFound(_)), "{err:?}");
        let err = a.start_session("c1", "bo", "secret-of-al").unwrap_err();
        assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");
        let sql = "SELECT group_concat(secret_sha256) FROM campaign_sessions";
        let stored: String = a.conn().query_row(sql, [], |r| r.get(0)).expect("stored");
        assert_eq!(stored, token_hash("secret-of-al"));
        drop(a);
        let a = Annotations::open(&path).expect("reopen");
        let al = Some(("c1".to_string(), "al".to_string()));
        assert_eq!(a.session("secret-of-al").expect("lookup"), al);
        assert_eq!(a.session("secret-of-a").expect("lookup"), None);
        assert_eq!(a.session("secret-z").expect("lookup"), None);
    }

    #[test]
    fn each_annotator_has_an_order_of_their_own_that_repeats() {
        let al = annotator_order(7, "al", 20);
        let mut sorted = al.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..20).collect::<Vec<_>>(), "a permutation");
        assert_eq!(al, annotator_order(7, "al", 20));
        assert_ne!(al, annotator_order(7, "bo", 20));
        assert_ne!(al, annotator_order(8, "al", 20));
        assert!(annotator_order(7, "al", 0).is_empty());
    }

    #[test]
    fn the_queue_s_lookups_use_an_index() {
        let (_dir, a) = fresh();
        for (sql, index) in [
            (ONE_ITEM, "(campaign=? AND item=?)"),
            (ONE_ANSWER, "(campaign=? AND item=? AND annotator=?)"),
            (
                ANSWERED,
                "annotations_by_annotator (campaign=? AND annotator=?)",
            ),
        ] {
            let plan: Vec<String> = a
                .conn()
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .and_then(|mut st| {
                    let unbound = vec![rusqlite::types::Null; st.parameter_count()];
                    let p = rusqlite::params_from_iter(unbound);
                    st.query_map(p, |r| r.get(3))?.collect()
                })
                .expect("plan");
            let plan = plan.join("; ");
            assert!(
                plan.starts_with("SEARCH") && plan.contains(index),
                "{sql}: {plan}"
            );
        }
    }

    #[test]
    fn an_existing_id_is_refused_and_nothing_changes() {
        let (_dir, a) = fresh();
        create(&a, "c1", &people(&["al"])).expect("create");
        a.record("c1", 0, "al", &json!(1)).expect("record");
        let read = || (a.campaigns().expect("list"), a.items("c1").expect("items"));
        let before = read();
        let err = create(&a, "c1", &people(&["dee"])).expect_err("refused");
        assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");
        assert!(err.to_string().contains("c1"), "{err}");
        assert_eq!(before, read());
        let dee = a.annotator_for_token("token-of-dee-x7").expect("lookup");
        assert_eq!(dee, None);
        assert_eq!(a.answers("c1").expect("answers").len(), 1);
    }
}
