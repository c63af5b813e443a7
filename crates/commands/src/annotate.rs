//! `sleuth annotate …`: the papers' human studies over a run directory (`docs/humans.md`).
//!
//! A campaign is drawn from the run's finished games (`sleuth_report::campaign`), kept in the run's
//! store (`sleuth_store::sqlite::annotations`) with a token per annotator, answered item by item, and
//! exported for analysis; `sleuth report` prints the papers' figures from the answers. A *questions*
//! campaign is made by `sleuth questions generate --review` instead of drawn, and `annotate apply`
//! writes the questions its annotators kept into the script ([`review`]).

mod review;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use serde_json::{json, Value};

use sleuth_report::campaign::{self, CampaignError, Kind, Settings};
use sleuth_store::annotations::Annotations;
use sleuth_store::rundir::RunDir;
use sleuth_store::SqliteStore;

/// `sleuth annotate …`
#[derive(Debug, Subcommand)]
pub enum AnnotateCommand {
    /// Draw a campaign's items from a run and give each annotator a token (printed once).
    Create(CreateArgs),
    /// The run's campaigns and who has done what.
    Status(StatusArgs),
    /// Record one answer, as an annotator (the viewer's pages do the same).
    Answer(AnswerArgs),
    /// Write a campaign's items and answers as CSV and JSON.
    Export(ExportArgs),
    /// Write the questions a *questions* campaign kept into the script's question file.
    Apply(review::ApplyArgs),
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The run directory (a sweep's `out`, or a directory of `sleuth play --out` games).
    pub run: PathBuf,
    /// The campaign's name, unique in the run.
    #[arg(long)]
    pub id: String,
    /// `responses` (ThinkThrice Appendix A) or `rankings` (MIRAGE Table 7); a `questions` campaign
    /// is made by `sleuth questions generate --review`.
    #[arg(long)]
    pub kind: Kind,
    /// Groups of responses (each one per condition), or MIRAGE games per condition.
    #[arg(long, default_value_t = 20)]
    pub per_condition: usize,
    /// Annotators' names, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub annotators: Vec<String>,
    /// The transcript event kind rated by a responses campaign.
    #[arg(long, default_value = "introduction")]
    pub stage: String,
    /// Only conditions whose label contains this (repeatable; all by default).
    #[arg(long = "condition")]
    pub conditions: Vec<String>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    pub run: PathBuf,
    /// One campaign (all when left out).
    pub id: Option<String>,
}

#[derive(Debug, Args)]
pub struct AnswerArgs {
    pub run: PathBuf,
    /// The annotator's token (also read from SLEUTH_ANNOTATOR_TOKEN).
    #[arg(long, env = "SLEUTH_ANNOTATOR_TOKEN", hide_env_values = true)]
    pub token: String,
    /// The item's number in the campaign.
    #[arg(long)]
    pub item: u32,
    /// The answer as JSON (`docs/humans.md` gives its shape for each kind).
    #[arg(long)]
    pub answer: String,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    pub run: PathBuf,
    pub id: String,
    /// Where campaign.json, items.csv and answers.csv go.
    #[arg(long)]
    pub out: PathBuf,
}

pub(super) fn run(cmd: AnnotateCommand) -> Result<()> {
    match cmd {
        AnnotateCommand::Create(a) => create(a),
        AnnotateCommand::Status(a) => status(&a),
        AnnotateCommand::Answer(a) => answer(&a),
        AnnotateCommand::Export(a) => export(&a),
        AnnotateCommand::Apply(a) => review::apply(&a),
    }
}

/// The run's annotation tables; a run of `sleuth play` games gets a store for them first.
pub(crate) fn open(run: &Path) -> Result<Annotations> {
    if !run.is_dir() {
        bail!("{}: not a run directory", run.display());
    }
    let dir = RunDir::new(run);
    if !dir.has_store() {
        SqliteStore::open(&dir.store())
            .with_context(|| format!("cannot create the run's store {}", dir.store().display()))?;
    }
    Annotations::open(&dir.store())
        .with_context(|| format!("cannot open the run's store {}", dir.store().display()))
}

/// The annotators' names, trimmed, sorted and without repeats, or why they cannot be names
/// (`sleuth_report::campaign::annotator_names`, the rule the viewer's form keeps too).
pub(crate) fn annotator_names(given: &[String]) -> Result<Vec<String>> {
    Ok(campaign::annotator_names(given)?)
}

/// Draws and stores the campaign through `sleuth_report::campaign::create`, the path the viewer's
/// *New campaign* form takes too. The request is checked before the store is opened, so a bad one
/// leaves a run of `sleuth play` games without a store.
fn create(a: CreateArgs) -> Result<()> {
    let settings = Settings {
        kind: a.kind,
        per_condition: a.per_condition,
        stage: a.stage.clone(),
        conditions: a.conditions.clone(),
        seed: a.seed,
    };
    campaign::check(&a.id, &settings, &a.annotators)?;
    let store = open(&a.run)?;
    let created = match campaign::create(&store, &a.run, &a.id, &settings, &a.annotators) {
        Ok(c) => c,
        Err(CampaignError::NothingDrawn { notes }) => {
            for note in &notes {
                eprintln!("note: {note}");
            }
            bail!("no item could be drawn; nothing was created");
        }
        Err(e) => return Err(e.into()),
    };
    for note in &created.notes {
        eprintln!("note: {note}");
    }
    print_tokens(&created.id, created.kind, created.items, &created.tokens);
    Ok(())
}

/// Stores a generated campaign (`questions generate --review`) with a fresh token per annotator
/// (`sleuth_report::campaign::store_items`, as drawn campaigns are stored) and prints the tokens,
/// once.
pub(crate) fn store_campaign(
    store: &Annotations,
    id: &str,
    kind: Kind,
    settings: &Value,
    names: &[String],
    items: Vec<campaign::Item>,
) -> Result<()> {
    let count = items.len();
    let tokens = campaign::store_items(store, id, kind, settings, names, items)?;
    print_tokens(id, kind, count, &tokens);
    Ok(())
}

/// What a new campaign prints: its size, and each annotator's token — the only time it is shown.
fn print_tokens(id: &str, kind: Kind, items: usize, tokens: &[(String, String)]) {
    println!(
        "campaign {id} ({}): {items} item(s), {} annotator(s)",
        kind.as_str(),
        tokens.len()
    );
    println!("tokens (shown once; give each annotator their own):");
    for (name, token) in tokens {
        println!("  {name}\t{token}");
    }
}

fn status(a: &StatusArgs) -> Result<()> {
    let store = open(&a.run)?;
    let campaigns = match &a.id {
        Some(id) => vec![store
            .campaign(id)?
            .with_context(|| format!("{}: no campaign '{id}'", a.run.display()))?],
        None => store.campaigns()?,
    };
    if campaigns.is_empty() {
        println!("no campaign in {}", a.run.display());
    }
    for c in campaigns {
        println!(
            "{} ({}), {} item(s), created {}",
            c.id, c.kind, c.items, c.created_at
        );
        for p in store.progress(&c.id)? {
            let last = p.last_answer_at.as_deref().unwrap_or("-");
            println!(
                "  {:<16} {:>5} / {:<5} last answer {last}",
                p.annotator, p.done, p.total
            );
        }
        if c.kind == Kind::Questions.as_str() {
            println!("  {}", review::outcomes_line(&store, &c.id)?);
        }
    }
    Ok(())
}

fn answer(a: &AnswerArgs) -> Result<()> {
    let store = open(&a.run)?;
    let Some((id, annotator)) = store.annotator_for_token(&a.token)? else {
        bail!(
            "the token is not an annotator's token of a campaign in {}",
            a.run.display()
        );
    };
    let campaign = store
        .campaign(&id)?
        .with_context(|| format!("no campaign '{id}'"))?;
    let item = store.item(&id, a.item)?.with_context(|| {
        format!(
            "campaign {id} has no item {} (it has {})",
            a.item, campaign.items
        )
    })?;
    let answer: Value = serde_json::from_str(&a.answer).context("--answer is not JSON")?;
    check_answer(&campaign.kind, a.item, &annotator, &item.hidden, &answer)?;
    store.record(&id, a.item, &annotator, &answer)?;
    println!("{id}: item {} answered by {annotator}", a.item);
    Ok(())
}

/// An answer is checked as the report will read it, before it is stored (the same check as the
/// viewer's annotation pages: `sleuth_report::humans::check_answer`).
fn check_answer(
    kind: &str,
    item: u32,
    annotator: &str,
    hidden: &Value,
    answer: &Value,
) -> Result<()> {
    sleuth_report::humans::check_answer(kind, item, annotator, hidden, answer)?;
    Ok(())
}

fn export(a: &ExportArgs) -> Result<()> {
    let store = open(&a.run)?;
    let c = store
        .campaign(&a.id)?
        .with_context(|| format!("{}: no campaign '{}'", a.run.display(), a.id))?;
    let items = store.items(&a.id)?;
    let answers = store.answers(&a.id)?;
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("cannot create {}", a.out.display()))?;
    let campaign_json = json!({
        "id": c.id, "kind": c.kind, "settings": c.settings, "created_at": c.created_at,
        "annotators": c.annotators,
        "items": items.iter().map(|i| json!({"item": i.item, "shown": i.shown, "hidden": i.hidden})).collect::<Vec<_>>(),
        "answers": answers.iter().map(|r| json!({"item": r.item, "annotator": r.annotator, "answer": r.answer, "answered_at": r.answered_at})).collect::<Vec<_>>(),
    });
    let path = a.out.join("campaign.json");
    std::fs::write(&path, serde_json::to_string_pretty(&campaign_json)?)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let mut w = csv::Writer::from_path(a.out.join("items.csv"))?;
    w.write_record(["item", "shown", "hidden"])?;
    for i in &items {
        w.write_record([
            i.item.to_string(),
            i.shown.to_string(),
            i.hidden.to_string(),
        ])?;
    }
    w.flush()?;
    let mut w = csv::Writer::from_path(a.out.join("answers.csv"))?;
    w.write_record(["item", "annotator", "answered_at", "answer"])?;
    for r in &answers {
        w.write_record([
            r.item.to_string(),
            r.annotator.clone(),
            r.answered_at.clone(),
            r.answer.to_string(),
        ])?;
    }
    w.flush()?;
    let hidden: Vec<(u32, Value)> = items.iter().map(|i| (i.item, i.hidden.clone())).collect();
    let given: Vec<(u32, String, Value)> = answers
        .iter()
        .map(|r| (r.item, r.annotator.clone(), r.answer.clone()))
        .collect();
    let tidy = if c.kind == Kind::Questions.as_str() {
        review::write_reviews(&items, &answers, &a.out.join("reviews.csv"))?;
        ", reviews.csv"
    } else {
        tidy_answers(&c.kind, &hidden, &given, &a.out)?
    };
    println!(
        "{}: {} item(s), {} answer(s) -> {} (campaign.json, items.csv, answers.csv{tidy})",
        c.id,
        items.len(),
        answers.len(),
        a.out.display()
    );
    Ok(())
}

