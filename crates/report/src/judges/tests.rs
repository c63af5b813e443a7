//! Tables 4 and 5 and the judges' agreement on hand-made games, the numbers worked out by hand.

use std::path::Path;

use serde_json::{json, Value};

use super::agreement::{agreement, agreement_table, Unmatched};
use super::*;
use crate::humans::{rankings, Ranking};
use crate::load::{read_game, GameRecord};

/// Per character (Al, Bo, Cy): ICI and SCI.
type Scores = [(f64, f64); 3];

const NAMES: [&str; 3] = ["Al", "Bo", "Cy"];

/// A MIRAGE game of `model`'s agents judged by `judge`, written under `dir`, its gameplay one line
/// of dialogue (`said`) and one evaluation event naming the judge.
fn game(dir: &Path, judge: &str, model: &str, seed: u64, said: &str, s: Scores) -> GameRecord {
    let id = format!("{judge}-{model}-s{seed}");
    let mut r = crate::tests::result("Star", "mirage", seed);
    r.game_id = id.clone();
    r.protocol = "mirage".into();
    r.model = model.into();
    r.settings = json!({"iterations": 3});
    r.judges.insert("mirage".into(), format!("llm:{judge}"));
    let characters: serde_json::Map<String, Value> = NAMES
        .iter()
        .zip(s)
        .map(|(n, (ici, sci))| {
            (
                n.to_string(),
                json!({"tii_trust_share": null, "abilities": null,
            "ici": ici, "role_play": null, "reconstruction_rouge_l": null, "sci": sci}),
            )
        })
        .collect();
    let mean = |f: fn(&(f64, f64)) -> f64| s.iter().map(f).sum::<f64>() / 3.0;
    r.mirage_scores = serde_json::from_value(json!({"characters": characters, "tii": null,
        "cic": null, "cic_key": null, "ici": mean(|x| x.0), "sci": mean(|x| x.1)}))
    .expect("scores");
    let game = dir.join(&id);
    std::fs::create_dir_all(&game).expect("dir");
    let events = [
        json!({"seq": 0, "ts": format!("t-{judge}"), "stage": "conversation_1", "kind": "speech",
               "speaker": "Al", "text": said, "visible_to": "all",
               "usage": {"calls": 1, "prompt_tokens": 9, "completion_tokens": 9, "cached_tokens": 0,
                         "cost_usd": if judge.len().is_multiple_of(2) { 0.0 } else { 0.1 },
                         "retries": 0, "parse_failures": 0}}),
        json!({"seq": 1, "ts": "", "stage": "evaluation", "kind": "judge", "speaker": "judge",
               "text": format!("judged by {judge}"), "visible_to": "none"}),
    ];
    let lines: Vec<String> = events.iter().map(Value::to_string).collect();
    std::fs::write(game.join("transcript.jsonl"), lines.join("\n")).expect("transcript");
    let text = serde_json::to_string(&r).expect("json");
    std::fs::write(game.join("result.json"), text).expect("result");
    read_game(&game.join("result.json")).expect("readable")
}

/// Judges `ja` and `jb` on seeds 1 and 2 of one agents' condition; `jb`'s seed 2 says `jb_said`.
fn two_judges(dir: &Path, model: &str, ja: &str, jb: &str, jb_said: &str) -> Grouping {
    let games = vec![
        game(
            dir,
            ja,
            model,
            1,
            "hello",
            [(60., 30.), (40., 50.), (20., 10.)],
        ),
        game(
            dir,
            ja,
            model,
            2,
            "again",
            [(80., 20.), (70., 20.), (60., 20.)],
        ),
        game(
            dir,
            jb,
            model,
            1,
            "hello",
            [(10., 50.), (50., 40.), (30., 30.)],
        ),
        game(
            dir,
            jb,
            model,
            2,
            jb_said,
            [(90., 40.), (60., 10.), (60., 10.)],
        ),
    ];
    Grouping::new(games)
}

fn build(g: &Grouping) -> (Option<JudgeTables>, Vec<String>) {
    let j = Judged::new(g);
    let mut notes = Vec::new();
    let same = same_plays(g, &j, j.plays.keys(), &mut notes);
    let t = compare(g, &j, &same, &Bootstrap::default(), &mut notes);
    (t, notes)
}

