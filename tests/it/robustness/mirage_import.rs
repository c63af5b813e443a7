//! The MIRAGE importer on folders with random, spoilt or wrongly shaped files.

use std::path::PathBuf;

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::sample::{select, subsequence};
use serde_json::{json, Map, Value};
use sleuth::script::import::mirage::{self, MirageOptions};
use sleuth::script::import::ImportError;
use sleuth::script::Script;

use crate::robustness::inputs::{
    either, json_any, json_key, json_leaf, object, pick, spoilt, text, write, File,
};
use crate::robustness::{check_import, config};

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
/// Clue owners that are no character: places, documents, and people who do not play (the culprit of a
/// known title among them).
const PLACES: &[&str] = &[
    "Manager Xiu's Room",
    "Deck",
    "甲板",
    "Cabin (3)",
    "Richard",
    "Di Huang",
    "黄迪",
    "李察德",
    "Public Clue 1",
    "Hotel Customer List",
];
/// Sentences naming someone as dead or as the victim, `{}` standing for a name.
const DEATHS: &[&str] = &[
    "Victim: {}",
    "Victim:\n{} (male, 40)",
    "{} (male) [Deceased]",
    "{} was murdered.",
    "They found {}'s body.",
    "The death of {} shocked us.",
    "the deceased was named {}",
    "受害人：{}",
    "{}【死者】",
    "{}遇害了。",
    "杀害{}的人",
];

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

/// A sentence naming someone (a cast name, an odd name or a clue owner) as dead.
fn death_text() -> BoxedStrategy<String> {
    let who = prop_oneof![
        3 => mirage_name(),
        1 => select(PLACES).prop_map(String::from),
    ];
    (select(DEATHS), who)
        .prop_map(|(pattern, name)| pattern.replace("{}", &name))
        .boxed()
}

fn field_string() -> BoxedStrategy<String> {
    prop_oneof![
        4 => text(),
        2 => relationship_text(),
        1 => death_text(),
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
    suspects: Vec<String>,
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
            let suspects = prop_oneof![
                3 => Just(Vec::new()),
                1 => vec(
                    prop_oneof![
                        2 => mirage_name(),
                        1 => select(PLACES).prop_map(String::from),
                    ],
                    0..4
                ),
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
                (culprits, suspects),
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
                (culprits, suspects),
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
                    suspects,
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
        suspects: case.suspects.clone(),
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
            suspects: Vec::new(),
        };
        check_import(import_mirage(&case));
    }
}
