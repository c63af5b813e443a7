//! `docs/analysis.md` run as written: a small WellPlay sweep (two models × rounds × questions per
//! round) played by the binary against the simulated model, reported and exported, then every
//! `# analysis: QUESTION/LIBRARY` snippet of the page run by the Python of the virtualenv
//! `scripts/ensure-analysis.sh` keeps (pandas, polars, DuckDB, pyarrow from PyPI).
//!
//! Checked: each question gets the same answer from the three libraries; the row counts equal the
//! store's finished games, the answer events in the transcripts and the ledger's rows; cost per
//! correct answer equals the ledger's and the results' costs over the transcripts' right answers;
//! the win rates equal the results' winners per axis cell; and PLAYER* Table A3's Overall cells
//! recomputed from the export equal the report's `player_table_a3.csv`.
//!
//! Without Python or the virtualenv the test is skipped with a note; under `CI=true` it fails
//! (`common::skip_or_fail`).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

/// Two models (the simulated one at full skill and at skill 0.4, priced differently) × one and two
/// rounds × one and two questions per round, two seeds, each multiple-choice question asked twice:
/// 16 games of a few hundred calls each, about three seconds in a debug build.
const SWEEP: &str = r#"
name = "analysis"
out = "run"
repeats = 2
seed = 1
concurrency = 8

[game]
protocol = "wellplay"
framework = "ocot"

[axes]
model = ["sim-a", "sim-b"]
rounds = [1, 2]
questions_per_round = [1, 2]

[evaluation]
repeats = 2

[models.sim-a]
provider = "simulated"
latency_ms = 0
input_usd_per_mtok = 3.0
output_usd_per_mtok = 6.0

[models.sim-b]
provider = "simulated"
model = "sim-1:0.4"
latency_ms = 0
input_usd_per_mtok = 1.0
output_usd_per_mtok = 2.0
"#;

const LIBRARIES: [&str; 3] = ["pandas", "polars", "duckdb"];
const QUESTIONS: [&str; 4] = [
    "row-counts",
    "cost-per-correct",
    "win-rate-by-axes",
    "table-a3-overall",
];

/// The venv's python, from `scripts/ensure-analysis.sh` (which installs it the first time and
/// otherwise only checks it); `None` after a skip note when it cannot be had outside CI.
fn analysis_python() -> Option<PathBuf> {
    let script = common::crate_file("scripts/ensure-analysis.sh");
    let mut cmd = Command::new("bash");
    cmd.arg(&script);
    let out = common::run(&mut cmd, Duration::from_secs(1200));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let python = stdout
        .lines()
        .find_map(|l| l.strip_prefix("python="))
        .map(PathBuf::from);
    match python {
        Some(p) if out.status.success() && p.is_file() => Some(p),
        _ => {
            common::skip_or_fail(
                common::under_ci(),
                &format!(
                    "scripts/ensure-analysis.sh found no Python with pandas, polars, duckdb and \
                     pyarrow ({}):\n{}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                ),
                "it installs them from PyPI into ~/.cache/sleuth/analysis/venv; scripts/test.sh \
                 runs it first",
            );
            None
        }
    }
}

/// Every ```python block of `md` whose first line is `# analysis: QUESTION/LIBRARY`:
/// (question, library) → code.
fn snippets(md: &str) -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    let mut lines = md.lines();
    while let Some(line) = lines.next() {
        if line.trim_end() != "```python" {
            continue;
        }
        let block: Vec<&str> = lines
            .by_ref()
            .take_while(|l| l.trim_end() != "```")
            .collect();
        let Some(name) = block.first().and_then(|l| l.strip_prefix("# analysis: ")) else {
            continue;
        };
        let (question, library) = name
            .trim()
            .split_once('/')
            .unwrap_or_else(|| panic!("marker {name:?} is not QUESTION/LIBRARY"));
        let code = block.join("\n") + "\n";
        let previous = out.insert((question.to_string(), library.to_string()), code);
        assert!(previous.is_none(), "two snippets marked {name:?}");
    }
    out
}

/// Runs one snippet with `SLEUTH_EXPORT=export` and returns the JSON of its last line.
fn run_snippet(python: &Path, dir: &Path, export: &Path, name: &str, code: &str) -> Value {
    let file = dir.join(format!("{}.py", name.replace('/', "-")));
    fs::write(&file, code).expect("write snippet");
    let mut cmd = Command::new(python);
    cmd.arg(&file)
        .current_dir(dir)
        .env_clear()
        .env("SLEUTH_EXPORT", export);
    for var in ["PATH", "HOME"] {
        if let Some(v) = std::env::var_os(var) {
            cmd.env(var, v);
        }
    }
    let out = common::run(&mut cmd, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "snippet {name} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_else(|| panic!("snippet {name} printed nothing"));
    serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("snippet {name}: last line is not JSON ({e}): {last}"))
}

