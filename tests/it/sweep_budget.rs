//! A sweep whose games far outnumber a model's slots, with a budget the whole sweep fits in (issue
//! 23, item 1): it must finish, spending no more than the cap. Before the fix every call queued for
//! a slot held a budget reservation, so the queue alone passed the cap and the sweep stopped as
//! budget-exhausted having spent a fraction of it. The 2,000-game version of this run is
//! `scripts/bench-budget.sh` (figures in docs/performance.md); this one is sized for the test suite.

use crate::common;

use std::path::{Path, PathBuf};

use sleuth::store::GameState;
use sleuth::sweep::scheduler::RunEnd;
use sleuth::sweep::{self, RunOptions};

const GAMES: u32 = 48;

/// `GAMES` WellPlay O-CoT games of night-ferry, all in flight at once, on a simulated model with
/// 4 slots; `budget` is the sweep's `[budget]` table, if any.
fn sweep_file(dir: &Path, budget: &str) -> PathBuf {
    let path = dir.join("sweep.toml");
    let text = format!(
        r#"name = "b"
out = "{out}"
scripts = ["{script}"]
repeats = {GAMES}
seed = 1
concurrency = {GAMES}
[game]
protocol = "wellplay"
framework = "ocot"
rounds = 1
model = "sim"
[evaluation]
repeats = 1
[models.sim]
provider = "simulated"
latency_ms = 2
max_concurrency = 4
{budget}
"#,
        out = dir.join("run").display(),
        script = common::night_ferry().display(),
    );
    std::fs::write(&path, text).expect("write the sweep file");
    path
}

fn quiet() -> RunOptions {
    RunOptions {
        progress: false,
        ..RunOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_queued_behind_few_slots_finishes_within_a_budget_it_fits_in() {
    // What the sweep costs, measured by playing it without a budget (the simulated model is
    // deterministic: the same sweep costs the same again).
    let free = tempfile::tempdir().expect("temp dir");
    let r = sweep::run(&sweep_file(free.path(), ""), quiet())
        .await
        .expect("run");
    assert_eq!(r.end, RunEnd::Finished);
    let need = r.spent.tokens;
    // The cap leaves room for one more call's bound (prompt bytes + max_tokens, well under 1% of
    // the sweep), so every call fits beside what was spent: none may be refused.
    let cap = need + need / 100;
    let tight = tempfile::tempdir().expect("temp dir");
    let file = sweep_file(tight.path(), &format!("[budget]\nmax_tokens = {cap}\n"));
    let r = sweep::run(&file, quiet()).await.expect("run");
    assert_eq!(
        r.end,
        RunEnd::Finished,
        "the sweep fits its budget: it must not stop ({:?}, spent {} of {cap} tokens)",
        r.counts,
        r.spent.tokens
    );
    assert_eq!(r.counts.get(GameState::Done), u64::from(GAMES));
    assert!(r.spent.tokens <= cap, "{} > {cap}", r.spent.tokens);
    assert_eq!(r.spent.tokens, need, "the same sweep, the same cost");
}
