//! The tournament's unit tests: pooling, ratings and costs over hand-made game records.

use std::path::{Path, PathBuf};

use super::super::tests::result;
use super::super::GameRecord;
use super::*;
use sleuth_game::game::GameConfig;
use sleuth_script::Script;

/// A WellPlay game of `framework` with `culprit` on the culprit's side and `civilians` on the
/// civilians', won by the culprit's side when `culprit_won`.
fn game(
    framework: &str,
    culprit: &str,
    civilians: &str,
    seed: u64,
    culprit_won: bool,
) -> GameRecord {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/night-ferry.toml");
    let script = Script::load(&path).expect("the example loads");
    let mut r = result("Ferry", framework, seed);
    r.model = civilians.into();
    let mut spec = GameConfig::default().spec(&script, "simulated");
    spec.murderer_model = Some(culprit.into());
    r.spec = Some(spec);
    r.winner = Some(if culprit_won {
        Winner::Murderer
    } else {
        Winner::Civilians
    });
    r.game_id = format!("{framework}-{culprit}-{civilians}-{seed}");
    GameRecord::new(
        PathBuf::from(format!("runs/{}/result.json", r.game_id)),
        r,
        None,
    )
}

#[test]
fn each_setup_is_its_own_tournament_and_a_game_without_transcript_has_no_cost() {
    // Under PLAYER*, "a" wins every game against "b" on either side; under O-CoT, "b" does.
    let mut games = Vec::new();
    for seed in 1..=6 {
        games.push(game("player", "a", "b", seed, true));
        games.push(game("player", "b", "a", seed, false));
        games.push(game("ocot", "a", "b", seed, false));
        games.push(game("ocot", "b", "a", seed, true));
        // A game of one model on both sides in each setup: the diagonal.
        games.push(game("ocot", "a", "a", seed, seed % 2 == 0));
    }
    let g = Grouping::new(games);
    let mut notes = Vec::new();
    let b = Bootstrap {
        resamples: 500,
        ..Bootstrap::default()
    };
    let tables = tables(&g, &b, &mut notes);
    let [ratings, matrix, sides] = &tables[..] else {
        panic!("three tables: {tables:?}");
    };
    assert_eq!(ratings.columns[0].heading, "Setup");
    let rows: Vec<(String, String)> = ratings
        .rows
        .iter()
        .map(|r| match (&r.cells[0], &r.cells[1]) {
            (Cell::Text(s), Cell::Text(m)) => (s.clone(), m.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("wellplay · O-CoT".to_string(), "b".to_string()),
            ("wellplay · O-CoT".to_string(), "a".to_string()),
            ("wellplay · PLAYER*".to_string(), "a".to_string()),
            ("wellplay · PLAYER*".to_string(), "b".to_string()),
        ]
    );
    let at = |t: &Table, row: usize, heading: &str| {
        t.rows[row].cells[t.column(heading).expect(heading)].clone()
    };
    // Six wins in twelve games against b on each side under PLAYER*: a clean sweep, finite.
    assert_eq!(at(ratings, 2, "Wins"), Cell::Number(Some(12.0)));
    match at(ratings, 2, "Rating") {
        Cell::MeanCi(Some(iv)) => {
            assert!(iv.estimate > 1150.0 && iv.high.is_finite(), "{iv:?}")
        }
        other => panic!("{other:?}"),
    }
    // The self-play games count on their side, not in Games.
    assert_eq!(at(ratings, 1, "Games"), Cell::Number(Some(12.0)));
    match at(ratings, 1, "Culprit win rate") {
        // As culprit: 0 of 6 against b, 3 of 6 against itself.
        Cell::MeanCi(Some(iv)) => assert!((iv.estimate - 0.25).abs() < 1e-12, "{iv:?}"),
        other => panic!("{other:?}"),
    }
    // No transcripts: no cost, and a note says why.
    assert_eq!(at(ratings, 0, "USD per win"), Cell::Number(None));
    assert!(
        notes.iter().any(|n| n.contains("transcript.jsonl")),
        "{notes:?}"
    );
    // Matrix: b beat a in every O-CoT game; the diagonal is empty. Sides: a against itself.
    assert_eq!(matrix.column("b"), Some(2));
    match at(matrix, 0, "a") {
        Cell::MeanCi(Some(iv)) => assert_eq!(iv.estimate, 1.0),
        other => panic!("{other:?}"),
    }
    assert_eq!(at(matrix, 0, "b"), Cell::MeanCi(None));
    match at(sides, 1, "a") {
        Cell::MeanCi(Some(iv)) => assert!((iv.estimate - 0.5).abs() < 1e-12, "{iv:?}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(at(sides, 3, "b"), Cell::MeanCi(None), "b never met itself");
}

/// Two models, no self-play, a 4–4 split: each model's culprit met only the other's civilians,
/// so the culprit ratings of the two were set apart by the prior alone (both printed 1000).
/// They are left out, and the note says why; self-play games connect them.
#[test]
fn per_side_ratings_the_games_do_not_connect_are_not_printed() {
    let mut games = Vec::new();
    for seed in 1..=4 {
        games.push(game("player", "a", "b", seed, seed % 2 == 0));
        games.push(game("player", "b", "a", seed, seed % 2 == 1));
    }
    let b = Bootstrap {
        resamples: 200,
        ..Bootstrap::default()
    };
    let build = |games: Vec<GameRecord>| tables(&Grouping::new(games), &b, &mut Vec::new());
    let split = build(games.clone());
    let ratings = &split[0];
    let cell = |t: &Table, row: usize, heading: &str| {
        t.rows[row].cells[t.column(heading).expect(heading)].clone()
    };
    for row in 0..2 {
        assert_eq!(cell(ratings, row, "Culprit rating"), Cell::MeanCi(None));
        assert_eq!(cell(ratings, row, "Civilians rating"), Cell::MeanCi(None));
        assert!(matches!(
            cell(ratings, row, "Rating"),
            Cell::MeanCi(Some(_))
        ));
        assert!(matches!(
            cell(ratings, row, "Culprit win rate"),
            Cell::MeanCi(Some(_))
        ));
    }
    let md_cell = cell(ratings, 0, "Culprit rating").display(Kind::MeanCi(0));
    assert_eq!(md_cell, "—");
    assert!(
        ratings.note.contains("self_play = true"),
        "{}",
        ratings.note
    );
    // The prior's reference is strength 1, not the models' mean.
    assert!(
        ratings.note.contains("strength 1") && !ratings.note.contains("against the mean"),
        "{}",
        ratings.note
    );
    // One game of each model against itself joins the two halves.
    games.push(game("player", "a", "a", 9, true));
    games.push(game("player", "b", "b", 9, false));
    let joined = build(games);
    let ratings = &joined[0];
    for row in 0..2 {
        for heading in ["Culprit rating", "Civilians rating"] {
            assert!(
                matches!(cell(ratings, row, heading), Cell::MeanCi(Some(_))),
                "{heading}"
            );
        }
    }
    assert!(
        !ratings.note.contains("self_play = true"),
        "{}",
        ratings.note
    );
}

#[test]
fn games_of_one_model_per_side_make_no_tournament() {
    let games = (1..=3).map(|s| game("player", "a", "a", s, true)).collect();
    assert!(tables(
        &Grouping::new(games),
        &Bootstrap::default(),
        &mut Vec::new()
    )
    .is_empty());
}

/// A person at the table is an entrant of their own: `human:pat` takes the civilians' side against
/// model `a` (the agents beside pat are not rated for those games) and wins, and once sits as the
/// culprit; `a` and `b` meet as well. The ladder holds the person and the models together.
#[test]
fn a_person_at_the_table_is_rated_on_the_same_ladder_as_the_models() {
    let seat = |mut g: GameRecord, character: &str, label: &str| {
        g.result.murderers = vec!["Edmund Hale".into()];
        g.result.seats.insert(character.into(), label.into());
        g
    };
    let mut games = Vec::new();
    for seed in 1..=6 {
        games.push(seat(
            game("player", "a", "a", seed, false),
            "Ruth Calloway",
            "human:pat",
        ));
        games.push(game("player", "a", "b", seed, seed % 2 == 0));
        games.push(game("player", "b", "a", seed, seed % 3 == 0));
    }
    // pat as the culprit, against the civilians of b, and caught.
    games.push(seat(
        game("player", "b", "b", 7, false),
        "Edmund Hale",
        "human:pat",
    ));
    let (culprit, civilians) = sides(&games.last().expect("a game").result);
    assert_eq!((culprit.as_ref(), civilians.as_ref()), ("human:pat", "b"));
    let g = Grouping::new(games);
    let b = Bootstrap {
        resamples: 300,
        ..Bootstrap::default()
    };
    let tables = tables(&g, &b, &mut Vec::new());
    let ratings = &tables[0];
    let entrants: Vec<String> = ratings
        .rows
        .iter()
        .map(|r| match &r.cells[0] {
            Cell::Text(m) => m.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(entrants.len(), 3, "{entrants:?}");
    assert_eq!(entrants[0], "human:pat", "six wins in seven: rated first");
    let games_of_pat = &ratings.rows[0].cells[ratings.column("Games").expect("Games")];
    assert_eq!(*games_of_pat, Cell::Number(Some(7.0)));
    let pat_wins = &ratings.rows[0].cells[ratings.column("Wins").expect("Wins")];
    assert_eq!(*pat_wins, Cell::Number(Some(6.0)));
}
