//! `report.html`: one self-contained page — CSS inline, figures as inline SVG — that opens from disk
//! or an attachment with nothing else beside it (the CSV links work when the folder is kept).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::plots::Rendered;
use super::table::{Kind, Table};
use super::{Report, Section};

const CSS: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:1200px;\
padding:0 1rem;color:#222;line-height:1.45}\
h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:2.2rem;border-bottom:1px solid #ddd}\
p.note{color:#555;font-size:.9rem;max-width:900px}\
div.scroll{overflow-x:auto}\
table{border-collapse:collapse;font-size:.88rem;margin:.6rem 0}\
th,td{border:1px solid #ddd;padding:.25rem .5rem;white-space:nowrap}\
th{background:#f4f4f4;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums}\
tr.total td{font-weight:600;background:#fafafa}\
figure{margin:1rem 0}figure svg{max-width:100%;height:auto}\
figcaption{color:#555;font-size:.9rem;max-width:900px}\
ul.notes li{color:#555}";

/// The HTML report, with `notes` (the report's own and what writing it found) at the end.
pub fn render(r: &Report, notes: &[String], figures: &BTreeMap<&str, Rendered>) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>sleuth report</title>\n<style>{CSS}</style>\n</head>\n<body>\n\
         <h1>sleuth report</h1>\n<p>{}</p>\n",
        escape(&r.summary())
    );
    for s in &r.sections {
        match s {
            Section::Table(t) => table(&mut o, t),
            Section::Figure(f) => {
                let _ = writeln!(o, "<h2 id=\"{}\">{}</h2>", f.id, escape(&f.title));
                let _ = writeln!(o, "<figure>");
                if let Some(rendered) = figures.get(f.id) {
                    let _ = writeln!(
                        o,
                        "<div class=\"scroll\">{}</div>",
                        inline_svg(&rendered.svg)
                    );
                }
                let _ = writeln!(
                    o,
                    "<figcaption>{} <a href=\"{id}.csv\">{id}.csv</a></figcaption>\n</figure>",
                    escape(&f.caption),
                    id = f.id
                );
            }
        }
    }
    if !notes.is_empty() {
        let _ = writeln!(o, "<h2 id=\"notes\">Notes</h2>\n<ul class=\"notes\">");
        for n in notes {
            let _ = writeln!(o, "<li>{}</li>", escape(n));
        }
        let _ = writeln!(o, "</ul>");
    }
    o.push_str("</body>\n</html>\n");
    o
}

fn table(o: &mut String, t: &Table) {
    let _ = writeln!(o, "<h2 id=\"{}\">{}</h2>", t.id, escape(&t.title));
    if !t.note.is_empty() {
        let _ = writeln!(o, "<p class=\"note\">{}</p>", escape(&t.note));
    }
    let _ = writeln!(o, "<div class=\"scroll\"><table>\n<thead><tr>");
    for c in &t.columns {
        let _ = write!(o, "<th>{}</th>", escape(&c.heading));
    }
    let _ = writeln!(o, "</tr></thead>\n<tbody>");
    for row in &t.rows {
        let _ = write!(o, "<tr{}>", if row.total { " class=\"total\"" } else { "" });
        for (cell, col) in row.cells.iter().zip(&t.columns) {
            let class = match col.kind {
                Kind::Text => "",
                _ => " class=\"num\"",
            };
            let _ = write!(o, "<td{class}>{}</td>", escape(&cell.display(col.kind)));
        }
        let _ = writeln!(o, "</tr>");
    }
    let _ = writeln!(
        o,
        "</tbody>\n</table></div>\n<p class=\"note\"><a href=\"{id}.csv\">{id}.csv</a></p>",
        id = t.id
    );
}

/// The SVG document without an XML declaration, which is not allowed inside HTML.
fn inline_svg(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

/// Text safe in HTML content and attribute values.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