/// Floats equal but for the last bits a different summation order moves.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
}

/// `a` and `b` the same JSON: keys and strings exactly, integers exactly (a count printed as a float
/// is a difference a reader sees), floats to [`close`].
fn assert_same(a: &Value, b: &Value, at: &str) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let kx: Vec<&String> = x.keys().collect();
            let ky: Vec<&String> = y.keys().collect();
            assert_eq!(kx, ky, "{at}: keys");
            for (k, v) in x {
                assert_same(v, &y[k], &format!("{at}.{k}"));
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}: rows");
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                assert_same(v, w, &format!("{at}[{i}]"));
            }
        }
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            assert!(
                x.is_f64() && y.is_f64(),
                "{at}: {x} and {y}, a float and an integer"
            );
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!(close(x, y), "{at}: {x} ≠ {y}");
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

fn int(v: &Value, at: &str) -> i64 {
    v.as_i64()
        .unwrap_or_else(|| panic!("{at}: not an integer: {v}"))
}

fn float(v: &Value, at: &str) -> f64 {
    v.as_f64()
        .unwrap_or_else(|| panic!("{at}: not a number: {v}"))
}

fn rows(v: &Value, at: &str) -> Vec<serde_json::Map<String, Value>> {
    v.as_array()
        .unwrap_or_else(|| panic!("{at}: not a list of rows: {v}"))
        .iter()
        .map(|r| r.as_object().expect("a row").clone())
        .collect()
}

/// One finished game as the store holds it, with its transcript's answers counted.
struct Game {
    model: String,
    rounds: i64,
    questions_per_round: i64,
    winner: Option<String>,
    cost_usd: f64,
    answers: usize,
    correct: usize,
    events: usize,
}

/// The done games of the store, each with its result (from the store) and transcript (from disk).
fn done_games(run: &Path, db: &rusqlite::Connection) -> BTreeMap<String, Game> {
    let mut stmt = db
        .prepare(
            "SELECT g.id, r.result FROM games g JOIN results r ON r.game = g.id \
             WHERE g.state = 'done'",
        )
        .expect("prepare");
    let found: Vec<(String, String)> = stmt
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect();
    found
        .into_iter()
        .map(|(id, result)| {
            let r: Value = serde_json::from_str(&result).expect("result JSON");
            let transcript =
                fs::read_to_string(run.join("games").join(&id).join("transcript.jsonl"))
                    .expect("transcript");
            let events: Vec<Value> = transcript
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| serde_json::from_str(l).expect("an event"))
                .collect();
            let answers: Vec<&Value> = events
                .iter()
                .filter(|e| {
                    matches!(
                        e["kind"].as_str(),
                        Some("factual_answer" | "inferential_answer" | "choice_answer")
                    )
                })
                .collect();
            let game = Game {
                model: r["model"].as_str().expect("model").to_string(),
                rounds: int(&r["settings"]["rounds"], "settings.rounds"),
                questions_per_round: int(
                    &r["settings"]["questions_per_round"],
                    "settings.questions_per_round",
                ),
                winner: r["winner"].as_str().map(String::from),
                cost_usd: float(&r["usage"]["cost_usd"], "usage.cost_usd"),
                answers: answers.len(),
                correct: answers
                    .iter()
                    .filter(|e| e["data"]["correct"] == Value::Bool(true))
                    .count(),
                events: events.len(),
            };
            (id, game)
        })
        .collect()
}

/// A CSV file's records under its header, as maps.
fn read_csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header: Vec<String> = r
        .headers()
        .expect("header")
        .iter()
        .map(String::from)
        .collect();
    r.records()
        .map(|rec| {
            header
                .iter()
                .cloned()
                .zip(rec.expect("record").iter().map(String::from))
                .collect()
        })
        .collect()
}

/// `key=value` from `arms.csv`'s settings (`a=1, b="x y", c=2`).
fn setting(settings: &str, key: &str) -> i64 {
    settings
        .split(", ")
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {key} in {settings:?}"))
        .parse()
        .expect("an integer setting")
}

