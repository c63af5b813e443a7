//! The sweep survives what may die mid-sweep: a worker SIGKILLed while it plays (its games finish
//! elsewhere, from the shared cache), the coordinator killed and started again, and Redis stopped and
//! started again; every game is done once.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::cluster::{
    mock_declaration, mock_model, simulated_model, wait_for, Options, SWEEP_TIMEOUT,
};

use super::{
    assert_queue_drains, assert_results_once, start_and_submit, start_mock, watch_all_done, NS,
};

/// The game a work-queue entry asks for (`None` once the entry is gone).
fn game_of(con: &mut redis::Connection, entry: &str) -> Option<String> {
    let rows: Vec<(String, BTreeMap<String, String>)> = redis::cmd("XRANGE")
        .arg(format!("{NS}:games"))
        .arg(entry)
        .arg(entry)
        .query(con)
        .ok()?;
    rows.into_iter().next()?.1.remove("game")
}

/// Every ledger entry of the sweep, with its run.
fn ledger(con: &mut redis::Connection, sweep: &str) -> Vec<(String, sleuth::store::LedgerEntry)> {
    let runs: Vec<String> = redis::cmd("SMEMBERS")
        .arg(format!("{NS}:sweep-ledger-runs:{sweep}"))
        .query(con)
        .unwrap_or_default();
    let mut out = Vec::new();
    for run in runs {
        let rows: Vec<String> = redis::cmd("LRANGE")
            .arg(format!("{NS}:run-ledger:{run}"))
            .arg(0)
            .arg(-1)
            .query(con)
            .unwrap_or_default();
        out.extend(
            rows.iter()
                .filter_map(|r| serde_json::from_str(r).ok())
                .map(|e| (run.clone(), e)),
        );
    }
    out
}

/// How many ledger entries each run of the sweep holds, by source: what a failed check shows.
fn ledger_sources(con: &mut redis::Connection, sweep: &str) -> BTreeMap<(String, String), usize> {
    let mut out = BTreeMap::new();
    for (run, e) in ledger(con, sweep) {
        *out.entry((run, format!("{:?}", e.source))).or_default() += 1;
    }
    out
}

/// How many of `game`'s live calls the ledger holds with their cache entry present: what a replay
/// of the game can answer from the cache.
fn cached_live_calls(con: &mut redis::Connection, sweep: &str, game: &str) -> usize {
    ledger(con, sweep)
        .into_iter()
        .filter(|(_, e)| e.game == game && e.source == sleuth::store::CallSource::Live)
        .filter_map(|(_, e)| e.key)
        .filter(|k| {
            redis::cmd("EXISTS")
                .arg(format!("{NS}:cache:{k}"))
                .query::<u64>(con)
                .is_ok_and(|n| n == 1)
        })
        .count()
}

