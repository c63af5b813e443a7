//! The store conformance suite (`sleuth::store::conformance`) on the Redis store, plus what only a
//! shared store has to show: two workers racing to write the same result or cache entry record it
//! once, a ledger entry written again after a lost answer counts once, namespaces sharing a server
//! stay apart, the state outlives every handle (the coordinator keeps nothing outside Redis), and
//! the URL's password never reaches an error.
//!
//! Each test starts its own `redis-server` on a free port (no persistence, killed when the test
//! ends). Where `redis-server` is not installed the tests say so and pass without running: they need
//! a real server, and a fake one would test the fake.

use std::net::TcpListener;

use crate::common;

use common::redis::RedisServer;

use sleuth::store::{
    conformance, CacheKind, CallSource, GameRow, GameState, LedgerEntry, RedisStore, Store,
    StoreError, SweepRecord, SweepStatus,
};

fn game(sweep: &str, id: &str) -> GameRow {
    GameRow {
        id: id.to_string(),
        sweep: sweep.to_string(),
        arm: "arm".into(),
        arm_label: "framework=player".into(),
        script: "Glasshouse".into(),
        repeat: 0,
        seed: 7,
        spec: "{}".into(),
        state: GameState::Pending,
        attempts: 0,
        crashes: 0,
        reason: None,
        stage: None,
        updated_at: String::new(),
    }
}

