//! `sleuth export` end to end: a small sweep played by the binary against the simulated model,
//! exported as Parquet and CSV, read back with the `parquet` crate's reader and checked against what
//! the run holds — the store's finished games and ledger rows, the transcripts' answers and the
//! results' counts — then exported again, unchanged (no new part) and after a second sweep in the
//! same run directory (only its games and calls are added).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use common::{crate_file, sleuth_in, sleuth_ok};
use sleuth::export::manifest::Manifest;
use sleuth::export::readback::{self, ReadBack};
use sleuth::export::table::Value;
use sleuth::export::{csv_file, schemas, TABLES};
use sleuth::store::StoreReader;

/// A sweep file `NAME.toml` in `dir` writing to `dir/run`: `body` after the common header.
fn sweep_file(dir: &Path, name: &str, script: &str, body: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    let script = crate_file("examples").join(script);
    let text = format!(
        "name = \"{name}\"\nout = \"run\"\nscripts = [{script:?}]\nconcurrency = 4\n{body}\n\
         [models.sim]\nprovider = \"simulated\"\nlatency_ms = 0\n"
    );
    fs::write(&path, text).expect("sweep file");
    path
}

/// WellPlay, O-CoT, one and two rounds, two seeds, each multiple-choice question asked twice.
const WELLPLAY: &str = "repeats = 2\n[game]\nprotocol = \"wellplay\"\nframework = \"ocot\"\n\
     model = \"sim\"\n[axes]\nrounds = [1, 2]\n[evaluation]\nrepeats = 2\n";
/// One ThinkThrice game: factual and inferential answers.
const THINKTHRICE: &str = "repeats = 1\n[game]\nprotocol = \"thinkthrice\"\nmodel = \"sim\"\n";

fn run_sweep(dir: &Path, file: &Path) {
    sleuth_ok(dir, &["sweep", "run", file.to_str().expect("utf-8 path")]);
}

fn export(dir: &Path, out: &str, extra: &[&str]) -> String {
    let mut args = vec!["export", "run", "--out", out];
    args.extend_from_slice(extra);
    sleuth_ok(dir, &args)
}

/// Every Parquet part of `table` the manifest lists, read back and concatenated.
fn read_table(out: &Path, m: &Manifest, table: &str) -> ReadBack {
    let mut all: Option<ReadBack> = None;
    for file in m.files(out, table, "parquet") {
        let part = readback::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        match &mut all {
            None => all = Some(part),
            Some(a) => {
                assert_eq!(a.columns, part.columns, "{table}: parts of one schema");
                a.rows.extend(part.rows);
            }
        }
    }
    all.unwrap_or_else(|| panic!("{table}: no parts in {}", out.display()))
}

/// Every CSV part of `table`, header checked, records concatenated.
fn read_csv(out: &Path, m: &Manifest, table: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for file in m.files(out, table, "csv") {
        let mut r =
            csv::Reader::from_path(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let header: Vec<String> = r
            .headers()
            .expect("header")
            .iter()
            .map(String::from)
            .collect();
        let (_, columns) = schemas()
            .into_iter()
            .find(|(t, _)| *t == table)
            .expect("a table");
        assert_eq!(
            header,
            columns.iter().map(|c| c.name).collect::<Vec<_>>(),
            "{table}.csv header"
        );
        rows.extend(r.records().map(|rec| {
            rec.expect("record")
                .iter()
                .map(String::from)
                .collect::<Vec<_>>()
        }));
    }
    rows
}

fn manifest(out: &Path) -> Manifest {
    Manifest::load(out)
        .expect("export.json reads")
        .expect("an export.json")
}

fn text(v: &Value) -> &str {
    match v {
        Value::Text(s) => s,
        other => panic!("expected text, got {other:?}"),
    }
}

/// The answer events of every transcript under `run/games`: (game, count).
fn answer_events(run: &Path) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for dir in fs::read_dir(run.join("games")).expect("games dir") {
        let dir = dir.expect("entry").path();
        let game = dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let Ok(text) = fs::read_to_string(dir.join("transcript.jsonl")) else {
            continue;
        };
        let n = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("an event"))
            .filter(|e| {
                matches!(
                    e["kind"].as_str(),
                    Some("factual_answer" | "inferential_answer" | "choice_answer")
                )
            })
            .count();
        out.insert(game, n);
    }
    out
}

