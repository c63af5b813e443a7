//! Whole-folder imports of small synthetic MIRAGE scripts: the mapping of the module documentation, end to end.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{import, MirageOptions};
use crate::import::ImportError;
use crate::{Language, Script};

/// Writes `<root>/<title>/script.json`, `clues.json` (one clue about a place when none is given: the
/// file is required) and `<root>/Truth.json` when given.
fn write(
    root: &Path,
    title: &str,
    script: &Value,
    clues: Option<&Value>,
    truth: Option<&Value>,
) -> PathBuf {
    let dir = root.join(title);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("script.json"), script.to_string()).unwrap();
    let placeholder = json!({"Hall": ["A torn note."]});
    std::fs::write(
        dir.join("clues.json"),
        clues.unwrap_or(&placeholder).to_string(),
    )
    .unwrap();
    if let Some(t) = truth {
        std::fs::write(root.join("Truth.json"), t.to_string()).unwrap();
    }
    dir
}

fn opts(culprits: &[&str]) -> MirageOptions {
    MirageOptions {
        culprits: culprits.iter().map(|s| s.to_string()).collect(),
        truth: None,
        suspects: Vec::new(),
    }
}

fn person(story: &str, script: &str, relationship: &str) -> Value {
    json!({
        "Story": story,
        "Script": script,
        "Relationship": relationship,
        "Performance": "Stay calm.",
        "Purpose": "Find the culprit.",
        "Ability": "You cannot lie."
    })
}

#[test]
fn stages_are_played_in_number_order() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "Stage 2": { "Ann": { "Script": "Second." }, "Bo": { "Script": "B two." } },
        "Stage 10": { "Ann": { "Script": "Tenth." } },
        "Stage 1": { "Bo": { "Story": "Bo story.", "Script": "B one." }, "Ann": { "Story": "Ann story.", "Script": "First." } },
    });
    let dir = write(tmp.path(), "Order", &script, None, None);
    let s = import(&dir, &opts(&["Ann"])).unwrap();
    assert_eq!(s.acts, 3);
    let names: Vec<&str> = s.characters.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["Bo", "Ann"], "first-seen order in play order");
    assert_eq!(s.characters[1].acts, ["First.", "Second.", "Tenth."]);
    assert_eq!(s.characters[0].acts, ["B one.", "B two."]);
    assert_eq!(s.characters[0].story, "Bo story.");
}

#[test]
fn a_later_stage_story_opens_that_stage() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "Stage 1": { "Ann": { "Story": "Ann grew up by the sea.", "Script": "First." }, "Bo": { "Story": "Bo story.", "Script": "B one." } },
        "Stage 2": { "Ann": { "Story": "Ann's true name is Mara.", "Script": "Second." }, "Bo": { "Story": "Bo story.", "Script": "B two." } },
    });
    let dir = write(tmp.path(), "Stories", &script, None, None);
    let s = import(&dir, &opts(&["Ann"])).unwrap();
    let ann = s.character("Ann").unwrap();
    assert_eq!(ann.story, "Ann grew up by the sea.");
    assert_eq!(ann.acts, ["First.", "Ann's true name is Mara.\n\nSecond."]);
    // A story repeated unchanged is not repeated in the act.
    assert_eq!(s.character("Bo").unwrap().acts, ["B one.", "B two."]);
}

fn two_rooms() -> (Value, Value, Value) {
    let script = json!({
        "Manager Ru": person("Ru runs the bar.", "You went to the deck at eight.", "Tom Bell (Mate): He owes you money.\nSinger Yo: Your employee."),
        "Singer Yo": person("Yo sings at the bar.", "You rehearsed at eight.", "Tom Bell: He courted you.\nManager Ru: Your boss."),
        "Cook Pan": person("Pan cooks.", "You baked bread at eight.", "Tom Bell: He insulted your soup.\nGuest Lee (Passenger): A stranger."),
    });
    let clues = json!({
        "Corpse Information": ["A wound on the chest.", "\"A wet sleeve.\""],
        "Manager Ru's Room": ["A revolver with five bullets."],
        "Singer Yo": ["A letter from Tom Bell."],
        "Kitchen": ["A missing knife.", ""],
    });
    let truth = json!({ "Two Rooms": "Manager Ru shot Bell Tom on the deck.\\nNobody saw it." });
    (script, clues, truth)
}

