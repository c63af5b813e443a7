//! The handlers: each reads what its page shows — a page of rows, a page of a transcript, one call —
//! and renders a template. Nothing a handler reads outlives its request.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderValue, Uri};
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use minijinja::context;
use serde::Serialize;

use super::chart;
use super::db::{self, GameInfo, SweepInfo};
use super::state::{fragment, AppState, PageError, FOLLOW};
use super::tables::{self, ReportView};
use super::timeline::{self, Filter, ANSWER_KINDS};
use super::totals::{Live, Sums};
use sleuth_report::load::{RESULT_FILE, TRANSCRIPT_FILE};

/// Rows of a list per page.
const PAGE_ROWS: u32 = 50;
/// Events of a transcript per page.
const PAGE_EVENTS: usize = 100;
/// Answers of the evaluation per page.
const PAGE_ANSWERS: usize = 200;
/// Bytes at the start of a transcript searched for the characters (each is dealt a private script
/// there).
const CHARACTER_SCAN: u64 = 512 * 1024;

pub(super) type Query = HashMap<String, String>;

pub(super) fn query(uri: &Uri) -> Query {
    url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
        .into_owned()
        .collect()
}

pub(super) fn param<'a>(q: &'a Query, key: &str) -> Option<&'a str> {
    q.get(key).map(String::as_str).filter(|v| !v.is_empty())
}

pub(super) fn required<'a>(q: &'a Query, key: &str) -> Result<&'a str, PageError> {
    param(q, key).ok_or_else(|| PageError::BadRequest(format!("`{key}` is missing")))
}

pub(super) fn number(q: &Query, key: &str) -> Result<u64, PageError> {
    match param(q, key) {
        None => Ok(0),
        Some(v) => v
            .parse()
            .map_err(|_| PageError::BadRequest(format!("`{key}` must be a whole number"))),
    }
}

pub(super) fn enc(s: &str) -> String {
    super::templates::urlencode(s.to_string())
}

fn html(r: Result<String, PageError>) -> Result<Html<String>, PageError> {
    r.map(Html)
}

/// A sweep as the runs and sweep pages show it.
#[derive(Debug, Clone, Serialize)]
struct SweepRow {
    #[serde(flatten)]
    info: SweepInfo,
    state: String,
    games: u64,
    done: u64,
    failed: u64,
    running: u64,
    pending: u64,
    /// `None` until the ledger has been summed once.
    sums: Option<Sums>,
    tokens: u64,
}

/// What a sweep's state reads as: a `running` sweep whose process is gone says so, as `sweep status`
/// does.
pub fn state_label(status: &str, running_now: bool) -> String {
    match (status, running_now) {
        (_, true) => "running now".into(),
        ("running", false) => "not running (its last run ended without a word: killed?)".into(),
        (s, false) => s.into(),
    }
}

fn sweep_row(info: SweepInfo, states: &BTreeMap<String, u64>, live: &Live, lock: bool) -> SweepRow {
    let get = |s: &str| states.get(s).copied().unwrap_or(0);
    let l = live.sweep(&info.id);
    let running_now = lock && info.status == "running";
    SweepRow {
        state: state_label(&info.status, running_now),
        games: states.values().sum(),
        done: get("done"),
        failed: get("failed"),
        running: get("running") + get("evaluating_batch"),
        pending: get("pending") + get("interrupted"),
        sums: l.map(|l| l.sums),
        tokens: l.map(|l| l.tokens).unwrap_or(0),
        info,
    }
}

/// `GET /`.
pub async fn runs(State(st): State<AppState>, uri: Uri) -> Result<Response, PageError> {
    let Some(db) = st.source.db.clone() else {
        return folder(&st, &query(&uri)).await;
    };
    let (sweeps, counts) = db
        .read(|c| Ok((db::sweeps(c)?, db::state_counts(c)?)))
        .await?;
    let live = st.live();
    let lock = super::totals::lock_held(&st.source);
    let empty = BTreeMap::new();
    let rows: Vec<SweepRow> = sweeps
        .into_iter()
        .map(|s| {
            let states = counts.get(&s.id).unwrap_or(&empty);
            sweep_row(s, states, &live, lock)
        })
        .collect();
    html(st.render(
        "runs.html",
        context! { sweeps => rows, updated_at => live.updated_at.clone() },
    ))
    .map(IntoResponse::into_response)
}

