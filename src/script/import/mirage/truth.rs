//! What the script files do not say: who the culprits are (from `--culprit` or the built-in table of
//! [`KNOWN_CULPRITS`]) and the true account of the case (`Truth.json` beside the folder, or `--truth`).

use std::path::Path;

use serde_json::Value;

use super::cast::{Cast, Found};
use super::files::{read_text, texts, TRUTH_FILE};
use super::MirageOptions;
use crate::script::import::{clean_text, format_error, ImportError};

/// Culprits per title, as the dataset's description and reference implementation name them (the files
/// themselves do not). An empty list: the reference names no culprit, so `--culprit` is needed. Titles are
/// compared ignoring case, spaces and punctuation. "Artical 22 School Rules" is how the dataset spells that
/// folder.
pub const KNOWN_CULPRITS: &[(&str, &[&str])] = &[
    ("Bride in Filial Dress", &["Doctor Fang"]),
    ("The Eastern Star Cruise Ship", &["Manager Xiu"]),
    ("Night at the Museum", &["Manager Sa"]),
    ("Li Chuan Strange Talk Book", &["Elderly in Tattered"]),
    ("The Final Performance of a Big Star", &[]),
    ("Raging Sea of Rest Life", &["John"]),
    ("Article 22 School Rules", &["Fuqing Huang"]),
    ("Artical 22 School Rules", &["Fuqing Huang"]),
    ("Fox Hotel", &["Ichiro Kiryu (Nopperabo)"]),
    ("孝衣新娘", &["方医生"]),
    ("东方之星号游轮事件", &["修经理"]),
    ("博物馆奇妙夜", &["撒干事"]),
    ("漓川怪谈簿", &["衣衫褴褛的老人"]),
    ("大明星最后的演出", &[]),
    ("怒海余生", &["约翰"]),
    ("狐狸旅馆", &["桐生一郎（滑头鬼）"]),
];

/// The culprits of a script: the names as given (option or table) and the characters they matched.
#[derive(Debug)]
pub(super) struct Accused {
    /// As given, used to recognise a culprit in a clue owner (`Doctor Fang's Room`).
    pub(super) names: Vec<String>,
    /// Indices into the cast, each once, in the order of `names`.
    pub(super) characters: Vec<usize>,
}

/// The culprits of `title` matched against the cast; an error (on `script_path`, field `culprit`) when
/// none is known or a name matches no character or several.
pub(super) fn accused(
    title: &str,
    opts: &MirageOptions,
    cast: &Cast,
    script_path: &Path,
) -> Result<Accused, ImportError> {
    let specs: Vec<String> = if opts.culprits.is_empty() {
        match known_culprits(title) {
            Some(list) if !list.is_empty() => list.iter().map(|s| s.to_string()).collect(),
            known => {
                let why = if known.is_some() {
                    format!("the dataset names no culprit for \"{title}\"")
                } else {
                    format!("\"{title}\" is not in the table of known culprits")
                };
                return Err(format_error(
                    script_path,
                    "culprit",
                    &format!(
                        "a culprit: {why}; pass --culprit NAME (one of: {})",
                        cast.list()
                    ),
                ));
            }
        }
    } else {
        opts.culprits.clone()
    };
    let mut culprits: Vec<usize> = Vec::new();
    for spec in &specs {
        let i = match cast.find(spec, true) {
            Found::One(i) => i,
            Found::Many(ix) => {
                return Err(format_error(
                    script_path,
                    "culprit",
                    &format!(
                        "the name of one character (\"{spec}\" matches several: {})",
                        ix.iter()
                            .map(|&i| cast.0[i].name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ))
            }
            Found::None => {
                return Err(format_error(
                    script_path,
                    "culprit",
                    &format!(
                        "the name of a character (\"{spec}\" matches none of: {})",
                        cast.list()
                    ),
                ))
            }
        };
        if !culprits.contains(&i) {
            culprits.push(i);
        }
    }

    Ok(Accused {
        names: specs,
        characters: culprits,
    })
}

/// The built-in culprits of a title: `None` when the title is not in the table.
fn known_culprits(title: &str) -> Option<&'static [&'static str]> {
    let key = title_key(title);
    KNOWN_CULPRITS
        .iter()
        .find(|(t, _)| title_key(t) == key)
        .map(|(_, c)| *c)
}

/// A title reduced to lower-case letters and digits, for lenient comparison.
fn title_key(title: &str) -> String {
    title
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The true account of the case: the entry of `title` (compared as by [`title_key`]) in the truth file, or
/// the whole file when it is a text; empty when there is no truth file.
pub(super) fn read_narrative(
    dir: &Path,
    title: &str,
    opts: &MirageOptions,
) -> Result<String, ImportError> {
    let path = match &opts.truth {
        Some(p) => p.clone(),
        None => match dir.parent().map(|p| p.join(TRUTH_FILE)) {
            Some(p) if p.is_file() => p,
            _ => {
                // `dir` may be relative with no parent component (`Title` or `.`).
                match dir
                    .canonicalize()
                    .ok()
                    .and_then(|d| d.parent().map(|p| p.join(TRUTH_FILE)))
                {
                    Some(p) if p.is_file() => p,
                    _ => return Ok(String::new()),
                }
            }
        },
    };
    let text = read_text(&path)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let narrative = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => {
            let key = title_key(title);
            match m
                .get(title)
                .or_else(|| m.iter().find(|(k, _)| title_key(k) == key).map(|(_, v)| v))
            {
                Some(v) => texts(v, &path, title)?.join("\n"),
                None => String::new(),
            }
        }
        Ok(v @ (Value::String(_) | Value::Array(_))) => texts(&v, &path, "(file)")?.join("\n"),
        Ok(_) => {
            return Err(format_error(
                &path,
                "(file)",
                "an object mapping titles to the true account, or the account as text",
            ))
        }
        // Not JSON: the whole file is the account.
        Err(_) => clean_text(text),
    };
    Ok(narrative)
}
