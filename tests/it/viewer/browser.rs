//! A minimal W3C WebDriver client for the browser tests: chromedriver and a headless Chromium
//! session, the handful of commands the tests use, and screenshots on request.

use crate::common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// A minimal W3C WebDriver client: the handful of commands these tests use, over HTTP+JSON.
pub(super) struct Browser {
    client: reqwest::Client,
    session: String,
    driver: Child,
    rt: tokio::runtime::Runtime,
}

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// WebDriver's codes of the special keys the tests press (`Browser::keys`).
pub(super) const ENTER: &str = "\u{E007}";
pub(super) const BACKSPACE: &str = "\u{E003}";
pub(super) const ARROW_UP: &str = "\u{E013}";

impl Browser {
    /// Starts chromedriver on a free port and a headless Chromium session; `None` (after
    /// `skip_or_fail`) when they are not installed.
    pub(super) fn start() -> Option<Browser> {
        let Some(driver_bin) = which("chromedriver") else {
            common::skip_or_fail(
                common::under_ci(),
                "chromedriver is not installed",
                "scripts/ensure-chromium.sh installs Debian's chromium and chromium-driver",
            );
            return None;
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a: SocketAddr| a.port())
            .expect("a free port");
        let driver = Command::new(driver_bin)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        // reqwest is built without a default TLS provider: the fixture's sweep installs sleuth's,
        // and a test that starts the browser first must too.
        sleuth::tls::install_crypto_provider();
        let client = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = rt.block_on(async {
                let r = client.get(format!("{base}/status")).send().await.ok()?;
                let v: Value = r.json().await.ok()?;
                v["value"]["ready"].as_bool()
            });
            if ready == Some(true) {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut options = json!({
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1000", "--lang=en-US"]
        });
        if let Some(bin) = ["chromium", "chromium-browser", "google-chrome"]
            .into_iter()
            .find_map(which)
        {
            options["binary"] = json!(bin.display().to_string());
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome", "goog:chromeOptions": options}}});
        let v: Value = rt.block_on(async {
            client
                .post(format!("{base}/session"))
                .json(&caps)
                .send()
                .await
                .expect("new session")
                .json()
                .await
                .expect("session JSON")
        });
        let session = v["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {v}"))
            .to_string();
        Some(Browser {
            client,
            session: format!("{base}/session/{session}"),
            driver,
            rt,
        })
    }

    fn cmd(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.session);
        self.rt.block_on(async {
            let mut req = self.client.request(method, &url);
            if let Some(b) = body {
                req = req.json(&b);
            }
            let v: Value = req
                .send()
                .await
                .unwrap_or_else(|e| panic!("{url}: {e}"))
                .json()
                .await
                .expect("WebDriver JSON");
            v["value"].clone()
        })
    }

    pub(super) fn goto(&self, url: &str) {
        self.cmd(reqwest::Method::POST, "/url", Some(json!({ "url": url })));
    }

    pub(super) fn url(&self) -> String {
        self.cmd(reqwest::Method::GET, "/url", None)
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    /// The elements matching `css` now.
    pub(super) fn all(&self, css: &str) -> Vec<String> {
        let v = self.cmd(
            reqwest::Method::POST,
            "/elements",
            Some(json!({"using": "css selector", "value": css})),
        );
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|e| e[ELEMENT].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The first element matching `css`, waiting up to 15 s for it.
    pub(super) fn find(&self, css: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(e) = self.all(css).into_iter().next() {
                return e;
            }
            assert!(
                Instant::now() < deadline,
                "no element {css} on {}",
                self.url()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub(super) fn click(&self, element: &str) {
        self.cmd(
            reqwest::Method::POST,
            &format!("/element/{element}/click"),
            Some(json!({})),
        );
    }

    pub(super) fn text(&self, element: &str) -> String {
        self.cmd(
            reqwest::Method::GET,
            &format!("/element/{element}/text"),
            None,
        )
        .as_str()
        .unwrap_or("")
        .to_string()
    }

    pub(super) fn attr(&self, element: &str, name: &str) -> Option<String> {
        self.cmd(
            reqwest::Method::GET,
            &format!("/element/{element}/attribute/{name}"),
            None,
        )
        .as_str()
        .map(str::to_string)
    }

    pub(super) fn run_js(&self, script: &str) -> Value {
        self.cmd(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    /// Presses `keys` one after the other on whatever has the focus (WebDriver's key actions, so
    /// the page's own key handlers see a person's keys). Special keys are WebDriver's codes:
    /// [`ENTER`], [`BACKSPACE`], [`ARROW_UP`]…
    pub(super) fn keys(&self, keys: &str) {
        let presses: Vec<Value> = keys
            .chars()
            .flat_map(|k| {
                let k = k.to_string();
                [
                    json!({"type": "keyDown", "value": k}),
                    json!({"type": "keyUp", "value": k}),
                ]
            })
            .collect();
        let chain = json!({"type": "key", "id": "keyboard", "actions": presses});
        self.cmd(
            reqwest::Method::POST,
            "/actions",
            Some(json!({ "actions": [chain] })),
        );
    }

    /// Types `text` into `element` itself (WebDriver's element send keys: it scrolls the element
    /// into view and focuses it first), so a page whose layout moves meanwhile cannot send the keys
    /// elsewhere, as a click then [`Browser::keys`] can.
    pub(super) fn type_into(&self, element: &str, text: &str) {
        self.cmd(
            reqwest::Method::POST,
            &format!("/element/{element}/value"),
            Some(json!({ "text": text })),
        );
    }

    /// Waits until `cond` holds (15 s at most).
    pub(super) fn wait(&self, what: &str, cond: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while !cond() {
            assert!(Instant::now() < deadline, "waited in vain for {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Writes a PNG of the viewport to `dir/name.png` when screenshots were asked for.
    pub(super) fn screenshot(&self, name: &str) {
        let Some(dir) = std::env::var_os("SLEUTH_VIEWER_SCREENSHOTS") else {
            return;
        };
        let v = self.cmd(reqwest::Method::GET, "/screenshot", None);
        let png = base64_decode(v.as_str().expect("base64 PNG"));
        std::fs::create_dir_all(&dir).expect("screenshot dir");
        std::fs::write(Path::new(&dir).join(format!("{name}.png")), png).expect("write PNG");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let url = self.session.clone();
        let _ = self
            .rt
            .block_on(async { self.client.delete(url).send().await });
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Standard base64 (the WebDriver screenshot), without a dependency for it.
fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for v in s.bytes().filter_map(val) {
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}