/// A folder game as the list shows it.
#[derive(Debug, Serialize)]
struct FolderGame {
    id: String,
    result: Option<serde_json::Value>,
}

/// The largest `result.json` the viewer reads: a game's result is tens of kilobytes; a larger file is
/// not a result sleuth wrote, and is not read whole into memory.
const MAX_RESULT_BYTES: u64 = 16 * 1024 * 1024;

fn read_result(dir: &Path) -> Option<serde_json::Value> {
    use std::io::Read;
    let f = std::fs::File::open(dir.join(RESULT_FILE)).ok()?;
    if f.metadata().ok()?.len() > MAX_RESULT_BYTES {
        tracing::warn!(dir = %dir.display(), "result.json larger than {MAX_RESULT_BYTES} bytes: not read");
        return None;
    }
    let mut text = Vec::new();
    f.take(MAX_RESULT_BYTES).read_to_end(&mut text).ok()?;
    serde_json::from_slice(&text).ok()
}

/// A page of a folder's games, from `offset`.
async fn folder_page(st: &AppState, offset: u64) -> Result<(Vec<FolderGame>, usize), PageError> {
    let source = st.source.clone();
    tokio::task::spawn_blocking(move || {
        let all = source.folder_games();
        let total = all.len();
        let page = all
            .into_iter()
            .skip(offset as usize)
            .take(PAGE_ROWS as usize)
            .map(|id| FolderGame {
                result: source.game_dir(&id).and_then(|d| read_result(&d)),
                id,
            })
            .collect();
        (page, total)
    })
    .await
    .map_err(|e| PageError::Internal(format!("listing games: {e}")))
}

fn folder_next(offset: u64, shown: usize, total: usize) -> Option<String> {
    let next = offset + shown as u64;
    (shown > 0 && (next as usize) < total).then(|| format!("/folder/games?offset={next}"))
}

/// The runs page of a folder of games: its games and the report.
async fn folder(st: &AppState, _q: &Query) -> Result<Response, PageError> {
    let (games, total) = folder_page(st, 0).await?;
    let next = folder_next(0, games.len(), total);
    html(st.render(
        "runs.html",
        context! { sweeps => None::<Vec<SweepRow>>, games, total, next },
    ))
    .map(IntoResponse::into_response)
}

/// `GET /folder/games?offset=`.
pub async fn folder_games(State(st): State<AppState>, uri: Uri) -> Result<Response, PageError> {
    let q = query(&uri);
    let offset = number(&q, "offset")?;
    let (games, total) = folder_page(&st, offset).await?;
    let next = folder_next(offset, games.len(), total);
    Ok(fragment(
        st.render("folder_rows.html", context! { games })?,
        next,
    ))
}

/// `GET /api/runs`.
pub async fn api_runs(State(st): State<AppState>) -> Json<Live> {
    Json((*st.live()).clone())
}

/// One arm of the grid.
#[derive(Debug, Serialize)]
struct ArmRow {
    id: String,
    label: String,
    /// Per script of the sweep, in order: its games, or `None` when the arm does not play it.
    cells: Vec<Option<Cell>>,
    gameplay_usd: f64,
    evaluation_usd: f64,
    tokens: u64,
    live_calls: u64,
    cache_hits: u64,
}

#[derive(Debug, Serialize)]
struct Cell {
    done: u64,
    failed: u64,
    total: u64,
}

