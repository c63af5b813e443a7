//! End to end, as an operator runs them: `sleuth sweep run --metrics-addr` for the sweep and LLM
//! dashboards, and a live cluster (Redis, a coordinator, two workers) for the cluster dashboard, each
//! scraped by a real Prometheus, and every panel of their dashboards queried through its HTTP API.

use crate::common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::dashboards;
use super::support::{
    free_port, prometheus_or_skip, scenario_sweep, start_flaky_mock, unanswered, unix_now,
    MayBeEmpty, Prometheus,
};

/// Panels of the sweep and LLM dashboards with no series after a healthy `sleuth sweep run`.
pub(super) const SWEEP_RUN_MAY_BE_EMPTY: &[MayBeEmpty] = &[
    (
        "sleuth-sweep.json",
        "Games waiting on a batch, open batches",
        "needs a model with `batch = true` on an endpoint with the Batch API; this run's evaluation is \
         live (tests/batch_eval.rs runs batch evaluation against mock-llm)",
    ),
    (
        "sleuth-sweep.json",
        "Batch lines per second by outcome",
        "needs a model with `batch = true` on an endpoint with the Batch API; this run's evaluation is \
         live (tests/batch_eval.rs runs batch evaluation against mock-llm)",
    ),
    (
        "sleuth-sweep.json",
        "Gateway restarts",
        "counts restarts of a crashed gateway, and a healthy run has none; \
         a_sweeps_scrape_has_the_code_labels_and_prometheus_answers_every_panel crashes one in process \
         and queries this panel",
    ),
    (
        "sleuth-llm.json",
        "Endpoint fallbacks in range",
        "counts settings an endpoint refused (json_schema, a limit field); this run's mock accepts \
         them all (tests/structured_fallback.rs tests the fallbacks against a mock in llama.cpp's \
         dialect, and tests/real_model.rs against llama.cpp itself)",
    ),
    (
        "sleuth-llm.json",
        "Prompts shortened to fit the context window per second",
        "counts prompts shortened to fit a model's context window; this run's model has none \
         (tests/context_window.rs plays games in windows that need it)",
    ),
];

/// Panels of the cluster dashboard with no series after a healthy cluster sweep: none. Every worker
/// exports its claims counter from the start (at 0), so even "Claims" answers without a silent
/// worker.
pub(super) const CLUSTER_MAY_BE_EMPTY: &[MayBeEmpty] = &[];

/// The dashboards whose file name contains `part`.
fn dashboards_named(part: &str) -> Vec<(String, Value)> {
    let picked: Vec<_> = dashboards()
        .into_iter()
        .filter(|(f, _)| f.contains(part))
        .collect();
    assert!(!picked.is_empty(), "no grafana/dashboards/*{part}*.json");
    picked
}

