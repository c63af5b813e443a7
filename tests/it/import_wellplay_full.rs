//! Imports all 12 English WellPlay scripts from `../shared/datasets/wellplay-en` (skipped when absent, a
//! failure under CI), validates each, round-trips it through save and load, checks the per-character
//! question counts against the CSVs read here by an independent parser, and plays each once under the
//! WellPlay protocol with PLAYER* agents (simulated model, one seed, one round per act to keep it quick).

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use sleuth::agent::Framework;
use sleuth::game::{Protocol, ProtocolSettings};

use sleuth::script::import::wellplay;
use sleuth::script::{Category, Script};

/// Records of a CSV, read with the `csv` crate (independently of the importer's reader), header
/// dropped and blank records skipped.
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes())
        .records()
        .map(|r| {
            r.expect("CSV record")
                .iter()
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .skip(1)
        .filter(|r| r.iter().any(|f| !f.trim().is_empty()))
        .collect()
}

/// Per-character rows by category letter (a/b/c), over every `final_result/*.csv` but the omniscient one.
fn csv_categories(dir: &Path, into: &mut BTreeMap<String, usize>) {
    for entry in std::fs::read_dir(dir.join("final_result")).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if !name.ends_with(".csv") || name == "FSA.csv" || name == "GM.csv" {
            continue;
        }
        for r in csv_rows(&std::fs::read_to_string(&p).unwrap()) {
            *into.entry(r[0].trim().to_lowercase()).or_default() += 1;
        }
    }
}

/// Plays one imported script under the WellPlay protocol and checks what a researcher would look at
/// first: everyone voted, for someone else among the suspects; every scored question of every
/// character was evaluated (three repeats each).
async fn play(script: Arc<Script>, gw: sleuth::llm::Gateway) {
    let mut protocol = ProtocolSettings {
        protocol: Protocol::WellPlay,
        ..ProtocolSettings::default()
    };
    protocol.wellplay.rounds = 1;
    let title = script.title.clone();
    let r = common::play_and_check_votes(script.clone(), protocol, Framework::Player, gw).await;
    assert_eq!(
        r.votes.len(),
        script.characters.len(),
        "{title}: {:?}",
        r.votes
    );
    assert!(r.winner.is_some(), "{title}: no winner");
    let scored = script
        .choice
        .iter()
        .filter(|q| q.character.is_some() && !q.unscored)
        .count();
    let asked = r.choice.as_ref().map_or(0, |c| c.overall.questions);
    assert_eq!(asked as usize, 3 * scored, "{title}: questions evaluated");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_english_scripts_import_validate_count_as_the_paper_and_play() {
    let Some(d) = common::datasets() else { return };
    let root = d.join("wellplay-en");
    let tmp = tempfile::tempdir().unwrap();
    let mut expected: BTreeMap<String, usize> = BTreeMap::new();
    let mut got: BTreeMap<String, usize> = BTreeMap::new();
    let mut scripts = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let imported = wellplay::import_logged(&dir, false).unwrap_or_else(|e| panic!("{e}"));
        let s = imported.script;
        let errors = s.errors();
        assert!(errors.is_empty(), "{}: {errors:?}", dir.display());
        let out = tmp.path().join(format!("{}.toml", scripts.len()));
        s.save(&out).unwrap();
        let back = Script::load(&out).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.choice.len(), s.choice.len());
        assert_eq!(
            back.choice.iter().filter(|q| q.full_access).count(),
            s.choice.iter().filter(|q| q.full_access).count()
        );
        for q in back.choice.iter().filter(|q| q.character.is_some()) {
            let key = match q.category {
                Category::Objective => "a",
                Category::Reasoning => "b",
                Category::Relations => "c",
            };
            *got.entry(key.to_string()).or_default() += 1;
        }
        csv_categories(&dir, &mut expected);
        scripts.push(Arc::new(back));
    }
    assert_eq!(scripts.len(), 12);
    assert_eq!(expected.values().sum::<usize>(), 1482, "{expected:?}");
    assert_eq!(got, expected);

    // Two games at a time: the machines have two cores.
    let gw = common::simulated_gateway().await;
    for pair in scripts.chunks(2) {
        futures::future::join_all(pair.iter().map(|s| play(s.clone(), gw.clone()))).await;
    }
}

/// Every question records the rule PLAYER*'s reference scorer judged it by, and it survives a save and
/// load: multiple-choice rows count when the true letter is among the picks, and ask for as many picks
/// as their text says ("the two people you most suspect"); single-choice rows with two true letters
/// accept either. Counted against the CSVs read here.
#[test]
fn every_question_carries_the_reference_rule() {
    use sleuth::script::ChoiceRule;
    let Some(d) = common::datasets() else { return };
    let root = d.join("wellplay-en");
    let tmp = tempfile::tempdir().unwrap();
    let (mut two_people, mut either) = (0, 0);
    let (mut csv_two_people, mut csv_either) = (0, 0);
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(dir.join("final_result")).unwrap() {
            let p = f.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if !name.ends_with(".csv") || name == "FSA.csv" || name == "GM.csv" {
                continue;
            }
            for r in csv_rows(&std::fs::read_to_string(&p).unwrap()) {
                let cell = |i: usize| r.get(i).map(String::as_str).unwrap_or("");
                let truth_letters = cell(8).chars().filter(char::is_ascii_alphabetic).count();
                csv_two_people += usize::from(cell(1) == "b" && cell(2).contains("two people"));
                csv_either += usize::from(cell(1) == "a" && truth_letters > 1);
            }
        }
        let s = wellplay::import(&dir).unwrap_or_else(|e| panic!("{e}"));
        let out = tmp.path().join("s.toml");
        s.save(&out).unwrap();
        let back = Script::load_unchecked(&out).unwrap_or_else(|e| panic!("{e}"));
        for (q, b) in s.choice.iter().zip(&back.choice) {
            assert_eq!((q.rule, q.picks), (b.rule, b.picks), "{}", q.question);
            if q.multiple {
                assert_eq!(q.rule, ChoiceRule::Includes, "{}", q.question);
            } else if q.truth.len() > 1 {
                assert_eq!(q.rule, ChoiceRule::AnyOf, "{}", q.question);
            } else {
                assert_eq!(q.rule, ChoiceRule::Exact, "{}", q.question);
            }
            assert_eq!(
                q.picks.is_some(),
                q.question.contains("two people"),
                "{}",
                q.question
            );
            if q.character.is_some() {
                two_people += usize::from(q.picks == Some(2));
                either += usize::from(q.rule == ChoiceRule::AnyOf);
            }
        }
    }
    assert!(csv_two_people > 0 && csv_either > 0);
    assert_eq!(two_people, csv_two_people);
    assert_eq!(either, csv_either);
}
