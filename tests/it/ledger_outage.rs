//! The ledger through a store outage (issue 23, item 8): entries recorded while the store (a real
//! `redis-server`) is down are not dropped when their batch gives up — they go to the local spill
//! file, `flush` says so instead of timing out silently, and they reach the store once it answers
//! again, each exactly once.
//!
//! The batch's give-up time is 60 s in production; the test sets it to 10 s and keeps Redis down for
//! 25 s (two and a half give-ups long, with entries recorded before, during and after the first give-up), which
//! runs the same path — retry, give up, spill, spill at once while the file holds entries, replay —
//! as a 90 s outage does against the 60 s default. `SLEUTH_TEST_GIVE_UP_SECS=60
//! SLEUTH_TEST_OUTAGE_SECS=90` runs the issue's own figures (about two and a half minutes).

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sleuth::llm::{Ledger, LedgerOptions};
use sleuth::store::{CallSource, LedgerEntry, RedisStore, Store};

/// A `redis-server` on `port` keeping its data in `dir` (AOF, fsync always), so what was written
/// before it stopped is there when it starts again.
fn redis_on(port: u16, dir: &Path) -> Child {
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args([
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
        ])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start redis-server");
    common::cluster::wait_for(Duration::from_secs(20), "Redis to answer", || {
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).ok()?;
        let mut c = client.get_connection().ok()?;
        redis::cmd("PING").query::<String>(&mut c).ok()
    });
    child
}

fn entry(i: usize) -> LedgerEntry {
    LedgerEntry {
        run: "r1".into(),
        sweep: "s1".into(),
        game: format!("g{i}"),
        arm: "a".into(),
        model: "m".into(),
        phase: "gameplay".into(),
        framework: "f".into(),
        purpose: "vote".into(),
        source: CallSource::Live,
        prompt_tokens: 100,
        completion_tokens: 10,
        cached_tokens: 0,
        cost_usd: 0.001,
        key: None,
        latency_ms: None,
        retries: 0,
        id: None,
    }
}

fn games(entries: &[LedgerEntry]) -> Vec<String> {
    let mut g: Vec<String> = entries.iter().map(|e| e.game.clone()).collect();
    g.sort();
    g
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_recorded_while_redis_is_down_are_spilled_and_replayed_once_it_is_back() {
    let secs = |var: &str, default: u64| {
        std::env::var(var)
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(Duration::from_secs(default), Duration::from_secs)
    };
    let give_up = secs("SLEUTH_TEST_GIVE_UP_SECS", 10);
    let outage = secs("SLEUTH_TEST_OUTAGE_SECS", 25).max(give_up * 2);
    // Redis is required here: without it the test cannot run (and says so).
    if Command::new("redis-server")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "redis-server is not installed"
        );
        eprintln!("SKIPPED: redis-server is not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("redis");
    std::fs::create_dir_all(&data).expect("data dir");
    let port = common::cluster::free_port();
    let mut redis = redis_on(port, &data);
    let store: Arc<dyn Store> = Arc::new(
        RedisStore::connect(&format!("redis://127.0.0.1:{port}/"), "t")
            .await
            .expect("connect"),
    );
    let spill = dir.path().join("run").join("ledger.spill.jsonl");
    let ledger = Ledger::start_with(
        store.clone(),
        LedgerOptions {
            give_up_after: give_up,
            spill: spill.clone(),
            replay_every: Duration::from_millis(300),
        },
    );

    // Before the outage: written at once.
    for i in 0..3 {
        ledger.record(entry(i));
    }
    assert_eq!(
        ledger.flush().await,
        0,
        "before the outage nothing is spilled"
    );
    assert_eq!(store.ledger("r1").await.expect("ledger").len(), 3);

    // Redis goes away.
    let down = Instant::now();
    redis.kill().expect("kill redis");
    redis.wait().expect("reap redis");
    for i in 3..8 {
        ledger.record(entry(i));
    }
    // The batch is retried for the give-up time, then spilled; flush says how many wait there.
    assert_eq!(ledger.flush().await, 5, "the five entries wait in the file");
    assert!(down.elapsed() >= give_up, "it tried first");
    let spilled = std::fs::read_to_string(&spill).expect("the spill file");
    assert_eq!(spilled.lines().count(), 5, "{spilled}");
    // While the file holds entries, later ones go there after one try (a try against a dead server
    // takes the client's reconnect attempts, about a second, several on a loaded machine), not after
    // a new give-up wait; the flush does not ask the store again once their batch was refused.
    for i in 8..10 {
        ledger.record(entry(i));
    }
    let quick = Instant::now();
    assert_eq!(
        ledger.flush().await,
        7,
        "the two later entries join the file"
    );
    assert!(
        quick.elapsed() < give_up,
        "no second give-up wait: {:?}",
        quick.elapsed()
    );
    // The rest of the outage.
    while down.elapsed() < outage {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Redis is back (with its data): the spilled entries are replayed, once each.
    let mut redis = redis_on(port, &data);
    let deadline = Instant::now() + Duration::from_secs(60);
    let entries = loop {
        let e = store.ledger("r1").await.unwrap_or_default();
        if e.len() >= 10 || Instant::now() > deadline {
            break e;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let want: Vec<String> = games(&(0..10).map(entry).collect::<Vec<_>>());
    assert_eq!(games(&entries), want, "every entry exactly once");
    assert_eq!(
        ledger.flush().await,
        0,
        "nothing waits in the file any more"
    );
    assert!(!spill.exists(), "the spill file is gone once replayed");
    let _ = redis.kill();
    let _ = redis.wait();
}
