//! `sleuth view RUN --bundle DIR`: the fixture's sweep written as static files. Every link of every
//! written page resolves to a file of the bundle and none leads to a server; a directory that is not
//! a bundle is refused; model calls are in only when asked for; and in Chromium, from `file://`,
//! the runs page leads to the sweep, a game, its timeline's next page and the report, with every
//! resource read from a file.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

use super::browser::Browser;
use super::{attrs, done_game, fixture, unescape};

/// Runs `sleuth view RUN --bundle DIR [extra]`: (success, stdout, stderr).
fn bundle(run: &Path, dir: &Path, extra: &[&str]) -> (bool, String, String) {
    let out = common::run(
        common::sleuth(run)
            .args(["view", ".", "--bundle"])
            .arg(dir)
            .args(extra),
        common::CHILD_TIMEOUT,
    );
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The fixture's bundle without model calls, written once per test process.
fn written() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let f = fixture();
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("viewer-bundle");
        let _ = std::fs::remove_dir_all(&dir);
        let (ok, out, err) = bundle(&f.run, &dir, &[]);
        assert!(ok, "{out}\n{err}");
        assert!(out.contains("wrote the bundle"), "{out}");
        dir
    })
}

/// Every file below `dir`, as paths.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Checks that every link of every page of `dir` is a file of the bundle (or an anchor in the
/// page), that nothing is left for a script to fetch, and that no page names a server; returns the
/// pages.
fn check_links(dir: &Path) -> Vec<PathBuf> {
    let pages: Vec<PathBuf> = files(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "html"))
        .collect();
    assert!(pages.len() > 5, "{pages:?}");
    for p in &pages {
        let html = std::fs::read_to_string(p).expect("read page");
        for hook in [
            "data-more=",
            "data-load=",
            "data-src=",
            "data-live=",
            "action=",
        ] {
            assert!(!html.contains(hook), "{} still has {hook}", p.display());
        }
        for scheme in ["http:", "https:", "//127.0.0.1", "localhost"] {
            assert!(!html.contains(scheme), "{} names {scheme}", p.display());
        }
        let html = unescape(&html);
        for link in attrs(&html, "href").into_iter().chain(attrs(&html, "src")) {
            let file = link.split('#').next().unwrap_or("");
            if file.is_empty() {
                continue;
            }
            assert!(!file.starts_with('/'), "{}: {link}", p.display());
            let to = p.parent().expect("page dir").join(file);
            assert!(to.is_file(), "{}: {link} is not in the bundle", p.display());
        }
    }
    pages
}

#[test]
fn a_bundle_links_only_to_its_own_files_and_leaves_calls_out_unless_asked() {
    let f = fixture();
    let dir = written();
    let pages = check_links(dir);
    let id = done_game(&f.run);
    for file in [
        "index.html",
        "report.html",
        "sweep/t.html",
        "assets/app.css",
        "assets/app.js",
        "sleuth-bundle.json",
    ] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    let game =
        unescape(&std::fs::read_to_string(dir.join(format!("game/{id}.html"))).expect("game"));
    assert!(game.contains("id=\"no-calls\""), "calls left out");
    assert!(game.contains("details class=\"answers\""), "the evaluation");
    let events: Vec<&PathBuf> = pages
        .iter()
        .filter(|p| p.starts_with(dir.join("game").join(&id)))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("events-"))
        })
        .collect();
    assert!(!events.is_empty(), "the timeline's next pages");
    assert!(!pages.iter().any(|p| p.to_string_lossy().contains("calls-")));
    // The sweep page holds the report, and every game of the sweep has its page.
    let sweep = std::fs::read_to_string(dir.join("sweep/t.html")).expect("sweep");
    assert!(sweep.contains("report-table"), "the report inline");
    for (g, _) in super::games(&f.run) {
        assert!(dir.join(format!("game/{g}.html")).is_file(), "game {g}");
    }
    let marker: Value =
        serde_json::from_slice(&std::fs::read(dir.join("sleuth-bundle.json")).expect("marker"))
            .expect("JSON");
    assert_eq!(marker["model_calls"], false);

    // With the calls: each game's calls, each with its reply, and still no link out.
    let tmp = tempfile::tempdir().expect("temp dir");
    let with = tmp.path().join("with-calls");
    let (ok, out, err) = bundle(&f.run, &with, &["--bundle-calls"]);
    assert!(ok, "{out}\n{err}");
    check_links(&with);
    let game = std::fs::read_to_string(with.join(format!("game/{id}.html"))).expect("game");
    assert!(game.contains("<li class=\"call"), "the calls");
    assert!(game.contains("class=\"reply\""), "a call's reply");
    // Written again over itself: the bundle before is replaced.
    let (ok, out, err) = bundle(&f.run, &with, &[]);
    assert!(ok, "{out}\n{err}");
    assert!(
        !std::fs::read_to_string(with.join(format!("game/{id}.html")))
            .expect("game")
            .contains("class=\"reply\"")
    );

    // A directory with something else in it is refused, by name, and left as it was.
    let other = tmp.path().join("paper");
    std::fs::create_dir_all(&other).expect("dir");
    std::fs::write(other.join("paper.tex"), "\\section{}").expect("write");
    let (ok, _, err) = bundle(&f.run, &other, &[]);
    assert!(!ok);
    assert!(err.contains(&other.display().to_string()), "{err}");
    assert_eq!(files(&other).len(), 1);
}

