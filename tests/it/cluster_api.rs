//! The coordinator's API as a client sees it, with a coordinator served in process over a real
//! `redis-server`: the token guards the API but not health and reflection (so probes and `grpcurl`
//! need no secret), TLS works with a private CA and refuses what it should, a submission that
//! cannot be planned is refused before anything is queued, a read-only token reads and does nothing
//! else, and silent connections are closed within the connection bound (issue 33).

use crate::common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use common::redis::RedisServer;
use sleuth::cluster::auth::Token;
use sleuth::cluster::client;
use sleuth::cluster::coordinator::CoordinatorConfig;
use sleuth::cluster::proto as pb;
use sleuth::cluster::submission;
use tokio::sync::oneshot;

const TOKEN: &str = "api-test-token-7f3a";

/// A coordinator served in process until the returned sender is dropped or fired.
async fn start(
    redis: &RedisServer,
    tls: Option<(Vec<u8>, Vec<u8>)>,
    namespace: &str,
) -> (SocketAddr, oneshot::Sender<()>) {
    let addr = common::coordinator::free_addr();
    let mut cfg = CoordinatorConfig::new(
        redis.url(),
        addr,
        namespace.into(),
        Token::new(TOKEN).expect("token"),
    );
    cfg.tls = tls;
    // Up when it accepts connections.
    (addr, common::coordinator::serve(cfg).await)
}

fn redis() -> Option<RedisServer> {
    let r = RedisServer::start(&[]);
    if r.is_none() && std::env::var_os("CI").is_some() {
        panic!("redis-server is required under CI (scripts/ensure-redis.sh installs it)");
    }
    r
}

#[tokio::test]
async fn health_and_reflection_answer_without_the_token_but_the_api_does_not() {
    let Some(redis) = redis() else { return };
    let (addr, _stop) = start(&redis, None, "api-auth").await;
    let url = format!("http://{addr}");
    let channel = client::channel(&url, None).expect("channel");

    let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    for service in ["sleuth.v1.Sweeps", "sleuth.v1.Workers"] {
        let status = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: service.into(),
            })
            .await
            .expect("health answers without a token")
            .into_inner()
            .status;
        assert_eq!(
            status,
            tonic_health::pb::health_check_response::ServingStatus::Serving as i32,
            "{service}"
        );
    }

    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    let mut reflection = ServerReflectionClient::new(channel.clone());
    let request = tonic_reflection::pb::v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut answers = reflection
        .server_reflection_info(tokio_stream::iter(vec![request]))
        .await
        .expect("reflection answers without a token")
        .into_inner();
    let answer = answers
        .message()
        .await
        .expect("a reflection answer")
        .expect("one message");
    let Some(MessageResponse::ListServicesResponse(list)) = answer.message_response else {
        panic!("not a service list: {answer:?}");
    };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    for want in [
        "sleuth.v1.Sweeps",
        "sleuth.v1.Workers",
        "grpc.health.v1.Health",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }

    // The API: no token, a wrong one, the right one.
    let mut bare = pb::sweeps_client::SweepsClient::new(channel.clone());
    let err = bare
        .list_workers(pb::ListWorkersRequest {})
        .await
        .expect_err("no token is refused");
    assert_eq!(err.code(), tonic::Code::Unauthenticated);
    let mut wrong =
        client::sweeps(&url, None, Token::new("not-the-token").expect("token")).expect("client");
    let err = wrong
        .list_workers(pb::ListWorkersRequest {})
        .await
        .expect_err("a wrong token is refused");
    assert_eq!(err.code(), tonic::Code::Unauthenticated);
    assert!(
        !err.message().contains(TOKEN),
        "the refusal does not echo the token"
    );
    let mut workers_rpc =
        client::workers(&url, None, Token::new("not-the-token").expect("token")).expect("client");
    let err = workers_rpc
        .register(pb::RegisterRequest::default())
        .await
        .expect_err("the worker protocol needs the token too");
    assert_eq!(err.code(), tonic::Code::Unauthenticated);
    let mut right = client::sweeps(&url, None, Token::new(TOKEN).expect("token")).expect("client");
    right
        .list_workers(pb::ListWorkersRequest {})
        .await
        .expect("the right token passes");
}