#[test]
fn clues_belong_to_characters_or_places() {
    let tmp = tempfile::tempdir().unwrap();
    let (script, clues, truth) = two_rooms();
    let dir = write(tmp.path(), "Two Rooms", &script, Some(&clues), Some(&truth));
    let s = import(&dir, &opts(&["manager ru"])).unwrap();
    assert_eq!(s.clues.len(), 5, "empty texts dropped");
    let ids: Vec<&str> = s.clues.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4", "c5"]);
    assert_eq!(s.clues[1].text, "A wet sleeve.", "cleaned");
    assert_eq!(s.clues[0].location.as_deref(), Some("Corpse Information"));
    assert_eq!(s.clues[0].about, None);
    assert!(!s.clues[0].key);
    assert_eq!(s.clues[2].location.as_deref(), Some("Manager Ru's Room"));
    assert!(s.clues[2].key, "the location names the culprit");
    assert_eq!(s.clues[3].about.as_deref(), Some("Singer Yo"));
    assert_eq!(s.clues[3].title, "Singer Yo");
    assert!(!s.clues[3].key);
    assert!(s.clues.iter().all(|c| c.act.is_none()));

    assert_eq!(s.murderers(), ["Manager Ru"]);
    assert_eq!(
        s.victims[0].name, "Tom Bell",
        "listed by all three, in the truth"
    );
    assert_eq!(s.characters[0].killed, ["Tom Bell"]);
    assert_eq!(s.truth.culprits[0].by, ["Manager Ru"]);
    assert_eq!(
        s.truth.narrative,
        "Manager Ru shot Bell Tom on the deck.\nNobody saw it."
    );
    assert_eq!(s.language, Language::En);
    assert_eq!(s.source.as_deref(), Some("mirage"));
    assert_eq!(s.acts, 1);
    assert!(s.errors().is_empty(), "{:?}", s.errors());
}

#[test]
fn clue_about_the_culprit_is_key() {
    let tmp = tempfile::tempdir().unwrap();
    let (script, clues, _) = two_rooms();
    let dir = write(tmp.path(), "Two Rooms", &script, Some(&clues), None);
    let s = import(&dir, &opts(&["Singer Yo"])).unwrap();
    assert!(s.clues[3].key && s.clues[3].about.as_deref() == Some("Singer Yo"));
    assert!(!s.clues[2].key);
    assert!(s.truth.narrative.is_empty(), "no Truth.json");
}

#[test]
fn unmatched_culprit_is_a_format_error_listing_the_characters() {
    let tmp = tempfile::tempdir().unwrap();
    let (script, clues, _) = two_rooms();
    let dir = write(tmp.path(), "Two Rooms", &script, Some(&clues), None);
    match import(&dir, &opts(&["Zed"])) {
        Err(ImportError::Format {
            field, expected, ..
        }) => {
            assert_eq!(field, "culprit");
            assert!(
                expected.contains("Zed") && expected.contains("Manager Ru, Singer Yo, Cook Pan"),
                "{expected}"
            );
        }
        other => panic!("expected a Format error, got {other:?}"),
    }
}

#[test]
fn unknown_title_needs_a_culprit() {
    let tmp = tempfile::tempdir().unwrap();
    let (script, _, _) = two_rooms();
    let dir = write(tmp.path(), "Two Rooms", &script, None, None);
    let err = import(&dir, &opts(&[])).unwrap_err().to_string();
    assert!(
        err.contains("--culprit NAME") && err.contains("culprit"),
        "{err}"
    );
    // A title of the table whose culprit is neither a character nor a person of the clue owners.
    let dir = write(
        tmp.path(),
        "The Final Performance of a Big Star",
        &script,
        None,
        None,
    );
    let err = import(&dir, &opts(&[])).unwrap_err().to_string();
    assert!(
        err.contains("\"Richard\" matches none of: Manager Ru, Singer Yo, Cook Pan"),
        "{err}"
    );
}

