//! One export: open the run's store read-only, find what the manifest has not seen, write it as new
//! parts batch by batch, and move the manifest's watermarks after each batch.
//!
//! The store is read with [`StoreReader`] (read-only, so exporting a running sweep neither blocks it
//! nor changes it); each game's `result.json` with the report's reader ([`sleuth_report::load`]),
//! which tolerates results of other sleuth versions; each transcript once, for the game's answers,
//! events and per-character tallies.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sleuth_game::game::Event;
use sleuth_report::load::{for_each_event, read_game};
use sleuth_store::bulk::AnnotationRow;
use sleuth_store::read::GameInfo;
use sleuth_store::{RunDir, StoreReader};

use crate::error::ExportError;
use crate::manifest::Manifest;
use crate::parts::{self, Formats};
use crate::table::Table;
use crate::{annotations, answers, calls, characters, events, games};

/// How to export (the command's flags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub formats: Formats,
    /// Write the events' and answers' texts (most of a transcript's bytes).
    pub with_text: bool,
    /// Games per part: how many games' rows are held in memory and committed at once.
    pub games_per_part: usize,
    /// Ledger rows per part of `calls`: held in memory twice while a part is built (as read and as
    /// a row), about 1.5 KB a row; 100,000 keeps that near the 100 games' parts.
    pub calls_per_part: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            formats: Formats::default(),
            with_text: false,
            games_per_part: 100,
            calls_per_part: 100_000,
        }
    }
}

/// What an export added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub out: PathBuf,
    /// Table → rows added by this export.
    pub added: BTreeMap<String, u64>,
    /// Table → rows in the whole export.
    pub total: BTreeMap<String, u64>,
    /// Part files written (every format counted).
    pub files: usize,
    /// Finished games left out this time, and why (they are tried again next time).
    pub skipped: Vec<(String, String)>,
    /// Files of a stopped export that were removed before this one started.
    pub removed: usize,
}

/// Exports `run` (a run directory) to `out`; see the crate's documentation.
pub fn export(run: &Path, out: &Path, opts: &Options) -> Result<Summary, ExportError> {
    let rundir = RunDir::new(run);
    let reader = open_run(&rundir)?;
    let identity = run_identity(&reader, run)?;
    let mut m = match Manifest::load(out)? {
        Some(m) => {
            m.check(out, &identity, opts.formats, opts.with_text)?;
            m
        }
        None => Manifest::new(&identity, run, opts.formats, opts.with_text),
    };
    std::fs::create_dir_all(out).map_err(|source| ExportError::Write {
        path: out.to_path_buf(),
        source,
    })?;
    let mut summary = Summary {
        out: out.to_path_buf(),
        removed: parts::remove_unlisted(out, &m.parts)?,
        ..Summary::default()
    };
    m.run_path = run.display().to_string();
    let store_err = |source| ExportError::Store {
        path: rundir.store(),
        source,
    };
    let done = reader.games_in_state("done").map_err(store_err)?;
    let new: Vec<GameInfo> = done
        .into_iter()
        .filter(|g| !m.games.contains(&g.id))
        .collect();
    for batch in new.chunks(opts.games_per_part.max(1)) {
        export_games(&rundir, batch, opts, out, &mut m, &mut summary)?;
    }
    loop {
        let rows = reader
            .ledger_rows(m.ledger_last_id, opts.calls_per_part.max(1))
            .map_err(store_err)?;
        let Some(last) = rows.last().map(|c| c.call.id) else {
            break;
        };
        let mut t = Table::new("calls", calls::COLUMNS);
        for c in &rows {
            t.push(calls::row(c))?;
        }
        let stem = m.take_stem();
        commit(out, &t, &stem, opts.formats, &mut m, &mut summary)?;
        m.ledger_last_id = last;
        m.save(out)?;
    }
    let rows = reader.annotation_rows().map_err(store_err)?;
    export_annotations(&rows, out, opts.formats, &mut m, &mut summary)?;
    if summary.files == 0 && m.updated_at.is_empty() {
        // A first export of a run with nothing finished yet: the manifest still marks the
        // directory as this run's export.
        m.save(out)?;
    }
    summary.total = m.rows.clone();
    Ok(summary)
}

