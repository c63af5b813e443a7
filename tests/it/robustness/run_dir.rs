//! A run directory's readers and its damaged files (issue 33, items 7 and 8), with the real binary:
//!
//! - a damaged batch journal (`batches.db`) stops `sweep run` with a message naming the file and the
//!   way out, which works; `sweep status` still prints the store's progress, with the journal's
//!   problem as one line, and reads the journal without writing it (its journal mode unchanged);
//! - readers asking "is a sweep running?" as fast as they can (what the viewer asks every second,
//!   and `sweep status`) never make a `sweep run` starting meanwhile fail with "in use".

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::common::{self, run, sleuth, Mock, CHILD_TIMEOUT};
use sleuth::store::RunDir;

/// A sweep of one O-CoT game on night-ferry into `dir/run`, its model `m` given by `model`.
fn sweep_file(dir: &Path, model: &str) -> PathBuf {
    let path = dir.join("sweep.toml");
    let text = format!(
        "name = \"rd\"\nout = \"{out}\"\nscripts = [\"{script}\"]\nrepeats = 1\nseed = 1\n\
         [[arms]]\nprotocol = \"wellplay\"\nframework = \"ocot\"\nrounds = 1\n\
         [game]\nmodel = \"m\"\n[evaluation]\nrepeats = 1\njudge_model = \"m\"\n[models.m]\n{model}\n\
         [batch]\nflush_secs = 0.05\npoll_secs = 0.05\n",
        out = dir.join("run").display(),
        script = common::night_ferry().display(),
    );
    std::fs::write(&path, text).expect("write the sweep file");
    path
}

fn sweep_run(dir: &Path, file: &Path) -> Output {
    run(
        sleuth(dir).args(["sweep", "run"]).arg(file).arg("--quiet"),
        CHILD_TIMEOUT,
    )
}

fn sweep_status(dir: &Path) -> Output {
    run(
        sleuth(dir).args(["sweep", "status"]).arg(dir.join("run")),
        CHILD_TIMEOUT,
    )
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The journal's SQLite header says WAL (bytes 18 and 19 are 2) or rollback (1).
fn header_mode(path: &Path) -> (u8, u8) {
    let bytes = std::fs::read(path).expect("read the journal");
    (bytes[18], bytes[19])
}

/// The journal as one file in rollback mode (no -wal beside it), as a journal copied elsewhere or
/// written by an older sleuth may be.
fn to_rollback_mode(journal: &Path) {
    let c = rusqlite::Connection::open(journal).expect("open the journal");
    c.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(()))
        .expect("rollback mode");
    drop(c);
    assert_eq!(header_mode(journal), (1, 1));
}

/// Overwrites every page after the first: SQLite still opens the file, and reading a table answers
/// "database disk image is malformed".
fn damage(journal: &Path) {
    let mut bytes = std::fs::read(journal).expect("read the journal");
    assert!(
        bytes.len() > 8_192,
        "a journal of a few pages: {}",
        bytes.len()
    );
    for (i, b) in bytes.iter_mut().enumerate().skip(4_096) {
        *b = (i % 251) as u8;
    }
    std::fs::write(journal, bytes).expect("damage the journal");
}

#[test]
fn a_damaged_batch_journal_names_its_file_and_the_way_out_and_status_still_reads_the_store() {
    let tmp = tempfile::tempdir().expect("dir");
    let dir = tmp.path();
    let mock = Mock::start();
    let model = format!(
        "provider = \"openai\"\nbase_url = \"{}\"\nmodel = \"sim-1\"\napi_key_env = \"PATH\"\nbatch = true",
        mock.base_url()
    );
    let file = sweep_file(dir, &model);
    let out = sweep_run(dir, &file);
    assert!(out.status.success(), "first run: {}", text(&out));
    let journal = RunDir::new(dir.join("run")).journal();
    to_rollback_mode(&journal);

    // `status` reads the journal without writing it: not a byte changes (it used to turn it to WAL).
    let before = std::fs::read(&journal).expect("read");
    let out = sweep_status(dir);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("batches: "), "{}", text(&out));
    assert_eq!(
        header_mode(&journal),
        (1, 1),
        "journal mode changed by status"
    );
    assert!(
        std::fs::read(&journal).expect("read") == before,
        "status wrote the journal"
    );

    damage(&journal);
    let name = journal.display().to_string();
    // `status` prints the store's progress and the journal's problem as a line.
    let out = sweep_status(dir);
    let shown = text(&out);
    assert!(
        out.status.success(),
        "status exits 0 with what it can read: {shown}"
    );
    assert!(shown.contains("games: 1 · 1 done"), "{shown}");
    let line = shown
        .lines()
        .find(|l| l.contains(&name))
        .unwrap_or_else(|| panic!("a line naming {name}: {shown}"));
    assert!(
        line.contains("unreadable") && line.contains("move it aside"),
        "{line}"
    );

    // `run` refuses, naming the file and the way out…
    let out = sweep_run(dir, &file);
    let shown = text(&out);
    assert!(
        !out.status.success(),
        "a damaged journal must stop the run: {shown}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&name) && stderr.contains("move it aside"),
        "{shown}"
    );
    // …which works: moved aside, the sweep runs again.
    std::fs::rename(&journal, journal.with_extension("db.damaged")).expect("move aside");
    let out = sweep_run(dir, &file);
    assert!(
        out.status.success(),
        "after moving it aside: {}",
        text(&out)
    );
    let out = sweep_status(dir);
    assert!(
        out.status.success() && !text(&out).contains("unreadable"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_sweep_run_started_while_readers_poll_is_never_refused() {
    let tmp = tempfile::tempdir().expect("dir");
    let dir = tmp.path().to_path_buf();
    let file = sweep_file(&dir, "provider = \"simulated\"");
    let out = sweep_run(&dir, &file);
    assert!(out.status.success(), "first run: {}", text(&out));

    // Readers: one asking as fast as it can what the viewer asks every second (`lock_held`), and
    // `sweep status` processes one after another.
    let stop = Arc::new(AtomicBool::new(false));
    let seen_running = Arc::new(AtomicU64::new(0));
    let poller = {
        let (stop, seen) = (stop.clone(), seen_running.clone());
        let run_dir = RunDir::new(dir.join("run"));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if run_dir.is_locked() {
                    seen.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };
    let status_loop = {
        let (stop, dir) = (stop.clone(), dir.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let out = sweep_status(&dir);
                assert!(out.status.success(), "status: {}", text(&out));
            }
        })
    };
    // Writers: reruns (nothing left to play, so each holds the directory briefly).
    let mut refused = Vec::new();
    for _ in 0..12 {
        let out = sweep_run(&dir, &file);
        if !out.status.success() {
            refused.push(text(&out));
        }
    }
    stop.store(true, Ordering::Relaxed);
    poller.join().expect("poller");
    status_loop.join().expect("status loop");
    assert!(
        refused.is_empty(),
        "runs refused while readers polled:\n{}",
        refused.join("\n")
    );
    assert!(
        seen_running.load(Ordering::Relaxed) > 0,
        "the readers never saw a run running"
    );
}