fn arms(
    grid: &[db::GridCell],
    live: Option<&super::totals::SweepLive>,
) -> (Vec<String>, Vec<ArmRow>) {
    let mut scripts: Vec<String> = Vec::new();
    let mut order: Vec<(String, String)> = Vec::new();
    for c in grid {
        if !scripts.contains(&c.script) {
            scripts.push(c.script.clone());
        }
        if !order.iter().any(|(id, _)| *id == c.arm) {
            order.push((c.arm.clone(), c.arm_label.clone()));
        }
    }
    let rows = order
        .into_iter()
        .map(|(id, label)| {
            let cells = scripts
                .iter()
                .map(|s| {
                    grid.iter()
                        .find(|c| c.arm == id && c.script == *s)
                        .map(|c| Cell {
                            done: c.states.get("done").copied().unwrap_or(0),
                            failed: c.states.get("failed").copied().unwrap_or(0),
                            total: c.total,
                        })
                })
                .collect();
            let phases = live.and_then(|l| l.by_arm.get(&id));
            let phase = |p: &str| phases.and_then(|ph| ph.get(p)).copied().unwrap_or_default();
            let all: Vec<Sums> = phases
                .map(|ph| ph.values().copied().collect())
                .unwrap_or_default();
            ArmRow {
                gameplay_usd: phase("gameplay").usd,
                evaluation_usd: phase("evaluation").usd,
                tokens: all.iter().map(Sums::tokens).sum(),
                live_calls: all.iter().map(|s| s.live_calls).sum(),
                cache_hits: all.iter().map(|s| s.cache_hits).sum(),
                id,
                label,
                cells,
            }
        })
        .collect();
    (scripts, rows)
}

fn games_next(sweep: &str, state: Option<&str>, offset: u64, shown: usize) -> Option<String> {
    (shown == PAGE_ROWS as usize).then(|| {
        format!(
            "/sweep/games?id={}&state={}&offset={}",
            enc(sweep),
            enc(state.unwrap_or("all")),
            offset + shown as u64
        )
    })
}

fn state_filter(q: &Query) -> Option<String> {
    param(q, "state")
        .filter(|s| *s != "all")
        .map(str::to_string)
}

/// What the call pages say of a folder of games.
const NO_LEDGER: &str = "a folder of games has no ledger";
/// What they say over a cluster's mirror.
const CLUSTER_CALLS: &str = "model calls are not available over a coordinator: the cluster keeps \
                             its ledger per run, not by game, and keeps no requests";

/// The run directory's store, which the sweep and call pages need; a folder of games has none, and
/// `missing` says what the page cannot show without it.
fn store(st: &AppState, missing: &str) -> Result<Arc<super::db::Db>, PageError> {
    st.source
        .db
        .clone()
        .ok_or_else(|| PageError::NotFound(missing.into()))
}

/// The store whose ledger the call pages read: a folder of games has none, and a cluster's mirror
/// holds no ledger rows.
fn ledger(st: &AppState) -> Result<Arc<super::db::Db>, PageError> {
    if st.source.remote.is_some() {
        return Err(PageError::NotFound(CLUSTER_CALLS.into()));
    }
    store(st, NO_LEDGER)
}

/// `GET /sweep?id=&state=`.
pub async fn sweep(State(st): State<AppState>, uri: Uri) -> Result<Html<String>, PageError> {
    let q = query(&uri);
    let db = store(&st, "this run directory has no sweep store")?;
    let id = required(&q, "id")?.to_string();
    let state = state_filter(&q);
    let (id2, state2) = (id.clone(), state.clone());
    let (info, counts, grid, failed, games) = db
        .read(move |c| {
            Ok((
                db::sweep(c, &id2)?,
                db::state_counts(c)?,
                db::grid(c, &id2)?,
                db::games(c, &id2, Some("failed"), PAGE_ROWS, 0)?,
                db::games(c, &id2, state2.as_deref(), PAGE_ROWS, 0)?,
            ))
        })
        .await?;
    let info = info.ok_or_else(|| PageError::NotFound(format!("no sweep {id}")))?;
    let live = st.live();
    let lock = super::totals::lock_held(&st.source);
    let empty = BTreeMap::new();
    let row = sweep_row(info, counts.get(&id).unwrap_or(&empty), &live, lock);
    let (scripts, arms) = arms(&grid, live.sweep(&id));
    let failed_next = games_next(&id, Some("failed"), 0, failed.len());
    let games_next = games_next(&id, state.as_deref(), 0, games.len());
    html(st.render(
        "sweep.html",
        context! {
            s => row, scripts, arms, failed, failed_next, games, games_next,
            state => state.unwrap_or_else(|| "all".into()),
        },
    ))
}

