//! The Grafana dashboards (`grafana/`): every query names only metrics the code exports
//! (`telemetry::EXPORTED`), histogram suffixes only on histograms and only labels the code attaches to
//! the metric; every exported metric has a panel; the provisioning files point at the dashboards
//! folder and at the datasource the dashboards use; `promtool` parses every query; and, end to end, a
//! sweep's real `/metrics` scrape carries exactly the labels the dashboards were checked against, and a
//! real Prometheus scraping it answers every panel's query and every variable with data. The same
//! holds as an operator runs them: `sleuth sweep run --metrics-addr` for the sweep and LLM
//! dashboards, and a live cluster (Redis, a coordinator, two workers) for the cluster dashboard, each
//! scraped every second by a Prometheus of the test's own; a panel that may be empty in such a run is
//! listed with why ([`operator::SWEEP_RUN_MAY_BE_EMPTY`], [`operator::CLUSTER_MAY_BE_EMPTY`]).
//! Without the `prometheus` server (Debian's package, `scripts/ensure-promtool.sh`) these fail, or
//! outside CI are skipped with `SLEUTH_SKIP_PROMTOOL=1`.
//!
//! Where the label table comes from: the `metrics::counter!` / `gauge!` / `histogram!` call sites under
//! `src/` (read by [`code::code_labels`]), proven equal to the scrape by
//! `scrape::a_sweeps_scrape_has_the_code_labels_and_prometheus_answers_every_panel`. The cluster's
//! metrics (served by the coordinator and the workers, not by a one-node sweep) are the exception:
//! they are listed in [`NOT_IN_SCENARIO`] with their labels, which their call sites must attach
//! exactly, and the end-to-end test leaves out the panels and variables that need them. Queries may
//! also name the labels Prometheus attaches to every target ([`TARGET_LABELS`]): per-worker panels
//! group by `instance`.
//!
//! The tests, by file: [`static_checks`] reads the dashboards and provisioning files (and runs
//! `promtool`); [`scrape`] runs the scenario's sweep in process and checks its scrape; [`operator`]
//! runs `sleuth sweep run` and a live cluster. Their parts: [`code`] (the code's metrics and
//! labels), [`promql`] (enough of PromQL to check a query), [`support`] (a Prometheus of the test's
//! own, and the scenario's sweep); the dashboards' files are read here.

mod code;
mod operator;
mod promql;
mod scrape;
mod static_checks;
mod support;

use crate::common;

use std::path::PathBuf;

use serde_json::Value;

/// The datasource uid the provisioning file declares and every panel names.
const DATASOURCE_UID: &str = "sleuth-prometheus";
/// Where the provider loads dashboards from: `grafana/dashboards/` is mounted there.
const DASHBOARDS_MOUNT: &str = "/var/lib/grafana/dashboards";
/// The Prometheus URL Grafana is provisioned with (the compose service name).
const PROMETHEUS_URL: &str = "http://prometheus:9090";
/// The template variables every dashboard offers.
const REQUIRED_VARIABLES: &[&str] = &["model", "arm", "phase"];
/// Exported metrics the end-to-end scenario (a sweep on one node) does not produce, with the label
/// names they carry. Only the cluster's processes emit these: the coordinator serves
/// `sleuth_cluster_workers` and `sleuth_cluster_queue_entries` (by `state`: waiting, delivered), every
/// worker serves `sleuth_worker_capacity` and `sleuth_cluster_claimed_total`. Their queries are checked
/// statically against these labels and by promtool, and evaluated against a live cluster by
/// `a_live_cluster_answers_every_panel_of_the_cluster_dashboard`, not by the one-node scenario.
/// Where the code records such a metric, its call sites must attach exactly these labels; a metric
/// listed here may have no call site yet (the cluster's processes record them), every other exported
/// metric must have one. The endpoint fallbacks and truncated replies are not produced either: only a
/// server that refuses a setting or ignores the completion limit makes them (`sleuth mock-llm
/// --dialect llama-cpp`, tested in `tests/structured_fallback.rs`), and the scenario's is OpenAI's;
/// nor are shortened prompts, which need a model with a small context window (`tests/context_window.rs`),
/// nor the Batch API's metrics, which need a model with `batch = true` on an endpoint that has it
/// (`tests/batch_eval.rs` runs that path against mock-llm).
const NOT_IN_SCENARIO: &[(&str, &[&str])] = &[
    ("sleuth_cluster_workers", &[]),
    ("sleuth_cluster_queue_entries", &["state"]),
    ("sleuth_cluster_claimed_total", &[]),
    ("sleuth_worker_capacity", &[]),
    (
        "sleuth_llm_fallbacks_total",
        &["model", "setting", "from", "to"],
    ),
    ("sleuth_llm_truncated_replies_total", &["model"]),
    ("sleuth_llm_shortened_prompts_total", &["model", "purpose"]),
    ("sleuth_batch_lines_total", &["model", "outcome"]),
    ("sleuth_batches_submitted_total", &["model"]),
    ("sleuth_batches_open", &[]),
    ("sleuth_games_waiting_batch", &[]),
];
/// Labels Prometheus attaches to every series of a scrape target: any query may match or group by
/// them (one target per process, so `instance` tells the workers apart). They are not in a scrape.
const TARGET_LABELS: &[&str] = &["instance", "job"];

