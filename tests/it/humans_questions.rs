//! A *questions* campaign end to end through the `sleuth` binary (ThinkThrice §5.1, `docs/humans.md`):
//! `questions generate --review` puts the simulated model's candidates before two annotators instead
//! of into the script; they accept, edit and reject them with `annotate answer` (a bad edit refused
//! and named); `annotate apply` writes exactly the kept questions, with who kept them and when, into
//! the script, once however often it runs; and a game played on the script asks them.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{json, Value};

use common::{sleuth_in, sleuth_ok as ok};
use sleuth::script::{FactualQuestion, Script};

/// The stderr of a command that must fail.
fn refused(dir: &Path, args: &[&str]) -> String {
    let (success, stdout, stderr) = sleuth_in(dir, args);
    assert!(!success, "sleuth {args:?} succeeded:\n{stdout}");
    stderr
}

/// The tokens a campaign's creation printed, by annotator.
fn tokens(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .filter_map(|l| l.trim().split_once('\t'))
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect()
}

/// Records `answer` as the annotator with `token`; (success, stderr).
fn answer(dir: &Path, token: &str, item: usize, answer: &Value) -> (bool, String) {
    let (item, answer) = (item.to_string(), answer.to_string());
    let args = [
        "annotate", "answer", "run", "--token", token, "--item", &item,
    ];
    let (success, _, stderr) = sleuth_in(dir, &[&args[..], &["--answer", &answer]].concat());
    (success, stderr)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| panic!("{key} in {v}"))
}

/// The names of a review's list (`accepted`, `edited`, `rejected`).
fn names(q: &FactualQuestion, list: &str) -> Vec<String> {
    let r = q
        .review
        .as_ref()
        .expect("a reviewed question has its review");
    let people = match list {
        "accepted" => &r.accepted,
        "edited" => &r.edited,
        _ => &r.rejected,
    };
    people.iter().map(|p| p.name.clone()).collect()
}

#[test]
fn two_annotators_review_generated_questions_and_the_script_gets_exactly_the_kept_ones() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let path = dir.join("night-ferry.toml");
    std::fs::copy(common::crate_file("examples/night-ferry.toml"), &path).expect("copy");
    let before = Script::load(&path).expect("loads");
    let (ann, bob) = generate_for_review(dir, &path);
    let items = check_shown(dir, &before);
    let edited = review(dir, (&ann, &bob), &items, &before);
    let after = check_applied(dir, &path, &before, &items, &edited);
    check_export(dir, &edited.0);
    check_game(dir, &after, edited);
}

/// Generates the candidates into campaign `ferry-q` of `run`, checks the script was not touched,
/// and returns the tokens of ann and bob.
fn generate_for_review(dir: &Path, path: &Path) -> (String, String) {
    let original = std::fs::read(path).expect("read");
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
        "ferry-q",
        "--annotators",
        "bob,ann",
    ];
    let created = ok(dir, &generate);
    assert!(
        created.contains("campaign ferry-q (questions)"),
        "{created}"
    );
    assert_eq!(std::fs::read(path).expect("read"), original);
    let tokens = tokens(&created);
    let who: Vec<&str> = tokens.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(who, ["ann", "bob"]);
    // The same campaign again is refused before any model call.
    let again = refused(dir, &generate);
    assert!(
        again.contains("already has a campaign 'ferry-q'"),
        "{again}"
    );
    (tokens[0].1.clone(), tokens[1].1.clone())
}

/// The campaign's items as exported, each shown without model or file, its context around the
/// source a passage of the character's script.
fn check_shown(dir: &Path, before: &Script) -> Vec<Value> {
    let export = dir.join("export");
    let export_s = export.to_str().expect("utf-8");
    ok(
        dir,
        &["annotate", "export", "run", "ferry-q", "--out", export_s],
    );
    let campaign: Value = serde_json::from_str(
        &std::fs::read_to_string(export.join("campaign.json")).expect("campaign.json"),
    )
    .expect("JSON");
    let items = campaign["items"].as_array().expect("items").clone();
    assert!(items.len() >= 7, "{} candidates", items.len());
    let shown: Vec<&Value> = items.iter().map(|i| &i["shown"]).collect();
    for (i, s) in shown.iter().enumerate() {
        let dump = s.to_string();
        for secret in ["sim-1", "night-ferry", ".toml", "simulated"] {
            assert!(!dump.contains(secret), "item {i} shows '{secret}': {dump}");
        }
        let hidden = &items[i]["hidden"];
        for key in ["character", "question", "answer", "source"] {
            assert_eq!(s[key], hidden[key], "item {i}: {key}");
        }
        let own = before
            .character(text(s, "character"))
            .expect("a character of the script")
            .script_text();
        let passage = [
            &s["context"]["before"],
            &s["source"],
            &s["context"]["after"],
        ]
        .map(|v| v.as_str().expect("text"))
        .concat();
        assert!(
            own.contains(&passage),
            "item {i}: context not in the script"
        );
        assert!(
            passage.len() > text(s, "source").len(),
            "item {i}: no context"
        );
    }
    items
}

