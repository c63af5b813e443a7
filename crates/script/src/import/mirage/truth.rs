//! What the script files do not say: who the culprits are (from `--culprit`, the true account, or the
//! built-in table of [`KNOWN_CULPRITS`]) and the true account of the case (`Truth.json` beside the
//! folder, or `--truth`). A culprit is a character, or else one of the people who do not play (the
//! non-player suspects, see `suspects`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::cast::{contains_bounded, Cast, Found};
use super::files::{read_text, texts, TRUTH_FILE};
use super::{ImportWarning, MirageOptions};
use crate::import::{format_error, ImportError};

/// One script of the MIRAGE set and its culprits in both languages, as the reference implementation
/// (`ScriptEnvs/*.py` of lime728/MIRAGE, one file per script, each naming the culprit for `Zh` and for
/// `En`) and the dataset's description name them; the script files themselves do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownScript {
    /// The English title, then the other spellings dataset folders give it.
    pub en_titles: &'static [&'static str],
    /// The Chinese title.
    pub zh_title: &'static str,
    /// The culprits under the English names; empty when no source names one (`--culprit` is then
    /// needed).
    pub en: &'static [&'static str],
    /// The same culprits under the Chinese names.
    pub zh: &'static [&'static str],
}

/// The culprits of the 8 MIRAGE scripts, English and Chinese: the one table of per-title data. Titles
/// are compared ignoring case, spaces and punctuation. "Artical 22 School Rules" is how the dataset
/// spells that folder. Where the case's own account (`Truth.json`) names another culprit, the account
/// wins (see `accused`): "Night at the Museum" keeps the reference's Manager Sa here, its account
/// names Security Wei. "The Final Performance of a Big Star" is the one script whose reference file
/// sets no culprit: the dataset's description names Richard, who does not play, and the Chinese name is
/// the reference's Chinese list of suspects at his place in the English one (李察德). For "Fox Hotel" the
/// reference also lists the bare alias (Nopperabo, 滑头鬼), which the name matching finds in the
/// parenthesised part.
pub const KNOWN_CULPRITS: &[KnownScript] = &[
    KnownScript {
        en_titles: &["Bride in Filial Dress"],
        zh_title: "孝衣新娘",
        en: &["Doctor Fang"],
        zh: &["方医生"],
    },
    KnownScript {
        en_titles: &["The Eastern Star Cruise Ship"],
        zh_title: "东方之星号游轮事件",
        en: &["Manager Xiu"],
        zh: &["修经理"],
    },
    KnownScript {
        en_titles: &["Night at the Museum"],
        zh_title: "博物馆奇妙夜",
        en: &["Manager Sa"],
        zh: &["撒干事"],
    },
    KnownScript {
        en_titles: &["Li Chuan Strange Talk Book"],
        zh_title: "漓川怪谈簿",
        en: &["Elderly in Tattered"],
        zh: &["衣衫褴褛的老人"],
    },
    KnownScript {
        en_titles: &["The Final Performance of a Big Star"],
        zh_title: "大明星最后的演出",
        en: &["Richard"],
        zh: &["李察德"],
    },
    KnownScript {
        en_titles: &["Raging Sea of Rest Life"],
        zh_title: "怒海余生",
        en: &["John"],
        zh: &["约翰"],
    },
    KnownScript {
        en_titles: &["Article 22 School Rules", "Artical 22 School Rules"],
        zh_title: "第二十二条校规",
        en: &["Fuqing Huang"],
        zh: &["皇甫青"],
    },
    KnownScript {
        en_titles: &["Fox Hotel"],
        zh_title: "狐狸旅馆",
        en: &["Ichiro Kiryu (Nopperabo)"],
        zh: &["桐生一郎（滑头鬼）"],
    },
];

/// Someone a culprit name can refer to: a character (index into the cast) or a person who does not play
/// (index into the non-player suspects).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Who {
    Player(usize),
    Outsider(usize),
}

