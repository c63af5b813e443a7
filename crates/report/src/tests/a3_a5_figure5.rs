//! The tables and figures of issue 22: Table A3's Voting per victim, Table A5's cost per evaluation
//! process and #Tokens, the two TII directions, and ThinkThrice Figure 5.

use std::path::Path;

use serde_json::json;

use super::*;

/// A WellPlay game on a script with three victims in which the vote found the culprit of `found` of
/// them; the civilians win only when every solvable case was solved (here: when `found` is 2, the
/// third victim having no culprit in the cast).
fn three_victims(seed: u64, found: usize) -> GameResult {
    use sleuth_game::game::{cases_outcome, CaseVote};
    let case = |victim: &str, culprit: Option<&str>, identified: bool| CaseVote {
        victim: victim.into(),
        culprits: culprit.into_iter().map(String::from).collect(),
        votes: Default::default(),
        vote_counts: Default::default(),
        eliminated: Vec::new(),
        identified,
    };
    let m = cases_outcome(vec![
        case("Vic", Some("Mo"), found >= 1),
        case("Wes", Some("Mo"), found >= 2),
        case("Xan", None, false),
    ]);
    let mut r = result("Ghosts", "player", seed);
    r.winner = Some(m.majority_winner);
    r.majority = Some(m);
    r.choice = Some(choice((1, 1), (1, 1), (1, 1)));
    r
}

/// PLAYER* Table A3's Voting is victims identified / victims, not whether the civilians won: three
/// games finding the culprits of 2, 1 and 2 of 3 victims vote 5/9, where the win rate reads 2/3.
#[test]
fn table_a3_voting_counts_victims_not_wins() {
    let g = Grouping::new(vec![
        record(three_victims(1, 2)),
        record(three_victims(2, 1)),
        record(three_victims(3, 2)),
    ]);
    let t = tables::player_table_a3(&g).expect("A3");
    // Per game: 2/3, 1/3, 2/3 → mean 5/9 (the win rate would be 2/3).
    let (m, _) = mean_std(&t, 0, "Voting").unwrap();
    assert!(close(m, 5.0 / 9.0), "{m}");
    assert_eq!(text(&t, 0, "Voting").split(" ± ").next(), Some("0.556"));
    // The weighted row of the one script is its per-script mean.
    let (m, _) = mean_std(&t, 1, "Voting").unwrap();
    assert!(close(m, 5.0 / 9.0), "{m}");
}

/// Table A5 prints the evaluation cost of one evaluation process (PLAYER*'s unit) and the cost of all
/// runs beside it.
#[test]
fn table_a5_evaluation_cost_is_per_evaluation_process() {
    let game = |seed: u64, calls: u64, cost: f64| {
        let mut r = result("Inn", "player", seed);
        let mut c = choice((1, 1), (1, 1), (1, 1));
        c.repeats = 3;
        r.choice = Some(c);
        r.usage_by_phase.evaluation = serde_json::from_value(usage(calls, cost)).unwrap();
        r
    };
    // 30 and 60 calls over 3 runs: 10 and 20 per process, mean 15; USD 0.3 and 0.6 → 0.15.
    let g = Grouping::new(vec![record(game(1, 30, 0.3)), record(game(2, 60, 0.6))]);
    let t = tables::player_table_a5(&g, &scripts::ScriptLengths::default()).expect("A5");
    assert_eq!(text(&t, 0, "Evaluation calls"), "15");
    assert_eq!(text(&t, 0, "Evaluation USD"), "0.1500");
    // Tokens: 110 per call → 1,650 per process.
    assert_eq!(
        t.rows[0].cells[t.column("Evaluation tokens").unwrap()],
        Cell::Number(Some(1650.0))
    );
    assert_eq!(text(&t, 0, "Evaluation calls (all runs)"), "45");
    assert_eq!(text(&t, 0, "Evaluation USD (all runs)"), "0.4500");
    assert!(t.note.contains("per evaluation process"), "{}", t.note);

    // A game that also answered factual questions (asked once): its 30 evaluation calls are 24 for
    // the choices (8 per run) and 6 factual ones; one process is 8 + 6 = 14 calls, $0.08 + $0.06.
    let mut mixed = game(1, 30, 0.3);
    mixed.factual.counts.insert("own".into(), 4);
    if let Some(c) = mixed.choice.as_mut() {
        c.usage = serde_json::from_value(usage(24, 0.24)).unwrap();
    }
    let g = Grouping::new(vec![record(mixed.clone())]);
    let t = tables::player_table_a5(&g, &scripts::ScriptLengths::default()).expect("A5");
    assert_eq!(text(&t, 0, "Evaluation calls"), "14");
    assert_eq!(text(&t, 0, "Evaluation USD"), "0.1400");
    assert_eq!(text(&t, 0, "Evaluation calls (all runs)"), "30");

    // Recorded before the choices' calls were kept apart: it cannot be split into runs.
    if let Some(c) = mixed.choice.as_mut() {
        c.usage = Default::default();
    }
    let g = Grouping::new(vec![record(mixed)]);
    let t = tables::player_table_a5(&g, &scripts::ScriptLengths::default()).expect("A5");
    assert_eq!(text(&t, 0, "Evaluation calls"), "—");
    assert_eq!(text(&t, 0, "Evaluation calls (all runs)"), "30");
}

