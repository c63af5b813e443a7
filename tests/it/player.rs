//! The PLAYER* framework in whole games with the simulated model: its sensors and pruner show in the
//! transcript, each agent asks exactly its m questions per round, it plays the ThinkThrice protocol too,
//! and it plays in Chinese.

use crate::common;
use common::{example_script as example, simulated_gateway};

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use sleuth::agent::Framework;
use sleuth::game::{
    self, GameConfig, GameResult, ProtocolSettings, ThinkThriceSettings, WellPlaySettings,
};
use sleuth::llm::Gateway;
use sleuth::script::{Script, Victim};

/// Plays the example `script` with every character on PLAYER* and returns the result and the
/// transcript's events.
async fn play(
    gw: &Gateway,
    script: &str,
    protocol: ProtocolSettings,
    transcript: PathBuf,
) -> (GameResult, Vec<Value>) {
    play_script(gw, example(script), protocol, transcript).await
}

async fn play_script(
    gw: &Gateway,
    script: Arc<Script>,
    protocol: ProtocolSettings,
    transcript: PathBuf,
) -> (GameResult, Vec<Value>) {
    let title = script.title.clone();
    let config = GameConfig {
        game_id: format!("player-{title}"),
        seed: 11,
        framework: Framework::Player,
        protocol,
        transcript_path: Some(transcript.clone()),
        ..GameConfig::default()
    };
    let result = game::play(script, config, gw.clone())
        .await
        .unwrap_or_else(|e| panic!("{title}: the game fails: {e}"));
    let events = std::fs::read_to_string(&transcript)
        .expect("transcript written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("transcript line is JSON"))
        .collect();
    (result, events)
}

fn wellplay(rounds: u32, questions_per_round: u32) -> ProtocolSettings {
    ProtocolSettings::wellplay(WellPlaySettings {
        rounds,
        questions_per_round,
    })
}

fn of_kind<'a>(events: &'a [Value], kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    events.iter().filter(move |e| e["kind"] == kind)
}

fn names(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str().map(str::to_string))
        .collect()
}

