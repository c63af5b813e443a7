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
//!   one person in more murderer/culprit/killer (凶手, 真凶, …) sentences than anyone else, else from
//!   [`KNOWN_CULPRITS`], the one table of per-title data (the 8 scripts in English and Chinese, from the
//!   reference implementation's per-script files and the dataset's description). Account and table
//!   disagreeing, or the account ambiguous, is a warning ([`ImportWarning`]). A culprit is matched to a
//!   character first, else to a person who does not play (see `suspects`: the clue owners that are person
//!   names, or the `--suspect` names). Character culprits are murderers, everyone else civilians.
//! - Suspects (`suspects`): with `--suspect NAME…` exactly those names (players only when named); else,
//!   when a culprit does not play, every person of the clue owners who does not play, the culprit marked,
//!   with a warning — the players then investigate rather than stand accused, as in the reference
//!   implementation, whose vote in "The Final Performance of a Big Star" is among the outsiders only;
//!   else none (the players are the suspects). Descriptions come only from texts every player may know.
//! - Required (hard errors naming file and field): each character's `Script`, a non-empty `clues.json`,
//!   a truth file that is valid JSON. A truth key misspelling the folder name is found by edit distance.
//! - Victim (not listed in the files either; `victim`): the name victim labels give (`Victim: X`,
//!   `死者：X`), else the name most characters' relationship texts list, else the name the texts most
//!   often give a dead person (`X was murdered`, `the corpse of X`, `X的尸体`, …) and the account
//!   confirms — each only when clearly ahead. Otherwise "the victim" (`死者` in Chinese), with a warning.
//!   Every character culprit killed it.
//! - Clues get ids `c1`, `c2`, … in file order and the owner as title. An owner that names a character
//!   makes the clue `about` it; any other owner (a place, a person who does not play) is its `location`.
//!   A clue is key when it is about a culprit or its owner names one (`<Culprit>'s Room`, `Richard`).
//!   Clues grouped under a stage get that stage as `act`.
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
//! `script.json` into the cast; `clues` reads the owners of `clues.json` and builds the clues; `truth`
//! reads the account and decides the culprits; `corpus` gathers every text with its source; `mentions`
//! and `victim` find the victim; `suspects` finds the people who do not play and builds the suspects
//! list; `build` assembles the canonical script. Each reader meets the dataset's faults where it meets
//! its file, and reports them with the file and the field path.

mod build;
mod cast;
mod clues;
mod corpus;
mod files;
mod mentions;
mod stages;
mod suspects;
mod truth;
mod victim;

use std::path::{Path, PathBuf};

use crate::import::{format_error, ImportError};
use crate::Script;
use cast::Cast;
use files::{find_file, folder_name, read_json, CLUE_FILES, SCRIPT_FILES};
use suspects::Listed;
pub use truth::{KnownScript, KNOWN_CULPRITS};

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
    /// Whom the players vote among (players or people who do not play); empty = by the rules of the
    /// module documentation.
    pub suspects: Vec<String>,
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
    // A script without clues cannot be played as MIRAGE plays it: refuse rather than import half.
    let clue_path = find_file(dir, CLUE_FILES).ok_or_else(|| {
        format_error(
            &dir.join(CLUE_FILES[0]),
            "(file)",
            "this file to exist (MIRAGE layout: <Title>/script.json, <Title>/clues.json)",
        )
    })?;
    let owners = clues::read_owners(&read_json(&clue_path)?, &clue_path, &layout.stages)?;
    if owners.iter().all(|o| o.texts.is_empty()) {
        return Err(format_error(
            &clue_path,
            "(file)",
            "at least one clue text (owner → list of clue texts)",
        ));
    }

    let corpus = corpus::Corpus::new(&layout.cast, &layout.shared, &owners, &narrative.text);
    let language = build::language(&layout.cast, &owners, &narrative.text);
    let (victim, unclear) =
        match victim::detect_victim(&layout.cast, &corpus, &owners, &narrative.text) {
            Ok(v) => (Some(v), None),
            Err(why) => (None, Some(why)),
        };

    // Who may be the culprit besides the characters: the `--suspect` names, else the people of the clue
    // owners who do not play.
    let people = suspects::people(&owners, &layout.cast, victim.as_deref(), &corpus);
    let listed = suspects::listed(&opts.suspects, &layout.cast, &people);
    let pool: Vec<String> = if opts.suspects.is_empty() {
        people
    } else {
        listed
            .iter()
            .filter_map(|l| match l {
                Listed::Outsider(n) => Some(n.clone()),
                Listed::Player(_) => None,
            })
            .collect()
    };
    let outsiders = Cast::of_names(&pool);
    let accused = truth::accused(
        &title,
        opts,
        (&layout.cast, &outsiders),
        &script_path,
        &narrative,
        &mut warnings,
    )?;
    let (suspects, note) = suspects::suspect_list(
        &listed,
        &layout.cast,
        &pool,
        &accused,
        &corpus,
        &script_path,
    )?;
    if let Some(message) = note {
        let field = accused
            .outsiders
            .first()
            .and_then(|&i| owners.iter().find(|o| o.name == pool[i]))
            .map_or_else(|| "(owners)".to_string(), |o| o.field.clone());
        warnings.push(ImportWarning {
            path: clue_path.clone(),
            field,
            message,
        });
    }
    if let Some(why) = unclear {
        warnings.push(ImportWarning {
            path: script_path.clone(),
            field: "(victim)".into(),
            message: format!(
                "no text names the victim clearly ({}); calling them \"{}\"",
                why.0,
                build::placeholder(language)
            ),
        });
    }

    let clues = clues::build_clues(&owners, &layout.cast, &outsiders, &accused);
    let script = build::script(build::Parts {
        title,
        layout,
        accused,
        outsiders,
        clues,
        narrative: narrative.text,
        language,
        victim,
        suspects,
    });
    Ok(Imported { script, warnings })
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_people;
#[cfg(test)]
mod tests_table;
