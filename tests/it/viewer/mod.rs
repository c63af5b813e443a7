//! `sleuth view` end to end: a small sweep is played once with the simulated model (three arms, one of
//! them against a mock server that fails every call, so the sweep has failed games), the viewer is
//! started over its run directory, and its pages and endpoints are checked over HTTP — then in a real
//! browser (Chromium, headless, driven over WebDriver): runs page → sweep → game → as seen by one
//! character → a model call opened → two games side by side; a running sweep's counters moving on the
//! runs page; a Chinese game drawn with real glyphs.
//!
//! The browser tests need `chromedriver` and Chromium (`scripts/ensure-chromium.sh`); without them they
//! are skipped, and under `CI=true` they fail. With `SLEUTH_VIEWER_SCREENSHOTS=DIR` the browser test
//! writes a screenshot of each page into DIR (`scripts/viewer-screenshots.sh`).
//!
//! The tests, by file: [`pages`] (the runs, sweep, game and model-call pages over HTTP), [`compare`]
//! (two games side by side), [`serve`] (`sleuth view` as a command: its token off loopback, a folder
//! of games), [`hardening`] (the host check, the security headers, TLS and the session cookie,
//! timeouts and the connection bound), [`running`] (a running sweep's counters), [`in_browser`] (the pages in Chromium, driven
//! by [`browser`]'s WebDriver client), [`annotate`] (the annotation campaigns' pages, in Chromium
//! and over HTTP), [`annotate_create`] (a campaign made from the owner's page, over HTTP),
//! [`seat_browser`] (a person playing a whole game at the seat, in Chromium), [`bundle`]
//! (`sleuth view --bundle`: the static pages, their links, and in Chromium from `file://`). What they share, the played sweep and the HTTP helpers, is
//! here.

mod annotate;
mod annotate_create;
mod annotate_questions;
mod browser;
mod bundle;
mod compare;
mod hardening;
mod in_browser;
mod pages;
mod running;
mod seat_browser;
mod serve;
mod take_seat;

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;
use sleuth::store::GameState;
use sleuth::sweep::{self, RunOptions};

/// The played sweep and the viewer serving it, shared by every test of this module.
struct Fixture {
    run: PathBuf,
    base: String,
    /// Keeps the viewer's runtime (and with it the server) alive.
    _runtime: tokio::runtime::Runtime,
}

fn example(name: &str) -> String {
    common::crate_file("examples")
        .join(name)
        .display()
        .to_string()
}

/// Plays the sweep (once per test process) and starts the viewer over it.
fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("viewer");
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("fixture dir");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let base = runtime.block_on(async {
            let failing = sleuth::mockllm::MockServer::start(
                "127.0.0.1:0".parse().expect("addr"),
                sleuth::mockllm::MockConfig {
                    error_rate: 1.0,
                    retry_after_ms: 1,
                    ..Default::default()
                },
            )
            .await
            .expect("mock");
            let file = root.join("sweep.toml");
            let text = format!(
                "name = \"t\"\nout = \"{}\"\nscripts = [\"{}\"]\nrepeats = 1\nseed = 1\n\
                 [game]\nprotocol = \"wellplay\"\nrounds = 1\nmodel = \"sim\"\n\
                 [[arms]]\nframework = \"player\"\n[[arms]]\nframework = \"ocot\"\n\
                 [[arms]]\nframework = \"ocot\"\nmodel = \"flaky\"\n\
                 [evaluation]\nrepeats = 1\n[models.sim]\nprovider = \"simulated\"\n\
                 [models.flaky]\nprovider = \"openai\"\nbase_url = \"{}\"\nmodel = \"sim-1\"\n\
                 api_key_env = \"PATH\"\n[gateway]\nmax_retries = 1\nretry_base_ms = 1\n",
                root.join("run").display(),
                example("night-ferry.toml"),
                failing.base_url()
            );
            std::fs::write(&file, text).expect("sweep file");
            let r = sweep::run(
                &file,
                RunOptions {
                    progress: false,
                    ..RunOptions::default()
                },
            )
            .await
            .expect("the sweep runs");
            failing.shutdown().await;
            assert_eq!(r.counts.get(GameState::Done), 2, "{r:?}");
            assert_eq!(r.counts.get(GameState::Failed), 1, "{r:?}");
            let server = sleuth::view::start(
                sleuth::view::ViewConfig {
                    root: root.join("run"),
                    listen: sleuth::view::Listen::plain("127.0.0.1:0".parse().expect("addr")),
                },
                sleuth::shutdown::Shutdown::new(),
            )
            .await
            .expect("the viewer starts");
            format!("http://{}", server.addr)
        });
        Fixture {
            run: root.join("run"),
            base,
            _runtime: runtime,
        }
    })
}

