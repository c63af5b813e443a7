//! `sleuth coordinator` as a process, at its edges (issue 33): it says "serving on ADDR" only once
//! that is true (item 9), it closes connections that never send a request while it goes on serving
//! others (item 3), and it keeps Redis' password off the command line (item 5).

use crate::common;

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::cluster::{free_port, TOKEN};
use common::redis::RedisServer;
use sleuth::cluster::auth::Token;
use sleuth::cluster::client;
use sleuth::cluster::proto as pb;

/// What the coordinator prints once it serves.
const SERVING: &str = "sleuth coordinator: serving on ";

/// A password distinctive enough to grep for.
const PASSWORD: &str = "pw-5d1c7e-never-on-screen";

/// A `sleuth coordinator` child whose stderr is read line by line as it comes; killed on drop.
struct Coordinator {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Coordinator {
    /// `sleuth coordinator --listen 127.0.0.1:0` with the token and the Redis URL in the environment.
    fn spawn(dir: &std::path::Path, redis_url: &str) -> Coordinator {
        let mut cmd = common::sleuth(dir);
        cmd.env("SLEUTH_TOKEN", TOKEN)
            .env("SLEUTH_REDIS", redis_url)
            .env("SLEUTH_LOG", "info")
            .args(["coordinator", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start sleuth coordinator");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Coordinator {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The first line containing `what` within `timeout`, or `None` (the process may have exited).
    fn line_with(&mut self, what: &str, timeout: Duration) -> Option<String> {
        let deadline = Instant::now() + timeout;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(what) {
                        return Some(line);
                    }
                }
                Err(_) => return None,
            }
        }
        None
    }

    /// Everything it has printed so far (for failure messages).
    fn output(&mut self) -> String {
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line);
        }
        self.seen.join("\n")
    }

    /// The address of its "serving on" line, waiting up to 60 s for it.
    fn serving_addr(&mut self) -> SocketAddr {
        let Some(line) = self.line_with(SERVING, Duration::from_secs(60)) else {
            panic!("no serving line; it printed:\n{}", self.output());
        };
        line[line.find(SERVING).expect("the line") + SERVING.len()..]
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("an address in {line:?}: {e}"))
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// `ListWorkers` with the token, on a new connection, within 10 s.
fn list_workers(rt: &tokio::runtime::Runtime, addr: SocketAddr) -> Result<(), String> {
    rt.block_on(async move {
        let mut api = client::sweeps(
            &format!("http://{addr}"),
            None,
            Token::new(TOKEN).expect("token"),
        )
        .map_err(|e| e.to_string())?;
        tokio::time::timeout(
            Duration::from_secs(10),
            api.list_workers(pb::ListWorkersRequest {}),
        )
        .await
        .map_err(|_| "no answer in 10 s".to_string())?
        .map(|_| ())
        .map_err(|s| format!("{s:?}"))
    })
}

/// Item 9: with Redis refusing connections the coordinator never says it serves and names Redis in
/// its error; with a "Redis" that accepts but never answers it does not say so either, nor listen;
/// with Redis up it says so, and at that moment its port accepts connections and answers (the
/// address printed is the one bound, even for port 0).
#[test]
fn the_serving_line_comes_only_when_redis_answered_and_the_port_is_bound() {
    let dir = tempfile::tempdir().expect("dir");

    // Nothing listens on this port.
    let dead = format!("redis://127.0.0.1:{}/", free_port());
    let mut cmd = common::sleuth(dir.path());
    cmd.env("SLEUTH_TOKEN", TOKEN)
        .env("SLEUTH_REDIS", &dead)
        .args(["coordinator", "--listen", "127.0.0.1:0"]);
    let out = common::run(&mut cmd, Duration::from_secs(90));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "it ran without Redis: {stderr}");
    assert!(!stderr.contains("serving on"), "{stderr}");
    assert!(
        stderr.contains(&dead) && stderr.contains("Redis"),
        "the error names Redis and its address: {stderr}"
    );

    // A server that takes the connection and never answers (the kernel completes the handshake;
    // nothing reads or writes): still not serving.
    let mute = TcpListener::bind("127.0.0.1:0").expect("bind");
    let mute_url = format!("redis://{}/", mute.local_addr().expect("addr"));
    let mut waiting = Coordinator::spawn(dir.path(), &mute_url);
    assert!(
        waiting.line_with(SERVING, Duration::from_secs(3)).is_none(),
        "it said it serves before Redis answered:\n{}",
        waiting.output()
    );
    drop(waiting);
    drop(mute);

    let Some(redis) = RedisServer::start(&[]) else {
        return;
    };
    let mut c = Coordinator::spawn(dir.path(), &redis.url());
    let addr = c.serving_addr();
    assert_ne!(addr.port(), 0, "the address bound, not the one asked for");
    // At once: no retry, no pause.
    TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .unwrap_or_else(|e| panic!("the port refuses connections after the line: {e}"));
    let rt = runtime();
    list_workers(&rt, addr).unwrap_or_else(|e| panic!("{e}\n{}", c.output()));
}

