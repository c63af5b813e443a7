//! Scripts: the canonical model, loading, validation, and importers of the public datasets.
//!
//! Layer 1 (docs/architecture.md, *Crates*): it may use base only; it knows nothing of models,
//! games or stores.
//!
//! A script is a TOML file (format in `docs/script-format.md`). Loading parses and then validates the whole
//! file, so a bad script is refused with every problem named (file, field path, expectation) before a
//! single token is spent.

pub mod fixtures;
pub mod import;
mod model;
pub mod rules;
pub mod stats;
mod validate;

use std::path::{Path, PathBuf};

pub use model::{
    letter_index, option_letter, Category, Character, ChoiceQuestion, ChoiceRule, Clue, Culprits,
    FactualQuestion, GeneratedText, HostManual, InferentialQuestion, Language, QuestionReview,
    Reviewer, Role, Script, Truth, Victim,
};
pub use validate::{Problem, Severity};

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
    /// The file parsed but breaks the format's rules (errors only; warnings never refuse a script).
    #[error("{path}: {}", problems.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("; "))]
    Invalid {
        path: PathBuf,
        problems: Vec<Problem>,
    },
    /// The file (or text) is larger than any script sleuth plays: refused before it is parsed, so a
    /// file of any size costs neither memory nor time (see [`MAX_SCRIPT_BYTES`]).
    #[error(
        "{path}: the script is {size} bytes ({}), above the limit of {limit} bytes ({}): a \
         game's time, memory and prompts grow with its script, and the largest public script is \
         0.36 MB. If a real script needs more, set {MAX_SCRIPT_ENV} to the limit in MB (e.g. \
         {MAX_SCRIPT_ENV}=16)",
        megabytes(*size),
        megabytes(*limit)
    )]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    /// The limit's environment variable does not hold a number of megabytes.
    #[error(
        "{MAX_SCRIPT_ENV}=\"{value}\": expected a whole number of megabytes (1 or more), e.g. 16"
    )]
    BadLimit { value: String },
    /// The script could not be written.
    #[error("{path}: cannot write script")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The largest script loaded, in bytes (2 MiB), unless [`MAX_SCRIPT_ENV`] says otherwise.
///
/// Why a limit: a game's cost grows with its script — text every character shares (the premise)
/// is in every prompt, and every text is chunked and embedded — so an outsized file (a 50 MB script
/// passed validation, then played for minutes at 1.4 GB with no output) is refused when it is
/// loaded, naming its size, before a token is spent. Why this one: the largest public script imports
/// to 0.36 MiB (MIRAGE's *Fox Hotel*; the largest WellPlay one, *Solitary Boat Firefly*, 0.25 MiB),
/// so 2 MiB is more than five times that. Above it a game stops being cheap in the worst placement:
/// night-ferry with its premise grown to 1 MiB plays one simulated O-CoT round in 5 s at 0.4 GB, to
/// 4 MiB in 17 s at 1.5 GB (against 0.35 s and 86 MB as shipped); and 2 MiB of premise is some
/// 500,000 tokens in each prompt, past most models' context windows. `docs/script-format.md`.
pub const MAX_SCRIPT_BYTES: u64 = 2 * 1024 * 1024;

/// The environment variable that raises (or lowers) [`MAX_SCRIPT_BYTES`], in megabytes (MiB).
pub const MAX_SCRIPT_ENV: &str = "SLEUTH_MAX_SCRIPT_MB";

/// The script size limit in force: [`MAX_SCRIPT_ENV`] if set, else [`MAX_SCRIPT_BYTES`].
pub fn max_script_bytes() -> Result<u64, ScriptError> {
    match std::env::var(MAX_SCRIPT_ENV) {
        Err(_) => Ok(MAX_SCRIPT_BYTES),
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|mb| (1..=1 << 20).contains(mb))
            .map(|mb| mb * 1024 * 1024)
            .ok_or(ScriptError::BadLimit { value: v }),
    }
}

/// `n` bytes in MB (MiB), for the size messages.
fn megabytes(n: u64) -> String {
    format!("{:.1} MB", n as f64 / (1024.0 * 1024.0))
}

