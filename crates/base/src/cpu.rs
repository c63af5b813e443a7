//! CPU-heavy work off the async worker threads, on a bounded blocking pool.
//!
//! Why: an async worker that runs a long computation (the simulated model answering a long prompt takes
//! milliseconds) runs nothing else meanwhile — no timer, no socket, no actor of any other game on that
//! worker moves. With a game's independent calls issued together, dozens of such computations arrive at
//! once, and on a 2-core node they would stall every game for the length of the queue. [`run`] moves
//! the computation to tokio's blocking pool instead.
//!
//! Why bounded: the blocking pool grows to 512 threads, one per waiting job. Hundreds of CPU-bound jobs
//! on two cores gain nothing from hundreds of threads — they only add memory and context switches — so
//! jobs wait for one of [`available_parallelism`](std::thread::available_parallelism) permits as plain
//! futures, and at most that many threads compute at a time, whatever the number of games in flight.

use std::sync::OnceLock;

use tokio::sync::Semaphore;

/// Why a computation gave no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuError {
    /// The computation panicked; the message is the panic's, when it had one.
    #[error("the computation panicked: {0}")]
    Panicked(String),
    /// The runtime shut down before the computation ran.
    #[error("the computation was cancelled (the runtime is shutting down)")]
    Cancelled,
}

/// The permits of the pool: one per core the process may use.
fn permits() -> &'static Semaphore {
    static PERMITS: OnceLock<Semaphore> = OnceLock::new();
    PERMITS.get_or_init(|| Semaphore::new(parallelism()))
}

/// How many computations run at once: the cores available to the process (1 when unknown).
pub fn parallelism() -> usize {
    std::thread::available_parallelism()
        .map(std::num::NonZeroUsize::get)
        .unwrap_or(1)
}

/// Runs `f` on the blocking pool, at most [`parallelism`] at a time across the process, and waits for
/// its result without blocking the async worker.
pub async fn run<T, F>(f: F) -> Result<T, CpuError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    // The semaphore is never closed, so acquiring fails only in theory; run unbounded then rather than
    // not at all.
    let _permit = permits().acquire().await.ok();
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        if e.is_panic() {
            let payload = e.into_panic();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            CpuError::Panicked(message)
        } else {
            CpuError::Cancelled
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn computations_return_their_results_and_never_exceed_the_cores() {
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let jobs = (0..4 * parallelism() as u64).map(|i| {
            let (running, peak) = (running.clone(), peak.clone());
            run(move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(5));
                running.fetch_sub(1, Ordering::SeqCst);
                i * i
            })
        });
        let out: Vec<u64> = futures::future::join_all(jobs)
            .await
            .into_iter()
            .map(|r| r.unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let want: Vec<u64> = (0..4 * parallelism() as u64).map(|i| i * i).collect();
        assert_eq!(out, want, "results come back in the order asked");
        assert!(peak.load(Ordering::SeqCst) <= parallelism());
    }

    #[tokio::test]
    async fn a_panic_is_an_error_with_its_message() {
        let r: Result<(), CpuError> = run(|| panic!("boom")).await;
        assert_eq!(r, Err(CpuError::Panicked("boom".into())));
    }
}