#[test]
fn multi_stage_script_merges_stages() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "Stage 1": {
            "Fox": person("Aki keeps the inn.", "You served tea at nine.", "Old Tanuki (Innkeeper): You owe him rent.\nBadger: A regular guest."),
            "Badger": person("Badger digs.", "You dug at nine.", "Old Tanuki: He lent you money.\nFox: Your friend."),
            "Crow": person("Crow watches.", "You slept at nine.", "Old Tanuki: Your uncle."),
        },
        "intro": "Rain falls on the Moon Inn.",
        "Stage 2": {
            "Aki Mori (Fox)": { "Story": "", "Script": "At ten you heard a cry.", "Relationship": "Old Tanuki (Innkeeper): You owe him rent.\nBadger: A regular guest." },
            "Badger": { "Script": ["At ten you ran.", "You hid the rope."], "Relationship": "Old Tanuki: You pushed him." },
            "Crow": { "Script": "At ten you woke.", "Purpose": ["Find the culprit.", "Protect Fox."] },
        },
    });
    let clues = json!({
        "Stage 1": { "Well": ["A torn sleeve."], "Badger's Room": ["A wet rope."] },
        "Stage 2": { "Fox": ["A cold tea cup."] },
        "Loose Page": "Someone paid Badger.",
    });
    let truth = json!({ "moon inn": "Badger pushed Old Tanuki into the well." });
    let dir = write(tmp.path(), "Moon Inn", &script, Some(&clues), Some(&truth));
    let s = import(&dir, &opts(&["Badger"])).unwrap();

    assert_eq!(s.title, "Moon Inn");
    assert_eq!(s.acts, 2);
    assert_eq!(s.premise, "Rain falls on the Moon Inn.");
    let names: Vec<&str> = s.characters.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["Aki Mori (Fox)", "Badger", "Crow"],
        "renamed in stage 2"
    );
    let fox = &s.characters[0];
    assert_eq!(fox.story, "Aki keeps the inn.");
    assert_eq!(
        fox.acts,
        ["You served tea at nine.", "At ten you heard a cry."]
    );
    assert_eq!(fox.relationships.len(), 1, "same text not repeated");
    let badger = &s.characters[1];
    assert_eq!(badger.acts[1], "At ten you ran.\nYou hid the rope.");
    assert_eq!(badger.relationships.len(), 2, "changed text appended");
    assert_eq!(s.characters[2].goals, ["Find the culprit.", "Protect Fox."]);
    assert_eq!(s.characters[2].abilities, ["You cannot lie."]);
    assert_eq!(s.characters[2].performance, ["Stay calm."]);

    assert_eq!(s.murderers(), ["Badger"]);
    assert_eq!(s.victims[0].name, "Old Tanuki");
    assert_eq!(s.truth.narrative, "Badger pushed Old Tanuki into the well.");

    type Row<'a> = (&'a str, Option<&'a str>, Option<&'a str>, bool, Option<u32>);
    let summary: Vec<Row> = s
        .clues
        .iter()
        .map(|c| {
            (
                c.id.as_str(),
                c.about.as_deref(),
                c.location.as_deref(),
                c.key,
                c.act,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("c1", None, Some("Well"), false, Some(1)),
            ("c2", None, Some("Badger's Room"), true, Some(1)),
            ("c3", Some("Aki Mori (Fox)"), None, false, Some(2)),
            ("c4", None, Some("Loose Page"), false, None),
        ]
    );
    assert!(s.errors().is_empty(), "{:?}", s.errors());
    let back = Script::parse(&s.to_toml(), Path::new("moon.toml")).unwrap();
    assert_eq!(back.characters.len(), 3);
    assert_eq!(back.clues.len(), 4);
}

#[test]
fn truth_option_overrides_the_default_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (script, clues, truth) = two_rooms();
    let dir = write(tmp.path(), "Two Rooms", &script, Some(&clues), Some(&truth));
    let other = tmp.path().join("account.json");
    std::fs::write(&other, json!("Ru did it.").to_string()).unwrap();
    let s = import(
        &dir,
        &MirageOptions {
            culprits: vec!["Manager Ru".into()],
            truth: Some(other),
            suspects: Vec::new(),
        },
    )
    .unwrap();
    assert_eq!(s.truth.narrative, "Ru did it.");
    assert_eq!(
        s.victims[0].name, "the victim",
        "Tom Bell is not in this account"
    );
    let missing = MirageOptions {
        culprits: vec!["Manager Ru".into()],
        truth: Some(tmp.path().join("nope.json")),
        suspects: Vec::new(),
    };
    assert!(matches!(
        import(&dir, &missing),
        Err(ImportError::Read { .. })
    ));
}

