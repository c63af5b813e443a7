//! MIRAGE Tables 4 and 5 and the judges against people, end to end through the `sleuth` binary: a
//! sweep with `judge_model` as an axis plays MIRAGE games under two simulated judge models (the
//! second at a lower skill, so its scores differ); the gameplay of each seed is identical under both
//! judges (the second copy replays the first from the sweep's cache: no play call is paid twice);
//! the report's Tables 4 and 5 hold each judge's mean ICI and SCI exactly as the results recorded
//! them; and a *rankings* campaign answered through `sleuth annotate answer` gives one table of both
//! judges' agreement with the annotator, whose τ-b match a computation written out here.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use common::report::{csv_rows, sleuth_ok};
use sleuth::store::{CallSource, SqliteStore, Store};

/// A finished game of the sweep: its judge, seed, result and transcript.
struct Game {
    judge: String,
    seed: u64,
    result: Value,
    transcript: Vec<Value>,
}

fn games(run: &Path) -> Vec<Game> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(run.join("games")).expect("games directory") {
        let dir = entry.expect("entry").path();
        let text = std::fs::read_to_string(dir.join("result.json")).expect("result.json");
        let result: Value = serde_json::from_str(&text).expect("JSON");
        let judge = result["judges"]["mirage"].as_str().expect("judge");
        let judge = judge
            .strip_prefix("llm:")
            .expect("an LLM judge")
            .to_string();
        let transcript = std::fs::read_to_string(dir.join("transcript.jsonl")).expect("transcript");
        let transcript = transcript
            .lines()
            .map(|l| serde_json::from_str(l).expect("event"))
            .collect();
        let seed = result["seed"].as_u64().expect("seed");
        out.push(Game {
            judge,
            seed,
            result,
            transcript,
        });
    }
    out.sort_by(|a, b| (a.seed, &a.judge).cmp(&(b.seed, &b.judge)));
    out
}

/// The gameplay of a transcript: every event before the evaluation, without its time.
fn gameplay(t: &[Value]) -> Vec<Value> {
    let play = t.iter().filter(|e| e["stage"] != "evaluation");
    let without_ts = |e: &Value| {
        let mut e = e.clone();
        e.as_object_mut().expect("an object").remove("ts");
        e
    };
    play.map(without_ts).collect()
}

/// Kendall's τ-b of two equally long score lists, written out from its definition.
fn tau_b(x: &[f64], y: &[f64]) -> Option<f64> {
    let (mut concordant, mut discordant, mut tied_x, mut tied_y) = (0.0, 0.0, 0.0, 0.0);
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            let (dx, dy) = (x[i] - x[j], y[i] - y[j]);
            match (dx == 0.0, dy == 0.0) {
                (true, true) => {
                    tied_x += 1.0;
                    tied_y += 1.0;
                }
                (true, false) => tied_x += 1.0,
                (false, true) => tied_y += 1.0,
                _ if dx * dy > 0.0 => concordant += 1.0,
                _ => discordant += 1.0,
            }
        }
    }
    let pairs = (x.len() * (x.len() - 1) / 2) as f64;
    let d = ((pairs - tied_x) * (pairs - tied_y)).sqrt();
    (d > 0.0).then(|| (concordant - discordant) / d)
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

fn number(row: &BTreeMap<String, String>, field: &str) -> f64 {
    let text = row
        .get(field)
        .unwrap_or_else(|| panic!("{field} in {row:?}"));
    text.parse()
        .unwrap_or_else(|_| panic!("{field} = {text:?} in {row:?}"))
}

fn sweep_file(dir: &Path) -> PathBuf {
    let file = dir.join("judges.toml");
    let text = format!(
        "name = \"judges\"\nout = \"{}\"\nscripts = [\"{}\"]\nrepeats = 2\nseed = 1\n\
         [game]\nprotocol = \"mirage\"\niterations = 1\n\
         [axes]\njudge_model = [\"judge-a\", \"judge-b\"]\n\
         [models.judge-a]\nprovider = \"simulated\"\n\
         [models.judge-b]\nprovider = \"simulated\"\nmodel = \"sim-1:0.4\"\n",
        dir.join("run").display(),
        common::night_ferry().display()
    );
    std::fs::write(&file, text).expect("sweep file");
    file
}

