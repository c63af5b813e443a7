//! The `sleuth` binary: parse flags, set up logging, run, and turn an error into one line and an exit
//! status. Everything else lives in the library.

use sleuth::cli::{run, Cli};

fn main() -> std::process::ExitCode {
    let cli = Cli::parse_args();
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
    match runtime.block_on(run(cli)) {
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
