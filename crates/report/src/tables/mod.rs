//! The papers' tables, built from grouped games.
//!
//! - `arms`: every arm (script version × condition) with its games and seeds — the index of the report.
//! - ThinkThrice Table 4: factual QA (Own, CQ, MQ, Others), civilian win rate and murderer detection
//!   per condition, pooled over scripts, with bootstrap intervals over games.
//! - PLAYER* Table A3: WellPlay voting and multiple-choice scores per script × method, mean ± std
//!   (Voting over the victims, the rest over the evaluation runs), then per method the weighted mean
//!   ± std across scripts (Appendix B.3, over the evaluation runs); every spread ÷ n. Table A4: the
//!   same per-script rows for the games on scripts written in English.
//! - PLAYER* Table A5: each script's length (#Tokens per character), cost and tokens per script and
//!   phase (gameplay, evaluation), mean per game; evaluation per evaluation process as the paper
//!   reports it, with the total of every run beside it.
//! - MIRAGE Table 2: tokens and requests, Victory, TII (suspicion share), CIC, ICI, SCI and parse
//!   failures per condition, pooled over scripts as the paper pools Table 11 (means over scripts, CIC
//!   as counts).
//! - `paired`: two conditions compared on the same scripts and seeds.
//!
//! A table appears only when some game measured what it shows. A paper's table holds only games of
//! that paper's protocol; Table 4's, A3's and A5's measures from other protocols are built by the
//! same functions under a title naming the protocol ([`super::papers`]).

use std::collections::{BTreeMap, BTreeSet};

use super::arms::{script_digest, Arm, ConditionInfo, Grouping};
use super::clues::Timeline;
use super::metrics::{self, category, values, Bootstrap, Metric};
use super::papers::{self, Measures};
use super::scripts::ScriptLengths;
use super::table::{Cell, Column, Kind, Table};
use sleuth_game::eval::formulas;
use sleuth_game::eval::stats::{self, Group, RunSummary};
use sleuth_game::game::GameResult;
use sleuth_game::game::MirageScores;
use sleuth_game::game::Protocol;

mod choice;
mod cost;
mod mirage;

pub use choice::{choice, player_table_a3, player_table_a4, A4_ID};
pub use cost::{cost, player_table_a5};
pub use mirage::{mirage_summary, mirage_table2, summary_columns};

/// Decimals of accuracies and rates (the papers print three).
const RATE: usize = 3;

/// The index of arms.
pub fn arms(g: &Grouping) -> Table {
    let mut t = Table::new(
        "arms",
        "Arms",
        vec![
            Column::new("Script", "script", Kind::Text),
            Column::new("Script digest", "script_digest", Kind::Text),
            Column::new("Protocol", "protocol", Kind::Text),
            Column::new("Method", "method", Kind::Text),
            Column::new("Model", "model", Kind::Text),
            Column::new("Games", "games", Kind::Number(0)),
            Column::new("Seeds", "seeds", Kind::Text),
            Column::new("Settings", "settings", Kind::Text),
        ],
    );
    t.note = "An arm is one version of one script played under one condition (protocol, framework, \
              murderers' framework, modules, model and protocol settings); its games are the repeats \
              over seeds. A version is the script's content digest as the games' spec recorded it \
              (empty for results written before games recorded a spec): games of an edited script — \
              another culprit, other clues — are another arm. Tables add a short digest to the \
              script's name (\"Inn @ab12cd\") only when the report holds several versions of it. \
              Method names a condition by what sets it apart from the others in this report."
        .into();
    for arm in &g.arms {
        let c = &g.conditions[arm.condition];
        let seeds: Vec<String> = g.results(&arm.games).map(|r| r.seed.to_string()).collect();
        let settings: Vec<String> = c
            .key
            .settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        t.push(
            vec![
                Cell::Text(arm.script_label.clone()),
                Cell::Text(arm.digest.clone().unwrap_or_default()),
                Cell::Text(c.key.protocol.clone()),
                Cell::Text(c.method()),
                Cell::Text(c.key.model.clone()),
                Cell::Number(Some(arm.games.len() as f64)),
                Cell::Text(seeds.join(" ")),
                Cell::Text(settings.join(", ")),
            ],
            false,
        );
    }
    t
}

/// ThinkThrice Table 4, with Figure 4's win rate and detection accuracy as columns: the ThinkThrice
/// protocol's games only ([`factual`]).
pub fn thinkthrice_table4(g: &Grouping, boot: &Bootstrap) -> Option<Table> {
    factual(g, boot, Protocol::ThinkThrice)
}

