//! The static checks of the dashboards: every query names only metrics the code exports, with
//! histogram suffixes only on histograms and only labels the code attaches; every exported metric has a
//! panel; the provisioning files point at the dashboards folder and at their datasource; `promtool`
//! parses every query; and the query checker itself catches what it should.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use sleuth::telemetry::EXPORTED;

use super::code::code_labels;
use super::promql::{allowed_labels, check_query, concrete, parse};
use super::{
    dashboards, grafana, label_values, panels, queries, variables, DASHBOARDS_MOUNT,
    DATASOURCE_UID, PROMETHEUS_URL, REQUIRED_VARIABLES,
};

/// `key: value` pairs of a small YAML file (one mapping per line, list dashes and comments ignored):
/// enough for the provisioning files, which have no nested lists or multi-line values.
fn yaml_pairs(path: &Path) -> Vec<(String, String)> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    text.lines()
        .map(|l| l.split(" #").next().unwrap_or(l).trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.trim_start_matches("- "))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| {
            let v = v.trim().trim_matches('"').trim_matches('\'');
            (k.trim().to_string(), v.to_string())
        })
        .collect()
}

fn yaml_get<'a>(pairs: &'a [(String, String)], key: &str) -> Vec<&'a str> {
    pairs
        .iter()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .collect()
}

