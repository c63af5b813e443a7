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

use crate::common;

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sleuth::store::GameState;
use sleuth::sweep::{self, RunOptions};

/// The played sweep and the viewer serving it, shared by every test of this file.
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
                    listen: "127.0.0.1:0".parse().expect("addr"),
                    token: None,
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
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        let mut req = client.get(url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"));
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

#[test]
fn the_runs_page_and_its_json_show_the_sweep_with_its_counts_and_cost() {
    let f = fixture();
    let v = live(&f.base);
    let s = &v["sweeps"][0];
    assert_eq!(s["id"], "t");
    assert_eq!(s["games"], 3);
    assert_eq!(s["done"], 2);
    assert_eq!(s["failed"], 1);
    assert_eq!(s["status"], "finished");
    // The ledger, summed by the viewer, equals the ledger summed by SQL.
    let c = store(&f.run);
    let (live_calls, usd): (i64, f64) = c
        .query_row(
            "SELECT COUNT(*), SUM(cost_usd) FROM ledger WHERE source = 'live'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("ledger");
    assert_eq!(s["sums"]["live_calls"].as_i64(), Some(live_calls));
    assert!((s["sums"]["usd"].as_f64().expect("usd") - usd).abs() < 1e-9);
    assert!(s["sums"]["retries"].as_u64().expect("retries") >= 1);

    let (_, html) = page(&format!("{}/", f.base));
    assert!(html.contains("href=\"/sweep?id=t\""), "{html}");
    assert!(html.contains("data-field=\"live_calls\""));
    assert!(html.contains("/assets/app.js"));
    let (_, js) = page(&format!("{}/assets/app.js", f.base));
    assert!(js.contains("/api/runs") || js.contains("data-live"));
}

#[test]
fn the_sweep_page_has_the_grid_the_report_and_the_failed_game_with_its_reason() {
    let f = fixture();
    live(&f.base);
    let (_, html) = page(&format!("{}/sweep?id=t", f.base));
    for label in ["framework=player", "model=flaky"] {
        assert!(html.contains(label), "arm {label} missing: {html}");
    }
    assert!(
        html.contains("The Last Crossing of the Marigold"),
        "the script"
    );
    assert!(html.contains("id=\"failed\""));
    let failed: Vec<String> = games(&f.run)
        .into_iter()
        .filter(|(_, s)| s == "failed")
        .map(|(id, _)| id)
        .collect();
    assert_eq!(failed.len(), 1);
    assert!(html.contains(&format!("/game?id={}", failed[0])));
    assert!(
        html.contains("gave up after"),
        "the failure's reason is shown"
    );
    // Rows of one state, as the "Load more" button fetches them.
    let (next, rows) = page(&format!("{}/sweep/games?id=t&state=done", f.base));
    assert_eq!(next, None, "two games fit one page");
    assert_eq!(rows.matches("<tr").count(), 2);

    // The report's tables, from `sleuth report`'s code.
    let (_, report) = page(&format!("{}/report?sweep=t", f.base));
    assert!(report.contains("Arms"), "{report}");
    assert!(report.contains("<table"), "{report}");
    assert!(report.contains("2 games"), "{report}");
}

#[test]
fn a_game_page_shows_the_outcome_and_pages_through_the_whole_transcript() {
    let f = fixture();
    let id = done_game(&f.run);
    let result: Value = serde_json::from_str(
        &std::fs::read_to_string(f.run.join("games").join(&id).join("result.json"))
            .expect("result.json"),
    )
    .expect("JSON");
    let (_, html) = page(&format!("{}/game?id={id}", f.base));
    assert!(html.contains(result["winner"].as_str().unwrap_or("—")));
    for voter in result["votes"].as_object().expect("votes").keys() {
        assert!(html.contains(voter.as_str()), "voter {voter}");
    }
    // PLAYER*'s suspicion over the rounds, from the pruner's events.
    assert_eq!(
        result["framework"], "player",
        "the first game is the PLAYER* arm's"
    );
    assert!(html.contains("Suspicion and trust"));
    assert!(html.contains("<svg class=\"chart\"") && html.contains("<polyline"));
    // Page through the transcript by its cursor: every event once, in order, no page too big.
    let mut seqs: Vec<u64> = attrs(&html, "data-seq")
        .iter()
        .map(|s| s.parse().expect("seq"))
        .collect();
    let mut next = attrs(&html, "data-more").into_iter().next();
    let mut pages = 1;
    while let Some(n) = next {
        let (more, body) = page(&format!("{}{n}", f.base));
        assert!(body.len() < 1_000_000, "a page of {} bytes", body.len());
        seqs.extend(
            attrs(&body, "data-seq")
                .iter()
                .map(|s| s.parse::<u64>().expect("seq")),
        );
        next = more;
        pages += 1;
    }
    let events = result["events"].as_u64().expect("events");
    assert_eq!(seqs, (0..events).collect::<Vec<_>>(), "in {pages} pages");
    assert!(pages > 1, "a transcript of {events} events is paged");

    // The evaluation's answers, right or wrong.
    let (_, answers) = page(&format!("{}/game/events?id={id}&view=answers", f.base));
    assert!(answers.contains("choice_answer") || answers.contains("factual_answer"));
    assert!(answers.contains("badge right") || answers.contains("badge wrong"));
}

#[test]
fn as_seen_by_a_character_the_others_private_events_are_gone() {
    let f = fixture();
    let id = done_game(&f.run);
    let (_, all) = page(&format!("{}/game?id={id}", f.base));
    let only: BTreeSet<String> = attrs(&all, "data-only").into_iter().collect();
    let characters: BTreeSet<String> = only
        .iter()
        .flat_map(|o| o.split('|').map(str::to_string))
        .collect();
    assert!(
        characters.len() >= 2,
        "private events of several characters: {only:?}"
    );
    let me = characters.iter().next().expect("a character").clone();
    let (_, mine) = page(&format!("{}/game?id={id}&as={}", f.base, enc(&me)));
    let seen = attrs(&mine, "data-only");
    assert!(!seen.is_empty(), "{me}'s own private events are shown");
    for o in &seen {
        assert!(
            o.split('|').any(|w| w == me),
            "as {me}, an event private to {o} is shown"
        );
    }
    assert!(mine.contains("data-seq"));
    // And on the next pages too.
    let next = attrs(&mine, "data-more")
        .into_iter()
        .next()
        .expect("more events");
    assert!(next.contains("&as="), "{next}");
    let (_, body) = page(&format!("{}{next}", f.base));
    for o in attrs(&body, "data-only") {
        assert!(o.split('|').any(|w| w == me), "page 2 as {me}: {o}");
    }
}

#[test]
fn every_model_call_opens_with_its_messages_latency_and_reply() {
    let f = fixture();
    let id = done_game(&f.run);
    let (_, game) = page(&format!("{}/game?id={id}", f.base));
    assert!(game.contains(&format!("data-load=\"/game/calls?id={id}&offset=0\"")));
    let (next, html) = page(&format!("{}/game/calls?id={id}&offset=0", f.base));
    let calls = attrs(&html, "data-call");
    assert_eq!(calls.len(), 50, "the first page of calls");
    assert_eq!(next, Some(format!("/game/calls?id={id}&offset=50")));
    let call: i64 = calls[0].parse().expect("call id");
    let c = store(&f.run);
    let (key, purpose): (String, String) = c
        .query_row(
            "SELECT key, purpose FROM ledger WHERE id = ?1",
            [call],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("the call");
    let value: Vec<u8> = c
        .query_row(
            "SELECT value FROM cache WHERE key = ?1",
            [hex::decode(&key).expect("hex key")],
            |r| r.get(0),
        )
        .expect("its cache entry");
    let reply: Value = serde_json::from_slice(&value).expect("JSON");
    let content = reply["content"].as_str().expect("content");
    let (_, detail) = page(&format!("{}/game/call?id={id}&call={call}", f.base));
    let first_line = content.lines().next().unwrap_or("").trim();
    assert!(
        detail.contains(first_line),
        "reply {first_line:?} not in {detail}"
    );
    assert!(html.contains(&purpose));
    // What the call asked, kept beside its answer: every message, the last one open.
    let record: Vec<u8> = c
        .query_row(
            "SELECT value FROM requests WHERE key = ?1",
            [hex::decode(&key).expect("hex key")],
            |r| r.get(0),
        )
        .expect("the call's request is kept");
    let request = sleuth::llm::requests::read(&record, |h| {
        c.query_row("SELECT text FROM messages WHERE hash = ?1", [&h[..]], |r| {
            r.get(0)
        })
        .ok()
    })
    .expect("a request");
    let texts = request.texts();
    assert_eq!(texts.len(), request.messages.len(), "every message kept");
    assert_eq!(
        detail.matches("<li class=\"message role-").count(),
        texts.len()
    );
    for m in &texts {
        let line = m
            .content
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        assert!(
            detail.contains(line.trim()),
            "message line {line:?} not shown"
        );
    }
    // And how long the live call took.
    let latency = reply["latency_ms"]
        .as_u64()
        .expect("the live call's latency");
    assert!(
        detail.contains(&format!("{latency} ms")),
        "latency {latency} ms not in the call's detail"
    );
    // A call of another game is not served under this one.
    let other = games(&f.run)
        .into_iter()
        .find(|(g, s)| *g != id && s == "done")
        .map(|(g, _)| g)
        .expect("another game");
    assert_eq!(
        get(&format!("{}/game/call?id={other}&call={call}", f.base)).0,
        404
    );
}

/// Every event of a game's transcript, by sequence number.
fn transcript(run: &Path, id: &str) -> Vec<Value> {
    std::fs::read_to_string(run.join("games").join(id).join("transcript.jsonl"))
        .expect("transcript.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("an event"))
        .collect()
}

/// What an event says, as the two-games page compares it: not its number, time or usage.
fn says(e: &Value) -> Value {
    json!([
        e["stage"],
        e["kind"],
        e["speaker"],
        e["addressee"],
        e["visible_to"],
        e["text"],
        e["data"]
    ])
}

/// The rows of a two-games page or fragment: (row number, differs, first, A's seq, B's seq).
type CmpRow = (u64, bool, bool, Option<u64>, Option<u64>);

fn compare_rows(html: &str) -> Vec<CmpRow> {
    html.split("<div class=\"cmp-row")
        .skip(1)
        .map(|chunk| {
            let head = &chunk[..chunk.find('>').unwrap_or(chunk.len())];
            let n = attrs(head, "data-row")[0].parse().expect("row number");
            let seq = |side: &str| {
                let pat = format!("data-side=\"{side}\" data-seq=\"");
                chunk.find(&pat).map(|i| {
                    let rest = &chunk[i + pat.len()..];
                    rest[..rest.find('"').expect("end quote")]
                        .parse()
                        .expect("seq")
                })
            };
            (
                n,
                head.contains("data-differs"),
                head.contains("id=\"first-difference\""),
                seq("a"),
                seq("b"),
            )
        })
        .collect()
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

#[test]
fn two_games_side_by_side_are_aligned_by_stage_with_their_first_difference_marked() {
    let f = fixture();
    let (a, b) = two_arms(&f.run);
    // The game page links to the other arm's game with the same script and repeat.
    let (_, game) = page(&format!("{}/game?id={a}", f.base));
    assert!(game.contains("action=\"/compare\""), "the compare form");
    assert!(game.contains("<label for=\"compare-b\">"));
    assert!(
        game.contains(&format!("href=\"/compare?a={a}&b={b}\"")),
        "a link to the other arm's game: {game}"
    );

    let (_, html) = page(&format!("{}/compare?a={a}&b={b}", f.base));
    for id in [&a, &b] {
        assert!(
            html.contains(&format!("/game?id={id}")),
            "game {id}'s header"
        );
    }
    assert!(html.contains("Winner") && html.contains("Culprit"));
    assert!(html.contains("href=\"#first-difference\""), "{html}");
    assert!(html.contains("First difference at stage"));
    let (ta, tb) = (transcript(&f.run, &a), transcript(&f.run, &b));
    let by_seq = |t: &[Value], s: u64| t.iter().find(|e| e["seq"] == s).cloned().expect("event");
    let rows = compare_rows(&html);
    let firsts: Vec<&CmpRow> = rows.iter().filter(|r| r.2).collect();
    assert_eq!(firsts.len(), 1, "one first difference");
    let first = *firsts[0];
    assert_eq!(rows[0], first, "the list opens at the first difference");
    // It really differs: a blank side, or two events that say different things.
    match (first.3, first.4) {
        (Some(x), Some(y)) => assert_ne!(says(&by_seq(&ta, x)), says(&by_seq(&tb, y))),
        (None, None) => panic!("an empty row"),
        _ => {}
    }
    // Aligned by stage: the two events of a row are of the same stage; a row differs exactly when
    // its events say different things.
    let mut all = rows.clone();
    let mut next = attrs(&html, "data-more").into_iter().next();
    assert!(next.is_some(), "more rows than one page");
    while let Some(n) = next {
        let (more, body) = page(&format!("{}{n}", f.base));
        all.extend(compare_rows(&body));
        next = more;
    }
    for r in &all {
        if let (Some(x), Some(y)) = (r.3, r.4) {
            let (ex, ey) = (by_seq(&ta, x), by_seq(&tb, y));
            assert_eq!(ex["stage"], ey["stage"], "row {} pairs two stages", r.0);
            assert_eq!(r.1, says(&ex) != says(&ey), "row {}", r.0);
        } else {
            assert!(r.1, "a row with a blank side differs");
        }
    }
    // Every event of both games once, in order, the rows numbered on from the identical prefix.
    let prefix = attrs(&html, "data-src")
        .into_iter()
        .find(|s| s.starts_with("/compare/events"));
    let mut before = Vec::new();
    let mut next = prefix;
    while let Some(n) = next {
        let (more, body) = page(&format!("{}{n}", f.base));
        before.extend(compare_rows(&body));
        next = more;
    }
    for r in &before {
        assert!(!r.1, "the collapsed prefix is identical: row {}", r.0);
        let (x, y) = (r.3.expect("A's event"), r.4.expect("B's event"));
        assert_eq!(says(&by_seq(&ta, x)), says(&by_seq(&tb, y)));
    }
    before.extend(all);
    let numbers: Vec<u64> = before.iter().map(|r| r.0).collect();
    assert_eq!(numbers, (1..=before.len() as u64).collect::<Vec<_>>());
    let seqs =
        |side: fn(&CmpRow) -> Option<u64>| before.iter().filter_map(side).collect::<Vec<_>>();
    assert_eq!(seqs(|r| r.3), (0..ta.len() as u64).collect::<Vec<_>>());
    assert_eq!(seqs(|r| r.4), (0..tb.len() as u64).collect::<Vec<_>>());
}

#[test]
fn a_game_compared_with_itself_shows_no_difference_and_bad_ids_are_named() {
    let f = fixture();
    let id = done_game(&f.run);
    let (_, html) = page(&format!("{}/compare?a={id}&b={id}", f.base));
    assert!(!html.contains("first-difference"), "no difference marked");
    assert!(!html.contains("data-differs"));
    assert!(html.contains("No difference"), "{html}");
    assert!(attrs(&html, "data-more").is_empty(), "nothing more to load");
    // The collapsed identical rows, loaded as the page does, hold no difference either.
    let mut next = attrs(&html, "data-src")
        .into_iter()
        .find(|s| s.starts_with("/compare/events"));
    assert!(next.is_some(), "the identical events, collapsed");
    while let Some(n) = next {
        let (more, body) = page(&format!("{}{n}", f.base));
        assert!(body.contains("data-row"));
        assert!(!body.contains("data-differs"), "{body}");
        next = more;
    }
    // As seen by a character, too.
    let (_, html) = page(&format!("{}/compare?a={id}&b={id}&as=nobody", f.base));
    assert!(!html.contains("data-differs"));

    let (status, _, body) = get(&format!("{}/compare?a={id}&b=..%2Fetc", f.base));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("`b`"), "{body}");
    let (status, _, body) = get(&format!("{}/compare?a=0123abcd&b={id}", f.base));
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("`a`"), "{body}");
    let (status, _, body) = get(&format!("{}/compare?a={id}", f.base));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("`b` is missing"), "{body}");
    let (status, _, body) = get(&format!(
        "{}/compare/events?a={id}&b={id}&after_a=x",
        f.base
    ));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("`after_a`"), "{body}");
}

#[test]
fn bad_requests_are_refused_with_their_reason() {
    let f = fixture();
    assert_eq!(get(&format!("{}/game?id=..%2F..%2Fetc", f.base)).0, 400);
    assert_eq!(get(&format!("{}/game?id=0123abcd", f.base)).0, 404);
    assert_eq!(get(&format!("{}/game", f.base)).0, 400);
    let id = done_game(&f.run);
    assert_eq!(
        get(&format!("{}/game/events?id={id}&after=x", f.base)).0,
        400
    );
    assert_eq!(get(&format!("{}/sweep?id=nope", f.base)).0, 404);
    assert_eq!(get(&format!("{}/assets/nope.js", f.base)).0, 404);
}

#[test]
fn while_a_sweep_runs_its_counters_move() {
    // The browser first (it takes a second or two to start), so that it watches the whole sweep.
    let browser = Browser::start();
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = tmp.path().join("sweep.toml");
    // Games one at a time, each call a few milliseconds late: the sweep lasts a few seconds.
    let text = format!(
        "name = \"slow\"\nout = \"{}\"\nscripts = [\"{}\"]\nrepeats = 4\nseed = 1\nconcurrency = 1\n\
         [game]\nprotocol = \"wellplay\"\nrounds = 1\nframework = \"ocot\"\nmodel = \"sim\"\n\
         [evaluation]\nrepeats = 1\n[models.sim]\nprovider = \"simulated\"\nlatency_ms = 2\n",
        tmp.path().join("run").display(),
        example("night-ferry.toml"),
    );
    std::fs::write(&file, text).expect("sweep file");
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
    // The viewer needs the store: wait for the sweep to create it.
    let db = tmp.path().join("run").join("sleuth.db");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !db.is_file() {
        assert!(Instant::now() < deadline, "the sweep never made its store");
        std::thread::sleep(Duration::from_millis(50));
    }
    // …and its schema (the file exists a moment before its tables).
    let base = runtime.block_on(async {
        loop {
            let started = sleuth::view::start(
                sleuth::view::ViewConfig {
                    root: tmp.path().join("run"),
                    listen: "127.0.0.1:0".parse().expect("addr"),
                    token: None,
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
    });
    // Poll as the page does; note every (done, live calls) seen while it ran, and follow a running
    // game's timeline to its end: it says where its next events will be asked for.
    let mut seen: Vec<(u64, u64, String)> = Vec::new();
    let mut followed: Vec<String> = Vec::new();
    // And the runs page in the browser: (done, live calls) as its cells read, without a reload.
    if let Some(b) = &browser {
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
        if let Some(b) = &browser {
            let cells = b.run_js(
                "return ['done', 'live_calls'].map(f => \
                 document.querySelector('#runs [data-field=' + f + ']').textContent)",
            );
            let cell = |i: usize| cells[i].as_str().unwrap_or("").to_string();
            if shown.last() != Some(&(cell(0), cell(1))) {
                shown.push((cell(0), cell(1)));
            }
        }
        let running_game: Option<String> = store(&tmp.path().join("run"))
            .query_row("SELECT id FROM games WHERE state = 'running'", [], |r| {
                r.get(0)
            })
            .ok();
        if let Some(g) = running_game {
            if !followed.contains(&g) && timeline_end_follow(&base, &g).is_some() {
                followed.push(g);
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(
        !followed.is_empty(),
        "no running game's timeline said where to follow it"
    );
    if let Some(b) = &browser {
        // The page's own cells move to the sweep's end (it polls every 2 s), without a reload.
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let done =
                b.run_js("return document.querySelector('#runs [data-field=done]').textContent");
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

#[test]
fn off_loopback_the_viewer_needs_its_token_and_refuses_requests_without_it() {
    let f = fixture();
    // No token: refused before anything is served.
    let out = common::run(
        common::sleuth(&f.run).args(["view", ".", "--listen", "0.0.0.0:0"]),
        common::CHILD_TIMEOUT,
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("SLEUTH_TOKEN"), "{err}");

    let (mut child, addr) = spawn_view(&f.run, "0.0.0.0:0", &[("SLEUTH_TOKEN", "t0ken-x")]);
    let port = addr.rsplit(':').next().expect("port");
    let base = format!("http://127.0.0.1:{port}");
    let (status, _, body) = get(&format!("{base}/"));
    assert_eq!(status, 401, "{body}");
    assert!(!body.contains("t0ken-x"));
    assert_eq!(get(&format!("{base}/api/runs")).0, 401);
    assert_eq!(
        get_with(&format!("{base}/"), &[("authorization", "Bearer wrong")]).0,
        401
    );
    assert_eq!(
        get_with(&format!("{base}/"), &[("authorization", "Bearer t0ken-x")]).0,
        200
    );
    // ?token= sets the cookie and takes the token out of the address.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (status, location, cookie) = rt.block_on(async {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        let resp = client
            .get(format!("{base}/sweep?id=t&token=t0ken-x"))
            .send()
            .await
            .expect("GET");
        let h = |n: &str| {
            resp.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string()
        };
        (resp.status().as_u16(), h("location"), h("set-cookie"))
    });
    assert_eq!(status, 303);
    assert_eq!(location, "/sweep?id=t");
    assert!(cookie.starts_with("sleuth_token=t0ken-x;") && cookie.contains("HttpOnly"));
    assert_eq!(
        get_with(
            &format!("{base}/sweep?id=t"),
            &[("cookie", "sleuth_token=t0ken-x")]
        )
        .0,
        200
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_folder_of_games_is_viewed_without_a_store() {
    let f = fixture();
    let id = done_game(&f.run);
    let tmp = tempfile::tempdir().expect("temp dir");
    let game = tmp.path().join("my-game");
    std::fs::create_dir_all(&game).expect("mkdir");
    for file in ["result.json", "transcript.jsonl"] {
        std::fs::copy(f.run.join("games").join(&id).join(file), game.join(file)).expect("copy");
    }
    let (mut child, addr) = spawn_view(tmp.path(), "127.0.0.1:0", &[]);
    let base = format!("http://{addr}");
    let (_, runs) = page(&format!("{base}/"));
    assert!(runs.contains("/game?id=my-game"), "{runs}");
    let (_, g) = page(&format!("{base}/game?id=my-game"));
    assert!(g.contains("data-seq=\"0\""));
    assert!(!g.contains("Model calls"), "a folder has no ledger");
    let (_, report) = page(&format!("{base}/report"));
    assert!(report.contains("Arms"), "{report}");
    // Two games of the folder side by side.
    let (x, y) = two_arms(&f.run);
    let other = if x == id { y } else { x };
    let game2 = tmp.path().join("other-game");
    std::fs::create_dir_all(&game2).expect("mkdir");
    for file in ["result.json", "transcript.jsonl"] {
        std::fs::copy(
            f.run.join("games").join(&other).join(file),
            game2.join(file),
        )
        .expect("copy");
    }
    let (_, cmp) = page(&format!("{base}/compare?a=my-game&b=other-game"));
    assert!(cmp.contains("id=\"first-difference\""), "{cmp}");
    let (_, same) = page(&format!("{base}/compare?a=my-game&b=my-game"));
    assert!(same.contains("No difference"));
    let _ = child.kill();
    let _ = child.wait();
}

// ---- The browser ----------------------------------------------------------------------------------

/// A minimal W3C WebDriver client: the handful of commands these tests use, over HTTP+JSON.
struct Browser {
    client: reqwest::Client,
    session: String,
    driver: Child,
    rt: tokio::runtime::Runtime,
}

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Browser {
    /// Starts chromedriver on a free port and a headless Chromium session; `None` (after
    /// `skip_or_fail`) when they are not installed.
    fn start() -> Option<Browser> {
        let Some(driver_bin) = which("chromedriver") else {
            common::skip_or_fail(
                common::under_ci(),
                "chromedriver is not installed",
                "scripts/ensure-chromium.sh installs Debian's chromium and chromium-driver",
            );
            return None;
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a: SocketAddr| a.port())
            .expect("a free port");
        let driver = Command::new(driver_bin)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        // reqwest is built without a default TLS provider: the fixture's sweep installs sleuth's,
        // and a test that starts the browser first must too.
        sleuth::tls::install_crypto_provider();
        let client = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = rt.block_on(async {
                let r = client.get(format!("{base}/status")).send().await.ok()?;
                let v: Value = r.json().await.ok()?;
                v["value"]["ready"].as_bool()
            });
            if ready == Some(true) {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut options = json!({
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1000", "--lang=en-US"]
        });
        if let Some(bin) = ["chromium", "chromium-browser", "google-chrome"]
            .into_iter()
            .find_map(which)
        {
            options["binary"] = json!(bin.display().to_string());
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome", "goog:chromeOptions": options}}});
        let v: Value = rt.block_on(async {
            client
                .post(format!("{base}/session"))
                .json(&caps)
                .send()
                .await
                .expect("new session")
                .json()
                .await
                .expect("session JSON")
        });
        let session = v["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {v}"))
            .to_string();
        Some(Browser {
            client,
            session: format!("{base}/session/{session}"),
            driver,
            rt,
        })
    }

    fn cmd(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.session);
        self.rt.block_on(async {
            let mut req = self.client.request(method, &url);
            if let Some(b) = body {
                req = req.json(&b);
            }
            let v: Value = req
                .send()
                .await
                .unwrap_or_else(|e| panic!("{url}: {e}"))
                .json()
                .await
                .expect("WebDriver JSON");
            v["value"].clone()
        })
    }

    fn goto(&self, url: &str) {
        self.cmd(reqwest::Method::POST, "/url", Some(json!({ "url": url })));
    }

    fn url(&self) -> String {
        self.cmd(reqwest::Method::GET, "/url", None)
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    /// The elements matching `css` now.
    fn all(&self, css: &str) -> Vec<String> {
        let v = self.cmd(
            reqwest::Method::POST,
            "/elements",
            Some(json!({"using": "css selector", "value": css})),
        );
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|e| e[ELEMENT].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The first element matching `css`, waiting up to 15 s for it.
    fn find(&self, css: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(e) = self.all(css).into_iter().next() {
                return e;
            }
            assert!(
                Instant::now() < deadline,
                "no element {css} on {}",
                self.url()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn click(&self, element: &str) {
        self.cmd(
            reqwest::Method::POST,
            &format!("/element/{element}/click"),
            Some(json!({})),
        );
    }

    fn text(&self, element: &str) -> String {
        self.cmd(
            reqwest::Method::GET,
            &format!("/element/{element}/text"),
            None,
        )
        .as_str()
        .unwrap_or("")
        .to_string()
    }

    fn attr(&self, element: &str, name: &str) -> Option<String> {
        self.cmd(
            reqwest::Method::GET,
            &format!("/element/{element}/attribute/{name}"),
            None,
        )
        .as_str()
        .map(str::to_string)
    }

    fn run_js(&self, script: &str) -> Value {
        self.cmd(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    /// Waits until `cond` holds (15 s at most).
    fn wait(&self, what: &str, cond: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while !cond() {
            assert!(Instant::now() < deadline, "waited in vain for {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Writes a PNG of the viewport to `dir/name.png` when screenshots were asked for.
    fn screenshot(&self, name: &str) {
        let Some(dir) = std::env::var_os("SLEUTH_VIEWER_SCREENSHOTS") else {
            return;
        };
        let v = self.cmd(reqwest::Method::GET, "/screenshot", None);
        let png = base64_decode(v.as_str().expect("base64 PNG"));
        std::fs::create_dir_all(&dir).expect("screenshot dir");
        std::fs::write(Path::new(&dir).join(format!("{name}.png")), png).expect("write PNG");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let url = self.session.clone();
        let _ = self
            .rt
            .block_on(async { self.client.delete(url).send().await });
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Standard base64 (the WebDriver screenshot), without a dependency for it.
fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for v in s.bytes().filter_map(val) {
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

#[test]
fn in_a_browser_runs_to_sweep_to_game_as_a_character_and_a_model_call() {
    let f = fixture();
    live(&f.base);
    let Some(b) = Browser::start() else {
        return;
    };
    // The runs page, its figures filled by the script from /api/runs.
    b.goto(&format!("{}/", f.base));
    let link = b.find("#runs a[href^='/sweep?id=']");
    let calls = b.find("#runs [data-field='live_calls']");
    b.wait("the live figures", || {
        b.text(&calls).replace(',', "").parse::<u64>().unwrap_or(0) > 0
    });
    b.screenshot("runs");
    b.click(&link);
    b.wait("the sweep page", || b.url().contains("/sweep?id=t"));
    b.find("#grid tbody tr");
    // The report's tables arrive after the page.
    b.find("details.report-table table");
    b.screenshot("sweep");
    let failed = b.find("#failed tbody td.reason");
    assert!(b.text(&failed).contains("gave up after"));

    // A game that finished.
    let id = done_game(&f.run);
    let game_link = b.find(&format!("#games a[href='/game?id={id}']"));
    b.click(&game_link);
    b.wait("the game page", || b.url().contains("/game?id="));
    b.find("#timeline li.ev");
    b.screenshot("game");
    b.find(".charts svg.chart polyline");
    b.run_js("document.querySelector('.charts').parentElement.scrollIntoView()");
    b.screenshot("game-charts");
    b.run_js("document.querySelector('#timeline').scrollIntoView()");
    b.screenshot("game-timeline");
    // Another character's private event, before filtering.
    let private = b.all("#timeline li.ev[data-only]");
    assert!(private.len() >= 2);
    let owners: Vec<String> = private
        .iter()
        .filter_map(|e| b.attr(e, "data-only"))
        .collect();
    let me = owners[0]
        .split('|')
        .next()
        .expect("a character")
        .to_string();
    let (other_event, other) = private
        .iter()
        .zip(&owners)
        .find(|(_, o)| !o.split('|').any(|w| w == me))
        .map(|(e, o)| (b.attr(e, "id").expect("event id"), o.clone()))
        .expect("an event private to someone else");
    // Filter as `me` with the keyboard-usable form: pick the option, the form submits.
    let option = b.find(&format!("select#as option[value='{me}']"));
    b.click(&option);
    b.wait("the filtered page", || b.url().contains("as="));
    b.find("#timeline li.ev");
    assert!(
        b.all(&format!("#{other_event}")).is_empty(),
        "as {me}, {other_event} (private to {other}) is still shown"
    );
    for e in b.all("#timeline li.ev[data-only]") {
        let o = b.attr(&e, "data-only").unwrap_or_default();
        assert!(o.split('|').any(|w| w == me), "as {me}: an event for {o}");
    }
    b.run_js("document.querySelector('form.filter').scrollIntoView()");
    b.screenshot("game-as-character");

    // Open the first model call: its reply is fetched and shown.
    let call = b.find("#calls li.call");
    let call_id: i64 = b
        .attr(&call, "data-call")
        .and_then(|c| c.parse().ok())
        .expect("call id");
    let c = store(&f.run);
    let key: String = c
        .query_row("SELECT key FROM ledger WHERE id = ?1", [call_id], |r| {
            r.get(0)
        })
        .expect("the call's key");
    let value: Vec<u8> = c
        .query_row(
            "SELECT value FROM cache WHERE key = ?1",
            [hex::decode(&key).expect("hex")],
            |r| r.get(0),
        )
        .expect("cached reply");
    let content = serde_json::from_slice::<Value>(&value).expect("JSON")["content"]
        .as_str()
        .expect("content")
        .to_string();
    b.run_js("document.querySelector('#calls li.call summary').scrollIntoView()");
    let summary = b.find("#calls li.call summary");
    b.click(&summary);
    let reply = b.find("#calls li.call pre.reply");
    let first = content.lines().next().unwrap_or("").trim().to_string();
    b.wait("the reply", || b.text(&reply).contains(&first));
    // The messages it sent are there too, the last one open.
    let messages = b.all("#calls li.call li.message");
    assert!(!messages.is_empty(), "the call's messages");
    b.screenshot("model-call");

    // Side by side with the other arm's game: the link on the game page, the mark on the page.
    let (a, other) = two_arms(&f.run);
    b.goto(&format!("{}/game?id={a}", f.base));
    let link = b.find(&format!(
        "ul.counterparts a[href='/compare?a={a}&b={other}']"
    ));
    b.click(&link);
    b.wait("the two-games page", || b.url().contains("/compare?"));
    let mark = b.find(".cmp-row.first-difference#first-difference");
    assert!(b.attr(&mark, "data-differs").is_some());
    let to_mark = b.find("a[href='#first-difference']");
    b.click(&to_mark);
    b.wait("the jump to the mark", || {
        b.url().ends_with("#first-difference")
    });
    b.screenshot("compare");
}

/// A Chinese script's game in the browser: its names and text are on the page as written, drawn with
/// real glyphs (two different characters draw differently, which empty boxes from a missing font do
/// not), and its long lines wrap inside the window.
#[test]
fn in_a_browser_a_chinese_game_is_drawn_and_wrapped() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("teahouse");
    let script = common::crate_file("examples").join("zh-teahouse.toml");
    let played = common::sleuth(tmp.path())
        .args(["play", &script.display().to_string()])
        .args([
            "--protocol",
            "wellplay",
            "--framework",
            "ocot",
            "--rounds",
            "1",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .expect("sleuth play");
    assert!(
        played.status.success(),
        "{}",
        String::from_utf8_lossy(&played.stderr)
    );
    let (mut child, addr) = spawn_view(tmp.path(), "127.0.0.1:0", &[]);
    let Some(b) = Browser::start() else {
        let _ = child.kill();
        return;
    };
    b.goto(&format!("http://{addr}/game?id=teahouse"));
    b.find("li.ev .text");
    let text = b.run_js("return document.body.innerText");
    let text = text.as_str().unwrap_or("");
    for name in ["周德昌", "沈墨卿", "顾云笙"] {
        assert!(text.contains(name), "{name} not on the page");
    }
    let drawn = b.run_js(
        "const font = getComputedStyle(document.querySelector('li.ev .text')).fontFamily;
         const draw = ch => { const c = document.createElement('canvas'); c.width = 48; c.height = 48;
           const x = c.getContext('2d'); x.font = '36px ' + font; x.fillText(ch, 4, 40);
           return Array.from(x.getImageData(0, 0, 48, 48).data).join(','); };
         return [draw('周'), draw('德'), draw('茶')];",
    );
    let drawn: Vec<&str> = drawn
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert_eq!(drawn.len(), 3, "three characters drawn");
    assert!(
        drawn[0] != drawn[1] && drawn[1] != drawn[2] && drawn[0] != drawn[2],
        "Chinese characters all draw alike: no font with Chinese glyphs (scripts/ensure-chromium.sh)"
    );
    let overflow = b.run_js("return document.documentElement.scrollWidth - window.innerWidth");
    assert!(
        overflow.as_i64().is_some_and(|o| o <= 0),
        "the page is wider than the window by {overflow} px"
    );
    b.screenshot("game-chinese");
    let _ = child.kill();
    let _ = child.wait();
}
