//! The viewer against a hostile page and a careless network (issue 33): a request for another host
//! name (DNS rebinding) is refused, every response carries the security headers, off loopback it
//! serves TLS with a `Secure` session cookie, and half-sent requests are closed and cannot crowd out
//! a user.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{fetch, fixture, get};

/// Starts `sleuth view .` in `dir` with `args` and `env`, returning the child and its address.
pub(super) fn spawn_view_args(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (Child, String) {
    let mut cmd = common::sleuth(dir);
    cmd.args(["view", &dir.display().to_string()])
        .args(args)
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (child, line) = common::start_viewer(cmd);
    (child, common::viewer_addr(&line))
}

/// Asserts the headers every response must carry.
fn assert_guarded(what: &str, h: &std::collections::HashMap<String, String>) {
    let csp = h.get("content-security-policy").map(String::as_str);
    assert!(
        csp.is_some_and(|c| c.contains("frame-ancestors 'none'") && c.contains("script-src 'self'")),
        "{what}: {csp:?}"
    );
    assert_eq!(
        h.get("x-content-type-options").map(String::as_str),
        Some("nosniff"),
        "{what}"
    );
    assert_eq!(
        h.get("x-frame-options").map(String::as_str),
        Some("DENY"),
        "{what}"
    );
    assert!(h.contains_key("referrer-policy"), "{what}");
}

#[test]
fn a_request_for_another_host_is_refused_and_every_response_carries_the_security_headers() {
    let f = fixture();
    let port = f.base.rsplit(':').next().expect("port");
    // What a rebinding page's request looks like: our address, its name.
    let (status, h, body) = fetch(
        &format!("{}/", f.base),
        &[("host", &format!("attacker.example:{port}"))],
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("--allow-host"), "{body}");
    assert!(!body.contains("night"), "nothing of the run: {body}");
    assert_guarded("the refusal", &h);
    let (status, h, _) = fetch(
        &format!("{}/game?id=x", f.base),
        &[("host", "attacker.example")],
    );
    assert_eq!(status, 403);
    assert_guarded("a refused game page", &h);
    // By address and by localhost it answers, with the headers on pages, assets and errors.
    for (url, host, want) in [
        (format!("{}/", f.base), format!("localhost:{port}"), 200),
        (format!("{}/", f.base), format!("127.0.0.1:{port}"), 200),
        (
            format!("{}/assets/app.js", f.base),
            format!("localhost:{port}"),
            200,
        ),
        (
            format!("{}/assets/nope.js", f.base),
            format!("localhost:{port}"),
            404,
        ),
        (
            format!("{}/game?id=..%2F..", f.base),
            format!("localhost:{port}"),
            400,
        ),
        (
            format!("{}/no-such-page", f.base),
            format!("localhost:{port}"),
            404,
        ),
    ] {
        let (status, h, _) = fetch(&url, &[("host", &host)]);
        assert_eq!(status, want, "{url}");
        assert_guarded(&url, &h);
    }
}

#[test]
fn a_listed_host_name_is_answered() {
    let f = fixture();
    let (mut child, addr) = spawn_view_args(
        &f.run,
        &[
            "--listen",
            "127.0.0.1:0",
            "--allow-host",
            "viewer.lab.example",
        ],
        &[],
    );
    let url = format!("http://{addr}/");
    assert_eq!(fetch(&url, &[("host", "viewer.lab.example:80")]).0, 200);
    assert_eq!(fetch(&url, &[("host", "other.lab.example")]).0, 403);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn off_loopback_the_viewer_serves_tls_with_a_secure_session_cookie() {
    let f = fixture();
    // Off loopback with a token but neither TLS nor --no-tls: refused before anything is served.
    let out = common::run(
        common::sleuth(&f.run)
            .args(["view", ".", "--listen", "0.0.0.0:0"])
            .env("SLEUTH_TOKEN", "t0ken-x"),
        common::CHILD_TIMEOUT,
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--tls-cert") && err.contains("--no-tls"),
        "{err}"
    );

    let certs = tempfile::tempdir().expect("temp dir");
    if common::make_certs(certs.path()).is_none() {
        return;
    }
    let cert = certs.path().join("server.pem");
    let key = certs.path().join("server.key");
    let (mut child, addr) = spawn_view_args(
        &f.run,
        &[
            "--listen",
            "0.0.0.0:0",
            "--tls-cert",
            &cert.display().to_string(),
            "--tls-key",
            &key.display().to_string(),
        ],
        &[("SLEUTH_TOKEN", "t0ken-x")],
    );
    let port = addr.rsplit(':').next().expect("port");
    let base = format!("https://127.0.0.1:{port}");
    sleuth::tls::install_crypto_provider();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let pem = std::fs::read(certs.path().join("ca.pem")).expect("the CA certificate");
    let (page, cookie) = rt.block_on(async {
        let client = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&pem).expect("a PEM"))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        let page = client
            .get(format!("{base}/"))
            .bearer_auth("t0ken-x")
            .send()
            .await
            .expect("GET over TLS");
        let login = client
            .get(format!("{base}/?token=t0ken-x"))
            .send()
            .await
            .expect("the login");
        let cookie = login
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        (page.status().as_u16(), cookie)
    });
    assert_eq!(page, 200);
    assert!(cookie.starts_with("sleuth_session="), "{cookie}");
    assert!(
        cookie.contains("; Secure") && !cookie.contains("t0ken-x"),
        "{cookie}"
    );
    // Plain HTTP to the TLS port gets no page.
    let mut plain = TcpStream::connect(format!("127.0.0.1:{port}")).expect("connect");
    plain
        .set_read_timeout(Some(Duration::from_secs(15)))
        .expect("timeout");
    let _ = plain.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    let mut buf = [0u8; 64];
    let n = plain.read(&mut buf).unwrap_or(0);
    assert!(!String::from_utf8_lossy(&buf[..n]).contains("200 OK"));
    let _ = child.kill();
    let _ = child.wait();
}

