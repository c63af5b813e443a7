//! The annotation pages of `sleuth view` (`docs/humans.md`, *In the viewer*): campaigns made with
//! `sleuth annotate create` over played games are answered in headless Chromium from the keyboard —
//! a refused answer's message shown, a stored answer shown again on going back, the session and the
//! progress kept across a restart of `sleuth view`, a second annotator's queue their own, the owner's
//! campaign page showing who has done what, and `sleuth report` then printing ThinkThrice's Appendix A
//! with Krippendorff's α over the two annotators' answers; a *rankings* campaign ordered with number
//! keys. Over plain HTTP: off loopback an annotator's session opens the annotation routes and nothing else, a
//! POST without the page's proof or from another origin is refused, and the link's token never shows
//! in a redirect or a page.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::OnceLock;

use serde_json::{json, Value};

use super::browser::{Browser, ARROW_UP, BACKSPACE, ENTER};
use super::hardening::spawn_view_args;
use super::{attrs, fetch, spawn_view, store, unescape};

/// The played runs and their campaigns' tokens, made once per test process.
struct Runs {
    /// Games of two frameworks on one script: campaigns `intro` (ann, bob) and `http` (cy).
    responses: PathBuf,
    /// A MIRAGE game with a judge: campaign `ranks` (ann).
    rankings: PathBuf,
    /// "campaign/annotator" → token.
    tokens: HashMap<String, String>,
}

impl Runs {
    fn token(&self, campaign: &str, who: &str) -> &str {
        &self.tokens[&format!("{campaign}/{who}")]
    }
}

/// Runs `sleuth ARGS` in `dir`, which must succeed; its stdout.
pub(super) fn sleuth_ok(dir: &Path, args: &[&str]) -> String {
    let out = common::run(common::sleuth(dir).args(args), common::CHILD_TIMEOUT);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "sleuth {args:?}:\n{stdout}\n{stderr}");
    stdout
}

/// `annotate create` in `dir`, keeping the printed tokens.
fn create(dir: &Path, args: &[&str], tokens: &mut HashMap<String, String>) {
    let mut all = vec!["annotate", "create", "run"];
    all.extend_from_slice(args);
    let id = args[1];
    let out = sleuth_ok(dir, &all);
    for (who, token) in out.lines().filter_map(|l| l.trim().split_once('\t')) {
        tokens.insert(format!("{id}/{who}"), token.to_string());
    }
}

fn runs() -> &'static Runs {
    static RUNS: OnceLock<Runs> = OnceLock::new();
    RUNS.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("viewer-annotate");
        let _ = std::fs::remove_dir_all(&root);
        let (responses, rankings) = (root.join("responses"), root.join("rankings"));
        std::fs::create_dir_all(&responses).expect("dir");
        std::fs::create_dir_all(&rankings).expect("dir");
        let orchard = common::crate_file("examples/orchard-press.toml");
        let orchard = orchard.to_str().expect("utf-8");
        for framework in ["ocot", "thinkthrice"] {
            let out = format!("run/{framework}");
            let args = ["play", orchard, "--framework", framework, "--seed", "1"];
            sleuth_ok(&responses, &[&args[..], &["--out", &out]].concat());
        }
        let ferry = common::night_ferry();
        let ferry = ferry.to_str().expect("utf-8");
        let args = [
            "play",
            ferry,
            "--protocol",
            "mirage",
            "--judge-model",
            "simulated",
        ];
        sleuth_ok(&rankings, &[&args[..], &["--out", "run/mirage"]].concat());
        let mut tokens = HashMap::new();
        let per = ["--per-condition", "2", "--seed", "7"];
        for (id, who) in [("intro", "ann,bob"), ("http", "cy")] {
            let args = ["--id", id, "--kind", "responses", "--annotators", who];
            create(&responses, &[&args[..], &per[..]].concat(), &mut tokens);
        }
        let args = ["--id", "ranks", "--kind", "rankings", "--annotators", "ann"];
        create(&rankings, &[&args[..], &per[..]].concat(), &mut tokens);
        Runs {
            responses: responses.join("run"),
            rankings: rankings.join("run"),
            tokens,
        }
    })
}

/// A port free now, to restart a viewer on the same address.
pub(super) fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    l.local_addr().expect("addr").port()
}

