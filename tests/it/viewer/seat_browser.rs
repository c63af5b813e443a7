//! A person at the table in headless Chromium (`docs/seat.md`): `sleuth play --human` prints the
//! seat's link, the browser opens it and plays the character's every move by typing into the page's
//! forms — an empty introduction first, refused with the message shown on the page, then corrected —
//! until the page says the game is over; `result.json` marks the seat `human:NAME`.

use crate::common;

use std::collections::HashSet;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::browser::Browser;

const SEAT: &str = "Edmund Hale";

#[test]
fn a_person_plays_a_game_in_the_browser() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ferry = common::night_ferry();
    let mut child = common::sleuth(dir.path())
        .args([
            "play",
            ferry.to_str().expect("utf-8"),
            "--human",
            SEAT,
            "--human-name",
            "pat",
            "--rounds-before-clues",
            "1",
            "--rounds-after-clues",
            "0",
            "--out",
            "game",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sleuth play starts");
    let link = common::printed_after(&mut child, "seat: ");
    let Some(b) = Browser::start() else {
        let _ = child.kill();
        let _ = child.wait();
        return;
    };
    b.goto(&link);
    b.wait("the seat page", || b.url().ends_with("/seat"));
    let (refusals, shot) = play(&b);
    assert!(
        refusals.iter().any(|r| r.contains("empty reply")),
        "the empty introduction's refusal was on the page: {refusals:?}"
    );
    assert!(shot, "the page showed a move");
    let status = child.wait().expect("sleuth play ends");
    assert!(status.success());
    let result: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("game/result.json")).expect("result.json"),
    )
    .expect("JSON");
    assert_eq!(result["seats"][SEAT], "human:pat");
}

/// The forms on the page: (key, attempt, kind, the refusal shown in it).
fn forms(b: &Browser) -> Vec<(String, String, String, String)> {
    let v = b.run_js(
        "return Array.from(document.querySelectorAll('form.move')).map(f => [f.dataset.key, \
         f.dataset.attempt, f.dataset.kind, (f.querySelector('.refused') || {}).textContent || '']);",
    );
    v.as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|f| {
            let s = |i: usize| f[i].as_str().unwrap_or_default().to_string();
            (s(0), s(1), s(2), s(3))
        })
        .collect()
}

/// Plays every move the page shows until it says the game is over: returns the refusals seen, and
/// whether a screenshot of a move was taken.
fn play(b: &Browser) -> (Vec<String>, bool) {
    let deadline = Instant::now() + Duration::from_secs(300);
    let status = b.find("#status");
    let (mut done, mut refusals, mut shot) = (HashSet::new(), Vec::new(), false);
    loop {
        assert!(Instant::now() < deadline, "the game did not end in time");
        if b.text(&status).contains("The game is over") {
            return (refusals, shot);
        }
        for (key, attempt, kind, refused) in forms(b) {
            if !done.insert(format!("{key}#{attempt}")) {
                continue;
            }
            if !refused.is_empty() {
                refusals.push(refused);
            }
            let form = format!("form.move[data-key=\"{key}\"][data-attempt=\"{attempt}\"]");
            if !shot && kind == "ask" {
                b.screenshot("seat");
                shot = true;
            }
            let text = match kind.as_str() {
                "introduce" if attempt == "0" => "",
                "introduce" => "I am Edmund Hale, purser of the Marigold.",
                "ask" => "Where were you at ten o'clock?",
                "vote" => "the timeline does not fit",
                _ => "In my office on C deck.",
            };
            if matches!(kind.as_str(), "inferential" | "choice") {
                b.click(&b.find(&format!("{form} input[name=choice]")));
            }
            if !text.is_empty() {
                b.click(&b.find(&format!("{form} textarea")));
                b.keys(text);
            }
            b.click(&b.find(&format!("{form} button")));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
