//! MIRAGE Tables 4 and 5 — ICI and SCI of the same games under different judge models (the paper's
//! Appendix A, "Ablation Study": the evaluation model chosen by how it scores the same play) — and
//! ([`agreement`]) the agreement of every judge model with the annotators of a *rankings* campaign.
//!
//! **The same games.** A judge's scores can only be compared with another's when both read the same
//! play. A *play* ([`Play`]) is what a game is apart from its judge: its script (title and digest),
//! its seed, and its condition with the judge settings taken out. A sweep with `judge_model` as an
//! axis plays each play once per judge, and its cache makes every copy after the first a replay
//! (only the judge's calls differ, so the play's calls have the same keys: `docs/sweeps.md`). Without
//! the cache a live model would play each copy afresh, and the judges would score different games;
//! so the report does not take "same play" on trust: it compares the copies' transcripts, every event
//! before the evaluation with its time and usage left out ([`gameplay_fingerprint`]), and a play
//! whose copies differ is left out of the comparison and named in a note.
//!
//! **Matched plays.** A row of Table 4 or 5 (one agents' condition: model, framework, settings) counts
//! the plays that every judge of that row scored, so each column averages over the same games and
//! the columns differ only by their judge. Plays a judge has not scored (a sweep still running) are
//! left out and counted in a note. Means come with the report's bootstrap intervals over plays.

pub mod agreement;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;
use sleuth_game::eval::stats::Interval;
use sleuth_game::game::{GameResult, MirageScores, Protocol};

use crate::arms::{script_digest, Condition, Grouping};
use crate::humans::Metric;
use crate::load::for_each_event;
use crate::metrics::Bootstrap;
use crate::mirage::published::paper_model;
use crate::mirage::{printed, published_label, shown};
use crate::table::{Cell, Column, Kind, Table};
use crate::{ReportError, Section};

/// File stem of Table 4 (ICI per judge).
pub const TABLE4_ID: &str = "mirage_table4";
/// File stem of Table 5 (SCI per judge).
pub const TABLE5_ID: &str = "mirage_table5";
/// File stems of the sections built here once per report, so a rewrite removes what no longer
/// applies.
pub const IDS: [&str; 2] = [TABLE4_ID, TABLE5_ID];

/// The judges (evaluation models) of MIRAGE Tables 4 and 5, in the paper's column order.
pub const PAPER_JUDGES: [&str; 3] = ["GPT-4", "GPT-4-Turbo", "GPT-4o"];

/// MIRAGE Table 4 (Appendix A, "Average ICI on different evaluation models"), as printed: the
/// agents' model, then its average ICI under each judge of [`PAPER_JUDGES`]. (The paper's "GPT-40"
/// is GPT-4o.)
pub const PUBLISHED_TABLE4: [(&str, [f64; 3]); 3] = [
    ("GPT-3.5", [67.97, 70.06, 51.61]),
    ("GPT-4", [60.73, 76.54, 66.90]),
    ("GPT-4o", [62.78, 76.80, 61.92]),
];

/// MIRAGE Table 5 (Appendix A, "Average SCI on different evaluation models"), laid out as
/// [`PUBLISHED_TABLE4`].
pub const PUBLISHED_TABLE5: [(&str, [f64; 3]); 3] = [
    ("GPT-3.5", [48.21, 49.10, 38.46]),
    ("GPT-4", [40.60, 50.42, 44.46]),
    ("GPT-4o", [42.12, 51.29, 42.43]),
];

/// The judge model of MIRAGE's ICI and SCI in a game: `judges.mirage` is `llm:MODEL` when an LLM
/// judged; `None` without one (ICI and SCI were not computed).
pub fn mirage_judge(r: &GameResult) -> Option<&str> {
    r.judges.get("mirage")?.strip_prefix("llm:")
}

/// A condition with its judges taken out: how the agents played, whoever judged.
pub fn without_judges(c: &Condition) -> Condition {
    let mut c = c.clone();
    c.settings.retain(|(k, _)| !k.starts_with("judge_"));
    c
}

/// A game apart from its judge: copies of one play under different judges are the same game when
/// their gameplay is (module documentation).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Play {
    pub condition: Condition,
    pub script: String,
    pub digest: Option<String>,
    pub seed: u64,
}

