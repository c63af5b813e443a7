//! *questions* campaigns at the command line (ThinkThrice §5.1's review of generated questions,
//! `docs/humans.md`): `annotate apply` writes the questions the annotators kept into the script
//! through the same append `questions generate` uses, with who kept them and when; `annotate
//! status` says what the keep rule makes of the answers so far; `annotate export` writes
//! `reviews.csv`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::Value;

use sleuth_game::questions::{append_to_file, Proposal, Screen, Verdict};
use sleuth_report::campaign::questions::{
    decide, question_reviews, Candidate, Decision, Outcome, QuestionSettings, ReviewAction, Vote,
};
use sleuth_report::campaign::Kind;
use sleuth_script::{FactualQuestion, GeneratedText, QuestionReview, Script};
use sleuth_store::annotations::{Annotations, AnswerRow, ItemRow};

#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The run directory whose store holds the campaign.
    pub run: PathBuf,
    /// The *questions* campaign.
    pub id: String,
    /// The script file to write into (default: the file the questions were generated for, as the
    /// campaign recorded it).
    #[arg(long)]
    pub script: Option<PathBuf>,
    /// Print what would be added without writing the file.
    #[arg(long)]
    pub dry_run: bool,
}

/// One candidate and what the keep rule made of its answers.
struct Decided {
    item: u32,
    candidate: Candidate,
    decision: Decision,
}

/// Every item's decision, in item order. The answers are checked first, as `annotate answer`
/// checks them, so a stored answer that no longer reads is named rather than skipped.
fn decisions(items: &[ItemRow], answers: &[AnswerRow]) -> Result<Vec<Decided>> {
    let hidden: Vec<(u32, Value)> = items.iter().map(|i| (i.item, i.hidden.clone())).collect();
    let given: Vec<(u32, String, Value)> = answers
        .iter()
        .map(|r| (r.item, r.annotator.clone(), r.answer.clone()))
        .collect();
    let mut votes: BTreeMap<u32, Vec<Vote>> = BTreeMap::new();
    for (review, row) in question_reviews(&hidden, &given)?.into_iter().zip(answers) {
        votes.entry(review.item).or_default().push(Vote {
            annotator: review.annotator,
            at: row.answered_at.clone(),
            action: review.action,
        });
    }
    let mut out = Vec::with_capacity(items.len());
    for i in items {
        let candidate = serde_json::from_value::<Candidate>(i.hidden.clone())
            .with_context(|| format!("item {}: not a candidate question", i.item))?;
        let votes = votes.remove(&i.item).unwrap_or_default();
        let decision = decide(&candidate.question, &candidate.answer, &votes);
        out.push(Decided {
            item: i.item,
            candidate,
            decision,
        });
    }
    Ok(out)
}

/// The campaign `id` of `store`, refused unless it is a *questions* campaign.
fn questions_campaign(store: &Annotations, run: &Path, id: &str) -> Result<Vec<Decided>> {
    let c = store
        .campaign(id)?
        .with_context(|| format!("{}: no campaign '{id}'", run.display()))?;
    if c.kind != Kind::Questions.as_str() {
        bail!(
            "campaign {id} is a {} campaign, not a questions campaign",
            c.kind
        );
    }
    decisions(&store.items(id)?, &store.answers(id)?)
}

/// `annotate status`'s line for a *questions* campaign: its items' outcomes under the keep rule.
pub(super) fn outcomes_line(store: &Annotations, id: &str) -> Result<String> {
    let decided = decisions(&store.items(id)?, &store.answers(id)?)?;
    let count = |o: Outcome| decided.iter().filter(|d| d.decision.outcome == o).count();
    let edited = decided
        .iter()
        .filter(|d| d.decision.outcome == Outcome::Kept && d.decision.edited)
        .count();
    Ok(format!(
        "keep rule so far: {} kept ({edited} edited), {} rejected, {} unanswered",
        count(Outcome::Kept),
        count(Outcome::Rejected),
        count(Outcome::Unanswered)
    ))
}

/// What applying found for the kept candidates.
#[derive(Default)]
struct Applied {
    new: Vec<FactualQuestion>,
    /// Kept and already in the file from an earlier apply of this campaign.
    already: usize,
    notes: Vec<String>,
}

/// `sleuth annotate apply RUN ID`: appends the kept questions not yet in the script.
pub(super) fn apply(a: &ApplyArgs) -> Result<()> {
    let store = super::open(&a.run)?;
    let decided = questions_campaign(&store, &a.run, &a.id)?;
    let c = store
        .campaign(&a.id)?
        .with_context(|| format!("no campaign '{}'", a.id))?;
    let path = match &a.script {
        Some(p) => p.clone(),
        None => {
            let s = serde_json::from_value::<QuestionSettings>(c.settings.clone())
                .with_context(|| format!("campaign {}: settings do not name a script", a.id))?;
            PathBuf::from(s.script)
        }
    };
    let script = Script::load(&path)?;
    let applied = kept_questions(&script, &a.id, &decided, &sleuth_base::clock::now());
    for note in &applied.notes {
        eprintln!("note: {note}");
    }
    let count = |o: Outcome| decided.iter().filter(|d| d.decision.outcome == o).count();
    println!(
        "{}: {} kept, {} rejected, {} unanswered; {} already in {}",
        a.id,
        count(Outcome::Kept),
        count(Outcome::Rejected),
        count(Outcome::Unanswered),
        applied.already,
        path.display()
    );
    if a.dry_run {
        for q in &applied.new {
            println!("would add [{}] {} → {}", q.character, q.question, q.answer);
        }
        return Ok(());
    }
    append_to_file(&path, &applied.new)?;
    println!(
        "appended {} question(s) to {}",
        applied.new.len(),
        path.display()
    );
    Ok(())
}

