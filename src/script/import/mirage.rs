//! Importer of one MIRAGE script folder, `<Title>/`, into the canonical model.
//!
//! Layout (see `shared/datasets/README.md`, section MIRAGE):
//! - `script.json`: single-stage scripts map character name → {`Story`, `Script`, `Relationship`,
//!   `Performance`, `Purpose`, `Ability`}; multi-stage scripts map `Stage 1`, `Stage 2`, … (also `Act <n>`,
//!   `第<n>幕`) → (character name → the same fields). A top-level key that is not a stage and holds a text
//!   (a text shown to every player) goes to `premise`.
//! - `clues.json`: owner → list of clue texts, where the owner is a character or a place; multi-stage files
//!   may group the owners by stage.
//! - `Truth.json` in the parent folder (or `--truth FILE`): title → the true account of the case.
//!
//! Mapping, field by field:
//! - title = the folder name; `source = "mirage"`; `acts` = number of stages (1 for a single stage).
//! - Per character: `story` = `Story` (first stage where present); `acts[k]` = stage k's `Script`;
//!   `relationships`, `performance`, `goals`, `abilities` = the `Relationship`, `Performance`, `Purpose`,
//!   `Ability` texts, later stages' texts appended when they differ. Characters are listed in first-seen
//!   order. A later stage may give a character a fuller name (`Sky Dog` → `Zetong Hei (Sky Dog)`): a new
//!   name that matches exactly one earlier character (see the matching below) is that character, renamed.
//! - Culprits are not in the files. They come from `--culprit` or from [`KNOWN_CULPRITS`], the one table of
//!   per-title data (copied from the dataset's description and reference implementation). Culprits are
//!   murderers, everyone else civilians.
//! - Victim (not in the files either): the name that most characters' relationship texts list as someone
//!   they relate to (a line `Name (role): …` or a name in 【】) but that is no character, provided it is
//!   listed by at least half of the characters (and at least two), ahead of every other such name, and —
//!   when there is a truth text — found in it (word order free: `Qi Liu` = `Liu Qi`). Otherwise one
//!   victim named "the victim" (`死者` in Chinese). Every culprit killed it.
//! - Clues get ids `c1`, `c2`, … in file order and the owner as title. An owner that names a character
//!   makes the clue `about` it; any other owner is its `location`. A clue is key when it is about a culprit
//!   or its location names one (`<Culprit>'s Room`). Clues grouped under a stage get that stage as `act`.
//! - `language`: Chinese when most letters are CJK.
//!
//! Names are matched in tiers, the first tier with a single hit winning: exact; case-insensitive; equal
//! without parenthesised parts, or equal to the part in parentheses (`Nopperabo` for `Ichiro Kiryu
//! (Nopperabo)`); the character's name starting with the query; the name containing it (on word
//! boundaries for alphabetic scripts). Culprit names also match a character whose name they contain.
//!
//! The result is not validated here: the caller validates and reports.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{clean_text, ImportError};
use super::{detect_language, format_error};
use crate::script::{Character, Clue, Culprits, Language, Role, Script, Truth, Victim};
use crate::text::is_cjk;

/// How to import a MIRAGE script.
#[derive(Debug, Clone, Default)]
pub struct MirageOptions {
    /// The culprits' names; empty = use [`KNOWN_CULPRITS`].
    pub culprits: Vec<String>,
    /// The truth file (title → account); by default `Truth.json` next to the script folder, if present.
    pub truth: Option<PathBuf>,
}

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

const SCRIPT_FILES: &[&str] = &["script.json", "人物剧本.json"];
const CLUE_FILES: &[&str] = &["clues.json", "线索.json"];
const TRUTH_FILE: &str = "Truth.json";

/// Field names of a character entry (compared ignoring case), English and Chinese.
const STORY: &[&str] = &["story", "人物故事"];
const SCRIPT: &[&str] = &["script", "人物剧本"];
const RELATIONSHIP: &[&str] = &["relationship", "relationships", "人物关系"];
const PERFORMANCE: &[&str] = &["performance", "你的表现"];
const PURPOSE: &[&str] = &["purpose", "purposes", "你的目的"];
const ABILITY: &[&str] = &["ability", "abilities", "其他能力"];

