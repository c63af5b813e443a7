//! ThinkThrice Figure 2 for a set of scripts: how many scripts there are for each number of players.
//!
//! The paper's Figure 2 describes its dataset, not its games: how many of its game instances support
//! each maximum number of players. A sleuth script is played by exactly as many players as it has
//! characters, so the same picture of a set of scripts counts them by [`ScriptStats::players`]. It
//! needs no played game, so it is built from the statistics `sleuth script stats` computes for a set
//! of script files ([`figure2`], [`table`]) and written beside them ([`write`]), not by
//! `sleuth report`, whose input is played games.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::figures::{Figure, Point, Series, Style, XAxis};
use super::table::{Cell, Column, Kind, Table};
use super::{csv, plots, ReportError};
use sleuth_game::eval::stats::Interval;
use sleuth_script::stats::ScriptStats;

/// File stem of the figure's SVG, PNG and CSV.
pub const ID: &str = "thinkthrice_figure2";

/// Scripts per number of players, every count from the fewest players to the most (a count with no
/// script is 0, so the shape of the distribution shows); empty for no scripts.
fn counts(stats: &[ScriptStats]) -> BTreeMap<usize, usize> {
    let mut by_players: BTreeMap<usize, usize> = BTreeMap::new();
    for s in stats {
        *by_players.entry(s.players).or_default() += 1;
    }
    let (Some(&lo), Some(&hi)) = (by_players.keys().next(), by_players.keys().last()) else {
        return by_players;
    };
    (lo..=hi)
        .map(|p| (p, by_players.get(&p).copied().unwrap_or(0)))
        .collect()
}

/// The distribution as a table: players, scripts, and their share of the set; `None` for no scripts.
pub fn table(stats: &[ScriptStats]) -> Option<Table> {
    let counts = counts(stats);
    if counts.is_empty() {
        return None;
    }
    let mut t = Table::new(
        ID,
        "ThinkThrice Figure 2 — scripts by number of players",
        vec![
            Column::new("Players", "players", Kind::Number(0)),
            Column::new("Scripts", "scripts", Kind::Number(0)),
            Column::new("Share", "share", Kind::Number(3)),
        ],
    );
    t.note = "How many of the scripts have each number of players (characters); ThinkThrice's \
              Figure 2 counts its dataset's games by the most players they support, and a sleuth \
              script has as many players as characters. Share: of all the scripts given."
        .into();
    let total = stats.len() as f64;
    for (players, n) in counts {
        t.push(
            vec![
                Cell::Number(Some(players as f64)),
                Cell::Number(Some(n as f64)),
                Cell::Number(Some(n as f64 / total)),
            ],
            false,
        );
    }
    Some(t)
}

/// The distribution as bars, one per number of players; `None` for no scripts. A count is exact, so
/// its "interval" is the count itself (no whisker is drawn).
pub fn figure2(stats: &[ScriptStats]) -> Option<Figure> {
    let counts = counts(stats);
    if counts.is_empty() {
        return None;
    }
    let names: Vec<String> = counts.keys().map(usize::to_string).collect();
    let points: Vec<Point> = counts
        .values()
        .enumerate()
        .map(|(i, &n)| Point {
            x: i as f64,
            value: Interval {
                estimate: n as f64,
                low: n as f64,
                high: n as f64,
                n,
                level: 1.0,
            },
        })
        .collect();
    let most = counts.values().copied().max().unwrap_or(0).max(1);
    Some(Figure {
        id: ID,
        title: "ThinkThrice Figure 2 — scripts by number of players".into(),
        caption: format!(
            "How many of the {} scripts have each number of players (characters), as ThinkThrice's \
             Figure 2 counts its dataset's games by the most players they support.",
            stats.len()
        ),
        x_label: "Players".into(),
        y_label: "Scripts".into(),
        y_max: most as f64,
        x: XAxis::Categories(names),
        style: Style::Bars,
        series: vec![Series {
            name: "Scripts".into(),
            points,
        }],
    })
}

/// Writes the figure (`thinkthrice_figure2.svg`, and `.png` when a font is available) and its table
/// (`thinkthrice_figure2.csv`) into `dir`, created if needed; returns the files written, none for no
/// scripts.
pub fn write(stats: &[ScriptStats], dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let (Some(fig), Some(t)) = (figure2(stats), table(stats)) else {
        return Ok(Vec::new());
    };
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let csv_path = dir.join(format!("{ID}.csv"));
    std::fs::write(&csv_path, csv::to_csv(&t)).map_err(|source| ReportError::Write {
        path: csv_path.clone(),
        source,
    })?;
    let rendered = plots::render(&fig, dir)?;
    let mut files = vec![csv_path, rendered.svg_path];
    files.extend(rendered.png_path);
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(players: usize) -> ScriptStats {
        ScriptStats {
            title: format!("{players} players"),
            source: "sleuth".into(),
            players,
            victims: 1,
            acts: 1,
            clues: 0,
            outside_suspects: 0,
            tokens: 0,
            words: 0,
            clue_words: 0,
            questions: [0; 3],
            full_access_only: 0,
        }
    }

    /// Four scripts of 4, 5, 7 and 7 players: bars at 4 through 7, the empty 6 included.
    #[test]
    fn figure2_counts_scripts_by_players_with_the_gaps() {
        let stats = [script(7), script(4), script(7), script(5)];
        let f = figure2(&stats).expect("a figure");
        assert_eq!(f.id, "thinkthrice_figure2");
        assert_eq!(
            f.x,
            XAxis::Categories(vec!["4".into(), "5".into(), "6".into(), "7".into()])
        );
        let counts: Vec<f64> = f.series[0]
            .points
            .iter()
            .map(|p| p.value.estimate)
            .collect();
        assert_eq!(counts, [1.0, 1.0, 0.0, 2.0]);
        assert_eq!(f.y_max, 2.0);
        let t = table(&stats).expect("a table");
        let csv = csv::to_csv(&t);
        assert_eq!(csv.lines().next(), Some("players,scripts,share"), "{csv}");
        assert!(csv.lines().any(|l| l == "7,2,0.5"), "{csv}");
        assert!(figure2(&[]).is_none() && table(&[]).is_none());

        let dir = tempfile::tempdir().unwrap();
        let files = write(&stats, dir.path()).expect("written");
        assert!(files.contains(&dir.path().join("thinkthrice_figure2.csv")));
        let svg = std::fs::read_to_string(dir.path().join("thinkthrice_figure2.svg")).unwrap();
        assert!(
            svg.contains("<svg") && svg.contains("ThinkThrice Figure 2"),
            "{svg}"
        );
    }
}
