//! `sleuth report`: the papers' tables and figures from finished games.
//!
//! Layer 5 (docs/architecture.md, *Crates*): it may use script, store, llm, game and sweep; it
//! reads finished games and knows nothing of the cluster or the viewer.
//!
//! Reads every `result.json` under a path ([`load`]), groups the games into arms — one version of one
//! script played under one condition, repeated over seeds ([`arms`]) — and builds ThinkThrice Table 4
//! and Figures 4 and 5 (Table 4's module ablation for every protocol that runs the modules), PLAYER*
//! Tables A3, A4, A5 and A6 and Figures 5, 6 and 7, MIRAGE Tables 2, 3, 9–19 and Figures 2–8 (`mirage`),
//! paired comparisons ([`tables`], [`figures`]), and a tournament's ratings ([`tournament`]). A
//! paper's table or figure holds only games of that paper's
//! protocol; what other protocols measured appears under titles naming them ([`papers`]). Means come with percentile-bootstrap intervals over games from
//! [`sleuth_game::eval::stats`]; nothing is computed that a game did not measure (a missing value prints
//! "—"). The output is `report.md`, a self-contained `report.html`, one CSV per table and figure, and
//! each figure as PNG and SVG (`docs/report.md`).
//!
//! Building is separate from writing so the numbers can be tested without touching the disk, and so
//! the same [`Report`] feeds Markdown, HTML and CSV alike.

pub mod ablation;
pub mod arms;
pub mod campaign;
pub mod clues;
pub mod csv;
pub mod dataset;
pub mod figures;
mod html;
pub mod humans;
pub mod judges;
pub mod load;
mod markdown;
pub mod metrics;
pub mod mirage;
pub mod papers;
pub mod player;
pub mod plots;
pub mod scripts;
pub mod spend;
pub mod table;
pub mod tables;
pub mod tournament;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub use arms::{Arm, Condition, ConditionInfo, Grouping};
pub use figures::Figure;
pub use load::{load, GameRecord, Loaded, Skipped};
pub use metrics::{Bootstrap, Metric};
pub use table::{Cell, Column, Kind, Table};

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{path}: no result.json found (expected a game directory written by `sleuth play --out`, a run directory holding such directories at any depth, or a result.json file)")]
    NoResults { path: PathBuf },
    #[error("{path}: none of the {count} result.json files could be read; the first: {first}")]
    NoUsableResults {
        path: PathBuf,
        count: usize,
        first: String,
    },
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a sleuth result.json")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path}: line {line} is not a transcript event")]
    Transcript {
        path: PathBuf,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot draw {path}: {message}")]
    Plot { path: PathBuf, message: String },
}

/// One part of the report, in reading order.
#[derive(Debug, Clone, PartialEq)]
pub enum Section {
    Table(Table),
    Figure(Figure),
}

/// A report, built but not written.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The path the games were read from.
    pub source: PathBuf,
    pub grouping: Grouping,
    pub bootstrap: Bootstrap,
    pub sections: Vec<Section>,
    /// Things the reader should know: skipped files, games left out of a figure, repeated seeds.
    pub notes: Vec<String>,
}

