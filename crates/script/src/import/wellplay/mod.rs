//! Importer of one WellPlay (PLAYER\*) script folder, "<Title> (<N> people ...)", into the canonical model.
//!
//! Layout (see `shared/datasets/README.md`):
//! - `json/script_info.json`: `script_name`, `character_name` (the players, in order), `acts_num`, and the
//!   per-act protocol settings `stage`, `open_discuss_rounds`, `keep_asking`, `privacy_discuss_rounds`
//!   (not part of the canonical model; not imported).
//! - `json/<Character>.json`: `script` (one text per act), `acts_goal`, `final_goal`, `acts_performance`,
//!   `secrets`, `victims`, `kill_by_me` (0/1 per victim), `is_murderer`, `questions` (unused).
//! - `final_result/<Character>.csv` and `final_result/FSA.csv`: multiple-choice questions with columns
//!   `value` (a/b/c category), `type` (a single, b multiple), `question`, options `a`..`e`, `truth`.
//!
//! Each question records how the reference scorer judged it (`truth.rs`): a multiple-choice (type b)
//! answer is right when the true letter is among the picks, and the picks asked for are read from the
//! question ("the two people you most suspect"); a single-choice row with several true letters accepts
//! any of them.
//!
//! Files are found by the character names of `script_info.json`; nothing depends on a title or a name.
//! The result is not validated here: the caller validates and reports.

mod csv;
mod questions;
mod repair;
mod truth;

use std::path::{Path, PathBuf};

use serde_json::Value;

use self::questions::read_questions;
use self::repair::Log;
pub use self::repair::Repair;

use super::{clean_text, ImportError};
use super::{detect_language, format_error};
use crate::{Character, ChoiceQuestion, Culprits, Role, Script, Truth, Victim};

/// The names of the file of questions for the full-script-access (omniscient) evaluation: the English set
/// says `FSA.csv`, the Chinese set of the same publisher `GM.csv`.
const FSA_FILES: [&str; 2] = ["FSA.csv", "GM.csv"];

/// A script imported with the repairs made to its source files.
#[derive(Debug)]
pub struct Imported {
    pub script: Script,
    /// What was repaired, in the order met; empty for a clean source or a strict import.
    pub repairs: Vec<Repair>,
}

/// Imports the WellPlay script folder `dir` tolerantly, dropping the repair log (for callers that only
/// need the script; `import_logged` shows what was repaired).
pub fn import(dir: &Path) -> Result<Script, ImportError> {
    import_logged(dir, false).map(|i| i.script)
}

/// Imports the WellPlay script folder `dir`. The files are hand-made: a tolerant import (`strict` false)
/// imports what a faulty row clearly means and logs a repair; `strict` refuses the first fault.
pub fn import_logged(dir: &Path, strict: bool) -> Result<Imported, ImportError> {
    let mut log = Log {
        strict,
        repairs: Vec::new(),
    };
    let info_path = dir.join("json").join("script_info.json");
    let info = read_json(&info_path)?;
    let title = clean_text(&get_string(&info, "script_name", &info_path)?);
    let names = get_string_list(&info, "character_name", &info_path)?;
    if names.is_empty() {
        return Err(format_error(
            &info_path,
            "character_name",
            "a non-empty list of character names",
        ));
    }
    // Names become file names (`json/<Name>.json`): one that could leave the folder is refused rather
    // than followed, so a crafted dataset cannot make the importer read elsewhere.
    for (i, n) in names.iter().enumerate() {
        if n.trim().is_empty() || n.contains(['/', '\\', '\0']) || n.starts_with('.') {
            return Err(format_error(
                &info_path,
                &format!("character_name[{i}]"),
                "a character name usable as a file name (no path separators, not starting with `.`)",
            ));
        }
    }
    let acts = match info.get("acts_num") {
        None | Some(Value::Null) => 1,
        Some(v) => as_count(v).ok_or_else(|| {
            format_error(
                &info_path,
                "acts_num",
                "a non-negative whole number of acts",
            )
        })?,
    }
    .max(1);

    let mut characters = Vec::with_capacity(names.len());
    let mut victims: Vec<Victim> = Vec::new();
    let mut kills: Vec<(String, String)> = Vec::new(); // (victim, killer)
    let mut read = Vec::with_capacity(names.len());
    for name in &names {
        let path = character_json_path(dir, name);
        let c = read_character(name, &path)?;
        read.push((name, path, c));
    }
    let spellings: Vec<String> = read
        .iter()
        .flat_map(|(_, _, c)| c.victims.iter().cloned())
        .collect();
    let person = victim_people(spellings.iter());
    for (name, path, mut c) in read {
        // One person, one victim: characters may write the same victim differently, as a form of
        // address with the real name in parentheses; the first spelling met names the victim.
        let mut renamed: Vec<(String, String)> = Vec::new();
        for (i, v) in c.victims.iter().enumerate() {
            let same = |x: &Victim| person(&x.name) == person(v);
            match victims.iter().find(|x| same(x)) {
                Some(x) if x.name != *v => {
                    log.repair(
                        &path,
                        None,
                        &format!("victims[{i}]"),
                        format!(
                            "\"{v}\" read as the victim \"{}\" (the same person)",
                            x.name
                        ),
                        &format!(
                            "the victim's name as other characters write it (\"{}\")",
                            x.name
                        ),
                    )?;
                    renamed.push((v.clone(), x.name.clone()));
                }
                Some(_) => {}
                None => victims.push(Victim {
                    name: v.clone(),
                    description: String::new(),
                }),
            }
        }
        for k in c.character.killed.iter_mut() {
            if let Some((_, to)) = renamed.iter().find(|(from, _)| from == k) {
                *k = to.clone();
            }
        }
        c.character.killed.dedup();
        for v in &c.character.killed {
            kills.push((v.clone(), name.clone()));
        }
        characters.push(c.character);
    }
    let culprits = victims
        .iter()
        .map(|v| Culprits {
            victim: v.name.clone(),
            by: kills
                .iter()
                .filter(|(victim, _)| *victim == v.name)
                .map(|(_, killer)| killer.clone())
                .collect(),
        })
        .collect();

    let choice = read_all_questions(dir, &names, &mut log)?;

    let language = detect_language(characters.iter().flat_map(|c| c.acts.iter()));
    let script = Script {
        format: 1,
        title,
        language,
        source: Some("wellplay".into()),
        premise: String::new(),
        acts,
        victims,
        suspects: Vec::new(),
        host: None,
        characters,
        clues: Vec::new(),
        truth: Truth {
            murderer: None,
            culprits,
            narrative: String::new(),
        },
        factual: Vec::new(),
        inferential: Vec::new(),
        choice,
    };
    Ok(Imported {
        script,
        repairs: log.repairs,
    })
}

