//! What the benchmarks share.

use criterion::Criterion;

/// Criterion draws its plots with plotters, which — built with the text backend `sleuth report` uses —
/// needs a registered font: the report's font lookup registers one; without any, plots are skipped
/// rather than the run failing.
pub fn criterion_config() -> Criterion {
    match sleuth::report::plots::font() {
        Ok(_) => Criterion::default(),
        Err(why) => {
            eprintln!("criterion plots off: {why}");
            Criterion::default().without_plots()
        }
    }
}
