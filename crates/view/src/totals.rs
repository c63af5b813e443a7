//! The runs page's live figures: each sweep's games by state and its ledger summed (live calls, cache
//! hits, tokens, USD), by arm and phase too.
//!
//! The ledger is append-only with an increasing integer id, so it is folded, not re-summed: one
//! background task reads only the rows added since its last pass (`id > last`, a range of the primary
//! key) and adds their group sums to what it holds. A sweep of millions of calls costs one full pass
//! when the viewer starts and a few new rows per second after; however many browsers poll, the store
//! sees one reader. What is kept is a few numbers per sweep, arm and phase — its size depends on the
//! sweep's grid, never on how many games were viewed.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde::Serialize;

use super::db::{self, ReadError, SweepInfo};
use super::remote::Remote;
use super::source::Source;
use sleuth_store::{StoreReader, TotalsRow};

/// How often the snapshot is refreshed while the viewer runs.
pub const REFRESH: Duration = Duration::from_secs(1);

/// Ledger sums over some calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Sums {
    /// Calls answered by the provider (billed).
    pub live_calls: u64,
    /// Calls answered in a provider's batch (billed, at the batch price).
    pub batch_calls: u64,
    /// Calls answered from the cache ($0).
    pub cache_hits: u64,
    /// Failed attempts that were tried again.
    pub retries: u64,
    /// Prompt and completion tokens of live and batch calls.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Prompt tokens the provider served from its own prompt cache.
    pub cached_tokens: u64,
    pub usd: f64,
}

impl std::ops::AddAssign for Sums {
    fn add_assign(&mut self, o: Self) {
        self.live_calls += o.live_calls;
        self.batch_calls += o.batch_calls;
        self.cache_hits += o.cache_hits;
        self.retries += o.retries;
        self.prompt_tokens += o.prompt_tokens;
        self.completion_tokens += o.completion_tokens;
        self.cached_tokens += o.cached_tokens;
        self.usd += o.usd;
    }
}

impl Sums {
    fn add(&mut self, source: &str, g: &Group) {
        match source {
            "live" | "batch" => {
                if source == "live" {
                    self.live_calls += g.calls;
                } else {
                    self.batch_calls += g.calls;
                }
                self.prompt_tokens += g.prompt;
                self.completion_tokens += g.completion;
                self.cached_tokens += g.cached;
            }
            "cache" => self.cache_hits += g.calls,
            _ => self.retries += g.calls,
        }
        self.usd += g.usd;
    }

    /// Tokens billed (prompt and completion).
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// One sweep's figures.
#[derive(Debug, Clone, Serialize)]
pub struct SweepLive {
    #[serde(flatten)]
    pub info: SweepInfo,
    /// Whether a process holds the run directory's lock now.
    pub running_now: bool,
    pub states: BTreeMap<String, u64>,
    pub games: u64,
    pub done: u64,
    pub failed: u64,
    pub running: u64,
    pub pending: u64,
    pub sums: Sums,
    pub tokens: u64,
    /// By arm id, then phase.
    #[serde(skip)]
    pub by_arm: ByArm,
}

/// The snapshot every page and `/api/runs` read.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Live {
    pub sweeps: Vec<SweepLive>,
    /// RFC 3339 time of the pass that made it; `None` before the first.
    pub updated_at: Option<String>,
    /// Why the last pass failed, if it did (the previous figures are kept).
    pub error: Option<String>,
}

impl Live {
    pub fn sweep(&self, id: &str) -> Option<&SweepLive> {
        self.sweeps.iter().find(|s| s.info.id == id)
    }
}

/// SharedLive between the refresher and the handlers.
pub type SharedLive = Arc<RwLock<Arc<Live>>>;

/// A group of ledger rows summed by the store (`StoreReader::ledger_sums`) or the coordinator.
struct Group {
    calls: u64,
    prompt: u64,
    completion: u64,
    cached: u64,
    usd: f64,
}

/// The folded ledger: sums by sweep, arm, phase and source, and the last id read.
#[derive(Default)]
pub struct Fold {
    last_id: i64,
    /// sweep → arm → phase → sums.
    sums: BTreeMap<String, ByArm>,
}

