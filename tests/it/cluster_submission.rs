//! What a cluster takes and gives in one piece, with a coordinator served in process over a real
//! `redis-server`: a sweep of the 20 English dataset scripts is submitted whole, a game's 20 MiB
//! transcript comes back through `sleuth results` (in pieces, never one message past gRPC's limits),
//! and a sweep larger than the coordinator's cap — up to four billion repeats — is refused at once,
//! naming its size and the cap, before anything is planned or queued.

use crate::common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::redis::RedisServer;
use sleuth::cluster::auth::Token;
use sleuth::cluster::client;
use sleuth::cluster::coordinator::{self, CoordinatorConfig};
use sleuth::cluster::submission;
use sleuth::store::{GameRow, GameState, RedisStore, Store, SweepRecord, SweepStatus};
use tokio::sync::oneshot;

const TOKEN: &str = "submission-test-token-41d2";

fn redis() -> Option<RedisServer> {
    let r = RedisServer::start(&[]);
    if r.is_none() && std::env::var_os("CI").is_some() {
        panic!("redis-server is required under CI (scripts/ensure-redis.sh installs it)");
    }
    r
}

/// A coordinator served in process (with `max_games` games per sweep at most) until the sender is
/// dropped.
async fn start(
    redis: &RedisServer,
    namespace: &str,
    max_games: u64,
) -> (SocketAddr, oneshot::Sender<()>) {
    let addr = common::coordinator::free_addr();
    let mut cfg = CoordinatorConfig::new(
        redis.url(),
        addr,
        namespace.into(),
        Token::new(TOKEN).expect("token"),
    );
    cfg.max_games = max_games;
    // Up when it accepts connections.
    (addr, common::coordinator::serve(cfg).await)
}

fn api(addr: SocketAddr) -> client::Sweeps {
    client::sweeps(
        &format!("http://{addr}"),
        None,
        Token::new(TOKEN).expect("token"),
    )
    .expect("a client")
}

async fn queue_len(redis: &RedisServer, namespace: &str) -> u64 {
    let client = redis::Client::open(redis.url()).expect("redis url");
    let mut con = client
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    redis::cmd("XLEN")
        .arg(format!("{{{namespace}}}:games"))
        .query_async(&mut con)
        .await
        .expect("XLEN")
}

