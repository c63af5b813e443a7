//! A *questions* campaign answered in the viewer (`docs/humans.md`, *In the viewer* and
//! *`questions`*): `sleuth questions generate --review` puts the simulated model's candidates before
//! an annotator, who in headless Chromium accepts one with the mouse, edits one from the keyboard
//! (an emptied question refused, the server's message on the page, then corrected) and rejects one
//! with a reason; going back shows each stored decision; `sleuth annotate apply` then writes the
//! accepted and the edited question into the script's question file, and not the rejected one.

use std::path::Path;

use serde_json::{json, Value};

use super::annotate::{assert_blind, sleuth_ok, stop, stored};
use super::browser::{Browser, BACKSPACE, ENTER};

/// WebDriver's Tab key.
const TAB: &str = "\u{E004}";
use super::{spawn_view, store};
use crate::common;
use sleuth::script::Script;

/// Waits for a questions page to be ready for keys: its script has put the focus on the decision.
fn ready(b: &Browser) {
    b.wait("the focus on the decision", || {
        b.run_js(
            "return !!document.activeElement && document.activeElement.matches('[data-review]')",
        ) == json!(true)
    });
}

/// The id of the element that has the focus.
fn focused(b: &Browser) -> String {
    let v = b.run_js("return document.activeElement ? document.activeElement.id : ''");
    v.as_str().unwrap_or("").to_string()
}

/// The item number the page answers (never shown; the form carries it for the POST).
fn item(b: &Browser) -> u32 {
    let form = b.find("#annotate");
    let n = b.attr(&form, "data-item").expect("data-item");
    n.parse().expect("a number")
}

/// An item's `hidden`: the candidate as generated.
fn hidden(run: &Path, campaign: &str, item: u32) -> Value {
    let text: String = store(run)
        .query_row(
            "SELECT hidden FROM campaign_items WHERE campaign = ?1 AND item = ?2",
            rusqlite::params![campaign, item],
            |r| r.get(0),
        )
        .expect("the item");
    serde_json::from_str(&text).expect("JSON")
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| panic!("{key} in {v}"))
}

/// The value of an input.
fn value(b: &Browser, id: &str) -> String {
    let v = b.run_js(&format!("return document.getElementById('{id}').value"));
    v.as_str().unwrap_or("").to_string()
}

/// The decision the page shows: its action, and whether the edit and reject fields are open.
fn decision(b: &Browser) -> (String, bool, bool) {
    let v = b.run_js(
        "const r = document.querySelector('[data-review]'); \
         return [r.dataset.action || '', !document.getElementById('edit').hidden, \
                 !document.getElementById('reject').hidden]",
    );
    serde_json::from_value(v).expect("a decision")
}

