//! `sleuth report` over MIRAGE games played by the binary (simulated model, simulated judge) on three
//! scripts of the English MIRAGE set and one of sleuth's own, each without and with forced
//! self-exposure over two seeds: MIRAGE Tables 11, 12–19, 9, 10 and 3 and Figures 3–8, their values
//! the means of what the games' result.json recorded, the paper's rows beside sleuth's. Skipped with a
//! note when `../shared/datasets` is absent (a failure under CI).

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use common::report::{csv_rows, num, sleuth_ok};
use serde_json::Value;
use sleuth::report::mirage::categories::Structure;
use sleuth::report::mirage::published::{self, CHARACTERS};
use sleuth::script::import::mirage::{import, MirageOptions};
use sleuth::script::Script;

/// The simulated model, named as the paper's GLM-4-9B (its Table 8 version), so that every MIRAGE
/// table prints exactly that model's published row beside sleuth's.
const MODEL: &str = "glm-4-9b-chat";

/// The dataset's folders of Table 1's scripts, in its order.
const FOLDERS: [&str; 8] = [
    "Bride in Filial Dress",
    "The Eastern Star Cruise Ship",
    "Night at the Museum",
    "Li Chuan Strange Talk Book",
    "The Final Performance of a Big Star",
    "Raging Sea of Rest Life",
    "Artical 22 School Rules",
    "Fox Hotel",
];

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

/// Table 1's rows agree with the dataset: Single is one stage, Multi several; #Agent is the number of
/// characters; the detail tables' characters are the dataset's, in its order.
#[test]
fn table_1_and_the_detail_tables_match_the_dataset() {
    let Some(d) = common::datasets() else { return };
    for (place, folder) in FOLDERS.iter().enumerate() {
        let s = import(&d.join("mirage-en").join(folder), &MirageOptions::default())
            .unwrap_or_else(|e| panic!("{folder}: {e}"));
        let (found, row) = published::table1(&s.title).expect("a Table 1 title");
        assert_eq!(found, place, "{folder}");
        assert_eq!(
            row.kind.structure == Structure::Multi,
            s.acts > 1,
            "{folder}"
        );
        assert_eq!(row.stages, s.acts, "{folder}: #Stages");
        assert_eq!(row.agents as usize, s.characters.len(), "{folder}: #Agent");
        let names: Vec<&str> = s.characters.iter().map(|c| c.name.as_str()).collect();
        let paper: Vec<&str> = CHARACTERS[place].iter().map(|c| c.name).collect();
        assert_eq!(names, paper, "{folder}");
    }
}

/// What a played game recorded, by (script, force_expose).
#[derive(Default)]
struct Recorded {
    victory: Vec<f64>,
    tii: Vec<f64>,
    ici: Vec<f64>,
    sci: Vec<f64>,
    by_seed: BTreeMap<u64, f64>,
}

/// TII as the report computes it: the suspicion share per character scored, averaged.
fn tii(r: &Value) -> Option<f64> {
    let sums = |key: &str| -> BTreeMap<(String, String), f64> {
        let mut out = BTreeMap::new();
        for (scorer, row) in r["mirage"][key].as_object().into_iter().flatten() {
            for (scored, xs) in row.as_object().into_iter().flatten() {
                if scored != scorer {
                    let s: f64 = xs
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(Value::as_f64)
                        .sum();
                    out.insert((scorer.clone(), scored.clone()), s);
                }
            }
        }
        out
    };
    let (trust, suspicion) = (sums("trust"), sums("suspicion"));
    let scored: std::collections::BTreeSet<&String> = trust
        .keys()
        .chain(suspicion.keys())
        .map(|(_, c)| c)
        .collect();
    let shares: Vec<f64> = scored
        .into_iter()
        .filter_map(|c| {
            let got = |m: &BTreeMap<(String, String), f64>| -> f64 {
                m.iter().filter(|((_, s), _)| s == c).map(|(_, v)| v).sum()
            };
            let (s, t) = (got(&suspicion), got(&trust));
            (s + t > 0.0).then(|| s / (s + t))
        })
        .collect();
    (!shares.is_empty()).then(|| mean(&shares) * 100.0)
}

