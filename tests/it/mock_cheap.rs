//! `sleuth mock-llm --replies cheap` (issue 32) plays whole games: a sweep of
//! `examples/orchard-press.toml` under ThinkThrice, WellPlay (O-CoT) and MIRAGE against the cheap
//! mock, run as the benchmark runs them (`sleuth mock-llm` and `sleuth sweep run`, two processes
//! over HTTP), finishes every game, and the mock refuses nothing. Replies the games could not parse
//! would show as failed games or a refusal; the cheap replies' shapes are tested one by one in
//! `crates/mockllm/src/cheap/tests.rs`.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use sleuth::mockllm::MockStats;
use sleuth::store::{GameState, SqliteStore, Store};

/// A `sleuth mock-llm` child process, killed when dropped.
struct MockProcess {
    child: Child,
    /// `http://127.0.0.1:PORT/v1`, as the mock printed it.
    base_url: String,
}

impl MockProcess {
    /// Starts `sleuth mock-llm --listen 127.0.0.1:0 ARGS` and reads the address it bound.
    fn start(dir: &Path, args: &[&str]) -> MockProcess {
        let mut child = common::sleuth(dir)
            .args(["mock-llm", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("sleuth mock-llm starts");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("the mock's first line");
        // Keep draining, so that nothing the mock prints later meets a closed pipe.
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        let base_url = line
            .split_once(" on ")
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in the mock's line {line:?}"))
            .to_string();
        MockProcess { child, base_url }
    }

    /// `GET /stats`, over a plain socket (the test thread blocks on children; no runtime needed).
    fn stats(&self) -> MockStats {
        let host = self
            .base_url
            .trim_start_matches("http://")
            .trim_end_matches("/v1");
        let mut s = TcpStream::connect(host).expect("connect to the mock");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("a read timeout");
        write!(
            s,
            "GET /stats HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .expect("send");
        let mut text = String::new();
        s.read_to_string(&mut text).expect("the answer");
        let body = text
            .split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_string();
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {text}"))
    }
}

impl Drop for MockProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn games_of_every_protocol_finish_against_the_cheap_mock() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let mock = MockProcess::start(tmp.path(), &["--replies", "cheap"]);
    let file = sweep_file(tmp.path(), &mock.base_url);
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
    let games = store.games("cheap").await.expect("the games");
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