fn live_call(run: &str, sweep: &str, key: &str) -> LedgerEntry {
    LedgerEntry {
        run: run.to_string(),
        sweep: sweep.to_string(),
        game: "g".into(),
        arm: "arm".into(),
        model: "m".into(),
        phase: "gameplay".into(),
        framework: "player".into(),
        purpose: "answer".into(),
        source: CallSource::Live,
        prompt_tokens: 10,
        completion_tokens: 2,
        cached_tokens: 0,
        cost_usd: 0.001,
        key: Some(key.to_string()),
        latency_ms: None,
        retries: 0,
        id: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_store_passes_the_conformance_suite() {
    let Some(server) = RedisServer::start(&[]) else {
        return;
    };
    let store = RedisStore::connect(&server.url(), "conformance")
        .await
        .expect("connect");
    conformance::run(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_racing_for_the_same_game_or_key_record_exactly_one() {
    let Some(server) = RedisServer::start(&[]) else {
        return;
    };
    // Two handles, two connections: two workers.
    let a = RedisStore::connect(&server.url(), "race").await.expect("a");
    let b = RedisStore::connect(&server.url(), "race").await.expect("b");
    const N: usize = 300;
    let games: Vec<GameRow> = (0..N).map(|i| game("s", &format!("g{i}"))).collect();
    assert_eq!(a.add_games(&games).await.expect("add"), N);

    let races = (0..N).map(|i| {
        let (a, b) = (a.clone(), b.clone());
        async move {
            let id = format!("g{i}");
            // Both started it (a lease handed to one, then re-delivered to the other)...
            let (sa, sb) = tokio::join!(
                a.set_game_state(&id, GameState::Running, None, None),
                b.set_game_state(&id, GameState::Running, None, None)
            );
            sa.expect("start a");
            sb.expect("start b");
            // ...and both finish it at once, each with its own result...
            let (by_a, by_b) = (
                format!("{{\"by\":\"a{i}\"}}"),
                format!("{{\"by\":\"b{i}\"}}"),
            );
            let (ra, rb) = tokio::join!(a.put_result(&id, &by_a), b.put_result(&id, &by_b));
            let (ra, rb) = (ra.expect("put a"), rb.expect("put b"));
            assert!(
                ra ^ rb,
                "game {id}: exactly one write wins (a: {ra}, b: {rb})"
            );
            let stored = a.result(&id).await.expect("read").expect("a result");
            let winner = if ra { "a" } else { "b" };
            assert_eq!(
                stored,
                format!("{{\"by\":\"{winner}{i}\"}}"),
                "the winner's result stays"
            );

            // ...and both cache the same call with different replies, each with its ledger entry.
            let mut key = [0u8; 32];
            key[..8].copy_from_slice(&(i as u64).to_le_bytes());
            let hex_key = format!("k{i}");
            let (la, lb) = (
                [live_call("ra", "s", &hex_key)],
                [live_call("rb", "s", &hex_key)],
            );
            let (ca, cb) = tokio::join!(
                a.cache_put(&key, CacheKind::Chat, "m", b"from a", &la),
                b.cache_put(&key, CacheKind::Chat, "m", b"from b", &lb)
            );
            ca.expect("cache a");
            cb.expect("cache b");
            let got = b.cache_get(&key).await.expect("get").expect("cached");
            assert!(
                got == b"from a" || got == b"from b",
                "one of the two replies: {got:?}"
            );
            // Every reader sees the same one, whichever handle asks.
            assert_eq!(
                a.cache_get(&key).await.expect("get").as_deref(),
                Some(&got[..])
            );
        }
    });
    futures::future::join_all(races).await;

    assert_eq!(
        a.cache_len().await.expect("len"),
        N as u64,
        "one entry per key"
    );
    let counts = b.state_counts("s").await.expect("counts");
    assert_eq!(counts.get(GameState::Done), N as u64);
    assert_eq!(
        counts.total(),
        N as u64,
        "each game counted once: {counts:?}"
    );
    for g in a.games("s").await.expect("games") {
        assert_eq!(g.state, GameState::Done);
        assert_eq!(g.attempts, 2, "both starts count as attempts");
    }
    // Both calls were made (and paid for): both ledger entries stand, and the totals agree.
    let totals = a.totals("s").await.expect("totals");
    assert_eq!(totals.len(), 1, "{totals:?}");
    assert_eq!(totals[0].calls, 2 * N as u64);
    assert_eq!(totals[0].prompt_tokens, 20 * N as u64);
    assert!((totals[0].cost_usd - 0.002 * N as f64).abs() < 1e-9);
    assert_eq!(a.ledger("ra").await.expect("ledger").len(), N);
    assert_eq!(b.ledger("rb").await.expect("ledger").len(), N);
}

/// A write whose answer was lost is made again — by the gateway handing a live call's entry to the
/// ledger's writer after `cache_put` failed, by the writer retrying a batch, by a spill replayed — and
/// must not count the call twice: a named entry is recorded once, however often it is written, while
/// entries of the same call under different names (two workers that both paid) all stand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_ledger_entry_written_again_is_recorded_once() {
    let Some(server) = RedisServer::start(&[]) else {
        return;
    };
    let store = RedisStore::connect(&server.url(), "again")
        .await
        .expect("connect");
    let named = |name: &str| LedgerEntry {
        id: Some(name.to_string()),
        ..live_call("r", "s", "k")
    };
    let key = [7u8; 32];
    // Applied, answer lost; then the same entry through the ledger's writer, twice (a retried batch),
    // beside a second entry of the same batch that is new.
    store
        .cache_put(&key, CacheKind::Chat, "m", b"reply", &[named("aa01")])
        .await
        .expect("cache_put");
    for _ in 0..2 {
        store
            .record_calls(&[named("aa01"), named("aa02")])
            .await
            .expect("record_calls");
    }
    // Another worker paid for the same call (same cache key, another name): it stands.
    store
        .cache_put(&key, CacheKind::Chat, "m", b"reply", &[named("bb01")])
        .await
        .expect("cache_put");
    let ledger = store.ledger("r").await.expect("ledger");
    let names: Vec<Option<&str>> = ledger.iter().map(|e| e.id.as_deref()).collect();
    assert_eq!(names, [Some("aa01"), Some("aa02"), Some("bb01")]);
    let totals = store.totals("s").await.expect("totals");
    assert_eq!(totals.len(), 1, "{totals:?}");
    assert_eq!(
        totals[0].calls, 3,
        "each paid call counted once: {totals:?}"
    );
    assert_eq!(totals[0].prompt_tokens, 30);
    assert!((totals[0].cost_usd - 0.003).abs() < 1e-12);
    // Unnamed entries (made by hand) are not deduplicated: each write is a call.
    store
        .record_calls(&[live_call("r", "s", "k"), live_call("r", "s", "k")])
        .await
        .expect("record_calls");
    assert_eq!(store.ledger("r").await.expect("ledger").len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_on_one_server_stay_apart() {
    let Some(server) = RedisServer::start(&[]) else {
        return;
    };
    let one = RedisStore::connect(&server.url(), "team-a.sweeps")
        .await
        .expect("one");
    let two = RedisStore::connect(&server.url(), "team-b.sweeps")
        .await
        .expect("two");
    one.add_games(&[game("s", "g")]).await.expect("add");
    one.cache_put(
        &[5; 32],
        CacheKind::Chat,
        "m",
        b"v",
        &[live_call("r", "s", "k")],
    )
    .await
    .expect("put");
    assert_eq!(two.game("g").await.expect("read"), None);
    assert_eq!(two.cache_get(&[5; 32]).await.expect("read"), None);
    assert_eq!(two.cache_len().await.expect("len"), 0);
    assert!(two.totals("s").await.expect("totals").is_empty());
    assert!(two.add_games(&[game("s", "g")]).await.expect("add") == 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_outlives_every_handle() {
    let Some(server) = RedisServer::start(&[]) else {
        return;
    };
    let sweep = SweepRecord {
        id: "s".into(),
        name: "night".into(),
        file: "night.toml".into(),
        text: "name = \"night\"\n".into(),
        created_at: "2026-11-25T00:00:00.000Z".into(),
        status: SweepStatus::Running,
        note: None,
        max_usd: None,
        max_tokens: None,
    };
    {
        // A coordinator that is then restarted (or killed: nothing waits for its drop).
        let store = RedisStore::connect(&server.url(), "restart")
            .await
            .expect("connect");
        store.open_sweep(&sweep).await.expect("open");
        store.add_games(&[game("s", "g1")]).await.expect("add");
        store
            .set_game_state("g1", GameState::Running, None, None)
            .await
            .expect("start");
        store
            .cache_put(&[9; 32], CacheKind::Embedding, "e", b"kept", &[])
            .await
            .expect("put");
    }
    let store = RedisStore::connect(&server.url(), "restart")
        .await
        .expect("reconnect");
    assert_eq!(store.sweep("s").await.expect("read"), Some(sweep));
    let g1 = store.game("g1").await.expect("read").expect("g1");
    assert_eq!((g1.state, g1.attempts), (GameState::Running, 1));
    assert_eq!(
        store.cache_get(&[9; 32]).await.expect("get").as_deref(),
        Some(&b"kept"[..])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_password_never_appears_in_errors() {
    let Some(server) = RedisServer::start(&["--requirepass", "right-horse-battery"]) else {
        return;
    };
    let port = server.port;
    let assert_redacted = |err: &StoreError, secret: &str| {
        let shown = format!("{err} / {err:?}");
        assert!(!shown.contains(secret), "the password leaked: {shown}");
        assert!(shown.contains("***"), "the URL is shown redacted: {shown}");
    };

    // The wrong password: refused, and not repeated back.
    let err = RedisStore::connect(&format!("redis://:wrong-s3cret@127.0.0.1:{port}/"), "ns")
        .await
        .expect_err("a wrong password is refused");
    assert_redacted(&err, "wrong-s3cret");
    assert!(matches!(err, StoreError::Open { .. }), "{err:?}");

    // A percent-encoded one, to a port nobody listens on.
    let closed = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let err = RedisStore::connect(&format!("redis://:p%40ss-w0rd@127.0.0.1:{closed}/"), "ns")
        .await
        .expect_err("nobody listens");
    assert_redacted(&err, "p@ss-w0rd");
    assert_redacted(&err, "p%40ss-w0rd");

    // TLS (`rediss://`, over rustls) to a listener that hangs up on every connection: the handshake
    // fails cleanly, redacted. (A plain redis-server would sit waiting for a newline in the
    // ClientHello until the connect timeout.)
    let hang_up = TcpListener::bind("127.0.0.1:0").expect("listener");
    let tls_port = hang_up.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for conn in hang_up.incoming() {
            drop(conn);
        }
    });
    let err = RedisStore::connect(&format!("rediss://:tls-s3cret@127.0.0.1:{tls_port}/"), "ns")
        .await
        .expect_err("no TLS there");
    assert_redacted(&err, "tls-s3cret");

    // The right one works, and the store's Debug and URL show it redacted too.
    let url = format!("redis://:right-horse-battery@127.0.0.1:{port}/");
    let store = RedisStore::connect(&url, "ns").await.expect("connect");
    store.add_games(&[game("s", "g")]).await.expect("write");
    assert!(!format!("{store:?} {}", store.url()).contains("right-horse-battery"));

    // An error from an operation (the server going away) is redacted as well, and transient.
    drop(server);
    let err = store.game("g").await.expect_err("the server is gone");
    assert_redacted(&err, "right-horse-battery");
    assert!(
        matches!(
            err,
            StoreError::Redis {
                transient: true,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_of_another_layout_or_a_bad_name_is_refused() {
    let Some(server) = RedisServer::start(&[]) else {
        return;
    };
    drop(
        RedisStore::connect(&server.url(), "old")
            .await
            .expect("connect"),
    );
    let client = redis::Client::open(server.url()).expect("client");
    let mut con = client
        .get_multiplexed_async_connection()
        .await
        .expect("raw connection");
    let _: () = redis::cmd("HSET")
        .arg("{old}:meta")
        .arg("schema_version")
        .arg("999")
        .query_async(&mut con)
        .await
        .expect("edit the version");
    let err = RedisStore::connect(&server.url(), "old")
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("schema version 999"), "{err}");

    for bad in ["", "a}b", "a b", "{x}"] {
        let err = RedisStore::connect(&server.url(), bad)
            .await
            .expect_err("a bad namespace is refused");
        assert!(err.to_string().contains("namespace"), "{err}");
    }
}

/// A store that counts the cache reads in flight, and holds each read until `gather` of them are in
/// flight together (or a few seconds pass): the most the gateway's cache ever sent at once is then
/// `min(gather, its limit)`, whatever the machine's speed.
struct CountingReads {
    inner: RedisStore,
    gather: usize,
    in_flight: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
    changed: tokio::sync::Notify,
}

impl Store for CountingReads {
    fn open_sweep<'a>(&'a self, s: &'a SweepRecord) -> sleuth::store::StoreFuture<'a, SweepRecord> {
        self.inner.open_sweep(s)
    }
    fn sweep<'a>(&'a self, id: &'a str) -> sleuth::store::StoreFuture<'a, Option<SweepRecord>> {
        self.inner.sweep(id)
    }
    fn sweeps(&self) -> sleuth::store::StoreFuture<'_, Vec<SweepRecord>> {
        self.inner.sweeps()
    }
    fn set_sweep_status<'a>(
        &'a self,
        id: &'a str,
        status: SweepStatus,
        note: Option<String>,
    ) -> sleuth::store::StoreFuture<'a, ()> {
        self.inner.set_sweep_status(id, status, note)
    }
    fn start_run<'a>(
        &'a self,
        run: &'a sleuth::store::RunRecord,
    ) -> sleuth::store::StoreFuture<'a, ()> {
        self.inner.start_run(run)
    }
    fn end_run<'a>(&'a self, run: &'a str, outcome: &'a str) -> sleuth::store::StoreFuture<'a, ()> {
        self.inner.end_run(run, outcome)
    }
    fn runs<'a>(
        &'a self,
        sweep: &'a str,
    ) -> sleuth::store::StoreFuture<'a, Vec<sleuth::store::RunRecord>> {
        self.inner.runs(sweep)
    }
    fn add_games<'a>(&'a self, games: &'a [GameRow]) -> sleuth::store::StoreFuture<'a, usize> {
        self.inner.add_games(games)
    }
    fn games<'a>(&'a self, sweep: &'a str) -> sleuth::store::StoreFuture<'a, Vec<GameRow>> {
        self.inner.games(sweep)
    }
    fn game<'a>(&'a self, id: &'a str) -> sleuth::store::StoreFuture<'a, Option<GameRow>> {
        self.inner.game(id)
    }
    fn set_game_state<'a>(
        &'a self,
        id: &'a str,
        state: GameState,
        reason: Option<String>,
        stage: Option<String>,
    ) -> sleuth::store::StoreFuture<'a, ()> {
        self.inner.set_game_state(id, state, reason, stage)
    }
    fn count_crash<'a>(&'a self, id: &'a str) -> sleuth::store::StoreFuture<'a, u32> {
        self.inner.count_crash(id)
    }
    fn state_counts<'a>(
        &'a self,
        sweep: &'a str,
    ) -> sleuth::store::StoreFuture<'a, sleuth::store::StateCounts> {
        self.inner.state_counts(sweep)
    }
    fn put_result<'a>(
        &'a self,
        game: &'a str,
        result_json: &'a str,
    ) -> sleuth::store::StoreFuture<'a, bool> {
        self.inner.put_result(game, result_json)
    }
    fn result<'a>(&'a self, game: &'a str) -> sleuth::store::StoreFuture<'a, Option<String>> {
        self.inner.result(game)
    }
    fn cache_get<'a>(
        &'a self,
        key: &'a [u8; 32],
    ) -> sleuth::store::StoreFuture<'a, Option<Vec<u8>>> {
        use std::sync::atomic::Ordering;
        Box::pin(async move {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            self.changed.notify_waiters();
            let gathered = async {
                loop {
                    let wake = self.changed.notified();
                    if self.most.load(Ordering::SeqCst) >= self.gather {
                        return;
                    }
                    wake.await;
                }
            };
            let _ = tokio::time::timeout(std::time::Duration::from_secs(3), gathered).await;
            let got = self.inner.cache_get(key).await;
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            got
        })
    }
    fn cache_put<'a>(
        &'a self,
        key: &'a [u8; 32],
        kind: CacheKind,
        model: &'a str,
        value: &'a [u8],
        ledger: &'a [LedgerEntry],
    ) -> sleuth::store::StoreFuture<'a, ()> {
        self.inner.cache_put(key, kind, model, value, ledger)
    }
    fn cache_len(&self) -> sleuth::store::StoreFuture<'_, u64> {
        self.inner.cache_len()
    }
    fn record_calls<'a>(
        &'a self,
        entries: &'a [LedgerEntry],
    ) -> sleuth::store::StoreFuture<'a, ()> {
        self.inner.record_calls(entries)
    }
    fn totals<'a>(
        &'a self,
        sweep: &'a str,
    ) -> sleuth::store::StoreFuture<'a, Vec<sleuth::store::TotalsRow>> {
        self.inner.totals(sweep)
    }
    fn ledger<'a>(&'a self, run: &'a str) -> sleuth::store::StoreFuture<'a, Vec<LedgerEntry>> {
        self.inner.ledger(run)
    }
    fn max_parallel_lookups(&self) -> usize {
        self.inner.max_parallel_lookups()
    }
}

