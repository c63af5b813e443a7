//! Whole games through the library: reproducibility, the memory module's value, the real HTTP client
//! path under faults, and crash isolation.

use crate::common;
use common::{example_script as example, simulated_gateway};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sleuth::agent::{AgentConfig, Modules};
use sleuth::game::{
    self, EmbedderChoice, GameConfig, GameError, JudgeChoice, ProtocolSettings, ThinkThriceSettings,
};
use sleuth::llm::{Gateway, GatewayConfig, OpenAiProvider, OpenAiSettings, Pricing};
use sleuth::mockllm::{MockConfig, MockServer};

fn config(modules: &str, seed: u64, settings: ThinkThriceSettings) -> GameConfig {
    GameConfig {
        game_id: format!("test-{modules}-{seed}"),
        seed,
        protocol: ProtocolSettings::thinkthrice(settings),
        agent: AgentConfig {
            modules: modules.parse::<Modules>().expect("valid modules"),
            ..AgentConfig::default()
        },
        ..GameConfig::default()
    }
}

const SHORT: ThinkThriceSettings = ThinkThriceSettings {
    rounds_before_clues: 1,
    rounds_after_clues: 1,
    initial_questioning: true,
};

/// Transcript lines with the wall-clock field removed.
fn normalised(path: &PathBuf) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("transcript exists")
        .lines()
        .map(|l| {
            let mut v: serde_json::Value =
                serde_json::from_str(l).expect("transcript line is JSON");
            v.as_object_mut().expect("event is an object").remove("ts");
            v
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_seed_same_flags_same_transcript() {
    let gw = simulated_gateway().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut runs = Vec::new();
    for i in 0..2 {
        let path = dir.path().join(format!("t{i}.jsonl"));
        let c = GameConfig {
            transcript_path: Some(path.clone()),
            ..config("mr,sr,sv=2", 5, SHORT)
        };
        let r = game::play(example("glasshouse.toml"), c, gw.clone())
            .await
            .expect("game completes");
        runs.push((normalised(&path), r));
    }
    assert!(runs[0].0.len() > 100, "a game has many events");
    assert_eq!(runs[0].0, runs[1].0, "transcripts differ beyond timestamps");
    assert_votes_sound(&example("glasshouse.toml"), &runs[0].1);
    assert_eq!(runs[0].1.votes, runs[1].1.votes);
    // The same game again finds every text it sends in the process's memo of token ids: what the
    // tokenizer read is the one part of usage that differs.
    let read = |u: &sleuth::llm::Usage| {
        u.bytes_tokenized
            .expect("a game counts its bytes tokenized")
    };
    let (first, again) = (read(&runs[0].1.usage), read(&runs[1].1.usage));
    assert!(first > 10_000, "the first game tokenized {first} bytes");
    assert!(
        again * 20 <= first,
        "the same game again tokenized {again} bytes, the first {first}"
    );
    let game_own = |u: &sleuth::llm::Usage| sleuth::llm::Usage {
        bytes_tokenized: None,
        ..*u
    };
    assert_eq!(game_own(&runs[0].1.usage), game_own(&runs[1].1.usage));
    // A different seed is a different game.
    let path = dir.path().join("other.jsonl");
    let c = GameConfig {
        transcript_path: Some(path.clone()),
        ..config("mr,sr,sv=2", 6, SHORT)
    };
    game::play(example("glasshouse.toml"), c, gw.clone())
        .await
        .expect("game completes");
    assert_ne!(normalised(&path), runs[0].0);
}

/// ThinkThrice Table 4's first two rows: an agent that remembers what others said knows more about
/// their scripts than a memoryless one. With the simulated model this must hold strictly on both
/// example scripts, or the model or the memory is not honest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_retrieval_beats_memoryless_on_others_questions() {
    let gw = simulated_gateway().await;
    for script in ["night-ferry.toml", "glasshouse.toml"] {
        let mut others = Vec::new();
        for modules in ["none", "mr"] {
            let r = game::play(
                example(script),
                config(modules, 7, ThinkThriceSettings::default()),
                gw.clone(),
            )
            .await
            .expect("game completes");
            assert!(
                r.factual.own.is_some_and(|own| own > 0.5),
                "{script} {modules}: own-script accuracy {:?}",
                r.factual.own
            );
            others.push(r.factual.others.expect("others' questions were asked"));
        }
        assert!(
            others[1] > others[0],
            "{script}: MR {:.3} should beat no-MR {:.3} on CQ+MQ",
            others[1],
            others[0]
        );
    }
}

/// The openai provider over real HTTP against `sleuth mock-llm` with latency and a 20% mix of 429/500:
/// the game completes and the run's usage is exactly what the server reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_provider_against_faulty_mock_server_accounts_exactly() {
    let server = MockServer::start(
        "127.0.0.1:0".parse().expect("addr"),
        MockConfig {
            latency: Duration::from_millis(5),
            error_rate: 0.2,
            fault_seed: 42,
            retry_after_ms: 20,
            ..MockConfig::default()
        },
    )
    .await
    .expect("mock server starts");
    let provider = OpenAiProvider::new(&OpenAiSettings::new(
        server.base_url(),
        "test-key",
        Duration::from_secs(10),
    ))
    .expect("client builds");
    let dir = tempfile::tempdir().expect("tempdir");
    let prices = dir.path().join("pricing.toml");
    std::fs::write(
        &prices,
        "[models.\"sim-1\"]\ninput = 1.0\ncached_input = 0.5\noutput = 2.0\n[models.\"text-embedding-3-small\"]\ninput = 1.0\noutput = 0.0\n",
    )
    .expect("write pricing");
    let pricing = Pricing::load(&prices).expect("pricing loads");
    let gw = Gateway::start(
        Arc::new(provider),
        pricing,
        GatewayConfig {
            backoff_base: Duration::from_millis(5),
            max_retries: 12,
            ..GatewayConfig::default()
        },
    )
    .await
    .expect("gateway starts");
    // Memory embeddings go over HTTP too, so they must add up as well.
    let c = GameConfig {
        embedder: EmbedderChoice::Remote("text-embedding-3-small".into()),
        ..config("mr,sv=2", 9, SHORT)
    };
    let r = game::play(example("night-ferry.toml"), c, gw)
        .await
        .expect("game completes despite faults");
    let s = server.stats();
    assert!(
        s.rate_limited > 0 && s.server_errors > 0,
        "faults were injected: {s:?}"
    );
    assert_eq!(r.usage.prompt_tokens, s.prompt_tokens, "prompt tokens");
    assert_eq!(
        r.usage.completion_tokens, s.completion_tokens,
        "completion tokens"
    );
    assert_eq!(r.usage.calls, s.ok, "successful calls");
    assert_eq!(
        r.usage.retries,
        s.rate_limited + s.server_errors,
        "every injected error was retried once"
    );
    let expect_cost = (s.prompt_tokens as f64 * 1.0 + s.completion_tokens as f64 * 2.0) / 1e6;
    assert!(
        (r.usage.cost_usd - expect_cost).abs() < 1e-9,
        "cost {} vs {expect_cost}",
        r.usage.cost_usd
    );
    assert_eq!(r.provider, "openai");
    server.shutdown().await;
}

