//! The table model every report table is built in, and how its cells read in Markdown and HTML.
//!
//! A column has one kind for all its rows, so the CSV header can be derived from the columns alone: a
//! mean ± std column becomes `name_mean,name_std`, a confidence-interval column
//! `name_mean,name_ci_low,name_ci_high`, and a missing value an empty field (never a made-up 0).

use sleuth_game::eval::stats::Interval;

/// What a column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    /// A number printed with this many decimals.
    Number(usize),
    /// Mean ± standard deviation over repeats, with this many decimals.
    MeanStd(usize),
    /// Mean with its bootstrap interval, with this many decimals.
    MeanCi(usize),
}

/// A column: its heading, the stem of its CSV field names, and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub heading: String,
    pub field: String,
    pub kind: Kind,
}

impl Column {
    pub fn new(heading: &str, field: &str, kind: Kind) -> Column {
        Column {
            heading: heading.into(),
            field: field.into(),
            kind,
        }
    }
}

/// One cell. `None` is "not measured" and prints as "—".
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(String),
    Number(Option<f64>),
    MeanStd(Option<(f64, f64)>),
    MeanCi(Option<Interval>),
}

impl Cell {
    /// The cell as the Markdown and HTML tables show it.
    pub fn display(&self, kind: Kind) -> String {
        let d = match kind {
            Kind::Text => 0,
            Kind::Number(d) | Kind::MeanStd(d) | Kind::MeanCi(d) => d,
        };
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Number(Some(x)) => format!("{x:.d$}"),
            Cell::MeanStd(Some((m, s))) => format!("{m:.d$} ± {s:.d$}"),
            Cell::MeanCi(Some(iv)) if iv.n > 1 => {
                format!("{:.d$} [{:.d$}, {:.d$}]", iv.estimate, iv.low, iv.high)
            }
            // One game has no spread: print the value alone rather than a degenerate [x, x].
            Cell::MeanCi(Some(iv)) => format!("{:.d$}", iv.estimate),
            Cell::Number(None) | Cell::MeanStd(None) | Cell::MeanCi(None) => MISSING.into(),
        }
    }
}

/// How a value that was not measured is printed.
pub const MISSING: &str = "—";

/// A row; `total` rows (weighted means across scripts, sums) are set apart in the output.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub cells: Vec<Cell>,
    pub total: bool,
}

/// A report table.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// File stem of its CSV and its anchor in the HTML, e.g. `player_table_a3`; owned for tables that
    /// exist once per something of the run (a human figure per annotation campaign).
    pub id: std::borrow::Cow<'static, str>,
    pub title: String,
    /// How to read it: what each number is, over what, and what is left out.
    pub note: String,
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
}

impl Table {
    /// A table with no rows yet.
    pub fn new(id: &'static str, title: &str, columns: Vec<Column>) -> Table {
        Table {
            id: id.into(),
            title: title.into(),
            note: String::new(),
            columns,
            rows: Vec::new(),
        }
    }

    /// Appends a row; its cells must match the columns.
    pub fn push(&mut self, cells: Vec<Cell>, total: bool) {
        debug_assert_eq!(cells.len(), self.columns.len(), "table {}", self.id);
        self.rows.push(Row { cells, total });
    }

    /// The column named `heading`, for tests and readers.
    pub fn column(&self, heading: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.heading == heading)
    }
}
