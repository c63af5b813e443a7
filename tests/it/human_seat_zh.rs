//! A person at the table of a Chinese script (`docs/seat.md`): `examples/zh-teahouse.toml` played
//! over HTTP as `human_seat.rs` plays the English one, with the same person (`human_seat::decide`,
//! whose bad first moves are refused). Everything the seat words itself is Chinese: the prompts of
//! the moves, the refusals of the bad ones, the state's language and the page's own labels; and the
//! game completes. ThinkThrice asks, answers and votes; MIRAGE interacts, scores and accuses.

use crate::human_seat::{decide, play_seated_with, Player};

use std::collections::HashSet;

use serde_json::{json, Value};

use sleuth::agent::Framework;
use sleuth::game::{GameResult, MirageSettings, ProtocolSettings, ThinkThriceSettings};
use sleuth::script::Script;

/// Not the murderer: a witness of the evening, with a whole game of questions to face.
const SEAT: &str = "顾云笙";

/// The English seat's own sentences (the prompts it words and its refusals): none may reach a
/// Chinese seat.
const ENGLISH: [&str; 12] = [
    "Ask the player who just",
    "Open questioning",
    "asks you:",
    "Your turn:",
    "Score how much",
    "Accuse the one",
    "Please",
    "is not among",
    "empty reply",
    "not on offer",
    "is not an option",
    "No clue is left",
];

fn chinese(s: &str) -> bool {
    s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
}

/// What the person was shown: every move (as the state gave it), the refusals among them, and the
/// seat's page as fetched once the game had asked a move of it.
#[derive(Default)]
struct Seen {
    moves: Vec<Value>,
    refused: Vec<String>,
    page: Option<String>,
}

/// Plays the person's side until the game is over, as `human_seat::drive` does, keeping what was
/// shown.
async fn drive(p: &Player, script: &Script) -> Seen {
    let mut seen = Seen::default();
    let (mut version, mut answered) = (None, HashSet::new());
    loop {
        let st = p.state(version).await;
        version = st["version"].as_u64();
        if st["finished"] == json!(true) {
            return seen;
        }
        let moves = st["moves"].as_array().cloned().unwrap_or_default();
        if !moves.is_empty() {
            assert_eq!(st["lang"], "zh", "the state says the seat's language");
        }
        if seen.page.is_none() && !moves.is_empty() {
            let page = p
                .http
                .get(format!("{}/seat", p.base))
                .header("cookie", &p.cookie)
                .send()
                .await
                .expect("GET page");
            seen.page = Some(page.text().await.expect("page"));
        }
        for m in moves {
            if !answered.insert(format!("{}#{}", m["key"], m["attempt"])) {
                continue;
            }
            if let Some(why) = m["refused"].as_str() {
                seen.refused.push(why.to_string());
            }
            let body = decide(&m, script, SEAT);
            assert_eq!(p.reply(body.clone(), true).await, 200, "{body}");
            seen.moves.push(m);
        }
    }
}

/// `zh-teahouse` under `protocol` with [`SEAT`] given to a person over HTTP: the result, what the
/// person was shown, and the transcript.
async fn play_zh(
    game_id: &str,
    protocol: ProtocolSettings,
    framework: Framework,
) -> (GameResult, Seen, Vec<Value>) {
    let seat = ("zh-teahouse.toml", SEAT);
    play_seated_with(game_id, seat, protocol, framework, |p, script| async move {
        drive(&p, &script).await
    })
    .await
}

/// What every Chinese seat must show: Chinese prompts and refusals, none of the English seat's
/// sentences, moves marked `zh`, and the page's own words in Chinese.
fn assert_chinese(seen: &Seen) {
    assert!(!seen.moves.is_empty() && !seen.refused.is_empty());
    for m in &seen.moves {
        let prompt = m["prompt"].as_str().unwrap_or("");
        assert!(chinese(prompt), "a prompt the person was shown: {prompt}");
        assert_eq!(m["lang"], "zh", "{m}");
    }
    for text in seen
        .moves
        .iter()
        .filter_map(|m| m["prompt"].as_str())
        .chain(seen.refused.iter().map(String::as_str))
    {
        let english = ENGLISH.iter().find(|e| text.contains(*e));
        assert!(
            english.is_none(),
            "English seat words {english:?} in: {text}"
        );
    }
    for why in &seen.refused {
        assert!(chinese(why), "a refusal the person was shown: {why}");
    }
    let page = seen
        .page
        .as_deref()
        .expect("the page, fetched after a move");
    assert!(
        page.contains("<html lang=\"zh\">")
            && page.contains("你扮演的角色：")
            && page.contains(SEAT),
        "{page}"
    );
    assert!(!page.contains("Playing as") && !page.contains("Your move"));
}

fn kinds(seen: &Seen) -> HashSet<&str> {
    seen.moves
        .iter()
        .filter_map(|m| m["kind"].as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_plays_a_chinese_game_in_chinese() {
    let protocol = ProtocolSettings::thinkthrice(ThinkThriceSettings {
        rounds_before_clues: 1,
        rounds_after_clues: 0,
        initial_questioning: true,
    });
    let (result, seen, events) = play_zh("seat-zh", protocol, Framework::ThinkThrice).await;
    assert_chinese(&seen);
    assert!(
        seen.refused
            .contains(&"请写点内容再发送：空白的回复不算一步。".to_string()),
        "the empty introduction was refused in Chinese: {:?}",
        seen.refused
    );
    assert!(
        seen.refused
            .iter()
            .any(|r| r.starts_with("“Nobody At All”不在可选的人当中")),
        "the vote off the ballot was refused in Chinese: {:?}",
        seen.refused
    );
    let kinds = kinds(&seen);
    assert!(
        ["introduce", "ask", "vote"]
            .iter()
            .all(|k| kinds.contains(k)),
        "{kinds:?}"
    );
    assert!(seen.moves.iter().any(|m| m["kind"] == "ask"
        && m["prompt"]
            .as_str()
            .is_some_and(|p| p.contains("提一个问题"))));
    assert_eq!(result.seats[SEAT], "human:pat");
    assert!(
        result.votes.get(SEAT).is_some_and(|v| v != "Nobody At All"),
        "the person voted: {:?}",
        result.votes
    );
    assert!(events
        .iter()
        .any(|e| e["kind"] == "human" && e["speaker"] == SEAT));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_plays_a_chinese_mirage_game_in_chinese() {
    let protocol = ProtocolSettings::mirage(MirageSettings {
        iterations: 1,
        ..MirageSettings::default()
    });
    let (result, seen, _) = play_zh("seat-zh-mirage", protocol, Framework::Mirage).await;
    assert_chinese(&seen);
    let kinds = kinds(&seen);
    assert!(
        ["interact", "score", "accuse"]
            .iter()
            .all(|k| kinds.contains(k)),
        "{kinds:?}"
    );
    assert!(
        seen.refused.iter().any(|r| r.contains("信任分")),
        "the player left unscored was refused in Chinese: {:?}",
        seen.refused
    );
    assert_eq!(result.seats[SEAT], "human:pat");
    let mirage = result.mirage.as_ref().expect("the MIRAGE outcome");
    assert!(mirage.accusations.contains_key(SEAT), "the person accused");
}
