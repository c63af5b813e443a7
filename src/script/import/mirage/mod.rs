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
//! - Culprits are not in the files. They come from `--culprit`, else from the true account where it names
//!   one character in more murderer/culprit/killer (凶手, 真凶, …) sentences than any other, else from
//!   [`KNOWN_CULPRITS`], the one table of per-title data (copied from the dataset's description and
//!   reference implementation). Account and table disagreeing, or the account ambiguous, is a warning
//!   ([`ImportWarning`]). Culprits are murderers, everyone else civilians.
//! - Required (hard errors naming file and field): each character's `Script`, a non-empty `clues.json`,
//!   a truth file that is valid JSON. A truth key misspelling the folder name is found by edit distance.
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
//!
//! Code map: [`files`] reads the folder (file names, UTF-8, JSON, text values); `stages` reads
//! `script.json` into the cast; `clues` and `truth` read the other files and the culprits; `victim`
//! finds the victim; `build` assembles the canonical script. Each reader meets the dataset's faults
//! where it meets its file, and reports them with the file and the field path.

mod build;
mod cast;
mod clues;
mod files;
mod stages;
mod truth;
mod victim;

use std::path::{Path, PathBuf};

use crate::script::import::{format_error, ImportError};
use crate::script::Script;
use files::{find_file, folder_name, read_json, CLUE_FILES, SCRIPT_FILES};

pub use truth::KNOWN_CULPRITS;

/// One repair the importer made where the inputs disagree or are unclear: the import went on, and the
/// researcher should know what it chose (e.g. `Truth.json` naming another culprit than the built-in
/// table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportWarning {
    /// The file the warning is about.
    pub path: PathBuf,
    /// The field (or `(file)`) in it.
    pub field: String,
    /// What was found and what was done.
    pub message: String,
}

impl std::fmt::Display for ImportWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: field `{}`: {}",
            self.path.display(),
            self.field,
            self.message
        )
    }
}

/// A script as imported, with the repair log of what the importer decided on its own.
#[derive(Debug)]
pub struct Imported {
    pub script: Script,
    pub warnings: Vec<ImportWarning>,
}

/// How to import a MIRAGE script.
#[derive(Debug, Clone, Default)]
pub struct MirageOptions {
    /// The culprits' names; empty = use [`KNOWN_CULPRITS`].
    pub culprits: Vec<String>,
    /// The truth file (title → account); by default `Truth.json` next to the script folder, if present.
    pub truth: Option<PathBuf>,
}

/// Imports the MIRAGE script folder `dir`, dropping the warnings (see [`import_logged`] to keep them).
pub fn import(dir: &Path, opts: &MirageOptions) -> Result<Script, ImportError> {
    import_logged(dir, opts).map(|i| i.script)
}

/// Imports the MIRAGE script folder `dir` and returns the repairs made on the way, so the caller can
/// show them.
pub fn import_logged(dir: &Path, opts: &MirageOptions) -> Result<Imported, ImportError> {
    let mut warnings = Vec::new();
    let title = folder_name(dir);
    let script_path = find_file(dir, SCRIPT_FILES).ok_or_else(|| {
        format_error(
            &dir.join(SCRIPT_FILES[0]),
            "(file)",
            "this file to exist (MIRAGE layout: <Title>/script.json, <Title>/clues.json)",
        )
    })?;
    let layout = stages::read_script(&read_json(&script_path)?, &script_path)?;
    let narrative = truth::read_narrative(dir, &title, opts, &mut warnings)?;
    let accused = truth::accused(
        &title,
        opts,
        &layout.cast,
        &script_path,
        &narrative,
        &mut warnings,
    )?;
    // A script without clues cannot be played as MIRAGE plays it: refuse rather than import half.
    let clue_path = find_file(dir, CLUE_FILES).ok_or_else(|| {
        format_error(
            &dir.join(CLUE_FILES[0]),
            "(file)",
            "this file to exist (MIRAGE layout: <Title>/script.json, <Title>/clues.json)",
        )
    })?;
    let clues = clues::read_clues(
        &read_json(&clue_path)?,
        &clue_path,
        &layout.stages,
        &layout.cast,
        &accused,
    )?;
    if clues.is_empty() {
        return Err(format_error(
            &clue_path,
            "(file)",
            "at least one clue text (owner → list of clue texts)",
        ));
    }
    let script = build::script(title, layout, &accused, clues, &narrative.text);
    Ok(Imported { script, warnings })
}

#[cfg(test)]
mod tests;