/// What a player of the game would check on the result: everyone voted exactly once, each for a
/// candidate the protocol offered them, and the tally is the count of those ballots.
fn assert_votes_sound(script: &sleuth::script::Script, r: &game::GameResult) {
    let players: Vec<String> = script.characters.iter().map(|c| c.name.clone()).collect();
    let voters: Vec<&String> = r.votes.keys().collect();
    let mut expected: Vec<&String> = players.iter().collect();
    expected.sort();
    assert_eq!(voters, expected, "every player votes exactly once");
    for (voter, target) in &r.votes {
        assert!(
            game::vote_candidates(voter, &players).contains(target),
            "{voter} voted for {target}, who was not a candidate"
        );
    }
    assert_eq!(
        r.vote_counts,
        game::tally(players.iter().map(String::as_str), &r.votes),
        "vote_counts is the tally of the votes"
    );
}

/// A character that panics fails its game with a reason, while a healthy game on the same gateway
/// plays beside it and ends exactly as it does alone: the crash touches nothing outside its game.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashing_character_fails_only_its_game() {
    let gw = simulated_gateway().await;
    let script = example("night-ferry.toml");
    let victim = script.characters[1].name.clone();
    let dir = tempfile::tempdir().expect("tempdir");
    let healthy = |name: &str| GameConfig {
        transcript_path: Some(dir.path().join(name)),
        ..config("mr", 1, SHORT)
    };
    let crashing = GameConfig {
        inject_panic: Some((victim.clone(), 2)),
        ..config("mr", 1, SHORT)
    };
    let (crashed, beside) = tokio::join!(
        game::play(script.clone(), crashing, gw.clone()),
        game::play(script.clone(), healthy("beside.jsonl"), gw.clone()),
    );
    let err = crashed.expect_err("the game must fail");
    assert!(
        matches!(err, GameError::ActorLost(_) | GameError::ChildFailed { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains(&victim),
        "the error names the crashed character: {err}"
    );
    let beside = beside.expect("the healthy game completes");
    assert_votes_sound(&script, &beside);
    let alone = game::play(script.clone(), healthy("alone.jsonl"), gw)
        .await
        .expect("the game plays alone");
    assert_eq!(
        normalised(&dir.path().join("beside.jsonl")),
        normalised(&dir.path().join("alone.jsonl")),
        "the crash next door changed the healthy game's transcript"
    );
    assert_eq!(beside.votes, alone.votes);
    assert_eq!(beside.winner, alone.winner);
    // The cacheable share counts prefixes shared with the gateway's earlier requests (the run's, not
    // the game's: `docs/metrics.md`), and the bytes tokenized what the process had not tokenized
    // before: the parts of usage the game beside may move.
    let game_own = |u: &sleuth::llm::Usage| sleuth::llm::Usage {
        cacheable_prompt_tokens: None,
        cacheable_share: None,
        bytes_tokenized: None,
        ..*u
    };
    assert_eq!(game_own(&beside.usage), game_own(&alone.usage));
}

/// With `--judge-model`, factual answers are graded by an LLM whose calls are accounted under the
/// evaluation phase, separately from gameplay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_judge_calls_are_evaluation_usage() {
    let gw = simulated_gateway().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.jsonl");
    let c = GameConfig {
        judge: JudgeChoice::Llm("sim-1".into()),
        transcript_path: Some(path.clone()),
        ..config("mr", 2, SHORT)
    };
    let script = example("night-ferry.toml");
    let r = game::play(script.clone(), c, gw)
        .await
        .expect("game completes");
    assert_eq!(r.factual.judge, "llm:sim-1");
    let events = normalised(&path);
    let judgements: Vec<_> = events.iter().filter(|e| e["kind"] == "judgement").collect();
    assert_eq!(
        judgements.len(),
        (script.factual.len() + script.inferential.len()) * script.characters.len(),
        "one judgement per factual answer and one per inferential rationale"
    );
    assert!(judgements
        .iter()
        .all(|e| e["stage"] == "evaluation" && e["usage"]["calls"] == 1));
    let judge_calls = judgements.len() as u64;
    assert!(
        r.usage_by_phase.evaluation.calls
            >= judge_calls + r.factual.counts.values().sum::<usize>() as u64
    );
    assert_eq!(
        r.usage_by_phase.gameplay.calls + r.usage_by_phase.evaluation.calls,
        r.usage.calls
    );
}