impl Fold {
    /// Adds the ledger rows after the last one read.
    pub fn advance(&mut self, c: &StoreReader) -> Result<(), ReadError> {
        let max = c.ledger_last_id()?;
        let Some(max) = max.filter(|m| *m > self.last_id) else {
            return Ok(());
        };
        for row in c.ledger_sums(self.last_id, max)? {
            let g = Group {
                calls: row.calls,
                prompt: row.prompt_tokens,
                completion: row.completion_tokens,
                cached: row.cached_tokens,
                usd: row.cost_usd,
            };
            self.sums
                .entry(row.sweep)
                .or_default()
                .entry(row.arm)
                .or_default()
                .entry(row.phase)
                .or_default()
                .add(&row.source, &g);
        }
        self.last_id = max;
        Ok(())
    }

    /// A sweep's sums in all, and by arm and phase.
    fn of(&self, sweep: &str) -> (Sums, ByArm) {
        let by_arm = self.sums.get(sweep).cloned().unwrap_or_default();
        (total(&by_arm), by_arm)
    }
}

/// Sums by arm id, then phase.
pub type ByArm = BTreeMap<String, BTreeMap<String, Sums>>;

fn total(by_arm: &ByArm) -> Sums {
    let mut all = Sums::default();
    for s in by_arm.values().flat_map(|p| p.values()) {
        all += *s;
    }
    all
}

/// A sweep's sums in all and by arm and phase from its ledger already summed by model, phase,
/// framework, arm and source (`Store::totals`, which a cluster's coordinator sends).
pub fn sums_of(rows: &[TotalsRow]) -> (Sums, ByArm) {
    let mut by_arm = ByArm::new();
    for r in rows {
        by_arm
            .entry(r.arm.clone())
            .or_default()
            .entry(r.phase.clone())
            .or_default()
            .add(
                &r.source,
                &Group {
                    calls: r.calls,
                    prompt: r.prompt_tokens,
                    completion: r.completion_tokens,
                    cached: r.cached_tokens,
                    usd: r.cost_usd,
                },
            );
    }
    (total(&by_arm), by_arm)
}

/// Over a cluster's mirror: each sweep's figures are the coordinator's ledger sums (the mirror holds
/// no ledger rows), and a running sweep runs now when the coordinator answers.
fn apply_remote(live: &mut Live, remote: &Remote) {
    let totals = remote.totals();
    let reachable = remote.reachable();
    for s in &mut live.sweeps {
        let (sums, by_arm) = totals
            .get(&s.info.id)
            .map(|r| sums_of(r))
            .unwrap_or_default();
        s.tokens = sums.tokens();
        s.sums = sums;
        s.by_arm = by_arm;
        s.running_now = reachable && s.info.status == "running";
    }
}

/// One pass: the sweeps, their games by state, and the ledger folded further.
pub fn snapshot(c: &StoreReader, fold: &mut Fold, running_now: bool) -> Result<Live, ReadError> {
    let sweeps = db::sweeps(c)?;
    let counts = db::state_counts(c)?;
    fold.advance(c)?;
    let sweeps = sweeps
        .into_iter()
        .map(|info| {
            let states = counts.get(&info.id).cloned().unwrap_or_default();
            let get = |s: &str| states.get(s).copied().unwrap_or(0);
            let (sums, by_arm) = fold.of(&info.id);
            SweepLive {
                running_now: running_now && info.status == "running",
                games: states.values().sum(),
                done: get("done"),
                failed: get("failed"),
                running: get("running") + get("evaluating_batch"),
                pending: get("pending") + get("interrupted"),
                tokens: sums.tokens(),
                states,
                sums,
                by_arm,
                info,
            }
        })
        .collect();
    Ok(Live {
        sweeps,
        updated_at: Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        error: None,
    })
}

/// Whether a `sweep run` holds the run directory now, as `sweep status` tells; over a cluster's
/// mirror, whether the coordinator answered the last poll. Asked every [`REFRESH`], so it must
/// never take the writers' lock (a `sweep run` starting in that instant would be refused):
/// [`sleuth_store::RunDir::is_locked`] probes only the file the writer holds for readers.
pub fn lock_held(source: &Source) -> bool {
    if let Some(remote) = &source.remote {
        return remote.reachable();
    }
    sleuth_store::RunDir::new(&source.root).is_locked()
}

