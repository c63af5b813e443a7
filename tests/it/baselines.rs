//! The PLAYER* baselines Werewolf and O-CoT (Appendix C.2) playing whole games with the simulated model,
//! under both protocols they are built for and in Chinese, and one character of each driven request by
//! request to prove that every prompt of the framework is used.
//!
//! What a reader of a transcript must be able to see: a Werewolf agent picks one of the ten prepared
//! questions before each question and reflects on its first answer before its final one; an O-CoT agent
//! reflects on every one of its objectives before each question; every question goes to another player.

use crate::common;
use common::{example_script as example, simulated_gateway};

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use sleuth::agent::{
    AgentConfig, Character, CharacterArgs, CharacterMsg, CharacterView, Framework, Turn,
};
use sleuth::game::{
    self, GameConfig, GameResult, ProtocolSettings, ThinkThriceSettings, WellPlaySettings,
};
use sleuth::memory::{HashingEmbedder, MemoryIndex, SharedEmbedder};
use sleuth::script::Script;

/// The prepared questions of the Werewolf baseline (PLAYER* Table A2).
const PREPARED_QUESTIONS: u64 = 10;

/// Small games: two WellPlay rounds of one question each; one ThinkThrice round before and after the
/// clues, with the initial questioning that forces targets.
fn wellplay(rounds: u32) -> ProtocolSettings {
    ProtocolSettings::wellplay(WellPlaySettings {
        rounds,
        questions_per_round: 1,
    })
}

fn thinkthrice() -> ProtocolSettings {
    ProtocolSettings::thinkthrice(ThinkThriceSettings {
        rounds_before_clues: 1,
        rounds_after_clues: 1,
        initial_questioning: true,
    })
}

/// Plays a game and returns its result and transcript events.
async fn play(
    framework: Framework,
    script: &str,
    protocol: ProtocolSettings,
    dir: &Path,
) -> (GameResult, Vec<Value>) {
    let path: PathBuf = dir.join("transcript.jsonl");
    let config = GameConfig {
        game_id: format!("baseline-{framework}-{}", protocol.protocol),
        seed: 11,
        framework,
        protocol,
        transcript_path: Some(path.clone()),
        ..GameConfig::default()
    };
    let result = game::play(example(script), config, simulated_gateway().await)
        .await
        .unwrap_or_else(|e| panic!("{framework} game on {script} fails: {e}"));
    let events = std::fs::read_to_string(&path)
        .expect("transcript exists")
        .lines()
        .map(|l| serde_json::from_str(l).expect("transcript line is JSON"))
        .collect();
    (result, events)
}

fn text(e: &Value) -> &str {
    e["text"].as_str().unwrap_or_default()
}

fn speaker(e: &Value) -> &str {
    e["speaker"].as_str().unwrap_or_default()
}

/// The private module steps that produced public event `i`: the run of events just before it that only
/// its speaker can see.
fn steps_before(events: &[Value], i: usize) -> Vec<&Value> {
    let who = speaker(&events[i]);
    let mut out: Vec<&Value> = events[..i]
        .iter()
        .rev()
        .take_while(|e| speaker(e) == who && e["visible_to"]["only"] == serde_json::json!([who]))
        .collect();
    out.reverse();
    out
}

fn kinds<'a>(steps: &[&'a Value]) -> Vec<&'a str> {
    steps
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or_default())
        .collect()
}

