//! The conformance suite every [`Store`] passes: the SQLite store in `tests/it/store.rs` and the Redis
//! store of the cluster run exactly these checks, so the scheduler can rely on the same behaviour
//! from both. Each check panics with what differed.
//!
//! Pass a store over an empty database (a fresh file, or a Redis key prefix nobody used).

use super::{
    CacheKind, CallSource, GameRow, GameState, LedgerEntry, RunRecord, Store, SweepRecord,
    SweepStatus,
};

fn sweep(id: &str) -> SweepRecord {
    SweepRecord {
        id: id.to_string(),
        name: format!("sweep {id}"),
        file: "sweeps/x.toml".into(),
        text: "name = \"x\"\n".into(),
        created_at: "2026-11-25T00:00:00.000Z".into(),
        status: SweepStatus::Running,
        note: None,
        max_usd: Some(1.5),
        max_tokens: Some(10_000_000_000),
    }
}

fn game(sweep: &str, id: &str, repeat: u32) -> GameRow {
    GameRow {
        id: id.to_string(),
        sweep: sweep.to_string(),
        arm: "arm1".into(),
        arm_label: "framework=player".into(),
        script: "Glasshouse".into(),
        repeat,
        seed: u64::MAX - u64::from(repeat),
        spec: format!("{{\"seed\":{repeat}}}"),
        state: GameState::Pending,
        attempts: 0,
        crashes: 0,
        reason: None,
        stage: None,
        updated_at: String::new(),
    }
}

fn call(run: &str, sweep: &str, model: &str, source: CallSource, key: &str) -> LedgerEntry {
    let live = source == CallSource::Live;
    LedgerEntry {
        run: run.to_string(),
        sweep: sweep.to_string(),
        game: "g1".into(),
        arm: "arm1".into(),
        model: model.to_string(),
        phase: "gameplay".into(),
        framework: "player".into(),
        purpose: "sensor".into(),
        source,
        prompt_tokens: if live { 100 } else { 0 },
        completion_tokens: if live { 20 } else { 0 },
        cached_tokens: if live { 10 } else { 0 },
        cost_usd: if live { 0.25 } else { 0.0 },
        key: Some(key.to_string()),
        latency_ms: live.then_some(1_234),
        retries: u32::from(live),
        id: None,
    }
}

/// Runs every check against `store`.
pub async fn run(store: &dyn Store) {
    sweeps(store).await;
    runs(store).await;
    games(store).await;
    results(store).await;
    cache(store).await;
    ledger(store).await;
}

async fn sweeps(store: &dyn Store) {
    let s = sweep("s1");
    let first = store.open_sweep(&s).await.expect("open a new sweep");
    assert_eq!(first, s, "a new sweep reads back as written");
    store
        .set_sweep_status("s1", SweepStatus::BudgetStopped, Some("spent $1.50".into()))
        .await
        .expect("set status");
    // Opening it again continues it: nothing written is overwritten.
    let mut again = sweep("s1");
    again.name = "another name".into();
    let reopened = store.open_sweep(&again).await.expect("reopen");
    assert_eq!(
        reopened.name, "sweep s1",
        "reopening keeps the first record"
    );
    assert_eq!(reopened.status, SweepStatus::BudgetStopped);
    assert_eq!(reopened.note.as_deref(), Some("spent $1.50"));
    assert_eq!(store.sweep("nope").await.expect("read"), None);
    store.open_sweep(&sweep("s2")).await.expect("second sweep");
    let all: Vec<String> = store
        .sweeps()
        .await
        .expect("list")
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert!(
        all.contains(&"s1".to_string()) && all.contains(&"s2".to_string()),
        "{all:?}"
    );
}

