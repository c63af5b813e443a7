//! Issue 33's tables and conventions: Table A3's spreads (Voting per victim, one estimator for the
//! whole table), Table A4 of sleuth's own games, Table A5's per-script published rows, and names in
//! `report.md`.

use std::collections::BTreeMap;
use std::path::Path;

use super::a3_a5_figure5::played_from;
use super::*;
use sleuth_game::game::{cases_outcome, CaseVote};
use sleuth_script::{Language, Script};

/// A WellPlay game on `script` whose vote found the culprits of `found` of its three victims.
fn three_victims(script: &str, seed: u64, found: usize) -> GameResult {
    let case = |victim: &str, identified: bool| CaseVote {
        victim: victim.into(),
        culprits: vec!["Mo".into()],
        votes: Default::default(),
        vote_counts: Default::default(),
        eliminated: Vec::new(),
        identified,
    };
    let m = cases_outcome(vec![
        case("Vic", found >= 1),
        case("Wes", found >= 2),
        case("Xan", found >= 3),
    ]);
    let mut r = result(script, "player", seed);
    r.winner = Some(m.majority_winner);
    r.majority = Some(m);
    r.choice = Some(choice((1, 1), (1, 1), (1, 1)));
    r
}

/// A one-victim WellPlay game the civilians won or lost.
fn one_victim(script: &str, seed: u64, won: bool) -> GameResult {
    let mut r = result(script, "player", seed);
    r.winner = Some(if won {
        Winner::Civilians
    } else {
        Winner::Murderer
    });
    r.choice = Some(choice((1, 1), (1, 1), (1, 1)));
    r
}

/// Item 12: a script's Voting spread is PLAYER*'s — over the victims of its games, ÷ n — so the
/// paper's own examples print as the paper prints them: {0, 0, 1} is .333 ± .471 (the sample std of
/// the per-game values was .577), and two victims found of nine (Ghost Revenge) .222 ± .416 (was
/// .192 over the per-game thirds {1/3, 1/3, 0}).
#[test]
fn table_a3_voting_spread_is_over_the_victims_divided_by_n() {
    let g = Grouping::new(vec![
        record(one_victim("Inn", 1, false)),
        record(one_victim("Inn", 2, false)),
        record(one_victim("Inn", 3, true)),
        record(three_victims("Revenge", 1, 1)),
        record(three_victims("Revenge", 2, 1)),
        record(three_victims("Revenge", 3, 0)),
    ]);
    let t = tables::player_table_a3(&g).expect("A3");
    let row = |script: &str| {
        (0..t.rows.len())
            .find(|&i| text(&t, i, "Script") == script)
            .unwrap_or_else(|| panic!("{script}"))
    };
    assert_eq!(text(&t, row("Inn"), "Voting"), "0.333 ± 0.471");
    assert_eq!(text(&t, row("Revenge"), "Voting"), "0.222 ± 0.416");
    let csv = csv::to_csv(&t);
    assert!(csv.contains(",0.4714045207910317,"), "{csv}");
    assert!(
        t.note.contains("over the victims") && t.note.contains("population std"),
        "{}",
        t.note
    );
}

/// Item 13: one rule for the table. One script evaluated nine times (three games × three runs)
/// prints the same spread in its own row and in its method's pooled row — before, .1293 (n − 1) in
/// the one and .1219 (B.3's ÷ Σw) in the other.
#[test]
fn one_scripts_runs_print_one_spread_in_its_row_and_the_pooled_row() {
    let runs = [[0.2, 0.4, 0.6], [0.3, 0.3, 0.5], [0.1, 0.5, 0.4]];
    let games: Vec<GameRecord> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut g = one_victim("Inn", i as u64 + 1, true);
            // The tallies sum over the three runs.
            let mut c = choice((3, 3), (3, 3), (3, 3));
            c.repeats = 3;
            c.repeat_scores = r.to_vec();
            c.repeat_accuracy = [("objective".to_string(), r.to_vec())].into();
            g.choice = Some(c);
            record(g)
        })
        .collect();
    let t = tables::player_table_a3(&Grouping::new(games)).expect("A3");
    assert_eq!(text(&t, 1, "Script"), "All scripts (weighted)");
    let all: Vec<f64> = runs.iter().flatten().copied().collect();
    let mean = all.iter().sum::<f64>() / 9.0;
    let population = (all.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 9.0).sqrt();
    for heading in ["Objective", "Overall"] {
        assert_eq!(text(&t, 0, heading), text(&t, 1, heading), "{heading}");
        let (m, s) = mean_std(&t, 0, heading).expect(heading);
        assert!(
            close(m, mean) && close(s, population),
            "{heading}: {m} ± {s}"
        );
        let (_, pooled) = mean_std(&t, 1, heading).expect(heading);
        assert!(close(pooled, population), "{heading}: {pooled}");
    }
}

