//! Finding and reading finished games: every `result.json` under a path, with its transcript beside it.
//!
//! A run directory may hold thousands of games, some of them broken (a game killed while its result
//! was being written, a file from an older sleuth). One bad file must not sink the report of the
//! others, so inside a directory a file that cannot be read or parsed is *skipped* and listed; only a
//! path given directly as a `result.json`, or a directory with no usable result at all, is an error.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use super::ReportError;
use sleuth_game::game::GameResult;

/// The file `sleuth play --out DIR` writes its result to, and the event log beside it (named by the
/// run directory's layout, `sleuth_store::rundir`).
pub use sleuth_store::rundir::{RESULT_FILE, TRANSCRIPT_FILE};

/// One finished game.
#[derive(Debug, Clone, PartialEq)]
pub struct GameRecord {
    /// The `result.json` it was read from.
    pub path: PathBuf,
    pub result: GameResult,
    /// `transcript.jsonl` beside the result, when there is one.
    pub transcript: Option<PathBuf>,
    /// The script's content digest, `spec.script.digest`, read from the raw JSON: the one field of
    /// the spec the report needs, kept even when the spec as a whole no longer parses (`GameSpec`
    /// rejects unknown fields so that a replay plays exactly what was recorded; a result from an
    /// older or newer sleuth must still be reported). `None` for results without a spec.
    pub script_digest: Option<String>,
    /// The script's path as the game was given it, `spec.script.path`, read as loosely as the digest:
    /// what a result does not carry about its script (PLAYER* Table A5's #Tokens, the length of each
    /// character's script) is read back from there ([`super::scripts`]). `None` for results without a
    /// spec, and for games played from a script that never was a file.
    pub script_path: Option<String>,
}

impl GameRecord {
    /// A record of `result` as read from `path`, its script digest taken from its parsed spec.
    pub fn new(path: PathBuf, result: GameResult, transcript: Option<PathBuf>) -> GameRecord {
        let script_digest = result.spec.as_ref().map(|s| s.script.digest.clone());
        let script_path = result.spec.as_ref().and_then(|s| s.script.path.clone());
        GameRecord {
            path,
            result,
            transcript,
            script_digest,
            script_path,
        }
    }
}

/// A `result.json` that was found but could not be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// Everything found under a path.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loaded {
    /// Games in path order, so a report is the same however the file system lists directories.
    pub games: Vec<GameRecord>,
    pub skipped: Vec<Skipped>,
}

/// Reads one game, a run directory (searched at any depth) or a single `result.json`.
///
/// Errors: `path` does not exist; `path` is a file that is not a readable result; a directory holds no
/// `result.json` at all, or none that parses (the first problem is named).
pub fn load(path: &Path) -> Result<Loaded, ReportError> {
    let meta = fs::metadata(path).map_err(|source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    if meta.is_file() {
        let game = read_game(path)?;
        return Ok(Loaded {
            games: vec![game],
            skipped: Vec::new(),
        });
    }
    let mut files = Vec::new();
    find_results(path, &mut files)?;
    files.sort();
    if files.is_empty() {
        return Err(ReportError::NoResults {
            path: path.to_path_buf(),
        });
    }
    let mut loaded = Loaded::default();
    for file in files {
        match read_game(&file) {
            Ok(game) => loaded.games.push(game),
            Err(e) => loaded.skipped.push(Skipped {
                reason: super::chain(&e),
                path: file,
            }),
        }
    }
    if loaded.games.is_empty() {
        // Every candidate failed: say why the first did, which is usually why they all did.
        let first = &loaded.skipped[0];
        return Err(ReportError::NoUsableResults {
            path: path.to_path_buf(),
            count: loaded.skipped.len(),
            first: format!("{}: {}", first.path.display(), first.reason),
        });
    }
    Ok(loaded)
}

/// Parses one `result.json`.
pub fn read_game(path: &Path) -> Result<GameRecord, ReportError> {
    let text = fs::read_to_string(path).map_err(|source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let parse_error = |source| ReportError::Parse {
        path: path.to_path_buf(),
        source,
    };
    let mut raw: serde_json::Value = serde_json::from_str(&text).map_err(parse_error)?;
    // The spec is read loosely: only its script's digest and path matter here, and a spec written by
    // another version of sleuth (a field added or renamed) must not cost the report the whole game.
    let spec = raw.as_object_mut().and_then(|o| o.remove("spec"));
    let script_field = |name: &str| {
        spec.as_ref()
            .and_then(|s| s.pointer(&format!("/script/{name}")))
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
    };
    let (script_digest, script_path) = (script_field("digest"), script_field("path"));
    let mut result: GameResult = serde_json::from_value(raw).map_err(parse_error)?;
    result.spec = spec.and_then(|s| serde_json::from_value(s).ok());
    let transcript = path
        .parent()
        .map(|d| d.join(TRANSCRIPT_FILE))
        .filter(|t| t.is_file());
    Ok(GameRecord {
        path: path.to_path_buf(),
        result,
        transcript,
        script_digest,
        script_path,
    })
}

/// Collects every `result.json` below `dir`. Symbolic links to directories are not followed, so a
/// link back up the tree cannot loop.
fn find_results(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), ReportError> {
    let entries = fs::read_dir(dir).map_err(|source| ReportError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    for entry in entries {
        let entry = entry.map_err(|source| ReportError::Read {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = entry.path();
        let kind = entry.file_type().map_err(|source| ReportError::Read {
            path: path.clone(),
            source,
        })?;
        if kind.is_dir() {
            find_results(&path, out)?;
        } else if entry.file_name() == RESULT_FILE {
            // A regular file or a link to one.
            if path.is_file() {
                out.push(path);
            }
        }
    }
    Ok(())
}

/// Calls `each` with every event of a transcript, in order. A line that is not JSON is an error naming
/// the file and line: a half-written transcript would otherwise silently change what is read from it.
pub fn for_each_event<T: serde::de::DeserializeOwned>(
    path: &Path,
    mut each: impl FnMut(T),
) -> Result<(), ReportError> {
    let read_err = |source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = fs::File::open(path).map_err(read_err)?;
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(read_err)?;
        if line.trim().is_empty() {
            continue;
        }
        let event = serde_json::from_str(&line).map_err(|source| ReportError::Transcript {
            path: path.to_path_buf(),
            line: i + 1,
            source,
        })?;
        each(event);
    }
    Ok(())
}
