//! `sleuth play` against a server that answers one request at a time and queues the rest, as a
//! workstation's llama.cpp server does (issue 19, item 3). Before the adaptive limit, `play` sent a
//! game's evaluation burst all at once (its only bound was `--call-concurrency`, 16): the last requests
//! passed the timeout while queued at the server, were retried into the same queue — the abandoned
//! ones still running there — and the game failed. Now the model's limit starts small for an unknown
//! endpoint and comes down on slow answers and timeouts: the game completes, no call is retried more
//! than a couple of times, and `sleuth_llm_concurrency_limit` went down.

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sleuth::mockllm::{MockConfig, MockServer};

/// The gauge's lowest value in one scrape of `addr`, if the endpoint answers and has it.
fn limit_in_scrape(addr: SocketAddr) -> Option<f64> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(format!("GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    body.lines()
        .filter(|l| l.starts_with("sleuth_llm_concurrency_limit"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .reduce(f64::min)
}

#[test]
fn play_against_a_one_slot_queueing_server_completes_and_lowers_its_limit() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    // One request at a time, 400 ms each; the client's timeout is 2 s, so five requests queued at
    // once already time out — and the game's evaluation asks a dozen at once.
    let server = runtime
        .block_on(MockServer::start(
            "127.0.0.1:0".parse().expect("address"),
            MockConfig {
                max_concurrency: Some(1),
                queue: true,
                latency: Duration::from_millis(400),
                ..MockConfig::default()
            },
        ))
        .expect("the mock starts");
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("game");
    let metrics: SocketAddr = format!("127.0.0.1:{}", common::cluster::free_port())
        .parse()
        .expect("address");
    let mut child = common::sleuth(tmp.path())
        .arg("play")
        .arg(common::crate_file("examples/orchard-press.toml"))
        .args(common::OCOT_ONE_ROUND)
        .args([
            "--provider",
            "openai",
            "--model",
            "sim-1",
            "--api-key-env",
            "PATH",
        ])
        .arg("--base-url")
        .arg(server.base_url())
        .args(["--timeout-secs", "2", "--retry-base-ms", "50"])
        .arg("--metrics-addr")
        .arg(metrics.to_string())
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start sleuth play");

    // The gauge's lowest value while the game runs.
    let lowest = Arc::new(Mutex::new(None::<f64>));
    let done = Arc::new(AtomicBool::new(false));
    let scraper = std::thread::spawn({
        let (lowest, done) = (lowest.clone(), done.clone());
        move || {
            while !done.load(Ordering::SeqCst) {
                if let Some(v) = limit_in_scrape(metrics) {
                    let mut l = lowest.lock().expect("lock");
                    *l = Some(l.map_or(v, |x: f64| x.min(v)));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    });
    let mut stderr = child.stderr.take().expect("piped stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(300);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for the game") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the game did not finish in 300 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    done.store(true, Ordering::SeqCst);
    scraper.join().expect("scraper");
    let stderr = reader.join().unwrap_or_default();
    assert!(status.success(), "the game failed:\n{stderr}");

    // No call was retried more than a couple of times.
    let transcript = std::fs::read_to_string(out.join("transcript.jsonl")).expect("transcript");
    let (mut calls, mut retries) = (0, 0);
    for line in transcript.lines() {
        let event: serde_json::Value = serde_json::from_str(line).expect("an event");
        let Some(usage) = event.get("usage") else {
            continue;
        };
        let c = usage["calls"].as_u64().unwrap_or(0);
        let r = usage["retries"].as_u64().unwrap_or(0);
        assert!(
            r <= 2 * c.max(1),
            "an event of {c} calls had {r} retries: {line}"
        );
        calls += c;
        retries += r;
    }
    assert!(calls > 10, "the game made its calls ({calls})");
    let lowest = lowest.lock().expect("lock").expect("the gauge was scraped");
    assert!(
        lowest < 4.0,
        "the limit started at 4 and must have come down (lowest {lowest}); {calls} calls, {retries} retries"
    );
    eprintln!("{calls} calls, {retries} retries, lowest limit {lowest}");
    runtime.block_on(server.shutdown());
}