async fn runs(store: &dyn Store) {
    let r = RunRecord {
        id: "r1".into(),
        sweep: "s1".into(),
        started_at: "2026-11-25T00:00:01.000Z".into(),
        ended_at: None,
        outcome: None,
        pid: 4242,
        host: "node-a".into(),
    };
    store.start_run(&r).await.expect("start run");
    let r2 = RunRecord {
        id: "r2".into(),
        started_at: "2026-11-25T00:00:02.000Z".into(),
        ..r.clone()
    };
    store.start_run(&r2).await.expect("start run 2");
    store.end_run("r1", "finished").await.expect("end run");
    let runs = store.runs("s1").await.expect("runs");
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].id, "r1");
    assert_eq!(runs[0].outcome.as_deref(), Some("finished"));
    assert!(runs[0].ended_at.is_some());
    assert_eq!(runs[1].outcome, None, "a run not ended has no outcome");
    assert!(store.runs("s2").await.expect("runs").is_empty());
}

async fn games(store: &dyn Store) {
    let batch: Vec<GameRow> = (0..3).map(|i| game("s1", &format!("g{i}"), i)).collect();
    assert_eq!(store.add_games(&batch).await.expect("add"), 3);
    // Adding the same games again (a rerun of the sweep) adds nothing and resets nothing.
    store
        .set_game_state("g1", GameState::Running, None, None)
        .await
        .expect("start g1");
    assert_eq!(store.add_games(&batch).await.expect("add again"), 0);
    let more = vec![game("s1", "g3", 3), game("s1", "g0", 0)];
    assert_eq!(store.add_games(&more).await.expect("add more"), 1);
    let listed = store.games("s1").await.expect("games");
    let ids: Vec<&str> = listed.iter().map(|g| g.id.as_str()).collect();
    assert_eq!(ids, ["g0", "g1", "g2", "g3"], "games in the order added");
    let g1 = &listed[1];
    assert_eq!(g1.state, GameState::Running);
    assert_eq!(g1.attempts, 1, "starting a game counts an attempt");
    assert_eq!(g1.seed, u64::MAX - 1, "u64 seeds survive the round trip");
    assert_eq!(g1.spec, "{\"seed\":1}");
    assert_eq!(g1.arm_label, "framework=player");

    store
        .set_game_state(
            "g2",
            GameState::Failed,
            Some("rate limited after 8 retries".into()),
            Some("open_questioning_2".into()),
        )
        .await
        .expect("fail g2");
    let g2 = store.game("g2").await.expect("read").expect("g2 exists");
    assert_eq!(g2.state, GameState::Failed);
    assert_eq!(g2.reason.as_deref(), Some("rate limited after 8 retries"));
    assert_eq!(g2.stage.as_deref(), Some("open_questioning_2"));
    assert_eq!(g2.attempts, 0, "failing is not an attempt");
    assert_eq!(store.game("nope").await.expect("read"), None);

    assert_eq!(store.count_crash("g1").await.expect("crash"), 1);
    assert_eq!(store.count_crash("g1").await.expect("crash"), 2);

    let counts = store.state_counts("s1").await.expect("counts");
    assert_eq!(counts.get(GameState::Pending), 2);
    assert_eq!(counts.get(GameState::Running), 1);
    assert_eq!(counts.get(GameState::Failed), 1);
    assert_eq!(counts.get(GameState::Done), 0);
    assert_eq!(counts.total(), 4);
}

async fn results(store: &dyn Store) {
    assert!(store
        .put_result("g1", "{\"winner\":\"civilians\"}")
        .await
        .expect("put"));
    // A second delivery of the same game writes nothing: the first result stands.
    assert!(!store
        .put_result("g1", "{\"winner\":\"murderer\"}")
        .await
        .expect("put again"));
    assert_eq!(
        store.result("g1").await.expect("read").as_deref(),
        Some("{\"winner\":\"civilians\"}")
    );
    assert_eq!(store.result("g0").await.expect("read"), None);
    let g1 = store.game("g1").await.expect("read").expect("g1");
    assert_eq!(g1.state, GameState::Done, "a result marks its game done");
    // Done is final: a late state change from a stale run does not undo it.
    store
        .set_game_state("g1", GameState::Interrupted, Some("late".into()), None)
        .await
        .expect("late state");
    let g1 = store.game("g1").await.expect("read").expect("g1");
    assert_eq!(g1.state, GameState::Done);
    assert_eq!(g1.reason, None);
    assert_eq!(
        store
            .state_counts("s1")
            .await
            .expect("counts")
            .get(GameState::Done),
        1
    );
}