#[tokio::test]
async fn tls_with_a_private_ca_works_and_plain_or_unverified_clients_are_refused() {
    let Some(redis) = redis() else { return };
    let dir = tempfile::tempdir().expect("dir");
    if common::make_certs(dir.path()).is_none() {
        return;
    }
    let read = |name: &str| std::fs::read(dir.path().join(name)).expect("pem");
    let (addr, _stop) = start(
        &redis,
        Some((read("server.pem"), read("server.key"))),
        "api-tls",
    )
    .await;
    let token = || Token::new(TOKEN).expect("token");
    let ca = dir.path().join("ca.pem");

    let https = format!("https://localhost:{}", addr.port());
    let mut good = client::sweeps(&https, Some(&ca), token()).expect("client");
    good.list_workers(pb::ListWorkersRequest {})
        .await
        .expect("TLS with the CA works");

    // The system's roots do not know the private CA.
    let mut unverified = client::sweeps(&https, None, token()).expect("client");
    assert!(
        unverified
            .list_workers(pb::ListWorkersRequest {})
            .await
            .is_err(),
        "a certificate from an unknown CA is refused"
    );
    // Plain HTTP/2 to a TLS port fails.
    let mut plain = client::sweeps(&format!("http://{addr}"), None, token()).expect("client");
    assert!(
        plain.list_workers(pb::ListWorkersRequest {}).await.is_err(),
        "plain text to a TLS server is refused"
    );
    // And a CA with a plain URL is a mistake the client names.
    let err = client::sweeps(&format!("http://{addr}"), Some(&ca), token()).expect_err("refused");
    assert!(err.to_string().contains("https"), "{err}");
}

#[tokio::test]
async fn a_sweep_that_cannot_be_planned_is_refused_before_anything_is_queued() {
    let Some(redis) = redis() else { return };
    let (addr, _stop) = start(&redis, None, "api-submit").await;
    let url = format!("http://{addr}");
    let mut api = client::sweeps(&url, None, Token::new(TOKEN).expect("token")).expect("client");

    let dir = tempfile::tempdir().expect("dir");
    let script = common::crate_file("examples/glasshouse.toml");
    let write = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).expect("write sweep");
        p
    };
    let good = format!(
        "name = \"api-sub\"\nscripts = [{:?}]\nrepeats = 2\n[game]\nrounds = 1\n",
        script.display().to_string()
    );
    let bad = format!(
        "name = \"api-sub\"\nscripts = [{:?}]\n[game]\nframework = \"telepathy\"\n",
        script.display().to_string()
    );
    let bad_file = write("bad.toml", &bad);
    let req = submission::read(&bad_file).expect("read");
    let err = api.submit(req).await.expect_err("an unknown framework");
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(
        err.message().contains("bad.toml") && err.message().contains("framework"),
        "the refusal names the file and the key: {}",
        err.message()
    );

    let good_file = write("good.toml", &good);
    let r = api
        .submit(submission::read(&good_file).expect("read"))
        .await
        .expect("a good sweep is accepted")
        .into_inner();
    assert_eq!((r.sweep_id.as_str(), r.games, r.queued), ("api-sub", 2, 2));
    // Submitted again: nothing queued twice.
    let again = api
        .submit(submission::read(&good_file).expect("read"))
        .await
        .expect("the same sweep again continues it")
        .into_inner();
    assert_eq!(again.queued, 0, "no game gets a second entry");
    // The same name with other games is another experiment.
    let other = write("other.toml", &good.replace("repeats = 2", "repeats = 3"));
    let err = api
        .submit(submission::read(&other).expect("read"))
        .await
        .expect_err("other games under the same name");
    assert_eq!(err.code(), tonic::Code::FailedPrecondition);

    // What is in the queue: exactly the two games, never the refused ones.
    let client = redis::Client::open(redis.url()).expect("redis url");
    let mut con = client
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let len: u64 = redis::cmd("XLEN")
        .arg("{api-submit}:games")
        .query_async(&mut con)
        .await
        .expect("xlen");
    assert_eq!(len, 2);
}

