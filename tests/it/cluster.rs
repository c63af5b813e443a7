//! The cluster end to end (issue 12's "done when"): real `sleuth coordinator` and `sleuth worker`
//! processes on loopback, a real `redis-server`, and the client commands a user types. Each test
//! checks what a user would notice: the results of a cluster equal those of one node; a worker, the
//! coordinator or Redis can die mid-sweep and the sweep still ends with every game done once; the
//! token is required and never leaks; cluster-wide limits and budget hold.
//!
//! Without `redis-server` the tests say SKIPPED and pass, as the other Redis tests do
//! (`scripts/ensure-redis.sh` installs it); under CI (`CI=true`) that is a failure. Waits are for
//! conditions (polled with generous deadlines), not fixed pauses: the tests run on loaded machines.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use common::cluster::{
    metrics_body, mock_declaration, mock_model, simulated_model, wait_for, write_sweep, Cluster,
    Options, FAKE_KEY, KEY_ENV, SWEEP_TIMEOUT, TOKEN,
};
use sleuth::cluster::proto as pb;

/// The Redis namespace the coordinator uses by default: the tests read a few keys of it.
const NS: &str = "{sleuth}";

/// `games/<id>/result.json` of a run directory, by game id.
fn results_in(dir: &Path) -> BTreeMap<String, String> {
    let games = dir.join("games");
    std::fs::read_dir(&games)
        .unwrap_or_else(|e| panic!("read {}: {e}", games.display()))
        .filter_map(Result::ok)
        .filter_map(|e| {
            let id = e.file_name().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(e.path().join("result.json")).ok()?;
            Some((id, text))
        })
        .collect()
}

