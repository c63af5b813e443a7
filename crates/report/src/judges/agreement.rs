//! Every judge model against the annotators: for the games of a *rankings* campaign, Kendall's τ-b
//! between each annotator's order of the characters and each judge model's ICI and SCI of the same
//! game — MIRAGE Table 7 (`humans::table7`) once per judge, in one table, so a judge that disagrees
//! with people stands out beside one that agrees.
//!
//! A campaign's items carry the scores of the judge that scored the drawn game; the other judges'
//! scores come from the copies of that game's play under them ([`super::Judged`]), and count only when
//! the copy's gameplay is the ranked game's (identical transcripts before the evaluation,
//! [`super::same_plays`]): people ranked the characters of one play, and a judge's scores of another
//! play say nothing about agreeing with them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::{mirage_judge, same_plays, Judged, Play};
use crate::arms::Grouping;
use crate::humans::{self, Metric, Ranking, Table7Row};
use crate::mirage::published::paper_model;
use crate::table::{Cell, Column, Kind, Table};
use crate::Section;

/// File stem of the agreement table; a campaign's table adds `_` and the campaign's id.
pub const AGREEMENT_ID: &str = "mirage_judges_agreement";

/// The judge (evaluation model) MIRAGE's Table 7 rests on: the one its Appendix A settles on after
/// Tables 4 and 5. Its published τ is shown beside rows of that judge only.
pub const TABLE7_JUDGE: &str = "GPT-4-Turbo";

/// One row: a judge model, and Table 7's row (model × metric) against that judge's scores.
#[derive(Debug, Clone, PartialEq)]
pub struct AgreementRow {
    pub judge: String,
    pub row: Table7Row,
}

/// What could not be compared, for the table's note.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unmatched {
    /// Rankings whose game is not among the games the report read.
    pub games_missing: usize,
    /// (Ranking, judge) pairs left out because that judge's copy was played differently.
    pub played_differently: usize,
    /// (Ranking, judge) pairs left out because that judge did not score a ranked character.
    pub unscored: usize,
}

/// The judged games by `game_id` (a campaign's items name their game by it); of two games with one
/// id, the first in path order.
fn by_game_id<'a>(g: &'a Grouping, j: &Judged) -> BTreeMap<&'a str, usize> {
    let ids = j.play_of.keys().rev();
    ids.map(|&gi| (g.games[gi].result.game_id.as_str(), gi))
        .collect()
}

/// A judge's score of each character of `order` on `metric`, from its copy's result.
fn scores_of(
    g: &Grouping,
    gi: usize,
    order: &[String],
    metric: Metric,
) -> Option<Vec<(String, f64)>> {
    let scores = g.games[gi].result.mirage_scores.as_ref()?;
    let one = |c: &String| {
        let s = scores.characters.get(c)?;
        let v = if metric == Metric::Ici { s.ici } else { s.sci };
        Some((c.clone(), v?))
    };
    order.iter().map(one).collect()
}

/// Every judge's agreement with `rankings`: per judge (by name), `humans::table7` of the rankings
/// re-scored with that judge's scores of the same play. `same` holds the plays whose copies share
/// their gameplay; a ranked game's own scores always count.
pub fn agreement(
    g: &Grouping,
    j: &Judged,
    same: &BTreeSet<Play>,
    rankings: &[Ranking],
) -> (Vec<AgreementRow>, Unmatched) {
    let by_id = by_game_id(g, j);
    let mut per_judge: BTreeMap<&str, Vec<Ranking>> = BTreeMap::new();
    let mut unmatched = Unmatched::default();
    for r in rankings {
        let Some((&gi, play)) = by_id
            .get(r.game.as_str())
            .and_then(|gi| j.play_of.get_key_value(gi))
        else {
            unmatched.games_missing += 1;
            continue;
        };
        let copies = j.plays.get(play).into_iter().flatten();
        let own = mirage_judge(&g.games[gi].result);
        for (judge, &copy) in copies {
            let copy = if own == Some(judge.as_str()) {
                gi
            } else {
                copy
            };
            if copy != gi && !same.contains(play) {
                unmatched.played_differently += 1;
                continue;
            }
            let Some(judge_scores) = scores_of(g, copy, &r.order, r.metric) else {
                unmatched.unscored += 1;
                continue;
            };
            let judge = judge.as_str();
            let rescored = Ranking {
                judge: judge.to_string(),
                judge_scores,
                ..r.clone()
            };
            per_judge.entry(judge).or_default().push(rescored);
        }
    }
    let mut rows = Vec::new();
    for (judge, rankings) in per_judge {
        let table7 = paper_model(judge) == Some(TABLE7_JUDGE);
        for mut row in humans::table7(&rankings) {
            row.published = row.published.filter(|_| table7);
            let judge = judge.to_string();
            rows.push(AgreementRow { judge, row });
        }
    }
    (rows, unmatched)
}

