//! Sweeps on one node, end to end: a run and its rerun, SIGKILL and resume from the cache, Ctrl-C
//! (once: games in flight finish; twice: they are interrupted) and resume, the budget, failed games
//! contained and `--retry-failed`, and a gateway that dies mid-run.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sleuth::store::{CallSource, GameState, LedgerEntry, SqliteStore, Store};
use sleuth::sweep::scheduler::{RunEnd, StopReason};
use sleuth::sweep::{self, RunOptions};

/// Writes a sweep file into `dir`: `body` after a header naming the sweep and its run directory.
fn sweep_file(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("sweep.toml");
    let text = format!(
        "name = \"t\"\nout = \"{}\"\n{body}",
        dir.join("run").display()
    );
    std::fs::write(&path, text).expect("write the sweep file");
    path
}

fn example(name: &str) -> String {
    common::crate_file("examples")
        .join(name)
        .display()
        .to_string()
}

fn store(dir: &Path) -> SqliteStore {
    SqliteStore::open(&dir.join("run").join("sleuth.db")).expect("open the run's store")
}

fn quiet() -> RunOptions {
    RunOptions {
        progress: false,
        ..RunOptions::default()
    }
}

/// Two arms (PLAYER* and O-CoT under WellPlay, one round) on night-ferry, `repeats` seeds each;
/// `top` goes before the file's tables, `extra` after them.
fn small_sweep(dir: &Path, repeats: u32, top: &str, extra: &str) -> PathBuf {
    sweep_file(
        dir,
        &format!(
            "scripts = [\"{}\"]\nrepeats = {repeats}\nseed = 1\n{top}[game]\nprotocol = \"wellplay\"\nrounds = 1\nmodel = \"sim\"\n[axes]\nframework = [\"player\", \"ocot\"]\n[evaluation]\nrepeats = 1\n{extra}",
            example("night-ferry.toml")
        ),
    )
}

const SIM: &str = "[models.sim]\nprovider = \"simulated\"\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_runs_its_grid_once_and_a_rerun_plays_nothing_again() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = small_sweep(tmp.path(), 2, "", SIM);
    let first = sweep::run(&file, quiet()).await.expect("run");
    assert_eq!(first.end, RunEnd::Finished);
    assert_eq!(first.queued, 4, "2 arms × 1 script × 2 repeats");
    assert_eq!(first.counts.get(GameState::Done), 4);
    assert!(first.live_calls > 100, "{first:?}");
    let s = store(tmp.path());
    let games = s.games("t").await.expect("games");
    for g in &games {
        assert_eq!(g.state, GameState::Done);
        assert_eq!(g.attempts, 1);
        let result = tmp.path().join("run/games").join(&g.id).join("result.json");
        let text = std::fs::read_to_string(&result).expect("result.json written");
        assert_eq!(
            s.result(&g.id).await.expect("read").as_deref(),
            Some(text.as_str())
        );
        // The result records the planned spec: a game replays alone from it.
        assert!(text.contains("\"spec\""));
    }
    let labels: BTreeSet<&str> = games.iter().map(|g| g.arm_label.as_str()).collect();
    assert_eq!(
        labels,
        BTreeSet::from(["framework=ocot", "framework=player"])
    );
    // A report reads the run directory like any other.
    let loaded = sleuth::report::load(&tmp.path().join("run")).expect("report loads");
    assert_eq!(loaded.games.len(), 4);

    let again = sweep::run(&file, quiet()).await.expect("rerun");
    assert_eq!(again.queued, 0, "finished games are not played again");
    assert_eq!(again.live_calls + again.cache_hits, 0);
    let status = sweep::status::status(&tmp.path().join("run"))
        .await
        .expect("status");
    let text = status.render();
    assert!(text.contains("4 done"), "{text}");
    assert!(text.contains("finished"), "{text}");
}

/// The `sleuth sweep run` child of a test, with its output captured to files.
fn spawn_run(dir: &Path, file: &Path, extra: &[&str]) -> Child {
    let mut cmd = common::sleuth(dir);
    cmd.args(["sweep", "run"])
        .arg(file)
        .args(extra)
        .arg("--quiet")
        .stdout(std::fs::File::create(dir.join("stdout.log")).expect("log"))
        .stderr(std::fs::File::create(dir.join("stderr.log")).expect("log"));
    cmd.spawn().expect("start sleuth sweep run")
}

