//! `DIR/export.json`: what an export directory holds and how far it has read its run — the
//! watermarks that make the next export add only what is new.
//!
//! - **Games**: the ids of the games exported. A game is exported once it is `done`, and a finished
//!   game never changes, so a game in the set is never read again. (A set, not a highest `seq`:
//!   games finish out of plan order.) Its characters, answers and events go with it.
//! - **Calls**: the last ledger row id exported. The ledger is append-only with increasing ids.
//! - **Annotations**: a fingerprint of the answers exported; the table is rewritten when it moves.
//!
//! The manifest is written after the parts it lists (atomically, by rename), once per batch of
//! games and chunk of calls: a killed export loses at most the batch it was writing, and the next
//! export deletes that batch's unlisted parts and writes them again.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::ExportError;
use crate::parts::{self, Formats};

/// The manifest's file name in the export directory.
pub const FILE: &str = "export.json";

/// The layout's version: a directory written by another version is refused, not misread. Version 2
/// added `calls.latency_ms` and `calls.retries` (parts of both versions cannot be read as one table).
pub const VERSION: u32 = 2;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u32,
    /// The sleuth that last wrote it.
    pub sleuth: String,
    /// The run's identity: its first sweep's id and creation time (a run directory moved or copied
    /// keeps it; another run does not have it).
    pub run: String,
    /// Where the run was when last exported (for people; the identity is `run`).
    pub run_path: String,
    /// `parquet`, `csv` or both: fixed by the first export.
    pub formats: Vec<String>,
    /// Whether event and answer texts are written: fixed by the first export.
    pub with_text: bool,
    /// The number the next part gets.
    pub next_part: u64,
    /// Table → the stems of its parts (`part-000001`), oldest first.
    pub parts: BTreeMap<String, Vec<String>>,
    /// Rows per table over all parts.
    pub rows: BTreeMap<String, u64>,
    /// The games exported (store ids).
    pub games: BTreeSet<String>,
    /// The last ledger row id exported (0: none).
    pub ledger_last_id: i64,
    /// The annotations' fingerprint when last written (`annotations::fingerprint`).
    pub annotations: Option<String>,
    /// RFC 3339, the last write.
    pub updated_at: String,
}

impl Manifest {
    /// A manifest for a first export.
    pub fn new(run: &str, run_path: &Path, formats: Formats, with_text: bool) -> Manifest {
        Manifest {
            version: VERSION,
            sleuth: env!("CARGO_PKG_VERSION").to_string(),
            run: run.to_string(),
            run_path: run_path.display().to_string(),
            formats: formats.extensions().iter().map(|s| s.to_string()).collect(),
            with_text,
            next_part: 1,
            parts: BTreeMap::new(),
            rows: BTreeMap::new(),
            games: BTreeSet::new(),
            ledger_last_id: 0,
            annotations: None,
            updated_at: String::new(),
        }
    }

    /// The manifest in `out`, `None` for a missing or empty directory. A directory with files but
    /// no manifest is refused: an export never writes into someone else's files.
    pub fn load(out: &Path) -> Result<Option<Manifest>, ExportError> {
        let path = out.join(FILE);
        match fs::read_to_string(&path) {
            Ok(text) => {
                let m: Manifest =
                    serde_json::from_str(&text).map_err(|source| ExportError::Manifest {
                        path: path.clone(),
                        source,
                    })?;
                if m.version != VERSION {
                    return Err(ExportError::Changed {
                        path,
                        was: format!("export layout version {}", m.version),
                        now: format!("version {VERSION}"),
                    });
                }
                Ok(Some(m))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let empty = match fs::read_dir(out) {
                    Ok(mut entries) => entries.next().is_none(),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
                    Err(source) => {
                        return Err(ExportError::Read {
                            path: out.to_path_buf(),
                            source,
                        })
                    }
                };
                if empty {
                    Ok(None)
                } else {
                    Err(ExportError::NotAnExport {
                        path: out.to_path_buf(),
                    })
                }
            }
            Err(source) => Err(ExportError::Read { path, source }),
        }
    }

