//! `sleuth export`: a run's games, characters, answers, calls, events and annotations as Parquet
//! (or CSV) tables for pandas, polars and DuckDB (`docs/data.md`).

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use sleuth_export::{Formats, Options};

/// Flags of `sleuth export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The run directory (`sleuth sweep run` writes it; it holds sleuth.db).
    pub run: PathBuf,
    /// The export directory: new, empty, or one this run was exported to before (then only what is
    /// new is added).
    #[arg(long)]
    pub out: PathBuf,
    /// `parquet`, `csv`, or both: `parquet,csv`. Fixed by a directory's first export.
    #[arg(long, default_value = "parquet")]
    pub format: String,
    /// Also write the events' and answers' texts (most of a transcript's bytes). Fixed by a
    /// directory's first export.
    #[arg(long)]
    pub with_text: bool,
    /// Finished games per part file (and per commit of the manifest).
    #[arg(long, default_value_t = 100)]
    pub games_per_part: usize,
}

/// Runs one export and says what it added.
pub(super) fn run(a: &ExportArgs) -> Result<()> {
    if a.games_per_part == 0 {
        bail!("--games-per-part must be at least 1");
    }
    let formats: Formats = a.format.parse()?;
    let opts = Options {
        formats,
        with_text: a.with_text,
        games_per_part: a.games_per_part,
        ..Options::default()
    };
    let s = sleuth_export::export(&a.run, &a.out, &opts)?;
    if s.removed > 0 {
        eprintln!(
            "note: removed {} part files an earlier, stopped export left unlisted",
            s.removed
        );
    }
    for (game, why) in &s.skipped {
        eprintln!("note: game {game} left out (tried again next time): {why}");
    }
    if s.files == 0 {
        println!("Nothing new to export in {}", a.run.display());
    }
    for table in sleuth_export::TABLES {
        let added = s.added.get(table).copied().unwrap_or(0);
        let total = s.total.get(table).copied().unwrap_or(0);
        println!("  {table:<12} +{added:>9} rows  ({total} in all)");
    }
    println!(
        "Wrote {} files to {} (see docs/data.md; export.json lists the parts)",
        s.files,
        s.out.display()
    );
    Ok(())
}
