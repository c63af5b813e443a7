//! Golden games: behaviour pinned by digests.
//!
//! For each example script and two imported dataset samples, one game per protocol/framework pair the
//! script can play, with a fixed seed and the simulated model. Each game is reduced to one line: a
//! digest of its transcript (timestamps removed), a digest of its outcome (`result.json` without the
//! wall-clock duration and the game's spec, which records paths and versions), and a few readable
//! figures so a reviewer sees *what* moved. The lines are pinned with `insta`: any change of behaviour
//! fails here, and a change that moves a digest is made on purpose, with the reason in its commit
//! message (`cargo insta review`, or `INSTA_UPDATE=always cargo test --test golden`). One more game
//! pair pins the LLM judge.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use sleuth::agent::Framework;
use sleuth::game::{self, GameConfig, JudgeChoice, Protocol, ProtocolSettings};
use sleuth::llm::Gateway;
use sleuth::script::import::{mirage, wellplay};
use sleuth::script::Script;

/// The seed of every golden game.
const SEED: u64 = 20261123;

/// Every (protocol, framework) pair sleuth plays.
fn pairs() -> Vec<(Protocol, Framework)> {
    let mut v = Vec::new();
    for p in [Protocol::ThinkThrice, Protocol::WellPlay, Protocol::Mirage] {
        for f in Framework::ALL {
            if f.supports(p) {
                v.push((p, f));
            }
        }
    }
    v
}

fn settings(p: Protocol) -> ProtocolSettings {
    ProtocolSettings {
        protocol: p,
        ..ProtocolSettings::default()
    }
}

fn sha(bytes: &[u8]) -> String {
    hex::encode(&Sha256::digest(bytes)[..8])
}

/// One game, reduced to its golden line.
async fn golden_line(
    script: Arc<Script>,
    protocol: Protocol,
    framework: Framework,
    judge: JudgeChoice,
    gw: Gateway,
    dir: &Path,
) -> String {
    let path = dir.join(format!("{protocol}-{framework}.jsonl"));
    let config = GameConfig {
        judge,
        game_id: format!("golden-{protocol}-{framework}"),
        seed: SEED,
        protocol: settings(protocol),
        framework,
        transcript_path: Some(path.clone()),
        ..GameConfig::default()
    };
    let title = script.title.clone();
    let r = game::play(script, config, gw)
        .await
        .unwrap_or_else(|e| panic!("{title} {protocol}/{framework}: {e}"));
    let mut transcript = String::new();
    for line in std::fs::read_to_string(&path)
        .expect("transcript written")
        .lines()
    {
        let mut v: serde_json::Value = serde_json::from_str(line).expect("event is JSON");
        v.as_object_mut().expect("event is an object").remove("ts");
        transcript.push_str(&v.to_string());
        transcript.push('\n');
    }
    let mut outcome = serde_json::to_value(&r).expect("result serialises");
    let o = outcome.as_object_mut().expect("result is an object");
    o.shift_remove("duration_seconds");
    o.shift_remove("spec");
    // What the tokenizer read depends on what the process tokenized before (the games of one test
    // run together and share a memo): a measure of work, not of behaviour.
    if let Some(u) = o.get_mut("usage").and_then(|u| u.as_object_mut()) {
        u.shift_remove("bytes_tokenized");
    }
    let winner = match &r.winner {
        Some(w) => serde_json::to_value(w).expect("winner").to_string(),
        None => "-".into(),
    };
    format!(
        "{protocol}/{framework}: transcript={} outcome={} events={} calls={} tokens={} winner={winner}",
        sha(transcript.as_bytes()),
        sha(outcome.to_string().as_bytes()),
        r.events,
        r.usage.calls,
        r.usage.prompt_tokens + r.usage.completion_tokens,
    )
}

/// Plays every pair on one script, two games at a time (the machines have two cores), and returns
/// the golden lines in pair order.
async fn golden(script: Script) -> String {
    let script = Arc::new(script);
    let gw = common::simulated_gateway().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut lines = Vec::new();
    for chunk in pairs().chunks(2) {
        let games = chunk.iter().map(|&(p, f)| {
            golden_line(
                script.clone(),
                p,
                f,
                JudgeChoice::default(),
                gw.clone(),
                dir.path(),
            )
        });
        lines.extend(futures::future::join_all(games).await);
    }
    lines.join("\n") + "\n"
}

fn example(name: &str) -> Script {
    Script::load(&common::crate_file("examples").join(name)).expect("example loads")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn golden_glasshouse() {
    insta::assert_snapshot!(golden(example("glasshouse.toml")).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn golden_night_ferry() {
    insta::assert_snapshot!(golden(example("night-ferry.toml")).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn golden_zh_teahouse() {
    insta::assert_snapshot!(golden(example("zh-teahouse.toml")).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn golden_imported_wellplay_sample() {
    let Some(d) = common::datasets() else { return };
    let s = wellplay::import(&d.join("wellplay-sample/Riverside Inn (4 people closed)"))
        .expect("WellPlay sample imports");
    insta::assert_snapshot!(golden(s).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn golden_imported_mirage_sample() {
    let Some(d) = common::datasets() else { return };
    let opts = mirage::MirageOptions {
        culprits: Vec::new(),
        truth: None,
        suspects: Vec::new(),
    };
    let s = mirage::import(&d.join("mirage-sample/The Eastern Star Cruise Ship"), &opts)
        .expect("MIRAGE sample imports");
    insta::assert_snapshot!(golden(s).await);
}

/// The LLM judge (the simulated model as judge): factual and rationale grading under ThinkThrice, ICI
/// and SCI under MIRAGE. Its sample indices follow the one scheme of `llm::SampleCounter` (game seed,
/// `judge`, the judge's own call counter), pinned here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn golden_llm_judge() {
    let script = Arc::new(example("night-ferry.toml"));
    let gw = common::simulated_gateway().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let judge = || JudgeChoice::Llm(sleuth::llm::simulated::MODEL.to_string());
    let (a, b) = tokio::join!(
        golden_line(
            script.clone(),
            Protocol::ThinkThrice,
            Framework::Ocot,
            judge(),
            gw.clone(),
            dir.path()
        ),
        golden_line(
            script.clone(),
            Protocol::Mirage,
            Framework::Mirage,
            judge(),
            gw.clone(),
            dir.path()
        ),
    );
    insta::assert_snapshot!(format!("{a}\n{b}\n"));
}
