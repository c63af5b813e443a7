//! Independent calls in parallel, deterministically (issue 11, item 4; `docs/parallelism.md`).
//!
//! Every game here is played over real HTTP: the `openai` provider against `sleuth mock-llm` (the
//! in-process [`MockServer`] on 127.0.0.1:0). What a user would notice:
//! - the same seed gives the same transcript (timestamps aside) whether the endpoint answers at once
//!   or after random delays that shuffle the order in which calls issued together complete, and
//!   whatever the game's bound on calls in flight — for a PLAYER* WellPlay game, a MIRAGE game with
//!   stages and an LLM judge, and a ThinkThrice game with every module and an LLM judge;
//! - calls really overlap: the provider sees many calls in flight at once, never more than the bound,
//!   and exactly one at a time with a bound of 1.

use crate::common;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use sleuth::agent::{AgentConfig, Framework, Modules};
use sleuth::game::{
    self, GameConfig, JudgeChoice, MirageSettings, ProtocolSettings, ThinkThriceSettings,
    WellPlaySettings,
};
use sleuth::llm::{
    ChatRequest, ChatResponse, EmbedResponse, Gateway, GatewayConfig, OpenAiProvider,
    OpenAiSettings, Pricing, Provider, ProviderError,
};
use sleuth::mockllm::{MockConfig, MockServer};
use sleuth::script::Script;

/// The model the mock serves, as agent and as judge.
const MODEL: &str = sleuth::llm::simulated::MODEL;

/// Calls in flight at the provider, now and at most so far.
#[derive(Default)]
struct InFlight {
    now: AtomicUsize,
    peak: AtomicUsize,
}

/// The `openai` provider, counting the calls in flight through it.
struct Counting {
    inner: OpenAiProvider,
    flight: Arc<InFlight>,
}

impl Provider for Counting {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn chat<'a>(
        &'a self,
        req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let now = self.flight.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.flight.peak.fetch_max(now, Ordering::SeqCst);
            let r = self.inner.chat(req).await;
            self.flight.now.fetch_sub(1, Ordering::SeqCst);
            r
        })
    }

    fn embed<'a>(
        &'a self,
        model: &'a str,
        inputs: &'a [String],
    ) -> BoxFuture<'a, Result<EmbedResponse, ProviderError>> {
        self.inner.embed(model, inputs)
    }
}

/// A mock endpoint answering after `latency` plus a random 0..=`jitter`, and a gateway in front of it
/// whose provider counts the calls in flight.
struct Endpoint {
    server: MockServer,
    gateway: Gateway,
    flight: Arc<InFlight>,
}

impl Endpoint {
    async fn start(latency_ms: u64, jitter_ms: u64, fault_seed: u64) -> Endpoint {
        let server = MockServer::start(
            "127.0.0.1:0".parse().expect("address"),
            MockConfig {
                latency: Duration::from_millis(latency_ms),
                latency_jitter: Duration::from_millis(jitter_ms),
                fault_seed,
                ..MockConfig::default()
            },
        )
        .await
        .expect("the mock server starts");
        let inner = OpenAiProvider::new(&OpenAiSettings::new(
            server.base_url(),
            "test-key",
            Duration::from_secs(60),
        ))
        .expect("the client builds");
        let flight = Arc::new(InFlight::default());
        let provider = Counting {
            inner,
            flight: flight.clone(),
        };
        let gateway = Gateway::start(
            Arc::new(provider),
            Pricing::builtin(),
            GatewayConfig::default(),
        )
        .await
        .expect("the gateway starts");
        Endpoint {
            server,
            gateway,
            flight,
        }
    }

    fn peak(&self) -> usize {
        self.flight.peak.load(Ordering::SeqCst)
    }

    async fn stop(self) {
        self.gateway.stop();
        self.server.shutdown().await;
    }
}

/// How the endpoint answers and how many calls the game may have in flight.
#[derive(Debug, Clone, Copy)]
struct Conditions {
    latency_ms: u64,
    jitter_ms: u64,
    bound: usize,
}

/// At once, with the default bound: the reference run.
const AT_ONCE: Conditions = Conditions {
    latency_ms: 0,
    jitter_ms: 0,
    bound: 16,
};
/// Random delays that shuffle completion order, with the default bound.
const SHUFFLED: Conditions = Conditions {
    latency_ms: 0,
    jitter_ms: 30,
    bound: 16,
};
/// Random delays, one call at a time (the behaviour before calls were issued together).
const ONE_AT_A_TIME: Conditions = Conditions {
    latency_ms: 0,
    jitter_ms: 10,
    bound: 1,
};

/// The transcript's events with the wall-clock field removed.
fn normalised(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("transcript written")
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).expect("event is JSON");
            v.as_object_mut().expect("event is an object").remove("ts");
            v
        })
        .collect()
}

/// Plays `config` on `script` under `conditions`; returns the normalised transcript and the peak of
/// calls in flight.
async fn play(
    script: &Arc<Script>,
    config: &GameConfig,
    conditions: Conditions,
    dir: &Path,
) -> (Vec<Value>, usize) {
    let Conditions {
        latency_ms,
        jitter_ms,
        bound,
    } = conditions;
    let endpoint = Endpoint::start(latency_ms, jitter_ms, 17).await;
    let path = dir.join(format!("{latency_ms}-{jitter_ms}-{bound}.jsonl"));
    let c = GameConfig {
        transcript_path: Some(path.clone()),
        call_concurrency: bound,
        ..config.clone()
    };
    let title = script.title.clone();
    game::play(script.clone(), c, endpoint.gateway.clone())
        .await
        .unwrap_or_else(|e| panic!("{title} under {conditions:?}: {e}"));
    let peak = endpoint.peak();
    endpoint.stop().await;
    (normalised(&path), peak)
}