/// Check 2: A worker SIGKILLed while it plays: the sweep still finishes, every game is done once,
/// and the killed worker's games go on elsewhere, replaying the calls it had made from the shared
/// cache.
#[test]
fn a_killed_workers_games_finish_elsewhere_from_the_cache() {
    let Some((mut c, _, id)) =
        // 40 ms a call (a game lasts ~4 s): at 25 ms a quiet machine once finished the sweep before
        // any worker was seen holding a game under way.
        start_and_submit(Options::default(), "kill", 6, &simulated_model(40))
    else {
        return;
    };
    let games = 12;

    // A worker that has held a game for a while (so its game has made calls the cache keeps) once
    // some game is done: watched in Redis's pending entries, not guessed with a fixed pause, which on
    // a loaded machine could end with the worker holding nothing any more (or not having called yet).
    let mut con = c.redis();
    let mut first_seen: BTreeMap<(String, String), std::time::Instant> = BTreeMap::new();
    let (victim, held) = wait_for(SWEEP_TIMEOUT, "a worker holding a game under way", || {
        let p = c.progress(&id).ok()?;
        assert!(
            !p.ended,
            "the sweep ended before a worker was seen busy: {p:?}"
        );
        let pending: Vec<(String, String, u64, u64)> = redis::cmd("XPENDING")
            .arg(format!("{NS}:games"))
            .arg("workers")
            .arg("-")
            .arg("+")
            .arg(100)
            .query(&mut con)
            .ok()?;
        let now = std::time::Instant::now();
        first_seen
            .retain(|(entry, owner), _| pending.iter().any(|(e, o, ..)| e == entry && o == owner));
        for (entry, owner, _, _) in &pending {
            first_seen
                .entry((entry.clone(), owner.clone()))
                .or_insert(now);
        }
        if p.done < 1 {
            return None;
        }
        // Held a while, and its game well under way but far from its end: it has made calls the
        // cache keeps (a worker busy loading the sweep, or a game still waiting for its first
        // answer, holds entries too, and killing it would leave nothing to replay), and it cannot
        // finish, be acknowledged and leave the worker holding only a fresh game in the moment
        // before the kill (a game makes ~500 calls; the full suite once killed a worker whose
        // qualifying game had just ended, and its replay found nothing cached).
        let consumer = pending
            .iter()
            .find(|(entry, owner, ..)| {
                let since = first_seen[&(entry.clone(), owner.clone())];
                now.duration_since(since) >= Duration::from_millis(300)
                    && game_of(&mut con, entry)
                        .is_some_and(|g| (10..=200).contains(&cached_live_calls(&mut con, &id, &g)))
            })?
            .1
            .clone();
        let victim = c
            .list_workers()
            .ok()?
            .into_iter()
            .find(|w| w.worker_id == consumer)?;
        let held: Vec<(String, String, u64, u64)> = pending
            .into_iter()
            .filter(|(_, owner, ..)| *owner == consumer)
            .collect();
        Some((victim, held))
    });
    let index = c
        .workers
        .iter()
        .position(|w| w.pid() == victim.pid)
        .expect("the busy worker is one of ours");
    let mut killed = c.workers.remove(index);
    killed.kill();

    let (last, p) = watch_all_done(&c, &id, games);
    // Cache hits reach the ledger through each worker's ledger writer, in batches (live calls are
    // written with their cache entries): the last game can end before the writer of the worker that
    // replayed it has written, so the hits are read until they show, for at most 30 s. The live
    // calls are final: every call was paid once, the replayed ones not again.
    let mut hits = p.cache_hits;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while hits == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        hits = c.progress(&id).map_or(hits, |p| p.cache_hits);
    }
    let progress = c.progress(&id).expect("progress");
    assert!(
        hits > 0,
        "the killed worker's games replayed its calls from the cache: {last}; now {progress:?}; \
         the ledger's entries by (run, source): {:?}; the victim held {held:?}",
        ledger_sources(&mut con, &id)
    );
    assert_eq!(
        progress.live_calls, p.live_calls,
        "no call was paid for after the sweep ended"
    );
    assert_queue_drains(&c);
    let results = assert_results_once(&c, &id, games, &c.path("fetched"));

    // The entries it held were taken over by a live worker (after the claim timeout), whose log
    // says so.
    let claims: usize = c
        .workers
        .iter()
        .map(|w| {
            w.log_text()
                .matches("claimed entries of a silent worker")
                .count()
        })
        .sum();
    assert!(claims > 0, "no worker claimed the killed worker's entries");
    let mut con = c.redis();
    for (entry, _, _, _) in &held {
        // The entry is gone from the stream: acknowledged by whoever played it.
        let left: Vec<redis::Value> = redis::cmd("XRANGE")
            .arg(format!("{NS}:games"))
            .arg(entry)
            .arg(entry)
            .query(&mut con)
            .expect("XRANGE");
        assert!(left.is_empty(), "entry {entry} is still in the queue");
    }
    let done: BTreeSet<String> = redis::cmd("SMEMBERS")
        .arg(format!("{NS}:sweep-state:done:{id}"))
        .query(&mut con)
        .expect("SMEMBERS");
    assert_eq!(
        done,
        results.keys().cloned().collect::<BTreeSet<_>>(),
        "the store's done games are the results"
    );
    // `sleuth workers` tells the killed worker (silent past the claim timeout) from the live ones.
    let listed = c.list_workers().expect("list workers");
    let dead = listed
        .iter()
        .find(|w| w.worker_id == victim.worker_id)
        .expect("the killed worker is still listed");
    assert!(!dead.alive, "{dead:?}");
    assert!(
        listed
            .iter()
            .filter(|w| w.worker_id != victim.worker_id)
            .all(|w| w.alive),
        "{listed:?}"
    );
}