/// A blocking GET on the test's own small runtime: (status, X-Next, body).
fn get(url: &str) -> (u16, Option<String>, String) {
    get_with(url, &[])
}

fn get_with(url: &str, headers: &[(&str, &str)]) -> (u16, Option<String>, String) {
    let (status, h, body) = fetch(url, headers);
    (status, h.get("x-next").cloned(), body)
}

/// GET: the status, the response's headers (names in lower case) and its body.
fn fetch(url: &str, headers: &[(&str, &str)]) -> (u16, HashMap<String, String>, String) {
    request(reqwest::Method::GET, url, headers, None)
}

/// One request, redirects not followed: the status, the response's headers (names in lower case)
/// and its body.
fn request(
    method: reqwest::Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<String>,
) -> (u16, HashMap<String, String>, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        let mut req = client.request(method.clone(), url);
        if let Some(body) = body {
            req = req.body(body);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let status = resp.status().as_u16();
        let h = resp
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
            .collect();
        let body = resp.text().await.expect("body");
        (status, h, body)
    })
}

/// Follows a game's timeline to its end (`X-Next` after `X-Next`) and returns the `X-Follow` of the
/// last page: where a running game's new events will be asked for.
fn timeline_end_follow(base: &str, id: &str) -> Option<String> {
    let mut url = format!("{base}/game/events?id={id}&after=0");
    loop {
        let (status, h, body) = fetch(&url, &[]);
        assert_eq!(status, 200, "GET {url}: {body}");
        match h.get("x-next") {
            Some(next) => url = format!("{base}{next}"),
            None => return h.get("x-follow").cloned(),
        }
    }
}

/// GET that must answer 200; the body with HTML's escapes undone (minijinja escapes `/` too), so
/// links and texts can be looked for as they read.
fn page(url: &str) -> (Option<String>, String) {
    let (status, next, body) = get(url);
    assert_eq!(status, 200, "GET {url}: {body}");
    (next, unescape(&body))
}

fn unescape(s: &str) -> String {
    s.replace("&#x2f;", "/")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

fn enc(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

fn store(run: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open_with_flags(
        run.join("sleuth.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("open the store")
}

/// (id, state) of the sweep's games, in plan order.
fn games(run: &Path) -> Vec<(String, String)> {
    let c = store(run);
    let mut st = c
        .prepare("SELECT id, state FROM games ORDER BY seq")
        .expect("query");
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("games")
}

fn done_game(run: &Path) -> String {
    games(run)
        .into_iter()
        .find(|(_, s)| s == "done")
        .map(|(id, _)| id)
        .expect("a done game")
}

/// Every value of `attr="…"` in `html`.
fn attrs(html: &str, attr: &str) -> Vec<String> {
    let pat = format!("{attr}=\"");
    html.match_indices(&pat)
        .filter_map(|(i, m)| {
            let rest = &html[i + m.len()..];
            rest.find('"').map(|end| rest[..end].to_string())
        })
        .collect()
}

/// Waits until `/api/runs` has summed the ledger, and returns it.
fn live(base: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, body) = page(&format!("{base}/api/runs"));
        let v: Value = serde_json::from_str(&body).expect("JSON");
        if v["sweeps"][0]["sums"]["live_calls"].as_u64().unwrap_or(0) > 0 {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "the ledger was never summed: {v}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The done games of the two arms that played (the same script and repeat, so the same seed).
fn two_arms(run: &Path) -> (String, String) {
    let c = store(run);
    let mut st = c
        .prepare(
            "SELECT a.id, b.id FROM games a JOIN games b ON a.script = b.script \
             AND a.repeat = b.repeat AND a.arm <> b.arm AND a.seq < b.seq \
             WHERE a.state = 'done' AND b.state = 'done' ORDER BY a.seq LIMIT 1",
        )
        .expect("query");
    st.query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("two done games of two arms")
}

/// Starts `sleuth view` on `listen` with `env`, returning the child and its address.
fn spawn_view(dir: &Path, listen: &str, env: &[(&str, &str)]) -> (Child, String) {
    let mut cmd = common::sleuth(dir);
    cmd.args(["view", &dir.display().to_string(), "--listen", listen])
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (child, line) = common::start_viewer(cmd);
    (child, common::viewer_addr(&line))
}
