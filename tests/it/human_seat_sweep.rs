//! A person's seat as a sweep arm (`docs/seat.md`, *In a sweep*): `[axes] human = ["", "CHARACTER=NAME"]`
//! plays the same game with and without a person at the table. `sleuth sweep run` prints the seat's
//! link, the person plays over HTTP while the sweep's other game plays on, and the report's
//! tournament rates `human:NAME` on the same ladder as the model. A character not in the cast is
//! refused by `sweep plan`, naming the setting and the cast, before any game.

use crate::common;
use crate::human_seat::{drive, Player};

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

const SEAT: &str = "Edmund Hale";

fn sweep_file(dir: &Path, human: &str) -> std::path::PathBuf {
    let path = dir.join("seated.toml");
    let text = format!(
        "name = \"seated\"\nout = \"run\"\nscripts = [{:?}]\nrepeats = 1\nseed = 3\n\
         [game]\nprotocol = \"thinkthrice\"\nmodel = \"sim\"\nrounds_before_clues = 1\n\
         rounds_after_clues = 0\n[axes]\nhuman = [\"\", \"{human}\"]\n[evaluation]\nrepeats = 1\n\
         [models.sim]\nprovider = \"simulated\"\nlatency_ms = 0\n",
        common::night_ferry().display().to_string()
    );
    std::fs::write(&path, text).expect("sweep file");
    path
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_arm_seats_a_person_and_the_tournament_rates_them() {
    sleuth::tls::install_crypto_provider();
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let file = sweep_file(dir, &format!("{SEAT}=pat"));
    let mut child = common::sleuth(dir)
        .args(["sweep", "run", file.to_str().expect("utf-8"), "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sleuth sweep run starts");
    let link = common::printed_after(&mut child, "seat: ");
    let (base, token) = link.split_once("/seat?token=").expect("a seat link");
    let script = common::example_script("night-ferry.toml");
    let player = Player::open(base, token, SEAT).await;
    tokio::time::timeout(Duration::from_secs(300), drive(&player, &script, SEAT))
        .await
        .expect("the person's game ends");
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("wait");
    assert!(status.success(), "the sweep finishes");

    // Two games, one per arm; only the seated one marks the seat, in its spec and its result.
    let games = dir.join("run/games");
    let mut seated = 0;
    let mut results = 0;
    for entry in std::fs::read_dir(&games).expect("games") {
        let r = read(&entry.expect("entry").path().join("result.json"));
        results += 1;
        if r["seats"].is_object() {
            seated += 1;
            assert_eq!(r["seats"][SEAT], "human:pat");
            assert_eq!(r["spec"]["human_seats"][SEAT], "pat");
        } else {
            assert!(r["spec"].get("human_seats").is_none(), "{}", r["spec"]);
        }
    }
    assert_eq!((results, seated), (2, 1));

    // The report's ladder holds the person beside the model.
    let (ok, _, err) = common::sleuth_in(
        dir,
        &["report", "run", "--out", "rep", "--resamples", "200"],
    );
    assert!(ok, "{err}");
    let ratings = std::fs::read_to_string(dir.join("rep/tournament_ratings.csv"))
        .expect("a tournament table");
    assert!(ratings.contains("human:pat"), "{ratings}");
    assert!(
        ratings.lines().count() >= 3,
        "a header and two entrants: {ratings}"
    );
}

#[test]
fn a_seat_for_a_character_not_in_the_cast_is_refused_before_any_game() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = sweep_file(tmp.path(), "Nobody Here=pat");
    let (ok, out, err) = common::sleuth_in(
        tmp.path(),
        &[
            "sweep",
            "plan",
            file.to_str().expect("utf-8"),
            "--no-estimate",
        ],
    );
    assert!(!ok, "{out}");
    assert!(
        err.contains("human") && err.contains("Nobody Here") && err.contains(SEAT),
        "the setting, the name and the cast: {err}"
    );
    assert!(!tmp.path().join("run/games").exists(), "no game was played");
}
