//! Every framework under every protocol it is meant for (`player`, `werewolf`, `ocot`, `thinkthrice`,
//! `pp`, `op` under `wellplay` and `thinkthrice`; `mirage` under `mirage`), on sleuth's own examples and
//! on the imported WellPlay and MIRAGE samples, with the simulated provider. Tests that need
//! `../shared/datasets` say so and pass when it is absent (a user's fresh checkout), and fail under CI.
//!
//! The games are short (few rounds, two questions of each kind per character) so that the whole matrix
//! runs in CI; what is checked is what a researcher relies on: every arm finishes, plays (or, for the
//! references, does not play) the way its protocol says, is evaluated, and every prompt template of every
//! framework renders with the variables the code passes, in English and Chinese.

use crate::common;
use common::simulated_gateway as gateway;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use sleuth::agent::{AgentConfig, Framework};
use sleuth::game::{
    self, GameConfig, GameResult, MirageSettings, Protocol, ProtocolSettings, ThinkThriceSettings,
    WellPlaySettings,
};
use sleuth::script::import::{mirage, wellplay};
use sleuth::script::{Language, Script};

/// Every (framework, protocol) pair the frameworks are meant for.
fn arms() -> Vec<(Framework, Protocol)> {
    Framework::ALL
        .iter()
        .flat_map(|f| f.protocols().iter().map(move |p| (*f, *p)))
        .collect()
}

/// Short settings of each protocol. MIRAGE's summary caps are small so that Summarization runs.
fn short(protocol: Protocol) -> ProtocolSettings {
    ProtocolSettings {
        protocol,
        thinkthrice: ThinkThriceSettings {
            rounds_before_clues: 1,
            rounds_after_clues: 1,
            initial_questioning: true,
        },
        wellplay: WellPlaySettings {
            rounds: 2,
            questions_per_round: 1,
        },
        mirage: MirageSettings {
            iterations: 2,
            script_summary_tokens: 150,
            history_tokens: 400,
            ..MirageSettings::default()
        },
    }
}

/// The script with at most two factual questions per character and two inferential questions: enough
/// to exercise every evaluation path without making the matrix slow.
fn trimmed(mut s: Script) -> Script {
    let mut per: BTreeMap<String, usize> = BTreeMap::new();
    s.factual.retain(|q| {
        let n = per.entry(q.character.clone()).or_default();
        *n += 1;
        *n <= 2
    });
    s.inferential.truncate(2);
    s
}

fn example(name: &str) -> Script {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name);
    trimmed(Script::load(&p).unwrap_or_else(|e| panic!("{name}: {e}")))
}

/// One finished arm: its result, its transcript and the templates it rendered.
struct Played {
    framework: Framework,
    protocol: Protocol,
    result: GameResult,
    events: Vec<serde_json::Value>,
    rendered: BTreeSet<String>,
}