fn estimate(t: &Table, row: usize, heading: &str) -> Option<f64> {
    let c = t
        .column(heading)
        .unwrap_or_else(|| panic!("{heading} in {:?}", t.columns));
    match &t.rows[row].cells[c] {
        Cell::MeanCi(iv) => iv.map(|iv| iv.estimate),
        Cell::Number(x) => *x,
        other => panic!("{heading}: {other:?}"),
    }
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

#[test]
fn the_fingerprint_ignores_time_usage_and_evaluation_but_not_what_was_said() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let print = |r: &GameRecord| gameplay_fingerprint(r.transcript.as_ref().expect("t")).ok();
    let s = [(1., 1.); 3];
    // Odd and even judge names bill the line differently; the times and judges differ too.
    let (a, b) = (
        game(d, "j1", "m", 1, "hi", s),
        game(d, "j22", "m", 1, "hi", s),
    );
    assert_eq!(print(&a), print(&b));
    assert!(print(&a).is_some());
    assert_ne!(print(&a), print(&game(d, "j3", "m", 1, "hi!", s)));
}

#[test]
fn tables_4_and_5_average_the_same_games_under_each_judge() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = two_judges(dir.path(), "sim-1", "ja", "jb", "again");
    let (t, notes) = build(&g);
    assert!(notes.is_empty(), "{notes:?}");
    let t = t.expect("two judges");
    assert_eq!(t.judges, ["ja", "jb"]);
    let t4 = judges_table(&t, Metric::Ici);
    let t5 = judges_table(&t, Metric::Sci);
    assert_eq!((t4.id.as_ref(), t5.id.as_ref()), (TABLE4_ID, TABLE5_ID));
    // ICI: ja (40 + 70) / 2, jb (30 + 70) / 2. SCI: ja (30 + 20) / 2, jb (40 + 20) / 2.
    assert!(close(estimate(&t4, 0, "Games"), 2.0));
    assert!(close(estimate(&t4, 0, "Judge ja"), 55.0));
    assert!(close(estimate(&t4, 0, "Judge jb"), 50.0));
    assert!(close(estimate(&t5, 0, "Judge ja"), 25.0));
    assert!(close(estimate(&t5, 0, "Judge jb"), 30.0));
    // The agents' model is not one of the paper's: all three published rows, each value in the
    // column of its judge, which the run lacks.
    assert_eq!(t4.rows.len(), 4);
    let published = |r: usize| match &t4.rows[r].cells[0] {
        Cell::Text(s) => s.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(published(1), "Published: GPT-3.5");
    assert!(close(estimate(&t4, 1, "Judge GPT-4-Turbo (paper)"), 70.06));
    assert!(close(estimate(&t5, 3, "Judge GPT-4o (paper)"), 42.43));
    assert_eq!(estimate(&t4, 1, "Judge ja"), None);
    let md = crate::csv::to_csv(&t4);
    assert!(md.starts_with("model,method,games,judge_ja_mean"), "{md}");
}

#[test]
fn a_play_whose_copies_differ_is_left_out_and_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = two_judges(dir.path(), "sim-1", "ja", "jb", "something else");
    let (t, notes) = build(&g);
    let t4 = judges_table(&t.expect("seed 1 still matches"), Metric::Ici);
    assert!(close(estimate(&t4, 0, "Games"), 1.0));
    assert!(close(estimate(&t4, 0, "Judge ja"), 40.0));
    assert!(close(estimate(&t4, 0, "Judge jb"), 30.0));
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("Star seed 2: played differently under the judges ja, jb"));
    // One judge alone has nothing to compare.
    let one = Grouping::new(vec![g.games[0].clone(), g.games[1].clone()]);
    assert_eq!(build(&one).0, None);
}

#[test]
fn a_judge_of_the_paper_gets_its_published_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = two_judges(
        dir.path(),
        "gpt-4-0125-preview",
        "gpt-4o-2024-08-06",
        "jb",
        "again",
    );
    let t4 = judges_table(&build(&g).0.expect("two judges"), Metric::Ici);
    let headings: Vec<&str> = t4.columns.iter().map(|c| c.heading.as_str()).collect();
    let want = [
        "Model",
        "Method",
        "Games",
        "Judge gpt-4o-2024-08-06",
        "Judge jb",
        "Judge GPT-4 (paper)",
        "Judge GPT-4-Turbo (paper)",
    ];
    assert_eq!(headings, want);
    // Agents on GPT-4: its published row only, GPT-4o's value in the run's GPT-4o column.
    assert_eq!(t4.rows.len(), 2);
    assert_eq!(t4.rows[1].cells[0], Cell::Text("Published: GPT-4".into()));
    assert!(close(estimate(&t4, 1, "Judge gpt-4o-2024-08-06"), 66.90));
    assert!(close(estimate(&t4, 1, "Judge GPT-4 (paper)"), 60.73));
    assert_eq!(estimate(&t4, 1, "Judge jb"), None);
}

