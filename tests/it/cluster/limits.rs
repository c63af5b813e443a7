//! Cluster-wide limits: a model's `max_concurrency` holds across workers, a budget stops the sweep
//! once for the whole cluster, and a model whose API key the workers lack fails its games with a
//! clear reason.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::cluster::{
    mock_declaration, mock_model, simulated_model, write_sweep, Cluster, Options,
};

use super::{assert_finished, start_and_submit, start_mock, NS};

/// Check 6a: Three workers against a mock that refuses more than C calls at once, with the model's
/// `max_concurrency = C`: the limit holds for the cluster, so the mock refuses nothing.
#[test]
fn max_concurrency_holds_across_workers() {
    let limit = 3;
    let (rt, server) = start_mock(
        2,
        sleuth::mockllm::MockConfig {
            max_concurrency: Some(limit),
            latency: Duration::from_millis(15),
            ..sleuth::mockllm::MockConfig::default()
        },
    );
    let Some((c, _, id)) = start_and_submit(
        Options {
            capacity: 3,
            worker_models: Some(mock_declaration(&server.base_url())),
            ..Options::default()
        },
        "limits",
        3,
        &mock_model(&server.base_url(), Some(limit)),
    ) else {
        return;
    };
    let lines = c.watch(&id);
    assert_finished(&lines, 6);
    let stats = server.stats();
    assert!(stats.ok > 0, "{stats:?}");
    assert_eq!(
        stats.rate_limited, 0,
        "the mock refused calls over {limit} at once: {stats:?}"
    );
    rt.block_on(server.shutdown());
}

/// Check 6b: A cluster-wide budget: the sweep stops once (`budget_stopped`, one note), its spending
/// stays within the cap, and the games after the stop are not played.
#[test]
fn the_budget_stops_the_sweep_once_for_the_cluster() {
    // A game of one round spends about 1.2 million tokens here: the cap stops the sweep early on.
    let cap: u64 = 2_000_000;
    let Some((c, _, id)) = start_and_submit(
        Options::default(),
        "budget",
        6,
        &format!("{}\n[budget]\nmax_tokens = {cap}\n", simulated_model(10)),
    ) else {
        return;
    };
    let games = 12;
    let p = c.wait_ended(&id);
    assert_eq!(p.status, "budget_stopped", "{p:?}");
    assert!(p.done < games, "games after the stop were played: {p:?}");
    assert!(
        p.pending + p.interrupted > 0 && p.failed == 0,
        "the rest is pending or interrupted: {p:?}"
    );
    assert!(
        p.tokens <= cap,
        "spent {} tokens, cap {cap}: {p:?}",
        p.tokens
    );

    let mut con = c.redis();
    let budget: BTreeMap<String, String> = redis::cmd("HGETALL")
        .arg(format!("{NS}:budget:{id}"))
        .query(&mut con)
        .expect("HGETALL");
    // The first refusal is recorded once, naming the refused call (its worker's id first).
    let stopper = budget
        .get("stopped")
        .unwrap_or_else(|| panic!("no first refusal in {budget:?}"));
    let workers = c.list_workers().expect("list workers");
    assert!(
        workers
            .iter()
            .any(|w| stopper.starts_with(&format!("{}:", w.worker_id))),
        "{stopper} names none of {workers:?}"
    );
    let spent: u64 = budget
        .get("tokens")
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no tokens spent in {budget:?}"));
    assert!(spent <= cap, "{budget:?}");
    let note: Option<String> = redis::cmd("HGET")
        .arg(format!("{NS}:sweep:{id}"))
        .arg("note")
        .query(&mut con)
        .expect("HGET");
    let note = note.expect("the sweep has a note");
    assert!(note.contains("budget"), "{note}");
    // One worker marked the stop: one log line says so.
    let stops: usize = c
        .workers
        .iter()
        .map(|w| w.log_text().matches("sweep budget-stopped").count())
        .sum();
    assert_eq!(stops, 1, "the stop is recorded once");

    // Nothing more is played after the stop.
    std::thread::sleep(Duration::from_secs(3));
    let later = c.progress(&id).expect("progress");
    assert_eq!(later.done, p.done, "{later:?}");
}

/// A sweep whose model's API key the workers do not have: every game fails at once with a reason
/// that names the worker and the missing variable, and the sweep ends (it does not go round the
/// queue for ever).
#[test]
fn a_key_the_workers_lack_fails_the_games_with_a_clear_reason() {
    let missing = "SLEUTH_TEST_KEY_NOBODY_HAS";
    let model = format!(
        "[models.m]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = {missing:?}\n"
    );
    // The workers declare the model with a variable none of them has.
    let Some(c) = Cluster::start(Options {
        worker_models: Some(model.clone()),
        ..Options::default()
    }) else {
        return;
    };
    let file = write_sweep(c.dir.path(), "no-key", &["glasshouse.toml"], 2, &model);
    let id = c.submit(&file);
    let p = c.wait_ended(&id);
    assert_eq!(
        (p.status.as_str(), p.failed, p.done),
        ("finished", 2, 0),
        "{p:?}"
    );
    assert_eq!(p.live_calls, 0, "nothing was called: {p:?}");
    let mut con = c.redis();
    let games: Vec<String> = redis::cmd("ZRANGE")
        .arg(format!("{NS}:sweep-games:{id}"))
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .expect("ZRANGE");
    assert_eq!(games.len(), 2);
    for g in games {
        let reason: String = redis::cmd("HGET")
            .arg(format!("{NS}:game:{g}"))
            .arg("reason")
            .query(&mut con)
            .expect("HGET reason");
        assert!(
            reason.contains(missing) && reason.starts_with("worker "),
            "the reason names the worker and the variable: {reason}"
        );
    }
}