/// MIRAGE games with an LLM judge, by play and judge.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Judged {
    /// Every judge model, by name.
    pub judges: BTreeSet<String>,
    /// Play → judge → the game (index into [`Grouping::games`]); a repeated copy (the same play and
    /// judge twice) keeps the first in path order.
    pub plays: BTreeMap<Play, BTreeMap<String, usize>>,
    /// The play of each game here.
    pub play_of: BTreeMap<usize, Play>,
}

impl Judged {
    /// The MIRAGE games of `g` an LLM judge scored, grouped by play.
    pub fn new(g: &Grouping) -> Judged {
        let mut j = Judged::default();
        for c in &g.conditions {
            if c.key.protocol != Protocol::Mirage.as_str() {
                continue;
            }
            let agents = without_judges(&c.key);
            for &gi in &c.games {
                let record = &g.games[gi];
                let Some(judge) = mirage_judge(&record.result) else {
                    continue;
                };
                let play = Play {
                    condition: agents.clone(),
                    script: record.result.script.clone(),
                    digest: script_digest(record).map(str::to_string),
                    seed: record.result.seed,
                };
                j.judges.insert(judge.to_string());
                let copies = j.plays.entry(play.clone()).or_default();
                copies.entry(judge.to_string()).or_insert(gi);
                j.play_of.insert(gi, play);
            }
        }
        j
    }
}

/// A fingerprint of a game's play from its transcript: every event before the evaluation stage,
/// without its time (the one field a replay changes) and usage (a cache hit may cost nothing where
/// the live call was billed). Equal fingerprints, equal gameplay.
pub fn gameplay_fingerprint(transcript: &Path) -> Result<u128, ReportError> {
    let mut keys: Vec<u8> = Vec::new();
    for_each_event(transcript, |mut e: Value| {
        if e.get("stage").and_then(Value::as_str) == Some("evaluation") {
            return;
        }
        if let Some(o) = e.as_object_mut() {
            o.remove("ts");
            o.remove("usage");
        }
        let key = sleuth_base::memo::key(e.to_string().as_bytes());
        keys.extend_from_slice(&key.to_le_bytes());
    })?;
    Ok(sleuth_base::memo::key(&keys))
}

/// The plays among `plays` whose copies all have the same gameplay, from their transcripts. A play
/// with one copy is trivially the same; a copy without a readable transcript cannot be checked, and
/// its play is left out with a note, as is a play whose copies differ.
pub fn same_plays<'a>(
    g: &Grouping,
    j: &Judged,
    plays: impl IntoIterator<Item = &'a Play>,
    notes: &mut Vec<String>,
) -> BTreeSet<Play> {
    let mut same = BTreeSet::new();
    for play in plays {
        let Some(copies) = j.plays.get(play) else {
            continue;
        };
        if copies.len() < 2 {
            same.insert(play.clone());
            continue;
        }
        let mut prints = BTreeSet::new();
        let mut unreadable = None;
        for &gi in copies.values() {
            let record = &g.games[gi];
            let print = match &record.transcript {
                Some(path) => gameplay_fingerprint(path).map_err(|e| crate::chain(&e)),
                None => Err(format!("no {} beside it", crate::load::TRANSCRIPT_FILE)),
            };
            match print {
                Ok(p) => {
                    prints.insert(p);
                }
                Err(e) => unreadable = Some(format!("{}: {e}", record.path.display())),
            }
        }
        let what = format!("{} seed {}", play.script, play.seed);
        let judges: Vec<&str> = copies.keys().map(String::as_str).collect();
        if let Some(why) = unreadable {
            notes.push(format!(
                "{what}: its copies under the judges {} could not be compared ({why}), so it is \
                 left out of the judges' comparison",
                judges.join(", ")
            ));
        } else if prints.len() > 1 {
            notes.push(format!(
                "{what}: played differently under the judges {} (their transcripts differ before \
                 the evaluation: without the sweep's cache a live model plays each copy afresh), so \
                 it is left out of the judges' comparison",
                judges.join(", ")
            ));
        } else {
            same.insert(play.clone());
        }
    }
    same
}

