//! Making a campaign from the owner's `/campaigns` page (`docs/humans.md`, *In the viewer*), over
//! HTTP against `sleuth view` on a run of `sleuth play` games without a store: the form's post
//! answers with one link per annotator, shown once; an annotator's link opens their queue at the
//! first item of their order; `sleuth annotate status` lists the campaign. A bad form (no
//! annotators, an id the run has, the *questions* kind) is refused naming the field and creates
//! nothing — not even the store — and so is a post from another origin or without the page's
//! proof. Off loopback only the owner's token creates: an annotator's session cannot.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::annotate::{free_port, sleuth_ok, stop};
use super::hardening::spawn_view_args;
use super::{attrs, enc, fetch, request, spawn_view, unescape};

/// Two frameworks' games on one script, played once per test process; each test works on a copy.
fn played() -> &'static Path {
    static PLAYED: OnceLock<PathBuf> = OnceLock::new();
    PLAYED.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("viewer-annotate-create");
        let _ = std::fs::remove_dir_all(&root);
        let played = root.join("played");
        std::fs::create_dir_all(&played).expect("dir");
        let orchard = common::crate_file("examples/orchard-press.toml");
        let orchard = orchard.to_str().expect("utf-8");
        for framework in ["ocot", "thinkthrice"] {
            let out = format!("run/{framework}");
            let args = ["play", orchard, "--framework", framework, "--seed", "1"];
            sleuth_ok(&played, &[&args[..], &["--out", &out]].concat());
        }
        played.join("run")
    })
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("dir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A fresh copy of the played run for one test: `ROOT/NAME/run`, without a store.
fn fresh(name: &str) -> PathBuf {
    let from = played();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("viewer-annotate-create")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    copy_tree(from, &dir.join("run"));
    assert!(
        !dir.join("run/sleuth.db").exists(),
        "a run of games has no store"
    );
    dir.join("run")
}

/// POST a form: (status, headers, body with HTML's escapes undone).
pub(super) fn post_form(
    url: &str,
    headers: &[(&str, &str)],
    form: &[(&str, &str)],
) -> (u16, HashMap<String, String>, String) {
    let body: Vec<String> = form
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect();
    let mut all = vec![("content-type", "application/x-www-form-urlencoded")];
    all.extend_from_slice(headers);
    let (status, h, page) = request(reqwest::Method::POST, url, &all, Some(body.join("&")));
    (status, h, unescape(&page))
}

/// The proof the campaigns page's form carries.
pub(super) fn proof(page: &str) -> String {
    let at = page
        .find("name=\"proof\" value=\"")
        .unwrap_or_else(|| panic!("no proof in the form:\n{page}"));
    let rest = &page[at + "name=\"proof\" value=\"".len()..];
    rest[..rest.find('"').expect("end of the value")].to_string()
}

/// The form of a small *responses* campaign.
fn form<'a>(id: &'a str, annotators: &'a str, proof: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("proof", proof),
        ("id", id),
        ("kind", "responses"),
        ("per-condition", "2"),
        ("annotators", annotators),
        ("stage", "introduction"),
        ("condition", ""),
        ("seed", "7"),
    ]
}

/// `form` with one field changed.
fn with<'a>(mut f: Vec<(&'a str, &'a str)>, key: &str, value: &'a str) -> Vec<(&'a str, &'a str)> {
    for kv in f.iter_mut().filter(|(k, _)| *k == key) {
        kv.1 = value;
    }
    f
}

/// The campaign lines of `sleuth annotate status` (annotators' lines are indented).
fn status_campaigns(run: &Path) -> Vec<String> {
    let dir = run.parent().expect("parent");
    sleuth_ok(dir, &["annotate", "status", "run"])
        .lines()
        .filter(|l| !l.starts_with(' '))
        .map(str::to_string)
        .collect()
}