/// Imports the MIRAGE script folder `dir`.
pub fn import(dir: &Path, opts: &MirageOptions) -> Result<Script, ImportError> {
    let title = folder_name(dir);
    let script_path = find_file(dir, SCRIPT_FILES).ok_or_else(|| {
        format_error(
            &dir.join(SCRIPT_FILES[0]),
            "(file)",
            "this file to exist (MIRAGE layout: <Title>/script.json, <Title>/clues.json)",
        )
    })?;
    let layout = read_script(&read_json(&script_path)?, &script_path)?;
    let acts = layout.stages.len().max(1) as u32;
    let mut cast = layout.cast;

    let narrative = read_narrative(dir, &title, opts)?;

    // Culprits.
    let specs: Vec<String> = if opts.culprits.is_empty() {
        match known_culprits(&title) {
            Some(list) if !list.is_empty() => list.iter().map(|s| s.to_string()).collect(),
            known => {
                let why = if known.is_some() {
                    format!("the dataset names no culprit for \"{title}\"")
                } else {
                    format!("\"{title}\" is not in the table of known culprits")
                };
                return Err(format_error(
                    &script_path,
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
                    &script_path,
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
                    &script_path,
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

    // Clues.
    let clues = match find_file(dir, CLUE_FILES) {
        Some(path) => read_clues(
            &read_json(&path)?,
            &path,
            &layout.stages,
            &cast,
            &culprits,
            &specs,
        )?,
        None => Vec::new(),
    };

    // Language, then the victim.
    let language = detect_language(
        cast.0
            .iter()
            .flat_map(|d| {
                std::iter::once(&d.story)
                    .chain(&d.acts)
                    .chain(&d.relationships)
            })
            .chain(clues.iter().map(|c| &c.text))
            .chain(std::iter::once(&narrative)),
    );
    let victim = detect_victim(&cast, &narrative).unwrap_or_else(|| {
        match language {
            Language::En => "the victim",
            Language::Zh => "死者",
        }
        .to_string()
    });

    let culprit_names: Vec<String> = culprits.iter().map(|&i| cast.0[i].name.clone()).collect();
    for d in &mut cast.0 {
        while d.acts.last().is_some_and(|a| a.is_empty()) {
            d.acts.pop();
        }
    }
    let characters = cast
        .0
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let murderer = culprits.contains(&i);
            Character {
                name: d.name,
                role: if murderer {
                    Role::Murderer
                } else {
                    Role::Civilian
                },
                public: String::new(),
                story: d.story,
                timeline: String::new(),
                acts: d.acts,
                secrets: Vec::new(),
                goals: d.goals,
                relationships: d.relationships,
                performance: d.performance,
                abilities: d.abilities,
                killed: if murderer {
                    vec![victim.clone()]
                } else {
                    Vec::new()
                },
            }
        })
        .collect();

    Ok(Script {
        format: 1,
        title,
        language,
        source: Some("mirage".into()),
        premise: layout.shared.join("\n\n"),
        acts,
        victims: vec![Victim {
            name: victim.clone(),
            description: String::new(),
        }],
        host: None,
        characters,
        clues,
        truth: Truth {
            murderer: None,
            culprits: vec![Culprits {
                victim,
                by: culprit_names,
            }],
            narrative,
        },
        factual: Vec::new(),
        inferential: Vec::new(),
        choice: Vec::new(),
    })
}

/// The folder's own name (for `.` or `dir/`, the resolved name).
fn folder_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .or_else(|| {
            dir.canonicalize()
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        })
        .unwrap_or_default()
}

fn find_file(dir: &Path, names: &[&str]) -> Option<PathBuf> {
    names.iter().map(|n| dir.join(n)).find(|p| p.is_file())
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

// ---------------------------------------------------------------------------------------------------
// script.json

/// One character as it is gathered across stages.
#[derive(Debug, Default)]
struct Draft {
    /// The latest name.
    name: String,
    /// Every name the character had, first to last.
    aliases: Vec<String>,
    story: String,
    acts: Vec<String>,
    relationships: Vec<String>,
    performance: Vec<String>,
    goals: Vec<String>,
    abilities: Vec<String>,
}

/// The characters, in first-seen order.
#[derive(Debug, Default)]
struct Cast(Vec<Draft>);

/// What a name matched.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    None,
    One(usize),
    Many(Vec<usize>),
}

impl Cast {
    fn list(&self) -> String {
        self.0
            .iter()
            .map(|d| d.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The character a name refers to, by the tiers of the module documentation. `reverse` also accepts a
    /// character whose name the query contains (culprit names or later-stage names longer than the
    /// character's).
    fn find(&self, query: &str, reverse: bool) -> Found {
        let q = query.trim();
        if q.is_empty() {
            return Found::None;
        }
        let ql = q.to_lowercase();
        let q_bare = lower_bare(q);
        let q_parts = paren_parts(q);
        type Tier<'a> = Box<dyn Fn(&str) -> bool + 'a>;
        let mut tiers: Vec<Tier> = vec![
            Box::new(|n: &str| n == q),
            Box::new(|n: &str| n.to_lowercase() == ql),
            Box::new(|n: &str| {
                let bare = lower_bare(n);
                (!bare.is_empty() && bare == q_bare)
                    || paren_parts(n)
                        .iter()
                        .any(|p| *p == ql || (!q_bare.is_empty() && *p == q_bare))
                    || q_parts.iter().any(|p| *p == n.to_lowercase() || *p == bare)
            }),
            Box::new(|n: &str| starts_bounded(&n.to_lowercase(), &ql)),
            Box::new(|n: &str| contains_bounded(&n.to_lowercase(), &ql)),
        ];
        if reverse {
            tiers.push(Box::new(|n: &str| {
                let nl = n.to_lowercase();
                let bare = lower_bare(n);
                contains_bounded(&ql, &nl)
                    || (bare.chars().count() >= 2 && contains_bounded(&ql, &bare))
            }));
        }
        for tier in &tiers {
            let hits: Vec<usize> = self
                .0
                .iter()
                .enumerate()
                .filter(|(_, d)| d.aliases.iter().any(|n| tier(n)))
                .map(|(i, _)| i)
                .collect();
            match hits.len() {
                0 => continue,
                1 => return Found::One(hits[0]),
                _ => return Found::Many(hits),
            }
        }
        Found::None
    }

    /// Every lower-cased form under which a character may be named in a text: its names, the names
    /// without parenthesised parts, and those parts.
    fn name_forms(&self, i: usize) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for n in &self.0[i].aliases {
            let mut forms = vec![n.to_lowercase(), lower_bare(n)];
            forms.extend(paren_parts(n));
            for f in forms {
                if !f.is_empty() && !out.contains(&f) {
                    out.push(f);
                }
            }
        }
        out
    }
}

/// The character entries of one stage: name → fields.
type Entries<'a> = Vec<(&'a str, &'a Map<String, Value>)>;

/// script.json read: stages in order (their numbers), characters, and texts shared by all.
struct Layout {
    /// Stage numbers in play order (empty for a single-stage script).
    stages: Vec<u32>,
    cast: Cast,
    shared: Vec<String>,
}

fn read_script(json: &Value, path: &Path) -> Result<Layout, ImportError> {
    let root = json.as_object().expect("read_json returns objects");
    let mut stages: Vec<(u32, &str, &Map<String, Value>)> = Vec::new();
    let mut singles: Vec<(&str, &Map<String, Value>)> = Vec::new();
    let mut shared = Vec::new();
    let staged = root.keys().any(|k| stage_number(k).is_some());
    for (key, value) in root {
        match (stage_number(key), value) {
            (Some(n), Value::Object(m)) if staged => {
                if stages.iter().any(|(x, _, _)| *x == n) {
                    return Err(format_error(
                        path,
                        key,
                        &format!("one entry per stage (stage {n} appears twice)"),
                    ));
                }
                stages.push((n, key, m));
            }
            (Some(_), _) => {
                return Err(format_error(
                    path,
                    key,
                    "an object mapping character names to their fields",
                ))
            }
            (None, Value::Object(m)) if !staged => singles.push((key, m)),
            (None, Value::String(_) | Value::Array(_)) => {
                shared.extend(texts(value, path, key)?);
            }
            (None, _) => {
                let expected = if staged {
                    "a stage (`Stage <n>`) or a text shown to everyone"
                } else {
                    "a character's fields ({Story, Script, Relationship, Performance, Purpose, Ability})"
                };
                return Err(format_error(path, key, expected));
            }
        }
    }
    stages.sort_by_key(|(n, _, _)| *n);

    // Each stage (or the single stage) as (field prefix, entries).
    let mut groups: Vec<(String, Entries)> = Vec::new();
    if staged {
        for (_, key, m) in &stages {
            let mut entries = Vec::new();
            for (name, v) in m.iter() {
                match v {
                    Value::Object(fields) => entries.push((name.as_str(), fields)),
                    _ => {
                        return Err(format_error(
                            path,
                            &format!("{key}.{name}"),
                            "a character's fields ({Story, Script, Relationship, Performance, Purpose, Ability})",
                        ))
                    }
                }
            }
            groups.push((format!("{key}."), entries));
        }
    } else {
        groups.push((String::new(), singles));
    }

    let mut cast = Cast::default();
    for (k, (prefix, entries)) in groups.iter().enumerate() {
        let mut seen: Vec<usize> = Vec::new();
        let here: Vec<&str> = entries.iter().map(|(n, _)| n.trim()).collect();
        for (name, fields) in entries {
            let name = name.trim();
            let field = |f: &str| format!("{prefix}{name}.{f}");
            let i = match cast
                .0
                .iter()
                .position(|d| d.aliases.iter().any(|a| a == name))
            {
                Some(i) if !seen.contains(&i) => i,
                Some(_) => {
                    return Err(format_error(
                        path,
                        &format!("{prefix}{name}"),
                        "each character once per stage",
                    ))
                }
                None => match cast.find(name, true) {
                    // A fuller name for a character of an earlier stage not listed under its old name here.
                    Found::One(i)
                        if k > 0
                            && !seen.contains(&i)
                            && !cast.0[i].aliases.iter().any(|a| here.contains(&a.as_str())) =>
                    {
                        let d = &mut cast.0[i];
                        d.aliases.push(name.to_string());
                        d.name = name.to_string();
                        i
                    }
                    _ => {
                        cast.0.push(Draft {
                            name: name.to_string(),
                            aliases: vec![name.to_string()],
                            ..Draft::default()
                        });
                        cast.0.len() - 1
                    }
                },
            };
            seen.push(i);
            let d = &mut cast.0[i];
            let story = field_texts(fields, STORY, path, &field)?;
            if d.story.is_empty() {
                d.story = story.join("\n");
            }
            while d.acts.len() < k {
                d.acts.push(String::new());
            }
            d.acts
                .push(field_texts(fields, SCRIPT, path, &field)?.join("\n"));
            add_new(
                &mut d.relationships,
                field_texts(fields, RELATIONSHIP, path, &field)?,
            );
            add_new(
                &mut d.performance,
                field_texts(fields, PERFORMANCE, path, &field)?,
            );
            add_new(&mut d.goals, field_texts(fields, PURPOSE, path, &field)?);
            add_new(
                &mut d.abilities,
                field_texts(fields, ABILITY, path, &field)?,
            );
        }
    }
    Ok(Layout {
        stages: stages.iter().map(|(n, _, _)| *n).collect(),
        cast,
        shared,
    })
}

/// Appends the texts not already present.
fn add_new(to: &mut Vec<String>, texts: Vec<String>) {
    for t in texts {
        if !to.contains(&t) {
            to.push(t);
        }
    }
}

/// The cleaned, non-empty texts of a character field (any of `names`, ignoring case).
fn field_texts(
    fields: &Map<String, Value>,
    names: &[&str],
    path: &Path,
    field: &dyn Fn(&str) -> String,
) -> Result<Vec<String>, ImportError> {
    let mut out = Vec::new();
    for (k, v) in fields {
        if names.iter().any(|n| k.trim().to_lowercase() == *n) {
            out.extend(texts(v, path, &field(k))?);
        }
    }
    Ok(out)
}

/// A text value: a string or a list of strings (null = none), cleaned, empty ones dropped.
fn texts(v: &Value, path: &Path, field: &str) -> Result<Vec<String>, ImportError> {
    let raw: Vec<&str> = match v {
        Value::Null => Vec::new(),
        Value::String(s) => vec![s],
        Value::Array(items) => items
            .iter()
            .enumerate()
            .filter(|(_, x)| !x.is_null())
            .map(|(i, x)| {
                x.as_str()
                    .ok_or_else(|| format_error(path, &format!("{field}[{i}]"), "a string"))
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(format_error(path, field, "a string or a list of strings")),
    };
    Ok(raw
        .into_iter()
        .map(clean_text)
        .filter(|t| !t.is_empty())
        .collect())
}

/// The number of a stage key: `Stage 2`, `stage2`, `Act 3`, `第二幕`, `第2阶段`.
fn stage_number(key: &str) -> Option<u32> {
    let k = key.trim();
    let lower = k.to_lowercase();
    for prefix in ["stage", "act"] {
        if let Some(rest) = lower.strip_prefix(prefix) {
            let rest = rest.trim_start_matches([' ', '_', '-']);
            return rest.parse().ok().filter(|&n| n > 0);
        }
    }
    let rest = k.strip_prefix('第')?;
    let num = ["幕", "阶段", "章"]
        .iter()
        .find_map(|s| rest.strip_suffix(s))?
        .trim();
    num.parse()
        .ok()
        .or_else(|| chinese_number(num))
        .filter(|&n| n > 0)
}

/// 一 … 九十九.
fn chinese_number(s: &str) -> Option<u32> {
    let digit = |c: char| {
        "零一二三四五六七八九"
            .chars()
            .position(|d| d == c)
            .map(|p| p as u32)
    };
    let chars: Vec<char> = s.chars().collect();
    match chars.as_slice() {
        ['十'] => Some(10),
        [d] => digit(*d),
        ['十', u] => Some(10 + digit(*u)?),
        [t, '十'] => Some(10 * digit(*t)?),
        [t, '十', u] => Some(10 * digit(*t)? + digit(*u)?),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------------
// clues.json

fn read_clues(
    json: &Value,
    path: &Path,
    stages: &[u32],
    cast: &Cast,
    culprits: &[usize],
    specs: &[String],
) -> Result<Vec<Clue>, ImportError> {
    let root = json.as_object().expect("read_json returns objects");
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

// ---------------------------------------------------------------------------------------------------
// Truth

fn read_narrative(dir: &Path, title: &str, opts: &MirageOptions) -> Result<String, ImportError> {
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

// ---------------------------------------------------------------------------------------------------
// Victim

/// The victim's name by the rule of the module documentation, if it can be determined.
fn detect_victim(cast: &Cast, narrative: &str) -> Option<String> {
    let n = cast.0.len();
    // lower-cased candidate → (display form, characters listing it)
    let mut counts: HashMap<String, (String, Vec<usize>)> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    for (i, d) in cast.0.iter().enumerate() {
        for text in &d.relationships {
            for cand in relation_names(text) {
                if cast.find(&cand, true) != Found::None || names_character(cast, &cand) {
                    continue;
                }
                let key = cand.to_lowercase();
                let entry = counts.entry(key.clone()).or_insert_with(|| {
                    order.push(key.clone());
                    (cand.clone(), Vec::new())
                });
                if !entry.1.contains(&i) {
                    entry.1.push(i);
                }
            }
        }
    }
    let narrative = narrative.to_lowercase();
    let mut ranked: Vec<(&str, usize)> = order
        .iter()
        .map(|k| {
            let (display, who) = &counts[k];
            (display.as_str(), who.len())
        })
        .filter(|(display, _)| narrative.is_empty() || in_narrative(&narrative, display))
        .collect();
    ranked.sort_by_key(|r| std::cmp::Reverse(r.1));
    match ranked.as_slice() {
        [(name, c), rest @ ..]
            if *c >= 2 && c * 2 >= n && rest.first().is_none_or(|(_, c2)| c2 < c) =>
        {
            Some(name.to_string())
        }
        _ => None,
    }
}

/// Whether a candidate contains one of the characters' names (`Captain Hong Zilian`).
fn names_character(cast: &Cast, cand: &str) -> bool {
    let c = cand.to_lowercase();
    (0..cast.0.len()).any(|i| {
        cast.name_forms(i)
            .iter()
            .any(|f| f.chars().count() >= 2 && contains_bounded(&c, f))
    })
}

/// Whether a name occurs in the (lower-cased) narrative: as a string for CJK, else every word of it.
fn in_narrative(narrative: &str, name: &str) -> bool {
    let name = name.to_lowercase();
    if name.chars().any(is_cjk) {
        narrative.contains(&name)
    } else {
        name.split_whitespace()
            .all(|w| contains_bounded(narrative, w))
    }
}

/// The people a relationship text lists: the head of each `Name (role): …` line and every 【Name】.
fn relation_names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(p) = line.find([':', '：']) {
            out.push(line[..p].to_string());
        }
    }
    let mut rest = text;
    while let Some(open) = rest.find('【') {
        let after = &rest[open + '【'.len_utf8()..];
        match after.find('】') {
            Some(close) => {
                out.push(after[..close].to_string());
                rest = &after[close + '】'.len_utf8()..];
            }
            None => break,
        }
    }
    out.into_iter()
        .map(|c| {
            strip_parens(&c)
                .trim()
                .trim_matches(['【', '】', '*', '-', '•'])
                .trim()
                .to_string()
        })
        .filter(|c| plausible_name(c))
        .collect()
}

/// A short capitalised (or CJK) phrase without digits or sentence punctuation.
fn plausible_name(c: &str) -> bool {
    let Some(first) = c.chars().next() else {
        return false;
    };
    let chars = c.chars().count();
    (first.is_uppercase() || is_cjk(first))
        && chars <= 40
        && c.split_whitespace().count() <= 4
        && !c
            .chars()
            .any(|ch| ch.is_ascii_digit() || ".,;!?。，；！？、\"“”".contains(ch))
        && (chars >= 2)
}

// ---------------------------------------------------------------------------------------------------
// Name helpers

/// The name without parenthesised parts, lower-cased and trimmed.
fn lower_bare(name: &str) -> String {
    strip_parens(name).trim().to_lowercase()
}

/// Removes `( … )` and `（ … ）` parts.
fn strip_parens(name: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in name.chars() {
        match c {
            '(' | '（' => depth += 1,
            ')' | '）' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The lower-cased contents of the name's parentheses.
fn paren_parts(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for c in name.chars() {
        match c {
            '(' | '（' => {
                depth += 1;
                cur.clear();
            }
            ')' | '）' if depth > 0 => {
                depth -= 1;
                let t = cur.trim().to_lowercase();
                if !t.is_empty() {
                    out.push(t);
                }
                cur.clear();
            }
            _ if depth > 0 => cur.push(c),
            _ => {}
        }
    }
    out
}

/// Whether `c` continues a word next to `edge` (the needle's character at that side): letters and digits
/// of alphabetic scripts do; CJK text has no word boundaries.
fn joins(c: char, edge: char) -> bool {
    c.is_alphanumeric() && !is_cjk(c) && !is_cjk(edge)
}

/// `needle` occurs in `hay` not inside a longer word (both lower-cased).
fn contains_bounded(hay: &str, needle: &str) -> bool {
    let (Some(first), Some(last)) = (needle.chars().next(), needle.chars().next_back()) else {
        return false;
    };
    hay.match_indices(needle).any(|(i, _)| {
        let before = hay[..i].chars().next_back();
        let after = hay[i + needle.len()..].chars().next();
        !before.is_some_and(|c| joins(c, first)) && !after.is_some_and(|c| joins(c, last))
    })
}

/// `hay` starts with `needle`, ending on a word boundary (both lower-cased).
fn starts_bounded(hay: &str, needle: &str) -> bool {
    match needle.chars().next_back() {
        Some(last) if hay.starts_with(needle) => !hay[needle.len()..]
            .chars()
            .next()
            .is_some_and(|c| joins(c, last)),
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------------
// Files and language

fn read_text(path: &Path) -> Result<String, ImportError> {
    let bytes = std::fs::read(path).map_err(|source| ImportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|e| {
        format_error(
            path,
            "(file)",
            &format!(
                "UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

fn read_json(path: &Path) -> Result<Value, ImportError> {
    let text = read_text(path)?;
    let value: Value = serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(&text))
        .map_err(|e| format_error(path, "(file)", &format!("valid JSON ({e})")))?;
    if value.is_object() {
        Ok(value)
    } else {
        Err(format_error(path, "(file)", "a JSON object"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Writes `<root>/<title>/script.json` (and `clues.json`, `<root>/Truth.json` when given).
    fn write(
        root: &Path,
        title: &str,
        script: &Value,
        clues: Option<&Value>,
        truth: Option<&Value>,
    ) -> PathBuf {
        let dir = root.join(title);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("script.json"), script.to_string()).unwrap();
        if let Some(c) = clues {
            std::fs::write(dir.join("clues.json"), c.to_string()).unwrap();
        }
        if let Some(t) = truth {
            std::fs::write(root.join("Truth.json"), t.to_string()).unwrap();
        }
        dir
    }

    fn opts(culprits: &[&str]) -> MirageOptions {
        MirageOptions {
            culprits: culprits.iter().map(|s| s.to_string()).collect(),
            truth: None,
        }
    }

    fn cast(names: &[&str]) -> Cast {
        Cast(
            names
                .iter()
                .map(|n| Draft {
                    name: n.to_string(),
                    aliases: vec![n.to_string()],
                    ..Draft::default()
                })
                .collect(),
        )
    }

    fn person(story: &str, script: &str, relationship: &str) -> Value {
        json!({
            "Story": story,
            "Script": script,
            "Relationship": relationship,
            "Performance": "Stay calm.",
            "Purpose": "Find the culprit.",
            "Ability": "You cannot lie."
        })
    }

    #[test]
    fn stage_keys_are_recognised() {
        assert_eq!(stage_number("Stage 1"), Some(1));
        assert_eq!(stage_number("stage 12"), Some(12));
        assert_eq!(stage_number("STAGE2"), Some(2));
        assert_eq!(stage_number("Act 3"), Some(3));
        assert_eq!(stage_number("第二幕"), Some(2));
        assert_eq!(stage_number("第十一幕"), Some(11));
        assert_eq!(stage_number("第3阶段"), Some(3));
        for not in [
            "Stage",
            "Stage one",
            "Stage 0",
            "Warehouse",
            "Actor Lee",
            "Stagehand",
        ] {
            assert_eq!(stage_number(not), None, "{not}");
        }
    }

    #[test]
    fn stages_are_played_in_number_order() {
        let tmp = tempfile::tempdir().unwrap();
        let script = json!({
            "Stage 2": { "Ann": { "Script": "Second." }, "Bo": { "Script": "B two." } },
            "Stage 10": { "Ann": { "Script": "Tenth." } },
            "Stage 1": { "Bo": { "Story": "Bo story.", "Script": "B one." }, "Ann": { "Story": "Ann story.", "Script": "First." } },
        });
        let dir = write(tmp.path(), "Order", &script, None, None);
        let s = import(&dir, &opts(&["Ann"])).unwrap();
        assert_eq!(s.acts, 3);
        let names: Vec<&str> = s.characters.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["Bo", "Ann"], "first-seen order in play order");
        assert_eq!(s.characters[1].acts, ["First.", "Second.", "Tenth."]);
        assert_eq!(s.characters[0].acts, ["B one.", "B two."]);
        assert_eq!(s.characters[0].story, "Bo story.");
    }

    #[test]
    fn culprit_names_match_in_tiers() {
        let c = cast(&[
            "Doctor Fang",
            "Ichiro Kiryu (Nopperabo)",
            "Crew Member Han",
            "Captain Hong",
        ]);
        assert_eq!(c.find("Doctor Fang", true), Found::One(0), "exact");
        assert_eq!(c.find("doctor FANG", true), Found::One(0), "case");
        assert_eq!(
            c.find("Ichiro Kiryu", true),
            Found::One(1),
            "without parentheses"
        );
        assert_eq!(
            c.find("nopperabo", true),
            Found::One(1),
            "the part in parentheses"
        );
        assert_eq!(c.find("Captain", true), Found::One(3), "prefix");
        assert_eq!(c.find("Fang", true), Found::One(0), "containment");
        assert_eq!(c.find("Kiryu", true), Found::One(1), "containment");
        assert_eq!(
            c.find("Doctor Fang Ming", true),
            Found::One(0),
            "culprit longer"
        );
        assert_eq!(c.find("Doctor Fang Ming", false), Found::None);
        assert_eq!(c.find("an", true), Found::None, "not inside a word");
        assert_eq!(c.find("Zed", true), Found::None);
        assert_eq!(c.find("", true), Found::None);
        let twins = cast(&["Li Wei", "Li Na"]);
        assert_eq!(twins.find("Li", true), Found::Many(vec![0, 1]));
        let exact_first = cast(&["Black", "Little Black"]);
        assert_eq!(exact_first.find("Black", true), Found::One(0));
    }

    fn two_rooms() -> (Value, Value, Value) {
        let script = json!({
            "Manager Ru": person("Ru runs the bar.", "You went to the deck at eight.", "Tom Bell (Mate): He owes you money.\nSinger Yo: Your employee."),
            "Singer Yo": person("Yo sings at the bar.", "You rehearsed at eight.", "Tom Bell: He courted you.\nManager Ru: Your boss."),
            "Cook Pan": person("Pan cooks.", "You baked bread at eight.", "Tom Bell: He insulted your soup.\nGuest Lee (Passenger): A stranger."),
        });
        let clues = json!({
            "Corpse Information": ["A wound on the chest.", "\"A wet sleeve.\""],
            "Manager Ru's Room": ["A revolver with five bullets."],
            "Singer Yo": ["A letter from Tom Bell."],
            "Kitchen": ["A missing knife.", ""],
        });
        let truth =
            json!({ "Two Rooms": "Manager Ru shot Bell Tom on the deck.\\nNobody saw it." });
        (script, clues, truth)
    }

    #[test]
    fn clues_belong_to_characters_or_places() {
        let tmp = tempfile::tempdir().unwrap();
        let (script, clues, truth) = two_rooms();
        let dir = write(tmp.path(), "Two Rooms", &script, Some(&clues), Some(&truth));
        let s = import(&dir, &opts(&["manager ru"])).unwrap();
        assert_eq!(s.clues.len(), 5, "empty texts dropped");
        let ids: Vec<&str> = s.clues.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["c1", "c2", "c3", "c4", "c5"]);
        assert_eq!(s.clues[1].text, "A wet sleeve.", "cleaned");
        assert_eq!(s.clues[0].location.as_deref(), Some("Corpse Information"));
        assert_eq!(s.clues[0].about, None);
        assert!(!s.clues[0].key);
        assert_eq!(s.clues[2].location.as_deref(), Some("Manager Ru's Room"));
        assert!(s.clues[2].key, "the location names the culprit");
        assert_eq!(s.clues[3].about.as_deref(), Some("Singer Yo"));
        assert_eq!(s.clues[3].title, "Singer Yo");
        assert!(!s.clues[3].key);
        assert!(s.clues.iter().all(|c| c.act.is_none()));

        assert_eq!(s.murderers(), ["Manager Ru"]);
        assert_eq!(
            s.victims[0].name, "Tom Bell",
            "listed by all three, in the truth"
        );
        assert_eq!(s.characters[0].killed, ["Tom Bell"]);
        assert_eq!(s.truth.culprits[0].by, ["Manager Ru"]);
        assert_eq!(
            s.truth.narrative,
            "Manager Ru shot Bell Tom on the deck.\nNobody saw it."
        );
        assert_eq!(s.language, Language::En);
        assert_eq!(s.source.as_deref(), Some("mirage"));
        assert_eq!(s.acts, 1);
        assert!(s.errors().is_empty(), "{:?}", s.errors());
    }

    #[test]
    fn clue_about_the_culprit_is_key() {
        let tmp = tempfile::tempdir().unwrap();
        let (script, clues, _) = two_rooms();
        let dir = write(tmp.path(), "Two Rooms", &script, Some(&clues), None);
        let s = import(&dir, &opts(&["Singer Yo"])).unwrap();
        assert!(s.clues[3].key && s.clues[3].about.as_deref() == Some("Singer Yo"));
        assert!(!s.clues[2].key);
        assert!(s.truth.narrative.is_empty(), "no Truth.json");
    }

    #[test]
    fn unmatched_culprit_is_a_format_error_listing_the_characters() {
        let tmp = tempfile::tempdir().unwrap();
        let (script, clues, _) = two_rooms();
        let dir = write(tmp.path(), "Two Rooms", &script, Some(&clues), None);
        match import(&dir, &opts(&["Zed"])) {
            Err(ImportError::Format {
                field, expected, ..
            }) => {
                assert_eq!(field, "culprit");
                assert!(
                    expected.contains("Zed")
                        && expected.contains("Manager Ru, Singer Yo, Cook Pan"),
                    "{expected}"
                );
            }
            other => panic!("expected a Format error, got {other:?}"),
        }
    }

    #[test]
    fn unknown_title_needs_a_culprit() {
        let tmp = tempfile::tempdir().unwrap();
        let (script, _, _) = two_rooms();
        let dir = write(tmp.path(), "Two Rooms", &script, None, None);
        let err = import(&dir, &opts(&[])).unwrap_err().to_string();
        assert!(
            err.contains("--culprit NAME") && err.contains("culprit"),
            "{err}"
        );
        let dir = write(
            tmp.path(),
            "The Final Performance of a Big Star",
            &script,
            None,
            None,
        );
        let err = import(&dir, &opts(&[])).unwrap_err().to_string();
        assert!(
            err.contains("names no culprit") && err.contains("--culprit"),
            "{err}"
        );
    }

    #[test]
    fn multi_stage_script_merges_stages() {
        let tmp = tempfile::tempdir().unwrap();
        let script = json!({
            "Stage 1": {
                "Fox": person("Aki keeps the inn.", "You served tea at nine.", "Old Tanuki (Innkeeper): You owe him rent.\nBadger: A regular guest."),
                "Badger": person("Badger digs.", "You dug at nine.", "Old Tanuki: He lent you money.\nFox: Your friend."),
                "Crow": person("Crow watches.", "You slept at nine.", "Old Tanuki: Your uncle."),
            },
            "intro": "Rain falls on the Moon Inn.",
            "Stage 2": {
                "Aki Mori (Fox)": { "Story": "", "Script": "At ten you heard a cry.", "Relationship": "Old Tanuki (Innkeeper): You owe him rent.\nBadger: A regular guest." },
                "Badger": { "Script": ["At ten you ran.", "You hid the rope."], "Relationship": "Old Tanuki: You pushed him." },
                "Crow": { "Script": "At ten you woke.", "Purpose": ["Find the culprit.", "Protect Fox."] },
            },
        });
        let clues = json!({
            "Stage 1": { "Well": ["A torn sleeve."], "Badger's Room": ["A wet rope."] },
            "Stage 2": { "Fox": ["A cold tea cup."] },
            "Loose Page": "Someone paid Badger.",
        });
        let truth = json!({ "moon inn": "Badger pushed Old Tanuki into the well." });
        let dir = write(tmp.path(), "Moon Inn", &script, Some(&clues), Some(&truth));
        let s = import(&dir, &opts(&["Badger"])).unwrap();

        assert_eq!(s.title, "Moon Inn");
        assert_eq!(s.acts, 2);
        assert_eq!(s.premise, "Rain falls on the Moon Inn.");
        let names: Vec<&str> = s.characters.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            ["Aki Mori (Fox)", "Badger", "Crow"],
            "renamed in stage 2"
        );
        let fox = &s.characters[0];
        assert_eq!(fox.story, "Aki keeps the inn.");
        assert_eq!(
            fox.acts,
            ["You served tea at nine.", "At ten you heard a cry."]
        );
        assert_eq!(fox.relationships.len(), 1, "same text not repeated");
        let badger = &s.characters[1];
        assert_eq!(badger.acts[1], "At ten you ran.\nYou hid the rope.");
        assert_eq!(badger.relationships.len(), 2, "changed text appended");
        assert_eq!(s.characters[2].goals, ["Find the culprit.", "Protect Fox."]);
        assert_eq!(s.characters[2].abilities, ["You cannot lie."]);
        assert_eq!(s.characters[2].performance, ["Stay calm."]);

        assert_eq!(s.murderers(), ["Badger"]);
        assert_eq!(s.victims[0].name, "Old Tanuki");
        assert_eq!(s.truth.narrative, "Badger pushed Old Tanuki into the well.");

        type Row<'a> = (&'a str, Option<&'a str>, Option<&'a str>, bool, Option<u32>);
        let summary: Vec<Row> = s
            .clues
            .iter()
            .map(|c| {
                (
                    c.id.as_str(),
                    c.about.as_deref(),
                    c.location.as_deref(),
                    c.key,
                    c.act,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("c1", None, Some("Well"), false, Some(1)),
                ("c2", None, Some("Badger's Room"), true, Some(1)),
                ("c3", Some("Aki Mori (Fox)"), None, false, Some(2)),
                ("c4", None, Some("Loose Page"), false, None),
            ]
        );
        assert!(s.errors().is_empty(), "{:?}", s.errors());
        let back = Script::parse(&s.to_toml(), Path::new("moon.toml")).unwrap();
        assert_eq!(back.characters.len(), 3);
        assert_eq!(back.clues.len(), 4);
    }

    #[test]
    fn truth_option_overrides_the_default_file() {
        let tmp = tempfile::tempdir().unwrap();
        let (script, clues, truth) = two_rooms();
        let dir = write(tmp.path(), "Two Rooms", &script, Some(&clues), Some(&truth));
        let other = tmp.path().join("account.txt");
        std::fs::write(&other, "Ru did it.").unwrap();
        let s = import(
            &dir,
            &MirageOptions {
                culprits: vec!["Manager Ru".into()],
                truth: Some(other),
            },
        )
        .unwrap();
        assert_eq!(s.truth.narrative, "Ru did it.");
        assert_eq!(
            s.victims[0].name, "the victim",
            "Tom Bell is not in this account"
        );
        let missing = MirageOptions {
            culprits: vec!["Manager Ru".into()],
            truth: Some(tmp.path().join("nope.json")),
        };
        assert!(matches!(
            import(&dir, &missing),
            Err(ImportError::Read { .. })
        ));
    }

    #[test]
    fn chinese_script_is_detected() {
        let tmp = tempfile::tempdir().unwrap();
        let script = json!({
            "林医生": person("你是镇上的医生。", "晚上八点你去了书房。", "【周老爷】是你的病人。【王管家】常来取药。"),
            "王管家": person("你是周家的管家。", "晚上八点你在厨房。", "【周老爷】是你的主人。"),
            "陈小姐": person("你是周家的客人。", "晚上八点你在花园。", "【周老爷】是你的舅舅。【林医生】很和气。"),
        });
        let clues = json!({
            "林医生的房间": ["一瓶安眠药。"],
            "王管家": ["一串钥匙。"],
            "书房": ["打翻的茶杯。"],
        });
        let dir = write(tmp.path(), "雨夜山庄", &script, Some(&clues), None);
        let s = import(&dir, &opts(&["林医生"])).unwrap();
        assert_eq!(s.language, Language::Zh);
        assert_eq!(s.victims[0].name, "周老爷");
        assert_eq!(s.murderers(), ["林医生"]);
        assert!(s.clues[0].key && s.clues[0].location.as_deref() == Some("林医生的房间"));
        assert_eq!(s.clues[1].about.as_deref(), Some("王管家"));
        assert!(!s.clues[2].key);
        assert!(s.errors().is_empty(), "{:?}", s.errors());

        // Nobody named in the relationships: the generic Chinese victim.
        let bare = json!({
            "林医生": person("你是医生。", "你在书房。", "你们不熟。"),
            "王管家": person("你是管家。", "你在厨房。", ""),
        });
        let dir = write(tmp.path(), "空宅", &bare, None, None);
        let s = import(&dir, &opts(&["王管家"])).unwrap();
        assert_eq!(s.victims[0].name, "死者");
        assert_eq!(s.characters[1].killed, ["死者"]);
        assert!(s.errors().is_empty(), "{:?}", s.errors());
    }

    #[test]
    fn bad_layouts_are_format_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = write(tmp.path(), "Bad", &json!({ "Ann": 3 }), None, None);
        assert!(matches!(
            import(&dir, &opts(&["Ann"])),
            Err(ImportError::Format { field, .. }) if field == "Ann"
        ));
        let dir = write(
            tmp.path(),
            "Bad2",
            &json!({ "Ann": { "Script": [1] }, "Bo": { "Script": "x" } }),
            None,
            None,
        );
        assert!(matches!(
            import(&dir, &opts(&["Ann"])),
            Err(ImportError::Format { field, .. }) if field == "Ann.Script[0]"
        ));
        let missing = tmp.path().join("Nowhere");
        assert!(matches!(
            import(&missing, &opts(&["Ann"])),
            Err(ImportError::Format { field, .. }) if field == "(file)"
        ));
    }
}
