//! Process CPU time as criterion's measured "time", for the gateway benchmarks (`gateway.rs`,
//! `gateway_prompt.rs`): what a call costs every thread of the process (tokio workers, the blocking
//! pool, the store's writer), not the wall time one task waits.

use std::sync::Arc;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Throughput};
use futures::future::BoxFuture;
use tokio::runtime::Runtime;

use super::support::process_cpu_time;

/// One call (or a batch of calls) to measure.
pub type Call = Arc<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>;

/// Benchmarks `run` (`per_iter` calls) with process CPU time as the measured "time".
pub fn cpu_bench(
    rt: &Runtime,
    g: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    per_iter: u64,
    run: Call,
) {
    g.throughput(Throughput::Elements(per_iter));
    g.bench_function(id, |b| {
        b.to_async(rt).iter_custom(|iters| {
            let run = run.clone();
            async move {
                let t0 = process_cpu_time().expect("process CPU clock");
                for _ in 0..iters {
                    run().await;
                }
                process_cpu_time().expect("process CPU clock") - t0
            }
        })
    });
}
