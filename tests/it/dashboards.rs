//! The Grafana dashboards (`grafana/`): every query names only metrics the code exports
//! (`telemetry::EXPORTED`), histogram suffixes only on histograms and only labels the code attaches to
//! the metric; every exported metric has a panel; the provisioning files point at the dashboards
//! folder and at the datasource the dashboards use; `promtool` parses every query; and, end to end, a
//! sweep's real `/metrics` scrape carries exactly the labels the dashboards were checked against, and a
//! real Prometheus scraping it answers every panel's query and every variable with data. The same
//! holds as an operator runs them: `sleuth sweep run --metrics-addr` for the sweep and LLM
//! dashboards, and a live cluster (Redis, a coordinator, two workers) for the cluster dashboard, each
//! scraped every second by a Prometheus of the test's own; a panel that may be empty in such a run is
//! listed with why ([`SWEEP_RUN_MAY_BE_EMPTY`], [`CLUSTER_MAY_BE_EMPTY`]). Without the `prometheus`
//! server (Debian's package, `scripts/ensure-promtool.sh`) these fail, or outside CI are skipped with
//! `SLEUTH_SKIP_PROMTOOL=1`.
//!
//! Where the label table comes from: the `metrics::counter!` / `gauge!` / `histogram!` call sites under
//! `src/` (read by [`code_labels`]), proven equal to the scrape by
//! `a_sweeps_scrape_has_the_code_labels_and_prometheus_answers_every_panel`. The cluster's metrics
//! (served by the coordinator and the workers, not by a one-node sweep) are the exception: they are
//! listed in [`NOT_IN_SCENARIO`] with their labels, which their call sites must attach exactly, and the
//! end-to-end test leaves out the panels and variables that need them. Queries may also name the
//! labels Prometheus attaches to every target ([`TARGET_LABELS`]): per-worker panels group by
//! `instance`.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use sleuth::telemetry::{MetricKind, EXPORTED};

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
// The code's metrics: kinds from telemetry::EXPORTED, labels from the call sites.

fn kind_of(name: &str) -> Option<MetricKind> {
    EXPORTED.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
}

/// Where the metric constants are declared.
const TELEMETRY: &str = "crates/base/src/telemetry.rs";