/// A claim timeout shorter than three heartbeats would hand a busy worker's games to others while it
/// still plays them: the coordinator refuses to start with it, saying what would work.
#[test]
fn a_claim_timeout_under_three_heartbeats_is_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let mut cmd = common::sleuth(dir.path());
    cmd.env("SLEUTH_TOKEN", TOKEN)
        .args(["coordinator", "--redis", "redis://127.0.0.1:1/"])
        .args(["--claim-idle-secs", "5"]);
    let out = common::run(&mut cmd, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "it started: {stderr}");
    assert!(
        stderr.contains("--claim-idle-secs 5") && stderr.contains("at least 6"),
        "the refusal names the flag and what it needs: {stderr}"
    );
    // Three heartbeats exactly is enough (it then fails on the unreachable Redis instead).
    let mut cmd = common::sleuth(dir.path());
    cmd.env("SLEUTH_TOKEN", TOKEN)
        .args(["coordinator", "--redis", "redis://127.0.0.1:1/"])
        .args(["--claim-idle-secs", "3", "--heartbeat-ms", "1000"]);
    let out = common::run(&mut cmd, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("claim-idle"), "{stderr}");
}

/// `ListSweeps` and `Transcript` (what `sleuth view --coordinator` follows a cluster with) need the
/// token like every call; `ListSweeps` sends each sweep's record and progress, `Transcript` a game's
/// transcript in pieces of at most 1 MiB (the same pieces `Results` sends), none for a game without
/// one, and refuses a game that does not exist.
#[tokio::test]
async fn list_sweeps_and_transcript_need_the_token_and_answer() {
    let Some(redis) = redis() else { return };
    let (addr, _stop) = start(&redis, None, "api-list").await;
    let url = format!("http://{addr}");
    listing_and_transcripts_need_the_token(&url).await;

    let mut api = client::sweeps(&url, None, Token::new(TOKEN).expect("token")).expect("client");
    let dir = tempfile::tempdir().expect("dir");
    a_submitted_sweep_is_listed(&mut api, dir.path()).await;

    let err = api
        .transcript(pb::TranscriptRequest {
            game_id: "no-such-game".into(),
        })
        .await
        .expect_err("an unknown game");
    assert_eq!(err.code(), tonic::Code::NotFound);

    let store = sleuth::store::RedisStore::connect(&redis.url(), "api-list")
        .await
        .expect("the coordinator's store");
    use sleuth::store::Store;
    let games = store.games("api-list").await.expect("games");
    let (done, waiting) = (games[0].id.clone(), games[1].id.clone());
    assert!(
        transcript_of(api.clone(), waiting).await.is_empty(),
        "a game not done has no transcript yet"
    );

    // Two and a half MiB of JSONL: three pieces.
    let line = format!("{{\"text\":\"{}\"}}\n", "x".repeat(1000));
    let text = line.repeat(2621);
    assert!(store
        .put_result_with_transcript(&done, "{}", &text)
        .await
        .expect("result written"));
    let pieces = transcript_of(api.clone(), done.clone()).await;
    assert_eq!(pieces.len(), 3);
    assert!(pieces
        .iter()
        .all(|c| c.game_id == done && c.data.len() <= 1024 * 1024));
    assert_eq!(
        pieces.iter().map(|c| c.last).collect::<Vec<_>>(),
        [false, false, true]
    );
    let joined: Vec<u8> = pieces.iter().flat_map(|c| c.data.clone()).collect();
    assert_eq!(joined, text.as_bytes());

    results_send_the_same_pieces(&mut api, &pieces, &games).await;
    what_a_mirror_polls(&api, &games, &done).await;
}

/// Without the token, `ListSweeps` and `Transcript` are refused.
async fn listing_and_transcripts_need_the_token(url: &str) {
    let mut bare =
        pb::sweeps_client::SweepsClient::new(client::channel(url, None).expect("channel"));
    let err = bare
        .list_sweeps(pb::ListSweepsRequest {})
        .await
        .expect_err("no token is refused");
    assert_eq!(err.code(), tonic::Code::Unauthenticated);
    let err = bare
        .transcript(pb::TranscriptRequest {
            game_id: "x".into(),
        })
        .await
        .expect_err("no token is refused");
    assert_eq!(err.code(), tonic::Code::Unauthenticated);
}