/// Each (script, character, force_expose)'s ICI in every game judged.
type CharacterIci = BTreeMap<(String, String, bool), Vec<f64>>;

/// The method name the report gives the games of one condition.
fn method(expose: bool) -> String {
    format!("MIRAGE · force_expose={expose}")
}

#[test]
fn mirage_tables_and_figures_come_from_played_games() {
    let Some(d) = common::datasets() else { return };
    let tmp = tempfile::tempdir().expect("temp dir");
    let (scripts, ferry_title) = the_scripts(&d, tmp.path());
    let run_dir = tmp.path().join("run");
    let (recorded, characters) = play_every_game(tmp.path(), &scripts, &run_dir);
    sleuth_ok(tmp.path(), &["report", run_dir.to_str().unwrap()]);
    let report = run_dir.join("report");
    let md = fs::read_to_string(report.join("report.md")).expect("report.md");
    for title in [
        "MIRAGE Table 11 — results per script",
        "MIRAGE Tables 12–19 — results per character",
        "MIRAGE Table 9 — results per simulation without forced self-exposure",
        "MIRAGE Table 10 — results per simulation with forced self-exposure",
        "MIRAGE Table 3 — TII without and with forced self-exposure",
        "MIRAGE Figure 3 — ICI of Single & Multi type scripts",
        "MIRAGE Figure 8 — SCI of Close & Open type scripts",
    ] {
        assert!(
            md.contains(&format!("## {title}")),
            "{title} in report.md:\n{md}"
        );
    }
    table_11_has_the_means_of_the_games(&report, &recorded, &ferry_title);
    tables_12_19_have_each_characters_ici(&report, &characters);
    tables_9_10_and_3_pool_the_conditions(&report, &recorded);
    figures_3_to_8_average_by_type(&report, &md, &recorded, &ferry_title);
}

/// The scripts the games play, (title, file), imported into `tmp`; and the Night Ferry's title.
fn the_scripts(d: &Path, tmp: &Path) -> (Vec<(String, PathBuf)>, String) {
    // SOO, SUC and MOC (whose culprit does not play, so forced exposure exposes nobody), and sleuth's
    // own Night Ferry: one act, outside the MIRAGE set.
    let mut scripts: Vec<(String, PathBuf)> = Vec::new();
    for folder in [FOLDERS[1], FOLDERS[2], FOLDERS[4]] {
        let s = import(&d.join("mirage-en").join(folder), &MirageOptions::default())
            .unwrap_or_else(|e| panic!("{folder}: {e}"));
        let path = tmp.join(format!("{folder}.toml"));
        s.save(&path).expect("save");
        scripts.push((s.title.clone(), path));
    }
    let ferry = common::night_ferry();
    let ferry_title = Script::load(&ferry).expect("night ferry").title;
    scripts.push((ferry_title.clone(), ferry));
    (scripts, ferry_title)
}

/// Plays every script without and with forced self-exposure, two seeds each, into `run_dir`: what
/// the games recorded, by (script, force_expose), and each character's ICI.
fn play_every_game(
    tmp: &Path,
    scripts: &[(String, PathBuf)],
    run_dir: &Path,
) -> (BTreeMap<(String, bool), Recorded>, CharacterIci) {
    let mut recorded: BTreeMap<(String, bool), Recorded> = BTreeMap::new();
    let mut characters: CharacterIci = BTreeMap::new();
    for (title, path) in scripts {
        for expose in [false, true] {
            for seed in [1u64, 2] {
                let out = run_dir.join(format!("{title}-{expose}-{seed}"));
                let mut args = vec![
                    "play",
                    path.to_str().unwrap(),
                    "--protocol",
                    "mirage",
                    "--iterations",
                    "1",
                    "--model",
                    MODEL,
                    "--judge",
                    "mirage=sim-judge",
                ];
                if expose {
                    args.push("--force-expose");
                }
                let seed_text = seed.to_string();
                args.extend(["--seed", &seed_text, "--out", out.to_str().unwrap()]);
                sleuth_ok(tmp, &args);
                let r: Value =
                    serde_json::from_str(&fs::read_to_string(out.join("result.json")).unwrap())
                        .unwrap();
                let e = recorded.entry((title.clone(), expose)).or_default();
                e.victory
                    .push(r["mirage"]["victory"].as_f64().unwrap() * 100.0);
                let t = tii(&r).expect("characters scored one another");
                e.tii.push(t);
                e.by_seed.insert(seed, t);
                e.ici
                    .push(r["mirage_scores"]["ici"].as_f64().expect("judged ICI"));
                e.sci
                    .push(r["mirage_scores"]["sci"].as_f64().expect("judged SCI"));
                for (name, c) in r["mirage_scores"]["characters"].as_object().unwrap() {
                    if let Some(x) = c["ici"].as_f64() {
                        characters
                            .entry((title.clone(), name.clone(), expose))
                            .or_default()
                            .push(x);
                    }
                }
            }
        }
    }
    (recorded, characters)
}

