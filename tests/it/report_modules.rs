//! `sleuth report` over ThinkThrice-framework games played by the binary (simulated model) with
//! different module combinations, under the thinkthrice and the wellplay protocol: ThinkThrice Table
//! 4's per-module ablation, one row per module combination in the paper's order, its cells the means
//! of what the games' result.json recorded.

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use common::report::{csv_rows, sleuth_ok};
use serde_json::Value;

#[test]
fn module_ablation_prints_table4_rows_per_protocol_from_the_games() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/night-ferry.toml");
    let run_dir = tmp.path().join("run");
    // (protocol, Table 4's row name) → each game's factual accuracies.
    let mut recorded: BTreeMap<(&str, &str), Vec<Value>> = BTreeMap::new();
    // Played in another order than the table's, which must sort them.
    let combos = [
        ("mr,sr,sv=3", "MR+SR+SV(N=3)"),
        ("none", "No MR"),
        ("mr", "MR"),
    ];
    for protocol in ["thinkthrice", "wellplay"] {
        for (modules, name) in combos {
            for seed in ["1", "2"] {
                let out = run_dir.join(format!("{protocol}-{modules}-s{seed}"));
                let mut args = vec![
                    "play",
                    script.to_str().unwrap(),
                    "--protocol",
                    protocol,
                    "--framework",
                    "thinkthrice",
                    "--modules",
                    modules,
                    "--seed",
                    seed,
                    "--out",
                    out.to_str().unwrap(),
                ];
                if protocol == "thinkthrice" {
                    args.extend([
                        "--rounds-before-clues",
                        "1",
                        "--rounds-after-clues",
                        "0",
                        "--no-initial-questioning",
                    ]);
                } else {
                    args.extend(["--rounds", "1", "--eval-repeats", "1"]);
                }
                sleuth_ok(tmp.path(), &args);
                let r: Value =
                    serde_json::from_str(&fs::read_to_string(out.join("result.json")).unwrap())
                        .unwrap();
                recorded
                    .entry((protocol, name))
                    .or_default()
                    .push(r["factual"].clone());
            }
        }
    }
    sleuth_ok(tmp.path(), &["report", run_dir.to_str().unwrap()]);
    let report = run_dir.join("report");
    let md = fs::read_to_string(report.join("report.md")).expect("report.md");
    assert!(
        md.contains("## ThinkThrice Table 4 — factual QA per module combination"),
        "{md}"
    );
    assert!(
        md.contains("## Factual QA per ThinkThrice module combination — wellplay protocol"),
        "{md}"
    );
    for (protocol, file) in [
        ("thinkthrice", "thinkthrice_table4_modules.csv"),
        ("wellplay", "wellplay_modules.csv"),
    ] {
        let all = csv_rows(&report.join(file));
        let (published, rows): (Vec<_>, Vec<_>) = all
            .into_iter()
            .partition(|r| r["modules"].starts_with("Published: "));
        // The paper's rows of the played combinations, under ThinkThrice's own protocol only.
        let names: Vec<&str> = published.iter().map(|r| r["modules"].as_str()).collect();
        if protocol == "thinkthrice" {
            assert_eq!(
                names,
                [
                    "Published: No MR",
                    "Published: MR",
                    "Published: MR+SR+SV(N=3)"
                ]
            );
            assert_eq!(published[0]["own_mean"], "0.764");
        } else {
            assert!(names.is_empty(), "{names:?}");
        }
        let order: Vec<&str> = rows.iter().map(|r| r["modules"].as_str()).collect();
        assert_eq!(order, ["No MR", "MR", "MR+SR+SV(N=3)"], "{protocol}");
        let mut measured = 0;
        for row in &rows {
            let games = &recorded[&(protocol, row["modules"].as_str())];
            assert_eq!(row["games"], "2");
            for field in ["own", "cq", "mq", "others"] {
                let xs: Vec<f64> = games.iter().filter_map(|f| f[field].as_f64()).collect();
                let shown = &row[&format!("{field}_mean")];
                if xs.is_empty() {
                    assert!(shown.is_empty(), "{protocol} {field}: {shown}");
                    continue;
                }
                measured += 1;
                let mean = xs.iter().sum::<f64>() / xs.len() as f64;
                let shown: f64 = shown.parse().unwrap();
                assert!(
                    (shown - mean).abs() < 1e-9,
                    "{protocol} {} {field}: {shown} vs {mean}",
                    row["modules"]
                );
            }
        }
        assert!(measured > 0, "{protocol}: no factual accuracy measured");
    }
}