/// Waits until `done` of the run's games have a result, or panics after a while.
fn wait_for_results(dir: &Path, done: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let n = std::fs::read_dir(dir.join("run/games"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.path().join("result.json").is_file())
                    .count()
            })
            .unwrap_or(0);
        if n >= done {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no {done} results within 120 s; stderr: {}",
            std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .expect("run kill")
        .success();
    assert!(ok, "kill -{sig} failed");
}

fn wait(mut child: Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + common::CHILD_TIMEOUT;
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("sleuth sweep run did not end");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The runs of the sweep, oldest first, with their ledgers.
fn ledgers(dir: &Path) -> Vec<Vec<LedgerEntry>> {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let s = store(dir);
        let mut out = Vec::new();
        for r in s.runs("t").await.expect("runs") {
            out.push(s.ledger(&r.id).await.expect("ledger"));
        }
        out
    })
}

/// Entries in the run's cache; 0 while the store cannot be read (the run may be writing it).
fn cache_len(dir: &Path) -> u64 {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let s = SqliteStore::open(&dir.join("run").join("sleuth.db")).ok()?;
        s.cache_len().await.ok()
    })
    .unwrap_or(0)
}

fn games(dir: &Path) -> Vec<sleuth::store::GameRow> {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async { store(dir).games("t").await.expect("games") })
}

fn live_keys(entries: &[LedgerEntry]) -> BTreeSet<String> {
    entries
        .iter()
        .filter(|e| e.source == CallSource::Live)
        .filter_map(|e| e.key.clone())
        .collect()
}

/// A sweep slow enough to be interrupted: 20 ms per simulated call, two games at a time.
fn slow_sweep(dir: &Path, repeats: u32) -> PathBuf {
    small_sweep(
        dir,
        repeats,
        "concurrency = 2\n",
        "[models.sim]\nprovider = \"simulated\"\nlatency_ms = 20\n",
    )
}