/// Opens a connection and sends half a request's head.
fn half_sent(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .expect("half a head");
    s
}

#[test]
fn half_sent_requests_are_closed_and_a_crowd_of_them_does_not_lock_out_a_user() {
    let f = fixture();
    // The viewer with 64 file descriptors, as in the review, and 80 half-sent requests at it.
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -n 64 && exec \"$0\" \"$@\"")
        .arg(common::bin())
        .args([
            "view",
            &f.run.display().to_string(),
            "--listen",
            "127.0.0.1:0",
        ])
        .current_dir(&f.run)
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    let (mut child, line) = common::start_viewer(cmd);
    let addr = common::viewer_addr(&line);
    let started = Instant::now();
    let mut crowd: Vec<TcpStream> = (0..80).map(|_| half_sent(&addr)).collect();
    // A user's request is answered while the crowd holds on: the first of them are closed after the
    // header timeout and the rest cannot hold more than half the viewer's descriptors.
    let (status, _, _) = get(&format!("http://{addr}/"));
    assert_eq!(status, 200);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "answered after {:?}",
        started.elapsed()
    );
    // The first half-sent request was closed by the viewer, not left open.
    let first = &mut crowd[0];
    first
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut buf = [0u8; 256];
    let closed = match first.read(&mut buf) {
        Ok(0) => true,
        Ok(n) => String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 408"),
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    };
    assert!(
        closed,
        "a half-sent request was still open after {:?}",
        started.elapsed()
    );
    assert!(started.elapsed() < Duration::from_secs(45));
    drop(crowd);
    let _ = child.kill();
    let _ = child.wait();
}

/// A folder of games with a link to a directory outside it, a game whose result links out, and a
/// game with a transcript line longer than the viewer reads.
fn hostile_folder() -> (tempfile::TempDir, tempfile::TempDir) {
    let f = fixture();
    let root = tempfile::tempdir().expect("temp dir");
    let outside = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        outside.path().join("result.json"),
        "{\"title\": \"OUTSIDE-THE-RUN\"}",
    )
    .expect("write");
    let id = super::done_game(&f.run);
    let game = root.path().join("good");
    std::fs::create_dir_all(&game).expect("mkdir");
    for file in ["result.json", "transcript.jsonl"] {
        std::fs::copy(f.run.join("games").join(&id).join(file), game.join(file)).expect("copy");
    }
    std::os::unix::fs::symlink(outside.path(), root.path().join("rootlink")).expect("link");
    let linked = root.path().join("linked");
    std::fs::create_dir_all(&linked).expect("mkdir");
    std::os::unix::fs::symlink(
        outside.path().join("result.json"),
        linked.join("result.json"),
    )
    .expect("link");
    // The good game's transcript with a 5 MiB line in the middle.
    let long = root.path().join("long");
    std::fs::create_dir_all(&long).expect("mkdir");
    std::fs::copy(game.join("result.json"), long.join("result.json")).expect("copy");
    let text = std::fs::read_to_string(game.join("transcript.jsonl")).expect("transcript");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.insert(2, "x".repeat(5 << 20));
    std::fs::write(long.join("transcript.jsonl"), lines.join("\n") + "\n").expect("write");
    (root, outside)
}

#[test]
fn links_out_of_a_folder_serve_nothing_and_an_overlong_line_is_passed_over() {
    let (root, _outside) = hostile_folder();
    let (mut child, addr) = spawn_view_args(root.path(), &["--listen", "127.0.0.1:0"], &[]);
    let base = format!("http://{addr}");
    assert_eq!(get(&format!("{base}/game?id=good")).0, 200);
    for id in ["rootlink", "linked"] {
        let (status, _, body) = get(&format!("{base}/game?id={id}"));
        assert_eq!(status, 400, "{id}: {body}");
        assert!(!body.contains("OUTSIDE-THE-RUN"), "{id}: {body}");
    }
    // The long line is named as unreadable and the events after it are served.
    let mut url = format!("{base}/game/events?id=long&after=0");
    let mut named = false;
    let mut events = 0;
    for _ in 0..20 {
        let (status, next, body) = get(&url);
        assert_eq!(status, 200);
        named |= body.contains("longer than the viewer reads");
        events += body.matches("data-seq=").count();
        match next {
            Some(n) => url = format!("{base}{n}"),
            None => break,
        }
    }
    assert!(named, "the long line is named");
    assert!(events > 2, "events on both sides of it: {events}");
    let _ = child.kill();
    let _ = child.wait();
}