/// A worker's cache reads go to Redis many at once, not four at a time as SQLite's pool wants: the
/// number of lookups in flight is the store's to say (`Store::max_parallel_lookups`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_backed_cache_sends_more_than_four_lookups_at_once() {
    use std::sync::Arc;

    use sleuth::llm::{
        CallTags, ChatRequest, Gateway, GatewayConfig, GatewayParts, Message, Phase, Pricing,
        Route, Router, SimulatedProvider,
    };

    let Some(server) = RedisServer::start(&[]) else {
        return;
    };
    let inner = RedisStore::connect(&server.url(), "lookups")
        .await
        .expect("connect");
    assert!(inner.max_parallel_lookups() > 4);
    let gather = 12;
    let counting = Arc::new(CountingReads {
        inner,
        gather,
        in_flight: Default::default(),
        most: Default::default(),
        changed: tokio::sync::Notify::new(),
    });
    let model = sleuth::llm::simulated::MODEL;
    let mut router = Router::default();
    router.add(
        model,
        Route::new(Arc::new(SimulatedProvider::default()), None),
    );
    let store: Arc<dyn Store> = counting.clone();
    let gw = Gateway::start_with(GatewayParts {
        router,
        pricing: Pricing::builtin(),
        config: GatewayConfig::default(),
        cache: Some(store),
        budget: None,
        ledger: None,
        shared: None,
        batch: None,
    })
    .await
    .expect("a gateway starts");
    let mut calls = Vec::new();
    for i in 0..gather * 2 {
        let gw = gw.clone();
        calls.push(tokio::spawn(async move {
            let req = ChatRequest {
                model: model.into(),
                messages: vec![Message::user(format!(
                    "Question {i}: who left the door open?"
                ))],
                temperature: 0.0,
                top_p: 1.0,
                max_tokens: 16,
                schema: None,
                logprobs: false,
                sample: i as u64,
                cache_key: None,
            };
            let tags = CallTags {
                game: format!("g{i}"),
                agent: "Ada".into(),
                framework: "player".into(),
                phase: Phase::Gameplay,
                purpose: "answer".into(),
            };
            gw.chat(req, tags).await
        }));
    }
    for c in calls {
        c.await.expect("a call task").expect("the call succeeds");
    }
    let most = counting.most.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        most >= gather,
        "the cache sent at most {most} lookups to Redis at once; expected {gather}"
    );
}
