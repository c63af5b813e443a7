//! The script model: what a murder-mystery game is played from and evaluated against.
//!
//! A script is a TOML file (format in `docs/script-format.md`). Loading parses and then validates the whole
//! file, so a bad script is refused with every problem named (file, field path, expectation) before a
//! single token is spent.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Why a script could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read at all.
    #[error("{path}: cannot read script")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML or a field has the wrong type.
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// The file parsed but breaks the format's rules.
    #[error("{path}: {}", problems.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("; "))]
    Invalid {
        path: PathBuf,
        problems: Vec<Problem>,
    },
}

/// One rule a script breaks, with the field path where it breaks it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Dotted path with indices, e.g. `characters[2].role`.
    pub field: String,
    /// What was expected there.
    pub expected: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field `{}`: expected {}", self.field, self.expected)
    }
}

/// Language of every text in a script; chooses prompts and the simulated model's tokenization.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    #[default]
    En,
    Zh,
}

impl Language {
    /// The code used in prompt directory names (`prompts/<framework>/<code>/`).
    pub fn code(self) -> &'static str {
        match self {
            Language::En => "en",
            Language::Zh => "zh",
        }
    }
}

/// A character's side in the game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Murderer,
    Civilian,
}

/// A whole script as written in the file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub format: u32,
    pub title: String,
    pub language: Language,
    pub premise: String,
    pub victims: Vec<Victim>,
    pub host: HostManual,
    pub characters: Vec<Character>,
    #[serde(default)]
    pub clues: Vec<Clue>,
    pub truth: Truth,
    #[serde(default)]
    pub factual: Vec<FactualQuestion>,
    #[serde(default)]
    pub inferential: Vec<InferentialQuestion>,
}

/// A victim of the case (never a player).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Victim {
    pub name: String,
    pub description: String,
}

/// The host's pre-set lines; the host is not an LLM (ThinkThrice rule 5).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostManual {
    pub opening: String,
    pub clue_announcement: String,
    pub vote_call: String,
    #[serde(default)]
    pub manual: String,
}

/// One player's character and private script.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Character {
    pub name: String,
    pub role: Role,
    pub public: String,
    pub story: String,
    pub timeline: String,
    #[serde(default)]
    pub secrets: Vec<String>,
    #[serde(default)]
    pub goals: Vec<String>,
    #[serde(default)]
    pub relationships: Vec<String>,
}

impl Character {
    /// The character's whole private script as one text: what factual questions are drawn from and
    /// what self-refinement and self-verification check against.
    pub fn script_text(&self) -> String {
        let mut s = String::new();
        s.push_str(&self.story);
        s.push('\n');
        s.push_str(&self.timeline);
        for x in self.secrets.iter().chain(&self.relationships) {
            s.push('\n');
            s.push_str(x);
        }
        s
    }

    /// True for the murderer.
    pub fn is_murderer(&self) -> bool {
        self.role == Role::Murderer
    }
}

/// A clue card handed out in the clue stage.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clue {
    pub id: String,
    pub title: String,
    pub text: String,
    pub about: String,
    #[serde(default)]
    pub key: bool,
}

/// What really happened.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Truth {
    pub murderer: String,
    pub narrative: String,
}

/// A factual question about one character's script (ThinkThrice §5.1).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactualQuestion {
    pub character: String,
    pub question: String,
    pub answer: String,
    pub source: String,
}

/// An inferential multiple-choice question whose answer is in no single script.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InferentialQuestion {
    pub question: String,
    pub options: Vec<String>,
    pub answer: String,
    pub rationale: String,
}

/// Option letters in order: A, B, C, …
pub fn option_letter(i: usize) -> String {
    char::from(b'A' + (i as u8 % 26)).to_string()
}

impl InferentialQuestion {
    /// Index of the correct option, if the answer letter names one.
    pub fn answer_index(&self) -> Option<usize> {
        let a = self.answer.trim().to_ascii_uppercase();
        (0..self.options.len()).find(|&i| option_letter(i) == a)
    }
}

