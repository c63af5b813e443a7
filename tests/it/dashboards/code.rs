//! The code's metrics, for the dashboard checks: their kinds from `telemetry::EXPORTED`, their labels
//! from the `metrics::counter!` / `gauge!` / `histogram!` call sites under `src/` and `crates/`.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use sleuth::telemetry::{MetricKind, EXPORTED};

use super::NOT_IN_SCENARIO;

pub(super) fn kind_of(name: &str) -> Option<MetricKind> {
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
pub(super) fn code_labels() -> BTreeMap<String, BTreeSet<String>> {
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
