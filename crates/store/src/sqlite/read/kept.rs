//! The requests a sweep kept for readers (`Store::put_request`), read back for the viewer's call
//! pages. Two layouts live in one file: requests appended under their call's ledger row with their
//! messages by row (`kept_requests`, `kept_messages`), and requests under their cache key with their
//! messages by hash (`requests`, `messages`), as sleuths before issue 32's twelfth piece wrote them.

use rusqlite::{Connection, OptionalExtension};

use super::StoreReader;
use crate::error::StoreError;
use crate::sqlite::{has_column, table_exists};

impl StoreReader {
    /// The request kept for the answer under a cache key, read by `read` from its record and a lookup
    /// of its messages' compressed texts by hash (the format is the gateway's,
    /// `llm::gateway::requests`; the store only keeps the bytes). `None` when none was kept: an
    /// embedding, or a store written before requests were kept. A message that cannot be read is
    /// `None` to the lookup, like one never kept.
    ///
    /// Where it is: under the ledger row the cache row names (`kept_requests`, messages by row in
    /// `kept_messages`), else under its key in `requests` — messages by row when this sleuth kept it
    /// there, by hash in `messages` when an older one did.
    pub fn kept_request<T>(
        &self,
        key: &[u8],
        read: impl FnOnce(&[u8], &mut dyn FnMut(&[u8]) -> Option<Vec<u8>>) -> T,
    ) -> Result<Option<T>, StoreError> {
        let c = &self.conn;
        let run = || -> rusqlite::Result<Option<T>> {
            let Some((record, rows)) = find(c, key)? else {
                return Ok(None);
            };
            let Some(rows) = rows else {
                // An older sleuth's: messages by hash.
                if !table_exists(c, "messages")? {
                    return Ok(Some(read(&record, &mut |_| None)));
                }
                let mut text = c.prepare_cached("SELECT text FROM messages WHERE hash = ?1")?;
                let mut lookup = |hash: &[u8]| {
                    text.query_row([hash], |r| r.get::<_, Vec<u8>>(0))
                        .optional()
                        .ok()
                        .flatten()
                };
                return Ok(Some(read(&record, &mut lookup)));
            };
            let mut texts = std::collections::HashMap::new();
            let mut text =
                c.prepare_cached("SELECT hash, text FROM kept_messages WHERE id = ?1")?;
            for row in rows.chunks_exact(8) {
                let mut id = [0u8; 8];
                id.copy_from_slice(row);
                if let Some((hash, body)) = text
                    .query_row([i64::from_le_bytes(id)], |r| {
                        Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, Vec<u8>>(1)?))
                    })
                    .optional()?
                {
                    texts.insert(hash, body);
                }
            }
            let mut lookup = |hash: &[u8]| texts.get(hash).cloned();
            Ok(Some(read(&record, &mut lookup)))
        };
        run().map_err(|e| self.err(e))
    }
}

/// A kept request's record, and its messages' rows (8-byte little-endian ids) when it names them by
/// row rather than by hash.
type Found = (Vec<u8>, Option<Vec<u8>>);

