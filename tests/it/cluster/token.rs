//! The token: a request without it or with a wrong one is refused, a worker with a wrong one cannot
//! register, and after a sweep against an OpenAI-compatible mock neither the token nor the provider's
//! API key is in any process's log, any `/metrics` page, or Redis.

use crate::common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use common::cluster::{
    metrics_body, mock_declaration, mock_model, write_sweep, Cluster, Options, FAKE_KEY, KEY_ENV,
    TOKEN,
};
use sleuth::cluster::proto as pb;

use super::assert_finished;

/// Every value in Redis, as text (to look for secrets in it).
fn redis_dump(con: &mut redis::Connection) -> String {
    fn flatten(v: &redis::Value, out: &mut Vec<u8>) {
        match v {
            redis::Value::BulkString(b) => out.extend_from_slice(b),
            redis::Value::SimpleString(s) => out.extend_from_slice(s.as_bytes()),
            redis::Value::Array(items) | redis::Value::Set(items) => {
                items.iter().for_each(|i| flatten(i, out))
            }
            redis::Value::Map(pairs) => pairs.iter().for_each(|(k, v)| {
                flatten(k, out);
                flatten(v, out);
            }),
            other => out.extend_from_slice(format!("{other:?}").as_bytes()),
        }
        out.push(b'\n');
    }
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(con).expect("KEYS");
    let mut out = Vec::new();
    for key in keys {
        let kind: String = redis::cmd("TYPE").arg(&key).query(con).expect("TYPE");
        let mut cmd = match kind.as_str() {
            "string" => redis::cmd("GET"),
            "hash" => redis::cmd("HGETALL"),
            "list" => redis::cmd("LRANGE"),
            "set" => redis::cmd("SMEMBERS"),
            "zset" => redis::cmd("ZRANGE"),
            "stream" => redis::cmd("XRANGE"),
            other => panic!("{key}: a {other} in Redis"),
        };
        cmd.arg(&key);
        match kind.as_str() {
            "list" | "zset" => {
                cmd.arg(0).arg(-1);
            }
            "stream" => {
                cmd.arg("-").arg("+");
            }
            _ => {}
        }
        let v: redis::Value = cmd.query(con).expect("read a key");
        out.extend_from_slice(key.as_bytes());
        out.push(b'\n');
        flatten(&v, &mut out);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Check 5: The token: a request without it or with a wrong one is refused, a worker with a wrong
/// one cannot register, and after a sweep against an OpenAI-compatible mock neither the token nor
/// the provider's API key is in any process's log, any `/metrics` page, or Redis.
#[test]
fn the_token_is_required_and_no_secret_leaks() {
    let mock = common::Mock::start();
    let Some(mut c) = Cluster::start(Options {
        metrics: true,
        // Every line any crate logs, ours and the HTTP/2, gRPC and Redis clients'.
        log: "debug",
        worker_models: Some(mock_declaration(&mock.base_url())),
        ..Options::default()
    }) else {
        return;
    };
    let file = write_sweep(
        c.dir.path(),
        "secrets",
        &["glasshouse.toml"],
        3,
        &mock_model(&mock.base_url(), None),
    );
    let mut client_output = String::new();

    requests_without_the_token_are_refused(&c);
    client_output.push_str(&submitting_without_the_token_is_refused(&c, &file));
    a_worker_with_a_wrong_token_does_not_register(&mut c);

    // A sweep against the mock, with the key in every process's environment.
    let id = c.submit(&file);
    let lines = c.watch(&id);
    assert_finished(&lines, 3);
    assert!(mock.requests() > 0, "the games called the mock");
    client_output.push_str(&lines.join("\n"));
    for (arg, what) in [("workers", "workers"), ("results", "results")] {
        let mut cmd = c.sleuth();
        cmd.arg(arg);
        if arg == "results" {
            cmd.arg(&id).arg("--out").arg(c.path("fetched"));
        }
        let out = common::run(&mut cmd, Duration::from_secs(60));
        assert!(out.status.success(), "sleuth {what}");
        client_output.push_str(&String::from_utf8_lossy(&out.stdout));
        client_output.push_str(&String::from_utf8_lossy(&out.stderr));
    }

    no_secret_is_anywhere(&c, client_output);
}

/// No token at all, straight to the API (what `grpcurl` without a header would do): refused.
fn requests_without_the_token_are_refused(c: &Cluster) {
    let url = c.url();
    let refused = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(async move {
            let mut api = pb::sweeps_client::SweepsClient::connect(url)
                .await
                .expect("connect");
            let list = api.list_workers(pb::ListWorkersRequest {}).await;
            let submit = api
                .submit(pb::SubmitRequest {
                    sweep_toml: "name = \"x\"".into(),
                    file_name: "x.toml".into(),
                    scripts: Vec::new(),
                })
                .await;
            [list.err(), submit.map(|_| ()).err()]
        });
    for r in refused {
        let s = r.expect("a request without the token is refused");
        assert_eq!(s.code(), tonic::Code::Unauthenticated, "{s:?}");
    }
}

/// `sleuth submit` with a wrong token and with none: both refused, nothing submitted. What the
/// client printed (to be searched for secrets).
fn submitting_without_the_token_is_refused(c: &Cluster, file: &Path) -> String {
    // A wrong token: `sleuth submit` fails and says why; nothing was submitted.
    let mut submit = c.sleuth_with_token(Some("not-the-token"));
    submit.arg("submit").arg(file);
    let out = common::run(&mut submit, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "submit with a wrong token succeeded");
    assert!(
        err.contains("token") && err.contains("Unauthenticated"),
        "the error names the token: {err}"
    );
    assert!(
        !err.contains("not-the-token"),
        "the wrong token is echoed: {err}"
    );
    let none = c
        .progress("secrets")
        .expect_err("the sweep was not submitted");
    assert_eq!(none.code(), tonic::Code::NotFound, "{none:?}");

    // No token in the environment: refused before anything is sent.
    let mut submit = c.sleuth_with_token(None);
    submit.arg("submit").arg(file);
    let out = common::run(&mut submit, Duration::from_secs(60));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("SLEUTH_TOKEN"));
    err
}

/// A worker with a wrong token exits without registering.
fn a_worker_with_a_wrong_token_does_not_register(c: &mut Cluster) {
    let mut intruder = c.spawn_worker("not-the-token");
    let status = intruder
        .wait_exit(Duration::from_secs(60))
        .expect("a worker with a wrong token exits");
    assert!(!status.success());
    let log = intruder.log_text();
    assert!(
        log.contains("token") && !log.contains("not-the-token"),
        "its error: {log}"
    );
    assert_eq!(
        c.list_workers().expect("list").len(),
        3,
        "it did not register"
    );
}

/// Neither the token nor the provider's key is in any process's log, any `/metrics` page, Redis,
/// or `client_output`.
fn no_secret_is_anywhere(c: &Cluster, client_output: String) {
    let mut pages: Vec<(String, String)> = Vec::new();
    let addrs: Vec<SocketAddr> = c
        .coordinator_metrics
        .iter()
        .chain(&c.worker_metrics)
        .copied()
        .collect();
    assert_eq!(
        addrs.len(),
        4,
        "the coordinator's and three workers' metrics"
    );
    for addr in addrs {
        let body = metrics_body(addr);
        assert!(
            body.contains("sleuth_"),
            "{addr}/metrics has sleuth's metrics"
        );
        pages.push((format!("http://{addr}/metrics"), body));
    }
    let logs = c.logs();
    assert!(
        logs.iter().filter(|(n, _)| n.contains("worker")).count() >= 4,
        "logs: {:?}",
        logs.iter().map(|(n, _)| n).collect::<Vec<_>>()
    );
    // The logs are not empty: info lines of each process.
    for (name, text) in &logs {
        assert!(!text.trim().is_empty(), "{name} is empty");
    }
    let mut con = c.redis();
    let stored = redis_dump(&mut con);
    assert!(stored.contains(KEY_ENV), "the sweep file is in Redis");
    let everything = logs.into_iter().chain(pages).chain([
        ("client output".to_string(), client_output),
        ("redis".to_string(), stored),
    ]);
    for (name, text) in everything {
        for secret in [TOKEN, FAKE_KEY] {
            assert!(
                !text.contains(secret),
                "{name} contains the secret {secret}"
            );
        }
    }
}
