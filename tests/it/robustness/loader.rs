//! The canonical loader on arbitrary text, TOML-like text and mutations of the example script, and
//! `clean_text` on escape sequences.

use std::path::Path;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{select, Index};
use sleuth::script::import::clean_text;
use sleuth::script::Script;

use crate::robustness::inputs::{text, PIECES};
use crate::robustness::{check_script_text, config};

const NIGHT_FERRY: &str = include_str!("../../../examples/night-ferry.toml");

// ---------------------------------------------------------------------------------------------------
// Canonical loader

/// A byte-level edit of a script file.
#[derive(Debug, Clone)]
enum Edit {
    /// Deletes up to `len` bytes from a position (possibly splitting a UTF-8 sequence).
    Delete(Index, usize),
    /// Inserts raw bytes (possibly invalid UTF-8).
    InsertBytes(Index, Vec<u8>),
    /// Inserts text, often TOML syntax.
    InsertText(Index, String),
    DuplicateLine(Index),
    DeleteLine(Index),
}

const TOML_SNIPPETS: &[&str] = &[
    "\"",
    "'",
    "\"\"\"",
    "'''",
    "[[characters]]\n",
    "[[victims]]\n",
    "[[clues]]\n",
    "[truth]\n",
    "[host]\n",
    "\n[characters]\n",
    "=",
    " = 1\n",
    "[",
    "]]",
    "{",
    "}",
    "\\",
    "\\u{",
    "#",
    "\u{feff}",
    "é",
    "中文",
    "\n",
    "\r\n",
    "acts = 0\n",
    "acts = 99999999999\n",
    "format = 2\n",
];

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        3 => (any::<Index>(), 0usize..256).prop_map(|(at, n)| Edit::Delete(at, n)),
        2 => (any::<Index>(), vec(any::<u8>(), 1..16)).prop_map(|(at, b)| Edit::InsertBytes(at, b)),
        3 => (
            any::<Index>(),
            prop_oneof![select(TOML_SNIPPETS).prop_map(String::from), text()]
        )
            .prop_map(|(at, t)| Edit::InsertText(at, t)),
        2 => any::<Index>().prop_map(Edit::DuplicateLine),
        1 => any::<Index>().prop_map(Edit::DeleteLine),
    ]
}

