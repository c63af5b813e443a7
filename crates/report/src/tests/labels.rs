//! Reports labelled by what was played: a paper's section holds only its protocol's games, and games
//! of different script versions are never repeats of one arm.

use serde_json::json;

use super::{record, result};
use crate::figures::XAxis;
use crate::*;
use sleuth_game::game::{GameConfig, GameResult, ScriptRef, Winner};

/// `r` as recorded with a spec naming a script of content digest `digest`.
fn with_digest(mut r: GameResult, digest: &str) -> GameResult {
    let mut spec = GameConfig::default().spec(&sleuth_script::fixtures::tiny(), "simulated");
    spec.script.digest = digest.into();
    spec.script.title = r.script.clone();
    r.spec = Some(spec);
    r
}

/// A ThinkThrice-protocol game of the ThinkThrice framework with all modules.
fn thinkthrice(script: &str, seed: u64, won: bool) -> GameResult {
    let mut r = result(script, "thinkthrice", seed);
    r.protocol = "thinkthrice".into();
    r.modules = "mr,sr,sv=3".into();
    r.settings = json!({"rounds_before_clues": 2, "rounds_after_clues": 3});
    r.winner = Some(if won {
        Winner::Civilians
    } else {
        Winner::Murderer
    });
    r.murderer_detection_accuracy = if won { 1.0 } else { 0.0 };
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
fn figure4_and_table4_hold_only_thinkthrice_games() {
    // The WellPlay game was won under another rule (elimination): pooled, Figure 4 would print its
    // win as one of ThinkThrice's.
    let mut wellplay = result("Inn", "thinkthrice", 3);
    wellplay.modules = "mr,sr,sv=3".into();
    wellplay.usage_by_phase.gameplay.calls = 5;
    let report = build(vec![
        thinkthrice("Inn", 1, true),
        thinkthrice("Inn", 2, false),
        wellplay,
    ]);
    let f = report.figure("thinkthrice_figure4").expect("Figure 4");
    assert_eq!(
        f.x,
        XAxis::Categories(vec!["ThinkThrice MR+SR+SV(N=3)".into()]),
        "one ThinkThrice condition, named without the protocol"
    );
    let win = &f.series[0].points;
    assert_eq!(win.len(), 1);
    assert_eq!(win[0].value.n, 2, "the two ThinkThrice games only");
    assert!((win[0].value.estimate - 0.5).abs() < 1e-12);
    assert!(f.title.starts_with("ThinkThrice Figure 4"));

    // The WellPlay game's votes are a figure of their own, titled by its protocol.
    let w = report.figure("wellplay_votes").expect("WellPlay votes");
    assert_eq!(
        w.title,
        "Win rate and murderer detection — wellplay protocol"
    );
    assert_eq!(w.series[0].points[0].value.n, 1);
    assert!(w.caption.contains("elimination rule"), "{}", w.caption);

    // Table 4: the ThinkThrice condition only, 2 games; no factual QA from WellPlay, so no WellPlay
    // counterpart.
    let t4 = report.table("thinkthrice_table4").expect("Table 4");
    assert_eq!(t4.rows.len(), 1);
    assert_eq!(super::text(t4, 0, "Games"), "2");
    assert!(report.table("wellplay_factual").is_none());

    // Table A5: the WellPlay game only; the ThinkThrice games' costs under their protocol's title.
    // (The paper's published Overall rows follow sleuth's.)
    let a5 = report.table("player_table_a5").expect("Table A5");
    let played = (0..a5.rows.len())
        .filter(|&i| super::text(a5, i, "Script") != "All scripts (published)")
        .count();
    assert_eq!(played, 1);
    assert_eq!(super::text(a5, 0, "Games"), "1");
    let cost = report.table("thinkthrice_cost").expect("ThinkThrice costs");
    assert_eq!(
        cost.title,
        "Cost per script and phase — thinkthrice protocol"
    );
    assert_eq!(super::text(cost, 0, "Games"), "2");
}

#[test]
fn a_report_of_other_protocols_has_no_paper_section_of_theirs() {
    // ThinkThrice games only: no PLAYER* table, whatever they measured.
    let mut r = thinkthrice("Inn", 1, true);
    r.choice = Some(super::choice((1, 1), (1, 1), (1, 1)));
    let report = build(vec![r]);
    assert!(report.table("player_table_a3").is_none());
    assert!(report.table("player_table_a5").is_none());
    assert!(report.figure("player_figure7").is_none());
    assert!(report.table("thinkthrice_choice").is_some());
    assert!(report.table("mirage_table2").is_none());
    // A protocol sleuth does not know is named in the notes, not filed under a paper.
    let mut odd = result("Inn", "pp", 1);
    odd.protocol = "werewolf-night".into();
    let report = build(vec![odd]);
    assert!(report.table("player_table_a5").is_none());
    assert!(
        report.notes.iter().any(|n| n.contains("werewolf-night")),
        "{:?}",
        report.notes
    );
}

#[test]
fn games_of_different_script_versions_are_different_arms() {
    let (a, b) = ("ab12cd".repeat(10) + "0000", "ef34ab".repeat(10) + "0000");
    let g = Grouping::new(
        [
            with_digest(result("Inn", "player", 1), &a),
            with_digest(result("Inn", "player", 2), &b),
        ]
        .into_iter()
        .map(record)
        .collect(),
    );
    assert_eq!(
        g.conditions.len(),
        1,
        "one condition: only the script changed"
    );
    assert_eq!(g.arms.len(), 2, "two versions are two arms");
    let labels: Vec<&str> = g.arms.iter().map(|a| a.script_label.as_str()).collect();
    assert_eq!(labels, ["Inn @ab12cd", "Inn @ef34ab"]);
    assert_eq!(g.arms[0].digest.as_deref(), Some(a.as_str()));
    assert_eq!(g.scripts().len(), 2);

    // The same digest: one arm with two repeats, named by its title alone.
    let g = Grouping::new(
        [
            with_digest(result("Inn", "player", 1), &a),
            with_digest(result("Inn", "player", 2), &a),
        ]
        .into_iter()
        .map(record)
        .collect(),
    );
    assert_eq!(g.arms.len(), 1);
    assert_eq!(g.arms[0].games.len(), 2);
    assert_eq!(g.arms[0].script_label, "Inn");
}

#[test]
fn a_changed_culprit_moves_the_digest_and_splits_the_arm() {
    let script = sleuth_script::fixtures::tiny();
    let mut edited = script.clone();
    edited.truth.murderer = Some("Ben".into());
    let (old, new) = (ScriptRef::digest_of(&script), ScriptRef::digest_of(&edited));
    assert_ne!(old, new);
    let report = build(vec![
        with_digest(result("Tiny", "player", 1), &old),
        with_digest(result("Tiny", "player", 2), &old),
        with_digest(result("Tiny", "player", 1), &new),
    ]);
    let g = &report.grouping;
    assert_eq!(g.arms.len(), 2);
    let repeats: Vec<usize> = g.arms.iter().map(|a| a.games.len()).collect();
    let mut sorted = repeats.clone();
    sorted.sort();
    assert_eq!(sorted, [1, 2], "{repeats:?}");
    // Tables show which version a row is: each label carries a short digest.
    let a5 = report.table("player_table_a5").expect("A5");
    let mut scripts: Vec<String> = (0..2).map(|i| super::text(a5, i, "Script")).collect();
    scripts.sort();
    let mut expected = vec![
        format!("Tiny @{}", &old[..6]),
        format!("Tiny @{}", &new[..6]),
    ];
    expected.sort();
    assert_eq!(scripts, expected);
    assert!(report.notes.is_empty(), "{:?}", report.notes);

    // Paired comparisons match games on the same version only: PP on the old truth and PLAYER* on
    // the new one share a seed but were scored against different culprits.
    let scored = |framework: &str, digest: &str| {
        let mut r = with_digest(result("Tiny", framework, 1), digest);
        r.choice = Some(super::choice((1, 1), (0, 1), (0, 1)));
        r
    };
    let apart = build(vec![scored("pp", &old), scored("player", &new)]);
    assert!(apart.table("paired").is_none());
    let together = build(vec![scored("pp", &old), scored("player", &old)]);
    let paired = together.table("paired").expect("paired");
    assert_eq!(super::text(paired, 0, "Pairs"), "1");
}

#[test]
fn short_digests_grow_until_versions_differ() {
    let a = "abcdef0123".to_string() + &"0".repeat(54);
    let b = "abcdef0199".to_string() + &"0".repeat(54);
    let g = Grouping::new(
        [
            with_digest(result("Inn", "pp", 1), &a),
            with_digest(result("Inn", "pp", 2), &b),
        ]
        .into_iter()
        .map(record)
        .collect(),
    );
    let labels: Vec<&str> = g.arms.iter().map(|a| a.script_label.as_str()).collect();
    assert_eq!(labels, ["Inn @abcdef012", "Inn @abcdef019"]);
}

#[test]
fn results_without_a_spec_load_and_pool_only_with_each_other() {
    // A result.json as sleuth wrote it before games recorded their spec (and their judges).
    let dir = tempfile::tempdir().expect("temp dir");
    let mut old = serde_json::to_value(result("Inn", "player", 1)).expect("serialises");
    if let Some(o) = old.as_object_mut() {
        o.remove("judges");
        assert!(!o.contains_key("spec"));
    }
    let path = dir.path().join("result.json");
    std::fs::write(&path, old.to_string()).expect("written");
    let loaded = load::read_game(&path).expect("an old result loads");
    assert!(loaded.result.spec.is_none());

    let digest = "ab".repeat(32);
    let mut old2 = loaded.clone();
    old2.result.seed = 2;
    let g = Grouping::new(vec![
        loaded,
        old2,
        record(with_digest(result("Inn", "player", 3), &digest)),
    ]);
    assert_eq!(g.arms.len(), 2, "unknown digests pool only with each other");
    let unknown = g.arms.iter().find(|a| a.digest.is_none()).expect("unknown");
    assert_eq!(unknown.games.len(), 2);
    assert_eq!(unknown.script_label, "Inn @unknown");
    let known = g.arms.iter().find(|a| a.digest.is_some()).expect("known");
    assert_eq!(known.script_label, "Inn @ababab");
}

#[test]
fn a_spec_from_another_sleuth_still_loads_with_its_digest() {
    // `GameSpec` rejects unknown fields (a replay must play exactly what was recorded); the report
    // needs only the script digest, so a spec with a field this sleuth does not know — or without
    // one it expects — must not cost it the game.
    let dir = tempfile::tempdir().expect("temp dir");
    let digest = "cd".repeat(32);
    let mut v =
        serde_json::to_value(with_digest(result("Inn", "player", 1), &digest)).expect("json");
    v["spec"]["a_setting_from_the_future"] = json!(3);
    v["spec"]["script"]["source_url"] = json!("https://example.org/inn");
    let newer = dir.path().join("newer.json");
    std::fs::write(&newer, v.to_string()).expect("written");
    if let Some(spec) = v["spec"].as_object_mut() {
        spec.remove("a_setting_from_the_future");
        spec.remove("seed");
    }
    let older = dir.path().join("older.json");
    std::fs::write(&older, v.to_string()).expect("written");
    for path in [newer, older] {
        let g = load::read_game(&path).expect("loads");
        assert_eq!(g.script_digest.as_deref(), Some(digest.as_str()));
        assert!(
            g.result.spec.is_none(),
            "a spec that does not parse is dropped"
        );
        assert_eq!(arms::script_digest(&g), Some(digest.as_str()));
    }
    // A spec that parses is kept.
    let same = dir.path().join("same.json");
    let v = serde_json::to_value(with_digest(result("Inn", "player", 2), &digest)).expect("json");
    std::fs::write(&same, v.to_string()).expect("written");
    let g = load::read_game(&same).expect("loads");
    assert!(g.result.spec.is_some());
    assert_eq!(g.script_digest.as_deref(), Some(digest.as_str()));
}