/// The agreement table of a campaign: a row per judge × agents' model × metric.
pub fn agreement_table(rows: &[AgreementRow], unmatched: &Unmatched) -> Table {
    let column = |(h, f, kind): (&str, &str, Kind)| Column::new(h, f, kind);
    let (text, number) = (Kind::Text, Kind::Number(0));
    let columns = [
        ("Judge", "judge", text),
        ("Model", "model", text),
        ("Metric", "metric", text),
        ("Games", "games", number),
        ("Rankings", "rankings", number),
        ("Skipped", "skipped", number),
        ("Mean τ-b", "mean_tau_b", Kind::Number(3)),
        ("MIRAGE (published)", "published_tau", Kind::Number(3)),
    ];
    let title = "MIRAGE — every judge model against the annotators";
    let mut t = Table::new(AGREEMENT_ID, title, columns.map(column).into());
    let Unmatched {
        games_missing,
        played_differently,
        unscored,
    } = unmatched;
    t.note = format!(
        "Per judge model (the model that scored ICI and SCI) and agents' model: the mean over \
         rankings (annotator × game) of Kendall's τ-b between the annotator's order of the \
         characters and that judge's scores of the same game — MIRAGE Table 7 once per judge. A \
         judge's scores count when its copy of the ranked game has the same gameplay (identical \
         transcripts before the evaluation: docs/humans.md). Skipped: the judge's scores all tie. \
         MIRAGE (published): its Table 7, beside rows of its judge {TABLE7_JUDGE} only (the \
         evaluation model its Appendix A chose), same agents' model. Left out: {games_missing} \
         ranking(s) of games not read, {played_differently} judge copies played differently, \
         {unscored} judge copies missing a score."
    );
    for r in rows {
        let row = &r.row;
        let names = [
            r.judge.clone(),
            row.model.clone(),
            row.metric.names().1.into(),
        ];
        let counts = [row.games, row.rankings, row.skipped].map(|n| Cell::Number(Some(n as f64)));
        let taus = [row.mean_tau, row.published].map(Cell::Number);
        let cells = names.map(Cell::Text).into_iter().chain(counts).chain(taus);
        t.push(cells.collect(), false);
    }
    t
}

/// The agreement table of every *rankings* campaign of the run at `path` that has answers and whose
/// games two or more judge models scored. A campaign that cannot be read is noted (the Table 7 code
/// notes it too; this note says which table is missing).
pub fn sections(path: &Path, g: &Grouping, notes: &mut Vec<String>) -> Vec<Section> {
    let store = sleuth_store::rundir::RunDir::new(path).store();
    if !path.is_dir() || !store.is_file() {
        return Vec::new();
    }
    let j = Judged::new(g);
    if j.judges.len() < 2 {
        return Vec::new();
    }
    let Ok(annotations) = sleuth_store::annotations::Annotations::open(&store) else {
        return Vec::new();
    };
    let campaigns = annotations.campaigns().unwrap_or_default();
    let mut sections = Vec::new();
    for c in campaigns.iter().filter(|c| c.kind == "rankings") {
        let rankings = match campaign_rankings(&annotations, &c.id) {
            Ok(r) if r.is_empty() => continue,
            Ok(r) => r,
            Err(e) => {
                notes.push(format!(
                    "campaign {}: no judges' agreement table: {e}",
                    c.id
                ));
                continue;
            }
        };
        let by_id = by_game_id(g, &j);
        let ranked: BTreeSet<&Play> = rankings
            .iter()
            .filter_map(|r| j.play_of.get(by_id.get(r.game.as_str())?))
            .collect();
        // Plays that differ are counted in the table's note; the report's notes name them already
        // (Tables 4 and 5).
        let same = same_plays(g, &j, ranked, &mut Vec::new());
        let (rows, unmatched) = agreement(g, &j, &same, &rankings);
        let judges: BTreeSet<&str> = rows.iter().map(|r| r.judge.as_str()).collect();
        if judges.len() < 2 {
            continue;
        }
        let mut t = agreement_table(&rows, &unmatched);
        t.id = format!("{AGREEMENT_ID}_{}", c.id).into();
        t.title = format!("{} (campaign {})", t.title, c.id);
        sections.push(Section::Table(t));
    }
    sections
}

/// A campaign's rankings, read as Table 7 reads them.
fn campaign_rankings(
    a: &sleuth_store::annotations::Annotations,
    id: &str,
) -> Result<Vec<Ranking>, String> {
    let items: Vec<(u32, Value)> = a
        .items(id)
        .map_err(|e| crate::chain(&e))?
        .into_iter()
        .map(|i| (i.item, i.hidden))
        .collect();
    let answers: Vec<(u32, String, Value)> = a
        .answers(id)
        .map_err(|e| crate::chain(&e))?
        .into_iter()
        .map(|r| (r.item, r.annotator, r.answer))
        .collect();
    humans::rankings(&items, &answers).map_err(|e| e.to_string())
}
