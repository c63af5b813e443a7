//! `sleuth view --coordinator`: the viewer over a cluster's sweeps. A real `redis-server`, a
//! coordinator and a worker playing with the simulated model; the viewer (the binary, on a free port)
//! mirrors the cluster and is checked over HTTP: the runs page lists the sweep with its counts, the
//! counts move to done with the ledger's figures from the coordinator, the sweep page shows its grid,
//! and a done game's page shows its transcript, fetched when the page was opened (the mirror had no
//! file before). A wrong token stops the viewer before it serves, without printing the token.
//!
//! The coordinator refusing a call without the token is `tests/cluster_api.rs`'s (every call, the new
//! ones too).

use crate::common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use common::cluster::{simulated_model, wait_for, write_sweep, Cluster, Options, SWEEP_TIMEOUT};
use serde_json::Value;

/// The viewer as a child process, killed when dropped.
struct Viewer {
    child: Child,
    base: String,
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `sleuth view --coordinator` on a free port with its mirror in `mirror`.
fn spawn_viewer(c: &Cluster, mirror: &Path) -> Viewer {
    let mut cmd = c.sleuth();
    cmd.args(["view", "--coordinator", &c.url(), "--listen", "127.0.0.1:0"])
        .arg("--mirror")
        .arg(mirror)
        .stderr(Stdio::inherit());
    let (child, line) = common::start_viewer(cmd);
    Viewer {
        child,
        base: format!("http://{}", common::viewer_addr(&line)),
    }
}

/// A blocking GET: (status, body).
fn get(url: &str) -> (u16, String) {
    sleuth::tls::install_crypto_provider();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let resp = reqwest::get(url)
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"));
        let status = resp.status().as_u16();
        (status, resp.text().await.expect("body"))
    })
}

fn page(url: &str) -> String {
    let (status, body) = get(url);
    assert_eq!(status, 200, "GET {url}: {body}");
    body.replace("&#x2f;", "/").replace("&quot;", "\"")
}

fn sweep_live(base: &str, id: &str) -> Option<Value> {
    let v: Value = serde_json::from_str(&page(&format!("{base}/api/runs"))).ok()?;
    v["sweeps"]
        .as_array()?
        .iter()
        .find(|s| s["id"] == id)
        .cloned()
}

