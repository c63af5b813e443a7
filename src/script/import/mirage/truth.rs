//! What the script files do not say: who the culprits are (from `--culprit` or the built-in table of
//! [`KNOWN_CULPRITS`]) and the true account of the case (`Truth.json` beside the folder, or `--truth`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::cast::{contains_bounded, Cast, Found};
use super::files::{read_text, texts, TRUTH_FILE};
use super::{ImportWarning, MirageOptions};
use crate::script::import::{format_error, ImportError};

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
///
/// `--culprit` wins. Otherwise the case's own account decides where it names one culprit (see
/// [`culprits_in_truth`]): it is the dataset's statement, the table only a copy of the reference code, so
/// a disagreement is warned about and the account followed. An account that names no culprit, or several
/// equally, leaves the table in charge (with a warning when it was ambiguous).
pub(super) fn accused(
    title: &str,
    opts: &MirageOptions,
    cast: &Cast,
    script_path: &Path,
    narrative: &Narrative,
    warnings: &mut Vec<ImportWarning>,
) -> Result<Accused, ImportError> {
    if !opts.culprits.is_empty() {
        return match_culprits(opts.culprits.clone(), cast, script_path);
    }
    let table = known_culprits(title).filter(|l| !l.is_empty());
    let truth_path = narrative.path.clone().unwrap_or_default();
    let truth_field = narrative.key.clone().unwrap_or_else(|| title.to_string());
    match (culprits_in_truth(cast, &narrative.text), table) {
        (Verdict::One(i), table) => {
            let name = cast.0[i].name.clone();
            if let Some(list) = table {
                let from_table = match_culprits(
                    list.iter().map(|s| s.to_string()).collect(),
                    cast,
                    script_path,
                )
                .ok();
                if from_table.as_ref().map(|a| a.characters.as_slice()) == Some(&[i][..]) {
                    return match_culprits(vec![name], cast, script_path);
                }
                warnings.push(ImportWarning {
                    path: truth_path,
                    field: truth_field,
                    message: format!(
                        "the true account names {name} as the culprit, the built-in table {}; following the account",
                        list.join(", ")
                    ),
                });
            }
            return match_culprits(vec![name], cast, script_path);
        }
        (Verdict::Ambiguous(ix), Some(list)) => warnings.push(ImportWarning {
            path: truth_path,
            field: truth_field,
            message: format!(
                "the true account names several characters as the culprit equally often ({}); following the built-in table: {}",
                ix.iter()
                    .map(|&i| cast.0[i].name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                list.join(", ")
            ),
        }),
        _ => {}
    }
    let specs: Vec<String> = {
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
    };
    match_culprits(specs, cast, script_path)
}

/// The characters the culprit names `specs` refer to; an error when a name matches none or several.
fn match_culprits(
    specs: Vec<String>,
    cast: &Cast,
    script_path: &Path,
) -> Result<Accused, ImportError> {
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

/// The true account of a case, and where it was found (for warnings).
#[derive(Debug, Default)]
pub(super) struct Narrative {
    pub(super) text: String,
    /// The truth file, if any.
    pub(super) path: Option<PathBuf>,
    /// The key of the entry in the truth file, when it maps titles to accounts.
    pub(super) key: Option<String>,
}

/// The true account of the case: the entry of `title` in the truth file (exact, then as by
/// [`title_key`], then the unique closest key by [`title_distance`] with a warning: datasets misspell
/// folder names), or the whole file when it is a JSON text; empty when there is no truth file. A file
/// that is not JSON is an error: it would otherwise become the account silently.
pub(super) fn read_narrative(
    dir: &Path,
    title: &str,
    opts: &MirageOptions,
    warnings: &mut Vec<ImportWarning>,
) -> Result<Narrative, ImportError> {
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
                    _ => return Ok(Narrative::default()),
                }
            }
        },
    };
    let text = read_text(&path)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let value = serde_json::from_str::<Value>(text).map_err(|e| {
        format_error(
            &path,
            "(file)",
            &format!("valid JSON: an object mapping titles to the true account ({e})"),
        )
    })?;
    let (text, key) = match value {
        Value::Object(m) => match find_entry(&m, title) {
            Some((k, v, exact)) => {
                if !exact {
                    warnings.push(ImportWarning {
                        path: path.clone(),
                        field: k.clone(),
                        message: format!(
                            "no entry for \"{title}\"; using the closest title \"{k}\" as its true account"
                        ),
                    });
                }
                (texts(v, &path, k)?.join("\n"), Some(k.clone()))
            }
            None => (String::new(), None),
        },
        v @ (Value::String(_) | Value::Array(_)) => (texts(&v, &path, "(file)")?.join("\n"), None),
        _ => {
            return Err(format_error(
                &path,
                "(file)",
                "an object mapping titles to the true account, or the account as text",
            ))
        }
    };
    Ok(Narrative {
        text,
        path: Some(path),
        key,
    })
}