#[test]
fn dashboards_query_only_what_the_code_exports() {
    let code = code_labels();
    let mut problems = Vec::new();
    let mut uids = BTreeSet::new();
    for (file, d) in dashboards() {
        let at = |panel: &str, what: String| format!("{file}, panel \"{panel}\": {what}");
        let schema = d["schemaVersion"].as_u64().unwrap_or(0);
        if schema < 38 {
            problems.push(format!("{file}: schemaVersion {schema} < 38 (Grafana 10)"));
        }
        let uid = d["uid"].as_str().unwrap_or("");
        if uid.is_empty() || !uids.insert(uid.to_string()) {
            problems.push(format!(
                "{file}: missing or duplicate dashboard uid `{uid}`"
            ));
        }
        if d["title"].as_str().unwrap_or("").is_empty() {
            problems.push(format!("{file}: no title"));
        }
        let vars = variables(&d);
        let defined: BTreeSet<String> = vars.iter().map(|(n, _)| n.clone()).collect();
        for v in REQUIRED_VARIABLES {
            if !defined.contains(*v) {
                problems.push(format!("{file}: no `{v}` template variable"));
            }
        }
        for var in d["templating"]["list"].as_array().into_iter().flatten() {
            let name = var["name"].as_str().unwrap_or("?");
            if var["datasource"]["uid"] != DATASOURCE_UID {
                problems.push(format!(
                    "{file}: variable {name} does not use datasource {DATASOURCE_UID}"
                ));
            }
        }
        for (name, query) in &vars {
            let Some((selector, label)) = label_values(query) else {
                problems.push(format!(
                    "{file}: variable {name} is not label_values(metric, label): `{query}`"
                ));
                continue;
            };
            match parse(selector) {
                Ok(p) if p.selectors.len() == 1 => {
                    let allowed = allowed_labels(&p.selectors[0], &code);
                    if !allowed.contains(label) {
                        problems.push(format!(
                            "{file}: variable {name}: {} has no label `{label}` (the code attaches {allowed:?})",
                            p.selectors[0].metric
                        ));
                    }
                }
                Ok(_) => problems.push(format!("{file}: variable {name}: one metric expected")),
                Err(e) => problems.push(format!("{file}: variable {name}: {e}")),
            }
        }

        let mut ids = BTreeSet::new();
        for p in panels(&d) {
            let title = p["title"].as_str().unwrap_or("");
            let kind = p["type"].as_str().unwrap_or("");
            if title.is_empty() {
                problems.push(format!("{file}: a {kind} panel without a title"));
            }
            if !ids.insert(p["id"].as_u64().unwrap_or(0)) {
                problems.push(at(title, format!("duplicate or missing id {}", p["id"])));
            }
            let g = &p["gridPos"];
            let (x, w) = (g["x"].as_u64().unwrap_or(99), g["w"].as_u64().unwrap_or(99));
            if x + w > 24 || g["h"].as_u64().unwrap_or(0) == 0 {
                problems.push(at(title, format!("gridPos {g} does not fit 24 columns")));
            }
            if kind == "row" {
                continue;
            }
            if p["description"].as_str().unwrap_or("").is_empty() {
                problems.push(at(title, "no description".into()));
            }
            if p["datasource"]["uid"] != DATASOURCE_UID {
                problems.push(at(title, format!("datasource is not {DATASOURCE_UID}")));
            }
            let targets = p["targets"].as_array().cloned().unwrap_or_default();
            if targets.is_empty() {
                problems.push(at(title, "no targets".into()));
            }
            for t in &targets {
                if t["datasource"]["uid"] != DATASOURCE_UID {
                    problems.push(at(
                        title,
                        format!("a target's datasource is not {DATASOURCE_UID}"),
                    ));
                }
                let expr = t["expr"].as_str().unwrap_or("");
                let legend = t["legendFormat"].as_str().unwrap_or("");
                for e in check_query(expr, legend, &defined, &code) {
                    problems.push(at(title, format!("{e}\n    in `{expr}`")));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_exported_metric_has_a_panel() {
    let dashboards = dashboards();
    let mut used = BTreeSet::new();
    for q in queries(&dashboards) {
        if let Ok(p) = parse(&q.expr) {
            used.extend(p.selectors.into_iter().map(|s| s.metric));
        }
    }
    let missing: Vec<&str> = EXPORTED
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| !used.contains(*n))
        .collect();
    assert!(
        missing.is_empty(),
        "exported metrics no dashboard panel queries (add a panel to grafana/dashboards/): {missing:?}"
    );
}

#[test]
fn provisioning_points_at_the_dashboards_and_their_datasource() {
    let ds = yaml_pairs(&grafana("provisioning/datasources/prometheus.yaml"));
    assert_eq!(yaml_get(&ds, "apiVersion"), ["1"]);
    assert_eq!(yaml_get(&ds, "type"), ["prometheus"], "{ds:?}");
    assert_eq!(yaml_get(&ds, "uid"), [DATASOURCE_UID], "{ds:?}");
    assert_eq!(yaml_get(&ds, "url"), [PROMETHEUS_URL], "{ds:?}");
    assert_eq!(yaml_get(&ds, "access"), ["proxy"], "{ds:?}");

    let provider = yaml_pairs(&grafana("provisioning/dashboards/sleuth.yaml"));
    assert_eq!(yaml_get(&provider, "apiVersion"), ["1"]);
    assert_eq!(yaml_get(&provider, "type"), ["file"], "{provider:?}");
    assert_eq!(
        yaml_get(&provider, "path"),
        [DASHBOARDS_MOUNT],
        "{provider:?}"
    );

    // Every panel and variable of every dashboard uses the provisioned datasource (checked in
    // detail above); here: the uid is the one the provisioning file declares, and nothing else is
    // referenced by uid anywhere in the dashboards.
    for (file, d) in dashboards() {
        let text = d.to_string();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("\"uid\":\"") {
            rest = &rest[at + 7..];
            let uid = &rest[..rest.find('"').unwrap_or(0)];
            assert!(
                uid == DATASOURCE_UID || uid == "-- Grafana --" || uid == d["uid"],
                "{file} references uid `{uid}`, not the provisioned datasource {DATASOURCE_UID}"
            );
        }
    }
}

/// A `promtool` binary, or `None` when the caller may skip: never under CI, else only with
/// `SLEUTH_SKIP_PROMTOOL=1`.
fn promtool_or_skip(what: &str) -> Option<PathBuf> {
    match common::find_promtool() {
        Some(p) => Some(p),
        None if !common::under_ci()
            && std::env::var("SLEUTH_SKIP_PROMTOOL").as_deref() == Ok("1") =>
        {
            common::skip_or_fail(
                false,
                &format!("{what}: promtool not found and SLEUTH_SKIP_PROMTOOL=1"),
                "scripts/ensure-promtool.sh installs it",
            );
            None
        }
        None => panic!(
            "promtool not found on PATH or at /usr/bin/promtool: run scripts/ensure-promtool.sh \
             (outside CI, SLEUTH_SKIP_PROMTOOL=1 skips {what})"
        ),
    }
}

#[test]
fn promtool_parses_every_panel_query() {
    let Some(promtool) = promtool_or_skip("the PromQL check of the dashboards") else {
        return;
    };
    let qs = queries(&dashboards());
    let mut rules = String::from("groups:\n  - name: dashboards\n    rules:\n");
    for (i, q) in qs.iter().enumerate() {
        let expr = serde_json::to_string(&concrete(&q.expr)).expect("a JSON string");
        rules.push_str(&format!(
            "      - record: dashboard:query:{i}\n        expr: {expr}\n"
        ));
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = tmp.path().join("dashboards.rules.yaml");
    std::fs::write(&file, &rules).expect("write the rules");
    let out = Command::new(&promtool)
        .args(["check", "rules"])
        .arg(&file)
        .output()
        .expect("run promtool");
    if !out.status.success() {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let index: Vec<String> = qs
            .iter()
            .enumerate()
            .map(|(i, q)| format!("{i}: {} / {}: {}", q.dashboard, q.panel, q.expr))
            .collect();
        panic!(
            "promtool rejected a dashboard query:\n{stdout}{stderr}\nqueries:\n{}",
            index.join("\n")
        );
    }
}

#[test]
fn the_query_checker_catches_what_it_should() {
    // The checker itself: a test that passes whatever the dashboards say would prove nothing.
    let code = code_labels();
    let vars: BTreeSet<String> = ["model".to_string()].into();
    let ok = |e: &str| check_query(e, "", &vars, &code);
    assert_eq!(
        ok(
            r#"histogram_quantile(0.95, sum by (le, model) (rate(sleuth_llm_request_duration_seconds_bucket{model=~"$model"}[$__rate_interval])))"#
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        ok("sum(sleuth_llm_cost_microusd_total) / 1e6 / max(sleuth_sweep_budget_usd)"),
        Vec::<String>::new()
    );
    // Target labels on any metric, the cluster's metrics with their listed labels.
    assert_eq!(
        ok(r#"sum by (instance) (rate(sleuth_llm_calls_total{job="sleuth", instance=~".+"}[5m]))"#),
        Vec::<String>::new()
    );
    assert_eq!(
        ok(r#"sum by (state, instance) (sleuth_cluster_queue_entries{state="waiting"})"#),
        Vec::<String>::new()
    );
    assert!(
        check_query(
            "sum by (instance) (sleuth_worker_capacity)",
            "{{instance}}",
            &vars,
            &code
        )
        .is_empty(),
        "a legend may name a target label"
    );
    let fails = |e: &str, what: &str| {
        let p = ok(e);
        assert!(
            p.iter().any(|m| m.contains(what)),
            "`{e}` should fail with `{what}`: {p:?}"
        );
    };
    fails(
        "rate(sleuth_no_such_metric[5m])",
        "not a metric the code exports",
    );
    fails("sleuth_llm_calls_total_count", "is a counter");
    fails("sum by (le) (sleuth_llm_calls_total)", "groups by `le`");
    fails(
        r#"sleuth_llm_retries_total{phase="gameplay"}"#,
        "no label `phase`",
    );
    fails(
        "sum by (arm) (rate(sleuth_llm_calls_total[5m]))",
        "groups by `arm`",
    );
    fails(
        r#"sum(rate(sleuth_llm_request_duration_seconds_sum{le="1"}[5m]))"#,
        "no label `le`",
    );
    fails(r#"sleuth_llm_calls_total{arm=~"$arm"}"#, "no label `arm`");
    fails(
        r#"sleuth_cluster_queue_entries{model="m"}"#,
        "no label `model`",
    );
    fails(
        "sum by (state) (sleuth_cluster_workers)",
        "groups by `state`",
    );
    fails("sum by (pod) (sleuth_worker_capacity)", "groups by `pod`");
    fails(r#"sleuth_llm_calls_total{model=~"$modle"}"#, "$modle");
    fails(
        "sum(sleuth_games_total) by (stage)",
        "groups by `stage`, which metric sleuth_games_total",
    );
    fails(
        "sleuth_games_total / on (model) sleuth_games_in_flight",
        "matches on `model`",
    );
    let legend = check_query(
        "sum by (model) (sleuth_llm_calls_total)",
        "{{modle}}",
        &vars,
        &code,
    );
    assert!(legend.iter().any(|m| m.contains("modle")), "{legend:?}");
    assert_eq!(
        concrete(r#"rate(x{a=~"$model", b=~"${arm}"}[$__rate_interval]) [$__range]"#),
        r#"rate(x{a=~".*", b=~".*"}[1m]) [1h]"#
    );
}
