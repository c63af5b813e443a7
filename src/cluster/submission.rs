//! A sweep as submitted to a cluster: the sweep file's text with the script files it names, read on
//! the client's machine. The coordinator keeps the submission in Redis, and every worker plans the
//! sweep from it, so no node needs the files on its disk and all of them plan the same games with the
//! same ids.

use std::path::{Path, PathBuf};

use prost::Message;

use super::proto::{ScriptEntry, ScriptFile, SubmitRequest};
use crate::sweep::plan::{self, ScriptFiles};
use crate::sweep::{LoadedSweep, Plan, SweepError};

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
    Plan::build_from(sweep, &files)
}

/// The submission as stored.
pub fn encode(req: &SubmitRequest) -> Vec<u8> {
    req.encode_to_vec()
}

/// A stored submission.
pub fn decode(bytes: &[u8]) -> Result<SubmitRequest, prost::DecodeError> {
    SubmitRequest::decode(bytes)
}
