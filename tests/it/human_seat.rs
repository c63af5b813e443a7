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

use sleuth::agent::Framework;
use sleuth::agent::HumanSeat;
use sleuth::game::{
    self, GameConfig, GameResult, MirageSettings, ProtocolSettings, ThinkThriceSettings,
    WellPlaySettings,
};
use sleuth::script::Script;
use sleuth::store::seats::SeatBook;
use sleuth::view::seat::{new_token, serve, SeatHub};

const SEAT: &str = "Edmund Hale";
const GAME: &str = "seat-night-ferry";

fn config(hub: &Arc<SeatHub>, transcript: &Path) -> GameConfig {
    GameConfig {
        game_id: GAME.into(),
        seed: 3,
        protocol: ProtocolSettings::thinkthrice(ThinkThriceSettings {
            rounds_before_clues: 1,
            rounds_after_clues: 0,
            initial_questioning: true,
        }),
        transcript_path: Some(transcript.to_path_buf()),
        seats: seat_of(hub),
        ..GameConfig::default()
    }
}

/// The seat given to "pat", whose moves wait at `hub`.
fn seat_of(hub: &Arc<SeatHub>) -> BTreeMap<String, HumanSeat> {
    seat_of_as(hub, SEAT)
}

/// Character `character` given to "pat", whose moves wait at `hub`.
pub(crate) fn seat_of_as(hub: &Arc<SeatHub>, character: &str) -> BTreeMap<String, HumanSeat> {
    let desk: Arc<SeatHub> = Arc::clone(hub);
    let seat = HumanSeat {
        player: "pat".into(),
        desk,
    };
    BTreeMap::from([(character.to_string(), seat)])
}

/// A client of one seat: its cookie and the page's proof.
pub(crate) struct Player {
    pub(crate) http: reqwest::Client,
    pub(crate) base: String,
    pub(crate) cookie: String,
    proof: String,
}

