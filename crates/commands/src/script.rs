//! `sleuth script validate|show|stats`: checking and summarising script files.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Subcommand;

use sleuth_script::{Category, Script, Severity};

/// `sleuth script …`
#[derive(Debug, Subcommand)]
pub enum ScriptCommand {
    /// Check a script file and list every problem (errors and warnings) with its field path.
    Validate { path: PathBuf },
    /// Summarise a script: characters, roles, acts, clues and questions by kind.
    Show { path: PathBuf },
    /// The dataset table of a set of scripts (files, or folders of `*.toml`): players, victims, acts,
    /// clues, tokens, words and questions by category per script, with the mean and sum over the set, as
    /// the papers' dataset tables give them.
    Stats {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print CSV instead of an aligned table.
        #[arg(long)]
        csv: bool,
        /// Also write ThinkThrice's Figure 2 (the set's scripts by number of players) into DIR, as
        /// SVG and PNG with its CSV.
        #[arg(long, value_name = "DIR")]
        figures: Option<PathBuf>,
    },
}

impl ScriptCommand {
    /// Runs the subcommand; `validate` fails (exit status 1) when the script has an error-level problem.
    pub fn run(self) -> Result<()> {
        match self {
            ScriptCommand::Validate { path } => validate(&path),
            ScriptCommand::Show { path } => show(&path),
            ScriptCommand::Stats {
                paths,
                csv,
                figures,
            } => crate::stats::run(&paths, csv, figures.as_deref()),
        }
    }
}

/// Prints every problem, errors first; fails if there are errors.
pub(super) fn report_problems(path: &Path, script: &Script) -> Result<()> {
    let problems = script.problems();
    let (errors, warnings): (Vec<_>, Vec<_>) =
        problems.iter().partition(|p| p.severity == Severity::Error);
    for p in &errors {
        println!("error: {}: {p}", path.display());
    }
    for p in &warnings {
        println!("warning: {}: {p}", path.display());
    }
    if !errors.is_empty() {
        bail!(
            "{}: {} errors, {} warnings",
            path.display(),
            errors.len(),
            warnings.len()
        );
    }
    Ok(())
}

fn validate(path: &Path) -> Result<()> {
    let s = Script::load_unchecked(path)?;
    report_problems(path, &s)?;
    println!(
        "{}: ok — \"{}\", {} characters, {} clues, {} factual, {} inferential and {} multiple-choice questions",
        path.display(),
        s.title,
        s.characters.len(),
        s.clues.len(),
        s.factual.len(),
        s.inferential.len(),
        s.choice.len()
    );
    Ok(())
}

fn show(path: &Path) -> Result<()> {
    let s = Script::load_unchecked(path)?;
    print!("{}", summary(&s));
    Ok(())
}

/// A readable summary of a script.
pub fn summary(s: &Script) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} ({}{})",
        s.title,
        s.language.code(),
        s.source
            .as_deref()
            .map(|x| format!(", from {x}"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        o,
        "acts: {}   victims: {}",
        s.acts,
        s.victims
            .iter()
            .map(|v| v.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(o, "characters:");
    for c in &s.characters {
        let role = if c.is_murderer() {
            "murderer"
        } else {
            "civilian"
        };
        let killed = if c.killed.is_empty() {
            String::new()
        } else {
            format!(", killed {}", c.killed.join(", "))
        };
        let factual = s.factual.iter().filter(|q| q.character == c.name).count();
        let choice = s
            .choice
            .iter()
            .filter(|q| q.character.as_deref() == Some(c.name.as_str()))
            .count();
        let _ = writeln!(
            o,
            "  {:<28} {role:<9} acts {}  secrets {}  factual {factual}  multiple-choice {choice}{killed}",
            c.name,
            c.acts.len(),
            c.secrets.len()
        );
    }
    let key = s.clues.iter().filter(|c| c.key).count();
    let located = s.clues.iter().filter(|c| c.location.is_some()).count();
    let _ = writeln!(
        o,
        "clues: {} ({key} key, {located} by location)",
        s.clues.len()
    );
    let count = |cat: Category, multi: bool| {
        s.choice
            .iter()
            .filter(|q| q.category == cat && q.multiple == multi)
            .count()
    };
    let _ = writeln!(
        o,
        "questions: {} factual, {} inferential, {} multiple-choice",
        s.factual.len(),
        s.inferential.len(),
        s.choice.len()
    );
    if !s.choice.is_empty() {
        for (label, cat) in [
            ("A objective (10)", Category::Objective),
            ("B reasoning (5)", Category::Reasoning),
            ("C relations (2)", Category::Relations),
        ] {
            let _ = writeln!(
                o,
                "  {label:<18} single {:>3}  multiple {:>3}",
                count(cat, false),
                count(cat, true)
            );
        }
        // The paper's dataset table: the characters' questions by category (a/b/c) and in all.
        let per = |cat: Option<Category>| {
            s.choice
                .iter()
                .filter(|q| q.character.is_some() && cat.is_none_or(|c| q.category == c))
                .count()
        };
        let _ = writeln!(
            o,
            "  per character: Objective (a) {}  Reasoning (b) {}  Relations (c) {}  total {}",
            per(Some(Category::Objective)),
            per(Some(Category::Reasoning)),
            per(Some(Category::Relations)),
            per(None)
        );
        let fsa = s.choice.iter().filter(|q| q.in_full_access()).count();
        let only = s.choice.iter().filter(|q| q.character.is_none()).count();
        let _ = writeln!(
            o,
            "  full script access {fsa:>3} ({} shared with the characters' sets, {only} only there)",
            fsa - only
        );
        let unscored = s.choice.iter().filter(|q| q.unscored).count();
        if unscored > 0 {
            let _ = writeln!(o, "  unscored (blank question text) {unscored}");
        }
    }
    o
}