    /// Checks that an earlier export of `out` is of the same run, in the same formats and with the
    /// same texts as asked for now.
    pub fn check(
        &self,
        out: &Path,
        run: &str,
        formats: Formats,
        with_text: bool,
    ) -> Result<(), ExportError> {
        if self.run != run {
            return Err(ExportError::OtherRun {
                out: out.to_path_buf(),
                other: format!("{} at {}", self.run, self.run_path),
                this: run.to_string(),
            });
        }
        let asked: Vec<String> = formats.extensions().iter().map(|s| s.to_string()).collect();
        if self.formats != asked {
            return Err(ExportError::Changed {
                path: out.join(FILE),
                was: format!("--format {}", self.formats.join(",")),
                now: format!("--format {}", asked.join(",")),
            });
        }
        if self.with_text != with_text {
            let flag = |t: bool| if t { "--with-text" } else { "no --with-text" }.to_string();
            return Err(ExportError::Changed {
                path: out.join(FILE),
                was: flag(self.with_text),
                now: flag(with_text),
            });
        }
        Ok(())
    }

    /// The formats recorded (for reading the parts back).
    pub fn formats(&self) -> Formats {
        Formats {
            parquet: self.formats.iter().any(|f| f == "parquet"),
            csv: self.formats.iter().any(|f| f == "csv"),
        }
    }

    /// Takes the next part number.
    pub fn take_stem(&mut self) -> String {
        let stem = parts::stem(self.next_part);
        self.next_part += 1;
        stem
    }

    /// Records a part of `rows` rows of `table`.
    pub fn add_part(&mut self, table: &str, stem: &str, rows: u64) {
        self.parts
            .entry(table.to_string())
            .or_default()
            .push(stem.to_string());
        *self.rows.entry(table.to_string()).or_default() += rows;
    }

    /// The files of every part of `table`, oldest first, in `ext`.
    pub fn files(&self, out: &Path, table: &str, ext: &str) -> Vec<PathBuf> {
        self.parts
            .get(table)
            .into_iter()
            .flatten()
            .map(|stem| parts::table_dir(out, table, ext).join(format!("{stem}.{ext}")))
            .collect()
    }

    /// Writes the manifest to `out` atomically.
    pub fn save(&mut self, out: &Path) -> Result<(), ExportError> {
        self.updated_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let path = out.join(FILE);
        let text = serde_json::to_string_pretty(self).map_err(|source| ExportError::Manifest {
            path: path.clone(),
            source,
        })?;
        parts::write_atomic(&path, |tmp| {
            fs::write(tmp, text.as_bytes()).map_err(|source| ExportError::Write {
                path: tmp.to_path_buf(),
                source,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_reads_back_and_refuses_another_run_or_format() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("out");
        assert_eq!(Manifest::load(&out).expect("no directory yet"), None);
        fs::create_dir_all(&out).expect("out");
        assert_eq!(Manifest::load(&out).expect("an empty directory"), None);

        let mut m = Manifest::new("s1@t", dir.path(), Formats::default(), false);
        let stem = m.take_stem();
        m.add_part("games", &stem, 3);
        m.games.insert("g1".into());
        m.ledger_last_id = 42;
        m.save(&out).expect("save");
        let back = Manifest::load(&out).expect("load").expect("a manifest");
        assert_eq!(back, m);
        assert_eq!(back.next_part, 2);
        assert_eq!(
            back.files(&out, "games", "parquet"),
            [out.join("games/part-000001.parquet")]
        );

        back.check(&out, "s1@t", Formats::default(), false)
            .expect("the same export");
        assert!(matches!(
            back.check(&out, "s2@t", Formats::default(), false),
            Err(ExportError::OtherRun { .. })
        ));
        let csv = Formats {
            parquet: false,
            csv: true,
        };
        assert!(matches!(
            back.check(&out, "s1@t", csv, false),
            Err(ExportError::Changed { .. })
        ));
        assert!(matches!(
            back.check(&out, "s1@t", Formats::default(), true),
            Err(ExportError::Changed { .. })
        ));
    }

    #[test]
    fn a_directory_of_other_files_is_not_an_export() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join("thesis.tex"), b"x").expect("file");
        assert!(matches!(
            Manifest::load(dir.path()),
            Err(ExportError::NotAnExport { .. })
        ));
        fs::write(dir.path().join(FILE), b"{not json").expect("file");
        assert!(matches!(
            Manifest::load(dir.path()),
            Err(ExportError::Manifest { .. })
        ));
    }
}
