//! A person at the table in headless Chromium (`docs/seat.md`): `sleuth play --human` prints the
//! seat's link, the browser opens it and plays the character's every move by typing into the page's
//! forms — an empty introduction first, refused with the message shown on the page, then corrected —
//! until the page says the game is over; `result.json` marks the seat `human:NAME`. One game per
//! protocol: ThinkThrice, WellPlay and MIRAGE.

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::browser::Browser;

const SEAT: &str = "Edmund Hale";

#[test]
fn a_person_plays_a_game_in_the_browser() {
    let args = ["--rounds-before-clues", "1", "--rounds-after-clues", "0"];
    let Some(result) = play_in_browser(&args) else {
        return;
    };
    assert_eq!(result["seats"][SEAT], "human:pat");
}

/// MIRAGE's forms: the open conversation, ask or investigate, the trust and suspicion table, the
/// accusation.
#[test]
fn a_person_plays_mirage_in_the_browser() {
    let Some(result) = play_in_browser(&["--protocol", "mirage", "--iterations", "1"]) else {
        return;
    };
    assert_eq!(result["seats"][SEAT], "human:pat");
    let suspicion = &result["mirage"]["suspicion"][SEAT];
    assert!(
        suspicion
            .as_object()
            .is_some_and(|o| !o.is_empty() && o.values().all(|s| s[0] == 0.5)),
        "the table's scores (5 of 10) reached the result: {suspicion}"
    );
    assert!(result["mirage"]["accusations"][SEAT].is_string());
}

/// WellPlay's forms under O-CoT: the questions asked and answered, the vote, and the
/// multiple-choice questions of the evaluation, scored like an agent's.
#[test]
fn a_person_plays_wellplay_in_the_browser() {
    let args = [
        "--protocol",
        "wellplay",
        "--framework",
        "ocot",
        "--rounds",
        "1",
        "--questions-per-round",
        "1",
    ];
    let Some(result) = play_in_browser(&args) else {
        return;
    };
    assert_eq!(result["seats"][SEAT], "human:pat");
    assert!(result["votes"][SEAT].is_string(), "{}", result["votes"]);
    assert!(
        result["choice"]["by_agent"][SEAT].is_object(),
        "the person's multiple-choice answers are scored: {}",
        result["choice"]
    );
}

/// `sleuth play --human` with `args`, the seat played in the browser to the end: the result (none
/// when the browser is missing outside CI, where `Browser::start` skips).
fn play_in_browser(args: &[&str]) -> Option<Value> {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("stderr.txt");
    let ferry = common::night_ferry();
    let mut child = common::sleuth(dir.path())
        .args([
            "play",
            ferry.to_str().expect("utf-8"),
            "--human",
            SEAT,
            "--human-name",
            "pat",
            "--out",
            "game",
        ])
        .args(args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("stderr file"))
        .spawn()
        .expect("sleuth play starts");
    let link = printed_link(&log);
    let Some(b) = Browser::start() else {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    };
    b.goto(&link);
    b.wait("the seat page", || b.url().ends_with("/seat"));
    let (refusals, shot) = play(&b, &mut child, &log);
    assert!(
        refusals.iter().any(|r| r.contains("empty reply")),
        "the empty introduction's refusal was on the page: {refusals:?}"
    );
    assert!(shot, "the page showed a move");
    let status = child.wait().expect("sleuth play ends");
    assert!(status.success());
    let text = std::fs::read_to_string(dir.path().join("game/result.json")).expect("result.json");
    Some(serde_json::from_str(&text).expect("JSON"))
}

