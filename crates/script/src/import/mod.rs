//! Importers of public datasets into the canonical format. An importer maps a dataset's layout onto
//! the model field by field and never special-cases a title: the samples in `shared/datasets` are
//! conformance tests of the format, not the data.

pub mod mirage;
pub mod wellplay;

use std::path::{Path, PathBuf};

/// Why a dataset could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A file could not be read.
    #[error("{path}: cannot read")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file does not have the layout the importer expects.
    #[error("{path}: field `{field}`: expected {expected}")]
    Format {
        path: PathBuf,
        field: String,
        expected: String,
    },
    /// The imported script breaks the canonical format's rules.
    #[error(transparent)]
    Invalid(#[from] super::ScriptError),
}

/// Chinese when most letters of the texts are CJK, else English.
pub(crate) fn detect_language<'a>(texts: impl Iterator<Item = &'a String>) -> super::Language {
    let (mut cjk, mut letters) = (0usize, 0usize);
    for c in texts.flat_map(|t| t.chars()) {
        if sleuth_base::text::is_cjk(c) {
            cjk += 1;
            letters += 1;
        } else if c.is_alphabetic() {
            letters += 1;
        }
    }
    if cjk * 2 > letters {
        super::Language::Zh
    } else {
        super::Language::En
    }
}

/// A layout error naming the file, the field and what was expected there.
pub(crate) fn format_error(path: &Path, field: &str, expected: &str) -> ImportError {
    ImportError::Format {
        path: path.to_path_buf(),
        field: field.to_string(),
        expected: expected.to_string(),
    }
}

/// Cleans a dataset text: literal `\n` sequences become line breaks, stray wrapping quotes are removed,
/// surrounding white space trimmed.
pub fn clean_text(s: &str) -> String {
    let t = s
        .replace("\\r\\n", "\n")
        .replace("\\n", "\n")
        .replace("\\t", " ");
    let t = t.trim();
    let stripped = ['"', '\'', '“', '‘']
        .iter()
        .zip(['"', '\'', '”', '’'])
        .find_map(|(open, close)| t.strip_prefix(*open).and_then(|r| r.strip_suffix(close)))
        .unwrap_or(t);
    stripped.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleans_escapes_and_wrapping_quotes() {
        assert_eq!(
            clean_text("\"Line one.\\nLine two.\""),
            "Line one.\nLine two."
        );
        assert_eq!(clean_text("'Collaborate.'"), "Collaborate.");
        assert_eq!(clean_text("He said \"no\"."), "He said \"no\".");
        assert_eq!(clean_text("『线索』\\n下一行"), "『线索』\n下一行");
    }
}
