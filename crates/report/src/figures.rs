//! The papers' figures as data: series of points with intervals, ready to draw (`plots`) or to write as
//! CSV for replotting elsewhere.
//!
//! - PLAYER* Figure 7: WellPlay overall score against the number of rounds n, one line per number of
//!   questions per round m (and per method, when several played).
//! - ThinkThrice Figure 4: civilian win rate and murderer detection accuracy per condition, as bars;
//!   the same bars for another protocol's games under a title naming the protocol.
//! - ThinkThrice Figure 5: overall and informed accuracy on inferential questions per condition,
//!   grouped by model; the same bars for another protocol's games under a title naming the protocol.
//! - MIRAGE Figure 2: CIC of all clues and of key clues after each iteration.
//!
//! Each figure holds the games of one protocol ([`super::papers`]).

use std::collections::BTreeMap;

use super::arms::Grouping;
use super::clues::Timeline;
use super::metrics::{values, Bootstrap, Metric};
use super::papers::{self, Measures};
use super::table::{Cell, Column, Kind, Table};
use sleuth_game::eval::formulas;
use sleuth_game::eval::stats::{self, Group, Interval};
use sleuth_game::game::{GameResult, Protocol};

/// The x axis: numbers, or named categories at 0, 1, 2, …
#[derive(Debug, Clone, PartialEq)]
pub enum XAxis {
    Numeric,
    Categories(Vec<String>),
}

/// How series are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Lines through the points, with interval whiskers.
    Lines,
    /// Grouped bars (one per series at each category), with interval whiskers.
    Bars,
}

/// One point: its x and the mean with its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub value: Interval,
}

/// A named series.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<Point>,
}

/// A figure's data.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// File stem of its PNG, SVG and CSV.
    pub id: &'static str,
    pub title: String,
    pub caption: String,
    pub x_label: String,
    pub y_label: String,
    /// The y axis runs from 0 to this (1 for rates, 100 for MIRAGE's percentages).
    pub y_max: f64,
    pub x: XAxis,
    pub style: Style,
    pub series: Vec<Series>,
}

impl Figure {
    /// The figure's data as a table, for its CSV.
    pub fn data(&self) -> Table {
        let categorical = matches!(self.x, XAxis::Categories(_));
        let mut t = Table::new(
            self.id,
            &self.title,
            vec![
                Column::new("Series", "series", Kind::Text),
                if categorical {
                    Column::new("Category", "category", Kind::Text)
                } else {
                    Column::new(&self.x_label, "x", Kind::Number(0))
                },
                Column::new(&self.y_label, "value", Kind::MeanCi(3)),
                Column::new("Games", "games", Kind::Number(0)),
            ],
        );
        for s in &self.series {
            for p in &s.points {
                let x = match &self.x {
                    XAxis::Categories(names) => {
                        Cell::Text(names.get(p.x.round() as usize).cloned().unwrap_or_default())
                    }
                    XAxis::Numeric => Cell::Number(Some(p.x)),
                };
                t.push(
                    vec![
                        Cell::Text(s.name.clone()),
                        x,
                        Cell::MeanCi(Some(p.value)),
                        Cell::Number(Some(p.value.n as f64)),
                    ],
                    false,
                );
            }
        }
        t
    }
}

/// PLAYER* Figure 7 from the WellPlay conditions that played (not the PP/OP references), pooled over
/// scripts. Only WellPlay has rounds × questions per round, so the figure has no other protocol's
/// counterpart.
pub fn player_figure7(g: &Grouping, boot: &Bootstrap) -> Option<Figure> {
    const AXES: [&str; 2] = ["rounds", "questions_per_round"];
    // (family, m) → points by n.
    let mut lines: BTreeMap<(String, u64), Vec<Point>> = BTreeMap::new();
    for c in &g.conditions {
        if c.key.protocol != Protocol::WellPlay.as_str() || c.key.is_reference() {
            continue;
        }
        let (Some(n), Some(m)) = (
            c.key.setting_f64("rounds"),
            c.key.setting_f64("questions_per_round"),
        ) else {
            continue;
        };
        let xs = values(Metric::ChoiceScore, g.results(&c.games));
        if let Some(value) = boot.mean(&xs) {
            lines
                .entry((c.label_without(&AXES), m.round() as u64))
                .or_default()
                .push(Point { x: n, value });
        }
    }
    if lines.is_empty() {
        return None;
    }
    let families = lines
        .keys()
        .map(|(f, _)| f)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let series = lines
        .into_iter()
        .map(|((family, m), mut points)| {
            points.sort_by(|a, b| a.x.total_cmp(&b.x));
            Series {
                name: if families > 1 {
                    format!("{family} · m={m}")
                } else {
                    format!("m={m}")
                },
                points,
            }
        })
        .collect();
    Some(Figure {
        id: "player_figure7",
        title: "PLAYER* Figure 7 — score against rounds".into(),
        caption: format!(
            "WellPlay overall score (awarded / possible points) against the number of questioning \
             rounds n, one line per number of questions each agent asks per round (m); mean over \
             games pooled over scripts, whiskers the {} bootstrap interval.",
            super::tables::level_text(boot.level)
        ),
        x_label: "Rounds (n)".into(),
        y_label: "Overall score".into(),
        y_max: 1.0,
        x: XAxis::Numeric,
        style: Style::Lines,
        series,
    })
}

