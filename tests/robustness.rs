//! Loaders never panic on arbitrary input.
//!
//! Property tests (proptest) of everything that reads untrusted files:
//! - the canonical loader: for arbitrary text, TOML-like text, byte-level mutations of
//!   `examples/night-ferry.toml` (delete a byte range, insert random bytes or text, duplicate or drop a line)
//!   and structural mutations of its TOML tree (remove, replace, retype-preserving replace or duplicate any
//!   value), `Script::parse_unchecked` and `Script::parse` return Ok or Err, and `problems()`, `errors()`
//!   and `to_toml()` run on every script that parsed;
//! - `clean_text` never panics, returns trimmed text and never a literal `\n` escape;
//! - the WellPlay importer on folders of `json/script_info.json`, `json/<Name>.json`,
//!   `final_result/<Name>.csv` and `FSA.csv`, and the MIRAGE importer on `script.json`, `clues.json` and
//!   `Truth.json` (or a `--truth` file), with culprits given or taken from the built-in table. Each folder is
//!   well-formed with random contents (so the importer runs to the end), or has exactly one file spoilt, or
//!   every file spoilt at random. Spoilt files are missing, truncated (also inside a UTF-8 sequence),
//!   BOM-prefixed, arbitrary bytes, or valid JSON of the wrong shape: numbers where strings are expected,
//!   missing keys, nested arrays, `kill_by_me` longer or shorter than `victims`, stage keys without a
//!   number, empty objects; CSV with ragged rows, unbalanced quotes, odd headers and CR, LF or CRLF ends.
//!
//! A panic fails the property (proptest catches it and shrinks the input). When an importer succeeds, the
//! script it returns is validated, written as TOML and read back, which must succeed.
//!
//! Case counts are modest so that the file runs in seconds; `PROPTEST_CASES=5000 cargo test --test
//! robustness` hunts longer. Failing cases are not persisted to files: a case found is kept below as a
//! plain `#[test]`. The coverage-guided fuzz targets in `fuzz/` (see `docs/fuzzing.md`) complement these.

use std::path::{Path, PathBuf};

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::sample::{select, subsequence, Index};
use serde_json::{json, Map, Value};
use sleuth::script::import::mirage::{self, MirageOptions};
use sleuth::script::import::{clean_text, wellplay, ImportError};
use sleuth::script::Script;

const NIGHT_FERRY: &str = include_str!("../examples/night-ferry.toml");

/// The configuration of every property: `default_cases` unless `PROPTEST_CASES` says otherwise, and no
/// regression files (failing cases become plain tests in this file instead).
fn config(default_cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_cases);
    ProptestConfig {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2048,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------------
// Shared checks

/// Parses `text` both ways; on success runs everything a caller does with a freshly loaded script.
fn check_script_text(text: &str) {
    let path = Path::new("robustness.toml");
    match Script::parse_unchecked(text, path) {
        Ok(script) => check_script(&script),
        Err(e) => drop(e.to_string()),
    }
    if let Err(e) = Script::parse(text, path) {
        drop(e.to_string());
    }
}

/// Validation and serialisation of a script that parsed (or was imported).
fn check_script(script: &Script) {
    let problems = script.problems();
    let errors = script.errors();
    assert!(errors.len() <= problems.len());
    for p in &problems {
        drop(p.to_string());
    }
    drop(script.to_toml());
}

/// What is done with an importer's result: errors are displayed, a script is checked and written as
/// TOML, which must read back (a saved import that cannot be loaded again is a bug).
fn check_import(result: Result<Script, ImportError>) {
    match result {
        Ok(script) => {
            check_script(&script);
            let toml = script.to_toml();
            let back = Script::parse_unchecked(&toml, Path::new("imported.toml"));
            assert!(
                back.is_ok(),
                "imported script does not read back: {back:?}\n{toml}"
            );
        }
        Err(e) => drop(e.to_string()),
    }
}

// ---------------------------------------------------------------------------------------------------
// Text pieces

/// Texts typical of the datasets and of edge cases: escapes, quotes, brackets, CJK, role lines.
const TEXTS: &[&str] = &[
    "",
    " ",
    "\n",
    "Ada read in the garden at 9 pm.",
    "Line one.\\nLine two.",
    "『线索』\\n下一行",
    "\"quoted\"",
    "'single'",
    "“curly”",
    "\\",
    "\\n",
    "\\r\\n",
    "\\t",
    "Manager Xiu (manager): he ran the ship.\nQi Liu (victim): found dead.",
    "【Qi Liu】 was found dead in 【Cabin 3】.",
    "【unclosed",
    "Sky Dog: a friend.\nLiu Qi (passenger): the dead man.",
    "(",
    "（滑头鬼",
    "修经理：船上的经理。\n死者（乘客）：被发现死亡。",
    "İstanbul ǅ ß ﬁ",
    "\u{feff}bom",
    "a\u{0}b",
];

/// Fragments whose concatenation makes tricky escape sequences.
const PIECES: &[&str] = &[
    "\\", "n", "r", "t", "\\n", "\\r\\n", "\\t", "\"", "'", "“", "”", "‘", "’", " ", "\n", "\r",
    "x", "中", "【", "】", "(", ")", "（", "）", ":", "：",
];

fn text() -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(TEXTS).prop_map(String::from),
        2 => "\\PC{0,24}",
        1 => any::<String>(),
        2 => vec(select(PIECES), 0..10).prop_map(|v| v.concat()),
    ]
    .boxed()
}

