//! PLAYER* Figures 5 and 6: the bars of the paper's Section 4.2, drawn from the rows of Tables A3 and
//! A5 the report already builds, so a figure can never disagree with its table.
//!
//! - Figure 5: per method, the Voting, Objective, Reasoning, Relations and Overall scores of Table A3's
//!   "All scripts (weighted)" rows — the paper's "average of agents' performance across 12 unique
//!   games".
//! - Figure 6: per method, the USD of one gameplay and of one evaluation process, summed over scripts
//!   (Table A5's "All scripts (sum)" rows; with one script, its only row) — "costs reported for one
//!   complete gameplay and one evaluation process for each script".

use sleuth_game::eval::stats::Interval;

use super::super::figures::{Figure, Point, Series, Style, XAxis};
use super::super::table::{Cell, Table};

/// File stems of the two figures.
pub const ID5: &str = "player_figure5";
pub const ID6: &str = "player_figure6";

/// Table A3's columns Figure 5 plots, in the paper's order, with the series name each becomes.
const SCORES: [(&str, &str); 5] = [
    ("Voting", "Voting"),
    ("Objective", "Objective"),
    ("Reasoning", "Reasoning"),
    ("Relations", "Relations"),
    ("Overall", "Overall"),
];

/// A row's text in column `heading`.
fn text<'a>(t: &'a Table, row: &'a super::super::table::Row, heading: &str) -> Option<&'a str> {
    match row.cells.get(t.column(heading)?)? {
        Cell::Text(s) => Some(s),
        _ => None,
    }
}

/// A row's number in column `heading`.
fn number(t: &Table, row: &super::super::table::Row, heading: &str) -> Option<f64> {
    match row.cells.get(t.column(heading)?)? {
        Cell::Number(x) => *x,
        _ => None,
    }
}

/// PLAYER* Figure 5 from Table A3 (`a3`, the WellPlay protocol's): one group of bars per method, one
/// bar per score, the whiskers the ± std the table prints beside each weighted mean (PLAYER*'s spread
/// over evaluation runs, not a confidence interval), clipped to the 0–1 scale.
pub fn figure5(a3: &Table) -> Option<Figure> {
    let rows: Vec<_> = a3.rows.iter().filter(|r| r.total).collect();
    if rows.is_empty() {
        return None;
    }
    let methods: Vec<String> = rows
        .iter()
        .map(|r| text(a3, r, "Method").unwrap_or_default().to_string())
        .collect();
    let series: Vec<Series> = SCORES
        .iter()
        .filter_map(|&(heading, name)| {
            let col = a3.column(heading)?;
            let points: Vec<Point> = rows
                .iter()
                .enumerate()
                .filter_map(|(x, r)| {
                    let Cell::MeanStd(Some((mean, std))) = r.cells.get(col)? else {
                        return None;
                    };
                    let games = number(a3, r, "Games").unwrap_or(0.0);
                    Some(Point {
                        x: x as f64,
                        value: Interval {
                            estimate: *mean,
                            low: (mean - std).max(0.0),
                            high: (mean + std).min(1.0),
                            n: games.round() as usize,
                            level: 0.0,
                        },
                    })
                })
                .collect();
            (!points.is_empty()).then(|| Series {
                name: name.into(),
                points,
            })
        })
        .collect();
    if series.is_empty() {
        return None;
    }
    Some(Figure {
        id: ID5,
        title: "PLAYER* Figure 5 — scores per method, averaged over scripts".into(),
        caption: "Games played under the wellplay protocol. Each bar is a method's \"All scripts \
                  (weighted)\" row of PLAYER* Table A3: Voting (victims whose culprit the vote \
                  eliminated / victims, mean over scripts), Objective, Reasoning and Relations \
                  accuracy (weighted by each script's questions of the category) and Overall score \
                  (weighted by each script's possible points). Whiskers: the ± std the table prints \
                  (over evaluation runs; over scripts for Voting), clipped to 0–1 — a spread, not a \
                  confidence interval; the CSV's ci columns hold mean − std and mean + std. PP and OP \
                  are the paper's start and end points of the search."
            .into(),
        x_label: "Method".into(),
        y_label: "Score".into(),
        y_max: 1.0,
        x: XAxis::Categories(methods),
        style: Style::Bars,
        series,
    })
}

/// PLAYER* Figure 6 from Table A5 (`a5`, the WellPlay protocol's): one group of bars per method, the
/// USD of the gameplay and of one evaluation process summed over the scripts. A method whose cost is
/// unknown on some script (its cell is —) has no bar for that phase rather than a partial sum.
pub fn figure6(a5: &Table) -> Option<Figure> {
    let totals: Vec<_> = a5.rows.iter().filter(|r| r.total).collect();
    // With one script the table has no sum rows: each method's only row is its total.
    let rows = if totals.is_empty() {
        a5.rows.iter().collect()
    } else {
        totals
    };
    if rows.is_empty() {
        return None;
    }
    let methods: Vec<String> = rows
        .iter()
        .map(|r| text(a5, r, "Method").unwrap_or_default().to_string())
        .collect();
    let series: Vec<Series> = [
        ("Gameplay USD", "Gameplay"),
        ("Evaluation USD", "Evaluation"),
    ]
    .into_iter()
    .map(|(heading, name)| Series {
        name: name.into(),
        points: rows
            .iter()
            .enumerate()
            .filter_map(|(x, r)| {
                let usd = number(a5, r, heading)?;
                let games = number(a5, r, "Games").unwrap_or(0.0);
                Some(Point {
                    x: x as f64,
                    value: Interval {
                        estimate: usd,
                        low: usd,
                        high: usd,
                        n: games.round() as usize,
                        level: 0.0,
                    },
                })
            })
            .collect(),
    })
    .filter(|s| !s.points.is_empty())
    .collect();
    if series.is_empty() {
        return None;
    }
    let highest = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.value.estimate))
        .fold(0.0, f64::max);
    Some(Figure {
        id: ID6,
        title: "PLAYER* Figure 6 — cost per method, gameplay and evaluation".into(),
        caption:
            "Games played under the wellplay protocol. Each bar is a method's cost in USD from \
                  PLAYER* Table A5, summed over scripts (its \"All scripts (sum)\" row; with one \
                  script, that script's row): one complete gameplay and one evaluation process \
                  (every question asked once: the multiple-choice answers' calls divided by their \
                  repeats), each the mean over the \
                  arm's games. No whiskers: the table prints means. A phase with no bar cost \
                  nothing that was recorded (PP and OP play no gameplay outside their final vote) \
                  or could not be split into evaluation processes (see Table A5's note). USD is \
                  priced from the pricing table the games ran with."
                .into(),
        x_label: "Method".into(),
        y_label: "USD".into(),
        y_max: if highest > 0.0 { highest * 1.1 } else { 1.0 },
        x: XAxis::Categories(methods),
        style: Style::Bars,
        series,
    })
}
