//! Conformance of the MIRAGE importer with the real dataset layout, on the sample in
//! `../shared/datasets/mirage-sample` (read at run time, never copied; skipped where it is absent, a
//! failure under CI).

use crate::common;

use std::path::{Path, PathBuf};

use sleuth::script::import::mirage::{import, MirageOptions};
use sleuth::script::import::ImportError;
use sleuth::script::{Role, Script};

const TITLE: &str = "The Eastern Star Cruise Ship";

/// The sample script folder; `None` (a note, or a failure under CI) when the datasets are not there.
fn sample() -> Option<PathBuf> {
    common::datasets().map(|d| d.join("mirage-sample").join(TITLE))
}

fn default_opts() -> MirageOptions {
    MirageOptions {
        culprits: Vec::new(),
        truth: None,
        suspects: Vec::new(),
    }
}

/// The number of clue texts in a clues.json: every string in the lists of every owner.
fn clue_texts_in(path: &Path) -> usize {
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    json.as_object()
        .unwrap()
        .values()
        .map(|v| match v {
            serde_json::Value::Array(items) => items.iter().filter(|x| x.is_string()).count(),
            serde_json::Value::String(_) => 1,
            _ => 0,
        })
        .sum()
}

#[test]
fn eastern_star_imports_with_the_built_in_culprit() {
    let Some(dir) = sample() else { return };
    let script = import(&dir, &default_opts()).expect("imports");

    assert_eq!(script.title, TITLE);
    assert_eq!(script.source.as_deref(), Some("mirage"));
    assert_eq!(script.acts, 1);
    assert_eq!(script.characters.len(), 5);
    let murderers = script.murderers();
    assert_eq!(murderers.len(), 1, "exactly one murderer: {murderers:?}");
    assert!(
        murderers[0].contains("Manager Xiu"),
        "murderer {:?}",
        murderers[0]
    );
    assert_eq!(
        script
            .characters
            .iter()
            .filter(|c| c.role == Role::Civilian)
            .count(),
        4
    );

    let expected_clues = clue_texts_in(&dir.join("clues.json"));
    assert!(expected_clues > 0);
    assert_eq!(script.clues.len(), expected_clues);
    assert!(
        script.clues.iter().any(|c| c.key),
        "some clue bears on the culprit"
    );
    assert!(
        !script.truth.narrative.is_empty(),
        "Truth.json has the title"
    );
    assert_eq!(script.victims.len(), 1);
    let victim = &script.victims[0].name;
    assert!(
        script.character(victim).is_none(),
        "the victim {victim:?} is not a player"
    );
    assert_eq!(script.truth.culprits.len(), 1);
    assert_eq!(script.truth.culprits[0].by, [murderers[0].to_string()]);
    for c in &script.characters {
        assert!(!c.story.is_empty(), "{} has a story", c.name);
        assert_eq!(c.acts.len(), 1, "{} has one act", c.name);
    }

    let errors = script.errors();
    assert!(errors.is_empty(), "{errors:?}");

    let path = Path::new("eastern-star.toml");
    let back = Script::parse(&script.to_toml(), path).expect("round-trips");
    assert_eq!(back.characters.len(), script.characters.len());
    assert_eq!(back.clues.len(), script.clues.len());
    assert_eq!(back.victims.len(), script.victims.len());
    assert_eq!(back.murderers(), script.murderers());
    assert_eq!(back.truth.narrative, script.truth.narrative);
}

#[test]
fn culprit_option_overrides_the_table() {
    let Some(dir) = sample() else { return };
    let default = import(&dir, &default_opts()).expect("imports");
    let other = default
        .characters
        .iter()
        .find(|c| !c.is_murderer())
        .expect("a civilian")
        .name
        .clone();
    let script = import(
        &dir,
        &MirageOptions {
            culprits: vec![other.clone()],
            truth: None,
            suspects: Vec::new(),
        },
    )
    .expect("imports");
    assert_eq!(script.murderers(), [other.as_str()]);
    assert_ne!(script.murderers(), default.murderers());
    assert!(script.errors().is_empty(), "{:?}", script.errors());
}

#[test]
fn bogus_culprit_is_a_format_error() {
    let Some(dir) = sample() else { return };
    let err = import(
        &dir,
        &MirageOptions {
            culprits: vec!["Nobody At All".into()],
            truth: None,
            suspects: Vec::new(),
        },
    )
    .unwrap_err();
    match err {
        ImportError::Format {
            field, expected, ..
        } => {
            assert_eq!(field, "culprit");
            assert!(expected.contains("Nobody At All"), "{expected}");
        }
        other => panic!("expected a Format error, got {other:?}"),
    }
}
