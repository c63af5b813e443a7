//! Worker secrets: on a cluster a model's endpoint and key come from the workers' `--models` files,
//! so a submission — anyone holding the cluster token — cannot make the workers send one of their
//! environment variables to a URL of its choosing. A submission naming another URL or key variable
//! for a declared model, or a model no worker declares, is refused before anything is queued, and no
//! request reaches the URL it named; a submission that leaves them out plays at the declared
//! endpoint.

use crate::common;

use std::io::Read;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::cluster::{
    mock_declaration, simulated_model, write_sweep, Cluster, Options, FAKE_KEY, KEY_ENV,
};

/// A TCP listener that keeps whatever any connection sends it: the URL an attacker would name.
struct Listener {
    url: String,
    received: Arc<Mutex<Vec<String>>>,
}

impl Listener {
    fn start() -> Listener {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind a listener");
        let url = format!("http://{}/v1", l.local_addr().expect("its address"));
        let received = Arc::new(Mutex::new(Vec::new()));
        let seen = received.clone();
        std::thread::spawn(move || {
            for conn in l.incoming() {
                let Ok(mut s) = conn else { continue };
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let mut buf = vec![0u8; 64 * 1024];
                let n = s.read(&mut buf).unwrap_or(0);
                if let Ok(mut r) = seen.lock() {
                    r.push(format!(
                        "connection: {}",
                        String::from_utf8_lossy(&buf[..n])
                    ));
                }
            }
        });
        Listener { url, received }
    }

    fn received(&self) -> Vec<String> {
        self.received.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

/// `sleuth submit FILE` that must fail: its stderr.
fn submit_refused(c: &Cluster, file: &std::path::Path) -> String {
    let mut cmd = c.sleuth();
    cmd.arg("submit").arg(file);
    let out = common::run(&mut cmd, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "the submission was accepted: {}{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

#[test]
fn a_submission_cannot_choose_a_workers_url_or_key_variable() {
    let mock = common::Mock::start();
    let listener = Listener::start();
    let Some(c) = Cluster::start(Options {
        workers: 2,
        worker_models: Some(mock_declaration(&mock.base_url())),
        ..Options::default()
    }) else {
        return;
    };
    let model = |extra: &str| {
        format!(
            "[models.m]\nprovider = \"openai\"\nmodel = {:?}\n{extra}",
            sleuth::llm::simulated::MODEL
        )
    };

    // The listener's URL with the workers' own key variable: the key would go to the listener.
    let steal = write_sweep(
        c.dir.path(),
        "steal-key",
        &["glasshouse.toml"],
        2,
        &model(&format!(
            "base_url = {:?}\napi_key_env = {KEY_ENV:?}\n",
            listener.url
        )),
    );
    let e = submit_refused(&c, &steal);
    assert!(
        e.contains("models.m.base_url") && e.contains("InvalidArgument"),
        "the refusal names the key: {e}"
    );

    // Another variable at the declared endpoint: it would be sent as a bearer header.
    let var = write_sweep(
        c.dir.path(),
        "steal-var",
        &["glasshouse.toml"],
        2,
        &model("api_key_env = \"SLEUTH_REDIS\"\n"),
    );
    let e = submit_refused(&c, &var);
    assert!(
        e.contains("models.m.api_key_env") && e.contains("SLEUTH_REDIS"),
        "{e}"
    );

    // Both at once, the example.
    let both = write_sweep(
        c.dir.path(),
        "steal-both",
        &["glasshouse.toml"],
        2,
        &model(&format!(
            "base_url = {:?}\napi_key_env = \"SLEUTH_REDIS\"\n",
            listener.url
        )),
    );
    submit_refused(&c, &both);

    // A model no worker declares.
    let undeclared = write_sweep(
        c.dir.path(),
        "undeclared",
        &["glasshouse.toml"],
        2,
        &format!(
            "{}\n[models.other]\nprovider = \"openai\"\nbase_url = {:?}\n",
            simulated_model(0),
            listener.url
        ),
    );
    let text = std::fs::read_to_string(&undeclared)
        .expect("read the sweep")
        .replace("model = \"m\"", "model = \"other\"");
    std::fs::write(&undeclared, text).expect("write the sweep");
    let e = submit_refused(&c, &undeclared);
    assert!(
        e.contains("no live worker serves model `other`") && e.contains("FailedPrecondition"),
        "{e}"
    );

    // Nothing was queued for any of them.
    let mut con = c.redis();
    let queued: u64 = redis::cmd("XLEN")
        .arg("{sleuth}:games")
        .query(&mut con)
        .expect("XLEN");
    assert_eq!(queued, 0, "a refused submission queued games");

    // Leaving the endpoint out plays at the declared one; by the time it is done, the workers have
    // had every chance to call the listener.
    let fair = write_sweep(c.dir.path(), "fair", &["glasshouse.toml"], 2, &model(""));
    let id = c.submit(&fair);
    let p = c.wait_ended(&id);
    assert_eq!((p.done, p.failed), (2, 0), "{p:?}");
    assert!(mock.requests() > 0, "the declared endpoint was called");
    let received = listener.received();
    assert!(
        received.is_empty(),
        "requests reached the listener: {received:?}"
    );
    for r in received {
        assert!(!r.contains(FAKE_KEY));
    }
}