#[test]
fn every_snippet_of_the_analysis_page_agrees_across_libraries_and_with_the_run() {
    let md = fs::read_to_string(common::crate_file("docs/analysis.md")).expect("docs/analysis.md");
    let snippets = snippets(&md);
    let expected: BTreeSet<(String, String)> = QUESTIONS
        .iter()
        .flat_map(|q| LIBRARIES.iter().map(|l| (q.to_string(), l.to_string())))
        .collect();
    assert_eq!(
        snippets.keys().cloned().collect::<BTreeSet<_>>(),
        expected,
        "docs/analysis.md answers every question in every library"
    );
    let Some(python) = analysis_python() else {
        return;
    };

    // Play, report, export.
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let sweep = dir.join("analysis.toml");
    let script = common::crate_file("examples/night-ferry.toml");
    fs::write(&sweep, format!("scripts = [{script:?}]\n{SWEEP}")).expect("sweep file");
    common::sleuth_ok(dir, &["sweep", "run", sweep.to_str().expect("utf-8")]);
    common::sleuth_ok(dir, &["report", "run"]);
    common::sleuth_ok(dir, &["export", "run", "--out", "data"]);
    let run = dir.join("run");
    let export = dir.join("data");

    // Every snippet, then the three libraries against each other.
    let mut answers: BTreeMap<&str, Value> = BTreeMap::new();
    for question in QUESTIONS {
        let outs: Vec<Value> = LIBRARIES
            .iter()
            .map(|lib| {
                let key = (question.to_string(), lib.to_string());
                let name = format!("{question}/{lib}");
                run_snippet(&python, dir, &export, &name, &snippets[&key])
            })
            .collect();
        for (lib, out) in LIBRARIES.iter().zip(&outs).skip(1) {
            assert_same(&outs[0], out, &format!("{question}: pandas vs {lib}"));
        }
        answers.insert(question, outs.into_iter().next().expect("pandas"));
    }

    // What the run holds.
    let db = rusqlite::Connection::open_with_flags(
        run.join("sleuth.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("the store");
    let games = done_games(&run, &db);
    assert_eq!(
        games.len(),
        16,
        "2 models × 2 × 2 axis values × 2 seeds, all done"
    );
    let ledger_rows: i64 = db
        .query_row("SELECT count(*) FROM ledger", [], |r| r.get(0))
        .expect("ledger count");
    let mut ledger_by_model: BTreeMap<String, f64> = BTreeMap::new();
    {
        let mut stmt = db
            .prepare("SELECT model, sum(cost_usd) FROM ledger GROUP BY model")
            .expect("prepare");
        let found = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?)))
            .expect("query");
        for row in found {
            let (model, cost) = row.expect("row");
            ledger_by_model.insert(model, cost);
        }
    }

    check_row_counts(&answers["row-counts"], &games, ledger_rows, &export);
    check_cost_per_correct(&answers["cost-per-correct"], &games, &ledger_by_model);
    check_win_rates(&answers["win-rate-by-axes"], &games);
    check_table_a3(&answers["table-a3-overall"], &run.join("report"));
}

/// Question 0, row counts: the store's done games, the transcripts' answers and events, the ledger,
/// and what export.json says it wrote.
fn check_row_counts(
    counts: &Value,
    games: &BTreeMap<String, Game>,
    ledger_rows: i64,
    export: &Path,
) {
    assert_eq!(int(&counts["games"], "games"), games.len() as i64);
    let in_transcripts: usize = games.values().map(|g| g.answers).sum();
    assert_eq!(int(&counts["answers"], "answers"), in_transcripts as i64);
    assert!(in_transcripts > 0);
    let events: usize = games.values().map(|g| g.events).sum();
    assert_eq!(int(&counts["events"], "events"), events as i64);
    assert_eq!(int(&counts["calls"], "calls"), ledger_rows);
    let manifest: Value =
        serde_json::from_str(&fs::read_to_string(export.join("export.json")).expect("manifest"))
            .expect("manifest JSON");
    for table in ["games", "characters", "answers", "calls", "events"] {
        assert_eq!(
            counts[table], manifest["rows"][table],
            "{table}: the libraries read what export.json says was written"
        );
    }
}

/// Question 1, cost per correct answer: the results' costs, the ledger's, the transcripts' right answers.
fn check_cost_per_correct(
    answer: &Value,
    games: &BTreeMap<String, Game>,
    ledger_by_model: &BTreeMap<String, f64>,
) {
    let by_model = rows(answer, "cost-per-correct");
    let models: Vec<&str> = by_model
        .iter()
        .map(|r| r["model"].as_str().expect("model"))
        .collect();
    assert_eq!(models, ["sim-a", "sim-b"]);
    for row in &by_model {
        let model = row["model"].as_str().expect("model");
        let mine: Vec<&Game> = games.values().filter(|g| g.model == model).collect();
        let correct: usize = mine.iter().map(|g| g.correct).sum();
        let cost: f64 = mine.iter().map(|g| g.cost_usd).sum();
        let paid = ledger_by_model[model];
        assert_eq!(int(&row["games"], "games"), mine.len() as i64, "{model}");
        assert_eq!(int(&row["correct"], "correct"), correct as i64, "{model}");
        assert!(correct > 0, "{model}: some answers right");
        let at = |k: &str| float(&row[k], &format!("{model}.{k}"));
        assert!(
            close(at("cost_usd"), cost),
            "{model}: {} vs results {cost}",
            at("cost_usd")
        );
        assert!(
            close(at("paid_usd"), paid),
            "{model}: {} vs ledger {paid}",
            at("paid_usd")
        );
        assert!(
            paid > 0.0 && paid <= cost,
            "{model}: cache hits are paid nothing"
        );
        assert!(
            close(at("usd_per_correct"), cost / correct as f64),
            "{model}"
        );
        assert!(
            close(at("paid_usd_per_correct"), paid / correct as f64),
            "{model}"
        );
    }
}

