//! `sleuth report` over WellPlay games played by the binary (simulated model, priced by a pricing
//! table so cost is not zero) on two of sleuth's example scripts: PLAYER* Figures 5 and 6 and Table
//! A6, their values read back against what the games' result.json recorded.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::report::{csv_rows, num, sleuth_ok};
use serde_json::Value;

const SCRIPTS: [&str; 2] = ["night-ferry", "orchard-press"];

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * (1.0 + a.abs().max(b.abs()))
}

/// One played game: (method key, model, script) and its result.json.
struct Played {
    framework: &'static str,
    model: &'static str,
    script: &'static str,
    result: Value,
}

/// Plays PP and PLAYER* on model sim-a and PLAYER* on sim-b, on both scripts, one seed each, and
/// writes the report.
fn play_sweep(tmp: &Path) -> (PathBuf, Vec<Played>) {
    let pricing = tmp.join("pricing.toml");
    fs::write(
        &pricing,
        "[models.\"sim-a\"]\ninput = 1.0\noutput = 4.0\n\n[models.\"sim-b\"]\ninput = 2.0\noutput = 8.0\n",
    )
    .expect("pricing table");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let run_dir = tmp.join("run");
    let mut played = Vec::new();
    for (framework, model) in [("pp", "sim-a"), ("player", "sim-a"), ("player", "sim-b")] {
        for script in SCRIPTS {
            let out = run_dir.join(format!("{framework}-{model}-{script}"));
            let path = examples.join(format!("{script}.toml"));
            sleuth_ok(
                tmp,
                &[
                    "play",
                    path.to_str().unwrap(),
                    "--protocol",
                    "wellplay",
                    "--framework",
                    framework,
                    "--model",
                    model,
                    "--pricing",
                    pricing.to_str().unwrap(),
                    "--rounds",
                    "1",
                    // One evaluation process: these scripts' factual and inferential questions are
                    // asked once per game, so a game evaluated several times cannot be split into
                    // processes (Table A5's note) and Figure 6 would have no evaluation bar.
                    "--eval-repeats",
                    "1",
                    "--seed",
                    "1",
                    "--out",
                    out.to_str().unwrap(),
                ],
            );
            let result: Value =
                serde_json::from_str(&fs::read_to_string(out.join("result.json")).unwrap())
                    .unwrap();
            played.push(Played {
                framework,
                model,
                script,
                result,
            });
        }
    }
    sleuth_ok(tmp, &["report", run_dir.to_str().unwrap()]);
    (run_dir.join("report"), played)
}

/// Figures 5 and 6 and Table A6 from one sweep: Figure 5's bars are Table A3's weighted rows, Figure
/// 6's the per-evaluation-process and gameplay USD the games recorded summed over scripts, Table A6 one
/// row per model of the PLAYER* conditions (PP, played on one model, is not in it) with the overall
/// score weighted by each script's possible points.
#[test]
fn player_figures_5_and_6_and_table_a6_come_from_the_games() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (report, played) = play_sweep(tmp.path());
    let md = fs::read_to_string(report.join("report.md")).expect("report.md");
    for heading in [
        "## PLAYER* Figure 5",
        "## PLAYER* Figure 6",
        "## PLAYER* Table A6",
    ] {
        assert!(md.contains(heading), "{heading} in {md}");
    }
    for id in ["player_figure5", "player_figure6"] {
        let svg = fs::read_to_string(report.join(format!("{id}.svg"))).expect("svg");
        assert!(svg.contains("<svg"), "{id}.svg");
        if !md.contains("Figures are SVG only") {
            assert!(report.join(format!("{id}.png")).is_file(), "{id}.png");
        }
    }
    figure_5_is_table_a3s_weighted_rows(&report);
    figure_6_is_the_usd_the_games_recorded(&report, &played);
    table_a5_ends_with_the_papers_cost_rows(&report);
    table_a6_weighs_by_possible_points(&report, &played);
}

/// Figure 5 = Table A3's weighted rows, series by series; A3 has the paper's Overall rows.
fn figure_5_is_table_a3s_weighted_rows(report: &Path) {
    // Figure 5 = Table A3's weighted rows, series by series.
    let a3 = csv_rows(&report.join("player_table_a3.csv"));
    let fig5 = csv_rows(&report.join("player_figure5.csv"));
    let weighted: Vec<_> = a3
        .iter()
        .filter(|r| r["script"] == "All scripts (weighted)")
        .collect();
    assert_eq!(weighted.len(), 3, "three conditions: {a3:?}");
    // The paper's Overall rows of the methods played (PP, PLAYER*) beside sleuth's.
    let published: Vec<&str> = a3
        .iter()
        .filter(|r| r["script"] == "All scripts (published)")
        .map(|r| r["method"].as_str())
        .collect();
    assert_eq!(published, ["Published: PP", "Published: PLAYER*"]);
    let player = a3
        .iter()
        .find(|r| r["method"] == "Published: PLAYER*")
        .unwrap();
    assert_eq!(player["overall_mean"], "0.461");
    assert_eq!(player["voting_std"], "0.308");
    for (series, field) in [
        ("Voting", "voting"),
        ("Objective", "objective"),
        ("Reasoning", "reasoning"),
        ("Relations", "relations"),
        ("Overall", "overall"),
    ] {
        for row in &weighted {
            if row[&format!("{field}_mean")].is_empty() {
                continue;
            }
            let bar = fig5
                .iter()
                .find(|b| b["series"] == series && b["category"] == row["method"])
                .unwrap_or_else(|| panic!("{series} of {} in {fig5:?}", row["method"]));
            assert!(close(
                num(bar, "value_mean"),
                num(row, &format!("{field}_mean"))
            ));
            assert_eq!(bar["games"], row["games"]);
        }
    }
}