/// The labels of a metric listed in [`NOT_IN_SCENARIO`], or `None` for one the scenario produces.
fn not_in_scenario(name: &str) -> Option<&'static [&'static str]> {
    NOT_IN_SCENARIO
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, labels)| *labels)
}

// ------------------------------------------------------------------------------------------------
// The dashboards and provisioning files.

fn grafana(rel: &str) -> PathBuf {
    common::crate_file("grafana").join(rel)
}

/// Every `grafana/dashboards/*.json`, parsed, by file name.
fn dashboards() -> Vec<(String, Value)> {
    let dir = grafana("dashboards");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path.extension().is_some_and(|x| x == "json") {
            let text = std::fs::read_to_string(&path).expect("read a dashboard");
            let json: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
            let name = path.file_name().expect("file name").to_string_lossy();
            out.push((name.into_owned(), json));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(!out.is_empty(), "no dashboards in {}", dir.display());
    out
}

/// Panels of a dashboard, rows' nested panels included (collapsed rows hold theirs).
fn panels(dashboard: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for p in dashboard["panels"].as_array().into_iter().flatten() {
        out.push(p);
        for inner in p["panels"].as_array().into_iter().flatten() {
            out.push(inner);
        }
    }
    out
}

/// One PromQL query of a dashboard, with where it is.
struct Query {
    dashboard: String,
    panel: String,
    expr: String,
}

fn queries(dashboards: &[(String, Value)]) -> Vec<Query> {
    let mut out = Vec::new();
    for (file, d) in dashboards {
        for p in panels(d) {
            for t in p["targets"].as_array().into_iter().flatten() {
                out.push(Query {
                    dashboard: file.clone(),
                    panel: p["title"].as_str().unwrap_or("?").to_string(),
                    expr: t["expr"].as_str().unwrap_or("").to_string(),
                });
            }
        }
    }
    out
}

/// `label_values(METRIC_SELECTOR, LABEL)` of a variable, split.
fn label_values(query: &str) -> Option<(&str, &str)> {
    let inner = query
        .trim()
        .strip_prefix("label_values(")?
        .strip_suffix(')')?;
    let (selector, label) = inner.rsplit_once(',')?;
    Some((selector.trim(), label.trim()))
}

/// The variables of a dashboard: name and `label_values` query.
fn variables(dashboard: &Value) -> Vec<(String, String)> {
    dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| {
            let query = match &v["query"] {
                Value::String(s) => s.clone(),
                q => q["query"].as_str().unwrap_or("").to_string(),
            };
            (v["name"].as_str().unwrap_or("").to_string(), query)
        })
        .collect()
}