/// The two TII directions have two names in result.json; a result written when the trust share was
/// called `tii` still reads, into the trust share.
#[test]
fn the_two_tii_directions_have_two_names_and_old_results_read() {
    let old = json!({"characters": {"Al": {"tii": 0.25, "abilities": null, "ici": null,
                       "role_play": null, "reconstruction_rouge_l": null, "sci": null}},
                     "tii": 0.25, "cic": null, "cic_key": null, "ici": null, "sci": null});
    let m: sleuth_game::game::MirageScores =
        serde_json::from_value(old).expect("an old mirage_scores");
    assert_eq!(m.tii_trust_share, Some(0.25));
    assert_eq!(m.characters["Al"].tii_trust_share, Some(0.25));
    assert_eq!(m.tii_suspicion_share, None, "not stored then");
    let written = serde_json::to_value(&m).unwrap();
    assert!(written.get("tii").is_none(), "{written}");
    assert_eq!(written["tii_trust_share"], json!(0.25));
    assert!(written["characters"]["Al"].get("tii").is_none());
}

/// `r` as played from the script file at `path`, which held `script` then.
pub(super) fn played_from(
    mut r: GameResult,
    script: &sleuth_script::Script,
    path: &Path,
) -> GameResult {
    let config = sleuth_game::game::GameConfig {
        script_path: Some(path.to_path_buf()),
        ..sleuth_game::game::GameConfig::default()
    };
    r.script = script.title.clone();
    r.spec = Some(config.spec(script, "simulated"));
    r
}

/// Table A5's #Tokens is the script's length (tokens per character, as `sleuth script stats`
/// counts it) read back from the file the games were played from; the sum row adds the scripts up as
/// the paper's Overall row does; a file edited since the games leaves the cell empty, with a note.
#[test]
fn table_a5_tokens_are_each_scripts_length_per_character() {
    use sleuth_script::stats::ScriptStats;
    let dir = tempfile::tempdir().unwrap();
    let tiny = sleuth_script::fixtures::tiny();
    let mut longer = tiny.clone();
    longer.title = "Longer".into();
    longer.characters[0].story = "Ada owed Lord Ash a great deal of money. ".repeat(40);
    let (tiny_path, longer_path) = (dir.path().join("tiny.toml"), dir.path().join("longer.toml"));
    tiny.save(&tiny_path).unwrap();
    longer.save(&longer_path).unwrap();
    let per_character = |s: &sleuth_script::Script| {
        ScriptStats::of(s, sleuth_llm::tokens::count).tokens_per_player()
    };
    let (a, b) = (per_character(&tiny), per_character(&longer));
    assert!(b > a + 100.0, "{a} {b}");
    let build = |games: Vec<GameResult>| {
        Report::build(
            dir.path(),
            Loaded {
                games: games.into_iter().map(record).collect(),
                skipped: vec![],
            },
            Bootstrap::default(),
        )
    };
    let report = build(vec![
        played_from(result("Tiny", "player", 1), &tiny, &tiny_path),
        played_from(result("Tiny", "player", 2), &tiny, &tiny_path),
        played_from(result("Longer", "player", 1), &longer, &longer_path),
    ]);
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    let t = report.table("player_table_a5").expect("A5");
    let row = |script: &str| {
        (0..t.rows.len())
            .find(|&i| text(t, i, "Script") == script)
            .unwrap_or_else(|| panic!("{script} in {:?}", t.rows))
    };
    let tokens = |i: usize| match t.rows[i].cells[t.column("#Tokens").unwrap()] {
        Cell::Number(v) => v,
        ref other => panic!("{other:?}"),
    };
    assert_eq!(tokens(row("Tiny")), Some(a));
    assert_eq!(tokens(row("Longer")), Some(b));
    assert_eq!(tokens(row("All scripts (sum)")), Some(a + b));
    assert_eq!(text(t, row("Tiny"), "#Tokens"), format!("{a:.0}"));

    // The file was edited after the games: its length is not theirs.
    let mut edited = tiny.clone();
    edited.premise = "Lord Ash was found dead in the conservatory.".into();
    edited.save(&tiny_path).unwrap();
    let report = build(vec![played_from(
        result("Tiny", "player", 1),
        &tiny,
        &tiny_path,
    )]);
    let t = report.table("player_table_a5").expect("A5");
    assert_eq!(text(t, 0, "#Tokens"), "—");
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.starts_with("Tiny: #Tokens") && n.contains("has changed")),
        "{:?}",
        report.notes
    );
    // Results without a spec name no file: "—", and nothing the reader could fix, so no note.
    let report = build(vec![result("Tiny", "player", 1)]);
    let t = report.table("player_table_a5").expect("A5");
    assert_eq!(text(t, 0, "#Tokens"), "—");
    assert!(report.notes.is_empty(), "{:?}", report.notes);
}

