//! Imports all 12 English WellPlay scripts from `../shared/datasets/wellplay-en` (skipped when absent, a
//! failure under CI), round-trips each through save and load, and checks the per-character question
//! counts against the CSVs read here by an independent parser. No game is played (kept fast).

mod common;

use std::collections::BTreeMap;
use std::path::Path;

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

#[test]
fn all_english_scripts_import_and_count_as_the_paper() {
    let Some(d) = common::datasets() else { return };
    let root = d.join("wellplay-en");
    let tmp = tempfile::tempdir().unwrap();
    let mut expected: BTreeMap<String, usize> = BTreeMap::new();
    let mut got: BTreeMap<String, usize> = BTreeMap::new();
    let mut scripts = 0;
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let imported = wellplay::import_logged(&dir, false).unwrap_or_else(|e| panic!("{e}"));
        let s = imported.script;
        // Validation: only a victim nobody is recorded as killing (not a repair of this importer) may
        // remain an error.
        let errors: Vec<_> = s
            .errors()
            .into_iter()
            .filter(|p| !p.to_string().contains("at least one culprit"))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", dir.display());
        let out = tmp.path().join(format!("{scripts}.toml"));
        s.save(&out).unwrap();
        let back = Script::load_unchecked(&out).unwrap_or_else(|e| panic!("{e}"));
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
        scripts += 1;
    }
    assert_eq!(scripts, 12);
    assert_eq!(expected.values().sum::<usize>(), 1482, "{expected:?}");
    assert_eq!(got, expected);
}