/// Follows an annotator's link as a browser would: the session cookie it sets.
fn session_of(base: &str, link: &str) -> String {
    let (status, h, body) = fetch(&format!("{base}{link}"), &[]);
    assert_eq!(status, 303, "{link}: {body}");
    let set = h.get("set-cookie").cloned().unwrap_or_default();
    set.split(';').next().expect("the cookie").to_string()
}

/// (annotator, link) of a created page, in page order.
fn links(page: &str) -> Vec<(String, String)> {
    let names = attrs(page, "data-annotator");
    let links = attrs(page, "data-link");
    assert_eq!(names.len(), links.len(), "{page}");
    names.into_iter().zip(links).collect()
}

#[test]
fn the_owner_creates_a_campaign_from_the_page_and_each_annotator_gets_their_link() {
    let run = fresh("loopback");
    let store = run.join("sleuth.db");
    let listen = format!("127.0.0.1:{}", free_port());
    let (view, addr) = spawn_view(&run, &listen, &[]);
    let base = format!("http://{addr}");
    let url = format!("{base}/campaigns/new");
    let (status, _, page) = fetch(&format!("{base}/campaigns"), &[]);
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("id=\"new-campaign\""), "{page}");
    let proof = proof(&page);
    let browser = [("origin", base.as_str()), ("sec-fetch-site", "same-origin")];

    // Refused, naming the field, and nothing created: not even the store.
    let good = form("intro", "ann,bob", &proof);
    for (bad, field, says) in [
        (
            with(good.clone(), "annotators", ""),
            "annotators",
            "names are letters",
        ),
        (
            with(good.clone(), "kind", "questions"),
            "kind",
            "questions generate",
        ),
        (with(good.clone(), "id", " "), "id", "needs a name"),
        (
            with(good.clone(), "per-condition", "two"),
            "per-condition",
            "whole number",
        ),
    ] {
        let (status, _, page) = post_form(&url, &browser, &bad);
        assert_eq!(status, 422, "{bad:?}: {page}");
        assert!(
            page.contains(&format!("data-field=\"{field}\"")) && page.contains(says),
            "{bad:?}: {page}"
        );
        assert!(page.contains("Nothing was created"), "{page}");
        assert!(attrs(&page, "data-link").is_empty(), "{page}");
        assert!(!store.exists(), "a refused form created the store");
    }
    // The refused form comes back as it was sent.
    let (_, _, page) = post_form(&url, &browser, &with(good.clone(), "annotators", ""));
    assert!(page.contains("name=\"id\" value=\"intro\""), "{page}");
    // Not the page's post: another origin, another site, no proof or a wrong one.
    let wrong = with(good.clone(), "proof", "0123");
    let no_proof: Vec<_> = good
        .iter()
        .filter(|(k, _)| *k != "proof")
        .cloned()
        .collect();
    type Pairs<'a> = [(&'a str, &'a str)];
    let cases: [(&Pairs, &Vec<(&str, &str)>); 4] = [
        (&[("origin", "http://evil.example")], &good),
        (&[("sec-fetch-site", "cross-site")], &good),
        (&browser, &no_proof),
        (&browser, &wrong),
    ];
    for (headers, body) in cases {
        let (status, _, page) = post_form(&url, headers, body);
        assert_eq!(status, 403, "{headers:?}: {page}");
    }
    assert!(!store.exists(), "a refused post created the store");

    // The page's post: one link per annotator, shown once and never cached.
    let (status, h, page) = post_form(&url, &browser, &good);
    assert_eq!(status, 201, "{page}");
    assert_eq!(h.get("cache-control").map(String::as_str), Some("no-store"));
    let made = links(&page);
    let names: Vec<&str> = made.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["ann", "bob"], "{page}");
    for (_, link) in &made {
        let token = link.strip_prefix("/annotate?token=").expect("a link");
        assert!(token.len() == 64 && token.bytes().all(|b| b.is_ascii_hexdigit()));
    }
    assert_ne!(made[0].1, made[1].1, "each annotator has their own");
    assert!(store.is_file(), "the store was created for the campaign");
    assert!(
        page.contains("data-campaign=\"intro\""),
        "listed at once: {page}"
    );
    // Shown once: the list does not show them again.
    let (_, _, again) = fetch(&format!("{base}/campaigns"), &[]);
    assert!(!again.contains(&made[0].1), "a token shown twice");

    // The same id again: refused, and the campaign is still the first one.
    let (status, _, page) = post_form(&url, &browser, &form("intro", "cy", &proof));
    assert_eq!(status, 422, "{page}");
    assert!(
        page.contains("data-field=\"id\"") && page.contains("already has a campaign 'intro'"),
        "{page}"
    );
    let lines = status_campaigns(&run);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("intro (responses), 2 item(s)"),
        "{lines:?}"
    );
    let dir = run.parent().expect("parent");
    let progress = sleuth_ok(dir, &["annotate", "status", "run", "intro"]);
    assert!(
        progress.contains("ann") && progress.contains("bob") && progress.contains("0 / 2"),
        "{progress}"
    );

    // ann's link opens ann's queue at the first item of ann's order.
    let cookie = session_of(&base, &made[0].1);
    let (status, _, queue) = fetch(&format!("{base}/annotate"), &[("cookie", cookie.as_str())]);
    assert_eq!(status, 200, "{queue}");
    let queue = unescape(&queue);
    assert!(
        queue.contains("Item 1 of 2") && queue.contains("signed in as ann"),
        "{queue}"
    );
    let first = sleuth::store::annotations::annotator_order(7, "ann", 2)[0];
    assert_eq!(attrs(&queue, "data-item")[0], first.to_string());
    stop(view);
}

