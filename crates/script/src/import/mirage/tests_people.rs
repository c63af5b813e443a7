//! Whole-folder imports of small synthetic scripts for the people the files do not list: a culprit who
//! does not play (and the suspects list it brings), `--suspect`, and the victim named from the texts.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{import, import_logged, MirageOptions};
use crate::import::ImportError;
use crate::Script;

/// Writes `<root>/<title>/script.json`, `clues.json` and `<root>/Truth.json`.
fn write(root: &Path, title: &str, script: &Value, clues: &Value, truth: &Value) -> PathBuf {
    let dir = root.join(title);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("script.json"), script.to_string()).unwrap();
    std::fs::write(dir.join("clues.json"), clues.to_string()).unwrap();
    std::fs::write(root.join("Truth.json"), json!({ title: truth }).to_string()).unwrap();
    dir
}

fn opts(culprits: &[&str], suspects: &[&str]) -> MirageOptions {
    MirageOptions {
        culprits: culprits.iter().map(|s| s.to_string()).collect(),
        truth: None,
        suspects: suspects.iter().map(|s| s.to_string()).collect(),
    }
}

fn role(script: &str, relationship: &str) -> Value {
    json!({ "Story": "", "Script": script, "Relationship": relationship, "Purpose": "Find the truth." })
}

/// Two detectives investigate people who do not play; the account names the culprit, Rex Vane.
fn detectives() -> (Value, Value, Value) {
    let script = json!({
        "Stage 1": {
            "Ada Quill": role("Tom Bell was murdered last night. Ask Ben about Rex Vane.", "Ben Ott (Agent): your colleague."),
            "Ben Ott": role("You saw Mia Sol leave the hotel at two, before Tom Bell was shot.", "Ada Quill (Assistant): your colleague."),
        },
        "Stage 2": {
            "Ada Quill": role("Tom Bell's body was tied to a chair. Mia Sol has a gun.", "Ben Ott (Agent): your colleague."),
            "Ben Ott": role("Rex Vane is Tom Bell's brother.", "Ada Quill (Assistant): your colleague."),
        },
    });
    let clues = json!({
        "Tom Bell's Suite": ["Two glasses of wine on the table."],
        "Mia Sol": ["You found Mia Sol at home; the night guard called her a taxi."],
        "Rex Vane": ["Rex Vane smoked in his room."],
        "Hotel Night Guard": ["The guard slept through the night."],
        "Public Note 1": ["News: the star Tom Bell signed a film. His brother Rex Vane runs a charity."],
    });
    let truth = json!(
        "Mia Sol tied Tom Bell to a chair and left. The murderer was Rex Vane, who shot his brother Tom Bell."
    );
    (script, clues, truth)
}

fn suspect_rows(s: &Script) -> Vec<(&str, bool)> {
    s.suspects
        .iter()
        .map(|x| (x.name.as_str(), x.culprit))
        .collect()
}

#[test]
fn a_culprit_who_does_not_play_comes_from_the_account_with_the_suspects() {
    let tmp = tempfile::tempdir().unwrap();
    let (script, clues, truth) = detectives();
    let dir = write(tmp.path(), "Last Night", &script, &clues, &truth);
    let imported = import_logged(&dir, &opts(&[], &[])).unwrap();
    let s = &imported.script;
    assert!(s.murderers().is_empty(), "no player did it");
    assert_eq!(s.culprits(), ["Rex Vane"]);
    assert_eq!(
        suspect_rows(s),
        [("Mia Sol", false), ("Rex Vane", true)],
        "the people of the clue owners who do not play; places, possessives, digits left out"
    );
    assert_eq!(
        s.suspects[1].description, "His brother Rex Vane runs a charity.",
        "from the public clue, not from Rex Vane's own card"
    );
    assert_eq!(s.victims[0].name, "Tom Bell");
    assert_eq!(s.truth.culprits[0].by, ["Rex Vane"]);
    assert!(s.characters.iter().all(|c| c.killed.is_empty()));
    let rex = s.clues.iter().find(|c| c.title == "Rex Vane").unwrap();
    assert!(
        rex.key && rex.about.is_none(),
        "a clue about the culprit is key"
    );
    assert!(s.errors().is_empty(), "{:?}", s.errors());
    let w = imported
        .warnings
        .iter()
        .find(|w| w.field == "Rex Vane")
        .expect("the vote among outsiders is warned about");
    assert!(
        w.path.ends_with("clues.json") && w.message.contains("Mia Sol, Rex Vane"),
        "{w}"
    );
    // Through the file: the suspects list survives.
    let back = Script::parse(&s.to_toml(), Path::new("x.toml")).unwrap();
    assert_eq!(back.suspect_names(), ["Mia Sol", "Rex Vane"]);
}