/// Item 3: connections that never send a request — silent, or stopping half-way through HTTP/2's
/// preface — do not stop the coordinator serving others, and it closes them itself within its
/// first-request time (10 s), where before it held them for ever.
#[test]
fn half_open_connections_are_closed_and_others_are_served_meanwhile() {
    let Some(redis) = RedisServer::start(&[]) else {
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let mut c = Coordinator::spawn(dir.path(), &redis.url());
    let addr = c.serving_addr();
    let rt = runtime();

    let opened = Instant::now();
    let mut idle: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect(addr).expect("connect"))
        .collect();
    let mut half = TcpStream::connect(addr).expect("connect");
    std::io::Write::write_all(&mut half, b"PRI * HTTP/2.0\r\n").expect("half a preface");
    idle.push(half);

    let served = Instant::now();
    list_workers(&rt, addr).unwrap_or_else(|e| panic!("{e}\n{}", c.output()));
    assert!(
        served.elapsed() < Duration::from_secs(5),
        "a real client waited {:?} behind silent connections",
        served.elapsed()
    );

    for (i, s) in idle.iter_mut().enumerate() {
        s.set_read_timeout(Some(Duration::from_millis(500)))
            .expect("timeout");
        let closed = loop {
            let mut buf = [0u8; 256];
            match std::io::Read::read(s, &mut buf) {
                // The server's own SETTINGS frame comes first: keep reading.
                Ok(n) if n > 0 => {}
                Ok(_) => break true,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    if opened.elapsed() > Duration::from_secs(30) {
                        break false;
                    }
                }
                Err(_) => break true,
            }
        };
        assert!(
            closed,
            "connection {i} was still open after {:?}",
            opened.elapsed()
        );
    }
    assert!(
        opened.elapsed() >= Duration::from_secs(5),
        "closed after {:?}: sooner than a slow client could be expected to send",
        opened.elapsed()
    );
    list_workers(&rt, addr).unwrap_or_else(|e| panic!("{e}\n{}", c.output()));
}

/// The `--redis` entry of `sleuth CMD --help`: from its line to the next option's.
fn redis_help(dir: &std::path::Path, command: &str) -> String {
    let mut cmd = common::sleuth(dir);
    cmd.env("SLEUTH_REDIS", format!("redis://:{PASSWORD}@127.0.0.1:1/"))
        .args([command, "--help"]);
    let out = common::run(&mut cmd, Duration::from_secs(60));
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        !help.contains(PASSWORD),
        "the help shows the variable's value: {help}"
    );
    let mut entry = Vec::new();
    for line in help
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("--redis"))
    {
        if !entry.is_empty() && line.trim_start().starts_with('-') {
            break;
        }
        entry.push(line);
    }
    assert!(!entry.is_empty(), "no --redis entry: {help}");
    entry.join("\n")
}

/// Item 5: the help puts `SLEUTH_REDIS` first and never shows its value; a password given with
/// `--redis` draws a warning (without the password) pointing at `SLEUTH_REDIS`, the same URL in
/// `SLEUTH_REDIS` draws none, and a missing URL is asked for as `SLEUTH_REDIS`.
#[test]
fn a_redis_password_is_asked_for_in_the_environment_not_on_the_command_line() {
    let dir = tempfile::tempdir().expect("dir");
    for command in ["coordinator", "worker"] {
        let entry = redis_help(dir.path(), command);
        let said = entry.find("SLEUTH_REDIS").unwrap_or(usize::MAX);
        let annotated = entry.find("[env:").unwrap_or(usize::MAX);
        assert!(
            said < annotated && entry.contains("command line"),
            "`sleuth {command} --help` does not lead with SLEUTH_REDIS: {entry}"
        );
    }

    // Nothing listens there: the coordinator fails after the warning.
    let url = format!("redis://:{PASSWORD}@127.0.0.1:{}/", free_port());
    let coordinator = |flag: bool| {
        let mut cmd = common::sleuth(dir.path());
        cmd.env("SLEUTH_TOKEN", TOKEN).arg("coordinator");
        if flag {
            cmd.args(["--redis", &url]);
        } else {
            cmd.env("SLEUTH_REDIS", &url);
        }
        let out = common::run(&mut cmd, Duration::from_secs(90));
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let flagged = coordinator(true);
    assert!(
        flagged.contains("warning")
            && flagged.contains("--redis")
            && flagged.contains("SLEUTH_REDIS"),
        "no warning for a password on the command line: {flagged}"
    );
    let from_env = coordinator(false);
    assert!(!from_env.contains("warning"), "{from_env}");
    for text in [&flagged, &from_env] {
        assert!(!text.contains(PASSWORD), "the password is shown: {text}");
    }

    let mut cmd = common::sleuth(dir.path());
    cmd.env("SLEUTH_TOKEN", TOKEN).arg("coordinator");
    let out = common::run(&mut cmd, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    let said = stderr.find("SLEUTH_REDIS").unwrap_or(usize::MAX);
    assert!(
        said < stderr.find("--redis").unwrap_or(usize::MAX),
        "a missing URL is asked for as SLEUTH_REDIS first: {stderr}"
    );
}