/// The page's own URL, every resource the browser timed (Chromium times none read from files, but
/// would time one asked from a server) and every URL the page's elements load or link to.
fn resources(b: &Browser) -> Vec<String> {
    let v = b.run_js(
        "return [location.href]
           .concat(performance.getEntriesByType('resource').map(e => e.name))
           .concat(Array.from(document.querySelectorAll('[src]'), e => e.src))
           .concat(Array.from(document.querySelectorAll('link[href], a[href]'), e => e.href))",
    );
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Everything the page is and loads is a file, and its stylesheet applied (it was read).
fn only_files(b: &Browser, what: &str) {
    let all = resources(b);
    assert!(all.len() >= 3, "{what}: the page and its assets: {all:?}");
    for r in &all {
        assert!(r.starts_with("file:"), "{what}: {r} is not a file");
    }
    let styled = b.run_js("return getComputedStyle(document.querySelector('header.top')).display");
    assert_eq!(
        styled.as_str(),
        Some("flex"),
        "{what}: the stylesheet was not read"
    );
}

#[test]
fn in_a_browser_a_bundle_opens_from_files_runs_to_game_to_next_page_and_report() {
    let f = fixture();
    let dir = written();
    let Some(b) = Browser::start() else {
        return;
    };
    let index = format!("file://{}", dir.join("index.html").display());
    b.goto(&index);
    let link = b.find("#runs a[href^='sweep/']");
    only_files(&b, "runs");
    b.screenshot("bundle-runs");
    b.click(&link);
    b.wait("the sweep page", || b.url().ends_with("sweep/t.html"));
    b.find("#grid tbody tr");
    b.find("details.report-table table");
    only_files(&b, "sweep");

    let id = done_game(&f.run);
    let game = b.find(&format!("#games a[href='../game/{id}.html']"));
    b.click(&game);
    b.wait("the game page", || {
        b.url().ends_with(&format!("game/{id}.html"))
    });
    let first = b.all("#timeline li.ev");
    assert!(!first.is_empty(), "the game's events");
    let last_seq: u64 = b
        .attr(first.last().expect("an event"), "data-seq")
        .and_then(|s| s.parse().ok())
        .expect("seq");
    b.find(".charts svg.chart");
    only_files(&b, "game");
    b.screenshot("bundle-game");

    let next = b.find("a.more[href*='/events-']");
    b.run_js("document.querySelector(\"a.more[href*='/events-']\").scrollIntoView()");
    b.click(&next);
    b.wait("the timeline's next page", || b.url().contains("/events-"));
    let ev = b.find("#timeline li.ev");
    let seq: u64 = b
        .attr(&ev, "data-seq")
        .and_then(|s| s.parse().ok())
        .expect("seq");
    assert!(
        seq > last_seq,
        "the next page goes on: {seq} after {last_seq}"
    );
    assert!(!b.text(&ev).is_empty());
    only_files(&b, "events page");
    b.screenshot("bundle-events");
    let back = b.find(&format!("nav a[href='../../game/{id}.html']"));
    b.click(&back);
    b.wait("back to the game", || {
        b.url().ends_with(&format!("game/{id}.html"))
    });

    b.goto(&index);
    let report = b.find("a[href='report.html']");
    b.click(&report);
    b.wait("the report", || b.url().ends_with("report.html"));
    let table = b.find("details.report-table table");
    assert!(!b.text(&table).is_empty() || b.all("details.report-table").len() > 2);
    only_files(&b, "report");
    b.screenshot("bundle-report");
}