pub(super) fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// The stored answers of a campaign: (annotator, item, answer), in that order.
pub(super) fn stored(run: &Path, campaign: &str) -> Vec<(String, u32, Value)> {
    let c = store(run);
    let mut st = c
        .prepare(
            "SELECT annotator, item, answer FROM annotations WHERE campaign = ?1 \
             ORDER BY annotator, item",
        )
        .expect("query");
    let rows = st.query_map([campaign], |r| {
        let text: String = r.get(2)?;
        Ok((
            r.get(0)?,
            r.get(1)?,
            serde_json::from_str(&text).expect("JSON"),
        ))
    });
    rows.expect("rows")
        .collect::<Result<_, _>>()
        .expect("answers")
}

/// The values of the page's choices, in page order ("" for none).
fn choices(b: &Browser) -> Vec<String> {
    let v = b.run_js(
        "return Array.from(document.querySelectorAll('[data-pick]')).map(p => p.dataset.value || '')",
    );
    let all = v.as_array().cloned().unwrap_or_default();
    all.iter()
        .map(|x| x.as_str().unwrap_or("").to_string())
        .collect()
}

/// Waits for a queue page to be ready for keys: its script has put the focus on a choice.
fn ready(b: &Browser) {
    b.wait("the focus on a choice", || {
        b.run_js("return !!document.activeElement && document.activeElement.matches('[data-pick]')")
            == json!(true)
    });
}

fn progress(b: &Browser) -> String {
    b.text(&b.find("#progress"))
}

/// What no page of an annotator may show: the conditions, the model, the files.
pub(super) fn assert_blind(what: &str, text: &str, run: &Path) {
    for secret in [
        "ocot",
        "O-CoT",
        "thinkthrice",
        "ThinkThrice",
        "sim-1",
        "result.json",
        "transcript",
        "mirage",
    ] {
        assert!(!text.contains(secret), "{what} shows '{secret}'");
    }
    let run = run.display().to_string();
    assert!(!text.contains(&run), "{what} shows the run directory");
}