/// Saves `s` under `dir` as `file` and returns its path.
fn saved(s: &Script, dir: &Path, file: &str) -> std::path::PathBuf {
    let path = dir.join(file);
    s.save(&path).expect("the script saves");
    path
}

/// Item 14: Table A4 holds sleuth's own games on English scripts, with the paper's English rows
/// under a script the paper evaluated in English; Table A3 keeps every game and only the paper's
/// Chinese rows. A game whose script cannot be read back is in Table A3 only.
#[test]
fn table_a4_holds_the_games_on_english_scripts() {
    let dir = tempfile::tempdir().unwrap();
    let mut english = sleuth_script::fixtures::tiny();
    english.title = "Ghost Revenge".into();
    let mut chinese = english.clone();
    chinese.title = "Danshui Villa".into();
    chinese.language = Language::Zh;
    let (en_path, zh_path) = (
        saved(&english, dir.path(), "ghost.toml"),
        saved(&chinese, dir.path(), "villa.toml"),
    );
    let game = |title: &str, seed: u64| {
        let mut r = result(title, "player", seed);
        r.choice = Some(choice((1, 1), (1, 2), (2, 2)));
        r
    };
    let report = Report::build(
        dir.path(),
        Loaded {
            games: vec![
                record(played_from(game("x", 1), &english, &en_path)),
                record(played_from(game("x", 2), &english, &en_path)),
                record(played_from(game("x", 1), &chinese, &zh_path)),
                // No spec: its script cannot be read back.
                record(game("Manna", 1)),
            ],
            skipped: vec![],
        },
        Bootstrap::default(),
    );
    let rows = |t: &Table| -> Vec<(String, String)> {
        (0..t.rows.len())
            .map(|i| (text(t, i, "Script"), text(t, i, "Method")))
            .collect()
    };
    let a4 = report.table("player_table_a4").expect("Table A4");
    assert!(a4.title.starts_with("PLAYER* Table A4"), "{}", a4.title);
    assert_eq!(
        rows(a4),
        [
            ("Ghost Revenge".to_string(), "PLAYER*".to_string()),
            (
                "Ghost Revenge".to_string(),
                "Published A4 (English): PLAYER*".to_string()
            ),
        ]
    );
    assert_eq!(text(a4, 0, "Games"), "2");
    assert_eq!(
        text(a4, 1, "Voting"),
        "—",
        "the paper's A4 prints no Voting"
    );
    assert_eq!(text(a4, 1, "Overall"), "0.432 ± 0.013");
    let a3 = report.table("player_table_a3").expect("Table A3");
    let a3_rows = rows(a3);
    for script in ["Ghost Revenge", "Danshui Villa", "Manna"] {
        assert!(
            a3_rows.iter().any(|(s, m)| s == script && m == "PLAYER*"),
            "{script} in {a3_rows:?}"
        );
    }
    assert!(a3_rows
        .iter()
        .any(|(s, m)| s == "Ghost Revenge" && m == "Published A3: PLAYER*"));
    assert!(
        !a3_rows.iter().any(|(_, m)| m.starts_with("Published A4")),
        "the English rows moved to Table A4: {a3_rows:?}"
    );
    // Sections come in reading order: A4 right after A3.
    let ids: Vec<&str> = report
        .sections
        .iter()
        .filter_map(|s| match s {
            Section::Table(t) => Some(t.id.as_ref()),
            Section::Figure(_) => None,
        })
        .collect();
    let at = |id: &str| ids.iter().position(|x| *x == id).expect(id);
    assert_eq!(at("player_table_a4"), at("player_table_a3") + 1, "{ids:?}");
    // Without a game on an English script there is no Table A4.
    let report = Report::build(
        dir.path(),
        Loaded {
            games: vec![record(played_from(game("x", 1), &chinese, &zh_path))],
            skipped: vec![],
        },
        Bootstrap::default(),
    );
    assert!(report.table("player_table_a4").is_none());
}