impl Script {
    /// Reads, parses and validates a script file.
    pub fn load(path: &Path) -> Result<Script, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Script::parse(&text, path)
    }

    /// Parses and validates script text; `path` is used only in error messages.
    pub fn parse(text: &str, path: &Path) -> Result<Script, ScriptError> {
        let script: Script = toml::from_str(text).map_err(|e| ScriptError::Parse {
            path: path.to_path_buf(),
            message: describe_toml_error(&e, text),
        })?;
        let problems = script.problems();
        if problems.is_empty() {
            Ok(script)
        } else {
            Err(ScriptError::Invalid {
                path: path.to_path_buf(),
                problems,
            })
        }
    }

    /// Every rule the script breaks. Empty for a playable script.
    pub fn problems(&self) -> Vec<Problem> {
        let mut p = Vec::new();
        let mut add = |field: String, expected: &str| {
            p.push(Problem {
                field,
                expected: expected.to_string(),
            })
        };
        if self.format != 1 {
            add(
                "format".into(),
                "1 (the only format version this sleuth reads)",
            );
        }
        if self.title.trim().is_empty() {
            add("title".into(), "a non-empty title");
        }
        if self.victims.is_empty() {
            add("victims".into(), "at least one victim");
        }
        if !(2..=12).contains(&self.characters.len()) {
            add("characters".into(), "between 2 and 12 characters");
        }
        for (i, c) in self.characters.iter().enumerate() {
            if c.name.trim().is_empty() {
                add(format!("characters[{i}].name"), "a non-empty name");
            }
            if self.characters[..i].iter().any(|o| o.name == c.name) {
                add(
                    format!("characters[{i}].name"),
                    &format!("a unique name (\"{}\" appears twice)", c.name),
                );
            }
            if c.story.trim().is_empty() && c.timeline.trim().is_empty() {
                add(
                    format!("characters[{i}].timeline"),
                    "a non-empty story or timeline",
                );
            }
        }
        let murderers = self.characters.iter().filter(|c| c.is_murderer()).count();
        if murderers != 1 {
            add(
                "characters[].role".into(),
                &format!("exactly one \"murderer\" (found {murderers})"),
            );
        }
        match self.character(&self.truth.murderer) {
            None => add(
                "truth.murderer".into(),
                &format!(
                    "the name of a character (\"{}\" is not one)",
                    self.truth.murderer
                ),
            ),
            Some(c) if !c.is_murderer() => add(
                "truth.murderer".into(),
                &format!(
                    "the character whose role is \"murderer\" (\"{}\" is a civilian)",
                    c.name
                ),
            ),
            _ => {}
        }
        for (i, c) in self.clues.iter().enumerate() {
            if self.character(&c.about).is_none() {
                add(
                    format!("clues[{i}].about"),
                    &format!("the name of a character (\"{}\" is not one)", c.about),
                );
            }
            if self.clues[..i].iter().any(|o| o.id == c.id) {
                add(
                    format!("clues[{i}].id"),
                    &format!("a unique id (\"{}\" appears twice)", c.id),
                );
            }
        }
        for (i, q) in self.factual.iter().enumerate() {
            match self.character(&q.character) {
                None => add(
                    format!("factual[{i}].character"),
                    &format!("the name of a character (\"{}\" is not one)", q.character),
                ),
                Some(c)
                    if !c.script_text().contains(q.source.trim()) || q.source.trim().is_empty() =>
                {
                    add(
                        format!("factual[{i}].source"),
                        &format!("a sentence that occurs verbatim in {}'s script", c.name),
                    )
                }
                _ => {}
            }
            if q.answer.trim().is_empty() {
                add(
                    format!("factual[{i}].answer"),
                    "a non-empty reference answer",
                );
            }
        }
        for (i, q) in self.inferential.iter().enumerate() {
            if q.options.len() < 2 || q.options.len() > 26 {
                add(
                    format!("inferential[{i}].options"),
                    "between 2 and 26 options",
                );
            }
            if q.answer_index().is_none() {
                add(
                    format!("inferential[{i}].answer"),
                    &format!(
                        "a letter naming one of the {} options (got \"{}\")",
                        q.options.len(),
                        q.answer
                    ),
                );
            }
        }
        p
    }

    /// The character with this name.
    pub fn character(&self, name: &str) -> Option<&Character> {
        self.characters.iter().find(|c| c.name == name)
    }

    /// The murderer's character (validated to exist on load).
    pub fn murderer(&self) -> Option<&Character> {
        self.characters.iter().find(|c| c.is_murderer())
    }
}

/// Turns a toml error into one line naming the field (as a path like `characters[1].role`) and line.
fn describe_toml_error(e: &toml::de::Error, text: &str) -> String {
    let msg = e.message().trim().replace('\n', " ");
    match e.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            match field_at(text, span.start) {
                Some(field) => format!("line {line}: field `{field}`: {msg}"),
                None => format!("line {line}: {msg}"),
            }
        }
        None => format!("malformed script: {msg}"),
    }
}

