//! The sweep page's metrics: `sleuth report`'s own tables and figures ([`sleuth_report`]), built by
//! the same code over the same `result.json` files and shown as HTML tables — not a second
//! implementation of any metric. Figures are shown as their data tables (`Figure::data`, what the
//! report's CSVs hold).

use std::path::Path;

use serde::Serialize;

use sleuth_report::{self as report, Bootstrap, Report, Section};

/// A report table, as text cells.
#[derive(Debug, Clone, Serialize)]
pub struct TableView {
    pub id: String,
    pub title: String,
    pub note: String,
    pub headings: Vec<String>,
    pub rows: Vec<RowView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RowView {
    pub cells: Vec<String>,
    pub total: bool,
}

/// The report as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ReportView {
    pub summary: String,
    pub notes: Vec<String>,
    pub tables: Vec<TableView>,
}

fn table_view(t: &report::Table) -> TableView {
    TableView {
        id: t.id.to_string(),
        title: t.title.clone(),
        note: t.note.clone(),
        headings: t.columns.iter().map(|c| c.heading.clone()).collect(),
        rows: t
            .rows
            .iter()
            .map(|r| RowView {
                cells: r
                    .cells
                    .iter()
                    .zip(&t.columns)
                    .map(|(cell, col)| cell.display(col.kind))
                    .collect(),
                total: r.total,
            })
            .collect(),
    }
}

/// Builds the report over every game under `root` (blocking: it reads every result).
pub fn build(root: &Path) -> Result<ReportView, String> {
    let loaded = report::load(root).map_err(|e| e.to_string())?;
    let mut r = Report::build(root, loaded, Bootstrap::default());
    if let Some(note) = report::spend::ledger_note(root) {
        r.notes.push(note);
    }
    // The Arms table first: it says what the other tables' rows are.
    let mut tables: Vec<TableView> = r
        .sections
        .iter()
        .map(|s| match s {
            Section::Table(t) => table_view(t),
            Section::Figure(f) => {
                let mut t = table_view(&f.data());
                t.title = format!("{} (data)", f.title);
                t
            }
        })
        .collect();
    if let Some(i) = tables.iter().position(|t| t.id == "arms") {
        let arms = tables.remove(i);
        tables.insert(0, arms);
    }
    Ok(ReportView {
        summary: r.summary(),
        notes: r.notes,
        tables,
    })
}
