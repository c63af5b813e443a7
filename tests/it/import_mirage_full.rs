//! The full English MIRAGE set (`../shared/datasets/mirage-en`): every script imports and validates with
//! the culprit the dataset's description names (`shared/datasets/README.md`), the true account winning
//! over the built-in table where they disagree; the culprit who does not play is a suspect; victims are
//! named where the texts name them; every script plays under the MIRAGE protocol.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use sleuth::agent::Framework;
use sleuth::game::{Protocol, ProtocolSettings};

use sleuth::script::import::mirage::{import_logged, Imported, MirageOptions, KNOWN_CULPRITS};
use sleuth::script::Script;

/// Title → (the culprit as imported, whether a character plays them, the victim as imported).
/// Culprits per the README ("Night at the Museum" per `Truth.json`); victims as the texts name them,
/// "the victim" where no text clearly does (see `docs/script-format.md`).
const EXPECTED: &[(&str, &str, bool, &str)] = &[
    (
        "Artical 22 School Rules",
        "Fuqing Huang",
        true,
        "the victim",
    ),
    ("Bride in Filial Dress", "Doctor Fang", true, "Xu Boqing"),
    ("Fox Hotel", "Ichiro Kiryu (Nopperabo)", true, "the victim"),
    (
        "Li Chuan Strange Talk Book",
        "Elderly in Tattered",
        true,
        "the victim",
    ),
    ("Night at the Museum", "Security Wei", true, "Director Zhen"),
    ("Raging Sea of Rest Life", "John", true, "Old Black"),
    (
        "The Eastern Star Cruise Ship",
        "Manager Xiu",
        true,
        "Qi Liu",
    ),
    (
        "The Final Performance of a Big Star",
        "Richard",
        false,
        "Tianchuan Li",
    ),
];

fn import(root: &Path, title: &str, opts: &MirageOptions) -> Imported {
    import_logged(&root.join(title), opts).unwrap_or_else(|e| panic!("{title}: {e}"))
}

