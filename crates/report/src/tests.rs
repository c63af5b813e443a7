//! Grouping and tables on hand-made results, with the expected numbers worked out by hand.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::*;
use sleuth_game::game::{ChoiceScores, ChoiceTally, GameResult, MirageOutcome, Winner};

mod a3_a5_figure5;
mod labels;
mod last_tables;
mod mirage_tables;
mod pooling;
mod published;

/// A WellPlay game on `script` with `framework`: civilians win, one vote cast for the murderer, no
/// question scores yet.
pub(crate) fn result(script: &str, framework: &str, seed: u64) -> GameResult {
    serde_json::from_value(json!({
        "game_id": format!("{script}-{framework}-s{seed}"),
        "script": script,
        "protocol": "wellplay",
        "framework": framework,
        "modules": "",
        "seed": seed,
        "provider": "simulated",
        "model": "sim-1",
        "winner": "civilians",
        "murderers": ["Mo"],
        "votes": {"Al": "Mo"},
        "vote_counts": {"Al": 0, "Mo": 1},
        "murderer_detection_accuracy": 1.0,
        "factual": {"own": null, "cq": null, "mq": null, "others": null, "counts": {}, "judge": "lexical"},
        "inferential_accuracy": null,
        "usage": usage(0, 0.0),
        "usage_by_phase": {"gameplay": usage(0, 0.0), "evaluation": usage(0, 0.0)},
        "settings": {"rounds": 1, "questions_per_round": 1, "temperature": 0.800000011920929},
        "events": 0,
        "duration_seconds": 0.0
    }))
    .expect("a valid GameResult")
}

fn usage(calls: u64, cost: f64) -> Value {
    json!({"calls": calls, "prompt_tokens": calls * 100, "completion_tokens": calls * 10,
           "cached_tokens": 0, "cost_usd": cost, "retries": 0, "parse_failures": 0})
}

fn record(r: GameResult) -> GameRecord {
    GameRecord::new(
        PathBuf::from(format!("runs/{}/result.json", r.game_id)),
        r,
        None,
    )
}

fn with_setting(mut r: GameResult, key: &str, v: Value) -> GameResult {
    r.settings[key] = v;
    r
}

fn tally(correct: usize, questions: usize, points_each: u32) -> ChoiceTally {
    let mut t = ChoiceTally::default();
    for i in 0..questions {
        t.add(i < correct, points_each);
    }
    t
}