/// `NAME -> "sleuth_…"` for every `pub const NAME: &str = "…";` of [`TELEMETRY`].
fn metric_constants() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(common::crate_file(TELEMETRY))
        .unwrap_or_else(|e| panic!("read {TELEMETRY}: {e}"));
    let mut out = BTreeMap::new();
    for decl in text.split("pub const ").skip(1) {
        let Some((head, _)) = decl.split_once(';') else {
            continue;
        };
        let Some((name, rest)) = head.split_once(": &str") else {
            continue;
        };
        let value = rest.trim().trim_start_matches('=').trim().trim_matches('"');
        if value.starts_with("sleuth_") {
            out.insert(name.trim().to_string(), value.to_string());
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The byte index just past the `)` closing the `(` at `open`, skipping string literals.
fn closing_paren(text: &str, open: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The label names the code attaches to each metric, by metric name: every `metrics::counter!`,
/// `gauge!` and `histogram!` call under `src/` and `crates/` (not the `describe_*!` ones), its first argument a
/// constant of [`TELEMETRY`], its labels the `"name" =>` pairs. A call site this cannot read
/// fails the test, so a new way of recording a metric is noticed here. Also checks that the macro's
/// kind is the metric's kind in `EXPORTED`. A metric of [`NOT_IN_SCENARIO`] has the labels listed
/// there, which its call sites (if any) must attach exactly.
fn code_labels() -> BTreeMap<String, BTreeSet<String>> {
    let constants = metric_constants();
    // Every crate's sources and the binary's.
    let mut files = Vec::new();
    rust_files(&common::crate_file("src"), &mut files);
    rust_files(&common::crate_file("crates"), &mut files);
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut problems = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read a source file");
        let rel = file
            .strip_prefix(common::crate_file(""))
            .unwrap_or(&file)
            .display()
            .to_string();
        for (macro_kind, kind) in [
            ("counter!(", MetricKind::Counter),
            ("gauge!(", MetricKind::Gauge),
            ("histogram!(", MetricKind::Histogram),
        ] {
            for (at, _) in text.match_indices(macro_kind) {
                if text[..at].ends_with("describe_") {
                    continue;
                }
                let line = text[..at].lines().count();
                let open = at + macro_kind.len() - 1;
                let Some(close) = closing_paren(&text, open) else {
                    problems.push(format!("{rel}:{line}: unbalanced {macro_kind}"));
                    continue;
                };
                let args = &text[open + 1..close - 1];
                let first = args.split(',').next().unwrap_or("").trim();
                let constant = first.rsplit("::").next().unwrap_or(first);
                let Some(name) = constants.get(constant) else {
                    problems.push(format!(
                        "{rel}:{line}: {macro_kind} names `{first}`, not a metric constant of crates/base/src/telemetry.rs"
                    ));
                    continue;
                };
                match kind_of(name) {
                    Some(k) if k == kind => {}
                    Some(k) => problems.push(format!(
                        "{rel}:{line}: {name} recorded with {macro_kind} but EXPORTED says {}",
                        k.as_str()
                    )),
                    None => problems.push(format!("{rel}:{line}: {name} is not in EXPORTED")),
                }
                let labels = out.entry(name.clone()).or_default();
                for (arrow, _) in args.match_indices("=>") {
                    let before = args[..arrow].trim_end();
                    let label = before
                        .strip_suffix('"')
                        .and_then(|b| b.rsplit_once('"'))
                        .map(|(_, l)| l);
                    match label {
                        Some(l) => {
                            labels.insert(l.to_string());
                        }
                        None => problems.push(format!(
                            "{rel}:{line}: a label of {name} is not a string literal: {args}"
                        )),
                    }
                }
            }
        }
    }
    for (name, listed) in NOT_IN_SCENARIO {
        if kind_of(name).is_none() {
            problems.push(format!(
                "NOT_IN_SCENARIO lists {name}, which telemetry::EXPORTED does not"
            ));
        }
        let listed: BTreeSet<String> = listed.iter().map(|l| l.to_string()).collect();
        match out.get(*name) {
            Some(labels) if *labels != listed => problems.push(format!(
                "{name}: its call sites attach {labels:?}, NOT_IN_SCENARIO lists {listed:?}"
            )),
            Some(_) => {}
            None => {
                out.insert(name.to_string(), listed);
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    for (name, _) in EXPORTED {
        assert!(
            out.contains_key(*name),
            "{name} is exported but no metrics::counter!/gauge!/histogram! under src/ or crates/ records it"
        );
    }
    out
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

// ------------------------------------------------------------------------------------------------
// Enough of PromQL to find the metrics, matchers, groupings and variables of a query.

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Num,
    /// A Grafana variable outside a string (`$__interval` in a range is skipped with the range).
    Var(String),
    Punct(char),
    Op(String),
}

fn lex(expr: &str) -> Result<Vec<Tok>, String> {
    let c: Vec<char> = expr.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let ident = |ch: char| ch.is_ascii_alphanumeric() || ch == '_' || ch == ':';
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '[' {
            // A range or subquery: durations and variables only.
            while i < c.len() && c[i] != ']' {
                i += 1;
            }
            if i == c.len() {
                return Err("unclosed `[`".into());
            }
            i += 1;
        } else if ch == '"' || ch == '\'' || ch == '`' {
            let mut s = String::new();
            i += 1;
            while i < c.len() && c[i] != ch {
                if c[i] == '\\' && ch != '`' {
                    i += 1;
                }
                if i < c.len() {
                    s.push(c[i]);
                }
                i += 1;
            }
            if i == c.len() {
                return Err("unclosed string".into());
            }
            i += 1;
            out.push(Tok::Str(s));
        } else if ch.is_ascii_digit()
            || (ch == '.' && c.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '.') {
                let exp = c[i] == 'e' || c[i] == 'E';
                i += 1;
                if exp && i < c.len() && (c[i] == '+' || c[i] == '-') {
                    i += 1;
                }
            }
            out.push(Tok::Num);
        } else if ch.is_ascii_alphabetic() || ch == '_' || ch == ':' {
            let start = i;
            while i < c.len() && ident(c[i]) {
                i += 1;
            }
            out.push(Tok::Ident(c[start..i].iter().collect()));
        } else if ch == '$' {
            let start = i;
            i += 1;
            if c.get(i) == Some(&'{') {
                while i < c.len() && c[i] != '}' {
                    i += 1;
                }
                i += 1;
            } else {
                while i < c.len() && ident(c[i]) {
                    i += 1;
                }
            }
            out.push(Tok::Var(c[start..i.min(c.len())].iter().collect()));
        } else if "(){},".contains(ch) {
            out.push(Tok::Punct(ch));
            i += 1;
        } else if "=!~<>".contains(ch) {
            // Comparison and matcher operators: `=`, `!=`, `=~`, `!~`, `==`, `<=`, `>=`, `<`, `>`.
            let start = i;
            while i < c.len() && "=!~<>".contains(c[i]) {
                i += 1;
            }
            out.push(Tok::Op(c[start..i].iter().collect()));
        } else if "+-*/%^".contains(ch) {
            out.push(Tok::Op(ch.to_string()));
            i += 1;
        } else {
            return Err(format!("unexpected character `{ch}`"));
        }
    }
    Ok(out)
}

const AGGREGATIONS: &[&str] = &[
    "sum",
    "avg",
    "min",
    "max",
    "count",
    "group",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
];
const KEYWORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "inf",
    "nan",
    "Inf",
    "NaN",
];

/// A metric selector in a query: the exported metric, the suffix it was named with, its matchers.
#[derive(Debug)]
struct Selector {
    at: usize,
    metric: String,
    suffix: Option<&'static str>,
    matchers: Vec<(String, String, String)>,
}

/// A query's parts: selectors; label lists of `by`/`without` with the token range they apply to;
/// `on`/`ignoring`/`group_*` labels (checked against every selector); Grafana variables used.
#[derive(Debug, Default)]
struct Parsed {
    selectors: Vec<Selector>,
    groupings: Vec<(Vec<String>, std::ops::Range<usize>)>,
    matching: Vec<String>,
    variables: BTreeSet<String>,
}

/// The labels of a `( a, b )` list starting at `toks[i]`, and the index after it.
fn label_list(toks: &[Tok], mut i: usize) -> Result<(Vec<String>, usize), String> {
    if toks.get(i) != Some(&Tok::Punct('(')) {
        return Err("expected `(` after by/without/on/ignoring".into());
    }
    i += 1;
    let mut labels = Vec::new();
    loop {
        match toks.get(i) {
            Some(Tok::Punct(')')) => return Ok((labels, i + 1)),
            Some(Tok::Punct(',')) => i += 1,
            Some(Tok::Ident(l)) => {
                labels.push(l.clone());
                i += 1;
            }
            t => return Err(format!("unexpected {t:?} in a label list")),
        }
    }
}

/// The index just past the `)` matching the `(` at `toks[i]`.
fn matching(toks: &[Tok], i: usize) -> Result<usize, String> {
    let mut depth = 0usize;
    for (j, t) in toks.iter().enumerate().skip(i) {
        match t {
            Tok::Punct('(') => depth += 1,
            Tok::Punct(')') => {
                depth -= 1;
                if depth == 0 {
                    return Ok(j + 1);
                }
            }
            _ => {}
        }
    }
    Err("unbalanced parentheses".into())
}

/// Resolves a name used in a query to an exported metric and the histogram suffix it carries.
fn resolve(name: &str) -> Result<(String, Option<&'static str>), String> {
    if kind_of(name).is_some() {
        return Ok((name.to_string(), None));
    }
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = name.strip_suffix(suffix) {
            match kind_of(base) {
                Some(MetricKind::Histogram) => return Ok((base.to_string(), Some(suffix))),
                Some(k) => {
                    return Err(format!(
                        "`{name}`: the suffix {suffix} is for histograms, and {base} is a {}",
                        k.as_str()
                    ))
                }
                None => {}
            }
        }
    }
    Err(format!(
        "`{name}` is not a metric the code exports (telemetry::EXPORTED)"
    ))
}

fn parse(expr: &str) -> Result<Parsed, String> {
    let toks = lex(expr)?;
    let mut p = Parsed::default();
    for t in &toks {
        if let Tok::Var(v) = t {
            p.variables.insert(v.clone());
        }
        if let Tok::Str(s) = t {
            for (at, _) in s.match_indices('$') {
                let rest = s[at + 1..].trim_start_matches('{');
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                p.variables.insert(format!("${name}"));
            }
        }
    }
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Tok::Ident(id) if AGGREGATIONS.contains(&id.as_str()) => {
                let mut j = i + 1;
                let mut labels = None;
                if let Some(Tok::Ident(kw)) = toks.get(j) {
                    if kw == "by" || kw == "without" {
                        let (l, next) = label_list(&toks, j + 1)?;
                        labels = Some(l);
                        j = next;
                    }
                }
                if toks.get(j) != Some(&Tok::Punct('(')) {
                    return Err(format!("`{id}` without its argument"));
                }
                let end = matching(&toks, j)?;
                if labels.is_none() {
                    if let Some(Tok::Ident(kw)) = toks.get(end) {
                        if kw == "by" || kw == "without" {
                            labels = Some(label_list(&toks, end + 1)?.0);
                        }
                    }
                }
                if let Some(l) = labels {
                    p.groupings.push((l, j..end));
                }
                i = j;
            }
            Tok::Ident(id)
                if ["on", "ignoring", "group_left", "group_right"].contains(&id.as_str()) =>
            {
                if toks.get(i + 1) == Some(&Tok::Punct('(')) {
                    let (l, next) = label_list(&toks, i + 1)?;
                    p.matching.extend(l);
                    i = next;
                } else {
                    i += 1;
                }
            }
            // A grouping written after its aggregation's argument (checked with the aggregation).
            Tok::Ident(id)
                if (id == "by" || id == "without") && toks.get(i + 1) == Some(&Tok::Punct('(')) =>
            {
                i = label_list(&toks, i + 1)?.1;
            }
            Tok::Ident(id) if KEYWORDS.contains(&id.as_str()) => i += 1,
            Tok::Ident(_) if toks.get(i + 1) == Some(&Tok::Punct('(')) => i += 1, // a function
            Tok::Ident(id) => {
                let (metric, suffix) = resolve(id)?;
                let mut sel = Selector {
                    at: i,
                    metric,
                    suffix,
                    matchers: Vec::new(),
                };
                i += 1;
                if toks.get(i) == Some(&Tok::Punct('{')) {
                    i += 1;
                    loop {
                        match (toks.get(i), toks.get(i + 1), toks.get(i + 2)) {
                            (Some(Tok::Punct('}')), _, _) => {
                                i += 1;
                                break;
                            }
                            (Some(Tok::Punct(',')), _, _) => i += 1,
                            (Some(Tok::Ident(l)), Some(Tok::Op(op)), Some(Tok::Str(v)))
                                if ["=", "!=", "=~", "!~"].contains(&op.as_str()) =>
                            {
                                sel.matchers.push((l.clone(), op.clone(), v.clone()));
                                i += 3;
                            }
                            t => return Err(format!("bad matcher of {id}: {t:?}")),
                        }
                    }
                }
                p.selectors.push(sel);
            }
            _ => i += 1,
        }
    }
    Ok(p)
}