#[test]
fn in_a_browser_an_annotator_reviews_generated_questions_and_apply_writes_the_kept_ones() {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("viewer-annotate-questions");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("dir");
    let path = root.join("night-ferry.toml");
    std::fs::copy(common::crate_file("examples/night-ferry.toml"), &path).expect("copy");
    let before = Script::load(&path).expect("loads");
    let generate = [
        "questions",
        "generate",
        "night-ferry.toml",
        "--per-character",
        "2",
        "--batch",
        "2",
        "--seed",
        "7",
        "--review",
        "run",
        "--campaign",
        "fq",
        "--annotators",
        "ann",
    ];
    let created = sleuth_ok(&root, &generate);
    let token = created
        .lines()
        .find_map(|l| l.trim().strip_prefix("ann\t"))
        .expect("ann's token")
        .to_string();
    let run = root.join("run");
    let (view, addr) = spawn_view(&run, "127.0.0.1:0", &[]);
    let Some(b) = Browser::start() else {
        stop(view);
        return;
    };
    b.goto(&format!("http://{addr}/annotate?token={token}"));
    b.wait("the queue", || b.url().ends_with("/annotate"));
    ready(&b);
    let page = b.run_js("return document.documentElement.outerHTML");
    let page = page.as_str().unwrap_or("");
    assert_blind("the questions page", page, &run);
    for secret in ["night-ferry", ".toml", "simulated"] {
        assert!(!page.contains(secret), "the page shows '{secret}'");
    }

    // Item 1: the candidate, its source highlighted in the passage; accepted with the mouse.
    let first = item(&b);
    let h1 = hidden(&run, "fq", first);
    assert_eq!(b.text(&b.find("#question")), text(&h1, "question"));
    assert_eq!(b.text(&b.find("#answer")), text(&h1, "answer"));
    assert_eq!(b.text(&b.find("#passage mark#source")), text(&h1, "source"));
    assert!(b.text(&b.find("#passage")).len() > text(&h1, "source").len());
    b.click(&b.find("button[data-choice='accept']"));
    assert_eq!(decision(&b), ("accept".to_string(), false, false));
    b.click(&b.find("button[data-act='save']"));
    b.wait("the second item", || b.url().ends_with("/annotate?n=2"));
    ready(&b);

    // Item 2: `e` opens the fields, prefilled; an emptied question is refused with the server's
    // message, then corrected; Enter in a field saves.
    let second = item(&b);
    let h2 = hidden(&run, "fq", second);
    b.keys("e");
    b.wait("the question field", || focused(&b) == "edit-question");
    assert_eq!(decision(&b), ("edit".to_string(), true, false));
    assert_eq!(value(&b, "edit-question"), text(&h2, "question"));
    assert_eq!(value(&b, "edit-answer"), text(&h2, "answer"));
    b.run_js("document.activeElement.select()");
    b.keys(BACKSPACE);
    b.keys(ENTER);
    let message = b.find("#message:not([hidden])");
    b.wait("the refusal", || {
        b.text(&message).contains("question is empty")
    });
    assert!(b.url().ends_with("/annotate?n=2"), "a refused answer stays");
    assert_eq!(stored(&run, "fq").len(), 1);
    let character = text(&h2, "character");
    let edited_q = format!("What does {character} say in this line, as edited in the browser?");
    let edited_a = format!("{} (checked)", text(&h2, "answer"));
    b.keys(&edited_q);
    b.keys(TAB);
    b.wait("the answer field", || focused(&b) == "edit-answer");
    b.run_js("document.activeElement.select()");
    b.keys(&edited_a);
    b.keys(ENTER);
    b.wait("the third item", || b.url().ends_with("/annotate?n=3"));
    ready(&b);

    // Item 3: `r`, a reason, Enter.
    let third = item(&b);
    b.keys("r");
    b.wait("the reason field", || focused(&b) == "reject-reason");
    assert_eq!(decision(&b), ("reject".to_string(), false, true));
    b.keys("rests on the wrong sentence");
    b.keys(ENTER);
    b.wait("the fourth item", || b.url().ends_with("/annotate?n=4"));
    ready(&b);
    let kept = stored(&run, "fq");
    let answer = |i: u32| kept.iter().find(|(_, n, _)| *n == i).map(|k| k.2.clone());
    assert_eq!(answer(first), Some(json!({"action": "accept"})));
    assert_eq!(
        answer(second),
        Some(json!({"action": "edit", "question": edited_q, "answer": edited_a}))
    );
    assert_eq!(
        answer(third),
        Some(json!({"action": "reject", "reason": "rests on the wrong sentence"}))
    );

    // Back with `b` and Backspace: each stored decision is shown again.
    b.keys("b");
    b.wait("the third item again", || {
        b.url().ends_with("/annotate?n=3")
    });
    ready(&b);
    assert_eq!(decision(&b), ("reject".to_string(), false, true));
    assert_eq!(value(&b, "reject-reason"), "rests on the wrong sentence");
    b.keys(BACKSPACE);
    b.wait("the second item again", || {
        b.url().ends_with("/annotate?n=2")
    });
    ready(&b);
    assert_eq!(decision(&b), ("edit".to_string(), true, false));
    assert_eq!(
        (value(&b, "edit-question"), value(&b, "edit-answer")),
        (edited_q.clone(), edited_a.clone())
    );
    assert!(b.text(&b.find("#saved")).starts_with("Saved"));
    b.run_js("window.scrollTo(0, 0)");
    b.screenshot("annotate-questions");
    stop(view);

    // Apply: the accepted and the edited question go into the script, the rejected one does not.
    let applied = sleuth_ok(&root, &["annotate", "apply", "run", "fq"]);
    assert!(applied.contains("appended 2 question(s)"), "{applied}");
    let after = Script::load(&path).expect("the script still loads");
    assert_eq!(after.factual.len(), before.factual.len() + 2);
    let has = |q: &str| after.factual.iter().any(|f| f.question == q);
    assert!(has(text(&h1, "question")), "the accepted question");
    let edited = after
        .factual
        .iter()
        .find(|f| f.question == edited_q)
        .expect("the edited question");
    assert_eq!(edited.answer, edited_a);
    let review = edited.review.as_ref().expect("its review");
    assert_eq!(
        review
            .edited
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>(),
        ["ann"]
    );
    assert!(
        !has(text(&h2, "question")),
        "the edit replaced the original"
    );
    let h3 = hidden(&run, "fq", third);
    assert!(!has(text(&h3, "question")), "the rejected question");
}
