//! `sleuth export RUN --out DIR`: a run's games as tidy tables for pandas, polars and DuckDB — one
//! row per thing, typed, documented column by column in `docs/data.md`.
//!
//! Layer 6 (docs/architecture.md, *Crates*): it reads the run's store (read-only) and its games'
//! files with the report's readers, and writes files; it knows nothing of the commands, the viewer
//! or the cluster.
//!
//! Tables: `games` ([`games`]), `characters` ([`characters`]), `answers` ([`answers`]), `events`
//! ([`events`]), `calls` ([`calls`]) and `annotations` ([`annotations`]). Each is a directory of
//! part files ([`parts`]) in Parquet ([`parquet_file`], the default) and/or CSV ([`csv_file`]); the
//! manifest `export.json` ([`manifest`]) keeps the watermarks that make an export of a running or
//! grown sweep add only what is new, and is written after the parts it lists, so a stopped export
//! loses nothing and counts no half-written file. [`run`] drives one export.
//!
//! Why the low-level Parquet writer and not Arrow: the tables are built row by row from JSON, so
//! Arrow's arrays would only be a second copy, and its crates would be most of the build
//! (`docs/benchmarks.md`, *Build cost of the export*).

pub mod annotations;
pub mod answers;
pub mod calls;
pub mod characters;
pub mod csv_file;
mod error;
pub mod events;
mod flatten;
pub mod games;
pub mod manifest;
pub mod parquet_file;
pub mod parts;
pub mod readback;
pub mod run;
pub mod table;

pub use error::ExportError;
pub use parts::{Formats, TABLES};
pub use run::{export, Options, Summary};

/// The schema of each table, by name, in [`TABLES`] order.
pub fn schemas() -> [(&'static str, &'static [table::Column]); 6] {
    [
        ("games", games::COLUMNS),
        ("characters", characters::COLUMNS),
        ("answers", answers::COLUMNS),
        ("events", events::COLUMNS),
        ("calls", calls::COLUMNS),
        ("annotations", annotations::COLUMNS),
    ]
}

#[cfg(test)]
mod tests {
    /// `docs/data.md` lists every column of every table with its type: a column added to the code
    /// and not to the documentation (or the other way round) fails here.
    #[test]
    fn the_documentation_lists_every_column_with_its_type() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/data.md");
        let doc = std::fs::read_to_string(path).expect("docs/data.md");
        for (table, columns) in super::schemas() {
            let start = doc
                .find(&format!("\n### `{table}`"))
                .unwrap_or_else(|| panic!("docs/data.md has no section ### `{table}`"));
            let section = &doc[start + 1..];
            let section = &section[..section[4..].find("\n### ").map_or(section.len(), |e| e + 4)];
            let documented: Vec<(&str, &str)> = section
                .lines()
                .filter_map(|l| {
                    let cells: Vec<&str> = l
                        .trim()
                        .trim_matches('|')
                        .split('|')
                        .map(str::trim)
                        .collect();
                    let name = cells.first()?.strip_prefix('`')?.strip_suffix('`')?;
                    Some((name, *cells.get(1)?))
                })
                .collect();
            let expected: Vec<(&str, &str)> =
                columns.iter().map(|c| (c.name, c.ty.doc_name())).collect();
            assert_eq!(documented, expected, "docs/data.md, table {table}");
        }
    }
}
