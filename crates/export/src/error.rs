//! Why an export failed: each error names the path it is about and what was expected there.

use std::path::PathBuf;

/// Why an export could not be made (or could be made only in part: everything committed before the
/// error stays in the export, see [`crate::export`]).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(
        "{path}: not a run directory (expected the directory `sleuth sweep run` writes, holding \
         sleuth.db with at least one sweep; a single game's directory has no store to export)"
    )]
    NotARun { path: PathBuf },
    #[error("{path}: cannot read the run's store")]
    Store {
        path: PathBuf,
        #[source]
        source: sleuth_store::StoreError,
    },
    #[error(
        "{out} holds the export of another run ({other}, not {this}): export to an empty or new \
         directory, or to the directory this run was exported to before"
    )]
    OtherRun {
        out: PathBuf,
        other: String,
        this: String,
    },
    #[error(
        "{path} is not empty and holds no export.json: `--out` must be a new or empty directory, or \
         one an earlier `sleuth export` wrote"
    )]
    NotAnExport { path: PathBuf },
    #[error("{path} is not an export manifest this sleuth reads")]
    Manifest {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "{path}: exported before with {was}, asked now for {now}; the parts already written would \
         not match the new ones: export to a new directory, or ask for {was} again"
    )]
    Changed {
        path: PathBuf,
        was: String,
        now: String,
    },
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: a finished game whose files cannot be read")]
    Game {
        path: PathBuf,
        #[source]
        source: sleuth_report::ReportError,
    },
    #[error("cannot write the Parquet file {path}")]
    Parquet {
        path: PathBuf,
        #[source]
        source: parquet::errors::ParquetError,
    },
    #[error("cannot write the CSV file {path}")]
    Csv {
        path: PathBuf,
        #[source]
        source: csv::Error,
    },
    #[error("table {table}: {problem} (a bug in sleuth's export: please report it)")]
    Schema {
        table: &'static str,
        problem: String,
    },
    #[error("unknown format {0:?}: expected parquet, csv, or both as parquet,csv")]
    Format(String),
}
