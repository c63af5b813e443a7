//! *Take a seat* on a game's page (`docs/seat.md`, *From the viewer*): the owner plays a game of the
//! run again with one character of their own, in the browser.
//!
//! The viewer does not play games; `sleuth play` does. So the button starts `sleuth play --spec
//! RESULT --human CHARACTER=NAME` as a child process — the same binary, the game's recorded spec, a
//! new directory under the run's `seated/` — waits for the seat link it prints, and sends the
//! browser there. The game is then the child's: it serves the seat on its own loopback port, plays
//! the agents, writes its result and exits when the game is over, whether or not the viewer is still
//! running. Its output (`play.log`, `play.out`) stays beside the result.
//!
//! **Who may.** The route is behind the owner's token rule, and, as the *New campaign* form, needs a
//! same-origin post carrying the page's proof (`annotate/form.rs` says why): another site must not
//! be able to start games in the owner's name. The seat page is served on loopback only, so a
//! request that reached the viewer under another host name is refused with that reason rather than
//! sent to a link its browser cannot open.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::annotate::{form, session};
use crate::pages::{characters, game_files};
use crate::state::AppState;

/// How long the child may take to print its seat link (it loads the script and opens the store).
const LINK_WAIT: Duration = Duration::from_secs(60);
/// The longest player name taken (it is shown as `human:NAME` in results and reports).
const MAX_NAME: usize = 64;

/// The form's fields.
#[derive(Debug, Default)]
struct Asked {
    id: String,
    character: String,
    name: String,
    proof: Option<String>,
}

impl Asked {
    fn parse(body: &[u8]) -> Asked {
        let mut a = Asked::default();
        for (key, value) in url::form_urlencoded::parse(body) {
            match key.as_ref() {
                "id" if a.id.is_empty() => a.id = value.into_owned(),
                "character" if a.character.is_empty() => a.character = value.trim().to_string(),
                "name" if a.name.is_empty() => a.name = value.trim().to_string(),
                "proof" if a.proof.is_none() => a.proof = Some(value.into_owned()),
                _ => {}
            }
        }
        a
    }
}

/// A refusal: its status and the reason, as plain text (the form is a plain HTML post).
fn refuse(status: StatusCode, why: impl std::fmt::Display) -> Response {
    (
        status,
        [(header::CACHE_CONTROL, "no-store")],
        format!("{why}\n"),
    )
        .into_response()
}

/// Whether the request's host is this machine's loopback (where the seat will be served).
fn loopback_host(headers: &HeaderMap) -> bool {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(n, _)| n),
    };
    name == "localhost"
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A player's name as `sleuth play --human` takes it: letters, digits, `-`, `_` and `.`.
fn name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// `POST /game/seat`: `id`, `character`, `name` and the page's `proof`, form-encoded. Answers 303
/// to the seat's link once the game's process has printed it; 403 for a post that is not the page's,
/// 409 when the seat could not be reached from the owner's browser, 422 naming a bad field, 500 when
/// the game's process failed (with the end of its log).
pub async fn take(State(st): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(e) = session::same_origin(&headers) {
        return refuse(StatusCode::FORBIDDEN, format!("{e}; no game was started"));
    }
    let asked = Asked::parse(&body);
    if !form::proof_ok(asked.proof.as_deref()) {
        return refuse(
            StatusCode::FORBIDDEN,
            "the form does not carry this page's proof: reload the game's page",
        );
    }
    if !loopback_host(&headers) {
        return refuse(
            StatusCode::CONFLICT,
            "a seat is served on this machine's loopback only: open the viewer at 127.0.0.1 on \
             the machine it runs on, or start the game there with `sleuth play --spec … --human …`",
        );
    }
    if st.source.remote.is_some() {
        return refuse(
            StatusCode::CONFLICT,
            "a cluster's mirror holds no playable spec: take the seat on the coordinator's machine",
        );
    }
    match start(&st, &asked).await {
        Ok(link) => (
            StatusCode::SEE_OTHER,
            [
                (header::LOCATION, link.as_str()),
                (header::CACHE_CONTROL, "no-store"),
            ],
        )
            .into_response(),
        Err((status, why)) => refuse(status, why),
    }
}

type Refusal = (StatusCode, String);

