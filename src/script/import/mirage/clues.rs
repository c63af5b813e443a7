//! `clues.json`: clues in file order, each owned by a character (`about`) or a place (`location`), key
//! when it points at a culprit, and given the act of the stage it is grouped under.

use std::path::Path;

use serde_json::{Map, Value};

use super::cast::{contains_bounded, Cast, Found};
use super::files::texts;
use super::stages::stage_number;
use super::truth::Accused;
use crate::script::import::{format_error, ImportError};
use crate::script::Clue;

/// Reads the clues of `root`, the object of the file at `path`. `stages` are the stage numbers in play
/// order, so a stage's clues get the act it is played in.
pub(super) fn read_clues(
    root: &Map<String, Value>,
    path: &Path,
    stages: &[u32],
    cast: &Cast,
    accused: &Accused,
) -> Result<Vec<Clue>, ImportError> {
    let (culprits, specs) = (&accused.characters, &accused.names);
    let staged = root.keys().any(|k| stage_number(k).is_some());
    // (owner, field path, value, act)
    let mut groups: Vec<(&str, String, &Value, Option<u32>)> = Vec::new();
    for (key, value) in root {
        match (staged, stage_number(key), value) {
            (true, Some(n), Value::Object(owners)) => {
                let act = stages.iter().position(|&s| s == n).map(|p| p as u32 + 1);
                for (owner, v) in owners {
                    groups.push((owner, format!("{key}.{owner}"), v, act));
                }
            }
            (true, Some(_), _) => {
                return Err(format_error(
                    path,
                    key,
                    "an object mapping owners to lists of clue texts",
                ))
            }
            _ => groups.push((key, key.clone(), value, None)),
        }
    }

    let mut culprit_forms: Vec<String> =
        culprits.iter().flat_map(|&i| cast.name_forms(i)).collect();
    culprit_forms.extend(
        specs
            .iter()
            .map(|s| s.trim().to_lowercase())
            .filter(|s| !s.is_empty()),
    );
    let mut clues = Vec::new();
    for (owner, field, value, act) in groups {
        let owner = owner.trim();
        let about = match cast.find(owner, false) {
            Found::One(i) => Some(i),
            _ => None,
        };
        let key = match about {
            Some(i) => culprits.contains(&i),
            None => {
                let o = owner.to_lowercase();
                culprit_forms.iter().any(|f| contains_bounded(&o, f))
            }
        };
        for text in clue_texts(value, path, &field)? {
            clues.push(Clue {
                id: format!("c{}", clues.len() + 1),
                title: owner.to_string(),
                text,
                about: about.map(|i| cast.0[i].name.clone()),
                location: if about.is_none() {
                    Some(owner.to_string())
                } else {
                    None
                },
                key,
                act,
            });
        }
    }
    Ok(clues)
}

/// Clue texts of one owner: a string, a list of strings, or an object of named texts (`name: text`).
fn clue_texts(v: &Value, path: &Path, field: &str) -> Result<Vec<String>, ImportError> {
    match v {
        Value::Object(m) => {
            let mut out = Vec::new();
            for (k, x) in m {
                for t in texts(x, path, &format!("{field}.{k}"))? {
                    out.push(format!("{}: {t}", k.trim()));
                }
            }
            Ok(out)
        }
        _ => texts(v, path, field).map_err(|_| format_error(path, field, "a list of clue texts")),
    }
}
