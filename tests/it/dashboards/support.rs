//! What the end-to-end dashboard tests share: a Prometheus server of the test's own, its HTTP API,
//! every panel's query and variable run through it, and the scenario's sweep (with its flaky mock
//! endpoint).

use crate::common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::promql::concrete;
use super::{label_values, queries, variables};

pub(super) fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local address").port()
}

/// A Prometheus server of our own (its own storage directory, a free port, a 1 s scrape interval),
/// stopped (by its pid) when dropped.
pub(super) struct Prometheus {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Starts `binary` in `dir` scraping `targets` (job `sleuth`) every second, and waits until it
    /// answers; a port taken meanwhile is tried again on another.
    pub(super) fn start(binary: &Path, dir: &Path, targets: &[SocketAddr]) -> Prometheus {
        std::fs::create_dir_all(dir).expect("create the Prometheus directory");
        let config = dir.join("prometheus.yml");
        let targets: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: sleuth\n    static_configs:\n      - targets: [{}]\n",
                targets.join(", ")
            ),
        )
        .expect("write prometheus.yml");
        let log = dir.join("prometheus.log");
        for attempt in 0..3 {
            let port = free_port();
            let child = Command::new(binary)
                .arg(format!("--config.file={}", config.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.join(format!("data-{attempt}")).display()
                ))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).expect("log file"))
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
            let mut prom = Prometheus {
                child,
                url: format!("http://127.0.0.1:{port}"),
                log: log.clone(),
            };
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = prom.child.try_wait() {
                    break; // exited: most likely the port was taken
                }
                let ready = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok_and(|mut s| {
                    use std::io::{Read, Write};
                    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                    let mut buf = [0u8; 12];
                    s.write_all(b"GET /-/ready HTTP/1.0\r\n\r\n").is_ok()
                        && s.read_exact(&mut buf).is_ok()
                        && buf.ends_with(b"200")
                });
                if ready {
                    return prom;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            eprintln!(
                "Prometheus did not come up on port {port}:\n{}",
                prom.log_text()
            );
        }
        panic!("Prometheus did not come up in three tries");
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until each of the `targets` scraped targets has been scraped successfully `scrapes` times
    /// since `after` (Unix seconds) and is up: the values of that moment are in, and every rate() has
    /// samples on both sides of it. (Counted, not timed: a loaded machine's Prometheus may take
    /// seconds to its first scrape.)
    pub(super) async fn wait_scraped(&self, targets: usize, after: f64, scrapes: usize) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            // `up` is 1 for a successful scrape and 0 for a failed one: their sum over the window
            // since `after` counts the successful ones.
            let window_ms = ((unix_now() - after) * 1000.0).max(1.0) as u64;
            let counted = format!(
                r#"count(sum_over_time(up{{job="sleuth"}}[{window_ms}ms]) >= {scrapes}) and count(up{{job="sleuth"}} == 1) == {targets}"#
            );
            let got = instant(self, &counted).await;
            let n = got
                .as_ref()
                .ok()
                .and_then(|v| v.first())
                .and_then(|s| s["value"][1].as_str())
                .map(str::to_string);
            if n.as_deref() == Some(targets.to_string().as_str()) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "Prometheus did not scrape the {targets} targets {scrapes} times in 120 s \
                 (`{counted}`: {got:?})\n{}",
                self.log_text()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// Now, in Unix seconds (Prometheus' clock on this machine).
pub(super) fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs_f64()
}