/// Checks the request against the game and starts it; the seat's link.
async fn start(st: &AppState, asked: &Asked) -> Result<String, Refusal> {
    let bad = |why: String| (StatusCode::UNPROCESSABLE_ENTITY, why);
    let g = game_files(st, &asked.id)
        .await
        .map_err(|e| bad(format!("id: {e}")))?;
    let dir = st
        .source
        .game_dir(&asked.id)
        .ok_or_else(|| bad(format!("id: `{}` is not a game's name", asked.id)))?;
    let result = dir.join("result.json");
    if !result.is_file() {
        return Err(bad(format!(
            "id: game `{}` has no result yet: a seat replays a finished game's spec",
            asked.id
        )));
    }
    let cast = characters(&g).await.map_err(|e| bad(e.to_string()))?;
    if !cast.contains(&asked.character) {
        return Err(bad(format!(
            "character: `{}` is not a player of this game (its players: {})",
            asked.character,
            cast.join(", ")
        )));
    }
    if !name_ok(&asked.name) {
        return Err(bad(format!(
            "name: a player's name is 1 to {MAX_NAME} letters, digits, '-', '_' or '.'"
        )));
    }
    let out = new_dir(&st.source.root, &asked.id, &asked.name)
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e))?;
    spawn_play(&result, &out, &asked.character, &asked.name).await
}

/// A new directory for the seated game: `RUN/seated/NAME-N`, the first N free.
fn new_dir(root: &Path, game: &str, name: &str) -> Result<PathBuf, String> {
    let seated = root.join("seated");
    std::fs::create_dir_all(&seated)
        .map_err(|e| format!("cannot create {}: {e}", seated.display()))?;
    let stem: String = game
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(12)
        .collect();
    for n in 1..10_000 {
        let dir = seated.join(format!("{stem}-{name}-{n}"));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
        }
    }
    Err(format!("{}: no free name left", seated.display()))
}

/// Starts `sleuth play --spec RESULT --human CHARACTER=NAME --out OUT` and waits for the seat link
/// it prints; the process goes on alone (a task reaps it when the game is over).
async fn spawn_play(
    result: &Path,
    out: &Path,
    character: &str,
    name: &str,
) -> Result<String, Refusal> {
    let failed = |why: String| (StatusCode::INTERNAL_SERVER_ERROR, why);
    let exe = std::env::current_exe().map_err(|e| failed(format!("cannot find sleuth: {e}")))?;
    let log = out.join("play.log");
    let open = |p: PathBuf| {
        std::fs::File::create(&p).map_err(|e| failed(format!("cannot create {}: {e}", p.display())))
    };
    let (stderr, stdout) = (open(log.clone())?, open(out.join("play.out"))?);
    let mut child = tokio::process::Command::new(exe)
        .arg("play")
        .arg("--spec")
        .arg(result)
        .arg("--human")
        .arg(format!("{character}={name}"))
        .arg("--out")
        .arg(out)
        .args(["--seat-addr", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .spawn()
        .map_err(|e| failed(format!("cannot start sleuth play: {e}")))?;
    let deadline = tokio::time::Instant::now() + LINK_WAIT;
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(link) = text.lines().find_map(|l| l.strip_prefix("seat: ")) {
            let link = link.trim().to_string();
            let shown = out.display().to_string();
            tokio::spawn(async move {
                match child.wait().await {
                    Ok(status) => tracing::info!(%status, out = %shown, "a seated game ended"),
                    Err(e) => tracing::warn!(error = %e, out = %shown, "a seated game was lost"),
                }
            });
            return Ok(link);
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(failed(format!(
                "sleuth play ended ({status}) before opening the seat:\n{}",
                tail(&text, 12)
            )));
        }
        if tokio::time::Instant::now() > deadline {
            let _ = child.kill().await;
            return Err(failed(format!(
                "sleuth play printed no seat link in {} s:\n{}",
                LINK_WAIT.as_secs(),
                tail(&text, 12)
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_loopback_host_is_one() {
        let with = |host: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::HOST, host.parse().expect("a header value"));
            loopback_host(&h)
        };
        assert!(with("127.0.0.1:8080"));
        assert!(with("localhost:3000"));
        assert!(with("[::1]:8080"));
        assert!(!with("viewer.example.org"));
        assert!(!with("10.0.0.5:8080"));
        assert!(!loopback_host(&HeaderMap::new()));
    }

    #[test]
    fn a_form_reads_its_first_values_and_names_are_checked() {
        let a = Asked::parse(b"id=g1&character=Edmund+Hale&name=pat&proof=x&id=g2");
        assert_eq!(
            (a.id.as_str(), a.character.as_str(), a.name.as_str()),
            ("g1", "Edmund Hale", "pat")
        );
        assert!(name_ok("pat.smith-2"));
        assert!(!name_ok(""));
        assert!(!name_ok("a b"));
        assert!(!name_ok(&"x".repeat(MAX_NAME + 1)));
    }
}