/// A result without what describes the process that played it rather than the game: its duration, and
/// the cacheable share of its prompts, which counts prefixes shared with earlier requests of the whole
/// run (a worker's games are not one node's).
fn without_duration(json: &str) -> String {
    json.lines()
        .filter(|l| {
            let l = l.trim_start();
            !l.starts_with("\"duration_seconds\"")
                && !l.starts_with("\"cacheable_prompt_tokens\"")
                && !l.starts_with("\"cacheable_share\"")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The last progress line `sleuth watch` printed, with a check that the sweep finished with every
/// one of its `games` done and none failed.
fn assert_finished(lines: &[String], games: u64) -> String {
    let last = lines.last().expect("sleuth watch printed progress").clone();
    assert!(
        last.contains("[finished]") && last.contains(&format!(" {games}/{games} done")),
        "the last progress line: {last}"
    );
    assert!(last.contains(" 0 failed"), "{last}");
    last
}

/// The `N cached` figure of a progress line.
fn cached(line: &str) -> u64 {
    line.split(", ")
        .find_map(|part| part.strip_suffix(" cached"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no `N cached` in {line}"))
}

/// The progress of a sweep that has ended, with every game done and none failed or interrupted.
fn assert_all_done(p: &pb::Progress, games: u64) {
    assert_eq!(p.status, "finished", "{p:?}");
    assert_eq!(
        (
            p.total,
            p.done,
            p.failed,
            p.interrupted,
            p.pending,
            p.running
        ),
        (games, games, 0, 0, 0, 0),
        "{p:?}"
    );
}

/// Waits until the queue holds nothing (every entry acknowledged and deleted).
fn assert_queue_drains(c: &Cluster) {
    let mut con = c.redis();
    wait_for(Duration::from_secs(20), "the queue to drain", || {
        let len: u64 = redis::cmd("XLEN")
            .arg(format!("{NS}:games"))
            .query(&mut con)
            .ok()?;
        let queued: u64 = redis::cmd("SCARD")
            .arg(format!("{NS}:queued"))
            .query(&mut con)
            .ok()?;
        (len == 0 && queued == 0).then_some(())
    });
}

/// Downloads the results and checks each of the sweep's games is there once, with its result.
fn assert_results_once(
    c: &Cluster,
    sweep: &str,
    games: u64,
    out: &Path,
) -> BTreeMap<String, String> {
    c.results(sweep, out);
    let got = results_in(out);
    assert_eq!(got.len() as u64, games, "results: {:?}", got.keys());
    for (id, text) in &got {
        let v: serde_json::Value =
            serde_json::from_str(text).unwrap_or_else(|e| panic!("{id}/result.json: {e}"));
        assert!(v.is_object(), "{id}: {text}");
    }
    got
}

/// Check 1: One coordinator and three workers play a sweep; what `sleuth results` downloads is what
/// `sleuth sweep run` of the same file writes on one node (game ids and result.json, but for the
/// duration), `sleuth report` reads it, and `sleuth workers` lists the three workers.
#[test]
fn three_workers_give_the_results_of_one_node() {
    let Some(c) = Cluster::start(Options::default()) else {
        return;
    };
    let file = write_sweep(
        c.dir.path(),
        "same",
        &["glasshouse.toml", "night-ferry.toml"],
        3,
        &simulated_model(5),
    );
    let games = 6;

    let id = c.submit(&file);
    assert_eq!(id, "same");
    let lines = c.watch(&id);
    assert_finished(&lines, games);
    assert_all_done(&c.progress(&id).expect("progress"), games);

    // The same file on one node.
    let mut local = c.sleuth();
    local.args(["sweep", "run"]).arg(&file);
    let out = common::run(&mut local, SWEEP_TIMEOUT);
    assert!(
        out.status.success(),
        "sleuth sweep run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let one_node = results_in(&c.path("local/same"));
    assert_eq!(one_node.len() as u64, games);

    let fetched = c.path("fetched");
    let cluster = assert_results_once(&c, &id, games, &fetched);
    assert_eq!(
        cluster.keys().collect::<Vec<_>>(),
        one_node.keys().collect::<Vec<_>>(),
        "the same game ids"
    );
    for (game, text) in &cluster {
        assert!(text.contains("\"duration_seconds\""), "{game}: {text}");
        assert_eq!(
            without_duration(text),
            without_duration(&one_node[game]),
            "game {game}: the cluster's result.json differs from one node's"
        );
        assert!(
            fetched
                .join("games")
                .join(game)
                .join("transcript.jsonl")
                .is_file(),
            "{game} has its transcript"
        );
    }

    let mut report = c.sleuth();
    report.arg("report").arg(&fetched);
    let out = common::run(&mut report, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "sleuth report on the downloaded results: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut workers = c.sleuth();
    workers.arg("workers");
    let out = common::run(&mut workers, Duration::from_secs(30));
    assert!(out.status.success());
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    let listed = c.list_workers().expect("list workers");
    assert_eq!(listed.len(), 3, "{listing}");
    assert_eq!(listing.matches(" alive ").count(), 3, "{listing}");
    let pids: BTreeSet<u32> = c.workers.iter().map(|w| w.pid()).collect();
    assert_eq!(
        listed.iter().map(|w| w.pid).collect::<BTreeSet<_>>(),
        pids,
        "the workers listed are the three processes"
    );
    for w in &listed {
        assert!(
            listing.contains(&w.worker_id),
            "{} in:\n{listing}",
            w.worker_id
        );
    }
    assert_eq!(
        listing.lines().count(),
        4,
        "a header and three workers:\n{listing}"
    );
    let played: u64 = listed.iter().map(|w| w.games_done).sum();
    assert!(played <= games, "{listed:?}");
}

/// Check 2: A worker SIGKILLed while it plays: the sweep still finishes, every game is done once,
/// and the killed worker's games go on elsewhere, replaying the calls it had made from the shared
/// cache.
#[test]
fn a_killed_workers_games_finish_elsewhere_from_the_cache() {
    let Some(mut c) = Cluster::start(Options::default()) else {
        return;
    };
    let file = write_sweep(
        c.dir.path(),
        "kill",
        &["glasshouse.toml", "night-ferry.toml"],
        6,
        &simulated_model(25),
    );
    let games = 12;
    let id = c.submit(&file);

    // A worker that has held a game for a while (so its game has made calls the cache keeps) once
    // some game is done: watched in Redis's pending entries, not guessed with a fixed pause, which on
    // a loaded machine could end with the worker holding nothing any more (or not having called yet).
    let mut con = c.redis();
    let mut first_seen: BTreeMap<(String, String), std::time::Instant> = BTreeMap::new();
    let (victim, held) = wait_for(SWEEP_TIMEOUT, "a worker holding a game for 1.5 s", || {
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
        let consumer = pending
            .iter()
            .find(|(entry, owner, ..)| {
                let since = first_seen[&(entry.clone(), owner.clone())];
                now.duration_since(since) >= Duration::from_millis(1500)
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

    let lines = c.watch(&id);
    let last = assert_finished(&lines, games);
    let p = c.progress(&id).expect("progress");
    assert_all_done(&p, games);
    assert!(
        p.cache_hits > 0 && cached(&last) > 0,
        "the killed worker's games replayed its calls from the cache: {last}"
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
    let Some(mut c) = Cluster::start(Options::default()) else {
        return;
    };
    let file = write_sweep(
        c.dir.path(),
        "restart",
        &["glasshouse.toml", "night-ferry.toml"],
        4,
        &simulated_model(25),
    );
    let games = 8;
    let id = c.submit(&file);
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
    let lines = c.watch(&id);
    assert_finished(&lines, games);
    assert_all_done(&c.progress(&id).expect("progress"), games);
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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let server = rt
        .block_on(sleuth::mockllm::MockServer::start(
            "127.0.0.1:0".parse().expect("an address"),
            sleuth::mockllm::MockConfig {
                latency: Duration::from_millis(25),
                ..sleuth::mockllm::MockConfig::default()
            },
        ))
        .expect("start the mock");
    let Some(mut c) = Cluster::start(Options {
        aof: true,
        worker_models: Some(mock_declaration(&server.base_url())),
        ..Options::default()
    }) else {
        return;
    };
    let file = write_sweep(
        c.dir.path(),
        "redis-restart",
        &["glasshouse.toml", "night-ferry.toml"],
        4,
        &mock_model(&server.base_url(), None),
    );
    let games = 8;
    let id = c.submit(&file);
    wait_for(SWEEP_TIMEOUT, "a game to be done", || {
        c.progress(&id).ok().filter(|p| p.done >= 1 && !p.ended)
    });
    c.stop_redis();
    // Longer than the claim timeout (6 s): heartbeats cannot touch the entries in flight meanwhile.
    std::thread::sleep(Duration::from_secs(7));
    c.start_redis_again();

    let lines = c.watch(&id);
    assert_finished(&lines, games);
    let p = c.progress(&id).expect("progress");
    assert_all_done(&p, games);
    assert_queue_drains(&c);
    assert_results_once(&c, &id, games, &c.path("fetched"));
    for w in &mut c.workers {
        assert!(w.alive(), "a worker died with Redis:\n{}", w.log_text());
    }
    // Every call the model answered is in the ledger, also those answered while Redis was away
    // (their entries could not be written with their cache entries, and were written later).
    let stats = server.stats();
    assert_eq!(
        p.live_calls, stats.ok,
        "the ledger's live calls against the calls the model answered ({stats:?})"
    );
    rt.block_on(server.shutdown());
}

/// Every value in Redis, as text (to look for secrets in it).
fn redis_dump(con: &mut redis::Connection) -> String {
    fn flatten(v: &redis::Value, out: &mut Vec<u8>) {
        match v {
            redis::Value::BulkString(b) => out.extend_from_slice(b),
            redis::Value::SimpleString(s) => out.extend_from_slice(s.as_bytes()),
            redis::Value::Array(items) | redis::Value::Set(items) => {
                items.iter().for_each(|i| flatten(i, out))
            }
            redis::Value::Map(pairs) => pairs.iter().for_each(|(k, v)| {
                flatten(k, out);
                flatten(v, out);
            }),
            other => out.extend_from_slice(format!("{other:?}").as_bytes()),
        }
        out.push(b'\n');
    }
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(con).expect("KEYS");
    let mut out = Vec::new();
    for key in keys {
        let kind: String = redis::cmd("TYPE").arg(&key).query(con).expect("TYPE");
        let mut cmd = match kind.as_str() {
            "string" => redis::cmd("GET"),
            "hash" => redis::cmd("HGETALL"),
            "list" => redis::cmd("LRANGE"),
            "set" => redis::cmd("SMEMBERS"),
            "zset" => redis::cmd("ZRANGE"),
            "stream" => redis::cmd("XRANGE"),
            other => panic!("{key}: a {other} in Redis"),
        };
        cmd.arg(&key);
        match kind.as_str() {
            "list" | "zset" => {
                cmd.arg(0).arg(-1);
            }
            "stream" => {
                cmd.arg("-").arg("+");
            }
            _ => {}
        }
        let v: redis::Value = cmd.query(con).expect("read a key");
        out.extend_from_slice(key.as_bytes());
        out.push(b'\n');
        flatten(&v, &mut out);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Check 5: The token: a request without it or with a wrong one is refused, a worker with a wrong
/// one cannot register, and after a sweep against an OpenAI-compatible mock neither the token nor
/// the provider's API key is in any process's log, any `/metrics` page, or Redis.
#[test]
fn the_token_is_required_and_no_secret_leaks() {
    let mock = common::Mock::start();
    let Some(mut c) = Cluster::start(Options {
        metrics: true,
        // Every line any crate logs, ours and the HTTP/2, gRPC and Redis clients'.
        log: "debug",
        worker_models: Some(mock_declaration(&mock.base_url())),
        ..Options::default()
    }) else {
        return;
    };
    let file = write_sweep(
        c.dir.path(),
        "secrets",
        &["glasshouse.toml"],
        3,
        &mock_model(&mock.base_url(), None),
    );
    let mut client_output = String::new();

    // No token at all, straight to the API (what `grpcurl` without a header would do).
    let url = c.url();
    let refused = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(async move {
            let mut api = pb::sweeps_client::SweepsClient::connect(url)
                .await
                .expect("connect");
            let list = api.list_workers(pb::ListWorkersRequest {}).await;
            let submit = api
                .submit(pb::SubmitRequest {
                    sweep_toml: "name = \"x\"".into(),
                    file_name: "x.toml".into(),
                    scripts: Vec::new(),
                })
                .await;
            [list.err(), submit.map(|_| ()).err()]
        });
    for r in refused {
        let s = r.expect("a request without the token is refused");
        assert_eq!(s.code(), tonic::Code::Unauthenticated, "{s:?}");
    }

    // A wrong token: `sleuth submit` fails and says why; nothing was submitted.
    let mut submit = c.sleuth_with_token(Some("not-the-token"));
    submit.arg("submit").arg(&file);
    let out = common::run(&mut submit, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "submit with a wrong token succeeded");
    assert!(
        err.contains("token") && err.contains("Unauthenticated"),
        "the error names the token: {err}"
    );
    assert!(
        !err.contains("not-the-token"),
        "the wrong token is echoed: {err}"
    );
    client_output.push_str(&err);
    let none = c
        .progress("secrets")
        .expect_err("the sweep was not submitted");
    assert_eq!(none.code(), tonic::Code::NotFound, "{none:?}");

    // No token in the environment: refused before anything is sent.
    let mut submit = c.sleuth_with_token(None);
    submit.arg("submit").arg(&file);
    let out = common::run(&mut submit, Duration::from_secs(60));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("SLEUTH_TOKEN"));

    // A worker with a wrong token exits without registering.
    let mut intruder = c.spawn_worker("not-the-token");
    let status = intruder
        .wait_exit(Duration::from_secs(60))
        .expect("a worker with a wrong token exits");
    assert!(!status.success());
    let log = intruder.log_text();
    assert!(
        log.contains("token") && !log.contains("not-the-token"),
        "its error: {log}"
    );
    assert_eq!(
        c.list_workers().expect("list").len(),
        3,
        "it did not register"
    );

    // A sweep against the mock, with the key in every process's environment.
    let id = c.submit(&file);
    let lines = c.watch(&id);
    assert_finished(&lines, 3);
    assert!(mock.requests() > 0, "the games called the mock");
    client_output.push_str(&lines.join("\n"));
    for (arg, what) in [("workers", "workers"), ("results", "results")] {
        let mut cmd = c.sleuth();
        cmd.arg(arg);
        if arg == "results" {
            cmd.arg(&id).arg("--out").arg(c.path("fetched"));
        }
        let out = common::run(&mut cmd, Duration::from_secs(60));
        assert!(out.status.success(), "sleuth {what}");
        client_output.push_str(&String::from_utf8_lossy(&out.stdout));
        client_output.push_str(&String::from_utf8_lossy(&out.stderr));
    }

    let mut pages: Vec<(String, String)> = Vec::new();
    let addrs: Vec<SocketAddr> = c
        .coordinator_metrics
        .iter()
        .chain(&c.worker_metrics)
        .copied()
        .collect();
    assert_eq!(
        addrs.len(),
        4,
        "the coordinator's and three workers' metrics"
    );
    for addr in addrs {
        let body = metrics_body(addr);
        assert!(
            body.contains("sleuth_"),
            "{addr}/metrics has sleuth's metrics"
        );
        pages.push((format!("http://{addr}/metrics"), body));
    }
    let logs = c.logs();
    assert!(
        logs.iter().filter(|(n, _)| n.contains("worker")).count() >= 4,
        "logs: {:?}",
        logs.iter().map(|(n, _)| n).collect::<Vec<_>>()
    );
    // The logs are not empty: info lines of each process.
    for (name, text) in &logs {
        assert!(!text.trim().is_empty(), "{name} is empty");
    }
    let mut con = c.redis();
    let stored = redis_dump(&mut con);
    assert!(stored.contains(KEY_ENV), "the sweep file is in Redis");
    let everything = logs.into_iter().chain(pages).chain([
        ("client output".to_string(), client_output),
        ("redis".to_string(), stored),
    ]);
    for (name, text) in everything {
        for secret in [TOKEN, FAKE_KEY] {
            assert!(
                !text.contains(secret),
                "{name} contains the secret {secret}"
            );
        }
    }
}

/// Check 6a: Three workers against a mock that refuses more than C calls at once, with the model's
/// `max_concurrency = C`: the limit holds for the cluster, so the mock refuses nothing.
#[test]
fn max_concurrency_holds_across_workers() {
    let limit = 3;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let server = rt
        .block_on(sleuth::mockllm::MockServer::start(
            "127.0.0.1:0".parse().expect("an address"),
            sleuth::mockllm::MockConfig {
                max_concurrency: Some(limit),
                latency: Duration::from_millis(15),
                ..sleuth::mockllm::MockConfig::default()
            },
        ))
        .expect("start the mock");
    let Some(c) = Cluster::start(Options {
        capacity: 3,
        worker_models: Some(mock_declaration(&server.base_url())),
        ..Options::default()
    }) else {
        return;
    };
    let file = write_sweep(
        c.dir.path(),
        "limits",
        &["glasshouse.toml", "night-ferry.toml"],
        3,
        &mock_model(&server.base_url(), Some(limit)),
    );
    let id = c.submit(&file);
    let lines = c.watch(&id);
    assert_finished(&lines, 6);
    let stats = server.stats();
    assert!(stats.ok > 0, "{stats:?}");
    assert_eq!(
        stats.rate_limited, 0,
        "the mock refused calls over {limit} at once: {stats:?}"
    );
    rt.block_on(server.shutdown());
}

/// Check 6b: A cluster-wide budget: the sweep stops once (`budget_stopped`, one note), its spending
/// stays within the cap, and the games after the stop are not played.
#[test]
fn the_budget_stops_the_sweep_once_for_the_cluster() {
    let Some(c) = Cluster::start(Options::default()) else {
        return;
    };
    // A game of one round spends about 1.2 million tokens here: the cap stops the sweep early on.
    let cap: u64 = 2_000_000;
    let file = write_sweep(
        c.dir.path(),
        "budget",
        &["glasshouse.toml", "night-ferry.toml"],
        6,
        &format!("{}\n[budget]\nmax_tokens = {cap}\n", simulated_model(10)),
    );
    let games = 12;
    let id = c.submit(&file);
    let p = c.wait_ended(&id);
    assert_eq!(p.status, "budget_stopped", "{p:?}");
    assert!(p.done < games, "games after the stop were played: {p:?}");
    assert!(
        p.pending + p.interrupted > 0 && p.failed == 0,
        "the rest is pending or interrupted: {p:?}"
    );
    assert!(
        p.tokens <= cap,
        "spent {} tokens, cap {cap}: {p:?}",
        p.tokens
    );

    let mut con = c.redis();
    let budget: BTreeMap<String, String> = redis::cmd("HGETALL")
        .arg(format!("{NS}:budget:{id}"))
        .query(&mut con)
        .expect("HGETALL");
    // The first refusal is recorded once, naming the refused call (its worker's id first).
    let stopper = budget
        .get("stopped")
        .unwrap_or_else(|| panic!("no first refusal in {budget:?}"));
    let workers = c.list_workers().expect("list workers");
    assert!(
        workers
            .iter()
            .any(|w| stopper.starts_with(&format!("{}:", w.worker_id))),
        "{stopper} names none of {workers:?}"
    );
    let spent: u64 = budget
        .get("tokens")
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no tokens spent in {budget:?}"));
    assert!(spent <= cap, "{budget:?}");
    let note: Option<String> = redis::cmd("HGET")
        .arg(format!("{NS}:sweep:{id}"))
        .arg("note")
        .query(&mut con)
        .expect("HGET");
    let note = note.expect("the sweep has a note");
    assert!(note.contains("budget"), "{note}");
    // One worker marked the stop: one log line says so.
    let stops: usize = c
        .workers
        .iter()
        .map(|w| w.log_text().matches("sweep budget-stopped").count())
        .sum();
    assert_eq!(stops, 1, "the stop is recorded once");

    // Nothing more is played after the stop.
    std::thread::sleep(Duration::from_secs(3));
    let later = c.progress(&id).expect("progress");
    assert_eq!(later.done, p.done, "{later:?}");
}

/// A sweep whose model's API key the workers do not have: every game fails at once with a reason
/// that names the worker and the missing variable, and the sweep ends (it does not go round the
/// queue for ever).
#[test]
fn a_key_the_workers_lack_fails_the_games_with_a_clear_reason() {
    let missing = "SLEUTH_TEST_KEY_NOBODY_HAS";
    let model = format!(
        "[models.m]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = {missing:?}\n"
    );
    // The workers declare the model with a variable none of them has.
    let Some(c) = Cluster::start(Options {
        worker_models: Some(model.clone()),
        ..Options::default()
    }) else {
        return;
    };
    let file = write_sweep(c.dir.path(), "no-key", &["glasshouse.toml"], 2, &model);
    let id = c.submit(&file);
    let p = c.wait_ended(&id);
    assert_eq!(
        (p.status.as_str(), p.failed, p.done),
        ("finished", 2, 0),
        "{p:?}"
    );
    assert_eq!(p.live_calls, 0, "nothing was called: {p:?}");
    let mut con = c.redis();
    let games: Vec<String> = redis::cmd("ZRANGE")
        .arg(format!("{NS}:sweep-games:{id}"))
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .expect("ZRANGE");
    assert_eq!(games.len(), 2);
    for g in games {
        let reason: String = redis::cmd("HGET")
            .arg(format!("{NS}:game:{g}"))
            .arg("reason")
            .query(&mut con)
            .expect("HGET reason");
        assert!(
            reason.contains(missing) && reason.starts_with("worker "),
            "the reason names the worker and the variable: {reason}"
        );
    }
}
