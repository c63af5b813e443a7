//! End to end, in process: the scenario's sweep (simulated arms, a flaky mock endpoint, a budget)
//! played with a `/metrics` endpoint; its scrape carries exactly the labels of the code's call sites,
//! and a real Prometheus scraping it answers every panel's query and every variable with data.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sleuth::telemetry::EXPORTED;

use super::code::{code_labels, kind_of};
use super::promql::{concrete, parse};
use super::support::{
    free_port, instant, prometheus_or_skip, scenario_sweep, start_flaky_mock, unix_now,
    variable_without_values, Prometheus,
};
use super::{dashboards, label_values, not_in_scenario, queries, variables};

/// The families of a scrape: TYPE, and the label names of its samples (`le` of buckets left out).
fn scrape_families(text: &str) -> BTreeMap<String, (String, BTreeSet<String>)> {
    let mut out: BTreeMap<String, (String, BTreeSet<String>)> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("a TYPE line");
            out.entry(name.to_string()).or_default().0 = kind.to_string();
        }
    }
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let series = line.rsplit_once(' ').map_or(line, |(s, _)| s);
        let (name, labels) = series.split_once('{').unwrap_or((series, "}"));
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|b| out.get(*b).is_some_and(|(k, _)| k == "histogram"))
            })
            .unwrap_or(name);
        let entry = out.entry(family.to_string()).or_default();
        let labels = labels.strip_suffix('}').unwrap_or(labels);
        // sleuth's label values hold no `,` or `"` (low-cardinality names).
        for kv in labels.split(',').filter(|kv| !kv.is_empty()) {
            let (k, _) = kv.split_once('=').expect("label=value");
            if k != "le" {
                entry.1.insert(k.to_string());
            }
        }
    }
    out
}

