//! `sleuth view` as a command: off loopback it needs its token (header, cookie, or `?token=` once)
//! and refuses requests without it; a folder of games is viewed without a store.

use crate::common;

use super::{done_game, fixture, get, get_with, page, spawn_view, two_arms};

#[test]
fn off_loopback_the_viewer_needs_its_token_and_refuses_requests_without_it() {
    let f = fixture();
    // No token: refused before anything is served.
    let out = common::run(
        common::sleuth(&f.run).args(["view", ".", "--listen", "0.0.0.0:0", "--no-tls"]),
        common::CHILD_TIMEOUT,
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("SLEUTH_TOKEN"), "{err}");

    // Plain HTTP off loopback only when asked for (a proxy in front terminates TLS).
    let (mut child, addr) = super::hardening::spawn_view_args(
        &f.run,
        &["--listen", "0.0.0.0:0", "--no-tls"],
        &[("SLEUTH_TOKEN", "t0ken-x")],
    );
    let port = addr.rsplit(':').next().expect("port");
    let base = format!("http://127.0.0.1:{port}");
    let (status, _, body) = get(&format!("{base}/"));
    assert_eq!(status, 401, "{body}");
    assert!(!body.contains("t0ken-x"));
    assert_eq!(get(&format!("{base}/api/runs")).0, 401);
    assert_eq!(
        get_with(&format!("{base}/"), &[("authorization", "Bearer wrong")]).0,
        401
    );
    assert_eq!(
        get_with(&format!("{base}/"), &[("authorization", "Bearer t0ken-x")]).0,
        200
    );
    // ?token= starts a session (its cookie) and takes the token out of the address.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (status, location, cookie) = rt.block_on(async {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        let resp = client
            .get(format!("{base}/sweep?id=t&token=t0ken-x"))
            .send()
            .await
            .expect("GET");
        let h = |n: &str| {
            resp.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string()
        };
        (resp.status().as_u16(), h("location"), h("set-cookie"))
    });
    assert_eq!(status, 303);
    assert_eq!(location, "/sweep?id=t");
    assert!(cookie.starts_with("sleuth_session=") && cookie.contains("HttpOnly"));
    assert!(
        !cookie.contains("t0ken-x"),
        "the cookie is never the token: {cookie}"
    );
    assert!(!cookie.contains("Secure"), "no TLS, no Secure: {cookie}");
    let session = cookie.split(';').next().expect("name=value");
    assert_eq!(
        get_with(&format!("{base}/sweep?id=t"), &[("cookie", session)]).0,
        200
    );
    // The token itself is no session.
    assert_eq!(
        get_with(
            &format!("{base}/sweep?id=t"),
            &[("cookie", "sleuth_session=t0ken-x")]
        )
        .0,
        401
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_folder_of_games_is_viewed_without_a_store() {
    let f = fixture();
    let id = done_game(&f.run);
    let tmp = tempfile::tempdir().expect("temp dir");
    let game = tmp.path().join("my-game");
    std::fs::create_dir_all(&game).expect("mkdir");
    for file in ["result.json", "transcript.jsonl"] {
        std::fs::copy(f.run.join("games").join(&id).join(file), game.join(file)).expect("copy");
    }
    let (mut child, addr) = spawn_view(tmp.path(), "127.0.0.1:0", &[]);
    let base = format!("http://{addr}");
    let (_, runs) = page(&format!("{base}/"));
    assert!(runs.contains("/game?id=my-game"), "{runs}");
    let (_, g) = page(&format!("{base}/game?id=my-game"));
    assert!(g.contains("data-seq=\"0\""));
    assert!(!g.contains("Model calls"), "a folder has no ledger");
    let (_, report) = page(&format!("{base}/report"));
    assert!(report.contains("Arms"), "{report}");
    // Two games of the folder side by side.
    let (x, y) = two_arms(&f.run);
    let other = if x == id { y } else { x };
    let game2 = tmp.path().join("other-game");
    std::fs::create_dir_all(&game2).expect("mkdir");
    for file in ["result.json", "transcript.jsonl"] {
        std::fs::copy(
            f.run.join("games").join(&other).join(file),
            game2.join(file),
        )
        .expect("copy");
    }
    let (_, cmp) = page(&format!("{base}/compare?a=my-game&b=other-game"));
    assert!(cmp.contains("id=\"first-difference\""), "{cmp}");
    let (_, same) = page(&format!("{base}/compare?a=my-game&b=my-game"));
    assert!(same.contains("No difference"));
    let _ = child.kill();
    let _ = child.wait();
}
