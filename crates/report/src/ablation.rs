//! ThinkThrice's per-module ablation as its Table 4 prints it: one row per module combination
//! (No MR, MR, MR+SR, MR+SR+SV(N=1), MR+SR+SV(N=3)) with factual accuracy on the agent's own
//! questions (Own), other civilians' (CQ), the murderer's (MQ) and both (Others).
//!
//! ThinkThrice Table 4 (`tables::factual`) prints every condition of the ThinkThrice protocol, named
//! by whatever sets it apart; the paper's table isolates the modules. So this table takes the
//! ThinkThrice framework's conditions that differ *only* by modules — same protocol, model,
//! murderers' framework and settings — and prints each such group in the paper's row order. Every
//! protocol that can run the modules gets it (the ThinkThrice framework plays under the thinkthrice
//! and wellplay protocols), titled by the protocol unless it is ThinkThrice's own (`papers` says why).

use std::collections::{BTreeMap, BTreeSet};

use super::arms::{modules_name, Condition, Grouping};
use super::metrics::{values, Bootstrap, Metric};
use super::table::{Cell, Column, Kind, Table};
use sleuth_game::game::Protocol;

/// The file stem of the ablation for `protocol`'s games.
pub fn id(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::ThinkThrice => "thinkthrice_table4_modules",
        Protocol::WellPlay => "wellplay_modules",
        Protocol::Mirage => "mirage_modules",
    }
}

/// Every file stem this module may write.
pub fn ids() -> impl Iterator<Item = &'static str> {
    Protocol::ALL.into_iter().map(id)
}

/// The factual columns, in Table 4's order.
const FACTUAL: [Metric; 4] = [Metric::Own, Metric::Cq, Metric::Mq, Metric::Others];

/// CSV field stems of [`FACTUAL`], as Table 4's CSV names them.
const FIELDS: [&str; 4] = ["own", "cq", "mq", "others"];

/// ThinkThrice Table 4 as printed (GPT-3.5): per module combination, Own, CQ, MQ and Others.
pub const PUBLISHED: [(&str, [f64; 4]); 5] = [
    ("No MR", [0.764, 0.278, 0.306, 0.293]),
    ("MR", [0.734, 0.358, 0.391, 0.394]),
    ("MR+SR", [0.735, 0.464, 0.447, 0.473]),
    ("MR+SR+SV(N=1)", [0.765, 0.474, 0.572, 0.498]),
    ("MR+SR+SV(N=3)", [0.760, 0.508, 0.520, 0.509]),
];

/// Where a module combination sits in Table 4: by how many modules it switches on, then SV's attempts
/// (`None` for anything Table 4 does not name, which goes last in name order).
fn rank(modules: &str) -> (usize, u32, String) {
    let name = modules_name(modules);
    if name == "No MR" || name.is_empty() {
        return (0, 0, name);
    }
    let parts = name.split('+').count();
    let attempts = name
        .split("N=")
        .nth(1)
        .and_then(|n| n.trim_end_matches(')').parse().ok())
        .unwrap_or(0);
    (parts, attempts, name)
}

