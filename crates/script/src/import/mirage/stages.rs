//! `script.json`: the stages in play order, the characters gathered across them (a later stage may
//! rename one), and the texts shown to everyone.

use std::path::Path;

use serde_json::{Map, Value};

use super::cast::{Cast, Draft, Found};
use super::files::texts;
use crate::import::{format_error, ImportError};

/// Field names of a character entry (compared ignoring case), English and Chinese.
const STORY: &[&str] = &["story", "人物故事"];
const SCRIPT: &[&str] = &["script", "人物剧本"];
const RELATIONSHIP: &[&str] = &["relationship", "relationships", "人物关系"];
const PERFORMANCE: &[&str] = &["performance", "你的表现"];
const PURPOSE: &[&str] = &["purpose", "purposes", "你的目的"];
const ABILITY: &[&str] = &["ability", "abilities", "其他能力"];

/// The character entries of one stage: name → fields.
type Entries<'a> = Vec<(&'a str, &'a Map<String, Value>)>;

/// script.json read: stages in order (their numbers), characters, and texts shared by all.
pub(super) struct Layout {
    /// Stage numbers in play order (empty for a single-stage script).
    pub(super) stages: Vec<u32>,
    pub(super) cast: Cast,
    /// Texts that are no character's: the premise.
    pub(super) shared: Vec<String>,
}

/// Reads the characters and shared texts of `root`, the object of the file at `path`.
pub(super) fn read_script(root: &Map<String, Value>, path: &Path) -> Result<Layout, ImportError> {
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
            let i = place(&mut cast, name, k, &seen, &here)
                .map_err(|expected| format_error(path, &format!("{prefix}{name}"), expected))?;
            // The reference code reads every character's `Script`: without it there is nothing to play.
            if !fields
                .keys()
                .any(|k| SCRIPT.contains(&k.trim().to_lowercase().as_str()))
            {
                return Err(format_error(
                    path,
                    &field("Script"),
                    "the character's `Script` text (required: the reference code reads it)",
                ));
            }
            seen.push(i);
            let d = &mut cast.0[i];
            let story = field_texts(fields, STORY, path, &field)?.join("\n");
            let script = field_texts(fields, SCRIPT, path, &field)?.join("\n");
            // The first stage's `Story` is the character's background; a later stage's own `Story` (a
            // multi-stage script tells more of it per stage) is released with that stage, before its
            // `Script`, rather than dropped.
            let act = if d.story.is_empty() {
                d.story = story;
                script
            } else if story.is_empty() || story == d.story {
                script
            } else if script.is_empty() {
                story
            } else {
                format!("{story}\n\n{script}")
            };
            while d.acts.len() < k {
                d.acts.push(String::new());
            }
            d.acts.push(act);
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

/// Which character of the cast `name` is at stage `k` (`seen`: the characters this stage has
/// listed so far; `here`: every name it lists); a new one is added. On failure, what was expected.
fn place(
    cast: &mut Cast,
    name: &str,
    k: usize,
    seen: &[usize],
    here: &[&str],
) -> Result<usize, &'static str> {
    Ok(
        match cast
            .0
            .iter()
            .position(|d| d.aliases.iter().any(|a| a == name))
        {
            Some(i) if !seen.contains(&i) => i,
            Some(_) => return Err("each character once per stage"),
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
        },
    )
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

/// The number of a stage key: `Stage 2`, `stage2`, `Act 3`, `第二幕`, `第2阶段`.
pub(super) fn stage_number(key: &str) -> Option<u32> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
