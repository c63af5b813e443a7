//! Prompts laid out for provider prompt caching (issue 19, item 5): every game reports in
//! `result.json` how much of its prompts a provider's prefix cache could serve under OpenAI's rule
//! (`usage.cacheable_prompt_tokens`, `usage.cacheable_share`), the figure does not depend on the order
//! in which calls that run together reach the gateway, and the prompts are laid out so that most of
//! a WellPlay PLAYER* game and of a MIRAGE game is cacheable.
//!
//! With the simulated model and seed 7 (the CLI's default) on `examples/night-ferry.toml`, the layout
//! before this change gave 79.7% (WellPlay PLAYER*) and 69.6% (MIRAGE); it gives 82.3% and 75.6%.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use sleuth::agent::Framework;
use sleuth::game::{self, GameConfig, GameResult, Protocol, ProtocolSettings};
use sleuth::script::Script;

fn config(protocol: Protocol, framework: Framework, bound: usize, transcript: &Path) -> GameConfig {
    GameConfig {
        game_id: format!("prompt-cache-{protocol}-{framework}-{bound}"),
        seed: 7,
        protocol: ProtocolSettings {
            protocol,
            ..ProtocolSettings::default()
        },
        framework,
        call_concurrency: bound,
        transcript_path: Some(transcript.to_path_buf()),
        ..GameConfig::default()
    }
}

async fn play(
    script: &Arc<Script>,
    protocol: Protocol,
    framework: Framework,
    bound: usize,
    dir: &Path,
) -> GameResult {
    let path = dir.join(format!("{protocol}-{framework}-{bound}.jsonl"));
    let gw = common::simulated_gateway().await;
    let r = game::play(
        script.clone(),
        config(protocol, framework, bound, &path),
        gw.clone(),
    )
    .await
    .unwrap_or_else(|e| panic!("{protocol}/{framework} at bound {bound}: {e}"));
    gw.stop();
    r
}

fn share(r: &GameResult) -> f64 {
    r.usage
        .cacheable_share
        .unwrap_or_else(|| panic!("{}: no cacheable share in result.json", r.game_id))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn most_of_a_wellplay_player_game_and_of_a_mirage_game_is_cacheable() {
    let script = common::example_script("night-ferry.toml");
    let dir = tempfile::tempdir().expect("tempdir");
    let player = play(
        &script,
        Protocol::WellPlay,
        Framework::Player,
        16,
        dir.path(),
    )
    .await;
    let mirage = play(&script, Protocol::Mirage, Framework::Mirage, 16, dir.path()).await;
    // The goal of issue 19 is 80%; the simulated MIRAGE game stays below it (its summarization module
    // rewrites the running summary, and each rewrite breaks the shared prefix: docs/metrics.md).
    assert!(share(&player) >= 0.81, "PLAYER*: {}", share(&player));
    assert!(share(&mirage) >= 0.73, "MIRAGE: {}", share(&mirage));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_share_is_the_games_and_the_same_at_every_call_bound() {
    let script = common::example_script("night-ferry.toml");
    let dir = tempfile::tempdir().expect("tempdir");
    let one = play(
        &script,
        Protocol::WellPlay,
        Framework::Player,
        1,
        dir.path(),
    )
    .await;
    let many = play(
        &script,
        Protocol::WellPlay,
        Framework::Player,
        16,
        dir.path(),
    )
    .await;
    // Calls that run together reach the gateway in any order; the game's total does not depend on it.
    assert_eq!(
        one.usage.cacheable_prompt_tokens,
        many.usage.cacheable_prompt_tokens
    );
    assert_eq!(one.usage.cacheable_share, many.usage.cacheable_share);

    let r = &many;
    let total = r.usage.cacheable_prompt_tokens.expect("recorded");
    let by_phase = |u: &sleuth::llm::Usage| u.cacheable_prompt_tokens.expect("per phase");
    assert_eq!(
        total,
        by_phase(&r.usage_by_phase.gameplay) + by_phase(&r.usage_by_phase.evaluation)
    );
    assert!(
        total > 0 && total % 128 == 0,
        "whole 128-token blocks: {total}"
    );
    assert!(total < r.usage.prompt_tokens, "never more than was sent");
    let s = share(r);
    assert!(s > 0.0 && s < 1.0, "{s}");

    // The figure is the game's, never an event's: the transcript's usage carries none of it.
    let transcript = std::fs::read_to_string(dir.path().join("wellplay-player-16.jsonl"))
        .expect("transcript written");
    for line in transcript.lines() {
        let e: Value = serde_json::from_str(line).expect("event is JSON");
        if let Some(u) = e.get("usage") {
            assert!(u.get("cacheable_prompt_tokens").is_none(), "{line}");
        }
    }
    // And result.json names it where the issue says.
    let v = serde_json::to_value(r).expect("serialises");
    assert_eq!(v["usage"]["cacheable_prompt_tokens"], total);
    assert!(v["usage"]["cacheable_share"].is_f64());
}
