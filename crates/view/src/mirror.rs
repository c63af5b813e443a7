//! `sleuth view --coordinator URL`: the viewer over a cluster's sweeps. The pages read a run
//! directory, so this keeps one: a **local mirror** of the cluster's sweeps in the layout a local
//! sweep has — a SQLite store written through [`SqliteStore`] and the [`Store`] trait, with
//! `games/<id>/result.json` and `games/<id>/transcript.jsonl` beside it — and the unchanged pages
//! serve it (`docs/viewer.md`, *Over a cluster*).
//!
//! What is fetched when:
//! - every [`POLL`], `ListSweeps`: each sweep's record (upserted), its progress and its ledger summed
//!   (kept in memory for the live figures: the cluster's ledger is not copied row by row, and no
//!   ledger row is made up);
//! - for a sweep whose counts changed since the last poll (and at least every [`RESYNC_POLLS`] polls
//!   while it runs), `Results` without results or transcripts: every game's state, reason, stage and
//!   attempts; then, by id, the results of the games that became done since the last sync (each
//!   result crosses the network once);
//! - a game's transcript only when its page (or the next page of its events) is opened and the mirror
//!   has no file for it ([`Remote::fetch_transcript`]). The cluster writes a transcript with its
//!   game's result, so a game that is not done has none yet and is asked for again next time.
//!
//! The coordinator's token is the one in `SLEUTH_TOKEN` (as for `sleuth results`); it travels in the
//! client's interceptor and is never logged.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::StreamExt;

use super::remote::{io, timed};
pub use super::remote::{MirrorError, Remote};
use super::source::Source;
use super::{Server, ViewError};
use sleuth_cluster::auth::Token;
use sleuth_cluster::client;
use sleuth_cluster::proto as pb;
use sleuth_store::{GameRow, GameState, SqliteStore, Store, SweepRecord, SweepStatus, TotalsRow};

/// How often the cluster's sweeps are listed.
pub const POLL: Duration = Duration::from_secs(2);
/// A running sweep's games are fetched again after this many polls even when its counts did not
/// move (a game retried between two polls changes its attempts, not the counts).
pub const RESYNC_POLLS: u32 = 15;
/// Games written to the mirror at once during a sync (the store's writer commits them in groups).
const PARALLEL_WRITES: usize = 32;
/// Games whose results one `Results` request asks for by id: bounds the request's size.
const RESULTS_PER_REQUEST: usize = 500;

/// How to reach the coordinator and where to keep the mirror.
#[derive(Debug, Clone)]
pub struct MirrorConfig {
    /// The coordinator's URL (`https://` for TLS).
    pub coordinator: String,
    /// The CA certificate (PEM) to check an `https://` coordinator against.
    pub tls_ca: Option<PathBuf>,
    /// The coordinator's bearer token.
    pub token: Token,
    /// The mirror's directory (created if missing; an earlier mirror of the same cluster is
    /// continued).
    pub dir: PathBuf,
}

/// The mirror: the store it writes and the cluster it follows.
struct Mirror {
    remote: Arc<Remote>,
    store: SqliteStore,
    dir: PathBuf,
    /// Per sweep: its counts at the last sync of its games, and polls since.
    synced: HashMap<String, (Counts, u32)>,
}

/// A sweep's games by state, as `Progress` says them: what decides whether its games are fetched.
type Counts = [u64; 6];

fn counts(p: &pb::Progress) -> Counts {
    [
        p.total,
        p.pending,
        p.running,
        p.done,
        p.failed,
        p.interrupted,
    ]
}

fn sweep_record(s: &pb::SweepSummary) -> Result<SweepRecord, MirrorError> {
    let status: SweepStatus = s
        .status
        .parse()
        .map_err(|e| MirrorError::Bad(format!("sweep {}: {e}", s.id)))?;
    Ok(SweepRecord {
        id: s.id.clone(),
        name: s.name.clone(),
        file: s.file.clone(),
        text: s.text.clone(),
        created_at: s.created_at.clone(),
        status,
        note: (!s.note.is_empty()).then(|| s.note.clone()),
        max_usd: s.max_usd,
        max_tokens: s.max_tokens,
    })
}

