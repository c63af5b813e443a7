//! Reading a part back with the `parquet` crate's own record reader: the schema as [`Type`]s and the
//! rows as [`Value`]s. What the tests check an export with (types as documented, the rows written),
//! kept in the crate so that the integration tests need no Parquet code of their own.

use std::fs::File;
use std::path::Path;

use parquet::basic::{LogicalType, Type as Physical};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;

use crate::error::ExportError;
use crate::table::{Type, Value};

/// A part as read back: its columns (name, type) and rows.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadBack {
    pub columns: Vec<(String, Type)>,
    pub rows: Vec<Vec<Value>>,
}

impl ReadBack {
    /// The values of the column `name`, top to bottom (empty when there is no such column).
    pub fn column(&self, name: &str) -> Vec<&Value> {
        match self.columns.iter().position(|(n, _)| n == name) {
            Some(i) => self.rows.iter().map(|r| &r[i]).collect(),
            None => Vec::new(),
        }
    }
}

/// Reads one Parquet file whole.
pub fn read(path: &Path) -> Result<ReadBack, ExportError> {
    let err = |source| ExportError::Parquet {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(|source| ExportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let reader = SerializedFileReader::new(file).map_err(err)?;
    let schema = reader.metadata().file_metadata().schema();
    let columns: Vec<(String, Type)> = schema
        .get_fields()
        .iter()
        .map(|f| {
            let ty = if f.is_group() {
                Type::TextList
            } else {
                match (f.get_physical_type(), f.get_basic_info().logical_type_ref()) {
                    (Physical::INT64, Some(LogicalType::Timestamp { .. })) => Type::Time,
                    (Physical::INT64, _) => Type::Int,
                    (Physical::DOUBLE, _) => Type::Float,
                    (Physical::BOOLEAN, _) => Type::Bool,
                    _ => Type::Text,
                }
            };
            (f.name().to_string(), ty)
        })
        .collect();
    let mut rows = Vec::new();
    for row in reader.get_row_iter(None).map_err(err)? {
        let row = row.map_err(err)?;
        rows.push(
            row.get_column_iter()
                .map(|(_, field)| value(field))
                .collect(),
        );
    }
    Ok(ReadBack { columns, rows })
}

fn value(f: &Field) -> Value {
    match f {
        Field::Null => Value::Null,
        Field::Bool(b) => Value::Bool(*b),
        Field::Long(x) => Value::Int(*x),
        Field::Double(x) => Value::Float(*x),
        Field::Str(s) => Value::Text(s.clone()),
        Field::TimestampMicros(us) => Value::Time(*us),
        Field::ListInternal(list) => Value::TextList(
            list.elements()
                .iter()
                .map(|e| match e {
                    Field::Str(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect(),
        ),
        other => Value::Text(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parquet_file;
    use crate::table::{col, Column, Row, Table};

    const COLUMNS: &[Column] = &[
        col("i", Type::Int),
        col("x", Type::Float),
        col("b", Type::Bool),
        col("s", Type::Text),
        col("t", Type::Time),
        col("l", Type::TextList),
    ];

    #[test]
    fn every_type_and_null_reads_back_as_written() {
        let mut table = Table::new("t", COLUMNS);
        let rows = [
            [
                Value::Int(-3),
                Value::Float(0.1),
                Value::Bool(true),
                Value::Text("é \"x\"".into()),
                Value::Time(1_700_000_000_123_456),
                Value::TextList(vec!["A".into(), "C".into()]),
            ],
            [
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
            ],
            [
                Value::Int(i64::MAX),
                Value::Float(-2.5),
                Value::Bool(false),
                Value::Text(String::new()),
                Value::Time(0),
                Value::TextList(Vec::new()),
            ],
        ];
        for values in &rows {
            let mut row = Row::new();
            for (c, v) in COLUMNS.iter().zip(values) {
                row.set(c.name, v.clone());
            }
            table.push(row).expect("row");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.parquet");
        parquet_file::write(&table, &path).expect("write");
        let back = read(&path).expect("read");
        let expected: Vec<(String, Type)> =
            COLUMNS.iter().map(|c| (c.name.to_string(), c.ty)).collect();
        assert_eq!(back.columns, expected);
        assert_eq!(back.rows, table.rows());
    }

    #[test]
    fn an_empty_table_still_has_its_schema() {
        let table = Table::new("t", COLUMNS);
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.parquet");
        parquet_file::write(&table, &path).expect("write");
        let back = read(&path).expect("read");
        assert_eq!(back.columns.len(), COLUMNS.len());
        assert!(back.rows.is_empty());
    }
}