// ---------------------------------------------------------------------------------------------------
// Arbitrary JSON

const JSON_KEYS: &[&str] = &[
    "script_name",
    "character_name",
    "acts_num",
    "script",
    "victims",
    "kill_by_me",
    "is_murderer",
    "Story",
    "Script",
    "Relationship",
    "Stage 1",
    "",
];

fn json_key() -> BoxedStrategy<String> {
    prop_oneof![
        2 => select(JSON_KEYS).prop_map(String::from),
        1 => "\\PC{0,8}",
    ]
    .boxed()
}

fn json_leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        select(vec![0i64, 1, 2, -1, 3, 4_294_967_296, i64::MIN]).prop_map(|n| json!(n)),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null)),
        text().prop_map(Value::String),
    ]
    .boxed()
}

fn json_any() -> BoxedStrategy<Value> {
    json_leaf()
        .prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                vec(inner.clone(), 0..4).prop_map(Value::Array),
                vec((json_key(), inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
        .boxed()
}

/// An object of the given entries (later duplicates win, as when a JSON file repeats a key).
fn object(entries: Vec<(String, Value)>) -> Value {
    Value::Object(entries.into_iter().collect::<Map<String, Value>>())
}

/// A file's contents, `None` = the file is not written.
type File = Option<Vec<u8>>;

/// A messy file: usually the given text, sometimes missing, BOM-prefixed, truncated at a random byte
/// (also inside a UTF-8 sequence), arbitrary text or arbitrary bytes.
fn file_of(s: BoxedStrategy<String>) -> BoxedStrategy<File> {
    prop_oneof![
        1 => Just(None),
        10 => s.clone().prop_map(|t| Some(t.into_bytes())),
        1 => s.clone().prop_map(|t| Some(format!("\u{feff}{t}").into_bytes())),
        1 => (s, any::<Index>()).prop_map(|(t, at)| {
            let b = t.into_bytes();
            let cut = at.index(b.len() + 1);
            Some(b[..cut].to_vec())
        }),
        1 => any::<String>().prop_map(|t| Some(t.into_bytes())),
        1 => vec(any::<u8>(), 0..64).prop_map(Some),
    ]
    .boxed()
}

/// A well-formed file, sometimes with a BOM.
fn tidy_file(s: BoxedStrategy<String>) -> BoxedStrategy<File> {
    prop_oneof![
        9 => s.clone().prop_map(|t| Some(t.into_bytes())),
        1 => s.prop_map(|t| Some(format!("\u{feff}{t}").into_bytes())),
    ]
    .boxed()
}

/// A file that is well-formed unless spoilt: (tidy, messy) drawn together, one kept by `spoil` flags.
fn either(
    tidy: BoxedStrategy<String>,
    messy: BoxedStrategy<String>,
) -> BoxedStrategy<(File, File)> {
    (tidy_file(tidy), file_of(messy)).boxed()
}

/// Which of `n` files are spoilt: none (a well-formed folder with random contents, which exercises the
/// importer to the end), exactly one (the error paths deep inside), or each by a coin toss.
fn spoilt(n: usize) -> BoxedStrategy<Vec<bool>> {
    prop_oneof![
        2 => Just(vec![false; n]),
        3 => (0..n).prop_map(move |i| (0..n).map(|j| j == i).collect()),
        1 => vec(any::<bool>(), n),
    ]
    .boxed()
}

fn pick((tidy, messy): (File, File), spoil: bool) -> File {
    if spoil {
        messy
    } else {
        tidy
    }
}

fn write(path: &Path, content: &File) {
    if let Some(bytes) = content {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, bytes).unwrap();
    }
}

/// Whether a name can be a file name inside the temporary folder (others are given to the importer but
/// no file is written for them).
fn safe_file_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() < 100
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
}

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

// ---------------------------------------------------------------------------------------------------
// WellPlay

const WELLPLAY_NAMES: &[&str] = &["Ada", "Ben", "Cy", "Dora", "李雷", "Mr. O'Neil", "A B"];
const ODD_NAMES: &[&str] = &[
    "",
    " ",
    ".",
    "..",
    "a/b",
    "FSA",
    "script_info",
    "x\u{0}y",
    "\u{feff}Ada",
    "Ada ",
];

fn wellplay_name() -> BoxedStrategy<String> {
    prop_oneof![
        6 => select(WELLPLAY_NAMES).prop_map(String::from),
        1 => select(ODD_NAMES).prop_map(String::from),
        1 => "\\PC{0,12}",
    ]
    .boxed()
}

