//! A person at the table (`docs/seat.md`): a short ThinkThrice game with one character given to a
//! person, driven over HTTP the way the seat page drives it (no browser): the link starts a session,
//! the client long-polls the open moves and posts replies with the page's proof. A bad move (an
//! empty introduction, a vote for someone not on the ballot) is refused with a message and asked
//! again; the game finishes, the result marks the seat `human:NAME`, and the person's evaluation
//! answers are judged like an agent's. Played again on the same store with nobody at the seat, the
//! game replays the person's moves from the store and ends the same way.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use sleuth::agent::HumanSeat;
use sleuth::game::{self, GameConfig, GameResult, ProtocolSettings, ThinkThriceSettings};
use sleuth::script::Script;
use sleuth::store::seats::SeatBook;
use sleuth::view::seat::{new_token, serve, SeatHub};

const SEAT: &str = "Edmund Hale";
const GAME: &str = "seat-night-ferry";

fn config(hub: &Arc<SeatHub>, transcript: &Path) -> GameConfig {
    let mut seats = BTreeMap::new();
    let desk: Arc<SeatHub> = Arc::clone(hub);
    seats.insert(
        SEAT.to_string(),
        HumanSeat {
            player: "pat".into(),
            desk,
        },
    );
    GameConfig {
        game_id: GAME.into(),
        seed: 3,
        protocol: ProtocolSettings::thinkthrice(ThinkThriceSettings {
            rounds_before_clues: 1,
            rounds_after_clues: 0,
            initial_questioning: true,
        }),
        transcript_path: Some(transcript.to_path_buf()),
        seats,
        ..GameConfig::default()
    }
}

/// A client of one seat: its cookie and the page's proof.
struct Player {
    http: reqwest::Client,
    base: String,
    cookie: String,
    proof: String,
}

impl Player {
    /// Opens the link: the session cookie, then the page and its proof.
    async fn open(base: &str, token: &str) -> Player {
        sleuth::tls::install_crypto_provider();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        let bad = http
            .get(format!("{base}/seat?token=nope"))
            .send()
            .await
            .expect("GET");
        assert_eq!(bad.status().as_u16(), 403, "a wrong token opens nothing");
        let r = http
            .get(format!("{base}/seat?token={token}"))
            .send()
            .await
            .expect("GET link");
        assert_eq!(r.status().as_u16(), 303);
        assert_eq!(
            r.headers()["location"],
            "/seat",
            "the token leaves the address bar"
        );
        let set = r.headers()["set-cookie"]
            .to_str()
            .expect("ascii")
            .to_string();
        assert!(
            set.contains("HttpOnly") && set.contains("Path=/seat"),
            "{set}"
        );
        let cookie = set.split(';').next().expect("cookie").to_string();
        let page = http
            .get(format!("{base}/seat"))
            .header("cookie", &cookie)
            .send()
            .await
            .expect("GET page");
        assert_eq!(page.status().as_u16(), 200);
        let html = page.text().await.expect("page");
        assert!(
            html.contains(SEAT) && !html.contains(token),
            "the page names the seat, not the token"
        );
        let proof = html
            .split("name=\"seat-proof\" content=\"")
            .nth(1)
            .and_then(|t| t.split('"').next())
            .expect("the page carries its proof")
            .to_string();
        let anon = http
            .get(format!("{base}/seat/state"))
            .send()
            .await
            .expect("GET");
        assert_eq!(anon.status().as_u16(), 403, "no session, no moves");
        Player {
            http,
            base: base.into(),
            cookie,
            proof,
        }
    }

    async fn state(&self, after: Option<u64>) -> Value {
        let q = after.map(|v| format!("?after={v}")).unwrap_or_default();
        let r = self
            .http
            .get(format!("{}/seat/state{q}", self.base))
            .header("cookie", &self.cookie)
            .send()
            .await
            .expect("GET state");
        assert_eq!(r.status().as_u16(), 200);
        r.json().await.expect("state is JSON")
    }

    async fn reply(&self, body: Value, proof: bool) -> u16 {
        let mut req = self
            .http
            .post(format!("{}/seat/move", self.base))
            .header("cookie", &self.cookie)
            .json(&body);
        if proof {
            req = req.header("x-sleuth-proof", &self.proof);
        }
        req.send().await.expect("POST").status().as_u16()
    }
}