#[test]
fn chinese_script_is_detected() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "林医生": person("你是镇上的医生。", "晚上八点你去了书房。", "【周老爷】是你的病人。【王管家】常来取药。"),
        "王管家": person("你是周家的管家。", "晚上八点你在厨房。", "【周老爷】是你的主人。"),
        "陈小姐": person("你是周家的客人。", "晚上八点你在花园。", "【周老爷】是你的舅舅。【林医生】很和气。"),
    });
    let clues = json!({
        "林医生的房间": ["一瓶安眠药。"],
        "王管家": ["一串钥匙。"],
        "书房": ["打翻的茶杯。"],
    });
    let dir = write(tmp.path(), "雨夜山庄", &script, Some(&clues), None);
    let s = import(&dir, &opts(&["林医生"])).unwrap();
    assert_eq!(s.language, Language::Zh);
    assert_eq!(s.victims[0].name, "周老爷");
    assert_eq!(s.murderers(), ["林医生"]);
    assert!(s.clues[0].key && s.clues[0].location.as_deref() == Some("林医生的房间"));
    assert_eq!(s.clues[1].about.as_deref(), Some("王管家"));
    assert!(!s.clues[2].key);
    assert!(s.errors().is_empty(), "{:?}", s.errors());

    // Nobody named in the relationships: the generic Chinese victim.
    let bare = json!({
        "林医生": person("你是医生。", "你在书房。", "你们不熟。"),
        "王管家": person("你是管家。", "你在厨房。", ""),
    });
    let dir = write(tmp.path(), "空宅", &bare, None, None);
    let s = import(&dir, &opts(&["王管家"])).unwrap();
    assert_eq!(s.victims[0].name, "死者");
    assert_eq!(s.characters[1].killed, ["死者"]);
    assert!(s.errors().is_empty(), "{:?}", s.errors());
}

#[test]
fn bad_layouts_are_format_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write(tmp.path(), "Bad", &json!({ "Ann": 3 }), None, None);
    assert!(matches!(
        import(&dir, &opts(&["Ann"])),
        Err(ImportError::Format { field, .. }) if field == "Ann"
    ));
    let dir = write(
        tmp.path(),
        "Bad2",
        &json!({ "Ann": { "Script": [1] }, "Bo": { "Script": "x" } }),
        None,
        None,
    );
    assert!(matches!(
        import(&dir, &opts(&["Ann"])),
        Err(ImportError::Format { field, .. }) if field == "Ann.Script[0]"
    ));
    let missing = tmp.path().join("Nowhere");
    assert!(matches!(
        import(&missing, &opts(&["Ann"])),
        Err(ImportError::Format { field, .. }) if field == "(file)"
    ));
}

fn three_people() -> Value {
    json!({
        "Manager Ru": person("You run the inn.", "At eight you were in the cellar.", "Tom Bell (guest): rich."),
        "Cook Lan": person("You cook.", "At eight you were in the kitchen.", "Tom Bell (guest): rude."),
        "Guard Mo": person("You guard.", "At eight you were at the gate.", "Tom Bell (guest): loud."),
    })
}

fn import_logged_at(dir: &Path) -> Result<super::Imported, ImportError> {
    super::import_logged(dir, &MirageOptions::default())
}

#[test]
fn the_account_names_the_culprit_over_the_table_with_a_warning() {
    // A title of the built-in table (English and Chinese) whose account names another character.
    for (title, table_culprit, chars) in [
        (
            "Night at the Museum",
            "Manager Sa",
            ["Manager Sa", "Security Wei", "Curio He"],
        ),
        ("博物馆奇妙夜", "撒干事", ["撒干事", "魏保安", "何古董"]),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let script: serde_json::Map<String, Value> = chars
            .iter()
            .map(|c| (c.to_string(), person("x", "y", "z")))
            .collect();
        let account = if title.is_ascii() {
            "Tom was rich. The real murderer of Tom is\n【Security Wei】. Manager Sa slept."
        } else {
            "汤姆很富有。杀害汤姆的真凶是【魏保安】。撒干事在睡觉。"
        };
        let dir = write(
            tmp.path(),
            title,
            &Value::Object(script),
            None,
            Some(&json!({ title: account })),
        );
        let imported = import_logged_at(&dir).unwrap();
        assert_eq!(imported.script.murderers(), vec![chars[1]], "{title}");
        let w = &imported.warnings[0];
        assert!(
            w.message.contains(chars[1]) && w.message.contains(table_culprit),
            "{w}"
        );
        assert!(w.path.ends_with("Truth.json"), "{w}");
    }
}