fn apply_edits(base: &str, edits: &[Edit]) -> String {
    let mut b = base.as_bytes().to_vec();
    for e in edits {
        match e {
            Edit::Delete(at, len) => {
                let start = at.index(b.len() + 1);
                let end = (start + len).min(b.len());
                b.drain(start..end);
            }
            Edit::InsertBytes(at, bytes) => {
                let i = at.index(b.len() + 1);
                b.splice(i..i, bytes.iter().copied());
            }
            Edit::InsertText(at, t) => {
                let i = at.index(b.len() + 1);
                b.splice(i..i, t.bytes());
            }
            Edit::DuplicateLine(at) | Edit::DeleteLine(at) => {
                let mut lines: Vec<Vec<u8>> =
                    b.split(|&c| c == b'\n').map(<[u8]>::to_vec).collect();
                let i = at.index(lines.len());
                if matches!(e, Edit::DuplicateLine(_)) {
                    let line = lines[i].clone();
                    lines.insert(i, line);
                } else {
                    lines.remove(i);
                }
                b = lines.join(&b'\n');
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// Keys and headers of the canonical format, for TOML-like text.
const SCRIPT_KEYS: &[&str] = &[
    "format",
    "title",
    "language",
    "premise",
    "acts",
    "name",
    "role",
    "public",
    "story",
    "timeline",
    "secrets",
    "killed",
    "id",
    "text",
    "about",
    "location",
    "key",
    "act",
    "murderer",
    "narrative",
    "victim",
    "by",
    "character",
    "question",
    "answer",
    "source",
    "options",
    "truth",
    "multiple",
    "category",
];
const SCRIPT_HEADERS: &[&str] = &[
    "[[victims]]",
    "[[characters]]",
    "[[clues]]",
    "[[factual]]",
    "[[inferential]]",
    "[[choice]]",
    "[[truth.culprits]]",
    "[truth]",
    "[host]",
];

/// Lines that look like a script: `key = value` with values of every TOML type, headers, junk.
fn toml_like() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        4 => select(SCRIPT_KEYS).prop_map(String::from),
        1 => "[a-z_.\"]{1,10}",
    ];
    let value = prop_oneof![
        "\"[^\"\\\\\n]{0,12}\"",
        Just("\"\"".to_string()),
        "-?[0-9]{1,12}",
        select(vec![
            "true",
            "false",
            "[]",
            "{}",
            "1.5",
            "nan",
            "1979-05-27"
        ])
        .prop_map(String::from),
        select(vec![
            "\"murderer\"",
            "\"civilian\"",
            "\"en\"",
            "\"zh\"",
            "\"A\"",
            "\"Z\""
        ])
        .prop_map(String::from),
        vec("\"[A-Za-z ]{0,6}\"", 0..4).prop_map(|v| format!("[{}]", v.join(", "))),
        "\"\"\"\n[^\"]{0,20}\n\"\"\"",
        "\\PC{0,10}",
    ];
    let line = prop_oneof![
        6 => (key, value).prop_map(|(k, v)| format!("{k} = {v}")),
        2 => select(SCRIPT_HEADERS).prop_map(String::from),
        1 => "\\PC{0,20}",
    ];
    vec(line, 0..60).prop_map(|l| l.join("\n"))
}

/// A step of a path into a TOML tree.
#[derive(Debug, Clone)]
enum Seg {
    Key(String),
    At(usize),
}

/// A structural edit of the parsed example: the value at the chosen node (in pre-order) is removed,
/// replaced or duplicated (in arrays). `Retype` replaces a node of the value's own type, so that the
/// script usually still parses and validation sees odd but well-typed values.
#[derive(Debug, Clone)]
enum TreeEdit {
    Remove(Index),
    Replace(Index, toml::Value),
    Retype(Index, toml::Value),
    Duplicate(Index),
}

fn ferry_names() -> Vec<String> {
    let s = Script::parse(NIGHT_FERRY, Path::new("night-ferry.toml")).expect("example is valid");
    let mut names: Vec<String> = s.characters.iter().map(|c| c.name.clone()).collect();
    names.extend(s.victims.iter().map(|v| v.name.clone()));
    names.extend(s.clues.iter().map(|c| c.id.clone()));
    names
}

/// A scalar: strings (often names of the example's characters, victims and clues), integers at the
/// validation bounds, floats, booleans, empty arrays and tables.
fn toml_leaf() -> BoxedStrategy<toml::Value> {
    let mut strings: Vec<String> = ferry_names();
    strings.extend(
        [
            "", " ", "A", "B", "Z", "a", "AA", "murderer", "civilian", "en", "zh", "c1",
        ]
        .map(String::from),
    );
    let string = prop_oneof![
        3 => select(strings).prop_map(toml::Value::String),
        1 => text().prop_map(toml::Value::String),
    ];
    let leaf = prop_oneof![
        4 => string,
        2 => select(vec![0i64, 1, 2, 3, 12, 13, 26, 27, -1, 4_294_967_296, i64::MAX, i64::MIN])
            .prop_map(toml::Value::Integer),
        1 => any::<f64>().prop_map(toml::Value::Float),
        1 => any::<bool>().prop_map(toml::Value::Boolean),
        1 => Just(toml::Value::Array(Vec::new())),
        1 => Just(toml::Value::Table(toml::Table::new())),
    ];
    leaf.boxed()
}

fn toml_value() -> impl Strategy<Value = toml::Value> {
    toml_leaf().prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..3).prop_map(toml::Value::Array),
            vec((select(SCRIPT_KEYS).prop_map(String::from), inner), 0..3)
                .prop_map(|kv| toml::Value::Table(kv.into_iter().collect())),
        ]
    })
}