/// Table 11's rows are the means of the games, each MIRAGE script followed by the paper's row.
fn table_11_has_the_means_of_the_games(
    report: &Path,
    recorded: &BTreeMap<(String, bool), Recorded>,
    ferry_title: &str,
) {
    // Table 11: a row per script × condition, the means of what the games recorded; each MIRAGE
    // script followed by the paper's GLM-4-9B row of it (the games' model), the Night Ferry by none.
    let t11 = csv_rows(&report.join("mirage_table11.csv"));
    for ((title, expose), e) in recorded {
        let row = t11
            .iter()
            .find(|r| &r["script"] == title && r["model"] == method(*expose))
            .unwrap_or_else(|| panic!("{title} {expose} in {t11:?}"));
        assert_eq!(row["games"], "2");
        for (field, values) in [
            ("victory_mean", &e.victory),
            ("tii_suspicion_share_mean", &e.tii),
            ("ici_mean", &e.ici),
            ("sci_mean", &e.sci),
        ] {
            assert!(close(num(row, field), mean(values)), "{title} {field}");
        }
        let paper = t11
            .iter()
            .filter(|r| &r["script"] == title && r["model"].starts_with("Published"))
            .count();
        assert_eq!(paper, usize::from(title != ferry_title), "{title}");
    }
    let types: Vec<(&str, &str)> = t11
        .iter()
        .map(|r| (r["script"].as_str(), r["type"].as_str()))
        .collect();
    assert!(types.contains(&("The Eastern Star Cruise Ship", "SOO")));
    assert!(types.contains(&("The Final Performance of a Big Star", "MOC")));
    assert!(types.contains(&(ferry_title, "")));
    let glm = t11
        .iter()
        .find(|r| r["script"] == "Night at the Museum" && r["model"] == "Published: GLM-4-9B")
        .expect("the paper's GLM-4-9B row of Night at the Museum");
    assert!(close(num(glm, "victory_mean"), 33.33));
}

/// Tables 12–19: each judged character's ICI, and the paper's rows.
fn tables_12_19_have_each_characters_ici(report: &Path, characters: &CharacterIci) {
    // Tables 12–19: each judged character's ICI is the mean over its games; the MIRAGE set's
    // characters have the paper's row of them.
    let t12 = csv_rows(&report.join("mirage_tables12_19.csv"));
    for ((title, name, expose), values) in characters {
        let row = t12
            .iter()
            .find(|r| {
                &r["script"] == title && &r["character"] == name && r["model"] == method(*expose)
            })
            .unwrap_or_else(|| panic!("{title} {name} {expose}"));
        assert!(close(num(row, "ici_mean"), mean(values)), "{title} {name}");
    }
    let captain = t12
        .iter()
        .find(|r| r["character"] == "Captain Hong" && r["model"] == "Published: GLM-4-9B")
        .expect("Table 13's Captain Hong");
    assert!(close(num(captain, "tii_suspicion_share_mean"), 50.0));
    assert!(close(num(captain, "rp_mean"), 16.0));
}