fn totals_rows(s: &pb::SweepSummary) -> Vec<TotalsRow> {
    s.totals
        .iter()
        .map(|t| TotalsRow {
            model: t.model.clone(),
            phase: t.phase.clone(),
            framework: t.framework.clone(),
            arm: t.arm.clone(),
            source: t.source.clone(),
            calls: t.calls,
            prompt_tokens: t.prompt_tokens,
            completion_tokens: t.completion_tokens,
            cached_tokens: t.cached_tokens,
            cost_usd: t.cost_usd,
        })
        .collect()
}

/// A game id as the mirror's directory names it: the same check the pages make.
fn safe_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl Mirror {
    /// One poll: every sweep upserted, the games of those whose counts moved.
    async fn poll(&mut self) -> Result<(), MirrorError> {
        let mut api = self.remote.api.clone();
        let listed = timed(async move {
            Ok::<_, MirrorError>(
                api.list_sweeps(pb::ListSweepsRequest {})
                    .await?
                    .into_inner(),
            )
        })
        .await;
        let listed = match listed {
            Ok(l) => l,
            Err(e) => {
                self.remote.reachable.store(false, Ordering::Relaxed);
                return Err(e);
            }
        };
        self.remote.reachable.store(true, Ordering::Relaxed);
        let mut totals = HashMap::new();
        // One sweep the mirror cannot follow does not stop the others: the first error is
        // returned once every sweep has had its turn.
        let mut first_error = None;
        let mut followed = Vec::new();
        for s in &listed.sweeps {
            match self.upsert_sweep(s).await {
                Ok(()) => followed.push(s),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
            totals.insert(s.id.clone(), totals_rows(s));
        }
        if let Ok(mut t) = self.remote.totals.write() {
            *t = totals;
        }
        for s in followed {
            let now = s.progress.as_ref().map(counts).unwrap_or_default();
            let due = match self.synced.get(&s.id) {
                None => true,
                Some((before, polls)) => {
                    *before != now || (s.status == "running" && *polls + 1 >= RESYNC_POLLS)
                }
            };
            if due {
                // Marked synced only once it is: a failed sync is tried again at the next poll.
                match self.sync_games(&s.id).await {
                    Ok(()) => {
                        self.synced.insert(s.id.clone(), (now, 0));
                    }
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            } else if let Some((_, polls)) = self.synced.get_mut(&s.id) {
                *polls += 1;
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Records a listed sweep in the mirror, or brings its status and note up to date.
    async fn upsert_sweep(&self, s: &pb::SweepSummary) -> Result<(), MirrorError> {
        let record = sweep_record(s)?;
        let kept = self.store.open_sweep(&record).await?;
        if kept.status != record.status || kept.note != record.note {
            self.store
                .set_sweep_status(&record.id, record.status, record.note.clone())
                .await?;
        }
        Ok(())
    }

    /// Brings the mirror's games of `sweep` to what the cluster holds: every game's state (without
    /// its result), then the results of the games that became done since the last sync, by id — so a
    /// poll of a 10,000-game sweep moves its games' rows, not 10,000 results.
    async fn sync_games(&self, sweep: &str) -> Result<(), MirrorError> {
        let mut remote = self.remote_games(sweep, Vec::new(), true).await?;
        let local: HashMap<String, GameRow> = self
            .store
            .games(sweep)
            .await?
            .into_iter()
            .map(|g| (g.id.clone(), g))
            .collect();
        let newly_done: Vec<String> = remote
            .iter()
            .filter(|g| g.state == GameState::Done.as_str())
            .filter(|g| local.get(&g.game_id).map(|l| l.state) != Some(GameState::Done))
            .map(|g| g.game_id.clone())
            .collect();
        let mut results: HashMap<String, pb::GameResult> = HashMap::new();
        for ids in newly_done.chunks(RESULTS_PER_REQUEST) {
            for g in self.remote_games(sweep, ids.to_vec(), false).await? {
                results.insert(g.game_id.clone(), g);
            }
        }
        for g in remote.iter_mut() {
            if let Some(full) = results.remove(&g.game_id) {
                *g = full;
            }
        }
        let mut new_rows = Vec::new();
        for g in &remote {
            if !safe_id(&g.game_id) {
                return Err(MirrorError::Bad(format!(
                    "a game id that is not one: {:?}",
                    g.game_id
                )));
            }
            if !local.contains_key(&g.game_id) {
                new_rows.push(GameRow {
                    id: g.game_id.clone(),
                    sweep: sweep.to_string(),
                    arm: g.arm.clone(),
                    arm_label: g.arm_label.clone(),
                    script: g.script.clone(),
                    repeat: g.repeat,
                    seed: g.seed,
                    // The game's spec stays on the cluster: no page shows it.
                    spec: String::new(),
                    state: GameState::Pending,
                    attempts: 0,
                    crashes: 0,
                    reason: None,
                    stage: None,
                    updated_at: String::new(),
                });
            }
        }
        if !new_rows.is_empty() {
            self.store.add_games(&new_rows).await?;
        }
        let local = &local;
        let results: Vec<Result<(), MirrorError>> = futures::stream::iter(remote)
            .map(|g| async move {
                let l = local.get(&g.game_id);
                self.sync_game(g, l).await
            })
            .buffer_unordered(PARALLEL_WRITES)
            .collect()
            .await;
        results.into_iter().collect()
    }

    /// The sweep's games as the cluster holds them: `ids` only (all when empty), with their results
    /// unless `states_only`.
    async fn remote_games(
        &self,
        sweep: &str,
        ids: Vec<String>,
        states_only: bool,
    ) -> Result<Vec<pb::GameResult>, MirrorError> {
        let mut api = self.remote.api.clone();
        let sweep_id = sweep.to_string();
        timed(async move {
            let mut stream = api
                .results(pb::ResultsRequest {
                    sweep_id,
                    transcripts: false,
                    without_results: states_only,
                    game_ids: ids,
                })
                .await?
                .into_inner();
            let mut games = Vec::new();
            while let Some(part) = stream.message().await? {
                if let Some(pb::results_part::Part::Game(g)) = part.part {
                    games.push(g);
                }
            }
            Ok::<_, MirrorError>(games)
        })
        .await
    }

    /// One game: its attempts counted up to the cluster's (each through `set_game_state(Running)`,
    /// the store's one way to count an attempt), then its state, or its result when it is done.
    async fn sync_game(
        &self,
        g: pb::GameResult,
        local: Option<&GameRow>,
    ) -> Result<(), MirrorError> {
        let state: GameState = g
            .state
            .parse()
            .map_err(|e| MirrorError::Bad(format!("game {}: {e}", g.game_id)))?;
        let (local_state, local_attempts, local_reason, local_stage) = match local {
            Some(l) => (l.state, l.attempts, l.reason.clone(), l.stage.clone()),
            None => (GameState::Pending, 0, None, None),
        };
        if local_state == GameState::Done {
            return Ok(());
        }
        let mut touched = false;
        for _ in local_attempts..g.attempts {
            self.store
                .set_game_state(&g.game_id, GameState::Running, None, None)
                .await?;
            touched = true;
        }
        if state == GameState::Done {
            if g.result_json.is_empty() {
                return Err(MirrorError::Bad(format!(
                    "game {} done without a result",
                    g.game_id
                )));
            }
            // The file first: the store saying `done` means the report can read it.
            let files = sleuth_store::RunDir::new(&self.dir).game(&g.game_id);
            let (dir, file) = (files.dir, files.result);
            let json = g.result_json.clone();
            tokio::task::spawn_blocking(move || {
                std::fs::create_dir_all(&dir).map_err(io(&dir))?;
                sleuth_base::fs::write_atomic(&file, json.as_bytes()).map_err(io(&file))
            })
            .await
            .map_err(|e| MirrorError::Bad(format!("a writer task stopped: {e}")))??;
            self.store.put_result(&g.game_id, &g.result_json).await?;
            return Ok(());
        }
        if state == GameState::Running && touched {
            // The attempt counted last left it running, as it is on the cluster (a second
            // `Running` would count another attempt).
            return Ok(());
        }
        let reason = (!g.reason.is_empty()).then(|| g.reason.clone());
        let stage = (!g.stage.is_empty()).then(|| g.stage.clone());
        if touched || state != local_state || reason != local_reason || stage != local_stage {
            self.store
                .set_game_state(&g.game_id, state, reason, stage)
                .await?;
        }
        Ok(())
    }
}

/// Opens (or continues) the mirror in `cfg.dir`, fills it once from the coordinator — so a wrong
/// URL or token is an error before anything is served — and starts the task that follows the
/// cluster every [`POLL`]. The [`Source`] it returns serves the mirror with the cluster behind it.
pub async fn open(cfg: &MirrorConfig) -> Result<Source, ViewError> {
    let mirror_err = |e: MirrorError| ViewError::Mirror {
        coordinator: cfg.coordinator.clone(),
        message: e.to_string(),
    };
    std::fs::create_dir_all(&cfg.dir).map_err(|_| ViewError::NotADirectory {
        path: cfg.dir.clone(),
    })?;
    let path = sleuth_store::RunDir::new(&cfg.dir).store();
    let store = SqliteStore::open(&path).map_err(|e| ViewError::Store {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let api = client::sweeps(&cfg.coordinator, cfg.tls_ca.as_deref(), cfg.token.clone()).map_err(
        |e| ViewError::Mirror {
            coordinator: cfg.coordinator.clone(),
            message: e.to_string(),
        },
    )?;
    let remote = Arc::new(Remote {
        api,
        totals: RwLock::new(HashMap::new()),
        reachable: AtomicBool::new(false),
    });
    let mut mirror = Mirror {
        remote: remote.clone(),
        store,
        dir: cfg.dir.clone(),
        synced: HashMap::new(),
    };
    mirror.poll().await.map_err(mirror_err)?;
    let mut source = Source::open(&cfg.dir)?;
    source.remote = Some(remote);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(POLL).await;
            if let Err(e) = mirror.poll().await {
                tracing::warn!(error = %e, "viewer: following the coordinator (retrying)");
            }
        }
    });
    Ok(source)
}

/// [`open`], then serves the mirror as [`super::start`] serves a run directory.
pub async fn start(
    cfg: MirrorConfig,
    listen: super::Listen,
    shutdown: sleuth_base::shutdown::Shutdown,
) -> Result<Server, ViewError> {
    // The token and TLS rules first: a listen address that needs a token or TLS refuses to start
    // before the coordinator is asked anything.
    let checked = listen.check()?;
    let source = open(&cfg).await?;
    super::serve(source, &listen, checked, shutdown).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_sweep_becomes_the_record_the_store_keeps() {
        let s = pb::SweepSummary {
            id: "demo".into(),
            name: "demo".into(),
            file: "demo.toml".into(),
            text: "name = 'demo'".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            status: "budget_stopped".into(),
            note: String::new(),
            max_usd: Some(1.5),
            max_tokens: None,
            progress: None,
            totals: vec![],
        };
        let r = sweep_record(&s).expect("a known status");
        assert_eq!(r.status, SweepStatus::BudgetStopped);
        assert_eq!(r.note, None);
        assert_eq!(r.max_usd, Some(1.5));
        let bad = pb::SweepSummary {
            status: "exploded".into(),
            ..s
        };
        assert!(sweep_record(&bad).is_err());
    }

    #[test]
    fn game_ids_that_could_leave_the_mirror_are_refused() {
        assert!(safe_id("a1-b_2"));
        assert!(!safe_id("../x"));
        assert!(!safe_id(""));
        assert!(!safe_id("a/b"));
    }
}
