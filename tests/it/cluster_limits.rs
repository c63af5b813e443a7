//! Cluster-wide limits on a real Redis: workers together never hold more call slots than the limit,
//! a dead worker's slots come back when its leases lapse, and the per-minute rates admit one minute's
//! quota at once and then make the next request wait its share of a minute. Waits are polled for, and the
//! margins are wide: the tests run on loaded 2-core machines.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::redis::RedisServer;
use sleuth::cluster::limits::{ClusterLimits, LimitError};

async fn limits(server: &RedisServer, ns: &str) -> ClusterLimits {
    let client = redis::Client::open(server.url()).expect("a redis URL");
    let conn = redis::aio::ConnectionManager::new(client)
        .await
        .expect("connect to the test server");
    ClusterLimits::new(conn, ns)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_never_hold_more_slots_than_the_limit() {
    let Some(server) = RedisServer::start(&[]) else {
        return;
    };
    const MAX: u32 = 4;
    let in_flight = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for w in 0..3 {
        // Each worker has its own connection, as separate processes would.
        let l = limits(&server, "t").await;
        for call in 0..10 {
            let (l, in_flight, peak) = (l.clone(), in_flight.clone(), peak.clone());
            tasks.push(tokio::spawn(async move {
                let holder = format!("w{w}-c{call}");
                l.slot("m", MAX, &holder, Duration::from_secs(30))
                    .await
                    .expect("slot");
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
                in_flight.fetch_sub(1, Ordering::SeqCst);
                l.release("m", &holder).await.expect("release");
            }));
        }
    }
    for t in tasks {
        t.await.expect("a call task");
    }
    let peak = peak.load(Ordering::SeqCst);
    assert!(peak <= MAX as usize, "{peak} calls in flight, limit {MAX}");
    assert!(peak >= 2, "the slots were shared at all (peak {peak})");
    assert_eq!(limits(&server, "t").await.held("m").await.expect("held"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_workers_slots_lapse_and_a_live_one_keeps_its_own() {
    let Some(server) = RedisServer::start(&[]) else {
        return;
    };
    let l = limits(&server, "t").await;
    // A worker renews its leases every third of their time to live; so does the live holder here,
    // while the dead one cannot. The TTL is wide (3 s against renewals every 300 ms) so that a loaded
    // machine's pauses never let the live lease lapse; the dead one's lapse is waited for, not timed.
    let ttl = Duration::from_secs(3);
    assert!(l.try_slot("m", 2, "dead", ttl).await.expect("slot"));
    assert!(l.try_slot("m", 2, "live", ttl).await.expect("slot"));
    assert!(!l.try_slot("m", 2, "third", ttl).await.expect("slot"));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            l.renew("m", &["live".into()], ttl).await.expect("renew"),
            1,
            "the live lease, renewed in time, is still held"
        );
        if l.held("m").await.expect("held") == 1 {
            break; // only the renewed lease
        }
        assert!(
            Instant::now() < deadline,
            "the dead worker's lease never lapsed"
        );
    }
    assert!(l.try_slot("m", 2, "third", ttl).await.expect("slot"));
    assert!(!l.try_slot("m", 2, "fourth", ttl).await.expect("slot"));
    // A lapsed lease is not renewed back to life.
    assert_eq!(l.renew("m", &["dead".into()], ttl).await.expect("renew"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rates_admit_a_minutes_quota_then_spread_the_rest() {
    let Some(server) = RedisServer::start(&[]) else {
        return;
    };
    let (a, b) = (limits(&server, "t").await, limits(&server, "t").await);
    // 12 requests a minute: two workers together get 12 at once, the next waits its share of a
    // minute (5 s) less the time the 12 took, by Redis's clock. The share is wide so that a loaded
    // machine's 12 calls (120 in 200 ms was too tight) leave it far from zero; the bound below also
    // takes off what they took, by the test's clock (which spans Redis's).
    let started = Instant::now();
    for i in 0..12 {
        let w = if i % 2 == 0 { &a } else { &b };
        assert_eq!(
            w.try_rate("m", Some(12), None, 0).await.expect("rate"),
            None,
            "request {i}"
        );
    }
    let wait = a
        .try_rate("m", Some(12), None, 0)
        .await
        .expect("rate")
        .expect("the 13th waits");
    let took = started.elapsed();
    let share = Duration::from_secs(5);
    assert!(
        wait <= share && wait + took + Duration::from_millis(2) >= share,
        "waits {wait:?} after {took:?}: its share is {share:?} less the time taken"
    );
    assert!(wait > Duration::from_secs(3), "{wait:?} after {took:?}");
    // Tokens: a call refused for tokens takes no request; one larger than a minute's quota is an error.
    assert_eq!(
        b.try_rate("n", Some(10), Some(1000), 900)
            .await
            .expect("rate"),
        None
    );
    assert!(b
        .try_rate("n", Some(10), Some(1000), 200)
        .await
        .expect("rate")
        .is_some());
    for _ in 0..9 {
        assert_eq!(
            b.try_rate("n", Some(10), None, 0).await.expect("rate"),
            None
        );
    }
    assert!(matches!(
        b.try_rate("n", None, Some(1000), 1001).await,
        Err(LimitError::TooLarge { .. })
    ));
}
