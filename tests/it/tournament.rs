//! Tournaments end to end: a sweep's `[tournament]` planned (every ordered pair, on the same seeds,
//! each model on each side equally often), played with the simulated model at two strengths, and
//! reported — the full-skill model rated above the weaker one with intervals that do not overlap.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Instant;

use sleuth::report::{Bootstrap, Cell, Table};
use sleuth::sweep::plan::Plan;
use sleuth::sweep::scheduler::RunEnd;
use sleuth::sweep::{self, LoadedSweep, RunOptions};

fn data(name: &str) -> String {
    common::crate_file("tests/data")
        .join(name)
        .display()
        .to_string()
}

fn example(name: &str) -> String {
    common::crate_file("examples")
        .join(name)
        .display()
        .to_string()
}

/// The two models: the simulated model at full skill and at skill 0.3, priced so that cost per win
/// is a number.
const MODELS: &str = "[models.strong]\nprovider = \"simulated\"\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 2.0\n[models.weak]\nprovider = \"simulated\"\nmodel = \"sim-1:0.3\"\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 2.0\n";

/// A tournament sweep file in `dir` over `scripts`, `repeats` seeds from 1.
fn tournament_file(dir: &Path, scripts: &[String], repeats: u32, extra: &str) -> PathBuf {
    let path = dir.join("sweep.toml");
    let list: Vec<String> = scripts.iter().map(|s| format!("\"{s}\"")).collect();
    let text = format!(
        "name = \"duel\"\nout = \"{}\"\nscripts = [{}]\nrepeats = {repeats}\nseed = 1\n\
         [game]\nprotocol = \"thinkthrice\"\nframework = \"werewolf\"\nrounds_before_clues = 1\n\
         rounds_after_clues = 1\n[evaluation]\nrepeats = 1\n{MODELS}{extra}",
        dir.join("run").display(),
        list.join(", ")
    );
    std::fs::write(&path, text).expect("write the sweep file");
    path
}

#[test]
fn the_plan_plays_every_ordered_pair_on_the_same_seeds() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = tournament_file(
        tmp.path(),
        &[data("wine-cellar.toml"), example("night-ferry.toml")],
        3,
        "[tournament]\nmodels = [\"strong\", \"weak\", \"sim-1\"]\n",
    );
    let plan = Plan::build(LoadedSweep::load(&file).expect("loads")).expect("plans");
    // 3 models: 6 ordered pairs × 2 scripts × 3 seeds.
    assert_eq!(plan.arms.len(), 6);
    assert_eq!(plan.games.len(), 36);
    for m in ["strong", "weak", "sim-1"] {
        let culprit = plan
            .games
            .iter()
            .filter(|g| g.spec.murderer_model.as_deref() == Some(m))
            .count();
        let civilians = plan
            .games
            .iter()
            .filter(|g| g.spec.agent.model == m)
            .count();
        assert_eq!((culprit, civilians), (12, 12), "{m}");
    }
    for arm in &plan.arms {
        let seeds: Vec<u64> = plan
            .games
            .iter()
            .filter(|g| plan.arms[g.arm].id == arm.id)
            .map(|g| g.spec.seed)
            .collect();
        assert_eq!(seeds, [1, 2, 3, 1, 2, 3], "{}", arm.label);
        assert_ne!(
            arm.settings.model, arm.settings.murderer_model,
            "{}",
            arm.label
        );
    }
    // With self-play each model also meets itself: n² pairings.
    let file = tournament_file(
        tmp.path(),
        &[data("wine-cellar.toml")],
        1,
        "[tournament]\nmodels = [\"strong\", \"weak\"]\nself_play = true\n",
    );
    let plan = Plan::build(LoadedSweep::load(&file).expect("loads")).expect("plans");
    assert_eq!(plan.arms.len(), 4);
}

#[test]
fn a_script_without_a_murderer_player_cannot_hold_a_tournament() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // The Orchard Press's culprit is a suspect who does not play.
    let file = tournament_file(
        tmp.path(),
        &[example("orchard-press.toml")],
        1,
        "[tournament]\nmodels = [\"strong\", \"weak\"]\n",
    );
    let err = Plan::build(LoadedSweep::load(&file).expect("loads"))
        .expect_err("refused")
        .to_string();
    assert!(err.contains("sweep.toml"), "{err}");
    assert!(err.contains("`tournament`"), "{err}");
    assert!(err.contains("orchard-press.toml"), "{err}");
    assert!(err.contains("no murderer among its players"), "{err}");
}

/// The row of `model` in the ratings table.
fn row<'a>(t: &'a Table, model: &str) -> &'a [Cell] {
    let at = t.column("Model").expect("a Model column");
    &t.rows
        .iter()
        .find(|r| r.cells[at] == Cell::Text(model.into()))
        .unwrap_or_else(|| panic!("no row for {model}"))
        .cells
}

fn interval(t: &Table, model: &str, column: &str) -> sleuth::eval::stats::Interval {
    let at = t.column(column).expect(column);
    match &row(t, model)[at] {
        Cell::MeanCi(Some(iv)) => *iv,
        other => panic!("{model} {column}: {other:?}"),
    }
}

