//! A cluster gives the results of one node: three workers play a sweep, and what `sleuth results`
//! downloads is what `sleuth sweep run` of the same file writes; `sleuth report` reads it, and
//! `sleuth workers` lists the workers.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::cluster::{simulated_model, Options, SWEEP_TIMEOUT};

use super::{assert_results_once, results_in, start_and_submit, watch_all_done};

/// A result without what describes the process that played it rather than the game: its duration,
/// the cacheable share of its prompts, which counts prefixes shared with earlier requests of the whole
/// run (a worker's games are not one node's), and the bytes tokenized (what that process's memo of
/// token ids did not hold yet).
fn without_duration(json: &str) -> String {
    json.lines()
        .filter(|l| {
            let l = l.trim_start();
            !l.starts_with("\"duration_seconds\"")
                && !l.starts_with("\"cacheable_prompt_tokens\"")
                && !l.starts_with("\"cacheable_share\"")
                && !l.starts_with("\"bytes_tokenized\"")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Check 1: One coordinator and three workers play a sweep; what `sleuth results` downloads is what
/// `sleuth sweep run` of the same file writes on one node (game ids and result.json, but for the
/// duration), `sleuth report` reads it, and `sleuth workers` lists the three workers.
#[test]
fn three_workers_give_the_results_of_one_node() {
    let Some((c, file, id)) = start_and_submit(Options::default(), "same", 3, &simulated_model(5))
    else {
        return;
    };
    let games = 6;
    assert_eq!(id, "same");
    watch_all_done(&c, &id, games);

    // The same file on one node.
    let mut local = c.sleuth();
    local.args(["sweep", "run"]).arg(&file);
    let out = common::run(&mut local, SWEEP_TIMEOUT);
    assert!(
        out.status.success(),
        "sleuth sweep run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let one_node = results_in(&c.path("local/same"));
    assert_eq!(one_node.len() as u64, games);

    let fetched = c.path("fetched");
    let cluster = assert_results_once(&c, &id, games, &fetched);
    assert_eq!(
        cluster.keys().collect::<Vec<_>>(),
        one_node.keys().collect::<Vec<_>>(),
        "the same game ids"
    );
    for (game, text) in &cluster {
        assert!(text.contains("\"duration_seconds\""), "{game}: {text}");
        assert_eq!(
            without_duration(text),
            without_duration(&one_node[game]),
            "game {game}: the cluster's result.json differs from one node's"
        );
        assert!(
            fetched
                .join("games")
                .join(game)
                .join("transcript.jsonl")
                .is_file(),
            "{game} has its transcript"
        );
    }

    let mut report = c.sleuth();
    report.arg("report").arg(&fetched);
    let out = common::run(&mut report, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "sleuth report on the downloaded results: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut workers = c.sleuth();
    workers.arg("workers");
    let out = common::run(&mut workers, Duration::from_secs(30));
    assert!(out.status.success());
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    let listed = c.list_workers().expect("list workers");
    assert_eq!(listed.len(), 3, "{listing}");
    assert_eq!(listing.matches(" alive ").count(), 3, "{listing}");
    let pids: BTreeSet<u32> = c.workers.iter().map(|w| w.pid()).collect();
    assert_eq!(
        listed.iter().map(|w| w.pid).collect::<BTreeSet<_>>(),
        pids,
        "the workers listed are the three processes"
    );
    for w in &listed {
        assert!(
            listing.contains(&w.worker_id),
            "{} in:\n{listing}",
            w.worker_id
        );
    }
    assert_eq!(
        listing.lines().count(),
        4,
        "a header and three workers:\n{listing}"
    );
    let played: u64 = listed.iter().map(|w| w.games_done).sum();
    assert!(played <= games, "{listed:?}");
}
