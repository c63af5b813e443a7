//! `clues.json`: clues in file order, each owned by a character (`about`) or a place (`location`), key
//! when it points at a culprit, and given the act of the stage it is grouped under. The owners and their
//! texts are read first ([`read_owners`]): who the non-player suspects are and who the culprit is are
//! decided from them before the clues are built ([`build_clues`]).

use std::path::Path;

use serde_json::{Map, Value};

use super::cast::{contains_bounded, Cast, Found};
use super::files::texts;
use super::stages::stage_number;
use super::truth::Accused;
use crate::import::{format_error, ImportError};
use crate::Clue;

/// One owner of clues (a character, a person who does not play, a place, a document) with its texts.
#[derive(Debug, Clone)]
pub(super) struct Owner {
    /// The key, trimmed.
    pub(super) name: String,
    /// Its field path in the file (`Stage 2.Hall` for a staged file).
    pub(super) field: String,
    /// The cleaned, non-empty clue texts.
    pub(super) texts: Vec<String>,
    /// The act of the stage it is grouped under.
    pub(super) act: Option<u32>,
}

/// Reads the owners of `root`, the object of the file at `path`, in file order. `stages` are the stage
/// numbers in play order, so a stage's clues get the act it is played in.
pub(super) fn read_owners(
    root: &Map<String, Value>,
    path: &Path,
    stages: &[u32],
) -> Result<Vec<Owner>, ImportError> {
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
    groups
        .into_iter()
        .map(|(owner, field, value, act)| {
            Ok(Owner {
                name: owner.trim().to_string(),
                texts: clue_texts(value, path, &field)?,
                field,
                act,
            })
        })
        .collect()
}

/// The clues of the `owners`, given ids `c1`, `c2`, … in file order. `outsiders` are the non-player
/// suspects the accused's `outsiders` index.
pub(super) fn build_clues(
    owners: &[Owner],
    cast: &Cast,
    outsiders: &Cast,
    accused: &Accused,
) -> Vec<Clue> {
    let (culprits, specs) = (&accused.characters, &accused.names);
    let mut culprit_forms: Vec<String> =
        culprits.iter().flat_map(|&i| cast.name_forms(i)).collect();
    culprit_forms.extend(
        accused
            .outsiders
            .iter()
            .flat_map(|&i| outsiders.name_forms(i)),
    );
    culprit_forms.extend(
        specs
            .iter()
            .map(|s| s.trim().to_lowercase())
            .filter(|s| !s.is_empty()),
    );
    let mut clues = Vec::new();
    for o in owners {
        let owner = o.name.as_str();
        let about = match cast.find(owner, false) {
            Found::One(i) => Some(i),
            _ => None,
        };
        let key = match about {
            Some(i) => culprits.contains(&i),
            None => {
                let lower = owner.to_lowercase();
                culprit_forms.iter().any(|f| contains_bounded(&lower, f))
            }
        };
        for text in &o.texts {
            clues.push(Clue {
                id: format!("c{}", clues.len() + 1),
                title: owner.to_string(),
                text: text.clone(),
                about: about.map(|i| cast.0[i].name.clone()),
                location: if about.is_none() {
                    Some(owner.to_string())
                } else {
                    None
                },
                key,
                act: o.act,
            });
        }
    }
    clues
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
