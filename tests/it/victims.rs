//! WellPlay with several victims: one vote per victim (PLAYER* rule 6), scored per victim. The example
//! `night-ferry.toml` is given two more victims: one also killed by Edmund Hale, one whom nobody in
//! the cast killed (as in WellPlay "Ghost Revenge"), which gets no ballot.

use crate::common;

use std::sync::Arc;

use serde_json::Value;
use sleuth::agent::Framework;
use sleuth::game::{self, GameConfig, Protocol, ProtocolSettings, WellPlaySettings, Winner};
use sleuth::script::{Culprits, Victim};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_victim_gets_a_vote_and_voting_counts_every_victim() {
    let mut script = (*common::example_script("night-ferry.toml")).clone();
    let first = script.victims[0].name.clone();
    let hale = script.truth.murderer.take().expect("one murderer");
    for name in ["Second Victim", "Xan Outside"] {
        script.victims.push(Victim {
            name: name.into(),
            description: String::new(),
        });
    }
    script.truth.culprits = vec![
        Culprits {
            victim: first,
            by: vec![hale.clone()],
        },
        Culprits {
            victim: "Second Victim".into(),
            by: vec![hale.clone()],
        },
        Culprits {
            victim: "Xan Outside".into(),
            by: vec![],
        },
    ];
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("transcript.jsonl");
    let config = GameConfig {
        game_id: "victims".into(),
        protocol: ProtocolSettings {
            protocol: Protocol::WellPlay,
            wellplay: WellPlaySettings {
                rounds: 1,
                questions_per_round: 1,
            },
            ..ProtocolSettings::default()
        },
        framework: Framework::Ocot,
        transcript_path: Some(path.clone()),
        eval_repeats: 1,
        ..GameConfig::default()
    };
    let r = game::play(Arc::new(script), config, common::simulated_gateway().await)
        .await
        .expect("game plays");
    let players = r.vote_counts.len();
    let m = r.majority.as_ref().expect("wellplay outcome");
    assert_eq!(m.cases.len(), 3);
    assert_eq!(
        m.cases[0].votes.len(),
        players,
        "everyone votes on the first victim"
    );
    assert_eq!(m.cases[1].votes.len(), players);
    assert!(
        m.cases[2].votes.is_empty(),
        "no ballot without a culprit in the cast"
    );
    assert!(!m.cases[2].identified);
    let identified = m.cases.iter().filter(|c| c.identified).count();
    assert!((m.voting() - identified as f64 / 3.0).abs() < 1e-12);
    let won = m.cases[..2].iter().all(|c| c.identified);
    assert_eq!(r.winner == Some(Winner::Civilians), won);
    let right = m.cases[..2]
        .iter()
        .flat_map(|c| c.votes.values())
        .filter(|t| **t == hale)
        .count();
    assert!((r.murderer_detection_accuracy - right as f64 / (2 * players) as f64).abs() < 1e-12);
    assert_eq!(r.votes, m.cases[0].votes);
    assert_eq!(r.vote_counts.values().sum::<u32>() as usize, 2 * players);
    // Two ballot rounds, each naming its victim.
    let events: Vec<Value> = std::fs::read_to_string(&path)
        .expect("transcript")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let ballots = events.iter().filter(|e| e["kind"] == "vote").count();
    assert_eq!(ballots, 2 * players);
}