/// ann ranks seed 1 on ICI (Al, Bo, Cy) and SCI (Bo, Al, Cy), seed 2 on ICI (Cy, Bo, Al); the
/// campaign's items are `ja`'s games.
fn ann(model: &str, ja: &str) -> Vec<Ranking> {
    let item = |n: u32, seed: u64| {
        let game = format!("{ja}-{model}-s{seed}");
        (
            n,
            json!({"game": game, "model": model, "judge": format!("llm:{ja}"),
                   "scores": {"ici": {"Al": 0, "Bo": 0, "Cy": 0}, "sci": {"Al": 0, "Bo": 0, "Cy": 0}}}),
        )
    };
    let answers = [
        (
            0,
            "ann".to_string(),
            json!({"ici": ["Al", "Bo", "Cy"], "sci": ["Bo", "Al", "Cy"]}),
        ),
        (1, "ann".to_string(), json!({"ici": ["Cy", "Bo", "Al"]})),
    ];
    rankings(&[item(0, 1), item(1, 2)], &answers).expect("valid")
}

/// An agreement row as (judge, metric, mean τ, rankings).
type Agreed = (String, Metric, Option<f64>, usize);

fn agreed(g: &Grouping, r: &[Ranking]) -> (Vec<Agreed>, Unmatched) {
    let j = Judged::new(g);
    let same = same_plays(g, &j, j.plays.keys(), &mut Vec::new());
    let (rows, unmatched) = agreement(g, &j, &same, r);
    let row = |a: &agreement::AgreementRow| {
        (
            a.judge.clone(),
            a.row.metric,
            a.row.mean_tau,
            a.row.rankings,
        )
    };
    (rows.iter().map(row).collect(), unmatched)
}

#[test]
fn every_judge_against_the_annotators_with_taus_by_hand() {
    let dir = tempfile::tempdir().expect("tempdir");
    let g = two_judges(dir.path(), "sim-1", "ja", "jb", "again");
    let (rows, unmatched) = agreed(&g, &ann("sim-1", "ja"));
    assert_eq!(unmatched, Unmatched::default());
    // ja: seed 1 ICI agrees (τ 1), seed 2 ICI is reversed (−1): mean 0; SCI agrees (1).
    // jb, seed 1 ICI: Al 10, Bo 50, Cy 30 against Al > Bo > Cy: P 1, Q 2 → −1/3. Seed 2 ICI:
    // Al 90, Bo 60, Cy 60 against Cy > Bo > Al: P 0, Q 2, one tie in jb's → −2 / √(3 · 2). SCI
    // seed 1: Al 50, Bo 40, Cy 30 against Bo > Al > Cy: P 2, Q 1 → 1/3.
    let jb_ici = (-1.0 / 3.0 - 2.0 / 6f64.sqrt()) / 2.0;
    let want = [
        ("ja", Metric::Ici, 0.0, 2),
        ("ja", Metric::Sci, 1.0, 1),
        ("jb", Metric::Ici, jb_ici, 2),
        ("jb", Metric::Sci, 1.0 / 3.0, 1),
    ];
    assert_eq!(rows.len(), want.len(), "{rows:?}");
    for (got, (judge, metric, tau, n)) in rows.iter().zip(want) {
        assert_eq!(
            (got.0.as_str(), got.1, got.3),
            (judge, metric, n),
            "{got:?}"
        );
        assert!(close(got.2, tau), "{got:?} against {tau}");
    }
    // A copy played differently counts for its own judge only.
    let dir = tempfile::tempdir().expect("tempdir");
    let g = two_judges(dir.path(), "sim-1", "ja", "jb", "not the same");
    let (rows, unmatched) = agreed(&g, &ann("sim-1", "ja"));
    assert_eq!(unmatched.played_differently, 1);
    assert!(close(rows[2].2, -1.0 / 3.0) && rows[2].3 == 1, "{rows:?}");
}

#[test]
fn the_agreement_table_shows_table_7_beside_its_judge_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = "gpt-4o-2024-08-06";
    let g = two_judges(dir.path(), model, "gpt-4-turbo", "jb", "again");
    let j = Judged::new(&g);
    let same = same_plays(&g, &j, j.plays.keys(), &mut Vec::new());
    let (rows, unmatched) = agreement(&g, &j, &same, &ann(model, "gpt-4-turbo"));
    let published: Vec<Option<f64>> = rows.iter().map(|r| r.row.published).collect();
    assert_eq!(published, [Some(0.867), Some(0.467), None, None]);
    let t = agreement_table(&rows, &unmatched);
    let md = crate::csv::to_csv(&t);
    assert!(
        md.starts_with("judge,model,metric,games,rankings,skipped,mean_tau_b,published_tau"),
        "{md}"
    );
    assert!(
        md.contains("gpt-4-turbo,gpt-4o-2024-08-06,ICI,2,2,0,0,0.867"),
        "{md}"
    );
    assert!(md.contains("jb,gpt-4o-2024-08-06,SCI,1,1,0,0.333"), "{md}");
}
