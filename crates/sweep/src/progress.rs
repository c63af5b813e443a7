//! The live display of a run: games done, failed and in flight, calls per second, tokens, dollars,
//! the cache's share and an ETA — an indicatif bar on a terminal, a plain log line every ten seconds
//! otherwise (a CI log or `nohup` file should not fill with redraws).

use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use super::scheduler::Counters;
use sleuth_base::telemetry as tm;
use sleuth_llm::CallTally;

/// A running display; [`Progress::finish`] clears it.
pub struct Progress {
    task: JoinHandle<()>,
    bar: Option<indicatif::ProgressBar>,
    counters: Arc<Counters>,
}

/// The run's games by state, as gauges.
fn publish(c: &Counters) {
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    for (state, n) in [
        ("queued", load(&c.queued)),
        ("in_flight", load(&c.in_flight)),
        ("done", load(&c.done)),
        ("failed", load(&c.failed)),
        ("interrupted", load(&c.interrupted)),
    ] {
        metrics::gauge!(tm::SWEEP_GAMES, "state" => state).set(n as f64);
    }
}

/// One line of figures.
fn line(c: &Counters, t: &CallTally, rate: f64, started: Instant, total: u64) -> String {
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let (done, failed, interrupted, flying) = (
        load(&c.done),
        load(&c.failed),
        load(&c.interrupted),
        load(&c.in_flight),
    );
    let (live, cache) = (load(&t.live), load(&t.cache));
    let tokens = load(&t.prompt_tokens) + load(&t.completion_tokens);
    let finished = done + failed + interrupted;
    let eta = if finished > 0 && total > finished {
        let per = started.elapsed().as_secs_f64() / finished as f64;
        format!("{:.0}s", per * (total - finished) as f64)
    } else {
        "-".into()
    };
    let hit = if live + cache > 0 {
        100.0 * cache as f64 / (live + cache) as f64
    } else {
        0.0
    };
    format!(
        "{done} done · {failed} failed · {flying} in flight · {rate:.1} calls/s · {} tokens · ${:.4} · cache {hit:.0}% · ETA {eta}",
        human(tokens),
        t.usd()
    )
}

fn human(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=9_999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

impl Progress {
    /// Starts the display of a run of `total` games; without `show`, only the sweep's gauges are
    /// kept up to date (for Prometheus).
    pub fn start(
        name: String,
        total: u64,
        c: Arc<Counters>,
        t: Arc<CallTally>,
        show: bool,
    ) -> Progress {
        let bar = (show && std::io::stderr().is_terminal()).then(|| {
            let pb = indicatif::ProgressBar::new(total);
            pb.set_style(
                indicatif::ProgressStyle::with_template(
                    "{prefix} {elapsed_precise} [{bar:30}] {pos}/{len} {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            pb.set_prefix(name.clone());
            pb
        });
        let shown = bar.clone();
        let counters = c.clone();
        let task = tokio::spawn(async move {
            let started = Instant::now();
            let tick = if shown.is_some() || !show {
                Duration::from_millis(500)
            } else {
                Duration::from_secs(10)
            };
            let mut last = (Instant::now(), 0u64);
            loop {
                tokio::time::sleep(tick).await;
                let calls = t.live.load(Ordering::Relaxed) + t.cache.load(Ordering::Relaxed);
                let rate = (calls - last.1) as f64 / last.0.elapsed().as_secs_f64().max(1e-3);
                last = (Instant::now(), calls);
                let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
                publish(&c);
                if !show {
                    continue;
                }
                let text = line(&c, &t, rate, started, total);
                match &shown {
                    Some(pb) => {
                        pb.set_position(load(&c.done) + load(&c.failed) + load(&c.interrupted));
                        pb.set_message(text);
                    }
                    None => eprintln!("{name}: {text}"),
                }
            }
        });
        Progress {
            task,
            bar,
            counters,
        }
    }

    /// Stops and clears the display.
    pub fn finish(self) {
        self.task.abort();
        publish(&self.counters);
        if let Some(pb) = self.bar {
            pb.finish_and_clear();
        }
    }
}