/// Choice scores from (correct, questions) per category: objective 10 points, reasoning 5,
/// relations 2.
fn choice(obj: (usize, usize), rea: (usize, usize), rel: (usize, usize)) -> ChoiceScores {
    let cats = [
        ("objective", tally(obj.0, obj.1, 10)),
        ("reasoning", tally(rea.0, rea.1, 5)),
        ("relations", tally(rel.0, rel.1, 2)),
    ];
    let mut overall = ChoiceTally::default();
    for (_, t) in &cats {
        overall.correct += t.correct;
        overall.questions += t.questions;
        overall.points += t.points;
        overall.possible += t.possible;
    }
    ChoiceScores {
        by_category: cats.into_iter().map(|(k, t)| (k.to_string(), t)).collect(),
        overall,
        ..ChoiceScores::default()
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn mean_std(t: &Table, row: usize, heading: &str) -> Option<(f64, f64)> {
    let c = t.column(heading).expect(heading);
    match &t.rows[row].cells[c] {
        Cell::MeanStd(v) => *v,
        other => panic!("{heading}: {other:?}"),
    }
}

fn text(t: &Table, row: usize, heading: &str) -> String {
    let c = t.column(heading).expect(heading);
    t.rows[row].cells[c].display(t.columns[c].kind)
}

fn interval(t: &Table, row: usize, heading: &str) -> Option<sleuth_game::eval::stats::Interval> {
    let c = t.column(heading).expect(heading);
    match &t.rows[row].cells[c] {
        Cell::MeanCi(v) => *v,
        other => panic!("{heading}: {other:?}"),
    }
}

#[test]
fn games_group_into_arms_by_script_and_condition_and_repeats_are_seeds() {
    let mut reordered = result("Inn", "player", 2);
    // The same settings listed in another order are the same condition.
    reordered.settings =
        json!({"temperature": 0.800000011920929, "questions_per_round": 1, "rounds": 1});
    let games = vec![
        record(result("Inn", "pp", 1)),
        record(result("Inn", "pp", 2)),
        record(result("Inn", "player", 1)),
        record(reordered),
        record(result("Villa", "player", 1)),
        record(with_setting(result("Inn", "player", 1), "rounds", json!(2))),
    ];
    let g = Grouping::new(games);
    let labels: Vec<String> = g.conditions.iter().map(|c| c.label()).collect();
    // PP first (the paper's order), then PLAYER* by rounds; rounds vary within the protocol so every
    // label shows n, while m and the temperature do not vary and are left out.
    assert_eq!(labels, ["PP · n=1", "PLAYER* · n=1", "PLAYER* · n=2"]);
    let arms: Vec<(String, String, usize)> = g
        .arms
        .iter()
        .map(|a| {
            (
                a.script.clone(),
                g.conditions[a.condition].label(),
                a.games.len(),
            )
        })
        .collect();
    assert_eq!(
        arms,
        [
            ("Inn".to_string(), "PP · n=1".to_string(), 2),
            ("Inn".into(), "PLAYER* · n=1".into(), 2),
            ("Inn".into(), "PLAYER* · n=2".into(), 1),
            ("Villa".into(), "PLAYER* · n=1".into(), 1),
        ]
    );
    assert_eq!(g.conditions[1].label_without(&["rounds"]), "PLAYER*");
    assert_eq!(g.scripts(), ["Inn", "Villa"]);
}

#[test]
fn conditions_differ_by_model_modules_and_murderer_framework() {
    let mut a = result("Inn", "thinkthrice", 1);
    a.modules = "none".into();
    let mut b = result("Inn", "thinkthrice", 1);
    b.modules = "mr,sr,sv=3".into();
    let mut c = b.clone();
    c.model = "gpt-4o".into();
    let mut d = b.clone();
    d.murderer_framework = Some("player".into());
    let g = Grouping::new(vec![record(a), record(b), record(c), record(d)]);
    let labels: Vec<String> = g.conditions.iter().map(|c| c.label()).collect();
    assert_eq!(
        labels,
        [
            "ThinkThrice No MR · sim-1",
            "ThinkThrice MR+SR+SV(N=3) · gpt-4o",
            "ThinkThrice MR+SR+SV(N=3) · sim-1",
            "ThinkThrice MR+SR+SV(N=3) · murderers: PLAYER* · sim-1",
        ]
    );
    assert_eq!(g.arms.len(), 4);
}

#[test]
fn table_a3_gives_mean_and_std_per_script_and_weighted_rows_across_scripts() {
    let mut s1a = result("Inn", "player", 1);
    // objective 1/1, reasoning 1/2, relations 2/2: 10 + 5 + 4 = 19 of 10 + 10 + 4 = 24 points.
    s1a.choice = Some(choice((1, 1), (1, 2), (2, 2)));
    let mut s1b = result("Inn", "player", 2);
    // objective 0/1, reasoning 2/2, relations 0/2: 0 + 10 + 0 = 10 of 24.
    s1b.choice = Some(choice((0, 1), (2, 2), (0, 2)));
    s1b.winner = Some(Winner::Murderer);
    let mut s2 = result("Villa", "player", 1);
    // objective 2/2, reasoning 1/1, relations 1/1: 20 + 5 + 2 = 27 of 27.
    s2.choice = Some(choice((2, 2), (1, 1), (1, 1)));
    let mut pp = result("Inn", "pp", 1);
    pp.winner = None;
    pp.votes.clear();
    pp.choice = Some(choice((1, 1), (0, 2), (1, 2)));
    let g = Grouping::new(vec![record(s1a), record(s1b), record(s2), record(pp)]);
    let t = tables::player_table_a3(&g).expect("A3");
    let rows: Vec<(String, String)> = (0..t.rows.len())
        .map(|i| (text(&t, i, "Script"), text(&t, i, "Method")))
        .collect();
    assert_eq!(
        rows,
        [
            ("Inn".to_string(), "PP".to_string()),
            ("Inn".into(), "PLAYER*".into()),
            ("Villa".into(), "PLAYER*".into()),
            ("All scripts (weighted)".into(), "PP".into()),
            ("All scripts (weighted)".into(), "PLAYER*".into()),
        ]
    );
    // A PP result without a vote (outside WellPlay, or written before PP voted) shows none.
    assert_eq!(text(&t, 0, "Voting"), "—");
    // Inn / PLAYER*: objective 1 and 0 → 0.5 ± 0.5 (the table's one rule: ÷ n); overall 19/24 and
    // 10/24 → mean 29/48, std (9/24)/2.
    let (m, s) = mean_std(&t, 1, "Objective").unwrap();
    assert!(close(m, 0.5) && close(s, 0.5), "{m} {s}");
    let (m, s) = mean_std(&t, 1, "Overall").unwrap();
    assert!(close(m, 29.0 / 48.0) && close(s, 9.0 / 24.0 / 2.0));
    let (m, _) = mean_std(&t, 1, "Voting").unwrap();
    assert!(close(m, 0.5));
    assert_eq!(text(&t, 1, "#QA"), "5");
    // One repeat has no spread.
    assert_eq!(mean_std(&t, 2, "Objective"), Some((1.0, 0.0)));
    // Weighted objective across scripts (B.3 over the runs): Inn runs 1, 0 (mean 0.5, their ÷ n
    // spread 1/4) with 1 question, Villa run 1 with 2: mean 2.5/3, var (1·((0.5 − 5/6)² + 1/4) +
    // 2·(1 − 5/6)²)/3 = (4/36 + 9/36 + 2/36)/3 = 5/36.
    let (m, s) = mean_std(&t, 4, "Objective").unwrap();
    assert!(close(m, 2.5 / 3.0) && close(s * s, 5.0 / 36.0), "{m} {s}");
    // Weighted overall: Inn 29/48 of 24 points, Villa 1.0 of 27: (14.5 + 27) / 51.
    let (m, _) = mean_std(&t, 4, "Overall").unwrap();
    assert!(close(m, 41.5 / 51.0), "{m}");
    // Voting across scripts, unweighted: Inn 0.5, Villa 1.0 → 0.75 ± 0.25 (÷ n, the table's one
    // rule; the paper's Overall Voting row would print √0.125 here).
    let (v, vs) = mean_std(&t, 4, "Voting").unwrap();
    assert!(close(v, 0.75) && close(vs, 0.25), "{v} {vs}");
    assert_eq!(
        text(&t, 4, "#QA"),
        "9",
        "5 + 4 questions over the two scripts"
    );
    assert!(t.rows[4].total && !t.rows[1].total);
    assert_eq!(
        text(&t, 4, "Overall"),
        format!("{:.3} ± {:.3}", m, mean_std(&t, 4, "Overall").unwrap().1)
    );
}

#[test]
fn table_a3_spread_is_over_the_evaluation_runs() {
    // One game, evaluated three times: the paper's "mean ± std of 3 runs" comes from the runs.
    let mut r = result("Inn", "player", 1);
    let mut c = choice((3, 3), (3, 6), (6, 6));
    c.repeats = 3;
    c.repeat_scores = vec![0.2, 0.4, 0.6];
    c.repeat_accuracy = [("reasoning".to_string(), vec![0.0, 0.5, 1.0])]
        .into_iter()
        .collect();
    r.choice = Some(c);
    let g = Grouping::new(vec![record(r)]);
    let t = tables::player_table_a3(&g).expect("A3");
    // {0.2, 0.4, 0.6}: variance 0.08 / 3 (÷ n); {0, 0.5, 1}: 0.5 / 3.
    let (m, sd) = mean_std(&t, 0, "Overall").expect("overall");
    assert!(
        (m - 0.4).abs() < 1e-12 && (sd * sd - 0.08 / 3.0).abs() < 1e-12,
        "{m} ± {sd}"
    );
    let (m, sd) = mean_std(&t, 0, "Reasoning").expect("reasoning");
    assert!(
        (m - 0.5).abs() < 1e-12 && (sd * sd - 0.5 / 3.0).abs() < 1e-12,
        "{m} ± {sd}"
    );
}

#[test]
fn questions_asked_several_times_count_once_in_table_a3() {
    // Every question asked 3 times: the tallies hold 3 × (1 objective, 2 reasoning, 2 relations).
    let mut r = result("Inn", "player", 1);
    let mut c = choice((3, 3), (3, 6), (6, 6));
    c.repeats = 3;
    r.choice = Some(c);
    let g = Grouping::new(vec![record(r)]);
    let t = tables::player_table_a3(&g).expect("A3");
    assert_eq!(text(&t, 0, "#QA"), "5");
    // Accuracy is unchanged by the repeats: 3/6 reasoning = 0.5.
    assert_eq!(mean_std(&t, 0, "Reasoning"), Some((0.5, 0.0)));
}

#[test]
fn table4_pools_scripts_and_leaves_unmeasured_cells_empty() {
    let mk = |script: &str, modules: &str, seed: u64, own: f64, won: bool| {
        let mut r = result(script, "thinkthrice", seed);
        r.protocol = "thinkthrice".into();
        r.settings = json!({"rounds_before_clues": 2});
        r.modules = modules.into();
        r.factual.own = Some(own);
        r.factual.cq = Some(own / 2.0);
        r.winner = Some(if won {
            Winner::Civilians
        } else {
            Winner::Murderer
        });
        r.murderer_detection_accuracy = if won { 0.75 } else { 0.25 };
        r
    };
    let g = Grouping::new(vec![
        record(mk("Ferry", "mr", 1, 0.8, true)),
        record(mk("Glass", "mr", 1, 0.6, false)),
        record(mk("Ferry", "none", 1, 0.9, false)),
    ]);
    let t = tables::thinkthrice_table4(&g, &Bootstrap::default()).expect("table 4");
    assert_eq!(text(&t, 0, "Method"), "ThinkThrice No MR");
    assert_eq!(text(&t, 1, "Method"), "ThinkThrice MR");
    assert_eq!(text(&t, 1, "Scripts"), "2");
    let own = interval(&t, 1, "Own").unwrap();
    assert!(close(own.estimate, 0.7) && own.n == 2);
    assert!(own.low >= 0.6 - 1e-12 && own.high <= 0.8 + 1e-12);
    assert!(close(
        interval(&t, 1, "Civilian win rate").unwrap().estimate,
        0.5
    ));
    assert!(close(
        interval(&t, 1, "Murderer detection").unwrap().estimate,
        0.5
    ));
    // MQ was never measured: "—", not 0.
    assert_eq!(interval(&t, 1, "MQ"), None);
    assert_eq!(text(&t, 1, "MQ"), "—");
    // One game: the value alone.
    assert_eq!(text(&t, 0, "Own"), "0.900");
    // No WellPlay scores: no Table A3.
    assert!(tables::player_table_a3(&g).is_none());
}

#[test]
fn paired_comparison_uses_games_sharing_script_and_seed() {
    let mut games = Vec::new();
    for (framework, seeds, base) in [("pp", [1, 2, 3], 0.2), ("player", [2, 3, 4], 0.5)] {
        for s in seeds {
            let mut r = result("Inn", framework, s);
            // Score grows with the seed, so pairing matters: 0.2/0.5 + 0.01·seed.
            let mut c = choice((0, 1), (0, 1), (0, 1));
            c.overall = ChoiceTally {
                correct: 0,
                questions: 100,
                points: ((base + 0.01 * s as f64) * 100.0).round() as u32,
                possible: 100,
            };
            r.choice = Some(c);
            if framework == "pp" {
                r.winner = None;
                r.votes.clear();
            }
            games.push(record(r));
        }
    }
    let g = Grouping::new(games);
    let t = tables::paired(&g, &Bootstrap::default()).expect("paired");
    // Only the score is measured by both (PP has no vote); seeds 2 and 3 are shared.
    assert_eq!(t.rows.len(), 1, "{t:?}");
    assert_eq!(text(&t, 0, "Metric"), "Overall score");
    assert_eq!(text(&t, 0, "A"), "PLAYER*");
    assert_eq!(text(&t, 0, "B"), "PP");
    assert_eq!(text(&t, 0, "Pairs"), "2");
    let d = interval(&t, 0, "Δ = A − B").unwrap();
    // Every pair differs by exactly 0.3: the interval collapses onto it.
    assert!(
        close(d.estimate, 0.3) && close(d.low, 0.3) && close(d.high, 0.3),
        "{d:?}"
    );
}

fn mirage_game(dir: &Path, seed: u64, transcript: &[Value]) -> GameRecord {
    mirage_game_with(dir, seed, transcript, json!({}))
}

/// A MIRAGE game written to `dir/s{seed}` with `extra` merged into its result.json.
fn mirage_game_with(dir: &Path, seed: u64, transcript: &[Value], extra: Value) -> GameRecord {
    let mut r = result("Star", "mirage", seed);
    r.protocol = "mirage".into();
    r.settings = json!({"iterations": 3});
    r.mirage = Some(MirageOutcome {
        victory: 0.5,
        investigated: [
            ("Al".to_string(), vec!["c1".to_string(), "c2".to_string()]),
            ("Bo".to_string(), vec!["c3".to_string()]),
        ]
        .into_iter()
        .collect(),
        clues_available: 4,
        key_clues_available: 2,
        ..MirageOutcome::default()
    });
    let game = dir.join(format!("s{seed}"));
    std::fs::create_dir_all(&game).unwrap();
    let lines: Vec<String> = transcript.iter().map(Value::to_string).collect();
    std::fs::write(game.join("transcript.jsonl"), lines.join("\n") + "\n").unwrap();
    let mut value = serde_json::to_value(&r).unwrap();
    if let (Value::Object(v), Value::Object(e)) = (&mut value, extra) {
        v.extend(e);
    }
    std::fs::write(game.join("result.json"), value.to_string()).unwrap();
    load::read_game(&game.join("result.json")).unwrap()
}

fn clue(stage: &str, who: &str, key: bool) -> Value {
    json!({"seq": 0, "ts": "", "stage": stage, "kind": "clue", "speaker": who, "text": "",
           "visible_to": "all", "data": {"investigator": who, "key": key, "clue": "c"}})
}

#[test]
fn mirage_table2_and_figure2_come_from_results_and_transcripts() {
    let dir = tempfile::tempdir().unwrap();
    // Iteration 1: a key clue; iteration 3: two more, one key. Iteration 2: nothing.
    let t = [
        json!({"seq": 0, "ts": "", "stage": "conversation_1", "kind": "speech", "speaker": "Al",
               "text": "hi", "visible_to": "all"}),
        clue("interaction_1", "Al", true),
        clue("interaction_3", "Al", false),
        clue("interaction_3", "Bo", true),
    ];
    let game = mirage_game(dir.path(), 1, &t);
    let report = Report::build(
        dir.path(),
        Loaded {
            games: vec![game],
            skipped: vec![],
        },
        Bootstrap::default(),
    );
    let t2 = report.table("mirage_table2").expect("table 2");
    // 3 of 4 clues → 75; both key clues → 100; Victory 0.5 → 50.
    assert!(close(interval(t2, 0, "CIC").unwrap().estimate, 75.0));
    assert!(close(interval(t2, 0, "CIC key").unwrap().estimate, 100.0));
    assert!(close(interval(t2, 0, "Victory").unwrap().estimate, 50.0));
    for later in ["TII (suspicion share)", "ICI", "SCI"] {
        assert_eq!(text(t2, 0, later), "—", "{later}: nothing scored or judged");
    }
    let f = report.figure("mirage_figure2").expect("figure 2");
    let curve = |name: &str| -> Vec<f64> {
        f.series
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name} in {f:?}"))
            .points
            .iter()
            .map(|p| p.value.estimate)
            .collect()
    };
    assert_eq!(curve("All clues"), [25.0, 25.0, 75.0]);
    assert_eq!(curve("Key clues"), [50.0, 50.0, 100.0]);
    assert!(report.notes.is_empty(), "{:?}", report.notes);
}

#[test]
fn judged_mirage_metrics_show_when_games_recorded_them() {
    let dir = tempfile::tempdir().unwrap();
    let scores = |tii: f64, ici: f64| {
        json!({"mirage_scores": {"characters": {}, "tii": tii, "cic": 0.75, "cic_key": 0.5,
                                 "ici": ici, "sci": 50.0}})
    };
    // The transcripts record no investigation: CIC key is 0 whatever the game's own per-character
    // mean says (another reading of CIC, not mixed in).
    let a = mirage_game_with(dir.path(), 1, &[], scores(0.6, 70.0));
    let b = mirage_game_with(dir.path(), 2, &[], scores(0.8, 80.0));
    let report = Report::build(
        dir.path(),
        Loaded {
            games: vec![a, b],
            skipped: vec![],
        },
        Bootstrap::default(),
    );
    let t2 = report.table("mirage_table2").expect("table 2");
    // ICI and SCI are already on 0-100. TII is not read from `mirage_scores` (Eq. 1's trust share)
    // but computed from the scores themselves, which these games did not record.
    assert!(close(interval(t2, 0, "ICI").unwrap().estimate, 75.0));
    assert!(close(interval(t2, 0, "SCI").unwrap().estimate, 50.0));
    assert_eq!(text(t2, 0, "TII (suspicion share)"), "—");
    assert!(close(interval(t2, 0, "CIC key").unwrap().estimate, 0.0));
}

#[test]
fn a_written_report_has_every_file_and_a_self_contained_page() {
    let dir = tempfile::tempdir().unwrap();
    let game = mirage_game(dir.path(), 1, &[clue("interaction_1", "Al", true)]);
    let mut wellplay = result("Inn", "player", 1);
    wellplay.choice = Some(choice((1, 1), (1, 2), (2, 2)));
    let report = Report::build(
        dir.path(),
        Loaded {
            games: vec![game, record(wellplay)],
            skipped: vec![Skipped {
                path: PathBuf::from("runs/broken/result.json"),
                reason: "not JSON".into(),
            }],
        },
        Bootstrap::default(),
    );
    let out = dir.path().join("report");
    // A stale file of a table this report does not have is removed.
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("thinkthrice_table4.csv"), "old").unwrap();
    let written = write(&report, &out).unwrap();
    for name in [
        "report.md",
        "report.html",
        "arms.csv",
        "player_table_a3.csv",
        "player_table_a5.csv",
        "mirage_table2.csv",
        "mirage_figure2.csv",
        "mirage_figure2.svg",
        "player_figure7.svg",
        // Votes of WellPlay and MIRAGE games: retitled per protocol, not ThinkThrice Figure 4.
        "wellplay_votes.svg",
        "mirage_votes.svg",
        "mirage_cost.csv",
    ] {
        assert!(out.join(name).is_file(), "{name} missing: {written:?}");
    }
    assert!(!out.join("thinkthrice_table4.csv").exists());
    assert!(!out.join("thinkthrice_figure4.svg").exists());
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## PLAYER* Table A3"), "{md}");
    assert!(
        md.contains("Skipped runs/broken/result.json: not JSON"),
        "{md}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<style>") && html.contains("<svg") && html.contains("</svg>"));
    assert!(!html.contains("src=\"http") && !html.contains("<link"));
    assert!(
        !html.contains("<?xml"),
        "an XML declaration is not allowed inside HTML"
    );
}

