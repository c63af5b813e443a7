//! Suspicion and trust over a game, as small line charts drawn on the server as SVG (no chart
//! library, nothing to load): one line per suspect, the score averaged over whoever scored them, one
//! point per step of the game.
//!
//! Where the numbers come from:
//! - MIRAGE: `result.json`'s `mirage.trust` and `mirage.suspicion` (scorer → scored → a score per
//!   open-conversation phase, 0..=1), as the game recorded them for its metrics;
//! - PLAYER\*: the pruner's `suspects` events in the transcript (each player's suspicion of each
//!   other player per victim, after every round and before the vote), read as a stream.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead;
use std::path::Path;

use serde_json::Value;

/// One chart: a title and a line per name, `None` where nothing was scored at a step.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub steps: Vec<String>,
    pub lines: Vec<(String, Vec<Option<f64>>)>,
}

/// Means over scorers per scored name and step, from scorer → scored → scores by step.
fn mean_by_step(
    by_scorer: &BTreeMap<String, BTreeMap<String, Vec<f64>>>,
) -> Vec<(String, Vec<Option<f64>>)> {
    let mut sums: BTreeMap<&str, Vec<(f64, u32)>> = BTreeMap::new();
    for (scorer, row) in by_scorer {
        for (scored, scores) in row {
            if scorer == scored {
                continue;
            }
            let acc = sums.entry(scored).or_default();
            if acc.len() < scores.len() {
                acc.resize(scores.len(), (0.0, 0));
            }
            for (i, s) in scores.iter().enumerate() {
                acc[i].0 += s;
                acc[i].1 += 1;
            }
        }
    }
    sums.into_iter()
        .map(|(name, acc)| {
            let means = acc
                .into_iter()
                .map(|(s, n)| (n > 0).then(|| s / f64::from(n)))
                .collect();
            (name.to_string(), means)
        })
        .collect()
}

/// MIRAGE's trust and suspicion charts, from a result's `mirage` outcome.
pub fn mirage(result: &Value) -> Vec<Chart> {
    let Some(m) = result.get("mirage") else {
        return Vec::new();
    };
    let mut charts = Vec::new();
    for (key, title) in [
        ("suspicion", "Suspicion (mean of the others' scores)"),
        ("trust", "Trust (mean of the others' scores)"),
    ] {
        let Ok(by) =
            serde_json::from_value::<BTreeMap<String, BTreeMap<String, Vec<f64>>>>(m[key].clone())
        else {
            continue;
        };
        let lines = mean_by_step(&by);
        let n = lines.iter().map(|l| l.1.len()).max().unwrap_or(0);
        if n == 0 {
            continue;
        }
        charts.push(Chart {
            title: title.into(),
            x_label: "open-conversation phase".into(),
            steps: (1..=n).map(|i| i.to_string()).collect(),
            lines,
        });
    }
    charts
}

/// PLAYER\*'s suspicion chart, from the `suspects` events of a transcript: each suspect's suspicion
/// averaged over the players and victims that scored it, per round (and before the vote).
pub fn player(transcript: &Path) -> Vec<Chart> {
    let Ok(f) = std::fs::File::open(transcript) else {
        return Vec::new();
    };
    // step label → suspect → (sum, n); steps in order of first appearance.
    let mut steps: Vec<String> = Vec::new();
    let mut sums: BTreeMap<String, BTreeMap<usize, (f64, u32)>> = BTreeMap::new();
    for line in std::io::BufReader::new(f).lines() {
        let Ok(line) = line else { break };
        // Cheap test before parsing: most lines are not the pruner's.
        if !line.contains("\"suspects\"") {
            continue;
        }
        let Ok(e) = serde_json::from_str::<sleuth_game::transcript::Event>(&line) else {
            continue;
        };
        let Some(data) = e.data.filter(|_| e.kind == "suspects") else {
            continue;
        };
        let step = match data.get("round").and_then(Value::as_u64) {
            Some(r) => format!("round {r}"),
            None => "vote".to_string(),
        };
        let i = match steps.iter().position(|s| *s == step) {
            Some(i) => i,
            None => {
                steps.push(step);
                steps.len() - 1
            }
        };
        if let Some(reasons) = data.get("reasons").and_then(Value::as_object) {
            for (suspect, r) in reasons {
                if let Some(s) = r.get("suspicion").and_then(Value::as_f64) {
                    let acc = sums
                        .entry(suspect.clone())
                        .or_default()
                        .entry(i)
                        .or_default();
                    acc.0 += s;
                    acc.1 += 1;
                }
            }
        }
    }
    if steps.is_empty() {
        return Vec::new();
    }
    let lines = sums
        .into_iter()
        .map(|(name, by_step)| {
            let points = (0..steps.len())
                .map(|i| {
                    by_step
                        .get(&i)
                        .filter(|(_, n)| *n > 0)
                        .map(|(s, n)| s / f64::from(*n))
                })
                .collect();
            (name, points)
        })
        .collect();
    vec![Chart {
        title: "Suspicion (PLAYER* pruner: mean over players and victims)".into(),
        x_label: "step".into(),
        steps,
        lines,
    }]
}