async fn cache(store: &dyn Store) {
    let k1 = [1u8; 32];
    let k2 = [2u8; 32];
    assert_eq!(store.cache_get(&k1).await.expect("miss"), None);
    store
        .cache_put(&k1, CacheKind::Chat, "sim-1", b"first", &[])
        .await
        .expect("put");
    assert_eq!(
        store.cache_get(&k1).await.expect("hit").as_deref(),
        Some(&b"first"[..]),
        "a put is readable as soon as it returns"
    );
    store
        .cache_put(&k1, CacheKind::Chat, "sim-1", b"second", &[])
        .await
        .expect("put again");
    assert_eq!(
        store.cache_get(&k1).await.expect("hit").as_deref(),
        Some(&b"first"[..]),
        "the first value of a key stays"
    );
    let big = vec![7u8; 1 << 16];
    store
        .cache_put(&k2, CacheKind::Embedding, "emb-1", &big, &[])
        .await
        .expect("put big");
    assert_eq!(store.cache_get(&k2).await.expect("hit"), Some(big));
    assert_eq!(store.cache_len().await.expect("len"), 2);
    // (The ledger check below adds a third entry.)
}

async fn ledger(store: &dyn Store) {
    // A live call's entry is written with its cache entry, the others on their own.
    store
        .cache_put(
            &[3u8; 32],
            CacheKind::Chat,
            "m1",
            b"reply",
            &[call("r1", "s1", "m1", CallSource::Live, "k1")],
        )
        .await
        .expect("put with ledger");
    let entries = vec![
        call("r1", "s1", "m1", CallSource::Live, "k2"),
        call("r1", "s1", "m1", CallSource::Retry, "k3"),
        call("r2", "s1", "m1", CallSource::Cache, "k1"),
        call("r2", "s1", "m2", CallSource::Live, "k4"),
        call("r9", "s2", "m1", CallSource::Live, "k5"),
    ];
    store.record_calls(&entries).await.expect("record");
    store.record_calls(&[]).await.expect("record nothing");
    let totals = store.totals("s1").await.expect("totals");
    let find = |model: &str, source: &str| {
        totals
            .iter()
            .find(|t| t.model == model && t.source == source)
            .unwrap_or_else(|| panic!("no totals row for {model}/{source}: {totals:?}"))
    };
    let live = find("m1", "live");
    assert_eq!(live.calls, 2);
    assert_eq!(live.prompt_tokens, 200);
    assert_eq!(live.completion_tokens, 40);
    assert_eq!(live.cached_tokens, 20);
    assert!((live.cost_usd - 0.5).abs() < 1e-9);
    assert_eq!(live.phase, "gameplay");
    assert_eq!(live.framework, "player");
    assert_eq!(live.arm, "arm1");
    assert_eq!(find("m1", "retry").calls, 1);
    let hit = find("m1", "cache");
    assert_eq!((hit.calls, hit.prompt_tokens, hit.cost_usd), (1, 0, 0.0));
    assert_eq!(find("m2", "live").calls, 1);
    assert_eq!(
        totals.len(),
        4,
        "rows of another sweep are not summed in: {totals:?}"
    );

    let r2 = store.ledger("r2").await.expect("ledger");
    assert_eq!(r2.len(), 2);
    assert_eq!(r2[0], entries[2], "entries read back as written, in order");
    assert_eq!(r2[1].key.as_deref(), Some("k4"));
    assert_eq!(
        (r2[1].latency_ms, r2[1].retries),
        (Some(1_234), 1),
        "a live call's latency and retries read back"
    );
}