/// The kept candidates as questions for `script`, each with its review, minus those an earlier apply
/// of `campaign` wrote (found by campaign and item) and those the generator's screen now refuses
/// (an edit that repeats a question the script has, a source no longer in the script).
fn kept_questions(script: &Script, campaign: &str, decided: &[Decided], now: &str) -> Applied {
    let in_file = |item: u32| {
        script.factual.iter().any(|q| {
            q.review
                .as_ref()
                .is_some_and(|r| r.campaign == campaign && r.item == item)
        })
    };
    let mut screens: BTreeMap<&str, Screen> = BTreeMap::new();
    let mut out = Applied::default();
    for d in decided {
        let (item, name) = (d.item, d.candidate.character.as_str());
        if d.decision.outcome != Outcome::Kept {
            if in_file(item) {
                let problem = "now rejected or unanswered but written by an earlier apply";
                out.notes.push(format!(
                    "item {item}: {problem} (apply never removes a question)"
                ));
            }
            continue;
        }
        if in_file(item) {
            out.already += 1;
            continue;
        }
        let Some(character) = script.character(name) else {
            let title = &script.title;
            out.notes.push(format!(
                "item {item}: '{title}' has no character '{name}'; left out"
            ));
            continue;
        };
        let screen = screens.entry(name).or_insert_with(|| {
            let existing: Vec<FactualQuestion> = script
                .factual
                .iter()
                .filter(|q| q.character == name)
                .cloned()
                .collect();
            Screen::new(character, &existing)
        });
        let proposal = Proposal {
            question: d.decision.question.clone(),
            answer: d.decision.answer.clone(),
            source: d.candidate.source.clone(),
        };
        match screen.offer(&proposal) {
            Verdict::Keep(mut q) => {
                q.review = Some(Box::new(review(campaign, d, now)));
                out.new.push(q);
            }
            Verdict::Duplicate => out.notes.push(format!(
                "item {item}: repeats a question the script has about {name}; left out"
            )),
            Verdict::Unsourced => out.notes.push(format!(
                "item {item}: its source is no longer a sentence of {name}'s script; left out"
            )),
            Verdict::Empty => out.notes.push(format!(
                "item {item}: an empty question or answer; left out"
            )),
        }
    }
    out
}

/// The provenance written with a kept question.
fn review(campaign: &str, d: &Decided, now: &str) -> QuestionReview {
    let generated = d.decision.edited.then(|| GeneratedText {
        question: d.candidate.question.clone(),
        answer: d.candidate.answer.clone(),
    });
    QuestionReview {
        campaign: campaign.to_string(),
        item: d.item,
        accepted: d.decision.accepted.clone(),
        edited: d.decision.edited_by.clone(),
        rejected: d.decision.rejected.clone(),
        generated,
        applied_at: now.to_string(),
    }
}

/// `reviews.csv`: one row per answer, the candidate as generated beside what the annotator did, and
/// the item's outcome under the keep rule.
pub(super) fn write_reviews(items: &[ItemRow], answers: &[AnswerRow], path: &Path) -> Result<()> {
    let outcome: BTreeMap<u32, &'static str> = decisions(items, answers)?
        .iter()
        .map(|d| (d.item, d.decision.outcome.as_str()))
        .collect();
    let hidden: Vec<(u32, Value)> = items.iter().map(|i| (i.item, i.hidden.clone())).collect();
    let given: Vec<(u32, String, Value)> = answers
        .iter()
        .map(|r| (r.item, r.annotator.clone(), r.answer.clone()))
        .collect();
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("cannot write {}", path.display()))?;
    w.write_record([
        "item",
        "character",
        "question",
        "answer",
        "source",
        "annotator",
        "answered_at",
        "action",
        "edited_question",
        "edited_answer",
        "reason",
        "outcome",
    ])?;
    for (r, row) in question_reviews(&hidden, &given)?.into_iter().zip(answers) {
        let (eq, ea, reason) = match &r.action {
            ReviewAction::Edit { question, answer } => (question.clone(), answer.clone(), None),
            ReviewAction::Reject { reason } => (String::new(), String::new(), reason.clone()),
            ReviewAction::Accept => (String::new(), String::new(), None),
        };
        let c = &r.candidate;
        w.write_record([
            r.item.to_string(),
            c.character.clone(),
            c.question.clone(),
            c.answer.clone(),
            c.source.clone(),
            r.annotator.clone(),
            row.answered_at.clone(),
            r.action.name().to_string(),
            eq,
            ea,
            reason.unwrap_or_default(),
            outcome.get(&r.item).copied().unwrap_or("").to_string(),
        ])?;
    }
    w.flush()?;
    Ok(())
}