#[test]
fn suspect_option_sets_the_list_and_the_culprit_may_be_named() {
    let tmp = tempfile::tempdir().unwrap();
    let (script, clues, truth) = detectives();
    let dir = write(tmp.path(), "Last Night", &script, &clues, &truth);
    // The players and one more person as suspects; the culprit by option among them.
    let s = import(
        &dir,
        &opts(
            &["Kit Moor"],
            &["ada quill", "Ben Ott", "Kit Moor", "Rex Vane"],
        ),
    )
    .unwrap();
    assert_eq!(
        suspect_rows(&s),
        [
            ("Ada Quill", false),
            ("Ben Ott", false),
            ("Kit Moor", true),
            ("Rex Vane", false)
        ]
    );
    assert_eq!(s.culprits(), ["Kit Moor"]);
    assert!(s.errors().is_empty(), "{:?}", s.errors());
    // A culprit left out of the list is an error naming the option.
    let err = import(&dir, &opts(&["Ada Quill"], &["Ben Ott", "Rex Vane"]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--suspect") && err.contains("Ada Quill"),
        "{err}"
    );
    // A culprit who is neither a player nor a suspect.
    match import(&dir, &opts(&["Zed"], &[])) {
        Err(ImportError::Format {
            field, expected, ..
        }) => {
            assert_eq!(field, "culprit");
            assert!(
                expected.contains("non-player suspect: Mia Sol, Rex Vane"),
                "{expected}"
            );
        }
        other => panic!("expected a Format error, got {other:?}"),
    }
}

#[test]
fn chinese_people_who_do_not_play_are_suspects() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "韩文": role("昨晚周福被杀了。王纱和李强都在酒店。", "【沈离】你的同事。"),
        "沈离": role("你看见王纱在酒吧里喝酒。", "【韩文】你的同事。"),
    });
    let clues = json!({
        "周福的房间": ["桌上有两杯酒。"],
        "王纱": ["王纱在家里哭。"],
        "李强": ["李强在片场。"],
        "酒吧": ["酒吧里没有人。"],
        "公开线索1": ["新闻：李强是周福的弟弟。"],
    });
    let truth = json!("王纱离开了酒店。真凶是李强，他开枪杀死了周福。");
    let dir = write(tmp.path(), "最后的演出", &script, &clues, &truth);
    let s = import(&dir, &opts(&[], &[])).unwrap();
    assert_eq!(s.culprits(), ["李强"]);
    assert_eq!(suspect_rows(&s), [("王纱", false), ("李强", true)]);
    assert_eq!(s.suspects[1].description, "新闻：李强是周福的弟弟。");
    assert_eq!(s.victims[0].name, "周福");
    assert!(s.errors().is_empty(), "{:?}", s.errors());
}

#[test]
fn victims_are_named_by_labels_death_phrases_or_not_at_all() {
    let tmp = tempfile::tempdir().unwrap();
    let clues = json!({ "Study": ["A broken cup."] });
    let truth = json!("Ann poisoned Director Lo. Earlier, Old Kay was murdered by bandits.");
    // A "Victim:" label in two characters' relationship texts.
    let labelled = json!({
        "Ann": role("You met Lo at nine.", "Victim: Director Lo (Lo Wen), the curator.\nSuspect: Cy."),
        "Cy": role("You slept.", "Victim:\nLo Wen (male, 60)"),
    });
    let dir = write(tmp.path(), "Label", &labelled, &clues, &truth);
    let s = import(&dir, &opts(&["Ann"], &[])).unwrap();
    assert_eq!(
        s.victims[0].name, "Director Lo",
        "the alias counts for its name"
    );
    assert_eq!(s.characters[0].killed, ["Director Lo"]);
    assert!(s.errors().is_empty(), "{:?}", s.errors());

    // "X was murdered", "X's body", "the body of X", across characters and clues; a back-story death
    // named less often.
    let phrases = json!({
        "Ann": role("Director Lo was murdered in the study. After Director Lo's death you hid.", "Cy: a friend."),
        "Cy": role("You saw the body of Director Lo after dinner. Old Kay's death was long ago.", "Ann: a friend."),
    });
    let study = json!({ "Study": ["A broken cup near Director Lo's body."] });
    let dir = write(tmp.path(), "Phrases", &phrases, &study, &truth);
    assert_eq!(
        import(&dir, &opts(&["Ann"], &[])).unwrap().victims[0].name,
        "Director Lo"
    );

    // 死者 labels in Chinese.
    let zh = json!({
        "林医生": role("晚上你去了书房。", "受害人：\n周老爷（周福）男，60岁\n嫌疑人：王管家"),
        "王管家": role("晚上你在厨房。", "周老爷（男）【死者】你的主人\n嫌疑人：林医生"),
    });
    let dir = write(
        tmp.path(),
        "书房",
        &zh,
        &json!({ "书房": ["打翻的茶杯。"] }),
        &json!("林医生毒死了周老爷。"),
    );
    let s = import(&dir, &opts(&["林医生"], &[])).unwrap();
    assert_eq!(s.victims[0].name, "周老爷");

    // Nobody named: the placeholder, with a warning naming the file.
    let bare = json!({
        "Ann": role("You slept.", "Cy: a friend."),
        "Cy": role("You read.", "Ann: a friend."),
    });
    let dir = write(
        tmp.path(),
        "Bare",
        &bare,
        &clues,
        &json!("Nobody saw anything."),
    );
    let imported = import_logged(&dir, &opts(&["Ann"], &[])).unwrap();
    assert_eq!(imported.script.victims[0].name, "the victim");
    let w = &imported.warnings[0];
    assert!(
        w.path.ends_with("script.json") && w.field == "(victim)",
        "{w}"
    );
    // A back-story death the account does not tell is no victim either.
    let back_story = json!({
        "Ann": role("Old Sam was murdered years ago.", "Cy: a friend."),
        "Cy": role("You miss Old Sam. Old Sam's death broke you.", "Ann: a friend."),
    });
    let dir = write(tmp.path(), "Back Story", &back_story, &clues, &truth);
    assert_eq!(
        import(&dir, &opts(&["Ann"], &[])).unwrap().victims[0].name,
        "the victim"
    );
}