#[test]
fn in_a_browser_two_annotators_answer_from_the_keyboard_across_a_restart() {
    let r = runs();
    let listen = format!("127.0.0.1:{}", free_port());
    let (view, addr) = spawn_view(&r.responses, &listen, &[]);
    let Some(b) = Browser::start() else {
        stop(view);
        return;
    };
    let base = format!("http://{addr}");
    b.goto(&format!(
        "{base}/annotate?token={}",
        r.token("intro", "ann")
    ));
    b.wait("the queue", || b.url().ends_with("/annotate"));
    ready(&b);
    assert!(progress(&b).contains("Item 1 of 2") && progress(&b).contains("0 of 2 answered"));
    let text = b.run_js("return document.documentElement.outerHTML");
    assert_blind("the queue", text.as_str().unwrap_or(""), &r.responses);
    assert_eq!(choices(&b).len(), 6, "two responses, three scales each");

    // Response A only, then Enter: refused, with the server's message on the page.
    b.keys("435");
    assert_eq!(choices(&b), ["4", "3", "5", "", "", ""]);
    b.keys(ENTER);
    let message = b.find("#message:not([hidden])");
    b.wait("the refusal", || {
        b.text(&message).contains("every response must be rated")
    });
    assert!(b.url().ends_with("/annotate"), "a refused answer stays");
    assert!(stored(&r.responses, "intro").is_empty());
    // The focus went on to B: rate it, and Enter saves and goes on.
    b.keys("243");
    b.keys(ENTER);
    b.wait("the second item", || b.url().ends_with("/annotate?n=2"));
    ready(&b);
    assert!(progress(&b).contains("Item 2 of 2") && progress(&b).contains("1 of 2 answered"));
    let kept = stored(&r.responses, "intro");
    assert_eq!(kept.len(), 1, "{kept:?}");
    let first = kept[0].1;
    let ratings = kept[0].2["ratings"].as_object().expect("ratings").clone();
    let mut scores: Vec<Value> = ratings.values().cloned().collect();
    scores.sort_by_key(|v| v["naturalness"].as_u64());
    assert_eq!(
        scores,
        [
            json!({"naturalness": 2, "truthfulness": 4, "informativeness": 3}),
            json!({"naturalness": 4, "truthfulness": 3, "informativeness": 5}),
        ]
    );

    // Back with 'b': the stored answer is shown again.
    b.keys("b");
    b.wait("the first item again", || {
        b.url().ends_with("/annotate?n=1")
    });
    ready(&b);
    assert_eq!(choices(&b), ["4", "3", "5", "2", "4", "3"]);
    assert!(b.text(&b.find("#saved")).starts_with("Saved"));

    // A restart of the viewer on the same address: the session and the progress are kept.
    stop(view);
    let (view, again) = spawn_view(&r.responses, &listen, &[]);
    assert_eq!(again, addr);
    b.goto(&format!("{base}/annotate"));
    ready(&b);
    assert!(
        progress(&b).contains("Item 2 of 2") && progress(&b).contains("1 of 2 answered"),
        "{}",
        progress(&b)
    );
    // Scores, a step back up with ↑ to change one, and on.
    b.keys("5544");
    b.keys(ARROW_UP);
    b.keys("344");
    assert_eq!(choices(&b), ["5", "5", "4", "3", "4", "4"]);
    b.run_js("window.scrollTo(0, 0)");
    b.screenshot("annotate-responses");
    b.keys(ENTER);
    let end = b.find("#queue-end");
    assert!(b.text(&end).contains("All 2 items are answered"));
    assert!(progress(&b).contains("2 of 2 answered"));
    // Backspace goes back from the end too.
    b.keys(BACKSPACE);
    b.wait("the last item", || b.url().ends_with("/annotate?n=2"));
    ready(&b);
    assert_eq!(choices(&b), ["5", "5", "4", "3", "4", "4"]);

    // The second annotator: their own queue, nothing of ann's filled in.
    b.goto(&format!(
        "{base}/annotate?token={}",
        r.token("intro", "bob")
    ));
    b.wait("bob's queue", || b.url().ends_with("/annotate"));
    ready(&b);
    assert!(progress(&b).contains("0 of 2 answered"), "{}", progress(&b));
    assert_eq!(choices(&b), vec![""; 6]);
    b.keys("111111");
    b.keys(ENTER);
    b.wait("bob's second item", || b.url().ends_with("/annotate?n=2"));
    let kept = stored(&r.responses, "intro");
    let by = |who: &str| kept.iter().filter(|(w, ..)| w == who).count();
    assert_eq!((by("ann"), by("bob")), (2, 1), "{kept:?}");
    let bob = kept
        .iter()
        .find(|(w, ..)| w == "bob")
        .expect("bob's answer");
    assert!(bob.2.to_string().matches(":1").count() == 6, "{bob:?}");
    // Bob finishes too, so that both annotators rated every response.
    ready(&b);
    b.keys("234523");
    b.keys(ENTER);
    b.wait("bob's end of the queue", || !b.all("#queue-end").is_empty());
    let kept = stored(&r.responses, "intro");
    let by = |who: &str| kept.iter().filter(|(w, ..)| w == who).count();
    assert_eq!((by("ann"), by("bob")), (2, 2), "{kept:?}");
    let ann_first = kept.iter().find(|(w, i, _)| w == "ann" && *i == first);
    assert_eq!(
        ann_first.map(|a| a.2["ratings"].as_object().map(|m| m.len())),
        Some(Some(2))
    );

    // The owner's page: who has done what.
    b.goto(&format!("{base}/campaign?id=intro"));
    let ann = b.find("#progress tr[data-annotator='ann'] [data-field='done']");
    assert_eq!(b.text(&ann), "2 / 2");
    let bob = b.find("#progress tr[data-annotator='bob'] [data-field='done']");
    assert_eq!(b.text(&bob), "2 / 2");
    b.screenshot("campaign");
    b.goto(&format!("{base}/campaigns"));
    let answered = b.find("#campaigns tr[data-campaign='intro'] [data-field='answered']");
    assert_eq!(b.text(&answered), "4 / 4");
    b.screenshot("campaigns");
    stop(view);
    appendix_a_with_alpha(&r.responses);
}

