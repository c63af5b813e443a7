//! Heap held per game waiting on a batch (issue 20; goal ≤ 16 KiB): the bytes the process has
//! allocated and not freed, counted by a global allocator, while N games of a sweep wait on
//! batches that do not come back, for two sizes of N in one process. The slope between them is what
//! the sweep process holds per waiting game — everything that grows with the number of waiting
//! games: the scheduler's entry, the batch worker's bookkeeping, the plan's spec and the store's rows
//! in memory. Unlike RSS (scripts/bench-batch-wait.sh), the count does not include what the
//! allocator keeps after a burst, so it is the same on every run of the same code.
//!
//! The batches go to `sleuth mock-llm` in its own process (its batch store is not counted), with a
//! completion delay of an hour. Run with
//!
//! ```sh
//! cargo bench --bench batch_wait [-- SMALL LARGE IN_FLIGHT]     # defaults: 100 1000 50
//! ```
//!
//! Figures and how to read them: docs/performance.md, *Games waiting on a batch*.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use sleuth::shutdown::Shutdown;
use sleuth::store::RunDir;
use sleuth::sweep::runner::{run_with, RunOptions};

/// The system allocator, counting the bytes in use and their high-water mark.
struct Counting;

static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = IN_USE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to the system allocator unchanged; the counters only observe.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn in_use() -> usize {
    IN_USE.load(Ordering::Relaxed)
}

/// `sleuth mock-llm` on a free port, its batches in progress for an hour; killed when dropped.
struct Mock {
    child: Child,
    url: String,
}

impl Mock {
    fn start() -> Mock {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sleuth"))
            .args([
                "mock-llm",
                "--listen",
                "127.0.0.1:0",
                "--batch-delay-ms",
                "3600000",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start sleuth mock-llm");
        let stdout = child.stdout.take().expect("mock stdout");
        let mut url = None;
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("read the mock's stdout");
            if let Some(start) = line.find("http://") {
                let rest = &line[start..];
                let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                url = Some(rest[..end].trim_end_matches('/').to_string());
                break;
            }
        }
        let url = url.expect("the mock printed no address");
        let url = if url.ends_with("/v1") {
            url
        } else {
            format!("{url}/v1")
        };
        Mock { child, url }
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sweep_file(dir: &Path, url: &str, games: usize, in_flight: usize) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/orchard-press.toml");
    let text = format!(
        r#"name = "wait"
out = "{out}"
scripts = ["{script}"]
repeats = {games}
seed = 1
concurrency = {in_flight}
[game]
protocol = "wellplay"
framework = "ocot"
rounds = 1
model = "m"
[evaluation]
repeats = 1
[models.m]
provider = "openai"
base_url = "{url}"
model = "sim-1"
api_key_env = "PATH"
batch = true
[batch]
flush_calls = 5000
flush_secs = 1
poll_secs = 3600
"#,
        out = dir.join("run").display(),
        script = script.display(),
    );
    let path = dir.join("sweep.toml");
    std::fs::write(&path, text).expect("write the sweep file");
    path
}

/// Games of the run directory in `state`, read from its store.
fn games_in(dir: &Path, state: &str) -> usize {
    let Ok(db) = rusqlite::Connection::open(RunDir::new(dir.join("run")).store()) else {
        return 0;
    };
    db.query_row(
        "select count(*) from games where state = ?1",
        [state],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n as usize)
    .unwrap_or(0)
}

/// What one sweep of `games` games holds while all of them wait on batches.
struct Sample {
    games: usize,
    /// Bytes in use with every game waiting, less those in use before the run started.
    held: usize,
    /// High-water mark of the bytes in use during the run, less those before it.
    peak: usize,
    /// Bytes still in use after the run ended and was dropped, less those before it.
    after: isize,
    played_secs: f64,
}

fn measure(mock: &Mock, games: usize, in_flight: usize) -> Sample {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = sweep_file(dir.path(), &mock.url, games, in_flight);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let before = in_use();
    PEAK.store(before, Ordering::Relaxed);
    let start = Instant::now();
    let shutdown = Shutdown::new();
    let run = rt.spawn({
        let (path, shutdown) = (path.clone(), shutdown.clone());
        async move { run_with(&path, RunOptions::default(), shutdown).await }
    });
    // Every game waiting, then the last flush out and the last game's actors gone.
    loop {
        std::thread::sleep(Duration::from_millis(500));
        if games_in(dir.path(), "evaluating_batch") == games {
            break;
        }
        assert!(
            !run.is_finished(),
            "the sweep ended before its games waited: {:?}",
            rt.block_on(run)
        );
        assert!(
            start.elapsed() < Duration::from_secs(1800),
            "not every game waited within 30 min"
        );
    }
    let played_secs = start.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_secs(3));
    let held = in_use().saturating_sub(before);
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
    // Stop the run (it would poll for an hour) and let everything it held go.
    shutdown.now();
    let _ = rt.block_on(run);
    rt.shutdown_timeout(Duration::from_secs(10));
    let after = in_use() as isize - before as isize;
    Sample {
        games,
        held,
        peak,
        after,
        played_secs,
    }
}

fn kib(bytes: f64) -> String {
    format!("{:.1} KiB", bytes / 1024.0)
}

fn main() {
    // `cargo bench` passes `--bench`; the figures are the only other arguments.
    let numbers: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let small = numbers.first().copied().unwrap_or(100);
    let large = numbers.get(1).copied().unwrap_or(1000);
    let in_flight = numbers.get(2).copied().unwrap_or(50);
    assert!(large > small, "LARGE ({large}) must exceed SMALL ({small})");

    let mock = Mock::start();
    // A first run loads what a process loads once and keeps (the tokenizer's tables, the segmenter's
    // dictionary, the prompt templates): not a waiting game's, so it is not measured.
    let warm = measure(&mock, small.min(20), in_flight);
    println!(
        "warm-up: {} games; {} loaded once and kept",
        warm.games,
        kib(warm.after as f64)
    );
    let mut samples = Vec::new();
    for games in [small, large] {
        let s = measure(&mock, games, in_flight);
        println!(
            "{:>5} games waiting (played in {:.0} s, {in_flight} in flight): held {}, peak {}, left after the run {}",
            s.games,
            s.played_secs,
            kib(s.held as f64),
            kib(s.peak as f64),
            kib(s.after as f64),
        );
        samples.push(s);
    }
    let (a, b) = (&samples[0], &samples[1]);
    let per = (b.held as f64 - a.held as f64) / (b.games - a.games) as f64;
    println!(
        "heap per waiting game: {} (({} − {}) / ({} − {} games)); goal ≤ 16 KiB",
        kib(per),
        kib(b.held as f64),
        kib(a.held as f64),
        b.games,
        a.games
    );
}