/// An empty cluster lists no sweep; once sweep `api-list` (its file written into `dir`) is
/// submitted, it is listed with its record and progress.
async fn a_submitted_sweep_is_listed(api: &mut client::Sweeps, dir: &Path) {
    let listed = api
        .list_sweeps(pb::ListSweepsRequest {})
        .await
        .expect("an empty cluster lists")
        .into_inner();
    assert!(listed.sweeps.is_empty());

    let script = common::crate_file("examples/glasshouse.toml");
    let file = dir.join("listed.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"api-list\"\nscripts = [{:?}]\nrepeats = 2\n[game]\nrounds = 1\n[budget]\nmax_usd = 2.5\n",
            script.display().to_string()
        ),
    )
    .expect("write sweep");
    api.submit(submission::read(&file).expect("read"))
        .await
        .expect("submitted");

    let listed = api
        .list_sweeps(pb::ListSweepsRequest {})
        .await
        .expect("lists")
        .into_inner();
    assert_eq!(listed.sweeps.len(), 1);
    let s = &listed.sweeps[0];
    assert_eq!((s.id.as_str(), s.name.as_str()), ("api-list", "api-list"));
    assert_eq!(s.status, "running");
    assert!(s.text.contains("max_usd = 2.5"), "{}", s.text);
    assert!(!s.created_at.is_empty());
    assert_eq!(s.max_usd, Some(2.5));
    let p = s.progress.as_ref().expect("progress");
    assert_eq!((p.total, p.pending, p.done), (2, 2, 0));
    assert!(s.totals.is_empty(), "no call yet: {:?}", s.totals);
}

/// Every piece `Transcript` sends of `game`'s transcript.
async fn transcript_of(mut api: client::Sweeps, game: String) -> Vec<pb::TranscriptChunk> {
    let mut stream = api
        .transcript(pb::TranscriptRequest { game_id: game })
        .await
        .expect("a known game")
        .into_inner();
    let mut pieces = Vec::new();
    while let Some(c) = stream.message().await.expect("a piece") {
        pieces.push(c);
    }
    pieces
}

/// `Results` sends the same pieces, and each game's attempts and seed.
async fn results_send_the_same_pieces(
    api: &mut client::Sweeps,
    pieces: &[pb::TranscriptChunk],
    games: &[sleuth::store::GameRow],
) {
    let mut stream = api
        .results(pb::ResultsRequest {
            sweep_id: "api-list".into(),
            transcripts: true,
            ..Default::default()
        })
        .await
        .expect("results")
        .into_inner();
    let mut from_results = Vec::new();
    let mut seeds = Vec::new();
    while let Some(part) = stream.message().await.expect("a part") {
        match part.part {
            Some(pb::results_part::Part::Transcript(c)) => from_results.push(c),
            Some(pb::results_part::Part::Game(g)) => seeds.push((g.game_id, g.seed)),
            None => {}
        }
    }
    assert_eq!(from_results, pieces);
    let want: Vec<(String, u64)> = games.iter().map(|g| (g.id.clone(), g.seed)).collect();
    assert_eq!(seeds, want);
}

/// What a mirror polls: every game's row without its result; then the results of the games it
/// names (an id of no game of the sweep is left out). `done` is the one game done.
async fn what_a_mirror_polls(api: &client::Sweeps, games: &[sleuth::store::GameRow], done: &str) {
    let collect = |req: pb::ResultsRequest| {
        let mut api = api.clone();
        async move {
            let mut stream = api.results(req).await.expect("results").into_inner();
            let mut out = Vec::new();
            while let Some(part) = stream.message().await.expect("a part") {
                match part.part {
                    Some(pb::results_part::Part::Game(g)) => out.push(g),
                    Some(pb::results_part::Part::Transcript(_)) => {
                        panic!("no transcript asked for")
                    }
                    None => {}
                }
            }
            out
        }
    };
    let rows = collect(pb::ResultsRequest {
        sweep_id: "api-list".into(),
        transcripts: true,
        without_results: true,
        ..Default::default()
    })
    .await;
    assert_eq!(rows.len(), games.len());
    assert!(rows.iter().all(|g| g.result_json.is_empty()));
    assert!(rows.iter().any(|g| g.game_id == done && g.state == "done"));
    let named = collect(pb::ResultsRequest {
        sweep_id: "api-list".into(),
        game_ids: vec![done.to_string(), "no-such-game".into()],
        ..Default::default()
    })
    .await;
    assert_eq!(named.len(), 1);
    assert_eq!(named[0].game_id, done);
    assert!(!named[0].result_json.is_empty(), "its result");
}