fn number(t: &Table, model: &str, column: &str) -> f64 {
    let at = t.column(column).expect(column);
    match &row(t, model)[at] {
        Cell::Number(Some(x)) => *x,
        other => panic!("{model} {column}: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stronger_simulated_model_is_rated_higher_with_intervals_apart() {
    let started = Instant::now();
    let tmp = tempfile::tempdir().expect("temp dir");
    let scripts = [data("wine-cellar.toml"), data("boathouse.toml")];
    let repeats = 20;
    let tournament = "[tournament]\nmodels = [\"strong\", \"weak\"]\n";
    let file = tournament_file(tmp.path(), &scripts, repeats, tournament);
    let quiet = || RunOptions {
        progress: false,
        ..RunOptions::default()
    };
    let run = sweep::run(&file, quiet())
        .await
        .expect("the tournament runs");
    assert_eq!(run.end, RunEnd::Finished);
    assert_eq!(
        run.queued,
        2 * 2 * repeats as usize,
        "2 pairings × 2 scripts × {repeats} seeds"
    );
    let played = started.elapsed();
    let bootstrap = Bootstrap {
        resamples: 2000,
        ..Bootstrap::default()
    };
    let run_dir = tmp.path().join("run");
    let (report, written) =
        sleuth::report::generate(&run_dir, None, bootstrap).expect("the report is written");
    let t = report
        .table("tournament_ratings")
        .expect("a tournament's ratings");
    let markdown = std::fs::read_to_string(written.dir.join("report.md")).expect("report.md");
    let section = markdown
        .split("\n## ")
        .find(|s| s.starts_with("Tournament — Bradley–Terry ratings"))
        .expect("the ratings in report.md");
    println!("## {section}");
    println!(
        "{} games played in {:.1} s, reported in {:.1} s",
        run.queued,
        played.as_secs_f64(),
        (started.elapsed() - played).as_secs_f64()
    );

    let strong = interval(t, "strong", "Rating");
    let weak = interval(t, "weak", "Rating");
    assert!(
        strong.low > weak.high,
        "intervals overlap: strong {strong:?}, weak {weak:?}"
    );
    assert_eq!(
        strong.n,
        2 * 2 * repeats as usize,
        "games against the other model"
    );
    // The rows come in rating order, and the matrix agrees with the ratings.
    assert_eq!(t.rows[0].cells[0], Cell::Text("strong".into()));
    let m = report.table("tournament_matrix").expect("the win matrix");
    let vs_weak = m.column("weak").expect("a column per model");
    match &m.rows[0].cells[vs_weak] {
        Cell::MeanCi(Some(iv)) => assert!(iv.low > 0.5, "{iv:?}"),
        other => panic!("{other:?}"),
    }
    // Without self-play each model's culprit met only the other's civilians: the games do not
    // connect the two culprits (nor the two civilian sides), so no per-side rating is printed and
    // the note says how to connect them. Each model's wins have a price.
    for model in ["strong", "weak"] {
        for column in ["Culprit rating", "Civilians rating"] {
            let at = t.column(column).expect(column);
            assert_eq!(row(t, model)[at], Cell::MeanCi(None), "{model} {column}");
        }
        assert!(number(t, model, "USD per win") > 0.0, "{model}");
    }
    assert!(t.note.contains("self_play = true"), "{}", t.note);
    assert!(
        section.contains("| — |"),
        "the per-side cells print —: {section}"
    );
    for id in [
        "tournament_ratings",
        "tournament_matrix",
        "tournament_sides",
    ] {
        assert!(written.dir.join(format!("{id}.csv")).is_file(), "{id}.csv");
        assert!(markdown.contains(&report.table(id).expect(id).title));
    }
    let html = std::fs::read_to_string(written.dir.join("report.html")).expect("report.html");
    assert!(html.contains("Tournament — pairwise win matrix"));

    // The same sweep with self-play, on the first five seeds: running it again adds only each
    // model against itself, and the culprit × civilians table gains its diagonal.
    let file = tournament_file(
        tmp.path(),
        &scripts,
        5,
        &format!("{tournament}self_play = true\n"),
    );
    let more = sweep::run(&file, quiet()).await.expect("self-play runs");
    assert_eq!(more.queued, 2 * 2 * 5, "only the self-play games are new");
    let (report, _) =
        sleuth::report::generate(&run_dir, None, bootstrap).expect("the report is written");
    let sides = report
        .table("tournament_sides")
        .expect("culprit × civilians");
    for (i, row) in sides.rows.iter().enumerate() {
        assert!(
            matches!(row.cells[i + 1], Cell::MeanCi(Some(_))),
            "no diagonal in row {i}: {row:?}"
        );
    }
    let t = report.table("tournament_ratings").expect("ratings");
    assert!(interval(t, "strong", "Rating").estimate > interval(t, "weak", "Rating").estimate);
    // The self-play games join the per-side comparisons: both sides of both models are rated.
    for model in ["strong", "weak"] {
        interval(t, model, "Culprit rating");
        interval(t, model, "Civilians rating");
    }
    assert_eq!(interval(t, "strong", "Rating").n, 2 * 2 * repeats as usize);
    println!(
        "with self-play: {} games in {:.1} s in all",
        run.queued + more.queued,
        started.elapsed().as_secs_f64()
    );
}
