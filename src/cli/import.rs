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
        /// Refuse the first fault of the hand-made files instead of repairing it with a warning.
        #[arg(long)]
        strict: bool,
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
        /// Whom the players vote among (repeatable): players or people who do not play. By default the
        /// players, or, when the culprit does not play, the people of the clue owners who do not play.
        #[arg(long = "suspect")]
        suspects: Vec<String>,
    },
}

/// Converts the folder, writes the script, then lists its problems.
pub(super) fn run(cmd: ImportCommand) -> Result<()> {
    let (script, out) = match cmd {
        ImportCommand::Wellplay { dir, out, strict } => {
            let imported = crate::script::import::wellplay::import_logged(&dir, strict)?;
            // Each repair on one line naming the source file and row, so a researcher can check it.
            for r in &imported.repairs {
                eprintln!("warning: {r}");
            }
            if !imported.repairs.is_empty() {
                eprintln!("{} repairs of the source files", imported.repairs.len());
            }
            (imported.script, out)
        }
        ImportCommand::Mirage {
            dir,
            out,
            culprits,
            truth,
            suspects,
        } => {
            let opts = crate::script::import::mirage::MirageOptions {
                culprits,
                truth,
                suspects,
            };
            let imported = crate::script::import::mirage::import_logged(&dir, &opts)?;
            for w in &imported.warnings {
                eprintln!("warning: {w}");
            }
            (imported.script, out)
        }
    };
    // Judged before it is written: a failed import leaves no file that looks like a success.
    report_problems(&out, &script)?;
    script.save(&out)?;
    println!(
        "wrote {}: {} characters, {} clues, {} multiple-choice questions",
        out.display(),
        script.characters.len(),
        script.clues.len(),
        script.choice.len()
    );
    Ok(())
}
