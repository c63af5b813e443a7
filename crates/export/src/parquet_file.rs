//! A [`Table`] as one Parquet file, written with the `parquet` crate's low-level writer (no Arrow:
//! `docs/benchmarks.md`, *Build cost of the export*).
//!
//! Every column is OPTIONAL (a value a game did not measure is null); texts are BYTE_ARRAY with the
//! STRING logical type, times INT64 TIMESTAMP(MICROS, UTC), lists the standard three-level LIST of
//! STRING, so pandas, polars and DuckDB read each with its type. One row group per file: a part is
//! one export's new rows of one table, small enough to hold whole. Pages are zstd-compressed.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use parquet::basic::{Compression, ZstdLevel};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedColumnWriter, SerializedFileWriter};
use parquet::schema::parser::parse_message_type;

use crate::error::ExportError;
use crate::table::{Table, Type, Value};

/// The Parquet schema of a table, in the message syntax the crate's parser reads.
pub fn message_type(table: &Table) -> String {
    let mut s = format!("message {} {{\n", table.name);
    for c in table.columns {
        let line = match c.ty {
            Type::Int => format!("OPTIONAL INT64 {};", c.name),
            Type::Float => format!("OPTIONAL DOUBLE {};", c.name),
            Type::Bool => format!("OPTIONAL BOOLEAN {};", c.name),
            Type::Text => format!("OPTIONAL BYTE_ARRAY {} (STRING);", c.name),
            Type::Time => format!("OPTIONAL INT64 {} (TIMESTAMP(MICROS,true));", c.name),
            Type::TextList => format!(
                "OPTIONAL group {} (LIST) {{ REPEATED group list {{ \
                 OPTIONAL BYTE_ARRAY element (STRING); }} }}",
                c.name
            ),
        };
        s.push_str("  ");
        s.push_str(&line);
        s.push('\n');
    }
    s.push('}');
    s
}

/// Writes `table` to `path` (created or truncated).
pub fn write(table: &Table, path: &Path) -> Result<(), ExportError> {
    let err = |source| ExportError::Parquet {
        path: path.to_path_buf(),
        source,
    };
    let schema = Arc::new(parse_message_type(&message_type(table)).map_err(err)?);
    let props = Arc::new(
        WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_created_by(format!("sleuth {}", env!("CARGO_PKG_VERSION")))
            .build(),
    );
    let file = File::create(path).map_err(|source| ExportError::Write {
        path: path.to_path_buf(),
        source,
    })?;
    let mut writer = SerializedFileWriter::new(file, schema, props).map_err(err)?;
    let mut group = writer.next_row_group().map_err(err)?;
    let mut i = 0;
    while let Some(mut column) = group.next_column().map_err(err)? {
        let ty = table
            .columns
            .get(i)
            .map(|c| c.ty)
            .ok_or(ExportError::Schema {
                table: table.name,
                problem: "more Parquet columns than schema columns".into(),
            })?;
        write_column(&mut column, ty, table.column_values(i)).map_err(err)?;
        column.close().map_err(err)?;
        i += 1;
    }
    group.close().map_err(err)?;
    writer.close().map_err(err)?;
    Ok(())
}

/// A column's definition levels (1 for a value, 0 for null) and its non-null values.
fn levels<'a, T>(
    values: impl Iterator<Item = &'a Value>,
    mut pick: impl FnMut(&'a Value) -> Option<T>,
) -> (Vec<T>, Vec<i16>) {
    let mut out = Vec::new();
    let mut defs = Vec::new();
    for v in values {
        match pick(v) {
            Some(x) => {
                out.push(x);
                defs.push(1);
            }
            None => defs.push(0),
        }
    }
    (out, defs)
}

fn write_column<'a>(
    column: &mut SerializedColumnWriter<'_>,
    ty: Type,
    values: impl Iterator<Item = &'a Value>,
) -> parquet::errors::Result<()> {
    match ty {
        Type::Int | Type::Time => {
            let (v, d) = levels(values, |v| match v {
                Value::Int(x) | Value::Time(x) => Some(*x),
                _ => None,
            });
            column
                .typed::<Int64Type>()
                .write_batch(&v, Some(&d), None)?;
        }
        Type::Float => {
            let (v, d) = levels(values, |v| match v {
                Value::Float(x) => Some(*x),
                _ => None,
            });
            column
                .typed::<DoubleType>()
                .write_batch(&v, Some(&d), None)?;
        }
        Type::Bool => {
            let (v, d) = levels(values, |v| match v {
                Value::Bool(x) => Some(*x),
                _ => None,
            });
            column.typed::<BoolType>().write_batch(&v, Some(&d), None)?;
        }
        Type::Text => {
            let (v, d) = levels(values, |v| match v {
                Value::Text(s) => Some(ByteArray::from(s.as_bytes().to_vec())),
                _ => None,
            });
            column
                .typed::<ByteArrayType>()
                .write_batch(&v, Some(&d), None)?;
        }
        Type::TextList => {
            let (v, d, r) = list_levels(values);
            column
                .typed::<ByteArrayType>()
                .write_batch(&v, Some(&d), Some(&r))?;
        }
    }
    Ok(())
}

/// The leaf of a three-level LIST column: definition level 0 for a null list, 1 for an empty one, 3
/// for an element (elements are never null); repetition level 0 for a row's first entry, 1 after.
fn list_levels<'a>(
    values: impl Iterator<Item = &'a Value>,
) -> (Vec<ByteArray>, Vec<i16>, Vec<i16>) {
    let (mut out, mut defs, mut reps) = (Vec::new(), Vec::new(), Vec::new());
    for v in values {
        match v {
            Value::TextList(items) if !items.is_empty() => {
                for (i, s) in items.iter().enumerate() {
                    out.push(ByteArray::from(s.as_bytes().to_vec()));
                    defs.push(3);
                    reps.push(i16::from(i > 0));
                }
            }
            Value::TextList(_) => {
                defs.push(1);
                reps.push(0);
            }
            _ => {
                defs.push(0);
                reps.push(0);
            }
        }
    }
    (out, defs, reps)
}
