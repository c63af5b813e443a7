//! The viewer's pages over HTTP, on the played sweep: the runs page and its JSON, the sweep page, a
//! game page and its transcript, a game as seen by one character, every model call's detail, and
//! bad requests refused with their reason.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{attrs, done_game, enc, fixture, games, get, live, page, store};

#[test]
fn the_runs_page_and_its_json_show_the_sweep_with_its_counts_and_cost() {
    let f = fixture();
    let v = live(&f.base);
    let s = &v["sweeps"][0];
    assert_eq!(s["id"], "t");
    assert_eq!(s["games"], 3);
    assert_eq!(s["done"], 2);
    assert_eq!(s["failed"], 1);
    assert_eq!(s["status"], "finished");
    // The ledger, summed by the viewer, equals the ledger summed by SQL.
    let c = store(&f.run);
    let (live_calls, usd): (i64, f64) = c
        .query_row(
            "SELECT COUNT(*), SUM(cost_usd) FROM ledger WHERE source = 'live'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("ledger");
    assert_eq!(s["sums"]["live_calls"].as_i64(), Some(live_calls));
    assert!((s["sums"]["usd"].as_f64().expect("usd") - usd).abs() < 1e-9);
    assert!(s["sums"]["retries"].as_u64().expect("retries") >= 1);

    let (_, html) = page(&format!("{}/", f.base));
    assert!(html.contains("href=\"/sweep?id=t\""), "{html}");
    assert!(html.contains("data-field=\"live_calls\""));
    assert!(html.contains("/assets/app.js"));
    let (_, js) = page(&format!("{}/assets/app.js", f.base));
    assert!(js.contains("/api/runs") || js.contains("data-live"));
}

#[test]
fn the_sweep_page_has_the_grid_the_report_and_the_failed_game_with_its_reason() {
    let f = fixture();
    live(&f.base);
    let (_, html) = page(&format!("{}/sweep?id=t", f.base));
    for label in ["framework=player", "model=flaky"] {
        assert!(html.contains(label), "arm {label} missing: {html}");
    }
    assert!(
        html.contains("The Last Crossing of the Marigold"),
        "the script"
    );
    assert!(html.contains("id=\"failed\""));
    let failed: Vec<String> = games(&f.run)
        .into_iter()
        .filter(|(_, s)| s == "failed")
        .map(|(id, _)| id)
        .collect();
    assert_eq!(failed.len(), 1);
    assert!(html.contains(&format!("/game?id={}", failed[0])));
    assert!(
        html.contains("gave up after"),
        "the failure's reason is shown"
    );
    // Rows of one state, as the "Load more" button fetches them.
    let (next, rows) = page(&format!("{}/sweep/games?id=t&state=done", f.base));
    assert_eq!(next, None, "two games fit one page");
    assert_eq!(rows.matches("<tr").count(), 2);

    // The report's tables, from `sleuth report`'s code.
    let (_, report) = page(&format!("{}/report?sweep=t", f.base));
    assert!(report.contains("Arms"), "{report}");
    assert!(report.contains("<table"), "{report}");
    assert!(report.contains("2 games"), "{report}");
}

#[test]
fn a_game_page_shows_the_outcome_and_pages_through_the_whole_transcript() {
    let f = fixture();
    let id = done_game(&f.run);
    let result: Value = serde_json::from_str(
        &std::fs::read_to_string(f.run.join("games").join(&id).join("result.json"))
            .expect("result.json"),
    )
    .expect("JSON");
    let (_, html) = page(&format!("{}/game?id={id}", f.base));
    assert!(html.contains(result["winner"].as_str().unwrap_or("—")));
    for voter in result["votes"].as_object().expect("votes").keys() {
        assert!(html.contains(voter.as_str()), "voter {voter}");
    }
    // PLAYER*'s suspicion over the rounds, from the pruner's events.
    assert_eq!(
        result["framework"], "player",
        "the first game is the PLAYER* arm's"
    );
    assert!(html.contains("Suspicion and trust"));
    assert!(html.contains("<svg class=\"chart\"") && html.contains("<polyline"));
    // Page through the transcript by its cursor: every event once, in order, no page too big.
    let mut seqs: Vec<u64> = attrs(&html, "data-seq")
        .iter()
        .map(|s| s.parse().expect("seq"))
        .collect();
    let mut next = attrs(&html, "data-more").into_iter().next();
    let mut pages = 1;
    while let Some(n) = next {
        let (more, body) = page(&format!("{}{n}", f.base));
        assert!(body.len() < 1_000_000, "a page of {} bytes", body.len());
        seqs.extend(
            attrs(&body, "data-seq")
                .iter()
                .map(|s| s.parse::<u64>().expect("seq")),
        );
        next = more;
        pages += 1;
    }
    let events = result["events"].as_u64().expect("events");
    assert_eq!(seqs, (0..events).collect::<Vec<_>>(), "in {pages} pages");
    assert!(pages > 1, "a transcript of {events} events is paged");

    // The evaluation's answers, right or wrong.
    let (_, answers) = page(&format!("{}/game/events?id={id}&view=answers", f.base));
    assert!(answers.contains("choice_answer") || answers.contains("factual_answer"));
    assert!(answers.contains("badge right") || answers.contains("badge wrong"));
}

#[test]
fn as_seen_by_a_character_the_others_private_events_are_gone() {
    let f = fixture();
    let id = done_game(&f.run);
    let (_, all) = page(&format!("{}/game?id={id}", f.base));
    let only: BTreeSet<String> = attrs(&all, "data-only").into_iter().collect();
    let characters: BTreeSet<String> = only
        .iter()
        .flat_map(|o| o.split('|').map(str::to_string))
        .collect();
    assert!(
        characters.len() >= 2,
        "private events of several characters: {only:?}"
    );
    let me = characters.iter().next().expect("a character").clone();
    let (_, mine) = page(&format!("{}/game?id={id}&as={}", f.base, enc(&me)));
    let seen = attrs(&mine, "data-only");
    assert!(!seen.is_empty(), "{me}'s own private events are shown");
    for o in &seen {
        assert!(
            o.split('|').any(|w| w == me),
            "as {me}, an event private to {o} is shown"
        );
    }
    assert!(mine.contains("data-seq"));
    // And on the next pages too.
    let next = attrs(&mine, "data-more")
        .into_iter()
        .next()
        .expect("more events");
    assert!(next.contains("&as="), "{next}");
    let (_, body) = page(&format!("{}{next}", f.base));
    for o in attrs(&body, "data-only") {
        assert!(o.split('|').any(|w| w == me), "page 2 as {me}: {o}");
    }
}

#[test]
fn every_model_call_opens_with_its_messages_latency_and_reply() {
    let f = fixture();
    let id = done_game(&f.run);
    let (_, game) = page(&format!("{}/game?id={id}", f.base));
    assert!(game.contains(&format!("data-load=\"/game/calls?id={id}&offset=0\"")));
    let (next, html) = page(&format!("{}/game/calls?id={id}&offset=0", f.base));
    let calls = attrs(&html, "data-call");
    assert_eq!(calls.len(), 50, "the first page of calls");
    assert_eq!(next, Some(format!("/game/calls?id={id}&offset=50")));
    let call: i64 = calls[0].parse().expect("call id");
    let c = store(&f.run);
    let (key, purpose): (String, String) = c
        .query_row(
            "SELECT key, purpose FROM ledger WHERE id = ?1",
            [call],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("the call");
    let value: Vec<u8> = c
        .query_row(
            "SELECT value FROM cache WHERE key = ?1",
            [hex::decode(&key).expect("hex key")],
            |r| r.get(0),
        )
        .expect("its cache entry");
    let reply: Value = serde_json::from_slice(&value).expect("JSON");
    let content = reply["content"].as_str().expect("content");
    let (_, detail) = page(&format!("{}/game/call?id={id}&call={call}", f.base));
    let first_line = content.lines().next().unwrap_or("").trim();
    assert!(
        detail.contains(first_line),
        "reply {first_line:?} not in {detail}"
    );
    assert!(html.contains(&purpose));
    // What the call asked, kept beside its answer: every message, the last one open.
    // Under the ledger row its cache row names, its messages by row.
    let (record, rows): (Vec<u8>, Vec<u8>) = c
        .query_row(
            "SELECT k.value, k.messages FROM cache JOIN kept_requests k ON k.id = cache.request \
             WHERE cache.key = ?1",
            [hex::decode(&key).expect("hex key")],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("the call's request is kept");
    let texts: std::collections::HashMap<Vec<u8>, Vec<u8>> = rows
        .chunks_exact(8)
        .map(|id| {
            let id = i64::from_le_bytes(id.try_into().expect("8 bytes"));
            c.query_row(
                "SELECT hash, text FROM kept_messages WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("a kept message")
        })
        .collect();
    let request =
        sleuth::llm::requests::read(&record, |h| texts.get(&h[..]).cloned()).expect("a request");
    let texts = request.texts();
    assert_eq!(texts.len(), request.messages.len(), "every message kept");
    assert_eq!(
        detail.matches("<li class=\"message role-").count(),
        texts.len()
    );
    for m in &texts {
        let line = m
            .content
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        assert!(
            detail.contains(line.trim()),
            "message line {line:?} not shown"
        );
    }
    // And how long the live call took.
    let latency = reply["latency_ms"]
        .as_u64()
        .expect("the live call's latency");
    assert!(
        detail.contains(&format!("{latency} ms")),
        "latency {latency} ms not in the call's detail"
    );
    // A call of another game is not served under this one.
    let other = games(&f.run)
        .into_iter()
        .find(|(g, s)| *g != id && s == "done")
        .map(|(g, _)| g)
        .expect("another game");
    assert_eq!(
        get(&format!("{}/game/call?id={other}&call={call}", f.base)).0,
        404
    );
}

#[test]
fn bad_requests_are_refused_with_their_reason() {
    let f = fixture();
    assert_eq!(get(&format!("{}/game?id=..%2F..%2Fetc", f.base)).0, 400);
    assert_eq!(get(&format!("{}/game?id=0123abcd", f.base)).0, 404);
    assert_eq!(get(&format!("{}/game", f.base)).0, 400);
    let id = done_game(&f.run);
    assert_eq!(
        get(&format!("{}/game/events?id={id}&after=x", f.base)).0,
        400
    );
    assert_eq!(get(&format!("{}/sweep?id=nope", f.base)).0, 404);
    assert_eq!(get(&format!("{}/assets/nope.js", f.base)).0, 404);
}