/// The culprits of a script: the names as given (option, account or table) and whom they matched.
#[derive(Debug)]
pub(super) struct Accused {
    /// As given, used to recognise a culprit in a clue owner (`Doctor Fang's Room`).
    pub(super) names: Vec<String>,
    /// Indices into the cast, each once, in the order of `names`.
    pub(super) characters: Vec<usize>,
    /// Indices into the non-player suspects, each once, in the order of `names`.
    pub(super) outsiders: Vec<usize>,
}

/// The culprits of `title` matched against the cast and then the non-player suspects (`outsiders`);
/// an error (on `script_path`, field `culprit`) when none is known or a name matches nobody or several.
///
/// `--culprit` wins. Otherwise the case's own account decides where it names one culprit (see
/// [`culprits_in_truth`]): it is the dataset's statement, the table only a copy of the reference code, so
/// a disagreement is warned about and the account followed. An account that names no culprit, or several
/// equally, leaves the table in charge (with a warning when it was ambiguous).
pub(super) fn accused(
    title: &str,
    opts: &MirageOptions,
    people: (&Cast, &Cast),
    script_path: &Path,
    narrative: &Narrative,
    warnings: &mut Vec<ImportWarning>,
) -> Result<Accused, ImportError> {
    if !opts.culprits.is_empty() {
        return match_culprits(opts.culprits.clone(), people, script_path);
    }
    let (cast, outsiders) = people;
    let table = known_culprits(title).filter(|l| !l.is_empty());
    let truth_path = narrative.path.clone().unwrap_or_default();
    let truth_field = narrative.key.clone().unwrap_or_else(|| title.to_string());
    let name_of = |w: Who| match w {
        Who::Player(i) => cast.0[i].name.clone(),
        Who::Outsider(i) => outsiders.0[i].name.clone(),
    };
    match (culprits_in_truth(cast, outsiders, &narrative.text), table) {
        (Verdict::One(who), table) => {
            let name = name_of(who);
            if let Some(list) = table {
                let from_table = match_culprits(
                    list.iter().map(|s| s.to_string()).collect(),
                    people,
                    script_path,
                )
                .ok();
                let same = from_table.is_some_and(|a| match who {
                    Who::Player(i) => a.characters == [i] && a.outsiders.is_empty(),
                    Who::Outsider(i) => a.outsiders == [i] && a.characters.is_empty(),
                });
                if !same {
                    warnings.push(ImportWarning {
                        path: truth_path,
                        field: truth_field,
                        message: format!(
                            "the true account names {name} as the culprit, the built-in table {}; following the account",
                            list.join(", ")
                        ),
                    });
                }
            }
            let (characters, outsiders) = match who {
                Who::Player(i) => (vec![i], Vec::new()),
                Who::Outsider(i) => (Vec::new(), vec![i]),
            };
            return Ok(Accused {
                names: vec![name],
                characters,
                outsiders,
            });
        }
        (Verdict::Ambiguous(ws), Some(list)) => warnings.push(ImportWarning {
            path: truth_path,
            field: truth_field,
            message: format!(
                "the true account names several people as the culprit equally often ({}); following the built-in table: {}",
                ws.iter().map(|&w| name_of(w)).collect::<Vec<_>>().join(", "),
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
                        everyone(people)
                    ),
                ));
            }
        }
    };
    match_culprits(specs, people, script_path)
}

/// The players, then the non-player suspects, comma-separated, for an error that lists them.
fn everyone((cast, outsiders): (&Cast, &Cast)) -> String {
    if outsiders.0.is_empty() {
        cast.list()
    } else {
        format!(
            "{}; or a non-player suspect: {}",
            cast.list(),
            outsiders.list()
        )
    }
}