/// A ThinkThrice game of `modules` on `model` with the given inferential accuracies.
fn inferential_game(
    model: &str,
    modules: &str,
    seed: u64,
    overall: f64,
    informed: f64,
) -> GameResult {
    let mut r = result("Inn", "thinkthrice", seed);
    r.protocol = "thinkthrice".into();
    r.model = model.into();
    r.modules = modules.into();
    r.settings = json!({"rounds_before_clues": 1});
    r.inferential_accuracy = Some(overall);
    r.informed_accuracy = Some(informed);
    r
}

/// ThinkThrice Figure 5: per condition, overall and informed accuracy as two bars, the conditions
/// grouped by model; games of another protocol get their own, retitled figure.
#[test]
fn figure5_groups_overall_and_informed_accuracy_by_model() {
    let games = vec![
        inferential_game("sim-b", "mr", 1, 0.5, 0.25),
        inferential_game("sim-b", "mr", 2, 0.7, 0.35),
        inferential_game("sim-a", "none", 1, 0.2, 0.0),
        inferential_game("sim-a", "mr", 1, 0.4, 0.2),
        inferential_game("sim-b", "none", 1, 0.3, 0.1),
    ];
    let g = Grouping::new(games.into_iter().map(record).collect());
    let f = figures::thinkthrice_figure5(&g, &Bootstrap::default()).expect("Figure 5");
    assert_eq!(f.id, "thinkthrice_figure5");
    assert!(f.title.starts_with("ThinkThrice Figure 5"), "{}", f.title);
    let figures::XAxis::Categories(names) = &f.x else {
        panic!("{:?}", f.x)
    };
    assert_eq!(
        names,
        &[
            "sim-a · ThinkThrice No MR",
            "sim-a · ThinkThrice MR",
            "sim-b · ThinkThrice No MR",
            "sim-b · ThinkThrice MR",
        ]
    );
    let names: Vec<&str> = f.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["Overall accuracy", "Informed accuracy"]);
    let at = |series: usize, x: usize| {
        let p = f.series[series]
            .points
            .iter()
            .find(|p| p.x == x as f64)
            .unwrap();
        (p.value.estimate, p.value.n)
    };
    let (overall, n) = at(0, 3);
    assert!(close(overall, 0.6) && n == 2, "{overall} over {n}");
    assert!(close(at(1, 3).0, 0.3));
    assert!(close(at(1, 0).0, 0.0));
    // The CSV holds every bar.
    let data = f.data();
    assert_eq!(data.rows.len(), 8);

    // One model: one group, categories are the methods alone and the caption names the model.
    let g = Grouping::new(vec![
        record(inferential_game("sim-a", "none", 1, 0.2, 0.0)),
        record(inferential_game("sim-a", "mr", 1, 0.4, 0.2)),
    ]);
    let f = figures::thinkthrice_figure5(&g, &Bootstrap::default()).expect("Figure 5");
    assert_eq!(
        f.x,
        figures::XAxis::Categories(vec!["ThinkThrice No MR".into(), "ThinkThrice MR".into()])
    );
    assert!(f.caption.contains("sim-a"), "{}", f.caption);

    // WellPlay games that answered inferential questions: the same bars under their own title.
    let mut wellplay = result("Inn", "player", 1);
    wellplay.inferential_accuracy = Some(0.5);
    let g = Grouping::new(vec![record(wellplay)]);
    assert!(figures::thinkthrice_figure5(&g, &Bootstrap::default()).is_none());
    let f = figures::inferential(
        &g,
        &Bootstrap::default(),
        sleuth_game::game::Protocol::WellPlay,
    )
    .expect("the WellPlay counterpart");
    assert_eq!(f.id, "wellplay_inferential");
    assert!(f.title.ends_with("wellplay protocol"), "{}", f.title);
    assert_eq!(f.series[1].points.len(), 0, "no informed accuracy recorded");
}