/// The ablation for one protocol's games; `None` when no group of ThinkThrice-framework conditions
/// differing only by modules answered factual questions.
pub fn modules(g: &Grouping, boot: &Bootstrap, protocol: Protocol) -> Option<Table> {
    let mut groups: BTreeMap<Condition, Vec<usize>> = BTreeMap::new();
    for (ci, c) in g.conditions.iter().enumerate() {
        let answered = g
            .results(&c.games)
            .any(|r| FACTUAL.iter().any(|m| m.of(r).is_some()));
        if c.key.protocol != protocol.as_str() || c.key.framework != "thinkthrice" || !answered {
            continue;
        }
        let mut rest = c.key.clone();
        rest.modules.clear();
        groups.entry(rest).or_default().push(ci);
    }
    groups.retain(|_, cs| {
        cs.iter()
            .map(|&ci| &g.conditions[ci].key.modules)
            .collect::<BTreeSet<_>>()
            .len()
            > 1
    });
    if groups.is_empty() {
        return None;
    }
    // Settings that tell the groups apart (none with one group).
    let all: Vec<&Condition> = groups.keys().collect();
    let differing = |k: &Condition| -> String {
        k.settings
            .iter()
            .filter(|s| !all.iter().all(|o| o.settings.contains(s)))
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let paper = protocol == Protocol::ThinkThrice;
    let title = if paper {
        "ThinkThrice Table 4 — factual QA per module combination".to_string()
    } else {
        format!("Factual QA per ThinkThrice module combination — {protocol} protocol")
    };
    let mut columns = vec![
        Column::new("Modules", "modules", Kind::Text),
        Column::new("Model", "model", Kind::Text),
        Column::new("Settings", "settings", Kind::Text),
        Column::new("Scripts", "scripts", Kind::Number(0)),
        Column::new("Games", "games", Kind::Number(0)),
    ];
    for (m, f) in FACTUAL.into_iter().zip(FIELDS) {
        columns.push(Column::new(m.name(), f, Kind::MeanCi(3)));
    }
    let mut t = Table::new(id(protocol), &title, columns);
    t.note = format!(
        "Games of the ThinkThrice framework played under the {protocol} protocol, grouped into \
         conditions that differ only by modules (same model, murderers' framework and settings; \
         Settings names what sets a group apart when there are several), each group's rows in Table \
         4's order: No MR, MR, MR+SR, MR+SR+SV(N=1), MR+SR+SV(N=3). Own: factual questions from the \
         agent's own script; CQ: from other civilians' scripts; MQ: from the murderer's; Others: CQ \
         and MQ together. Each cell is the mean over games pooled over scripts with its {} bootstrap \
         interval over games. Compare rows within a group on the same scripts (the Scripts column).",
        super::tables::level_text(boot.level)
    );
    let labels: Vec<String> = all.iter().map(|k| differing(k)).collect();
    for ((_, mut conditions), settings) in groups.clone().into_iter().zip(labels) {
        conditions.sort_by_key(|&ci| rank(&g.conditions[ci].key.modules));
        for ci in conditions {
            let c = &g.conditions[ci];
            let mut cells = vec![
                Cell::Text(rank(&c.key.modules).2),
                Cell::Text(c.key.model.clone()),
                Cell::Text(settings.clone()),
                Cell::Number(Some(c.arms.len() as f64)),
                Cell::Number(Some(c.games.len() as f64)),
            ];
            for m in FACTUAL {
                cells.push(Cell::MeanCi(boot.mean(&values(m, g.results(&c.games)))));
            }
            t.push(cells, false);
        }
    }
    if paper {
        // The paper's rows of the combinations played here, after sleuth's.
        let played: BTreeSet<String> = t
            .rows
            .iter()
            .filter_map(|r| match r.cells.first() {
                Some(Cell::Text(m)) => Some(m.clone()),
                _ => None,
            })
            .collect();
        for (name, xs) in PUBLISHED {
            if !played.contains(name) {
                continue;
            }
            let mut cells = vec![
                Cell::Text(format!("Published: {name}")),
                Cell::Text("gpt-3.5-turbo".into()),
                Cell::Text(String::new()),
                Cell::Number(None),
                Cell::Number(None),
            ];
            cells.extend(xs.iter().map(|&x| {
                Cell::MeanCi(Some(sleuth_game::eval::stats::Interval {
                    estimate: x,
                    low: x,
                    high: x,
                    n: 1,
                    level: boot.level,
                }))
            }));
            t.push(cells, true);
        }
        t.note.push_str(
            " Rows \"Published: …\": ThinkThrice Table 4 as printed (GPT-3.5, no interval), for the \
             combinations played here.",
        );
    }
    Some(t)
}