/// `GET /sweep/games?id=&state=&offset=`.
pub async fn sweep_games(State(st): State<AppState>, uri: Uri) -> Result<Response, PageError> {
    let q = query(&uri);
    let db = store(&st, "this run directory has no sweep store")?;
    let id = required(&q, "id")?.to_string();
    let state = state_filter(&q);
    let offset = number(&q, "offset")?;
    let (id2, state2) = (id.clone(), state.clone());
    let games: Vec<GameInfo> = db
        .read(move |c| db::games(c, &id2, state2.as_deref(), PAGE_ROWS, offset))
        .await?;
    let next = games_next(&id, state.as_deref(), offset, games.len());
    Ok(fragment(
        st.render("game_rows.html", context! { games })?,
        next,
    ))
}

/// `GET /report[?sweep=]`: the report's tables, built once per number of finished games. The pages
/// name their sweep, but the report covers the run directory.
pub async fn report(State(st): State<AppState>) -> Result<Html<String>, PageError> {
    match report_view(&st).await? {
        Ok(r) => html(st.render(
            "report.html",
            context! { summary => r.summary.clone(), notes => r.notes.clone(), tables => r.tables.clone() },
        )),
        Err(e) => html(st.render(
            "report.html",
            context! { error => format!("No report yet: {e}") },
        )),
    }
}

/// Games finished in the run directory: what a kept report was built on.
async fn finished_games(st: &AppState) -> Result<u64, PageError> {
    match &st.source.db {
        Some(_) => Ok(st.live().sweeps.iter().map(|s| s.done + s.failed).sum()),
        None => {
            let s = st.source.clone();
            tokio::task::spawn_blocking(move || s.folder_games().len() as u64)
                .await
                .map_err(|e| PageError::Internal(e.to_string()))
        }
    }
}

/// The report over the run directory: the one kept if no game has finished since it was built,
/// else built now (the inner `Err` says why there is none yet).
async fn report_view(st: &AppState) -> Result<Result<Arc<ReportView>, String>, PageError> {
    let finished = finished_games(st).await?;
    let cached = |st: &AppState| {
        st.reports
            .lock()
            .ok()
            .and_then(|m| m.get(REPORT_KEY).cloned())
            .filter(|(n, _)| *n == finished && finished > 0)
            .map(|(_, r)| r)
    };
    if let Some(r) = cached(st) {
        return Ok(Ok(r));
    }
    // One build at a time: a report of thousands of games takes seconds of CPU, and requests that
    // arrive meanwhile wait for it and then find it built.
    let _building = st.building.lock().await;
    if let Some(r) = cached(st) {
        return Ok(Ok(r));
    }
    let root = st.source.root.clone();
    let r = tokio::task::spawn_blocking(move || tables::build(&root))
        .await
        .map_err(|e| PageError::Internal(e.to_string()))?;
    Ok(r.map(|r| {
        let r = Arc::new(r);
        if let Ok(mut m) = st.reports.lock() {
            m.insert(REPORT_KEY.to_string(), (finished, r.clone()));
        }
        r
    }))
}

/// The key the report is kept under: it covers the whole run directory.
const REPORT_KEY: &str = "";