/// The two annotators' answers, the refused ones checked. Returns ann's edit of item 1 (question,
/// answer).
fn review(
    dir: &Path,
    (ann, bob): (&str, &str),
    items: &[Value],
    before: &Script,
) -> (String, String) {
    let shown: Vec<&Value> = items.iter().map(|i| &i["shown"]).collect();
    // Item 0: both accept. Item 1: ann edits, bob accepts — kept with ann's edit.
    // Item 2: both reject. Item 3: one each — a tie, rejected. Item 4: bob's empty answer is refused,
    // then he edits the answer only. Item 5: ann's edit repeats a question the script has — kept by
    // the rule, left out by the screen at apply. The rest: unanswered.
    let say = |token: &str, item: usize, a: Value| {
        let (success, stderr) = answer(dir, token, item, &a);
        assert!(success, "item {item}, {a}: {stderr}");
    };
    say(ann, 0, json!({"action": "accept"}));
    say(bob, 0, json!({"action": "accept"}));
    let edited_q = format!(
        "What does {} say in this line of the story (edited)?",
        text(shown[1], "character")
    );
    let edited_a = text(shown[1], "source").to_string();
    let edit = json!({"action": "edit", "question": edited_q, "answer": edited_a});
    say(ann, 1, edit);
    say(bob, 1, json!({"action": "accept"}));
    say(
        ann,
        2,
        json!({"action": "reject", "reason": "not a question"}),
    );
    say(bob, 2, json!({"action": "reject"}));
    say(ann, 3, json!({"action": "accept"}));
    say(bob, 3, json!({"action": "reject"}));
    for (bad, want) in [
        (
            json!({"action": "edit", "answer": "   "}),
            "item 4, annotator bob: answer is empty",
        ),
        (
            json!({"action": "edit", "source": "x"}),
            "item 4, annotator bob: source cannot be edited",
        ),
        (
            json!({"action": "keep"}),
            "action is 'keep', not one of accept, reject, edit",
        ),
    ] {
        let (success, stderr) = answer(dir, bob, 4, &bad);
        assert!(!success && stderr.contains(want), "{bad}: {stderr}");
    }
    say(
        bob,
        4,
        json!({"action": "edit", "answer": "  a shorter answer "}),
    );
    let character5 = text(shown[5], "character");
    let existing = before
        .factual
        .iter()
        .find(|q| q.character == character5)
        .expect("the script has questions about every character");
    let repeat =
        json!({"action": "edit", "question": existing.question, "answer": existing.answer});
    say(ann, 5, repeat);

    let status = ok(dir, &["annotate", "status", "run", "ferry-q"]);
    let unanswered = items.len() - 6;
    let line = format!("4 kept (3 edited), 2 rejected, {unanswered} unanswered");
    assert!(status.contains(&line), "{status}");
    assert!(status.contains("ann                  5 /"), "{status}");
    (edited_q, edited_a)
}

