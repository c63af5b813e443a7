//! MIRAGE Tables 12–19: per character of each script, TII, ICI, SCI and the judge's sub-scores — RP
//! (role-playing, SCI's judged half) and RA, CC, DO, CT (reasoning and analysis, communication and
//! cooperation, detail observation, creative thinking: ICI's four abilities) — each a mean over the
//! arm's games with its bootstrap interval, and the paper's rows of that character beside them. The
//! paper gives each script a table of its own (Table 6's catalogue: SOC Table 12 … MUO Table 19); here
//! they are one table with a Script column, and Type names the paper's table.

use std::collections::{BTreeMap, BTreeSet};

use super::categories::Categories;
use super::published::{title_key, CharacterRow, CHARACTERS, TABLE11_MODELS};
use super::table11::ordered_arms;
use super::{mirage_conditions, published_label, published_note, published_row, shown};
use crate::arms::{Arm, Grouping};
use crate::metrics::Bootstrap;
use crate::table::{Cell, Column, Kind, Table};
use crate::tables::level_text;
use sleuth_game::eval::formulas;
use sleuth_game::game::{GameResult, MirageCharacterScores};

/// File stem.
pub const ID: &str = "mirage_tables12_19";

/// A character's measure in one game: the result's per-character scores, and the character's name
/// for TII (computed from the raw trust and suspicion scores).
type Measure = fn(&GameResult, &str) -> Option<f64>;

/// A published row's value of a measure.
type Printed = fn(&CharacterRow) -> Option<f64>;

/// The columns after Games: heading, CSV field, how a game gives it, and the published row's value.
const MEASURES: [(&str, &str, Measure, Printed); 8] = [
    ("TII (suspicion share)", "tii_suspicion_share", tii, |r| {
        r.tii
    }),
    ("ICI", "ici", |r, c| scores(r, c)?.ici, |r| r.ici),
    ("SCI", "sci", |r, c| scores(r, c)?.sci, |r| r.sci),
    ("RP", "rp", |r, c| scores(r, c)?.role_play, |r| Some(r.rp)),
    ("RA", "ra", |r, c| ability(r, c, 0), |r| Some(r.ra)),
    ("CC", "cc", |r, c| ability(r, c, 1), |r| Some(r.cc)),
    ("DO", "do", |r, c| ability(r, c, 2), |r| Some(r.do_)),
    ("CT", "ct", |r, c| ability(r, c, 3), |r| Some(r.ct)),
];

fn scores<'a>(r: &'a GameResult, character: &str) -> Option<&'a MirageCharacterScores> {
    r.mirage_scores.as_ref()?.characters.get(character)
}

fn ability(r: &GameResult, character: &str, i: usize) -> Option<f64> {
    scores(r, character)?.abilities.map(|a| a[i])
}

/// The suspicion share of the scores the others gave `character`, ×100 (Table 2's TII, per
/// character), from the raw scores so results of any age give it.
fn tii(r: &GameResult, character: &str) -> Option<f64> {
    let m = r.mirage.as_ref()?;
    formulas::tii_suspicion_share(&m.trust_sums(), &m.suspicion_sums(), character)
        .map(|x| x * 100.0)
}

/// The characters a game measured anything of: judged, or scored by another character.
fn characters_of(r: &GameResult) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = r
        .mirage_scores
        .iter()
        .flat_map(|s| s.characters.keys().cloned())
        .collect();
    if let Some(m) = &r.mirage {
        for (scorer, row) in m.trust.iter().chain(&m.suspicion) {
            out.extend(row.keys().filter(|s| *s != scorer).cloned());
        }
    }
    out
}

