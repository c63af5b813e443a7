//! `sleuth report`: the papers' tables and figures from finished games.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

/// Flags of `sleuth report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A game directory (`sleuth play --out DIR`), a run directory holding game directories at any
    /// depth, or one result.json.
    pub path: PathBuf,
    /// Output directory; default PATH/report/ (beside the file when PATH is a result.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Bootstrap resamples per confidence interval.
    #[arg(long, default_value_t = sleuth_game::eval::stats::DEFAULT_RESAMPLES)]
    pub resamples: usize,
    /// Bootstrap seed: the same games and seed give the same intervals.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// Writes the report and says where, and what it holds.
pub(super) fn run(a: &ReportArgs) -> Result<()> {
    if a.resamples == 0 {
        bail!("--resamples must be at least 1");
    }
    let bootstrap = sleuth_report::Bootstrap {
        resamples: a.resamples,
        seed: a.seed,
        ..sleuth_report::Bootstrap::default()
    };
    let (report, written) = sleuth_report::generate(&a.path, a.out.as_deref(), bootstrap)?;
    for note in &report.notes {
        eprintln!("note: {note}");
    }
    if let Some(why) = &written.png_skipped {
        eprintln!("note: figures written as SVG only: {why}");
    }
    println!("{}", report.summary());
    for s in &report.sections {
        let title = match s {
            sleuth_report::Section::Table(t) => &t.title,
            sleuth_report::Section::Figure(f) => &f.title,
        };
        println!("  {title}");
    }
    println!(
        "Wrote {} files to {} (open report.html or report.md)",
        written.files.len(),
        written.dir.display()
    );
    Ok(())
}
