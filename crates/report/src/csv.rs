//! Tables as CSV (RFC 4180): one header row from the columns, numbers at full precision, a value that
//! was not measured as an empty field.

use super::table::{Cell, Kind, Table};

/// The CSV text of a table.
pub fn to_csv(t: &Table) -> String {
    let mut out = String::new();
    let header: Vec<String> = t
        .columns
        .iter()
        .flat_map(|c| match c.kind {
            Kind::Text | Kind::Number(_) => vec![c.field.clone()],
            Kind::MeanStd(_) => vec![format!("{}_mean", c.field), format!("{}_std", c.field)],
            Kind::MeanCi(_) => vec![
                format!("{}_mean", c.field),
                format!("{}_ci_low", c.field),
                format!("{}_ci_high", c.field),
            ],
        })
        .collect();
    push_record(&mut out, &header);
    for row in &t.rows {
        let fields: Vec<String> = row
            .cells
            .iter()
            .zip(&t.columns)
            .flat_map(|(cell, col)| fields(cell, col.kind))
            .collect();
        push_record(&mut out, &fields);
    }
    out
}

/// A cell's fields; as many as its column's kind has, whatever the cell holds.
fn fields(cell: &Cell, kind: Kind) -> Vec<String> {
    let num = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    let width = match kind {
        Kind::Text | Kind::Number(_) => 1,
        Kind::MeanStd(_) => 2,
        Kind::MeanCi(_) => 3,
    };
    let mut v = match cell {
        Cell::Text(s) => vec![s.clone()],
        Cell::Number(x) => vec![num(*x)],
        Cell::MeanStd(ms) => vec![num(ms.map(|m| m.0)), num(ms.map(|m| m.1))],
        // One game: the interval is the value itself; the fields say so rather than stay empty.
        Cell::MeanCi(iv) => vec![
            num(iv.map(|i| i.estimate)),
            num(iv.map(|i| i.low)),
            num(iv.map(|i| i.high)),
        ],
    };
    v.resize(width, String::new());
    v
}

fn push_record(out: &mut String, fields: &[String]) {
    let quoted: Vec<String> = fields.iter().map(|f| quote(f)).collect();
    out.push_str(&quoted.join(","));
    out.push_str("\r\n");
}

/// Quotes a field when it holds a separator, a quote, a line break or edge spaces.
fn quote(f: &str) -> String {
    if f.contains([',', '"', '\n', '\r']) || f.starts_with(' ') || f.ends_with(' ') {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::super::table::Column;
    use super::*;
    use sleuth_game::eval::stats::Interval;

    #[test]
    fn stats_expand_into_fields_and_missing_values_stay_empty() {
        let mut t = Table::new(
            "t",
            "T",
            vec![
                Column::new("Method", "method", Kind::Text),
                Column::new("Score", "score", Kind::MeanStd(3)),
                Column::new("Win", "win", Kind::MeanCi(3)),
            ],
        );
        t.push(
            vec![
                Cell::Text("PLAYER*, \"best\"".into()),
                Cell::MeanStd(Some((0.5, 0.25))),
                Cell::MeanCi(None),
            ],
            false,
        );
        t.push(
            vec![
                Cell::Text("PP".into()),
                Cell::MeanStd(None),
                Cell::MeanCi(Some(Interval {
                    estimate: 0.5,
                    low: 0.25,
                    high: 0.75,
                    n: 4,
                    level: 0.95,
                })),
            ],
            false,
        );
        assert_eq!(
            to_csv(&t),
            "method,score_mean,score_std,win_mean,win_ci_low,win_ci_high\r\n\
             \"PLAYER*, \"\"best\"\"\",0.5,0.25,,,\r\n\
             PP,,,0.5,0.25,0.75\r\n"
        );
    }
}
