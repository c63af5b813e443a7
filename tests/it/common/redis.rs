//! A real `redis-server` for the tests that need one: started on a free port with no persistence
//! (unless a test passes its own flags), killed when dropped. Without `redis-server` a test is
//! skipped, and says so, except under CI (`CI=true`), where that is a failure: a Redis test that
//! returns early must never pass as a tested one.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` child process, killed on drop.
pub struct RedisServer {
    child: Child,
    pub port: u16,
}

impl RedisServer {
    /// Starts a server (with `extra` arguments), or `None` when `redis-server` is not installed
    /// (the caller returns: skipped); under CI a missing `redis-server` panics.
    pub fn start(extra: &[&str]) -> Option<RedisServer> {
        Self::start_program("redis-server", super::under_ci(), extra)
    }

    /// [`start`](Self::start) with the program and the CI setting given (the test of the skip rule
    /// names a program that does not exist).
    pub fn start_program(program: &str, ci: bool, extra: &[&str]) -> Option<RedisServer> {
        // A port the kernel just handed out and took back; another process could take it in between,
        // so a server that does not come up is tried again on a new one.
        for _ in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .expect("a free port");
            let spawned = Command::new(program)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .args(extra)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn();
            let mut child = match spawned {
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    super::skip_or_fail(
                        ci,
                        &format!("`{program}` is not installed (not on PATH)"),
                        "scripts/ensure-redis.sh installs it; the Redis tests start their own server",
                    );
                    return None;
                }
                Err(e) => panic!("cannot start {program}: {e}"),
            };
            let log = child.stdout.take().expect("piped stdout");
            let mut server = RedisServer { child, port };
            if server.wait_ready(log) {
                return Some(server);
            }
        }
        panic!("redis-server did not come up on any of three ports");
    }

    /// Waits until this server says it accepts connections, up to 30 s; `false` if it exits first
    /// (most likely the port was taken meanwhile). Its own log line, not an answer on the port: when
    /// tests of several processes start servers at once, the port may answer from another process's
    /// server that took it first, and a test would then share (and lose) that one. The log is read to
    /// its end by a thread, so the server never blocks on a full pipe.
    fn wait_ready(&mut self, log: ChildStdout) -> bool {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut said = false;
            for line in BufReader::new(log).lines() {
                let Ok(line) = line else { break };
                if !said && line.contains("Ready to accept connections") {
                    said = true;
                    let _ = tx.send(());
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if rx.recv_timeout(Duration::from_millis(50)).is_ok() {
                return true;
            }
        }
        false
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