impl Player {
    /// Opens the link: the session cookie, then the page and its proof.
    pub(crate) async fn open(base: &str, token: &str, seat: &str) -> Player {
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
            html.contains(seat) && !html.contains(token),
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

    pub(crate) async fn state(&self, after: Option<u64>) -> Value {
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

    pub(crate) async fn reply(&self, body: Value, proof: bool) -> u16 {
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
pub(crate) fn decide(m: &Value, script: &Script, seat: &str) -> Value {
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
                .find(|f| f.question == q && f.character == seat)
                .map(|f| f.answer.clone());
            json!({"text": reference.unwrap_or_else(|| "I do not know".into())})
        }
        "speak" => json!({"text": "I was on deck until the fog came in."}),
        "accuse" => json!({"target": first, "text": "the timeline does not fit"}),
        // MIRAGE: a clue that is not on offer first (refused), then the first clue on offer.
        "interact" if attempt == 0 => {
            json!({"action": "investigate", "clue": "nowhere: the moon"})
        }
        "interact" => match m["clues"].get(0) {
            Some(clue) => json!({"action": "investigate", "clue": clue, "text": "I look closer."}),
            None => json!({"action": "ask", "target": first, "text": "What did you see?"}),
        },
        // MIRAGE: one player left unscored first (refused), then every one.
        "score" => {
            let others: Vec<&str> = m["choices"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let scored = if attempt == 0 {
                &others[1..]
            } else {
                &others[..]
            };
            let trust: serde_json::Map<String, Value> =
                scored.iter().map(|o| (o.to_string(), json!(6))).collect();
            let suspicion: serde_json::Map<String, Value> = scored
                .iter()
                .enumerate()
                .map(|(i, o)| (o.to_string(), json!(if i == 0 { 9 } else { 2 })))
                .collect();
            json!({"trust": trust, "suspicion": suspicion})
        }
        // As many letters as the question wants, from the first.
        _ => {
            let picks = match m["multiple"].as_bool() {
                Some(true) => m["picks"].as_u64().unwrap_or(1) as usize,
                _ => 1,
            };
            let letters: Vec<Value> = m["letters"]
                .as_array()
                .map(|l| l.iter().take(picks).cloned().collect())
                .unwrap_or_default();
            json!({"choices": letters, "text": "it fits what I saw"})
        }
    };
    let mut body = body;
    body["key"] = json!(key);
    body["attempt"] = json!(attempt);
    body
}

/// Plays the person's side until the game is over; returns the refusals seen.
pub(crate) async fn drive(p: &Player, script: &Script, seat: &str) -> Vec<String> {
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
            assert_eq!(shown["name"], seat, "the page shows the seat's own view");
        }
        for m in st["moves"].as_array().cloned().unwrap_or_default() {
            let id = format!("{}#{}", m["key"], m["attempt"]);
            if !answered.insert(id) {
                continue;
            }
            if let Some(why) = m["refused"].as_str() {
                refused.push(why.to_string());
            }
            let body = decide(&m, script, seat);
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

/// What [`open_seat_server`] gives: the store, the player's token, the hub, the server's base
/// address, and what stops the server.
pub(crate) type SeatServer = (
    Arc<SeatBook>,
    String,
    Arc<SeatHub>,
    String,
    tokio::sync::oneshot::Sender<()>,
);

/// The seat of "pat" (as [`SEAT`]) at `game` in the store `db`, served on a free loopback port.
async fn open_seat_server(db: &Path, game: &str) -> SeatServer {
    open_seat_server_for(db, game, SEAT).await
}

/// The seat of "pat" as `seat` at `game` in the store `db`, served on a free loopback port.
pub(crate) async fn open_seat_server_for(db: &Path, game: &str, seat: &str) -> SeatServer {
    let book = Arc::new(SeatBook::open(db).expect("store"));
    let token = new_token();
    book.open_seat(game, seat, "pat", &token).expect("seat");
    let hub = SeatHub::new(game, Arc::clone(&book));
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
    (book, token, hub, base, stop)
}

pub(crate) fn events(path: &Path) -> Vec<Value> {
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
    let (book, token, hub, base, stop) = open_seat_server(&db, GAME).await;
    let first = dir.path().join("first.jsonl");
    let game = tokio::spawn({
        let (hub, first) = (Arc::clone(&hub), first.clone());
        async move { play(&hub, &first).await }
    });
    let player = Player::open(&base, &token, SEAT).await;
    let refused = tokio::time::timeout(Duration::from_secs(300), drive(&player, &script, SEAT))
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
    let player = Player::open(base, token, SEAT).await;
    let refused = tokio::time::timeout(Duration::from_secs(300), drive(&player, &script, SEAT))
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

/// Plays the game of `config` with the seat served over HTTP and the person driven by [`drive`]:
/// the result, the refusals the page showed, and the transcript.
async fn play_seated(
    game_id: &str,
    protocol: ProtocolSettings,
    framework: Framework,
) -> (GameResult, Vec<String>, Vec<Value>) {
    let seat = ("night-ferry.toml", SEAT);
    play_seated_with(game_id, seat, protocol, framework, |p, script| async move {
        drive(&p, &script, SEAT).await
    })
    .await
}

/// Plays `(script, seat)` (an example's file name and one of its characters) with the seat served
/// over HTTP to a person whom `person` drives to the end of the game: the result, what `person`
/// returned, and the transcript.
pub(crate) async fn play_seated_with<T, F, Fut>(
    game_id: &str,
    (script, seat): (&str, &str),
    protocol: ProtocolSettings,
    framework: Framework,
    person: F,
) -> (GameResult, T, Vec<Value>)
where
    F: FnOnce(Player, Arc<Script>) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let dir = tempfile::tempdir().expect("tempdir");
    let script = common::example_script(script);
    let (_book, token, hub, base, stop) =
        open_seat_server_for(&dir.path().join("sleuth.db"), game_id, seat).await;
    let transcript = dir.path().join("transcript.jsonl");
    let config = GameConfig {
        game_id: game_id.into(),
        seed: 3,
        protocol,
        framework,
        eval_repeats: 1,
        transcript_path: Some(transcript.clone()),
        seats: seat_of_as(&hub, seat),
        ..GameConfig::default()
    };
    let game = tokio::spawn({
        let (hub, script) = (Arc::clone(&hub), Arc::clone(&script));
        async move {
            let played = game::play(script, config, common::simulated_gateway().await).await;
            hub.finish();
            played
        }
    });
    let player = Player::open(&base, &token, seat).await;
    let seen = tokio::time::timeout(Duration::from_secs(300), person(player, script))
        .await
        .expect("the game ends within five minutes");
    let result = game
        .await
        .expect("game task")
        .unwrap_or_else(|e| panic!("{game_id}: the game with a person failed: {e}"));
    let _ = stop.send(());
    (result, seen, events(&transcript))
}

/// WellPlay with a person: its rounds of questions, the per-victim vote and the multiple-choice
/// evaluation, each answered at the seat and scored like an agent's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_plays_wellplay() {
    let protocol = ProtocolSettings::wellplay(WellPlaySettings {
        rounds: 1,
        questions_per_round: 1,
    });
    let (result, refused, events) = play_seated("seat-wellplay", protocol, Framework::Ocot).await;
    assert!(
        refused.iter().any(|r| r.contains("empty reply")),
        "{refused:?}"
    );
    assert_eq!(result.seats[SEAT], "human:pat");
    assert!(result.votes.contains_key(SEAT), "the person voted");
    let choice = result.choice.as_ref().expect("multiple-choice scores");
    assert!(
        choice.by_agent.contains_key(SEAT),
        "the person's answers are scored: {:?}",
        choice.by_agent.keys()
    );
    assert!(events
        .iter()
        .any(|e| e["kind"] == "human" && e["speaker"] == SEAT));
}

/// MIRAGE with a person: open conversation, ask or investigate (a clue not on offer refused first),
/// trust and suspicion (a player left out refused first), the accusation and the vote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_plays_mirage() {
    let protocol = ProtocolSettings::mirage(MirageSettings {
        iterations: 1,
        ..MirageSettings::default()
    });
    let (result, refused, events) = play_seated("seat-mirage", protocol, Framework::Mirage).await;
    assert!(
        refused.iter().any(|r| r.contains("not on offer")),
        "{refused:?}"
    );
    assert!(
        refused.iter().any(|r| r.contains("trust score")),
        "{refused:?}"
    );
    assert_eq!(result.seats[SEAT], "human:pat");
    let mirage = result.mirage.as_ref().expect("the MIRAGE outcome");
    assert!(mirage.accusations.contains_key(SEAT), "the person accused");
    let theirs = &mirage.suspicion[SEAT];
    let highest = theirs
        .iter()
        .max_by(|a, b| a.1[0].total_cmp(&b.1[0]))
        .map(|(who, s)| (who.clone(), s[0]))
        .expect("scores");
    assert!(
        (highest.1 - 0.9).abs() < 1e-9,
        "the person's 9 of 10 is kept as the agents' are, 0.9: {theirs:?}"
    );
    assert!(
        mirage.trust[SEAT]
            .values()
            .all(|t| (t[0] - 0.6).abs() < 1e-9),
        "{:?}",
        mirage.trust[SEAT]
    );
    assert!(
        !mirage.investigated[SEAT].is_empty(),
        "the person investigated a clue: {:?}",
        mirage.investigated
    );
    assert!(events
        .iter()
        .any(|e| e["kind"] == "investigation" && e["speaker"] == SEAT));
}

/// Two people at one table: `--human` twice, `CHARACTER=NAME` each, two links served by one
/// server; each link opens its own seat only, and the result marks both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_people_play_one_game_from_their_own_links() {
    use std::process::Stdio;
    sleuth::tls::install_crypto_provider();
    const OTHER: &str = "Ruth Calloway";
    let dir = tempfile::tempdir().expect("tempdir");
    let script = common::example_script("night-ferry.toml");
    let ferry = common::night_ferry();
    let mut child = common::sleuth(dir.path())
        .args(["play", ferry.to_str().expect("utf-8")])
        .args([
            "--human",
            &format!("{SEAT}=pat"),
            "--human",
            &format!("{OTHER}=sam"),
        ])
        .args(["--rounds-before-clues", "1", "--rounds-after-clues", "0"])
        .args(["--seed", "3", "--out", "game"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sleuth play starts");
    let links = common::printed_after_n(&mut child, "seat: ", 2);
    let open = |link: &str| {
        let (base, token) = link.split_once("/seat?token=").expect("a seat link");
        (base.to_string(), token.to_string())
    };
    let ((base, first), (other_base, second)) = (open(&links[0]), open(&links[1]));
    assert_eq!(base, other_base, "one server for the game's seats");
    assert_ne!(first, second, "a token per seat");
    let pat = Player::open(&base, &first, SEAT).await;
    let sam = Player::open(&base, &second, OTHER).await;
    let (a, b) = tokio::time::timeout(
        Duration::from_secs(300),
        futures::future::join(drive(&pat, &script, SEAT), drive(&sam, &script, OTHER)),
    )
    .await
    .expect("the game ends");
    assert!(
        !a.is_empty() && !b.is_empty(),
        "each person's bad moves were refused"
    );
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("wait");
    assert!(status.success());
    let text = std::fs::read_to_string(dir.path().join("game/result.json")).expect("result");
    let result: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(result["seats"][SEAT], "human:pat");
    assert_eq!(result["seats"][OTHER], "human:sam");
}