/// Builds the report once when the viewer starts (after the first count of the store's games), in
/// the background: the report of a large sweep takes seconds (10 s for 10,000 games in a dev build,
/// `docs/performance.md`), and by the time someone opens a sweep it is usually ready. Later reports are
/// built when asked for, so a running sweep is not re-reported every time a game ends.
pub async fn warm_report(st: AppState) {
    if st.source.db.is_some() {
        while st.live().updated_at.is_none() {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }
    match report_view(&st).await {
        Ok(Ok(_)) => tracing::debug!("the report is ready"),
        Ok(Err(why)) => tracing::debug!(%why, "no report yet"),
        Err(e) => tracing::debug!(error = ?e, "the report could not be built"),
    }
}

/// Whether a game is being played now: its transcript may still grow.
fn running(g: &GameFiles) -> bool {
    g.row.as_ref().is_some_and(|r| r.state == "running")
}

/// A game: its row in the store (if any), its result, where its transcript is.
pub(super) struct GameFiles {
    pub(super) row: Option<GameInfo>,
    pub(super) result: Option<serde_json::Value>,
    pub(super) transcript: std::path::PathBuf,
}

/// Finds the game named `id` (in the store, or below the folder) and reads its result: what its page
/// and the two-games page show at the top.
pub(super) async fn game_files(st: &AppState, id: &str) -> Result<GameFiles, PageError> {
    let dir = st
        .source
        .game_dir(id)
        .ok_or_else(|| PageError::BadRequest(format!("`{id}` is not a game's name")))?;
    let (row, stored) = match &st.source.db {
        Some(db) => {
            let id2 = id.to_string();
            let (row, result) = db
                .read(move |c| Ok((db::game(c, &id2)?, db::result(c, &id2)?)))
                .await?;
            let row = row.ok_or_else(|| PageError::NotFound(format!("no game {id}")))?;
            (
                Some(row),
                result.and_then(|r| serde_json::from_str(&r).ok()),
            )
        }
        None => {
            if !dir.is_dir() {
                return Err(PageError::NotFound(format!("no game {id}")));
            }
            (None, None)
        }
    };
    // Over a cluster: the transcript is fetched when the game is opened and the mirror lacks it (a
    // game that is not done has none yet on the cluster, and is asked for again next time).
    if let Some(remote) = &st.source.remote {
        if !dir.join(TRANSCRIPT_FILE).is_file() {
            remote.fetch_transcript(id, &dir).await.map_err(|e| {
                PageError::Internal(format!("fetching game {id}'s transcript: {e}"))
            })?;
        }
    }
    let d2 = dir.clone();
    let result = match stored {
        Some(r) => Some(r),
        None => tokio::task::spawn_blocking(move || read_result(&d2))
            .await
            .map_err(|e| PageError::Internal(e.to_string()))?,
    };
    Ok(GameFiles {
        row,
        result,
        transcript: dir.join(TRANSCRIPT_FILE),
    })
}

fn events_next(id: &str, filter: &Filter, answers: bool, page: &timeline::Page) -> Option<String> {
    let next = page.next?;
    let stage = page.events.last().map(|e| e.stage.as_str()).unwrap_or("");
    Some(events_url(id, filter, answers, next, stage))
}

/// Where a running game's timeline goes on once it has caught up with the file: the end of what was
/// read, polled by the script until the game stops running. `None` for a game that is not running
/// (or a page that did not reach the end).
fn events_follow(
    id: &str,
    filter: &Filter,
    page: &timeline::Page,
    running: bool,
    prev_stage: &str,
) -> Option<String> {
    if !running || page.next.is_some() {
        return None;
    }
    let stage = page
        .events
        .last()
        .map(|e| e.stage.as_str())
        .unwrap_or(prev_stage);
    Some(events_url(id, filter, false, page.end, stage))
}

fn events_url(id: &str, filter: &Filter, answers: bool, at: u64, stage: &str) -> String {
    let mut url = format!(
        "/game/events?id={}&after={at}&stage={}",
        enc(id),
        enc(stage)
    );
    if let Some(a) = &filter.as_character {
        url.push_str(&format!("&as={}", enc(a)));
    }
    if answers {
        url.push_str("&view=answers");
    }
    url
}

async fn read_events(
    path: std::path::PathBuf,
    from: u64,
    limit: usize,
    filter: Filter,
) -> Result<timeline::Page, PageError> {
    tokio::task::spawn_blocking(move || timeline::read_page(&path, from, limit, &filter))
        .await
        .map_err(|e| PageError::Internal(e.to_string()))?
        .map_err(|e| PageError::Internal(format!("reading the transcript: {e}")))
}

fn calls_next(id: &str, offset: u64, shown: usize) -> Option<String> {
    (shown == PAGE_ROWS as usize).then(|| {
        format!(
            "/game/calls?id={}&offset={}",
            enc(id),
            offset + shown as u64
        )
    })
}

/// A game's characters, for the "as seen by" filter: the voters of its result, then everyone an
/// event was private to near the start of its transcript.
pub(super) async fn characters(g: &GameFiles) -> Result<Vec<String>, PageError> {
    let mut characters: Vec<String> = g
        .result
        .as_ref()
        .and_then(|r| r.get("votes"))
        .and_then(|v| v.as_object())
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    if g.transcript.is_file() {
        let path = g.transcript.clone();
        let from_file =
            tokio::task::spawn_blocking(move || timeline::characters(&path, CHARACTER_SCAN))
                .await
                .map_err(|e| PageError::Internal(e.to_string()))?;
        for c in from_file {
            if !characters.contains(&c) {
                characters.push(c);
            }
        }
    }
    Ok(characters)
}

/// `GET /game?id=&as=`.
pub async fn game(State(st): State<AppState>, uri: Uri) -> Result<Html<String>, PageError> {
    let q = query(&uri);
    let id = required(&q, "id")?.to_string();
    let g = game_files(&st, &id).await?;
    let as_character = param(&q, "as").map(str::to_string);
    let has_transcript = g.transcript.is_file();
    let characters = characters(&g).await?;
    let filter = Filter {
        as_character: as_character.clone(),
        kinds: None,
    };
    let (page, next, follow) = if has_transcript {
        let page = read_events(g.transcript.clone(), 0, PAGE_EVENTS, filter.clone()).await?;
        let next = events_next(&id, &filter, false, &page);
        let follow = events_follow(&id, &filter, &page, running(&g), "");
        (Some(page), next.or(follow.clone()), follow)
    } else {
        (None, None, None)
    };
    let charts = charts(g.result.as_ref(), &g.transcript).await?;
    // The same script and repeat in the sweep's other arms: the games worth comparing this one with.
    let counterparts = match &st.source.db {
        Some(db) => {
            let id2 = id.clone();
            db.read(move |c| db::counterparts(c, &id2)).await?
        }
        None => Vec::new(),
    };
    // The calls arrive after the page (`/game/calls`), so the page never waits for the ledger; a
    // cluster's ledger is not the viewer's to read (docs/viewer.md, *Over a cluster*).
    let has_ledger = st.source.db.is_some() && st.source.remote.is_none();
    let over_cluster = st.source.remote.is_some();
    // A finished game's spec can be played again with a person at a seat (`seat/take.rs`).
    let seatable = !over_cluster
        && g.result.as_ref().is_some_and(|r| r.get("spec").is_some())
        && st
            .source
            .game_dir(&id)
            .is_some_and(|d| d.join("result.json").is_file());
    let seat_proof = crate::annotate::form::proof();
    let (events, unreadable) = page.map(|p| (p.events, p.unreadable)).unwrap_or_default();
    html(st.render(
        "game.html",
        context! {
            game_id => id, row => g.row, r => g.result, has_transcript, characters, as_character,
            events, unreadable, next, following => follow.is_some(), more => follow.is_some(),
            prev_stage => "", has_ledger, over_cluster, charts, counterparts, seatable,
            seat_proof,
        },
    ))
}

/// A game's suspicion and trust charts as (title, SVG): MIRAGE's from its result, PLAYER*'s from the
/// pruner's events in its transcript (read only for games where a PLAYER* agent played).
async fn charts(
    result: Option<&serde_json::Value>,
    transcript: &Path,
) -> Result<Vec<(String, String)>, PageError> {
    let Some(r) = result else {
        return Ok(Vec::new());
    };
    let mut charts = chart::mirage(r);
    let player = ["framework", "murderer_framework"]
        .iter()
        .any(|k| r.get(*k).and_then(|v| v.as_str()) == Some("player"));
    if player && transcript.is_file() {
        let path = transcript.to_path_buf();
        charts.extend(
            tokio::task::spawn_blocking(move || chart::player(&path))
                .await
                .map_err(|e| PageError::Internal(e.to_string()))?,
        );
    }
    Ok(charts
        .iter()
        .map(|c| (c.title.clone(), chart::svg(c)))
        .collect())
}

/// `GET /game/events?id=&after=&as=&stage=&view=answers`.
pub async fn game_events(State(st): State<AppState>, uri: Uri) -> Result<Response, PageError> {
    let q = query(&uri);
    let id = required(&q, "id")?.to_string();
    let after = number(&q, "after")?;
    let answers = param(&q, "view") == Some("answers");
    let g = game_files(&st, &id).await?;
    if !g.transcript.is_file() {
        return Err(PageError::NotFound(format!("game {id} has no transcript")));
    }
    let filter = Filter {
        as_character: param(&q, "as").map(str::to_string),
        kinds: answers.then(|| ANSWER_KINDS.iter().map(|k| k.to_string()).collect()),
    };
    let limit = if answers { PAGE_ANSWERS } else { PAGE_EVENTS };
    let running = running(&g);
    let page = read_events(g.transcript, after, limit, filter.clone()).await?;
    let next = events_next(&id, &filter, answers, &page);
    let prev_stage = param(&q, "stage").unwrap_or("");
    let follow = (!answers)
        .then(|| events_follow(&id, &filter, &page, running, prev_stage))
        .flatten();
    let empty = if answers && after == 0 {
        "The evaluation recorded no answers in this transcript."
    } else {
        "No more events."
    };
    let html = st.render(
        "events.html",
        context! {
            events => page.events, unreadable => page.unreadable,
            more => next.is_some() || follow.is_some(), prev_stage, empty,
        },
    )?;
    let mut resp = fragment(html, next);
    if let Some(f) = follow {
        if let Ok(v) = HeaderValue::from_str(&f) {
            resp.headers_mut().insert(FOLLOW, v);
        }
    }
    Ok(resp)
}

/// `GET /game/calls?id=&offset=`.
pub async fn game_calls(State(st): State<AppState>, uri: Uri) -> Result<Response, PageError> {
    let q = query(&uri);
    let id = required(&q, "id")?.to_string();
    let offset = number(&q, "offset")?;
    let db = ledger(&st)?;
    let id2 = id.clone();
    let calls = db
        .read(move |c| db::calls(c, &id2, PAGE_ROWS, offset))
        .await?;
    let next = calls_next(&id, offset, calls.len());
    Ok(fragment(
        st.render("calls.html", context! { calls, game_id => id, offset })?,
        next,
    ))
}

/// `GET /game/call?id=&call=`.
pub async fn game_call(State(st): State<AppState>, uri: Uri) -> Result<Html<String>, PageError> {
    let q = query(&uri);
    let id = required(&q, "id")?.to_string();
    let call = i64::try_from(number(&q, "call")?)
        .map_err(|_| PageError::BadRequest("`call` is too large".into()))?;
    let db = ledger(&st)?;
    let id2 = id.clone();
    let d = db
        .read(move |c| db::call(c, &id2, call))
        .await?
        .ok_or_else(|| PageError::NotFound(format!("no call {call} in game {id}")))?;
    let reply_usage = d.reply_usage.as_ref().map(|u| u.to_string());
    html(st.render(
        "call.html",
        context! { d => context! {
            call => d.call, reply => d.reply, reply_usage, cached_at => d.cached_at, kind => d.kind,
            latency_ms => d.latency_ms, request => d.request,
        } },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_larger_than_a_result_is_not_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join(RESULT_FILE), "{\"winner\": null}").expect("write");
        assert!(read_result(dir.path()).is_some());
        let big = format!("{{\"pad\": \"{}\"}}", "x".repeat(MAX_RESULT_BYTES as usize));
        std::fs::write(dir.path().join(RESULT_FILE), big).expect("write");
        assert!(read_result(dir.path()).is_none());
    }
}
