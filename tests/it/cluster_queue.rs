//! The cluster's work queue on a real Redis: entries go to one worker at a time, a worker that stops
//! touching its entries loses them to another after the claim timeout, a worker that touches them
//! keeps them, and acknowledged entries are gone.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::redis::RedisServer;
use sleuth::cluster::queue::{Delivery, GameEntry, WorkQueue};

async fn queue(server: &RedisServer, ns: &str) -> WorkQueue {
    let client = redis::Client::open(server.url()).expect("a redis URL");
    WorkQueue::connect(client, ns, Duration::from_secs(5))
        .await
        .expect("open the queue")
}

/// The claim timeout of the tests: ten times what a touch followed by a claim takes on a loaded
/// machine at worst (the 200 ms it was could pass between the two).
const IDLE: Duration = Duration::from_secs(2);

fn games(d: &[Delivery]) -> BTreeSet<String> {
    d.iter().map(|d| d.game.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_workers_games_go_to_another_and_a_live_one_keeps_its_own() {
    let Some(server) = RedisServer::start(&[]) else {
        return;
    };
    let coordinator = queue(&server, "t1").await;
    // Two workers open the same queue: the group exists once.
    let (a, b) = (queue(&server, "t1").await, queue(&server, "t1").await);
    let entries: Vec<GameEntry> = (0..10)
        .map(|i| GameEntry {
            sweep: "s".into(),
            game: format!("g{i}"),
        })
        .collect();
    coordinator.push(&entries).await.expect("push");
    assert_eq!(coordinator.entries().await.expect("entries"), 10);

    // Each entry is delivered to one worker only, up to the capacity each asks for.
    let got_a = a
        .take("a", 4, Duration::from_millis(50))
        .await
        .expect("take");
    let got_b = b
        .take("b", 100, Duration::from_millis(50))
        .await
        .expect("take");
    assert_eq!(got_a.len(), 4);
    assert_eq!(got_b.len(), 6);
    assert!(games(&got_a).is_disjoint(&games(&got_b)));
    assert!(b
        .take("b", 5, Duration::from_millis(20))
        .await
        .expect("take")
        .is_empty());
    assert_eq!(coordinator.pending().await.expect("pending"), 10);

    // b plays and acknowledges two; a goes silent; b keeps touching the rest of its own. The claim
    // timeout is wide (2 s) so that b's touch and claim fall well inside it on a loaded machine; the
    // pause before only has to be longer than it (a longer one changes nothing).
    for d in &got_b[..2] {
        b.ack(&d.entry).await.expect("ack");
    }
    tokio::time::sleep(IDLE + Duration::from_millis(500)).await;
    let held: Vec<String> = got_b[2..].iter().map(|d| d.entry.clone()).collect();
    assert_eq!(b.touch("b", &held).await.expect("touch"), 4);
    // a's entries are idle past the timeout; b's were just touched.
    let claimed = b.claim_idle("b", IDLE, 100).await.expect("claim");
    assert_eq!(games(&claimed), games(&got_a), "exactly a's games move");
    // a wakes up and touches what it had: nothing is still its own, nothing moves back.
    let a_entries: Vec<String> = got_a.iter().map(|d| d.entry.clone()).collect();
    assert_eq!(a.touch("a", &a_entries).await.expect("touch"), 0);
    assert!(b
        .claim_idle("b", IDLE, 100)
        .await
        .expect("claim")
        .is_empty());

    for d in got_b[2..].iter().chain(&claimed) {
        b.ack(&d.entry).await.expect("ack");
    }
    assert_eq!(coordinator.pending().await.expect("pending"), 0);
    assert_eq!(coordinator.entries().await.expect("entries"), 0);
}

/// A Redis test without `redis-server` fails under CI (it must not pass having tested nothing) and is
/// a skip elsewhere (issue 23, item 6).
#[test]
#[should_panic(expected = "CI is set: this test must run under CI")]
fn a_missing_redis_server_fails_under_ci() {
    RedisServer::start_program("redis-server-not-installed-here", true, &[]);
}

#[test]
fn a_missing_redis_server_is_a_skip_outside_ci() {
    assert!(RedisServer::start_program("redis-server-not-installed-here", false, &[]).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_blocked_on_an_empty_queue_wakes_for_new_work() {
    let Some(server) = RedisServer::start(&[]) else {
        return;
    };
    let (coordinator, w) = (queue(&server, "t2").await, queue(&server, "t2").await);
    let waiting = tokio::spawn(async move { w.take("w", 8, Duration::from_secs(30)).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    coordinator
        .push(&[GameEntry {
            sweep: "s".into(),
            game: "late".into(),
        }])
        .await
        .expect("push");
    let got = waiting.await.expect("join").expect("take");
    assert_eq!(games(&got), BTreeSet::from(["late".to_string()]));
}