impl Report {
    /// Builds every table and figure the games allow. Reads the transcripts of MIRAGE games (for
    /// clue timelines); a transcript that cannot be read is noted and its game left out of what needs
    /// it, not fatal.
    pub fn build(source: &Path, loaded: Loaded, bootstrap: Bootstrap) -> Report {
        let mut notes: Vec<String> = loaded
            .skipped
            .iter()
            .map(|s| format!("Skipped {}: {}", s.path.display(), s.reason))
            .collect();
        let grouping = Grouping::new(loaded.games);
        let mut clues = BTreeMap::new();
        for (i, g) in grouping.games.iter().enumerate() {
            if g.result.mirage.is_none() {
                continue;
            }
            match &g.transcript {
                Some(path) => match clues::Timeline::read(path) {
                    Ok(t) => {
                        clues.insert(i, t);
                    }
                    Err(e) => notes.push(format!(
                        "{}: left out of CIC key and Figure 2: {}",
                        g.path.display(),
                        chain(&e)
                    )),
                },
                None => notes.push(format!(
                    "{}: no {} beside it, so it is left out of CIC key and Figure 2",
                    g.path.display(),
                    load::TRANSCRIPT_FILE
                )),
            }
        }
        let lengths = scripts::ScriptLengths::read(&grouping);
        notes.extend(lengths.notes(&grouping));
        notes.extend(repeated_seeds(&grouping));
        notes.extend(unknown_protocols(&grouping));
        let b = &bootstrap;
        let g = &grouping;
        let mut sections = Vec::new();
        // Each measure once per protocol, the paper's own first (papers.rs says why).
        let per_protocol = |m: papers::Measures| m.protocols().collect::<Vec<_>>();
        for p in per_protocol(papers::Measures::Factual) {
            sections.extend(tables::factual(g, b, p).map(Section::Table));
            sections.extend(ablation::modules(g, b, p).map(Section::Table));
        }
        for p in per_protocol(papers::Measures::Votes) {
            sections.extend(figures::votes(g, b, p).map(Section::Figure));
        }
        for p in per_protocol(papers::Measures::Inferential) {
            sections.extend(figures::inferential(g, b, p).map(Section::Figure));
        }
        for p in per_protocol(papers::Measures::Choice) {
            sections.extend(tables::choice(g, p).map(Section::Table));
            if p == papers::Measures::Choice.paper_protocol() {
                sections.extend(tables::player_table_a4(g, &lengths).map(Section::Table));
            }
        }
        sections.extend(figures::player_figure7(g, b).map(Section::Figure));
        for p in per_protocol(papers::Measures::Cost) {
            sections.extend(tables::cost(g, p, &lengths).map(Section::Table));
        }
        sections.extend(player::sections(g, &lengths));
        player::annotate(&mut sections);
        let t2 = tables::mirage_table2(g, b, &clues);
        let fig2 = figures::mirage_figure2(g, b, &clues);
        let paired = tables::paired(g, b);
        sections.extend(t2.map(Section::Table));
        sections.extend(fig2.map(Section::Figure));
        sections.extend(mirage::sections(g, b, &clues, &mut notes));
        sections.extend(judges::sections(g, b, &mut notes));
        sections.extend(paired.map(Section::Table));
        let tournament = tournament::tables(g, b, &mut notes);
        sections.extend(tournament.into_iter().map(Section::Table));
        sections.push(Section::Table(tables::arms(&grouping)));
        Report {
            source: source.to_path_buf(),
            grouping,
            bootstrap,
            sections,
            notes,
        }
    }

    /// One paragraph: what was read and how intervals are computed.
    pub fn summary(&self) -> String {
        let g = &self.grouping;
        let b = &self.bootstrap;
        format!(
            "Source: {} — {} in {} ({} on {}); repeats are seeds. Intervals: {} percentile \
             bootstrap over games ({} resamples, seed {}).",
            self.source.display(),
            plural(g.games.len(), "game"),
            plural(g.arms.len(), "arm"),
            plural(g.conditions.len(), "condition"),
            plural(g.scripts().len(), "script"),
            tables::level_text(b.level),
            b.resamples,
            b.seed
        )
    }

    /// A table by id.
    pub fn table(&self, id: &str) -> Option<&Table> {
        self.sections.iter().find_map(|s| match s {
            Section::Table(t) if t.id == id => Some(t),
            _ => None,
        })
    }

    /// A figure by id.
    pub fn figure(&self, id: &str) -> Option<&Figure> {
        self.sections.iter().find_map(|s| match s {
            Section::Figure(f) if f.id == id => Some(f),
            _ => None,
        })
    }
}

