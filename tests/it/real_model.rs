//! Against a real model: llama.cpp's OpenAI-compatible server (llama-cpp-python, built by
//! `scripts/ensure-llama.sh`) serving SmolLM2-135M-Instruct, started per test by
//! `scripts/llama-server.sh` on a free port of loopback.
//!
//! This is what only a real server shows: which `response_format` it accepts, that it ignores
//! `max_completion_tokens`, that it answers one request at a time (so requests queue there and a
//! timeout can be the queue's fault), and what a small model's replies do to the parsers. The
//! assertions are on behaviour — games complete, every reply the server sent is accounted for, parse
//! failures are counted and re-asked, replies stop at the limit, no prompt passes the window — and
//! never on scores: SmolLM2-135M plays badly.
//!
//! The three regressions the first real game met (issue 19) are each pinned here:
//! 1. a structured call refused by the server (`json_schema`) falls back once, is not retried, and
//!    the fallback is remembered: only the calls in flight when the first refusal came back meet it;
//! 2. default settings against the one-slot server complete: no burst of calls time out queued at
//!    the server and burn retries;
//! 3. the completion limit is honoured: no reply is longer than `--max-tokens`.
//!
//! Sized for 2 cores: a two-player script with one question of each kind (`tests/data/tiny-study.toml`)
//! and short replies. The tests share one machine's CPU with the server, so they take turns.

use crate::common;

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

/// One server at a time: it is single-slot and CPU-bound, so parallel tests would only time each
/// other out.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The context window the server is started with: small, so that the window checks matter.
const CTX: u64 = 2048;
/// The completion limit every game sends.
const MAX_TOKENS: u64 = 48;
/// The most requests a run may send before the first structured-output refusal comes back: the
/// adaptive concurrency's start for an unknown endpoint. Each meets the refusal once; every later call
/// sends what was learnt.
const FIRST_WAVE: usize = 4;
/// How long one game may take on a loaded 2-core machine before the test gives up.
const GAME_TIMEOUT: Duration = Duration::from_secs(900);

