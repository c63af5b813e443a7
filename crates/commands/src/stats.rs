//! `sleuth script stats`: the dataset table of a set of scripts, in the shape of PLAYER\* Table 1 and
//! MIRAGE Table 1, so an imported set can be checked against the papers (docs/datasets.md does so).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use sleuth_llm::tokens;
use sleuth_report::csv::to_csv;
use sleuth_report::{Cell, Column, Kind, Table};
use sleuth_script::stats::ScriptStats;
use sleuth_script::Script;

/// Prints the table of the scripts at `paths` (files, or folders whose `*.toml` files are read in name
/// order); `csv` prints it as CSV instead of aligned text; with `figures`, ThinkThrice's Figure 2 of
/// the set is written there too.
pub(super) fn run(paths: &[PathBuf], csv: bool, figures: Option<&Path>) -> Result<()> {
    let files = script_files(paths)?;
    let mut stats = Vec::new();
    for f in &files {
        let s = Script::load(f).with_context(|| format!("reading {}", f.display()))?;
        stats.push(ScriptStats::of(&s, tokens::count));
    }
    if let Some(dir) = figures {
        let written = sleuth_report::dataset::write(&stats, dir)
            .with_context(|| format!("writing Figure 2 into {}", dir.display()))?;
        for w in written {
            eprintln!("wrote {}", w.display());
        }
    }
    let t = table(&stats);
    if csv {
        print!("{}", to_csv(&t));
    } else {
        print!("{}", aligned(&t));
    }
    Ok(())
}

/// The script files named by `paths`, folders expanded.
fn script_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("reading folder {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "toml"))
                .collect();
            found.sort();
            if found.is_empty() {
                bail!("{}: no script files (*.toml) in this folder", p.display());
            }
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    if out.is_empty() {
        bail!("no script given");
    }
    Ok(out)
}

/// The dataset table: one row per script, then the mean and the sum over scripts, as the papers print.
pub fn table(stats: &[ScriptStats]) -> Table {
    let int = Kind::Number(0);
    let mut t = Table::new(
        "dataset",
        "Dataset statistics",
        vec![
            Column::new("Script", "script", Kind::Text),
            Column::new("Source", "source", Kind::Text),
            Column::new("Players", "players", int),
            Column::new("Victims", "victims", int),
            Column::new("Acts", "acts", int),
            Column::new("Clues", "clues", int),
            Column::new("Outside suspects", "outside_suspects", int),
            Column::new("Tokens/player", "tokens_avg", int),
            Column::new("Tokens", "tokens", int),
            Column::new("Words", "words", int),
            Column::new("Clue words", "clue_words", int),
            Column::new("Objective", "objective", int),
            Column::new("Reasoning", "reasoning", int),
            Column::new("Relations", "relations", int),
            Column::new("Questions", "questions", int),
        ],
    );
    t.note = "Tokens: cl100k over each player's private script (story, timeline, acts, secrets, goals, \
              relationships, performance, abilities). Words: whitespace words (CJK characters in Chinese) \
              of the same texts and the shared premise. Questions: the characters' multiple-choice \
              questions by category (the full-script-access copies are not counted again)."
        .into();
    let numbers = |s: &ScriptStats| -> Vec<f64> {
        vec![
            s.players as f64,
            s.victims as f64,
            s.acts as f64,
            s.clues as f64,
            s.outside_suspects as f64,
            s.tokens_per_player(),
            s.tokens as f64,
            s.words as f64,
            s.clue_words as f64,
            s.questions[0] as f64,
            s.questions[1] as f64,
            s.questions[2] as f64,
            s.question_total() as f64,
        ]
    };
    let mut sum = [0.0; 13];
    for s in stats {
        let n = numbers(s);
        for (acc, x) in sum.iter_mut().zip(&n) {
            *acc += x;
        }
        let mut cells = vec![Cell::Text(s.title.clone()), Cell::Text(s.source.clone())];
        cells.extend(n.into_iter().map(|x| Cell::Number(Some(x))));
        t.push(cells, false);
    }
    if stats.len() > 1 {
        let k = stats.len() as f64;
        // The papers' "Avg" row: means over scripts, two decimals where they are not whole.
        let mut avg = vec![Cell::Text("Avg".into()), Cell::Text(String::new())];
        avg.extend(sum.iter().map(|x| Cell::Number(Some(x / k))));
        t.push(avg, true);
        let mut total = vec![Cell::Text("Sum".into()), Cell::Text(String::new())];
        total.extend(sum.iter().map(|&x| Cell::Number(Some(x))));
        // Like the papers' Sum rows, every column is summed, tokens per player included (PLAYER* Table 1
        // sums the per-script averages too), so the row compares with theirs figure by figure.
        t.push(total, true);
    }
    t
}

/// The table as aligned text, the Avg row with two decimals.
fn aligned(t: &Table) -> String {
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            let avg = matches!(r.cells.first(), Some(Cell::Text(s)) if s == "Avg");
            r.cells
                .iter()
                .zip(&t.columns)
                .map(|(c, col)| match (c, avg) {
                    (Cell::Number(Some(x)), true) => format!("{x:.2}"),
                    _ => c.display(col.kind),
                })
                .collect()
        })
        .collect();
    let widths: Vec<usize> = t
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain(std::iter::once(c.heading.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<&str>| -> String {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let pad = widths[i].saturating_sub(c.chars().count());
                if i < 2 {
                    format!("{c}{}", " ".repeat(pad))
                } else {
                    format!("{}{c}", " ".repeat(pad))
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = String::new();
    out.push_str(&line(
        t.columns.iter().map(|c| c.heading.as_str()).collect(),
    ));
    out.push('\n');
    for r in &rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&t.note);
    out.push('\n');
    out
}
