//! A cluster-wide budget on a real Redis: workers racing for the last of a sweep's budget never pass
//! it together, exactly one refusal is the first (the one that marks the sweep stopped), a call
//! crowded out only by calls in flight is busy (asked again), not refused, and a dead worker's
//! reservation lapses.

use crate::common;

use std::time::Duration;

use common::redis::RedisServer;
use sleuth::cluster::budget::{Caps, ClusterBudget, Reserve};

async fn budget(server: &RedisServer) -> ClusterBudget {
    let client = redis::Client::open(server.url()).expect("a redis URL");
    let conn = redis::aio::ConnectionManager::new(client)
        .await
        .expect("connect to the test server");
    ClusterBudget::new(conn, "t")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_stop_at_the_budget_and_the_sweep_is_stopped_once() {
    let Some(server) = RedisServer::start(&[]) else {
        return;
    };
    let caps = Caps {
        max_usd: Some(1.0),
        max_tokens: None,
    };
    let ttl = Duration::from_secs(30);
    let mut tasks = Vec::new();
    for w in 0..3 {
        let b = budget(&server).await;
        tasks.push(tokio::spawn(async move {
            let (mut paid, mut firsts) = (0.0, 0);
            for call in 0..40 {
                let id = format!("w{w}-{call}");
                // Bound 0.05 $, real cost 0.04 $. A busy answer (the room is held by the other
                // workers' calls in flight) is asked again, as the gateway does.
                loop {
                    match b
                        .reserve("s", &id, 0.05, 100, caps, ttl)
                        .await
                        .expect("reserve")
                    {
                        Reserve::Granted => {
                            b.settle("s", &id, 0.04, 80).await.expect("settle");
                            paid += 0.04;
                        }
                        Reserve::Refused { first, .. } => firsts += usize::from(first),
                        Reserve::Busy { .. } => {
                            tokio::time::sleep(Duration::from_millis(1)).await;
                            continue;
                        }
                    }
                    break;
                }
            }
            (paid, firsts)
        }));
    }
    let (mut paid, mut firsts) = (0.0, 0);
    for t in tasks {
        let (p, f) = t.await.expect("a worker");
        paid += p;
        firsts += f;
    }
    let spent = budget(&server).await.spent("s").await.expect("spent");
    assert!((spent.usd - paid).abs() < 1e-9, "{spent:?} vs {paid}");
    assert!(spent.usd <= 1.0 + 1e-9, "{spent:?} passed the budget");
    assert!(spent.usd > 1.0 - 0.05 - 1e-9, "{spent:?} stopped early");
    assert_eq!(firsts, 1, "exactly one refusal stops the sweep");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_workers_reservation_lapses() {
    let Some(server) = RedisServer::start(&[]) else {
        return;
    };
    let b = budget(&server).await;
    let caps = Caps {
        max_usd: None,
        max_tokens: Some(1000),
    };
    // The dead worker's reservation lives 2 s unrenewed: wide enough that the refusal right after it
    // is not a lapse already on a loaded machine; its lapse is then waited for, not timed.
    let short = Duration::from_secs(2);
    assert_eq!(
        b.reserve("s", "dead", 0.0, 800, caps, short)
            .await
            .expect("r"),
        Reserve::Granted
    );
    // 300 fits beside what was spent (nothing): the dead worker's hold makes it busy, not refused.
    assert!(matches!(
        b.reserve("s", "live", 0.0, 300, caps, short)
            .await
            .expect("r"),
        Reserve::Busy { .. }
    ));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        match b
            .reserve("s", "live", 0.0, 300, caps, short)
            .await
            .expect("r")
        {
            Reserve::Granted => break,
            other => assert!(
                std::time::Instant::now() < deadline,
                "the dead worker's reservation never lapsed: {other:?}"
            ),
        }
    }
    b.settle("s", "live", 0.0, 250).await.expect("settle");
    assert_eq!(b.spent("s").await.expect("spent").tokens, 250);
}