/// Plays one imported script under the MIRAGE protocol (simulated model, one seed, two iterations to
/// keep it quick) and checks the vote: every ballot names a suspect other than the voter.
async fn play(script: Arc<Script>, gw: sleuth::llm::Gateway) {
    let mut protocol = ProtocolSettings {
        protocol: Protocol::Mirage,
        ..ProtocolSettings::default()
    };
    protocol.mirage.iterations = 2;
    let title = script.title.clone();
    let r = common::play_and_check_votes(script.clone(), protocol, Framework::Mirage, gw).await;
    assert!(r.winner.is_some(), "{title}: no winner");
    assert!(r.mirage_scores.is_some(), "{title}: MIRAGE metrics");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_english_mirage_script_imports_validates_and_plays_with_its_culprit_and_victim() {
    let Some(d) = common::datasets() else { return };
    let root = d.join("mirage-en");
    let tmp = tempfile::tempdir().expect("temp dir");
    let listed = std::fs::read_dir(&root)
        .expect("mirage-en")
        .filter(|e| e.as_ref().is_ok_and(|e| e.path().is_dir()))
        .count();
    assert_eq!(listed, EXPECTED.len(), "every folder of the set is checked");
    let mut scripts = Vec::new();
    for (title, culprit, plays, victim) in EXPECTED {
        let imported = import(&root, title, &MirageOptions::default());
        for w in &imported.warnings {
            eprintln!("{title}: warning: {w}");
        }
        let errors = imported.script.errors();
        assert!(errors.is_empty(), "{title}: {errors:?}");
        // Through the file, as a user would: save, then load (which validates).
        let path = tmp.path().join(format!("{title}.toml"));
        imported.script.save(&path).expect("save");
        let s = Script::load(&path).unwrap_or_else(|e| panic!("{title}: {e}"));
        assert_eq!(s.culprits(), vec![*culprit], "{title}");
        assert_eq!(s.murderers().len(), usize::from(*plays), "{title}");
        assert_eq!(s.victims[0].name, *victim, "{title}");
        assert_eq!(s.truth.culprits[0].victim, *victim, "{title}");
        assert!(!s.truth.narrative.is_empty(), "{title}: truth found");
        if *victim == "the victim" {
            assert!(
                imported.warnings.iter().any(|w| w.field == "(victim)"),
                "{title}: an unnamed victim is warned about"
            );
        }
        eprintln!(
            "{title}: culprit {culprit}, victim {victim}, suspects {:?}",
            s.suspect_names()
        );
        scripts.push(Arc::new(s));
    }
    // Two games at a time: the machines have two cores.
    let gw = common::simulated_gateway().await;
    for pair in scripts.chunks(2) {
        futures::future::join_all(pair.iter().map(|s| play(s.clone(), gw.clone()))).await;
    }
}

/// "The Final Performance of a Big Star": two players investigate; the vote is among the people of the
/// clue owners who do not play, the culprit Richard ("Richard Li" in the account) among them.
#[test]
fn big_star_votes_among_people_who_do_not_play() {
    let Some(d) = common::datasets() else { return };
    let root = d.join("mirage-en");
    let title = "The Final Performance of a Big Star";
    let imported = import(&root, title, &MirageOptions::default());
    let s = &imported.script;
    assert!(s.murderers().is_empty(), "no player is the culprit");
    assert_eq!(s.characters.len(), 2);
    // The README's seven (its "Jonny" is spelt "Johnny" in clues.json), and Feng Shan, who has clue
    // cards of his own and whom the account clears by an alibi.
    assert_eq!(
        s.suspect_names(),
        [
            "Di Huang",
            "Feng Shan",
            "Richard",
            "Xiong Zhou",
            "Sha Wang",
            "Zhi Lv",
            "Johnny",
            "Si Qi"
        ]
    );
    assert!(
        s.non_player_suspects().count() == 8,
        "the players are not suspects"
    );
    let richard = s.suspects.iter().find(|x| x.name == "Richard").unwrap();
    assert!(richard.culprit && s.is_culprit("Richard"));
    assert_eq!(s.suspects.iter().filter(|x| x.culprit).count(), 1);
    assert_eq!(s.truth.culprits[0].by, ["Richard"]);
    assert!(s.characters.iter().all(|c| c.killed.is_empty()));
    assert!(
        imported
            .warnings
            .iter()
            .any(|w| w.path.ends_with("clues.json") && w.field == "Richard"),
        "{:?}",
        imported.warnings
    );

    // `--suspect` reproduces the reference implementation's seven candidates.
    let seven = [
        "Di Huang",
        "Richard",
        "Xiong Zhou",
        "Sha Wang",
        "Zhi Lv",
        "Johnny",
        "Si Qi",
    ];
    let opts = MirageOptions {
        suspects: seven.iter().map(|s| s.to_string()).collect(),
        ..MirageOptions::default()
    };
    let s = import(&root, title, &opts).script;
    assert_eq!(s.suspect_names(), seven);
    assert_eq!(s.culprits(), ["Richard"]);
    assert!(s.errors().is_empty(), "{:?}", s.errors());
}

/// Night at the Museum: the built-in table says Manager Sa, the account Security Wei; the import warns.
#[test]
fn disagreement_with_the_table_is_warned() {
    let Some(d) = common::datasets() else { return };
    let imported = import(
        &d.join("mirage-en"),
        "Night at the Museum",
        &MirageOptions::default(),
    );
    assert!(
        imported
            .warnings
            .iter()
            .any(|w| w.message.contains("Security Wei") && w.message.contains("Manager Sa")),
        "{:?}",
        imported.warnings
    );
}

/// The names a MIRAGE folder gives people, read from the raw files (independently of the importer): its
/// characters (the keys holding a `Script`, in any stage) and its clue owners (in any stage).
fn people_of(dir: &Path) -> Vec<String> {
    fn keys(v: &serde_json::Value, character: bool, out: &mut Vec<String>) {
        if let serde_json::Value::Object(m) = v {
            for (k, x) in m {
                match x {
                    serde_json::Value::Object(inner)
                        if character && inner.contains_key("Script") =>
                    {
                        out.push(k.clone())
                    }
                    serde_json::Value::Object(_) => keys(x, character, out),
                    _ if !character => out.push(k.clone()),
                    _ => {}
                }
            }
        }
    }
    let read = |f: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{f}: {e}"))
    };
    let mut out = Vec::new();
    keys(&read("script.json"), true, &mut out);
    keys(&read("clues.json"), false, &mut out);
    out
}

/// Every English entry of the built-in culprit table names a person of its script as the English set
/// spells them (a character or a clue owner, exactly), and every script of the set has an entry. The
/// Chinese entries are checked against the reference implementation in the importer's unit tests
/// (`mirage/tests_table.rs`); the Chinese set is not on this machine.
#[test]
fn every_english_culprit_of_the_table_is_a_person_of_its_script() {
    let Some(d) = common::datasets() else { return };
    let root = d.join("mirage-en");
    let mut folders: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    assert_eq!(folders.len(), 8, "{folders:?}");
    for folder in &folders {
        let entries: Vec<_> = KNOWN_CULPRITS
            .iter()
            .filter(|s| s.en_titles.contains(&folder.as_str()))
            .collect();
        assert_eq!(entries.len(), 1, "{folder}: one table entry");
        let people = people_of(&root.join(folder));
        assert!(!entries[0].en.is_empty(), "{folder}: a culprit");
        for name in entries[0].en {
            assert!(
                people.iter().any(|p| p == name),
                "{folder}: the table's culprit \"{name}\" is none of its people {people:?}"
            );
        }
    }
    for entry in KNOWN_CULPRITS {
        assert!(
            entry
                .en_titles
                .iter()
                .any(|t| folders.iter().any(|f| f == t)),
            "{:?}: no folder of the English set",
            entry.en_titles
        );
    }
}
