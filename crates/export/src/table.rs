//! A table before it is written: a fixed schema (column names and types, the same in every part
//! and every run, as `docs/data.md` lists them) and rows of typed values.
//!
//! The schema is static rather than taken from the rows so that a table with no rows still has
//! one, and so that every part of a table — written by exports months apart — reads back as one
//! table in pandas, polars and DuckDB. Each row names its cells; [`Table::push`] checks the names
//! and types against the schema, so a row built out of step with it is an error, never a silently
//! shifted column.

use crate::error::ExportError;

/// A column's type. Every column is nullable: a value a game did not measure is null, not 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// 64-bit signed integer (Parquet INT64).
    Int,
    /// 64-bit float (Parquet DOUBLE).
    Float,
    /// Parquet BOOLEAN.
    Bool,
    /// UTF-8 text (Parquet BYTE_ARRAY, logical type STRING).
    Text,
    /// A UTC instant in microseconds since the epoch (Parquet INT64, TIMESTAMP(MICROS, UTC)).
    Time,
    /// A list of texts (Parquet LIST of STRING); a JSON array in CSV.
    TextList,
}

impl Type {
    /// The name `docs/data.md` uses for the type.
    pub fn doc_name(self) -> &'static str {
        match self {
            Type::Int => "int64",
            Type::Float => "float64",
            Type::Bool => "bool",
            Type::Text => "string",
            Type::Time => "timestamp[us, UTC]",
            Type::TextList => "list<string>",
        }
    }
}

/// One column of a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    pub ty: Type,
}

/// Shorthand for schema constants.
pub const fn col(name: &'static str, ty: Type) -> Column {
    Column { name, ty }
}

/// One cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(String),
    /// Microseconds since the epoch, UTC.
    Time(i64),
    TextList(Vec<String>),
}

impl Value {
    /// Whether the value fits a column of type `ty` (null fits every column).
    fn fits(&self, ty: Type) -> bool {
        matches!(
            (self, ty),
            (Value::Null, _)
                | (Value::Int(_), Type::Int)
                | (Value::Float(_), Type::Float)
                | (Value::Bool(_), Type::Bool)
                | (Value::Text(_), Type::Text)
                | (Value::Time(_), Type::Time)
                | (Value::TextList(_), Type::TextList)
        )
    }

    /// A text cell, or null for `None`.
    pub fn text(s: Option<&str>) -> Value {
        s.map_or(Value::Null, |s| Value::Text(s.to_string()))
    }

    /// A float cell, or null for `None` (and for NaN, which no reader treats as missing).
    pub fn float(x: Option<f64>) -> Value {
        match x {
            Some(x) if !x.is_nan() => Value::Float(x),
            _ => Value::Null,
        }
    }

    /// An integer cell from an unsigned count; a count past `i64::MAX` (none is) saturates.
    pub fn count(n: u64) -> Value {
        Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }

    /// A timestamp cell from RFC 3339 text; null when the text is not a time (an older file's
    /// field, an empty string).
    pub fn time(rfc3339: &str) -> Value {
        chrono::DateTime::parse_from_rfc3339(rfc3339)
            .map_or(Value::Null, |t| Value::Time(t.timestamp_micros()))
    }
}

/// A row under construction: cells by column name, in schema order.
#[derive(Debug, Default)]
pub struct Row(Vec<(&'static str, Value)>);

impl Row {
    pub fn new() -> Row {
        Row(Vec::new())
    }

    /// Adds the next cell.
    pub fn set(&mut self, name: &'static str, value: Value) -> &mut Row {
        self.0.push((name, value));
        self
    }
}

/// A table: its schema and the rows built so far.
#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [Column],
    rows: Vec<Vec<Value>>,
}

impl Table {
    pub fn new(name: &'static str, columns: &'static [Column]) -> Table {
        Table {
            name,
            columns,
            rows: Vec::new(),
        }
    }

    /// Appends a row whose cells must name the schema's columns in order, each with a value of the
    /// column's type (or null).
    pub fn push(&mut self, row: Row) -> Result<(), ExportError> {
        let cells = row.0;
        if cells.len() != self.columns.len() {
            return Err(ExportError::Schema {
                table: self.name,
                problem: format!(
                    "a row of {} cells for {} columns",
                    cells.len(),
                    self.columns.len()
                ),
            });
        }
        let mut values = Vec::with_capacity(cells.len());
        for ((name, value), column) in cells.into_iter().zip(self.columns) {
            if name != column.name || !value.fits(column.ty) {
                return Err(ExportError::Schema {
                    table: self.name,
                    problem: format!(
                        "cell {name} = {value:?} where column {} ({}) was expected",
                        column.name,
                        column.ty.doc_name()
                    ),
                });
            }
            values.push(value);
        }
        self.rows.push(values);
        Ok(())
    }

    pub fn rows(&self) -> &[Vec<Value>] {
        &self.rows
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The values of column `i`, top to bottom.
    pub fn column_values(&self, i: usize) -> impl Iterator<Item = &Value> {
        self.rows.iter().map(move |r| &r[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COLUMNS: &[Column] = &[col("game", Type::Text), col("n", Type::Int)];

    #[test]
    fn a_row_out_of_step_with_the_schema_is_refused() {
        let mut t = Table::new("t", COLUMNS);
        let mut ok = Row::new();
        ok.set("game", Value::Text("g".into()))
            .set("n", Value::Null);
        t.push(ok).expect("a row in schema order");
        let mut swapped = Row::new();
        swapped
            .set("n", Value::Int(1))
            .set("game", Value::Text("g".into()));
        assert!(matches!(t.push(swapped), Err(ExportError::Schema { .. })));
        let mut wrong_type = Row::new();
        wrong_type
            .set("game", Value::Text("g".into()))
            .set("n", Value::Float(1.0));
        assert!(matches!(
            t.push(wrong_type),
            Err(ExportError::Schema { .. })
        ));
        let mut short = Row::new();
        short.set("game", Value::Null);
        assert!(matches!(t.push(short), Err(ExportError::Schema { .. })));
        assert_eq!(t.len(), 1, "only the good row was kept");
    }

    #[test]
    fn times_parse_to_microseconds_and_bad_ones_are_null() {
        assert_eq!(
            Value::time("1970-01-01T00:00:01.5Z"),
            Value::Time(1_500_000)
        );
        assert_eq!(Value::time(""), Value::Null);
        assert_eq!(Value::float(Some(f64::NAN)), Value::Null);
    }
}