/// The 20 English dataset scripts (12 WellPlay, 8 MIRAGE), imported with the crate's importers into
/// TOML files of `dir`; `None` when `../shared/datasets` is absent (a failure under CI).
fn import_english(dir: &Path) -> Option<Vec<PathBuf>> {
    let root = common::datasets()?;
    let mut out = Vec::new();
    for set in ["wellplay-en", "mirage-en"] {
        let mut folders: Vec<PathBuf> = std::fs::read_dir(root.join(set))
            .expect("read the dataset folder")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        folders.sort();
        for f in folders {
            let script = if set == "wellplay-en" {
                sleuth::script::import::wellplay::import_logged(&f, false)
                    .unwrap_or_else(|e| panic!("{}: {e}", f.display()))
                    .script
            } else {
                sleuth::script::import::mirage::import_logged(
                    &f,
                    &sleuth::script::import::mirage::MirageOptions::default(),
                )
                .unwrap_or_else(|e| panic!("{}: {e}", f.display()))
                .script
            };
            let path = dir.join(format!("{set}-{:02}.toml", out.len()));
            script.save(&path).expect("save the imported script");
            out.push(path);
        }
    }
    assert_eq!(out.len(), 20, "12 WellPlay and 8 MIRAGE scripts");
    Some(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_of_the_twenty_english_scripts_is_submitted_whole() {
    let Some(redis) = redis() else { return };
    let dir = tempfile::tempdir().expect("dir");
    let Some(scripts) = import_english(dir.path()) else {
        return;
    };
    let list = |paths: &[PathBuf]| -> String {
        paths
            .iter()
            .map(|p| format!("{:?}", p.display().to_string()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let file = dir.path().join("english.toml");
    std::fs::write(
        &file,
        format!("name = \"english\"\nscripts = [{}]\n", list(&scripts)),
    )
    .expect("write the sweep");
    let req = submission::read(&file).expect("read the sweep and its scripts");
    eprintln!(
        "the submission is {} bytes",
        prost::Message::encoded_len(&req)
    );

    let (addr, _stop) = start(&redis, "english", coordinator::DEFAULT_MAX_GAMES).await;
    let r = api(addr)
        .submit(req)
        .await
        .expect("the whole submission is taken")
        .into_inner();
    assert_eq!((r.games, r.queued), (20, 20), "{r:?}");
    assert_eq!(queue_len(&redis, "english").await, 20);

    // The same scripts twice over (a copy in another folder, as a second edition would be): past
    // gRPC's default 4 MiB per message, still one submission.
    let copies = dir.path().join("copy");
    std::fs::create_dir_all(&copies).expect("mkdir");
    let mut both = scripts.clone();
    for p in &scripts {
        let to = copies.join(p.file_name().expect("a file name"));
        std::fs::copy(p, &to).expect("copy a script");
        both.push(to);
    }
    let file = dir.path().join("twice.toml");
    std::fs::write(
        &file,
        format!("name = \"twice\"\nscripts = [{}]\n", list(&both)),
    )
    .expect("write the sweep");
    let req = submission::read(&file).expect("read the sweep and its scripts");
    let bytes = prost::Message::encoded_len(&req);
    assert!(
        bytes > 4 * 1024 * 1024,
        "{bytes} bytes: under gRPC's default"
    );
    // Another namespace: half of these games are the first sweep's (same files, same ids).
    let (addr, _stop2) = start(&redis, "twice", coordinator::DEFAULT_MAX_GAMES).await;
    let r = api(addr)
        .submit(req)
        .await
        .expect("a submission past 4 MiB is taken")
        .into_inner();
    assert_eq!((r.games, r.queued), (40, 40), "{r:?}");
}

/// A game whose transcript is 20 MiB (five times gRPC's default message limit): `sleuth results`
/// writes it whole, byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_twenty_mib_transcript_comes_back_whole() {
    let Some(redis) = redis() else { return };
    let ns = "long-game";
    let (addr, _stop) = start(&redis, ns, coordinator::DEFAULT_MAX_GAMES).await;
    let store = RedisStore::connect(&redis.url(), ns)
        .await
        .expect("connect");
    let sweep = "long";
    store
        .open_sweep(&SweepRecord {
            id: sweep.into(),
            name: sweep.into(),
            file: "long.toml".into(),
            text: String::new(),
            created_at: "2026-01-01T00:00:00Z".into(),
            status: SweepStatus::Finished,
            note: None,
            max_usd: None,
            max_tokens: None,
        })
        .await
        .expect("open the sweep");
    let game = "0123456789abcdef0123456789abcdef";
    store
        .add_games(&[GameRow {
            id: game.into(),
            sweep: sweep.into(),
            arm: "arm".into(),
            arm_label: "base".into(),
            script: "Glasshouse".into(),
            repeat: 0,
            seed: 1,
            spec: "{}".into(),
            state: GameState::Pending,
            attempts: 0,
            crashes: 0,
            reason: None,
            stage: None,
            updated_at: String::new(),
        }])
        .await
        .expect("add the game");
    // 20 MiB of JSONL with multi-byte characters, so a piece cut mid-character must rejoin exactly.
    let line = format!(
        "{{\"speaker\":\"Zoë\",\"text\":\"{}\"}}\n",
        "Where were you at nine — 九点 — last night? ".repeat(20)
    );
    let mut transcript = String::new();
    while transcript.len() < 20 * 1024 * 1024 {
        transcript.push_str(&line);
    }
    let result = "{\"winner\":\"detectives\"}";
    store
        .put_result_with_transcript(game, result, &transcript)
        .await
        .expect("write the result");

    let out = tempfile::tempdir().expect("out dir");
    let mut cmd = common::sleuth(out.path());
    cmd.env("SLEUTH_TOKEN", TOKEN)
        .args(["results", sweep, "--coordinator", &format!("http://{addr}")])
        .arg("--out")
        .arg(out.path());
    let o = tokio::task::spawn_blocking(move || common::run(&mut cmd, Duration::from_secs(120)))
        .await
        .expect("the command ran");
    assert!(
        o.status.success(),
        "sleuth results failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let game_dir = out.path().join("games").join(game);
    assert_eq!(
        std::fs::read_to_string(game_dir.join("result.json")).expect("result.json"),
        result
    );
    let got = std::fs::read(game_dir.join("transcript.jsonl")).expect("transcript.jsonl");
    assert_eq!(got.len(), transcript.len());
    assert!(got == transcript.as_bytes(), "the transcript differs");
    assert!(!game_dir.join("transcript.jsonl.part").exists());
}

fn sweep_file(dir: &Path, name: &str, repeats: u64) -> PathBuf {
    let script = common::crate_file("examples/glasshouse.toml");
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(
        &p,
        format!(
            "name = {name:?}\nscripts = [{:?}]\nrepeats = {repeats}\n[game]\nrounds = 1\n[axes]\nframework = [\"player\", \"thinkthrice\"]\n",
            script.display().to_string()
        ),
    )
    .expect("write the sweep");
    p
}

/// A sweep over the coordinator's cap is refused before anything is planned or queued, with a
/// status naming its size and the cap; four billion repeats are measured, not built.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_over_the_cap_is_refused_before_anything_is_queued() {
    let Some(redis) = redis() else { return };
    let dir = tempfile::tempdir().expect("dir");

    // A cap of 1,000: 2 arms × 1 script × 600 repeats is over it.
    let ns = "capped";
    let (addr, _stop) = start(&redis, ns, 1_000).await;
    let mut client = api(addr);
    let req = submission::read(&sweep_file(dir.path(), "big", 600)).expect("read");
    let err = client.submit(req).await.expect_err("over the cap");
    assert_eq!(err.code(), tonic::Code::ResourceExhausted, "{err:?}");
    let m = err.message();
    assert!(
        m.contains("1200 games") && m.contains("1000") && m.contains("big.toml"),
        "the refusal names the file, the size and the cap: {m}"
    );
    assert_eq!(queue_len(&redis, ns).await, 0, "nothing was queued");
    // Under the cap, the same shape is taken.
    let ok = submission::read(&sweep_file(dir.path(), "small", 500)).expect("read");
    let r = client.submit(ok).await.expect("under the cap").into_inner();
    assert_eq!(r.games, 1000);

    // Four billion repeats against the default cap: refused at once (planning them would build
    // eight billion specs in memory).
    let ns = "huge";
    let (addr, _stop2) = start(&redis, ns, coordinator::DEFAULT_MAX_GAMES).await;
    let req = submission::read(&sweep_file(dir.path(), "huge", 4_000_000_000)).expect("read");
    let refused = tokio::time::timeout(Duration::from_secs(30), api(addr).submit(req))
        .await
        .expect("refused without planning")
        .expect_err("over the cap");
    assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
    assert!(
        refused.message().contains("8000000000 games")
            && refused
                .message()
                .contains(&coordinator::DEFAULT_MAX_GAMES.to_string()),
        "{}",
        refused.message()
    );
    assert_eq!(queue_len(&redis, ns).await, 0);
}
