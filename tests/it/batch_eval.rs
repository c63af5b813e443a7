//! Evaluation through the Batch API (issue 20), end to end over HTTP against `sleuth mock-llm`'s
//! files and batches endpoints: the same results as live evaluation at half its cost, every line
//! answered once, failed and expired lines retried and counted, and a killed sweep that polls the
//! batches it submitted instead of submitting them again.
//!
//! The sweeps play WellPlay O-CoT (one evaluation step, then the LLM judge reading the answers) and
//! ThinkThrice with Self-Refinement and Self-Verification (draft → refine → verify, each a step that
//! needs the one before), so games wait on several batches in turn.

use crate::common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sleuth::llm::batch::{Journal, JournalCounts};
use sleuth::mockllm::{MockConfig, MockServer};
use sleuth::store::RunDir;
use sleuth::store::{GameState, SqliteStore, Store, TotalsRow};
use sleuth::sweep::scheduler::RunEnd;
use sleuth::sweep::{self, RunOptions};

const SWEEP: &str = "be";

/// WellPlay O-CoT: answers, then the judge reading them.
const OCOT: &str = "[[arms]]\nprotocol = \"wellplay\"\nframework = \"ocot\"\nrounds = 1\n";
/// ThinkThrice with SR and SV: draft, refine, verify, each needing the one before.
const THINKTHRICE: &str = "[[arms]]\nprotocol = \"thinkthrice\"\nframework = \"thinkthrice\"\nmodules = \"mr,sr,sv=2\"\nrounds_before_clues = 1\nrounds_after_clues = 0\n";

/// One game per arm of `arms` on night-ferry against the mock at `base_url`; `batch`
/// sets the model's `batch`, `extra` is appended (a `[batch]` policy).
fn sweep_file(dir: &Path, base_url: &str, arms: &str, batch: bool, extra: &str) -> PathBuf {
    let path = dir.join("sweep.toml");
    let text = format!(
        r#"name = "{SWEEP}"
out = "{out}"
scripts = ["{script}"]
repeats = 1
seed = 1
concurrency = 4
[game]
model = "m"
{arms}
[evaluation]
repeats = 1
judge_model = "m"
[models.m]
provider = "openai"
base_url = "{base_url}"
model = "sim-1"
api_key_env = "PATH"
input_usd_per_mtok = 1.0
output_usd_per_mtok = 4.0
batch = {batch}
[batch]
flush_secs = 0.05
poll_secs = 0.05
{extra}
"#,
        out = dir.join("run").display(),
        script = common::night_ferry().display(),
    );
    std::fs::write(&path, text).expect("write the sweep file");
    path
}

fn both() -> String {
    format!("{OCOT}{THINKTHRICE}")
}

fn quiet() -> RunOptions {
    RunOptions {
        progress: false,
        ..RunOptions::default()
    }
}

async fn mock(config: MockConfig) -> MockServer {
    let addr: SocketAddr = "127.0.0.1:0".parse().expect("address");
    MockServer::start(addr, config).await.expect("mock")
}

/// Runs the sweep to its end and checks every game is done.
async fn run_all(file: &Path) {
    let r = sweep::run(file, quiet()).await.expect("run");
    assert_eq!(r.end, RunEnd::Finished);
    assert_eq!(
        r.counts.get(GameState::Done),
        r.counts.total(),
        "every game finishes: {:?}",
        r.counts
    );
}

/// Every game's result.json by (arm, script, repeat), without what differs between any two sweeps:
/// the wall time, the game id (a digest of the spec, which names the model's `batch` setting) and
/// the cacheable prompt share (the provider prefix cache is the process's, so its figure depends on
/// the order in which concurrent games sent their prompts: two live runs differ too) and the bytes
/// tokenized (what the process's memo of token ids did not hold yet: a replay from the cache reads
/// none).
async fn results(dir: &Path) -> BTreeMap<String, serde_json::Value> {
    let store = SqliteStore::open(&dir.join("run/sleuth.db")).expect("store");
    let mut out = BTreeMap::new();
    for g in store.games(SWEEP).await.expect("games") {
        let text = std::fs::read_to_string(dir.join("run/games").join(&g.id).join("result.json"))
            .expect("result.json");
        let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
        let o = v.as_object_mut().expect("object");
        o.remove("duration_seconds");
        o.remove("game_id");
        o.remove("spec");
        strip_cacheable(&mut v);
        out.insert(format!("{}|{}|{}", g.arm_label, g.script, g.repeat), v);
    }
    out
}

fn strip_cacheable(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(o) => {
            o.remove("cacheable_prompt_tokens");
            o.remove("cacheable_share");
            o.remove("bytes_tokenized");
            o.values_mut().for_each(strip_cacheable);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_cacheable),
        _ => {}
    }
}

