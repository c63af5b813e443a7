//! Two games side by side (`/compare`): aligned by stage with their first difference marked, every
//! event of both once and in order; a game compared with itself shows no difference, and bad ids are
//! named.

use std::path::Path;

use serde_json::{json, Value};

use super::{attrs, done_game, fixture, get, page, two_arms};

/// Every event of a game's transcript, by sequence number.
fn transcript(run: &Path, id: &str) -> Vec<Value> {
    std::fs::read_to_string(run.join("games").join(id).join("transcript.jsonl"))
        .expect("transcript.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("an event"))
        .collect()
}

/// What an event says, as the two-games page compares it: not its number, time or usage.
fn says(e: &Value) -> Value {
    json!([
        e["stage"],
        e["kind"],
        e["speaker"],
        e["addressee"],
        e["visible_to"],
        e["text"],
        e["data"]
    ])
}

/// The rows of a two-games page or fragment: (row number, differs, first, A's seq, B's seq).
type CmpRow = (u64, bool, bool, Option<u64>, Option<u64>);

fn compare_rows(html: &str) -> Vec<CmpRow> {
    html.split("<div class=\"cmp-row")
        .skip(1)
        .map(|chunk| {
            let head = &chunk[..chunk.find('>').unwrap_or(chunk.len())];
            let n = attrs(head, "data-row")[0].parse().expect("row number");
            let seq = |side: &str| {
                let pat = format!("data-side=\"{side}\" data-seq=\"");
                chunk.find(&pat).map(|i| {
                    let rest = &chunk[i + pat.len()..];
                    rest[..rest.find('"').expect("end quote")]
                        .parse()
                        .expect("seq")
                })
            };
            (
                n,
                head.contains("data-differs"),
                head.contains("id=\"first-difference\""),
                seq("a"),
                seq("b"),
            )
        })
        .collect()
}

#[test]
fn two_games_side_by_side_are_aligned_by_stage_with_their_first_difference_marked() {
    let f = fixture();
    let (a, b) = two_arms(&f.run);
    // The game page links to the other arm's game with the same script and repeat.
    let (_, game) = page(&format!("{}/game?id={a}", f.base));
    assert!(game.contains("action=\"/compare\""), "the compare form");
    assert!(game.contains("<label for=\"compare-b\">"));
    assert!(
        game.contains(&format!("href=\"/compare?a={a}&b={b}\"")),
        "a link to the other arm's game: {game}"
    );

    let (_, html) = page(&format!("{}/compare?a={a}&b={b}", f.base));
    for id in [&a, &b] {
        assert!(
            html.contains(&format!("/game?id={id}")),
            "game {id}'s header"
        );
    }
    assert!(html.contains("Winner") && html.contains("Culprit"));
    assert!(html.contains("href=\"#first-difference\""), "{html}");
    assert!(html.contains("First difference at stage"));
    let (ta, tb) = (transcript(&f.run, &a), transcript(&f.run, &b));
    let by_seq = |t: &[Value], s: u64| t.iter().find(|e| e["seq"] == s).cloned().expect("event");
    let rows = compare_rows(&html);
    let firsts: Vec<&CmpRow> = rows.iter().filter(|r| r.2).collect();
    assert_eq!(firsts.len(), 1, "one first difference");
    let first = *firsts[0];
    assert_eq!(rows[0], first, "the list opens at the first difference");
    // It really differs: a blank side, or two events that say different things.
    match (first.3, first.4) {
        (Some(x), Some(y)) => assert_ne!(says(&by_seq(&ta, x)), says(&by_seq(&tb, y))),
        (None, None) => panic!("an empty row"),
        _ => {}
    }
    // Aligned by stage: the two events of a row are of the same stage; a row differs exactly when
    // its events say different things.
    let mut all = rows.clone();
    let mut next = attrs(&html, "data-more").into_iter().next();
    assert!(next.is_some(), "more rows than one page");
    while let Some(n) = next {
        let (more, body) = page(&format!("{}{n}", f.base));
        all.extend(compare_rows(&body));
        next = more;
    }
    for r in &all {
        if let (Some(x), Some(y)) = (r.3, r.4) {
            let (ex, ey) = (by_seq(&ta, x), by_seq(&tb, y));
            assert_eq!(ex["stage"], ey["stage"], "row {} pairs two stages", r.0);
            assert_eq!(r.1, says(&ex) != says(&ey), "row {}", r.0);
        } else {
            assert!(r.1, "a row with a blank side differs");
        }
    }
    // Every event of both games once, in order, the rows numbered on from the identical prefix.
    let prefix = attrs(&html, "data-src")
        .into_iter()
        .find(|s| s.starts_with("/compare/events"));
    let mut before = Vec::new();
    let mut next = prefix;
    while let Some(n) = next {
        let (more, body) = page(&format!("{}{n}", f.base));
        before.extend(compare_rows(&body));
        next = more;
    }
    for r in &before {
        assert!(!r.1, "the collapsed prefix is identical: row {}", r.0);
        let (x, y) = (r.3.expect("A's event"), r.4.expect("B's event"));
        assert_eq!(says(&by_seq(&ta, x)), says(&by_seq(&tb, y)));
    }
    before.extend(all);
    let numbers: Vec<u64> = before.iter().map(|r| r.0).collect();
    assert_eq!(numbers, (1..=before.len() as u64).collect::<Vec<_>>());
    let seqs =
        |side: fn(&CmpRow) -> Option<u64>| before.iter().filter_map(side).collect::<Vec<_>>();
    assert_eq!(seqs(|r| r.3), (0..ta.len() as u64).collect::<Vec<_>>());
    assert_eq!(seqs(|r| r.4), (0..tb.len() as u64).collect::<Vec<_>>());
}

#[test]
fn a_game_compared_with_itself_shows_no_difference_and_bad_ids_are_named() {
    let f = fixture();
    let id = done_game(&f.run);
    let (_, html) = page(&format!("{}/compare?a={id}&b={id}", f.base));
    assert!(!html.contains("first-difference"), "no difference marked");
    assert!(!html.contains("data-differs"));
    assert!(html.contains("No difference"), "{html}");
    assert!(attrs(&html, "data-more").is_empty(), "nothing more to load");
    // The collapsed identical rows, loaded as the page does, hold no difference either.
    let mut next = attrs(&html, "data-src")
        .into_iter()
        .find(|s| s.starts_with("/compare/events"));
    assert!(next.is_some(), "the identical events, collapsed");
    while let Some(n) = next {
        let (more, body) = page(&format!("{}{n}", f.base));
        assert!(body.contains("data-row"));
        assert!(!body.contains("data-differs"), "{body}");
        next = more;
    }
    // As seen by a character, too.
    let (_, html) = page(&format!("{}/compare?a={id}&b={id}&as=nobody", f.base));
    assert!(!html.contains("data-differs"));

    let (status, _, body) = get(&format!("{}/compare?a={id}&b=..%2Fetc", f.base));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("`b`"), "{body}");
    let (status, _, body) = get(&format!("{}/compare?a=0123abcd&b={id}", f.base));
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("`a`"), "{body}");
    let (status, _, body) = get(&format!("{}/compare?a={id}", f.base));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("`b` is missing"), "{body}");
    let (status, _, body) = get(&format!(
        "{}/compare/events?a={id}&b={id}&after_a=x",
        f.base
    ));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("`after_a`"), "{body}");
}
