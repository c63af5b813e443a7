//! Each distinct text is tokenized once (issue 32): a whole game, in a process of its own (so the
//! process-wide memo of token ids starts empty), has the tokenizer read no more than ~1.2× the
//! distinct text it sent — a counter, not a stopwatch, so the habit of tokenizing a character's
//! script again with every call cannot come back unseen.
//!
//! The distinct text is what the store keeps of the game's requests: each distinct message once
//! (`crates/llm/src/gateway/requests.rs`). The game's `result.json` says how many bytes its calls
//! had the tokenizer read (`usage.bytes_tokenized`), replies included.

use crate::common;

use std::path::Path;

fn one_game_sweep(dir: &Path, script: &str, protocol: &str) -> std::path::PathBuf {
    let file = dir.join("sweep.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"tok\"\nout = \"{}\"\nscripts = [\"{}\"]\nrepeats = 1\nseed = 1\n\
             [game]\nprotocol = \"{protocol}\"\nmodel = \"sim\"\n\
             [models.sim]\nprovider = \"simulated\"\n",
            dir.join("run").display(),
            common::crate_file("examples").join(script).display(),
        ),
    )
    .expect("sweep file");
    file
}

/// (bytes the game had tokenized, bytes of its distinct messages, bytes of every prompt it sent).
fn play(script: &str, protocol: &str) -> (u64, u64, u64) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = one_game_sweep(tmp.path(), script, protocol);
    common::sweep_run_ok(tmp.path(), &file);
    let games = tmp.path().join("run/games");
    let dir = std::fs::read_dir(&games)
        .expect("the games")
        .flatten()
        .next()
        .expect("one game")
        .path();
    let result: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("result.json")).expect("result.json"),
    )
    .expect("JSON");
    let tokenized = result["usage"]["bytes_tokenized"]
        .as_u64()
        .expect("usage.bytes_tokenized");
    let db = rusqlite::Connection::open(tmp.path().join("run/sleuth.db")).expect("the store");
    let mut sizes = std::collections::HashMap::new();
    let mut stmt = db
        .prepare("SELECT hex(hash), text FROM kept_messages")
        .expect("query");
    let rows = stmt
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
        })
        .expect("messages");
    for row in rows {
        let (hash, text) = row.expect("a message");
        let len = zstd::bulk::decompress(&text, 64 << 20).expect("zstd").len() as u64;
        sizes.insert(hash.to_ascii_lowercase(), len);
    }
    let distinct: u64 = sizes.values().sum();
    // Every prompt as sent: each request names its messages by hash.
    let mut stmt = db
        .prepare("SELECT value FROM kept_requests UNION ALL SELECT value FROM requests")
        .expect("query");
    let rows = stmt
        .query_map([], |r| r.get::<_, Vec<u8>>(0))
        .expect("requests");
    let mut sent = 0;
    for row in rows {
        let record: serde_json::Value =
            serde_json::from_slice(&row.expect("a request")).expect("a request record");
        for m in record["messages"].as_array().expect("messages") {
            let hash = m[1].as_str().expect("a hash");
            sent += sizes.get(hash).copied().unwrap_or(0);
        }
    }
    (tokenized, distinct, sent)
}

#[test]
fn a_game_tokenizes_each_distinct_text_once() {
    for (script, protocol) in [
        ("orchard-press.toml", "thinkthrice"),
        ("night-ferry.toml", "mirage"),
    ] {
        let (tokenized, distinct, sent) = play(script, protocol);
        let what = format!(
            "{script} ({protocol}): tokenized {tokenized} bytes; distinct messages {distinct} bytes; \
             prompts sent {sent} bytes"
        );
        eprintln!("{what}");
        assert!(tokenized > 0 && distinct > 10_000, "{what}");
        assert!(
            tokenized as f64 <= 1.2 * distinct as f64,
            "more than 1.2x the distinct text: {what}"
        );
        // What the memo saves: the prompts repeat the same texts many times over.
        assert!(sent > 5 * tokenized, "{what}");
    }
}
