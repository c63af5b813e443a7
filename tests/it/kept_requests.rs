//! `[gateway] keep_requests = false`: a sweep that keeps no requests (to spare the CPU and the disk
//! they cost a very large sweep, docs/performance.md section 9) plays the same games, caches and
//! bills the same calls, and leaves the requests and messages tables empty; by default every live
//! call's request is kept.

use crate::common;

use std::path::Path;

/// Runs a one-game sweep in `dir` with `extra` appended to the sweep file; returns the store.
fn sweep(dir: &Path, extra: &str) -> rusqlite::Connection {
    let file = dir.join("sweep.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"kept\"\nout = \"{}\"\nscripts = [\"{}\"]\nrepeats = 1\nseed = 3\n\
             [game]\nprotocol = \"wellplay\"\nframework = \"ocot\"\nmodel = \"sim\"\nrounds = 1\n\
             [models.sim]\nprovider = \"simulated\"\n{extra}",
            dir.join("run").display(),
            common::crate_file("examples")
                .join("orchard-press.toml")
                .display(),
        ),
    )
    .expect("sweep file");
    common::sweep_run_ok(dir, &file);
    rusqlite::Connection::open(dir.join("run/sleuth.db")).expect("the store")
}

fn count(db: &rusqlite::Connection, table: &str) -> i64 {
    db.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
        .expect("count")
}

fn result(db: &rusqlite::Connection) -> serde_json::Value {
    let text: String = db
        .query_row("SELECT result FROM results", [], |r| r.get(0))
        .expect("one result");
    serde_json::from_str(&text).expect("JSON")
}

#[test]
fn a_sweep_that_keeps_no_requests_plays_and_bills_the_same() {
    let (kept_dir, bare_dir) = (
        tempfile::tempdir().expect("temp"),
        tempfile::tempdir().expect("temp"),
    );
    let kept = sweep(kept_dir.path(), "");
    let bare = sweep(bare_dir.path(), "[gateway]\nkeep_requests = false\n");

    let calls = count(&kept, "ledger");
    assert!(calls > 10, "a game of calls: {calls}");
    assert_eq!(count(&bare, "ledger"), calls, "the same calls billed");
    assert_eq!(
        count(&bare, "cache"),
        count(&kept, "cache"),
        "the same answers cached"
    );
    assert_eq!(
        count(&kept, "kept_requests"),
        count(&kept, "cache"),
        "each request kept"
    );
    // Appended under the ledger row of the live call that stored its answer (issue 32), which its
    // cache row names; the tables keyed by hash are left to files of older sleuths.
    let appended: i64 = kept
        .query_row(
            "SELECT COUNT(*) FROM kept_requests k JOIN ledger l ON l.id = k.id \
             JOIN cache c ON c.request = k.id AND hex(c.key) = upper(l.key) \
             WHERE l.source = 'live'",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(
        appended,
        count(&kept, "kept_requests"),
        "each under its call's row"
    );
    assert_eq!(count(&kept, "requests") + count(&kept, "messages"), 0);
    assert!(count(&kept, "kept_messages") > 0);
    for table in ["kept_requests", "kept_messages", "requests", "messages"] {
        assert_eq!(count(&bare, table), 0, "nothing kept in {table}");
    }

    // The same game: its outcome and its evaluation do not depend on what was kept.
    // (`usage.bytes_tokenized` is left out, as the golden digests leave it out: it depends on
    // what the process had tokenized before.)
    let (mut a, mut b) = (result(&kept), result(&bare));
    for r in [&mut a, &mut b] {
        if let Some(usage) = r["usage"].as_object_mut() {
            usage.remove("bytes_tokenized");
        }
    }
    for field in [
        "winner",
        "votes",
        "factual",
        "inferential_accuracy",
        "choice",
        "usage",
    ] {
        assert_eq!(a[field], b[field], "{field}");
    }
}