/// Whom the culprit names `specs` refer to, a character first, else a non-player suspect; an error when
/// a name matches nobody or several.
fn match_culprits(
    specs: Vec<String>,
    people: (&Cast, &Cast),
    script_path: &Path,
) -> Result<Accused, ImportError> {
    let (cast, outsiders) = people;
    let mut accused = Accused {
        names: Vec::new(),
        characters: Vec::new(),
        outsiders: Vec::new(),
    };
    for spec in &specs {
        let found = match cast.find(spec, true) {
            Found::None => match outsiders.find(spec, true) {
                Found::One(i) => Found::One(cast.0.len() + i),
                Found::Many(ix) => Found::Many(ix.iter().map(|i| cast.0.len() + i).collect()),
                Found::None => Found::None,
            },
            found => found,
        };
        let name = |i: usize| match i.checked_sub(cast.0.len()) {
            Some(j) => outsiders.0[j].name.as_str(),
            None => cast.0[i].name.as_str(),
        };
        match found {
            Found::One(i) => match i.checked_sub(cast.0.len()) {
                Some(j) if !accused.outsiders.contains(&j) => accused.outsiders.push(j),
                None if !accused.characters.contains(&i) => accused.characters.push(i),
                _ => {}
            },
            Found::Many(ix) => {
                return Err(format_error(
                    script_path,
                    "culprit",
                    &format!(
                        "the name of one person (\"{spec}\" matches several: {})",
                        ix.iter().map(|&i| name(i)).collect::<Vec<_>>().join(", ")
                    ),
                ))
            }
            Found::None => {
                return Err(format_error(
                    script_path,
                    "culprit",
                    &format!(
                        "the name of a character (\"{spec}\" matches none of: {})",
                        everyone(people)
                    ),
                ))
            }
        }
    }
    accused.names = specs;
    Ok(accused)
}

/// The built-in culprits of a title, in the title's language: `None` when the title is not in the
/// table.
fn known_culprits(title: &str) -> Option<&'static [&'static str]> {
    let key = title_key(title);
    KNOWN_CULPRITS.iter().find_map(|s| {
        if s.en_titles.iter().any(|t| title_key(t) == key) {
            Some(s.en)
        } else if title_key(s.zh_title) == key {
            Some(s.zh)
        } else {
            None
        }
    })
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
    /// It names nobody in a sentence about the murderer.
    None,
    /// One person is named in more such sentences than anyone else.
    One(Who),
    /// Several people share the most such sentences.
    Ambiguous(Vec<Who>),
}

/// Words of a sentence that speaks of the murderer (English lower-case, Chinese). Plain "kill" is left
/// out: accounts tell of earlier killings by other people (a back story), which would outvote the case.
const CULPRIT_WORDS: &[&str] = &[
    "murderer", "culprit", "killer", "凶手", "真凶", "杀手", "犯人", "元凶",
];

/// The culprit the account names: for each character and each non-player suspect, the number of
/// sentences that contain one of [`CULPRIT_WORDS`] and one of the person's name forms (on word
/// boundaries); the person with the strictly highest count. Sentences end at `.!?。！？`; line breaks do
/// not end them, since accounts put the name on its own line after "the real murderer is".
pub(super) fn culprits_in_truth(cast: &Cast, outsiders: &Cast, narrative: &str) -> Verdict {
    let text = narrative.to_lowercase().replace(['\n', '\r'], " ");
    let mut people: Vec<(Who, Vec<String>)> = Vec::new();
    for (group, wrap) in [
        (cast, Who::Player as fn(usize) -> Who),
        (outsiders, Who::Outsider),
    ] {
        for i in 0..group.0.len() {
            let forms = group
                .name_forms(i)
                .into_iter()
                .filter(|f| f.chars().count() >= 2)
                .collect();
            people.push((wrap(i), forms));
        }
    }
    let mut counts = vec![0usize; people.len()];
    for sentence in text.split(['.', '!', '?', '。', '！', '？']) {
        if !CULPRIT_WORDS.iter().any(|w| sentence.contains(w)) {
            continue;
        }
        for (k, (_, fs)) in people.iter().enumerate() {
            if fs.iter().any(|f| contains_bounded(sentence, f)) {
                counts[k] += 1;
            }
        }
    }
    let best = counts.iter().copied().max().unwrap_or(0);
    if best == 0 {
        return Verdict::None;
    }
    let top: Vec<Who> = (0..counts.len())
        .filter(|&k| counts[k] == best)
        .map(|k| people[k].0)
        .collect();
    match top.as_slice() {
        [w] => Verdict::One(*w),
        _ => Verdict::Ambiguous(top),
    }
}