/// Starts the task that refreshes `live` every [`REFRESH`] (a folder of games has no store: nothing to
/// refresh). It ends when `stop` drains.
pub fn spawn_refresh(source: Source, live: SharedLive, stop: sleuth_base::shutdown::Shutdown) {
    let Some(db) = source.db.clone() else {
        return;
    };
    tokio::spawn(async move {
        let fold = Arc::new(std::sync::Mutex::new(Fold::default()));
        loop {
            let fold = fold.clone();
            let running = lock_held(&source);
            let next = db
                .read(move |c| {
                    let mut f = fold
                        .lock()
                        .map_err(|_| ReadError::Task("the fold's lock is poisoned".into()))?;
                    snapshot(c, &mut f, running)
                })
                .await;
            let next = match next {
                Ok(mut l) => {
                    if let Some(remote) = &source.remote {
                        apply_remote(&mut l, remote);
                    }
                    Arc::new(l)
                }
                Err(e) => {
                    let prev = live.read().map(|l| (**l).clone()).unwrap_or_default();
                    Arc::new(Live {
                        error: Some(e.to_string()),
                        ..prev
                    })
                }
            };
            if let Ok(mut w) = live.write() {
                *w = next;
            }
            tokio::select! {
                _ = tokio::time::sleep(REFRESH) => {}
                _ = stop.draining() => return,
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    use sleuth_store::{CallSource, LedgerEntry, SqliteStore, Store};

    /// Appends calls to the ledger through the store's own writer, as a sweep does.
    async fn ledger(store: &SqliteStore, rows: &[(&str, &str, CallSource, u64, f64)]) {
        let entries: Vec<LedgerEntry> = rows
            .iter()
            .map(|(sweep, arm, source, tokens, usd)| LedgerEntry {
                run: "r".into(),
                sweep: (*sweep).into(),
                game: "g".into(),
                arm: (*arm).into(),
                model: "m".into(),
                phase: "gameplay".into(),
                framework: "f".into(),
                purpose: "p".into(),
                source: *source,
                prompt_tokens: *tokens,
                completion_tokens: 1,
                cached_tokens: 0,
                cost_usd: *usd,
                key: None,
                latency_ms: None,
                retries: 0,
                id: None,
            })
            .collect();
        store.record_calls(&entries).await.expect("record calls");
    }

    #[test]
    fn a_clusters_ledger_sums_read_as_the_fold_would() {
        let row = |arm: &str, phase: &str, source: &str, calls: u64, usd: f64| TotalsRow {
            model: "m".into(),
            phase: phase.into(),
            framework: "f".into(),
            arm: arm.into(),
            source: source.into(),
            calls,
            prompt_tokens: 10 * calls,
            completion_tokens: calls,
            cached_tokens: 0,
            cost_usd: usd,
        };
        let (all, by_arm) = sums_of(&[
            row("a", "gameplay", "live", 3, 0.5),
            row("a", "gameplay", "cache", 2, 0.0),
            row("a", "evaluation", "live", 1, 0.25),
            row("b", "gameplay", "retry", 4, 0.0),
        ]);
        assert_eq!((all.live_calls, all.cache_hits, all.retries), (4, 2, 4));
        assert_eq!(all.tokens(), 44, "live calls' tokens only");
        assert!((all.usd - 0.75).abs() < 1e-12);
        assert_eq!(by_arm["a"]["evaluation"].live_calls, 1);
        assert_eq!(by_arm["b"]["gameplay"].retries, 4);
    }

    #[tokio::test]
    async fn the_fold_reads_each_row_once_and_sums_by_source() {
        use CallSource::{Cache, Live, Retry};
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sleuth.db");
        let store = SqliteStore::open(&path).expect("store");
        let c = StoreReader::open(&path).expect("reader");
        let mut f = Fold::default();
        f.advance(&c).expect("empty ledger");
        ledger(
            &store,
            &[
                ("s", "a", Live, 10, 0.5),
                ("s", "a", Cache, 10, 0.0),
                ("s", "b", Retry, 0, 0.0),
            ],
        )
        .await;
        f.advance(&c).expect("first pass");
        ledger(
            &store,
            &[("s", "b", Live, 5, 0.25), ("t", "a", Live, 1, 1.0)],
        )
        .await;
        f.advance(&c).expect("second pass");
        f.advance(&c).expect("nothing new");
        let (all, by_arm) = f.of("s");
        assert_eq!(all.live_calls, 2);
        assert_eq!(all.cache_hits, 1);
        assert_eq!(all.retries, 1);
        assert_eq!(all.prompt_tokens, 15);
        assert_eq!(all.completion_tokens, 2);
        assert!((all.usd - 0.75).abs() < 1e-12);
        assert_eq!(by_arm["b"]["gameplay"].live_calls, 1);
        assert_eq!(f.of("t").0.live_calls, 1);
        assert_eq!(f.of("nope").0, Sums::default());
    }
}