/// The first event where two transcripts differ, for a readable failure.
fn first_difference(a: &[Value], b: &[Value]) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => format!("event {i}:\n  {}\n  {}", a[i], b[i]),
        None => format!("lengths {} and {}", a.len(), b.len()),
    }
}

/// The same game at once, under shuffling delays, and one call at a time: one transcript.
async fn same_transcript_under_any_timing(script: Script, config: GameConfig) {
    let script = Arc::new(script);
    let dir = tempfile::tempdir().expect("tempdir");
    let (reference, _) = play(&script, &config, AT_ONCE, dir.path()).await;
    assert!(reference.len() > 50, "a whole game was played");
    let (shuffled, peak) = play(&script, &config, SHUFFLED, dir.path()).await;
    assert!(
        shuffled == reference,
        "random latencies changed the transcript: {}",
        first_difference(&reference, &shuffled)
    );
    assert!(
        (2..=SHUFFLED.bound).contains(&peak),
        "calls overlapped within the bound: {peak}"
    );
    let (sequential, peak) = play(&script, &config, ONE_AT_A_TIME, dir.path()).await;
    assert!(
        sequential == reference,
        "a bound of 1 changed the transcript: {}",
        first_difference(&reference, &sequential)
    );
    assert_eq!(peak, 1, "a bound of 1 makes one call at a time");
}

/// An example script with its evaluation cut down to a game's worth of each kind of question: one
/// factual question about each character, two inferential questions, every multiple-choice question.
fn example(name: &str) -> Script {
    let mut s = (*common::example_script(name)).clone();
    let mut seen = std::collections::BTreeSet::new();
    s.factual.retain(|q| seen.insert(q.character.clone()));
    s.inferential.truncate(2);
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn player_wellplay_game_is_the_same_under_any_timing() {
    let config = GameConfig {
        game_id: "parallel-player".into(),
        seed: 3,
        framework: Framework::Player,
        protocol: ProtocolSettings::wellplay(WellPlaySettings {
            rounds: 1,
            questions_per_round: 1,
        }),
        eval_repeats: 2,
        ..GameConfig::default()
    };
    same_transcript_under_any_timing(example("night-ferry.toml"), config).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirage_game_with_stages_and_a_judge_is_the_same_under_any_timing() {
    // Two stages, so that every character re-summarises its script at the release, and small caps so
    // that both summaries run.
    let mut script = example("night-ferry.toml");
    script.acts = 2;
    for c in &mut script.characters {
        let first = c.acts.first().cloned().unwrap_or_default();
        c.acts = vec![
            first,
            format!("Stage two for {}: the purser's office is open now.", c.name),
        ];
    }
    let config = GameConfig {
        game_id: "parallel-mirage".into(),
        seed: 4,
        framework: Framework::Mirage,
        protocol: ProtocolSettings::mirage(MirageSettings {
            iterations: 2,
            script_summary_tokens: 300,
            history_tokens: 600,
            ..MirageSettings::default()
        }),
        judge_overrides: [("mirage".to_string(), MODEL.to_string())].into(),
        ..GameConfig::default()
    };
    same_transcript_under_any_timing(script, config).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinkthrice_game_with_every_module_and_a_judge_is_the_same_under_any_timing() {
    let config = GameConfig {
        game_id: "parallel-thinkthrice".into(),
        seed: 5,
        framework: Framework::ThinkThrice,
        protocol: ProtocolSettings::thinkthrice(ThinkThriceSettings {
            rounds_before_clues: 1,
            rounds_after_clues: 0,
            initial_questioning: false,
        }),
        agent: AgentConfig {
            modules: "mr,sr,sv=2".parse::<Modules>().expect("modules"),
            ..AgentConfig::default()
        },
        judge: JudgeChoice::Llm(MODEL.to_string()),
        ..GameConfig::default()
    };
    same_transcript_under_any_timing(example("night-ferry.toml"), config).await;
}

/// Calls issued together are in flight together: a PLAYER* round reads its sensors on every other
/// player at once, the vote takes every voter's readings at once, evaluation asks everything at once.
/// With a latency long enough that nothing finishes while the rest is being issued, the provider sees
/// the bound reached — and never passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn independent_calls_overlap_up_to_the_bound() {
    let script = Arc::new(example("night-ferry.toml"));
    let dir = tempfile::tempdir().expect("tempdir");
    let config = GameConfig {
        game_id: "parallel-overlap".into(),
        seed: 6,
        framework: Framework::Player,
        protocol: ProtocolSettings::wellplay(WellPlaySettings {
            rounds: 1,
            questions_per_round: 1,
        }),
        eval_repeats: 1,
        ..GameConfig::default()
    };
    for bound in [4, 16] {
        let conditions = Conditions {
            latency_ms: 40,
            jitter_ms: 0,
            bound,
        };
        let (_, peak) = play(&script, &config, conditions, dir.path()).await;
        assert_eq!(
            peak, bound,
            "calls in flight at most, with a bound of {bound}"
        );
    }
}