/// Refuses a script of `size` bytes above the limit in force.
fn check_size(path: &Path, size: u64) -> Result<(), ScriptError> {
    let limit = max_script_bytes()?;
    if size > limit {
        return Err(ScriptError::TooLarge {
            path: path.to_path_buf(),
            size,
            limit,
        });
    }
    Ok(())
}

impl Script {
    /// Reads, parses and validates a script file; refuses it if it has errors.
    pub fn load(path: &Path) -> Result<Script, ScriptError> {
        let script = Script::load_unchecked(path)?;
        let errors = script.errors();
        if errors.is_empty() {
            Ok(script)
        } else {
            Err(ScriptError::Invalid {
                path: path.to_path_buf(),
                problems: errors,
            })
        }
    }

    /// Reads and parses a script file without validating it (for `sleuth script validate`, which reports
    /// the problems itself).
    ///
    /// A file above the size limit ([`max_script_bytes`]) is refused from its length, before it is
    /// read; the read itself stops one byte past the limit, should the file grow meanwhile or not be
    /// a regular file (a pipe, a device) whose length says nothing.
    pub fn load_unchecked(path: &Path) -> Result<Script, ScriptError> {
        use std::io::Read as _;
        let read_err = |source| ScriptError::Read {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(read_err)?;
        let len = file.metadata().map_err(read_err)?.len();
        check_size(path, len)?;
        let limit = max_script_bytes()?;
        let mut text = String::new();
        file.take(limit.saturating_add(1))
            .read_to_string(&mut text)
            .map_err(read_err)?;
        Script::parse_unchecked(&text, path)
    }

    /// Parses and validates script text; `path` is used only in error messages.
    pub fn parse(text: &str, path: &Path) -> Result<Script, ScriptError> {
        let script = Script::parse_unchecked(text, path)?;
        let errors = script.errors();
        if errors.is_empty() {
            Ok(script)
        } else {
            Err(ScriptError::Invalid {
                path: path.to_path_buf(),
                problems: errors,
            })
        }
    }

    /// Parses script text without validating it. Text above the size limit ([`max_script_bytes`])
    /// is refused unparsed: scripts also arrive as text (a cluster's submission, a script with
    /// questions added), not only as files.
    pub fn parse_unchecked(text: &str, path: &Path) -> Result<Script, ScriptError> {
        check_size(path, text.len() as u64)?;
        toml::from_str(text).map_err(|e| ScriptError::Parse {
            path: path.to_path_buf(),
            message: describe_toml_error(&e, text),
        })
    }

    /// The script as TOML, in the canonical format.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self)
            .unwrap_or_else(|e| format!("# could not serialise script: {e}\n"))
    }