/// Table 4's measures for one protocol's games: under the ThinkThrice protocol every condition (it is
/// the paper's table), under another only conditions that answered factual questions (their votes
/// have their own figure), titled by the protocol ([`papers`]).
pub fn factual(g: &Grouping, boot: &Bootstrap, protocol: Protocol) -> Option<Table> {
    let factual = [Metric::Own, Metric::Cq, Metric::Mq, Metric::Others];
    let paper = protocol == Measures::Factual.paper_protocol();
    let rows: Vec<&ConditionInfo> = g
        .conditions
        .iter()
        .filter(|c| {
            c.key.protocol == protocol.as_str()
                && (paper
                    || g.results(&c.games)
                        .any(|r| factual.iter().any(|m| m.of(r).is_some())))
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut columns = vec![
        Column::new("Method", "method", Kind::Text),
        Column::new("Scripts", "scripts", Kind::Number(0)),
        Column::new("Games", "games", Kind::Number(0)),
    ];
    let metrics = [
        Metric::Own,
        Metric::Cq,
        Metric::Mq,
        Metric::Others,
        Metric::CivilianWin,
        Metric::Detection,
    ];
    for m in metrics {
        columns.push(Column::new(m.name(), field(m), Kind::MeanCi(RATE)));
    }
    let heading = Measures::Factual.heading(protocol);
    let mut t = Table::new(heading.id, &heading.title, columns);
    t.note = format!(
        "Games played under the {protocol} protocol. Own: questions from the agent's own script; CQ: \
         from other civilians' scripts; MQ: from the murderer's; Others: CQ and MQ together. Win rate: \
         share of games the civilians won under {}; detection: votes received by the murderer / votes \
         cast (ThinkThrice Figure 4). Each cell is the mean over games (pooled over scripts) with its \
         {} bootstrap interval over games.",
        papers::win_rule(protocol),
        level_text(boot.level)
    );
    for c in rows {
        let mut cells = vec![
            Cell::Text(c.method()),
            Cell::Number(Some(c.arms.len() as f64)),
            Cell::Number(Some(c.games.len() as f64)),
        ];
        for m in metrics {
            cells.push(Cell::MeanCi(boot.mean(&values(m, g.results(&c.games)))));
        }
        t.push(cells, false);
    }
    Some(t)
}

/// The headline metrics compared between conditions of a protocol.
fn paired_metrics(protocol: &str) -> &'static [Metric] {
    match protocol {
        "thinkthrice" => &[Metric::Others, Metric::CivilianWin, Metric::Detection],
        "wellplay" => &[Metric::ChoiceScore, Metric::CivilianWin, Metric::Detection],
        "mirage" => &[Metric::Victory, Metric::Cic],
        _ => &[Metric::CivilianWin, Metric::Detection],
    }
}

/// Every two conditions of the same protocol compared on the games they share: same script (same
/// version: title and content digest), same seed.
/// A is the later condition in report order, B the earlier (a reference such as PP or No MR comes
/// first), so Δ = A − B reads as "what A adds".
pub fn paired(g: &Grouping, boot: &Bootstrap) -> Option<Table> {
    let mut t = Table::new(
        "paired",
        "Paired comparisons — same scripts, same seeds",
        vec![
            Column::new("Protocol", "protocol", Kind::Text),
            Column::new("Metric", "metric", Kind::Text),
            Column::new("A", "a", Kind::Text),
            Column::new("B", "b", Kind::Text),
            Column::new("Pairs", "pairs", Kind::Number(0)),
            Column::new("Δ = A − B", "difference", Kind::MeanCi(RATE)),
        ],
    );
    t.note = format!(
        "Games of A and B are paired when they share script (the same version) and seed; Δ is the mean of the per-pair \
         differences with its {} paired bootstrap interval (whole pairs resampled). An interval that \
         excludes 0 says the two conditions differ at that level; pairing cancels what the two games \
         share (the script's difficulty, the seed's draws), so it is narrower than comparing the \
         arms' own intervals.",
        level_text(boot.level)
    );
    // (script, version, seed) → first game of each condition.
    type Key = (String, Option<String>, u64);
    let index: Vec<BTreeMap<Key, usize>> = g
        .conditions
        .iter()
        .map(|c| {
            let mut m = BTreeMap::new();
            for &gi in &c.games {
                let r = &g.games[gi].result;
                let version = script_digest(&g.games[gi]).map(str::to_string);
                m.entry((r.script.clone(), version, r.seed)).or_insert(gi);
            }
            m
        })
        .collect();
    for b in 0..g.conditions.len() {
        for a in b + 1..g.conditions.len() {
            let (ca, cb) = (&g.conditions[a], &g.conditions[b]);
            if ca.key.protocol != cb.key.protocol {
                continue;
            }
            let shared: Vec<(usize, usize)> = index[a]
                .iter()
                .filter_map(|(k, &ga)| index[b].get(k).map(|&gb| (ga, gb)))
                .collect();
            if shared.is_empty() {
                continue;
            }
            for &m in paired_metrics(&ca.key.protocol) {
                let (xa, xb): (Vec<f64>, Vec<f64>) = shared
                    .iter()
                    .filter_map(|&(ga, gb)| {
                        Some((m.of(&g.games[ga].result)?, m.of(&g.games[gb].result)?))
                    })
                    .unzip();
                if xa.is_empty() {
                    continue;
                }
                let d =
                    stats::paired_difference(&xa, &xb, boot.resamples, boot.level, boot.seed).ok();
                t.push(
                    vec![
                        Cell::Text(ca.key.protocol.clone()),
                        Cell::Text(m.name().into()),
                        Cell::Text(ca.method()),
                        Cell::Text(cb.method()),
                        Cell::Number(Some(xa.len() as f64)),
                        Cell::MeanCi(d),
                    ],
                    false,
                );
            }
        }
    }
    (!t.rows.is_empty()).then_some(t)
}

/// Per-script values as groups of weight 1, for a plain mean over scripts.
fn unweighted(per_script: &[Vec<f64>]) -> Vec<Group<'_>> {
    per_script.iter().map(|v| Group::unweighted(v)).collect()
}

/// "95%" for 0.95.
pub fn level_text(level: f64) -> String {
    let pct = level * 100.0;
    if (pct - pct.round()).abs() < 1e-9 {
        format!("{pct:.0}%")
    } else {
        format!("{pct}%")
    }
}

/// CSV field stem of a metric.
fn field(m: Metric) -> &'static str {
    match m {
        Metric::CivilianWin => "civilian_win_rate",
        Metric::Voting => "voting",
        Metric::Detection => "murderer_detection",
        Metric::Own => "own",
        Metric::Cq => "cq",
        Metric::Mq => "mq",
        Metric::Others => "others",
        Metric::Objective => "objective",
        Metric::Reasoning => "reasoning",
        Metric::Relations => "relations",
        Metric::ChoiceScore => "overall",
        Metric::Victory => "victory",
        Metric::Cic => "cic",
    }
}
