//! Context windows (issue 19, item 4), over real HTTP against `sleuth mock-llm --context-window N`,
//! which reports its window the way vLLM does (`max_model_len` in `/v1/models`) and refuses any
//! request whose prompt and completion limit pass it.
//!
//! What a user would notice: the longest English MIRAGE script plays to the end against an 8k-window
//! model found out from the server alone (no `--context-window`), with the script summarized part by
//! part; a WellPlay game in a window too small for its memory leaves chunks out and says so in
//! `result.json`; a window too small for the rules and the script fails before a single call, naming
//! the script, the character and the sizes.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use sleuth::mockllm::{MockConfig, MockServer, MockStats};

/// A game of a long script over HTTP on 2 cores takes a while; the bound only catches a hang.
const PLAY_TIMEOUT: Duration = Duration::from_secs(600);

async fn mock(window: u64) -> MockServer {
    MockServer::start(
        "127.0.0.1:0".parse().expect("an address"),
        MockConfig {
            context_window: Some(window),
            ..MockConfig::default()
        },
    )
    .await
    .expect("the mock starts")
}

/// `sleuth play SCRIPT ARGS… --provider openai --base-url MOCK --model sim-1 --out DIR/game`; returns
/// the exit status's success, stderr and the result (if written).
async fn play(
    server: &MockServer,
    dir: &Path,
    script: &Path,
    args: &[&str],
) -> (bool, String, Option<Value>) {
    let out = dir.join("game");
    let mut cmd = common::sleuth(dir);
    cmd.env("OPENAI_API_KEY", "unused")
        .arg("play")
        .arg(script)
        .args(args)
        .args(["--provider", "openai", "--base-url", &server.base_url()])
        .args(["--model", "sim-1", "--out"])
        .arg(&out);
    let output = tokio::task::spawn_blocking(move || common::run(&mut cmd, PLAY_TIMEOUT))
        .await
        .expect("the child ran");
    let result = std::fs::read_to_string(out.join("result.json"))
        .ok()
        .map(|t| serde_json::from_str(&t).expect("result.json is JSON"));
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        result,
    )
}