/// What the person says to a move: the reference answer to one factual question about their own
/// script, a wrong one to every other, and the first choice of everything else. The first
/// introduction is empty and the first vote names nobody on the ballot: both must be refused.
fn decide(m: &Value, script: &Script) -> Value {
    let (key, attempt) = (
        m["key"].as_str().unwrap_or(""),
        m["attempt"].as_u64().unwrap_or(0),
    );
    let first = m["choices"][0].clone();
    let body = match m["kind"].as_str().unwrap_or("") {
        "introduce" if attempt == 0 => json!({"text": "   "}),
        "introduce" => json!({"text": "I am Edmund Hale, purser of the Marigold."}),
        "ask" => json!({"target": first, "text": "Where were you at ten o'clock?"}),
        "answer" => json!({"text": "In my office on C deck, with the ledgers."}),
        "vote" if attempt == 0 => json!({"target": "Nobody At All", "text": "a guess"}),
        "vote" => json!({"target": first, "text": "the timeline does not fit"}),
        "factual" => {
            let q = m["prompt"].as_str().unwrap_or("");
            let reference = script
                .factual
                .iter()
                .find(|f| f.question == q && f.character == SEAT)
                .map(|f| f.answer.clone());
            json!({"text": reference.unwrap_or_else(|| "I do not know".into())})
        }
        _ => json!({"choices": ["A"], "text": "it fits what I saw"}),
    };
    let mut body = body;
    body["key"] = json!(key);
    body["attempt"] = json!(attempt);
    body
}

/// Plays the person's side until the game is over; returns the refusals seen.
async fn drive(p: &Player, script: &Script) -> Vec<String> {
    let mut refused = Vec::new();
    let mut version = None;
    let mut answered = std::collections::HashSet::new();
    let mut checked_proof = false;
    loop {
        let st = p.state(version).await;
        version = st["version"].as_u64();
        if st["finished"] == json!(true) {
            return refused;
        }
        let shown = &st["shown"];
        if !shown.is_null() {
            assert_eq!(shown["name"], SEAT, "the page shows the seat's own view");
        }
        for m in st["moves"].as_array().cloned().unwrap_or_default() {
            let id = format!("{}#{}", m["key"], m["attempt"]);
            if !answered.insert(id) {
                continue;
            }
            if let Some(why) = m["refused"].as_str() {
                refused.push(why.to_string());
            }
            let body = decide(&m, script);
            if !checked_proof {
                assert_eq!(
                    p.reply(body.clone(), false).await,
                    403,
                    "a POST needs the proof"
                );
                checked_proof = true;
            }
            assert_eq!(p.reply(body.clone(), true).await, 200, "{body}");
            assert_eq!(p.reply(body, true).await, 409, "a move is answered once");
        }
    }
}

fn events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("transcript")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

