//! A sweep watched while it runs: the runs page's JSON and its cells in the browser move with it
//! (without a reload), and a running game's timeline says where its next events will be asked for
//! until the game is over.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sleuth::store::GameState;
use sleuth::sweep::{self, RunOptions};

use super::browser::Browser;
use super::{example, page, store, timeline_end_follow};

#[test]
fn while_a_sweep_runs_its_counters_move() {
    // The browser first (it takes a second or two to start), so that it watches the whole sweep.
    let browser = Browser::start();
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = slow_sweep(tmp.path());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let sweep = runtime.spawn(async move {
        sweep::run(
            &file,
            RunOptions {
                progress: false,
                ..RunOptions::default()
            },
        )
        .await
    });
    let base = view_once_the_store_is_made(&runtime, &tmp.path().join("run"));
    let Watched {
        seen,
        followed,
        mut shown,
    } = watch_until_it_ends(&base, &tmp.path().join("run"), browser.as_ref(), &sweep);
    assert!(
        !followed.is_empty(),
        "no running game's timeline said where to follow it"
    );
    if let Some(b) = &browser {
        the_runs_page_shows_the_end_without_a_reload(b, &mut shown);
    }
    // Once they are over, their timelines end.
    for g in &followed {
        assert_eq!(timeline_end_follow(&base, g), None, "game {g} is over");
    }
    let report = runtime
        .block_on(sweep)
        .expect("the sweep's task")
        .expect("the sweep");
    assert_eq!(report.counts.get(GameState::Done), 4);
    let running: Vec<_> = seen.iter().filter(|s| s.2 == "running").collect();
    assert!(
        running.len() >= 3,
        "the figures moved while it ran: {seen:?}"
    );
    let dones: BTreeSet<u64> = running.iter().map(|s| s.0).collect();
    assert!(
        dones.len() >= 2,
        "games finished while it was watched: {seen:?}"
    );
    assert!(
        running
            .windows(2)
            .all(|w| w[0].1 <= w[1].1 && w[0].0 <= w[1].0),
        "counters only grow: {seen:?}"
    );
}

/// Writes the watched sweep's file into `dir` (its run directory: `dir/run`), and returns its path.
fn slow_sweep(dir: &Path) -> PathBuf {
    let file = dir.join("sweep.toml");
    // Games one at a time, each call some milliseconds late, so the sweep lasts long enough to be
    // watched whatever the CPU costs: at 2 ms, then at 5 ms once the simulated model and the gateway
    // stopped re-reading long prompts (issue 32), the watcher saw only two samples on a loaded machine.
    let text = format!(
        "name = \"slow\"\nout = \"{}\"\nscripts = [\"{}\"]\nrepeats = 4\nseed = 1\nconcurrency = 1\n\
         [game]\nprotocol = \"wellplay\"\nrounds = 1\nframework = \"ocot\"\nmodel = \"sim\"\n\
         [evaluation]\nrepeats = 1\n[models.sim]\nprovider = \"simulated\"\nlatency_ms = 12\n",
        dir.join("run").display(),
        example("night-ferry.toml"),
    );
    std::fs::write(&file, text).expect("sweep file");
    file
}

/// Starts the viewer over `run` once the running sweep has made its store there; its base URL.
fn view_once_the_store_is_made(runtime: &tokio::runtime::Runtime, run: &Path) -> String {
    // The viewer needs the store: wait for the sweep to create it.
    let db = run.join("sleuth.db");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !db.is_file() {
        assert!(Instant::now() < deadline, "the sweep never made its store");
        std::thread::sleep(Duration::from_millis(50));
    }
    // …and its schema (the file exists a moment before its tables).
    runtime.block_on(async {
        loop {
            let started = sleuth::view::start(
                sleuth::view::ViewConfig {
                    root: run.to_path_buf(),
                    listen: sleuth::view::Listen::plain("127.0.0.1:0".parse().expect("addr")),
                },
                sleuth::shutdown::Shutdown::new(),
            )
            .await;
            match started {
                Ok(server) => break format!("http://{}", server.addr),
                Err(sleuth::view::ViewError::Store { .. }) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await
                }
                Err(e) => panic!("the viewer does not start: {e}"),
            }
        }
    })
}

