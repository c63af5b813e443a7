//! The files of a MIRAGE script folder and the texts inside them: which file names count, reading UTF-8
//! (a byte-order mark allowed) and JSON, and a text value (a string or a list of strings) with its
//! field path. Every layout fault of the folder surfaces here or in the reader that called it, as an
//! [`ImportError`] naming the file and the field.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::import::{clean_text, format_error, ImportError};

/// The character file, English and Chinese name.
pub(super) const SCRIPT_FILES: &[&str] = &["script.json", "人物剧本.json"];
/// The clue file, English and Chinese name.
pub(super) const CLUE_FILES: &[&str] = &["clues.json", "线索.json"];
/// The truth file, next to the script folders.
pub(super) const TRUTH_FILE: &str = "Truth.json";

/// The folder's own name (for `.` or `dir/`, the resolved name).
pub(super) fn folder_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .or_else(|| {
            dir.canonicalize()
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        })
        .unwrap_or_default()
}

/// The first of `names` that is a file in `dir`.
pub(super) fn find_file(dir: &Path, names: &[&str]) -> Option<PathBuf> {
    names.iter().map(|n| dir.join(n)).find(|p| p.is_file())
}

/// A text value: a string or a list of strings (null = none), cleaned, empty ones dropped.
pub(super) fn texts(v: &Value, path: &Path, field: &str) -> Result<Vec<String>, ImportError> {
    let raw: Vec<&str> = match v {
        Value::Null => Vec::new(),
        Value::String(s) => vec![s],
        Value::Array(items) => items
            .iter()
            .enumerate()
            .filter(|(_, x)| !x.is_null())
            .map(|(i, x)| {
                x.as_str()
                    .ok_or_else(|| format_error(path, &format!("{field}[{i}]"), "a string"))
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(format_error(path, field, "a string or a list of strings")),
    };
    Ok(raw
        .into_iter()
        .map(clean_text)
        .filter(|t| !t.is_empty())
        .collect())
}

/// The file as UTF-8 text; a fault names the offset of the first invalid byte.
pub(super) fn read_text(path: &Path) -> Result<String, ImportError> {
    let bytes = std::fs::read(path).map_err(|source| ImportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|e| {
        format_error(
            path,
            "(file)",
            &format!(
                "UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// The file as a JSON object, a leading byte-order mark skipped.
pub(super) fn read_json(path: &Path) -> Result<Map<String, Value>, ImportError> {
    let text = read_text(path)?;
    let value: Value = serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(&text))
        .map_err(|e| format_error(path, "(file)", &format!("valid JSON ({e})")))?;
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(format_error(path, "(file)", "a JSON object")),
    }
}
