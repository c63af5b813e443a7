//! `sleuth questions generate`: factual questions from an LLM, appended to a script file.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};

use crate::llm::{provider_from, LlmArgs};
use sleuth_script::Script;

/// `sleuth questions …`
#[derive(Debug, Subcommand)]
pub enum QuestionsCommand {
    /// Ask an LLM for factual question/answer/source triples per character (ThinkThrice §5.1); keep those
    /// whose source sentence occurs in the character's script, drop near-duplicates, append them to the file.
    Generate(Box<GenerateArgs>),
}

/// Flags of `sleuth questions generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// The script file; the questions are appended to it (comments and layout kept).
    pub script: PathBuf,
    /// Questions wanted per character.
    #[arg(long, default_value_t = 40)]
    pub per_character: usize,
    /// Questions asked for per call.
    #[arg(long, default_value_t = 10)]
    pub batch: usize,
    #[arg(long, default_value_t = 0.8)]
    pub temperature: f32,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Directory of prompt templates replacing the built-in ones.
    #[arg(long)]
    pub prompts_dir: Option<PathBuf>,
    /// Print what would be added without writing the file.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub llm: LlmArgs,
}

/// Generates the questions and appends them (or prints them with `--dry-run`).
pub(super) async fn generate(a: GenerateArgs) -> Result<()> {
    let script = Script::load(&a.script)?;
    if a.per_character == 0 || a.batch == 0 {
        bail!("--per-character and --batch must be at least 1");
    }
    let (provider, model, pricing) = provider_from(&a.llm)?;
    let opts = sleuth_game::questions::GenerateOptions {
        per_character: a.per_character,
        model,
        batch: a.batch,
        temperature: a.temperature,
        seed: a.seed,
        prompts_dir: a.prompts_dir.clone(),
    };
    // Templates are checked before the first call.
    sleuth_game::agent::Prompts::load(
        sleuth_game::questions::FRAMEWORK,
        script.language,
        a.prompts_dir.as_deref(),
        &[sleuth_game::questions::PURPOSE],
    )?;
    let gateway = crate::llm::start_gateway(&a.llm, &a.llm.endpoint(), provider, pricing).await?;
    let report = sleuth_game::questions::generate(&script, &gateway, &opts).await;
    gateway.stop();
    let report = report?;
    println!(
        "{:<28} {:>5} {:>8} {:>5} {:>10} {:>10} {:>6}",
        "character", "calls", "proposed", "kept", "unsourced", "duplicate", "empty"
    );
    for c in &report.per_character {
        println!(
            "{:<28} {:>5} {:>8} {:>5} {:>10} {:>10} {:>6}",
            c.character,
            c.calls,
            c.proposed,
            c.kept,
            c.dropped_unsourced,
            c.dropped_duplicates,
            c.dropped_empty
        );
    }
    let u = &report.usage;
    println!(
        "usage: {} calls, {} prompt + {} completion tokens, ${:.4}",
        u.calls, u.prompt_tokens, u.completion_tokens, u.cost_usd
    );
    if a.dry_run {
        for q in &report.questions {
            println!(
                "[{}] {} → {}  (source: {})",
                q.character, q.question, q.answer, q.source
            );
        }
        return Ok(());
    }
    sleuth_game::questions::append_to_file(&a.script, &report.questions)?;
    println!(
        "appended {} questions to {}",
        report.questions.len(),
        a.script.display()
    );
    Ok(())
}