/// The script after `annotate apply`, checked: exactly the kept items, with their reviews, once.
fn check_applied(
    dir: &Path,
    path: &Path,
    before: &Script,
    items: &[Value],
    (edited_q, edited_a): &(String, String),
) -> Script {
    // Apply: exactly items 0, 1 and 4, in item order, after the script's own questions.
    let applied = ok(dir, &["annotate", "apply", "run", "ferry-q"]);
    assert!(applied.contains("appended 3 question(s)"), "{applied}");
    let after = Script::load(path).expect("the script still loads");
    let n = before.factual.len();
    assert_eq!(after.factual.len(), n + 3);
    for (old, new) in before.factual.iter().zip(&after.factual) {
        assert_eq!((&old.question, &old.review), (&new.question, &None));
    }
    let added = &after.factual[n..];
    let hidden = |i: usize| &items[i]["hidden"];
    let (q0, q1, q4) = (&added[0], &added[1], &added[2]);
    assert_eq!(q0.question, text(hidden(0), "question"));
    assert_eq!(
        (names(q0, "accepted"), names(q0, "edited")),
        (vec!["ann".to_string(), "bob".into()], vec![])
    );
    assert_eq!(
        (q1.question.as_str(), q1.answer.as_str()),
        (edited_q.as_str(), edited_a.as_str())
    );
    assert_eq!(
        (names(q1, "accepted"), names(q1, "edited")),
        (vec!["bob".to_string()], vec!["ann".to_string()])
    );
    let generated = q1
        .review
        .as_ref()
        .and_then(|r| r.generated.clone())
        .expect("the original text");
    assert_eq!(generated.question, text(hidden(1), "question"));
    assert_eq!(q4.question, text(hidden(4), "question"));
    assert_eq!(q4.answer, "a shorter answer");
    assert_eq!(names(q4, "edited"), ["bob"]);
    for (q, item) in [(q0, 0), (q1, 1), (q4, 4)] {
        let r = q.review.as_ref().expect("review");
        assert_eq!((r.campaign.as_str(), r.item), ("ferry-q", item));
        assert!(
            r.applied_at.starts_with("20")
                && r.accepted
                    .iter()
                    .chain(&r.edited)
                    .all(|p| p.at.starts_with("20"))
        );
        assert_eq!(q.source, text(hidden(item as usize), "source"));
    }

    // Applying again adds nothing and leaves the file as it is.
    let written = std::fs::read(path).expect("read");
    let again = ok(dir, &["annotate", "apply", "run", "ferry-q"]);
    assert!(
        again.contains("3 already in") && again.contains("appended 0"),
        "{again}"
    );
    assert_eq!(std::fs::read(path).expect("read"), written);
    after
}

/// `reviews.csv`: one row per answer, with the item's outcome.
fn check_export(dir: &Path, edited_q: &str) {
    let export = dir.join("export");
    let export_s = export.to_str().expect("utf-8");
    ok(
        dir,
        &["annotate", "export", "run", "ferry-q", "--out", export_s],
    );
    let mut csv = csv::Reader::from_path(export.join("reviews.csv")).expect("reviews.csv");
    let rows: Vec<csv::StringRecord> = csv.records().map(|r| r.expect("row")).collect();
    assert_eq!(rows.len(), 10);
    let row = |item: &str, who: &str| {
        let found = rows.iter().find(|r| &r[0] == item && &r[5] == who);
        found
            .unwrap_or_else(|| panic!("no row for item {item} by {who}"))
            .clone()
    };
    let r = row("1", "ann");
    assert_eq!((&r[7], &r[8], &r[11]), ("edit", edited_q, "kept"));
    assert_eq!(
        (&row("2", "ann")[10], &row("3", "bob")[11]),
        ("not a question", "rejected")
    );
}

/// A game on the script asks every question the file now holds, the reviewed ones included.
fn check_game(dir: &Path, after: &Script, edited: (String, String)) {
    ok(
        dir,
        &["play", "night-ferry.toml", "--seed", "1", "--out", "game"],
    );
    let transcript =
        std::fs::read_to_string(dir.join("game/transcript.jsonl")).expect("transcript");
    let asked: BTreeSet<(String, String)> = transcript
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["kind"] == "factual_answer")
        .map(|e| {
            (
                text(&e["data"], "text").to_string(),
                text(&e["data"], "reference").to_string(),
            )
        })
        .collect();
    let held: BTreeSet<(String, String)> = after
        .factual
        .iter()
        .map(|q| (q.question.clone(), q.answer.clone()))
        .collect();
    assert_eq!(asked, held);
    assert!(asked.contains(&edited));
}

#[test]
fn a_questions_campaign_comes_from_generation_and_a_bad_review_is_refused_before_any_call() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    std::fs::create_dir(dir.join("run")).expect("run dir");
    let args = [
        "annotate",
        "create",
        "run",
        "--id",
        "q",
        "--kind",
        "questions",
        "--annotators",
        "ann",
    ];
    let e = refused(dir, &args);
    assert!(
        e.contains("sleuth questions generate SCRIPT --review RUN"),
        "{e}"
    );
    let script = common::crate_file("examples/night-ferry.toml");
    let script = script.to_str().expect("utf-8");
    // An unreachable model would fail the call: the names are refused first.
    let args = [
        "questions",
        "generate",
        script,
        "--review",
        "run",
        "--campaign",
        "q",
        "--annotators",
        "ann,b c",
        "--provider",
        "openai",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--api-key-env",
        "SLEUTH_NO_SUCH_KEY",
    ];
    let e = refused(dir, &args);
    assert!(e.contains("--annotators: names are letters"), "{e}");
    let e = refused(dir, &["questions", "generate", script, "--review", "run"]);
    assert!(
        e.contains("--campaign") && e.contains("--annotators"),
        "{e}"
    );
}
