//! Helpers shared by the integration tests: running the `sleuth` binary as a child process, and
//! playing games in process against the simulated model.
//!
//! Each test crate uses a different subset, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod cluster;
pub mod coordinator;
pub mod redis;
pub mod report;

use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use sleuth::mockllm::{MockConfig, MockServer};

/// How long a child may run before the test kills it and fails. A quick game takes a few seconds.
pub const CHILD_TIMEOUT: Duration = Duration::from_secs(180);

/// The `sleuth` binary Cargo built for these tests.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_sleuth")
}

/// A file of the crate (e.g. `examples/night-ferry.toml`) as an absolute path.
pub fn crate_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// An example script of the crate (`examples/NAME`), loaded and checked.
pub fn example_script(name: &str) -> std::sync::Arc<sleuth::script::Script> {
    let p = crate_file("examples").join(name);
    std::sync::Arc::new(sleuth::script::Script::load(&p).unwrap_or_else(|e| panic!("{name}: {e}")))
}

/// A gateway over the in-process simulated model with the built-in pricing: what the game tests play
/// against.
pub async fn simulated_gateway() -> sleuth::llm::Gateway {
    sleuth::llm::Gateway::start(
        std::sync::Arc::new(sleuth::llm::SimulatedProvider::default()),
        sleuth::llm::Pricing::builtin(),
        sleuth::llm::GatewayConfig::default(),
    )
    .await
    .expect("gateway starts")
}

/// The `sleuth play` arguments of the short WellPlay game the real-endpoint tests play: O-CoT, one round.
pub const OCOT_ONE_ROUND: &[&str] = &[
    "--protocol",
    "wellplay",
    "--framework",
    "ocot",
    "--rounds",
    "1",
];

/// The example script every test plays.
pub fn night_ferry() -> PathBuf {
    crate_file("examples/night-ferry.toml")
}

/// A `sleuth` command with a clean environment (only PATH and HOME kept, so no API key, log filter or
/// proxy setting of the developer's shell leaks in), run from `cwd`, with stdin closed.
pub fn sleuth(cwd: &Path) -> Command {
    let mut cmd = Command::new(bin());
    cmd.env_clear();
    for var in ["PATH", "HOME"] {
        if let Some(v) = std::env::var_os(var) {
            cmd.env(var, v);
        }
    }
    cmd.current_dir(cwd).stdin(Stdio::null());
    cmd
}

/// Runs `sleuth ARGS` in `dir` and returns (success, stdout, stderr).
pub fn sleuth_in(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = run(sleuth(dir).args(args), CHILD_TIMEOUT);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `sleuth ARGS` in `dir`, fails the test if it fails, and returns its stdout.
pub fn sleuth_ok(dir: &Path, args: &[&str]) -> String {
    let (success, stdout, stderr) = sleuth_in(dir, args);
    assert!(success, "sleuth {args:?} failed:\n{stdout}\n{stderr}");
    stdout
}

/// Takes the running `child`'s stderr and returns the first line it prints after `prefix` (a link
/// such as the seat's `seat: http://…`), waiting up to two minutes; the rest of its stderr is
/// drained so that the child never blocks on a full pipe.
pub fn printed_after(child: &mut std::process::Child, prefix: &'static str) -> String {
    printed_after_n(child, prefix, 1).remove(0)
}

/// The rest of each of the first `n` lines the child prints to stderr starting with `prefix` (as
/// [`printed_after`]).
pub fn printed_after_n(
    child: &mut std::process::Child,
    prefix: &'static str,
    n: usize,
) -> Vec<String> {
    use std::io::BufRead;
    let stderr = child.stderr.take().expect("the child's stderr is piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(rest) = line.strip_prefix(prefix) {
                let _ = tx.send(rest.to_string());
            }
        }
    });
    (0..n)
        .map(|_| {
            rx.recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|_| {
                    panic!("the child printed fewer than {n} lines starting {prefix:?}")
                })
        })
        .collect()
}

/// `sleuth sweep run FILE --quiet` from `cwd`, which must succeed (its stderr is the failure's message).
pub fn sweep_run_ok(cwd: &Path, file: &Path) -> Output {
    let out = run(
        sleuth(cwd).args(["sweep", "run"]).arg(file).arg("--quiet"),
        CHILD_TIMEOUT,
    );
    assert!(
        out.status.success(),
        "sleuth sweep run {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `cmd` to completion, capturing stdout and stderr; kills it and panics after `timeout`.
pub fn run(cmd: &mut Command, timeout: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin()));
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let err = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("cannot wait for the child") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = err.join().unwrap_or_default();
            panic!(
                "{cmd:?} did not finish within {timeout:?}; stderr so far:\n{}",
                String::from_utf8_lossy(&stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().expect("stdout reader panicked"),
        stderr: err.join().expect("stderr reader panicked"),
    }
}

/// An in-process OpenAI-compatible mock server (the same one `sleuth mock-llm` serves) on its own
/// runtime, so it keeps answering while the test thread blocks on a child process.
pub struct Mock {
    server: Option<MockServer>,
    runtime: tokio::runtime::Runtime,
}

impl Mock {
    /// Starts a mock on a free port of 127.0.0.1.
    pub fn start() -> Mock {
        Mock::start_with(MockConfig::default())
    }

    /// Starts a mock with `config` (faults, batch delays) on a free port of 127.0.0.1.
    pub fn start_with(config: MockConfig) -> Mock {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("cannot build a tokio runtime");
        let addr: SocketAddr = "127.0.0.1:0".parse().expect("socket address");
        let server = runtime
            .block_on(MockServer::start(addr, config))
            .expect("cannot start the mock LLM server");
        Mock {
            server: Some(server),
            runtime,
        }
    }

    /// The `--base-url` that points the `openai` provider at this server.
    pub fn base_url(&self) -> String {
        self.server().base_url()
    }

    /// The server's totals so far.
    pub fn stats(&self) -> sleuth::mockllm::MockStats {
        self.server().stats()
    }

    /// Requests the server has received on its LLM endpoints so far.
    pub fn requests(&self) -> u64 {
        self.server().stats().requests
    }

    fn server(&self) -> &MockServer {
        self.server.as_ref().expect("mock server is running")
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.runtime.block_on(server.shutdown());
        }
    }
}

