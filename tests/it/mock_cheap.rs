//! `sleuth mock-llm --replies cheap` (issue 32) plays whole games: a sweep of
//! `examples/orchard-press.toml` under ThinkThrice, WellPlay (O-CoT) and MIRAGE against the cheap
//! mock, played by `sleuth sweep run` over HTTP (the mock in the test's process, with the config
//! `--replies cheap` gives), finishes every game, and the mock refuses nothing. Replies the games could not parse
//! would show as failed games or a refusal; the cheap replies' shapes are tested one by one in
//! `crates/mockllm/src/cheap/tests.rs`.

use crate::common::{self, Mock};

use std::path::Path;

use sleuth::mockllm::{MockConfig, Replies};
use sleuth::store::{GameState, SqliteStore, Store};

/// One game per protocol on orchard-press, kept short: one round of each phase, one MIRAGE
/// iteration, one evaluation repeat.
fn sweep_file(dir: &Path, base_url: &str) -> std::path::PathBuf {
    let file = dir.join("sweep.toml");
    let text = format!(
        r#"name = "cheap"
out = "{out}"
scripts = ["{script}"]
repeats = 1
seed = 1
concurrency = 3

[game]
model = "mock"
rounds = 1
rounds_before_clues = 1
rounds_after_clues = 1
iterations = 1

[[arms]]
protocol = "thinkthrice"

[[arms]]
protocol = "wellplay"
framework = "ocot"

[[arms]]
protocol = "mirage"
framework = "mirage"

[evaluation]
repeats = 1

[models.mock]
provider = "openai"
base_url = "{base_url}"
model = "sim-1"
api_key_env = "PATH"
"#,
        out = dir.join("run").display(),
        script = common::crate_file("examples/orchard-press.toml").display(),
    );
    std::fs::write(&file, text).expect("write the sweep file");
    file
}

#[test]
fn games_of_every_protocol_finish_against_the_cheap_mock() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let mock = Mock::start_with(MockConfig {
        replies: Replies::Cheap,
        ..MockConfig::default()
    });
    let file = sweep_file(tmp.path(), &mock.base_url());
    let out = common::run(
        common::sleuth(tmp.path())
            .args(["sweep", "run"])
            .arg(&file)
            .arg("--quiet"),
        common::CHILD_TIMEOUT,
    );
    assert!(
        out.status.success(),
        "the sweep failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let store = SqliteStore::open(&tmp.path().join("run/sleuth.db")).expect("the run's store");
    let runtime = tokio::runtime::Runtime::new().expect("a runtime for the store");
    let games = runtime.block_on(store.games("cheap")).expect("the games");
    assert_eq!(games.len(), 3, "one game per protocol: {games:?}");
    for g in &games {
        assert_eq!(
            g.state,
            GameState::Done,
            "{} did not finish: {:?}",
            g.arm_label,
            g.reason
        );
        let result = tmp.path().join("run/games").join(&g.id).join("result.json");
        let result: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&result).expect("result.json"))
                .expect("result JSON");
        let usage = &result["usage"];
        assert!(
            usage["calls"].as_u64().unwrap_or(0) > 0,
            "{}: {usage}",
            g.arm_label
        );
        // Every reply parsed the first time: no re-ask was needed.
        assert_eq!(
            usage["parse_failures"].as_u64(),
            Some(0),
            "{}: {usage}",
            g.arm_label
        );
    }

    let stats = mock.stats();
    assert!(
        stats.ok > 100,
        "the games were played at the mock: {stats:?}"
    );
    assert_eq!(stats.refused, 0, "{stats:?}");
    assert_eq!(
        stats.ok, stats.requests,
        "every request answered: {stats:?}"
    );
    assert!(
        stats.prompt_tokens > 0 && stats.completion_tokens > 0,
        "{stats:?}"
    );
}
