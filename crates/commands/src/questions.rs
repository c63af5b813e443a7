//! `sleuth questions generate`: factual questions from an LLM, appended to a script file — or, with
//! `--review`, put before people first as a *questions* campaign (ThinkThrice §5.1: the generated
//! questions were "reviewed and improved by human annotators"), whose kept questions `sleuth annotate
//! apply` then appends through the same path.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

use crate::llm::{provider_from, LlmArgs};
use sleuth_report::campaign::{self, questions::QuestionSettings, Kind};
use sleuth_script::Script;
use sleuth_store::annotations::Annotations;

/// `sleuth questions …`
#[derive(Debug, Subcommand)]
pub enum QuestionsCommand {
    /// Ask an LLM for factual question/answer/source triples per character (ThinkThrice §5.1); keep those
    /// whose source sentence occurs in the character's script, drop near-duplicates, append them to the file
    /// (with `--review`, make them a campaign for people to review first; `sleuth annotate apply` appends).
    Generate(Box<GenerateArgs>),
}

/// Flags of `sleuth questions generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// The script file; the questions are appended to it (comments and layout kept), or, with
    /// `--review`, left as it is until the review is applied.
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
    #[arg(long, conflicts_with = "review")]
    pub dry_run: bool,
    /// Instead of appending the questions, make them a *questions* campaign in this run directory's
    /// store (created if missing) for annotators to accept, edit or reject; `sleuth annotate apply
    /// RUN CAMPAIGN` then appends the kept ones.
    #[arg(long, value_name = "RUN", requires_all = ["campaign", "annotators"])]
    pub review: Option<PathBuf>,
    /// The review campaign's name, unique in the run.
    #[arg(long, value_name = "ID", requires = "review")]
    pub campaign: Option<String>,
    /// The review's annotators, comma-separated.
    #[arg(long, value_delimiter = ',', requires = "review")]
    pub annotators: Vec<String>,
    #[command(flatten)]
    pub llm: LlmArgs,
}

/// Generates the questions and appends them (or prints them with `--dry-run`, or makes them a review
/// campaign with `--review`).
pub(super) async fn generate(a: GenerateArgs) -> Result<()> {
    let script = Script::load(&a.script)?;
    if a.per_character == 0 || a.batch == 0 {
        bail!("--per-character and --batch must be at least 1");
    }
    // A review campaign that cannot be made is refused before any call is paid for.
    let review = match (&a.review, &a.campaign) {
        (Some(run), Some(id)) => Some(review_target(run, id, &a.annotators)?),
        _ => None,
    };
    let (provider, model, pricing) = provider_from(&a.llm)?;
    let opts = sleuth_game::questions::GenerateOptions {
        per_character: a.per_character,
        model: model.clone(),
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
    if let Some((store, id, names)) = review {
        let settings = QuestionSettings {
            kind: Kind::Questions,
            script: absolute(&a.script).to_string_lossy().into_owned(),
            model,
            per_character: a.per_character,
            batch: a.batch,
            temperature: a.temperature.to_string().parse().unwrap_or(0.0),
            seed: a.seed,
        };
        if report.questions.is_empty() {
            bail!("no question was kept from the model; no campaign was created");
        }
        let items = campaign::questions::items(&script, &settings.script, &report.questions);
        let settings = serde_json::to_value(&settings)?;
        crate::annotate::store_campaign(&store, &id, Kind::Questions, &settings, &names, items)?;
        println!(
            "{} unchanged: the questions await review (sleuth annotate apply {} {id})",
            a.script.display(),
            a.review.as_deref().unwrap_or(Path::new(".")).display()
        );
        return Ok(());
    }
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

/// The run's store and the campaign's name and annotators, once checked: the names are valid and the
/// run has no campaign of that name yet. A missing run directory is created.
fn review_target(
    run: &Path,
    id: &str,
    annotators: &[String],
) -> Result<(Annotations, String, Vec<String>)> {
    let names = crate::annotate::annotator_names(annotators)?;
    if id.trim().is_empty() {
        bail!("--campaign: a campaign needs a name");
    }
    std::fs::create_dir_all(run)
        .with_context(|| format!("cannot create the run directory {}", run.display()))?;
    let store = crate::annotate::open(run)?;
    if store.campaign(id)?.is_some() {
        bail!("{}: the run already has a campaign '{id}'", run.display());
    }
    Ok((store, id.to_string(), names))
}

/// `path` made absolute against the working directory, so that `annotate apply` finds the script
/// from wherever it is run.
fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    })
}
