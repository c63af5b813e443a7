//! `sleuth import wellplay|mirage`: converting a public dataset's script into sleuth's format.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Subcommand;

use crate::script::report_problems;

/// `sleuth import …`
#[derive(Debug, Clone, Subcommand)]
pub enum ImportCommand {
    /// Import one WellPlay (PLAYER*) script folder: json/script_info.json, json/<Character>.json,
    /// final_result/*.csv. Given a folder of such folders (a whole set), imports each into the folder
    /// `--out` as `<folder name>.toml`, going on past failures.
    Wellplay {
        dir: PathBuf,
        /// The script file to write; a folder when DIR holds a whole set.
        #[arg(long)]
        out: PathBuf,
        /// Refuse the first fault of the hand-made files instead of repairing it with a warning.
        #[arg(long)]
        strict: bool,
    },
    /// Import one MIRAGE script folder: script.json and clues.json. Given a folder of such folders (a
    /// whole set, Truth.json beside them), imports each into the folder `--out` as `<folder name>.toml`,
    /// going on past failures.
    Mirage {
        dir: PathBuf,
        /// The script file to write; a folder when DIR holds a whole set.
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

impl ImportCommand {
    fn dir(&self) -> &Path {
        match self {
            ImportCommand::Wellplay { dir, .. } | ImportCommand::Mirage { dir, .. } => dir,
        }
    }

    /// The same command for another script folder and output file.
    fn retarget(&self, dir: PathBuf, out: PathBuf) -> ImportCommand {
        let mut c = self.clone();
        match &mut c {
            ImportCommand::Wellplay { dir: d, out: o, .. }
            | ImportCommand::Mirage { dir: d, out: o, .. } => {
                *d = dir;
                *o = out;
            }
        }
        c
    }

    /// The file a script folder's own importer reads first: what tells a script folder from a set.
    fn marker(&self) -> &'static str {
        match self {
            ImportCommand::Wellplay { .. } => "json/script_info.json",
            ImportCommand::Mirage { .. } => "script.json",
        }
    }
}

/// Imports one script folder, or each script folder of a set.
pub(super) fn run(cmd: ImportCommand) -> Result<()> {
    let dir = cmd.dir().to_path_buf();
    if dir.join(cmd.marker()).is_file() {
        return import_one(cmd);
    }
    let mut folders: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join(cmd.marker()).is_file())
            .collect(),
        // Not a readable folder: the importer's own error names what is missing.
        Err(_) => Vec::new(),
    };
    if folders.is_empty() {
        return import_one(cmd);
    }
    folders.sort();
    if matches!(&cmd, ImportCommand::Mirage { culprits, .. } if !culprits.is_empty()) {
        bail!(
            "--culprit names the culprits of one script, but {} holds {} scripts: import that script's \
             folder on its own",
            dir.display(),
            folders.len()
        );
    }
    let out_dir = match &cmd {
        ImportCommand::Wellplay { out, .. } | ImportCommand::Mirage { out, .. } => out.clone(),
    };
    if out_dir.is_file() {
        bail!(
            "{}: --out must be a folder when {} holds a set of scripts",
            out_dir.display(),
            dir.display()
        );
    }
    std::fs::create_dir_all(&out_dir)?;
    let mut failed = Vec::new();
    for f in &folders {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let out = out_dir.join(format!("{name}.toml"));
        if let Err(e) = import_one(cmd.retarget(f.clone(), out)) {
            eprintln!("error: {e:#}");
            failed.push(name);
        }
    }
    println!(
        "imported {} of {} scripts into {}",
        folders.len() - failed.len(),
        folders.len(),
        out_dir.display()
    );
    if !failed.is_empty() {
        bail!("{} scripts failed: {}", failed.len(), failed.join(", "));
    }
    Ok(())
}

/// Converts the folder, writes the script, then lists its problems.
fn import_one(cmd: ImportCommand) -> Result<()> {
    let (script, out) = match cmd {
        ImportCommand::Wellplay { dir, out, strict } => {
            let imported = sleuth_script::import::wellplay::import_logged(&dir, strict)?;
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
            let opts = sleuth_script::import::mirage::MirageOptions {
                culprits,
                truth,
                suspects,
            };
            let imported = sleuth_script::import::mirage::import_logged(&dir, &opts)?;
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