/// ThinkThrice Figure 4 over every condition of the ThinkThrice protocol whose games were decided by
/// a vote ([`votes`]).
pub fn thinkthrice_figure4(g: &Grouping, boot: &Bootstrap) -> Option<Figure> {
    votes(g, boot, Protocol::ThinkThrice)
}

/// Figure 4's bars for one protocol's conditions whose games were decided by a vote, titled by the
/// protocol unless it is ThinkThrice: win rules differ between protocols, so their bars are never
/// drawn side by side.
pub fn votes(g: &Grouping, boot: &Bootstrap, protocol: Protocol) -> Option<Figure> {
    let conditions: Vec<usize> = (0..g.conditions.len())
        .filter(|&ci| {
            let c = &g.conditions[ci];
            c.key.protocol == protocol.as_str()
                && g.results(&c.games)
                    .any(|r| Metric::CivilianWin.of(r).is_some())
        })
        .collect();
    if conditions.is_empty() {
        return None;
    }
    let series = [
        (Metric::CivilianWin, "Civilian win rate"),
        (Metric::Detection, "Murderer detection accuracy"),
    ]
    .into_iter()
    .map(|(m, name)| Series {
        name: name.into(),
        points: conditions
            .iter()
            .enumerate()
            .filter_map(|(x, &ci)| {
                let value = boot.mean(&values(m, g.results(&g.conditions[ci].games)))?;
                Some(Point { x: x as f64, value })
            })
            .collect(),
    })
    .collect();
    let heading = Measures::Votes.heading(protocol);
    Some(Figure {
        id: heading.id,
        title: heading.title,
        caption: format!(
            "Games played under the {protocol} protocol. Share of games the civilians won (under {}), \
             and votes received by the murderer / votes cast, per condition (pooled over scripts); \
             whiskers the {} bootstrap interval over games.",
            papers::win_rule(protocol),
            super::tables::level_text(boot.level)
        ),
        x_label: "Condition".into(),
        y_label: "Rate".into(),
        y_max: 1.0,
        x: XAxis::Categories(
            conditions
                .iter()
                .map(|&ci| g.conditions[ci].method())
                .collect(),
        ),
        style: Style::Bars,
        series,
    })
}

/// One of a game's inferential accuracies, as Figure 5 plots it.
type Accuracy = fn(&GameResult) -> Option<f64>;

/// ThinkThrice Figure 5 over every ThinkThrice-protocol condition whose games answered inferential
/// questions ([`inferential`]).
pub fn thinkthrice_figure5(g: &Grouping, boot: &Bootstrap) -> Option<Figure> {
    inferential(g, boot, Protocol::ThinkThrice)
}

/// Figure 5's bars for one protocol's conditions whose games answered inferential questions: overall
/// accuracy (the right option) beside informed accuracy (the right option for a reason the judge
/// accepted), so the gap between the two bars is what a model guessed. The paper compares how much
/// information an agent gathered (the methods) within one model and the models against each other, so
/// the categories are grouped by model — every method of one model, then the next — and, with several
/// models, each category names its model first. Titled by the protocol unless it is ThinkThrice: any
/// protocol's evaluation asks a script's inferential questions, but only ThinkThrice's games are the
/// paper's setup.
pub fn inferential(g: &Grouping, boot: &Bootstrap, protocol: Protocol) -> Option<Figure> {
    let mut conditions: Vec<usize> = (0..g.conditions.len())
        .filter(|&ci| {
            let c = &g.conditions[ci];
            c.key.protocol == protocol.as_str()
                && g.results(&c.games)
                    .any(|r| r.inferential_accuracy.is_some())
        })
        .collect();
    if conditions.is_empty() {
        return None;
    }
    // Stable: within a model the conditions keep the report's method order.
    conditions.sort_by(|&a, &b| g.conditions[a].key.model.cmp(&g.conditions[b].key.model));
    let models: std::collections::BTreeSet<&str> = conditions
        .iter()
        .map(|&ci| g.conditions[ci].key.model.as_str())
        .collect();
    let measures: [(Accuracy, &str); 2] = [
        (|r| r.inferential_accuracy, "Overall accuracy"),
        (|r| r.informed_accuracy, "Informed accuracy"),
    ];
    let series = measures
        .into_iter()
        .map(|(of, name)| Series {
            name: name.into(),
            points: conditions
                .iter()
                .enumerate()
                .filter_map(|(x, &ci)| {
                    let xs: Vec<f64> = g.results(&g.conditions[ci].games).filter_map(of).collect();
                    Some(Point {
                        x: x as f64,
                        value: boot.mean(&xs)?,
                    })
                })
                .collect(),
        })
        .collect();
    let categories = conditions
        .iter()
        .map(|&ci| {
            let c = &g.conditions[ci];
            if models.len() > 1 {
                format!("{} · {}", c.key.model, c.method_without_model())
            } else {
                c.method_without_model()
            }
        })
        .collect();
    let grouping = match models.iter().next() {
        Some(model) if models.len() == 1 => format!("All games ran on {model}."),
        _ => "Conditions are grouped by model, each named \"model · method\".".to_string(),
    };
    let heading = Measures::Inferential.heading(protocol);
    Some(Figure {
        id: heading.id,
        title: heading.title,
        caption: format!(
            "Games played under the {protocol} protocol. Overall accuracy: inferential questions \
             answered with the right option / questions asked, over every agent; informed \
             accuracy: the right option with a rationale the judge scored at or above the \
             rationale threshold (result.json's inferential_accuracy and informed_accuracy). Mean \
             over games per condition (pooled over scripts); whiskers the {} bootstrap interval over \
             games. {grouping}",
            super::tables::level_text(boot.level)
        ),
        x_label: "Condition".into(),
        y_label: "Accuracy".into(),
        y_max: 1.0,
        x: XAxis::Categories(categories),
        style: Style::Bars,
        series,
    })
}

