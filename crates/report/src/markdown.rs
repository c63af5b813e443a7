//! `report.md`: the tables as Markdown, the figures as linked images.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::plots::Rendered;
use super::table::{Kind, Table};
use super::{Report, Section};

/// The Markdown report, with `notes` (the report's own and what writing it found, e.g. no font) at the
/// end. Figures link their PNG, or their SVG when no PNG could be drawn.
pub fn render(r: &Report, notes: &[String], figures: &BTreeMap<&str, Rendered>) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# sleuth report\n");
    let _ = writeln!(o, "{}\n", r.summary());
    for s in &r.sections {
        match s {
            Section::Table(t) => table(&mut o, t),
            Section::Figure(f) => {
                let _ = writeln!(o, "## {}\n", f.title);
                match figures.get(f.id) {
                    Some(rendered) => {
                        let image = rendered
                            .png_path
                            .as_deref()
                            .unwrap_or(&rendered.svg_path)
                            .file_name()
                            .map(|n| n.to_string_lossy().to_string())
                            .unwrap_or_default();
                        let _ = writeln!(o, "![{}]({image})\n", f.title);
                        let _ = writeln!(
                            o,
                            "{} Files: [{id}.svg]({id}.svg), [{id}.csv]({id}.csv).\n",
                            f.caption,
                            id = f.id
                        );
                    }
                    None => {
                        let _ = writeln!(
                            o,
                            "{} (not drawn; data in [{id}.csv]({id}.csv)).\n",
                            f.caption,
                            id = f.id
                        );
                    }
                }
            }
        }
    }
    if !notes.is_empty() {
        let _ = writeln!(o, "## Notes\n");
        for n in notes {
            let _ = writeln!(o, "- {}", n.replace('\n', " "));
        }
        o.push('\n');
    }
    o
}

fn table(o: &mut String, t: &Table) {
    let _ = writeln!(o, "## {}\n", t.title);
    if !t.note.is_empty() {
        let _ = writeln!(o, "{}\n", t.note);
    }
    let headings: Vec<String> = t.columns.iter().map(|c| escape(&c.heading)).collect();
    let _ = writeln!(o, "| {} |", headings.join(" | "));
    let rules: Vec<&str> = t
        .columns
        .iter()
        .map(|c| match c.kind {
            Kind::Text => "---",
            _ => "---:",
        })
        .collect();
    let _ = writeln!(o, "|{}|", rules.join("|"));
    for row in &t.rows {
        let cells: Vec<String> = row
            .cells
            .iter()
            .zip(&t.columns)
            .map(|(cell, col)| {
                let text = escape(&cell.display(col.kind));
                if row.total && !text.is_empty() {
                    format!("**{text}**")
                } else {
                    text
                }
            })
            .collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
    let _ = writeln!(o, "\nCSV: [{id}.csv]({id}.csv)\n", id = t.id);
}

/// Text safe inside a Markdown table cell: `|` would end the cell, and `*` (PLAYER*) would open
/// emphasis, notably inside a bold total row.
fn escape(s: &str) -> String {
    s.replace('|', "\\|").replace('*', "\\*").replace('\n', " ")
}
