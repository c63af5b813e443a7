//! A [`Table`] as one CSV file (RFC 4180, a header row of the column names).
//!
//! CSV has no types, so each is written the way the readers' own parsers take it back: null as an
//! empty field, floats in Rust's shortest round-trip form, booleans as `true`/`false`, times as RFC
//! 3339 UTC with microseconds, and lists as a JSON array of strings (`json.loads`,
//! `pl.col(c).str.json_decode()`, DuckDB's `from_json`).

use std::path::Path;

use crate::error::ExportError;
use crate::table::{Table, Value};

/// Writes `table` to `path` (created or truncated).
pub fn write(table: &Table, path: &Path) -> Result<(), ExportError> {
    let err = |source| ExportError::Csv {
        path: path.to_path_buf(),
        source,
    };
    let mut w = csv::Writer::from_path(path).map_err(err)?;
    w.write_record(table.columns.iter().map(|c| c.name))
        .map_err(err)?;
    for row in table.rows() {
        w.write_record(row.iter().map(field)).map_err(err)?;
    }
    w.flush().map_err(|source| ExportError::Write {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(())
}

/// One cell as CSV text.
pub fn field(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Int(x) => x.to_string(),
        Value::Float(x) => x.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Text(s) => s.clone(),
        Value::Time(us) => time_text(*us),
        Value::TextList(items) => serde_json::Value::from(items.clone()).to_string(),
    }
}

/// Microseconds since the epoch as RFC 3339 UTC (`2026-01-02T03:04:05.000006Z`).
pub fn time_text(us: i64) -> String {
    chrono::DateTime::from_timestamp_micros(us).map_or_else(String::new, |t| {
        t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_written_as_the_readers_parse_them() {
        assert_eq!(field(&Value::Null), "");
        assert_eq!(field(&Value::Float(0.1)), "0.1");
        assert_eq!(
            field(&Value::Time(1_500_000)),
            "1970-01-01T00:00:01.500000Z"
        );
        assert_eq!(
            field(&Value::TextList(vec!["a".into(), "b \"c\"".into()])),
            r#"["a","b \"c\""]"#
        );
        assert_eq!(field(&Value::TextList(Vec::new())), "[]");
    }
}