/// Largest [`title_distance`] at which a truth key still counts as a spelling of the title.
const TITLE_DISTANCE_MAX: f64 = 0.2;

/// The entry of `title`: exact, or equal by [`title_key`] (`true`: no warning needed), or the unique
/// closest key within [`TITLE_DISTANCE_MAX`] (`false`).
fn find_entry<'a>(
    m: &'a serde_json::Map<String, Value>,
    title: &str,
) -> Option<(&'a String, &'a Value, bool)> {
    if let Some((k, v)) = m.get_key_value(title) {
        return Some((k, v, true));
    }
    let key = title_key(title);
    if let Some((k, v)) = m.iter().find(|(k, _)| title_key(k) == key) {
        return Some((k, v, true));
    }
    let mut scored: Vec<(f64, &String, &Value)> = m
        .iter()
        .map(|(k, v)| (title_distance(title, k), k, v))
        .filter(|(d, _, _)| *d <= TITLE_DISTANCE_MAX)
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    match scored.as_slice() {
        [(d, k, v), rest @ ..] if rest.first().is_none_or(|r| r.0 > *d) => Some((k, v, false)),
        _ => None,
    }
}

/// Edit distance between the [`title_key`]s of two titles, over the longer one's length (in characters,
/// so Chinese titles count per character): 0 = equal, 1 = nothing in common.
pub(super) fn title_distance(a: &str, b: &str) -> f64 {
    let (a, b): (Vec<char>, Vec<char>) = (
        title_key(a).chars().collect(),
        title_key(b).chars().collect(),
    );
    let longest = a.len().max(b.len());
    if longest == 0 {
        return 0.0;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let subst = prev[j] + usize::from(ca != cb);
            cur[j + 1] = subst.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()] as f64 / longest as f64
}

/// What the true account says about the culprit.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// It names no character in a sentence about the murderer.
    None,
    /// One character is named in more such sentences than any other.
    One(usize),
    /// Several characters share the most such sentences.
    Ambiguous(Vec<usize>),
}

/// Words of a sentence that speaks of the murderer (English lower-case, Chinese). Plain "kill" is left
/// out: accounts tell of earlier killings by other people (a back story), which would outvote the case.
const CULPRIT_WORDS: &[&str] = &[
    "murderer", "culprit", "killer", "凶手", "真凶", "杀手", "犯人", "元凶",
];

/// The culprit the account names: for each character, the number of sentences that contain one of
/// [`CULPRIT_WORDS`] and one of the character's name forms (on word boundaries); the character with the
/// strictly highest count. Sentences end at `.!?。！？`; line breaks do not end them, since accounts put
/// the name on its own line after "the real murderer is".
pub(super) fn culprits_in_truth(cast: &Cast, narrative: &str) -> Verdict {
    let text = narrative.to_lowercase().replace(['\n', '\r'], " ");
    let forms: Vec<Vec<String>> = (0..cast.0.len())
        .map(|i| {
            cast.name_forms(i)
                .into_iter()
                .filter(|f| f.chars().count() >= 2)
                .collect()
        })
        .collect();
    let mut counts = vec![0usize; cast.0.len()];
    for sentence in text.split(['.', '!', '?', '。', '！', '？']) {
        if !CULPRIT_WORDS.iter().any(|w| sentence.contains(w)) {
            continue;
        }
        for (i, fs) in forms.iter().enumerate() {
            if fs.iter().any(|f| contains_bounded(sentence, f)) {
                counts[i] += 1;
            }
        }
    }
    let best = counts.iter().copied().max().unwrap_or(0);
    if best == 0 {
        return Verdict::None;
    }
    let top: Vec<usize> = (0..counts.len()).filter(|&i| counts[i] == best).collect();
    match top.as_slice() {
        [i] => Verdict::One(*i),
        _ => Verdict::Ambiguous(top),
    }
}