/// `sleuth report` on the run prints ThinkThrice's Appendix A with Krippendorff's α computed from
/// the two annotators' answers of campaign `intro` (both rated all four responses of its two groups).
fn appendix_a_with_alpha(run: &Path) {
    let dir = run.parent().expect("the run's parent");
    let name = run.file_name().and_then(|n| n.to_str()).expect("utf-8");
    let printed = sleuth_ok(dir, &["report", name]);
    let md = std::fs::read_to_string(run.join("report/report.md")).expect("report.md");
    for text in [printed.as_str(), md.as_str()] {
        assert!(
            text.contains("ThinkThrice Appendix A"),
            "no Appendix A:\n{text}"
        );
    }
    let want = "Krippendorff's α (ordinal; responses × annotators, 4 responses rated by two or more of 2 annotators): ";
    let at = md
        .find(want)
        .unwrap_or_else(|| panic!("no α over ann's and bob's answers:\n{md}"));
    let line = md[at + want.len()..].lines().next().unwrap_or("");
    let values: Vec<f64> = line
        .trim_end_matches(|c: char| c == '.' || c == '|' || c.is_whitespace())
        .split(", ")
        .map(|kv| {
            let (_, v) = kv.rsplit_once(' ').unwrap_or(("", kv));
            v.parse()
                .unwrap_or_else(|_| panic!("α of '{kv}' is not a number: {line}"))
        })
        .collect();
    assert_eq!(values.len(), 3, "one α per scale: {line}");
    assert!(values.iter().all(|a| (-1.0..=1.0).contains(a)), "{line}");
}

#[test]
fn in_a_browser_an_annotator_ranks_the_characters_with_number_keys() {
    let r = runs();
    let (view, addr) = spawn_view(&r.rankings, "127.0.0.1:0", &[]);
    let Some(b) = Browser::start() else {
        stop(view);
        return;
    };
    b.goto(&format!(
        "http://{addr}/annotate?token={}",
        r.token("ranks", "ann")
    ));
    b.wait("the queue", || b.url().ends_with("/annotate"));
    ready(&b);
    let text = b.run_js("return document.documentElement.outerHTML");
    assert_blind(
        "the rankings page",
        text.as_str().unwrap_or(""),
        &r.rankings,
    );
    let names = b.run_js(
        "return Array.from(document.querySelectorAll('[data-metric=ici][data-pick]')).map(p => p.dataset.name)",
    );
    let names: Vec<String> = serde_json::from_value(names).expect("names");
    let n = names.len();
    assert!(n >= 2, "{names:?}");
    // Two characters at position 1: refused on the page before anything is sent.
    b.keys("11");
    b.keys(ENTER);
    let message = b.find("#message:not([hidden])");
    b.wait("the refusal", || {
        b.text(&message).contains("both at position 1")
    });
    // Corrected with ↑ and the right number; then SCI in the reverse order.
    b.keys(&format!("{ARROW_UP}2"));
    let rest: String = (3..=n)
        .chain((1..=n).rev())
        .map(|i| i.to_string())
        .collect();
    b.keys(&rest);
    let want: Vec<String> = (1..=n)
        .chain((1..=n).rev())
        .map(|i| i.to_string())
        .collect();
    assert_eq!(choices(&b), want);
    b.run_js("window.scrollTo(0, 0)");
    b.screenshot("annotate-rankings");
    b.keys(ENTER);
    b.wait("the next item", || {
        b.url().contains("/annotate?n=") || !b.all("#queue-end").is_empty()
    });
    let kept = stored(&r.rankings, "ranks");
    assert_eq!(kept.len(), 1, "{kept:?}");
    let mut reversed = names.clone();
    reversed.reverse();
    assert_eq!(kept[0].2, json!({"ici": names, "sci": reversed}));
    stop(view);
}

/// POST with headers: (status, body).
fn post(url: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let (status, _, text) = super::request(reqwest::Method::POST, url, headers, Some(body.into()));
    (status, text)
}

