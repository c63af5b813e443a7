//! Enough of PromQL to find the metrics, matchers, groupings and variables of a dashboard's query,
//! and the check of one query against the code's metrics and labels.

use std::collections::{BTreeMap, BTreeSet};

use sleuth::telemetry::MetricKind;

use super::code::kind_of;
use super::TARGET_LABELS;

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
pub(super) struct Selector {
    pub(super) at: usize,
    pub(super) metric: String,
    pub(super) suffix: Option<&'static str>,
    pub(super) matchers: Vec<(String, String, String)>,
}

/// A query's parts: selectors; label lists of `by`/`without` with the token range they apply to;
/// `on`/`ignoring`/`group_*` labels (checked against every selector); Grafana variables used.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    pub(super) selectors: Vec<Selector>,
    pub(super) groupings: Vec<(Vec<String>, std::ops::Range<usize>)>,
    pub(super) matching: Vec<String>,
    pub(super) variables: BTreeSet<String>,
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

pub(super) fn parse(expr: &str) -> Result<Parsed, String> {
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
pub(super) fn allowed_labels(
    sel: &Selector,
    code: &BTreeMap<String, BTreeSet<String>>,
) -> BTreeSet<String> {
    let mut labels = code.get(&sel.metric).cloned().unwrap_or_default();
    labels.extend(TARGET_LABELS.iter().map(|l| l.to_string()));
    if sel.suffix == Some("_bucket") {
        labels.insert("le".into());
    }
    labels
}

/// Every problem of one query: unknown metrics, misplaced suffixes, labels the metric does not
/// have (in matchers, groupings and `{{legend}}` placeholders), undefined variables.
pub(super) fn check_query(
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
pub(super) fn concrete(expr: &str) -> String {
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
