//! The store conformance suite (`sleuth::store::conformance`) on the embedded SQLite store, plus what is
//! particular to it: the file survives its process, and many concurrent writers are committed together.

use sleuth::store::{conformance, CacheKind, SqliteStore, Store};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(&dir.path().join("sleuth.db")).expect("open");
    conformance::run(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_was_written_is_there_after_reopening() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sleuth.db");
    {
        let store = SqliteStore::open(&path).expect("open");
        store
            .cache_put(&[9; 32], CacheKind::Chat, "sim-1", b"kept", &[])
            .await
            .expect("put");
    }
    let store = SqliteStore::open(&path).expect("reopen");
    assert_eq!(
        store.cache_get(&[9; 32]).await.expect("get").as_deref(),
        Some(&b"kept"[..])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_concurrent_cache_writes_all_land() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(&dir.path().join("sleuth.db")).expect("open");
    let writes = (0..2_000u32).map(|i| {
        let store = store.clone();
        async move {
            let mut key = [0u8; 32];
            key[..4].copy_from_slice(&i.to_le_bytes());
            store
                .cache_put(&key, CacheKind::Chat, "sim-1", &i.to_le_bytes(), &[])
                .await
                .expect("put");
            // Committed before the put returned: readable at once.
            let got = store.cache_get(&key).await.expect("get");
            assert_eq!(got.as_deref(), Some(&i.to_le_bytes()[..]));
        }
    });
    futures::future::join_all(writes).await;
    assert_eq!(store.cache_len().await.expect("len"), 2_000);
}

#[test]
fn a_store_of_another_schema_version_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sleuth.db");
    drop(SqliteStore::open(&path).expect("open"));
    let conn = rusqlite::Connection::open(&path).expect("open the file directly");
    conn.execute(
        "UPDATE meta SET value = '999' WHERE key = 'schema_version'",
        [],
    )
    .expect("edit the version");
    drop(conn);
    let err = SqliteStore::open(&path).err().expect("refused");
    assert!(err.to_string().contains("schema version 999"), "{err}");
}
