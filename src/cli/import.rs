//! `sleuth import wellplay|mirage`: converting a public dataset's script into sleuth's format.

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;

use super::script::report_problems;

/// `sleuth import …`
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// Import one WellPlay (PLAYER*) script folder: json/script_info.json, json/<Character>.json, final_result/*.csv.
    Wellplay {
        dir: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// Import one MIRAGE script folder: script.json and clues.json.
    Mirage {
        dir: PathBuf,
        #[arg(long)]
        out: PathBuf,
        /// The culprit (repeatable); overrides the built-in table of the eight English titles.
        #[arg(long = "culprit")]
        culprits: Vec<String>,
        /// MIRAGE's Truth.json (title → true account); by default looked for in DIR's parent.
        #[arg(long)]
        truth: Option<PathBuf>,
    },
}

/// Converts the folder, writes the script, then lists its problems.
pub(super) fn run(cmd: ImportCommand) -> Result<()> {
    let (script, out) = match cmd {
        ImportCommand::Wellplay { dir, out } => {
            (crate::script::import::wellplay::import(&dir)?, out)
        }
        ImportCommand::Mirage {
            dir,
            out,
            culprits,
            truth,
        } => {
            let opts = crate::script::import::mirage::MirageOptions { culprits, truth };
            let imported = crate::script::import::mirage::import_logged(&dir, &opts)?;
            for w in &imported.warnings {
                eprintln!("warning: {w}");
            }
            (imported.script, out)
        }
    };
    // Written before it is judged: nothing converted is lost, and the file can be fixed by hand.
    script.save(&out)?;
    report_problems(&out, &script)?;
    println!(
        "wrote {}: {} characters, {} clues, {} multiple-choice questions",
        out.display(),
        script.characters.len(),
        script.clues.len(),
        script.choice.len()
    );
    Ok(())
}