/// What the results count as answered: factual answers by category and multiple-choice answers
/// over all repeats.
fn answers_in_results(run: &Path, games: &BTreeSet<String>) -> usize {
    games
        .iter()
        .map(|g| {
            let path = run.join("games").join(g).join("result.json");
            let r: serde_json::Value =
                serde_json::from_str(&fs::read_to_string(&path).expect("result")).expect("json");
            let factual: u64 = r["factual"]["counts"]
                .as_object()
                .map_or(0, |c| c.values().filter_map(|v| v.as_u64()).sum());
            let choice = r["choice"]["overall"]["questions"].as_u64().unwrap_or(0);
            (factual + choice) as usize
        })
        .sum()
}

#[test]
fn a_sweep_exports_to_typed_tables_and_a_second_export_adds_only_what_is_new() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let first = sweep_file(dir, "first", "night-ferry.toml", WELLPLAY);
    run_sweep(dir, &first);
    let printed = export(
        dir,
        "data",
        &["--format", "parquet,csv", "--games-per-part", "3"],
    );
    assert!(printed.contains("games"), "{printed}");
    let out = dir.join("data");
    let run = dir.join("run");
    let m = manifest(&out);

    // Row counts against the run.
    let reader = StoreReader::open(&run.join("sleuth.db")).expect("store");
    let done: BTreeSet<String> = reader
        .games_in_state("done")
        .expect("games")
        .into_iter()
        .map(|g| g.id)
        .collect();
    assert_eq!(done.len(), 4, "two seeds × two arms");
    let games = read_table(&out, &m, "games");
    let exported: BTreeSet<String> = games
        .column("game")
        .into_iter()
        .map(|v| text(v).to_string())
        .collect();
    assert_eq!(exported, done, "one row per finished game");
    assert_eq!(games.rows.len(), done.len());
    assert!(
        m.parts["games"].len() >= 2,
        "three games per part: {:?}",
        m.parts
    );
    let calls = read_table(&out, &m, "calls");
    assert_eq!(
        calls.rows.len() as u64,
        reader.ledger_count().expect("ledger")
    );
    let answers = read_table(&out, &m, "answers");
    let in_transcripts: usize = answer_events(&run).values().sum();
    assert_eq!(answers.rows.len(), in_transcripts);
    // The results count factual and multiple-choice answers (inferential ones only as a share).
    let counted = answers
        .column("kind")
        .into_iter()
        .filter(|k| text(k) != "inferential")
        .count();
    assert_eq!(
        counted,
        answers_in_results(&run, &done),
        "as the results count them"
    );
    let events = read_table(&out, &m, "events");
    let lines: usize = done
        .iter()
        .map(|g| {
            fs::read_to_string(run.join("games").join(g).join("transcript.jsonl"))
                .expect("transcript")
                .lines()
                .count()
        })
        .sum();
    assert_eq!(events.rows.len(), lines, "every event of every game");
    assert!(
        events.column("text").iter().all(|v| **v == Value::Null),
        "no text without --with-text"
    );

    check_types_characters_and_csv(&out, &m, &games, done.len());

    // Nothing new: no part written, the manifest's parts unchanged; what a stopped export left
    // (a part it wrote but never listed, a temporary file) is removed.
    let files_before = count_files(&out);
    let orphan = out.join("games/part-000099.parquet");
    let tmp = out.join("csv/events/.part-000099.csv.tmp");
    fs::copy(&m.files(&out, "games", "parquet")[0], &orphan).expect("an unlisted part");
    fs::write(&tmp, "half a fi").expect("a temporary file");
    let again = export(dir, "data", &["--format", "parquet,csv"]);
    assert!(again.contains("Nothing new"), "{again}");
    assert_eq!(count_files(&out), files_before);
    assert!(
        !orphan.exists() && !tmp.exists(),
        "a stopped export's files are removed"
    );
    assert_eq!(manifest(&out).parts, m.parts);

    // A second sweep in the same run directory: only its game and its calls are added.
    let second = sweep_file(dir, "second", "glasshouse.toml", THINKTHRICE);
    run_sweep(dir, &second);
    export(dir, "data", &["--format", "parquet,csv"]);
    let m2 = manifest(&out);
    let games2 = read_table(&out, &m2, "games");
    let now_done = reader.games_in_state("done").expect("games").len();
    assert_eq!(games2.rows.len(), now_done, "every finished game once");
    assert_eq!(now_done, done.len() + 1);
    let new_part = m2.parts["games"].last().expect("a part");
    assert!(
        !m.parts["games"].contains(new_part),
        "a new part for the new game"
    );
    let only_new =
        readback::read(&out.join("games").join(format!("{new_part}.parquet"))).expect("part");
    assert_eq!(
        only_new.rows.len(),
        1,
        "the new part holds only the new game"
    );
    assert_eq!(
        only_new.column("protocol"),
        [&Value::Text("thinkthrice".into())]
    );
    let calls2 = read_table(&out, &m2, "calls");
    assert_eq!(
        calls2.rows.len() as u64,
        reader.ledger_count().expect("ledger")
    );
    let ids: BTreeSet<i64> = calls2
        .column("call")
        .into_iter()
        .map(|v| match v {
            Value::Int(id) => *id,
            other => panic!("a call id, not {other:?}"),
        })
        .collect();
    assert_eq!(ids.len(), calls2.rows.len(), "no call exported twice");
    let answers2 = read_table(&out, &m2, "answers");
    assert_eq!(
        answers2.rows.len(),
        answer_events(&run).values().sum::<usize>()
    );
    let kinds: BTreeSet<&str> = answers2.column("kind").into_iter().map(text).collect();
    assert_eq!(kinds, BTreeSet::from(["choice", "factual", "inferential"]));
    let own = read_table(&out, &m2, "characters");
    assert!(
        own.column("factual_own")
            .iter()
            .any(|v| matches!(v, Value::Float(_))),
        "ThinkThrice characters have their own accuracies"
    );
}