    /// Writes the script as TOML.
    pub fn save(&self, path: &Path) -> Result<(), ScriptError> {
        std::fs::write(path, self.to_toml()).map_err(|source| ScriptError::Write {
            path: path.to_path_buf(),
            source,
        })
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
mod tests {
    use super::*;
    use crate::fixtures::{tiny, TINY};

    #[test]
    fn tiny_script_loads() {
        let s = tiny();
        assert_eq!(s.murderers(), vec!["Ada"]);
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

    /// A script above the limit is refused from its size, as a file and as text, naming the file,
    /// the size and the limit; one at the limit still loads.
    #[test]
    fn a_script_above_the_size_limit_is_refused_before_it_is_parsed() {
        let limit = MAX_SCRIPT_BYTES as usize;
        let padded = |len: usize| {
            let mut t = TINY.to_string();
            t.push_str("\n# ");
            t.push_str(&"x".repeat(len - t.len() - 1));
            t.push('\n');
            assert_eq!(t.len(), len);
            t
        };
        let dir = tempfile::tempdir().expect("dir");
        let big = dir.path().join("big.toml");
        std::fs::write(&big, padded(limit + 1)).expect("write");
        for err in [
            Script::load_unchecked(&big).unwrap_err(),
            Script::load(&big).unwrap_err(),
            Script::parse(&padded(limit + 1), &big).unwrap_err(),
        ] {
            assert!(
                matches!(err, ScriptError::TooLarge { size, limit: l, .. }
                    if size == limit as u64 + 1 && l == MAX_SCRIPT_BYTES),
                "{err}"
            );
            let msg = err.to_string();
            for part in [
                big.display().to_string(),
                format!("{} bytes", limit + 1),
                format!("{limit} bytes"),
                MAX_SCRIPT_ENV.to_string(),
            ] {
                assert!(msg.contains(&part), "{part}: {msg}");
            }
        }
        let at_limit = dir.path().join("at.toml");
        std::fs::write(&at_limit, padded(limit)).expect("write");
        Script::load(&at_limit).expect("a script at the limit loads");
    }

    /// TINY where the vote is among Ben, Cy and a non-player, Dr Grey, who did it; Ada is innocent.
    fn with_outside_culprit() -> String {
        TINY.replace("role = \"murderer\"", "role = \"civilian\"")
            .replace("murderer = \"Ada\"", "murderer = \"Dr Grey\"")
            .replace(
                "[host]",
                "[[suspects]]\nname = \"Ben\"\n[[suspects]]\nname = \"Cy\"\n\
                 [[suspects]]\nname = \"Dr Grey\"\ndescription = \"The physician.\"\nculprit = true\n[host]",
            )
    }

    #[test]
    fn a_non_player_suspect_can_be_the_culprit() {
        let s = Script::parse(&with_outside_culprit(), Path::new("x.toml")).expect("valid");
        assert!(s.murderers().is_empty());
        assert_eq!(s.culprits(), vec!["Dr Grey"]);
        assert_eq!(s.suspect_names(), vec!["Ben", "Cy", "Dr Grey"]);
        assert!(s.is_culprit("Dr Grey") && !s.is_culprit("Ada"));
        // Without a list, the players are the suspects and the murderers the culprits.
        let t = tiny();
        assert_eq!(t.suspect_names(), vec!["Ada", "Ben", "Cy"]);
        assert_eq!(t.culprits(), vec!["Ada"]);
    }

    fn error_fields(text: &str) -> Vec<String> {
        match Script::parse(text, Path::new("x.toml")) {
            Err(ScriptError::Invalid { problems, .. }) => {
                problems.into_iter().map(|p| p.field).collect()
            }
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn a_murderer_left_off_the_suspects_is_an_error() {
        // Ada murders, but the vote is among Ben and Cy only.
        let text = TINY.replace(
            "[host]",
            "[[suspects]]\nname = \"Ben\"\n[[suspects]]\nname = \"Cy\"\n[host]",
        );
        assert_eq!(error_fields(&text), vec!["suspects"]);
    }

    #[test]
    fn culprit_flag_on_a_player_and_an_unmarked_outside_murderer_are_errors() {
        let text = with_outside_culprit()
            .replace(
                "[[suspects]]\nname = \"Ben\"\n",
                "[[suspects]]\nname = \"Ben\"\nculprit = true\n",
            )
            .replace("culprit = true\n[host]", "[host]");
        assert_eq!(
            error_fields(&text),
            vec!["characters[].role", "suspects[0].culprit", "truth.murderer"]
        );
    }

    #[test]
    fn a_victim_killed_by_nobody_in_the_cast_is_a_warning() {
        let text = TINY
            .replace("murderer = \"Ada\"\n", "")
            .replace("[[clues]]", "[[victims]]\nname = \"Old Moss\"\n[[clues]]")
            .replace(
                "[truth]",
                "[[truth.culprits]]\nvictim = \"Lord Ash\"\nby = [\"Ada\"]\n\
                 [[truth.culprits]]\nvictim = \"Old Moss\"\nby = []\n[truth]",
            );
        let s = Script::parse(&text, Path::new("x.toml")).expect("a warning only");
        let warned: Vec<_> = s.problems().into_iter().map(|p| p.field).collect();
        assert!(
            warned.contains(&"truth.culprits[1].by".to_string()),
            "{warned:?}"
        );
    }
}