#[test]
fn off_loopback_only_the_owners_token_creates_a_campaign() {
    let run = fresh("off-loopback");
    let owner = ("SLEUTH_TOKEN", "owner-t0ken-c4");
    let args = ["--listen", "0.0.0.0:0", "--no-tls"];
    let (view, addr) = spawn_view_args(&run, &args, &[owner]);
    let port = addr.rsplit(':').next().expect("port");
    let base = format!("http://127.0.0.1:{port}");
    let url = format!("{base}/campaigns/new");
    let bearer = format!("Bearer {}", owner.1);
    let as_owner = [("authorization", bearer.as_str())];

    // Without the token: neither the page nor the post.
    let (status, _, _) = fetch(&format!("{base}/campaigns"), &[]);
    assert_eq!(status, 401);
    let (status, _, _) = post_form(&url, &[], &form("x", "eve", "guess"));
    assert_eq!(status, 401);
    assert!(!run.join("sleuth.db").exists());

    // The owner: the page's proof, then a campaign.
    let (status, _, page) = fetch(&format!("{base}/campaigns"), &as_owner);
    assert_eq!(status, 200, "{page}");
    let proof = proof(&page);
    let (status, _, page) = post_form(&url, &as_owner, &form("first", "cy", &proof));
    assert_eq!(status, 201, "{page}");
    let made = links(&page);
    assert_eq!(made.len(), 1, "{page}");

    // An annotator's session, under either cookie name, with the page's proof: no rights.
    let cookie = session_of(&base, &made[0].1);
    let secret = cookie.split_once('=').expect("name=value").1;
    let owner_cookie = format!("sleuth_session={secret}");
    for c in [cookie.as_str(), owner_cookie.as_str()] {
        let headers = [("cookie", c), ("origin", base.as_str())];
        let (status, _, page) = post_form(&url, &headers, &form("second", "eve", &proof));
        assert_eq!(status, 401, "{c}: {page}");
    }
    // The owner's token from another origin: refused too.
    let headers = [as_owner[0], ("origin", "http://evil.example")];
    let (status, _, _) = post_form(&url, &headers, &form("third", "eve", &proof));
    assert_eq!(status, 403);
    let lines = status_campaigns(&run);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("first (responses)"), "{lines:?}");
    stop(view);
}