/// Every character's questions and the omniscient file's, each question once.
fn read_all_questions(
    dir: &Path,
    names: &[String],
    log: &mut Log,
) -> Result<Vec<ChoiceQuestion>, ImportError> {
    let mut choice: Vec<ChoiceQuestion> = Vec::new();
    let results = dir.join("final_result");
    for name in names {
        let path = results.join(format!("{name}.csv"));
        choice.extend(read_questions(&path, Some(name), log)?);
    }
    let fsa_path = FSA_FILES
        .iter()
        .map(|f| results.join(f))
        .find(|p| p.is_file())
        .unwrap_or_else(|| results.join(FSA_FILES[0]));
    // The omniscient file repeats the characters' questions: each copy is folded into one unfolded
    // question of the same content, so a question is counted once; the rest are asked only there.
    for q in read_questions(&fsa_path, None, log)? {
        match choice
            .iter_mut()
            .find(|c| c.character.is_some() && !c.full_access && same_question(c, &q))
        {
            Some(c) => c.full_access = true,
            None => choice.push(q),
        }
    }
    Ok(choice)
}

/// Groups the victims' spellings into people: `Title(Real Name)` is the person `Real Name`, and also the
/// person its outer part names when another character writes that part as a bare name (a form of address
/// alone, like a kinship word, is not a name). Returns the group (its smallest key) of a spelling.
fn victim_people<'a>(spellings: impl Iterator<Item = &'a String>) -> impl Fn(&str) -> String {
    let spellings: Vec<&String> = spellings.collect();
    let bare: std::collections::BTreeSet<String> = spellings
        .iter()
        .filter(|s| !s.contains(['(', '（']))
        .map(|s| s.trim().to_lowercase())
        .collect();
    let keys = |s: &str| -> Vec<String> {
        let mut k = vec![victim_key(s)];
        if let Some((outer, _)) = s.split_once(['(', '（']) {
            let outer = outer.trim().to_lowercase();
            if bare.contains(&outer) {
                k.push(outer);
            }
        }
        k
    };
    // Union of keys shared by a spelling, to a fixed point (a handful of victims per script).
    let mut groups: Vec<std::collections::BTreeSet<String>> = Vec::new();
    for s in &spellings {
        let mut merged: std::collections::BTreeSet<String> = keys(s).into_iter().collect();
        groups.retain(|g| {
            if g.is_disjoint(&merged) {
                true
            } else {
                merged.extend(g.iter().cloned());
                false
            }
        });
        groups.push(merged);
    }
    move |name: &str| {
        let k = victim_key(name);
        groups
            .iter()
            .find(|g| g.contains(&k))
            .and_then(|g| g.iter().next().cloned())
            .unwrap_or(k)
    }
}

/// What identifies a victim across spellings: the name in parentheses of `Title(Real Name)`, else the
/// bare name, compared without case or surrounding space.
fn victim_key(name: &str) -> String {
    let inner = name
        .split_once(['(', '（'])
        .and_then(|(_, rest)| rest.rsplit_once([')', '）']).map(|(n, _)| n.trim()))
        .filter(|n| !n.is_empty());
    inner.unwrap_or(name.trim()).to_lowercase()
}