/// Checks what every game must show, whatever the framework: the game ended with a vote of everyone,
/// and every question has words in it and goes to another player. Returns the indexes of the questions.
fn check_game(script: &Script, result: &GameResult, events: &[Value]) -> Vec<usize> {
    let players: BTreeSet<&str> = script.characters.iter().map(|c| c.name.as_str()).collect();
    assert!(result.winner.is_some(), "the game has no outcome");
    assert_eq!(result.votes.len(), players.len(), "not everyone voted");
    let questions: Vec<usize> = (0..events.len())
        .filter(|&i| events[i]["kind"] == "question")
        .collect();
    assert!(!questions.is_empty(), "nobody asked anything");
    for &i in &questions {
        let e = &events[i];
        let (from, to) = (speaker(e), e["addressee"].as_str().unwrap_or_default());
        assert!(!text(e).trim().is_empty(), "{from} asked an empty question");
        assert!(
            players.contains(to) && to != from,
            "{from} asked {to:?}, who is not another player"
        );
    }
    for e in events.iter().filter(|e| e["kind"] == "answer") {
        assert!(
            !text(e).trim().is_empty(),
            "{} gave an empty answer",
            speaker(e)
        );
    }
    // Goals are a character's instructions to itself, and a murderer's secrets are what it hides: the
    // frameworks reason with them (O-CoT reflects on every goal) but nobody says them aloud.
    let private: Vec<&str> = script
        .characters
        .iter()
        .flat_map(|c| {
            let secrets = if c.is_murderer() { &c.secrets[..] } else { &[] };
            c.goals.iter().chain(secrets).map(|s| s.trim())
        })
        .collect();
    for e in events.iter().filter(|e| e["visible_to"] == "all") {
        for p in &private {
            assert!(!text(e).contains(p), "said aloud: {p:?} in {e}");
        }
    }
    questions
}

/// Werewolf: exactly one prepared question chosen (by its number, for the player actually asked)
/// before each question, and draft → reflection before each answer. Returns the prepared questions'
/// numbers in the order chosen.
fn check_werewolf(script: &Script, result: &GameResult, events: &[Value]) -> Vec<u64> {
    let mut chosen = Vec::new();
    for i in check_game(script, result, events) {
        let steps = steps_before(events, i);
        let picks: Vec<&&Value> = steps
            .iter()
            .filter(|e| e["kind"] == "predefined_question")
            .collect();
        assert_eq!(picks.len(), 1, "question {i}: steps {:?}", kinds(&steps));
        let p = picks[0];
        let n = p["data"]["index"].as_u64().unwrap_or(0);
        assert!((1..=PREPARED_QUESTIONS).contains(&n), "{p}");
        assert_eq!(p["data"]["of"], PREPARED_QUESTIONS, "{p}");
        assert_eq!(p["data"]["target"], events[i]["addressee"], "{p}");
        assert!(!text(p).is_empty(), "the prepared question is shown: {p}");
        chosen.push(n);
    }
    for i in (0..events.len()).filter(|&i| events[i]["kind"] == "answer") {
        let steps = steps_before(events, i);
        let k: Vec<&str> = kinds(&steps)
            .into_iter()
            .filter(|k| *k != "memory_recall")
            .collect();
        assert_eq!(k, ["answer_draft", "reflection"], "answer {i}");
        assert!(
            steps
                .iter()
                .all(|s| s["kind"] == "memory_recall" || !text(s).is_empty()),
            "answer {i}: an empty draft or reflection"
        );
    }
    chosen
}

/// O-CoT: before each question, one reflection per objective of the asker, in the script's order,
/// each naming its objective; answers are one call with no reflection.
fn check_ocot(script: &Script, result: &GameResult, events: &[Value]) {
    for i in check_game(script, result, events) {
        let who = speaker(&events[i]);
        let goals = &script.character(who).expect("asker is a character").goals;
        let steps = steps_before(events, i);
        let reflected: Vec<&str> = steps
            .iter()
            .filter(|e| e["kind"] == "objective_reflection")
            .map(|e| e["data"]["objective"].as_str().unwrap_or_default())
            .collect();
        let expected: Vec<&str> = goals.iter().map(|g| g.trim()).collect();
        assert_eq!(reflected, expected, "question {i} by {who}");
        assert!(
            steps
                .iter()
                .filter(|e| e["kind"] == "objective_reflection")
                .all(|e| !text(e).trim().is_empty()),
            "question {i}: an empty reflection"
        );
    }
    for i in (0..events.len()).filter(|&i| events[i]["kind"] == "answer") {
        let steps = steps_before(events, i);
        assert!(
            kinds(&steps).iter().all(|k| *k == "memory_recall"),
            "answer {i} has module steps {:?}",
            kinds(&steps)
        );
    }
}

