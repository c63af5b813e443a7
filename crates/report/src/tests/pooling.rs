//! Pooling across scripts with unequal games per script: MIRAGE's overall row is a mean over
//! scripts (CIC pools the counts), PLAYER*'s weighted rows weigh scripts, not games. Each test
//! computes the mean over games beside the expected value to show that the two differ.

use std::collections::BTreeMap;

use serde_json::json;

use super::{choice, close, interval, mean_std, record, result, text};
use crate::*;
use sleuth_game::game::{GameResult, MirageOutcome};

/// A MIRAGE game on `script` (with `clues` clues) in which the characters investigated `found` of
/// them, with reciprocal rank `victory`.
fn mirage(script: &str, seed: u64, clues: usize, found: usize, victory: f64) -> GameResult {
    let mut r = result(script, "mirage", seed);
    r.protocol = "mirage".into();
    r.settings = json!({"iterations": 5});
    let ids: Vec<String> = (0..found).map(|i| format!("c{i}")).collect();
    r.mirage = Some(MirageOutcome {
        victory,
        // Split between two characters: CIC counts the table's investigations together.
        investigated: BTreeMap::from([
            ("Al".to_string(), ids[..found / 2].to_vec()),
            ("Mo".to_string(), ids[found / 2..].to_vec()),
        ]),
        clues_available: clues,
        ..MirageOutcome::default()
    });
    r
}

fn build(games: Vec<GameResult>) -> Report {
    Report::build(
        std::path::Path::new("runs"),
        Loaded {
            games: games.into_iter().map(record).collect(),
            skipped: vec![],
        },
        Bootstrap::default(),
    )
}

#[test]
fn mirage_table2_is_a_mean_over_scripts_not_over_games() {
    // Script A (4 clues) played three times: Victory 1 each, 2, 2 and 4 clues found. Script B (12
    // clues) once: Victory 0, 3 clues found.
    let mut games = vec![
        mirage("A", 1, 4, 2, 1.0),
        mirage("A", 2, 4, 2, 1.0),
        mirage("A", 3, 4, 4, 1.0),
        mirage("B", 1, 12, 3, 0.0),
    ];
    for (g, calls) in games.iter_mut().zip([10, 10, 40, 100]) {
        g.usage_by_phase.gameplay.calls = calls;
    }
    let report = build(games);
    let t = report.table("mirage_table2").expect("table 2");
    assert_eq!(text(t, 0, "Scripts"), "2");
    assert_eq!(text(t, 0, "Games"), "4");
    // Victory: (1 + 0)/2 over scripts; over games it would be 3/4.
    let v = interval(t, 0, "Victory").unwrap();
    assert!(close(v.estimate, 50.0), "{v:?}");
    assert_eq!(v.n, 4);
    // CIC pools counts: A's games found 8/3 clues on average, B's 3; (8/3 + 3)/(4 + 12) = 17/48.
    // The mean of the games' CIC would be (0.5 + 0.5 + 1 + 0.25)/4 = 0.5625, the mean of the
    // scripts' CIC (2/3 + 1/4)/2 = 0.4583: neither is MIRAGE's.
    let cic = interval(t, 0, "CIC").unwrap();
    assert!(close(cic.estimate, 100.0 * 17.0 / 48.0), "{cic:?}");
    // Requests per simulation: (20 + 100)/2 over scripts, not 160/4.
    assert_eq!(text(t, 0, "Envs"), "60");
}

#[test]
fn the_tii_column_is_the_suspicion_share() {
    // Al was trusted 0.6 and suspected 0.2 by Mo; Mo trusted 0 and suspected 0.5 by Al, over two
    // phases (0.25 + 0.25). Al's own view of himself does not count.
    let mut r = mirage("A", 1, 4, 2, 1.0);
    let m = r.mirage.as_mut().expect("mirage");
    let scores = |rows: &[(&str, &str, &[f64])]| {
        let mut out: BTreeMap<String, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
        for (scorer, scored, xs) in rows {
            out.entry(scorer.to_string())
                .or_default()
                .insert(scored.to_string(), xs.to_vec());
        }
        out
    };
    m.trust = scores(&[
        ("Mo", "Al", &[0.6]),
        ("Al", "Mo", &[0.0, 0.0]),
        ("Al", "Al", &[1.0]),
    ]);
    m.suspicion = scores(&[("Mo", "Al", &[0.2]), ("Al", "Mo", &[0.25, 0.25])]);
    // Suspicion shares: Al 0.2/0.8 = 0.25, Mo 0.5/0.5 = 1; mean 0.625. Eq. 1's trust share would be
    // 0.375.
    assert!(close(m.tii_suspicion_share().unwrap(), 0.625));
    let report = build(vec![r]);
    let t = report.table("mirage_table2").expect("table 2");
    let tii = interval(t, 0, "TII (suspicion share)").unwrap();
    assert!(close(tii.estimate, 62.5), "{tii:?}");
}

#[test]
fn table_a3_weighs_scripts_by_their_questions_not_by_their_games() {
    // Inn: three games, objective 0 of 1 each; Villa: one game, objective 1 of 1. One objective
    // question per script, so equal weights: (0 + 1)/2 = 0.5 — over games it would be 1/4.
    let mut games = Vec::new();
    for seed in 1..=3 {
        let mut r = result("Inn", "player", seed);
        r.choice = Some(choice((0, 1), (1, 2), (1, 2)));
        games.push(r);
    }
    let mut villa = result("Villa", "player", 1);
    villa.choice = Some(choice((1, 1), (1, 2), (1, 2)));
    games.push(villa);
    let g = Grouping::new(games.into_iter().map(record).collect());
    let t = tables::player_table_a3(&g).expect("A3");
    let last = t.rows.len() - 1;
    assert_eq!(text(&t, last, "Script"), "All scripts (weighted)");
    let (m, s) = mean_std(&t, last, "Objective").unwrap();
    // Spread: no run spread within a script, (0 − ½)² and (1 − ½)² between: s = ½.
    assert!(close(m, 0.5) && close(s, 0.5), "{m} {s}");
    // Overall: Inn 0 + 5 + 2 = 7 of 24 points in every game, Villa 10 + 5 + 2 = 17 of 24; weighted
    // by possible points, (7 + 17)/48 = 1/2 — over games it would be (3·7 + 17)/96.
    let (m, _) = mean_std(&t, last, "Overall").unwrap();
    assert!(close(m, 0.5), "{m}");
}
