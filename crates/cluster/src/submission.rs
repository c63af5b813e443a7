//! A sweep as submitted to a cluster: the sweep file's text with the script files it names, read on
//! the client's machine. The coordinator keeps the submission in Redis, and every worker plans the
//! sweep from it, so no node needs the files on its disk and all of them plan the same games with the
//! same ids.

use std::path::{Path, PathBuf};

use prost::Message;

use super::proto::{ScriptEntry, ScriptFile, SubmitRequest};
use sleuth_sweep::plan::{self, ScriptFiles};
use sleuth_sweep::{LoadedSweep, Plan, SweepError};

/// The key (under the store's prefix) of a sweep's submission.
pub fn key(sweep: &str) -> String {
    format!("submission:{sweep}")
}

/// Reads the sweep file at `path` and the scripts it lists, as `sleuth submit` sends them. Only the
/// shape of the file is checked here; the coordinator plans it (and refuses it) as a local run would.
pub fn read(path: &Path) -> Result<SubmitRequest, SweepError> {
    let sweep = LoadedSweep::load(path)?;
    let mut scripts = Vec::new();
    for (i, entry) in sweep.file.scripts.iter().enumerate() {
        let mut files = Vec::new();
        for p in plan::entry_paths(&sweep, i)? {
            let content = std::fs::read_to_string(&p).map_err(|e| SweepError::Read {
                path: p.clone(),
                message: e.to_string(),
            })?;
            files.push(ScriptFile {
                path: p.to_string_lossy().into_owned(),
                content,
            });
        }
        scripts.push(ScriptEntry {
            entry: entry.clone(),
            files,
        });
    }
    Ok(SubmitRequest {
        sweep_toml: sweep.text,
        file_name: path.to_string_lossy().into_owned(),
        scripts,
    })
}

/// How many games a submission plans, counted without planning them: arms (explicit arms, or one,
/// times each axis's values) × distinct script files × repeats (or seeds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    pub arms: u128,
    pub scripts: u128,
    pub repeats: u128,
    pub games: u128,
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} games ({} arms × {} scripts × {} repeats)",
            self.games, self.arms, self.scripts, self.repeats
        )
    }
}

/// The size of the grid a submission plans, from the file's shape alone: a file asking for four
/// billion repeats is measured in microseconds and refused, where planning it would build every
/// game's spec in memory first.
pub fn size(req: &SubmitRequest) -> Result<Size, SweepError> {
    let sweep = LoadedSweep::parse(Path::new(&req.file_name), req.sweep_toml.clone())?;
    let explicit = sweep.file.arms.len().max(1) as u128;
    let arms = sweep.axes.iter().fold(explicit, |n, (_, values)| {
        n.saturating_mul(values.len() as u128)
    });
    let mut paths = std::collections::HashSet::new();
    for e in &req.scripts {
        for f in &e.files {
            paths.insert(f.path.as_str());
        }
    }
    let scripts = paths.len() as u128;
    let repeats = match &sweep.file.seeds {
        Some(s) => s.len() as u128,
        None => u128::from(sweep.file.repeats.unwrap_or(1)),
    };
    Ok(Size {
        arms,
        scripts,
        repeats,
        games: arms.saturating_mul(scripts).saturating_mul(repeats),
    })
}

/// Plans a submission exactly as `sleuth sweep run` plans the file on the client's machine.
pub fn plan(req: &SubmitRequest) -> Result<Plan, SweepError> {
    let path = PathBuf::from(&req.file_name);
    let sweep = LoadedSweep::parse(&path, req.sweep_toml.clone())?;
    let files = ScriptFiles::Given(
        req.scripts
            .iter()
            .map(|e| {
                (
                    e.entry.clone(),
                    e.files
                        .iter()
                        .map(|f| (PathBuf::from(&f.path), f.content.clone()))
                        .collect(),
                )
            })
            .collect(),
    );
    let plan = Plan::build_from(sweep, &files)?;
    // Batch evaluation keeps its journal on the node that runs the sweep; a cluster has none yet.
    if let Some(name) = plan
        .used_models()
        .into_iter()
        .find(|m| plan.models.get(m).is_some_and(|e| e.batch == Some(true)))
    {
        return Err(SweepError::Key {
            path,
            key: format!("models.{name}.batch"),
            message: "batch evaluation runs on one node (`sleuth sweep run`); a cluster does not take it yet (docs/sweeps.md, *Batch evaluation*)".into(),
        });
    }
    Ok(plan)
}

/// The submission as stored.
pub fn encode(req: &SubmitRequest) -> Vec<u8> {
    req.encode_to_vec()
}

/// A stored submission.
pub fn decode(bytes: &[u8]) -> Result<SubmitRequest, prost::DecodeError> {
    SubmitRequest::decode(bytes)
}