/// The seat's link, once `sleuth play` has printed it to its stderr file (two minutes at most).
fn printed_link(log: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(link) = text.lines().find_map(|l| l.strip_prefix("seat: ")) {
            return link.to_string();
        }
        assert!(Instant::now() < deadline, "no seat link printed:\n{text}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A form on the page, as the test reads it.
struct Form {
    key: String,
    attempt: String,
    kind: String,
    /// The refusal of the previous attempt, shown in the form.
    refused: String,
    /// The page took a reply to it (it disables the button once the hub answered 200).
    sent: bool,
}

/// The forms on the page.
fn forms(b: &Browser) -> Vec<Form> {
    let v = b.run_js(
        "return Array.from(document.querySelectorAll('form.move')).map(f => [f.dataset.key, \
         f.dataset.attempt, f.dataset.kind, (f.querySelector('.refused') || {}).textContent || '', \
         f.querySelector('button').disabled]);",
    );
    v.as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|f| {
            let s = |i: usize| f[i].as_str().unwrap_or_default().to_string();
            Form {
                key: s(0),
                attempt: s(1),
                kind: s(2),
                refused: s(3),
                sent: f[4].as_bool().unwrap_or(false),
            }
        })
        .collect()
}

/// Plays every move the page shows until it says the game is over: returns the refusals seen, and
/// whether a screenshot of a move was taken.
///
/// A form counts as answered only once the page has disabled its button (the hub took the reply);
/// one still open a few seconds after it was filled in is filled in again, so a click lost to the
/// page's layout moving (answered forms leave, new ones arrive) costs a retry, not the game.
fn play(b: &Browser, child: &mut Child, log: &Path) -> (Vec<String>, bool) {
    let deadline = Instant::now() + Duration::from_secs(300);
    let status = b.find("#status");
    let mut exited: Option<Instant> = None;
    let mut tried: HashMap<String, Instant> = HashMap::new();
    let (mut refusals, mut shot) = (Vec::new(), false);
    loop {
        if Instant::now() >= deadline {
            let page = b.run_js("return document.body.innerText;");
            panic!("the game did not end in time; tried {tried:?}; the page: {page}");
        }
        if b.text(&status).contains("The game is over") {
            return (refusals, shot);
        }
        // A game that failed ends the command (and its seat server) without a page saying so.
        if let Some(st) = child.try_wait().expect("the child's status") {
            let since = *exited.get_or_insert_with(Instant::now);
            if !st.success() || since.elapsed() > Duration::from_secs(10) {
                let stderr = std::fs::read_to_string(log).unwrap_or_default();
                panic!(
                    "sleuth play ended ({st}) before the page said the game was over:\n{stderr}"
                );
            }
        }
        for f in forms(b) {
            let id = format!("{}#{}", f.key, f.attempt);
            if f.sent
                || tried
                    .get(&id)
                    .is_some_and(|t| t.elapsed() < Duration::from_secs(3))
            {
                continue;
            }
            if tried.insert(id, Instant::now()).is_none() && !f.refused.is_empty() {
                refusals.push(f.refused.clone());
            }
            if !shot && matches!(f.kind.as_str(), "ask" | "interact") {
                b.screenshot("seat");
                shot = true;
            }
            fill_and_send(b, &f);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Answers one form as a person would: an empty introduction first (to be refused), then real
/// text; the first option of a choice.
fn fill_and_send(b: &Browser, f: &Form) {
    let form = format!(
        "form.move[data-key=\"{}\"][data-attempt=\"{}\"]",
        f.key, f.attempt
    );
    // The form may have left the page since it was read (answered, or the game moved on).
    let inside = |css: &str| b.all(&format!("{form} {css}")).into_iter().next();
    let text = match f.kind.as_str() {
        "introduce" if f.attempt == "0" => "",
        "introduce" => "I am Edmund Hale, purser of the Marigold.",
        "ask" => "Where were you at ten o'clock?",
        "vote" => "the timeline does not fit",
        _ => "In my office on C deck.",
    };
    if f.kind == "score" {
        // Every cell of the trust and suspicion table: 5 of 10.
        for cell in b.all(&format!("{form} input.score")) {
            b.type_into(&cell, "5");
        }
        if let Some(send) = inside("button") {
            b.click(&send);
        }
        return;
    }
    if matches!(f.kind.as_str(), "inferential" | "choice")
        && inside("input[name=choice]:checked").is_none()
    {
        let Some(first) = inside("input[name=choice]") else {
            return;
        };
        b.click(&first);
    }
    if !text.is_empty() {
        let Some(area) = inside("textarea") else {
            return;
        };
        b.run_js(&format!(
            "const a = document.querySelector('{} textarea'); if (a) a.value = '';",
            form.replace('\'', "\\'")
        ));
        b.type_into(&area, text);
    }
    if let Some(send) = inside("button") {
        b.click(&send);
    }
}
