//! Imports the WellPlay samples in `../shared/datasets/wellplay-sample` (skipped when absent, a failure
//! under CI) and checks the result against counts taken from the raw files.

use crate::common;

use std::path::{Path, PathBuf};

use sleuth::script::import::wellplay;
use sleuth::script::{Category, Script};

/// The WellPlay samples; `None` (a note, or a failure under CI) when the datasets are not there.
fn samples() -> Option<PathBuf> {
    common::datasets().map(|d| d.join("wellplay-sample"))
}

/// Data rows of a sample CSV and how many of them have `type` b. Reads line by line (the sample files
/// hold no quoted line breaks, and `value` and `type` are the first two, never quoted, columns), so it is
/// independent of the importer's CSV reader.
fn csv_counts(path: &Path) -> (usize, usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut rows = 0;
    let mut multiple = 0;
    for line in text.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        rows += 1;
        let mut cols = line.split(',');
        cols.next();
        if cols.next().map(str::trim) == Some("b") {
            multiple += 1;
        }
    }
    (rows, multiple)
}

/// Per-character rows and type-b rows over all `final_result/*.csv` except FSA.csv.
fn per_character_counts(dir: &Path) -> (usize, usize) {
    let mut total = (0, 0);
    for entry in std::fs::read_dir(dir.join("final_result")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "csv") && p.file_name().unwrap() != "FSA.csv" {
            let (r, m) = csv_counts(&p);
            total.0 += r;
            total.1 += m;
        }
    }
    total
}

fn all_texts(s: &Script) -> Vec<&str> {
    let mut t: Vec<&str> = vec![&s.title];
    for c in &s.characters {
        t.extend(c.acts.iter().map(String::as_str));
        t.extend(c.goals.iter().map(String::as_str));
        t.extend(c.performance.iter().map(String::as_str));
        t.extend(c.secrets.iter().map(String::as_str));
    }
    for q in &s.choice {
        t.push(&q.question);
        t.extend(q.options.iter().map(String::as_str));
    }
    t
}

/// Checks one sample against its raw files and returns the script.
fn check(dir: &Path, per_character: usize) -> Script {
    let script = wellplay::import(dir).unwrap_or_else(|e| panic!("{e}"));
    let errors = script.errors();
    assert!(errors.is_empty(), "{}: {errors:?}", dir.display());
    assert_eq!(script.source.as_deref(), Some("wellplay"));

    let mine = script
        .choice
        .iter()
        .filter(|q| q.character.is_some())
        .count();
    assert_eq!(mine, per_character);
    let (csv_rows, csv_multiple) = per_character_counts(dir);
    assert_eq!(mine, csv_rows);
    let multiple = script
        .choice
        .iter()
        .filter(|q| q.character.is_some() && q.multiple)
        .count();
    assert_eq!(multiple, csv_multiple);
    assert!(
        script
            .choice
            .iter()
            .filter(|q| q.character.is_some())
            .any(|q| !q.multiple),
        "single-choice questions expected"
    );

    let (fsa_rows, fsa_multiple) = csv_counts(&dir.join("final_result/FSA.csv"));
    let fsa: Vec<_> = script
        .choice
        .iter()
        .filter(|q| q.in_full_access())
        .collect();
    assert_eq!(fsa.len(), fsa_rows);
    assert_eq!(fsa.iter().filter(|q| q.multiple).count(), fsa_multiple);

    for t in all_texts(&script) {
        assert!(!t.contains("\\n"), "literal \\n left in: {t:.80}");
    }

    // Round trip through the canonical TOML.
    let back = Script::parse(&script.to_toml(), &dir.join("roundtrip.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back.characters.len(), script.characters.len());
    assert_eq!(back.victims.len(), script.victims.len());
    assert_eq!(back.choice.len(), script.choice.len());
    assert_eq!(back.murderers(), script.murderers());
    assert_eq!(
        back.choice.iter().filter(|q| q.multiple).count(),
        script.choice.iter().filter(|q| q.multiple).count()
    );
    assert_eq!(back.characters[0].acts, script.characters[0].acts);
    script
}

#[test]
fn desperate_sunshine() {
    let Some(root) = samples() else { return };
    let script = check(&root.join("Desperate Sunshine (4 people closed)"), 57);
    assert_eq!(script.characters.len(), 4);
    assert_eq!(script.murderers().len(), 1);
    assert_eq!(script.victims.len(), 1);
    assert_eq!(script.truth.culprits.len(), 1);
    assert_eq!(script.truth.culprits[0].by, script.murderers());
    let points: Vec<u32> = [
        Category::Objective,
        Category::Reasoning,
        Category::Relations,
    ]
    .iter()
    .map(|c| c.points())
    .collect();
    assert_eq!(points, vec![10, 5, 2]);
    for c in [
        Category::Objective,
        Category::Reasoning,
        Category::Relations,
    ] {
        assert!(
            script.choice.iter().any(|q| q.category == c),
            "no {c:?} question"
        );
    }
    assert!(script.choice.iter().any(|q| q.multiple));
}

#[test]
fn riverside_inn() {
    let Some(root) = samples() else { return };
    let script = check(&root.join("Riverside Inn (4 people closed)"), 39);
    assert_eq!(script.characters.len(), 4);
    assert_eq!(script.murderers().len(), 1);
}

#[test]
fn missing_folder_is_an_error() {
    let err = wellplay::import(Path::new("/nonexistent/wellplay/folder")).unwrap_err();
    assert!(err.to_string().contains("script_info.json"), "{err}");
}

/// `sleuth import wellplay SET --out DIR` imports every script folder of a set, each to
/// `DIR/<folder name>.toml`, and `sleuth script stats DIR` tabulates them with Avg and Sum rows.
#[test]
fn a_whole_set_imports_into_a_folder_and_tabulates() {
    let Some(root) = samples() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("scripts");
    let o = common::sleuth(tmp.path())
        .args(["import", "wellplay"])
        .arg(&root)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("imported 2 of 2 scripts"), "{stdout}");
    for name in [
        "Desperate Sunshine (4 people closed)",
        "Riverside Inn (4 people closed)",
    ] {
        Script::load(&out.join(format!("{name}.toml"))).unwrap_or_else(|e| panic!("{e}"));
    }
    let o = common::sleuth(tmp.path())
        .args(["script", "stats", "--csv"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = String::from_utf8_lossy(&o.stdout).to_string();
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    let col = |name: &str| rows[0].iter().position(|h| *h == name).unwrap();
    let sum = rows.iter().find(|r| r[0] == "Sum").expect("a Sum row");
    // 57 + 39 questions, 4 + 4 players.
    assert_eq!(sum[col("questions")], "96", "{csv}");
    assert_eq!(sum[col("players")], "8", "{csv}");
    assert_eq!(rows.len(), 1 + 2 + 2, "{csv}");
}