/// Colours of the lines, distinguishable and readable on white.
const COLOURS: [&str; 8] = [
    "#2457c5", "#c0392b", "#1c7c3c", "#8e44ad", "#d48806", "#16a2b8", "#6d4c41", "#e83e8c",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The chart as an SVG element (y from 0 to 1), with a legend and a title for screen readers.
pub fn svg(c: &Chart) -> String {
    let (w, h, left, right, top, bottom) = (640.0, 240.0, 40.0, 170.0, 16.0, 34.0);
    let (pw, ph) = (w - left - right, h - top - bottom);
    let n = c.steps.len().max(1);
    let x = |i: usize| {
        if n == 1 {
            left + pw / 2.0
        } else {
            left + pw * i as f64 / (n - 1) as f64
        }
    };
    let y = |v: f64| top + ph * (1.0 - v.clamp(0.0, 1.0));
    let mut o = String::new();
    let _ = write!(
        o,
        "<svg class=\"chart\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{}\"><title>{}</title>",
        esc(&c.title),
        esc(&c.title)
    );
    for t in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let _ = write!(
            o,
            "<line x1=\"{left}\" x2=\"{}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#e3e7ee\"/>\
             <text x=\"{}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"#5d6677\">{t}</text>",
            left + pw,
            left - 4.0,
            y(t) + 3.0,
            yy = y(t)
        );
    }
    for (i, s) in c.steps.iter().enumerate() {
        let _ = write!(
            o,
            "<text x=\"{:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\" fill=\"#5d6677\">{}</text>",
            x(i),
            top + ph + 14.0,
            esc(s)
        );
    }
    let _ = write!(
        o,
        "<text x=\"{:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\" fill=\"#5d6677\">{}</text>",
        left + pw / 2.0,
        h - 4.0,
        esc(&c.x_label)
    );
    for (k, (name, points)) in c.lines.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let pts: Vec<String> = points
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| format!("{:.1},{:.1}", x(i), y(v))))
            .collect();
        if pts.len() > 1 {
            let _ = write!(
                o,
                "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>",
                pts.join(" ")
            );
        }
        for p in &pts {
            if let Some((px, py)) = p.split_once(',') {
                let _ = write!(
                    o,
                    "<circle cx=\"{px}\" cy=\"{py}\" r=\"3\" fill=\"{colour}\"/>"
                );
            }
        }
        let ly = top + 12.0 + 16.0 * k as f64;
        let _ = write!(
            o,
            "<rect x=\"{}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{colour}\"/>\
             <text x=\"{}\" y=\"{:.1}\" font-size=\"11\" fill=\"#1d2330\">{}</text>",
            left + pw + 12.0,
            ly - 9.0,
            left + pw + 26.0,
            ly,
            esc(name)
        );
    }
    o.push_str("</svg>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mirage_scores_are_averaged_over_the_other_scorers_per_phase() {
        let r = json!({"mirage": {
            "suspicion": {"Ada": {"Ben": [0.2, 0.6], "Ada": [1.0, 1.0]}, "Cy": {"Ben": [0.4, 0.8]}},
            "trust": {"Ada": {"Ben": [0.5]}}
        }});
        let charts = mirage(&r);
        assert_eq!(charts.len(), 2);
        let s = &charts[0];
        assert_eq!(s.steps, ["1", "2"]);
        assert_eq!(s.lines.len(), 1, "a self-score is left out: {s:?}");
        let ben = &s.lines[0];
        assert_eq!(ben.0, "Ben");
        assert!((ben.1[0].expect("phase 1") - 0.3).abs() < 1e-9);
        assert!((ben.1[1].expect("phase 2") - 0.7).abs() < 1e-9);
        let svg = svg(s);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains("polyline") && svg.contains(">Ben<"));
        assert!(mirage(&json!({"winner": "murderer"})).is_empty());
    }

    #[test]
    fn player_suspicion_is_read_from_the_pruners_events() {
        use std::io::Write;
        let mut f = tempfile::NamedTempFile::new().expect("temp file");
        for (round, s) in [(Some(1), 0.4), (Some(1), 0.6), (None, 0.9)] {
            let e = sleuth_game::transcript::Event {
                seq: 0,
                ts: String::new(),
                stage: "play".into(),
                kind: "suspects".into(),
                speaker: "Ada".into(),
                addressee: None,
                text: String::new(),
                visible_to: sleuth_game::transcript::Visibility::Only(vec!["Ada".into()]),
                usage: None,
                data: Some(
                    json!({"round": round, "victim": "V", "reasons": {"Cy <b>": {"suspicion": s}}}),
                ),
            };
            writeln!(f, "{}", serde_json::to_string(&e).expect("json")).expect("write");
        }
        let charts = player(f.path());
        assert_eq!(charts.len(), 1);
        assert_eq!(charts[0].steps, ["round 1", "vote"]);
        let (name, points) = &charts[0].lines[0];
        assert_eq!(name, "Cy <b>");
        assert!((points[0].expect("round 1") - 0.5).abs() < 1e-9);
        assert!((points[1].expect("vote") - 0.9).abs() < 1e-9);
        assert!(
            svg(&charts[0]).contains("Cy &lt;b&gt;"),
            "names are escaped"
        );
    }
}