/// The record under `key` and, when its messages are named by row, their rows: under the ledger row
/// the cache row names first, under the key itself second.
fn find(c: &Connection, key: &[u8]) -> rusqlite::Result<Option<Found>> {
    if table_exists(c, "kept_requests")? && has_column(c, "cache", "request")? {
        let found = c
            .query_row(
                "SELECT k.value, k.messages FROM cache JOIN kept_requests k \
                 ON k.id = cache.request WHERE cache.key = ?1",
                [key],
                |r| Ok((r.get(0)?, Some(r.get(1)?))),
            )
            .optional()?;
        if found.is_some() {
            return Ok(found);
        }
    }
    if !table_exists(c, "requests")? {
        return Ok(None);
    }
    let sql = if has_column(c, "requests", "messages")? {
        "SELECT value, messages FROM requests WHERE key = ?1"
    } else {
        "SELECT value, NULL FROM requests WHERE key = ?1"
    };
    c.query_row(sql, [key], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SqliteStore;

    #[test]
    fn a_request_an_older_sleuth_kept_by_hash_reads_back_after_a_new_one_opens_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sleuth.db");
        let old = Connection::open(&path).expect("a file");
        old.execute_batch(
            "CREATE TABLE cache (key BLOB PRIMARY KEY, kind TEXT NOT NULL, model TEXT NOT NULL,
                 value BLOB NOT NULL, created_at TEXT NOT NULL) WITHOUT ROWID;
             CREATE TABLE requests (key BLOB PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
             CREATE TABLE messages (hash BLOB PRIMARY KEY, text BLOB NOT NULL) WITHOUT ROWID;
             INSERT INTO cache VALUES (x'07', 'chat', 'm', x'00', 't');
             INSERT INTO requests VALUES (x'07', x'01');
             INSERT INTO messages VALUES (x'09', x'02');",
        )
        .expect("an older sleuth's file");
        drop(old);
        drop(SqliteStore::open(&path).expect("opened and migrated"));
        let r = StoreReader::open(&path).expect("reader");
        let kept = r
            .kept_request(&[7u8], |record, text| (record.to_vec(), text(&[9u8])))
            .expect("request");
        assert_eq!(kept, Some((vec![1u8], Some(vec![2u8]))));
    }

    fn live_call(key: &str) -> crate::LedgerEntry {
        crate::LedgerEntry {
            run: "r1".into(),
            sweep: "s1".into(),
            game: "g1".into(),
            arm: "a".into(),
            model: "m".into(),
            phase: "gameplay".into(),
            framework: "ocot".into(),
            purpose: "talk".into(),
            source: crate::CallSource::Live,
            prompt_tokens: 10,
            completion_tokens: 2,
            cached_tokens: 0,
            cost_usd: 0.0,
            key: Some(key.into()),
            latency_ms: Some(40),
            retries: 0,
            id: None,
        }
    }

    /// The answer, its ledger row and its request in one write: the request under the ledger row, a
    /// request with a bad repeat left out while its answer is stored, and a call without a ledger
    /// row kept under its key.
    #[tokio::test]
    async fn an_answer_and_its_request_are_written_together() {
        use crate::{CacheKind, KeptMessage, Store};
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sleuth.db");
        let store = SqliteStore::open(&path).expect("store");
        let (a, b, c) = ([1u8; 32], [2u8; 32], [3u8; 32]);
        let rows = store
            .cache_put_kept(
                &a,
                CacheKind::Chat,
                "m",
                b"answer a",
                &[live_call("01")],
                b"record a",
                &[
                    KeptMessage::New([9u8; 32], b"script".to_vec()),
                    KeptMessage::Same(0),
                ],
            )
            .await
            .expect("written")
            .expect("kept");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0], rows[1], "a repeat names the same row");
        let bad = store
            .cache_put_kept(
                &b,
                CacheKind::Chat,
                "m",
                b"answer b",
                &[live_call("02")],
                b"record b",
                &[KeptMessage::Same(0)],
            )
            .await
            .expect("the answer is written");
        assert_eq!(bad, None, "a malformed request is not kept");
        let unledgered = store
            .cache_put_kept(
                &c,
                CacheKind::Chat,
                "m",
                b"answer c",
                &[],
                b"record c",
                &[KeptMessage::Row(rows[0])],
            )
            .await
            .expect("written");
        assert_eq!(unledgered, Some(vec![rows[0]]));
        for (key, answer) in [(&a, &b"answer a"[..]), (&b, b"answer b"), (&c, b"answer c")] {
            let got = store.cache_get(key).await.expect("read");
            assert_eq!(got.as_deref(), Some(answer), "every answer is stored");
        }

        let r = StoreReader::open(&path).expect("reader");
        let read = |key: &[u8]| {
            r.kept_request(key, |record, text| (record.to_vec(), text(&[9u8; 32])))
                .expect("read")
        };
        let (record, text) = read(&a).expect("a's request");
        assert_eq!(
            (&record[..], text.as_deref()),
            (&b"record a"[..], Some(&b"script"[..]))
        );
        assert!(read(&b).is_none(), "b's request was left out");
        let (record, text) = read(&c).expect("c's request, under its key");
        assert_eq!(
            (&record[..], text.as_deref()),
            (&b"record c"[..], Some(&b"script"[..]))
        );
        let under_ledger: i64 = Connection::open(&path)
            .expect("open")
            .query_row(
                "SELECT COUNT(*) FROM kept_requests k JOIN cache c ON c.request = k.id",
                [],
                |row| row.get(0),
            )
            .expect("count");
        assert_eq!(under_ledger, 1, "a's request sits under its ledger row");
    }
}