/// Checks one WellPlay game: m questions per asker per round, readings and suspect lists that explain
/// them, and a suspect list that changes as the game goes on.
fn check_wellplay(script: &Script, events: &[Value], rounds: u32, m: u32) {
    let players: Vec<&str> = script.characters.iter().map(|c| c.name.as_str()).collect();
    // Exactly m questions per asker per round, each to another player.
    let mut asked: BTreeMap<(String, String), u32> = BTreeMap::new();
    for q in of_kind(events, "question") {
        let stage = q["stage"].as_str().unwrap_or_default().to_string();
        let asker = q["speaker"].as_str().unwrap_or_default().to_string();
        assert_ne!(q["addressee"], q["speaker"], "a player asked themself: {q}");
        assert!(
            !q["text"].as_str().unwrap_or_default().trim().is_empty(),
            "empty question: {q}"
        );
        *asked.entry((stage, asker)).or_default() += 1;
    }
    for r in 1..=rounds {
        for p in &players {
            let n = asked
                .get(&(format!("questioning_{r}"), p.to_string()))
                .copied()
                .unwrap_or(0);
            assert_eq!(n, m, "{p} asked {n} questions in round {r}, expected {m}");
        }
    }
    assert_eq!(asked.len(), (rounds as usize) * players.len());

    // Every agent read every sensor about every other player in round 1, privately, with a
    // probability per option that sums to 1, taken from log-probabilities (the simulated model
    // reports them).
    let sensors: Vec<&Value> = of_kind(events, "sensor").collect();
    for p in &players {
        for other in players.iter().filter(|o| *o != p) {
            let read: BTreeSet<&str> = sensors
                .iter()
                .filter(|e| e["speaker"] == *p && e["data"]["target"] == *other)
                .filter(|e| e["data"]["round"] == 1)
                .filter_map(|e| e["data"]["sensor"].as_str())
                .collect();
            assert_eq!(
                read,
                BTreeSet::from(["emotion", "information", "motivation", "opportunity"]),
                "{p} about {other}"
            );
        }
    }
    for e in &sensors {
        assert_eq!(
            e["visible_to"],
            serde_json::json!({ "only": [e["speaker"]] })
        );
        assert_eq!(e["data"]["method"], "logprobs", "{e}");
        let total: f64 = e["data"]["probabilities"]
            .as_object()
            .expect("probabilities")
            .values()
            .filter_map(Value::as_f64)
            .sum();
        assert!((total - 1.0).abs() < 0.01, "{e}");
        assert!(e["usage"]["calls"].as_u64().unwrap_or(0) >= 1, "{e}");
    }

    // A `suspects` event per agent and victim for each round and before the vote, with a reason for
    // every other player; the lists are never empty and hold only other players.
    let suspects: Vec<&Value> = of_kind(events, "suspects").collect();
    let victims = script.victims.len().max(1);
    assert_eq!(
        suspects.len(),
        players.len() * victims * (rounds as usize + 1),
        "one suspect update per agent, victim and round, plus one before the vote"
    );
    let mut lists: BTreeMap<(String, String), Vec<BTreeSet<String>>> = BTreeMap::new();
    for e in &suspects {
        let me = e["speaker"].as_str().unwrap_or_default().to_string();
        let after = names(&e["data"]["after"]);
        assert!(!after.is_empty() && !after.contains(&me), "{e}");
        let reasons = e["data"]["reasons"].as_object().expect("reasons");
        assert_eq!(reasons.len(), players.len() - 1, "{e}");
        let victim = e["data"]["victim"].as_str().unwrap_or_default().to_string();
        lists.entry((me, victim)).or_default().push(after);
    }
    let changed: Vec<&(String, String)> = lists
        .iter()
        .filter(|(_, seq)| seq.windows(2).any(|w| w[0] != w[1]))
        .map(|(k, _)| k)
        .collect();
    assert!(
        !changed.is_empty(),
        "no agent's suspect list changed across rounds: {lists:?}"
    );

    // Every open question goes to a player on one of the asker's current suspect lists: the pruner
    // decides whom the agent questions.
    let mut current: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    let mut targets = 0;
    for e in events {
        let me = e["speaker"].as_str().unwrap_or_default().to_string();
        if e["kind"] == "suspects" {
            let victim = e["data"]["victim"].as_str().unwrap_or_default().to_string();
            current.insert((me, victim), names(&e["data"]["after"]));
        } else if e["kind"] == "target" {
            assert_eq!(e["data"]["forced"], false, "{e}");
            let who = e["data"]["target"].as_str().unwrap_or_default();
            let listed = current
                .iter()
                .any(|((asker, _), list)| *asker == me && list.contains(who));
            assert!(
                listed,
                "{me} asked {who}, who is on none of its suspect lists"
            );
            targets += 1;
        }
    }
    assert_eq!(targets, (rounds * m) as usize * players.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wellplay_games_refine_suspects_and_ask_m_questions_per_round() {
    let gw = simulated_gateway().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let script = example("night-ferry.toml");
    for m in [2, 1] {
        let (result, events) = play(
            &gw,
            "night-ferry.toml",
            wellplay(3, m),
            dir.path().join(format!("m{m}.jsonl")),
        )
        .await;
        check_wellplay(&script, &events, 3, m);
        assert_eq!(result.votes.len(), script.characters.len());
        assert!(result.winner.is_some());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn player_plays_the_thinkthrice_protocol() {
    let gw = simulated_gateway().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let settings = ThinkThriceSettings {
        rounds_before_clues: 1,
        rounds_after_clues: 1,
        initial_questioning: true,
    };
    let (result, events) = play(
        &gw,
        "night-ferry.toml",
        ProtocolSettings::thinkthrice(settings),
        dir.path().join("t.jsonl"),
    )
    .await;
    let players = result.votes.len();
    assert_eq!(players, 4);
    assert!(result.winner.is_some());
    // Initial questioning forces the target and comes before any sensing; the two open rounds each
    // start with the sensors and the pruner.
    let initial: Vec<&Value> = of_kind(&events, "target")
        .filter(|e| e["stage"] == "initial_questioning")
        .collect();
    assert_eq!(initial.len(), players * (players - 1));
    assert!(initial.iter().all(|e| e["data"]["forced"] == true));
    assert!(!events
        .iter()
        .any(|e| e["stage"] == "initial_questioning" && e["kind"] == "sensor"));
    let rounds: BTreeSet<u64> = of_kind(&events, "suspects")
        .filter_map(|e| e["data"]["round"].as_u64())
        .collect();
    assert_eq!(rounds, BTreeSet::from([1, 2]));
    let questions = of_kind(&events, "question")
        .filter(|e| {
            e["stage"]
                .as_str()
                .is_some_and(|s| s.starts_with("open_questioning_"))
        })
        .count();
    assert_eq!(
        questions,
        2 * players,
        "one question per player per open round"
    );
}

/// Each gameplay prompt of PLAYER* produces events of one kind, billed to it: if an event kind has
/// calls, its prompt was rendered and sent.
const PURPOSE_EVENTS: &[(&str, &str)] = &[
    ("introduce", "introduction"),
    ("sensor", "sensor"),
    ("question", "question"),
    ("answer", "answer"),
    ("vote", "vote"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_prompt_is_used_and_the_chinese_game_completes() {
    let gw = simulated_gateway().await;
    let dir = tempfile::tempdir().expect("tempdir");

    let (_, events) = play(
        &gw,
        "night-ferry.toml",
        wellplay(1, 1),
        dir.path().join("en.jsonl"),
    )
    .await;
    // The system prompt is every call's first message: any call at all proves it rendered.
    for purpose in sleuth::agent::Framework::Player.purposes() {
        if *purpose == "system" {
            continue;
        }
        let kind = PURPOSE_EVENTS
            .iter()
            .find(|(p, _)| p == purpose)
            .map(|(_, k)| *k)
            .unwrap_or_else(|| panic!("purpose {purpose} has no event kind in this test"));
        let billed = of_kind(&events, kind)
            .filter(|e| e["speaker"] != "host")
            .any(|e| e["usage"]["calls"].as_u64().unwrap_or(0) >= 1);
        assert!(
            billed,
            "no `{kind}` event carries a call: `{purpose}` never ran"
        );
    }

    let zh = example("zh-teahouse.toml");
    let (result, events) = play(
        &gw,
        "zh-teahouse.toml",
        wellplay(2, 1),
        dir.path().join("zh.jsonl"),
    )
    .await;
    assert_eq!(result.votes.len(), zh.characters.len());
    // Chinese prompts: the sensor values are the Chinese labels, and the questions are in Chinese.
    let labels: BTreeSet<&str> = ["正面", "中立", "负面", "有", "没有", "高", "中", "低"].into();
    for e in of_kind(&events, "sensor") {
        let v = e["data"]["value"].as_str().unwrap_or_default();
        assert!(labels.contains(v), "{e}");
    }
    let han = |s: &str| s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
    for q in of_kind(&events, "question") {
        assert!(han(q["text"].as_str().unwrap_or_default()), "{q}");
    }
    let changed = of_kind(&events, "suspects").any(|e| e["data"]["before"] != e["data"]["after"]);
    assert!(
        changed,
        "the pruner never narrowed or widened a list in Chinese"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_victim_has_its_own_suspect_list() {
    let gw = simulated_gateway().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut two = (*example("night-ferry.toml")).clone();
    two.victims.push(Victim {
        name: "Captain Amos Reed".into(),
        description: "The master of the Marigold, found drowned off the stern at dawn.".into(),
    });
    let players = two.characters.len();
    let (_, events) = play_script(
        &gw,
        Arc::new(two),
        wellplay(1, 1),
        dir.path().join("two.jsonl"),
    )
    .await;
    // Motive and opportunity are read per victim, emotion and information value once per player.
    let sensors: Vec<&Value> = of_kind(&events, "sensor")
        .filter(|e| e["data"]["round"] == 1)
        .collect();
    let count = |name: &str| {
        sensors
            .iter()
            .filter(|e| e["data"]["sensor"] == name)
            .count()
    };
    let pairs = players * (players - 1);
    assert_eq!(count("emotion"), pairs);
    assert_eq!(count("information"), pairs);
    assert_eq!(count("motivation"), 2 * pairs);
    assert_eq!(count("opportunity"), 2 * pairs);
    // A suspect list per victim, in the round and before the vote.
    let victims: BTreeSet<&str> = of_kind(&events, "suspects")
        .filter_map(|e| e["data"]["victim"].as_str())
        .collect();
    assert_eq!(
        victims,
        BTreeSet::from(["Captain Amos Reed", "Gideon Marsh"])
    );
    assert_eq!(of_kind(&events, "suspects").count(), players * 2 * 2);

    // A script that names no victim: the agents reason about one unnamed victim.
    let mut none = (*example("night-ferry.toml")).clone();
    none.victims.clear();
    let (result, events) = play_script(
        &gw,
        Arc::new(none),
        wellplay(1, 1),
        dir.path().join("none.jsonl"),
    )
    .await;
    assert_eq!(result.votes.len(), players);
    let victims: BTreeSet<&str> = of_kind(&events, "suspects")
        .filter_map(|e| e["data"]["victim"].as_str())
        .collect();
    assert_eq!(victims, BTreeSet::from(["the victim"]));
}