/// The same question in content (category, kind, text, options and truth), whoever is asked.
fn same_question(a: &ChoiceQuestion, b: &ChoiceQuestion) -> bool {
    a.category == b.category
        && a.multiple == b.multiple
        && a.picks == b.picks
        && a.rule == b.rule
        && a.question == b.question
        && a.options == b.options
        && a.truth == b.truth
}

/// A character as read from its JSON file, with the victims it knows of.
struct ReadCharacter {
    character: Character,
    victims: Vec<String>,
}

fn read_character(name: &str, path: &Path) -> Result<ReadCharacter, ImportError> {
    let json = read_json(path)?;
    let acts = get_texts(&json, "script", path)?
        .iter()
        .map(|t| clean_text(t))
        .collect();
    let non_empty = |texts: Vec<String>| -> Vec<String> {
        texts
            .iter()
            .map(|t| clean_text(t))
            .filter(|t| !t.is_empty())
            .collect()
    };
    let mut goals = non_empty(get_texts(&json, "acts_goal", path)?);
    goals.extend(non_empty(get_texts(&json, "final_goal", path)?));
    let performance = non_empty(get_texts(&json, "acts_performance", path)?);
    let secrets = non_empty(get_texts(&json, "secrets", path)?);

    let victims: Vec<String> = get_string_list(&json, "victims", path)?
        .iter()
        .map(|v| v.trim().to_string())
        .collect();
    for (i, v) in victims.iter().enumerate() {
        if v.is_empty() {
            return Err(format_error(
                path,
                &format!("victims[{i}]"),
                "a victim's name",
            ));
        }
    }
    let flags = match json.get("kill_by_me") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                as_flag(v).ok_or_else(|| format_error(path, &format!("kill_by_me[{i}]"), "0 or 1"))
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => {
            return Err(format_error(
                path,
                "kill_by_me",
                "a list of 0/1, one per victim",
            ))
        }
    };
    if !flags.is_empty() && flags.len() != victims.len() {
        return Err(format_error(
            path,
            "kill_by_me",
            &format!(
                "one 0/1 per victim ({} victims, {} flags)",
                victims.len(),
                flags.len()
            ),
        ));
    }
    let killed = victims
        .iter()
        .zip(&flags)
        .filter(|(_, &k)| k)
        .map(|(v, _)| v.clone())
        .collect();
    let murderer = match json.get("is_murderer") {
        None | Some(Value::Null) => false,
        Some(v) => as_flag(v).ok_or_else(|| format_error(path, "is_murderer", "0 or 1"))?,
    };
    Ok(ReadCharacter {
        character: Character {
            name: name.to_string(),
            role: if murderer {
                Role::Murderer
            } else {
                Role::Civilian
            },
            public: String::new(),
            story: String::new(),
            timeline: String::new(),
            acts,
            secrets,
            goals,
            relationships: Vec::new(),
            performance,
            abilities: Vec::new(),
            killed,
        },
        victims,
    })
}

/// Reads a file as UTF-8; a missing file is a format error naming the expected path.
fn read_text(path: &Path) -> Result<String, ImportError> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|e| {
            format_error(
                path,
                "(file)",
                &format!(
                    "UTF-8 text (invalid byte at offset {})",
                    e.utf8_error().valid_up_to()
                ),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format_error(
            path,
            "(file)",
            "this file to exist (WellPlay layout: json/script_info.json, json/<Character>.json, \
             final_result/<Character>.csv, final_result/FSA.csv or GM.csv)",
        )),
        Err(source) => Err(ImportError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
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

fn get_string(json: &Value, key: &str, path: &Path) -> Result<String, ImportError> {
    match json.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(format_error(path, key, "a string")),
    }
}

fn get_string_list(json: &Value, key: &str, path: &Path) -> Result<Vec<String>, ImportError> {
    match json.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) => Ok(s.clone()),
                _ => Err(format_error(path, &format!("{key}[{i}]"), "a string")),
            })
            .collect(),
        Some(_) => Err(format_error(path, key, "a list of strings")),
    }
}

/// A text field that may be a string or a list of strings (absent → none).
fn get_texts(json: &Value, key: &str, path: &Path) -> Result<Vec<String>, ImportError> {
    match json.get(key) {
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        _ => get_string_list(json, key, path)
            .map_err(|_| format_error(path, key, "a string or a list of strings")),
    }
}

/// 0/1, true/false, or "0"/"1".
fn as_flag(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => match n.as_u64() {
            Some(0) => Some(false),
            Some(1) => Some(true),
            _ => None,
        },
        Value::String(s) => match s.trim() {
            "0" => Some(false),
            "1" => Some(true),
            _ => None,
        },
        _ => None,
    }
}

fn as_count(v: &Value) -> Option<u32> {
    match v {
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The path `import` reads a character's JSON from (for messages and tests).
pub fn character_json_path(dir: &Path, name: &str) -> PathBuf {
    dir.join("json").join(format!("{name}.json"))
}

#[cfg(test)]
mod tests;