fn count_files(dir: &Path) -> usize {
    let mut n = 0;
    for e in fs::read_dir(dir).expect("dir") {
        let p = e.expect("entry").path();
        n += if p.is_dir() { count_files(&p) } else { 1 };
    }
    n
}

#[test]
fn bad_input_is_refused_with_the_path_and_what_was_expected() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    fs::create_dir_all(dir.join("empty")).expect("dir");
    let (ok, _, err) = sleuth_in(dir, &["export", "empty", "--out", "x"]);
    assert!(!ok);
    assert!(
        err.contains("empty") && err.contains("not a run directory"),
        "{err}"
    );
    assert!(!dir.join("x").exists(), "nothing written for a bad run");

    let file = sweep_file(dir, "one", "night-ferry.toml", THINKTHRICE);
    run_sweep(dir, &file);
    fs::create_dir_all(dir.join("notes")).expect("dir");
    fs::write(dir.join("notes/thesis.tex"), "x").expect("file");
    let (ok, _, err) = sleuth_in(dir, &["export", "run", "--out", "notes"]);
    assert!(!ok);
    assert!(
        err.contains("notes") && err.contains("no export.json"),
        "{err}"
    );

    let (ok, _, err) = sleuth_in(dir, &["export", "run", "--out", "x", "--format", "xlsx"]);
    assert!(!ok && err.contains("xlsx"), "{err}");

    export(dir, "data", &[]);
    let (ok, _, err) = sleuth_in(dir, &["export", "run", "--out", "data", "--format", "csv"]);
    assert!(!ok && err.contains("--format parquet"), "{err}");

    // Another run's export directory.
    let other = dir.join("other");
    fs::create_dir_all(&other).expect("dir");
    let file = sweep_file(&other, "two", "night-ferry.toml", THINKTHRICE);
    run_sweep(&other, &file);
    let data = dir.join("data");
    let (ok, _, err) = sleuth_in(
        &other,
        &["export", "run", "--out", data.to_str().expect("utf-8")],
    );
    assert!(!ok);
    assert!(err.contains("another run") && err.contains("data"), "{err}");
}

