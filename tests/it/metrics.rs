//! The Prometheus endpoint of `sleuth play --metrics-addr`: after a short game it serves every metric
//! the game must have produced, with help texts, in a format `promtool` accepts.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use common::{find_promtool, night_ferry, sleuth, CHILD_TIMEOUT};

/// Metric families the game must have produced, and a sample name of each to look for.
const REQUIRED: &[(&str, &str)] = &[
    ("sleuth_llm_calls_total", "sleuth_llm_calls_total"),
    (
        "sleuth_llm_request_duration_seconds",
        "sleuth_llm_request_duration_seconds_bucket",
    ),
    ("sleuth_llm_tokens_total", "sleuth_llm_tokens_total"),
    ("sleuth_games_total", "sleuth_games_total"),
    (
        "sleuth_game_stage_duration_seconds",
        "sleuth_game_stage_duration_seconds_bucket",
    ),
    ("sleuth_memory_records_total", "sleuth_memory_records_total"),
];

/// A free TCP port on 127.0.0.1 (bound, read, released).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local address").port()
}

/// One sample line of the exposition format: name, labels, value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parses sample lines (enough of the text format for sleuth's labels, which hold no `,` or `"`).
fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (series, value) = l
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("malformed sample line: {l}"));
            let value: f64 = value
                .parse()
                .unwrap_or_else(|e| panic!("bad value in `{l}`: {e}"));
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => {
                    let inner = rest
                        .strip_suffix('}')
                        .unwrap_or_else(|| panic!("unclosed labels in `{l}`"));
                    let labels = inner
                        .split(',')
                        .filter(|kv| !kv.is_empty())
                        .map(|kv| {
                            let (k, v) = kv
                                .split_once('=')
                                .unwrap_or_else(|| panic!("bad label `{kv}` in `{l}`"));
                            (k.to_string(), v.trim_matches('"').to_string())
                        })
                        .collect();
                    (name.to_string(), labels)
                }
                None => (series.to_string(), BTreeMap::new()),
            };
            Sample {
                name,
                labels,
                value,
            }
        })
        .collect()
}

fn sum(samples: &[Sample], name: &str, label: Option<(&str, &str)>) -> f64 {
    samples
        .iter()
        .filter(|s| s.name == name)
        .filter(|s| label.is_none_or(|(k, v)| s.labels.get(k).map(String::as_str) == Some(v)))
        .map(|s| s.value)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_endpoint_serves_the_games_metrics() {
    let tmp = tempfile::tempdir().expect("create a temporary directory");
    let out_dir = tmp.path().join("run");
    let text = play_and_scrape(tmp.path(), &out_dir).await;
    every_family_has_its_help_and_a_sample(&text);
    the_counters_agree_with_the_result(&text, &out_dir);
    promtool_accepts_the_scrape(tmp.path(), &text);
}

/// Plays a short game with `sleuth play --metrics-addr` in `tmp` (its run directory `out_dir`),
/// scrapes its endpoint once the game is over, and stops it: the scrape.
async fn play_and_scrape(tmp: &Path, out_dir: &Path) -> String {
    let port = free_port();
    let mut cmd = sleuth(tmp);
    // It lingers 60 s after the game (the test kills it once scraped): on a loaded machine the scrape
    // could come after a 5 s linger had ended.
    cmd.arg("play")
        .arg(night_ferry())
        .args(["--modules", "mr", "--rounds-before-clues", "1"])
        .args(["--rounds-after-clues", "1", "--metrics-addr"])
        .arg(format!("127.0.0.1:{port}"))
        .args(["--linger-secs", "60", "--out"])
        .arg(out_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = tokio::process::Command::from(cmd)
        .kill_on_drop(true)
        .spawn()
        .expect("start sleuth play");
    let mut stderr_pipe = child.stderr.take().expect("piped stderr");
    let stderr = tokio::spawn(async move {
        let mut s = String::new();
        let _ = stderr_pipe.read_to_string(&mut s).await;
        s
    });

    // Wait for the summary: the game is over, its metrics are recorded, and the process lingers.
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let mut stdout = String::new();
    let finished = tokio::time::timeout(CHILD_TIMEOUT, async {
        while let Some(line) = lines.next_line().await.expect("read stdout") {
            stdout.push_str(&line);
            stdout.push('\n');
            if line.starts_with("Wrote") {
                return true;
            }
        }
        false
    })
    .await;
    if finished != Ok(true) {
        let _ = child.kill().await;
        let status = child.wait().await.expect("wait for sleuth play");
        let stderr = stderr.await.unwrap_or_default();
        panic!(
            "the game did not print its summary ({}; status {status})\nstdout:\n{stdout}\nstderr:\n{stderr}",
            if finished.is_err() { "timed out" } else { "stdout closed" }
        );
    }

    let url = format!("http://127.0.0.1:{port}/metrics");
    // reqwest needs the process's TLS provider even for plain HTTP (src/tls.rs).
    sleuth::tls::install_crypto_provider();
    let response = reqwest::get(&url)
        .await
        .unwrap_or_else(|e| panic!("cannot scrape {url}: {e}"));
    assert!(
        response.status().is_success(),
        "{url} answered {}",
        response.status()
    );
    let text = response.text().await.expect("read the scrape");

    // Kill the lingering child before asserting, so a failure does not leave it running.
    if child.try_wait().expect("poll sleuth play").is_none() {
        let _ = child.kill().await;
    }
    let _ = child.wait().await;
    drop(stderr);
    text
}

/// Every family of [`REQUIRED`] has its `# HELP` line and a sample in the scrape.
fn every_family_has_its_help_and_a_sample(text: &str) {
    for (family, sample) in REQUIRED {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("# HELP {family} "))),
            "no `# HELP {family}` line in the scrape:\n{text}"
        );
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("{sample}{{"))
                    || l.starts_with(&format!("{sample} "))),
            "no `{sample}` sample in the scrape:\n{text}"
        );
    }
}

