//! MIRAGE Tables 9, 10 and 3: forced self-exposure. Table 9 is Table 2 for the conditions played
//! without it, Table 10 for the same conditions with it (`force_expose`: every culprit announces itself
//! before anyone speaks), Table 3 the TII of the two side by side and their difference. A condition
//! enters only with its twin: two conditions that differ in `force_expose` alone (same protocol,
//! framework, model, modules and every other setting), so the difference is the exposure's.

use std::collections::BTreeMap;

use super::published::{TABLE10, TABLE3, TABLE9};
use super::{append_summaries, published_label, published_note, published_row, shown};
use crate::arms::{script_digest, ConditionInfo, Grouping};
use crate::clues::Timeline;
use crate::metrics::Bootstrap;
use crate::table::{Cell, Column, Kind, Table};
use crate::tables::{level_text, mirage_summary};
use sleuth_game::eval::stats::Group;

/// File stems.
pub const ID9: &str = "mirage_table9";
pub const ID10: &str = "mirage_table10";
pub const ID3: &str = "mirage_table3";

/// The setting that tells the twins apart, as `result.json` records it.
const SETTING: &str = "force_expose";

/// Two conditions that differ only by forced exposure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Twins {
    pub without: usize,
    pub with: usize,
    /// The method without the `force_expose` part.
    pub label: String,
}

/// Every pair of MIRAGE conditions that differ only by `force_expose`, in report order.
pub fn twins(g: &Grouping) -> Vec<Twins> {
    let rest = |c: &ConditionInfo| {
        let mut k = c.key.clone();
        k.settings.retain(|(s, _)| s != SETTING);
        k
    };
    let mut out = Vec::new();
    for (with, c) in super::mirage_conditions(g) {
        if c.key.setting(SETTING) != Some("true") {
            continue;
        }
        let twin = super::mirage_conditions(g)
            .find(|(_, d)| d.key.setting(SETTING) == Some("false") && rest(d) == rest(c));
        if let Some((without, d)) = twin {
            out.push(Twins {
                without,
                with,
                label: d.label_without(&[SETTING]),
            });
        }
    }
    out.sort_by_key(|t| t.without);
    out
}

/// Tables 9, 10 and 3 from the twins the games hold (none without), and a note per forced-exposure
/// game that had nobody to expose.
pub fn tables(
    g: &Grouping,
    boot: &Bootstrap,
    clues: &BTreeMap<usize, Timeline>,
) -> (Vec<Table>, Vec<String>) {
    let pairs = twins(g);
    if pairs.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let mut tables = Vec::new();
    let models = || {
        pairs
            .iter()
            .map(|p| g.conditions[p.without].key.model.as_str())
    };
    for (id, title, pick, paper, what) in [
        (
            ID9,
            "MIRAGE Table 9 — results per simulation without forced self-exposure",
            (|p: &Twins| p.without) as fn(&Twins) -> usize,
            &TABLE9,
            "without",
        ),
        (
            ID10,
            "MIRAGE Table 10 — results per simulation with forced self-exposure",
            |p: &Twins| p.with,
            &TABLE10,
            "with",
        ),
    ] {
        let rows: Vec<(String, &ConditionInfo)> = pairs
            .iter()
            .map(|p| (p.label.clone(), &g.conditions[pick(p)]))
            .collect();
        if let Some(mut t) = mirage_summary(g, boot, clues, (id, title), &rows) {
            append_summaries(&mut t, paper, models());
            t.note = format!(
                "MIRAGE Table 2's measures (its note says what each is) for the conditions played \
                 {what} forced self-exposure (force_expose = {}) that have a twin played {} it, alike \
                 in everything else; Model names the condition without its force_expose setting. {}",
                what == "with",
                if what == "with" { "without" } else { "with" },
                published_note(&format!(
                    "MIRAGE Table {}",
                    if what == "with" { 10 } else { 9 }
                ))
            );
            tables.push(t);
        }
    }
    tables.push(table3(g, boot, &pairs));
    (tables, unexposed(g, &pairs))
}

/// Per script version, the TII (×100) of each of a condition's games, by seed.
fn tii_by_script(
    g: &Grouping,
    ci: usize,
) -> BTreeMap<(String, Option<String>), BTreeMap<u64, f64>> {
    let mut out: BTreeMap<_, BTreeMap<u64, f64>> = BTreeMap::new();
    for &gi in &g.conditions[ci].games {
        let game = &g.games[gi];
        let r = &game.result;
        let Some(x) = r.mirage.as_ref().and_then(|m| m.tii_suspicion_share()) else {
            continue;
        };
        out.entry((r.script.clone(), script_digest(game).map(str::to_string)))
            .or_default()
            .entry(r.seed)
            .or_insert(x * 100.0);
    }
    out
}

