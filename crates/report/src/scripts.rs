//! The scripts the games were played on, read back for what a result does not record about them.
//!
//! PLAYER* Table A5 prints each script's length beside its costs (#Tokens: the mean length of one
//! character's script), because a longer script costs more to play; PLAYER* Table A4 holds the games
//! of the scripts written in English, so a table needs each script's language. Both belong to the
//! script, not to the game, so `result.json` does not carry them. A game's spec does record the path the script
//! was played from and the content digest of what it held then; the report reads the file at that path
//! — as the path was given, so relative to the working directory, as `sleuth play --spec` reads it —
//! and uses it only when its digest is still the recorded one, so an edited script never lends its
//! length to the games of the version before. A file that is gone or changed leaves the cell "—" and
//! a note saying why; games that recorded no path (results from before games recorded a spec, scripts
//! played from memory) leave it "—" silently, as the table's note explains: there is nothing the reader
//! could fix.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::arms::{script_digest, Arm, Grouping};
use sleuth_game::game::ScriptRef;
use sleuth_llm::tokens;
use sleuth_script::stats::ScriptStats;
use sleuth_script::{Language, Script};

/// A script version as arms know it: the title and the content digest.
type Version = (String, Option<String>);

/// What the report reads back from one script file.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Facts {
    tokens_per_character: f64,
    language: Language,
}

/// The length and language of every script version in a grouping, or why they are unknown (`None`:
/// the games named no file to read).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScriptLengths {
    by_version: BTreeMap<Version, Result<Facts, Option<String>>>,
}

impl ScriptLengths {
    /// Reads the script of every version the games were played on, once per version.
    pub fn read(g: &Grouping) -> ScriptLengths {
        let mut paths: BTreeMap<Version, BTreeSet<&str>> = BTreeMap::new();
        for game in &g.games {
            let key = (
                game.result.script.clone(),
                script_digest(game).map(str::to_string),
            );
            let entry = paths.entry(key).or_default();
            entry.extend(game.script_path.as_deref());
        }
        let by_version = paths
            .into_iter()
            .map(|(key, paths)| {
                let length = length(key.1.as_deref(), &paths);
                (key, length)
            })
            .collect();
        ScriptLengths { by_version }
    }

    /// Tokens of one character's script, averaged over the characters (cl100k, as
    /// `sleuth script stats` counts its "avg"), of the script `arm` was played on; `None` when that
    /// script could not be read back.
    pub fn tokens_per_character(&self, arm: &Arm) -> Option<f64> {
        self.facts(arm).map(|f| f.tokens_per_character)
    }

    /// The language the script `arm` was played on is written in (its `language`, which also chose
    /// the prompts unless the game overrode them); `None` when that script could not be read back.
    pub fn language(&self, arm: &Arm) -> Option<Language> {
        self.facts(arm).map(|f| f.language)
    }

    fn facts(&self, arm: &Arm) -> Option<Facts> {
        self.by_version
            .get(&(arm.script.clone(), arm.digest.clone()))
            .and_then(|r| r.as_ref().ok().copied())
    }

    /// One note per script version whose length is unknown, naming it as the tables do.
    pub fn notes(&self, g: &Grouping) -> Vec<String> {
        let mut seen = BTreeSet::new();
        g.arms
            .iter()
            .filter_map(|arm| {
                let key = (arm.script.clone(), arm.digest.clone());
                let why = self.by_version.get(&key)?.as_ref().err()?.as_ref()?;
                seen.insert(key).then(|| {
                    format!(
                        "{}: #Tokens of the cost tables is — because the script cannot be read \
                         back: {why}",
                        arm.script_label
                    )
                })
            })
            .collect()
    }
}

/// The mean tokens per character and the language of the first of `paths` that still holds the
/// script with `digest`; `Err(None)` when there is no file to read or nothing to check it against.
fn length(digest: Option<&str>, paths: &BTreeSet<&str>) -> Result<Facts, Option<String>> {
    let Some(digest) = digest.filter(|_| !paths.is_empty()) else {
        return Err(None);
    };
    let mut why = Vec::new();
    for p in paths {
        match Script::load_unchecked(Path::new(p)) {
            Ok(s) if ScriptRef::digest_of(&s) == digest => {
                return Ok(Facts {
                    tokens_per_character: ScriptStats::of(&s, tokens::count).tokens_per_player(),
                    language: s.language,
                });
            }
            Ok(_) => why.push(format!("{p} has changed since the games were played")),
            Err(e) => why.push(super::chain(&e)),
        }
    }
    Err(Some(why.join("; ")))
}