/// Tables 9, 10 and 3: TII pooled over each condition, and their difference.
fn tables_9_10_and_3_pool_the_conditions(
    report: &Path,
    recorded: &BTreeMap<(String, bool), Recorded>,
) {
    // Tables 9 and 10: one condition each (the two differ only by force_expose); Table 3: TII of
    // both, and Δ over the games paired by script and seed — every game here is paired.
    let t9 = csv_rows(&report.join("mirage_table9.csv"));
    let t10 = csv_rows(&report.join("mirage_table10.csv"));
    let t3 = csv_rows(&report.join("mirage_table3.csv"));
    let pooled = |expose: bool| {
        mean(
            &recorded
                .iter()
                .filter(|((_, e), _)| *e == expose)
                .map(|(_, r)| mean(&r.tii))
                .collect::<Vec<_>>(),
        )
    };
    assert_eq!(t9[0]["model"], "MIRAGE");
    assert!(close(
        num(&t9[0], "tii_suspicion_share_mean"),
        pooled(false)
    ));
    assert!(close(
        num(&t10[0], "tii_suspicion_share_mean"),
        pooled(true)
    ));
    assert!(close(num(&t3[0], "tii_without_mean"), pooled(false)));
    assert!(close(num(&t3[0], "tii_with_mean"), pooled(true)));
    assert!(close(
        num(&t3[0], "difference_mean"),
        pooled(true) - pooled(false)
    ));
    assert_eq!(t3[0]["pairs"], "8");
    for t in [&t9, &t10, &t3] {
        assert_eq!(t.len(), 2, "sleuth's row and the paper's GLM-4-9B: {t:?}");
        assert_eq!(t[1]["model"], "Published: GLM-4-9B");
    }
    assert!(close(num(&t3[1], "difference_mean"), -1.88));
}

/// Figures 3–8: per type, the mean over its scripts of each script's mean ICI / SCI; which scripts
/// are left out, said in report.md.
fn figures_3_to_8_average_by_type(
    report: &Path,
    md: &str,
    recorded: &BTreeMap<(String, bool), Recorded>,
    ferry_title: &str,
) {
    // Figures 3–8: per type, the mean over its scripts of each script's mean ICI / SCI. The Night
    // Ferry counts as Single (one act, read from its file) and is left out of Figures 5–8.
    let script_mean = |title: &str, expose: bool, sci: bool| {
        let r = &recorded[&(title.to_string(), expose)];
        mean(if sci { &r.sci } else { &r.ici })
    };
    let star = "The Eastern Star Cruise Ship";
    let museum = "Night at the Museum";
    let big_star = "The Final Performance of a Big Star";
    for (id, sci, series, members) in [
        (
            "mirage_figure3",
            false,
            "Single",
            vec![star, museum, ferry_title],
        ),
        ("mirage_figure3", false, "Multi", vec![big_star]),
        ("mirage_figure5", false, "Orthodox", vec![star, big_star]),
        ("mirage_figure5", false, "Unorthodox", vec![museum]),
        ("mirage_figure8", true, "Close", vec![museum, big_star]),
        ("mirage_figure8", true, "Open", vec![star]),
    ] {
        let data = csv_rows(&report.join(format!("{id}.csv")));
        for expose in [false, true] {
            let row = data
                .iter()
                .find(|r| r["series"] == series && r["category"] == method(expose))
                .unwrap_or_else(|| panic!("{id} {series} {expose}: {data:?}"));
            let expected = mean(
                &members
                    .iter()
                    .map(|t| script_mean(t, expose, sci))
                    .collect::<Vec<_>>(),
            );
            assert!(
                close(num(row, "value_mean"), expected),
                "{id} {series} {expose}"
            );
        }
        assert!(report.join(format!("{id}.svg")).is_file());
    }
    for n in 3..=8 {
        assert!(
            md.contains(&format!("mirage_figure{n}.")),
            "figure {n} linked"
        );
    }
    assert!(
        md.contains(&format!(
            "MIRAGE Figures 5 and 6 (Orthodox & Unorthodox) leave out {ferry_title}"
        )),
        "{md}"
    );
    assert!(
        !md.contains("Figures 3 and 4 (Single & Multi) leave out"),
        "{md}"
    );
    assert!(
        md.contains("no culprit among the players") && md.contains(&format!("{big_star} (2)")),
        "{md}"
    );
}
