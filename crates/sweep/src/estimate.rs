//! What a sweep will cost, before it runs: calls, tokens and dollars, by model.
//!
//! How: every distinct game *structure* — a game's spec with its models replaced by the simulated
//! model, so that arms differing only in their models share one — is played once with the in-process
//! simulated model, and its transcript counted: calls and prompt tokens as sent, attributed to the
//! model the real sweep would send them to (murderers' turns to the murderers' model, the judge's to
//! the judge, the rest to the civilians'). Completions are counted at each call's `max_tokens`, the
//! most a provider can return. Prompts are bounded by design (top-k memory of bounded chunks, history
//! summarised past its budget), and the simulated model writes up to its budget, so its prompts are
//! close to the largest a real model's game sends. Re-asks of unparseable replies and retries are not
//! in the figure; the budget (`[budget]`) is the guard against what an estimate cannot know.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::StreamExt;

use super::plan::{Plan, DEFAULT_MODEL};
use super::SweepError;
use sleuth_game::game::{self, GameSpec, JudgeChoice, ProviderSpec};
use sleuth_game::transcript::Event;
use sleuth_llm::{Gateway, GatewayConfig, Pricing, SimulatedProvider, TokenUsage};

/// Calls and tokens of one model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelEstimate {
    pub calls: u64,
    pub prompt_tokens: u64,
    /// At each call's `max_tokens` (an upper bound).
    pub completion_tokens: u64,
    /// Every call at the live price.
    pub usd: f64,
    /// Evaluation calls of a `batch = true` model at the batch price, the rest live: what the
    /// sweep pays as configured.
    pub usd_batched: f64,
}

/// The whole sweep's estimate.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Estimate {
    pub games: usize,
    /// Distinct structures played to measure.
    pub measured: usize,
    pub by_model: BTreeMap<String, ModelEstimate>,
}

impl Estimate {
    /// Sums over models.
    pub fn total(&self) -> ModelEstimate {
        let mut t = ModelEstimate::default();
        for m in self.by_model.values() {
            t.calls += m.calls;
            t.prompt_tokens += m.prompt_tokens;
            t.completion_tokens += m.completion_tokens;
            t.usd += m.usd;
            t.usd_batched += m.usd_batched;
        }
        t
    }
}

/// The structure of a game: its spec with every model made the simulated one (its seed aside, see
/// [`estimate`]).
fn structure(spec: &GameSpec) -> GameSpec {
    let mut s = spec.clone();
    s.agent.model = DEFAULT_MODEL.to_string();
    s.murderer_model = None;
    s.endpoints.clear();
    s.provider = ProviderSpec {
        name: "simulated".into(),
        base_url: None,
    };
    if let JudgeChoice::Llm(_) = s.judge {
        s.judge = JudgeChoice::Llm(DEFAULT_MODEL.to_string());
    }
    for m in s.judge_overrides.values_mut() {
        *m = DEFAULT_MODEL.to_string();
    }
    if let game::EmbedderChoice::Remote(_) = s.embedder {
        s.embedder = game::EmbedderChoice::Remote(DEFAULT_MODEL.to_string());
    }
    s
}