/// The labels a selector may name: the code's labels of its metric, the target labels Prometheus
/// attaches, plus `le` on a `_bucket`.
fn allowed_labels(sel: &Selector, code: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<String> {
    let mut labels = code.get(&sel.metric).cloned().unwrap_or_default();
    labels.extend(TARGET_LABELS.iter().map(|l| l.to_string()));
    if sel.suffix == Some("_bucket") {
        labels.insert("le".into());
    }
    labels
}

/// Every problem of one query: unknown metrics, misplaced suffixes, labels the metric does not
/// have (in matchers, groupings and `{{legend}}` placeholders), undefined variables.
fn check_query(
    expr: &str,
    legend: &str,
    defined: &BTreeSet<String>,
    code: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    if expr.trim().is_empty() {
        return vec!["empty expr".into()];
    }
    let p = match parse(expr) {
        Ok(p) => p,
        Err(e) => return vec![e],
    };
    let mut problems = Vec::new();
    if p.selectors.is_empty() {
        problems.push("names no sleuth metric".into());
    }
    for sel in &p.selectors {
        let allowed = allowed_labels(sel, code);
        for (label, _, _) in &sel.matchers {
            if !allowed.contains(label) {
                problems.push(format!(
                    "metric {} has no label `{label}` (the code attaches {allowed:?})",
                    sel.metric
                ));
            }
        }
    }
    for (labels, range) in &p.groupings {
        for sel in p.selectors.iter().filter(|s| range.contains(&s.at)) {
            let allowed = allowed_labels(sel, code);
            for l in labels.iter().filter(|l| !allowed.contains(*l)) {
                problems.push(format!(
                    "groups by `{l}`, which metric {} does not have (the code attaches {allowed:?})",
                    sel.metric
                ));
            }
        }
    }
    for l in &p.matching {
        for sel in &p.selectors {
            if !allowed_labels(sel, code).contains(l) {
                problems.push(format!(
                    "matches on `{l}`, which metric {} does not have",
                    sel.metric
                ));
            }
        }
    }
    for v in &p.variables {
        let name = v.trim_start_matches('$');
        if !name.starts_with("__") && !defined.contains(name) {
            problems.push(format!("uses {v}, which the dashboard does not define"));
        }
    }
    // `{{label}}` in the legend: a label of some selector of the query.
    let all: BTreeSet<String> = p
        .selectors
        .iter()
        .flat_map(|s| allowed_labels(s, code))
        .collect();
    for part in legend.split("{{").skip(1) {
        let l = part.split("}}").next().unwrap_or("").trim();
        if !all.contains(l) {
            problems.push(format!(
                "legend names `{{{{{l}}}}}`, a label of none of its metrics"
            ));
        }
    }
    problems
}

/// The expr with Grafana's variables replaced the way Grafana would for "All" and a 1-hour range:
/// what Prometheus itself can evaluate.
fn concrete(expr: &str) -> String {
    let mut s = expr
        .replace("$__rate_interval", "1m")
        .replace("$__interval", "1m")
        .replace("$__range", "1h");
    // Every remaining variable is a multi-value "All" one: `.*` inside a regex matcher.
    while let Some(at) = s.find('$') {
        let rest = &s[at + 1..];
        let len = if rest.starts_with('{') {
            rest.find('}').map_or(rest.len(), |e| e + 1)
        } else {
            rest.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .count()
        };
        s.replace_range(at..at + 1 + len, ".*");
    }
    s
}

// ------------------------------------------------------------------------------------------------
// The static tests.

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

// ------------------------------------------------------------------------------------------------
// End to end: a sweep's scrape, and a real Prometheus answering every panel.

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local address").port()
}

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