/// A value that is usually a whole number, sometimes a number-like string, sometimes anything.
fn count_like() -> BoxedStrategy<Value> {
    prop_oneof![
        3 => select(vec![0i64, 1, 2, 3, 5, -1, 4_294_967_296]).prop_map(|n| json!(n)),
        1 => select(vec!["3", " 2 ", "x", "", "-1", "1.5"]).prop_map(|s| json!(s)),
        1 => Just(json!(2.5)),
        1 => json_any(),
    ]
    .boxed()
}

/// 0/1 and the ways a flag can be wrong.
fn flag() -> BoxedStrategy<Value> {
    prop_oneof![
        6 => select(vec![0i64, 1]).prop_map(|n| json!(n)),
        1 => select(vec![2i64, -1]).prop_map(|n| json!(n)),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => select(vec!["0", "1", " 1 ", "yes", ""]).prop_map(|s| json!(s)),
        1 => Just(json!(1.0)),
        1 => json_leaf(),
    ]
    .boxed()
}

/// A text field as the dataset has it: a string or a list of strings.
fn tidy_texts() -> BoxedStrategy<Value> {
    prop_oneof![
        1 => text().prop_map(Value::String),
        2 => vec(text().prop_map(Value::String), 0..4).prop_map(Value::Array),
    ]
    .boxed()
}

/// A text field: a string, a list of strings (with stray non-strings), or anything.
fn texts_value() -> BoxedStrategy<Value> {
    let elem = prop_oneof![
        6 => text().prop_map(Value::String),
        1 => json_leaf(),
        1 => vec(text().prop_map(Value::String), 0..3).prop_map(Value::Array),
    ];
    prop_oneof![
        3 => text().prop_map(Value::String),
        4 => vec(elem, 0..5).prop_map(Value::Array),
        1 => json_any(),
    ]
    .boxed()
}

/// Per-act lists of different lengths (the importer ignores them, but must not trip on them).
fn per_act_list() -> BoxedStrategy<Value> {
    prop_oneof![
        3 => vec(json_leaf(), 0..5).prop_map(Value::Array),
        1 => json_any(),
    ]
    .boxed()
}

const PER_ACT_KEYS: &[&str] = &[
    "stage",
    "open_discuss_rounds",
    "keep_asking",
    "privacy_discuss_rounds",
];

fn tidy_script_info(names: Vec<String>) -> BoxedStrategy<String> {
    let n = names.len();
    (text(), 1u32..4, vec(vec(0u32..4, 0..4), PER_ACT_KEYS.len()))
        .prop_map(move |(title, acts, per_act)| {
            let mut info = json!({
                "agent_num": n,
                "script_name": title,
                "character_name": names,
                "acts_num": acts,
            });
            for (k, v) in PER_ACT_KEYS.iter().zip(per_act) {
                info[*k] = json!(v);
            }
            info.to_string()
        })
        .boxed()
}

fn script_info(names: Vec<String>) -> BoxedStrategy<String> {
    let listed = Value::Array(names.into_iter().map(Value::String).collect());
    let character_name = prop_oneof![
        8 => Just(listed),
        1 => Just(json!([])),
        1 => vec(json_leaf(), 0..4).prop_map(Value::Array),
        1 => json_any(),
    ];
    let script_name = prop_oneof![
        4 => text().prop_map(Value::String),
        1 => json_any(),
    ];
    (
        option::weighted(0.9, script_name),
        option::weighted(0.9, character_name),
        option::weighted(0.8, count_like()),
        option::weighted(0.5, count_like()),
        vec((select(PER_ACT_KEYS), per_act_list()), 0..4),
        vec((json_key(), json_any()), 0..2),
    )
        .prop_map(|(title, names, acts, agents, per_act, extra)| {
            let mut entries: Vec<(String, Value)> = Vec::new();
            entries.extend(title.map(|v| ("script_name".to_string(), v)));
            entries.extend(names.map(|v| ("character_name".to_string(), v)));
            entries.extend(acts.map(|v| ("acts_num".to_string(), v)));
            entries.extend(agents.map(|v| ("agent_num".to_string(), v)));
            entries.extend(per_act.into_iter().map(|(k, v)| (k.to_string(), v)));
            entries.extend(extra);
            object(entries).to_string()
        })
        .boxed()
}

const VICTIMS: &[&str] = &["Lord Ash", "Lady Grey", "Ada", "", " ", "Lord Ash "];
const TEXT_KEYS: &[&str] = &[
    "script",
    "acts_goal",
    "final_goal",
    "acts_performance",
    "secrets",
    "questions",
];

fn tidy_character_json() -> BoxedStrategy<String> {
    let victims_and_flags = vec(select(vec!["Lord Ash", "Lady Grey"]), 0..3).prop_flat_map(|v| {
        let n = v.len();
        (Just(v), vec(0u8..2, n))
    });
    (
        vec((select(TEXT_KEYS), tidy_texts()), 0..7),
        victims_and_flags,
        0u8..2,
    )
        .prop_map(|(texts, (victims, kills), murderer)| {
            let mut entries: Vec<(String, Value)> =
                texts.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            entries.push(("victims".into(), json!(victims)));
            entries.push(("kill_by_me".into(), json!(kills)));
            entries.push(("is_murderer".into(), json!(murderer)));
            object(entries).to_string()
        })
        .boxed()
}