/// Per role: calls, prompt tokens and the max-token bound of completions.
#[derive(Debug, Clone, Default)]
struct Counted {
    /// role (`civilian`, `murderer`, `judge`) → (calls, prompt tokens, completions). Remote
    /// embeddings are charged to the event being indexed, so they count under its speaker's role.
    /// Keyed by role and whether the calls are evaluation's (which a batch model batches).
    roles: BTreeMap<(&'static str, bool), (u64, u64, u64)>,
}

/// Plays one structure with the simulated model and counts its calls by role.
async fn measure(
    spec: GameSpec,
    script: Arc<sleuth_script::Script>,
) -> Result<Counted, SweepError> {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let transcript =
        std::env::temp_dir().join(format!("sleuth-estimate-{}-{n}.jsonl", std::process::id()));
    let gateway = Gateway::start(
        Arc::new(SimulatedProvider::default()),
        Pricing::default(),
        GatewayConfig::default(),
    )
    .await
    .map_err(|e| SweepError::Setup(format!("estimate: {e}")))?;
    let config = game::GameConfig {
        game_id: "estimate".into(),
        transcript_path: Some(transcript.clone()),
        ..spec.config()
    };
    let played = game::play(script.clone(), config, gateway.clone()).await;
    gateway.stop();
    played.map_err(|e| {
        SweepError::Setup(format!("estimate: a game of {} failed: {e}", script.title))
    })?;
    let text = std::fs::read_to_string(&transcript);
    let _ = std::fs::remove_file(&transcript);
    let text = text.map_err(|e| SweepError::Io(format!("estimate: {e}")))?;
    let murderers: Vec<&str> = script.murderers();
    let mut counted = Counted::default();
    for line in text.lines() {
        let Ok(ev) = serde_json::from_str::<Event>(line) else {
            continue;
        };
        let Some(u) = ev.usage else { continue };
        if u.calls == 0 {
            continue;
        }
        let role = if ev.speaker == "judge" {
            "judge"
        } else if murderers.contains(&ev.speaker.as_str()) {
            "murderer"
        } else {
            "civilian"
        };
        let e = counted
            .roles
            .entry((role, ev.stage == "evaluation"))
            .or_default();
        e.0 += u.calls;
        e.1 += u.prompt_tokens;
        e.2 += (u.calls * u64::from(spec.agent.max_tokens)).max(u.completion_tokens);
    }
    Ok(counted)
}

/// The model each role's calls go to in `spec`.
fn model_of<'a>(spec: &'a GameSpec, role: &str) -> &'a str {
    match role {
        "murderer" => spec.murderer_model.as_deref().unwrap_or(&spec.agent.model),
        "judge" => match &spec.judge {
            JudgeChoice::Llm(m) => m,
            JudgeChoice::Lexical { .. } => spec
                .judge_overrides
                .values()
                .next()
                .map(String::as_str)
                .unwrap_or(&spec.agent.model),
        },
        _ => &spec.agent.model,
    }
}

/// The estimate of `plan`, playing up to `parallel` structures at once.
pub async fn estimate(plan: &Plan, parallel: usize) -> Result<Estimate, SweepError> {
    // Distinct structures, each with the script it is played on.
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut todo: Vec<(GameSpec, Arc<sleuth_script::Script>)> = Vec::new();
    let mut of_game = Vec::with_capacity(plan.games.len());
    for g in &plan.games {
        let s = structure(&g.spec);
        // Repeats differ only in their seed: one game measures them all.
        let key = GameSpec {
            seed: 0,
            ..s.clone()
        }
        .digest();
        let i = *index.entry(key).or_insert_with(|| {
            todo.push((s, plan.scripts[g.script].script.clone()));
            todo.len() - 1
        });
        of_game.push(i);
    }
    let measured: Vec<Result<Counted, SweepError>> = futures::stream::iter(todo)
        .map(|(spec, script)| measure(spec, script))
        .buffered(parallel.max(1))
        .collect()
        .await;
    let measured = measured.into_iter().collect::<Result<Vec<_>, _>>()?;
    let pricing = super::models::prices(plan);
    let mut out = Estimate {
        games: plan.games.len(),
        measured: measured.len(),
        by_model: BTreeMap::new(),
    };
    for (g, &i) in plan.games.iter().zip(&of_game) {
        for (&(role, evaluation), &(calls, prompt, completion)) in &measured[i].roles {
            let model = model_of(&g.spec, role);
            let e = out.by_model.entry(model.to_string()).or_default();
            e.calls += calls;
            e.prompt_tokens += prompt;
            e.completion_tokens += completion;
            let tokens = TokenUsage {
                prompt_tokens: prompt,
                completion_tokens: completion,
                cached_tokens: 0,
            };
            let live = pricing.cost(model, &tokens);
            e.usd += live;
            let batched = evaluation
                && plan
                    .models
                    .get(model)
                    .is_some_and(|m| m.batch == Some(true));
            e.usd_batched += if batched {
                pricing.batch_cost(model, &tokens)
            } else {
                live
            };
        }
    }
    Ok(out)
}