/// A Prometheus server of our own (its own storage directory, a free port, a 1 s scrape interval),
/// stopped (by its pid) when dropped.
struct Prometheus {
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
    fn start(binary: &Path, dir: &Path, targets: &[SocketAddr]) -> Prometheus {
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
    async fn wait_scraped(&self, targets: usize, after: f64, scrapes: usize) {
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
fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs_f64()
}

/// A panel that may answer with no series in an end-to-end run: dashboard file, panel title, and
/// why it is empty there (and where else it is checked).
type MayBeEmpty = (&'static str, &'static str, &'static str);

/// Every query of every panel of `dashboards` (made concrete as Grafana would for "All" and a
/// one-hour range) and every variable, run through Prometheus' HTTP API now: what went wrong. A query
/// that fails, or answers with no series, is a problem unless `may_be_empty` names its panel; an
/// entry of `may_be_empty` that names no panel is one too (a stale list).
async fn unanswered(
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
            let v = get_json(&format!(
                "{}/api/v1/label/{label}/values?match[]={}",
                prom.url,
                encode(selector)
            ))
            .await;
            match v {
                Ok(v) if v["data"].as_array().is_some_and(|a| !a.is_empty()) => {}
                other => problems.push(format!("{file}: variable {name} has no values: {other:?}")),
            }
        }
    }
    problems
}

/// `prometheus` (the server, from Debian's `prometheus` package beside promtool), or `None` when
/// the test may be skipped: never under CI, else only with `SLEUTH_SKIP_PROMTOOL=1`.
fn prometheus_or_skip(what: &str) -> Option<PathBuf> {
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
async fn instant(prom: &Prometheus, expr: &str) -> Result<Vec<Value>, String> {
    let v = get_json(&format!("{}/api/v1/query?query={}", prom.url, encode(expr))).await?;
    Ok(v["data"]["result"].as_array().cloned().unwrap_or_default())
}

/// The sweep the scenario runs, priced and with a budget: two ThinkThrice arms on the simulated model
/// that differ only after the clues (so one replays the other's early calls from the cache), and a
/// MIRAGE arm on a flaky mock endpoint (429/500s retried; its first reply malformed and re-asked —
/// every MIRAGE call has a format to break).
fn scenario_sweep(dir: &Path, mock_url: &str) -> PathBuf {
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

    let mock = sleuth::mockllm::MockServer::start(
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
    .expect("start the mock LLM server");
    let file = scenario_sweep(tmp.path(), &mock.base_url());
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

    // The scrape has every exported metric, of its kind, with exactly the labels of its call sites.
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
        match instant(&prom, &expr).await {
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
            let v = get_json(&format!(
                "{}/api/v1/label/{label}/values?match[]={}",
                prom.url,
                encode(selector)
            ))
            .await;
            match v {
                Ok(v) if v["data"].as_array().is_some_and(|a| !a.is_empty()) => {}
                other => empty.push(format!("{file}: variable {name} has no values: {other:?}")),
            }
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

// ------------------------------------------------------------------------------------------------
// End to end, as an operator runs them: `sleuth sweep run` and a cluster, each scraped by a real
// Prometheus, and every panel of their dashboards queried through its HTTP API.

/// Panels of the sweep and LLM dashboards with no series after a healthy `sleuth sweep run`.
const SWEEP_RUN_MAY_BE_EMPTY: &[MayBeEmpty] = &[
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
const CLUSTER_MAY_BE_EMPTY: &[MayBeEmpty] = &[];

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
    let mock = sleuth::mockllm::MockServer::start(
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
    .expect("start the mock LLM server");
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
