//! The layering is kept by the compiler and by this test, not by a document (docs/architecture.md,
//! *Crates*; issue 31).
//!
//! - **Between crates**: the root `Cargo.toml` lists the workspace's crates in the order of the layers;
//!   a crate may depend only on crates listed before it. Cargo already refuses a circle between crates;
//!   this makes "listed before" a rule, so a crate low in the house (the store, the gateway) cannot
//!   grow a dependency on one above it (the sweep, the viewer) and drag their build along.
//! - **Inside a crate**: no two files import each other, directly or around a loop. A file imports
//!   another when it names an item through `crate::`, `super::` or `self::`; the path is resolved to
//!   the deepest module that is a file. A module naming its own children is the module tree, not an
//!   import, and is left out (a parent re-exports them; a child may still use its parent). Unit-test modules (`#[cfg(test)]`) may reach anywhere and are
//!   left out. A circle is how a module ends up needing the one that drives it; here it is a failure
//!   instead of a review finding.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path inside a crate: `[]` is the crate root, `["llm", "gateway"]` is `llm/gateway`.
type ModPath = Vec<String>;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read_toml(path: &Path) -> toml::Table {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.parse()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The workspace's crates in the order the root manifest lists them.
fn layer_order() -> Vec<String> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("root Cargo.toml");
    // The order of keys matters here, and `toml::Table` sorts them: read the lines instead.
    let start = manifest
        .find("[workspace.dependencies]")
        .expect("[workspace.dependencies] in Cargo.toml");
    manifest[start..]
        .lines()
        .filter_map(|l| l.split_once(" = { path = \"crates/"))
        .map(|(name, _)| name.trim().to_string())
        .collect()
}

/// The `sleuth-*` crates a manifest depends on, in any dependency table.
fn internal_deps(manifest: &toml::Table) -> BTreeSet<String> {
    ["dependencies", "build-dependencies", "dev-dependencies"]
        .iter()
        .filter_map(|t| manifest.get(*t).and_then(|v| v.as_table()))
        .flat_map(|t| t.keys())
        .filter(|k| k.starts_with("sleuth-"))
        .cloned()
        .collect()
}

#[test]
fn every_crate_depends_only_on_crates_below_it() {
    let order = layer_order();
    assert!(
        order.len() >= 10,
        "expected the workspace's crates, found {order:?}"
    );
    let mut seen = BTreeSet::new();
    for dir in std::fs::read_dir(root().join("crates")).expect("crates/") {
        let dir = dir.expect("directory entry").path();
        let manifest = read_toml(&dir.join("Cargo.toml"));
        let name = manifest["package"]["name"]
            .as_str()
            .expect("package.name")
            .to_string();
        let at = order
            .iter()
            .position(|c| *c == name)
            .unwrap_or_else(|| panic!("{name} is not listed in the root Cargo.toml's layers"));
        // A crate's dev-dependency on itself (to turn on a feature for its own tests) is no layer.
        for dep in internal_deps(&manifest).into_iter().filter(|d| *d != name) {
            let dep_at = order.iter().position(|c| *c == dep);
            assert!(
                dep_at.is_some_and(|d| d < at),
                "{name} depends on {dep}, which is not listed before it in the root Cargo.toml"
            );
        }
        seen.insert(name);
    }
    assert_eq!(
        seen,
        order.iter().cloned().collect(),
        "crates/ and the layer list differ"
    );
}

#[test]
fn no_file_circles_inside_any_crate() {
    let mut srcs = vec![root().join("src")];
    for dir in std::fs::read_dir(root().join("crates")).expect("crates/") {
        srcs.push(dir.expect("directory entry").path().join("src"));
    }
    let mut circles = Vec::new();
    for src in &srcs {
        let graph = file_graph(src);
        assert!(!graph.is_empty(), "no source files under {}", src.display());
        for circle in circles_in(&graph) {
            let names: Vec<String> = circle.iter().map(show).collect();
            circles.push(format!("{}: {}", src.display(), names.join(" ↔ ")));
        }
    }
    assert!(
        circles.is_empty(),
        "files that import each other:\n{}",
        circles.join("\n")
    );
}

fn show(m: &ModPath) -> String {
    if m.is_empty() {
        "lib".to_string()
    } else {
        m.join("/")
    }
}