#[test]
fn an_account_naming_no_one_or_several_equally_leaves_the_table() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "Doctor Fang": person("x", "y", "z"),
        "Madam Hong": person("x", "y", "z"),
    });
    // Two characters in one murderer sentence: ambiguous, the table wins, with a warning.
    let dir = write(
        tmp.path(),
        "Bride in Filial Dress",
        &script,
        None,
        Some(&json!({"Bride in Filial Dress": "Madam Hong saw the murderer, Doctor Fang, leave."})),
    );
    let imported = import_logged_at(&dir).unwrap();
    assert_eq!(imported.script.murderers(), vec!["Doctor Fang"]);
    assert!(
        imported.warnings[0].message.contains("several"),
        "{:?}",
        imported.warnings
    );
    // No sentence about a murderer: the table, silently.
    std::fs::write(
        tmp.path().join("Truth.json"),
        json!({"Bride in Filial Dress": "Madam Hong went home."}).to_string(),
    )
    .unwrap();
    let imported = import_logged_at(&dir).unwrap();
    assert_eq!(imported.script.murderers(), vec!["Doctor Fang"]);
    assert!(
        imported.warnings.iter().all(|w| w.field == "(victim)"),
        "only the unnamed victim: {:?}",
        imported.warnings
    );
}

#[test]
fn a_misspelt_folder_finds_its_truth_by_edit_distance() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write(
        tmp.path(),
        "The Quiet Harbuor",
        &three_people(),
        None,
        Some(&json!({
            "The Quiet Harbour": "The culprit is Cook Lan.",
            "The Loud Harbour": "The culprit is Guard Mo.",
        })),
    );
    let imported = import_logged_at(&dir).unwrap();
    assert_eq!(imported.script.truth.narrative, "The culprit is Cook Lan.");
    assert_eq!(
        imported.script.murderers(),
        vec!["Cook Lan"],
        "title not in the table: the account decides"
    );
    assert!(imported.warnings[0].message.contains("closest title"));
    // Far from every key: no truth, so no culprit.
    let far = write(
        tmp.path(),
        "Something Else Entirely",
        &three_people(),
        None,
        None,
    );
    assert!(import_logged_at(&far).is_err());
    // Chinese titles by characters.
    assert!(super::truth::title_distance("狐狸旅馆", "狐狸旅店") <= 0.25);
    assert!(
        super::truth::title_distance("Artical 22 School Rules", "Article 22 School Rules") <= 0.1
    );
}

#[test]
fn broken_inputs_are_errors_naming_file_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let mut script = three_people();
    script["Cook Lan"].as_object_mut().unwrap().remove("Script");
    let dir = write(tmp.path(), "No Script", &script, None, None);
    let err = import(&dir, &opts(&["Manager Ru"]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("script.json") && err.contains("Cook Lan.Script"),
        "{err}"
    );

    let dir = write(tmp.path(), "No Clues", &three_people(), None, None);
    std::fs::remove_file(dir.join("clues.json")).unwrap();
    let err = import(&dir, &opts(&["Manager Ru"]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("clues.json"), "{err}");

    std::fs::write(dir.join("clues.json"), json!({"Hall": []}).to_string()).unwrap();
    let err = import(&dir, &opts(&["Manager Ru"]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("clues.json") && err.contains("at least one clue"),
        "{err}"
    );

    let dir = write(tmp.path(), "Bad Truth", &three_people(), None, None);
    let truth = tmp.path().join("truth.txt");
    std::fs::write(&truth, "Ru did it.").unwrap();
    let err = import(
        &dir,
        &MirageOptions {
            culprits: vec!["Manager Ru".into()],
            truth: Some(truth),
            suspects: Vec::new(),
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("truth.txt") && err.contains("valid JSON"),
        "{err}"
    );
}