/// MIRAGE Table 3: per twin, TII without and with forced exposure (pooled over scripts as Table 2
/// pools it) and the difference on the games they share.
fn table3(g: &Grouping, boot: &Bootstrap, pairs: &[Twins]) -> Table {
    let pct = Kind::MeanCi(2);
    let mut t = Table::new(
        ID3,
        "MIRAGE Table 3 — TII without and with forced self-exposure",
        vec![
            Column::new("Model", "model", Kind::Text),
            Column::new("Scripts", "scripts", Kind::Number(0)),
            Column::new("Pairs", "pairs", Kind::Number(0)),
            Column::new("TII w/o E", "tii_without", pct),
            Column::new("TII w/ E", "tii_with", pct),
            Column::new("Δ", "difference", pct),
        ],
    );
    t.note = format!(
        "TII (suspicion share, ×100: Table 2's) of the conditions played without (w/o E) and with \
         (w/ E) forced self-exposure, for each two conditions alike in everything else; Model names \
         them without the force_expose setting. TII w/o E and w/ E are pooled over scripts as in \
         Table 2 (the mean over scripts of each script's mean per game); Δ = w/ E − w/o E over the \
         pairs of games that share script (the same version) and seed, each script's mean difference \
         then their mean over scripts, so with every game paired Δ is the difference of the two \
         columns. Intervals: {} bootstrap, scripts then each script's games (pairs) resampled. \
         Pairs: games paired for Δ. A rise is more suspicion. The paper played the culprit with one \
         model (Qwen-2-7B) and the civilians with each of the others (a sweep's murderer_model). {}",
        level_text(boot.level),
        published_note("MIRAGE Table 3")
    );
    for p in pairs {
        let (without, with) = (tii_by_script(g, p.without), tii_by_script(g, p.with));
        let pooled = |by: &BTreeMap<(String, Option<String>), BTreeMap<u64, f64>>| {
            let values: Vec<Vec<f64>> =
                by.values().map(|s| s.values().copied().collect()).collect();
            let groups: Vec<Group> = values.iter().map(|v| Group::unweighted(v)).collect();
            boot.over_scripts(&groups)
        };
        let differences: Vec<Vec<f64>> = without
            .iter()
            .filter_map(|(script, seeds)| {
                let other = with.get(script)?;
                let d: Vec<f64> = seeds
                    .iter()
                    .filter_map(|(seed, a)| Some(other.get(seed)? - a))
                    .collect();
                (!d.is_empty()).then_some(d)
            })
            .collect();
        let groups: Vec<Group> = differences.iter().map(|v| Group::unweighted(v)).collect();
        let scripts = g.conditions[p.without]
            .arms
            .iter()
            .chain(&g.conditions[p.with].arms)
            .map(|&ai| (&g.arms[ai].script, &g.arms[ai].digest))
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        t.push(
            vec![
                Cell::Text(p.label.clone()),
                Cell::Number(Some(scripts as f64)),
                Cell::Number(Some(differences.iter().map(Vec::len).sum::<usize>() as f64)),
                Cell::MeanCi(pooled(&without)),
                Cell::MeanCi(pooled(&with)),
                Cell::MeanCi(boot.over_scripts(&groups)),
            ],
            false,
        );
    }
    let names: Vec<&str> = TABLE3.iter().map(|(m, _)| *m).collect();
    let models = pairs
        .iter()
        .map(|p| g.conditions[p.without].key.model.as_str());
    for model in shown(&names, models) {
        let Some((_, [a, b, d])) = TABLE3.iter().find(|(m, _)| *m == model) else {
            continue;
        };
        let values = [("TII w/o E", *a), ("TII w/ E", *b), ("Δ", *d)];
        let row = published_row(
            &t,
            &[
                ("Model", Cell::Text(published_label(model))),
                (
                    "Scripts",
                    Cell::Number(Some(super::published::TABLE1.len() as f64)),
                ),
            ],
            &|h| values.iter().find(|(k, _)| *k == h).map(|(_, v)| *v),
        );
        t.push(row, false);
    }
    t
}

/// Whether a game's culprits did expose themselves: exposure was forced and a culprit plays (the
/// result records `forced_exposure` as set, also for a script whose culprit does not play, where
/// nobody could; every player is a key of `investigated`).
fn exposed(r: &sleuth_game::game::GameResult, m: &sleuth_game::game::MirageOutcome) -> bool {
    m.forced_exposure && r.murderers.iter().any(|c| m.investigated.contains_key(c))
}

/// A note for each forced-exposure condition some of whose games had no culprit among the players
/// (a script whose culprit does not play), so nobody exposed themselves.
fn unexposed(g: &Grouping, pairs: &[Twins]) -> Vec<String> {
    let mut notes = Vec::new();
    for p in pairs {
        let c = &g.conditions[p.with];
        let mut scripts: BTreeMap<&str, usize> = BTreeMap::new();
        for &gi in &c.games {
            let r = &g.games[gi].result;
            if r.mirage.as_ref().is_some_and(|m| !exposed(r, m)) {
                *scripts.entry(r.script.as_str()).or_default() += 1;
            }
        }
        if !scripts.is_empty() {
            let list: Vec<String> = scripts.iter().map(|(s, n)| format!("{s} ({n})")).collect();
            notes.push(format!(
                "MIRAGE Tables 3 and 10, {}: games with forced exposure set had no culprit among the \
                 players, so nobody exposed themselves; they count as played: {}",
                p.label,
                list.join(", ")
            ));
        }
    }
    notes
}