fn character_json() -> BoxedStrategy<String> {
    let victims = prop_oneof![
        6 => vec(select(VICTIMS).prop_map(|s| json!(s)), 0..4).prop_map(Value::Array),
        1 => vec(json_leaf(), 0..3).prop_map(Value::Array),
        1 => json_any(),
    ];
    let kill_by_me = prop_oneof![
        6 => vec(flag(), 0..5).prop_map(Value::Array),
        1 => json_any(),
    ];
    (
        vec((select(TEXT_KEYS), texts_value()), 0..7),
        option::weighted(0.8, victims),
        option::weighted(0.8, kill_by_me),
        option::weighted(0.8, flag()),
        option::weighted(0.3, count_like()),
        vec((json_key(), json_any()), 0..2),
    )
        .prop_map(|(texts, victims, kills, murderer, acts, extra)| {
            let mut entries: Vec<(String, Value)> =
                texts.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            entries.extend(victims.map(|v| ("victims".to_string(), v)));
            entries.extend(kills.map(|v| ("kill_by_me".to_string(), v)));
            entries.extend(murderer.map(|v| ("is_murderer".to_string(), v)));
            entries.extend(acts.map(|v| ("acts_num".to_string(), v)));
            entries.extend(extra);
            object(entries).to_string()
        })
        .boxed()
}

const CSV_HEADER: &[&str] = &[
    "value", "type", "question", "a", "b", "c", "d", "e", "truth",
];
const OPTION_TEXTS: &[&str] = &[
    "Ada",
    "Ben, the butler",
    "He said \"no\"",
    "two\nlines",
    "『线索』",
    "  padded  ",
];

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// A CSV field as written in the file: plain, properly quoted, or broken.
fn csv_cell() -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(vec!["a", "b", "c", "d", "A", " b ", "x", "", "ab", "f", "Ada"]).prop_map(String::from),
        2 => select(vec![
            "\"quoted, with comma\"",
            "\"has \"\"quotes\"\"\"",
            "\"unbalanced",
            "bad\"quote",
            "\"line\nbreak\"",
            "\"x\"y",
            "\"\"",
            "\u{feff}value",
        ])
        .prop_map(String::from),
        1 => text().prop_map(|t| quote(&t)),
        1 => text(),
    ]
    .boxed()
}

/// A well-formed question: category, kind, question, 2 to 5 options then empties, and correct letters
/// among the options, written in the dataset's styles (`a`, `ab`, `a,b`).
fn tidy_question() -> BoxedStrategy<Vec<(&'static str, String)>> {
    (2usize..=5)
        .prop_flat_map(|k| {
            (
                select(vec!["a", "b", "c", "A"]),
                any::<bool>(),
                prop_oneof![select(OPTION_TEXTS).prop_map(String::from), text()],
                vec(select(OPTION_TEXTS), k),
                subsequence((0..k).collect::<Vec<_>>(), 1..=k),
                select(vec!["", ",", ", ", ";"]),
            )
        })
        .prop_map(|(value, multiple, question, options, truth, sep)| {
            let truth: Vec<String> = truth
                .iter()
                .take(if multiple { 5 } else { 1 })
                .map(|&i| ((b'a' + i as u8) as char).to_string())
                .collect();
            let mut cells = vec![
                ("value", value.to_string()),
                ("type", if multiple { "b" } else { "a" }.to_string()),
                ("question", quote(&question)),
                ("truth", quote(&truth.join(sep))),
            ];
            for (i, col) in ["a", "b", "c", "d", "e"].into_iter().enumerate() {
                cells.push((col, options.get(i).map(|o| quote(o)).unwrap_or_default()));
            }
            cells
        })
        .boxed()
}

/// The header in a random order, the option columns keeping theirs (options are read in header order).
fn tidy_header() -> BoxedStrategy<Vec<&'static str>> {
    Just(CSV_HEADER.to_vec())
        .prop_shuffle()
        .prop_map(|mut h| {
            let mut letters = ["a", "b", "c", "d", "e"].into_iter();
            for col in h.iter_mut() {
                if col.len() == 1 {
                    *col = letters.next().expect("five option columns");
                }
            }
            h
        })
        .boxed()
}

fn tidy_csv() -> BoxedStrategy<String> {
    (
        tidy_header(),
        vec(tidy_question(), 0..6),
        select(vec!["\n", "\r\n", "\r"]),
        any::<bool>(),
    )
        .prop_map(|(header, rows, eol, final_eol)| {
            let mut out = header.join(",");
            for row in rows {
                out.push_str(eol);
                let cells: Vec<&str> = header
                    .iter()
                    .map(|h| {
                        row.iter()
                            .find(|(c, _)| c == h)
                            .map(|(_, v)| v.as_str())
                            .unwrap_or("")
                    })
                    .collect();
                out.push_str(&cells.join(","));
            }
            if final_eol {
                out.push_str(eol);
            }
            out
        })
        .boxed()
}