/// A running llama.cpp server; killed when dropped.
struct LlamaServer {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

/// One request the server logged (uvicorn's access log).
#[derive(Debug)]
struct Logged {
    path: String,
    status: u16,
}

impl LlamaServer {
    /// Starts the server and waits until it answers. `None` (with a message) when llama.cpp cannot be
    /// installed here and this is not CI; under `CI=true` that is a failure.
    fn start() -> Option<LlamaServer> {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("server.log");
        let port = free_port();
        let mut child = Command::new(common::crate_file("scripts/llama-server.sh"))
            .args(["--port", &port.to_string(), "--ctx", &CTX.to_string()])
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).expect("log"))
            .stderr(std::fs::File::create(dir.path().join("start.log")).expect("log"))
            .spawn()
            .expect("run scripts/llama-server.sh");
        // The first start may build llama-cpp-python (scripts/ensure-llama.sh caches it).
        let deadline = Instant::now() + Duration::from_secs(1800);
        loop {
            if get_ok(port, "/v1/models") {
                break;
            }
            if let Some(status) = child.try_wait().expect("wait") {
                let why = std::fs::read_to_string(dir.path().join("start.log")).unwrap_or_default();
                let msg = format!("the llama.cpp server did not start ({status}):\n{why}");
                if std::env::var("CI").is_ok_and(|v| v == "true") {
                    panic!("{msg}");
                }
                eprintln!("SKIPPED (not CI): {msg}");
                return None;
            }
            assert!(
                Instant::now() < deadline,
                "the llama.cpp server did not answer in 30 min"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        Some(LlamaServer {
            child,
            port,
            log,
            _dir: dir,
        })
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Every request the server has logged, in order.
    fn requests(&self) -> Vec<Logged> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines().filter_map(parse_access_line).collect()
    }

    /// Chat completion requests, by status.
    fn chats(&self) -> (usize, Vec<u16>) {
        let chats: Vec<Logged> = self
            .requests()
            .into_iter()
            .filter(|r| r.path == "/v1/chat/completions")
            .collect();
        let ok = chats.iter().filter(|r| r.status == 200).count();
        let other = chats
            .iter()
            .filter(|r| r.status != 200)
            .map(|r| r.status)
            .collect();
        (ok, other)
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `INFO:     127.0.0.1:37310 - "POST /v1/chat/completions HTTP/1.1" 200 OK`
fn parse_access_line(line: &str) -> Option<Logged> {
    let (_, rest) = line.split_once('"')?;
    let (request, rest) = rest.split_once('"')?;
    let mut parts = request.split_whitespace();
    let _method = parts.next()?;
    let path = parts.next()?.to_string();
    let status = rest.split_whitespace().next()?.parse().ok()?;
    Some(Logged { path, status })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A plain HTTP/1.1 GET on loopback: true on a 200.
fn get_ok(port: u16, path: &str) -> bool {
    use std::io::Write;
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    buf.starts_with("HTTP/1.1 200")
}

fn tiny_script() -> PathBuf {
    common::crate_file("tests/data/tiny-study.toml")
}

/// `sleuth play` against the server with only the provider flags (and a short completion limit),
/// everything else at its default.
fn play(server: &LlamaServer, out: &Path, protocol_args: &[&str]) -> (std::process::Output, Value) {
    let mut cmd = common::sleuth(out.parent().expect("parent"));
    cmd.env("OPENAI_API_KEY", "unused")
        .arg("play")
        .arg(tiny_script())
        .args(protocol_args)
        .args(["--provider", "openai", "--base-url", &server.base_url()])
        .args([
            "--model",
            "smollm2",
            "--max-tokens",
            &MAX_TOKENS.to_string(),
            // llama-cpp-python's server does not report its window: say it, so prompts are fitted.
            "--context-window",
            &CTX.to_string(),
        ])
        .args(["--seed", "1", "--out"])
        .arg(out);
    let output = common::run(&mut cmd, GAME_TIMEOUT);
    let result = std::fs::read_to_string(out.join("result.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    (output, result)
}

fn u(v: &Value, path: &[&str]) -> u64 {
    let mut v = v;
    for p in path {
        v = &v[*p];
    }
    v.as_u64()
        .unwrap_or_else(|| panic!("{} is not a number in result.json", path.join(".")))
}

/// What every game against the server must show, whatever the protocol.
fn check_game(server: &LlamaServer, output: &std::process::Output, result: &Value, what: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{what}: the game failed against the real server:\n{stderr}\nserver log tail:\n{}",
        tail(&server.log_text(), 40)
    );
    let (ok, refused) = server.chats();
    let calls = u(result, &["usage", "calls"]);
    // Every answer the server gave is one call in the game's usage: none lost, none invented.
    assert_eq!(
        ok as u64, calls,
        "{what}: the server answered {ok} chat requests, the game's usage counts {calls} calls"
    );
    // Regression 1: the structured-output refusal is taken once, then remembered: only calls already
    // in flight when it came back meet it too.
    assert!(
        refused.len() <= FIRST_WAVE,
        "{what}: the server refused {} requests ({refused:?}); a refused format must fall back once \
         and be remembered",
        refused.len()
    );
    // Regression 2: no burst of calls timing out queued at the one-slot server.
    let retries = u(result, &["usage", "retries"]);
    assert!(
        retries <= 2,
        "{what}: {retries} retries against the one-slot server"
    );
    // Regression 3: the completion limit is honoured by the server (it reads `max_tokens`).
    let completion = u(result, &["usage", "completion_tokens"]);
    assert!(
        completion <= calls * MAX_TOKENS,
        "{what}: {completion} completion tokens in {calls} calls of at most {MAX_TOKENS}"
    );
    // No prompt passed the window: the server says so when one does.
    let log = server.log_text();
    assert!(
        !log.contains("exceed context window"),
        "{what}: a prompt exceeded the {CTX}-token window:\n{}",
        tail(&log, 20)
    );
    // Parse failures are counted and each was re-asked: a game with parse failures still completed
    // (above), and every re-ask is one of the server's answers (counted in `calls`).
    let parse_failures = u(result, &["usage", "parse_failures"]);
    eprintln!(
        "{what}: {calls} calls, {parse_failures} parse failures, {retries} retries, \
         {completion} completion tokens, {} prompt tokens, cacheable share {}, refused {refused:?}, \
         {:.0} s",
        u(result, &["usage", "prompt_tokens"]),
        result["usage"]["cacheable_share"],
        result["duration_seconds"].as_f64().unwrap_or(0.0),
    );
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn with_server(f: impl FnOnce(&LlamaServer, &Path)) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = LlamaServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    f(&server, dir.path());
}

#[test]
fn a_wellplay_game_plays_against_the_real_server() {
    with_server(|server, dir| {
        let out = dir.join("wellplay");
        let (output, result) = play(server, &out, common::OCOT_ONE_ROUND);
        check_game(server, &output, &result, "wellplay/ocot");
    });
}

#[test]
fn a_thinkthrice_game_plays_against_the_real_server() {
    with_server(|server, dir| {
        let out = dir.join("thinkthrice");
        let (output, result) = play(
            server,
            &out,
            &[
                "--protocol",
                "thinkthrice",
                "--modules",
                "none",
                "--no-initial-questioning",
                "--rounds-before-clues",
                "0",
                "--rounds-after-clues",
                "1",
            ],
        );
        check_game(server, &output, &result, "thinkthrice");
    });
}

/// MIRAGE against SmolLM2-135M: the model cannot write MIRAGE's trust and suspicion scores in any
/// readable form (no `### RESPONSE:` section and no JSON object, even after the re-asks), so the game
/// may end there. What must hold either way is the documented handling: the game completes, or it
/// fails only because a reply could not be read after its re-asks (each counted), never from a retry
/// storm, a refused setting or a timeout. A fallback for unreadable scores is open (issue 19).
#[test]
fn a_mirage_game_plays_against_the_real_server() {
    with_server(|server, dir| {
        let out = dir.join("mirage");
        let (output, result) = play(server, &out, &["--protocol", "mirage", "--iterations", "1"]);
        if output.status.success() {
            check_game(server, &output, &result, "mirage");
            return;
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("could not be parsed") && stderr.contains("after 3 attempts"),
            "mirage: the game failed for another reason than an unreadable reply:\n{stderr}"
        );
        let (ok, refused) = server.chats();
        assert!(
            ok >= 3,
            "the unreadable reply was asked three times ({ok} answers)"
        );
        assert!(
            refused.len() <= FIRST_WAVE,
            "mirage: refused requests {refused:?}"
        );
        eprintln!(
            "mirage: ended on an unreadable reply after {ok} answers: {}",
            stderr.trim()
        );
    });
}

/// The ledger's entries by source, from the run directory's store.
fn ledger_sources(run: &Path) -> Vec<sleuth::store::CallSource> {
    use sleuth::store::Store;
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let s = sleuth::store::SqliteStore::open(&run.join("sleuth.db")).expect("store");
        let mut out = Vec::new();
        for r in s.runs("real").await.expect("runs") {
            out.extend(
                s.ledger(&r.id)
                    .await
                    .expect("ledger")
                    .into_iter()
                    .map(|e| e.source),
            );
        }
        out
    })
}

/// Games of the run directory with a result.
fn results(run: &Path) -> Vec<Value> {
    std::fs::read_dir(run.join("games"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|e| std::fs::read_to_string(e.path().join("result.json")).ok())
                .filter_map(|t| serde_json::from_str(&t).ok())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_sweep_killed_midway_resumes_against_the_real_server_and_pays_nothing_twice() {
    use sleuth::store::CallSource;
    with_server(|server, dir| {
        let file = dir.join("real.toml");
        std::fs::write(
            &file,
            format!(
                r#"name = "real"
out = "run"
scripts = ["{script}"]
repeats = 2
seed = 1
concurrency = 2

[game]
protocol = "wellplay"
framework = "ocot"
rounds = 1
model = "smol"
max_tokens = {MAX_TOKENS}

[models.smol]
provider = "openai"
base_url = "{url}"
model = "smollm2"
api_key_env = "OPENAI_API_KEY"
context_window = {CTX}
"#,
                script = tiny_script().display(),
                url = server.base_url(),
            ),
        )
        .expect("write the sweep file");
        let run = dir.join("run");
        let spawn = || {
            let mut cmd = common::sleuth(dir);
            cmd.env("OPENAI_API_KEY", "unused")
                .args(["sweep", "run"])
                .arg(&file)
                .arg("--quiet")
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(dir.join("stderr.log")).expect("log"));
            cmd.spawn().expect("start sleuth sweep run")
        };

        // Kill the run without warning once it has paid for a few calls.
        let mut first = spawn();
        let deadline = Instant::now() + GAME_TIMEOUT;
        while server.chats().0 < 6 {
            assert!(
                first.try_wait().expect("wait").is_none(),
                "the sweep ended before it could be killed: {}",
                std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default()
            );
            assert!(Instant::now() < deadline, "no calls reached the server");
            std::thread::sleep(Duration::from_millis(200));
        }
        first.kill().expect("kill -9");
        first.wait().expect("reap");
        let answered_before_resume = {
            // A request in flight at the kill is still answered by the server: wait until it is idle.
            std::thread::sleep(Duration::from_secs(2));
            let mut last = server.chats().0;
            loop {
                std::thread::sleep(Duration::from_secs(3));
                let now = server.chats().0;
                if now == last {
                    break now;
                }
                last = now;
            }
        };
        let paid_before = ledger_sources(&run)
            .iter()
            .filter(|s| **s == CallSource::Live)
            .count();
        assert!(paid_before > 0, "the killed run recorded no paid call");
        // What the server answered but the killed run never recorded was in flight at the kill.
        let lost = answered_before_resume - paid_before;
        assert!(
            lost <= 4,
            "{lost} answered calls missing from the ledger after the kill"
        );

        // The rerun finishes every game; what was paid before comes from the cache.
        let status = {
            let mut second = spawn();
            let deadline = Instant::now() + GAME_TIMEOUT * 2;
            loop {
                if let Some(s) = second.try_wait().expect("wait") {
                    break s;
                }
                if Instant::now() > deadline {
                    let _ = second.kill();
                    panic!("the resumed sweep did not finish");
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        };
        assert!(
            status.success(),
            "the resumed sweep failed: {}",
            std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default()
        );
        let games = results(&run);
        assert_eq!(games.len(), 2, "both games finished once");
        let sources = ledger_sources(&run);
        let live = sources.iter().filter(|s| **s == CallSource::Live).count();
        let cached = sources.iter().filter(|s| **s == CallSource::Cache).count();
        let (answered, refused) = server.chats();
        // Every answer the server gave after the kill is one paid call in the ledger; before it, all
        // but those in flight at the kill.
        assert_eq!(
            answered - answered_before_resume,
            live - paid_before,
            "the resumed run's paid calls differ from what the server answered"
        );
        assert!(
            cached > 0,
            "nothing the killed run paid for was served from the cache"
        );
        // Each of the two processes learns the fallback once (its first wave of calls meets it).
        assert!(
            refused.len() <= 2 * FIRST_WAVE && refused.iter().all(|s| *s == 500),
            "refused requests: {refused:?}"
        );
        eprintln!(
            "sweep: {answered} answers from the server, {live} paid calls in the ledger \
             ({paid_before} before the kill, {lost} lost in flight), {cached} cache hits"
        );
    });
}