/// One row per rating (`ratings.csv`) or per ranked character (`rankings.csv`), with the conditions
/// and the judge's scores joined in: the table an analysis starts from. Returns the file's name, for
/// the summary line.
fn tidy_answers(
    kind: &str,
    items: &[(u32, Value)],
    answers: &[(u32, String, Value)],
    out: &Path,
) -> Result<&'static str> {
    match kind {
        "responses" => {
            let mut w = csv::Writer::from_path(out.join("ratings.csv"))?;
            w.write_record([
                "item",
                "label",
                "condition",
                "annotator",
                "naturalness",
                "truthfulness",
                "informativeness",
            ])?;
            for r in sleuth_report::humans::response_ratings(items, answers)? {
                let [n, t, i] = r.scores();
                w.write_record([
                    r.item.to_string(),
                    r.label,
                    r.condition,
                    r.annotator,
                    n.to_string(),
                    t.to_string(),
                    i.to_string(),
                ])?;
            }
            w.flush()?;
            Ok(", ratings.csv")
        }
        "rankings" => {
            let mut w = csv::Writer::from_path(out.join("rankings.csv"))?;
            w.write_record([
                "item",
                "game",
                "model",
                "judge",
                "annotator",
                "metric",
                "position",
                "character",
                "judge_score",
            ])?;
            for r in sleuth_report::humans::rankings(items, answers)? {
                for (pos, (name, score)) in r.judge_scores.iter().enumerate() {
                    w.write_record([
                        r.item.to_string(),
                        r.game.clone(),
                        r.model.clone(),
                        r.judge.clone(),
                        r.annotator.clone(),
                        r.metric.names().0.to_string(),
                        (pos + 1).to_string(),
                        name.clone(),
                        score.to_string(),
                    ])?;
                }
            }
            w.flush()?;
            Ok(", rankings.csv")
        }
        _ => Ok(""),
    }
}