/// A row shaped like a question (nine fields) with plausible and wrong values.
fn question_row() -> BoxedStrategy<Vec<String>> {
    let option_cell = prop_oneof![
        2 => Just(String::new()),
        3 => text().prop_map(|t| quote(&t)),
        1 => csv_cell(),
    ];
    (
        select(vec!["a", "b", "c", "A", " c", "d", ""]),
        select(vec!["a", "b", "B", "c", ""]),
        prop_oneof![text().prop_map(|t| quote(&t)), csv_cell()],
        vec(option_cell, 5),
        select(vec![
            "a",
            "b",
            "ab",
            "\"a,b\"",
            "A;C",
            "ac/",
            "",
            "f",
            "z",
            "a b",
            "1",
            "\"a，b\"",
        ]),
    )
        .prop_map(|(value, kind, question, options, truth)| {
            let mut row = vec![value.to_string(), kind.to_string(), question];
            row.extend(options);
            row.push(truth.to_string());
            row
        })
        .boxed()
}

/// CSV with ragged rows, unbalanced quotes, odd headers and line ends.
fn csv_text() -> BoxedStrategy<String> {
    let header = prop_oneof![
        4 => Just(CSV_HEADER.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
        2 => subsequence(CSV_HEADER.to_vec(), 0..=CSV_HEADER.len())
            .prop_shuffle()
            .prop_map(|v| v.into_iter().map(String::from).collect()),
        1 => vec(csv_cell(), 0..10),
    ];
    let row = prop_oneof![
        4 => question_row(),
        1 => vec(csv_cell(), 0..12),
    ];
    (
        header,
        vec(row, 0..8),
        select(vec!["\n", "\r\n", "\r"]),
        any::<bool>(),
    )
        .prop_map(|(header, rows, eol, final_eol)| {
            let mut out = header.join(",");
            for r in rows {
                out.push_str(eol);
                out.push_str(&r.join(","));
            }
            if final_eol {
                out.push_str(eol);
            }
            out
        })
        .boxed()
}

/// One WellPlay folder: the names files are written for, and the files.
#[derive(Debug, Clone)]
struct WellPlayCase {
    names: Vec<String>,
    info: File,
    characters: Vec<File>,
    csvs: Vec<File>,
    fsa: File,
}

fn wellplay_case() -> impl Strategy<Value = WellPlayCase> {
    let names = prop_oneof![
        4 => vec(select(WELLPLAY_NAMES).prop_map(String::from), 1..5),
        1 => vec(wellplay_name(), 0..5),
    ];
    names
        .prop_flat_map(|names| {
            let n = names.len();
            (
                Just(names.clone()),
                either(tidy_script_info(names.clone()), script_info(names)),
                vec(either(tidy_character_json(), character_json()), n),
                vec(either(tidy_csv(), csv_text()), n),
                either(tidy_csv(), csv_text()),
                spoilt(2 + 2 * n),
            )
        })
        .prop_map(|(names, info, characters, csvs, fsa, spoil)| {
            let n = names.len();
            WellPlayCase {
                info: pick(info, spoil[0]),
                characters: characters
                    .into_iter()
                    .zip(&spoil[1..=n])
                    .map(|(f, &s)| pick(f, s))
                    .collect(),
                csvs: csvs
                    .into_iter()
                    .zip(&spoil[n + 1..=2 * n])
                    .map(|(f, &s)| pick(f, s))
                    .collect(),
                fsa: pick(fsa, spoil[2 * n + 1]),
                names,
            }
        })
}

fn import_wellplay(case: &WellPlayCase) -> Result<Script, ImportError> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("Case (4 people)");
    write(&dir.join("json/script_info.json"), &case.info);
    for (i, name) in case.names.iter().enumerate() {
        if safe_file_name(name) {
            write(
                &wellplay::character_json_path(&dir, name),
                &case.characters[i],
            );
            write(&dir.join(format!("final_result/{name}.csv")), &case.csvs[i]);
        }
    }
    write(&dir.join("final_result/FSA.csv"), &case.fsa);
    wellplay::import(&dir)
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn wellplay_import_survives_arbitrary_folders(case in wellplay_case()) {
        check_import(import_wellplay(&case));
    }
}

// ---------------------------------------------------------------------------------------------------
// MIRAGE

const MIRAGE_TITLES: &[&str] = &[
    "The Eastern Star Cruise Ship",
    "Fox Hotel",
    "The Final Performance of a Big Star",
    "狐狸旅馆",
    "Unknown Title",
    "x",
];
/// Names of a well-formed cast (the culprits of the known titles among them).
const CAST_NAMES: &[&str] = &[
    "Manager Xiu",
    "Captain Hong",
    "Sky Dog",
    "Zetong Hei (Sky Dog)",
    "Ichiro Kiryu (Nopperabo)",
    "修经理",
    "桐生一郎（滑头鬼）",
    "John",
    "Mary Ann",
    "Doctor",
];
/// Names that collide, nest or are barely names.
const ODD_MIRAGE_NAMES: &[&str] = &[
    "Nopperabo",
    "john",
    "Qi Liu",
    "Liu Qi",
    "A",
    "(",
    "Dr. (X",
    "",
    " ",
    "İ",
    "Manager",
];
const STAGE_KEYS: &[&str] = &[
    "Stage 1",
    "Stage 2",
    "stage2",
    "Stage_3",
    "Act 1",
    "act-2",
    "第一幕",
    "第2幕",
    "第十幕",
    "第二十一阶段",
    "第幕",
    "Stage",
    "Stage 0",
    "Stage x",
    "Stage 99999999999",
    "Stage -1",
    "第零幕",
    "第十十幕",
];
const FIELD_KEYS: &[&str] = &[
    "Story",
    "story",
    " STORY ",
    "Script",
    "Relationship",
    "Relationships",
    "Performance",
    "Purpose",
    "Ability",
    "abilities",
    "人物故事",
    "人物剧本",
    "人物关系",
    "你的表现",
    "你的目的",
    "其他能力",
    "Other",
];
const PLACES: &[&str] = &["Manager Xiu's Room", "Deck", "甲板", "Cabin (3)"];