/// MIRAGE Figure 2 from the transcripts of games played under the MIRAGE protocol.
pub fn mirage_figure2(
    g: &Grouping,
    boot: &Bootstrap,
    clues: &BTreeMap<usize, Timeline>,
) -> Option<Figure> {
    let conditions: Vec<usize> = (0..g.conditions.len())
        .filter(|&ci| {
            let c = &g.conditions[ci];
            c.key.protocol == Protocol::Mirage.as_str()
                && c.games
                    .iter()
                    .any(|gi| clues.contains_key(gi) && g.games[*gi].result.mirage.is_some())
        })
        .collect();
    if conditions.is_empty() {
        return None;
    }
    let single = conditions.len() == 1;
    let mut series = Vec::new();
    for &ci in &conditions {
        let c = &g.conditions[ci];
        // Per script (arm): each game's timeline and clue counts.
        let scripts: Vec<Vec<(&Timeline, usize, usize)>> = c
            .arms
            .iter()
            .map(|&ai| {
                g.arms[ai]
                    .games
                    .iter()
                    .filter_map(|gi| {
                        let m = g.games[*gi].result.mirage.as_ref()?;
                        Some((clues.get(gi)?, m.clues_available, m.key_clues_available))
                    })
                    .collect()
            })
            .collect();
        let configured = c.key.setting_f64("iterations").map(|i| i.round() as u32);
        let seen = scripts
            .iter()
            .flatten()
            .filter_map(|(t, _, _)| t.last_iteration())
            .max();
        let iterations = configured.into_iter().chain(seen).max().unwrap_or(0);
        for (key_only, what) in [(false, "all clues"), (true, "key clues")] {
            let points: Vec<Point> = (1..=iterations)
                .filter_map(|i| {
                    // CIC pooled over scripts as in MIRAGE Table 2: each script weighs by its clues.
                    let per_script: Vec<(Vec<f64>, f64)> = scripts
                        .iter()
                        .map(|games| {
                            let available = |&(_, all, key): &(&Timeline, usize, usize)| {
                                if key_only {
                                    key
                                } else {
                                    all
                                }
                            };
                            let xs: Vec<f64> = games
                                .iter()
                                .filter_map(|game| {
                                    formulas::cic(game.0.by_iteration(i, key_only), available(game))
                                })
                                .map(|x| x * 100.0)
                                .collect();
                            let n: Vec<f64> = games.iter().map(|g| available(g) as f64).collect();
                            (xs, stats::mean(&n).unwrap_or(0.0))
                        })
                        .collect();
                    let groups: Vec<Group> = per_script
                        .iter()
                        .map(|(values, weight)| Group {
                            values,
                            weight: *weight,
                        })
                        .collect();
                    Some(Point {
                        x: f64::from(i),
                        value: boot.over_scripts(&groups)?,
                    })
                })
                .collect();
            if points.is_empty() {
                continue;
            }
            series.push(Series {
                name: if single {
                    capitalise(what)
                } else {
                    format!("{} · {what}", c.method())
                },
                points,
            });
        }
    }
    if series.is_empty() {
        return None;
    }
    Some(Figure {
        id: "mirage_figure2",
        title: "MIRAGE Figure 2 — CIC of clues and key clues across iterations".into(),
        caption: format!(
            "Clues investigated by the end of each iteration / clues available (×100), for all clues \
             and for key clues, pooled over scripts as in Table 2 (investigations per game averaged \
             within a script, then summed over scripts, over the scripts' clues); whiskers the {} \
             bootstrap interval (scripts, then games, resampled).",
            super::tables::level_text(boot.level)
        ),
        x_label: "Iteration".into(),
        y_label: "CIC".into(),
        y_max: 100.0,
        x: XAxis::Numeric,
        style: Style::Lines,
        series,
    })
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