/// "1 game", "2 games".
fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// Notes for arms where a seed repeats: a rerun of the same game is not an independent repeat.
fn repeated_seeds(g: &Grouping) -> Vec<String> {
    let mut notes = Vec::new();
    for arm in &g.arms {
        let mut seen = BTreeSet::new();
        let mut repeated = BTreeSet::new();
        for r in g.results(&arm.games) {
            if !seen.insert(r.seed) {
                repeated.insert(r.seed);
            }
        }
        if !repeated.is_empty() {
            let seeds: Vec<String> = repeated.iter().map(u64::to_string).collect();
            notes.push(format!(
                "{} · {}: seed {} appears more than once; every copy counts as a repeat (the paired \
                 comparisons use the first)",
                arm.script_label,
                g.conditions[arm.condition].label(),
                seeds.join(", ")
            ));
        }
    }
    notes
}

/// Games of a protocol sleuth does not know (a result from elsewhere): no paper's section can hold
/// them, so they are named rather than silently missing.
fn unknown_protocols(g: &Grouping) -> Vec<String> {
    let mut unknown: BTreeMap<&str, usize> = BTreeMap::new();
    for c in &g.conditions {
        if papers::protocol(&c.key.protocol).is_none() {
            *unknown.entry(c.key.protocol.as_str()).or_default() += c.games.len();
        }
    }
    unknown
        .into_iter()
        .map(|(p, n)| {
            format!(
                "{} of the unknown protocol \"{p}\" appear only in the Arms table and the paired \
                 comparisons: no paper's table or figure holds them",
                plural(n, "game")
            )
        })
        .collect()
}

/// File stems a report may write besides the protocol-scoped sections ([`papers::all_ids`]), so a
/// rewrite removes what no longer applies.
const IDS: [&str; 6] = [
    "arms",
    tables::A4_ID,
    "player_figure7",
    "mirage_table2",
    "mirage_figure2",
    "paired",
];

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub dir: PathBuf,
    pub files: Vec<PathBuf>,
    /// Why PNGs were not drawn, if they were not.
    pub png_skipped: Option<String>,
}

/// The default output directory: `PATH/report/`, or `report/` beside a `result.json` given directly.
pub fn default_out(path: &Path) -> PathBuf {
    if path.is_file() {
        path.parent()
            .map(|p| p.join("report"))
            .unwrap_or_else(|| PathBuf::from("report"))
    } else {
        path.join("report")
    }
}

/// Writes `report.md`, `report.html`, the CSVs and the plots into `out` (created if needed). Files of
/// an earlier report in `out` that this one does not produce are removed, so the folder always
/// matches its `report.md`.
pub fn write(r: &Report, out: &Path) -> Result<Written, ReportError> {
    std::fs::create_dir_all(out).map_err(|source| ReportError::Write {
        path: out.to_path_buf(),
        source,
    })?;
    let mut files = Vec::new();
    let mut rendered = BTreeMap::new();
    let mut notes = r.notes.clone();
    let png_skipped = plots::font().err().map(str::to_string);
    if let Some(why) = &png_skipped {
        notes.push(format!("Figures are SVG only: {why}."));
    }
    for s in &r.sections {
        match s {
            Section::Table(t) => {
                files.push(write_file(out, &format!("{}.csv", t.id), &csv::to_csv(t))?)
            }
            Section::Figure(f) => {
                files.push(write_file(
                    out,
                    &format!("{}.csv", f.id),
                    &csv::to_csv(&f.data()),
                )?);
                let p = plots::render(f, out)?;
                files.push(p.svg_path.clone());
                files.extend(p.png_path.clone());
                rendered.insert(f.id, p);
            }
        }
    }
    files.push(write_file(
        out,
        "report.md",
        &markdown::render(r, &notes, &rendered),
    )?);
    files.push(write_file(
        out,
        "report.html",
        &html::render(r, &notes, &rendered),
    )?);
    for id in IDS
        .into_iter()
        .chain(papers::all_ids())
        .chain(mirage::IDS)
        .chain(judges::IDS)
        .chain(player::IDS)
        .chain(ablation::ids())
        .chain(tournament::IDS)
    {
        for ext in ["csv", "png", "svg"] {
            let stale = out.join(format!("{id}.{ext}"));
            if !files.contains(&stale) && stale.is_file() {
                std::fs::remove_file(&stale).map_err(|source| ReportError::Write {
                    path: stale.clone(),
                    source,
                })?;
            }
        }
    }
    Ok(Written {
        dir: out.to_path_buf(),
        files,
        png_skipped,
    })
}