/// The dotted field path of the key on the line containing byte `offset`: the key before `=`, inside
/// the last `[table]` or `[[array]]` header above it (arrays get their index).
fn field_at(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let line_start = text[..offset].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let line = text[line_start..].lines().next().unwrap_or("");
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"').to_string())
        .filter(|k| !k.is_empty() && !k.starts_with('['));
    let mut table: Option<String> = None;
    let mut counts: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for l in text[..line_start].lines() {
        let t = l.trim();
        if let Some(name) = t.strip_prefix("[[").and_then(|r| r.strip_suffix("]]")) {
            let n = counts.entry(name.trim().to_string()).or_insert(0);
            table = Some(format!("{}[{}]", name.trim(), *n));
            *n += 1;
        } else if let Some(name) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            table = Some(name.trim().to_string());
        }
    }
    match (table, key) {
        (Some(t), Some(k)) => Some(format!("{t}.{k}")),
        (None, Some(k)) => Some(k),
        (Some(t), None) => Some(t),
        (None, None) => None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A small but complete script for unit tests of other modules.
    pub fn tiny() -> Script {
        Script::parse(TINY, Path::new("tiny.toml")).expect("tiny script is valid")
    }

    pub const TINY: &str = r#"
format = 1
title = "Tiny"
language = "en"
premise = "Lord Ash was found dead in the library."
[[victims]]
name = "Lord Ash"
description = "Found in the library at dawn."
[host]
opening = "Welcome."
clue_announcement = "Here are the clues."
vote_call = "Vote now."
[[characters]]
name = "Ada"
role = "murderer"
public = "The niece."
story = "Ada owed Lord Ash money."
timeline = "At 9 pm Ada read in the garden."
secrets = ["At 10 pm Ada poisoned the brandy."]
[[characters]]
name = "Ben"
role = "civilian"
public = "The butler."
story = "Ben served Lord Ash for twenty years."
timeline = "At 10 pm Ben saw Ada near the brandy decanter."
[[characters]]
name = "Cy"
role = "civilian"
public = "The cook."
story = "Cy cooked the supper."
timeline = "At 8 pm Cy served fish soup to Lord Ash."
[[clues]]
id = "c1"
title = "Decanter"
text = "The brandy smelled of almonds."
about = "Ada"
key = true
[truth]
murderer = "Ada"
narrative = "Ada poisoned the brandy."
[[factual]]
character = "Ben"
question = "Whom did Ben see near the brandy decanter?"
answer = "Ada"
source = "At 10 pm Ben saw Ada near the brandy decanter."
[[inferential]]
question = "Who killed Lord Ash?"
options = ["Ada", "Ben", "Cy"]
answer = "A"
rationale = "Ben saw Ada near the brandy; the brandy smelled of almonds."
"#;

    #[test]
    fn tiny_script_loads() {
        let s = tiny();
        assert_eq!(s.murderer().map(|c| c.name.as_str()), Some("Ada"));
        assert_eq!(s.inferential[0].answer_index(), Some(0));
    }

    #[test]
    fn bad_role_names_the_field() {
        let bad = TINY.replace(
            "role = \"civilian\"\npublic = \"The butler.\"",
            "role = \"butler\"\npublic = \"The butler.\"",
        );
        let err = Script::parse(&bad, Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("x.toml") && err.contains("field `characters[1].role`"),
            "{err}"
        );
    }

    #[test]
    fn every_problem_is_listed() {
        let bad = TINY
            .replace("murderer = \"Ada\"", "murderer = \"Zed\"")
            .replace("about = \"Ada\"", "about = \"Nobody\"")
            .replace("answer = \"A\"", "answer = \"F\"");
        let err = Script::parse(&bad, Path::new("x.toml")).unwrap_err();
        let ScriptError::Invalid { problems, .. } = err else {
            panic!("expected Invalid")
        };
        let fields: Vec<_> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            vec!["truth.murderer", "clues[0].about", "inferential[0].answer"]
        );
    }

    #[test]
    fn missing_file_is_a_read_error() {
        let err = Script::load(Path::new("/nonexistent/s.toml")).unwrap_err();
        assert!(matches!(err, ScriptError::Read { .. }));
    }
}