/// `promtool` from PATH, or Debian's `/usr/bin/promtool`.
pub fn find_promtool() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join("promtool"));
    on_path
        .chain(std::iter::once(PathBuf::from("/usr/bin/promtool")))
        .find(|p| p.is_file())
}

/// Whether the tests run under CI: `CI` set to anything but empty, `false` or `0` (what CI services
/// set). A service or data set a test needs is then required, never silently skipped.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// What a test does when something it needs (`what`) is missing: under CI (`ci`) it fails, with `how`
/// to provide it; elsewhere the test is skipped, and says so on the terminal. The line is written to
/// the process' stderr directly, past the test harness' capture (which would hide an `eprintln!` of a
/// passing test), so a skipped test never looks like a tested one.
pub fn skip_or_fail(ci: bool, what: &str, how: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    if ci {
        panic!("{test}: {what}, and CI is set: this test must run under CI ({how})");
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: {what} ({how}; under CI=true this is a failure)"
    );
}

/// `../shared/datasets`, the public datasets the importer tests read. A user's fresh checkout may not
/// have it: the test then says it was skipped. Under CI (`CI=true`) a missing folder is a failure,
/// never a silent pass.
pub fn datasets() -> Option<PathBuf> {
    let d = crate_file("../shared/datasets");
    if d.is_dir() {
        return Some(d);
    }
    skip_or_fail(
        under_ci(),
        &format!("../shared/datasets not found at {}", d.display()),
        "dataset tests read the public datasets there",
    );
    None
}

/// Plays `script` once (seed 1, simulated model behind `gw`) and checks the vote every test of an
/// imported set looks at first: each ballot names a suspect other than the voter.
pub async fn play_and_check_votes(
    script: std::sync::Arc<sleuth::script::Script>,
    protocol: sleuth::game::ProtocolSettings,
    framework: sleuth::agent::Framework,
    gw: sleuth::llm::Gateway,
) -> sleuth::game::GameResult {
    let config = sleuth::game::GameConfig {
        game_id: format!("full-{}", script.title),
        seed: 1,
        protocol,
        framework,
        ..sleuth::game::GameConfig::default()
    };
    let title = script.title.clone();
    let r = sleuth::game::play(script.clone(), config, gw)
        .await
        .unwrap_or_else(|e| panic!("{title}: {e}"));
    let suspects = script.suspect_names();
    for (voter, target) in &r.votes {
        assert!(
            voter != target && suspects.contains(&target.as_str()),
            "{title}: {voter} → {target}"
        );
    }
    r
}

/// Starts `sleuth view` as `cmd` describes (its arguments and environment set), and returns the
/// child with the line it prints once it serves: `sleuth view: WHAT at http://ADDR/…`.
#[allow(dead_code)]
pub fn start_viewer(mut cmd: Command) -> (std::process::Child, String) {
    use std::io::BufRead;
    cmd.stdout(Stdio::piped());
    let mut child = cmd.spawn().expect("start sleuth view");
    let out = child.stdout.take().expect("stdout");
    let mut line = String::new();
    std::io::BufReader::new(out)
        .read_line(&mut line)
        .expect("the address line");
    (child, line)
}

/// The `ADDR` of [`start_viewer`]'s line.
#[allow(dead_code)]
pub fn viewer_addr(line: &str) -> String {
    line.rsplit(" at ")
        .next()
        .map(|r| {
            r.trim_start_matches("http://")
                .trim_start_matches("https://")
        })
        .and_then(|r| r.split('/').next())
        .filter(|a| !a.is_empty() && !a.contains(' '))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string()
}

/// A private CA and a certificate for `localhost` and 127.0.0.1 signed by it, made with the
/// `openssl` command (`ca.pem`, `server.pem`, `server.key`); `None` when it is missing (a failure
/// under `CI=true`).
#[allow(dead_code)]
pub fn make_certs(dir: &Path) -> Option<()> {
    let run = |args: &[&str]| {
        Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .map(|o| {
                assert!(
                    o.status.success(),
                    "openssl {args:?}: {}",
                    String::from_utf8_lossy(&o.stderr)
                )
            })
    };
    if let Err(e) = run(&["version"]) {
        if std::env::var_os("CI").is_some() {
            panic!("openssl is needed to make the TLS test's certificates: {e}");
        }
        eprintln!("SKIPPED: openssl is not installed");
        return None;
    }
    std::fs::write(
        dir.join("san.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .expect("ext file");
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=sleuth test CA",
    ])
    .ok()?;
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost",
    ])
    .ok()?;
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    ])
    .ok()?;
    Some(())
}