/// During the ThinkThrice initial questioning every question goes to the player who just introduced
/// themselves: the framework obeys the protocol's forced target.
fn check_forced_targets(events: &[Value]) {
    let mut introduced = None;
    let mut forced = 0;
    for e in events {
        match (e["kind"].as_str(), e["stage"].as_str()) {
            (Some("introduction"), _) => introduced = Some(speaker(e).to_string()),
            (Some("question"), Some("initial_questioning")) => {
                assert_eq!(e["addressee"].as_str(), introduced.as_deref(), "{e}");
                forced += 1;
            }
            _ => {}
        }
    }
    assert!(forced > 0, "no initial questioning happened");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn werewolf_wellplay_game_asks_prepared_questions_and_reflects_before_answering() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (result, events) = play(
        Framework::Werewolf,
        "night-ferry.toml",
        wellplay(2),
        dir.path(),
    )
    .await;
    assert_eq!(result.framework, "werewolf");
    assert!(
        result.majority.is_some(),
        "WellPlay's majority rule applied"
    );
    let chosen = check_werewolf(&example("night-ferry.toml"), &result, &events);
    // 4 players × 2 rounds × 1 question.
    assert_eq!(chosen.len(), 8);
    let distinct: BTreeSet<u64> = chosen.iter().copied().collect();
    assert!(
        distinct.len() > 1,
        "every question was prepared question {chosen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn werewolf_thinkthrice_game_respects_forced_targets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (result, events) = play(
        Framework::Werewolf,
        "night-ferry.toml",
        thinkthrice(),
        dir.path(),
    )
    .await;
    check_werewolf(&example("night-ferry.toml"), &result, &events);
    check_forced_targets(&events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ocot_wellplay_game_reflects_on_every_objective_before_each_question() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (result, events) = play(Framework::Ocot, "night-ferry.toml", wellplay(2), dir.path()).await;
    assert_eq!(result.framework, "ocot");
    check_ocot(&example("night-ferry.toml"), &result, &events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ocot_thinkthrice_game_respects_forced_targets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (result, events) = play(
        Framework::Ocot,
        "night-ferry.toml",
        thinkthrice(),
        dir.path(),
    )
    .await;
    check_ocot(&example("night-ferry.toml"), &result, &events);
    check_forced_targets(&events);
}

fn has_cjk(s: &str) -> bool {
    s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_baselines_play_a_chinese_game_in_chinese() {
    let script = example("zh-teahouse.toml");
    for framework in [Framework::Werewolf, Framework::Ocot] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (result, events) = play(framework, "zh-teahouse.toml", wellplay(1), dir.path()).await;
        match framework {
            Framework::Werewolf => {
                check_werewolf(&script, &result, &events);
            }
            _ => check_ocot(&script, &result, &events),
        }
        for e in events.iter().filter(|e| {
            matches!(
                e["kind"].as_str(),
                Some("question" | "answer" | "predefined_question" | "objective_reflection")
            )
        }) {
            assert!(has_cjk(text(e)), "{framework}: not Chinese: {e}");
        }
    }
}

/// One character of `framework` driven through every request a game makes of it. Returns its prompts
/// (to see which were rendered) and its turns: introduction, free question, forced question, answer,
/// vote.
async fn drive(
    framework: Framework,
    script: Arc<Script>,
    name: &str,
) -> (Arc<sleuth::agent::Prompts>, Vec<Turn>) {
    let config = GameConfig {
        framework,
        protocol: wellplay(1),
        ..GameConfig::default()
    };
    let prompts = Arc::new(game::load_prompts(&script, &config, framework).expect("prompts load"));
    let embedder: SharedEmbedder = Arc::new(HashingEmbedder::default());
    let (memory, _) = ractor::Actor::spawn(None, MemoryIndex, embedder)
        .await
        .expect("memory index starts");
    let args = CharacterArgs {
        framework,
        protocol: config.protocol,
        view: CharacterView::of(&script, name).expect("the character is in the script"),
        omniscient: None,
        config: AgentConfig::default(),
        gateway: simulated_gateway().await,
        memory: memory.clone(),
        prompts: prompts.clone(),
        game_id: format!("drive-{framework}"),
        seed: 5,
        bound: Default::default(),
        seat: None,
        panic_on_request: None,
    };
    let (actor, _) = ractor::Actor::spawn(None, Character, args)
        .await
        .expect("character starts");
    let others: Vec<String> = script
        .characters
        .iter()
        .map(|c| c.name.clone())
        .filter(|n| n != name)
        .collect();
    let victims = script.victims[0].name.clone();
    let mut turns = Vec::new();
    let intro =
        format!("{name}, please introduce yourself and tell us what you know about {victims}.");
    turns.push(
        game::request_turn(&actor, name, |reply| CharacterMsg::Introduce {
            host_line: intro,
            reply,
        })
        .await
        .expect("introduces itself"),
    );
    for target in [None, Some(others[1].clone())] {
        let candidates = others.clone();
        turns.push(
            game::request_turn(&actor, name, |reply| CharacterMsg::Ask {
                target,
                candidates,
                round: 1,
                reply,
            })
            .await
            .expect("asks"),
        );
    }
    let question = format!("Where were you when {victims} died?");
    let asker = others[0].clone();
    turns.push(
        game::request_turn(&actor, name, |reply| CharacterMsg::Answer {
            asker,
            question,
            reply,
        })
        .await
        .expect("answers"),
    );
    let candidates = others.clone();
    turns.push(
        game::request_turn(&actor, name, |reply| CharacterMsg::Vote {
            vote_call: "Time to vote.".into(),
            candidates,
            reply,
        })
        .await
        .expect("votes"),
    );
    actor.stop(None);
    memory.stop(None);
    for t in &turns[1..3] {
        assert!(
            t.target.as_ref().is_some_and(|t| others.contains(t)),
            "{:?}",
            t.target
        );
        assert!(!t.text.trim().is_empty());
    }
    assert_eq!(
        turns[2].target.as_ref(),
        Some(&others[1]),
        "forced target ignored"
    );
    assert!(turns[4].target.as_ref().is_some_and(|t| others.contains(t)));
    (prompts, turns)
}

fn assert_all_purposes_rendered(framework: Framework, prompts: &sleuth::agent::Prompts) {
    let rendered = prompts.rendered();
    for p in framework.purposes() {
        assert!(
            rendered.contains(*p),
            "{framework}: prompt `{p}` never used ({rendered:?})"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_werewolf_prompt_is_used() {
    let (prompts, turns) = drive(
        Framework::Werewolf,
        example("night-ferry.toml"),
        "Ruth Calloway",
    )
    .await;
    assert_all_purposes_rendered(Framework::Werewolf, &prompts);
    let kinds = |t: &Turn| -> Vec<String> { t.steps.iter().map(|s| s.kind.clone()).collect() };
    assert!(kinds(&turns[1]).contains(&"predefined_question".to_string()));
    assert!(kinds(&turns[3]).ends_with(&["answer_draft".to_string(), "reflection".to_string()]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_ocot_prompt_is_used_and_a_script_without_goals_falls_back_to_the_sides_objective() {
    let mut script = (*example("night-ferry.toml")).clone();
    for c in &mut script.characters {
        c.goals.clear();
    }
    let script = Arc::new(script);
    let (prompts, turns) = drive(Framework::Ocot, script.clone(), "Ruth Calloway").await;
    assert_all_purposes_rendered(Framework::Ocot, &prompts);
    let objectives = |t: &Turn| -> Vec<String> {
        t.steps
            .iter()
            .filter(|s| s.kind == "objective_reflection")
            .filter_map(|s| s.data.as_ref()?["objective"].as_str().map(str::to_string))
            .collect()
    };
    assert_eq!(objectives(&turns[1]), ["Find out who killed Gideon Marsh."]);
    assert_eq!(objectives(&turns[2]), ["Find out who killed Gideon Marsh."]);
    // The murderer reflects on not being found instead.
    let (_, turns) = drive(Framework::Ocot, script, "Edmund Hale").await;
    let o = objectives(&turns[1]);
    assert_eq!(o.len(), 1);
    assert!(o[0].contains("you killed Gideon Marsh"), "{o:?}");
}