/// A panel that may answer with no series in an end-to-end run: dashboard file, panel title, and
/// why it is empty there (and where else it is checked).
pub(super) type MayBeEmpty = (&'static str, &'static str, &'static str);

/// Every query of every panel of `dashboards` (made concrete as Grafana would for "All" and a
/// one-hour range) and every variable, run through Prometheus' HTTP API now: what went wrong. A query
/// that fails, or answers with no series, is a problem unless `may_be_empty` names its panel; an
/// entry of `may_be_empty` that names no panel is one too (a stale list).
pub(super) async fn unanswered(
    prom: &Prometheus,
    dashboards: &[(String, Value)],
    may_be_empty: &[MayBeEmpty],
) -> Vec<String> {
    let mut problems = Vec::new();
    let qs = queries(dashboards);
    assert!(!qs.is_empty(), "no queries in {dashboards:?}");
    for (file, panel, why) in may_be_empty {
        if !qs.iter().any(|q| q.dashboard == *file && q.panel == *panel) {
            problems.push(format!(
                "{file} / {panel} is listed as may-be-empty ({why}) but has no such panel"
            ));
        }
    }
    for q in &qs {
        let expr = concrete(&q.expr);
        let allowed = may_be_empty
            .iter()
            .any(|(f, p, _)| *f == q.dashboard && *p == q.panel);
        match instant(prom, &expr).await {
            Ok(r) if !r.is_empty() => {}
            Ok(_) if allowed => {}
            Ok(_) => problems.push(format!(
                "{} / {}: no series for `{expr}`",
                q.dashboard, q.panel
            )),
            Err(e) => problems.push(format!(
                "{} / {}: `{expr}` failed: {e}",
                q.dashboard, q.panel
            )),
        }
    }
    for (file, d) in dashboards {
        for (name, query) in variables(d) {
            let (selector, label) = label_values(&query).expect("checked by the static test");
            problems.extend(variable_without_values(prom, file, &name, selector, label).await);
        }
    }
    problems
}

/// What is wrong with variable `name` of dashboard `file`, `label_values(selector, label)`, asked of
/// `prom`'s HTTP API: `None` when it has values.
pub(super) async fn variable_without_values(
    prom: &Prometheus,
    file: &str,
    name: &str,
    selector: &str,
    label: &str,
) -> Option<String> {
    let v = get_json(&format!(
        "{}/api/v1/label/{label}/values?match[]={}",
        prom.url,
        encode(selector)
    ))
    .await;
    match v {
        Ok(v) if v["data"].as_array().is_some_and(|a| !a.is_empty()) => None,
        other => Some(format!("{file}: variable {name} has no values: {other:?}")),
    }
}

/// `prometheus` (the server, from Debian's `prometheus` package beside promtool), or `None` when
/// the test may be skipped: never under CI, else only with `SLEUTH_SKIP_PROMTOOL=1`.
pub(super) fn prometheus_or_skip(what: &str) -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join("prometheus"));
    let found = on_path
        .chain(std::iter::once(PathBuf::from("/usr/bin/prometheus")))
        .find(|p| p.is_file());
    if found.is_some() {
        return found;
    }
    let how = "scripts/ensure-promtool.sh installs Debian's prometheus package, which has it";
    if common::under_ci() || std::env::var("SLEUTH_SKIP_PROMTOOL").as_deref() != Ok("1") {
        panic!(
            "{what} needs the `prometheus` server, not on PATH or at /usr/bin/prometheus: {how} \
             (outside CI, SLEUTH_SKIP_PROMTOOL=1 skips it)"
        );
    }
    common::skip_or_fail(false, &format!("{what}: no `prometheus` server"), how);
    None
}

/// Percent-encodes a query parameter.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn get_json(url: &str) -> Result<Value, String> {
    // reqwest needs the process's TLS provider even for plain HTTP (src/tls.rs).
    sleuth::tls::install_crypto_provider();
    let r = reqwest::get(url).await.map_err(|e| e.to_string())?;
    let status = r.status();
    let text = r.text().await.map_err(|e| e.to_string())?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{status}: {e}: {text}"))?;
    if v["status"] != "success" {
        return Err(format!("{status}: {text}"));
    }
    Ok(v)
}

/// The result of an instant query (a vector), or why there is none.
pub(super) async fn instant(prom: &Prometheus, expr: &str) -> Result<Vec<Value>, String> {
    let v = get_json(&format!("{}/api/v1/query?query={}", prom.url, encode(expr))).await?;
    Ok(v["data"]["result"].as_array().cloned().unwrap_or_default())
}

/// The sweep the scenario runs, priced and with a budget: two ThinkThrice arms on the simulated model
/// that differ only after the clues (so one replays the other's early calls from the cache), and a
/// MIRAGE arm on a flaky mock endpoint (429/500s retried; its first reply malformed and re-asked —
/// every MIRAGE call has a format to break).
pub(super) fn scenario_sweep(dir: &Path, mock_url: &str) -> PathBuf {
    let script = common::crate_file("examples/night-ferry.toml");
    let text = format!(
        r#"name = "dash"
out = "{out}"
scripts = ["{script}"]
repeats = 1
seed = 3
concurrency = 4
[[arms]]
protocol = "thinkthrice"
modules = "mr"
model = "sim"
rounds_before_clues = 1
rounds_after_clues = 1
[[arms]]
protocol = "thinkthrice"
modules = "mr"
model = "sim"
rounds_before_clues = 1
rounds_after_clues = 2
[[arms]]
protocol = "mirage"
framework = "mirage"
model = "flaky"
iterations = 1
[evaluation]
repeats = 1
[models.sim]
provider = "simulated"
latency_ms = 5
input_usd_per_mtok = 1.0
output_usd_per_mtok = 2.0
[models.flaky]
provider = "openai"
base_url = "{mock_url}"
model = "sim-1"
api_key_env = "PATH"
input_usd_per_mtok = 3.0
output_usd_per_mtok = 6.0
[budget]
max_usd = 1000.0
[gateway]
max_retries = 10
retry_base_ms = 1
"#,
        out = dir.join("run").display(),
        script = script.display(),
    );
    let path = dir.join("sweep.toml");
    std::fs::write(&path, text).expect("write the sweep file");
    path
}

/// The scenario's flaky mock endpoint: 429/500s now and then (retried at once), and its first reply
/// malformed (re-asked).
pub(super) async fn start_flaky_mock() -> sleuth::mockllm::MockServer {
    sleuth::mockllm::MockServer::start(
        "127.0.0.1:0".parse().expect("address"),
        sleuth::mockllm::MockConfig {
            error_rate: 0.1,
            retry_after_ms: 1,
            fault_seed: 11,
            malformed_first: 1,
            ..Default::default()
        },
    )
    .await
    .expect("start the mock LLM server")
}
