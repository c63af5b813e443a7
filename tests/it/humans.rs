//! Annotation campaigns end to end through the `sleuth` binary (`docs/humans.md`): a *responses*
//! campaign over games of two frameworks, answered by two annotators, gives the report ThinkThrice's
//! Appendix A figure with Krippendorff's α computed from their answers; a *rankings* campaign over
//! MIRAGE games gives MIRAGE Table 7's Kendall τ against the judge. Answers go in through `sleuth
//! annotate answer`, checked by the same function as the viewer's pages (`tests/it/viewer/annotate.rs`
//! drives those in a browser).

use crate::common;

use std::path::Path;

use serde_json::{json, Value};

use common::{sleuth_in, sleuth_ok as ok};

/// The tokens `annotate create` printed, by annotator.
fn tokens(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .filter_map(|l| l.trim().split_once('\t'))
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect()
}

/// The campaign as `annotate export` writes it.
fn exported(dir: &Path, run_dir: &str, id: &str) -> Value {
    let out = dir.join(format!("export-{id}"));
    ok(
        dir,
        &[
            "annotate",
            "export",
            run_dir,
            id,
            "--out",
            out.to_str().expect("utf-8"),
        ],
    );
    let text = std::fs::read_to_string(out.join("campaign.json")).expect("campaign.json");
    serde_json::from_str(&text).expect("campaign.json is JSON")
}

#[test]
fn two_annotators_rate_responses_and_the_report_prints_appendix_a_with_alpha() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let script = common::crate_file("examples/orchard-press.toml");
    let script = script.to_str().expect("utf-8");
    for (framework, seed) in [
        ("ocot", "1"),
        ("ocot", "2"),
        ("thinkthrice", "1"),
        ("thinkthrice", "2"),
    ] {
        let out = format!("run/{framework}-{seed}");
        ok(
            dir,
            &[
                "play",
                script,
                "--framework",
                framework,
                "--seed",
                seed,
                "--out",
                &out,
            ],
        );
    }
    let created = ok(
        dir,
        &[
            "annotate",
            "create",
            "run",
            "--id",
            "intro",
            "--kind",
            "responses",
            "--per-condition",
            "3",
            "--annotators",
            "ann,bob",
            "--seed",
            "7",
        ],
    );
    let tokens = tokens(&created);
    assert_eq!(
        tokens.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["ann", "bob"]
    );
    let campaign = exported(dir, "run", "intro");
    let items = campaign["items"].as_array().expect("items");
    assert_eq!(items.len(), 3, "three groups asked for and drawn");
    for item in items {
        let shown = item["shown"].to_string();
        for secret in [
            "ocot",
            "thinkthrice",
            "O-CoT",
            "ThinkThrice",
            "result.json",
            "sim-1",
        ] {
            assert!(
                !shown.contains(secret),
                "the item shows '{secret}': {shown}"
            );
        }
        assert_eq!(
            item["shown"]["responses"].as_array().map(Vec::len),
            Some(2),
            "one response per condition"
        );
    }

    // A score outside 1..5 is refused with the item, the annotator and the field named; nothing is kept.
    let labels = |i: usize| -> Vec<String> {
        items[i]["shown"]["responses"]
            .as_array()
            .expect("responses")
            .iter()
            .map(|r| r["label"].as_str().expect("label").to_string())
            .collect()
    };
    let rating =
        |n: u64, t: u64, i: u64| json!({"naturalness": n, "truthfulness": t, "informativeness": i});
    let bad = json!({"ratings": {labels(0)[0].clone(): rating(6, 3, 3), labels(0)[1].clone(): rating(3, 3, 3)}});
    let (success, _, stderr) = sleuth_in(
        dir,
        &[
            "annotate",
            "answer",
            "run",
            "--token",
            &tokens[0].1,
            "--item",
            "0",
            "--answer",
            &bad.to_string(),
        ],
    );
    assert!(!success, "a score of 6 was accepted");
    assert!(
        stderr.contains("item 0") && stderr.contains("ann") && stderr.contains("naturalness"),
        "{stderr}"
    );
    assert!(exported(dir, "run", "intro")["answers"]
        .as_array()
        .is_some_and(Vec::is_empty));

    // Both annotators rate every response; bob is one point harsher on truthfulness for the first label.
    for (who, token) in &tokens {
        for i in 0..items.len() {
            let mut ratings = serde_json::Map::new();
            for (k, l) in labels(i).into_iter().enumerate() {
                let base = 2 + ((i + k) % 3) as u64;
                let t = if who == "bob" && k == 0 {
                    base.saturating_sub(1).max(1)
                } else {
                    base
                };
                ratings.insert(l, rating(base, t, 5 - base.min(4)));
            }
            let answer = json!({"ratings": ratings}).to_string();
            ok(
                dir,
                &[
                    "annotate",
                    "answer",
                    "run",
                    "--token",
                    token,
                    "--item",
                    &i.to_string(),
                    "--answer",
                    &answer,
                ],
            );
        }
    }
    let status = ok(dir, &["annotate", "status", "run", "intro"]);
    assert!(
        status
            .lines()
            .any(|l| l.contains("ann") && l.contains("3 / 3")),
        "{status}"
    );
    assert!(
        status
            .lines()
            .any(|l| l.contains("bob") && l.contains("3 / 3")),
        "{status}"
    );

    // The export's tidy table: one row per rating, the condition joined in.
    exported(dir, "run", "intro");
    let ratings =
        std::fs::read_to_string(dir.join("export-intro/ratings.csv")).expect("ratings.csv");
    assert_eq!(
        ratings.lines().count(),
        1 + 2 * 3 * 2,
        "annotators x groups x responses:\n{ratings}"
    );
    assert!(ratings
        .lines()
        .skip(1)
        .all(|l| l.contains("O-CoT") || l.contains("ThinkThrice")));

    ok(dir, &["report", "run"]);
    let md = std::fs::read_to_string(dir.join("run/report/report.md")).expect("report.md");
    assert!(
        md.contains("Appendix A"),
        "the report has the human figure:\n{md}"
    );
    assert!(
        md.contains("α"),
        "with Krippendorff's alpha for two annotators:\n{md}"
    );
}