/// Question 2, win rate per (rounds, questions per round), from the results' winners.
fn check_win_rates(answer: &Value, games: &BTreeMap<String, Game>) {
    let cells = rows(answer, "win-rate-by-axes");
    let mut expected: BTreeMap<(i64, i64), (i64, i64)> = BTreeMap::new();
    for g in games.values() {
        if let Some(w) = &g.winner {
            let e = expected
                .entry((g.rounds, g.questions_per_round))
                .or_default();
            e.0 += 1;
            e.1 += i64::from(w == "civilians");
        }
    }
    assert_eq!(expected.len(), 4, "every (n, m) cell ended in votes");
    let got: Vec<(i64, i64)> = cells
        .iter()
        .map(|c| {
            (
                int(&c["rounds"], "rounds"),
                int(&c["questions_per_round"], "m"),
            )
        })
        .collect();
    assert_eq!(
        got,
        expected.keys().copied().collect::<Vec<_>>(),
        "one row per cell, in order"
    );
    for c in &cells {
        let key = (
            int(&c["rounds"], "rounds"),
            int(&c["questions_per_round"], "m"),
        );
        let (n, wins) = expected[&key];
        assert_eq!(int(&c["games"], "games"), n, "{key:?}");
        assert_eq!(int(&c["civilian_wins"], "civilian_wins"), wins, "{key:?}");
        let rate = float(&c["win_rate"], "win_rate");
        assert!(close(rate, wins as f64 / n as f64), "{key:?}: {rate}");
    }
}

/// Question 3, PLAYER* Table A3's per-script Overall cells, against the report's CSV in `report`.
fn check_table_a3(answer: &Value, report: &Path) {
    let arms = read_csv(&report.join("arms.csv"));
    // method → (script, model, rounds, questions per round)
    let method_of: BTreeMap<(String, String, i64, i64), String> = arms
        .iter()
        .map(|a| {
            let key = (
                a["script"].clone(),
                a["model"].clone(),
                setting(&a["settings"], "rounds"),
                setting(&a["settings"], "questions_per_round"),
            );
            (key, a["method"].clone())
        })
        .collect();
    let a3: Vec<BTreeMap<String, String>> = read_csv(&report.join("player_table_a3.csv"))
        .into_iter()
        .filter(|r| !r["script"].starts_with("All scripts"))
        .collect();
    let recomputed = rows(answer, "table-a3-overall");
    assert_eq!(a3.len(), 8, "one Table A3 row per arm");
    assert_eq!(
        recomputed.len(),
        a3.len(),
        "one recomputed cell per Table A3 row"
    );
    let mut seen = BTreeSet::new();
    for cell in &recomputed {
        let script = cell["script"].as_str().expect("script").to_string();
        let key = (
            script.clone(),
            cell["model"].as_str().expect("model").to_string(),
            int(&cell["rounds"], "rounds"),
            int(&cell["questions_per_round"], "questions_per_round"),
        );
        let method = method_of
            .get(&key)
            .unwrap_or_else(|| panic!("no arm in arms.csv for {key:?}"));
        let row = a3
            .iter()
            .find(|r| r["script"] == script && &r["method"] == method)
            .unwrap_or_else(|| panic!("no Table A3 row for {script} · {method}"));
        let num = |k: &str| -> f64 {
            row[k]
                .parse()
                .unwrap_or_else(|e| panic!("{method}: {k} = {:?}: {e}", row[k]))
        };
        assert_eq!(
            int(&cell["games"], "games") as f64,
            num("games"),
            "{method}"
        );
        for k in ["overall_mean", "overall_std"] {
            let (mine, theirs) = (float(&cell[k], k), num(k));
            assert!(
                close(mine, theirs),
                "{method}: {k} {mine} vs the report's {theirs}"
            );
        }
        assert!(seen.insert(method.clone()), "{method} recomputed twice");
    }
    assert!(
        recomputed
            .iter()
            .any(|c| float(&c["overall_std"], "overall_std") > 0.0),
        "the runs differ somewhere, so the ± is tested"
    );
}