/// The exported tables' types as documented (in every table that has a part); the characters (one
/// murderer per game, the votes they received summing to the votes cast); CSV and Parquet holding
/// the same rows.
fn check_types_characters_and_csv(out: &Path, m: &Manifest, games: &ReadBack, done: usize) {
    // Types as documented, in every table that has a part.
    for (table, columns) in schemas() {
        if !m.parts.contains_key(table) {
            continue;
        }
        let back = read_table(out, m, table);
        let expected: Vec<(String, _)> =
            columns.iter().map(|c| (c.name.to_string(), c.ty)).collect();
        assert_eq!(back.columns, expected, "{table}: the documented schema");
    }
    assert!(
        !m.parts.contains_key("annotations"),
        "no campaign, no annotations part"
    );

    // The characters: one murderer per game, the votes they received summing to the votes cast.
    let chars = read_table(out, m, "characters");
    let murderers = chars
        .column("murderer")
        .iter()
        .filter(|v| ***v == Value::Bool(true))
        .count();
    assert_eq!(murderers, done, "Night Ferry has one murderer");
    let received: i64 = chars
        .column("votes_received")
        .iter()
        .map(|v| if let Value::Int(n) = v { *n } else { 0 })
        .sum();
    let cast: i64 = games
        .column("votes_cast")
        .iter()
        .map(|v| if let Value::Int(n) = v { *n } else { 0 })
        .sum();
    assert_eq!(received, cast);
    let points: Vec<&Value> = chars.column("choice_points");
    assert!(
        points.iter().all(|v| matches!(v, Value::Int(_))),
        "WellPlay: every player has points"
    );

    // CSV and Parquet hold the same rows.
    for table in TABLES.into_iter().filter(|t| m.parts.contains_key(*t)) {
        let parquet: Vec<Vec<String>> = read_table(out, m, table)
            .rows
            .iter()
            .map(|r| r.iter().map(csv_file::field).collect())
            .collect();
        assert_eq!(read_csv(out, m, table), parquet, "{table}: CSV and Parquet");
    }
}

/// A sweep against `sleuth mock-llm` answering after 30 ms and failing a fifth of its requests
/// (429s and 500s): every live call's row carries its latency, at least the mock's, and the retries
/// before it, which add up to the ledger's `retry` rows; rows that had no attempt of their own have
/// no latency.
#[test]
fn calls_carry_each_live_calls_latency_and_retries() {
    let mock = common::Mock::start_with(sleuth::mockllm::MockConfig {
        latency: std::time::Duration::from_millis(30),
        error_rate: 0.2,
        fault_seed: 7,
        retry_after_ms: 1,
        ..Default::default()
    });
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let body = format!(
        "repeats = 1\n[game]\nprotocol = \"wellplay\"\nframework = \"ocot\"\nrounds = 1\n\
         model = \"mock\"\n[evaluation]\nrepeats = 1\n[gateway]\nmax_retries = 12\n\
         retry_base_ms = 1\n[models.mock]\nprovider = \"openai\"\nbase_url = \"{}\"\n\
         model = \"sim-1\"\napi_key_env = \"PATH\"\n",
        mock.base_url()
    );
    let file = sweep_file(dir, "timed", "night-ferry.toml", &body);
    run_sweep(dir, &file);
    let stats = mock.stats();
    assert!(
        stats.rate_limited + stats.server_errors > 0,
        "faults were injected: {stats:?}"
    );
    export(dir, "data", &[]);
    let out = dir.join("data");
    let calls = read_table(&out, &manifest(&out), "calls");
    let (source, latency, retries) = (
        calls.column("source"),
        calls.column("latency_ms"),
        calls.column("retries"),
    );
    let int = |v: &Value| match v {
        Value::Int(n) => Some(*n),
        Value::Null => None,
        other => panic!("an integer cell, not {other:?}"),
    };
    let (mut live, mut retry_rows, mut retried) = (0, 0, 0);
    for i in 0..calls.rows.len() {
        match text(source[i]) {
            "live" => {
                live += 1;
                let ms = int(latency[i]).expect("a live call has a latency");
                assert!(ms >= 30, "row {i}: {ms} ms, under the mock's 30");
                retried += int(retries[i]).expect("retries");
            }
            "retry" => {
                retry_rows += 1;
                assert_eq!(int(latency[i]), None, "a failed attempt has no answer time");
            }
            other => panic!("row {i}: a {other} row in a first run against the mock"),
        }
    }
    assert_eq!(live, stats.ok, "one live row per answered request");
    assert_eq!(retry_rows, stats.rate_limited + stats.server_errors);
    assert_eq!(
        retried, retry_rows as i64,
        "each retry counted on the call it preceded"
    );
}