/// Item 14: Table A5 prints the paper's per-script cost rows under a script it played — its #Tokens,
/// gameplay USD and USD of one evaluation process — for the methods played.
#[test]
fn table_a5_prints_the_papers_rows_under_each_of_its_scripts() {
    let mut sin = result("Sin", "player", 1);
    sin.choice = Some(choice((1, 1), (1, 1), (1, 1)));
    let mut pp = result("Sin", "pp", 1);
    pp.choice = sin.choice.clone();
    let mut ours = result("Night Ferry", "player", 1);
    ours.choice = sin.choice.clone();
    let report = Report::build(
        Path::new("runs"),
        Loaded {
            games: vec![record(sin), record(pp), record(ours)],
            skipped: vec![],
        },
        Bootstrap::default(),
    );
    let t = report.table("player_table_a5").expect("A5");
    let find = |script: &str, method: &str| {
        (0..t.rows.len())
            .find(|&i| text(t, i, "Script") == script && text(t, i, "Method") == method)
            .unwrap_or_else(|| panic!("{script} · {method}"))
    };
    // Right under the script's own rows, in the paper's method order.
    let pp = find("Sin", "Published A5: PP");
    assert_eq!(pp, find("Sin", "PLAYER*") + 1, "{:?}", t.rows);
    let player = find("Sin", "Published A5: PLAYER*");
    assert_eq!(player, pp + 1);
    assert_eq!(text(t, player, "#Tokens"), "2121");
    assert_eq!(text(t, player, "Gameplay USD"), "0.6030");
    assert_eq!(text(t, player, "Evaluation USD"), "0.1420");
    assert_eq!(text(t, player, "Gameplay calls"), "—");
    assert_eq!(text(t, pp, "Gameplay USD"), "—", "PP plays no game");
    assert_eq!(text(t, pp, "Evaluation USD"), "0.0610");
    assert!(
        !(0..t.rows.len()).any(|i| text(t, i, "Method") == "Published A5: O-CoT"),
        "only the methods played"
    );
    assert!(
        !(0..t.rows.len())
            .any(|i| text(t, i, "Script") == "Night Ferry" && text(t, i, "Method").contains("A5")),
        "a script the paper did not play has no published rows"
    );
    assert!(t.note.contains("Published A5: METHOD"), "{}", t.note);
}

/// Item 15: `report.md` writes names as text — a script titled with HTML, a model named with it, a
/// note quoting them — escaped as `report.html` escapes them.
#[test]
fn report_md_escapes_html_in_names() {
    let title = "<img src=x onerror=alert(1)> & Co";
    let mut r = result(title, "player", 1);
    r.model = "<b>bold</b>".into();
    r.choice = Some(choice((1, 1), (1, 1), (1, 1)));
    let mut report = Report::build(
        Path::new("runs/<script>"),
        Loaded {
            games: vec![record(r)],
            skipped: vec![],
        },
        Bootstrap::default(),
    );
    report.notes.push(format!("{title}: a note naming it"));
    let md = markdown::render(&report, &report.notes, &BTreeMap::new());
    assert!(!md.contains("<img"), "{md}");
    assert!(!md.contains("<b>"), "{md}");
    assert!(!md.contains("<script>"), "{md}");
    assert!(
        md.contains("&lt;img src=x onerror=alert(1)&gt; & Co"),
        "{md}"
    );
    assert!(md.contains("- &lt;img src=x"), "the note: {md}");
    assert!(md.contains("runs/&lt;script&gt;"), "the summary: {md}");
    // What report.html does with the same names.
    let html = html::render(&report, &report.notes, &BTreeMap::new());
    assert!(!html.contains("<img") && html.contains("&lt;img"));
}