async fn totals(dir: &Path) -> Vec<TotalsRow> {
    let store = SqliteStore::open(&dir.join("run/sleuth.db")).expect("store");
    store.totals(SWEEP).await.expect("totals")
}

/// Calls and USD of the ledger rows of `phase` and `source`.
fn sum(t: &[TotalsRow], phase: &str, source: &str) -> (u64, f64) {
    t.iter()
        .filter(|r| r.phase == phase && r.source == source)
        .fold((0, 0.0), |(c, u), r| (c + r.calls, u + r.cost_usd))
}

async fn journal(dir: &Path) -> JournalCounts {
    Journal::open(&RunDir::new(dir.join("run")).journal())
        .expect("journal")
        .counts()
        .await
        .expect("counts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_evaluation_matches_live_at_half_the_cost_and_survives_failed_lines() {
    // Live evaluation: the reference.
    let server = mock(MockConfig::default()).await;
    let live = tempfile::tempdir().expect("dir");
    run_all(&sweep_file(
        live.path(),
        &server.base_url(),
        &both(),
        false,
        "",
    ))
    .await;
    let live_results = results(live.path()).await;
    let live_totals = totals(live.path()).await;
    let (live_eval_calls, live_eval_usd) = sum(&live_totals, "evaluation", "live");
    assert!(live_eval_calls > 0 && live_eval_usd > 0.0);
    server.shutdown().await;

    // The same sweep with its evaluation through batches, on a fresh server.
    let server = mock(MockConfig::default()).await;
    let batched = tempfile::tempdir().expect("dir");
    run_all(&sweep_file(
        batched.path(),
        &server.base_url(),
        &both(),
        true,
        "",
    ))
    .await;
    assert_eq!(
        results(batched.path()).await,
        live_results,
        "the same answers, the same results"
    );
    let t = totals(batched.path()).await;
    let (batch_calls, batch_usd) = sum(&t, "evaluation", "batch");
    assert_eq!(batch_calls, live_eval_calls, "every evaluation call once");
    assert_eq!(
        sum(&t, "evaluation", "live").0,
        0,
        "no evaluation call went live"
    );
    assert!(
        (batch_usd - live_eval_usd / 2.0).abs() < 1e-9,
        "evaluation at half price: {batch_usd} vs live {live_eval_usd}"
    );
    assert_eq!(
        sum(&t, "gameplay", "live"),
        sum(&live_totals, "gameplay", "live"),
        "play calls stay live"
    );
    let stats = server.stats();
    assert_eq!(stats.batch_lines, batch_calls, "every line answered once");
    assert_eq!(stats.batch_lines_duplicate, 0);
    let j = journal(batched.path()).await;
    assert_eq!(j.batches, stats.batches, "each batch submitted once");
    assert!(
        j.batches >= 3,
        "draft, refine and verify are steps of their own: {j:?}"
    );
    assert_eq!((j.waiting_games, j.open_batches), (0, 0));
    // What batching saved, as `sweep status` and the report say it.
    let saved = format!("saved ${:.4}", live_eval_usd - batch_usd);
    let status = sweep::status::status(&batched.path().join("run"))
        .await
        .expect("status")
        .render();
    assert!(status.contains(&saved), "{saved} in:\n{status}");
    let note = sleuth::report::spend::ledger_note(&batched.path().join("run")).expect("a note");
    assert!(note.contains(&format!("batching {saved}")), "{note}");
    server.shutdown().await;

    // Failed lines and an expired batch, retried live (the default): nothing is lost.
    let (faulty, t, j, stats) = faulty_run("").await;
    assert_eq!(results(faulty.path()).await, live_results);
    assert_eq!(stats.batches_expired, 1);
    assert!(j.line_failures > 0, "{j:?}");
    assert_eq!(
        j.line_failures, stats.batch_line_failures,
        "every failed line is counted"
    );
    assert_eq!(
        sum(&t, "evaluation", "live").0,
        j.live,
        "each failed line retried live once"
    );
    assert_eq!(j.live, j.line_failures);
    assert_eq!(
        sum(&t, "evaluation", "batch").0 + j.live,
        live_eval_calls,
        "every evaluation call answered once, in a batch or live"
    );

    // The same faults, retried in new batches.
    let (rebatched, t, j, stats) = faulty_run("on_failure = \"batch\"\nmax_attempts = 4\n").await;
    assert_eq!(results(rebatched.path()).await, live_results);
    assert!(j.line_failures > 0);
    assert_eq!(stats.batch_lines_duplicate, 0);
    assert_eq!(
        sum(&t, "evaluation", "batch").0 + sum(&t, "evaluation", "live").0,
        live_eval_calls
    );
    assert_eq!(sum(&t, "evaluation", "live").0, j.live);
}

/// The batched sweep against a mock that fails a fifth of the lines (seeded) and lets its first
/// batch expire, with the `[batch]` policy `extra`: its directory, ledger, journal and the mock's
/// totals.
async fn faulty_run(
    extra: &str,
) -> (
    tempfile::TempDir,
    Vec<TotalsRow>,
    JournalCounts,
    sleuth::mockllm::MockStats,
) {
    let server = mock(MockConfig {
        batch_failure_rate: 0.2,
        batch_expire_first: 1,
        fault_seed: 3,
        ..MockConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().expect("dir");
    run_all(&sweep_file(
        dir.path(),
        &server.base_url(),
        &both(),
        true,
        extra,
    ))
    .await;
    let t = totals(dir.path()).await;
    let j = journal(dir.path()).await;
    let stats = server.stats();
    server.shutdown().await;
    (dir, t, j, stats)
}

#[test]
fn a_killed_sweep_polls_its_batches_instead_of_submitting_them_again() {
    let mock = common::Mock::start_with(MockConfig {
        batch_delay: Duration::from_secs(4),
        ..MockConfig::default()
    });
    let dir = tempfile::tempdir().expect("dir");
    let file = sweep_file(dir.path(), &mock.base_url(), OCOT, true, "");
    let status = |dir: &Path| {
        let out = common::run(
            common::sleuth(dir)
                .args(["sweep", "status"])
                .arg(dir.join("run")),
            common::CHILD_TIMEOUT,
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let mut child = common::sleuth(dir.path())
        .args(["sweep", "run", "--quiet"])
        .arg(&file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the sweep");
    let deadline = Instant::now() + common::CHILD_TIMEOUT;
    // Both games wait, and their first batch is at the provider.
    while mock.stats().batches == 0 || !status(dir.path()).contains("1 evaluating (batch)") {
        assert!(
            Instant::now() < deadline,
            "the games never waited on a batch"
        );
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the sweep ended before submitting a batch"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Killed while its first batch is still in progress at the provider.
    child.kill().expect("kill");
    let _ = child.wait();
    let submitted = mock.stats().batches;
    let text = status(dir.path());
    assert!(
        text.contains(&format!("{submitted} submitted ({submitted} open)")),
        "the killed sweep's batches are open:\n{text}"
    );

    let out = common::run(
        common::sleuth(dir.path())
            .args(["sweep", "run", "--quiet"])
            .arg(&file),
        common::CHILD_TIMEOUT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats = mock.stats();
    assert_eq!(
        stats.batch_lines_duplicate, 0,
        "no line answered twice: nothing was submitted again"
    );
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let j = rt.block_on(journal(dir.path()));
    assert_eq!(j.batches, stats.batches, "each batch submitted once");
    assert!(stats.batches > submitted, "the later steps came after");
    let store = SqliteStore::open(&dir.path().join("run/sleuth.db")).expect("store");
    let counts = rt.block_on(store.state_counts(SWEEP)).expect("counts");
    assert_eq!(counts.get(GameState::Done), 1, "{counts:?}");
}

#[test]
fn play_with_batch_eval_waits_for_its_batches_and_gets_the_live_result() {
    let mock = common::Mock::start_with(MockConfig {
        batch_delay: Duration::from_millis(300),
        ..MockConfig::default()
    });
    let dir = tempfile::tempdir().expect("dir");
    let play = |out: &str, batch: bool| {
        let mut cmd = common::sleuth(dir.path());
        cmd.arg("play")
            .arg(common::night_ferry())
            .args([
                "--protocol",
                "wellplay",
                "--framework",
                "ocot",
                "--rounds",
                "1",
            ])
            .args(["--eval-repeats", "1", "--judge-model", "sim-1"])
            .args([
                "--provider",
                "openai",
                "--model",
                "sim-1",
                "--api-key-env",
                "PATH",
            ])
            .args(["--base-url", &mock.base_url(), "--out", out]);
        if batch {
            cmd.args(["--batch-eval", "--batch-poll-secs", "0.1"]);
        }
        let out = common::run(&mut cmd, common::CHILD_TIMEOUT);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    play("live", false);
    let live_requests = mock.requests();
    let said = play("batched", true);
    assert!(said.contains("waits on a batch"), "{said}");
    let stats = mock.stats();
    assert!(
        stats.batches >= 2,
        "answers, then the judge: {}",
        stats.batches
    );
    assert_eq!(stats.batch_lines_duplicate, 0);
    let read = |d: &str| {
        let text = std::fs::read_to_string(dir.path().join(d).join("result.json")).expect("result");
        let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
        let o = v.as_object_mut().expect("object");
        o.remove("duration_seconds");
        o.remove("spec");
        strip_cacheable(&mut v);
        v
    };
    assert_eq!(read("batched"), read("live"));
    // Live requests of the batched game: its play only (the evaluation went in batches).
    let played_live = mock.requests() - live_requests;
    assert!(
        played_live > 0 && played_live < live_requests / 2,
        "{played_live} of {live_requests}"
    );
}
