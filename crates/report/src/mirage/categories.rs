//! MIRAGE's script types (Table 1, §2.5), which Figures 3–8 split ICI and SCI by, and the paper's
//! detail table of each (Table 6).
//!
//! - **Single / Multi**: whether a character's script is read all at once or released in stages. That
//!   is a field of the script itself — its number of acts (`Script::acts`, the MIRAGE importer's
//!   number of stages) — so it is read from the script the games were played on whenever the report
//!   can read it back ([`crate::scripts`] reads scripts the same way: the file at
//!   `spec.script.path`, used only while its content digest is the recorded one). A script that cannot
//!   be read back takes Table 1's value when it is one of the MIRAGE set.
//! - **Orthodox / Unorthodox** (a realistic setting or not) and **Close / Open** (a fixed ending or
//!   not) are judgements the dataset does not carry: they come from MIRAGE Table 1 only, typed in as
//!   data ([`super::published::TABLE1`]), keyed by the dataset's titles. A script outside the set has no
//!   such type and is left out of the figures that need it, with a note.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::published::{self, Table1Row};
use crate::arms::{script_digest, Grouping};
use sleuth_game::game::ScriptRef;
use sleuth_script::Script;

pub use super::script_type::{Ending, ScriptType, Setting, Structure};

/// One of the three ways Figures 3–8 split the scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Dimension {
    Structure,
    Setting,
    Ending,
}

impl Dimension {
    pub const ALL: [Dimension; 3] = [Dimension::Structure, Dimension::Setting, Dimension::Ending];

    /// The two sides, as Table 1 names them.
    pub fn sides(self) -> [&'static str; 2] {
        match self {
            Dimension::Structure => ["Single", "Multi"],
            Dimension::Setting => ["Orthodox", "Unorthodox"],
            Dimension::Ending => ["Close", "Open"],
        }
    }

    /// What the paper calls the split ("Single & Multi").
    pub fn name(self) -> String {
        let [a, b] = self.sides();
        format!("{a} & {b}")
    }
}

/// What the report knows of one script version's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Known {
    /// Single (0) or Multi (1).
    pub structure: Option<Structure>,
    /// Whether `structure` was read from the script (its acts) rather than from Table 1.
    pub structure_from_script: bool,
    pub setting: Option<Setting>,
    pub ending: Option<Ending>,
    /// The script's place in Table 1 (0-7) and its row, when it is one of the MIRAGE set.
    pub paper: Option<(usize, &'static Table1Row)>,
}

impl Known {
    /// Which side of `d` the script is on (0 or 1), if known.
    pub fn side(&self, d: Dimension) -> Option<usize> {
        match d {
            Dimension::Structure => self.structure.map(|s| s as usize),
            Dimension::Setting => self.setting.map(|s| s as usize),
            Dimension::Ending => self.ending.map(|e| e as usize),
        }
    }

    /// All three types, when all are known.
    pub fn kind(&self) -> Option<ScriptType> {
        Some(ScriptType {
            structure: self.structure?,
            setting: self.setting?,
            ending: self.ending?,
        })
    }

    /// Appendix C's name of the type ("SOC"), or empty when some part is unknown.
    pub fn code(&self) -> String {
        self.kind().map(|k| k.code()).unwrap_or_default()
    }
}

/// A script version as arms know it: the title and the content digest.
type Version = (String, Option<String>);

/// The known type of every script version in a grouping.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Categories {
    by_version: BTreeMap<Version, Known>,
}

impl Categories {
    /// Looks every version of the grouping up in Table 1 and reads its script back for its acts.
    pub fn read(g: &Grouping) -> Categories {
        let mut paths: BTreeMap<Version, BTreeSet<&str>> = BTreeMap::new();
        for game in &g.games {
            let key = (
                game.result.script.clone(),
                script_digest(game).map(str::to_string),
            );
            paths
                .entry(key)
                .or_default()
                .extend(game.script_path.as_deref());
        }
        let by_version = paths
            .into_iter()
            .map(|(key, paths)| {
                let acts = acts(key.1.as_deref(), &paths);
                let known = Categories::of(&key.0, acts);
                (key, known)
            })
            .collect();
        Categories { by_version }
    }

    /// What is known of a script titled `title` whose script, read back, has `acts` acts.
    pub fn of(title: &str, acts: Option<u32>) -> Known {
        let paper = published::table1(title);
        let from_script = acts.map(|a| {
            if a > 1 {
                Structure::Multi
            } else {
                Structure::Single
            }
        });
        Known {
            structure: from_script.or(paper.map(|(_, r)| r.kind.structure)),
            structure_from_script: from_script.is_some(),
            setting: paper.map(|(_, r)| r.kind.setting),
            ending: paper.map(|(_, r)| r.kind.ending),
            paper,
        }
    }

    /// What is known of a script version (title and digest, as an arm holds them).
    pub fn get(&self, script: &str, digest: Option<&str>) -> Known {
        self.by_version
            .get(&(script.to_string(), digest.map(str::to_string)))
            .copied()
            .unwrap_or_else(|| Categories::of(script, None))
    }
}

/// The acts of the first of `paths` that still holds the script with `digest`; `None` when none does.
fn acts(digest: Option<&str>, paths: &BTreeSet<&str>) -> Option<u32> {
    let digest = digest?;
    paths.iter().find_map(|p| {
        let s = Script::load_unchecked(Path::new(p)).ok()?;
        (ScriptRef::digest_of(&s) == digest).then_some(s.acts)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_detail_tables_follow_appendix_c_and_table_6() {
        let codes: Vec<(String, u32)> = published::TABLE1
            .iter()
            .map(|r| (r.kind.code(), r.kind.detail_table()))
            .collect();
        let expected = ["SOC", "SOO", "SUC", "SUO", "MOC", "MOO", "MUC", "MUO"];
        for (i, (code, table)) in codes.iter().enumerate() {
            assert_eq!(code, expected[i]);
            assert_eq!(*table, 12 + i as u32);
        }
    }

    #[test]
    fn structure_comes_from_the_script_and_the_rest_from_table_1() {
        // The dataset's spelling, the paper's, and the Chinese title all find the row.
        for title in [
            "Artical 22 School Rules",
            "Article 22 School Rules",
            "article 22 school-rules",
            "第二十二条校规",
        ] {
            let k = Categories::of(title, None);
            assert_eq!(k.code(), "MUC", "{title}");
            assert!(!k.structure_from_script);
        }
        // The script read back decides Single/Multi, even against the table.
        let k = Categories::of("Fox Hotel", Some(1));
        assert_eq!(k.structure, Some(Structure::Single));
        assert!(k.structure_from_script);
        // A script outside the set: its acts alone.
        let k = Categories::of("Night Ferry", Some(3));
        assert_eq!(k.side(Dimension::Structure), Some(1));
        assert_eq!(k.side(Dimension::Setting), None);
        assert_eq!(k.side(Dimension::Ending), None);
        assert_eq!(k.code(), "");
        assert_eq!(Categories::of("Night Ferry", None), Known::default());
    }
}