/// One row of Tables 4 and 5: an agents' condition, over the plays every judge of the row scored.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeRow {
    /// The agents' model, and the rest of the condition as the report labels it (judges aside).
    pub model: String,
    pub method: String,
    /// Matched plays: scored by every judge of the row, with the same gameplay.
    pub plays: usize,
    /// Per judge of [`JudgeTables::judges`]: mean ICI and SCI over the matched plays, `None` for a
    /// judge that scored none of this row's plays.
    pub ici: Vec<Option<Interval>>,
    pub sci: Vec<Option<Interval>>,
}

/// Tables 4 and 5 before they are laid out.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeTables {
    /// The run's judge models, by name: one column each.
    pub judges: Vec<String>,
    pub rows: Vec<JudgeRow>,
}

/// A judged game's score on `metric`.
fn score(s: &MirageScores, metric: Metric) -> Option<f64> {
    match metric {
        Metric::Ici => s.ici,
        Metric::Sci => s.sci,
    }
}

/// Tables 4 and 5 from the plays of `j` found the same (`same`), one row per agents' condition in
/// the report's order; `None` when the run has fewer than two judges (nothing to compare). Plays left
/// out because a judge of their row had not scored them are counted in `notes`.
pub fn compare(
    g: &Grouping,
    j: &Judged,
    same: &BTreeSet<Play>,
    b: &Bootstrap,
    notes: &mut Vec<String>,
) -> Option<JudgeTables> {
    if j.judges.len() < 2 {
        return None;
    }
    let judges: Vec<String> = j.judges.iter().cloned().collect();
    let mut order: Vec<Condition> = Vec::new();
    let mut labels: BTreeMap<Condition, (String, String)> = BTreeMap::new();
    for c in &g.conditions {
        let agents = without_judges(&c.key);
        if !j.plays.keys().any(|p| p.condition == agents) || labels.contains_key(&agents) {
            continue;
        }
        let parts = c.parts.iter().filter(|p| !p.protocol && !p.model);
        let judge = |p: &&crate::arms::LabelPart| {
            p.setting
                .as_deref()
                .is_some_and(|s| s.starts_with("judge_"))
        };
        let method: Vec<&str> = parts
            .filter(|p| !judge(p))
            .map(|p| p.text.as_str())
            .collect();
        labels.insert(agents.clone(), (c.key.model.clone(), method.join(" · ")));
        order.push(agents);
    }
    let mut rows = Vec::new();
    for agents in order {
        let plays: Vec<(&Play, &BTreeMap<String, usize>)> = j
            .plays
            .iter()
            .filter(|(p, _)| p.condition == agents)
            .collect();
        let row_judges: BTreeSet<&String> = plays.iter().flat_map(|(_, c)| c.keys()).collect();
        let scored = |gi: usize| g.games[gi].result.mirage_scores.as_ref();
        let complete = |c: &BTreeMap<String, usize>| {
            row_judges
                .iter()
                .all(|k| c.get(*k).is_some_and(|&gi| scored(gi).is_some()))
        };
        let matched: Vec<&BTreeMap<String, usize>> = plays
            .iter()
            .filter(|(p, c)| same.contains(*p) && complete(c))
            .map(|(_, c)| *c)
            .collect();
        let (model, method) = labels.remove(&agents).unwrap_or_default();
        let missing = plays.iter().filter(|(_, c)| !complete(c)).count();
        if missing > 0 {
            notes.push(format!(
                "MIRAGE Tables 4 and 5, {model} · {method}: {missing} play(s) left out, not scored \
                 by every judge of the row ({})",
                row_judges.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
        if matched.is_empty() {
            continue;
        }
        let column = |metric: Metric| -> Vec<Option<Interval>> {
            let per_judge = |judge: &String| {
                if !row_judges.contains(judge) {
                    return None;
                }
                let values: Vec<f64> = matched
                    .iter()
                    .filter_map(|c| score(scored(*c.get(judge)?)?, metric))
                    .collect();
                b.mean(&values)
            };
            judges.iter().map(per_judge).collect()
        };
        rows.push(JudgeRow {
            model,
            method,
            plays: matched.len(),
            ici: column(Metric::Ici),
            sci: column(Metric::Sci),
        });
    }
    (!rows.is_empty()).then_some(JudgeTables { judges, rows })
}

/// A judge column's CSV field: `judge_` and the name in lower-case letters, digits and `_`.
fn field(judge: &str) -> String {
    let safe = |c: char| {
        if c.is_ascii_alphanumeric() {
            c.to_ascii_lowercase()
        } else {
            '_'
        }
    };
    format!("judge_{}", judge.chars().map(safe).collect::<String>())
}

/// Table 4 (`metric` ICI) or Table 5 (SCI): a row per agents' condition, a column per judge of the
/// run, then the paper's judges the run lacks; the paper's rows below ([`shown`]: those of the
/// agents' models the games ran on, or all), each printed value in the column of its judge (a run's
/// judge by the paper's name or version, Table 8).
pub fn judges_table(t: &JudgeTables, metric: Metric) -> Table {
    let (id, number, published) = match metric {
        Metric::Ici => (TABLE4_ID, 4, &PUBLISHED_TABLE4),
        Metric::Sci => (TABLE5_ID, 5, &PUBLISHED_TABLE5),
    };
    let name = metric.names().1;
    let mut columns = vec![
        Column::new("Model", "model", Kind::Text),
        Column::new("Method", "method", Kind::Text),
        Column::new("Games", "games", Kind::Number(0)),
    ];
    // Each column with the paper's judge it stands for, if any.
    let mut paper_of: Vec<Option<usize>> = Vec::new();
    for judge in &t.judges {
        columns.push(Column::new(
            &format!("Judge {judge}"),
            &field(judge),
            Kind::MeanCi(2),
        ));
        paper_of.push(paper_model(judge).and_then(|p| PAPER_JUDGES.iter().position(|x| *x == p)));
    }
    for (k, paper) in PAPER_JUDGES.iter().enumerate() {
        if !paper_of.contains(&Some(k)) {
            let heading = format!("Judge {paper} (paper)");
            columns.push(Column::new(&heading, &field(paper), Kind::MeanCi(2)));
            paper_of.push(Some(k));
        }
    }
    let title = format!("MIRAGE Table {number} — average {name} under each judge model");
    let mut table = Table::new(id, &title, columns);
    table.note = format!(
        "Mean {name} (0–100) of the same games under each judge model (MIRAGE Appendix A): a row is \
         an agents' condition; Games counts the plays every judge of the row scored with the same \
         gameplay (identical transcripts before the evaluation), and each judge's column averages \
         over exactly those, with percentile bootstrap intervals over games. Rows \"Published: \
         MODEL\" are MIRAGE's Table {number} as printed (judges {}), each value in its judge's \
         column: a run's judge by the paper's name or version (Table 8), else a column of its own \
         marked (paper). They show the models these games ran on, or all three when the games ran \
         on none of them.",
        PAPER_JUDGES.join(", ")
    );
    let extra = paper_of.len() - t.judges.len();
    for r in &t.rows {
        let mut cells = vec![
            Cell::Text(r.model.clone()),
            Cell::Text(r.method.clone()),
            Cell::Number(Some(r.plays as f64)),
        ];
        let values = if metric == Metric::Ici {
            &r.ici
        } else {
            &r.sci
        };
        cells.extend(values.iter().map(|v| Cell::MeanCi(*v)));
        cells.extend((0..extra).map(|_| Cell::MeanCi(None)));
        table.push(cells, false);
    }
    let names: Vec<&str> = published.iter().map(|(m, _)| *m).collect();
    for model in shown(&names, t.rows.iter().map(|r| r.model.as_str())) {
        let Some((_, values)) = published.iter().find(|(m, _)| *m == model) else {
            continue;
        };
        let mut cells = vec![
            Cell::Text(published_label(model)),
            Cell::Text(String::new()),
            Cell::Number(None),
        ];
        let value = |k: &Option<usize>| Cell::MeanCi(k.map(|k| printed(values[k])));
        cells.extend(paper_of.iter().map(value));
        table.push(cells, false);
    }
    table
}

/// Tables 4 and 5 when the run's MIRAGE games were scored by two or more judge models, and the notes
/// they need (plays left out). Reads the transcripts of plays with several copies.
pub fn sections(g: &Grouping, b: &Bootstrap, notes: &mut Vec<String>) -> Vec<Section> {
    let j = Judged::new(g);
    if j.judges.len() < 2 {
        return Vec::new();
    }
    let same = same_plays(g, &j, j.plays.keys(), notes);
    let Some(t) = compare(g, &j, &same, b, notes) else {
        return Vec::new();
    };
    [Metric::Ici, Metric::Sci]
        .map(|m| Section::Table(judges_table(&t, m)))
        .into()
}