/// Restarts a node's gateway once (as a crash would), so the restart counter exists.
async fn restart_a_gateway() {
    use sleuth::llm::{GatewayConfig, GatewayParts, GatewayState, Pricing, Route, Router};
    let state = GatewayState::new(GatewayParts {
        router: Router::single(Route::new(
            Arc::new(sleuth::llm::SimulatedProvider::default()),
            None,
        )),
        pricing: Pricing::default(),
        config: GatewayConfig::default(),
        cache: None,
        budget: None,
        ledger: None,
        shared: None,
        batch: None,
    });
    let node = sleuth::sweep::node::Node::start(state, "simulated")
        .await
        .expect("start a node");
    node.gateway.crash();
    let deadline = Instant::now() + Duration::from_secs(30);
    while sleuth::sweep::node::restarts(&node.actor).await < 1 {
        assert!(
            Instant::now() < deadline,
            "the crashed gateway was not restarted"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    node.actor.stop(None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweeps_scrape_has_the_code_labels_and_prometheus_answers_every_panel() {
    let code = code_labels();
    let tmp = tempfile::tempdir().expect("temp dir");
    let metrics_addr: SocketAddr = format!("127.0.0.1:{}", free_port())
        .parse()
        .expect("address");
    sleuth::telemetry::serve_metrics(metrics_addr).expect("serve metrics");

    run_the_scenario(tmp.path()).await;
    restart_a_gateway().await;

    let url = format!("http://{metrics_addr}/metrics");
    sleuth::tls::install_crypto_provider();
    let text = reqwest::get(&url)
        .await
        .unwrap_or_else(|e| panic!("cannot scrape {url}: {e}"))
        .text()
        .await
        .expect("read the scrape");
    let families = scrape_families(&text);
    assert_the_scrape_has_the_code_labels(&families, &code, &text);

    // A real Prometheus scrapes the endpoint and answers every query of every panel.
    let Some(binary) = prometheus_or_skip("the Prometheus evaluation of the dashboards") else {
        return;
    };
    let prom = Prometheus::start(&binary, &tmp.path().join("prometheus"), &[metrics_addr]);
    // Three scrapes in: every rate() has two samples in its window.
    prom.wait_scraped(1, unix_now(), 3).await;
    assert_eq!(
        instant(&prom, r#"up{job="sleuth"}"#)
            .await
            .expect("query up")[0]["value"][1],
        "1",
        "Prometheus should reach the endpoint"
    );
    prometheus_answers_every_panel(&prom, &families).await;
}

/// Plays the scenario's sweep in this process (its metrics go to this process's endpoint) against
/// the flaky mock endpoint: every game finishes, and calls were both replayed and retried.
async fn run_the_scenario(dir: &Path) {
    let mock = start_flaky_mock().await;
    let file = scenario_sweep(dir, &mock.base_url());
    let report = sleuth::sweep::run(
        &file,
        sleuth::sweep::RunOptions {
            progress: false,
            ..Default::default()
        },
    )
    .await
    .expect("the sweep runs");
    mock.shutdown().await;
    assert_eq!(
        report.counts.get(sleuth::store::GameState::Done),
        3,
        "every game of the scenario should finish: {report:?}"
    );
    assert!(
        report.cache_hits > 0,
        "the scenario should replay calls: {report:?}"
    );
    assert!(
        report.retries > 0,
        "the scenario should retry calls: {report:?}"
    );
}

/// The scrape has every exported metric, of its kind, with exactly the labels of its call sites.
fn assert_the_scrape_has_the_code_labels(
    families: &BTreeMap<String, (String, BTreeSet<String>)>,
    code: &BTreeMap<String, BTreeSet<String>>,
    text: &str,
) {
    let mut problems = Vec::new();
    for (name, kind) in EXPORTED {
        let Some((scraped_kind, labels)) = families.get(*name) else {
            if not_in_scenario(name).is_none() {
                problems.push(format!(
                    "{name} is not in the scenario's scrape (make the scenario produce it, or list it in NOT_IN_SCENARIO)"
                ));
            }
            continue;
        };
        if scraped_kind != kind.as_str() {
            problems.push(format!(
                "{name}: TYPE {scraped_kind} in the scrape, {} in EXPORTED",
                kind.as_str()
            ));
        }
        let expected = code.get(*name).cloned().unwrap_or_default();
        if *labels != expected {
            problems.push(format!(
                "{name}: labels {labels:?} in the scrape, {expected:?} at its call sites"
            ));
        }
    }
    for name in families.keys().filter(|n| n.starts_with("sleuth_")) {
        if kind_of(name).is_none() {
            problems.push(format!(
                "{name} is in the scrape but not in telemetry::EXPORTED"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\nscrape:\n{text}",
        problems.join("\n")
    );
}

/// Every query of every panel and every variable has data in `prom`, but for those that need a
/// metric the scenario does not produce (the cluster's), which are left out.
async fn prometheus_answers_every_panel(
    prom: &Prometheus,
    families: &BTreeMap<String, (String, BTreeSet<String>)>,
) {
    // Queries and variables that need a metric the scenario does not produce (the cluster's) are
    // left out here; the static tests and promtool check them.
    let unproduced = |expr: &str| -> Vec<String> {
        parse(expr)
            .map(|p| p.selectors)
            .unwrap_or_default()
            .into_iter()
            .map(|s| s.metric)
            .filter(|m| not_in_scenario(m).is_some() && !families.contains_key(m))
            .collect()
    };
    let dashboards = dashboards();
    let mut empty = Vec::new();
    let mut left_out = Vec::new();
    for q in queries(&dashboards) {
        let missing = unproduced(&q.expr);
        if !missing.is_empty() {
            left_out.push(format!("{} / {} ({missing:?})", q.dashboard, q.panel));
            continue;
        }
        let expr = concrete(&q.expr);
        match instant(prom, &expr).await {
            Ok(r) if !r.is_empty() => {}
            Ok(_) => empty.push(format!(
                "{} / {}: no data for `{expr}`",
                q.dashboard, q.panel
            )),
            Err(e) => empty.push(format!(
                "{} / {}: `{expr}` failed: {e}",
                q.dashboard, q.panel
            )),
        }
    }
    for (file, d) in &dashboards {
        for (name, query) in variables(d) {
            let (selector, label) = label_values(&query).expect("checked by the static test");
            let missing = unproduced(selector);
            if !missing.is_empty() {
                left_out.push(format!("{file}: variable {name} ({missing:?})"));
                continue;
            }
            empty.extend(variable_without_values(prom, file, &name, selector, label).await);
        }
    }
    assert!(
        empty.is_empty(),
        "panels or variables without data after a sweep:\n{}",
        empty.join("\n")
    );
    // Only what needs the cluster's metrics was left out, and the rest was checked.
    eprintln!(
        "left out of the end-to-end evaluation (cluster metrics, not in a one-node sweep): {}",
        left_out.join("; ")
    );
    assert!(
        left_out.len() < queries(&dashboards).len(),
        "every query was left out"
    );
}