/// The run's store, read-only; a directory without one (or with one that holds no sweep) is not a
/// run directory.
fn open_run(rundir: &RunDir) -> Result<StoreReader, ExportError> {
    let not_a_run = || ExportError::NotARun {
        path: rundir.root().to_path_buf(),
    };
    if !rundir.has_store() {
        return Err(not_a_run());
    }
    let reader = StoreReader::open(&rundir.store()).map_err(|source| ExportError::Store {
        path: rundir.store(),
        source,
    })?;
    match reader.holds_sweeps() {
        Ok(true) => Ok(reader),
        Ok(false) => Err(not_a_run()),
        Err(source) => Err(ExportError::Store {
            path: rundir.store(),
            source,
        }),
    }
}

/// The run's identity: its first sweep's id and creation time.
fn run_identity(reader: &StoreReader, run: &Path) -> Result<String, ExportError> {
    let sweeps = reader.sweeps().map_err(|source| ExportError::Store {
        path: run.to_path_buf(),
        source,
    })?;
    sweeps
        .first()
        .map(|s| format!("sweep {} created {}", s.id, s.created_at))
        .ok_or_else(|| ExportError::NotARun {
            path: run.to_path_buf(),
        })
}

/// Writes `t` as part `stem` unless it is empty, and records it.
fn commit(
    out: &Path,
    t: &Table,
    stem: &str,
    formats: Formats,
    m: &mut Manifest,
    summary: &mut Summary,
) -> Result<(), ExportError> {
    if t.is_empty() {
        return Ok(());
    }
    summary.files += parts::write_part(out, t, stem, formats)?.len();
    m.add_part(t.name, stem, t.len() as u64);
    *summary.added.entry(t.name.to_string()).or_default() += t.len() as u64;
    Ok(())
}

/// One batch of finished games: their rows in every game table, one part each, then the manifest.
fn export_games(
    rundir: &RunDir,
    batch: &[GameInfo],
    opts: &Options,
    out: &Path,
    m: &mut Manifest,
    summary: &mut Summary,
) -> Result<(), ExportError> {
    let mut g = Table::new("games", games::COLUMNS);
    let mut c = Table::new("characters", characters::COLUMNS);
    let mut a = Table::new("answers", answers::COLUMNS);
    let mut e = Table::new("events", events::COLUMNS);
    let mut exported = Vec::new();
    for info in batch {
        let files = rundir.game(&info.id);
        let rec = match read_game(&files.result) {
            Ok(rec) => rec,
            Err(why) => {
                summary.skipped.push((info.id.clone(), chain(&why)));
                continue;
            }
        };
        let mut evs: Vec<Event> = Vec::new();
        if let Some(t) = &rec.transcript {
            if let Err(why) = for_each_event(t, |ev| evs.push(ev)) {
                summary.skipped.push((info.id.clone(), chain(&why)));
                continue;
            }
        }
        g.push(games::row(info, &rec))?;
        for row in characters::rows(&info.id, &rec, &characters::tallies(&evs)) {
            c.push(row)?;
        }
        for row in answers::rows(&info.id, &evs, opts.with_text) {
            a.push(row)?;
        }
        for row in events::rows(&info.id, &evs, opts.with_text) {
            e.push(row)?;
        }
        exported.push(info.id.clone());
    }
    if exported.is_empty() {
        return Ok(());
    }
    let stem = m.take_stem();
    for t in [&g, &c, &a, &e] {
        commit(out, t, &stem, opts.formats, m, summary)?;
    }
    m.games.extend(exported);
    m.save(out)
}

/// The annotations, rewritten whole as one new part when they changed since the last export; the
/// old part is deleted once the manifest no longer lists it.
fn export_annotations(
    rows: &[AnnotationRow],
    out: &Path,
    formats: Formats,
    m: &mut Manifest,
    summary: &mut Summary,
) -> Result<(), ExportError> {
    let print = annotations::fingerprint(rows);
    if rows.is_empty() || m.annotations.as_deref() == Some(print.as_str()) {
        return Ok(());
    }
    let mut t = Table::new("annotations", annotations::COLUMNS);
    for r in rows {
        t.push(annotations::row(r))?;
    }
    let old: Vec<PathBuf> = formats
        .extensions()
        .iter()
        .flat_map(|ext| m.files(out, "annotations", ext))
        .collect();
    m.parts.remove("annotations");
    m.rows.remove("annotations");
    let stem = m.take_stem();
    commit(out, &t, &stem, formats, m, summary)?;
    m.annotations = Some(print);
    m.save(out)?;
    for path in old {
        parts::remove(&path)?;
    }
    Ok(())
}

/// An error and its causes on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}