#[test]
fn off_loopback_an_annotators_session_opens_the_annotation_pages_and_nothing_else() {
    let r = runs();
    let owner = ("SLEUTH_TOKEN", "owner-t0ken-q9");
    let args = ["--listen", "0.0.0.0:0", "--no-tls"];
    let (view, addr) = spawn_view_args(&r.responses, &args, &[owner]);
    let port = addr.rsplit(':').next().expect("port");
    let base = format!("http://127.0.0.1:{port}");
    let token = r.token("http", "cy");

    // A link nobody was given: refused, and not echoed.
    let (status, _, body) = fetch(&format!("{base}/annotate?token=not-a-t0ken-zz"), &[]);
    assert_eq!(status, 401, "{body}");
    assert!(!body.contains("not-a-t0ken-zz"));
    // The link: a session cookie (not the token) and a redirect without the token.
    let (status, h, body) = fetch(&format!("{base}/annotate?token={token}"), &[]);
    assert_eq!(status, 303, "{body}");
    assert_eq!(h.get("location").map(String::as_str), Some("/annotate"));
    let set = h.get("set-cookie").cloned().unwrap_or_default();
    for part in ["HttpOnly", "SameSite=Strict", "Path=/annotate"] {
        assert!(set.contains(part), "{set}");
    }
    assert!(!set.contains(token) && !body.contains(token), "{set}");
    let secret = set
        .strip_prefix("sleuth_annotator=")
        .and_then(|s| s.split(';').next())
        .expect("the session's value")
        .to_string();
    let cookie = format!("sleuth_annotator={secret}");
    let with = [("cookie", cookie.as_str())];

    // The queue, blind, without the token; the proof its script will send.
    let (status, _, page) = fetch(&format!("{base}/annotate"), &with);
    assert_eq!(status, 200, "{page}");
    let page = unescape(&page);
    assert!(!page.contains(token));
    assert_blind("the queue", &page, &r.responses);
    let proof = attrs(&page, "data-proof").remove(0);
    let item: u32 = attrs(&page, "data-item")[0].parse().expect("item");
    let mut labels = attrs(&page, "data-label");
    labels.dedup();

    // Nothing else opens with the annotator's session, whichever cookie name it is sent under.
    let owner_cookie = format!("sleuth_session={secret}");
    for path in [
        "/",
        "/api/runs",
        "/sweep?id=t",
        "/game?id=run%2Focot",
        "/report",
        "/campaigns",
        "/campaign?id=http",
        "/assets/app.js",
    ] {
        for c in [cookie.as_str(), owner_cookie.as_str()] {
            let (status, _, body) = fetch(&format!("{base}{path}"), &[("cookie", c)]);
            assert_eq!(status, 401, "{path} with {c}: {body}");
        }
    }
    // And the owner's token is no annotator's session.
    let bearer = format!("Bearer {}", owner.1);
    let (status, _, _) = fetch(&format!("{base}/annotate"), &[("authorization", &bearer)]);
    assert_eq!(status, 401);
    let (status, _, campaigns) = fetch(&format!("{base}/campaigns"), &[("authorization", &bearer)]);
    assert_eq!(status, 200);
    assert!(campaigns.contains("intro") && campaigns.contains("http"));

    // A POST needs the session, the page's proof and the same origin.
    let url = format!("{base}/annotate/answer");
    let rating = json!({"naturalness": 3, "truthfulness": 3, "informativeness": 3});
    let all: serde_json::Map<String, Value> =
        labels.iter().map(|l| (l.clone(), rating.clone())).collect();
    let good = json!({"item": item, "answer": {"ratings": all}}).to_string();
    let json_type = ("content-type", "application/json");
    let proof_h = ("x-sleuth-proof", proof.as_str());
    let cases: [(&[(&str, &str)], u16); 5] = [
        (&[with[0], json_type], 403),
        (&[json_type, proof_h], 401),
        (
            &[with[0], json_type, ("x-sleuth-proof", secret.as_str())],
            403,
        ),
        (
            &[
                with[0],
                json_type,
                proof_h,
                ("sec-fetch-site", "cross-site"),
            ],
            403,
        ),
        (
            &[
                with[0],
                json_type,
                proof_h,
                ("origin", "http://evil.example"),
            ],
            403,
        ),
    ];
    for (headers, want) in cases {
        let (status, body) = post(&url, headers, &good);
        assert_eq!(status, want, "{headers:?}: {body}");
    }
    assert!(
        stored(&r.responses, "http").is_empty(),
        "a refused POST kept nothing"
    );
    let same = [with[0], json_type, proof_h, ("origin", base.as_str())];
    let bad = json!({"item": item, "answer": {"ratings": {labels[0].clone(): {"naturalness": 9}}}});
    let (status, body) = post(&url, &same, &bad.to_string());
    assert_eq!(status, 422, "{body}");
    assert!(
        body.contains("naturalness") && body.contains("not 1 to 5"),
        "{body}"
    );
    let (status, body) = post(&url, &same, &good);
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        (v["saved"].clone(), v["done"].clone()),
        (json!(true), json!(1))
    );
    let kept = stored(&r.responses, "http");
    assert_eq!(kept.len(), 1);
    assert_eq!((kept[0].0.as_str(), kept[0].1), ("cy", item));

    // The owner sees it.
    let (status, _, page) = fetch(
        &format!("{base}/campaign?id=http"),
        &[("authorization", &bearer)],
    );
    assert_eq!(status, 200);
    assert!(page.contains("1 / 2"), "{page}");
    stop(view);
}