/// MIRAGE Tables 12–19 from the MIRAGE protocol's games that measured a character; `None` without.
pub fn characters(g: &Grouping, boot: &Bootstrap, cats: &Categories) -> Option<Table> {
    let arms = ordered_arms(g, cats);
    let mut columns = vec![
        Column::new("Script", "script", Kind::Text),
        Column::new("Type", "type", Kind::Text),
        Column::new("Character", "character", Kind::Text),
        Column::new("Model", "model", Kind::Text),
        Column::new("Games", "games", Kind::Number(0)),
    ];
    for (heading, field, _, _) in MEASURES {
        columns.push(Column::new(heading, field, Kind::MeanCi(2)));
    }
    let mut t = Table::new(ID, "MIRAGE Tables 12–19 — results per character", columns);
    t.note = format!(
        "Games played under the mirage protocol, one row per character × script × condition, each \
         value the mean over the arm's games with its {} bootstrap interval over games. TII: the \
         suspicion share of the scores the other characters gave this one, ×100 (Table 2's TII before \
         it is averaged over characters). ICI and SCI (0-100) and the judge's sub-scores (0-20) as the \
         games recorded them per character (result.json's mirage_scores.characters): RP role-playing \
         (SCI is the mean of RP×5 and the ROUGE-L of the script the judge reconstructed), RA reasoning \
         and analysis, CC communication and cooperation, DO detail observation, CT creative thinking \
         (ICI is their sum ×100/80). — where no game did (a game without a judge; a character nobody \
         scored). Type: the script's MIRAGE Table 1 type, whose detail table in the paper is SOC Table \
         12, SOO 13, SUC 14, SUO 15, MOC 16, MOO 17, MUC 18, MUO 19 (its Table 6). Characters of the \
         MIRAGE set follow the paper's order, others by name. The paper's Table 12 prints its ICI and \
         SCI headings the wrong way round; its rows here have them under their true names. {}",
        level_text(boot.level),
        published_note("MIRAGE Tables 12–19")
    );
    let models = shown(
        &TABLE11_MODELS,
        mirage_conditions(g).map(|(_, c)| c.key.model.as_str()),
    );
    let mut i = 0;
    while i < arms.len() {
        let script = (&arms[i].script, &arms[i].digest);
        let j = (i..arms.len())
            .find(|&j| (&arms[j].script, &arms[j].digest) != script)
            .unwrap_or(arms.len());
        let known = cats.get(&arms[i].script, arms[i].digest.as_deref());
        let paper = known
            .paper
            .map(|(place, _)| CHARACTERS[place])
            .unwrap_or(&[]);
        let group: &[&Arm] = &arms[i..j];
        let mut names: Vec<String> = group
            .iter()
            .flat_map(|a| g.results(&a.games).flat_map(characters_of))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let place = |name: &str| {
            paper
                .iter()
                .position(|c| title_key(c.name) == title_key(name))
                .unwrap_or(usize::MAX)
        };
        names.sort_by_key(|n| place(n));
        for name in &names {
            for arm in group {
                let mut cells = vec![
                    Cell::Text(arm.script_label.clone()),
                    Cell::Text(known.code()),
                    Cell::Text(name.clone()),
                    Cell::Text(g.conditions[arm.condition].method()),
                    Cell::Number(Some(arm.games.len() as f64)),
                ];
                for (_, _, of, _) in MEASURES {
                    let xs: Vec<f64> = g.results(&arm.games).filter_map(|r| of(r, name)).collect();
                    cells.push(Cell::MeanCi(boot.mean(&xs)));
                }
                t.push(cells, false);
            }
            let Some(character) = paper.get(place(name)) else {
                continue;
            };
            for model in &models {
                let Some(m) = TABLE11_MODELS.iter().position(|x| x == model) else {
                    continue;
                };
                let row = character.rows[m];
                let values: BTreeMap<&str, Option<f64>> =
                    MEASURES.iter().map(|(h, _, _, p)| (*h, p(&row))).collect();
                let cells = published_row(
                    &t,
                    &[
                        ("Script", Cell::Text(group[0].script_label.clone())),
                        ("Type", Cell::Text(known.code())),
                        ("Character", Cell::Text(name.clone())),
                        ("Model", Cell::Text(published_label(model))),
                        ("Games", Cell::Number(Some(1.0))),
                    ],
                    &|h| values.get(h).copied().flatten(),
                );
                t.push(cells, false);
            }
        }
        i = j;
    }
    (!t.rows.is_empty()).then_some(t)
}