#[test]
fn a_directory_without_results_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("empty/deeper")).unwrap();
    let e = load(&dir.path().join("empty")).unwrap_err().to_string();
    assert!(e.contains("empty") && e.contains("no result.json"), "{e}");
    // A broken result inside a run directory is skipped, not fatal, as long as one game is good.
    let run = dir.path().join("run");
    std::fs::create_dir_all(run.join("a")).unwrap();
    std::fs::create_dir_all(run.join("b")).unwrap();
    std::fs::write(run.join("a/result.json"), "{ half").unwrap();
    std::fs::write(
        run.join("b/result.json"),
        serde_json::to_string(&result("Inn", "pp", 1)).unwrap(),
    )
    .unwrap();
    let loaded = load(&run).unwrap();
    assert_eq!(loaded.games.len(), 1);
    assert_eq!(loaded.skipped.len(), 1);
    assert!(loaded.skipped[0]
        .reason
        .contains("not a sleuth result.json"));
    // Only broken ones: an error naming the directory and the first problem.
    std::fs::remove_file(run.join("b/result.json")).unwrap();
    let e = load(&run).unwrap_err().to_string();
    assert!(e.contains("run") && e.contains("a/result.json"), "{e}");
    // A single broken file given directly is an error too.
    assert!(load(&run.join("a/result.json")).is_err());
}

#[test]
fn games_judged_differently_are_different_conditions() {
    let lexical = result("Inn", "player", 7);
    let mut judged = lexical.clone();
    judged
        .judges
        .insert("factual".to_string(), "llm:gpt-4o".to_string());
    let g = Grouping::new(vec![record(lexical.clone()), record(judged)]);
    assert_eq!(g.conditions.len(), 2, "a judge change is not a repeat");

    // A judge that graded nothing in the game (MIRAGE's, in a WellPlay game) is no difference.
    let mut other_judge = lexical.clone();
    other_judge
        .judges
        .insert("mirage".to_string(), "llm:gpt-4o".to_string());
    let g = Grouping::new(vec![record(lexical), record(other_judge)]);
    assert_eq!(g.conditions.len(), 1, "the same condition, two repeats");
}