/// What was seen while the sweep ran.
struct Watched {
    /// Every (done, live calls, status) of `/api/runs` that differed from the one before.
    seen: Vec<(u64, u64, String)>,
    /// The running games whose timeline said where to follow it.
    followed: Vec<String>,
    /// (done, live calls) as the runs page's cells read in the browser.
    shown: Vec<(String, String)>,
}

/// Polls the viewer (and the runs page in the browser) every 250 ms until `sweep` ends.
fn watch_until_it_ends<T>(
    base: &str,
    run: &Path,
    browser: Option<&Browser>,
    sweep: &tokio::task::JoinHandle<T>,
) -> Watched {
    // Poll as the page does; note every (done, live calls) seen while it ran, and follow a running
    // game's timeline to its end: it says where its next events will be asked for.
    let mut seen: Vec<(u64, u64, String)> = Vec::new();
    let mut followed: Vec<String> = Vec::new();
    // And the runs page in the browser: (done, live calls) as its cells read, without a reload.
    if let Some(b) = browser {
        b.goto(&format!("{base}/"));
        b.find("#runs [data-field=done]");
        b.run_js("window.sleuthNotReloaded = true");
    }
    let mut shown: Vec<(String, String)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    while !sweep.is_finished() {
        assert!(Instant::now() < deadline, "the sweep did not end: {seen:?}");
        let (_, body) = page(&format!("{base}/api/runs"));
        let v: Value = serde_json::from_str(&body).expect("JSON");
        let s = &v["sweeps"][0];
        if let (Some(done), Some(calls)) = (s["done"].as_u64(), s["sums"]["live_calls"].as_u64()) {
            let state = s["status"].as_str().unwrap_or("").to_string();
            if seen.last().map(|l| (l.0, l.1)) != Some((done, calls)) {
                seen.push((done, calls, state));
            }
        }
        if let Some(b) = browser {
            let cells = b.run_js(
                "return ['done', 'live_calls'].map(f => \
                 document.querySelector('#runs [data-field=' + f + ']').textContent)",
            );
            let cell = |i: usize| cells[i].as_str().unwrap_or("").to_string();
            if shown.last() != Some(&(cell(0), cell(1))) {
                shown.push((cell(0), cell(1)));
            }
        }
        let running_game: Option<String> = store(run)
            .query_row("SELECT id FROM games WHERE state = 'running'", [], |r| {
                r.get(0)
            })
            .ok();
        if let Some(g) = running_game {
            if !followed.contains(&g) && timeline_end_follow(base, &g).is_some() {
                followed.push(g);
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    Watched {
        seen,
        followed,
        shown,
    }
}

/// In the browser, once the sweep has ended: the runs page's cells reach its end, having shown more
/// than one figure on the way, and the page was never reloaded.
fn the_runs_page_shows_the_end_without_a_reload(b: &Browser, shown: &mut Vec<(String, String)>) {
    // The page's own cells move to the sweep's end (it polls every 2 s), without a reload.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let done = b.run_js("return document.querySelector('#runs [data-field=done]').textContent");
        let done = done.as_str().unwrap_or("").to_string();
        if shown.last().map(|s| &s.0) != Some(&done) {
            shown.push((done.clone(), String::new()));
        }
        if done == "4" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the runs page never showed 4 done: {shown:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let dones: BTreeSet<&str> = shown.iter().map(|s| s.0.as_str()).collect();
    assert!(
        dones.len() >= 2 && shown.first().map(|s| s.0.as_str()) != Some("4"),
        "the runs page's counters in the browser: {shown:?}"
    );
    assert_eq!(b.run_js("return window.sleuthNotReloaded"), json!(true));
}
