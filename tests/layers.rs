//! The crate's top-level modules import one another without cycles (docs/architecture.md, "Layers"):
//! `agent` never reaches up to `eval` or `game`, `eval` never reaches up to `game`. A cycle here is how
//! a framework ends up needing the protocol that drives it, or the evaluator the game it scores; this
//! test makes one a failure instead of a review finding.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to (`src/agent/player/mod.rs` → `agent`, `src/text.rs` →
/// `text`); `None` for the crate root and the binary.
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.trim_end_matches(".rs");
    (name != "lib" && name != "main").then(|| name.to_string())
}

/// The top-level modules `text` names as `crate::NAME`, leaving out unit-test modules (a test may
/// reach anywhere).
fn imports(text: &str) -> BTreeSet<String> {
    let code = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    };
    code.match_indices("crate::")
        .filter_map(|(i, m)| {
            let rest = &code[i + m.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (end > 0).then(|| rest[..end].to_string())
        })
        .collect()
}

/// A cycle in `graph` reachable from `start`, as the path that closes it.
fn cycle_from(
    graph: &BTreeMap<String, BTreeSet<String>>,
    start: &str,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(i) = path.iter().position(|m| m == start) {
        let mut c = path[i..].to_vec();
        c.push(start.to_string());
        return Some(c);
    }
    if done.contains(start) {
        return None;
    }
    path.push(start.to_string());
    for next in graph.get(start).into_iter().flatten() {
        if let Some(c) = cycle_from(graph, next, path, done) {
            return Some(c);
        }
    }
    path.pop();
    done.insert(start.to_string());
    None
}

#[test]
fn top_level_modules_import_without_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let Some(module) = top_module(&src, file) else {
            continue;
        };
        let text = std::fs::read_to_string(file).expect("source file is UTF-8");
        let deps = graph.entry(module.clone()).or_default();
        deps.extend(imports(&text).into_iter().filter(|d| *d != module));
    }
    assert!(
        graph.len() >= 10,
        "expected the crate's modules, found {graph:?}"
    );
    // The layering the architecture doc promises, spelled out.
    for (low, high) in [("agent", "game"), ("agent", "eval"), ("eval", "game")] {
        assert!(
            !graph[low].contains(high),
            "`{low}` imports `{high}`, which sits above it"
        );
    }
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        if let Some(c) = cycle_from(&graph, module, &mut Vec::new(), &mut done) {
            panic!("import cycle between top-level modules: {}", c.join(" → "));
        }
    }
}

#[test]
fn the_check_sees_a_cycle_when_there_is_one() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    let c = cycle_from(&graph, "a", &mut Vec::new(), &mut BTreeSet::new());
    assert_eq!(
        c,
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    assert_eq!(
        imports("use crate::llm::Gateway;\nuse crate::text; // crate::memory in a comment\n"),
        ["llm", "memory", "text"].map(String::from).into()
    );
}