/// Figure 6: per method, the evaluation (one process) and gameplay USD of its games.
fn figure_6_is_the_usd_the_games_recorded(report: &Path, played: &[Played]) {
    // Figure 6: USD per method summed over scripts, from result.json.
    let fig6 = csv_rows(&report.join("player_figure6.csv"));
    let methods: Vec<String> = fig6
        .iter()
        .filter(|b| b["series"] == "Evaluation")
        .map(|b| b["category"].clone())
        .collect();
    assert_eq!(methods.len(), 3, "{fig6:?}");
    let usd = |p: &Played, phase: &str| p.result["usage_by_phase"][phase]["cost_usd"].as_f64();
    for (framework, model, needle) in [
        ("pp", "sim-a", "PP"),
        ("player", "sim-a", "sim-a"),
        ("player", "sim-b", "sim-b"),
    ] {
        let games: Vec<&Played> = played
            .iter()
            .filter(|p| p.framework == framework && p.model == model)
            .collect();
        let category = methods
            .iter()
            .find(|m| m.contains(needle) && (framework == "pp") == m.contains("PP"))
            .unwrap_or_else(|| panic!("{framework} {model} in {methods:?}"));
        // One evaluation process: the multiple-choice answers' calls (result.json's `choice.usage`,
        // every repeat) divided by the repeats, anything asked once whole.
        let evaluation: f64 = games
            .iter()
            .map(|p| {
                let choice = &p.result["choice"];
                assert!(
                    choice["usage"]["calls"].as_u64().unwrap() > 0,
                    "the answers' calls are recorded"
                );
                let answers = choice["usage"]["cost_usd"].as_f64().unwrap();
                let all = usd(p, "evaluation").unwrap();
                all - answers + answers / choice["repeats"].as_f64().unwrap()
            })
            .sum();
        assert!(evaluation > 0.0, "priced evaluation of {framework} {model}");
        let bar = fig6
            .iter()
            .find(|b| b["series"] == "Evaluation" && &b["category"] == category)
            .unwrap();
        assert!(
            close(num(bar, "value_mean"), evaluation),
            "{bar:?} vs {evaluation}"
        );
        let gameplay: f64 = games.iter().map(|p| usd(p, "gameplay").unwrap()).sum();
        if let Some(bar) = fig6
            .iter()
            .find(|b| b["series"] == "Gameplay" && &b["category"] == category)
        {
            assert!(
                close(num(bar, "value_mean"), gameplay),
                "{bar:?} vs {gameplay}"
            );
        } else {
            assert_eq!(
                gameplay, 0.0,
                "a {framework} gameplay that cost something has a bar"
            );
        }
    }
}

/// Table A5 ends with the paper's Overall cost rows of the methods played.
fn table_a5_ends_with_the_papers_cost_rows(report: &Path) {
    // Table A5 ends with the paper's Overall cost rows of the methods played.
    let a5 = csv_rows(&report.join("player_table_a5.csv"));
    let published: Vec<_> = a5
        .iter()
        .filter(|r| r["script"] == "All scripts (published)")
        .collect();
    let methods: Vec<&str> = published.iter().map(|r| r["method"].as_str()).collect();
    assert_eq!(methods, ["Published: PP", "Published: PLAYER*"]);
    assert_eq!(published[0]["gameplay_usd"], "", "PP plays no game");
    assert_eq!(num(published[0], "evaluation_usd"), 2.578);
    assert_eq!(num(published[1], "gameplay_usd"), 33.702);
    assert_eq!(num(published[1], "evaluation_usd"), 5.825);
    assert_eq!(num(published[1], "tokens_per_character"), 47_906.0);
    assert_eq!(
        published[1]["evaluation_calls"], "",
        "the paper prints no calls"
    );
}

/// Table A6: PLAYER* on sim-a and sim-b, the overall score weighted by possible points; the paper's
/// open models after them.
fn table_a6_weighs_by_possible_points(report: &Path, played: &[Played]) {
    // Table A6: PLAYER* on sim-a and sim-b; the overall score weighted by possible points.
    let (published, a6): (Vec<_>, Vec<_>) = csv_rows(&report.join("player_table_a6.csv"))
        .into_iter()
        .partition(|r| r["method"].starts_with("Published: "));
    assert_eq!(a6.len(), 2, "{a6:?}");
    // The paper's four open models follow sleuth's rows.
    assert_eq!(published.len(), 4, "{published:?}");
    assert_eq!(published[0]["overall_mean"], "0.312");
    for model in ["sim-a", "sim-b"] {
        let row = a6
            .iter()
            .find(|r| r["model"] == model)
            .unwrap_or_else(|| panic!("{model} in {a6:?}"));
        assert_eq!(row["method"], "PLAYER*");
        assert_eq!(row["scripts"], "2");
        let (mut points, mut possible) = (0.0, 0.0);
        for p in played
            .iter()
            .filter(|p| p.framework == "player" && p.model == model)
        {
            let c = &p.result["choice"];
            let runs: Vec<f64> = c["repeat_scores"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            let mean = runs.iter().sum::<f64>() / runs.len() as f64;
            let per_game =
                c["overall"]["possible"].as_f64().unwrap() / c["repeats"].as_f64().unwrap();
            assert!(SCRIPTS.contains(&p.script));
            points += mean * per_game;
            possible += per_game;
        }
        assert!(
            close(num(row, "overall_mean"), points / possible),
            "{row:?} vs {}",
            points / possible
        );
    }
}
