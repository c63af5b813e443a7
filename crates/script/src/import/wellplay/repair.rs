//! The repair log of a tolerant WellPlay import: what the importer changed in a hand-made source file to
//! import what a row clearly means. A researcher must see each change to trust the result, so every
//! repair names the source file, its row and column; under `strict` the first fault is refused instead.

use std::path::{Path, PathBuf};

use super::super::{format_error, ImportError};

/// One repair made to a source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repair {
    /// The source file (a CSV or a character JSON), never the generated script.
    pub path: PathBuf,
    /// The CSV line the row starts on; `None` for JSON files.
    pub row: Option<usize>,
    /// The column (CSV) or field (JSON) repaired.
    pub column: String,
    /// What was done.
    pub action: String,
}

impl std::fmt::Display for Repair {
    /// `FILE:ROW: column C: what was done` (JSON files: `FILE: field F: …`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.row {
            Some(row) => write!(
                f,
                "{}:{row}: column {}: {}",
                self.path.display(),
                self.column,
                self.action
            ),
            None => write!(
                f,
                "{}: field {}: {}",
                self.path.display(),
                self.column,
                self.action
            ),
        }
    }
}

/// Collects repairs, or refuses the first fault when strict.
#[derive(Debug, Default)]
pub(super) struct Log {
    pub strict: bool,
    pub repairs: Vec<Repair>,
}

impl Log {
    /// Records a repair; strict mode refuses it as a format error saying what the row should have held.
    pub fn repair(
        &mut self,
        path: &Path,
        row: Option<usize>,
        column: &str,
        action: String,
        expected: &str,
    ) -> Result<(), ImportError> {
        if self.strict {
            let field = match row {
                Some(r) => format!("row {r}, column {column}"),
                None => column.to_string(),
            };
            return Err(format_error(path, &field, expected));
        }
        self.repairs.push(Repair {
            path: path.to_path_buf(),
            row,
            column: column.to_string(),
            action,
        });
        Ok(())
    }
}