/// Check 3: The coordinator killed mid-sweep and started again on the same port with the same
/// Redis: the workers play on meanwhile, and the sweep completes; `watch` on the new coordinator
/// says finished.
#[test]
fn the_sweep_survives_a_coordinator_restart() {
    let Some((mut c, _, id)) =
        start_and_submit(Options::default(), "restart", 4, &simulated_model(25))
    else {
        return;
    };
    let games = 8;
    wait_for(SWEEP_TIMEOUT, "a game to be done", || {
        c.progress(&id).ok().filter(|p| p.done >= 1 && !p.ended)
    });
    c.kill_coordinator();
    assert!(c.list_workers().is_err(), "the coordinator is down");

    // The work flows through Redis: games still end while nobody coordinates.
    let done_key = format!("{NS}:sweep-state:done:{id}");
    let mut con = c.redis();
    let done_at_kill: u64 = redis::cmd("SCARD")
        .arg(&done_key)
        .query(&mut con)
        .expect("SCARD");
    wait_for(
        Duration::from_secs(60),
        "a game to end without a coordinator",
        || {
            let n: u64 = redis::cmd("SCARD").arg(&done_key).query(&mut con).ok()?;
            (n > done_at_kill).then_some(())
        },
    );

    c.start_coordinator();
    watch_all_done(&c, &id, games);
    assert_eq!(
        c.list_workers().expect("list workers").len(),
        3,
        "the new coordinator knows the workers (they live in Redis)"
    );
    assert_queue_drains(&c);
    assert_results_once(&c, &id, games, &c.path("fetched"));
}

/// Check 4: Redis stopped mid-sweep (AOF on, `appendfsync always`) and started again on the same
/// port and directory: the sweep completes with every game done, none failed.
#[test]
fn the_sweep_survives_a_redis_restart() {
    // The model is the HTTP mock, so what was paid for (the calls it answered) can be checked against
    // what the ledger recorded across the outage.
    let (rt, server) = start_mock(
        1,
        sleuth::mockllm::MockConfig {
            latency: Duration::from_millis(25),
            ..sleuth::mockllm::MockConfig::default()
        },
    );
    let Some((mut c, _, id)) = start_and_submit(
        Options {
            aof: true,
            worker_models: Some(mock_declaration(&server.base_url())),
            ..Options::default()
        },
        "redis-restart",
        4,
        &mock_model(&server.base_url(), None),
    ) else {
        return;
    };
    let games = 8;
    wait_for(SWEEP_TIMEOUT, "a game to be done", || {
        c.progress(&id).ok().filter(|p| p.done >= 1 && !p.ended)
    });
    c.stop_redis();
    // Longer than the claim timeout (6 s): heartbeats cannot touch the entries in flight meanwhile.
    std::thread::sleep(Duration::from_secs(7));
    c.start_redis_again();

    let (_, p) = watch_all_done(&c, &id, games);
    assert_queue_drains(&c);
    assert_results_once(&c, &id, games, &c.path("fetched"));
    for w in &mut c.workers {
        assert!(w.alive(), "a worker died with Redis:\n{}", w.log_text());
    }
    // Every call the model answered is in the ledger once, also those answered while Redis was away
    // (their entries could not be written with their cache entries, and were written later). The
    // workers' ledger writers may still be catching up when the last game ends (a batch that met
    // the outage waits out its backoff), so the ledger is read until it has them all, or for 30 s; a
    // call counted twice (a write made again after its answer was lost) shows as more.
    let stats = server.stats();
    let mut live = p.live_calls;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while live < stats.ok && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        live = c.progress(&id).map_or(live, |p| p.live_calls);
    }
    assert_eq!(
        live, stats.ok,
        "the ledger's live calls against the calls the model answered ({stats:?})"
    );
    rt.block_on(server.shutdown());
}
