//! Building blocks of the random inputs: dataset-like texts, arbitrary JSON, and files that are
//! well-formed or spoilt.

use std::path::Path;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{select, Index};
use serde_json::{json, Map, Value};

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
pub(crate) const PIECES: &[&str] = &[
    "\\", "n", "r", "t", "\\n", "\\r\\n", "\\t", "\"", "'", "“", "”", "‘", "’", " ", "\n", "\r",
    "x", "中", "【", "】", "(", ")", "（", "）", ":", "：",
];

pub(crate) fn text() -> BoxedStrategy<String> {
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

pub(crate) fn json_key() -> BoxedStrategy<String> {
    prop_oneof![
        2 => select(JSON_KEYS).prop_map(String::from),
        1 => "\\PC{0,8}",
    ]
    .boxed()
}

pub(crate) fn json_leaf() -> BoxedStrategy<Value> {
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

pub(crate) fn json_any() -> BoxedStrategy<Value> {
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
pub(crate) fn object(entries: Vec<(String, Value)>) -> Value {
    Value::Object(entries.into_iter().collect::<Map<String, Value>>())
}

/// A file's contents, `None` = the file is not written.
pub(crate) type File = Option<Vec<u8>>;

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
pub(crate) fn either(
    tidy: BoxedStrategy<String>,
    messy: BoxedStrategy<String>,
) -> BoxedStrategy<(File, File)> {
    (tidy_file(tidy), file_of(messy)).boxed()
}

/// Which of `n` files are spoilt: none (a well-formed folder with random contents, which exercises the
/// importer to the end), exactly one (the error paths deep inside), or each by a coin toss.
pub(crate) fn spoilt(n: usize) -> BoxedStrategy<Vec<bool>> {
    prop_oneof![
        2 => Just(vec![false; n]),
        3 => (0..n).prop_map(move |i| (0..n).map(|j| j == i).collect()),
        1 => vec(any::<bool>(), n),
    ]
    .boxed()
}

pub(crate) fn pick((tidy, messy): (File, File), spoil: bool) -> File {
    if spoil {
        messy
    } else {
        tidy
    }
}

pub(crate) fn write(path: &Path, content: &File) {
    if let Some(bytes) = content {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, bytes).unwrap();
    }
}

/// Whether a name can be a file name inside the temporary folder (others are given to the importer but
/// no file is written for them).
pub(crate) fn safe_file_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() < 100
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
}