fn tree_edit() -> impl Strategy<Value = TreeEdit> {
    prop_oneof![
        2 => any::<Index>().prop_map(TreeEdit::Remove),
        2 => (any::<Index>(), toml_value()).prop_map(|(at, v)| TreeEdit::Replace(at, v)),
        6 => (any::<Index>(), toml_leaf()).prop_map(|(at, v)| TreeEdit::Retype(at, v)),
        2 => any::<Index>().prop_map(TreeEdit::Duplicate),
    ]
}

fn paths(v: &toml::Value, path: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
    match v {
        toml::Value::Table(t) => {
            for (k, x) in t {
                path.push(Seg::Key(k.clone()));
                out.push(path.clone());
                paths(x, path, out);
                path.pop();
            }
        }
        toml::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(Seg::At(i));
                out.push(path.clone());
                paths(x, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn node_mut<'a>(mut v: &'a mut toml::Value, path: &[Seg]) -> Option<&'a mut toml::Value> {
    for s in path {
        v = match (v, s) {
            (toml::Value::Table(t), Seg::Key(k)) => t.get_mut(k)?,
            (toml::Value::Array(a), Seg::At(i)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

/// The example with the edits applied, as TOML text (`None` if the result cannot be written as TOML).
fn apply_tree_edits(edits: &[TreeEdit]) -> Option<String> {
    let mut root: toml::Value = toml::from_str(NIGHT_FERRY).expect("example is TOML");
    for e in edits {
        let mut all = Vec::new();
        paths(&root, &mut Vec::new(), &mut all);
        if let TreeEdit::Retype(_, v) = e {
            all.retain(|p| {
                let node = node_mut(&mut root, p).expect("path exists");
                std::mem::discriminant(node) == std::mem::discriminant(v)
            });
        }
        if all.is_empty() {
            continue;
        }
        let at = match e {
            TreeEdit::Remove(at)
            | TreeEdit::Replace(at, _)
            | TreeEdit::Retype(at, _)
            | TreeEdit::Duplicate(at) => at,
        };
        let path = &all[at.index(all.len())];
        let (last, parent) = path.split_last().expect("paths are non-empty");
        match e {
            TreeEdit::Replace(_, v) | TreeEdit::Retype(_, v) => {
                if let Some(node) = node_mut(&mut root, path) {
                    *node = v.clone();
                }
            }
            TreeEdit::Remove(_) | TreeEdit::Duplicate(_) => {
                let duplicate = matches!(e, TreeEdit::Duplicate(_));
                match (node_mut(&mut root, parent), last) {
                    (Some(toml::Value::Table(t)), Seg::Key(k)) if !duplicate => {
                        t.remove(k);
                    }
                    (Some(toml::Value::Array(a)), Seg::At(i)) if *i < a.len() => {
                        if duplicate {
                            let x = a[*i].clone();
                            a.insert(*i, x);
                        } else {
                            a.remove(*i);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    toml::to_string(&root).ok()
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn loader_survives_arbitrary_text(text in any::<String>()) {
        check_script_text(&text);
    }

    #[test]
    fn loader_survives_toml_like_text(text in toml_like()) {
        check_script_text(&text);
    }

    #[test]
    fn clean_text_leaves_no_escaped_newline(
        s in prop_oneof![any::<String>(), vec(select(PIECES), 0..24).prop_map(|v| v.concat())]
    ) {
        let out = clean_text(&s);
        prop_assert!(!out.contains("\\n"), "clean_text({s:?}) = {out:?}");
        prop_assert_eq!(out.trim(), out.as_str());
    }
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn loader_survives_mutated_example(edits in vec(edit(), 1..6)) {
        check_script_text(&apply_edits(NIGHT_FERRY, &edits));
    }

    #[test]
    fn loader_survives_structurally_mutated_example(edits in vec(tree_edit(), 1..6)) {
        if let Some(text) = apply_tree_edits(&edits) {
            check_script_text(&text);
        }
    }
}

#[test]
fn example_round_trips_through_the_tree_mutator() {
    let text = apply_tree_edits(&[]).expect("example writes as TOML");
    Script::parse(&text, Path::new("night-ferry.toml")).expect("unchanged example stays valid");
}