fn mirage_name() -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(CAST_NAMES).prop_map(String::from),
        3 => select(ODD_MIRAGE_NAMES).prop_map(String::from),
        1 => "\\PC{0,12}",
    ]
    .boxed()
}

fn stage_key() -> BoxedStrategy<String> {
    prop_oneof![
        5 => select(STAGE_KEYS).prop_map(String::from),
        1 => "(Stage|Act|第)\\PC{0,4}",
    ]
    .boxed()
}

/// A relationship text: `Name (role): text` lines and 【Name】 mentions.
fn relationship_text() -> BoxedStrategy<String> {
    vec(
        (
            mirage_name(),
            select(vec!["", " (friend)", " (victim)", "（死者）", " (", ")"]),
            select(vec![": ", "：", " - ", ""]),
            text(),
            any::<bool>(),
        ),
        0..5,
    )
    .prop_map(|lines| {
        lines
            .into_iter()
            .map(|(name, role, sep, t, bracket)| {
                if bracket {
                    format!("【{name}】{t}")
                } else {
                    format!("{name}{role}{sep}{t}")
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    })
    .boxed()
}

fn field_string() -> BoxedStrategy<String> {
    prop_oneof![
        2 => text(),
        1 => relationship_text(),
    ]
    .boxed()
}

/// A field value as the dataset has it: a text or a list of texts.
fn tidy_field_value() -> BoxedStrategy<Value> {
    prop_oneof![
        3 => field_string().prop_map(Value::String),
        1 => vec(field_string().prop_map(Value::String), 0..3).prop_map(Value::Array),
    ]
    .boxed()
}

/// A field value: a text, a list with nulls, numbers and nested lists, or anything.
fn field_value() -> BoxedStrategy<Value> {
    let elem = prop_oneof![
        6 => field_string().prop_map(Value::String),
        1 => Just(Value::Null),
        1 => json_leaf(),
        1 => vec(text().prop_map(Value::String), 0..3).prop_map(Value::Array),
    ];
    prop_oneof![
        4 => field_string().prop_map(Value::String),
        3 => vec(elem, 0..4).prop_map(Value::Array),
        1 => json_any(),
    ]
    .boxed()
}

fn tidy_fields() -> BoxedStrategy<Value> {
    vec(
        (
            select(FIELD_KEYS).prop_map(String::from),
            tidy_field_value(),
        ),
        0..7,
    )
    .prop_map(object)
    .boxed()
}

fn character_fields() -> BoxedStrategy<Value> {
    prop_oneof![
        8 => vec((select(FIELD_KEYS).prop_map(String::from), field_value()), 0..7).prop_map(object),
        1 => Just(json!({})),
        1 => json_any(),
    ]
    .boxed()
}

/// Stage keys in one of the accepted styles.
fn tidy_stage_key(n: usize, style: u8) -> String {
    const CN: &[&str] = &["零", "一", "二", "三", "四", "五"];
    match style {
        0 => format!("Stage {n}"),
        1 => format!("Act {n}"),
        2 => format!("stage{n}"),
        _ => format!("第{}幕", CN[n]),
    }
}

/// A well-formed script.json over `names`: single-stage, or 1 to 4 stages each with some of the cast,
/// with texts shown to everyone next to the stages.
fn tidy_script_json(names: Vec<String>) -> BoxedStrategy<String> {
    let single = vec(tidy_fields(), names.len()).prop_map({
        let names = names.clone();
        move |fields| object(names.iter().cloned().zip(fields).collect())
    });
    let n = names.len();
    let stage = subsequence(names, 0..=n).prop_flat_map(|cast| {
        let k = cast.len();
        (Just(cast), vec(tidy_fields(), k))
    });
    let staged = (vec(stage, 1..5), 0u8..4, option::of(field_string())).prop_map(
        |(stages, style, shared)| {
            let mut entries: Vec<(String, Value)> = stages
                .into_iter()
                .enumerate()
                .map(|(i, (cast, fields))| {
                    (
                        tidy_stage_key(i + 1, style),
                        object(cast.into_iter().zip(fields).collect()),
                    )
                })
                .collect();
            entries.extend(shared.map(|s| ("Background".to_string(), Value::String(s))));
            object(entries)
        },
    );
    prop_oneof![single, staged]
        .prop_map(|v| v.to_string())
        .boxed()
}

fn cast_object() -> BoxedStrategy<Value> {
    vec((mirage_name(), character_fields()), 0..5)
        .prop_map(object)
        .boxed()
}

/// Top-level texts shown to everyone (or, in a single-stage script, junk that is neither).
fn shared_entries() -> BoxedStrategy<Vec<(String, Value)>> {
    vec(
        (
            select(vec!["Background", "背景", "Stage", "Note"]).prop_map(String::from),
            field_value(),
        ),
        0..2,
    )
    .boxed()
}

fn script_json() -> BoxedStrategy<String> {
    let single = (cast_object(), shared_entries()).prop_map(|(cast, shared)| {
        let mut m = match cast {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        m.extend(shared);
        Value::Object(m)
    });
    let stage_value = prop_oneof![
        6 => cast_object(),
        1 => Just(json!({})),
        1 => json_any(),
    ];
    let staged =
        (vec((stage_key(), stage_value), 0..4), shared_entries()).prop_map(|(stages, shared)| {
            let mut entries = stages;
            entries.extend(shared);
            object(entries)
        });
    prop_oneof![
        3 => single,
        3 => staged,
        1 => Just(json!({})),
        1 => json_any(),
    ]
    .prop_map(|v| v.to_string())
    .boxed()
}

/// Well-formed clues: owners (characters or places) mapped to lists of texts, optionally by stage.
fn tidy_clues_json(names: Vec<String>) -> BoxedStrategy<String> {
    let mut owners_pool = names;
    owners_pool.extend(PLACES.iter().map(|s| s.to_string()));
    let owners = vec(
        (
            select(owners_pool),
            prop_oneof![
                3 => vec(text().prop_map(Value::String), 0..4).prop_map(Value::Array),
                1 => vec((json_key(), text().prop_map(Value::String)), 0..3).prop_map(object),
            ],
        ),
        0..6,
    )
    .prop_map(object);
    let staged = (vec(owners.clone(), 1..4), 0u8..4).prop_map(|(stages, style)| {
        object(
            stages
                .into_iter()
                .enumerate()
                .map(|(i, o)| (tidy_stage_key(i + 1, style), o))
                .collect(),
        )
    });
    prop_oneof![2 => owners, 1 => staged]
        .prop_map(|v| v.to_string())
        .boxed()
}

fn clue_value() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => field_value(),
        1 => vec((json_key(), field_value()), 0..3).prop_map(object),
        1 => Just(json!([[["deeply"], "nested"], [[]]])),
    ]
    .boxed()
}

fn clues_json() -> BoxedStrategy<String> {
    let owner = prop_oneof![
        3 => mirage_name(),
        1 => select(PLACES).prop_map(String::from),
    ];
    let owners = vec((owner, clue_value()), 0..6).prop_map(object);
    let stage_value = prop_oneof![
        4 => owners.clone(),
        1 => Just(json!({})),
        1 => json_any(),
    ];
    let staged = vec((stage_key(), stage_value), 0..4).prop_map(object);
    prop_oneof![3 => owners, 2 => staged, 1 => json_any()]
        .prop_map(|v| v.to_string())
        .boxed()
}

/// The truth file: the title mapped to an account that mentions the cast, or the account alone.
fn tidy_truth_json(title: String, names: Vec<String>) -> BoxedStrategy<String> {
    let account = vec(
        prop_oneof![select(names).prop_map(|n| format!("{n} ")), text()],
        0..6,
    )
    .prop_map(|parts| parts.concat());
    prop_oneof![
        4 => account.clone().prop_map(move |a| json!({ title.clone(): a }).to_string()),
        1 => account.clone().prop_map(|a| Value::String(a).to_string()),
        1 => account,
    ]
    .boxed()
}

fn truth_json(title: String) -> BoxedStrategy<String> {
    let key = prop_oneof![
        3 => Just(title.clone()),
        1 => Just(title.to_uppercase()),
        1 => Just(format!(" {title}!")),
        1 => select(MIRAGE_TITLES).prop_map(String::from),
    ];
    prop_oneof![
        4 => vec((key, field_value()), 0..3).prop_map(|e| object(e).to_string()),
        1 => field_value().prop_map(|v| v.to_string()),
        1 => text(),
        1 => json_any().prop_map(|v| v.to_string()),
    ]
    .boxed()
}

#[derive(Debug, Clone)]
struct MirageCase {
    title: String,
    script_file: &'static str,
    script: File,
    clues_file: &'static str,
    clues: File,
    truth: File,
    truth_in_options: bool,
    culprits: Vec<String>,
}

fn mirage_case() -> impl Strategy<Value = MirageCase> {
    let cast = prop_oneof![
        4 => vec(select(CAST_NAMES).prop_map(String::from), 1..6),
        1 => vec(mirage_name(), 1..6),
    ];
    (select(MIRAGE_TITLES), cast)
        .prop_flat_map(|(title, names)| {
            let culprits = prop_oneof![
                2 => Just(Vec::new()),
                3 => vec(select(names.clone()), 1..3),
                1 => vec(mirage_name(), 1..3),
            ];
            (
                Just(title.to_string()),
                select(vec!["script.json", "人物剧本.json"]),
                either(tidy_script_json(names.clone()), script_json()),
                select(vec!["clues.json", "线索.json"]),
                either(tidy_clues_json(names.clone()), clues_json()),
                either(
                    tidy_truth_json(title.to_string(), names),
                    truth_json(title.to_string()),
                ),
                any::<bool>(),
                culprits,
                spoilt(3),
            )
        })
        .prop_map(
            |(
                title,
                script_file,
                script,
                clues_file,
                clues,
                truth,
                in_options,
                culprits,
                spoil,
            )| {
                MirageCase {
                    title,
                    script_file,
                    script: pick(script, spoil[0]),
                    clues_file,
                    clues: pick(clues, spoil[1]),
                    truth: pick(truth, spoil[2]),
                    truth_in_options: in_options,
                    culprits,
                }
            },
        )
}

fn import_mirage(case: &MirageCase) -> Result<Script, ImportError> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(&case.title);
    std::fs::create_dir_all(&dir).unwrap();
    write(&dir.join(case.script_file), &case.script);
    write(&dir.join(case.clues_file), &case.clues);
    let truth: Option<PathBuf> = if case.truth_in_options {
        let p = tmp.path().join("truth-given.json");
        write(&p, &case.truth);
        Some(p)
    } else {
        write(&tmp.path().join("Truth.json"), &case.truth);
        None
    };
    let opts = MirageOptions {
        culprits: case.culprits.clone(),
        truth,
    };
    mirage::import(&dir, &opts)
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn mirage_import_survives_arbitrary_folders(case in mirage_case()) {
        check_import(import_mirage(&case));
    }
}

// ---------------------------------------------------------------------------------------------------
// Fixed cases: the shapes the issue names, checked on every run whatever the random draw.

#[test]
fn example_round_trips_through_the_tree_mutator() {
    let text = apply_tree_edits(&[]).expect("example writes as TOML");
    Script::parse(&text, Path::new("night-ferry.toml")).expect("unchanged example stays valid");
}

#[test]
fn wellplay_wrong_shapes_are_errors_not_panics() {
    let info = |names: Value| {
        Some(
            json!({"script_name": "T", "character_name": names, "acts_num": 2})
                .to_string()
                .into_bytes(),
        )
    };
    let csv = Some(b"value,type,question,a,b,truth\nc,a,Who?,Ada,Ben,a\n".to_vec());
    let cases: Vec<(Value, Value)> = vec![
        // kill_by_me longer and shorter than victims
        (
            json!(["Ada"]),
            json!({"script": ["x"], "victims": ["V"], "kill_by_me": [1, 0, 1], "is_murderer": 1}),
        ),
        (
            json!(["Ada"]),
            json!({"script": ["x"], "victims": ["V", "W"], "kill_by_me": [1], "is_murderer": 1}),
        ),
        // numbers where strings are expected, missing keys, nested arrays
        (
            json!(["Ada"]),
            json!({"script": 7, "victims": [1, 2], "kill_by_me": "1"}),
        ),
        (json!(["Ada"]), json!({})),
        (
            json!(["Ada"]),
            json!({"script": [["a", ["b"]]], "secrets": [null, 3]}),
        ),
        (json!([1, 2]), json!({})),
        (json!("Ada"), json!({})),
    ];
    for (names, character) in cases {
        let case = WellPlayCase {
            names: vec!["Ada".into()],
            info: info(names),
            characters: vec![Some(character.to_string().into_bytes())],
            csvs: vec![csv.clone()],
            fsa: Some(
                b"\xef\xbb\xbfvalue,type,question,a,b,truth\r\na,b,\"unbalanced,x,y,ab\r\n"
                    .to_vec(),
            ),
        };
        check_import(import_wellplay(&case));
    }
}

#[test]
fn mirage_wrong_shapes_are_errors_not_panics() {
    let scripts = [
        json!({"Stage": {"Manager Xiu": {"Script": "x"}}}),
        json!({"Stage 1": {}, "Stage 2": {"Manager Xiu": {}}}),
        json!({"Stage 1": [[["nested"]]]}),
        json!({"Manager Xiu": {"Script": [["a"], null, 3], "Relationship": "Qi Liu (victim): dead"}, "A": {}}),
        json!({"第幕": {"修经理": {"人物剧本": "x"}}, "第一幕": {"修经理": {"人物剧本": "y"}}}),
        json!({}),
    ];
    for script in scripts {
        let case = MirageCase {
            title: "The Eastern Star Cruise Ship".into(),
            script_file: "script.json",
            script: Some(script.to_string().into_bytes()),
            clues_file: "clues.json",
            clues: Some(
                json!({"Stage 1": {"Deck": [[]]}, "Manager Xiu": {"a": ["b"]}})
                    .to_string()
                    .into_bytes(),
            ),
            truth: Some(b"not json at all".to_vec()),
            truth_in_options: false,
            culprits: Vec::new(),
        };
        check_import(import_mirage(&case));
    }
}