/// Every `.rs` file under `src` by its module path.
fn module_files(src: &Path) -> BTreeMap<ModPath, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(src).expect("under src").with_extension("");
            let mut m: ModPath = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if m.last().is_some_and(|l| l == "mod") || m == ["lib"] || m == ["main"] {
                m.pop();
            }
            (m, p)
        })
        .collect()
}

/// Which files each file imports (see the module documentation).
fn file_graph(src: &Path) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let files = module_files(src);
    let mut code = BTreeMap::new();
    let mut test_only: Vec<ModPath> = Vec::new();
    for (m, p) in &files {
        let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let (kept, test_mods) = without_tests(&without_comments(&text));
        test_only.extend(test_mods.into_iter().map(|t| [m.clone(), vec![t]].concat()));
        code.insert(m.clone(), kept);
    }
    let is_test = |m: &ModPath| test_only.iter().any(|t| m.starts_with(t));
    let mut graph = BTreeMap::new();
    for (m, text) in &code {
        if is_test(m) {
            continue;
        }
        let mut deps = BTreeSet::new();
        for path in paths(text) {
            let Some(full) = absolute(m, &path) else {
                continue;
            };
            let target = (0..=full.len())
                .rev()
                .map(|k| full[..k].to_vec())
                .find(|t| files.contains_key(t))
                .unwrap_or_default();
            // A module naming its own children (`pub use self::redis::RedisStore`) is the module
            // tree, not an import: only edges to a file outside the module count.
            if !target.starts_with(m) && !is_test(&target) {
                deps.insert(target);
            }
        }
        graph.insert(m.clone(), deps);
    }
    graph
}

/// `path` (as written in module `m`, starting with `crate`, `super` or `self`) from the crate root.
fn absolute(m: &ModPath, path: &[String]) -> Option<ModPath> {
    let mut at = match path.first()?.as_str() {
        "crate" => Vec::new(),
        _ => m.clone(),
    };
    for seg in path.iter().skip(usize::from(path[0] == "crate")) {
        match seg.as_str() {
            "self" => {}
            "super" => {
                at.pop()?;
            }
            _ => at.push(seg.clone()),
        }
    }
    Some(at)
}