async fn play(script: &Arc<Script>, framework: Framework, protocol: Protocol) -> Played {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("transcript.jsonl");
    let config = GameConfig {
        game_id: format!("{}-{framework}-{protocol}", script.title),
        seed: 5,
        protocol: short(protocol),
        framework,
        agent: AgentConfig {
            modules: "mr,sr,sv=1".parse().expect("modules"),
            ..AgentConfig::default()
        },
        transcript_path: Some(path.clone()),
        eval_repeats: 1,
        ..GameConfig::default()
    };
    let prompts = game::load_all_prompts(script, &config).expect("prompts load");
    let p = prompts[framework.as_str()].clone();
    let result = game::play_with_prompts(script.clone(), config, gateway().await, prompts)
        .await
        .unwrap_or_else(|e| panic!("{} · {framework} · {protocol}: {e}", script.title));
    let events = std::fs::read_to_string(&path)
        .expect("transcript written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("transcript line is JSON"))
        .collect();
    Played {
        framework,
        protocol,
        result,
        events,
        rendered: p.rendered(),
    }
}

/// Plays every arm on `script`, two at a time (the machines have two cores).
async fn play_all(script: Script) -> Vec<Played> {
    let script = Arc::new(script);
    let mut out = Vec::new();
    for pair in arms().chunks(2) {
        let games = pair.iter().map(|(f, p)| play(&script, *f, *p));
        out.extend(futures::future::join_all(games).await);
    }
    out
}

fn kinds(events: &[serde_json::Value]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for e in events {
        *m.entry(e["kind"].as_str().unwrap_or("").to_string())
            .or_default() += 1;
    }
    m
}

/// What every arm must show, whatever the script.
fn check(script: &Script, g: &Played) {
    let r = &g.result;
    let label = format!("{} · {} · {}", script.title, g.framework, g.protocol);
    assert_eq!(r.framework, g.framework.as_str(), "{label}");
    assert_eq!(r.protocol, g.protocol.as_str(), "{label}");
    let k = kinds(&g.events);
    let players = script.characters.len();
    if g.framework.plays() {
        assert!(r.winner.is_some(), "{label}: no winner");
        assert_eq!(r.votes.len(), players, "{label}: everyone votes");
        for (voter, target) in &r.votes {
            assert_ne!(voter, target, "{label}: {voter} voted for themselves");
        }
        match g.protocol {
            Protocol::Mirage => {
                let m = r.mirage.as_ref().expect("mirage outcome");
                assert!((0.0..=1.0).contains(&m.victory), "{label}: {m:?}");
                assert!(
                    k.get("trust_suspicion").copied().unwrap_or(0) > 0,
                    "{label}: {k:?}"
                );
            }
            Protocol::WellPlay => {
                let m = r.majority.as_ref().expect("elimination outcome");
                assert_eq!(Some(m.majority_winner), r.winner, "{label}");
                assert!(
                    k.get("question").copied().unwrap_or(0) >= players * 2,
                    "{label}: {k:?}"
                );
            }
            Protocol::ThinkThrice => {
                assert!(
                    k.get("question").copied().unwrap_or(0) >= players,
                    "{label}: {k:?}"
                );
                assert_eq!(
                    k.get("clue").copied().unwrap_or(0),
                    script.clues.len(),
                    "{label}"
                );
            }
        }
        assert_eq!(
            k.get("answer").copied().unwrap_or(0),
            k.get("question").copied().unwrap_or(0),
            "{label}: every question is answered"
        );
    } else {
        // The references play nothing; under WellPlay they make the final decision, the vote, from
        // what they were handed (PLAYER* §4.1 and Table A3 report their Voting).
        for kind in ["question", "answer", "introduction"] {
            assert!(
                !k.contains_key(kind),
                "{label}: a reference produced `{kind}` events"
            );
        }
        if g.protocol == Protocol::WellPlay {
            assert!(r.winner.is_some(), "{label}: the references vote");
            assert!(r.majority.is_some(), "{label}: with the elimination rule");
            assert_eq!(
                r.votes.len(),
                players,
                "{label}: every character casts a ballot"
            );
        } else {
            assert_eq!(r.winner, None, "{label}: the references do not play");
            assert!(!k.contains_key("vote"), "{label}: no vote");
        }
    }
    // Evaluation ran on every question written for the players, and its calls are billed to it.
    let choice_for_players = script
        .choice
        .iter()
        .filter(|q| q.character.is_some())
        .count();
    if choice_for_players > 0 {
        let c = r.choice.as_ref().expect("multiple-choice scores");
        assert_eq!(
            c.overall.questions,
            choice_for_players * c.repeats as usize,
            "{label}"
        );
        let possible: u32 = script
            .choice
            .iter()
            .filter(|q| q.character.is_some())
            .map(|q| q.category.points())
            .sum();
        assert_eq!(c.overall.possible, possible * c.repeats, "{label}");
    }
    if !script.factual.is_empty() {
        let answered: usize = r.factual.counts.values().sum();
        assert_eq!(answered, script.factual.len() * players, "{label}");
    }
    if !script.factual.is_empty() || choice_for_players > 0 {
        assert!(r.usage_by_phase.evaluation.calls > 0, "{label}");
    }
    assert_eq!(
        r.usage.calls,
        r.usage_by_phase.gameplay.calls + r.usage_by_phase.evaluation.calls,
        "{label}: every call is billed to one phase"
    );
}

/// Every template each framework loads is rendered at least once over `games` in one language.
fn every_template_rendered(games: &[Played], lang: Language) {
    let mut by_framework: BTreeMap<Framework, BTreeSet<String>> = BTreeMap::new();
    for g in games {
        by_framework
            .entry(g.framework)
            .or_default()
            .extend(g.rendered.iter().cloned());
    }
    for (f, rendered) in by_framework {
        let expected: BTreeSet<String> = f
            .purposes()
            .iter()
            .chain(f.eval_purposes())
            .map(|p| p.to_string())
            .collect();
        let missing: Vec<&String> = expected.difference(&rendered).collect();
        assert!(
            missing.is_empty(),
            "{f} ({}): templates never rendered: {missing:?}",
            lang.code()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_arm_plays_the_english_examples() {
    let mut all = Vec::new();
    for name in ["night-ferry.toml", "glasshouse.toml"] {
        let script = example(name);
        let games = play_all(script.clone()).await;
        for g in &games {
            check(&script, g);
        }
        all.extend(games);
    }
    every_template_rendered(&all, Language::En);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_arm_plays_the_chinese_example() {
    let script = example("zh-teahouse.toml");
    let games = play_all(script.clone()).await;
    for g in &games {
        check(&script, g);
    }
    every_template_rendered(&games, Language::Zh);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_arm_plays_the_imported_wellplay_sample() {
    let Some(d) = common::datasets() else { return };
    for title in [
        "Riverside Inn (4 people closed)",
        "Desperate Sunshine (4 people closed)",
    ] {
        let script = wellplay::import(&d.join("wellplay-sample").join(title))
            .unwrap_or_else(|e| panic!("{title}: {e}"));
        assert!(
            script.choice.iter().any(|q| q.character.is_some()),
            "{title}: the sample has per-character questions"
        );
        for g in play_all(script.clone()).await {
            check(&script, &g);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_arm_plays_the_imported_mirage_sample() {
    let Some(d) = common::datasets() else { return };
    let dir = d.join("mirage-sample").join("The Eastern Star Cruise Ship");
    let script = mirage::import(&dir, &mirage::MirageOptions::default()).expect("imports");
    for g in play_all(script.clone()).await {
        check(&script, &g);
    }
}

#[tokio::test]
async fn a_framework_refuses_a_protocol_it_is_not_meant_for() {
    let script = Arc::new(example("night-ferry.toml"));
    for (framework, protocol, murderer) in [
        (Framework::Mirage, Protocol::WellPlay, None),
        (Framework::Player, Protocol::Mirage, None),
        (Framework::Player, Protocol::WellPlay, Some(Framework::Pp)),
    ] {
        let config = GameConfig {
            protocol: short(protocol),
            framework,
            murderer_framework: murderer,
            ..GameConfig::default()
        };
        let err = game::play(script.clone(), config, gateway().await)
            .await
            .expect_err("refused");
        let msg = err.to_string();
        assert!(
            msg.contains(framework.as_str()) || msg.contains("pp"),
            "{msg}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_murderers_play_their_own_framework() {
    // PLAYER* compares detectives with the murderer's framework fixed: here Werewolf detectives against a
    // ThinkThrice murderer with Self-Refinement, whose sub-question steps only the murderer can produce.
    let script = Arc::new(example("night-ferry.toml"));
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("transcript.jsonl");
    let config = GameConfig {
        game_id: "murderer-framework".into(),
        seed: 3,
        protocol: short(Protocol::WellPlay),
        framework: Framework::Werewolf,
        murderer_framework: Some(Framework::ThinkThrice),
        agent: AgentConfig {
            modules: "mr,sr".parse().expect("modules"),
            ..AgentConfig::default()
        },
        transcript_path: Some(path.clone()),
        ..GameConfig::default()
    };
    let r = game::play(script.clone(), config, gateway().await)
        .await
        .expect("game completes");
    assert_eq!(r.framework, "werewolf");
    assert_eq!(r.murderer_framework.as_deref(), Some("thinkthrice"));
    let murderer = script.murderers()[0].to_string();
    let text = std::fs::read_to_string(&path).expect("transcript");
    let refiners: BTreeSet<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["kind"] == "sr_subquestions")
        .filter_map(|e| e["speaker"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        refiners,
        BTreeSet::from([murderer]),
        "only the ThinkThrice murderer self-refines"
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).expect("copy");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompts_dir_needs_the_frameworks_and_evaluation_templates_only() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("prompts");
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&root.join("werewolf/en"), &dir.path().join("werewolf/en"));
    let script = Arc::new(example("night-ferry.toml"));
    let config = GameConfig {
        protocol: short(Protocol::WellPlay),
        framework: Framework::Werewolf,
        prompts_dir: Some(dir.path().to_path_buf()),
        eval_repeats: 1,
        ..GameConfig::default()
    };
    // The shared evaluation templates are missing: refused before anything runs, naming the file.
    let err = game::play(script.clone(), config.clone(), gateway().await)
        .await
        .expect_err("incomplete prompts dir");
    assert!(
        err.to_string().contains("eval/en/answer_"),
        "the error names the missing template: {err}"
    );
    // With them, the game plays; the lexical judges need no `judge/` templates.
    copy_dir(&root.join("eval/en"), &dir.path().join("eval/en"));
    let r = game::play(script, config, gateway().await)
        .await
        .expect("plays from the prompts dir");
    assert_eq!(r.votes.len(), 4);
}
