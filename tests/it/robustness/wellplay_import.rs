//! The WellPlay importer on folders with random, spoilt or wrongly shaped files.

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::sample::{select, subsequence};
use serde_json::{json, Value};
use sleuth::script::import::{wellplay, ImportError};
use sleuth::script::Script;

use crate::robustness::inputs::{
    either, json_any, json_key, json_leaf, object, pick, safe_file_name, spoilt, text, write, File,
};
use crate::robustness::{check_import, config};

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
