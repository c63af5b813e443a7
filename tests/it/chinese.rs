//! A whole Chinese game through the library: `examples/zh-teahouse.toml` with the built-in `zh` prompts
//! and the simulated model. The model answers by quoting its context, so a Chinese game must come out
//! as Chinese sentences taken from the script, the clue cards and what players said earlier, never as
//! English boilerplate from an English prompt or host line.

use std::path::Path;
use std::sync::Arc;

use sleuth::agent::{AgentConfig, Prompts, FRAMEWORK, PURPOSES};
use sleuth::game::{self, GameConfig, ProtocolSettings, ThinkThriceSettings};
use sleuth::llm::{Gateway, GatewayConfig, Pricing, SimulatedProvider};
use sleuth::script::{Language, Script};
use sleuth::text;

fn teahouse() -> Arc<Script> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/zh-teahouse.toml");
    Arc::new(Script::load(&p).expect("zh-teahouse.toml loads"))
}

/// Share of a text's letters that are CJK (`char::is_alphabetic` counts ideographs as letters too).
fn cjk_share(s: &str) -> f64 {
    let letters = s.chars().filter(|c| c.is_alphabetic()).count();
    let cjk = s.chars().filter(|c| text::is_cjk(*c)).count();
    if letters == 0 {
        0.0
    } else {
        cjk as f64 / letters as f64
    }
}

/// Everything an agent may quote before the game starts: every character's script and public line, the
/// premise, the victims and the clue cards. The cast and victim lists read `名字：介绍` in the system
/// prompt, so a quoted first sentence may carry the name.
fn script_corpus(s: &Script) -> String {
    let mut parts: Vec<String> = vec![s.premise.clone()];
    parts.extend(
        s.victims
            .iter()
            .map(|v| format!("{}：{}", v.name, v.description)),
    );
    for c in &s.characters {
        parts.push(format!("{}：{}", c.name, c.public));
        parts.push(c.script_text());
        parts.extend(c.goals.iter().cloned());
    }
    parts.extend(s.clues.iter().map(|c| format!("{}\n{}", c.title, c.text)));
    parts.join("\n")
}

#[test]
fn every_chinese_prompt_is_built_in_and_renders_chinese() {
    let p = Prompts::load(FRAMEWORK, Language::Zh, None, PURPOSES).expect("zh prompts load");
    let out = p
        .render(
            "answer",
            minijinja::context! { memory => "", asker => "陈阿福", question => "你几点离开的？" },
        )
        .expect("answer renders");
    assert!(out.ends_with("问题：你几点离开的？"), "{out}");
    assert!(cjk_share(&out) > 0.8, "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chinese_game_is_played_in_chinese_from_the_script() {
    let script = teahouse();
    let gw: Gateway = Gateway::start(
        Arc::new(SimulatedProvider::default()),
        Pricing::builtin(),
        GatewayConfig::default(),
    )
    .await
    .expect("gateway starts");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("transcript.jsonl");
    let config = GameConfig {
        game_id: "zh-teahouse".into(),
        seed: 11,
        transcript_path: Some(path.clone()),
        agent: AgentConfig {
            modules: "mr".parse().expect("valid modules"),
            ..AgentConfig::default()
        },
        protocol: ProtocolSettings::thinkthrice(ThinkThriceSettings {
            rounds_before_clues: 1,
            rounds_after_clues: 1,
            initial_questioning: true,
        }),
        ..GameConfig::default()
    };
    let r = game::play(script.clone(), config, gw)
        .await
        .expect("the Chinese game completes");

    // A finished game: everyone voted, and the winner follows from the votes.
    assert_eq!(r.votes.len(), script.characters.len(), "{:?}", r.votes);
    assert_eq!(r.murderers, vec!["沈墨卿".to_string()]);
    assert_eq!(
        r.winner,
        Some(game::thinkthrice_winner(&r.vote_counts, &r.murderers)),
        "counts {:?}",
        r.vote_counts
    );

    let events: Vec<serde_json::Value> = std::fs::read_to_string(&path)
        .expect("transcript written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("transcript line is JSON"))
        .collect();
    assert!(
        events.iter().any(|e| e["kind"] == "reveal"),
        "the game ends with the reveal"
    );

    // No English host line or prompt boilerplate anywhere in the game.
    for e in &events {
        let t = e["text"].as_str().unwrap_or_default();
        for phrase in [
            "please introduce your role",
            "I don't know",
            "Round 1 of open questioning",
        ] {
            assert!(
                !t.contains(phrase),
                "English text in a Chinese game (event {}, {}): {t}",
                e["seq"],
                e["kind"]
            );
        }
    }

    // Every introduction and answer is Chinese, and every sentence of it is quoted from the script or
    // from something said or shown earlier in the game: the model extracted Chinese sentences from its
    // Chinese context instead of writing English boilerplate.
    let murderer = script
        .character("沈墨卿")
        .expect("the murderer is in the cast");
    let hidden: Vec<String> = murderer
        .secrets
        .iter()
        .flat_map(|s| text::sentences(s))
        .collect();
    let mut corpus = script_corpus(&script);
    let mut spoken = 0;
    let mut dont_know = 0;
    for e in &events {
        let kind = e["kind"].as_str().unwrap_or_default();
        let t = e["text"].as_str().unwrap_or_default();
        if kind == "introduction" || kind == "answer" {
            spoken += 1;
            assert!(
                cjk_share(t) > 0.5,
                "{kind} {} by {} is not Chinese: {t}",
                e["seq"],
                e["speaker"]
            );
            if e["speaker"] == "沈墨卿" {
                for h in &hidden {
                    assert!(
                        !t.contains(h.as_str()),
                        "the murderer quoted a secret (### 你的秘密（不可透露）): {h}"
                    );
                }
            }
            if t == "我不知道。" {
                dont_know += 1;
            } else {
                for s in text::sentences(t) {
                    assert!(
                        corpus.contains(&s),
                        "{kind} {} by {}: sentence not from the script or the game: {s}",
                        e["seq"],
                        e["speaker"]
                    );
                }
            }
        }
        corpus.push('\n');
        corpus.push_str(t);
    }
    assert!(
        spoken >= 4 + 4 * 3 + 4 * 2,
        "{spoken} introductions and answers"
    );
    assert!(
        dont_know * 4 < spoken,
        "{dont_know} of {spoken} replies were 我不知道"
    );

    // The agents know their own Chinese scripts.
    let own = r.factual.own.expect("own-script questions were asked");
    assert!(own > 0.5, "own-script accuracy {own:.3}");
}
