//! MIRAGE Table 2 (results per simulation, pooled over scripts) and the summary Tables 9 and 10
//! reuse.

use super::*;

/// MIRAGE Table 2 per condition, pooled over scripts as the paper pools its per-script Table 11: every
/// column the mean over scripts of the script's mean per game, CIC the clues investigated over the
/// clues available of all scripts. The MIRAGE protocol's games only (no other protocol records
/// Victory or investigations). The paper's rows follow sleuth's ([`crate::mirage`]).
pub fn mirage_table2(
    g: &Grouping,
    boot: &Bootstrap,
    clues: &BTreeMap<usize, Timeline>,
) -> Option<Table> {
    let rows: Vec<(String, &ConditionInfo)> = g
        .conditions
        .iter()
        .filter(|c| c.key.protocol == Protocol::Mirage.as_str())
        .map(|c| (c.method(), c))
        .collect();
    let mut t = mirage_summary(
        g,
        boot,
        clues,
        ("mirage_table2", "MIRAGE Table 2 — results per simulation"),
        &rows,
    )?;
    crate::mirage::append_summaries(
        &mut t,
        &crate::mirage::published::TABLE2,
        rows.iter().map(|(_, c)| c.key.model.as_str()),
    );
    t.note.push(' ');
    t.note
        .push_str(&crate::mirage::published_note("MIRAGE Table 2"));
    Some(t)
}

/// Table 2's columns for the given conditions, each row labelled as given: Table 2 itself, and
/// Tables 9 and 10 (the conditions without and with forced exposure).
pub fn mirage_summary(
    g: &Grouping,
    boot: &Bootstrap,
    clues: &BTreeMap<usize, Timeline>,
    (id, title): (&'static str, &str),
    rows: &[(String, &ConditionInfo)],
) -> Option<Table> {
    if rows.is_empty() {
        return None;
    }
    let mut t = Table::new(
        id,
        title,
        [
            Column::new("Model", "model", Kind::Text),
            Column::new("Scripts", "scripts", Kind::Number(0)),
            Column::new("Games", "games", Kind::Number(0)),
        ]
        .into_iter()
        .chain(summary_columns())
        .collect(),
    );
    t.note = format!(
        "Games played under the mirage protocol. Pooled over scripts as MIRAGE pools its per-script \
         results (Table 11 → Table 2): each value is the mean over scripts of the script's mean per \
         game, so a script played in more games does not weigh more; CIC and CIC key pool the counts \
         (clues investigated by all characters, summed over scripts / clues available, summed over \
         scripts). Scores ×100 as in the paper, with {} bootstrap intervals (scripts, then each \
         script's games, resampled). Env tokens / Envs: gameplay prompt tokens and calls; User tokens / \
         Users: gameplay completion tokens and calls (sleuth does not split environment requests from \
         player completions, so Envs = Users). Victory: reciprocal rank of the culprit in the vote \
         (MRR). TII: the suspicion share, suspicion / (suspicion + trust) the others gave a character, \
         averaged over characters — the convention of MIRAGE's published numbers and reference code \
         (the paper's Eq. 1 prints the trust share, 1 − this); higher means more suspected. CIC key: \
         key clues, from the transcript. ICI and SCI (judge scores, 0-100) as the games recorded them; \
         — where no game did. Parse failures: replies that could not be parsed, over gameplay and \
         evaluation.",
        level_text(boot.level)
    );
    for (label, c) in rows {
        let arms: Vec<&Arm> = c.arms.iter().map(|&ai| &g.arms[ai]).collect();
        // Per script (arm), the values its games measured.
        let per_script = |f: &dyn Fn(usize) -> Option<f64>| -> Vec<Vec<f64>> {
            arms.iter()
                .map(|a| a.games.iter().filter_map(|&gi| f(gi)).collect())
                .collect()
        };
        let result = |gi: usize| &g.games[gi].result;
        let number = |f: &dyn Fn(&GameResult) -> f64| {
            stats::mean_over_groups(&unweighted(&per_script(&|gi| Some(f(result(gi))))))
        };
        let interval = |f: &dyn Fn(&GameResult) -> Option<f64>, scale: f64| {
            boot.over_scripts(&unweighted(&per_script(&|gi| {
                f(result(gi)).map(|x| x * scale)
            })))
        };
        // CIC pools counts: each script weighs by its clues, so the weighted mean of the games'
        // CIC is (mean clues investigated, summed over scripts) / (clues, summed over scripts).
        let pooled = |key_only: bool| {
            let found = per_script(&|gi| {
                let m = result(gi).mirage.as_ref()?;
                if key_only {
                    // From the transcript's clue events: result.json does not say which were key.
                    formulas::cic(clues.get(&gi)?.total(true), m.key_clues_available)
                } else {
                    m.cic()
                }
                .map(|x| x * 100.0)
            });
            let available = per_script(&|gi| {
                let m = result(gi).mirage.as_ref()?;
                let n = if key_only {
                    clues.get(&gi).map(|_| m.key_clues_available)?
                } else {
                    m.clues_available
                };
                Some(n as f64)
            });
            let groups: Vec<Group> = found
                .iter()
                .zip(&available)
                .map(|(values, n)| Group {
                    values,
                    weight: stats::mean(n).unwrap_or(0.0),
                })
                .collect();
            boot.over_scripts(&groups)
        };
        let judged = |f: fn(&MirageScores) -> Option<f64>| {
            interval(&|r: &GameResult| f(r.mirage_scores.as_ref()?), 1.0)
        };
        let calls = number(&|r| r.usage_by_phase.gameplay.calls as f64);
        t.push(
            vec![
                Cell::Text(label.clone()),
                Cell::Number(Some(arms.len() as f64)),
                Cell::Number(Some(c.games.len() as f64)),
                Cell::Number(number(&|r| r.usage_by_phase.gameplay.prompt_tokens as f64)),
                Cell::Number(calls),
                Cell::Number(number(&|r| {
                    r.usage_by_phase.gameplay.completion_tokens as f64
                })),
                Cell::Number(calls),
                Cell::MeanCi(interval(&|r| Metric::Victory.of(r), 100.0)),
                Cell::MeanCi(interval(
                    &|r| r.mirage.as_ref()?.tii_suspicion_share(),
                    100.0,
                )),
                Cell::MeanCi(pooled(false)),
                Cell::MeanCi(pooled(true)),
                Cell::MeanCi(judged(|m| m.ici)),
                Cell::MeanCi(judged(|m| m.sci)),
                Cell::Number(number(&|r| r.usage.parse_failures as f64)),
            ],
            false,
        );
    }
    Some(t)
}

/// Table 2's measure columns, which Table 11 (per script) and Tables 9 and 10 share: tokens and
/// requests, then Victory, TII, CIC, CIC key, ICI and SCI (×100, with intervals) and parse failures.
pub fn summary_columns() -> Vec<Column> {
    let pct = Kind::MeanCi(2);
    vec![
        Column::new("Env tokens", "env_tokens", Kind::Number(0)),
        Column::new("Envs", "envs", Kind::Number(0)),
        Column::new("User tokens", "user_tokens", Kind::Number(0)),
        Column::new("Users", "users", Kind::Number(0)),
        Column::new("Victory", "victory", pct),
        Column::new("TII (suspicion share)", "tii_suspicion_share", pct),
        Column::new("CIC", "cic", pct),
        Column::new("CIC key", "cic_key", pct),
        Column::new("ICI", "ici", pct),
        Column::new("SCI", "sci", pct),
        Column::new("Parse failures", "parse_failures", Kind::Number(1)),
    ]
}
