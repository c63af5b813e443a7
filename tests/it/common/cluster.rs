//! A cluster on loopback for the tests: a real `redis-server`, a `sleuth coordinator` and `sleuth
//! worker`s as child processes of the binary Cargo built, on free ports, with the token in their
//! environment and their logs (`SLEUTH_LOG=info`) in files of a temporary directory. Everything it
//! started is killed when it is dropped; a test that panics first prints the tail of every log, and
//! `SLEUTH_TEST_KEEP=1` keeps the directory with the logs.

use std::io::{BufRead, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use sleuth::cluster::auth::Token;
use sleuth::cluster::client;
use sleuth::cluster::proto as pb;

use super::redis::RedisServer;

/// The cluster's bearer token: distinctive, so a grep of logs and metrics finds any copy of it.
pub const TOKEN: &str = "tok-7c1e93d2-cluster-test-secret";
/// The variable a mock-backed model reads its API key from, and the (fake) key: it must never show
/// in a log or a metrics page either.
pub const KEY_ENV: &str = "SLEUTH_TEST_PROVIDER_KEY";
pub const FAKE_KEY: &str = "sk-fake-4b8d0e61a9f2-never-logged";

/// How long a sweep of a test may take before the test gives up (generous: a loaded 2-core
/// machine).
pub const SWEEP_TIMEOUT: Duration = Duration::from_secs(150);

/// A port the kernel just handed out (another process could take it before we bind it: callers
/// that bind retry on a new one).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Polls `f` every 100 ms until it gives `Some`, or panics after `timeout` naming `what`.
pub fn wait_for<T>(timeout: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "gave up after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A child process with its output in a log file, killed (SIGKILL) on drop.
pub struct Proc {
    pub name: String,
    pub child: Child,
    pub log: PathBuf,
}

impl Proc {
    fn spawn(name: &str, mut cmd: Command, log: PathBuf) -> Proc {
        let file = std::fs::File::create(&log).expect("create a log file");
        let err = file.try_clone().expect("clone the log file handle");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc {
            name: name.to_string(),
            child,
            log,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it still runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGKILL, and reaped.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for it to exit on its own, up to `timeout`; `None` if it still runs.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    pub fn log_text(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.log).unwrap_or_default()).into_owned()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// How a test's cluster starts.
#[derive(Debug, Clone)]
pub struct Options {
    pub workers: usize,
    /// Games each worker plays at once.
    pub capacity: usize,
    /// `--claim-idle-secs` of the coordinator.
    pub claim_idle_secs: u64,
    /// Serve `/metrics` from the coordinator and every worker.
    pub metrics: bool,
    /// Redis with AOF (`appendonly yes`, `appendfsync always`) in the temporary directory, so it
    /// can be restarted with its data.
    pub aof: bool,
    /// `SLEUTH_LOG` of every process.
    pub log: &'static str,
    /// The workers' `--models` file (TOML), when they serve a model other than the simulated one
    /// (see [`mock_declaration`]).
    pub worker_models: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            workers: 3,
            capacity: 2,
            // Three heartbeats (2 s each): less would let a live worker on a loaded machine lose its
            // games, and the coordinator refuses it (issue 23, item 7).
            claim_idle_secs: 6,
            metrics: false,
            aof: false,
            log: "info",
            worker_models: None,
        }
    }
}

/// A Redis restarted by the test on the same port and directory (`redis-server` as a [`Proc`]).
enum Redis {
    First(RedisServer),
    Again(Proc),
    Stopped,
}

/// The running cluster.
pub struct Cluster {
    opts: Options,
    pub coordinator: Option<Proc>,
    pub workers: Vec<Proc>,
    /// `--metrics-addr` of the coordinator and of each worker (in start order), when asked for.
    pub coordinator_metrics: Option<SocketAddr>,
    pub worker_metrics: Vec<SocketAddr>,
    pub coordinator_port: u16,
    redis: Redis,
    pub redis_port: u16,
    rt: tokio::runtime::Runtime,
    started: usize,
    /// Processes the test stopped (kept so their logs stay listed and they are reaped).
    retired: Vec<Proc>,
    /// Last, so it is removed after every process is dead.
    pub dir: tempfile::TempDir,
}

impl Cluster {
    /// Redis, a coordinator and `opts.workers` registered workers; `None` when `redis-server` is
    /// missing (the test is then skipped, as every Redis test is; under CI that panics instead).
    pub fn start(opts: Options) -> Option<Cluster> {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let data = dir.path().join("redis");
        std::fs::create_dir_all(&data).expect("create the Redis directory");
        let data_arg = data.to_string_lossy().into_owned();
        let aof = [
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--dir",
            data_arg.as_str(),
        ];
        let redis = RedisServer::start(if opts.aof { &aof[..] } else { &[] })?;
        let redis_port = redis.port;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let mut c = Cluster {
            opts: opts.clone(),
            coordinator: None,
            workers: Vec::new(),
            coordinator_metrics: None,
            worker_metrics: Vec::new(),
            coordinator_port: 0,
            redis: Redis::First(redis),
            redis_port,
            rt,
            started: 0,
            retired: Vec::new(),
            dir,
        };
        c.start_coordinator();
        for _ in 0..opts.workers {
            c.start_worker();
        }
        c.wait_workers(opts.workers);
        Some(c)
    }

    pub fn redis_url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.redis_port)
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.coordinator_port)
    }

    /// A path in the test's temporary directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn log_path(&mut self, name: &str) -> PathBuf {
        self.started += 1;
        self.dir
            .path()
            .join(format!("{:02}-{name}.log", self.started))
    }

    /// A `sleuth` command with a clean environment plus the token (`token`), the log filter, the
    /// fake provider key and the coordinator's URL.
    pub fn sleuth_with_token(&self, token: Option<&str>) -> Command {
        let mut cmd = super::sleuth(self.dir.path());
        if let Some(t) = token {
            cmd.env("SLEUTH_TOKEN", t);
        }
        cmd.env("SLEUTH_LOG", self.opts.log)
            .env(KEY_ENV, FAKE_KEY)
            .env("SLEUTH_COORDINATOR", self.url());
        cmd
    }

    pub fn sleuth(&self) -> Command {
        self.sleuth_with_token(Some(TOKEN))
    }

    /// Starts the coordinator: on a free port the first time, on the same port after that (a
    /// restart), waiting until it answers.
    pub fn start_coordinator(&mut self) {
        assert!(self.coordinator.is_none(), "a coordinator already runs");
        let fresh = self.coordinator_port == 0;
        for _ in 0..5 {
            if fresh {
                self.coordinator_port = free_port();
            }
            let mut cmd = self.sleuth();
            cmd.args(["coordinator", "--redis", &self.redis_url()])
                .args(["--listen", &format!("127.0.0.1:{}", self.coordinator_port)])
                .args(["--claim-idle-secs", &self.opts.claim_idle_secs.to_string()])
                // Three heartbeats per claim timeout, the fewest the coordinator takes.
                .args([
                    "--heartbeat-ms",
                    &(self.opts.claim_idle_secs * 1000 / 3).to_string(),
                ]);
            if self.opts.metrics {
                let addr = self
                    .coordinator_metrics
                    .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], free_port())));
                self.coordinator_metrics = Some(addr);
                cmd.args(["--metrics-addr", &addr.to_string()]);
            }
            let log = self.log_path("coordinator");
            let mut p = Proc::spawn("coordinator", cmd, log);
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut up = false;
            while Instant::now() < deadline && p.alive() {
                if self.list_workers().is_ok() {
                    up = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            if up && p.alive() {
                self.coordinator = Some(p);
                return;
            }
            eprintln!(
                "coordinator did not come up on port {}:\n{}",
                self.coordinator_port,
                p.log_text()
            );
            p.kill();
            if self.opts.metrics && fresh {
                self.coordinator_metrics = None;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!("the coordinator did not come up in five tries");
    }

    /// SIGKILLs the coordinator.
    pub fn kill_coordinator(&mut self) {
        let mut p = self.coordinator.take().expect("a coordinator runs");
        p.kill();
        // Kept for the logs.
        self.retired.push(p);
    }

    /// Starts a worker with the cluster's token (not waiting for it to register); its index.
    pub fn start_worker(&mut self) -> usize {
        let p = self.spawn_worker(TOKEN);
        self.workers.push(p);
        self.workers.len() - 1
    }

    /// A worker process with `token`, not counted among the cluster's workers.
    pub fn spawn_worker(&mut self, token: &str) -> Proc {
        let n = self.started;
        let mut cmd = self.sleuth_with_token(Some(token));
        cmd.args(["worker", "--redis", &self.redis_url()])
            .args(["--coordinator", &self.url()])
            .args(["--capacity", &self.opts.capacity.to_string()])
            .arg("--work-dir")
            .arg(self.path(&format!("work-{n}")));
        if let Some(models) = &self.opts.worker_models {
            let file = self.path("worker-models.toml");
            std::fs::write(&file, models).expect("write the workers' models file");
            cmd.arg("--models").arg(file);
        }
        if self.opts.metrics && token == TOKEN {
            let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
            self.worker_metrics.push(addr);
            cmd.args(["--metrics-addr", &addr.to_string()]);
        }
        let log = self.log_path("worker");
        Proc::spawn("worker", cmd, log)
    }

    /// Waits until the coordinator lists `n` workers.
    pub fn wait_workers(&mut self, n: usize) -> Vec<pb::WorkerInfo> {
        wait_for(Duration::from_secs(60), "the workers to register", || {
            for w in &mut self.workers {
                assert!(w.alive(), "a worker exited:\n{}", w.log_text());
            }
            self.list_workers().ok().filter(|w| w.len() >= n)
        })
    }

    /// Runs an async client call against the coordinator (with the token).
    fn rpc<T>(
        &self,
        f: impl AsyncFnOnce(client::Sweeps) -> Result<T, tonic::Status>,
    ) -> Result<T, tonic::Status> {
        let url = self.url();
        self.rt.block_on(async move {
            let token = Token::new(TOKEN).expect("a valid token");
            let api = client::sweeps(&url, None, token)
                .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
            // Generous: an answer slower than this on a loaded machine is not what a test checks.
            tokio::time::timeout(Duration::from_secs(30), f(api))
                .await
                .map_err(|_| tonic::Status::deadline_exceeded("no answer in 30 s"))?
        })
    }

    /// `ListWorkers`.
    pub fn list_workers(&self) -> Result<Vec<pb::WorkerInfo>, tonic::Status> {
        self.rpc(async |mut api| {
            Ok(api
                .list_workers(pb::ListWorkersRequest {})
                .await?
                .into_inner()
                .workers)
        })
    }

    /// Where a sweep stands now (the first message of `Watch`).
    pub fn progress(&self, sweep: &str) -> Result<pb::Progress, tonic::Status> {
        let sweep_id = sweep.to_string();
        self.rpc(async move |mut api| {
            let mut stream = api.watch(pb::WatchRequest { sweep_id }).await?.into_inner();
            stream
                .message()
                .await?
                .ok_or_else(|| tonic::Status::unknown("empty watch stream"))
        })
    }

    /// `sleuth submit FILE`: the sweep's id.
    pub fn submit(&self, file: &Path) -> String {
        let mut cmd = self.sleuth();
        cmd.arg("submit").arg(file);
        let out = super::run(&mut cmd, Duration::from_secs(60));
        assert!(
            out.status.success(),
            "sleuth submit failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(!id.is_empty(), "sleuth submit printed no id");
        id
    }

    /// `sleuth watch ID` until the sweep ends: its progress lines.
    pub fn watch(&self, sweep: &str) -> Vec<String> {
        let mut cmd = self.sleuth();
        cmd.args(["watch", sweep]);
        let out = super::run(&mut cmd, SWEEP_TIMEOUT);
        assert!(
            out.status.success(),
            "sleuth watch {sweep} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Waits (polling `Watch`) until the sweep has ended; its last progress.
    pub fn wait_ended(&self, sweep: &str) -> pb::Progress {
        wait_for(SWEEP_TIMEOUT, "the sweep to end", || {
            self.progress(sweep).ok().filter(|p| p.ended)
        })
    }

    /// `sleuth results ID --out DIR`; the command's output.
    pub fn results(&self, sweep: &str, out: &Path) -> Output {
        let mut cmd = self.sleuth();
        cmd.args(["results", sweep, "--out"]).arg(out);
        let o = super::run(&mut cmd, Duration::from_secs(60));
        assert!(
            o.status.success(),
            "sleuth results failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o
    }

    /// A Redis connection (for what only Redis can tell: the queue's length, say).
    pub fn redis(&self) -> redis::Connection {
        redis::Client::open(self.redis_url())
            .and_then(|c| c.get_connection())
            .expect("connect to Redis")
    }

    /// Stops Redis as an operator would (`SHUTDOWN`: AOF flushed), and waits until its port is
    /// closed.
    pub fn stop_redis(&mut self) {
        let mut s = TcpStream::connect(("127.0.0.1", self.redis_port)).expect("reach Redis");
        s.write_all(b"SHUTDOWN\r\n").expect("send SHUTDOWN");
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink);
        wait_for(Duration::from_secs(20), "Redis to stop", || {
            TcpStream::connect(("127.0.0.1", self.redis_port))
                .is_err()
                .then_some(())
        });
        match std::mem::replace(&mut self.redis, Redis::Stopped) {
            Redis::First(r) => drop(r),
            Redis::Again(mut p) => {
                p.wait_exit(Duration::from_secs(10));
                self.retired.push(p);
            }
            Redis::Stopped => {}
        }
    }

    /// Starts Redis again on the same port and directory (with AOF, its data comes back).
    pub fn start_redis_again(&mut self) {
        assert!(matches!(self.redis, Redis::Stopped), "Redis runs");
        let data = self.path("redis");
        let mut cmd = Command::new("redis-server");
        cmd.args([
            "--port",
            &self.redis_port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .args(["--save", ""]);
        if self.opts.aof {
            cmd.args(["--appendonly", "yes", "--appendfsync", "always", "--dir"])
                .arg(&data);
        } else {
            cmd.args(["--appendonly", "no"]);
        }
        let log = self.log_path("redis");
        let p = Proc::spawn("redis", cmd, log);
        self.redis = Redis::Again(p);
        wait_for(Duration::from_secs(20), "Redis to answer again", || {
            let mut s = TcpStream::connect(("127.0.0.1", self.redis_port)).ok()?;
            s.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
            s.write_all(b"PING\r\n").ok()?;
            let mut line = String::new();
            std::io::BufReader::new(s).read_line(&mut line).ok()?;
            // `-LOADING` while it reads the AOF back.
            line.starts_with("+PONG").then_some(())
        });
    }

    /// Every log the cluster's processes wrote so far, by file name.
    pub fn logs(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = std::fs::read_dir(self.dir.path())
            .expect("read the test directory")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
            .map(|e| {
                let text = String::from_utf8_lossy(&std::fs::read(e.path()).unwrap_or_default())
                    .into_owned();
                (e.file_name().to_string_lossy().into_owned(), text)
            })
            .collect();
        out.sort();
        out
    }

    /// Prints the last lines of every log (when a test fails).
    fn dump_logs(&self) {
        for (name, text) in self.logs() {
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(25)..];
            eprintln!("----- {name} (last {} lines) -----", tail.len());
            for l in tail {
                eprintln!("{l}");
            }
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.dump_logs();
        }
        // `SLEUTH_TEST_KEEP=1`: keep the directory (logs, sweep files, Redis data) to look at.
        if std::env::var_os("SLEUTH_TEST_KEEP").is_some() {
            self.dir.disable_cleanup(true);
            eprintln!("kept {}", self.dir.path().display());
        }
        for w in &mut self.workers {
            w.kill();
        }
        if let Some(c) = &mut self.coordinator {
            c.kill();
        }
    }
}

/// `GET http://ADDR/metrics`: the body.
pub fn metrics_body(addr: SocketAddr) -> String {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("reach {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("set a read timeout");
    s.write_all(format!("GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .expect("send the request");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).expect("read the answer");
    let text = String::from_utf8_lossy(&buf).into_owned();
    assert!(
        text.starts_with("HTTP/1.0 200") || text.starts_with("HTTP/1.1 200"),
        "GET {addr}/metrics: {}",
        text.lines().next().unwrap_or("")
    );
    text.split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default()
}

/// A sweep file in `dir`: `name`, the example scripts given (by file name, as absolute paths),
/// `repeats` seeds each, one round, framework `player`, on the model `m` that `models` (TOML of
/// `[models.m]` and anything else: `[budget]`…) defines.
pub fn write_sweep(dir: &Path, name: &str, scripts: &[&str], repeats: u32, rest: &str) -> PathBuf {
    let scripts: Vec<String> = scripts
        .iter()
        .map(|s| {
            format!(
                "{:?}",
                super::crate_file("examples").join(s).to_string_lossy()
            )
        })
        .collect();
    let out = dir.join("local").join(name);
    let text = format!(
        r#"name = "{name}"
out = {out:?}
scripts = [{scripts}]
repeats = {repeats}
seed = 1
concurrency = 8

[game]
protocol = "wellplay"
model = "m"
rounds = 1
framework = "player"

[gateway]
cache = true
max_retries = 8

{rest}
"#,
        out = out.to_string_lossy(),
        scripts = scripts.join(", "),
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).expect("write the sweep file");
    path
}

/// `[models.m]`: the simulated model with `latency_ms` per call.
pub fn simulated_model(latency_ms: u64) -> String {
    format!("[models.m]\nprovider = \"simulated\"\nlatency_ms = {latency_ms}\n")
}

/// `[models.m]`: an OpenAI-compatible endpoint (a mock) at `base_url`, its key in [`KEY_ENV`].
pub fn mock_model(base_url: &str, max_concurrency: Option<usize>) -> String {
    let mut s = format!(
        "[models.m]\nprovider = \"openai\"\nbase_url = {base_url:?}\n\
         model = {:?}\napi_key_env = {KEY_ENV:?}\n",
        sleuth::llm::simulated::MODEL
    );
    if let Some(c) = max_concurrency {
        s.push_str(&format!("max_concurrency = {c}\n"));
    }
    s
}

/// The workers' `--models` declaration of `m` at the mock at `base_url`, its key in [`KEY_ENV`]: what
/// a sweep using [`mock_model`] needs on a cluster.
pub fn mock_declaration(base_url: &str) -> String {
    format!(
        "[models.m]\nprovider = \"openai\"\nbase_url = {base_url:?}\napi_key_env = {KEY_ENV:?}\n"
    )
}