/// The read-only token (issue 33, item 2).
const READ_TOKEN: &str = "api-test-read-token-2b9e";

/// A read-only token (`SLEUTH_READ_TOKEN`, what `sleuth view --coordinator` should hold) lists
/// sweeps and workers, watches, and fetches results and transcripts; it is refused with
/// `PERMISSION_DENIED` for everything that submits, cancels or speaks the worker protocol, and
/// nothing changes. The full token still does everything. A read-only token equal to the full one
/// is refused at start.
#[tokio::test]
async fn a_read_only_token_reads_and_may_not_submit_cancel_or_register() {
    let Some(redis) = redis() else { return };
    let addr = common::coordinator::free_addr();
    let read = || Token::new(READ_TOKEN).expect("token");
    let mut cfg = CoordinatorConfig::new(
        redis.url(),
        addr,
        "api-read".into(),
        Token::new(TOKEN).expect("token"),
    );
    cfg.read_token = Some(Token::new(TOKEN).expect("token"));
    let err = cfg.check().expect_err("the same secret twice");
    assert!(err.to_string().contains("SLEUTH_READ_TOKEN"), "{err}");
    cfg.read_token = Some(read());
    let _stop = common::coordinator::serve(cfg).await;
    let url = format!("http://{addr}");
    let mut full = client::sweeps(&url, None, Token::new(TOKEN).expect("token")).expect("client");
    let mut reader = client::sweeps(&url, None, read()).expect("client");

    // A sweep to read, submitted with the full token.
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("read.toml");
    let script = common::crate_file("examples/glasshouse.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"api-read\"\nscripts = [{:?}]\nrepeats = 2\n[game]\nrounds = 1\n",
            script.display().to_string()
        ),
    )
    .expect("write sweep");
    let req = submission::read(&file).expect("read");
    full.submit(req.clone())
        .await
        .expect("the full token submits");

    the_read_calls_answer(&mut reader).await;

    // Everything else: refused, and nothing happened.
    let denied = |r: Result<(), tonic::Status>, what: &str| {
        let s = r.expect_err(what);
        assert_eq!(s.code(), tonic::Code::PermissionDenied, "{what}: {s:?}");
        assert!(
            s.message().contains("read-only") && !s.message().contains(READ_TOKEN),
            "{what}: {}",
            s.message()
        );
    };
    let other = dir.path().join("other.toml");
    std::fs::write(
        &other,
        std::fs::read_to_string(&file)
            .expect("read")
            .replace("api-read", "api-read-2"),
    )
    .expect("write sweep");
    let r = reader.submit(submission::read(&other).expect("read")).await;
    denied(r.map(|_| ()), "submit");
    let r = reader
        .cancel(pb::CancelRequest {
            sweep_id: "api-read".into(),
        })
        .await;
    denied(r.map(|_| ()), "cancel");
    let mut worker = client::workers(&url, None, read()).expect("client");
    let r = worker
        .register(pb::RegisterRequest {
            host: "intruder".into(),
            capacity: 1,
            ..Default::default()
        })
        .await;
    denied(r.map(|_| ()), "register");
    let r = worker
        .heartbeat(pb::HeartbeatRequest {
            worker_id: "intruder".into(),
            ..Default::default()
        })
        .await;
    denied(r.map(|_| ()), "heartbeat");
    let r = worker.report(pb::ReportRequest::default()).await;
    denied(r.map(|_| ()), "report");

    let sweeps = full
        .list_sweeps(pb::ListSweepsRequest {})
        .await
        .expect("list")
        .into_inner()
        .sweeps;
    assert_eq!(sweeps.len(), 1, "the reader's sweep was not submitted");
    assert_eq!(sweeps[0].status, "running", "nor was the sweep cancelled");
    let workers = full
        .list_workers(pb::ListWorkersRequest {})
        .await
        .expect("list")
        .into_inner();
    assert!(workers.workers.is_empty(), "no worker registered");

    // The full token may do all of it; a wrong token is not "read-only", it is nothing.
    full.cancel(pb::CancelRequest {
        sweep_id: "api-read".into(),
    })
    .await
    .expect("the full token cancels");
    let mut stranger =
        client::sweeps(&url, None, Token::new("not-a-token").expect("token")).expect("client");
    let s = stranger
        .list_sweeps(pb::ListSweepsRequest {})
        .await
        .expect_err("a wrong token");
    assert_eq!(s.code(), tonic::Code::Unauthenticated);
}