async fn play(hub: &Arc<SeatHub>, transcript: &Path) -> GameResult {
    let script = common::example_script("night-ferry.toml");
    let gateway = common::simulated_gateway().await;
    let played = game::play(script, config(hub, transcript), gateway).await;
    hub.finish();
    played.expect("the game with a person finishes")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_plays_a_whole_game_over_http_and_a_restart_replays_their_moves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("sleuth.db");
    let script = common::example_script("night-ferry.toml");
    let book = Arc::new(SeatBook::open(&db).expect("store"));
    let token = new_token();
    book.open_seat(GAME, SEAT, "pat", &token).expect("seat");
    let hub = SeatHub::new(GAME, Arc::clone(&book));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = serve(
        Arc::clone(&hub),
        "127.0.0.1:0".parse().expect("addr"),
        async move {
            let _ = stopped.await;
        },
    )
    .await
    .expect("seat server");
    let base = format!("http://{}", server.addr);
    let first = dir.path().join("first.jsonl");
    let game = tokio::spawn({
        let (hub, first) = (Arc::clone(&hub), first.clone());
        async move { play(&hub, &first).await }
    });
    let player = Player::open(&base, &token).await;
    let refused = tokio::time::timeout(Duration::from_secs(300), drive(&player, &script))
        .await
        .expect("the game ends within five minutes");
    let result = game.await.expect("game task");
    let _ = stop.send(());

    assert!(
        refused.iter().any(|r| r.contains("empty reply")),
        "the empty introduction was refused: {refused:?}"
    );
    assert!(
        refused
            .iter()
            .any(|r| r.contains("Nobody At All is not among")),
        "the vote off the ballot was refused: {refused:?}"
    );
    assert_eq!(
        result.seats.get(SEAT).map(String::as_str),
        Some("human:pat")
    );
    let ballot = result.votes.get(SEAT).expect("the person voted");
    assert_ne!(ballot, "Nobody At All");
    let all = events(&first);
    assert!(
        all.iter()
            .any(|e| e["kind"] == "human" && e["data"]["seat"] == "human:pat"),
        "the transcript marks the person's moves"
    );
    let theirs: Vec<&Value> = all
        .iter()
        .filter(|e| e["kind"] == "factual_answer" && e["speaker"] == SEAT)
        .collect();
    assert_eq!(
        theirs.len(),
        script.factual.len(),
        "the person answered every factual question"
    );
    for e in &theirs {
        let own = e["data"]["about"] == SEAT;
        assert_eq!(
            e["data"]["correct"],
            json!(own),
            "judged like an agent's answer: the reference is right, a shrug is wrong: {e}"
        );
    }
    assert!(
        result.factual.own.is_some_and(|s| s > 0.0),
        "{:?}",
        result.factual
    );
    assert!(result.inferential_accuracy.is_some());
    let (asked, answered) = book.counts((GAME, SEAT)).expect("counts");
    assert!(
        asked > 0 && asked == answered,
        "every move and reply is in the store"
    );

    // A restart: the same game on the same store, nobody at the seat. Every move is answered from
    // the store (the refused ones refused again), so the game ends as it did without a person.
    let again = SeatHub::new(GAME, Arc::new(SeatBook::open(&db).expect("reopen")));
    let second = dir.path().join("second.jsonl");
    let replayed = tokio::time::timeout(Duration::from_secs(300), play(&again, &second))
        .await
        .expect("the replay needs no person");
    assert_eq!(replayed.votes, result.votes);
    assert_eq!(replayed.winner, result.winner);
    assert_eq!(replayed.factual, result.factual);
    assert_eq!(
        book.counts((GAME, SEAT)).expect("counts"),
        (asked, answered),
        "nothing asked anew"
    );
}

/// `sleuth play --human` itself: the link it prints opens the seat, the person plays over HTTP, and
/// `result.json` marks the seat. Run again into the same directory (a restart), the game plays
/// through on the person's stored moves, with nobody at the seat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sleuth_play_human_prints_a_link_and_serves_the_seat() {
    use std::process::Stdio;
    sleuth::tls::install_crypto_provider();
    let dir = tempfile::tempdir().expect("tempdir");
    let script = common::example_script("night-ferry.toml");
    let ferry = common::night_ferry();
    let args = [
        "play",
        ferry.to_str().expect("utf-8"),
        "--human",
        SEAT,
        "--human-name",
        "pat",
        "--rounds-before-clues",
        "1",
        "--rounds-after-clues",
        "0",
        "--seed",
        "3",
        "--out",
        "game",
    ];
    let start = || {
        let mut child = common::sleuth(dir.path())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sleuth play starts");
        let link = common::printed_after(&mut child, "seat: ");
        (child, link)
    };
    let (mut child, link) = start();
    let (base, token) = link.split_once("/seat?token=").expect("a seat link");
    let player = Player::open(base, token).await;
    let refused = tokio::time::timeout(Duration::from_secs(300), drive(&player, &script))
        .await
        .expect("the game ends");
    assert!(!refused.is_empty(), "the bad moves were refused");
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("wait");
    assert!(status.success(), "sleuth play --human exits cleanly");
    let read = |p: &Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(p).expect("result.json")).expect("JSON")
    };
    let result_path = dir.path().join("game/result.json");
    let first = read(&result_path);
    assert_eq!(first["seats"][SEAT], "human:pat", "{}", first["seats"]);

    let (mut child, _) = start();
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("wait");
    assert!(status.success(), "the restarted game needs nobody");
    let second = read(&result_path);
    assert_eq!(second["votes"], first["votes"]);
    assert_eq!(second["factual"], first["factual"]);
}
