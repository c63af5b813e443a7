//! The MIRAGE protocol with the MIRAGE agent, end to end: on the imported MIRAGE sample (skipped with a
//! note when `../shared/datasets` is absent, a failure under CI), on sleuth's own scripts, across stage releases, with forced
//! exposure, and through the real HTTP client against a mock server whose first reply is malformed (the
//! Rerun module). Games are short — one or two iterations — so the file runs quickly on two cores.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use sleuth::agent::Framework;
use sleuth::game::{
    self, reciprocal_rank, suspicion_minus_trust, GameConfig, GameResult, MirageSettings,
    ProtocolSettings,
};
use sleuth::llm::simulated::{parse_sections, sections_schema_line, split_sections};
use sleuth::llm::{
    CallTags, ChatRequest, Gateway, GatewayConfig, Message, OpenAiProvider, OpenAiSettings, Phase,
    Pricing, ResponseSchema, SharedProvider, SimulatedProvider,
};
use sleuth::mockllm::{MockConfig, MockServer};
use sleuth::script::import::mirage::{import, MirageOptions};
use sleuth::script::Script;

/// The imported MIRAGE sample; `None` (a note, or a failure under CI) when the datasets are not there.
fn eastern_star() -> Option<Script> {
    let dir = common::datasets()?.join("mirage-sample/The Eastern Star Cruise Ship");
    Some(import(&dir, &MirageOptions::default()).expect("the MIRAGE sample imports"))
}
/// An example script with one factual question per character: evaluation runs but stays cheap.
fn example(name: &str) -> Script {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name);
    let mut s = Script::load(&p).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut seen = BTreeSet::new();
    s.factual.retain(|q| seen.insert(q.character.clone()));
    s.inferential.truncate(1);
    s
}

/// Short games with small summary caps, so that both Summarization modules run.
fn settings(iterations: u32, force_expose: bool) -> MirageSettings {
    MirageSettings {
        iterations,
        force_expose,
        script_summary_tokens: 300,
        history_tokens: 600,
        ..MirageSettings::default()
    }
}

async fn simulated() -> Gateway {
    gateway(Arc::new(SimulatedProvider::default())).await
}

async fn gateway(provider: SharedProvider) -> Gateway {
    Gateway::start(
        provider,
        Pricing::builtin(),
        GatewayConfig {
            backoff_base: Duration::from_millis(5),
            ..GatewayConfig::default()
        },
    )
    .await
    .expect("gateway starts")
}

/// A finished game, its transcript and the MIRAGE templates it rendered.
struct Played {
    result: GameResult,
    events: Vec<Value>,
    rendered: BTreeSet<String>,
}

impl Played {
    fn of_kind(&self, kind: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["kind"] == kind).collect()
    }
}