#[test]
fn a_killed_sweep_resumes_and_pays_nothing_twice() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = slow_sweep(tmp.path(), 3);
    let child = spawn_run(tmp.path(), &file, &[]);
    wait_for_results(tmp.path(), 1);
    // Let the next games make some calls (about what 400 ms of two games make on an idle machine;
    // waited for, since a loaded one may have made none by then), then kill without warning.
    let cached_at_first = cache_len(tmp.path());
    let deadline = Instant::now() + Duration::from_secs(120);
    while cache_len(tmp.path()) < cached_at_first + 20 {
        assert!(
            Instant::now() < deadline,
            "the run cached no further call in 120 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&child, "KILL");
    let _ = wait(child);
    let before: BTreeMap<String, (GameState, u32)> = games(tmp.path())
        .into_iter()
        .map(|g| (g.id, (g.state, g.attempts)))
        .collect();
    assert!(
        before.values().any(|(s, _)| *s == GameState::Running),
        "the kill left games in flight: {before:?}"
    );

    let out = common::run(
        common::sleuth(tmp.path())
            .args(["sweep", "run"])
            .arg(&file)
            .arg("--quiet"),
        common::CHILD_TIMEOUT,
    );
    assert!(
        out.status.success(),
        "rerun failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = games(tmp.path());
    assert_eq!(after.len(), 6);
    for g in &after {
        assert_eq!(g.state, GameState::Done, "{}", g.id);
        let (state, attempts) = before[&g.id];
        if state == GameState::Done {
            assert_eq!(g.attempts, attempts, "a finished game was played again");
        }
    }
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let results = rt.block_on(async {
        let s = store(tmp.path());
        let mut n = 0;
        for g in &after {
            n += usize::from(s.result(&g.id).await.expect("read").is_some());
        }
        n
    });
    assert_eq!(results, 6, "every game has exactly one result");

    let runs = ledgers(tmp.path());
    assert_eq!(runs.len(), 2);
    let (killed, resumed) = (&runs[0], &runs[1]);
    let paid_before = live_keys(killed);
    let paid_after = live_keys(resumed);
    assert!(!paid_before.is_empty());
    assert!(
        paid_before.is_disjoint(&paid_after),
        "calls paid before the kill were paid again"
    );
    // The games the kill interrupted replayed their finished calls from the cache, at no cost.
    let interrupted: BTreeSet<&String> = before
        .iter()
        .filter(|(_, (s, _))| *s != GameState::Done)
        .map(|(id, _)| id)
        .collect();
    let replayed: Vec<&LedgerEntry> = resumed
        .iter()
        .filter(|e| e.source == CallSource::Cache && interrupted.contains(&e.game))
        .collect();
    assert!(!replayed.is_empty(), "no call was served from the cache");
    for e in &replayed {
        assert_eq!(e.cost_usd, 0.0);
        assert!(paid_before.contains(e.key.as_deref().unwrap_or("")));
    }
    let before_keys_of_interrupted: BTreeSet<String> = killed
        .iter()
        .filter(|e| e.source == CallSource::Live && interrupted.contains(&e.game))
        .filter_map(|e| e.key.clone())
        .collect();
    let hit_keys: BTreeSet<String> = replayed.iter().filter_map(|e| e.key.clone()).collect();
    assert_eq!(
        before_keys_of_interrupted, hit_keys,
        "every call finished before the kill came back from the cache"
    );
}

#[test]
fn ctrl_c_lets_games_in_flight_finish_and_a_rerun_continues() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = slow_sweep(tmp.path(), 3);
    let child = spawn_run(tmp.path(), &file, &[]);
    wait_for_results(tmp.path(), 1);
    signal(&child, "INT");
    let status = wait(child);
    assert!(!status.success(), "a stopped sweep exits non-zero");
    let stderr = std::fs::read_to_string(tmp.path().join("stderr.log")).unwrap_or_default();
    assert!(stderr.contains("stopped before its end"), "{stderr}");
    let mid = games(tmp.path());
    for g in &mid {
        assert!(
            matches!(g.state, GameState::Done | GameState::Pending),
            "after one Ctrl-C no game is left half-played: {} {:?}",
            g.id,
            g.state
        );
    }
    let done_mid = mid.iter().filter(|g| g.state == GameState::Done).count();
    assert!((1..6).contains(&done_mid), "{done_mid} done");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let st = rt
        .block_on(sweep::status::status(&tmp.path().join("run")))
        .expect("status");
    assert_eq!(st.sweep.status, sleuth::store::SweepStatus::Stopped);

    // Twice: the games in flight are interrupted at once, then continued by the next run. The
    // signals come once the run has cached some calls of its games (a fixed pause is too short on a
    // loaded machine, where the run may not have called anything yet).
    let cached_before = cache_len(tmp.path());
    let child = spawn_run(tmp.path(), &file, &[]);
    let deadline = Instant::now() + Duration::from_secs(120);
    while cache_len(tmp.path()) < cached_before + 5 {
        assert!(
            Instant::now() < deadline,
            "the second run cached no call in 120 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&child, "INT");
    std::thread::sleep(Duration::from_millis(50));
    signal(&child, "INT");
    let _ = wait(child);
    let interrupted: BTreeSet<String> = games(tmp.path())
        .into_iter()
        .filter(|g| g.state == GameState::Interrupted)
        .map(|g| g.id)
        .collect();
    let out = common::run(
        common::sleuth(tmp.path())
            .args(["sweep", "run"])
            .arg(&file)
            .arg("--quiet"),
        common::CHILD_TIMEOUT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(games(tmp.path()).iter().all(|g| g.state == GameState::Done));
    if !interrupted.is_empty() {
        let runs = ledgers(tmp.path());
        let last = runs.last().expect("runs");
        assert!(
            last.iter()
                .any(|e| e.source == CallSource::Cache && interrupted.contains(&e.game)),
            "interrupted games continued from the cache"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_stops_the_sweep_and_a_larger_one_continues_it() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // $1 per million tokens in and out; one of these games costs about $1.
    let priced = "[models.sim]\nprovider = \"simulated\"\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 1.0\n";
    let file = small_sweep(
        tmp.path(),
        3,
        "concurrency = 1\n",
        &format!("{priced}[budget]\nmax_usd = 2.5\n"),
    );
    let r = sweep::run(&file, quiet()).await.expect("run");
    assert_eq!(r.end, RunEnd::Stopped(StopReason::Budget));
    assert!(r.spent.usd <= 2.5, "spent {} past the budget", r.spent.usd);
    let done = r.counts.get(GameState::Done);
    assert!((1..6).contains(&done), "{done} done");
    let s = store(tmp.path());
    let games = s.games("t").await.expect("games");
    // No game started after the budget was exhausted: at most the one whose call was refused is
    // interrupted, the rest never started.
    let started = games.iter().filter(|g| g.attempts > 0).count();
    assert_eq!(
        started as u64,
        done + r.counts.get(GameState::Interrupted),
        "{games:#?}"
    );
    assert!(r.counts.get(GameState::Interrupted) <= 1);
    let sweep = s.sweep("t").await.expect("read").expect("sweep");
    assert_eq!(sweep.status, sleuth::store::SweepStatus::BudgetStopped);
    assert!(sweep.note.as_deref().unwrap_or("").contains("spent $"));
    // The ledger holds what was paid, and it is what the run reports.
    let paid: f64 = s
        .totals("t")
        .await
        .expect("totals")
        .iter()
        .filter(|t| t.source == "live")
        .map(|t| t.cost_usd)
        .sum();
    assert!(
        (paid - r.spent.usd).abs() < 1e-9,
        "{paid} vs {}",
        r.spent.usd
    );

    let file = small_sweep(
        tmp.path(),
        3,
        "concurrency = 1\n",
        &format!("{priced}[budget]\nmax_usd = 100.0\n"),
    );
    let r2 = sweep::run(&file, quiet()).await.expect("rerun");
    assert_eq!(r2.end, RunEnd::Finished);
    assert_eq!(r2.counts.get(GameState::Done), 6);
    assert!(r2.spent.usd > r.spent.usd);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_games_are_contained_and_retry_failed_plays_only_them() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // A port the mock can be started on twice: failing, then healthy.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let failing = sleuth::mockllm::MockServer::start(
        addr,
        sleuth::mockllm::MockConfig {
            error_rate: 1.0,
            retry_after_ms: 1,
            ..Default::default()
        },
    )
    .await
    .expect("mock");
    let body = format!(
        "scripts = [\"{}\"]\nrepeats = 1\n[game]\nprotocol = \"wellplay\"\nrounds = 1\nframework = \"ocot\"\n[axes]\nmodel = [\"sim\", \"flaky\"]\n[evaluation]\nrepeats = 1\n{SIM}[models.flaky]\nprovider = \"openai\"\nbase_url = \"{}\"\nmodel = \"sim-1\"\napi_key_env = \"PATH\"\n[gateway]\nmax_retries = 1\nretry_base_ms = 1\n",
        example("night-ferry.toml"),
        failing.base_url()
    );
    let file = sweep_file(tmp.path(), &body);
    let r = sweep::run(&file, quiet()).await.expect("run");
    failing.shutdown().await;
    assert_eq!(
        r.end,
        RunEnd::Finished,
        "a failed game does not stop the sweep"
    );
    assert_eq!(r.counts.get(GameState::Done), 1);
    assert_eq!(r.counts.get(GameState::Failed), 1);
    let s = store(tmp.path());
    let failed: Vec<_> = s
        .games("t")
        .await
        .expect("games")
        .into_iter()
        .filter(|g| g.state == GameState::Failed)
        .collect();
    assert_eq!(failed[0].arm_label, "model=flaky");
    let reason = failed[0].reason.as_deref().unwrap_or("");
    assert!(reason.contains("gave up after 2 attempts"), "{reason}");
    assert!(
        failed[0].stage.is_some(),
        "the stage it failed in is recorded"
    );
    // The failed attempts are in the ledger.
    let retries: u64 = s
        .totals("t")
        .await
        .expect("totals")
        .iter()
        .filter(|t| t.source == "retry")
        .map(|t| t.calls)
        .sum();
    assert!(retries >= 1);

    // A plain rerun leaves failed games alone.
    let again = sweep::run(&file, quiet()).await.expect("rerun");
    assert_eq!(again.queued, 0);

    let healthy = sleuth::mockllm::MockServer::start(addr, Default::default())
        .await
        .expect("mock again");
    let retried = sweep::run(
        &file,
        RunOptions {
            retry_failed: true,
            ..quiet()
        },
    )
    .await
    .expect("retry");
    healthy.shutdown().await;
    assert_eq!(retried.queued, 1, "only the failed game is played again");
    assert_eq!(retried.counts.get(GameState::Done), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_gateway_is_restarted_and_its_callers_never_see_unavailable() {
    use sleuth::llm::{
        CallTags, ChatRequest, GatewayConfig, GatewayParts, GatewayState, Message, Phase, Pricing,
        Route, Router, SimulatedProvider,
    };
    let provider = Arc::new(SimulatedProvider {
        latency: Duration::from_millis(100),
    });
    let state = GatewayState::new(GatewayParts {
        router: Router::single(Route::new(provider, None)),
        pricing: Pricing::default(),
        config: GatewayConfig::default(),
        cache: None,
        budget: None,
        ledger: None,
        shared: None,
        batch: None,
    });
    let node = sweep::node::Node::start(state, "simulated")
        .await
        .expect("node");
    let gw = node.gateway.clone();
    let call = |i: u64| {
        let gw = gw.clone();
        async move {
            gw.chat(
                ChatRequest {
                    model: "sim-1".into(),
                    messages: vec![Message::user(format!("Who was on deck at {i}?"))],
                    temperature: 0.8,
                    top_p: 1.0,
                    max_tokens: 20,
                    schema: None,
                    logprobs: false,
                    sample: i,
                    cache_key: None,
                },
                CallTags {
                    game: "g".into(),
                    agent: "a".into(),
                    framework: "f".into(),
                    phase: Phase::Gameplay,
                    purpose: "p".into(),
                },
            )
            .await
        }
    };
    let first: Vec<_> = (0..10).map(call).collect();
    let calls = tokio::spawn(futures::future::join_all(first));
    tokio::time::sleep(Duration::from_millis(20)).await;
    gw.crash();
    tokio::time::sleep(Duration::from_millis(20)).await;
    // Calls sent while (or just after) it died reach its successor.
    let later = futures::future::join_all((10..20).map(call)).await;
    for r in calls.await.expect("join").into_iter().chain(later) {
        r.expect("every call is answered");
    }
    assert_eq!(sweep::node::restarts(&node.actor).await, 1);
    node.actor.stop(None);
}

#[test]
fn a_bad_sweep_file_fails_before_anything_runs() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = small_sweep(tmp.path(), 1, "", "[axes.bogus]\n");
    let out = common::run(
        common::sleuth(tmp.path()).args(["sweep", "run"]).arg(&file),
        common::CHILD_TIMEOUT,
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("sweep.toml"), "{err}");
    assert!(!tmp.path().join("run").exists(), "nothing was created");

    // An impossible combination names the arm.
    let file = small_sweep(
        tmp.path(),
        1,
        "",
        &format!("{SIM}[[arms]]\nprotocol = \"mirage\"\n"),
    );
    let out = common::run(
        common::sleuth(tmp.path())
            .args(["sweep", "plan"])
            .arg(&file),
        common::CHILD_TIMEOUT,
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("protocol=mirage"), "{err}");
    assert!(err.contains("does not play the `mirage` protocol"), "{err}");

    // A model nobody listed.
    let file = small_sweep(tmp.path(), 1, "", "[[arms]]\nmodel = \"gpt-9\"\n");
    let out = common::run(
        common::sleuth(tmp.path())
            .args(["sweep", "plan"])
            .arg(&file),
        common::CHILD_TIMEOUT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`gpt-9` is not in the models table"), "{err}");

    // A missing key, before any call.
    let file = small_sweep(
        tmp.path(),
        1,
        "",
        "[[arms]]\nmodel = \"remote\"\n[models.remote]\nprovider = \"openai\"\napi_key_env = \"SLEUTH_TEST_NO_SUCH_KEY\"\n",
    );
    let out = common::run(
        common::sleuth(tmp.path()).args(["sweep", "run"]).arg(&file),
        common::CHILD_TIMEOUT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("SLEUTH_TEST_NO_SUCH_KEY"), "{err}");
    assert!(!tmp.path().join("run").exists());
}

#[test]
fn sweep_plan_prints_the_grid_and_an_estimate() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let priced = "[models.sim]\nprovider = \"simulated\"\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 2.0\n";
    let file = small_sweep(tmp.path(), 2, "", priced);
    let out = common::run(
        common::sleuth(tmp.path())
            .args(["sweep", "plan"])
            .arg(&file),
        common::CHILD_TIMEOUT,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("2 arms × 1 scripts × 2 repeats = 4 games"),
        "{text}"
    );
    assert!(text.contains("framework=player"), "{text}");
    // One simulated game per arm measured: the repeats of an arm share its structure.
    assert!(text.contains("2 simulated games measured"), "{text}");
    let total_line = text
        .lines()
        .find(|l| l.trim_start().starts_with("total"))
        .expect("total");
    let usd: f64 = total_line
        .split_whitespace()
        .last()
        .and_then(|x| x.parse().ok())
        .expect("a USD figure");
    assert!(usd > 0.0, "{total_line}");
}
