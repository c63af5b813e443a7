//! The viewer in a real browser (Chromium, headless, over WebDriver): runs page → sweep → game → as
//! seen by one character → a model call opened → two games side by side; and a Chinese game drawn
//! with real glyphs and wrapped inside the window.

use crate::common;

use serde_json::Value;

use super::browser::Browser;
use super::{done_game, fixture, live, spawn_view, store, two_arms};

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
