//! MIRAGE Figures 3–8: ICI and SCI by script type — Figure 3 ICI and Figure 4 SCI of Single and
//! Multi scripts, Figures 5 and 6 of Orthodox and Unorthodox, Figures 7 and 8 of Close and Open —
//! as grouped bars: per condition (the paper's models), one bar per type, each the mean over that
//! type's scripts of the script's mean per game (pooled as Table 2 pools), with its two-stage
//! bootstrap interval. A script whose type is unknown for a split ([`super::categories`]) is left out
//! of that split's two figures, with a note.

use std::collections::BTreeSet;

use super::categories::{Categories, Dimension};
use super::mirage_conditions;
use crate::arms::Grouping;
use crate::figures::{Figure, Point, Series, Style, XAxis};
use crate::metrics::Bootstrap;
use crate::tables::level_text;
use sleuth_game::eval::stats::Group;
use sleuth_game::game::{GameResult, MirageScores};

/// File stems, Figures 3 to 8.
pub const IDS: [&str; 6] = [
    "mirage_figure3",
    "mirage_figure4",
    "mirage_figure5",
    "mirage_figure6",
    "mirage_figure7",
    "mirage_figure8",
];

/// The judged score a figure shows.
type Judged = fn(&MirageScores) -> Option<f64>;

const SCORES: [(&str, Judged); 2] = [("ICI", |m| m.ici), ("SCI", |m| m.sci)];

fn judged(r: &GameResult, f: Judged) -> Option<f64> {
    f(r.mirage_scores.as_ref()?)
}

/// Figures 3–8 from the MIRAGE protocol's games that were judged, and a note per split naming the
/// judged scripts it leaves out.
pub fn figures(g: &Grouping, boot: &Bootstrap, cats: &Categories) -> (Vec<Figure>, Vec<String>) {
    let conditions: Vec<usize> = mirage_conditions(g).map(|(ci, _)| ci).collect();
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for (d_index, d) in Dimension::ALL.into_iter().enumerate() {
        let sides = d.sides();
        let mut left_out = BTreeSet::new();
        for (s_index, (score, f)) in SCORES.into_iter().enumerate() {
            let number = 3 + 2 * d_index + s_index;
            // Categories: the conditions with a value on either side; series: the two sides.
            let mut categories = Vec::new();
            let mut series: Vec<Series> = sides
                .iter()
                .map(|s| Series {
                    name: (*s).to_string(),
                    points: Vec::new(),
                })
                .collect();
            for &ci in &conditions {
                let c = &g.conditions[ci];
                let mut per_side: [Vec<Vec<f64>>; 2] = [Vec::new(), Vec::new()];
                for &ai in &c.arms {
                    let arm = &g.arms[ai];
                    let xs: Vec<f64> = g.results(&arm.games).filter_map(|r| judged(r, f)).collect();
                    if xs.is_empty() {
                        continue;
                    }
                    match cats.get(&arm.script, arm.digest.as_deref()).side(d) {
                        Some(side) => per_side[side].push(xs),
                        None => {
                            left_out.insert(arm.script_label.clone());
                        }
                    }
                }
                let values: Vec<Option<sleuth_game::eval::stats::Interval>> = per_side
                    .iter()
                    .map(|scripts| {
                        let groups: Vec<Group> =
                            scripts.iter().map(|v| Group::unweighted(v)).collect();
                        boot.over_scripts(&groups)
                    })
                    .collect();
                if values.iter().all(Option::is_none) {
                    continue;
                }
                let x = categories.len() as f64;
                categories.push(c.method());
                for (s, v) in series.iter_mut().zip(values) {
                    if let Some(value) = v {
                        s.points.push(Point { x, value });
                    }
                }
            }
            if categories.is_empty() {
                continue;
            }
            out.push(Figure {
                id: IDS[number - 3],
                title: format!(
                    "MIRAGE Figure {number} — {score} of {} type scripts",
                    d.name()
                ),
                caption: format!(
                    "Games played under the mirage protocol. {score} (0-100, the judge's scores as \
                     the games recorded them) per condition, one bar per script type of MIRAGE Table \
                     1 ({} or {}): the mean over that type's scripts of each script's mean per game, \
                     as Table 2 pools; whiskers the {} bootstrap interval (scripts, then their games, \
                     resampled). A condition without a script of one type has no bar for it. Types: \
                     {}.",
                    sides[0],
                    sides[1],
                    level_text(boot.level),
                    match d {
                        Dimension::Structure => {
                            "Single or Multi from the script the games were played on (more than \
                             one act is Multi), else from MIRAGE Table 1"
                        }
                        _ => "from MIRAGE Table 1, by the script's title",
                    }
                ),
                x_label: "Condition".into(),
                y_label: score.into(),
                y_max: 100.0,
                x: XAxis::Categories(categories),
                style: Style::Bars,
                series: series.into_iter().filter(|s| !s.points.is_empty()).collect(),
            });
        }
        if !left_out.is_empty() {
            let list: Vec<String> = left_out.into_iter().collect();
            notes.push(format!(
                "MIRAGE Figures {} and {} ({}) leave out {}: {}",
                3 + 2 * d_index,
                4 + 2 * d_index,
                d.name(),
                list.join(", "),
                match d {
                    Dimension::Structure => {
                        "the script cannot be read back to count its acts, and MIRAGE Table 1 does \
                         not list it"
                    }
                    _ => "MIRAGE Table 1 gives no type for scripts outside the MIRAGE set",
                }
            ));
        }
    }
    (out, notes)
}