/// A child process killed when dropped (a lingering `sleuth sweep run`).
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The sweep dashboard (and the LLM one, which a one-node sweep also feeds) against `sleuth sweep
/// run --metrics-addr`: the scenario's sweep (simulated arms, a flaky mock endpoint, a budget) run by
/// the binary, scraped every second by a real Prometheus; once it has ended and been scraped three
/// more times (it lingers), every panel's query and every variable has data, but for the panels
/// listed in [`SWEEP_RUN_MAY_BE_EMPTY`] with why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sleuth_sweep_run_answers_every_panel_of_the_sweep_dashboards() {
    let Some(binary) = prometheus_or_skip("the sweep dashboards against `sleuth sweep run`") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let mock = start_flaky_mock().await;
    let file = scenario_sweep(tmp.path(), &mock.base_url());
    let metrics_addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let prom = Prometheus::start(&binary, &tmp.path().join("prometheus"), &[metrics_addr]);

    let (stdout, stderr) = (tmp.path().join("stdout.log"), tmp.path().join("stderr.log"));
    let mut cmd = common::sleuth(tmp.path());
    cmd.args(["sweep", "run"])
        .arg(&file)
        .args(["--quiet", "--linger-secs", "600", "--metrics-addr"])
        .arg(metrics_addr.to_string())
        .stdout(std::fs::File::create(&stdout).expect("log"))
        .stderr(std::fs::File::create(&stderr).expect("log"));
    let mut child = KillOnDrop(cmd.spawn().expect("start sleuth sweep run"));
    // Its summary says the sweep has ended (its metrics are final); it lingers, serving them.
    let deadline = Instant::now() + common::CHILD_TIMEOUT;
    let summary = loop {
        let out = std::fs::read_to_string(&stdout).unwrap_or_default();
        if out.contains("this run:") {
            break out;
        }
        if let Ok(Some(status)) = child.0.try_wait() {
            panic!(
                "sleuth sweep run exited ({status}) before its summary:\n{out}\n{}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            );
        }
        assert!(
            Instant::now() < deadline,
            "sleuth sweep run did not end in {:?}:\n{}",
            common::CHILD_TIMEOUT,
            std::fs::read_to_string(&stderr).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(summary.contains("3 done, 0 failed"), "{summary}");
    prom.wait_scraped(1, unix_now(), 3).await;

    let problems = unanswered(
        &prom,
        &dashboards_named("sweep")
            .into_iter()
            .chain(dashboards_named("llm"))
            .collect::<Vec<_>>(),
        SWEEP_RUN_MAY_BE_EMPTY,
    )
    .await;
    drop(child);
    mock.shutdown().await;
    assert!(
        problems.is_empty(),
        "panels or variables without data after `sleuth sweep run`:\n{}",
        problems.join("\n")
    );
}

/// A sweep file for the cluster: two ThinkThrice arms on the simulated model (priced, so spending
/// shows) that differ only in their rounds after the clues (`after`), `repeats` seeds of one script.
/// Sweeps whose arms differ share the calls before the clues (a game's id is its spec's, so the same
/// arm in another sweep would be a game already done, not played again).
fn cluster_sweep(dir: &Path, name: &str, repeats: u32, after: [u32; 2]) -> PathBuf {
    let text = format!(
        r#"name = "{name}"
out = "{out}"
scripts = ["{script}"]
repeats = {repeats}
seed = 5
concurrency = 4
[[arms]]
protocol = "thinkthrice"
modules = "mr"
model = "sim"
rounds_before_clues = 1
rounds_after_clues = {a}
[[arms]]
protocol = "thinkthrice"
modules = "mr"
model = "sim"
rounds_before_clues = 1
rounds_after_clues = {b}
[evaluation]
repeats = 1
[models.sim]
provider = "simulated"
latency_ms = 20
input_usd_per_mtok = 1.0
output_usd_per_mtok = 2.0
[budget]
max_usd = 1000.0
"#,
        out = dir.join("local").join(name).display(),
        script = common::crate_file("examples/night-ferry.toml").display(),
        a = after[0],
        b = after[1],
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).expect("write the sweep file");
    path
}

/// The cluster dashboard against a live cluster: Redis, `sleuth coordinator` and two `sleuth
/// worker`s with `--metrics-addr`, all three scraped every second by a real Prometheus, play a sweep
/// on the simulated model and then one whose arms play more rounds after the clues (the calls before
/// them answered from the shared cache, so the cache panels have hits). Every panel's query and every variable of
/// `grafana/dashboards/*cluster*.json` then has data, but for [`CLUSTER_MAY_BE_EMPTY`].
#[test]
fn a_live_cluster_answers_every_panel_of_the_cluster_dashboard() {
    use common::cluster::{Cluster, Options};
    let Some(binary) = prometheus_or_skip("the cluster dashboard against a live cluster") else {
        return;
    };
    let Some(c) = Cluster::start(Options {
        workers: 2,
        capacity: 2,
        metrics: true,
        ..Options::default()
    }) else {
        return;
    };
    let targets: Vec<SocketAddr> = c
        .coordinator_metrics
        .iter()
        .chain(&c.worker_metrics)
        .copied()
        .collect();
    assert_eq!(
        targets.len(),
        3,
        "the coordinator and two workers serve /metrics"
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let prom = Prometheus::start(&binary, &c.path("prometheus"), &targets);
    rt.block_on(prom.wait_scraped(targets.len(), unix_now(), 1));

    for (name, after) in [("first", [1, 2]), ("longer", [3, 4])] {
        let repeats = 2;
        let id = c.submit(&cluster_sweep(c.dir.path(), name, repeats, after));
        let p = c.wait_ended(&id);
        assert_eq!(
            (p.status.as_str(), p.done, p.failed),
            ("finished", 2 * u64::from(repeats), 0),
            "{p:?}"
        );
        if name == "longer" {
            assert!(
                p.cache_hits > 0,
                "the second sweep replays the first's calls: {p:?}"
            );
        }
    }
    rt.block_on(prom.wait_scraped(targets.len(), unix_now(), 3));
    let problems = rt.block_on(unanswered(
        &prom,
        &dashboards_named("cluster"),
        CLUSTER_MAY_BE_EMPTY,
    ));
    assert!(
        problems.is_empty(),
        "panels or variables of the cluster dashboard without data after a cluster sweep:\n{}",
        problems.join("\n")
    );
}