#[test]
fn a_rankings_campaign_gives_table_7s_tau_against_the_judge() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let script = common::night_ferry();
    let script = script.to_str().expect("utf-8");
    for seed in ["1", "2"] {
        let out = format!("run/mirage-{seed}");
        ok(
            dir,
            &[
                "play",
                script,
                "--protocol",
                "mirage",
                "--judge-model",
                "simulated",
                "--seed",
                seed,
                "--out",
                &out,
            ],
        );
    }
    let created = ok(
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
    let token = tokens(&created).remove(0).1;
    let campaign = exported(dir, "run", "ranks");
    let items = campaign["items"].as_array().expect("items");
    assert_eq!(items.len(), 2);
    for (i, item) in items.iter().enumerate() {
        assert!(
            !item["shown"].to_string().contains("sim-1"),
            "the model is hidden"
        );
        // The annotator orders as the judge scored ICI, and the reverse on SCI.
        let by = |metric: &str, best_first: bool| -> Vec<String> {
            let scores = item["hidden"]["scores"][metric]
                .as_object()
                .expect("scores");
            let mut names: Vec<(&String, f64)> = scores
                .iter()
                .map(|(n, s)| (n, s.as_f64().expect("score")))
                .collect();
            names.sort_by(|a, b| b.1.total_cmp(&a.1));
            let mut names: Vec<String> = names.into_iter().map(|(n, _)| n.clone()).collect();
            if !best_first {
                names.reverse();
            }
            names
        };
        let answer = json!({"ici": by("ici", true), "sci": by("sci", false)}).to_string();
        ok(
            dir,
            &[
                "annotate",
                "answer",
                "run",
                "--token",
                &token,
                "--item",
                &i.to_string(),
                "--answer",
                &answer,
            ],
        );
    }
    exported(dir, "run", "ranks");
    let rankings =
        std::fs::read_to_string(dir.join("export-ranks/rankings.csv")).expect("rankings.csv");
    let characters = items[0]["shown"]["characters"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(
        rankings.lines().count(),
        1 + 2 * 2 * characters,
        "games x metrics x characters:\n{rankings}"
    );

    ok(dir, &["report", "run"]);
    let md = std::fs::read_to_string(dir.join("run/report/report.md")).expect("report.md");
    assert!(
        md.contains("Table 7"),
        "the report has MIRAGE Table 7:\n{md}"
    );
}