fn write_file(dir: &Path, name: &str, text: &str) -> Result<PathBuf, ReportError> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|source| ReportError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// Loads, builds and writes in one go: what `sleuth report` does.
pub fn generate(
    path: &Path,
    out: Option<&Path>,
    bootstrap: Bootstrap,
) -> Result<(Report, Written), ReportError> {
    let loaded = load(path)?;
    let mut report = Report::build(path, loaded, bootstrap);
    if let Some(note) = spend::ledger_note(path) {
        report.notes.push(note);
    }
    let humans = human_sections(path, bootstrap.seed, &mut report.notes);
    report.sections.extend(humans);
    let judges = judges::agreement::sections(path, &report.grouping, &mut report.notes);
    report.sections.extend(judges);
    let out = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_out(path));
    let written = write(&report, &out)?;
    Ok((report, written))
}

/// The papers' human figures from the run's annotation campaigns (`docs/humans.md`): ThinkThrice's
/// Appendix A for each *responses* campaign, MIRAGE's Table 7 for each *rankings* campaign with answers.
/// A run without a store or campaigns has none; a campaign whose answers cannot be read is noted.
fn human_sections(path: &Path, seed: u64, notes: &mut Vec<String>) -> Vec<Section> {
    let store = sleuth_store::rundir::RunDir::new(path).store();
    if !path.is_dir() || !store.is_file() {
        return Vec::new();
    }
    let annotations = match sleuth_store::annotations::Annotations::open(&store) {
        Ok(a) => a,
        Err(e) => {
            notes.push(format!("annotation campaigns not read: {}", chain(&e)));
            return Vec::new();
        }
    };
    let campaigns = annotations.campaigns().unwrap_or_else(|e| {
        notes.push(format!("annotation campaigns not read: {}", chain(&e)));
        Vec::new()
    });
    let mut sections = Vec::new();
    for c in campaigns {
        match campaign_table(&annotations, &c, seed) {
            Ok(Some(mut t)) => {
                t.id = format!("{}_{}", t.id, c.id).into();
                t.title = format!("{} (campaign {})", t.title, c.id);
                sections.push(Section::Table(t));
            }
            Ok(None) => {}
            Err(e) => notes.push(format!("campaign {}: {e}", c.id)),
        }
    }
    sections
}

/// One campaign's table, `None` before anyone answered.
fn campaign_table(
    a: &sleuth_store::annotations::Annotations,
    c: &sleuth_store::annotations::CampaignRow,
    seed: u64,
) -> Result<Option<Table>, String> {
    let items: Vec<(u32, serde_json::Value)> = a
        .items(&c.id)
        .map_err(|e| chain(&e))?
        .into_iter()
        .map(|i| (i.item, i.hidden))
        .collect();
    let answers: Vec<(u32, String, serde_json::Value)> = a
        .answers(&c.id)
        .map_err(|e| chain(&e))?
        .into_iter()
        .map(|r| (r.item, r.annotator, r.answer))
        .collect();
    if answers.is_empty() {
        return Ok(None);
    }
    match c.kind.as_str() {
        "responses" => {
            let ratings = humans::response_ratings(&items, &answers).map_err(|e| e.to_string())?;
            Ok(Some(humans::appendix_a_table(&humans::appendix_a(
                &ratings, seed,
            ))))
        }
        "rankings" => {
            let rankings = humans::rankings(&items, &answers).map_err(|e| e.to_string())?;
            Ok(Some(humans::table7_table(&humans::table7(&rankings))))
        }
        other => Err(format!("kind '{other}' is not one this report knows")),
    }
}

/// An error and its causes on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        parts.push(s.to_string());
        source = s.source();
    }
    parts.join(": ")
}