async fn play(script: Script, s: MirageSettings, gw: Gateway, seed: u64) -> Played {
    let dir = tempfile::tempdir().expect("temp dir");
    let path: PathBuf = dir.path().join("transcript.jsonl");
    let config = GameConfig {
        game_id: format!("mirage-{seed}"),
        seed,
        protocol: ProtocolSettings::mirage(s),
        framework: Framework::Mirage,
        transcript_path: Some(path.clone()),
        ..GameConfig::default()
    };
    let title = script.title.clone();
    let prompts = game::load_all_prompts(&script, &config).expect("prompts load");
    let mirage_prompts = prompts["mirage"].clone();
    let result = game::play_with_prompts(Arc::new(script), config, gw, prompts)
        .await
        .unwrap_or_else(|e| panic!("{title}: the mirage game failed: {e}"));
    let events = std::fs::read_to_string(&path)
        .expect("transcript written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("transcript line is JSON"))
        .collect();
    Played {
        result,
        events,
        rendered: mirage_prompts.rendered(),
    }
}

/// Every gameplay template of the MIRAGE agent was rendered with the variables the code passes.
fn every_template_rendered(g: &Played) {
    let missing: Vec<&&str> = Framework::Mirage
        .purposes()
        .iter()
        .filter(|p| !g.rendered.contains(**p))
        .collect();
    assert!(missing.is_empty(), "templates never rendered: {missing:?}");
}

fn public(e: &Value) -> bool {
    e["visible_to"] == "all"
}

fn private_to_speaker(e: &Value) -> bool {
    e["visible_to"] == json!({ "only": [e["speaker"].clone()] })
}

/// What every MIRAGE game must show, whatever the script: each phase in the transcript with the
/// visibility the paper gives it, and an outcome that agrees with the transcript.
fn check_game(script: &Script, g: &Played, iterations: usize) {
    let r = &g.result;
    let names: Vec<String> = script.characters.iter().map(|c| c.name.clone()).collect();
    let n = names.len();
    assert_eq!(
        (r.protocol.as_str(), r.framework.as_str()),
        ("mirage", "mirage")
    );
    let m = r.mirage.as_ref().expect("a MIRAGE outcome");

    // Self-introductions and one speech per character per open conversation, all public.
    assert_eq!(g.of_kind("introduction").len(), n);
    let speeches = g.of_kind("speech");
    assert_eq!(speeches.len(), n * iterations, "one speech each per phase");
    assert!(speeches.iter().all(|e| public(e)));
    assert!(speeches
        .iter()
        .all(|e| !e["text"].as_str().unwrap_or("").is_empty()));

    // Trust and suspicion: private to the scorer, a score in 0..=1 for every other character, and the
    // outcome holds the same numbers in the same order.
    let scores = g.of_kind("trust_suspicion");
    assert_eq!(
        scores.len(),
        n * iterations,
        "every character scores every phase"
    );
    let mut from_events: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for e in &scores {
        assert!(private_to_speaker(e), "scores are private: {e}");
        let scorer = e["speaker"].as_str().expect("speaker");
        for other in names.iter().filter(|o| o.as_str() != scorer) {
            for module in ["trust", "suspicion"] {
                let x = e["data"][module][other.as_str()]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{scorer} gave no {module} score for {other}: {e}"));
                assert!((0.0..=1.0).contains(&x), "{x}");
            }
            from_events
                .entry((scorer.to_string(), other.clone()))
                .or_default()
                .push(e["data"]["trust"][other.as_str()].as_f64().unwrap_or(-1.0));
        }
        assert!(
            e["data"]["trust"].get(scorer).is_none(),
            "nobody scores themselves"
        );
    }
    for ((scorer, other), trust) in &from_events {
        assert_eq!(&m.trust[scorer][other], trust, "{scorer} → {other}");
        assert_eq!(m.suspicion[scorer][other].len(), iterations);
    }

    // Interactions: every question is answered at once and publicly; every investigation discloses a
    // distinct clue to everyone and is credited to its investigator.
    let questions = g.of_kind("question");
    let answers = g.of_kind("answer");
    assert_eq!(questions.len(), answers.len(), "every question is answered");
    assert!(questions.iter().chain(&answers).all(|e| public(e)));
    let clues = g.of_kind("clue");
    assert_eq!(
        questions.len() + clues.len(),
        n * iterations,
        "each character asks or investigates once per interaction phase"
    );
    let mut found = BTreeSet::new();
    for e in &clues {
        assert!(public(e), "a clue is disclosed to everyone: {e}");
        let id = e["data"]["clue"].as_str().expect("clue id");
        let investigator = e["data"]["investigator"].as_str().expect("investigator");
        let clue = script
            .clues
            .iter()
            .find(|c| c.id == id)
            .expect("a clue of the script");
        assert_eq!(e["data"]["key"], clue.key);
        assert!(e["text"].as_str().unwrap_or("").contains(clue.text.trim()));
        assert!(m.investigated[investigator].iter().any(|x| x == id));
        assert!(found.insert(id.to_string()), "clue {id} investigated twice");
    }
    let credited: usize = m.investigated.values().map(Vec::len).sum();
    assert_eq!(credited, clues.len());
    assert_eq!(m.investigated.len(), n, "every character has a CIC entry");

    // Module outputs are private to their author.
    for kind in ["thought", "summary"] {
        assert!(
            g.of_kind(kind).iter().all(|e| private_to_speaker(e)),
            "{kind}"
        );
    }
    assert!(!g.of_kind("thought").is_empty());

    // Accusations are public, one each, never of oneself; votes go to the accused (a voter who is the
    // only accused picks among the others) and never to oneself.
    let accusations = g.of_kind("accusation");
    assert_eq!(accusations.len(), n);
    assert!(accusations.iter().all(|e| public(e)));
    assert_eq!(m.accusations.len(), n);
    let accused: BTreeSet<&String> = m.accusations.values().collect();
    for (accuser, target) in &m.accusations {
        assert_ne!(accuser, target);
    }
    assert_eq!(r.votes.len(), n, "everyone votes");
    for (voter, target) in &r.votes {
        assert_ne!(voter, target, "{voter} voted for themselves");
        let only_self = accused.len() == 1 && accused.contains(voter);
        assert!(
            only_self || accused.contains(target),
            "{voter} voted for unaccused {target}"
        );
    }
    assert_eq!(g.of_kind("vote").len(), n);
    assert!(g.of_kind("vote").iter().all(|e| private_to_speaker(e)));

    // Victory is the culprit's reciprocal rank in the tally, ties broken by suspicion − trust; the
    // winner follows the plurality rule.
    let victory = reciprocal_rank(&r.vote_counts, &r.murderers, &suspicion_minus_trust(m));
    assert!(
        (m.victory - victory).abs() < 1e-12,
        "{} vs {victory}",
        m.victory
    );
    assert!(m.victory > 0.0 && m.victory <= 1.0);
    assert!(r.winner.is_some());
    assert_eq!(g.of_kind("reveal").len(), 1);
    assert!(m.clues_available >= m.key_clues_available);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mirage_sample_plays_every_phase() {
    let Some(script) = eastern_star() else { return };
    let g = play(script.clone(), settings(2, false), simulated().await, 3).await;
    check_game(&script, &g, 2);
    let m = g.result.mirage.as_ref().expect("outcome");
    assert!(!m.forced_exposure);
    assert!(g.of_kind("exposure").is_empty());
    assert!(
        !g.of_kind("clue").is_empty(),
        "at least one clue was investigated and shown to all"
    );
    assert_eq!(
        m.clues_available,
        script.clues.len(),
        "a single-stage script"
    );
    assert_eq!(
        m.key_clues_available,
        script.clues.iter().filter(|c| c.key).count()
    );
    // The sample's scripts are longer than the cap: each character summarized its script.
    let script_summaries = g
        .of_kind("summary")
        .into_iter()
        .filter(|e| e["data"]["of"] == "script")
        .count();
    assert_eq!(script_summaries, script.characters.len());
    assert!(
        g.of_kind("summary")
            .iter()
            .any(|e| e["data"]["of"] == "history"),
        "the history outgrew its cap and was summarized"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_exposure_comes_before_anyone_speaks() {
    let Some(script) = eastern_star() else { return };
    let g = play(script.clone(), settings(1, true), simulated().await, 4).await;
    check_game(&script, &g, 1);
    let first = g
        .events
        .iter()
        .find(|e| e["speaker"] != "host")
        .expect("someone speaks");
    assert_eq!(first["kind"], "exposure", "{first}");
    assert!(public(first));
    let culprits = &g.result.murderers;
    assert!(culprits.iter().any(|c| first["speaker"] == c.as_str()));
    assert_eq!(g.of_kind("exposure").len(), culprits.len());
    assert!(g.result.mirage.as_ref().is_some_and(|m| m.forced_exposure));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirage_games_on_sleuths_own_scripts_complete() {
    let gw = simulated().await;
    let ferry = example("night-ferry.toml");
    let g = play(ferry.clone(), settings(2, false), gw.clone(), 5).await;
    check_game(&ferry, &g, 2);
    every_template_rendered(&g);
    // A Chinese script: Chinese prompts, and replies with the full-width colon.
    let tea = example("zh-teahouse.toml");
    let g = play(tea.clone(), settings(2, false), gw, 6).await;
    check_game(&tea, &g, 2);
    every_template_rendered(&g);
    assert!(g
        .of_kind("thought")
        .iter()
        .all(|e| !e["text"].as_str().unwrap_or("").contains("RESPONSE")));
}

/// Night-ferry cut into two stages: the second stage of every script, and one clue, come later.
fn two_stages() -> (Script, String) {
    let mut s = example("night-ferry.toml");
    s.acts = 2;
    for c in &mut s.characters {
        let first = c.acts.first().cloned().unwrap_or_default();
        c.acts = vec![
            first,
            format!(
                "Stage two for {}: the storm has passed and the purser's office is open.",
                c.name
            ),
        ];
    }
    let late = s.clues[0].id.clone();
    s.clues[0].act = Some(2);
    (s, late)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stages_are_released_between_iterations() {
    let (script, late) = two_stages();
    assert_eq!(settings(2, false).stage_releases(2), vec![1]);
    let g = play(script.clone(), settings(2, false), simulated().await, 7).await;
    check_game(&script, &g, 2);
    // The release comes between the first interaction and the second conversation.
    let stage_of = |e: &Value| e["stage"].as_str().unwrap_or("").to_string();
    let order: Vec<String> = g.events.iter().map(stage_of).collect();
    let pos = |stage: &str| order.iter().position(|s| s == stage).expect(stage);
    assert!(pos("interaction_1") < pos("stage_2") && pos("stage_2") < pos("conversation_2"));
    let handed: Vec<&Value> = g
        .of_kind("script")
        .into_iter()
        .filter(|e| e["data"]["act"] == 2)
        .collect();
    assert_eq!(
        handed.len(),
        script.characters.len(),
        "every character gets stage 2"
    );
    for e in &handed {
        assert_eq!(e["stage"], "stage_2");
        assert!(e["visible_to"]["only"]
            .as_array()
            .is_some_and(|v| v.len() == 1));
    }
    // Each character summarizes its longer script again when it gets stage 2.
    let resummarized = g
        .of_kind("summary")
        .iter()
        .filter(|e| e["data"]["of"] == "script" && e["data"]["acts"] == 2)
        .count();
    assert_eq!(resummarized, script.characters.len());
    // The stage-2 clue cannot have been found before stage 2.
    for e in g.of_kind("clue") {
        if e["data"]["clue"] == late.as_str() {
            assert_eq!(e["stage"], "interaction_2", "{e}");
        }
    }
    let m = g.result.mirage.as_ref().expect("outcome");
    assert_eq!(m.clues_available, script.clues.len());
}

/// The Rerun module over real HTTP: the mock server's first completion is malformed; the gateway
/// re-asks with the section format restated, the game completes, and the failure is counted exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_reply_is_rerun_and_counted() {
    let server = MockServer::start(
        "127.0.0.1:0".parse().expect("addr"),
        MockConfig {
            malformed_first: 1,
            ..MockConfig::default()
        },
    )
    .await
    .expect("mock server starts");
    let provider = OpenAiProvider::new(&OpenAiSettings::new(
        server.base_url(),
        "test-key",
        Duration::from_secs(10),
    ))
    .expect("client builds");
    let mut script = example("night-ferry.toml");
    script.factual.clear();
    script.inferential.clear();
    let g = play(
        script.clone(),
        settings(1, false),
        gateway(Arc::new(provider)).await,
        8,
    )
    .await;
    check_game(&script, &g, 1);
    let stats = server.stats();
    assert_eq!(stats.malformed, 1);
    let u = g.result.usage;
    assert_eq!(u.parse_failures, 1, "the malformed reply was counted once");
    assert_eq!(
        u.calls, stats.ok,
        "the malformed reply was paid for and re-asked"
    );
    assert_eq!(u.completion_tokens, stats.completion_tokens);
    // The failure is on the transcript event of the call it belongs to.
    let on_events: u64 = g
        .events
        .iter()
        .filter_map(|e| e["usage"]["parse_failures"].as_u64())
        .sum();
    assert_eq!(on_events, 1);
    server.shutdown().await;
}

fn tags() -> CallTags {
    CallTags {
        game: "g".into(),
        agent: "Ada".into(),
        framework: "mirage".into(),
        phase: Phase::Gameplay,
        purpose: "vote".into(),
    }
}

/// The simulated model answers a Sections request in sections form by both routes: in process (the
/// schema travels with the request) and over HTTP (the openai provider sends no response_format; the
/// model reads the schema line of the prompt). Both answers pass the gateway's parsing, and agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulated_model_answers_in_sections_by_both_routes() {
    let schema = json!({"type": "object", "properties": {
        "vote": {"type": "string", "enum": ["Ada", "Cook"]},
        "reason": {"type": "string"}
    }, "required": ["vote", "reason"], "additionalProperties": false});
    let user = format!(
        "Question: Who was near the brandy decanter at 10 pm?\n\n### Reply format\nTwo sections.\n{}",
        sections_schema_line(&schema)
    );
    let req = ChatRequest {
        model: "sim-1".into(),
        messages: vec![
            Message::system("You are Ben.\n### Your script\nAt 10 pm I saw Ada near the brandy decanter. The cook left at 8 pm."),
            Message::user(user),
        ],
        temperature: 0.8,
        top_p: 1.0,
        max_tokens: 120,
        schema: Some(ResponseSchema::sections("vote", schema.clone())),
        logprobs: false,
        sample: 11,
        cache_key: None,
    };
    let local = simulated()
        .await
        .chat(req.clone(), tags())
        .await
        .expect("in-process sections parse");
    assert_eq!(
        local.json.as_ref().map(|v| v["vote"].clone()),
        Some(json!("Ada"))
    );
    assert!(split_sections(&local.response.content).is_ok_and(|s| !s.thought.is_empty()));

    let server = MockServer::start("127.0.0.1:0".parse().expect("addr"), MockConfig::default())
        .await
        .expect("mock server starts");
    let provider = OpenAiProvider::new(&OpenAiSettings::new(
        server.base_url(),
        "test-key",
        Duration::from_secs(10),
    ))
    .expect("client builds");
    let remote = gateway(Arc::new(provider))
        .await
        .chat(req, tags())
        .await
        .expect("sections over HTTP parse");
    assert_eq!(remote.usage.parse_failures, 0);
    assert_eq!(remote.json, local.json, "the same model by either road");
    assert_eq!(
        parse_sections(&remote.response.content, &schema).ok(),
        remote.json
    );
    server.shutdown().await;
}