/// The source with comments and string literals blanked (a doc link or a message naming
/// `crate::x` is not an import).
fn without_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            i = text[i..].find('\n').map_or(b.len(), |n| i + n);
        } else if b[i..].starts_with(b"/*") {
            i = text[i + 2..].find("*/").map_or(b.len(), |n| i + n + 4);
        } else if b[i..].starts_with(b"r#\"") {
            i = text[i + 3..].find("\"#").map_or(b.len(), |n| i + n + 5);
            out.push_str("\"\"");
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            i = j + 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && i + 2 < b.len() && (b[i + 1] == b'\\' || b[i + 2] == b'\'') {
            // A char literal (a lifetime has no closing quote right after one character).
            let from = if b[i + 1] == b'\\' { i + 3 } else { i + 2 };
            i = text[from..].find('\'').map_or(b.len(), |n| from + n + 1);
            out.push_str("' '");
        } else {
            let ch = text[i..].chars().next().expect("a char at a boundary");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// The code with every `#[cfg(test)]` item left out, and the names of test modules kept in files of
/// their own (`#[cfg(test)] mod tests;`).
fn without_tests(code: &str) -> (String, Vec<String>) {
    const MARK: &str = "#[cfg(test)]";
    let mut kept = String::new();
    let mut test_mods = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(MARK) {
        kept.push_str(&rest[..at]);
        let item = &rest[at + MARK.len()..];
        let semi = item.find(';').unwrap_or(item.len());
        let brace = item.find('{').unwrap_or(item.len());
        if semi < brace {
            let decl = item[..semi].trim();
            if let Some(name) = decl.rsplit_once("mod ").map(|(_, n)| n.trim()) {
                test_mods.push(name.to_string());
            }
            rest = &item[(semi + 1).min(item.len())..];
            continue;
        }
        let mut depth = 0usize;
        let mut end = item.len();
        for (i, c) in item.char_indices().skip_while(|(i, _)| *i < brace) {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    kept.push_str(rest);
    (kept, test_mods)
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path in `code` that starts with `crate::`, `super::` or `self::`, with `use` groups
/// (`crate::{a::B, c}`) expanded into one path each.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (i, _) in code.char_indices() {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| is_ident(c) || c == ':') {
            continue;
        }
        let rest = &code[i..];
        let head = ["crate", "super", "self"]
            .into_iter()
            .find(|h| rest.starts_with(h) && rest[h.len()..].trim_start().starts_with("::"));
        if head.is_some() {
            let mut pos = 0;
            out.extend(use_tree(rest, &mut pos));
        }
    }
    out
}

/// Parses a path or use tree at `s[*pos..]`: the paths it names.
fn use_tree(s: &str, pos: &mut usize) -> Vec<Vec<String>> {
    let mut segs = Vec::new();
    loop {
        skip_space(s, pos);
        let rest = &s[*pos..];
        if rest.starts_with('{') {
            *pos += 1;
            let mut all = Vec::new();
            loop {
                while s[*pos..].starts_with(|c: char| c.is_whitespace() || c == ',') {
                    *pos += 1;
                }
                if *pos >= s.len() || s[*pos..].starts_with('}') {
                    *pos += 1;
                    break;
                }
                let before = *pos;
                for tail in use_tree(s, pos) {
                    all.push([segs.clone(), tail].concat());
                }
                if *pos == before {
                    *pos += 1; // not a path: step over it
                }
            }
            return if all.is_empty() { vec![segs] } else { all };
        }
        let len = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
        if len == 0 {
            return vec![segs];
        }
        segs.push(rest[..len].to_string());
        *pos += len;
        skip_space(s, pos);
        if s[*pos..].starts_with("::") {
            *pos += 2;
        } else {
            return vec![segs];
        }
    }
}

fn skip_space(s: &str, pos: &mut usize) {
    while s[*pos..].starts_with(char::is_whitespace) {
        *pos += s[*pos..].chars().next().map_or(1, char::len_utf8);
    }
}

/// The circles of `graph`: its strongly connected parts of more than one file (Tarjan's algorithm).
fn circles_in(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<&'a ModPath, usize>,
        low: BTreeMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        out: Vec<Vec<ModPath>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, n: &'a ModPath) {
            let i = self.index.len();
            self.index.insert(n, i);
            self.low.insert(n, i);
            self.stack.push(n);
            for w in self.graph.get(n).into_iter().flatten() {
                let Some((w, _)) = self.graph.get_key_value(w) else {
                    continue;
                };
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let ln = self.low.get_mut(n).expect("visited");
                    *ln = (*ln).min(lw);
                } else if self.stack.contains(&w) {
                    let iw = self.index[w];
                    let ln = self.low.get_mut(n).expect("visited");
                    *ln = (*ln).min(iw);
                }
            }
            if self.low[n] == self.index[n] {
                let mut part = Vec::new();
                while let Some(w) = self.stack.pop() {
                    part.push(w.clone());
                    if w == n {
                        break;
                    }
                }
                if part.len() > 1 {
                    part.sort();
                    self.out.push(part);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for n in graph.keys() {
        if !walk.index.contains_key(n) {
            walk.visit(n);
        }
    }
    walk.out
}

#[test]
fn the_check_sees_a_circle_when_there_is_one() {
    let m = |s: &str| -> ModPath {
        s.split('/')
            .filter(|p| !p.is_empty())
            .map(String::from)
            .collect()
    };
    let graph: BTreeMap<ModPath, BTreeSet<ModPath>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (m(k), v.into_iter().map(m).collect()))
    .collect();
    assert_eq!(circles_in(&graph), vec![vec![m("a"), m("b"), m("c")]]);

    let code = "use crate::{llm::{Gateway, self}, text};\nuse super::x as y;\n// crate::memory in a comment\nlet s = \"crate::quoted\";\n#[cfg(test)]\nmod tests { use crate::hidden; }\n";
    let (kept, _) = without_tests(&without_comments(code));
    let found: BTreeSet<ModPath> = paths(&kept)
        .iter()
        .filter_map(|p| absolute(&m("view/pages"), p))
        .collect();
    assert_eq!(
        found,
        [m("llm/Gateway"), m("llm"), m("text"), m("view/x")]
            .into_iter()
            .collect()
    );
}
