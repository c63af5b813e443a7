//! `report.md`: the tables as Markdown, the figures as linked images.
//!
//! Names in a report come from the user's files — script titles, model names, paths — and a Markdown
//! viewer renders raw HTML, so every text written here has `&`, `<` and `>` escaped as `report.html`
//! escapes them ([`html_text`]): a script titled `<img src=x onerror=…>` must print as text, not run.

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
    let _ = writeln!(o, "{}\n", html_text(&r.summary()));
    for s in &r.sections {
        match s {
            Section::Table(t) => table(&mut o, t),
            Section::Figure(f) => {
                let title = html_text(&f.title);
                let caption = html_text(&f.caption);
                let _ = writeln!(o, "## {title}\n");
                match figures.get(f.id) {
                    Some(rendered) => {
                        let image = rendered
                            .png_path
                            .as_deref()
                            .unwrap_or(&rendered.svg_path)
                            .file_name()
                            .map(|n| n.to_string_lossy().to_string())
                            .unwrap_or_default();
                        let _ = writeln!(o, "![{title}]({image})\n");
                        let _ = writeln!(
                            o,
                            "{caption} Files: [{id}.svg]({id}.svg), [{id}.csv]({id}.csv).\n",
                            id = f.id
                        );
                    }
                    None => {
                        let _ = writeln!(
                            o,
                            "{caption} (not drawn; data in [{id}.csv]({id}.csv)).\n",
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
            let _ = writeln!(o, "- {}", html_text(&n.replace('\n', " ")));
        }
        o.push('\n');
    }
    o
}

fn table(o: &mut String, t: &Table) {
    let _ = writeln!(o, "## {}\n", html_text(&t.title));
    if !t.note.is_empty() {
        let _ = writeln!(o, "{}\n", html_text(&t.note));
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

/// Text safe inside a Markdown table cell: `|` would end the cell, `*` (PLAYER*) would open
/// emphasis, notably inside a bold total row, and HTML is escaped as everywhere ([`html_text`]).
fn escape(s: &str) -> String {
    html_text(s)
        .replace('|', "\\|")
        .replace('*', "\\*")
        .replace('\n', " ")
}

/// `s` with the characters that start HTML markup or a character reference written as entities, so
/// a Markdown renderer shows them instead of interpreting them. Quotes are left (without `<` no tag,
/// and so no attribute, can open), and so is an `&` before a space or at the end ("Single & Multi"),
/// which no renderer reads as a reference: the file stays readable as text.
fn html_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '&' if chars.peek().is_some_and(|n| !n.is_whitespace()) => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}
