//! PLAYER* Table A6: the PLAYER* method's overall score with different models (Appendix C.4), built
//! when a sweep's WellPlay arms differ only by model.
//!
//! The paper compares models by one number each — the overall score (awarded / possible points) — on
//! the same scripts under the same method. A model column is only a fair comparison when nothing else
//! differs, so the table groups WellPlay conditions whose every other part of the condition (framework,
//! murderers' framework, modules, settings) is equal and prints a group only when it holds two or
//! more models. Each cell is the condition's "All scripts (weighted)" Overall of Table A3, so the
//! two tables cannot disagree.

use std::collections::BTreeMap;

use super::super::arms::{framework_name, Condition, Grouping};
use super::super::table::{Cell, Column, Kind, Table};
use sleuth_game::game::Protocol;

/// File stem of the table.
pub const ID: &str = "player_table_a6";

/// Table A6 from the WellPlay conditions and Table A3 (`a3`, the WellPlay protocol's): a row per
/// model within each group of conditions that differ only by model; `None` when no group has two
/// models.
pub fn table_a6(g: &Grouping, a3: &Table) -> Option<Table> {
    let (method_col, overall_col, games_col) = (
        a3.column("Method")?,
        a3.column("Overall")?,
        a3.column("Games")?,
    );
    // Condition without its model → the conditions of the group.
    let mut groups: BTreeMap<Condition, Vec<usize>> = BTreeMap::new();
    for (ci, c) in g.conditions.iter().enumerate() {
        if c.key.protocol != Protocol::WellPlay.as_str() || c.key.is_reference() {
            continue;
        }
        let mut rest = c.key.clone();
        rest.model.clear();
        groups.entry(rest).or_default().push(ci);
    }
    let mut t = Table::new(
        ID,
        "PLAYER* Table A6 — overall score per model",
        vec![
            Column::new("Method", "method", Kind::Text),
            Column::new("Model", "model", Kind::Text),
            Column::new("Scripts", "scripts", Kind::Number(0)),
            Column::new("Games", "games", Kind::Number(0)),
            Column::new("Overall score", "overall", Kind::MeanStd(3)),
        ],
    );
    t.note = "Games played under the wellplay protocol, one row per model within each group of \
              conditions that differ only by model (same framework, murderers' framework, modules \
              and settings; PP and OP left out, as in the paper). Overall score: awarded / possible \
              points, the condition's \"All scripts (weighted)\" Overall of Table A3 (weighted mean \
              over scripts ± weighted std over evaluation runs). The paper played one script \
              (Solitary Boat Firefly) per model; here the scripts are those each model played — \
              compare models on the same scripts (the Scripts column)."
        .into();
    for conditions in groups.values() {
        let models: std::collections::BTreeSet<&str> = conditions
            .iter()
            .map(|&ci| g.conditions[ci].key.model.as_str())
            .collect();
        if models.len() < 2 {
            continue;
        }
        for &ci in conditions {
            let c = &g.conditions[ci];
            let method = c.method();
            // The condition's weighted row in Table A3.
            let Some(row) = a3.rows.iter().find(|r| {
                r.total && matches!(r.cells.get(method_col), Some(Cell::Text(m)) if *m == method)
            }) else {
                continue;
            };
            let overall = match row.cells.get(overall_col) {
                Some(Cell::MeanStd(v)) => *v,
                _ => None,
            };
            let games = match row.cells.get(games_col) {
                Some(Cell::Number(n)) => *n,
                _ => None,
            };
            let without_model = c.method_without_model();
            t.push(
                vec![
                    Cell::Text(if without_model.is_empty() {
                        framework_name(&c.key.framework)
                    } else {
                        without_model
                    }),
                    Cell::Text(c.key.model.clone()),
                    Cell::Number(Some(c.arms.len() as f64)),
                    Cell::Number(games),
                    Cell::MeanStd(overall),
                ],
                false,
            );
        }
    }
    (!t.rows.is_empty()).then_some(t)
}
