//! MIRAGE's tables and figures beyond Table 2 and Figure 2 (which `tables` and `figures` build):
//!
//! - Table 11: Table 2's measures per script × condition ([`table11`]);
//! - Tables 12–19: TII, ICI, SCI and the judge's sub-scores (RP, RA, CC, DO, CT) per character
//!   ([`characters`]);
//! - Tables 9, 10 and 3: Table 2 without and with forced self-exposure, and TII's change, from two
//!   conditions that differ only by `force_expose` ([`exposure`]);
//! - Figures 3–8: ICI and SCI by script type — Single/Multi, Orthodox/Unorthodox, Close/Open
//!   ([`figures`], the types from [`categories`]).
//!
//! Every table prints the paper's own rows beside sleuth's where the paper has them ([`published`]):
//! the rows of the models the games ran on (by the paper's name or version, Table 8), or, when no game
//! ran on one of the paper's models, the rows of all of them, so the reproduction gap shows at a
//! glance. Published rows are labelled "Published: MODEL" in the Method column; their cells are the
//! printed values, without intervals (the paper played each script once).

pub mod categories;
pub mod characters;
pub mod exposure;
pub mod figures;
pub mod published;
pub mod script_type;
pub mod table11;

use std::collections::BTreeMap;

use super::arms::{ConditionInfo, Grouping};
use super::clues::Timeline;
use super::metrics::Bootstrap;
use super::table::{Cell, Kind, Table};
use super::Section;
use sleuth_game::eval::stats::Interval;
use sleuth_game::game::Protocol;

/// File stems of every MIRAGE section built here, so a rewrite removes what no longer applies.
pub const IDS: [&str; 11] = [
    table11::ID,
    characters::ID,
    exposure::ID9,
    exposure::ID10,
    exposure::ID3,
    figures::IDS[0],
    figures::IDS[1],
    figures::IDS[2],
    figures::IDS[3],
    figures::IDS[4],
    figures::IDS[5],
];

/// Every MIRAGE section the games allow, in report order (after Table 2 and Figure 2), and the notes
/// they need (scripts left out of a figure, forced exposure that could not happen).
pub fn sections(
    g: &Grouping,
    boot: &Bootstrap,
    clues: &BTreeMap<usize, Timeline>,
    notes: &mut Vec<String>,
) -> Vec<Section> {
    if mirage_conditions(g).next().is_none() {
        return Vec::new();
    }
    let cats = categories::Categories::read(g);
    let mut out = Vec::new();
    out.extend(table11::table11(g, boot, clues, &cats).map(Section::Table));
    out.extend(characters::characters(g, boot, &cats).map(Section::Table));
    let (tables, exposure_notes) = exposure::tables(g, boot, clues);
    out.extend(tables.into_iter().map(Section::Table));
    notes.extend(exposure_notes);
    let (figs, figure_notes) = figures::figures(g, boot, &cats);
    out.extend(figs.into_iter().map(Section::Figure));
    notes.extend(figure_notes);
    out
}

/// The conditions played under the MIRAGE protocol, with their indices.
pub fn mirage_conditions(g: &Grouping) -> impl Iterator<Item = (usize, &ConditionInfo)> {
    g.conditions
        .iter()
        .enumerate()
        .filter(|(_, c)| c.key.protocol == Protocol::Mirage.as_str())
}

/// The paper's models whose rows a table shows: of `paper` (a table's models, in its order), those
/// that `models` (the report's) are, by name or version; all of them when none is.
pub fn shown<'a, 'm>(paper: &[&'a str], models: impl IntoIterator<Item = &'m str>) -> Vec<&'a str> {
    let played: Vec<&str> = models
        .into_iter()
        .filter_map(published::paper_model)
        .collect();
    let matching: Vec<&str> = paper
        .iter()
        .copied()
        .filter(|p| played.contains(p))
        .collect();
    if matching.is_empty() {
        paper.to_vec()
    } else {
        matching
    }
}

/// The label of a published row in a table's Method (or Model) column.
pub fn published_label(model: &str) -> String {
    format!("Published: {model}")
}

/// A printed value as a cell of a mean-with-interval column: the value alone, as a single game's
/// (the paper played each script once and prints no interval).
pub fn printed(x: f64) -> Interval {
    Interval {
        estimate: x,
        low: x,
        high: x,
        n: 1,
        level: sleuth_game::eval::stats::DEFAULT_LEVEL,
    }
}

/// A published row of `t`: `fixed` cells by heading, the other cells from `value` by heading (text
/// columns empty, numbers as printed, intervals as [`printed`] values, "—" where `value` has none).
pub fn published_row(
    t: &Table,
    fixed: &[(&str, Cell)],
    value: &dyn Fn(&str) -> Option<f64>,
) -> Vec<Cell> {
    t.columns
        .iter()
        .map(|c| {
            if let Some((_, cell)) = fixed.iter().find(|(h, _)| *h == c.heading) {
                return cell.clone();
            }
            match c.kind {
                Kind::Text => Cell::Text(String::new()),
                Kind::Number(_) => Cell::Number(value(&c.heading)),
                Kind::MeanCi(_) => Cell::MeanCi(value(&c.heading).map(printed)),
                Kind::MeanStd(_) => Cell::MeanStd(None),
            }
        })
        .collect()
}

/// A [`published::Summary`] cell by the heading of Table 2's (and Tables 9, 10, 11's) columns.
pub fn summary_value(s: &published::Summary, heading: &str) -> Option<f64> {
    match heading {
        "Env tokens" => Some(s.env_tokens),
        "Envs" => Some(s.envs),
        "User tokens" => Some(s.user_tokens),
        "Users" => Some(s.users),
        "Victory" => Some(s.victory),
        h if h.starts_with("TII") => s.tii,
        "CIC" => Some(s.cic),
        "ICI" => Some(s.ici),
        "SCI" => Some(s.sci),
        _ => None,
    }
}

/// Appends to a Table 2-shaped table (Table 2, 9 or 10: Model, Scripts, Games, …) the paper's rows of
/// `paper` for the models [`shown`] beside `models`, with the eight scripts of one simulation each.
pub fn append_summaries<'m>(
    t: &mut Table,
    paper: &[(&str, published::Summary)],
    models: impl IntoIterator<Item = &'m str>,
) {
    let names: Vec<&str> = paper.iter().map(|(m, _)| *m).collect();
    let scripts = published::TABLE1.len() as f64;
    for model in shown(&names, models) {
        let Some((_, s)) = paper.iter().find(|(m, _)| *m == model) else {
            continue;
        };
        let row = published_row(
            t,
            &[
                ("Model", Cell::Text(published_label(model))),
                ("Scripts", Cell::Number(Some(scripts))),
                ("Games", Cell::Number(Some(scripts))),
            ],
            &|h| summary_value(s, h),
        );
        t.push(row, false);
    }
}

/// The sentence every note of a table with published rows ends with.
pub fn published_note(source: &str) -> String {
    format!(
        "Rows \"Published: MODEL\" are {source} as printed (one simulation per script, so no \
         interval): those of the models these games ran on (the paper's name or version, its Table \
         8), or all of them when the games ran on none of the paper's models."
    )
}