/// The scrape counts the one game with the outcome `out_dir/result.json` reports, and the calls,
/// tokens and memory records its usage accounts.
fn the_counters_agree_with_the_result(text: &str, out_dir: &Path) {
    let samples = samples(text);
    let result: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("result.json")).expect("result.json was written"),
    )
    .expect("result.json is JSON");
    let winner = result["winner"].as_str().expect("result.json winner");

    // One game finished, with the outcome result.json reports.
    let games: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.name == "sleuth_games_total")
        .filter(|s| {
            matches!(
                s.labels.get("outcome").map(String::as_str),
                Some("civilians" | "murderer")
            )
        })
        .collect();
    assert_eq!(
        games.len(),
        1,
        "one sleuth_games_total series with outcome civilians or murderer expected: {games:?}"
    );
    assert_eq!(games[0].value, 1.0, "one game was played: {games:?}");
    assert_eq!(
        games[0].labels.get("outcome").map(String::as_str),
        Some(winner),
        "the game's outcome label should be result.json's winner"
    );
    assert_eq!(
        sum(&samples, "sleuth_games_total", Some(("outcome", "failed"))),
        0.0,
        "no game failed"
    );

    // The counters agree with the usage result.json accounts.
    let usage = &result["usage"];
    assert_eq!(
        sum(&samples, "sleuth_llm_calls_total", None),
        usage["calls"].as_f64().expect("usage.calls"),
        "sleuth_llm_calls_total should add up to result.json usage.calls"
    );
    for (kind, key) in [
        ("prompt", "prompt_tokens"),
        ("completion", "completion_tokens"),
    ] {
        assert_eq!(
            sum(&samples, "sleuth_llm_tokens_total", Some(("kind", kind))),
            usage[key].as_f64().expect("usage tokens"),
            "sleuth_llm_tokens_total{{kind=\"{kind}\"}} should add up to result.json usage.{key}"
        );
    }
    assert!(
        sum(&samples, "sleuth_memory_records_total", None) > 0.0,
        "the MR module should have stored memory records"
    );
}

/// promtool's own parser and linter accept the scrape (written into `tmp`).
fn promtool_accepts_the_scrape(tmp: &Path, text: &str) {
    // promtool's own parser and linter.
    let scrape = tmp.join("scrape.prom");
    std::fs::write(&scrape, text).expect("write the scrape");
    match find_promtool() {
        Some(promtool) => {
            let out = std::process::Command::new(&promtool)
                .args(["check", "metrics"])
                .stdin(std::fs::File::open(&scrape).expect("open the scrape"))
                .output()
                .unwrap_or_else(|e| panic!("cannot run {}: {e}", promtool.display()));
            assert!(
                out.status.success(),
                "`promtool check metrics` refused the scrape ({}):\n{}{}\nscrape:\n{text}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        None if std::env::var("SLEUTH_SKIP_PROMTOOL").as_deref() == Ok("1") => {
            eprintln!(
                "skipped promtool check: promtool not found and SLEUTH_SKIP_PROMTOOL=1 \
                 (run scripts/ensure-promtool.sh to install it)"
            );
        }
        None => panic!(
            "promtool not found on PATH or at /usr/bin/promtool: run scripts/ensure-promtool.sh \
             to install it (or set SLEUTH_SKIP_PROMTOOL=1 to skip this check)"
        ),
    }
}