#[test]
fn two_judges_score_the_same_games_and_the_report_compares_them_with_people() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let file = sweep_file(dir);
    sleuth_ok(
        dir,
        &["sweep", "run", file.to_str().expect("utf-8"), "--quiet"],
    );
    let run = dir.join("run");
    let games = games(&run);
    assert_eq!(games.len(), 4, "2 judges × 2 seeds");

    // The same games: per seed, identical gameplay under both judges, and judges that differ.
    let judges = ["judge-a", "judge-b"];
    for pair in games.chunks(2) {
        let names: Vec<&str> = pair.iter().map(|g| g.judge.as_str()).collect();
        assert_eq!(names, judges);
        assert_eq!(pair[0].seed, pair[1].seed);
        let (a, b) = (gameplay(&pair[0].transcript), gameplay(&pair[1].transcript));
        assert!(a.len() > 10, "a real game: {} events", a.len());
        assert_eq!(a, b, "seed {}: the gameplay differs", pair[0].seed);
    }
    let scores = |g: &Game, metric: &str| -> BTreeMap<String, f64> {
        let characters = g.result["mirage_scores"]["characters"]
            .as_object()
            .expect("characters");
        let score = |(n, s): (&String, &Value)| (n.clone(), s[metric].as_f64().expect("score"));
        characters.iter().map(score).collect()
    };
    assert!(
        games
            .chunks(2)
            .any(|p| scores(&p[0], "ici") != scores(&p[1], "ici")),
        "the two judges scored alike: the test would not tell them apart"
    );
    // …played once: every play call of the second copy came from the cache.
    let ledger = tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(async {
            let s = SqliteStore::open(&run.join("sleuth.db")).expect("store");
            let mut entries = Vec::new();
            for r in s.runs("judges").await.expect("runs") {
                entries.extend(s.ledger(&r.id).await.expect("ledger"));
            }
            entries
        });
    let play: Vec<_> = ledger.iter().filter(|e| e.phase == "gameplay").collect();
    let live = play.iter().filter(|e| e.source == CallSource::Live).count();
    let cached = play
        .iter()
        .filter(|e| e.source == CallSource::Cache)
        .count();
    assert!(
        live > 0 && live == cached,
        "{live} live, {cached} from the cache"
    );

    // Tables 4 and 5: each judge's mean over the seeds of the game-level ICI and SCI in result.json.
    sleuth_ok(dir, &["report", "run"]);
    let report = run.join("report");
    let md = std::fs::read_to_string(report.join("report.md")).expect("report.md");
    for title in ["MIRAGE Table 4", "MIRAGE Table 5"] {
        assert!(md.contains(title), "{title} missing:\n{md}");
    }
    for (id, metric) in [("mirage_table4", "ici"), ("mirage_table5", "sci")] {
        let rows = csv_rows(&report.join(format!("{id}.csv")));
        assert_eq!(number(&rows[0], "games"), 2.0, "{rows:?}");
        for judge in judges {
            let values: Vec<f64> = games
                .iter()
                .filter(|g| g.judge == judge)
                .map(|g| g.result["mirage_scores"][metric].as_f64().expect("score"))
                .collect();
            let field = format!("judge_{}_mean", judge.replace('-', "_"));
            let got = number(&rows[0], &field);
            assert!(
                (got - mean(&values)).abs() < 1e-9,
                "{id} {judge}: {got} vs {values:?}"
            );
        }
        let published: Vec<&str> = rows[1..].iter().map(|r| r["model"].as_str()).collect();
        assert_eq!(
            published,
            [
                "Published: GPT-3.5",
                "Published: GPT-4",
                "Published: GPT-4o"
            ]
        );
    }

    // A rankings campaign over both judges' games, answered by one annotator: ICI in name order,
    // SCI in reverse name order.
    let created = sleuth_ok(
        dir,
        &[
            "annotate",
            "create",
            "run",
            "--id",
            "ranks",
            "--kind",
            "rankings",
            "--per-condition",
            "2",
            "--annotators",
            "ann",
        ],
    );
    let token = created
        .lines()
        .find_map(|l| l.trim().strip_prefix("ann\t"))
        .expect("ann's token")
        .to_string();
    let export = dir.join("export");
    let export_arg = export.to_str().expect("utf-8");
    sleuth_ok(
        dir,
        &["annotate", "export", "run", "ranks", "--out", export_arg],
    );
    let text = std::fs::read_to_string(export.join("campaign.json")).expect("campaign.json");
    let campaign: Value = serde_json::from_str(&text).expect("JSON");
    let items = campaign["items"].as_array().expect("items");
    assert_eq!(items.len(), 4, "two games of each judge's condition");
    // Hand computation: for each ranked game, each judge's scores of that seed's game.
    let mut taus: BTreeMap<(String, &str), Vec<f64>> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        let game_id = item["hidden"]["game"].as_str().expect("game");
        let ranked = games
            .iter()
            .find(|g| g.result["game_id"] == game_id)
            .expect("the ranked game");
        let mut names: Vec<String> = scores(ranked, "ici").into_keys().collect();
        let ici = names.clone();
        names.reverse();
        let sci = names;
        let answer = json!({"ici": ici, "sci": sci}).to_string();
        let n = i.to_string();
        let args = ["annotate", "answer", "run", "--token", &token, "--item", &n];
        sleuth_ok(dir, &[&args[..], &["--answer", &answer]].concat());
        for copy in games.iter().filter(|g| g.seed == ranked.seed) {
            for (metric, order) in [("ici", &ici), ("sci", &sci)] {
                let judge = scores(copy, metric);
                let people: Vec<f64> = (0..order.len()).map(|k| (order.len() - k) as f64).collect();
                let machine: Vec<f64> = order.iter().map(|c| judge[c]).collect();
                if let Some(t) = tau_b(&people, &machine) {
                    taus.entry((copy.judge.clone(), metric))
                        .or_default()
                        .push(t);
                }
            }
        }
    }
    sleuth_ok(dir, &["report", "run"]);
    let md = std::fs::read_to_string(report.join("report.md")).expect("report.md");
    assert!(
        md.contains("every judge model against the annotators"),
        "{md}"
    );
    let rows = csv_rows(&report.join("mirage_judges_agreement_ranks.csv"));
    let listed: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["judge"].as_str(), r["metric"].as_str()))
        .collect();
    let want = [
        ("judge-a", "ICI"),
        ("judge-a", "SCI"),
        ("judge-b", "ICI"),
        ("judge-b", "SCI"),
    ];
    assert_eq!(listed, want, "{rows:?}");
    for row in &rows {
        let metric = row["metric"].to_lowercase();
        let expected = &taus[&(row["judge"].clone(), metric.as_str())];
        assert_eq!(number(row, "rankings"), expected.len() as f64, "{row:?}");
        let got = number(row, "mean_tau_b");
        assert!(
            (got - mean(expected)).abs() < 1e-9,
            "{row:?}: want {expected:?}"
        );
    }
}

#[test]
fn a_judge_axis_gives_each_arm_its_judge_and_refuses_per_metric_judges_beside_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = sweep_file(tmp.path());
    let plan = sleuth::sweep::Plan::build(sleuth::sweep::LoadedSweep::load(&file).expect("load"))
        .expect("plan");
    let labels: Vec<&str> = plan.arms.iter().map(|a| a.label.as_str()).collect();
    assert_eq!(labels, ["judge_model=judge-a", "judge_model=judge-b"]);
    for g in &plan.games {
        let judge = plan.arms[g.arm].settings.judge_model.clone().expect("set");
        assert_eq!(
            g.spec.judge,
            sleuth::game::JudgeChoice::Llm(judge),
            "{}",
            g.id
        );
    }
    let text = std::fs::read_to_string(&file).expect("read")
        + "[evaluation]\njudges = { mirage = \"judge-a\" }\n";
    std::fs::write(&file, text).expect("write");
    let err = sleuth::sweep::Plan::build(sleuth::sweep::LoadedSweep::load(&file).expect("load"))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("set the judge in one place"), "{err}");
}