/// Every call a read-only token may make answers it (sweep `api-read` is submitted).
async fn the_read_calls_answer(reader: &mut client::Sweeps) {
    let sweeps = reader
        .list_sweeps(pb::ListSweepsRequest {})
        .await
        .expect("list sweeps")
        .into_inner()
        .sweeps;
    assert_eq!(sweeps.len(), 1);
    reader
        .list_workers(pb::ListWorkersRequest {})
        .await
        .expect("list workers");
    let first = reader
        .watch(pb::WatchRequest {
            sweep_id: "api-read".into(),
        })
        .await
        .expect("watch")
        .into_inner()
        .message()
        .await
        .expect("a progress message")
        .expect("one");
    assert_eq!(first.total, 2);
    let mut games = Vec::new();
    let mut stream = reader
        .results(pb::ResultsRequest {
            sweep_id: "api-read".into(),
            without_results: true,
            ..Default::default()
        })
        .await
        .expect("results")
        .into_inner();
    while let Some(part) = stream.message().await.expect("a part") {
        if let Some(pb::results_part::Part::Game(g)) = part.part {
            games.push(g.game_id);
        }
    }
    assert_eq!(games.len(), 2);
    let mut stream = reader
        .transcript(pb::TranscriptRequest {
            game_id: games[0].clone(),
        })
        .await
        .expect("transcript")
        .into_inner();
    assert!(stream.message().await.expect("no error").is_none());
}

/// The coordinator serves at most its bound of connections, and a connection that sends no request
/// within its first-request time is closed (issue 33, item 3): four silent connections fill a bound
/// of four, a real client's call waits in the backlog — not refused — and is answered once the
/// deadline has closed the silent ones.
#[tokio::test]
async fn silent_connections_are_closed_and_the_connection_bound_holds() {
    let Some(redis) = redis() else { return };
    let addr = common::coordinator::free_addr();
    let mut cfg = CoordinatorConfig::new(
        redis.url(),
        addr,
        "api-bound".into(),
        Token::new(TOKEN).expect("token"),
    );
    cfg.limits.max_connections = 4;
    cfg.limits.first_request_timeout = Duration::from_secs(2);
    let _stop = common::coordinator::serve(cfg).await;
    // The helper's probes (connected and dropped at once) have closed by now.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let mut silent = Vec::new();
    for _ in 0..4 {
        silent.push(tokio::net::TcpStream::connect(addr).await.expect("connect"));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    let mut api = client::sweeps(
        &format!("http://{addr}"),
        None,
        Token::new(TOKEN).expect("token"),
    )
    .expect("client");
    tokio::time::timeout(
        Duration::from_secs(30),
        api.list_workers(pb::ListWorkersRequest {}),
    )
    .await
    .expect("answered once a slot is free")
    .expect("a real client is served");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1200),
        "answered after {waited:?}: the four silent connections did not hold the bound"
    );
    for mut s in silent {
        let mut buf = [0u8; 64];
        // The server's SETTINGS frame may come first; then the end of the connection.
        let closed = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match tokio::io::AsyncReadExt::read(&mut s, &mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
        .await;
        assert!(closed.is_ok(), "a silent connection was left open");
    }
    // And the client goes on being served on its connection.
    api.list_workers(pb::ListWorkersRequest {})
        .await
        .expect("served again");
}