#[test]
fn the_viewer_follows_a_cluster_sweep_and_fetches_transcripts_on_demand() {
    let Some(c) = Cluster::start(Options {
        workers: 1,
        ..Options::default()
    }) else {
        return;
    };
    let file = write_sweep(
        c.dir.path(),
        "viewed",
        &["night-ferry.toml"],
        2,
        &simulated_model(20),
    );
    let id = c.submit(&file);
    let mirror = c.path("mirror");
    let v = spawn_viewer(&c, &mirror);

    // The runs page lists the sweep with its games.
    let runs = page(&format!("{}/", v.base));
    assert!(runs.contains("/sweep?id=viewed"), "{runs}");
    let first = sweep_live(&v.base, &id).expect("the sweep in /api/runs");
    assert_eq!(first["games"], 2, "{first}");

    // The counts move to done, with the cluster's ledger as the live figures.
    let done = wait_for(SWEEP_TIMEOUT, "the viewer to show both games done", || {
        sweep_live(&v.base, &id).filter(|s| s["done"] == 2 && s["status"] == "finished")
    });
    assert!(
        done["sums"]["live_calls"].as_u64().unwrap_or(0) > 0,
        "live calls from the coordinator's ledger: {done}"
    );
    assert!(done["tokens"].as_u64().unwrap_or(0) > 0, "{done}");
    let progress = c.progress(&id).expect("progress");
    assert_eq!(done["sums"]["live_calls"], progress.live_calls, "{done}");
    assert_eq!(done["sums"]["cache_hits"], progress.cache_hits, "{done}");

    // The sweep page: its grid (the script's column, the arm's row with both games done).
    let sweep = page(&format!("{}/sweep?id=viewed", v.base));
    assert!(sweep.contains("id=\"grid\""), "{sweep}");
    assert!(
        sweep.contains("The Last Crossing of the Marigold"),
        "the script's column: {sweep}"
    );
    assert!(
        sweep.contains("<td>2/2</td>"),
        "both games of the cell done: {sweep}"
    );

    // A done game: no transcript in the mirror until its page is opened.
    let db = rusqlite::Connection::open_with_flags(
        mirror.join("sleuth.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("the mirror's store");
    let game: String = db
        .query_row(
            "SELECT id FROM games WHERE sweep = 'viewed' AND state = 'done' ORDER BY seq LIMIT 1",
            [],
            |r| r.get(0),
        )
        .expect("a done game in the mirror");
    let attempts: Vec<i64> = db
        .prepare("SELECT attempts FROM games WHERE sweep = 'viewed' ORDER BY seq")
        .and_then(|mut st| {
            st.query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<i64>>>()
        })
        .expect("the mirror's games");
    assert_eq!(
        attempts,
        [1, 1],
        "each game's attempts as the cluster counted them"
    );
    let transcript = mirror.join("games").join(&game).join("transcript.jsonl");
    assert!(
        !transcript.exists(),
        "fetched before anyone opened the game"
    );
    assert!(
        mirror
            .join("games")
            .join(&game)
            .join("result.json")
            .is_file(),
        "the result is mirrored for the report"
    );
    let g = page(&format!("{}/game?id={game}", v.base));
    assert!(
        transcript.is_file(),
        "the game's page fetched its transcript"
    );
    assert!(
        g.contains("class=\"ev kind-"),
        "the transcript's events: {g}"
    );
    assert!(
        g.contains("Not available over a coordinator"),
        "the page says why there are no model calls"
    );
    let (status, _) = get(&format!("{}/game/calls?id={game}", v.base));
    assert_eq!(status, 404);
}

#[test]
fn a_wrong_token_stops_the_viewer_before_it_serves() {
    let Some(c) = Cluster::start(Options {
        workers: 1,
        ..Options::default()
    }) else {
        return;
    };
    const WRONG: &str = "wrong-viewer-token-51d0";
    let mut cmd = c.sleuth_with_token(Some(WRONG));
    cmd.args(["view", "--coordinator", &c.url(), "--listen", "127.0.0.1:0"]);
    let out = common::run(&mut cmd, Duration::from_secs(60));
    assert!(!out.status.success(), "served with a wrong token");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stderr.contains("Unauthenticated"), "{stderr}");
    assert!(
        !stderr.contains(WRONG) && !stdout.contains(WRONG),
        "the token is never printed: {stderr}"
    );
}

#[test]
fn without_mirror_the_temporary_mirror_is_removed_at_exit() {
    let Some(c) = Cluster::start(Options {
        workers: 1,
        ..Options::default()
    }) else {
        return;
    };
    let mut cmd = c.sleuth();
    cmd.args(["view", "--coordinator", &c.url(), "--listen", "127.0.0.1:0"])
        .stderr(Stdio::inherit());
    let (mut child, line) = common::start_viewer(cmd);
    let dir = line
        .split("(mirrored in ")
        .nth(1)
        .and_then(|r| r.split(") at http://").next())
        .unwrap_or_else(|| panic!("no mirror in {line:?}"))
        .to_string();
    let dir = Path::new(&dir);
    assert!(
        dir.join("sleuth.db").is_file(),
        "the mirror at {}",
        dir.display()
    );
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill -TERM");
    assert!(killed.success());
    let status = wait_for(Duration::from_secs(20), "the viewer to exit", || {
        child.try_wait().ok().flatten()
    });
    assert!(status.success(), "SIGTERM is a clean stop: {status}");
    assert!(!dir.exists(), "{} removed at exit", dir.display());
}
