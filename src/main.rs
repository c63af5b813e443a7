//! The `sleuth` binary: parse flags, set up logging, run, and turn an error into one line and an exit
//! status. Everything else lives in the library.

use sleuth::cli::{run_on, Cli};

fn main() -> std::process::ExitCode {
    let cli = Cli::parse_args();
    // Before any TLS client or server is built (reqwest needs a process default: src/tls.rs).
    sleuth::tls::install_crypto_provider();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SLEUTH_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    // Not `runtime.block_on(run(cli))` here: see `run_on` (it keeps the build's last step short).
    match run_on(&runtime, cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // One line: the chain of causes joined, so the file, field and expectation stay together.
            let msg = e
                .chain()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(": ");
            eprintln!("error: {}", msg.replace('\n', " "));
            std::process::ExitCode::FAILURE
        }
    }
}

/// jemalloc rather than the C library's malloc: the same memory at the evaluation peak for ~11 % less
/// CPU per request in a sweep of thousands of games, most of whose allocations are small and freed
/// on another thread than made them (docs/performance.md, section 9).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
