//! MIRAGE Table 11: Table 2's measures per script × condition — the per-script rows Table 2 pools —
//! each a mean over the arm's games with its bootstrap interval over games, and the paper's rows of
//! that script beside them.

use std::collections::BTreeMap;

use super::categories::Categories;
use super::published::{self, TABLE11, TABLE11_MODELS};
use super::{mirage_conditions, published_label, published_note, published_row, shown};
use crate::arms::{Arm, Grouping};
use crate::clues::Timeline;
use crate::metrics::{Bootstrap, Metric};
use crate::table::{Cell, Column, Kind, Table};
use crate::tables::level_text;
use sleuth_game::eval::formulas;
use sleuth_game::eval::stats;
use sleuth_game::game::GameResult;

/// File stem.
pub const ID: &str = "mirage_table11";

/// The arms of MIRAGE conditions in the paper's script order (Table 1; scripts outside the set after
/// it, by name), then the report's condition order.
pub fn ordered_arms<'a>(g: &'a Grouping, cats: &Categories) -> Vec<&'a Arm> {
    let mirage: Vec<usize> = mirage_conditions(g).map(|(ci, _)| ci).collect();
    let mut arms: Vec<&Arm> = g
        .arms
        .iter()
        .filter(|a| mirage.contains(&a.condition))
        .collect();
    arms.sort_by_key(|a| {
        let place = cats
            .get(&a.script, a.digest.as_deref())
            .paper
            .map_or(usize::MAX, |(i, _)| i);
        (place, a.script_label.clone(), a.condition)
    });
    arms
}

/// MIRAGE Table 11 from the MIRAGE protocol's games; `None` without any.
pub fn table11(
    g: &Grouping,
    boot: &Bootstrap,
    clues: &BTreeMap<usize, Timeline>,
    cats: &Categories,
) -> Option<Table> {
    let arms = ordered_arms(g, cats);
    if arms.is_empty() {
        return None;
    }
    let mut t = Table::new(
        ID,
        "MIRAGE Table 11 — results per script",
        [
            Column::new("Script", "script", Kind::Text),
            Column::new("Type", "type", Kind::Text),
            Column::new("Model", "model", Kind::Text),
            Column::new("Games", "games", Kind::Number(0)),
        ]
        .into_iter()
        .chain(crate::tables::summary_columns())
        .collect(),
    );
    t.note = format!(
        "Games played under the mirage protocol, one row per script × condition: Table 2's measures \
         (its note says what each is) before they are pooled over scripts, each the mean over the \
         arm's games with its {} bootstrap interval over games. Type: the script's MIRAGE Table 1 \
         type (Single/Multi, Orthodox/Unorthodox, Close/Open: SOC … MUO), empty for a script outside \
         the MIRAGE set. CIC: clues investigated by all characters / the script's clues, ×100. The \
         paper's Table 11 prints a script's CIC over the clues of all eight scripts ({} — its per-script \
         values add up to Table 2's); its rows here give the same clues over the script's own (Table \
         1's #Clues), so the two read alike. {}",
        level_text(boot.level),
        published::all_clues(),
        published_note("MIRAGE Table 11")
    );
    let models = shown(
        &TABLE11_MODELS,
        mirage_conditions(g).map(|(_, c)| c.key.model.as_str()),
    );
    let result = |gi: usize| &g.games[gi].result;
    let mut i = 0;
    while i < arms.len() {
        // The arms of one script version, then the paper's rows of it.
        let script = (&arms[i].script, &arms[i].digest);
        let j = (i..arms.len())
            .find(|&j| (&arms[j].script, &arms[j].digest) != script)
            .unwrap_or(arms.len());
        let known = cats.get(&arms[i].script, arms[i].digest.as_deref());
        for arm in &arms[i..j] {
            let per_game = |f: &dyn Fn(usize) -> Option<f64>| -> Vec<f64> {
                arm.games.iter().filter_map(|&gi| f(gi)).collect()
            };
            let mean =
                |f: &dyn Fn(&GameResult) -> f64| stats::mean(&per_game(&|gi| Some(f(result(gi)))));
            let interval = |f: &dyn Fn(usize) -> Option<f64>| boot.mean(&per_game(f));
            let calls = mean(&|r| r.usage_by_phase.gameplay.calls as f64);
            let judged = |f: fn(&sleuth_game::game::MirageScores) -> Option<f64>| {
                interval(&|gi| f(result(gi).mirage_scores.as_ref()?))
            };
            t.push(
                vec![
                    Cell::Text(arm.script_label.clone()),
                    Cell::Text(known.code()),
                    Cell::Text(g.conditions[arm.condition].method()),
                    Cell::Number(Some(arm.games.len() as f64)),
                    Cell::Number(mean(&|r| r.usage_by_phase.gameplay.prompt_tokens as f64)),
                    Cell::Number(calls),
                    Cell::Number(mean(&|r| {
                        r.usage_by_phase.gameplay.completion_tokens as f64
                    })),
                    Cell::Number(calls),
                    Cell::MeanCi(interval(&|gi| {
                        Some(Metric::Victory.of(result(gi))? * 100.0)
                    })),
                    Cell::MeanCi(interval(&|gi| {
                        Some(result(gi).mirage.as_ref()?.tii_suspicion_share()? * 100.0)
                    })),
                    Cell::MeanCi(interval(&|gi| Some(Metric::Cic.of(result(gi))? * 100.0))),
                    Cell::MeanCi(interval(&|gi| {
                        let m = result(gi).mirage.as_ref()?;
                        let found = clues.get(&gi)?.total(true);
                        Some(formulas::cic(found, m.key_clues_available)? * 100.0)
                    })),
                    Cell::MeanCi(judged(|m| m.ici)),
                    Cell::MeanCi(judged(|m| m.sci)),
                    Cell::Number(mean(&|r| r.usage.parse_failures as f64)),
                ],
                false,
            );
        }
        if let Some((place, row)) = known.paper {
            for model in &models {
                let Some(m) = TABLE11_MODELS.iter().position(|x| x == model) else {
                    continue;
                };
                let s = TABLE11[place][m];
                let cells = published_row(
                    &t,
                    &[
                        ("Script", Cell::Text(arms[i].script_label.clone())),
                        ("Type", Cell::Text(known.code())),
                        ("Model", Cell::Text(published_label(model))),
                        ("Games", Cell::Number(Some(1.0))),
                    ],
                    &|h| match h {
                        "CIC" => s.cic_of_script(row.clues),
                        other => super::summary_value(&s, other),
                    },
                );
                t.push(cells, false);
            }
        }
        i = j;
    }
    Some(t)
}
