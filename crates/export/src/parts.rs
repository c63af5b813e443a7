//! The export directory's files: each table a directory of part files, each part one export's new
//! rows of that table, in each format asked for.
//!
//! ```text
//! DIR/export.json                      the manifest (`manifest.rs`), written last
//! DIR/games/part-000001.parquet        Parquet parts: DIR/<table>/
//! DIR/characters/part-000001.parquet
//! DIR/csv/games/part-000001.csv        CSV parts: DIR/csv/<table>/
//! …
//! ```
//!
//! CSV parts live apart from the Parquet ones because readers take a table's directory whole
//! (`pd.read_parquet(DIR/games)`) and fail on a file of the other format in it.
//!
//! A part is written under a hidden temporary name and renamed into place, so no reader ever sees
//! half a file; it counts once the manifest lists it. A part the manifest does not list is what a
//! killed export left behind, and the next export deletes it before writing anything.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::error::ExportError;
use crate::table::Table;
use crate::{csv_file, parquet_file};

/// The tables, in the order an export writes them.
pub const TABLES: [&str; 6] = [
    "games",
    "characters",
    "answers",
    "events",
    "calls",
    "annotations",
];

/// Which files each part is written as (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Formats {
    pub parquet: bool,
    pub csv: bool,
}

impl Default for Formats {
    fn default() -> Self {
        Formats {
            parquet: true,
            csv: false,
        }
    }
}

impl Formats {
    /// The file extensions, in a fixed order: also how the manifest records the formats.
    pub fn extensions(self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.parquet {
            out.push("parquet");
        }
        if self.csv {
            out.push("csv");
        }
        out
    }
}

impl FromStr for Formats {
    type Err = ExportError;

    /// `parquet`, `csv`, or both separated by a comma (in either order).
    fn from_str(s: &str) -> Result<Formats, ExportError> {
        let mut f = Formats {
            parquet: false,
            csv: false,
        };
        for word in s.split(',').map(str::trim) {
            match word {
                "parquet" => f.parquet = true,
                "csv" => f.csv = true,
                _ => return Err(ExportError::Format(s.to_string())),
            }
        }
        Ok(f)
    }
}

/// The directory holding `table`'s parts in the format whose extension is `ext`.
pub fn table_dir(out: &Path, table: &str, ext: &str) -> PathBuf {
    match ext {
        "parquet" => out.join(table),
        _ => out.join(ext).join(table),
    }
}

/// A part's file name without its extension.
pub fn stem(n: u64) -> String {
    format!("part-{n:06}")
}

/// Has `write` fill a hidden temporary file beside `path`, then renames it to `path`: a reader sees
/// the whole file or none.
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    write(&tmp)?;
    fs::rename(&tmp, path).map_err(|source| ExportError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes `table` as part `stem` in each format; returns the files written.
pub fn write_part(
    out: &Path,
    table: &Table,
    stem: &str,
    formats: Formats,
) -> Result<Vec<PathBuf>, ExportError> {
    let mut written = Vec::new();
    for ext in formats.extensions() {
        let dir = table_dir(out, table.name, ext);
        fs::create_dir_all(&dir).map_err(|source| ExportError::Write {
            path: dir.clone(),
            source,
        })?;
        let path = dir.join(format!("{stem}.{ext}"));
        write_atomic(&path, |tmp| match ext {
            "parquet" => parquet_file::write(table, tmp),
            _ => csv_file::write(table, tmp),
        })?;
        written.push(path);
    }
    Ok(written)
}

/// Deletes every part file and temporary file in the tables' directories that `listed` (table →
/// part stems) does not name: the remains of an export that was stopped before its manifest was
/// written. Returns how many files went.
pub fn remove_unlisted(
    out: &Path,
    listed: &BTreeMap<String, Vec<String>>,
) -> Result<usize, ExportError> {
    let mut removed = 0;
    for (table, ext) in TABLES
        .iter()
        .flat_map(|t| ["parquet", "csv"].map(|e| (*t, e)))
    {
        let dir = table_dir(out, table, ext);
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(ExportError::Read { path: dir, source }),
        };
        let keep = listed.get(table).map(Vec::as_slice).unwrap_or_default();
        for entry in entries {
            let entry = entry.map_err(|source| ExportError::Read {
                path: dir.clone(),
                source,
            })?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let ours =
                name.starts_with("part-") || (name.starts_with(".part-") && name.ends_with(".tmp"));
            let stem = name.split('.').find(|s| !s.is_empty()).unwrap_or("");
            if ours && (name.ends_with(".tmp") || !keep.iter().any(|k| k == stem)) {
                remove(&entry.path())?;
                removed += 1;
            }
        }
    }
    Ok(removed)
}

/// Deletes one file (already gone is fine).
pub fn remove(path: &Path) -> Result<(), ExportError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(ExportError::Write {
            path: path.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_alone_or_together_and_refuse_anything_else() {
        assert_eq!("parquet".parse::<Formats>().ok(), Some(Formats::default()));
        let both = "csv, parquet".parse::<Formats>().expect("both");
        assert_eq!(both.extensions(), ["parquet", "csv"]);
        assert!(matches!(
            "json".parse::<Formats>(),
            Err(ExportError::Format(_))
        ));
        assert!("parquet,".parse::<Formats>().is_err());
    }

    #[test]
    fn unlisted_parts_and_temporary_files_are_removed_and_listed_ones_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let games = dir.path().join("games");
        fs::create_dir_all(&games).expect("games dir");
        for name in [
            "part-000001.parquet",
            "part-000001.csv",
            "part-000002.parquet",
            ".part-000003.parquet.tmp",
            "notes.txt",
        ] {
            fs::write(games.join(name), b"x").expect("file");
        }
        let csv = table_dir(dir.path(), "games", "csv");
        fs::create_dir_all(&csv).expect("csv dir");
        fs::write(csv.join("part-000002.csv"), b"x").expect("file");
        let listed = BTreeMap::from([("games".to_string(), vec![stem(1)])]);
        assert_eq!(remove_unlisted(dir.path(), &listed).expect("clean"), 3);
        assert!(!csv.join("part-000002.csv").exists());
        let mut left: Vec<String> = fs::read_dir(&games)
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["notes.txt", "part-000001.csv", "part-000001.parquet"]
        );
    }
}
