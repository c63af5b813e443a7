//! Rows of the SQLite store's tables to records and back.

use rusqlite::{params, Connection, Row};

use super::super::types::{
    CallSource, GameRow, GameState, LedgerEntry, RunRecord, SweepRecord, SweepStatus,
};
use crate::error::StoreError;

pub(super) fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        what: what.to_string(),
        message: e.to_string(),
    }
}

pub(super) fn parse<T: std::str::FromStr<Err = String>>(
    what: &str,
    s: &str,
) -> Result<T, StoreError> {
    s.parse().map_err(|e: String| corrupt(what, e))
}

pub(super) fn sweep_from(r: &Row) -> rusqlite::Result<(SweepRecord, String)> {
    let max_tokens: Option<i64> = r.get(8)?;
    Ok((
        SweepRecord {
            id: r.get(0)?,
            name: r.get(1)?,
            file: r.get(2)?,
            text: r.get(3)?,
            created_at: r.get(4)?,
            status: SweepStatus::Running,
            note: r.get(6)?,
            max_usd: r.get(7)?,
            max_tokens: max_tokens.map(|t| t as u64),
        },
        r.get(5)?,
    ))
}

pub(super) fn sweep_row(row: (SweepRecord, String)) -> Result<SweepRecord, StoreError> {
    let (mut s, status) = row;
    s.status = parse("sweep status", &status)?;
    Ok(s)
}

pub(super) const SWEEP_COLUMNS: &str =
    "id, name, file, text, created_at, status, note, max_usd, max_tokens";

pub(super) const GAME_COLUMNS: &str =
    "id, sweep, arm, arm_label, script, repeat, seed, spec, state, attempts, \
     crashes, reason, stage, updated_at";

pub(super) fn game_from(r: &Row) -> rusqlite::Result<(GameRow, String)> {
    let seed: i64 = r.get(6)?;
    Ok((
        GameRow {
            id: r.get(0)?,
            sweep: r.get(1)?,
            arm: r.get(2)?,
            arm_label: r.get(3)?,
            script: r.get(4)?,
            repeat: r.get(5)?,
            // Seeds are u64; SQLite integers are i64, so the bits are stored as they are.
            seed: seed as u64,
            spec: r.get(7)?,
            state: GameState::Pending,
            attempts: r.get(9)?,
            crashes: r.get(10)?,
            reason: r.get(11)?,
            stage: r.get(12)?,
            updated_at: r.get(13)?,
        },
        r.get(8)?,
    ))
}

pub(super) fn game_row(row: (GameRow, String)) -> Result<GameRow, StoreError> {
    let (mut g, state) = row;
    g.state = parse("game state", &state)?;
    Ok(g)
}

pub(super) fn run_from(r: &Row) -> rusqlite::Result<RunRecord> {
    Ok(RunRecord {
        id: r.get(0)?,
        sweep: r.get(1)?,
        started_at: r.get(2)?,
        ended_at: r.get(3)?,
        outcome: r.get(4)?,
        pid: r.get(5)?,
        host: r.get(6)?,
    })
}

pub(super) fn ledger_from(r: &Row) -> rusqlite::Result<(LedgerEntry, String)> {
    let tokens = |i| r.get::<_, i64>(i).map(|t| t as u64);
    Ok((
        LedgerEntry {
            run: r.get(0)?,
            sweep: r.get(1)?,
            game: r.get(2)?,
            arm: r.get(3)?,
            model: r.get(4)?,
            phase: r.get(5)?,
            framework: r.get(6)?,
            purpose: r.get(7)?,
            source: CallSource::Live,
            prompt_tokens: tokens(9)?,
            completion_tokens: tokens(10)?,
            cached_tokens: tokens(11)?,
            cost_usd: r.get(12)?,
            key: r.get(13)?,
            latency_ms: r.get::<_, Option<i64>>(14)?.map(|ms| ms.max(0) as u64),
            retries: r.get::<_, i64>(15)?.clamp(0, i64::from(u32::MAX)) as u32,
            id: None,
        },
        r.get(8)?,
    ))
}

pub(super) fn insert_ledger(c: &Connection, entries: &[LedgerEntry]) -> rusqlite::Result<()> {
    let mut st = c.prepare_cached(
        "INSERT INTO ledger (run, sweep, game, arm, model, phase, framework, purpose, source, \
         prompt_tokens, completion_tokens, cached_tokens, cost_usd, key, latency_ms, retries) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
    )?;
    for e in entries {
        st.execute(params![
            e.run,
            e.sweep,
            e.game,
            e.arm,
            e.model,
            e.phase,
            e.framework,
            e.purpose,
            e.source.as_str(),
            e.prompt_tokens as i64,
            e.completion_tokens as i64,
            e.cached_tokens as i64,
            e.cost_usd,
            e.key,
            e.latency_ms.map(|ms| ms.min(i64::MAX as u64) as i64),
            e.retries
        ])?;
    }
    Ok(())
}