/// The English MIRAGE script with the longest texts, imported into `dir`.
fn longest_mirage(dir: &Path) -> Option<PathBuf> {
    let set = common::datasets()?.join("mirage-en");
    let size = |p: &Path| -> u64 {
        std::fs::read_dir(p)
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    };
    let longest = std::fs::read_dir(&set)
        .expect("mirage-en is a folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("script.json").is_file())
        .max_by_key(|p| size(p))
        .expect("mirage-en holds scripts");
    let out = dir.join("longest.toml");
    let mut cmd = common::sleuth(dir);
    cmd.args(["import", "mirage"])
        .arg(&longest)
        .arg("--out")
        .arg(&out);
    let o = common::run(&mut cmd, common::CHILD_TIMEOUT);
    assert!(
        o.status.success(),
        "import of {}: {}",
        longest.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    Some(out)
}

fn shortened(result: &Value) -> &Value {
    &result["usage"]["shortened"]
}

fn no_request_past(stats: &MockStats, window: u64) {
    assert_eq!(stats.refused, 0, "the server refused a request: {stats:?}");
    assert!(
        stats.max_request_tokens <= window,
        "a request of {} tokens went to a {window}-token window: {stats:?}",
        stats.max_request_tokens
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_longest_mirage_script_plays_against_an_8k_window_the_server_reports() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let Some(script) = longest_mirage(dir.path()) else {
        return;
    };
    let server = mock(8192).await;
    let (ok, stderr, result) = play(
        &server,
        dir.path(),
        &script,
        &["--protocol", "mirage", "--iterations", "2"],
    )
    .await;
    assert!(ok, "the game failed: {stderr}");
    let result = result.expect("result.json");
    let s = shortened(&result);
    assert!(
        s["script_summaries"].as_u64().unwrap_or(0) > 0 || s["calls"].as_u64().unwrap_or(0) > 0,
        "a script this long cannot be played in 8k without shortening: {s}"
    );
    let transcript = std::fs::read_to_string(dir.path().join("game/transcript.jsonl"))
        .expect("transcript.jsonl");
    assert!(
        transcript.contains("\"summarize_script\"") || transcript.contains("\"of\":\"script\""),
        "the script was summarized"
    );
    no_request_past(&server.stats(), 8192);
}

/// The Chinese sets (not provided here) hold scripts of up to ~100,000 characters per character: the
/// teahouse example with every character's story stretched to that length stands in for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_of_a_hundred_thousand_chinese_characters_plays_in_8k() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut script = (*common::example_script("zh-teahouse.toml")).clone();
    for c in &mut script.characters {
        let story = c.story.trim().to_string();
        let mut long = String::new();
        let mut day = 0;
        while long.chars().count() < 100_000 {
            day += 1;
            long.push_str(&format!("第{day}段回忆：{story}\n\n"));
        }
        c.story = long;
    }
    let file = dir.path().join("long.toml");
    std::fs::write(&file, toml::to_string(&script).expect("TOML")).expect("write the script");
    let server = mock(8192).await;
    let (ok, stderr, result) = play(
        &server,
        dir.path(),
        &file,
        &["--protocol", "mirage", "--iterations", "1"],
    )
    .await;
    assert!(ok, "the game failed: {stderr}");
    let result = result.expect("result.json");
    let transcript = std::fs::read_to_string(dir.path().join("game/transcript.jsonl"))
        .expect("transcript.jsonl");
    let parts = transcript.matches("\"summarize_script\"").count();
    assert!(
        parts > 2 * script.characters.len(),
        "each script was summarized in several parts ({parts} summarizing calls): {}",
        result["usage"]
    );
    no_request_past(&server.stats(), 8192);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wellplay_game_in_a_small_window_leaves_memory_out_and_counts_it() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let script = common::crate_file("examples/orchard-press.toml");
    let server = mock(1_000_000).await;
    // First with room for everything: nothing is shortened.
    let (ok, stderr, roomy) = play(&server, dir.path(), &script, common::OCOT_ONE_ROUND).await;
    assert!(ok, "{stderr}");
    let roomy = roomy.expect("result.json");
    assert!(shortened(&roomy).is_null(), "{}", roomy["usage"]);
    let largest = server.stats().max_request_tokens;
    // Then with a window as large as the largest request: shortening aims at 90 % of it, so the
    // longest prompts must lose some of their memory.
    let window = largest.max(256);
    let small = mock(window).await;
    let (ok, stderr, result) = play(&small, dir.path(), &script, common::OCOT_ONE_ROUND).await;
    assert!(ok, "the game failed in a {window}-token window: {stderr}");
    let result = result.expect("result.json");
    let s = shortened(&result);
    assert!(s["calls"].as_u64().unwrap_or(0) > 0, "{}", result["usage"]);
    assert!(s["recalled"].as_u64().unwrap_or(0) > 0, "{s}");
    assert_eq!(
        s["script_summaries"].as_u64(),
        Some(0),
        "OCoT has no summary"
    );
    no_request_past(&small.stats(), window);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_too_small_for_the_script_fails_before_any_call() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let script = common::crate_file("examples/orchard-press.toml");
    let server = mock(1_000_000).await;
    let (ok, stderr, _) = play(
        &server,
        dir.path(),
        &script,
        &[common::OCOT_ONE_ROUND, &["--context-window", "300"]].concat(),
    )
    .await;
    assert!(!ok, "a 300-token window cannot hold the rules and a script");
    for needed in ["Orchard", "300-token context window", "tokens"] {
        assert!(stderr.contains(needed), "`{needed}` not in: {stderr}");
    }
    let players = common::example_script("orchard-press.toml");
    assert!(
        players.characters.iter().any(|c| stderr.contains(&c.name)),
        "the character is named: {stderr}"
    );
    assert_eq!(
        server.stats().requests,
        0,
        "refused before any call: {stderr}"
    );
}
