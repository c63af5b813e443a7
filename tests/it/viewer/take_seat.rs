//! *Take a seat* on a game's page (`docs/seat.md`, *From the viewer*): over HTTP against `sleuth
//! view` on a played game, the owner's post of the form starts `sleuth play --spec … --human …`
//! and is sent to the seat's link; the person plays from it, and the seated game's result, under
//! the run's `seated/`, marks the seat and is one of the run's games for the report. A post from
//! another origin, without the page's proof, for a character not in the game or under a host name
//! the seat could not be opened from starts nothing.

use crate::common;
use crate::human_seat::{drive, Player};

use std::path::Path;
use std::time::Duration;

use super::annotate::{sleuth_ok, stop};
use super::annotate_create::{post_form, proof};
use super::fetch;
use super::hardening::spawn_view_args;

const SEAT: &str = "Edmund Hale";

/// The result files under `dir`/seated.
fn seated_results(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir.join("seated")) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("result.json"))
        .filter(|p| p.is_file())
        .collect()
}

#[test]
fn the_owner_takes_a_seat_from_a_games_page_and_plays_it() {
    sleuth::tls::install_crypto_provider();
    let tmp = tempfile::tempdir().expect("tempdir");
    let ferry = common::night_ferry();
    let args = [
        "play",
        ferry.to_str().expect("utf-8"),
        "--rounds-before-clues",
        "1",
        "--rounds-after-clues",
        "0",
        "--seed",
        "3",
        "--out",
        "run/g1",
    ];
    sleuth_ok(tmp.path(), &args);
    let run = tmp.path().join("run");
    // Another host name the viewer answers to (`--allow-host`), from which no loopback seat opens.
    let (view, addr) = spawn_view_args(
        &run,
        &[
            "--listen",
            "127.0.0.1:0",
            "--allow-host",
            "viewer.lab.example",
        ],
        &[],
    );
    let base = format!("http://{addr}");
    let (status, _, page) = fetch(&format!("{base}/game?id=g1"), &[]);
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("id=\"take-seat\""), "the page offers a seat");
    let proof = proof(&super::unescape(&page));
    let url = format!("{base}/game/seat");
    let browser = [("sec-fetch-site", "same-origin")];
    let form = |character: &'static str, proof: &str| {
        vec![
            ("id", "g1".to_string()),
            ("character", character.to_string()),
            ("name", "pat".to_string()),
            ("proof", proof.to_string()),
        ]
    };
    let send = |headers: &[(&str, &str)], f: Vec<(&str, String)>| {
        let pairs: Vec<(&str, &str)> = f.iter().map(|(k, v)| (*k, v.as_str())).collect();
        post_form(&url, headers, &pairs)
    };

    // Nothing starts from a post that is not the page's, or that names no player of the game.
    for (headers, f, want) in [
        (
            &[("origin", "http://evil.example")][..],
            form(SEAT, &proof),
            403,
        ),
        (&browser[..], form(SEAT, "0123"), 403),
        (&browser[..], form("Nobody Here", &proof), 422),
        (
            &[("host", "viewer.lab.example"), browser[0]][..],
            form(SEAT, &proof),
            409,
        ),
    ] {
        let (status, _, body) = send(headers, f);
        assert_eq!(status, want, "{body}");
    }
    let (status, _, body) = send(&browser, form("Nobody Here", &proof));
    assert!(
        status == 422 && body.contains("character") && body.contains(SEAT),
        "the field and the players: {body}"
    );
    assert!(seated_results(&run).is_empty(), "no game was started");

    // The page's post: sent to the seat, where the person plays the game through.
    let (status, headers, body) = send(&browser, form(SEAT, &proof));
    assert_eq!(status, 303, "{body}");
    let link = headers.get("location").expect("a Location").clone();
    let (seat_base, token) = link.split_once("/seat?token=").expect("a seat link");
    assert!(seat_base.starts_with("http://127.0.0.1:"), "{link}");
    let script = common::example_script("night-ferry.toml");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let player = Player::open(seat_base, token, SEAT).await;
        tokio::time::timeout(Duration::from_secs(300), drive(&player, &script, SEAT))
            .await
            .expect("the seated game ends");
    });
    // The game's process writes its result once the person's game is over.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let results = loop {
        let found = seated_results(&run);
        if !found.is_empty() || std::time::Instant::now() > deadline {
            break found;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(results.len(), 1, "one seated game under run/seated");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&results[0]).expect("result")).expect("JSON");
    assert_eq!(r["seats"][SEAT], "human:pat");
    assert_eq!(r["spec"]["seed"], 3, "the same game's spec, played again");
    // The report over the run reads both games, and rates the person beside the model.
    let report = sleuth_ok(tmp.path(), &["report", "run", "--out", "rep"]);
    assert!(report.contains("2 games"), "{report}");
    let ratings = std::fs::read_to_string(tmp.path().join("rep/tournament_ratings.csv"))
        .expect("a tournament table");
    assert!(ratings.contains("human:pat"), "{ratings}");
    stop(view);
}
